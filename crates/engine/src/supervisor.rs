//! Keeps each configured server running: starts it on first use, restarts it with exponential
//! backoff when it dies, gives up after repeated failures to start (until asked again), and keeps a
//! bounded log of its stderr across restarts. A server is an [`Endpoint`]: a local process or a
//! remote URL, supervised alike.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use taskdeck_client::auth::{FileStore, TokenStore, default_store};
use taskdeck_client::transport::http::{HttpFailure, SignIn, StoredSignIn};
use taskdeck_client::{
    ClientError, Endpoint, Resumable, Resumption, Session, SessionEvent, SessionHandler, SessionOptions,
};
use taskdeck_protocol::{Era, limits};
use tokio::sync::{Notify, watch};

use crate::config::{ServerConfig, UnreadableEntry};
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
    /// The config entry could not be read: never started; `error` says why.
    Invalid,
    /// The config entry says `"disabled": true`: never started, its tools not runnable.
    Disabled,
}

/// Whether a server wants a sign-in, and has one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthState {
    /// No sign-in is kept for it, and it has not asked for one (every local server).
    None,
    /// A sign-in is kept for it.
    SignedIn,
    /// It refused Taskdeck without a sign-in, or the kept one no longer works and could not be
    /// renewed: the user has to sign in (`taskdeck-cli login SERVER`, or the app).
    SignInNeeded,
}

/// `TASKDECK_SIGN_IN_STORE=file` keeps sign-ins in the data directory's 0600 file even where
/// an OS keyring answers: for tests and machines whose keyring must not be touched.
pub const SIGN_IN_STORE_ENV: &str = "TASKDECK_SIGN_IN_STORE";

/// Where the sign-ins of the data directory `data_dir` are kept, and a note for the user when
/// it is not the OS keyring. The call may block (a keyring probe).
pub fn sign_in_store(data_dir: &Path) -> (Arc<dyn TokenStore>, Option<String>) {
    if std::env::var(SIGN_IN_STORE_ENV).as_deref() == Ok("file") {
        return (Arc::new(FileStore::in_dir(data_dir)), None);
    }
    let (store, note) = default_store(data_dir);
    (Arc::from(store), note)
}

/// The token store every remote server of one engine signs in with, picked on first use (a
/// keyring probe is a D-Bus round trip no local-only config should wait for).
#[derive(Default)]
pub(crate) struct SignIns {
    data_dir: OnceLock<PathBuf>,
    store: OnceLock<Arc<dyn TokenStore>>,
}

impl SignIns {
    pub fn set_data_dir(&self, dir: PathBuf) {
        let _ = self.data_dir.set(dir);
    }

    /// Blocks on the first call.
    fn store(&self) -> Option<Arc<dyn TokenStore>> {
        let dir = self.data_dir.get()?;
        Some(
            self.store
                .get_or_init(|| {
                    let (store, note) = sign_in_store(dir);
                    if let Some(note) = note {
                        tracing::info!("{note}");
                    }
                    store
                })
                .clone(),
        )
    }
}

/// True when the server refused Taskdeck for want of a (working) sign-in, or of a scope the
/// next sign-in asks for (403 `insufficient_scope`). Either is refused before the server acts.
pub fn needs_sign_in(e: &ClientError) -> bool {
    match HttpFailure::of(e) {
        Some(HttpFailure::SignInNeeded { .. }) => true,
        Some(HttpFailure::Forbidden { www_authenticate }) => {
            www_authenticate.as_deref().is_some_and(|w| w.contains("insufficient_scope"))
        }
        _ => false,
    }
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
    /// The command line of a local server; the URL of a remote one. Never its environment or headers.
    pub command: String,
    /// `stdio` or `http`; for an entry that could not be read, what it asked for (`sse`), or `unknown`.
    pub transport: String,
    /// The endpoint of a remote server.
    pub url: Option<String>,
    /// Why the config entry could not be read (file, field, reason); set only with [`ServerPhase::Invalid`].
    pub error: Option<String>,
    /// What of the config entry was ignored and why (unknown keys, keys of the other transport).
    pub notes: Vec<String>,
    /// Whether it wants a sign-in and has one.
    pub auth: AuthState,
}

