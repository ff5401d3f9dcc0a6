//! What a modern task's input requests get when nobody is asked: roots from the server's grant
//! ([`roots_for`]), and a decline, which the server can read, for a request Taskdeck cannot serve
//! (a method it does not know, params that do not fit their method) or that the server's sampling
//! policy refuses. None of them is left waiting. Answered once per key: keys are unique for a
//! task's life.

use std::collections::HashSet;

use serde_json::{Value, json};
use taskdeck_client::{Asks, Question, Reply, Session, TaskSnapshot};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::types::Root;

use crate::hub::Hub;

/// The directories the user granted `server` (none by default). The one place a roots request,
/// legacy or modern, is answered from.
pub(crate) fn roots_for(hub: &Hub, server: &str) -> Vec<Root> {
    hub.roots_for(server)
}

/// The reply to an input request nobody is asked, or `None` when it is the user's.
pub(crate) fn unasked(hub: &Hub, server: &str, q: &Question) -> Option<Reply> {
    match &q.asks {
        Asks::Roots => Some(Reply::Result(json!({ "roots": roots_for(hub, server) }))),
        Asks::Sampling { .. } if hub.servers.sampling_policy(server) == crate::sampling::SamplingPolicy::Refuse => {
            Some(Reply::Refused(crate::sampling::refused_by_policy()))
        }
        Asks::Unsupported { .. } => Some(decline()),
        Asks::Malformed { .. } if !q.asks_the_user() => Some(decline()),
        _ => None,
    }
}

fn decline() -> Reply {
    Reply::Result(serde_json::to_value(ElicitResult::decline()).unwrap_or(Value::Null))
}

/// Answers, in one `tasks/update`, the requests of `snapshot` nobody is asked and that were not
/// answered yet (`sent` keeps their keys).
pub(crate) async fn answer_unasked(
    hub: &Hub,
    session: &Session,
    server: &str,
    snapshot: &TaskSnapshot,
    sent: &mut HashSet<String>,
) {
    let replies: Vec<(String, Reply)> = snapshot
        .questions
        .iter()
        .filter_map(|q| match &q.key {
            taskdeck_client::QuestionKey::InputKey(k) if !sent.contains(k) => {
                unasked(hub, server, q).map(|r| (k.clone(), r))
            }
            _ => None,
        })
        .collect();
    if replies.is_empty() {
        return;
    }
    let keys: Vec<String> = replies.iter().map(|(k, _)| k.clone()).collect();
    match session.respond_inputs(&snapshot.task_id, replies).await {
        Ok(()) => {
            tracing::info!(server, task = %snapshot.task_id, ?keys, "answered input requests nobody is asked");
            sent.extend(keys);
        }
        Err(e) => tracing::warn!(server, task = %snapshot.task_id, "could not answer input requests: {e}"),
    }
}
