//! Keeps each configured server running: starts it on first use, restarts it with exponential
//! backoff when it dies, gives up after repeated failures to start (until asked again), and keeps a
//! bounded log of its stderr across restarts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use taskdeck_client::{ServerSpec, Session, SessionEvent, SessionHandler, SessionOptions};
use taskdeck_protocol::{Era, limits};
use tokio::sync::{Notify, watch};

use crate::error::{EngineError, Result};
pub use crate::logs::LogLine;
use crate::logs::ServerLogFile;

/// Failed starts in a row before a server is left `failed` until someone asks for it again.
const MAX_START_FAILURES: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Lines of stderr (and Taskdeck's own notes about the server) kept per server.
const LOG_LINES: usize = 2000;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerPhase {
    /// Configured, not started yet (servers start on first use).
    Idle,
    Starting,
    Ready,
    Restarting,
    Failed,
}

/// What a front end shows about one server.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub phase: ServerPhase,
    pub era: Option<Era>,
    pub protocol_version: Option<String>,
    /// Whether the server can run tools as tasks.
    pub tasks: Option<bool>,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub pid: Option<u32>,
    pub restarts: u32,
    pub last_error: Option<String>,
    pub command: String,
}

/// Receives what a server's sessions report, for the engine to route.
pub(crate) trait Router: Send + Sync + 'static {
    fn session_event(&self, server: &str, event: SessionEvent);
    fn server_changed(&self, status: ServerStatus);
    fn server_log(&self, server: &str, line: LogLine);
}

struct Inner {
    phase: ServerPhase,
    session: Option<Session>,
    restarts: u32,
    last_error: Option<String>,
    running: bool,
}

