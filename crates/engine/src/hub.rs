//! What the facade and the drivers share: the write gate, the live state, the servers. It also
//! receives what servers' sessions report (it is their [`Router`]) and carries out decisions:
//! [`Hub::report`] is where a server's report becomes store writes.

use std::sync::{Arc, Mutex, Weak};

use taskdeck_client::{Question, QuestionKey, Reply, Resumable, Session, SessionEvent, TaskSnapshot};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_store::{HttpSession, Progress, Store, TaskRecord, TaskStatus};

use crate::config::{Config, Paths};
use crate::decide::{self, Action, Context};
use crate::event::EngineEvent;
use crate::gate::Gate;
use crate::live::{Live, LiveQuestion, Routed};
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
        if let Some(session) = self.servers.get(server).and_then(|s| s.current_session()) {
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
            SessionEvent::ToolsChanged => self.gate.announce(EngineEvent::ToolsChanged { server: server.to_owned() }),
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
            Some(info) => Some(Resumable { session_id: stored.session_id, info }),
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

    fn has_unfinished(&self, server: &str) -> bool {
        let Some(hub) = self.0.upgrade() else { return false };
        // When the store cannot tell, the session is kept: ending it could lose what it holds.
        hub.gate.store().has_live_tasks(server).unwrap_or(true)
    }
}
