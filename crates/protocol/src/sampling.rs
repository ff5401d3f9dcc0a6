//! `sampling/createMessage`: a server asking the host's language model for a completion. The same
//! shapes serve both eras: legacy sends it as a server-to-client request (with the related-task
//! `_meta` when a task asks), modern lists it in a task's `inputRequests`.
//!
//! As a question (see [`crate::question`]) it asks [`Asks::Sampling`](crate::question::Asks): the
//! user reviews what the server wants sent and either lets a model answer, writes the reply, or
//! declines. What a user types as the reply is read by [`reply_from_user`], the one reading of it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ErrorObject;

/// Who said a message.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One block of a sampling message: the content kinds 2025-11-25 allows there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SamplingContent {
    Text {
        text: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// The model asks to call one of the request's `tools`.
    ToolUse {
        id: String,
        name: String,
        input: Map<String, Value>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// What a tool returned, given back to the model.
    ToolResult {
        #[serde(rename = "toolUseId")]
        tool_use_id: String,
        content: Vec<Value>,
        #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        #[serde(rename = "structuredContent", default, skip_serializing_if = "Option::is_none")]
        structured_content: Option<Value>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
}

impl SamplingContent {
    pub fn text(text: impl Into<String>) -> Self {
        SamplingContent::Text { text: text.into(), extra: Map::new() }
    }

    /// The kind as the wire names it.
    pub fn kind(&self) -> &'static str {
        match self {
            SamplingContent::Text { .. } => "text",
            SamplingContent::Image { .. } => "image",
            SamplingContent::Audio { .. } => "audio",
            SamplingContent::ToolUse { .. } => "tool_use",
            SamplingContent::ToolResult { .. } => "tool_result",
        }
    }
}

/// A message's content: one block, or (2025-11-25 on) a list of them. The shape sent is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    One(Box<SamplingContent>),
    Many(Vec<SamplingContent>),
}

impl MessageContent {
    pub fn blocks(&self) -> &[SamplingContent] {
        match self {
            MessageContent::One(c) => std::slice::from_ref(c),
            MessageContent::Many(v) => v,
        }
    }

