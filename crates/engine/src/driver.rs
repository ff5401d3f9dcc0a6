//! One task's driver: sends it (once), then follows it to its end, delivering the user's answers
//! in turn with the server's reports. It only does I/O: what each report means is
//! [`crate::decide`]'s, carried out by [`Hub::report`]; how a task is followed in its era is the
//! client's ([`Session::follow`]). When the server dies the driver waits for the supervisor's
//! restart and re-attaches.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use taskdeck_client::{Asks, ClientError, Followed, Reply, RetryInputs, Session, StartOptions, Started, TaskSnapshot};
use taskdeck_protocol::{TaskStatus, codes};
use taskdeck_store::{Answer, Attempt, FailureReason, Mode, StoreError, TaskRecord, Update};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::decide::{error_of, failure, sign_in_hint, sign_in_needed};
use crate::error::EngineError;
use crate::hub::Hub;
use crate::live::{AnswerMsg, DriverMsg};
use crate::url_mode;
use crate::validate;

enum Step {
    Done,
    /// The server wants a sign-in: the task waits, as it is, for one.
    SignIn,
    /// The session died; follow the task again on the next one.
    Lost,
    /// Re-attaching failed on a live session; tried again until `poll_give_up` says otherwise.
    Trouble(ClientError),
    /// The store cannot take the task's writes: stop, and send nothing more for it.
    Halted,
}

/// Why a driver stopped before the task ended.
enum Left {
    /// Nobody can drive it now (its server is gone from the config or out of reach).
    Pending(String),
    /// The store cannot take its writes; the gate has said so once, and its waiters know.
    Halted(String),
}

pub(crate) async fn drive(hub: Arc<Hub>, id: String, mut rx: mpsc::UnboundedReceiver<DriverMsg>) {
    let outcome = drive_until_end(&hub, &id, &mut rx).await;
    let stalled = match &outcome {
        Ok(()) => None,
        Err(Left::Pending(reason) | Left::Halted(reason)) => Some(reason.clone()),
    };
    hub.live.driver_ended(&id, stalled);
    // A task that ended was published with its end; one left pending is published again so
    // whoever waits on it learns that nobody drives it any more.
    match outcome {
        Ok(()) => {}
        Err(Left::Pending(reason)) => {
            tracing::warn!(task = %id, %reason, "task left pending");
            hub.gate.republish(&id);
        }
        Err(Left::Halted(_)) => hub.gate.republish(&id),
    }
}

