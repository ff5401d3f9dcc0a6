//! What the facade and the drivers share: the write gate, the live state, the servers. It also
//! receives what servers' sessions report (it is their [`Router`]) and carries out decisions:
//! [`Hub::report`] is where a server's report becomes store writes.

use std::sync::{Arc, Mutex, Weak};

use taskdeck_client::{Asks, Question, QuestionKey, Reply, Resumable, Session, SessionEvent, TaskSnapshot};
use taskdeck_protocol::elicitation::{ElicitAction, ElicitResult};
use taskdeck_store::{HttpSession, Progress, Store, TaskRecord, TaskStatus};
use tokio::sync::oneshot;

use crate::config::{Config, Paths};
use crate::decide::{self, Action, Context};
use crate::event::EngineEvent;
use crate::gate::Gate;
use crate::live::{AnswerMsg, DriverMsg, Live, LiveQuestion, Routed};
use crate::lock::DataDirLock;
use crate::options::EngineOptions;
use crate::servers::{Servers, connection_key};
use crate::supervisor::{LogLine, Router, ServerStatus};
use crate::validate;

pub(crate) struct Hub {
    pub gate: Gate,
    pub live: Live,
    pub servers: Servers,
    pub paths: Paths,
    pub opts: EngineOptions,
    pub schemas: validate::Schemas,
    /// What `Engine::sample` gave the user, for the note of the answer that follows.
    pub sampled: crate::sampling::sampled::Sampled,
    /// Released by `Engine::shutdown`, or when the process ends however it ends.
    pub lock: Mutex<Option<DataDirLock>>,
}

impl Hub {
    pub fn new(store: Store, paths: Paths, opts: EngineOptions, config: Config, lock: DataDirLock) -> Arc<Hub> {
        let hub = Arc::new_cyclic(|weak: &Weak<Hub>| {
            let router: Arc<dyn Router> = Arc::new(HubRouter(weak.clone()));
            Hub {
                gate: Gate::new(store),
                live: Live::default(),
                servers: Servers::new(config, opts.session.clone(), router, paths.log_dir()),
                paths,
                opts,
                schemas: validate::Schemas::default(),
                sampled: Default::default(),
                lock: Mutex::new(Some(lock)),
            }
        });
        tokio::spawn(flush_deferred(Arc::downgrade(&hub)));
        hub
    }

    /// What the engine knows beside the record, for [`decide::decide`].
    pub fn context(&self, rec: &TaskRecord) -> Context {
        let pid = self.servers.connection(&rec.server);
        Context {
            latest_message: self.gate.latest_message(rec),
            question_open: self.live.question(&rec.id).is_some_and(|q| q.connection.is_some() && q.connection == pid),
            refuse_sampling: self.servers.sampling_policy(&rec.server) == crate::sampling::SamplingPolicy::Refuse,
        }
    }

    /// Records what a server reports about a task.
    pub fn report(&self, rec: &TaskRecord, s: &TaskSnapshot) {
        let actions = decide::decide(rec, &self.context(rec), s);
        self.carry_out(rec, actions);
    }

