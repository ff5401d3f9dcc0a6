//! Following one task to its end, whatever the era: the caller gets snapshots, and the last one
//! carries the task's result or error. How they are obtained is this module's business:
//! - both eras poll `tasks/get` at the server's `pollInterval`, within bounds the caller sets;
//! - legacy keeps a `tasks/result` outstanding, which blocks until the end, delivers the result,
//!   and is the channel many legacy servers ask their questions on (server-quirks 2);
//! - a legacy task seen ended without that request outstanding gets its result fetched once.
//!
//! - modern opens a task subscription (`subscriptions/listen` with the task's id) where the server
//!   takes one, and yields the statuses it pushes as they come, so none waits for the next poll.
//!   A pushed task carries its progress as a poll does (in its `_meta`; a push that moves only
//!   the progress is news too, `tracker.rs`). Polls go on beside it at the server's interval: a
//!   server need not push at every step, and a revoked sign-in is learnt from a poll; when the
//!   server does not take a subscription, or it ends, they go on alone. Nothing depends on the
//!   stream: a missed status is the next poll's.
//!
//! Other status notifications (legacy, which come unasked) are not read here: they reach the
//! session's handler in wire order with the questions, and the caller keeps that order itself.

use std::time::Duration;

use serde_json::{Value, json};
use taskdeck_protocol::types::CallToolResult;
use taskdeck_protocol::{Era, ErrorObject, Message, RequestId, TaskStatus, codes, methods};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::model::TaskSnapshot;
use crate::{ClientError, Session};

/// How often to ask, in the caller's words: the server's `pollInterval` is honoured within
/// `min_poll..=max_poll`, and `default_poll` stands in while the server has not given one.
/// Polls that keep failing (no answer, or one that cannot be read or used) are given up after
/// `give_up` of nothing but failures, unless a legacy `tasks/result` is still outstanding: that
/// one ends with the task, and its answer decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowOptions {
    pub min_poll: Duration,
    pub max_poll: Duration,
    pub default_poll: Duration,
    pub give_up: Duration,
}

impl FollowOptions {
    fn every(&self, asked_ms: Option<i64>) -> Duration {
        let asked = asked_ms.filter(|m| *m > 0).map(|m| Duration::from_millis(m as u64)).unwrap_or(self.default_poll);
        asked.clamp(self.min_poll, self.max_poll.max(self.min_poll))
    }
}

/// What following a task yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Followed {
    /// The task as the server described it. `asked_at` is when the request that learned it was
    /// sent: a snapshot asked for before something the caller did (an answer) may predate it.
    Snapshot { snapshot: Box<TaskSnapshot>, asked_at: Instant },
    /// The server does not know the task (`-32602`): it restarted without it, or expired it.
    Unknown(ClientError),
    /// The session is gone; follow the task again on the next one.
    Lost(ClientError),
    /// The task cannot be followed to its end on any session: its result came but could not be
    /// read, or polling failed for longer than [`FollowOptions::give_up`]. The error says which.
    Failed(ClientError),
}

/// A task being followed. Dropping it stops the requests it keeps going. [`Follow::next`] is
/// cancel-safe: nothing is lost when a `select!` picks another branch.
pub struct Follow {
    rx: mpsc::UnboundedReceiver<Followed>,
    worker: JoinHandle<()>,
}

impl Follow {
    /// The next thing learned, or `None` once the task has ended (after its final snapshot, an
    /// `Unknown`, a `Lost` or a `Failed`).
    pub async fn next(&mut self) -> Option<Followed> {
        self.rx.recv().await
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.worker.abort();
    }
}

/// How long a legacy task that has ended gets to hand over its result.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// How long a server gets to acknowledge a task subscription; the follow polls meanwhile.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// An open task subscription: the statuses pushed on it, and its `subscriptions/listen` request,
/// whose end (the server's answer or error, a closed stream, a lost session) ends it. Dropped
/// while open, it is cancelled at the server (`notifications/cancelled`, or on HTTP the closed
/// stream).
struct Listen {
    session: Session,
    id: RequestId,
    statuses: mpsc::UnboundedReceiver<TaskSnapshot>,
    request: JoinHandle<Result<Value, ClientError>>,
    /// The request is over; `end` is how, if it failed.
    ended: bool,
    end: Option<ClientError>,
}

