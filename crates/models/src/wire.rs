//! The one place that reads a `sampling/createMessage` request's params and writes its
//! `CreateMessageResult` (MCP 2025-11-25; the modern era's input request carries the same
//! object). Everything else in this crate works on [`SamplingRequest`] and [`Completion`], so
//! moving to typed protocol structs later changes this file only.

use serde_json::{Map, Value, json};

use crate::ModelError;

/// The conversation's roles; the spec has no `system` role (the system prompt is apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    /// Base64 data, as the wire has it.
    Image {
        data: String,
        mime_type: String,
    },
    Audio {
        data: String,
        mime_type: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// What a tool returned; only its text and images are passed on.
    ToolResult {
        tool_use_id: String,
        content: Vec<Block>,
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

/// A server's `modelPreferences`. Priorities are 0..=1, absent meaning "no preference".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preferences {
    pub hints: Vec<String>,
    pub cost: Option<f64>,
    pub speed: Option<f64>,
    pub intelligence: Option<f64>,
}

/// A tool the model may call, as the server declared it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
}

/// A sampling request, read.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    pub temperature: Option<f64>,
    pub stop_sequences: Vec<String>,
    pub preferences: Preferences,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: Option<ToolChoice>,
}

/// Why the model stopped, in the spec's words; a provider's other reasons pass as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    Other(String),
}

impl StopReason {
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "endTurn",
            StopReason::MaxTokens => "maxTokens",
            StopReason::StopSequence => "stopSequence",
            StopReason::ToolUse => "toolUse",
            StopReason::Other(s) => s,
        }
    }
}

/// Tokens the provider says it used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A provider's answer, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: Vec<Block>,
    /// The model that answered, as the provider names it.
    pub model: String,
    pub stop_reason: Option<StopReason>,
    pub usage: Option<Usage>,
}

impl Completion {
    /// All of its text, for a person to read or edit.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.content {
            if let Block::Text(t) = b {
                out.push_str(t);
            }
        }
        out
    }
}

fn bad(what: impl Into<String>) -> ModelError {
    ModelError::Request(what.into())
}

fn string(v: &Value, key: &str, at: &str) -> Result<String, ModelError> {
    v.get(key).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| bad(format!("{at}: `{key}` must be a string")))
}

/// Reads `sampling/createMessage` params.
pub fn request_from_params(params: &Value) -> Result<SamplingRequest, ModelError> {
    let obj = params.as_object().ok_or_else(|| bad("the params are not an object"))?;
    let max_tokens = obj
        .get("maxTokens")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or_else(|| bad("`maxTokens` must be a positive integer"))?;
    let max_tokens = u32::try_from(max_tokens).map_err(|_| bad("`maxTokens` is out of range"))?;
    let raw_messages =
        obj.get("messages").and_then(Value::as_array).ok_or_else(|| bad("`messages` must be an array"))?;
    let mut messages = Vec::with_capacity(raw_messages.len());
    for (i, m) in raw_messages.iter().enumerate() {
        let at = format!("messages[{i}]");
        let role = match m.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            other => return Err(bad(format!("{at}: role {other:?} is neither user nor assistant"))),
        };
        let content = blocks(m.get("content").unwrap_or(&Value::Null), &at)?;
        messages.push(Message { role, content });
    }
    let prefs = obj.get("modelPreferences");
    let priority = |key: &str| -> Result<Option<f64>, ModelError> {
        match prefs.and_then(|p| p.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if (0.0..=1.0).contains(&n) => Ok(Some(n)),
                _ => Err(bad(format!("modelPreferences.{key} must be a number from 0 to 1"))),
            },
        }
    };
    let hints = prefs
        .and_then(|p| p.get("hints"))
        .and_then(Value::as_array)
        .map(|hs| {
            hs.iter().filter_map(|h| h.get("name")?.as_str()).filter(|n| !n.is_empty()).map(str::to_owned).collect()
        })
        .unwrap_or_default();
    let preferences = Preferences {
        hints,
        cost: priority("costPriority")?,
        speed: priority("speedPriority")?,
        intelligence: priority("intelligencePriority")?,
    };
    let stop_sequences = match obj.get("stopSequences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| s.as_str().map(str::to_owned).ok_or_else(|| bad("`stopSequences` must hold strings")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("`stopSequences` must be an array")),
    };
    let temperature = match obj.get("temperature") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64().ok_or_else(|| bad("`temperature` must be a number"))?),
    };
    let mut tools = Vec::new();
    if let Some(ts) = obj.get("tools").and_then(Value::as_array) {
        for (i, t) in ts.iter().enumerate() {
            let at = format!("tools[{i}]");
            tools.push(ToolSpec {
                name: string(t, "name", &at)?,
                description: t.get("description").and_then(Value::as_str).map(str::to_owned),
                input_schema: t.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
        }
    }
    let tool_choice = match obj.get("toolChoice").and_then(|c| c.get("mode")).and_then(Value::as_str) {
        None => None,
        Some("auto") => Some(ToolChoice::Auto),
        Some("none") => Some(ToolChoice::None),
        Some("required") => Some(ToolChoice::Required),
        Some(other) => return Err(bad(format!("toolChoice.mode {other:?} is not auto, none or required"))),
    };
    Ok(SamplingRequest {
        system_prompt: obj.get("systemPrompt").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned),
        messages,
        max_tokens,
        temperature,
        stop_sequences,
        preferences,
        tools,
        tool_choice,
    })
}

