//! One task's driver: sends it (once), then follows it to its end by the best means its server
//! offers — status notifications when they come, `tasks/get` at the server's poll interval
//! otherwise, and for legacy servers a `tasks/result` kept outstanding (which is also how their
//! questions arrive). When the server dies the driver waits for the supervisor's restart and
//! re-attaches.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use taskdeck_client::{ClientError, Question, Session, StartOptions, Started, TaskSnapshot};
use taskdeck_protocol::types::CallToolResult;
use taskdeck_protocol::{Era, TaskStatus, codes};
use taskdeck_store::{Mode, Progress, TaskError, TaskRecord, Update};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::engine::{Inner, LiveQuestion, lock};

pub(crate) enum DriverMsg {
    Snapshot(Box<TaskSnapshot>),
    /// The server asked the user something about this task (legacy `elicitation/create`).
    Question(Box<Question>),
    /// Something changed locally (an answer, a cancel): look again.
    Wake,
}

enum Step {
    Done,
    /// The session died; follow the task again on the next one.
    Lost,
}

pub(crate) async fn drive(inner: Arc<Inner>, id: String, mut rx: mpsc::UnboundedReceiver<DriverMsg>) {
    let outcome = drive_until_end(&inner, &id, &mut rx).await;
    {
        let mut live = lock(&inner.live);
        live.drivers.remove(&id);
        if let Err(reason) = &outcome {
            live.stalled.insert(id.clone(), reason.clone());
        }
    }
    // A task that ended was published with its end; one left pending is published again so
    // whoever waits on it learns that nobody drives it any more.
    if let Err(reason) = outcome {
        tracing::warn!(task = %id, %reason, "task left pending");
        if let Ok(rec) = inner.store.get(&id) {
            inner.publish_task(&rec);
        }
    }
}