pub(crate) struct Server {
    pub spec: ServerSpec,
    opts: SessionOptions,
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
    wake: Notify,
    log: Mutex<VecDeque<LogLine>>,
    /// The same lines on disk, so the log outlives Taskdeck; `None` without a log folder.
    log_file: Option<Mutex<ServerLogFile>>,
    router: Arc<dyn Router>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Server {
    pub fn new(
        spec: ServerSpec,
        opts: SessionOptions,
        router: Arc<dyn Router>,
        log_dir: Option<&std::path::Path>,
    ) -> Arc<Server> {
        let log_file = log_dir.map(|dir| ServerLogFile::new(dir, &spec.name));
        let earlier = log_file.as_ref().map(|f| f.tail(LOG_LINES)).unwrap_or_default();
        Arc::new(Server {
            spec,
            opts,
            inner: Mutex::new(Inner {
                phase: ServerPhase::Idle,
                session: None,
                restarts: 0,
                last_error: None,
                running: false,
            }),
            changed: watch::channel(0).0,
            wake: Notify::new(),
            log: Mutex::new(earlier.into()),
            log_file: log_file.map(Mutex::new),
            router,
        })
    }

    pub fn status(&self) -> ServerStatus {
        let inner = lock(&self.inner);
        let info = inner.session.as_ref().map(|s| s.info());
        ServerStatus {
            name: self.spec.name.clone(),
            phase: inner.phase,
            era: info.as_ref().map(|i| i.era),
            protocol_version: info.as_ref().map(|i| i.protocol_version.clone()),
            tasks: info.as_ref().map(|i| i.tasks),
            server_name: info.as_ref().and_then(|i| i.name.clone()),
            server_version: info.as_ref().and_then(|i| i.version.clone()),
            pid: inner.session.as_ref().and_then(|s| s.pid()),
            restarts: inner.restarts,
            last_error: inner.last_error.clone(),
            command: std::iter::once(self.spec.command.clone())
                .chain(self.spec.args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    pub fn log(&self) -> Vec<LogLine> {
        lock(&self.log).iter().cloned().collect()
    }

    pub fn current_session(&self) -> Option<Session> {
        lock(&self.inner).session.clone()
    }

    /// Every line of a server's log passes here, so none is over [`limits::LOG_LINE_BYTES`]: a
    /// note may quote what the server sent (a whole message it would not take), and what the
    /// server log holds is read back, shown and sent to the webview.
    fn note(&self, source: &'static str, text: String) {
        let line = LogLine { at: now(), source, text: limits::log_line(text) };
        {
            let mut log = lock(&self.log);
            if log.len() == LOG_LINES {
                log.pop_front();
            }
            log.push_back(line.clone());
        }
        if let Some(file) = &self.log_file {
            lock(file).append(&line);
        }
        self.router.server_log(&self.spec.name, line);
    }

    fn set_phase(&self, phase: ServerPhase) {
        lock(&self.inner).phase = phase;
        self.changed.send_modify(|g| *g += 1);
        self.router.server_changed(self.status());
    }

    /// A ready session, starting the server if needed and waiting through restarts. Fails when the
    /// server cannot be started (after its retries) or does not come up within `wait`.
    pub async fn session(self: &Arc<Self>, wait: Duration) -> Result<Session> {
        let mut rx = self.changed.subscribe();
        self.ensure_running();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            {
                let inner = lock(&self.inner);
                match (inner.phase, &inner.session) {
                    (ServerPhase::Ready, Some(s)) if s.dead().is_none() => return Ok(s.clone()),
                    (ServerPhase::Failed, _) => {
                        return Err(EngineError::ServerUnavailable {
                            server: self.spec.name.clone(),
                            reason: inner.last_error.clone().unwrap_or_else(|| "it failed to start".into()),
                        });
                    }
                    _ => {}
                }
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                let reason = lock(&self.inner).last_error.clone().unwrap_or_else(|| "it is still starting".into());
                return Err(EngineError::ServerUnavailable { server: self.spec.name.clone(), reason });
            }
        }
    }

    /// Starts the supervision loop unless it runs already; a `failed` server gets a fresh start.
    pub fn ensure_running(self: &Arc<Self>) {
        let mut inner = lock(&self.inner);
        if inner.running {
            if inner.phase == ServerPhase::Failed {
                inner.phase = ServerPhase::Restarting;
                drop(inner);
                self.wake.notify_one();
            }
            return;
        }
        inner.running = true;
        drop(inner);
        let me = self.clone();
        tokio::spawn(async move { me.supervise().await });
    }

    /// Restarts the server now (the user's restart button).
    pub fn restart(self: &Arc<Self>) {
        let session = lock(&self.inner).session.clone();
        match session {
            Some(s) => {
                self.note("taskdeck", "restart requested".into());
                s.kill();
            }
            None => self.ensure_running(),
        }
        self.wake.notify_one();
    }

    pub async fn shutdown(&self) {
        let session = lock(&self.inner).session.take();
        if let Some(s) = session {
            s.shutdown(Duration::from_millis(500)).await;
        }
    }

    async fn supervise(self: Arc<Self>) {
        let mut backoff = FIRST_BACKOFF;
        let mut failures = 0u32;
        loop {
            let restarting = lock(&self.inner).restarts > 0 || failures > 0;
            self.set_phase(if restarting { ServerPhase::Restarting } else { ServerPhase::Starting });
            let closed = Arc::new(Notify::new());
            let handler = Arc::new(Relay { server: Arc::downgrade(&self), closed: closed.clone() });
            match Session::connect(&self.spec, self.opts.clone(), handler).await {
                Ok(session) => {
                    failures = 0;
                    backoff = FIRST_BACKOFF;
                    let info = session.info();
                    self.note(
                        "taskdeck",
                        format!(
                            "connected: {} era, protocol {}, tasks {}",
                            info.era,
                            info.protocol_version,
                            if info.tasks { "supported" } else { "not supported" }
                        ),
                    );
                    {
                        let mut inner = lock(&self.inner);
                        inner.session = Some(session.clone());
                        inner.last_error = None;
                    }
                    self.set_phase(ServerPhase::Ready);
                    if session.dead().is_none() {
                        closed.notified().await;
                    }
                    let reason = session.dead().map(|e| e.to_string()).unwrap_or_else(|| "closed".into());
                    {
                        let mut inner = lock(&self.inner);
                        // A shutdown took the session already: stop supervising.
                        if inner.session.is_none() {
                            inner.running = false;
                            inner.phase = ServerPhase::Idle;
                            return;
                        }
                        inner.session = None;
                        inner.restarts += 1;
                        inner.last_error = Some(limits::error_text(reason.clone()));
                    }
                    self.note(
                        "taskdeck",
                        format!("server stopped: {reason}; restarting in {} ms", backoff.as_millis()),
                    );
                }
                Err(e) => {
                    failures += 1;
                    lock(&self.inner).last_error = Some(limits::error_text(e.to_string()));
                    self.note("taskdeck", format!("start failed ({failures}/{MAX_START_FAILURES}): {e}"));
                    if failures >= MAX_START_FAILURES {
                        self.set_phase(ServerPhase::Failed);
                        self.wake.notified().await;
                        failures = 0;
                        backoff = FIRST_BACKOFF;
                        continue;
                    }
                }
            }
            self.set_phase(ServerPhase::Restarting);
            let _ = tokio::time::timeout(backoff, self.wake.notified()).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// The handler each session of a server reports to.
struct Relay {
    server: std::sync::Weak<Server>,
    closed: Arc<Notify>,
}

impl SessionHandler for Relay {
    fn on_event(&self, event: SessionEvent) {
        let Some(server) = self.server.upgrade() else { return };
        match &event {
            SessionEvent::Stderr(line) => server.note("stderr", line.clone()),
            SessionEvent::Discarded { reason, detail } => {
                server.note("taskdeck", format!("ignored a message from the server ({reason:?}): {detail}"))
            }
            SessionEvent::Closed { .. } => self.closed.notify_one(),
            _ => {}
        }
        server.router.session_event(&server.spec.name, event);
    }
}