/// A message's content: one block or an array of them.
fn blocks(content: &Value, at: &str) -> Result<Vec<Block>, ModelError> {
    match content {
        Value::Array(items) => items.iter().map(|b| block(b, at)).collect(),
        Value::Object(_) => Ok(vec![block(content, at)?]),
        _ => Err(bad(format!("{at}: `content` must be a content block or an array of them"))),
    }
}

fn block(b: &Value, at: &str) -> Result<Block, ModelError> {
    match b.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Block::Text(string(b, "text", at)?)),
        Some("image") => Ok(Block::Image { data: string(b, "data", at)?, mime_type: string(b, "mimeType", at)? }),
        Some("audio") => Ok(Block::Audio { data: string(b, "data", at)?, mime_type: string(b, "mimeType", at)? }),
        Some("tool_use") => Ok(Block::ToolUse {
            id: string(b, "id", at)?,
            name: string(b, "name", at)?,
            input: b.get("input").cloned().unwrap_or_else(|| json!({})),
        }),
        Some("tool_result") => {
            let content = match b.get("content").and_then(Value::as_array) {
                Some(items) => items
                    .iter()
                    // A tool's result may hold resources and links a model API cannot take;
                    // its text and images carry what the model needs.
                    .filter(|c| matches!(c.get("type").and_then(Value::as_str), Some("text" | "image")))
                    .map(|c| block(c, at))
                    .collect::<Result<_, _>>()?,
                None => Vec::new(),
            };
            Ok(Block::ToolResult {
                tool_use_id: string(b, "toolUseId", at)?,
                content,
                is_error: b.get("isError").and_then(Value::as_bool).unwrap_or(false),
            })
        }
        other => Err(bad(format!("{at}: content of type {other:?} cannot be sent to a model"))),
    }
}

fn block_json(b: &Block) -> Value {
    match b {
        Block::Text(t) => json!({"type": "text", "text": t}),
        Block::Image { data, mime_type } => json!({"type": "image", "data": data, "mimeType": mime_type}),
        Block::Audio { data, mime_type } => json!({"type": "audio", "data": data, "mimeType": mime_type}),
        Block::ToolUse { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        Block::ToolResult { tool_use_id, content, is_error } => json!({
            "type": "tool_result",
            "toolUseId": tool_use_id,
            "content": content.iter().map(block_json).collect::<Vec<_>>(),
            "isError": is_error,
        }),
    }
}

/// The `CreateMessageResult` for a completion: one block as an object, several as an array.
pub fn result_json(c: &Completion) -> Value {
    let content = match c.content.as_slice() {
        [one] => block_json(one),
        [] => json!({"type": "text", "text": ""}),
        many => Value::Array(many.iter().map(block_json).collect()),
    };
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    out.insert("content".into(), content);
    out.insert("model".into(), json!(c.model));
    if let Some(r) = &c.stop_reason {
        out.insert("stopReason".into(), json!(r.as_str()));
    }
    Value::Object(out)
}

/// The `CreateMessageResult` for text a person wrote or edited.
pub fn text_result_json(text: &str, model: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": model, "stopReason": "endTurn"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_with_every_field_is_read() {
        let r = request_from_params(&json!({
            "systemPrompt": "Be brief.",
            "maxTokens": 64,
            "temperature": 0.2,
            "stopSequences": ["END"],
            "modelPreferences": {"hints": [{"name": "sonnet"}, {}], "costPriority": 0.3},
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t1",
                    "content": [{"type": "text", "text": "42"}, {"type": "resource_link", "uri": "x"}]}]}
            ],
            "tools": [{"name": "f", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "required"}
        }))
        .expect("read");
        assert_eq!(r.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(r.preferences.hints, vec!["sonnet"]);
        assert_eq!(r.preferences.cost, Some(0.3));
        assert_eq!(r.tool_choice, Some(ToolChoice::Required));
        assert_eq!(
            r.messages[2].content,
            vec![Block::ToolResult {
                tool_use_id: "t1".into(),
                content: vec![Block::Text("42".into())],
                is_error: false
            }]
        );
    }

    #[test]
    fn a_request_without_max_tokens_or_with_a_strange_role_is_refused() {
        let e = request_from_params(&json!({"messages": []})).expect_err("no maxTokens");
        assert!(e.to_string().contains("maxTokens"), "{e}");
        let e = request_from_params(
            &json!({"maxTokens": 5, "messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]}),
        )
        .expect_err("role");
        assert!(e.to_string().contains("messages[0]"), "{e}");
    }

    #[test]
    fn a_completion_becomes_a_create_message_result() {
        let c = Completion {
            content: vec![Block::Text("Hello".into())],
            model: "m".into(),
            stop_reason: Some(StopReason::MaxTokens),
            usage: None,
        };
        assert_eq!(
            result_json(&c),
            json!({"role": "assistant", "content": {"type": "text", "text": "Hello"}, "model": "m", "stopReason": "maxTokens"})
        );
    }
}
