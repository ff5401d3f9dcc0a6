//! A plain modern call the server answers with input requests (2026-07-28, multi-round-trip
//! requests): the round's questions are asked on the task like any task's, and once the user has
//! answered them the call is sent again with the answers and the round's `requestState`. The rest
//! of the round (roots, what Taskdeck cannot serve, sampling the policy refuses or sends to a model
//! within its budget) is answered without asking, as a task's input requests are (`inputs.rs`,
//! `sampling/auto.rs`).
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
    held: Option<Box<AnswerMsg>>,
    made: Vec<(String, Reply)>,
) -> Option<RetryInputs> {
    let refuse_held = |held: Option<Box<AnswerMsg>>| {
        if let Some(a) = held {
            let _ = a.reply.send(Err(not_waiting(rec).into()));
        }
    };
    if round >= MAX_ROUNDS {
        refuse_held(held);
        let message = format!(
            "the server asked for input {MAX_ROUNDS} times on one call without answering it; Taskdeck stopped there"
        );
        let error = taskdeck_store::TaskError { code: None, message, reason: None };
        hub.gate.apply_quietly(&rec.id, Update::Failed { error, server_status: None });
        return None;
    }
    let mut responses = made;
    let mut users = Vec::new();
    for q in asked.questions {
        let QuestionKey::InputKey(key) = &q.key else { continue };
        if let Some(reply) = crate::sampling::auto::for_round(hub, rec, &q).await {
            responses.push((key.clone(), reply));
            continue;
        }
        match crate::inputs::unasked(hub, &rec.server, &q) {
            Some(reply) => responses.push((key.clone(), reply)),
            None => users.push(q),
        }
    }
    if !users.is_empty() {
        keep(hub, rec, &Kept { round, request_state: asked.request_state.clone(), answered: as_map(&responses) });
        let answers = ask_and_wait(hub, rec, users, rx, held).await;
        if answers.is_some() || hub.gate.get(&rec.id).map_or(true, |r| r.status.is_terminal()) {
            forget(hub, rec);
        }
        responses.extend(answers?);
    } else {
        refuse_held(held);
        if hub.gate.get(&rec.id).map_or(true, |r| r.status.is_terminal()) {
            return None;
        }
    }
    tracing::info!(task = %rec.id, round, "sending the call again with its input responses");
    Some(RetryInputs { responses, request_state: asked.request_state })
}

/// Takes up the round a task was waiting on when its driver stopped (Taskdeck stopped, or another
/// process asked it): its questions are the stored ones, and the state and the responses made
/// without asking are those kept beside the store. `None` when none was kept: the call is then
/// sent afresh, and the server asks again.
pub(crate) fn resumed(hub: &Hub, rec: &TaskRecord) -> Option<Resumed> {
    if !waits_on_a_round(rec) {
        return None;
    }
    let kept: Kept = std::fs::read(file(hub, rec)).ok().and_then(|b| serde_json::from_slice(&b).ok())?;
    let questions: Vec<Question> =
        if rec.questions.is_empty() { rec.question.iter().cloned().collect() } else { rec.questions.clone() };
    // What was answered without asking goes as it went, asked of nobody again.
    let made = kept.answered.into_iter().map(|(k, v)| (k, Reply::Result(v))).collect();
    Some(Resumed { round: InputRound { questions, request_state: kept.request_state }, number: kept.round, made })
}

/// A round taken up again ([`resumed`]).
pub(crate) struct Resumed {
    pub round: InputRound,
    /// How many rounds went before it.
    pub number: usize,
    /// The responses made without asking.
    pub made: Vec<(String, Reply)>,
}

/// What a round needs beside the store to be answered after a restart: the server's state, echoed
/// exactly, and the responses made without asking. Kept as `<data dir>/rounds/<task id>.json`,
/// private, while the user is asked; removed once answered or ended.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    round: usize,
    request_state: Option<String>,
    answered: serde_json::Map<String, serde_json::Value>,
}

fn file(hub: &Hub, rec: &TaskRecord) -> std::path::PathBuf {
    // Task ids are Taskdeck's own UUIDs, never a server's text.
    hub.paths.data_dir.join("rounds").join(format!("{}.json", rec.id))
}