async fn drive_until_end(
    inner: &Arc<Inner>,
    id: &str,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Result<(), String> {
    loop {
        let rec = inner.store.get(id).map_err(|e| e.to_string())?;
        if rec.status.is_terminal() {
            return Ok(());
        }
        let Some(server) = inner.server(&rec.server) else {
            // Left pending, not failed: the server may come back with the next config change.
            return Err(format!("server {:?} is not in the config", rec.server));
        };
        let session = match server.session(inner.opts.server_wait).await {
            Ok(s) => s,
            Err(e) if rec.remote_task_id.is_none() => {
                // Nothing was sent yet: the task never ran, and saying so is the honest end.
                fail(inner, id, None, format!("not started: {e}"), "SERVER_UNAVAILABLE");
                return Ok(());
            }
            Err(e) => return Err(e.to_string()),
        };
        let step = match (rec.mode, rec.remote_task_id.clone()) {
            (_, None) => start(inner, &session, &rec, rx).await,
            (Mode::Task | Mode::Call, Some(remote)) => follow(inner, &session, &rec, &remote, rx).await,
        };
        match step {
            Step::Done => return Ok(()),
            Step::Lost => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn fail(inner: &Inner, id: &str, code: Option<i64>, message: String, reason: &str) {
    let error = TaskError { code, message, reason: Some(reason.to_owned()) };
    inner.apply_quietly(id, Update::Failed { error, server_status: None });
}

fn error_of(e: &ClientError) -> TaskError {
    match e {
        ClientError::Rpc { error, .. } => TaskError {
            code: Some(error.code),
            message: error.message.clone(),
            reason: error.data.as_ref().and_then(|d| d.get("reason")).and_then(Value::as_str).map(str::to_owned),
        },
        ClientError::ServerExited { .. } => {
            TaskError { code: None, message: e.to_string(), reason: Some("INTERRUPTED".into()) }
        }
        other => TaskError { code: None, message: other.to_string(), reason: None },
    }
}

/// Sends the task. Never sends twice: whatever goes wrong here ends the task, because the server
/// may have started work we could not learn about.
async fn start(
    inner: &Arc<Inner>,
    session: &Session,
    rec: &TaskRecord,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Step {
    let era = session.era();
    let plain = rec.mode == Mode::Call;
    if plain {
        lock(&inner.live).plain_calls.entry(rec.server.clone()).or_default().push(rec.id.clone());
    }
    let opts = StartOptions { progress_token: Some(rec.id.clone()), ttl_ms: None };
    let started = session.start_tool(&rec.tool, rec.arguments.clone(), &opts).await;
    if plain && let Some(calls) = lock(&inner.live).plain_calls.get_mut(&rec.server) {
        calls.retain(|c| c != &rec.id);
    }
    match started {
        Ok(Started::Task(handle)) => {
            let rec = match inner.store.set_remote(
                &rec.id,
                era,
                Some(&handle.task_id),
                handle.ttl_ms,
                handle.poll_interval_ms,
            ) {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(task = %rec.id, "handle not recorded: {e}");
                    return Step::Done;
                }
            };
            inner.publish_task(&rec);
            // The handle is older than any question that arrived before it was registered; applied
            // after those, its `working` would take the question away again.
            apply_snapshot(inner, &rec, &handle, era);
            inner.register_remote(&rec);
            follow_attached(inner, session, &rec, &handle.task_id, rx, handle.poll_interval_ms).await
        }
        Ok(Started::Completed(result)) => {
            if let Ok(r) = inner.store.set_remote(&rec.id, era, None, None, None) {
                inner.publish_task(&r);
            }
            let result = serde_json::to_value(&result).unwrap_or_default();
            inner.apply_quietly(&rec.id, Update::Completed { result, server_status: None });
            Step::Done
        }
        Err(e) => {
            let mut error = error_of(&e);
            if e.is_server_gone() {
                error.message = format!("the server stopped before answering: {e}");
            }
            inner.apply_quietly(&rec.id, Update::Failed { error, server_status: None });
            Step::Done
        }
    }
}

/// Re-attaches to a task the server already has, then follows it.
async fn follow(
    inner: &Arc<Inner>,
    session: &Session,
    rec: &TaskRecord,
    remote: &str,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
) -> Step {
    inner.register_remote(rec);
    match session.attach(remote).await {
        Ok(snapshot) => {
            apply_snapshot(inner, rec, &snapshot, session.era());
            follow_attached(inner, session, rec, remote, rx, snapshot.poll_interval_ms).await
        }
        Err(e) if e.rpc_error().is_some_and(|r| r.code == codes::INVALID_PARAMS) => {
            fail(
                inner,
                &rec.id,
                Some(codes::INVALID_PARAMS),
                format!("the server no longer knows this task (it may have restarted or expired it): {e}"),
                "UNKNOWN_TO_SERVER",
            );
            Step::Done
        }
        Err(e) if e.is_server_gone() => Step::Lost,
        Err(e) => {
            tracing::warn!(task = %rec.id, "re-attaching failed, will retry: {e}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            Step::Lost
        }
    }
}

fn poll_every(inner: &Inner, ms: Option<i64>) -> Duration {
    let asked = ms.filter(|m| *m > 0).map(|m| Duration::from_millis(m as u64)).unwrap_or(Duration::from_secs(1));
    asked.clamp(inner.opts.min_poll, inner.opts.max_poll)
}

async fn follow_attached(
    inner: &Arc<Inner>,
    session: &Session,
    rec: &TaskRecord,
    remote: &str,
    rx: &mut mpsc::UnboundedReceiver<DriverMsg>,
    poll_ms: Option<i64>,
) -> Step {
    let era = session.era();
    let id = rec.id.clone();
    // Legacy: tasks/result blocks until the end and is the channel the server's questions ride on.
    let mut watcher: Option<JoinHandle<Result<CallToolResult, ClientError>>> = (era == Era::Legacy).then(|| {
        let s = session.clone();
        let remote = remote.to_owned();
        tokio::spawn(async move { s.task_result(&remote).await })
    });
    let abort = |w: &Option<JoinHandle<_>>| {
        if let Some(w) = w {
            w.abort();
        }
    };
    let mut every = poll_every(inner, poll_ms);
    let mut last_status: Option<TaskStatus> = None;
    loop {
        let rec = match inner.store.get(&id) {
            Ok(r) => r,
            Err(_) => {
                abort(&watcher);
                return Step::Done;
            }
        };
        if rec.status.is_terminal() {
            abort(&watcher);
            return Step::Done;
        }
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(DriverMsg::Snapshot(s)) => {
                    last_status = Some(s.status);
                    apply_snapshot(inner, &rec, &s, era);
                }
                Some(DriverMsg::Question(q)) => inner.record_question(&id, &rec.server, *q),
                Some(DriverMsg::Wake) => {}
                None => {
                    abort(&watcher);
                    return Step::Done;
                }
            },
            res = async { watcher.as_mut().expect("guarded").await }, if watcher.is_some() => {
                watcher = None;
                match res {
                    Ok(Ok(result)) => {
                        let result = serde_json::to_value(&result).unwrap_or_default();
                        // The log keeps the status the server reports for the ended task. Its
                        // status notification usually came just before the result; only without
                        // one is the server asked.
                        while let Ok(msg) = rx.try_recv() {
                            if let DriverMsg::Snapshot(s) = msg {
                                last_status = Some(s.status);
                            }
                        }
                        let said = match last_status.filter(|s| s.is_terminal()) {
                            Some(s) => Some(s),
                            None => session.get_task(remote).await.ok().map(|s| s.status).or(last_status),
                        };
                        let server_status = said.map(|s| s.to_string());
                        inner.apply_quietly(&id, Update::Completed { result, server_status });
                    }
                    Ok(Err(e)) if e.is_server_gone() => return Step::Lost,
                    Ok(Err(e @ ClientError::Rpc { .. })) => {
                        // No result: the task failed with this error, or was cancelled. Ask which.
                        match session.get_task(remote).await {
                            Ok(s) if s.status == TaskStatus::Cancelled => apply_snapshot(inner, &rec, &s, era),
                            Ok(s) if !s.status.is_terminal() => {
                                // The server answered early; keep polling and do not ask again.
                                apply_snapshot(inner, &rec, &s, era);
                            }
                            _ => {
                                inner.apply_quietly(&id, Update::Failed { error: error_of(&e), server_status: Some("failed".into()) });
                            }
                        }
                    }
                    Ok(Err(e)) => tracing::warn!(task = %id, "tasks/result failed: {e}"),
                    Err(_) => {}
                }
            },
            _ = tokio::time::sleep(every) => match session.get_task(remote).await {
                Ok(s) => {
                    every = poll_every(inner, s.poll_interval_ms.or(poll_ms));
                    last_status = Some(s.status);
                    apply_snapshot(inner, &rec, &s, era);
                    // A legacy task that ended while tasks/result was not outstanding (e.g. it
                    // errored): fetch the result once more.
                    if era == Era::Legacy && s.status.is_terminal() && s.status != TaskStatus::Cancelled && watcher.is_none() {
                        return settle_legacy(inner, session, &rec, remote, s.status).await;
                    }
                }
                Err(e) if e.rpc_error().is_some_and(|r| r.code == codes::INVALID_PARAMS) => {
                    abort(&watcher);
                    fail(inner, &id, Some(codes::INVALID_PARAMS), format!("the server no longer knows this task: {e}"), "UNKNOWN_TO_SERVER");
                    return Step::Done;
                }
                Err(e) if e.is_server_gone() => {
                    abort(&watcher);
                    return Step::Lost;
                }
                Err(e) => tracing::warn!(task = %id, "polling failed: {e}"),
            },
        }
    }
}

/// Records how a legacy task ended, from `tasks/result` (which no longer blocks).
async fn settle_legacy(inner: &Inner, session: &Session, rec: &TaskRecord, remote: &str, status: TaskStatus) -> Step {
    match tokio::time::timeout(Duration::from_secs(10), session.task_result(remote)).await {
        Ok(Ok(result)) => {
            let result = serde_json::to_value(&result).unwrap_or_default();
            inner.apply_quietly(&rec.id, Update::Completed { result, server_status: Some(status.to_string()) });
        }
        Ok(Err(e)) if e.is_server_gone() => return Step::Lost,
        Ok(Err(e)) => {
            inner.apply_quietly(
                &rec.id,
                Update::Failed { error: error_of(&e), server_status: Some(status.to_string()) },
            );
        }
        Err(_) => fail(inner, &rec.id, None, format!("the server said {status} but sent no result"), "NO_RESULT"),
    }
    Step::Done
}

/// Records what a snapshot says. Terminal legacy outcomes wait for `tasks/result`, which carries
/// the result; everything else is written here.
pub(crate) fn apply_snapshot(inner: &Inner, rec: &TaskRecord, s: &TaskSnapshot, era: Era) {
    let id = &rec.id;
    let server_status = Some(s.status.to_string());
    if let Some(p) = &s.progress {
        lock(&inner.live)
            .progress
            .insert(id.clone(), Progress { progress: p.progress, total: p.total, message: p.message.clone() });
    }
    match s.status {
        TaskStatus::Working if rec.status == TaskStatus::Working => {
            inner.defer_message(rec, s.status_message.clone(), server_status);
        }
        TaskStatus::Working => {
            inner.apply_quietly(
                id,
                Update::Status { status: TaskStatus::Working, message: s.status_message.clone(), server_status },
            );
        }
        TaskStatus::InputRequired => {
            let question = s.questions.iter().find(|q| q.is_elicitation());
            match (era, question) {
                (Era::Modern, Some(q)) => {
                    let pid = inner.server(&rec.server).and_then(|sv| sv.current_session()).and_then(|ss| ss.pid());
                    lock(&inner.live).questions.insert(id.clone(), LiveQuestion { key: q.key.clone(), pid });
                    let message = s.status_message.clone().or_else(|| q.message.clone());
                    inner.apply_quietly(id, Update::Question { question: Box::new(q.clone()), message });
                }
                _ => {
                    // The question itself arrives as a request (legacy); keep the one we have.
                    if rec.status != TaskStatus::InputRequired || rec.status_message != s.status_message {
                        inner.apply_quietly(
                            id,
                            Update::Status {
                                status: TaskStatus::InputRequired,
                                message: s.status_message.clone(),
                                server_status,
                            },
                        );
                    }
                }
            }
        }
        TaskStatus::Completed if era == Era::Modern => match &s.result {
            Some(result) => {
                let result = serde_json::to_value(result).unwrap_or_default();
                inner.apply_quietly(id, Update::Completed { result, server_status });
            }
            None => fail(inner, id, None, "the server said completed but sent no result".into(), "NO_RESULT"),
        },
        TaskStatus::Failed if era == Era::Modern => {
            let error = match &s.error {
                Some(e) => TaskError {
                    code: Some(e.code),
                    message: e.message.clone(),
                    reason: e.data.as_ref().and_then(|d| d.get("reason")).and_then(Value::as_str).map(str::to_owned),
                },
                None => TaskError {
                    code: None,
                    message: s.status_message.clone().unwrap_or_else(|| "the server reported a failure".into()),
                    reason: None,
                },
            };
            inner.apply_quietly(id, Update::Failed { error, server_status });
        }
        TaskStatus::Cancelled => {
            let reason = s.status_message.clone().or_else(|| Some("cancelled".into()));
            inner.apply_quietly(id, Update::Cancelled { reason, server_status });
        }
        // Legacy completed/failed: the result comes through tasks/result.
        TaskStatus::Completed | TaskStatus::Failed => {}
    }
}

/// After a cancel the server refused (the task had already ended), records how it really ended.
pub(crate) async fn settle(inner: &Inner, session: &Session, rec: &TaskRecord, s: &TaskSnapshot) {
    let era = session.era();
    apply_snapshot(inner, rec, s, era);
    if era == Era::Legacy
        && matches!(s.status, TaskStatus::Completed | TaskStatus::Failed)
        && let Some(remote) = &rec.remote_task_id
    {
        settle_legacy(inner, session, rec, remote, s.status).await;
    }
}