    pub fn carry_out(&self, rec: &TaskRecord, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Progress(p) => self.gate.defer_progress(&rec.id, p),
                Action::DeferMessage { message, server_status } => {
                    self.gate.defer_message(&rec.id, message, server_status)
                }
                Action::Write(update) => {
                    self.gate.apply_quietly(&rec.id, update);
                }
                Action::Ask { key, update } => {
                    let pid = self.servers.connection(&rec.server);
                    self.live.open_question(&rec.id, LiveQuestion { key, connection: pid });
                    self.gate.apply_quietly(&rec.id, update);
                }
            }
        }
    }

    /// A question the server sent as a request of its own (legacy `elicitation/create`,
    /// `sampling/createMessage`). A sampling request the server's policy refuses is answered with
    /// an error at once, and the refusal logged on the task.
    pub fn record_question(&self, id: &str, server: &str, q: Question) {
        if q.is_sampling() && self.servers.sampling_policy(server) == crate::sampling::SamplingPolicy::Refuse {
            tracing::info!(server, task = id, "a sampling request refused by the server's policy");
            if let Some(session) = self.servers.get(server).and_then(|s| s.current_session()) {
                let reply = Reply::Refused(crate::sampling::refused_by_policy());
                tokio::spawn(async move {
                    let _ = session.reply(&q.key, None, reply).await;
                });
            }
            return;
        }
        let action = decide::ask(&q, None);
        if let Action::Ask { key, update } = action {
            let pid = self.servers.connection(server);
            self.live.open_question(id, LiveQuestion { key, connection: pid });
            self.gate.apply_quietly(id, update);
        }
    }

    /// `notifications/elicitation/complete`: the task of `server` whose pending URL question has this
    /// elicitation id is answered as finished, through its driver like the user's answer would be.
    pub(crate) fn complete_url_question(&self, server: &str, elicitation_id: &str) {
        let tasks = match self.gate.store().non_terminal() {
            Ok(tasks) => tasks,
            Err(e) => return tracing::warn!(server, "the tasks waiting for a page could not be read: {e}"),
        };
        let matching = tasks.into_iter().find(|r| {
            r.server == server
                && r.status == TaskStatus::InputRequired
                && matches!(r.question.as_ref().map(|q| &q.asks), Some(Asks::Url { elicitation_id: id, .. }) if id == elicitation_id)
        });
        let Some(rec) = matching else {
            return tracing::debug!(server, "a completed URL elicitation no pending question waits for");
        };
        let Some(stored) = rec.question.as_ref().map(|q| q.key.clone()) else { return };
        let key = match stored {
            k @ QuestionKey::InputKey(_) => k,
            // A legacy question is answered on the connection that asked it, if that is still open.
            QuestionKey::Request(_) => match self.live.question(&rec.id) {
                Some(live) if live.connection.is_some() && live.connection == self.servers.connection(server) => {
                    live.key
                }
                _ => {
                    return tracing::debug!(server, task = %rec.id, "completed URL question not open on this connection");
                }
            },
        };
        let accepted = ElicitResult { action: ElicitAction::Accept, content: None, extra: Default::default() };
        let response = Reply::Result(serde_json::to_value(accepted).unwrap_or_default());
        let (reply, replied) = oneshot::channel();
        let msg = AnswerMsg { key, response, note: None, more: Vec::new(), reply };
        if self.live.send(&rec.id, DriverMsg::Answer(Box::new(msg))).is_err() {
            return tracing::debug!(server, task = %rec.id, "completed URL question without a driver");
        }
        let id = rec.id.clone();
        tokio::spawn(async move {
            if let Ok(Err(e)) = replied.await {
                tracing::info!(task = %id, "the server's completion of a URL question was not recorded: {e}");
            }
        });
    }

    /// The roots `server` is granted: what a roots input request is answered with (`crate::roots`).
    pub fn roots_for(&self, server: &str) -> Vec<taskdeck_protocol::types::Root> {
        self.servers.get(server).map(|s| s.roots()).unwrap_or_default()
    }

    /// Makes the task's remote id routable; what came for it early goes to its driver.
    pub fn register_remote(&self, rec: &TaskRecord) {
        for q in self.live.register_remote(rec) {
            self.record_question(&rec.id, &rec.server, q);
        }
    }

    fn routed(&self, server: &str, routed: Vec<Routed>) {
        for r in routed {
            match r {
                Routed::Queued => {}
                Routed::Record { id, question } => self.record_question(&id, server, question),
                Routed::Orphan(q) => self.cancel_question(server, q),
            }
        }
    }

    /// Declines, on the server, a question nobody here can be shown.
    fn cancel_question(&self, server: &str, q: Question) {
        tracing::warn!(server, "a question that belongs to no task was cancelled");
        let reply = if q.is_sampling() {
            crate::sampling::cancelled().0
        } else {
            Reply::Result(serde_json::to_value(ElicitResult::cancel()).unwrap_or_default())
        };
        let Some(running) = self.servers.get(server) else { return };
        // The user sees why the server got a cancel where they never saw a question.
        let what = if q.is_sampling() { "a language model's reply" } else { "a question" };
        running.note("taskdeck", format!("the server asked for {what} that belongs to no task here; it was cancelled"));
        if let Some(session) = running.current_session() {
            tokio::spawn(async move {
                let _ = session.reply(&q.key, None, reply).await;
            });
        }
    }

    fn on_session_event(&self, server: &str, event: SessionEvent) {
        match event {
            SessionEvent::Task(snapshot) => {
                let routed = self.live.route_snapshot(server, snapshot);
                self.routed(server, routed);
            }
            SessionEvent::Progress { token, progress, total, message } => {
                // The progress token is the local task id; only the task's own server may move it.
                if let Some(id) = token.as_str()
                    && self.live.is_driven_on(id, server)
                {
                    self.gate.defer_progress(id, Progress { progress, total, message });
                }
            }
            SessionEvent::Question(q) => {
                let routed = self.live.route_question(server, q);
                self.routed(server, routed);
            }
            SessionEvent::QuestionWithdrawn { key } => self.live.withdraw(&key),
            SessionEvent::Hosted(task) => self.gate.keep_hosted(server, &task),
            SessionEvent::ToolsChanged => self.gate.announce(EngineEvent::ToolsChanged { server: server.to_owned() }),
            SessionEvent::ElicitationComplete { elicitation_id } => self.complete_url_question(server, &elicitation_id),
            _ => {}
        }
    }
}

/// Progress arrives far more often than anyone can read it: what waits is written in one
/// transaction per interval. Status changes do not wait for this.
async fn flush_deferred(hub: Weak<Hub>) {
    loop {
        let Some(h) = hub.upgrade() else { return };
        let every = h.opts.progress_flush;
        h.gate.flush();
        drop(h);
        tokio::time::sleep(every).await;
    }
}