impl Drop for Listen {
    fn drop(&mut self) {
        self.request.abort();
        self.session.lock_state().subscriptions.remove(&self.id);
        self.session.forget_request(&self.id);
        if !self.ended {
            let params = json!({ "requestId": self.id, "reason": "the task is no longer followed" });
            let _ = self.session.send(&Message::notification(methods::CANCELLED, Some(params)));
        }
    }
}

/// What an open subscription brought.
enum Heard {
    Status(Box<TaskSnapshot>),
    /// It ended: answered (`None`), or failed or dropped (the error).
    End(Option<ClientError>),
}

impl Listen {
    /// The next status pushed, or the subscription's end once what came before it is read.
    /// Cancel-safe.
    async fn next(&mut self) -> Heard {
        if !self.ended {
            tokio::select! {
                biased;
                Some(s) = self.statuses.recv() => return Heard::Status(Box::new(s)),
                done = &mut self.request => {
                    self.ended = true;
                    self.end = done.ok().and_then(|r| r.err());
                }
            }
        }
        // Statuses that came before the end are still heard first.
        match self.statuses.try_recv() {
            Ok(s) => Heard::Status(Box::new(s)),
            Err(_) => Heard::End(self.end.take()),
        }
    }
}

impl Session {
    /// Subscribes to the task's statuses where the server takes it; `None` when it does not (a
    /// refusal is remembered for the session), does not acknowledge within [`ACK_WAIT`], or
    /// leaves the task out of its acknowledgement.
    async fn listen_for(&self, task_id: &str) -> Option<Listen> {
        if self.era() != Era::Modern || self.lock_state().push == Some(false) {
            return None;
        }
        let id = self.next_request_id();
        let (ack, acked) = tokio::sync::oneshot::channel();
        let (statuses_tx, statuses) = mpsc::unbounded_channel();
        self.lock_state()
            .subscriptions
            .insert(id.clone(), crate::session::Subscribed { ack: Some(ack), statuses: statuses_tx });
        let params = json!({ "notifications": { "taskIds": [task_id] } });
        let (s, rid) = (self.clone(), id.clone());
        let request = tokio::spawn(async move { s.request_as(rid, methods::SUBSCRIPTIONS_LISTEN, params, None).await });
        let mut listen = Listen { session: self.clone(), id, statuses, request, ended: false, end: None };
        enum Opened {
            Acked(Vec<String>),
            NoAck,
            Ended(Option<ClientError>),
        }
        let opened = tokio::select! {
            a = tokio::time::timeout(ACK_WAIT, acked) => match a {
                Ok(Ok(ids)) => Opened::Acked(ids),
                _ => Opened::NoAck,
            },
            done = &mut listen.request => Opened::Ended(match done {
                Ok(Err(e)) => Some(e),
                _ => None,
            }),
        };
        match opened {
            Opened::Acked(ids) if ids.iter().any(|t| t == task_id) => {
                self.lock_state().push = Some(true);
                tracing::debug!(server = %self.name(), task = %task_id, "statuses are pushed");
                Some(listen)
            }
            Opened::Acked(_) => {
                tracing::debug!(server = %self.name(), task = %task_id, "the subscription left the task out; polling");
                None
            }
            Opened::NoAck => {
                tracing::debug!(server = %self.name(), task = %task_id, "no subscription acknowledged; polling");
                None
            }
            Opened::Ended(e) => {
                listen.ended = true;
                if let Some(e @ ClientError::Rpc { .. }) = &e {
                    tracing::debug!(server = %self.name(), "no task subscriptions here ({e}); polling");
                    self.lock_state().push = Some(false);
                }
                None
            }
        }
    }
}

