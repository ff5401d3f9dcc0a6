//! A plain modern call the server answers with input requests (2026-07-28, multi-round-trip
//! requests): the round's questions are asked on the task like any task's, and once the user has
//! answered them the call is sent again with the answers and the round's `requestState`. The rest
//! of the round (roots, what Taskdeck cannot serve, sampling the policy refuses) is answered without
//! asking, as a task's input requests are (`inputs.rs`).
//!
//! An `InputRequiredResult` ends the request: nothing runs on the server between rounds, so
//! sending the call again breaks no "sent once" promise. The rounds are bounded: a server that
//! asks again and again ends the task after [`MAX_ROUNDS`], whether it asks the user each time or
//! only for what Taskdeck answers by itself.

use taskdeck_client::{Asks, InputRound, Question, QuestionKey, Reply, RetryInputs};
use taskdeck_store::{Answer, Attempt, StoreError, TaskRecord, TaskStatus, Update};
use tokio::sync::mpsc;

use crate::decide::{self, Action};
use crate::hub::Hub;
use crate::live::{AnswerMsg, DriverMsg};
use crate::validate;

/// How many rounds one call may take: past it the task fails with the server's last round unanswered.
pub(crate) const MAX_ROUNDS: usize = 10;

/// After round `round` (counted from 0) of the call: the answers to send it again with, once the
/// user has given theirs; `None` when the task ended instead (failed past the bound, cancelled, or
/// nobody drives it any more).
pub(crate) async fn answered(
    hub: &Hub,
    rec: &TaskRecord,
    asked: InputRound,
    round: usize,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Option<RetryInputs> {
    if round >= MAX_ROUNDS {
        let message = format!(
            "the server asked for input {MAX_ROUNDS} times on one call without answering it; Taskdeck stopped there"
        );
        let error = taskdeck_store::TaskError { code: None, message, reason: None };
        hub.gate.apply_quietly(&rec.id, Update::Failed { error, server_status: None });
        return None;
    }
    let mut responses = Vec::new();
    let mut users = Vec::new();
    for q in asked.questions {
        let QuestionKey::InputKey(key) = &q.key else { continue };
        match crate::inputs::unasked(hub, &rec.server, &q) {
            Some(reply) => responses.push((key.clone(), reply)),
            None => users.push(q),
        }
    }
    if !users.is_empty() {
        responses.extend(ask_and_wait(hub, rec, users, rx).await?);
    } else if hub.gate.get(&rec.id).map_or(true, |r| r.status.is_terminal()) {
        return None;
    }
    tracing::info!(task = %rec.id, round, "sending the call again with its input responses");
    Some(RetryInputs { responses, request_state: asked.request_state })
}

/// Asks `questions` on the task (all at once when there are several, as a task's are) and waits
/// for the answers the driver queue brings; records them before the call goes again.
async fn ask_and_wait(
    hub: &Hub,
    rec: &TaskRecord,
    questions: Vec<Question>,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Option<Vec<(String, Reply)>> {
    let keys: Vec<QuestionKey> = questions.iter().map(|q| q.key.clone()).collect();
    let action = match questions.as_slice() {
        [one] => decide::ask(one, None),
        _ => {
            let message = questions[0].message.clone();
            Action::Ask { key: keys[0].clone(), update: Update::Questions { questions: questions.clone(), message } }
        }
    };
    hub.carry_out(rec, vec![action]);
    loop {
        match rx.recv().await {
            Some(DriverMsg::Answer(a)) => {
                let given: Vec<QuestionKey> =
                    std::iter::once(a.key.clone()).chain(a.more.iter().map(|(k, _, _)| k.clone())).collect();
                if given != keys {
                    let _ = a.reply.send(Err(not_waiting(rec).into()));
                    continue;
                }
                let AnswerMsg { key, response, note, more, reply } = *a;
                let all: Vec<(QuestionKey, Reply, Option<serde_json::Value>)> =
                    std::iter::once((key, response, note)).chain(more).collect();
                let update = match all.as_slice() {
                    [(k, r, n)] => Update::Answer(Answer {
                        key: k.to_text(),
                        response: crate::reply::stored(r, n.as_ref()),
                        note: n.clone(),
                    }),
                    _ => Update::Answers(
                        all.iter()
                            .map(|(k, r, n)| Answer {
                                key: k.to_text(),
                                response: crate::reply::stored(r, n.as_ref()),
                                note: n.clone(),
                            })
                            .collect(),
                    ),
                };
                let outcome = hub.gate.apply(&rec.id, update);
                hub.live.close_question(&rec.id);
                let recorded = outcome.is_ok();
                let _ = reply.send(outcome);
                if !recorded {
                    return None;
                }
                let replies = all
                    .into_iter()
                    .zip(&questions)
                    .filter_map(|((k, mut r, _), q)| {
                        // Integral floats go out as integers where the form says integer, as arguments do.
                        if let (Asks::Form { schema, .. }, Reply::Result(result)) = (&q.asks, &mut r)
                            && let Some(content) = result.get_mut("content")
                        {
                            validate::integers_as_integers(schema, content);
                        }
                        match k {
                            QuestionKey::InputKey(k) => Some((k, r)),
                            QuestionKey::Request(_) => None,
                        }
                    })
                    .collect();
                return Some(replies);
            }
            // Nothing is in flight on the server: no question now can be this call's.
            Some(DriverMsg::Question(other)) => hub.record_question(&rec.id, &rec.server, *other),
            Some(DriverMsg::Snapshot(_) | DriverMsg::Wake) => {
                if hub.gate.get(&rec.id).map_or(true, |r| r.status.is_terminal()) {
                    return None;
                }
            }
            None => return None,
        }
    }
}

fn not_waiting(rec: &TaskRecord) -> StoreError {
    StoreError::Refused {
        id: rec.id.clone(),
        current: TaskStatus::InputRequired,
        attempted: Attempt::Answer,
        reason: "the task is no longer waiting for these answers".into(),
    }
}