/// A stored hosted task as the session takes it back; `None` for a row nobody can read.
fn hosted_task(row: taskdeck_store::HostedTaskRow) -> Option<taskdeck_client::HostedTask> {
    let request = serde_json::from_str(&row.request_id).ok()?;
    let outcome = match row.outcome {
        None => None,
        Some(o) => match (o.get("result"), o.get("error")) {
            (Some(result), _) => Some(Ok(result.clone())),
            (None, Some(error)) => Some(Err(serde_json::from_value(error.clone()).ok()?)),
            (None, None) => return None,
        },
    };
    Some(taskdeck_client::HostedTask { task_id: row.task_id, request, task: row.task, outcome })
}

struct HubRouter(Weak<Hub>);

impl Router for HubRouter {
    fn session_event(&self, server: &str, event: SessionEvent) {
        if let Some(hub) = self.0.upgrade() {
            hub.on_session_event(server, event);
        }
    }

    fn server_changed(&self, status: ServerStatus) {
        if let Some(hub) = self.0.upgrade() {
            hub.gate.announce(EngineEvent::Server { server: status });
        }
    }

    fn server_log(&self, server: &str, line: LogLine) {
        if let Some(hub) = self.0.upgrade() {
            hub.gate.announce(EngineEvent::ServerLog { server: server.to_owned(), line });
        }
    }

    fn stored_session(&self, server: &str, url: &str) -> Option<Resumable> {
        let hub = self.0.upgrade()?;
        let stored = match hub.gate.store().http_session(server) {
            Ok(stored) => stored?,
            Err(e) => {
                tracing::warn!(server, "the stored HTTP session could not be read: {e}");
                return None;
            }
        };
        // A session kept for another endpoint is not this server's (and its id, private to the
        // server that made it, is never sent elsewhere), nor is one nobody can read.
        let info = serde_json::from_value(stored.info).ok().filter(|_| stored.url == url);
        match info {
            Some(info) => {
                // The tasks the server made of its questions on this session come back with it.
                let hosted = match hub.gate.store().hosted_tasks(server) {
                    Ok(rows) => rows.into_iter().filter_map(hosted_task).collect(),
                    Err(e) => {
                        tracing::warn!(server, "the hosted tasks could not be read: {e}");
                        Vec::new()
                    }
                };
                Some(Resumable { session_id: stored.session_id, info, hosted })
            }
            None => {
                self.keep_session(server, url, None);
                None
            }
        }
    }

    fn keep_session(&self, server: &str, url: &str, session: Option<&Resumable>) {
        let Some(hub) = self.0.upgrade() else { return };
        let store = hub.gate.store();
        let outcome = match session {
            Some(r) => store
                .keep_http_session(&HttpSession {
                    server: server.to_owned(),
                    url: url.to_owned(),
                    session_id: r.session_id.clone(),
                    protocol_version: r.info.protocol_version.clone(),
                    info: serde_json::to_value(&r.info).unwrap_or_default(),
                })
                .map(drop),
            None => store.forget_http_session(server).map(drop),
        };
        // Only a resumption is lost: the next connection initializes afresh.
        if let Err(e) = outcome {
            tracing::warn!(server, "the HTTP session could not be stored: {e}");
        }
    }

    /// The questions a server asked on the session before this connection resumed it (another
    /// process's, maybe) are open on it still: they become answerable here. The server sends none
    /// of them again.
    fn session_resumed(&self, server: &str, session: &Session) {
        let Some(hub) = self.0.upgrade() else { return };
        let tasks = match hub.gate.store().non_terminal() {
            Ok(tasks) => tasks,
            Err(e) => return tracing::warn!(server, "the tasks waiting for an answer could not be read: {e}"),
        };
        let key = connection_key(session);
        for rec in tasks.into_iter().filter(|r| r.server == server && r.status == TaskStatus::InputRequired) {
            let Some(QuestionKey::Request(id)) = rec.question.as_ref().map(|q| q.key.clone()) else { continue };
            let task = rec.question.as_ref().and_then(|q| q.task_id.clone()).or_else(|| rec.remote_task_id.clone());
            let live = hub.live.question(&rec.id).is_some_and(|q| q.connection.is_some() && q.connection == key);
            if session.carry_question(id.clone(), task) && !live {
                hub.live.open_question(&rec.id, LiveQuestion { key: QuestionKey::Request(id), connection: key });
            }
        }
    }

    fn task_of_log(&self, server: &str, remote: Option<&str>, call: Option<&str>) -> Option<String> {
        self.0.upgrade()?.live.task_of_log(server, remote, call)
    }

    fn has_unfinished(&self, server: &str) -> bool {
        let Some(hub) = self.0.upgrade() else { return false };
        // When the store cannot tell, the session is kept: ending it could lose what it holds.
        hub.gate.store().has_live_tasks(server).unwrap_or(true)
    }
}