fn keep(hub: &Hub, rec: &TaskRecord, kept: &Kept) {
    let path = file(hub, rec);
    let written = path
        .parent()
        .map_or(Ok(()), taskdeck_store::private_fs::create_dir_all)
        .and_then(|()| taskdeck_store::private_fs::write_atomic(&path, &serde_json::to_vec(kept).unwrap_or_default()));
    // Only a restart's continuation is lost: the call is then sent afresh.
    if let Err(e) = written {
        tracing::warn!(task = %rec.id, "the round's state could not be kept: {e}");
    }
}

/// Drops what was kept of the task's round: it ended without it.
pub(crate) fn forget_round(hub: &Hub, rec: &TaskRecord) {
    forget(hub, rec);
}

fn forget(hub: &Hub, rec: &TaskRecord) {
    let _ = std::fs::remove_file(file(hub, rec));
}

fn as_map(responses: &[(String, Reply)]) -> serde_json::Map<String, serde_json::Value> {
    responses
        .iter()
        .filter_map(|(k, r)| match r {
            Reply::Result(v) => Some((k.clone(), v.clone())),
            Reply::Refused(_) => serde_json::to_value(taskdeck_protocol::elicitation::ElicitResult::decline())
                .ok()
                .map(|v| (k.clone(), v)),
        })
        .collect()
}

/// Asks `questions` on the task (all at once when there are several, as a task's are) and waits
/// for the answers the driver queue brings; records them before the call goes again.
async fn ask_and_wait(
    hub: &Hub,
    rec: &TaskRecord,
    questions: Vec<Question>,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
    mut held: Option<Box<AnswerMsg>>,
) -> Option<Vec<(String, Reply)>> {
    let keys: Vec<QuestionKey> = questions.iter().map(|q| q.key.clone()).collect();
    let action = match questions.as_slice() {
        [one] => decide::ask(one, None),
        _ => {
            let message = questions[0].message.clone();
            Action::Ask { key: keys[0].clone(), update: Update::Questions { questions: questions.clone(), message } }
        }
    };
    // Asked again after a restart, the same question is no news to the store.
    hub.carry_out(rec, vec![action]);
    loop {
        // An answer given before the call was sent again answers this round if it asks the same.
        let next = match held.take() {
            Some(a) => Some(DriverMsg::Answer(a)),
            None => rx.recv().await,
        };
        match next {
            Some(DriverMsg::Answer(a)) => {
                let given: Vec<QuestionKey> =
                    std::iter::once(a.key.clone()).chain(a.more.iter().map(|(k, _, _)| k.clone())).collect();
                if given != keys {
                    // The server reads the round's answers together, from one retry: a part of
                    // them cannot go on its own.
                    let refusal = if given.iter().all(|k| keys.contains(k)) {
                        let message = format!(
                            "{} questions are pending for this call: give one answer for each, in order",
                            keys.len()
                        );
                        crate::error::EngineError::InvalidAnswer { path: String::new(), message }
                    } else {
                        not_waiting(rec).into()
                    };
                    let _ = a.reply.send(Err(refusal));
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

/// Whether an answer is to a round's question (a key of the server's own, not a URL-mode one of
/// Taskdeck's), which waits for the round when it comes before the call is answered.
pub(crate) fn answers_a_round(a: &AnswerMsg) -> bool {
    matches!(&a.key, QuestionKey::InputKey(k) if !crate::url_mode::is_own_key(k))
}

/// Whether a task that stopped without a handle was waiting on a round's questions: nothing runs
/// on the server then, so it can be driven again, sending the call afresh (the server asks again).
pub(crate) fn waits_on_a_round(rec: &TaskRecord) -> bool {
    rec.remote_task_id.is_none()
        && rec.status == TaskStatus::InputRequired
        && rec.question.is_some()
        && rec
            .question
            .iter()
            .chain(&rec.questions)
            .all(|q| matches!(&q.key, QuestionKey::InputKey(k) if !crate::url_mode::is_own_key(k)))
}

pub(crate) fn not_waiting(rec: &TaskRecord) -> StoreError {
    StoreError::Refused {
        id: rec.id.clone(),
        current: TaskStatus::InputRequired,
        attempted: Attempt::Answer,
        reason: "the task is no longer waiting for these answers".into(),
    }
}
