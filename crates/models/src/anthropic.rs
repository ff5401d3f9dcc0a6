//! The Anthropic Messages API: `POST {base}/v1/messages` with `x-api-key` and
//! `anthropic-version`.
//!
//! The blocks map nearly one to one (text, base64 images, `tool_use`, `tool_result`); the API has
//! no audio input, so audio is refused. `toolChoice` `required` is the API's `any`. Back, the
//! stop reasons are the spec's own in snake case; others (`refusal`, `pause_turn`) pass as they are.

use serde_json::{Map, Value, json};

use crate::ModelError;
use crate::wire::{Block, Completion, Role, SamplingRequest, StopReason, ToolChoice, Usage};

pub const PATH: &str = "v1/messages";
/// The API version Taskdeck speaks.
pub const VERSION: &str = "2023-06-01";

fn unsupported(provider: &str, what: impl Into<String>) -> ModelError {
    ModelError::Unsupported { provider: provider.into(), what: what.into() }
}

fn block(provider: &str, b: &Block) -> Result<Value, ModelError> {
    match b {
        Block::Text(t) => Ok(json!({"type": "text", "text": t})),
        Block::Image { data, mime_type } => {
            Ok(json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}}))
        }
        Block::Audio { .. } => Err(unsupported(provider, "audio (the Messages API takes no audio input)")),
        Block::ToolUse { id, name, input } => Ok(json!({"type": "tool_use", "id": id, "name": name, "input": input})),
        Block::ToolResult { tool_use_id, content, is_error } => Ok(json!({
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": content.iter().map(|c| block(provider, c)).collect::<Result<Vec<_>, _>>()?,
            "is_error": is_error,
        })),
    }
}

/// The request body.
pub fn body(provider: &str, model: &str, r: &SamplingRequest) -> Result<Value, ModelError> {
    let messages = r
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            let content = m.content.iter().map(|b| block(provider, b)).collect::<Result<Vec<_>, _>>()?;
            Ok(json!({"role": role, "content": content}))
        })
        .collect::<Result<Vec<_>, ModelError>>()?;
    let mut out = Map::new();
    out.insert("model".into(), json!(model));
    out.insert("max_tokens".into(), json!(r.max_tokens));
    if let Some(s) = &r.system_prompt {
        out.insert("system".into(), json!(s));
    }
    out.insert("messages".into(), Value::Array(messages));
    if let Some(t) = r.temperature {
        out.insert("temperature".into(), json!(t));
    }
    if !r.stop_sequences.is_empty() {
        out.insert("stop_sequences".into(), json!(r.stop_sequences));
    }
    if !r.tools.is_empty() {
        let tools: Vec<Value> = r
            .tools
            .iter()
            .map(|t| {
                let mut o = Map::new();
                o.insert("name".into(), json!(t.name));
                if let Some(d) = &t.description {
                    o.insert("description".into(), json!(d));
                }
                o.insert("input_schema".into(), t.input_schema.clone());
                Value::Object(o)
            })
            .collect();
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(c) = r.tool_choice {
        let kind = match c {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "any",
        };
        out.insert("tool_choice".into(), json!({"type": kind}));
    }
    Ok(Value::Object(out))
}

/// The answer, read.
pub fn completion(provider: &str, asked_model: &str, v: &Value) -> Result<Completion, ModelError> {
    let malformed = |detail: &str| ModelError::Malformed { provider: provider.into(), detail: detail.into() };
    let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| malformed("no content array"))?;
    let mut content = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = b.get("text").and_then(Value::as_str).ok_or_else(|| malformed("a text block has no text"))?;
                content.push(Block::Text(t.to_owned()));
            }
            Some("tool_use") => {
                let id = b.get("id").and_then(Value::as_str).ok_or_else(|| malformed("a tool_use block has no id"))?;
                let name =
                    b.get("name").and_then(Value::as_str).ok_or_else(|| malformed("a tool_use block has no name"))?;
                let input = b.get("input").filter(|i| i.is_object()).cloned().unwrap_or_else(|| json!({}));
                content.push(Block::ToolUse { id: id.into(), name: name.into(), input });
            }
            // Thinking and other blocks are the model's own; the server asked for a message.
            _ => {}
        }
    }
    let stop_reason = v.get("stop_reason").and_then(Value::as_str).map(|r| match r {
        "end_turn" => StopReason::EndTurn,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "tool_use" => StopReason::ToolUse,
        other => StopReason::Other(other.to_owned()),
    });
    let usage = v.get("usage").and_then(|u| {
        Some(Usage { input_tokens: u.get("input_tokens")?.as_u64()?, output_tokens: u.get("output_tokens")?.as_u64()? })
    });
    let model = v.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()).unwrap_or(asked_model);
    Ok(Completion { content, model: model.to_owned(), stop_reason, usage })
}