impl ServerStatus {
    /// The row of an entry with `"disabled": true`, so that a list of servers shows it as such.
    pub fn disabled(config: &ServerConfig) -> ServerStatus {
        let endpoint = &config.endpoint;
        ServerStatus {
            command: endpoint.describe(),
            url: endpoint_url(endpoint),
            notes: config.notes.clone(),
            ..ServerStatus::not_run(&config.name, ServerPhase::Disabled, endpoint.kind())
        }
    }

    /// The row of an entry that could not be read, so that a list of servers shows it with its error.
    pub fn unreadable(entry: &UnreadableEntry) -> ServerStatus {
        ServerStatus {
            error: Some(entry.error.to_string()),
            ..ServerStatus::not_run(&entry.name, ServerPhase::Invalid, entry.transport.unwrap_or("unknown"))
        }
    }

    /// A config entry that runs nothing: no session, so nothing of one.
    fn not_run(name: &str, phase: ServerPhase, transport: &str) -> ServerStatus {
        ServerStatus {
            name: name.to_owned(),
            phase,
            era: None,
            protocol_version: None,
            tasks: None,
            server_name: None,
            server_version: None,
            pid: None,
            restarts: 0,
            last_error: None,
            command: String::new(),
            transport: transport.into(),
            url: None,
            error: None,
            notes: Vec::new(),
            auth: AuthState::None,
        }
    }
}

fn endpoint_url(endpoint: &Endpoint) -> Option<String> {
    match endpoint {
        Endpoint::Http(h) => Some(h.url.clone()),
        Endpoint::Stdio(_) => None,
    }
}

/// Receives what a server's sessions report, for the engine to route.
pub(crate) trait Router: Send + Sync + 'static {
    fn session_event(&self, server: &str, event: SessionEvent);
    fn server_changed(&self, status: ServerStatus);
    fn server_log(&self, server: &str, line: LogLine);

    /// The legacy HTTP session stored for `server` at `url`, for its next connection to resume.
    fn stored_session(&self, _server: &str, _url: &str) -> Option<Resumable> {
        None
    }

    /// Stores the session a connection to `server` at `url` can be resumed with, or removes the
    /// stored one (`None`: the session ended, or there is none).
    fn keep_session(&self, _server: &str, _url: &str, _session: Option<&Resumable>) {}

    /// `session` carries on a stored session: what was open on it before is open on it now.
    fn session_resumed(&self, _server: &str, _session: &Session) {}

    /// Whether a task of `server` is still unfinished here: its session must then stay open.
    fn has_unfinished(&self, _server: &str) -> bool {
        false
    }

    /// The local task an MCP log entry of `server` belongs to: the one its related-task `_meta`
    /// names (`remote`), or else the call whose stream carried it (`call`, its local id), or else
    /// the plain call it arrived during.
    fn task_of_log(&self, _server: &str, _remote: Option<&str>, _call: Option<&str>) -> Option<String> {
        None
    }
}

struct Inner {
    phase: ServerPhase,
    session: Option<Session>,
    restarts: u32,
    last_error: Option<String>,
    running: bool,
    auth: AuthState,
    /// The current connection's sign-in, which learns of a refused token mid-session.
    sign_in: Option<Arc<StoredSignIn>>,
}

pub(crate) struct Server {
    pub config: ServerConfig,
    /// The engine's session options with this server's settings applied.
    opts: SessionOptions,
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
    wake: Notify,
    log: Mutex<VecDeque<LogLine>>,
    /// The same lines on disk, so the log outlives Taskdeck; `None` without a log folder.
    log_file: Option<Mutex<ServerLogFile>>,
    router: Arc<dyn Router>,
    sign_ins: Arc<SignIns>,
    /// What the user grants the server now (its roots) and the log level asked of it: changed in
    /// place by a config reload, without a restart (see [`Server::regrant`]).
    grants: Mutex<Grants>,
}

