//! The one reading of a user's answer for every kind of question: what goes back to the server,
//! checked before anything is sent, and what the event log keeps beside it.

use serde_json::{Map, Value};
use taskdeck_client::{Question, Reply};
use taskdeck_protocol::elicitation::ElicitResult;

use crate::error::{EngineError, Result};

/// The user's answer to a pending question.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerInput {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}
use crate::{sampling, validate};

/// The reply to `question` for the user's `input`, and (for sampling) its note; `sampled` is the
/// completion a model gave the user for it, if one was asked ([`sampling::reply_to`]). An accept
/// that does not fit the question is [`EngineError::InvalidAnswer`], with the offending field's path.
pub(crate) fn reply(
    schemas: &validate::Schemas,
    question: &Question,
    input: &AnswerInput,
    sampled: Option<&sampling::Completion>,
) -> Result<(Reply, Option<Value>)> {
    let invalid = |message: String| EngineError::InvalidAnswer { path: String::new(), message };
    if let AnswerInput::Accept(_) = input
        && question.too_large_size().is_some()
    {
        return Err(invalid("the question is too large to show; it can only be declined or cancelled".into()));
    }
    if question.is_sampling() {
        let (reply, note) = match input {
            AnswerInput::Accept(content) => sampling::reply_to(question, Some(content), sampled).map_err(invalid)?,
            AnswerInput::Decline => sampling::reply_to(question, None, sampled).map_err(invalid)?,
            AnswerInput::Cancel => sampling::cancelled(),
        };
        return Ok((reply, Some(note.to_value())));
    }
    let response = match input {
        AnswerInput::Accept(content) => {
            if let Some(schema) = question.schema() {
                schemas
                    .check(schema, &Value::Object(content.clone()))
                    .map_err(|(path, message)| EngineError::InvalidAnswer { path, message })?;
            }
            question.accept(content.clone())
        }
        AnswerInput::Decline => ElicitResult::decline(),
        AnswerInput::Cancel => ElicitResult::cancel(),
    };
    Ok((Reply::Result(serde_json::to_value(response).unwrap_or_default()), None))
}

/// How a reply is kept as the answer's `response`: the result as sent, or for a refusal the
/// action the user took with the error the server was sent.
pub(crate) fn stored(reply: &Reply, note: Option<&Value>) -> Value {
    match reply {
        Reply::Result(v) => v.clone(),
        Reply::Refused(error) => {
            let cancelled = note.and_then(|n| n.get("outcome")).and_then(Value::as_str) == Some("cancelled");
            sampling::stored_refusal(if cancelled { "cancel" } else { "decline" }, error)
        }
    }
}