impl Session {
    /// Follows a task this session knows (created or attached), starting from `last`, the
    /// snapshot the caller has. Yields a snapshot for every poll and, at the end, one that
    /// [`TaskSnapshot::is_final`] with its result or error.
    pub fn follow(&self, last: &TaskSnapshot, opts: FollowOptions) -> Follow {
        let (tx, rx) = mpsc::unbounded_channel();
        let worker = tokio::spawn(follow_loop(self.clone(), last.task_id.clone(), last.poll_interval_ms, opts, tx));
        Follow { rx, worker }
    }

    /// Completes a snapshot that says a legacy task ended but not how: fetches its result (or the
    /// error it ended in) with `tasks/result`, which no longer blocks. Any other snapshot is
    /// returned as it is. A server that does not hand the result over within a few seconds
    /// leaves a final snapshot without one.
    pub async fn settle(&self, s: TaskSnapshot) -> Result<TaskSnapshot, ClientError> {
        if !s.result_follows {
            return Ok(s);
        }
        let status = s.status;
        match tokio::time::timeout(SETTLE_WAIT, self.task_result(&s.task_id)).await {
            Ok(Ok(result)) => Ok(with_result(s, status, result)),
            Ok(Err(
                e @ (ClientError::UnreadableResponse { .. }
                | ClientError::ServerExited { .. }
                | ClientError::Spawn { .. }),
            )) => Err(e),
            Ok(Err(e)) => Ok(with_error(s, status, &e)),
            Err(_) => Ok(TaskSnapshot { result_follows: false, ..s }),
        }
    }

    /// The status the server last gave for a task that `tasks/result` says has ended: from the
    /// notification that usually came just before the result, else from asking.
    async fn ended_as(&self, task_id: &str) -> TaskSnapshot {
        let known = self.lock_state().tracker.status(task_id);
        match known {
            Some(s) if s.is_terminal() => synthetic(task_id, s),
            _ => match self.get_task(task_id).await {
                Ok(s) if s.status.is_terminal() => s,
                // The result says it is over, whatever a lagging tasks/get claims.
                _ => synthetic(task_id, TaskStatus::Completed),
            },
        }
    }
}

/// A snapshot for a status known without a fresh one from the server.
fn synthetic(task_id: &str, status: TaskStatus) -> TaskSnapshot {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    TaskSnapshot::bare(task_id, status, &now)
}

fn with_result(s: TaskSnapshot, status: TaskStatus, result: CallToolResult) -> TaskSnapshot {
    TaskSnapshot { status, result: Some(result), error: None, result_follows: false, ..s }
}

/// The error a task ended in, as `tasks/result` gave it. A JSON-RPC error is kept whole; any other
/// failure (an unreadable result) is described as an internal error.
fn with_error(s: TaskSnapshot, status: TaskStatus, e: &ClientError) -> TaskSnapshot {
    let error = match e.rpc_error() {
        Some(rpc) => rpc.clone(),
        None => ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()),
    };
    TaskSnapshot { status, result: None, error: Some(error), result_follows: false, ..s }
}