#[derive(Debug, Clone, PartialEq)]
struct Grants {
    roots: Vec<PathBuf>,
    log_level: Option<crate::logs::LogLevel>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Server {
    pub fn new(
        config: ServerConfig,
        base: &SessionOptions,
        router: Arc<dyn Router>,
        log_dir: Option<&std::path::Path>,
        sign_ins: Arc<SignIns>,
    ) -> Arc<Server> {
        let log_file = log_dir.map(|dir| ServerLogFile::new(dir, &config.name));
        let earlier = log_file.as_ref().map(|f| f.tail(LOG_LINES)).unwrap_or_default();
        let grants = Grants { roots: config.settings.roots.clone(), log_level: config.settings.log_level };
        Arc::new(Server {
            grants: Mutex::new(grants),
            opts: config.settings.session(base),
            config,
            inner: Mutex::new(Inner {
                phase: ServerPhase::Idle,
                session: None,
                restarts: 0,
                last_error: None,
                running: false,
                auth: AuthState::None,
                sign_in: None,
            }),
            changed: watch::channel(0).0,
            wake: Notify::new(),
            log: Mutex::new(earlier.into()),
            log_file: log_file.map(Mutex::new),
            router,
            sign_ins,
        })
    }

    pub fn status(&self) -> ServerStatus {
        let inner = lock(&self.inner);
        let info = inner.session.as_ref().map(|s| s.info());
        let endpoint = &self.config.endpoint;
        ServerStatus {
            name: self.config.name.clone(),
            phase: inner.phase,
            era: info.as_ref().map(|i| i.era),
            protocol_version: info.as_ref().map(|i| i.protocol_version.clone()),
            tasks: info.as_ref().map(|i| i.tasks),
            server_name: info.as_ref().and_then(|i| i.name.clone()),
            server_version: info.as_ref().and_then(|i| i.version.clone()),
            pid: inner.session.as_ref().and_then(|s| s.pid()),
            restarts: inner.restarts,
            last_error: inner.last_error.clone(),
            command: endpoint.describe(),
            transport: endpoint.kind().into(),
            url: endpoint_url(endpoint),
            error: None,
            notes: self.config.notes.clone(),
            auth: match &inner.sign_in {
                Some(s) if s.needs_sign_in() => AuthState::SignInNeeded,
                _ => inner.auth,
            },
        }
    }

    /// `text` with every configured header value (and each long word of one, such as the token
    /// after `Bearer`) blotted out. The transport is not expected to quote headers back, but what
    /// a server's log and errors hold is shown, written to disk and sent to the webview, and a
    /// remote server's headers are where its secrets are.
    fn redact(&self, text: String) -> String {
        let Endpoint::Http(h) = &self.config.endpoint else { return text };
        let mut secrets: Vec<&str> = h
            .headers
            .values()
            .flat_map(|v| std::iter::once(v.as_str()).chain(v.split_whitespace()))
            .filter(|s| s.len() >= 8)
            .collect();
        // The whole value before its parts, so that no part of a value is left beside a blot.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.into_iter().fold(text, |t, secret| if t.contains(secret) { t.replace(secret, "[redacted]") } else { t })
    }

    fn set_last_error(&self, text: String) {
        lock(&self.inner).last_error = Some(limits::error_text(self.redact(text)));
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
    pub(crate) fn note(&self, source: &'static str, text: String) {
        self.keep_line(LogLine::plain(now(), source, self.redact(text)));
    }

    /// An MCP log entry (`notifications/message`): kept in the same log as stderr, with its level,
    /// and tied to the task it names, whose timeline shows it.
    fn note_mcp(&self, entry: &taskdeck_protocol::types::LoggingMessageParams, call: Option<&str>) {
        let remote = entry
            .extra
            .get("_meta")
            .and_then(|m| m.get(taskdeck_protocol::meta::RELATED_TASK))
            .and_then(|r| r.get("taskId"))
            .and_then(serde_json::Value::as_str);
        let task = self.router.task_of_log(&self.config.name, remote, call);
        let mut line = LogLine::mcp(now(), &entry.level, entry.logger.as_deref(), &entry.data, task, remote);
        line.text = limits::log_line(self.redact(std::mem::take(&mut line.text)));
        self.keep_line(line);
    }

    fn keep_line(&self, line: LogLine) {
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
        self.router.server_log(&self.config.name, line);
    }

    /// The directories the user grants the server now.
    pub fn granted_paths(&self) -> Vec<PathBuf> {
        lock(&self.grants).roots.clone()
    }

    /// The roots the user grants the server now, as MCP roots.
    pub fn roots(&self) -> Vec<taskdeck_protocol::types::Root> {
        crate::roots::as_roots(&lock(&self.grants).roots)
    }

    /// Applies the grants of `config` (an edit of this server's entry that changed nothing else)
    /// to the running server: a new set of roots is announced with `list_changed`, a new log level
    /// is sent. Without a session nothing is sent: the next connection asks and is told afresh.
    pub fn regrant(self: &Arc<Self>, config: &ServerConfig) {
        let new = Grants { roots: config.settings.roots.clone(), log_level: config.settings.log_level };
        let old = std::mem::replace(&mut *lock(&self.grants), new.clone());
        let Some(session) = self.current_session() else { return };
        if old.roots != new.roots {
            match session.roots_changed() {
                Ok(true) => {
                    self.note("taskdeck", format!("granted roots changed ({}); told the server", new.roots.len()))
                }
                Ok(false) => self.note("taskdeck", format!("granted roots changed ({})", new.roots.len())),
                Err(e) => {
                    self.note("taskdeck", format!("granted roots changed, but the server could not be told: {e}"))
                }
            }
        }
        if old.log_level != new.log_level {
            self.send_log_level(session);
        }
    }

    /// Sends the configured log level to a legacy server that declares `logging`.
    fn send_log_level(self: &Arc<Self>, session: Session) {
        let configured = lock(&self.grants).log_level;
        if session.era() == taskdeck_protocol::Era::Modern {
            // Rides every request from now on, so it is set before the session is used. A modern
            // server sends no entry a request does not ask for: without a level configured,
            // Taskdeck asks for `info` and above.
            let level = configured.unwrap_or(crate::logs::LogLevel::Info);
            session.log_level_per_request(Some(level.as_str()));
            return;
        }
        let Some(level) = configured else { return };
        let me = self.clone();
        tokio::spawn(async move {
            match session.set_log_level(level.as_str()).await {
                Ok(true) => me.note("taskdeck", format!("asked for log entries of level {level} and above")),
                Ok(false) => {}
                Err(e) => me.note("taskdeck", format!("the server refused log level {level}: {e}")),
            }
        });
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
                            server: self.config.name.clone(),
                            reason: inner.last_error.clone().unwrap_or_else(|| "it failed to start".into()),
                        });
                    }
                    _ => {}
                }
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                let reason = lock(&self.inner).last_error.clone().unwrap_or_else(|| "it is still starting".into());
                return Err(EngineError::ServerUnavailable { server: self.config.name.clone(), reason });
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

    /// Stops the server. A remote server's legacy session is ended (`DELETE`) only when no task
    /// of this Taskdeck is unfinished there: a server may keep its tasks in the session, and the
    /// next Taskdeck resumes that session to follow them. Otherwise the connection is only dropped
    /// and the session stays stored.
    pub async fn shutdown(&self) {
        let session = lock(&self.inner).session.take();
        let Some(s) = session else { return };
        let grace = Duration::from_millis(500);
        let Endpoint::Http(h) = &self.config.endpoint else {
            return s.shutdown(grace).await;
        };
        if s.resumable().is_some() && self.router.has_unfinished(&self.config.name) {
            s.detach(grace).await;
            self.note(
                "taskdeck",
                "disconnected; the HTTP session is left open for the tasks still running there".into(),
            );
        } else {
            s.shutdown(grace).await;
            self.router.keep_session(&self.config.name, &h.url, None);
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
            let mut opts = self.opts.clone();
            if let Endpoint::Http(h) = &self.config.endpoint {
                opts.resume = self.router.stored_session(&self.config.name, &h.url);
                let how = if opts.resume.is_some() { "resuming the stored session" } else { "connecting" };
                self.note("taskdeck", format!("{how} to {}", h.url));
            }
            let (endpoint, sign_in) = self.endpoint().await;
            // The config's `${secret:KEY}` values go in only now, into this connection's copy.
            let sign_ins = self.sign_ins.clone();
            let endpoint =
                tokio::task::spawn_blocking(move || crate::secrets::resolve_with(&endpoint, || sign_ins.store()))
                    .await
                    .unwrap_or_else(|e| {
                        Err(ClientError::Spawn {
                            server: self.config.name.clone(),
                            command: String::new(),
                            message: e.to_string(),
                        })
                    });
            let opened = match endpoint {
                Ok(endpoint) => Session::open(&endpoint, opts, handler).await,
                Err(e) => Err(e),
            };
            match opened {
                Ok(session) => {
                    let signed_in = match &sign_in {
                        Some(s) => s.signed_in().await,
                        None => false,
                    };
                    {
                        let mut inner = lock(&self.inner);
                        inner.auth = if signed_in { AuthState::SignedIn } else { AuthState::None };
                        inner.sign_in = sign_in.clone();
                    }
                    failures = 0;
                    backoff = FIRST_BACKOFF;
                    self.keep_session(&session);
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
                    if session.resumption() == Resumption::Resumed {
                        self.router.session_resumed(&self.config.name, &session);
                    }
                    self.send_log_level(session.clone());
                    self.set_phase(ServerPhase::Ready);
                    if session.dead().is_none() {
                        closed.notified().await;
                    }
                    let reason = session.dead().map(|e| e.to_string()).unwrap_or_else(|| "closed".into());
                    if session.resumable().is_none() {
                        // The server said the session is gone: nothing is left to resume.
                        self.keep_session(&session);
                    }
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
                    }
                    self.set_last_error(reason.clone());
                    self.note(
                        "taskdeck",
                        format!("server stopped: {reason}; restarting in {} ms", backoff.as_millis()),
                    );
                }
                Err(e) if needs_sign_in(&e) => {
                    // Trying again changes nothing until the user signs in: the server waits,
                    // `failed` with the way out, and a sign-in asks for it again.
                    let hint = format!(
                        "Sign-in needed: run `taskdeck-cli login {}` (or sign in from the app)",
                        self.config.name
                    );
                    lock(&self.inner).auth = AuthState::SignInNeeded;
                    self.set_last_error(hint.clone());
                    self.note("taskdeck", format!("the server refused Taskdeck without a sign-in. {hint}"));
                    self.set_phase(ServerPhase::Failed);
                    self.wake.notified().await;
                    failures = 0;
                    backoff = FIRST_BACKOFF;
                    continue;
                }
                Err(e) => {
                    self.set_last_error(e.to_string());
                    // What cannot be done at all is not retried: trying again changes nothing.
                    if matches!(e, ClientError::Unsupported { .. }) {
                        failures = MAX_START_FAILURES;
                        self.note("taskdeck", format!("start failed, not retried: {e}"));
                    } else {
                        failures += 1;
                        self.note("taskdeck", format!("start failed ({failures}/{MAX_START_FAILURES}): {e}"));
                    }
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

impl Server {
    /// The endpoint to connect to: a remote server's spec with its kept sign-in behind it.
    async fn endpoint(&self) -> (Endpoint, Option<Arc<StoredSignIn>>) {
        let Endpoint::Http(h) = &self.config.endpoint else { return (self.config.endpoint.clone(), None) };
        let sign_ins = self.sign_ins.clone();
        let Some(store) = tokio::task::spawn_blocking(move || sign_ins.store()).await.ok().flatten() else {
            return (self.config.endpoint.clone(), None);
        };
        match StoredSignIn::new(&self.config.name, store) {
            Ok(sign_in) => {
                let sign_in = Arc::new(sign_in);
                let mut spec = h.clone();
                spec.sign_in = SignIn::new(sign_in.clone());
                (Endpoint::Http(spec), Some(sign_in))
            }
            Err(e) => {
                self.note("taskdeck", format!("sign-in unavailable: {e}"));
                (self.config.endpoint.clone(), None)
            }
        }
    }

    /// Keeps what a connection to a remote server needs to resume `session`, or removes what was
    /// stored when there is nothing to resume (a modern server, an ended session).
    fn keep_session(&self, session: &Session) {
        let Endpoint::Http(h) = &self.config.endpoint else { return };
        match session.resumption() {
            Resumption::Resumed => self.note("taskdeck", "resumed the stored HTTP session".into()),
            Resumption::Gone { reason } => self.note(
                "taskdeck",
                format!("the stored HTTP session could not be resumed ({reason}); started a new one"),
            ),
            Resumption::NotAsked => {}
        }
        self.router.keep_session(&self.config.name, &h.url, session.resumable().as_ref());
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
            SessionEvent::Log { entry, call } => server.note_mcp(entry, call.as_deref()),
            SessionEvent::Discarded { reason, detail } => {
                server.note("taskdeck", format!("ignored a message from the server ({reason:?}): {detail}"))
            }
            SessionEvent::Closed { .. } => self.closed.notify_one(),
            _ => {}
        }
        server.router.session_event(&server.config.name, event);
    }

    fn roots(&self) -> Vec<taskdeck_protocol::types::Root> {
        self.server.upgrade().map(|s| s.roots()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use taskdeck_client::HttpSpec;

    use super::*;
    use crate::config::ServerSettings;

    struct Quiet;
    impl Router for Quiet {
        fn session_event(&self, _: &str, _: SessionEvent) {}
        fn server_changed(&self, _: ServerStatus) {}
        fn server_log(&self, _: &str, _: LogLine) {}
    }

    fn remote(headers: &[(&str, &str)]) -> Arc<Server> {
        let spec = HttpSpec {
            name: "web".into(),
            url: "https://mcp.example.com/mcp".into(),
            headers: headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
            sign_in: Default::default(),
        };
        let config = ServerConfig {
            name: "web".into(),
            endpoint: Endpoint::Http(spec),
            settings: ServerSettings::default(),
            unknown: Default::default(),
            notes: Vec::new(),
        };
        Server::new(config, &SessionOptions::default(), Arc::new(Quiet), None, Default::default())
    }

    #[test]
    fn a_remote_server_s_log_and_errors_never_show_its_headers() {
        let server =
            remote(&[("Authorization", "Bearer tok-0123456789"), ("X-Api-Key", "key-abcdefgh"), ("X-Short", "ab")]);
        server.note("taskdeck", "sent Bearer tok-0123456789 and then tok-0123456789 alone, key-abcdefgh too".into());
        let line = &server.log()[0].text;
        assert!(!line.contains("tok-0123456789") && !line.contains("key-abcdefgh"), "{line}");
        assert!(line.contains("[redacted]"), "{line}");
        server.set_last_error("refused key-abcdefgh".into());
        let status = server.status();
        assert_eq!(status.last_error.as_deref(), Some("refused [redacted]"));
        assert_eq!((status.transport.as_str(), status.url.as_deref()), ("http", Some("https://mcp.example.com/mcp")));
        assert_eq!(status.command, "https://mcp.example.com/mcp");
    }
}
