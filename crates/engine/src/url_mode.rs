//! URL-mode elicitation, finished (2025-11-25): a plain call the server refuses with `-32042`
//! (URL elicitation required) becomes the URL question it carries, and is sent again once the user
//! says they finished on the page. (`notifications/elicitation/complete`, which closes the matching
//! URL question as finished so the task goes on by itself, is `Hub::complete_url_question`.)
//!
//! A `-32042` means the server did nothing with the call, so sending it again breaks no "sent
//! once" promise. The rounds are bounded: a server that asks again and again ends the task.

use serde_json::Value;
use taskdeck_client::{Asks, ClientError, Question, QuestionKey, QuestionRequest};
use taskdeck_protocol::elicitation::ElicitAction;
use taskdeck_protocol::{codes, methods};
use taskdeck_store::{Answer, TaskRecord, TaskStatus, Update};
use tokio::sync::mpsc;

use crate::hub::Hub;
use crate::live::DriverMsg;

/// How many times one call may be sent again after the server asked for a URL first.
pub(crate) const MAX_ROUNDS: usize = 3;

/// The start of the keys of the questions made here: Taskdeck's own, since no `tasks/update`
/// answers them.
const KEY_PREFIX: &str = "taskdeck/url-required/";

/// The URL question a `-32042` refusal carries: the first of its `data.elicitations` (once it is
/// finished and the call sent again, the server names what is still missing). `None` for any other
/// error, or one whose elicitation is not a URL question Taskdeck can show.
fn required_question(e: &ClientError, round: usize) -> Option<Question> {
    let error = e.rpc_error()?;
    if error.code != codes::URL_ELICITATION_REQUIRED {
        return None;
    }
    let first = error.data.as_ref()?.get("elicitations")?.as_array()?.first()?.clone();
    let id =
        first.get("elicitationId").and_then(Value::as_str).unwrap_or_default().chars().take(256).collect::<String>();
    // Not a key the server chose: the server asked nothing of a task, and no `tasks/update` answers it.
    let key = QuestionKey::InputKey(format!("{KEY_PREFIX}{round}/{id}"));
    let request = QuestionRequest { method: methods::ELICITATION_CREATE.into(), params: first };
    let q = Question::decode(key, None, request);
    matches!(q.asks, Asks::Url { .. }).then_some(q)
}

/// Whether an input key is one of Taskdeck's own URL-mode questions, never a server's.
pub(crate) fn is_own_key(key: &str) -> bool {
    key.starts_with(KEY_PREFIX)
}

/// Whether the call was refused with `-32042` (whatever its data: an unusable one fails the task
/// with the refusal in [`finished_before_again`]).
pub(crate) fn is_url_required(e: &ClientError) -> bool {
    e.rpc_error().is_some_and(|r| r.code == codes::URL_ELICITATION_REQUIRED)
}

/// After a `-32042`: asks the page it names and waits for the user. `true` when the call is to be
/// sent again; otherwise the task has ended (failed with the refusal, or cancelled meanwhile).
pub(crate) async fn finished_before_again(
    hub: &Hub,
    rec: &TaskRecord,
    e: &ClientError,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> bool {
    // The rounds so far are the questions of this kind the task was asked.
    let round = hub.gate.store().events(&rec.id).map_or(MAX_ROUNDS, |events| {
        events
            .iter()
            .filter(|ev| ev.kind == taskdeck_store::EventKind::Question)
            .filter(|ev| ev.data.get("key").and_then(Value::as_str).is_some_and(|k| k.contains(KEY_PREFIX)))
            .count()
    });
    let refused = |why: &str| {
        let mut error = crate::decide::error_of(e);
        error.message = format!("{why}: {}", error.message);
        hub.gate.apply_quietly(&rec.id, Update::Failed { error, server_status: None });
        false
    };
    if round >= MAX_ROUNDS {
        return refused(&format!("the server asked for a page first {MAX_ROUNDS} times"));
    }
    let Some(q) = required_question(e, round) else {
        return refused("the server asked for a page first but named none Taskdeck can show");
    };
    match wait_for_consent(hub, rec, q, rx).await {
        Consent::Finished => true,
        Consent::Refused => refused("the page the server asked for was not finished"),
        Consent::Over => false,
    }
}

enum Consent {
    /// The user (or the server's completion notice) says the page is finished: send the call again.
    Finished,
    /// Declined or dismissed: the call ends with the server's refusal.
    Refused,
    /// The task ended meanwhile (cancelled), or nobody drives it any more.
    Over,
}

/// Asks `q` on the task and waits for the answer the driver queue brings.
async fn wait_for_consent(
    hub: &Hub,
    rec: &TaskRecord,
    q: Question,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Consent {
    let key = q.key.clone();
    hub.record_question(&rec.id, &rec.server, q);
    loop {
        match rx.recv().await {
            Some(DriverMsg::Answer(a)) if a.key == key => {
                let finished = matches!(&a.response, taskdeck_client::Reply::Result(r)
                    if serde_json::from_value::<taskdeck_protocol::elicitation::ElicitResult>(r.clone())
                        .is_ok_and(|r| r.action == ElicitAction::Accept));
                let response = crate::reply::stored(&a.response, a.note.as_ref());
                let outcome =
                    hub.gate.apply(&rec.id, Update::Answer(Answer { key: key.to_text(), response, note: a.note }));
                hub.live.close_question(&rec.id);
                let recorded = outcome.is_ok();
                let _ = a.reply.send(outcome);
                return match (recorded, finished) {
                    (true, true) => Consent::Finished,
                    (true, false) => Consent::Refused,
                    (false, _) => Consent::Over,
                };
            }
            Some(DriverMsg::Answer(a)) => {
                let e = taskdeck_store::StoreError::Refused {
                    id: rec.id.clone(),
                    current: TaskStatus::InputRequired,
                    attempted: taskdeck_store::Attempt::Answer,
                    reason: "the task is no longer waiting for this answer".into(),
                };
                let _ = a.reply.send(Err(e.into()));
            }
            // Nothing is in flight on the server: a question now is no call's, and declined there.
            Some(DriverMsg::Question(other)) => hub.record_question(&rec.id, &rec.server, *other),
            Some(DriverMsg::Snapshot(_) | DriverMsg::Wake) => {
                if hub.gate.get(&rec.id).map_or(true, |r| r.status.is_terminal()) {
                    return Consent::Over;
                }
            }
            None => return Consent::Over,
        }
    }
}
