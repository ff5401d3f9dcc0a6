//! OpenAI-compatible chat completions: `POST {base}/chat/completions`.
//!
//! What maps how: the system prompt is a leading `system` message; text is a string when a
//! message is text only, else `text` / `image_url` (a data URL) / `input_audio` (wav or mp3 only,
//! as the format has) parts; a `tool_use` is an assistant `tool_calls` entry and a `tool_result`
//! a `tool` message of its text. `max_tokens` rather than `max_completion_tokens`: it is the
//! field every compatible server (Ollama, llama.cpp, vLLM, LM Studio) reads. Back: `stop` is
//! `endTurn` (the format does not tell a stop sequence from the end of a turn), `length` is
//! `maxTokens`, `tool_calls` is `toolUse`.

use serde_json::{Map, Value, json};

use crate::ModelError;
use crate::wire::{Block, Completion, Role, SamplingRequest, StopReason, ToolChoice, Usage};

pub const PATH: &str = "chat/completions";

fn unsupported(provider: &str, what: impl Into<String>) -> ModelError {
    ModelError::Unsupported { provider: provider.into(), what: what.into() }
}

fn audio_format(provider: &str, mime: &str) -> Result<&'static str, ModelError> {
    match mime.to_ascii_lowercase().as_str() {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Ok("wav"),
        "audio/mpeg" | "audio/mp3" => Ok("mp3"),
        other => Err(unsupported(provider, format!("audio of type {other} (chat completions take wav or mp3)"))),
    }
}

fn part(provider: &str, b: &Block) -> Result<Value, ModelError> {
    match b {
        Block::Text(t) => Ok(json!({"type": "text", "text": t})),
        Block::Image { data, mime_type } => {
            Ok(json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}}))
        }
        Block::Audio { data, mime_type } => Ok(
            json!({"type": "input_audio", "input_audio": {"data": data, "format": audio_format(provider, mime_type)?}}),
        ),
        Block::ToolUse { .. } | Block::ToolResult { .. } => Err(unsupported(provider, "a tool block here")),
    }
}

/// The `content` of a message: a plain string for text only (what every server takes).
fn content(provider: &str, parts: &[&Block]) -> Result<Value, ModelError> {
    if parts.iter().all(|b| matches!(b, Block::Text(_))) {
        let text: String =
            parts.iter().filter_map(|b| if let Block::Text(t) = b { Some(t.as_str()) } else { None }).collect();
        return Ok(Value::String(text));
    }
    Ok(Value::Array(parts.iter().map(|b| part(provider, b)).collect::<Result<_, _>>()?))
}

/// The request body.
pub fn body(provider: &str, model: &str, r: &SamplingRequest) -> Result<Value, ModelError> {
    let mut messages = Vec::new();
    if let Some(s) = &r.system_prompt {
        messages.push(json!({"role": "system", "content": s}));
    }
    for m in &r.messages {
        match m.role {
            Role::User => {
                // Tool results are messages of their own, before the rest of the user's turn.
                let mut rest = Vec::new();
                for b in &m.content {
                    if let Block::ToolResult { tool_use_id, content, is_error } = b {
                        let mut text = String::new();
                        for c in content {
                            match c {
                                Block::Text(t) => text.push_str(t),
                                _ => return Err(unsupported(provider, "an image in a tool result")),
                            }
                        }
                        if *is_error {
                            text = format!("Error: {text}");
                        }
                        messages.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": text}));
                    } else if matches!(b, Block::ToolUse { .. }) {
                        return Err(unsupported(provider, "a tool call in a user message"));
                    } else {
                        rest.push(b);
                    }
                }
                if !rest.is_empty() {
                    messages.push(json!({"role": "user", "content": content(provider, &rest)?}));
                }
            }
            Role::Assistant => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for b in &m.content {
                    match b {
                        Block::Text(t) => text.push_str(t),
                        Block::ToolUse { id, name, input } => calls.push(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": input.to_string()},
                        })),
                        Block::Image { .. } => return Err(unsupported(provider, "an image in an assistant message")),
                        Block::Audio { .. } => return Err(unsupported(provider, "audio in an assistant message")),
                        Block::ToolResult { .. } => {
                            return Err(unsupported(provider, "a tool result in an assistant message"));
                        }
                    }
                }
                let mut msg = Map::new();
                msg.insert("role".into(), json!("assistant"));
                msg.insert(
                    "content".into(),
                    if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) },
                );
                if !calls.is_empty() {
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(msg));
            }
        }
    }
    let mut out = Map::new();
    out.insert("model".into(), json!(model));
    out.insert("messages".into(), Value::Array(messages));
    out.insert("max_tokens".into(), json!(r.max_tokens));
    if let Some(t) = r.temperature {
        out.insert("temperature".into(), json!(t));
    }
    if !r.stop_sequences.is_empty() {
        out.insert("stop".into(), json!(r.stop_sequences));
    }
    if !r.tools.is_empty() {
        let tools: Vec<Value> = r
            .tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("name".into(), json!(t.name));
                if let Some(d) = &t.description {
                    f.insert("description".into(), json!(d));
                }
                f.insert("parameters".into(), t.input_schema.clone());
                json!({"type": "function", "function": f})
            })
            .collect();
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(c) = r.tool_choice {
        let c = match c {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "required",
        };
        out.insert("tool_choice".into(), json!(c));
    }
    Ok(Value::Object(out))
}

/// The answer, read.
pub fn completion(provider: &str, asked_model: &str, v: &Value) -> Result<Completion, ModelError> {
    let malformed = |detail: &str| ModelError::Malformed { provider: provider.into(), detail: detail.into() };
    let choice = v.pointer("/choices/0").ok_or_else(|| malformed("no choices"))?;
    let message = choice.get("message").ok_or_else(|| malformed("the choice has no message"))?;
    let mut content = Vec::new();
    match message.get("content") {
        Some(Value::String(s)) if !s.is_empty() => content.push(Block::Text(s.clone())),
        Some(Value::String(_)) | Some(Value::Null) | None => {}
        // Some servers answer with parts, like the request's.
        Some(Value::Array(parts)) => {
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    content.push(Block::Text(t.to_owned()));
                }
            }
        }
        Some(_) => return Err(malformed("the message content is neither text nor parts")),
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for c in calls {
            let id = c.get("id").and_then(Value::as_str).ok_or_else(|| malformed("a tool call has no id"))?;
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a tool call has no name"))?;
            let args = c.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}");
            let input: Value =
                serde_json::from_str(args).map_err(|_| malformed("a tool call's arguments are not JSON"))?;
            if !input.is_object() {
                return Err(malformed("a tool call's arguments are not an object"));
            }
            content.push(Block::ToolUse { id: id.into(), name: name.into(), input });
        }
    }
    let stop_reason = choice.get("finish_reason").and_then(Value::as_str).map(|r| match r {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        other => StopReason::Other(other.to_owned()),
    });
    let usage = v.get("usage").and_then(|u| {
        Some(Usage {
            input_tokens: u.get("prompt_tokens")?.as_u64()?,
            output_tokens: u.get("completion_tokens")?.as_u64()?,
        })
    });
    let model = v.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()).unwrap_or(asked_model);
    Ok(Completion { content, model: model.to_owned(), stop_reason, usage })
}