/// Aborts a spawned task when the follow ends.
struct OnDrop(Option<tokio::task::AbortHandle>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

/// The legacy `tasks/result` kept outstanding; it must not outlive the follow.
struct ResultCall(Option<JoinHandle<Result<CallToolResult, ClientError>>>);

impl Drop for ResultCall {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

async fn follow_loop(
    session: Session,
    task_id: String,
    poll_ms: Option<i64>,
    opts: FollowOptions,
    tx: mpsc::UnboundedSender<Followed>,
) {
    let send = |snapshot: TaskSnapshot, asked_at: Instant| {
        let _ = tx.send(Followed::Snapshot { snapshot: Box::new(snapshot), asked_at });
    };
    let mut call = ResultCall((session.era() == Era::Legacy).then(|| {
        let s = session.clone();
        let id = task_id.clone();
        tokio::spawn(async move { s.task_result(&id).await })
    }));
    let mut server_poll = poll_ms;
    let mut every = opts.every(server_poll);
    // The task subscription: being opened, then open until it ends.
    let mut opening = (session.era() == Era::Modern).then(|| {
        let (s, id) = (session.clone(), task_id.clone());
        tokio::spawn(async move { s.listen_for(&id).await })
    });
    let _opening_guard = OnDrop(opening.as_ref().map(|h| h.abort_handle()));
    let mut listen: Option<Listen> = None;
    // A deadline, not a fresh sleep per turn: pushed statuses must not put the next poll off.
    let mut next_poll = Instant::now() + every;
    // Since when every poll has failed, if the last one did.
    let mut failing_since: Option<Instant> = None;
    // When a poll first said the task ended while the outstanding tasks/result had not answered.
    let mut ended_unanswered: Option<Instant> = None;
    loop {
        tokio::select! {
            res = async { call.0.as_mut().expect("guarded").await }, if call.0.is_some() => {
                call.0 = None;
                let asked_at = Instant::now();
                match res {
                    Ok(Ok(result)) => {
                        let ended = session.ended_as(&task_id).await;
                        let status = ended.status;
                        send(with_result(ended, status, result), asked_at);
                        return;
                    }
                    Ok(Err(e)) if e.is_server_gone() => {
                        let _ = tx.send(Followed::Lost(e));
                        return;
                    }
                    // The task ended and its result came, unreadable: asking again brings it again.
                    Ok(Err(e @ ClientError::UnreadableResponse { .. })) => {
                        let _ = tx.send(Followed::Failed(e));
                        return;
                    }
                    Ok(Err(e @ ClientError::Rpc { .. })) => {
                        // No result: the task failed with this error, was cancelled, or the server
                        // answered before the end. Ask which.
                        match session.get_task(&task_id).await {
                            Ok(s) if s.status == TaskStatus::Cancelled => {
                                send(s, asked_at);
                                return;
                            }
                            // Answered early: keep polling, and do not ask again.
                            Ok(s) if !s.status.is_terminal() => send(s, asked_at),
                            Ok(s) => {
                                send(with_error(s, TaskStatus::Failed, &e), asked_at);
                                return;
                            }
                            Err(_) => {
                                let s = synthetic(&task_id, TaskStatus::Failed);
                                send(with_error(s, TaskStatus::Failed, &e), asked_at);
                                return;
                            }
                        }
                    }
                    Ok(Err(e)) => tracing::warn!(task = %task_id, "tasks/result failed: {e}"),
                    Err(_) => {}
                }
            },
            opened = async { opening.as_mut().expect("guarded").await }, if opening.is_some() => {
                opening = None;
                listen = opened.ok().flatten();
                // What changed between the handle and the subscription was pushed to nobody: one
                // poll now, or a task that ended meanwhile would wait for the server's interval.
                if listen.is_some() {
                    next_poll = Instant::now();
                }
            },
            heard = async { listen.as_mut().expect("guarded").next().await }, if listen.is_some() => match heard {
                Heard::Status(s) => {
                    server_poll = s.poll_interval_ms.or(server_poll);
                    every = opts.every(server_poll);
                    let last = s.is_final();
                    send(*s, Instant::now());
                    if last {
                        return;
                    }
                }
                Heard::End(ended) => {
                    match ended {
                        Some(e) => tracing::info!(task = %task_id, "the task subscription dropped ({e}); polling"),
                        None => tracing::debug!(task = %task_id, "the task subscription ended; polling"),
                    }
                    listen = None;
                }
            },
            _ = tokio::time::sleep_until(next_poll) => {
                let asked_at = Instant::now();
                match session.get_task(&task_id).await {
                    Ok(s) => {
                        failing_since = None;
                        server_poll = s.poll_interval_ms.or(server_poll);
                        every = opts.every(server_poll);
                        if s.is_final() {
                            send(s, asked_at);
                            return;
                        }
                        if !s.result_follows {
                            send(s, asked_at);
                        } else if call.0.is_some() {
                            // The outstanding tasks/result should bring the result now; a server
                            // that never answers it must not hold the task: after the settle wait
                            // the task ends without one, as a task whose result never came.
                            let since = *ended_unanswered.get_or_insert(asked_at);
                            if asked_at.duration_since(since) >= SETTLE_WAIT {
                                tracing::warn!(task = %task_id, "ended, but tasks/result was never answered");
                                send(TaskSnapshot { result_follows: false, ..s }, asked_at);
                                return;
                            }
                        } else {
                            // Ended while no tasks/result was outstanding (say it errored): fetch
                            // how, once. With one outstanding, its answer is on the way.
                            match session.settle(s).await {
                                Ok(settled) => send(settled, asked_at),
                                Err(e @ ClientError::UnreadableResponse { .. }) => {
                                    let _ = tx.send(Followed::Failed(e));
                                }
                                Err(e) => {
                                    let _ = tx.send(Followed::Lost(e));
                                }
                            }
                            return;
                        }
                    }
                    Err(e) if e.rpc_error().is_some_and(|r| r.code == codes::INVALID_PARAMS) => {
                        let _ = tx.send(Followed::Unknown(e));
                        return;
                    }
                    Err(e) if e.is_server_gone() => {
                        let _ = tx.send(Followed::Lost(e));
                        return;
                    }
                    // Polling again changes nothing until the user signs in: the caller hears
                    // it now, and keeps the task waiting for the sign-in.
                    Err(e)
                        if matches!(
                            crate::transport::http::HttpFailure::of(&e),
                            Some(crate::transport::http::HttpFailure::SignInNeeded { .. })
                        ) =>
                    {
                        let _ = tx.send(Followed::Failed(e));
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(task = %task_id, "polling failed: {e}");
                        let since = *failing_since.get_or_insert(asked_at);
                        if call.0.is_none() && since.elapsed() >= opts.give_up {
                            let _ = tx.send(Followed::Failed(e));
                            return;
                        }
                    }
                }
                next_poll = Instant::now() + every;
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::{IgnoreEvents, ServerSpec, SessionOptions, StartOptions, Started};

    const OPTS: FollowOptions = FollowOptions {
        min_poll: Duration::from_millis(50),
        max_poll: Duration::from_secs(5),
        default_poll: Duration::from_secs(1),
        give_up: Duration::from_secs(60),
    };

    /// The demo server, in the era asked for.
    async fn demo(state: &Path, era: Era) -> Session {
        demo_with(state, era, &["--poll-interval-ms", "100"]).await
    }

    async fn demo_with(state: &Path, era: Era, args: &[&str]) -> Session {
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        args.splice(0..0, ["--state".to_owned(), state.display().to_string()]);
        let spec = ServerSpec {
            name: "demo".into(),
            command: taskdeck_test_support::demo_server().display().to_string(),
            args,
            env: Default::default(),
            cwd: None,
            inherit_env: false,
        };
        let opts = SessionOptions { force_era: Some(era), ..SessionOptions::default() };
        Session::connect(&spec, opts, Arc::new(IgnoreEvents)).await.unwrap()
    }

    /// Follows a task to its end and returns the last snapshot.
    async fn follow_to_the_end(session: &Session, tool: &str, args: serde_json::Value) -> TaskSnapshot {
        let Ok(Started::Task(handle)) = session.start_tool(tool, args, &StartOptions::default()).await else {
            panic!("{tool} did not start as a task");
        };
        let mut follow = session.follow(&handle, OPTS);
        let mut last = None;
        let all = async {
            while let Some(next) = follow.next().await {
                match next {
                    Followed::Snapshot { snapshot, .. } => last = Some(*snapshot),
                    other => panic!("{tool}: {other:?}"),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), all).await.expect("the task ends");
        last.expect("at least the final snapshot")
    }

    #[tokio::test]
    async fn a_followed_task_ends_with_its_result_in_either_era() {
        for era in [Era::Legacy, Era::Modern] {
            let dir = tempfile::tempdir().unwrap();
            let session = demo(dir.path(), era).await;
            let done = follow_to_the_end(&session, "generate_report", json!({"topic": "tides", "seconds": 0.3})).await;
            assert!(done.is_final(), "{era:?}: {done:?}");
            assert_eq!(done.status, TaskStatus::Completed, "{era:?}");
            assert!(done.result.as_ref().is_some_and(|r| !r.is_error()), "{era:?}: {done:?}");

            // A tool error ends as the era says it (legacy `failed`, modern `completed`), and the
            // snapshot carries what the tool said either way.
            let failed = follow_to_the_end(&session, "flaky_export", json!({"fail_at": 10})).await;
            assert!(failed.is_final(), "{era:?}: {failed:?}");
            let expected = if era == Era::Legacy { TaskStatus::Failed } else { TaskStatus::Completed };
            assert_eq!(failed.status, expected, "{era:?}: {failed:?}");
            assert!(failed.result.as_ref().is_some_and(|r| r.is_error()) || failed.error.is_some(), "{failed:?}");
            session.shutdown(Duration::from_millis(500)).await;
        }
    }

    /// Follows `count` to its end; returns how long it took and every snapshot on the way.
    async fn count_to_the_end(session: &Session, n: u32, delay_ms: u32) -> (Duration, Vec<TaskSnapshot>) {
        let started = Instant::now();
        let args = json!({"n": n, "delay_ms": delay_ms});
        let Ok(Started::Task(handle)) = session.start_tool("count", args, &StartOptions::default()).await else {
            panic!("count did not start as a task");
        };
        let mut follow = session.follow(&handle, OPTS);
        let mut seen = Vec::new();
        let all = async {
            while let Some(next) = follow.next().await {
                match next {
                    Followed::Snapshot { snapshot, .. } => seen.push(*snapshot),
                    other => panic!("{other:?}"),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), all).await.expect("the task ends");
        (started.elapsed(), seen)
    }

    #[tokio::test]
    async fn a_modern_status_is_pushed_sooner_than_the_servers_poll_interval() {
        let dir = tempfile::tempdir().unwrap();
        // Polls every 5 s: only a pushed status can tell the end within the second.
        let session = demo_with(dir.path(), Era::Modern, &["--poll-interval-ms", "5000"]).await;
        let (took, seen) = count_to_the_end(&session, 3, 100).await;
        let last = seen.last().expect("a final snapshot");
        assert!(last.is_final() && last.status == TaskStatus::Completed, "{last:?}");
        assert!(took < Duration::from_secs(3), "the end came by poll, after {took:?}");
        assert_eq!(session.lock_state().push, Some(true));
        // The subscription ended with the follow: none is left open.
        assert!(session.lock_state().subscriptions.is_empty());
        session.shutdown(Duration::from_millis(500)).await;
    }

    #[tokio::test]
    async fn a_modern_tasks_progress_comes_with_its_pushed_statuses() {
        let dir = tempfile::tempdir().unwrap();
        // Polls every 5 s, after the count is over: any progress seen on the way was pushed.
        let session = demo_with(dir.path(), Era::Modern, &["--poll-interval-ms", "5000"]).await;
        let (took, seen) = count_to_the_end(&session, 6, 150).await;
        assert!(took < Duration::from_secs(4), "the end came by poll, after {took:?}");
        let pushed: Vec<f64> =
            seen.iter().filter(|s| !s.is_final()).filter_map(|s| s.progress.as_ref().map(|p| p.progress)).collect();
        assert!(pushed.len() >= 3, "progress on the way: {seen:?}");
        assert!(pushed.windows(2).all(|w| w[0] < w[1]), "each push moved it on: {pushed:?}");
        assert!(seen.iter().any(|s| s.progress.as_ref().is_some_and(|p| p.total == Some(6.0))), "{seen:?}");
        session.shutdown(Duration::from_millis(500)).await;
    }

    #[tokio::test]
    async fn a_dropped_subscription_falls_back_to_polling_at_the_servers_interval() {
        let dir = tempfile::tempdir().unwrap();
        // Subscriptions drop after 300 ms; the server asks for polls every 200 ms: what the stream
        // no longer brings, they do.
        let args = ["--poll-interval-ms", "200", "--listen-for-ms", "300"];
        let session = demo_with(dir.path(), Era::Modern, &args).await;
        let (took, seen) = count_to_the_end(&session, 10, 200).await;
        let last = seen.last().expect("a final snapshot");
        assert!(last.is_final() && last.status == TaskStatus::Completed, "{last:?}");
        assert!(took < Duration::from_secs(4), "polls did not take over: {took:?}");
        assert!(seen.iter().filter(|s| s.status == TaskStatus::Working).count() > 1, "polled on: {seen:?}");
        assert_eq!(session.lock_state().push, Some(true), "a subscription was open before it dropped");
        session.shutdown(Duration::from_millis(500)).await;
    }

    /// The demo server over Streamable HTTP with `args`, killed when dropped.
    struct HttpDemo(std::process::Child, String);

    impl Drop for HttpDemo {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn http_demo(state: &Path, args: &[&str]) -> HttpDemo {
        use std::io::BufRead;
        let mut child = std::process::Command::new(taskdeck_test_support::demo_server())
            .arg("--state")
            .arg(state)
            .args(args)
            .args(["--http", "127.0.0.1:0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
        HttpDemo(child, url.trim().to_owned())
    }

    #[tokio::test]
    async fn a_status_is_pushed_over_modern_http_on_the_subscriptions_stream() {
        let dir = tempfile::tempdir().unwrap();
        let server = http_demo(dir.path(), &["--poll-interval-ms", "5000"]);
        let spec = crate::HttpSpec {
            name: "demo".into(),
            url: server.1.clone(),
            headers: Default::default(),
            sign_in: Default::default(),
        };
        let opts = SessionOptions { force_era: Some(Era::Modern), ..SessionOptions::default() };
        let session = Session::open(&crate::Endpoint::Http(spec), opts, Arc::new(IgnoreEvents)).await.unwrap();
        let (took, seen) = count_to_the_end(&session, 3, 100).await;
        let last = seen.last().expect("a final snapshot");
        assert!(last.is_final() && last.status == TaskStatus::Completed, "{last:?}");
        assert!(took < Duration::from_secs(3), "the end came by poll, after {took:?}");
        assert_eq!(session.lock_state().push, Some(true));
        session.shutdown(Duration::from_millis(500)).await;
    }

    #[tokio::test]
    async fn a_legacy_task_is_followed_without_a_subscription() {
        let dir = tempfile::tempdir().unwrap();
        let session = demo(dir.path(), Era::Legacy).await;
        let (_, seen) = count_to_the_end(&session, 2, 50).await;
        assert!(seen.last().is_some_and(|s| s.is_final()), "{seen:?}");
        assert_eq!(session.lock_state().push, None, "never asked");
        session.shutdown(Duration::from_millis(500)).await;
    }

    #[test]
    fn the_servers_interval_is_honoured_within_the_callers_bounds() {
        let opts = FollowOptions {
            min_poll: Duration::from_millis(50),
            max_poll: Duration::from_secs(5),
            default_poll: Duration::from_secs(1),
            give_up: Duration::from_secs(60),
        };
        assert_eq!(opts.every(Some(250)), Duration::from_millis(250));
        assert_eq!(opts.every(Some(0)), Duration::from_secs(1), "0 is nonsense, not a request to spin");
        assert_eq!(opts.every(Some(-5)), Duration::from_secs(1));
        assert_eq!(opts.every(Some(10)), Duration::from_millis(50));
        assert_eq!(opts.every(Some(60_000)), Duration::from_secs(5));
        assert_eq!(opts.every(None), Duration::from_secs(1));
    }
}