async fn drive_until_end(hub: &Arc<Hub>, id: &str, rx: &mut mpsc::UnboundedReceiver<DriverMsg>) -> Result<(), Left> {
    // Since when re-attaching has failed without a break.
    let mut troubled_since: Option<Instant> = None;
    loop {
        if let Some(e) = hub.gate.halted(id) {
            return Err(Left::Halted(e.to_string()));
        }
        let rec = hub.gate.get(id).map_err(|e| match e {
            e @ EngineError::StoreUnwritable { .. } => Left::Halted(e.to_string()),
            e => Left::Pending(e.to_string()),
        })?;
        if rec.status.is_terminal() {
            return Ok(());
        }
        hub.live.drives_on(id, &rec.server);
        let Some(server) = hub.servers.get(&rec.server) else {
            // Left pending, not failed: the server may come back with the next config change.
            return Err(Left::Pending(format!("server {:?} is not in the config", rec.server)));
        };
        let session = match server.session(hub.opts.server_wait).await {
            Ok(s) => s,
            Err(_) if server.status().auth == crate::supervisor::AuthState::SignInNeeded => {
                return Err(wait_for_sign_in(hub, &rec));
            }
            Err(e) if rec.remote_task_id.is_none() => {
                // Nothing was sent yet: the task never ran, and saying so is the honest end.
                hub.gate
                    .apply_quietly(id, failure(None, format!("not started: {e}"), FailureReason::ServerUnavailable));
                return Ok(());
            }
            Err(e) => return Err(Left::Pending(e.to_string())),
        };
        let step = match rec.remote_task_id.clone() {
            None => start(hub, &session, &rec, rx).await,
            Some(remote) => attach(hub, &session, &rec, &remote, rx).await,
        };
        if let Some(e) = hub.gate.halted(id) {
            return Err(Left::Halted(e.to_string()));
        }
        match step {
            Step::Done => return Ok(()),
            Step::SignIn => return Err(wait_for_sign_in(hub, &rec)),
            Step::Halted => return Err(Left::Halted(format!("the store cannot record task {id}"))),
            Step::Lost => {
                troubled_since = None;
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Step::Trouble(e) => {
                let since = *troubled_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= hub.opts.poll_give_up {
                    cannot_follow(hub, id, &e);
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Sends the task. Never sends twice: whatever goes wrong here ends the task, because the server
/// may have started work we could not learn about.
async fn start(
    hub: &Arc<Hub>,
    session: &Session,
    rec: &TaskRecord,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Step {
    // A round the user is still to answer is taken up where it was: the call goes once they have.
    if let Some(r) = crate::mrtr::resumed(hub, rec) {
        return match crate::mrtr::answered(hub, rec, r.round, r.number, rx, None, r.made).await {
            Some(inputs) => send_round(hub, session, rec, rx, Some(inputs), r.number + 1).await,
            None => Step::Done,
        };
    }
    send_round(hub, session, rec, rx, None, 0).await
}

/// Sends the call; `inputs` are the answers to the server's previous round of input requests
/// (`mrtr`), `round` how many rounds went before.
async fn send_round(
    hub: &Arc<Hub>,
    session: &Session,
    rec: &TaskRecord,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
    inputs: Option<RetryInputs>,
    round: usize,
) -> Step {
    // Where a log entry without a task's id belongs: a plain call's, or in 2026-07-28 any call's,
    // whose entries come on its request until it is answered (a task's handle included).
    let plain = plain_or_modern_call(rec, session);
    if plain {
        hub.live.call_started(&rec.server, &rec.id);
    }
    let opts = StartOptions { progress_token: Some(rec.id.clone()), ttl_ms: None };
    let mut arguments = rec.arguments.clone();
    // The tool was looked up when the task was made, so this is the session's cached list.
    if let Ok(tool) = session.tool(&rec.tool).await {
        validate::integers_as_integers(&tool.input_schema, &mut arguments);
    }
    let call = async {
        match &inputs {
            None => session.start_tool(&rec.tool, arguments, &opts).await,
            Some(inputs) => session.retry_tool(&rec.tool, arguments, &opts, inputs).await,
        }
    };
    tokio::pin!(call);
    // An answer to a round asked before this call went out (by a Taskdeck that has stopped since,
    // or another process): kept for the round the call brings (`mrtr`).
    let mut held: Option<Box<AnswerMsg>> = None;
    // A plain call's question is answered while the call is in flight, and in turn with its
    // result: an answer the server took is recorded before the result it led to.
    let started = loop {
        tokio::select! {
            started = &mut call => break Some(started),
            msg = rx.recv() => match msg {
                Some(DriverMsg::Answer(a)) if crate::mrtr::answers_a_round(&a) => {
                    if let Some(older) = held.replace(a) {
                        let _ = older.reply.send(Err(crate::mrtr::not_waiting(rec).into()));
                    }
                }
                Some(DriverMsg::Answer(a)) => answer(hub, session, rec, *a).await,
                Some(DriverMsg::Question(q)) => question(hub, session, &rec.id, &rec.server, *q).await,
                // Reports are routed by remote id, which this task does not have yet.
                Some(DriverMsg::Snapshot(_)) => {}
                // A cancel wakes the driver once the task is cancelled (the server told): the
                // call's answer is nobody's now, and dropping the call stops waiting for it.
                Some(DriverMsg::Wake) => {
                    if hub.gate.get(&rec.id).is_ok_and(|r| r.status.is_terminal()) {
                        if !plain_or_modern_call(rec, session) {
                            cancel_late_handle(session, rec, &mut call).await;
                        }
                        break None;
                    }
                }
                // The engine is shutting down: the call still ends, with its server.
                None => break Some((&mut call).await),
            },
        }
        // A plain call's question or answer the store could not take: what the call brings
        // could not be recorded either.
        if hub.gate.halted(&rec.id).is_some() {
            break None;
        }
    };
    if plain {
        hub.live.call_ended(&rec.server, &rec.id);
    }
    let Some(started) = started else {
        return if hub.gate.halted(&rec.id).is_some() { Step::Halted } else { Step::Done };
    };
    let era = session.era();
    if let Some(held) = held.take_if(|_| !matches!(started, Ok(Started::InputRequired(_)))) {
        let _ = held.reply.send(Err(crate::mrtr::not_waiting(rec).into()));
    }
    match started {
        Ok(Started::Task(handle)) => {
            let rec = match hub.gate.set_remote(
                &rec.id,
                era,
                Some(&handle.task_id),
                handle.ttl_ms,
                handle.poll_interval_ms,
            ) {
                Ok(r) => r,
                Err(e @ EngineError::StoreUnwritable { .. }) => {
                    tracing::debug!(task = %rec.id, "handle not recorded: {e}");
                    return Step::Halted;
                }
                Err(e) => {
                    tracing::debug!(task = %rec.id, "handle not recorded: {e}");
                    // Cancelled here while the handle was on its way: the task it names is not
                    // left running on the server.
                    if hub.gate.get(&rec.id).is_ok_and(|r| r.status == TaskStatus::Cancelled)
                        && let Err(e) = session.cancel_task(&handle.task_id).await
                    {
                        tracing::warn!(task = %rec.id, "a task made after its call was cancelled could not be cancelled: {e}");
                    }
                    return Step::Done;
                }
            };
            // The handle is older than any question that arrived before it was registered; applied
            // after those, its `working` would take the question away again.
            hub.report(&rec, &handle);
            hub.register_remote(&rec);
            follow(hub, session, &rec, &handle, rx).await
        }
        Ok(Started::Completed(result)) => {
            let result = serde_json::to_value(&result).unwrap_or_default();
            hub.gate.finish_call(&rec.id, era, Update::Completed { result, server_status: None });
            Step::Done
        }
        // Nothing runs on the server until the call comes again with the answers.
        Ok(Started::InputRequired(asked)) => {
            match crate::mrtr::answered(hub, rec, *asked, round, rx, held, Vec::new()).await {
                Some(inputs) => Box::pin(send_round(hub, session, rec, rx, Some(inputs), round + 1)).await,
                None => Step::Done,
            }
        }
        Err(e) if sign_in_needed(rec, &e).is_some() => Step::SignIn,
        // Nothing ran: the server wants a page finished first, then the call again (`url_mode`).
        Err(e) if url_mode::is_url_required(&e) => match url_mode::finished_before_again(hub, rec, &e, rx).await {
            true => Box::pin(start(hub, session, rec, rx)).await,
            false => Step::Done,
        },
        Err(e) => {
            let mut error = error_of(&e);
            if e.is_server_gone() {
                error.message = format!("the server stopped before answering: {e}");
            }
            hub.gate.apply_quietly(&rec.id, Update::Failed { error, server_status: None });
            Step::Done
        }
    }
}

/// Whether the call is a request only until it is answered (a plain call, or any call in
/// 2026-07-28, where a task handle is just an answer): not a legacy task-augmented call.
fn plain_or_modern_call(rec: &TaskRecord, session: &Session) -> bool {
    rec.mode == Mode::Call || session.era() == taskdeck_protocol::Era::Modern
}

/// How long a legacy task-augmented call cancelled before its handle came is still listened to.
const LATE_HANDLE_WAIT: Duration = Duration::from_secs(30);

/// A legacy task-augmented call cancelled before its handle came: the server was told with
/// `notifications/cancelled`, but one that made the task before it read that answers with the
/// handle anyway, and the task would run on with nobody following it. It is cancelled with
/// `tasks/cancel` as soon as it comes.
async fn cancel_late_handle(
    session: &Session,
    rec: &TaskRecord,
    call: &mut std::pin::Pin<&mut impl std::future::Future<Output = Result<Started, ClientError>>>,
) {
    let Ok(Ok(Started::Task(handle))) = tokio::time::timeout(LATE_HANDLE_WAIT, call.as_mut()).await else { return };
    match session.cancel_task(&handle.task_id).await {
        Ok(_) => {
            tracing::info!(task = %rec.id, remote = %handle.task_id, "a task made after its call was cancelled is cancelled too")
        }
        Err(e) => {
            tracing::warn!(task = %rec.id, remote = %handle.task_id, "a task made after its call was cancelled could not be cancelled: {e}")
        }
    }
}

/// Re-attaches to a task the server already has, then follows it.
async fn attach(
    hub: &Arc<Hub>,
    session: &Session,
    rec: &TaskRecord,
    remote: &str,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Step {
    hub.register_remote(rec);
    match session.attach(remote).await {
        Ok(snapshot) => {
            hub.report(rec, &snapshot);
            follow(hub, session, rec, &snapshot, rx).await
        }
        Err(e) if e.rpc_error().is_some_and(|r| r.code == codes::INVALID_PARAMS) => {
            unknown_to_server(hub, &rec.id, &e);
            Step::Done
        }
        Err(e) if e.is_server_gone() => Step::Lost,
        Err(e) if sign_in_needed(rec, &e).is_some() => Step::SignIn,
        Err(e) => {
            tracing::warn!(task = %rec.id, "re-attaching failed, will retry: {e}");
            Step::Trouble(e)
        }
    }
}

/// The task waits for its server's sign-in: it says so, and nobody drives it until a sign-in
/// (`Engine::sign_in`, or `taskdeck-cli resume` after `login`) picks it up again.
fn wait_for_sign_in(hub: &Hub, rec: &TaskRecord) -> Left {
    let hint = sign_in_hint(&rec.server);
    if rec.status_message.as_deref() != Some(hint.as_str())
        && let Ok(now) = hub.gate.get(&rec.id)
        && !now.status.is_terminal()
    {
        let update = Update::Status { status: now.status, message: Some(hint.clone()), server_status: None };
        hub.gate.apply_quietly(&rec.id, update);
    }
    Left::Pending(hint)
}

/// The server's answers about the task cannot be read or used, for good: the task fails with the
/// reason rather than stay `working` for ever.
fn cannot_follow(hub: &Hub, id: &str, e: &ClientError) {
    tracing::warn!(task = %id, "giving up on the task: {e}");
    let mut error = error_of(e);
    error.message = format!("Taskdeck could not follow the task: {}", error.message);
    hub.gate.apply_quietly(id, Update::Failed { error, server_status: None });
}

fn unknown_to_server(hub: &Hub, id: &str, e: &ClientError) {
    // The typed error carries the code, and front ends print it from there: the message keeps only
    // the server's words, or every view would say the code twice.
    let (code, words) = match e.rpc_error() {
        Some(rpc) => (rpc.code, rpc.message.clone()),
        None => (codes::INVALID_PARAMS, e.to_string()),
    };
    let mut message = "the server no longer knows this task (it may have restarted or expired it)".to_owned();
    if !words.trim().is_empty() {
        message = format!("{message}: {words}");
    }
    hub.gate.apply_quietly(id, failure(Some(code), message, FailureReason::UnknownToServer));
}

/// Follows an attached task to its end: the server's reports from the driver queue (status
/// notifications, questions) and from the client's follow (polls, the result), one at a time.
async fn follow(
    hub: &Arc<Hub>,
    session: &Session,
    rec: &TaskRecord,
    last: &TaskSnapshot,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Step {
    let id = rec.id.clone();
    let mut follow = session.follow(last, hub.servers.follow_options(&rec.server, hub.opts.follow()));
    // A poll sent before an answer was acknowledged may still show the question answered since.
    let mut answered_at: Option<Instant> = None;
    // Input requests nobody is asked (roots, what Taskdeck cannot serve), answered once each.
    let mut unasked = std::collections::HashSet::new();
    // Sampling requests the server's `auto` policy sent to a model, answered once each.
    let mut sampled = std::collections::HashSet::new();
    loop {
        if hub.gate.halted(&id).is_some() {
            return Step::Halted;
        }
        let rec = match hub.gate.get(&id) {
            Ok(r) if !r.status.is_terminal() => r,
            Err(EngineError::StoreUnwritable { .. }) => return Step::Halted,
            _ => return Step::Done,
        };
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(DriverMsg::Snapshot(s)) => {
                    report(hub, session, &rec, &s, &mut sampled).await;
                    crate::inputs::answer_unasked(hub, session, &rec.server, &s, &mut unasked).await;
                }
                Some(DriverMsg::Question(q)) => question(hub, session, &id, &rec.server, *q).await,
                Some(DriverMsg::Answer(a)) => {
                    answer(hub, session, &rec, *a).await;
                    // Taken once the server has acknowledged the answer, not before it was sent: a
                    // poll the follow sent while the answer was on its way (reading a large
                    // question back from the store takes a while) may still list the question,
                    // and applied after the answer it would ask it again.
                    answered_at = Some(Instant::now());
                }
                Some(DriverMsg::Wake) => {}
                None => return Step::Done,
            },
            next = follow.next() => match next {
                Some(Followed::Snapshot { snapshot, asked_at }) => {
                    if answered_at.is_some_and(|t| asked_at < t) && !snapshot.is_final() {
                        tracing::debug!(task = %id, "a poll older than the answer is no news");
                    } else {
                        report(hub, session, &rec, &snapshot, &mut sampled).await;
                        crate::inputs::answer_unasked(hub, session, &rec.server, &snapshot, &mut unasked).await;
                    }
                }
                Some(Followed::Unknown(e)) => {
                    unknown_to_server(hub, &id, &e);
                    return Step::Done;
                }
                Some(Followed::Lost(_)) => return Step::Lost,
                Some(Followed::Failed(e)) if sign_in_needed(&rec, &e).is_some() => return Step::SignIn,
                Some(Followed::Failed(e)) => {
                    cannot_follow(hub, &id, &e);
                    return Step::Done;
                }
                // Followed to its end, yet the store is not terminal (the write failed): look again.
                None => return Step::Lost,
            },
        }
    }
}

/// A question the server sent as a request of its own: sent to a model when the server's sampling
/// policy says so (`sampling::auto`), else recorded for the user.
async fn question(hub: &Hub, session: &Session, id: &str, server: &str, q: taskdeck_client::Question) {
    if q.is_sampling()
        && let Ok(now) = hub.gate.get(id)
        && !now.status.is_terminal()
        && crate::sampling::auto::answer(hub, session, &now, &q).await
    {
        return;
    }
    hub.record_question(id, server, q);
}

/// A server's report, once what its sampling policy sends to a model without asking is answered.
async fn report(
    hub: &Hub,
    session: &Session,
    rec: &TaskRecord,
    s: &TaskSnapshot,
    sampled: &mut std::collections::HashSet<String>,
) {
    match crate::sampling::auto::from_snapshot(hub, session, rec, s, sampled).await {
        None => hub.report(rec, s),
        Some(left) => {
            if let Ok(now) = hub.gate.get(&rec.id) {
                hub.report(&now, &left);
            }
        }
    }
}

/// Delivers the answers to every question pending at once in one `tasks/update`, then records them
/// with one `answer` event.
async fn answer_several(
    hub: &Hub,
    session: &Session,
    now: &TaskRecord,
    key: taskdeck_client::QuestionKey,
    response: Reply,
    note: Option<Value>,
    more: &[(taskdeck_client::QuestionKey, Reply, Option<Value>)],
) -> crate::error::Result<TaskRecord> {
    let all: Vec<_> = std::iter::once((key, response, note)).chain(more.iter().cloned()).collect();
    let pending: Vec<_> = now.questions.iter().map(|q| q.key.clone()).collect();
    let given: Vec<_> = all.iter().map(|(k, _, _)| k.clone()).collect();
    let remote = now.remote_task_id.as_deref();
    let inputs: Option<Vec<(String, Reply)>> = all
        .iter()
        .map(|(k, r, _)| match k {
            taskdeck_client::QuestionKey::InputKey(k) => Some((k.clone(), r.clone())),
            taskdeck_client::QuestionKey::Request(_) => None,
        })
        .collect();
    let (Some(remote), Some(mut inputs), true) = (remote, inputs, pending == given) else {
        let e = StoreError::Refused {
            id: now.id.clone(),
            current: now.status,
            attempted: Attempt::Answer,
            reason: "the task is no longer waiting for these answers".into(),
        };
        return Err(EngineError::from(e));
    };
    for ((_, reply), q) in inputs.iter_mut().zip(&now.questions) {
        if let (Asks::Form { schema, .. }, Reply::Result(result)) = (&q.asks, reply)
            && let Some(content) = result.get_mut("content")
        {
            validate::integers_as_integers(schema, content);
        }
    }
    session.respond_inputs(remote, inputs).await?;
    hub.live.close_question(&now.id);
    let answers = all
        .iter()
        .map(|(k, r, n)| Answer { key: k.to_text(), response: crate::reply::stored(r, n.as_ref()), note: n.clone() })
        .collect();
    hub.gate.apply(&now.id, Update::Answers(answers))
}

/// Delivers the user's answer and records it, before anything the server says after it.
async fn answer(hub: &Hub, session: &Session, rec: &TaskRecord, a: AnswerMsg) {
    let outcome = async {
        // The reports applied since the user saw the question may have moved the task on.
        let now = hub.gate.get(&rec.id)?;
        let pending = now.question.as_ref().map(|q| &q.key);
        if now.status != TaskStatus::InputRequired || pending != Some(&a.key) {
            let reason = "the task is no longer waiting for this answer";
            let e = StoreError::Refused {
                id: now.id.clone(),
                current: now.status,
                attempted: Attempt::Answer,
                reason: reason.into(),
            };
            return Err(EngineError::from(e));
        }
        if !a.more.is_empty() {
            return answer_several(hub, session, &now, a.key.clone(), a.response.clone(), a.note.clone(), &a.more)
                .await;
        }
        let mut response = a.response.clone();
        // Integral floats go out as integers where the form says integer, as arguments do.
        if let Some(Asks::Form { schema, .. }) = now.question.as_ref().map(|q| &q.asks)
            && let Reply::Result(result) = &mut response
            && let Some(content) = result.get_mut("content")
        {
            validate::integers_as_integers(schema, content);
        }
        session.reply(&a.key, now.remote_task_id.as_deref(), response.clone()).await?;
        hub.live.close_question(&rec.id);
        let stored = crate::reply::stored(&response, a.note.as_ref());
        hub.gate.apply(&rec.id, Update::Answer(Answer { key: a.key.to_text(), response: stored, note: a.note }))
    }
    .await;
    let _ = a.reply.send(outcome);
}
