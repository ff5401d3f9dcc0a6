//! A sampling question as a terminal shows it: what the server wants a language model to read
//! (its system prompt and messages, as inert text: images and audio are named, never decoded),
//! what it would like of the model, and how to reply. The terminal cleans the text on the way out.

use taskdeck_protocol::question::Question;
use taskdeck_protocol::sampling::{IncludeContext, Role, SamplingContent};

/// Characters of one message shown; the whole request is in `show --json`.
const MESSAGE_CHARS: usize = 2000;

pub fn review(server: &str, q: &Question) -> String {
    let Some(p) = q.sampling_params() else {
        return format!("{server} asks for a language model's reply, but its request could not be read\n");
    };
    let mut text = format!("{server} asks for a language model's reply (up to {} tokens)\n", p.max_tokens);
    if let Some(system) = &p.system_prompt {
        text.push_str(&format!("  system prompt: {}\n", cut(system)));
    }
    for m in &p.messages {
        let who = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in m.content.blocks() {
            let shown = match block {
                SamplingContent::Text { text, .. } => cut(text),
                SamplingContent::Image { mime_type, data, .. } => format!("[image {mime_type}, {} bytes]", data.len()),
                SamplingContent::Audio { mime_type, data, .. } => format!("[audio {mime_type}, {} bytes]", data.len()),
                SamplingContent::ToolUse { name, .. } => format!("[asks to call tool {name}]"),
                SamplingContent::ToolResult { tool_use_id, .. } => format!("[result of tool call {tool_use_id}]"),
            };
            text.push_str(&format!("  {who}: {shown}\n"));
        }
    }
    let hints: Vec<&str> =
        p.model_preferences.iter().flat_map(|m| m.hints.iter().flatten()).filter_map(|h| h.name.as_deref()).collect();
    if !hints.is_empty() {
        text.push_str(&format!("  model hints: {}\n", hints.join(", ")));
    }
    if matches!(p.include_context, Some(IncludeContext::ThisServer | IncludeContext::AllServers)) {
        text.push_str("  it asks to see other context too; Taskdeck sends none: only your reply goes back\n");
    }
    if p.offers_tools() {
        let names: Vec<&str> =
            p.tools.iter().flatten().filter_map(|t| t.get("name").and_then(|n| n.as_str())).collect();
        text.push_str(&format!("  tools it offers the model: {}\n", names.join(", ")));
    }
    text
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_CHARS) {
        Some((end, _)) => format!("{}… (the rest is in show --json)", &text[..end]),
        None => text.to_owned(),
    }
}

/// `answer --sample [--edit]`: the configured model's completion for the task's sampling request,
/// printed, as the answer to give. Editing needs the completion first, so without a model both end
/// in the engine's "no model configured" error. The engine keeps the completion it returned, so the
/// answer's note in the log carries its model and tokens, and says when the editor changed it.
pub async fn sample(
    engine: &taskdeck_engine::Engine,
    id: &str,
    edit: bool,
) -> crate::error::Result<taskdeck_engine::AnswerInput> {
    // The first pending question: the one `answer` answers.
    let completion = engine.sample(id, None).await?;
    let text = completion.result.content.text();
    crate::terminal::out(&format!("{} ({}):\n{text}\n", completion.result.model, id));
    if edit {
        let edited = crate::models::edit_text(&engine.paths().data_dir, &text)?;
        if edited.trim().is_empty() {
            return Err(crate::error::CliError::runtime("the edited completion is empty; nothing was sent"));
        }
        if edited != text {
            let mut reply = serde_json::Map::new();
            reply.insert("text".into(), serde_json::Value::from(edited));
            return Ok(taskdeck_engine::AnswerInput::Accept(reply));
        }
    }
    match serde_json::to_value(&completion.result) {
        Ok(serde_json::Value::Object(reply)) => Ok(taskdeck_engine::AnswerInput::Accept(reply)),
        _ => Err(crate::error::CliError::runtime("the completion could not be read")),
    }
}