    /// The text blocks, joined by blank lines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .blocks()
            .iter()
            .filter_map(|b| match b {
                SamplingContent::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    pub role: Role,
    pub content: MessageContent,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the server would like of the model; advisory.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelPreferences {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    #[serde(rename = "costPriority", default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    #[serde(rename = "speedPriority", default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    #[serde(rename = "intelligencePriority", default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Which servers' context the server asks to have attached. Taskdeck attaches none: it declares
/// no `sampling.context`, and the review shows what was asked.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    None,
    ThisServer,
    AllServers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    Auto,
    Required,
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `sampling/createMessage` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateMessageParams {
    pub messages: Vec<SamplingMessage>,
    #[serde(rename = "modelPreferences", default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    #[serde(rename = "systemPrompt", default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(rename = "includeContext", default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(rename = "maxTokens")]
    pub max_tokens: u64,
    #[serde(rename = "stopSequences", default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// 2025-11-25: tools the model may ask to call (`Tool` objects, kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(rename = "toolChoice", default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// `_meta` (related task), a legacy `task` asking for a client-hosted task, and anything newer.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateMessageParams {
    /// Whether the server offered the model any tool.
    pub fn offers_tools(&self) -> bool {
        self.tools.as_ref().is_some_and(|t| !t.is_empty())
    }
}

/// The reply: what the host's model (or its user) said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateMessageResult {
    pub role: Role,
    pub content: MessageContent,
    pub model: String,
    #[serde(rename = "stopReason", default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `model` of a reply a person wrote.
pub const HAND_WRITTEN_MODEL: &str = "human";

impl CreateMessageResult {
    /// A text reply from the assistant.
    pub fn text(text: impl Into<String>, model: impl Into<String>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: MessageContent::One(Box::new(SamplingContent::text(text))),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
            extra: Map::new(),
        }
    }
}

/// The error a legacy server is answered with when the user declines (the code the SDKs use for a
/// user's refusal).
pub fn declined() -> ErrorObject {
    ErrorObject::new(-1, "the user declined the sampling request")
}

/// What the review shows of a request, beside the request itself (its `request.params`, which the
/// UI renders inert): the figures a person decides on. Worked out once when the question is
/// decoded.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingAsk {
    pub system_prompt: Option<String>,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub max_tokens: u64,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub messages: usize,
    /// The model names the server hinted at, in its order.
    pub model_hints: Vec<String>,
    /// What the server asked to see beside its messages; Taskdeck sends none of it.
    pub include_context: Option<IncludeContext>,
    /// The names of the tools the server offered the model.
    pub tools: Vec<String>,
}

impl SamplingAsk {
    fn of(p: &CreateMessageParams) -> SamplingAsk {
        let hints = p.model_preferences.as_ref().and_then(|m| m.hints.as_ref());
        SamplingAsk {
            system_prompt: p.system_prompt.clone(),
            max_tokens: p.max_tokens,
            messages: p.messages.len(),
            model_hints: hints.into_iter().flatten().filter_map(|h| h.name.clone()).collect(),
            include_context: p.include_context,
            tools: p
                .tools
                .iter()
                .flatten()
                .map(|t| t.get("name").and_then(Value::as_str).unwrap_or("(unnamed)").to_owned())
                .collect(),
        }
    }
}

/// A sampling request as a question: its message (what the CLI and the notifications show) and
/// what it asks. Registered in [`crate::question`].
pub(crate) fn asks(params: &Value) -> (Option<String>, crate::question::Asks) {
    use crate::question::Asks;
    match CreateMessageParams::deserialize(params) {
        Ok(p) => {
            let last = p.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.text());
            let message = match last.filter(|t| !t.is_empty()) {
                Some(text) => format!("The server asks for a model's reply (up to {} tokens) to: {text}", p.max_tokens),
                None => format!("The server asks for a model's reply (up to {} tokens)", p.max_tokens),
            };
            let message = crate::limits::status_message(message);
            (Some(message), Asks::Sampling { sampling: Box::new(SamplingAsk::of(&p)) })
        }
        Err(e) => (None, Asks::Malformed { reason: format!("invalid sampling request: {e}") }),
    }
}

/// Reads what a user gives as the reply to `request`: a whole `CreateMessageResult`, or the
/// shorthand `{"text": "…"}` (with an optional `model`). A reply without a `model` was written by
/// hand ([`HAND_WRITTEN_MODEL`]). Refused with a reason a person can act on: a reply that is not
/// the assistant's, empty content, a member nobody reads (a typo), a tool call the server did not
/// offer.
pub fn reply_from_user(reply: &Value, request: &CreateMessageParams) -> Result<CreateMessageResult, String> {
    let Some(obj) = reply.as_object() else {
        return Err("the reply must be a JSON object: a CreateMessageResult or {\"text\": \"...\"}".into());
    };
    let known = ["role", "content", "model", "stopReason", "_meta", "text"];
    if let Some(unknown) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "unknown member {unknown:?}: a reply has role, content, model and stopReason, or is {{\"text\": \"...\"}}"
        ));
    }
    let model = match obj.get("model") {
        None => HAND_WRITTEN_MODEL.to_owned(),
        Some(Value::String(m)) if !m.trim().is_empty() => m.clone(),
        Some(_) => return Err("\"model\" must be a non-empty string".into()),
    };
    let result = match (obj.get("text"), obj.get("content")) {
        (Some(_), Some(_)) => return Err("give either \"text\" or \"content\", not both".into()),
        (Some(Value::String(text)), None) => {
            if obj.contains_key("role") || obj.contains_key("stopReason") {
                return Err("the {\"text\": ...} shorthand takes only \"model\" beside it".into());
            }
            CreateMessageResult::text(text.clone(), model)
        }
        (Some(_), None) => return Err("\"text\" must be a string".into()),
        (None, None) => return Err("the reply needs \"content\" (or the shorthand \"text\")".into()),
        (None, Some(_)) => {
            let mut full = obj.clone();
            full.entry("role").or_insert_with(|| Value::from("assistant"));
            full.insert("model".into(), Value::from(model));
            serde_json::from_value::<CreateMessageResult>(Value::Object(full))
                .map_err(|e| format!("not a CreateMessageResult: {e}"))?
        }
    };
    if result.role != Role::Assistant {
        return Err("the reply is the assistant's: \"role\" must be \"assistant\"".into());
    }
    let blocks = result.content.blocks();
    if blocks.is_empty() {
        return Err("the reply's content is empty".into());
    }
    for b in blocks {
        match b {
            SamplingContent::Text { text, .. } if text.trim().is_empty() => {
                return Err("the reply's text is empty".into());
            }
            SamplingContent::ToolUse { name, .. } if !request.offers_tools() => {
                return Err(format!("the reply calls tool {name:?}, but the server offered no tools"));
            }
            SamplingContent::ToolUse { name, .. }
                if !request.tools.iter().flatten().any(|t| t.get("name").and_then(Value::as_str) == Some(name)) =>
            {
                return Err(format!("the reply calls tool {name:?}, which the server did not offer"));
            }
            SamplingContent::ToolResult { .. } => {
                return Err("a reply cannot carry a tool_result: that is the server's to send".into());
            }
            _ => {}
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> CreateMessageParams {
        serde_json::from_value(v).unwrap()
    }

    fn plain() -> CreateMessageParams {
        params(json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 100}))
    }

    #[test]
    fn a_request_with_every_member_reads_and_writes_back_unchanged() {
        let wire = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarise"}},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "search", "input": {"q": "x"}}]},
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": "u1", "content": [{"type": "text", "text": "found"}]},
                    {"type": "image", "data": "aGk=", "mimeType": "image/png"}, {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}]}
            ],
            "modelPreferences": {"hints": [{"name": "claude"}, {"name": "gpt"}], "costPriority": 0.2, "speedPriority": 0.5},
            "systemPrompt": "Be brief", "includeContext": "thisServer", "temperature": 0.3, "maxTokens": 500,
            "stopSequences": ["END"], "metadata": {"a": 1},
            "tools": [{"name": "search", "inputSchema": {"type": "object"}}], "toolChoice": {"mode": "auto"},
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}
        });
        let p = params(wire.clone());
        assert_eq!(serde_json::to_value(&p).unwrap(), wire);
        assert!(p.offers_tools());
        let kinds: Vec<&str> = p.messages[2].content.blocks().iter().map(SamplingContent::kind).collect();
        assert_eq!(kinds, ["tool_result", "image", "audio"]);
    }

    #[test]
    fn a_sampling_question_says_what_it_asks_and_a_broken_one_is_malformed() {
        let (message, asks) = asks(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 100, "systemPrompt": "S", "modelPreferences": {"hints": [{"name": "m1"}]},
            "tools": [{"name": "t1"}]}));
        assert_eq!(message.as_deref(), Some("The server asks for a model's reply (up to 100 tokens) to: hi"));
        let crate::question::Asks::Sampling { sampling } = asks else { panic!("{asks:?}") };
        assert_eq!(sampling.system_prompt.as_deref(), Some("S"));
        assert_eq!((sampling.max_tokens, sampling.messages), (100, 1));
        assert_eq!((sampling.model_hints, sampling.tools), (vec!["m1".to_owned()], vec!["t1".to_owned()]));
        for broken in [
            json!({"messages": []}),
            json!({"maxTokens": 3}),
            json!({"messages": [{"role": "system",
            "content": {"type": "text", "text": "x"}}], "maxTokens": 3}),
            Value::Null,
        ] {
            let (_, asks) = super::asks(&broken);
            assert!(
                matches!(&asks, crate::question::Asks::Malformed { reason } if reason.starts_with("invalid sampling")),
                "{asks:?}"
            );
        }
    }

    #[test]
    fn a_users_reply_is_read_whole_or_as_shorthand() {
        let whole = json!({"role": "assistant", "content": {"type": "text", "text": "Hello"}, "model": "m-1"});
        let r = reply_from_user(&whole, &plain()).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), whole);
        let short = reply_from_user(&json!({"text": "Hi"}), &plain()).unwrap();
        assert_eq!(
            serde_json::to_value(&short).unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "human", "stopReason": "endTurn"})
        );
        let named = reply_from_user(&json!({"text": "Hi", "model": "local"}), &plain()).unwrap();
        assert_eq!(named.model, "local");
        let no_role = reply_from_user(&json!({"content": [{"type": "text", "text": "a"}]}), &plain()).unwrap();
        assert_eq!((no_role.role, no_role.model.as_str()), (Role::Assistant, "human"));
    }

    #[test]
    fn a_reply_a_server_could_not_use_is_refused_with_its_reason() {
        let cases = [
            (json!("Hi"), "must be a JSON object"),
            (json!({"txt": "Hi"}), "unknown member \"txt\""),
            (json!({"text": 3}), "\"text\" must be a string"),
            (json!({"text": "  "}), "text is empty"),
            (json!({}), "needs \"content\""),
            (json!({"text": "a", "content": {"type": "text", "text": "b"}}), "not both"),
            (json!({"role": "user", "content": {"type": "text", "text": "b"}}), "must be \"assistant\""),
            (json!({"content": []}), "content is empty"),
            (json!({"content": {"type": "video", "data": "x"}}), "not a CreateMessageResult"),
            (json!({"content": {"type": "text", "text": "b"}, "model": ""}), "\"model\" must be"),
            (json!({"content": {"type": "tool_use", "id": "1", "name": "rm", "input": {}}}), "offered no tools"),
            (
                json!({"content": {"type": "tool_result", "toolUseId": "1", "content": []}}),
                "cannot carry a tool_result",
            ),
        ];
        for (reply, expected) in cases {
            let err = reply_from_user(&reply, &plain()).unwrap_err();
            assert!(err.contains(expected), "{reply}: {err}");
        }
        let with_tools = params(json!({"messages": [], "maxTokens": 5, "tools": [{"name": "search"}]}));
        let call = json!({"content": {"type": "tool_use", "id": "1", "name": "search", "input": {}}});
        assert!(reply_from_user(&call, &with_tools).is_ok());
        let other = json!({"content": {"type": "tool_use", "id": "1", "name": "rm", "input": {}}});
        assert!(reply_from_user(&other, &with_tools).unwrap_err().contains("did not offer"));
    }
}
