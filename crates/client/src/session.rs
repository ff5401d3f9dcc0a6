//! One live connection to one server: request/response correlation, the reader that dispatches
//! what the server sends, and the era handshake. How the messages travel is the transport's
//! business (see [`crate::transport`]); nothing here knows of pipes or processes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use taskdeck_protocol::jsonrpc::{Notification, Request, Response};
use taskdeck_protocol::modern::discover::{DiscoverResult, UnsupportedVersionData};
use taskdeck_protocol::modern::request_meta::with_request_meta;
use taskdeck_protocol::types::{Implementation, ProgressParams, Tool};
use taskdeck_protocol::{Era, ErrorObject, Message, RequestId, codes, legacy, meta, methods, modern};
use tokio::sync::oneshot;

use crate::ClientError;
use crate::endpoint::Endpoint;
use crate::error::ResponseFault;
use crate::model::{
    Asks, Discard, Question, QuestionKey, QuestionRequest, Resumable, Resumption, ServerInfo, SessionEvent,
    TaskSnapshot,
};
use crate::process::ServerSpec;
use crate::tracker::{TaskTracker, Verdict};
use crate::transport::http::HttpTransport;
use crate::transport::stdio::StdioTransport;
use crate::transport::{Connection, FRAME_START, FrameError, FrameSource, Received, SendError, Transport};

/// Receives everything the server sends that is not an answer to one of our requests.
///
/// `on_event` is called from the session's reader, in arrival order: it must not block. Server to
/// client requests are served here too: roots through [`SessionHandler::roots`], elicitation as a
/// [`SessionEvent::Question`] answered later with `Session::answer`, ping by the session itself.
pub trait SessionHandler: Send + Sync + 'static {
    fn on_event(&self, event: SessionEvent);

    fn roots(&self) -> Vec<taskdeck_protocol::types::Root> {
        Vec::new()
    }
}

/// A handler for callers that only make requests.
pub struct IgnoreEvents;
impl SessionHandler for IgnoreEvents {
    fn on_event(&self, _event: SessionEvent) {}
}

/// The caller's handler while a resumed session proves alive. The end of a session that was gone
/// must not reach it: to a supervisor that reads as the end of the fresh session made next.
struct ProbeGate {
    inner: Arc<dyn SessionHandler>,
    mode: AtomicU8,
}

impl ProbeGate {
    /// Everything but the end passes.
    const PROBING: u8 = 0;
    /// The session is the caller's: everything passes.
    const OPEN: u8 = 1;
    /// The session was gone: nothing more of it passes.
    const SHUT: u8 = 2;
}

impl SessionHandler for ProbeGate {
    fn on_event(&self, event: SessionEvent) {
        match (self.mode.load(Ordering::SeqCst), &event) {
            (Self::OPEN, _) => self.inner.on_event(event),
            (Self::PROBING, e) if !matches!(e, SessionEvent::Closed { .. }) => self.inner.on_event(event),
            _ => {}
        }
    }

    fn roots(&self) -> Vec<taskdeck_protocol::types::Root> {
        self.inner.roots()
    }
}

#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// How long to wait for `server/discover` before deciding a stdio server is legacy; over
    /// HTTP the probe waits as long as any request (see [`Session::open`]).
    pub probe_timeout: Duration,
    /// Timeout of ordinary requests (handshake, listing, `tasks/get`, cancel, update).
    pub request_timeout: Duration,
    /// Timeout of a tool call the server answers without making a task.
    pub call_timeout: Duration,
    /// The largest message in either direction, for the stdio transport [`Session::connect`]
    /// starts; a transport given to [`Session::connect_with`] has its own.
    pub max_frame: usize,
    /// How many of the server's recent stderr lines [`Session::stderr`] keeps.
    pub stderr_lines: usize,
    pub client_info: Implementation,
    /// Skips detection; for tests that need one era from a dual-era server.
    pub force_era: Option<Era>,
    /// A legacy HTTP session an earlier connection left open, for [`Session::open`] to carry on
    /// instead of initializing: see [`Session::resumable`]. Ignored for any other endpoint.
    pub resume: Option<Resumable>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            probe_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(3600),
            max_frame: taskdeck_protocol::framing::DEFAULT_MAX_FRAME,
            stderr_lines: 1000,
            client_info: Implementation::new("taskdeck", env!("CARGO_PKG_VERSION")),
            force_era: None,
            resume: None,
        }
    }
}

/// The longest session id a connection keeps for a later one to resume.
const MAX_SESSION_ID: usize = 4096;

/// How a request ends other than with a result.
enum Refusal {
    /// The server answered with a JSON-RPC error.
    Rpc(ErrorObject),
    /// The answer (or what must be taken for it) could not be read.
    Unreadable(ResponseFault),
}

type Pending = oneshot::Sender<Result<Value, Refusal>>;

pub(crate) struct Shared {
    pub name: String,
    pub opts: SessionOptions,
    /// Held only through sessions: when the last one goes, the transport goes, and with it a
    /// server process.
    transport: Box<dyn Transport>,
    pending: Mutex<HashMap<RequestId, (String, Pending)>>,
    next_id: AtomicI64,
    pub(crate) state: Mutex<State>,
    pub(crate) handler: Arc<dyn SessionHandler>,
    stderr: Mutex<StderrLog>,
}

/// The last lines a server wrote to stderr, bounded in count (the transport bounds their length).
#[derive(Debug)]
struct StderrLog {
    lines: VecDeque<String>,
    max_lines: usize,
}

impl StderrLog {
    fn new(max_lines: usize) -> Self {
        Self { lines: VecDeque::new(), max_lines: max_lines.max(1) }
    }

    fn push(&mut self, line: String) {
        if self.lines.len() == self.max_lines {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }

    fn tail(&self, n: usize) -> Vec<String> {
        self.lines.iter().skip(self.lines.len().saturating_sub(n)).cloned().collect()
    }
}

#[derive(Default)]
pub(crate) struct State {
    pub dead: Option<ClientError>,
    pub info: Option<ServerInfo>,
    pub tools: Option<Vec<Tool>>,
    pub tracker: TaskTracker,
    /// Open legacy questions: the server's request id and the task it belongs to.
    pub questions: HashMap<RequestId, Option<String>>,
    /// Questions the server made tasks on Taskdeck's side (legacy `params.task`).
    pub(crate) hosted: crate::hosted::HostedTasks,
    pub resumption: Resumption,
    /// `tools/call` requests in flight that `notifications/cancelled` may stop, by their progress
    /// token (`crate::tasks`): plain calls, and modern calls not yet answered with a task.
    pub calls: HashMap<String, RequestId>,
    /// Open `subscriptions/listen` requests for task statuses, by request id (`crate::follow`).
    pub subscriptions: HashMap<RequestId, Subscribed>,
    /// Whether the server takes task subscriptions: unknown until one was tried, `false` once it
    /// refused one, so later follows poll without asking again.
    pub push: Option<bool>,
    /// Modern: the log level every request asks for in its `_meta` (`Session::set_log_level`);
    /// without one the server sends no log entries.
    pub log_level: Option<String>,
}

/// One open task subscription: where its acknowledgement and its statuses go.
pub(crate) struct Subscribed {
    /// The task ids the acknowledgement accepted, once it comes.
    pub ack: Option<oneshot::Sender<Vec<String>>>,
    pub statuses: tokio::sync::mpsc::UnboundedSender<TaskSnapshot>,
}

/// A connected server. Cheap to clone; the connection is closed (a server process killed) when
/// the last clone is dropped.
#[derive(Clone)]
pub struct Session {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Session {
    /// Starts a stdio server, detects its era and completes the handshake.
    pub async fn connect(
        spec: &ServerSpec,
        opts: SessionOptions,
        handler: Arc<dyn SessionHandler>,
    ) -> Result<Session, ClientError> {
        let connection = StdioTransport::spawn(spec, opts.max_frame)?;
        Self::connect_with(connection, opts, handler).await
    }

    /// Reaches the server wherever it is (a local process, a remote endpoint), detects its era
    /// and completes the handshake.
    ///
    /// With [`SessionOptions::resume`] for a remote endpoint, the stored legacy session is carried
    /// on instead: no era detection (its `server/discover` probe would go out without the
    /// session, and the era is known) and no `initialize`, but one `tools/list` on the session to
    /// be sure the server still knows it. If it does not (a 404, or any failure of that request),
    /// the connection is made afresh within this call, and [`Session::resumption`] says why.
    pub async fn open(
        endpoint: &Endpoint,
        opts: SessionOptions,
        handler: Arc<dyn SessionHandler>,
    ) -> Result<Session, ClientError> {
        let mut resumption = Resumption::NotAsked;
        // An era pinned since the session was stored wins: that session is of the other era.
        if let (Endpoint::Http(spec), Some(stored)) = (endpoint, &opts.resume)
            && stored.info.era == Era::Legacy
            && opts.force_era.is_none_or(|era| era == Era::Legacy)
        {
            match Self::resume(spec, stored, &opts, handler.clone()).await {
                Ok(session) => return Ok(session),
                Err(e) => {
                    tracing::info!(server = %spec.name, "the stored HTTP session cannot be resumed, initializing afresh: {e}");
                    resumption = Resumption::Gone { reason: e.to_string() };
                }
            }
        }
        let connection = endpoint.connect(opts.max_frame)?;
        // A legacy server over HTTP answers the `server/discover` probe at once, with an HTTP
        // error: there, silence means a slow server (a cold start, a busy machine), not a legacy
        // one, and taking it for legacy would run its tasks without the tasks extension. The
        // short probe is for stdio, where a legacy server may leave an unknown request unanswered.
        let opts = match endpoint {
            Endpoint::Http(_) => SessionOptions { probe_timeout: opts.probe_timeout.max(opts.request_timeout), ..opts },
            Endpoint::Stdio(_) => opts,
        };
        let session = Self::connect_with(connection, opts, handler).await?;
        lock(&session.shared.state).resumption = resumption;
        Ok(session)
    }

    /// Carries on `stored` and checks it is alive. What the server sends meanwhile reaches
    /// `handler` (a task's status, say), except the end of a session that turned out to be gone:
    /// that session was never the caller's.
    async fn resume(
        spec: &crate::HttpSpec,
        stored: &Resumable,
        opts: &SessionOptions,
        handler: Arc<dyn SessionHandler>,
    ) -> Result<Session, ClientError> {
        let connection =
            HttpTransport::resume(spec, opts.max_frame, &stored.session_id, &stored.info.protocol_version)?;
        let gate = Arc::new(ProbeGate { inner: handler, mode: AtomicU8::new(ProbeGate::PROBING) });
        let session = Self::start(connection, opts.clone(), gate.clone());
        {
            let mut state = lock(&session.shared.state);
            state.info = Some(stored.info.clone());
            state.resumption = Resumption::Resumed;
        }
        crate::hosted::carry(&session.shared, stored.hosted.clone());
        match session.list_tools().await {
            Ok(_) if session.dead().is_none() => {
                gate.mode.store(ProbeGate::OPEN, Ordering::SeqCst);
                tracing::debug!(server = %spec.name, "resumed the stored HTTP session");
                Ok(session)
            }
            outcome => {
                gate.mode.store(ProbeGate::SHUT, Ordering::SeqCst);
                session.shared.transport.kill();
                Err(outcome.err().or_else(|| session.dead()).unwrap_or_else(|| ClientError::ServerExited {
                    server: spec.name.clone(),
                    reason: "the connection closed".into(),
                }))
            }
        }
    }

    /// Detects the era of the server at the other end of `connection` and completes the
    /// handshake, whatever carries the messages.
    pub async fn connect_with(
        connection: Connection,
        opts: SessionOptions,
        handler: Arc<dyn SessionHandler>,
    ) -> Result<Session, ClientError> {
        let session = Self::start(connection, opts, handler);
        match session.handshake().await {
            Ok(info) => {
                lock(&session.shared.state).info = Some(info);
                Ok(session)
            }
            Err(e) => {
                session.shared.transport.kill();
                Err(e)
            }
        }
    }

    /// The session over `connection`, its reader running, before any handshake.
    fn start(connection: Connection, opts: SessionOptions, handler: Arc<dyn SessionHandler>) -> Session {
        let Connection { transport, frames } = connection;
        let identity = transport.identity().clone();
        tracing::debug!(server = %identity.name, transport = identity.kind, peer = %identity.peer, pid = ?identity.pid, "connecting");
        let shared = Arc::new(Shared {
            name: identity.name,
            stderr: Mutex::new(StderrLog::new(opts.stderr_lines)),
            opts,
            transport,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            state: Mutex::new(State::default()),
            handler,
        });
        tokio::spawn(read_loop(Arc::downgrade(&shared), frames));
        Session { shared }
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn info(&self) -> ServerInfo {
        lock(&self.shared.state).info.clone().expect("a connected session has server info")
    }

    /// Read in place: [`Session::info`] clones the server's capabilities and instructions, and a
    /// plain call's path asks for the era half a dozen times.
    pub fn era(&self) -> Era {
        self.era_and_tasks().0
    }

    /// The era, and whether tools can run as tasks here, without cloning [`ServerInfo`].
    pub(crate) fn era_and_tasks(&self) -> (Era, bool) {
        let state = lock(&self.shared.state);
        let info = state.info.as_ref().expect("a connected session has server info");
        (info.era, info.tasks)
    }

    /// The server's process, when its transport runs one.
    pub fn pid(&self) -> Option<u32> {
        self.shared.transport.identity().pid
    }

    /// Why the session is dead, if it is.
    pub fn dead(&self) -> Option<ClientError> {
        lock(&self.shared.state).dead.clone()
    }

    /// The server's recent stderr lines, oldest first.
    pub fn stderr(&self) -> Vec<String> {
        lock(&self.shared.stderr).lines()
    }

    /// Kills the server. Pending requests fail with [`ClientError::ServerExited`].
    pub fn kill(&self) {
        self.shared.transport.kill();
    }

    /// Closes the connection after what is already queued (a stdio server's stdin first) and
    /// gives the server `grace` to exit before killing it. A remote server's session is ended.
    pub async fn shutdown(&self, grace: Duration) {
        self.shared.transport.close(grace).await;
    }

    /// Closes the connection after what is already queued but leaves a remote server's session
    /// open, so that the tasks it keeps there can be followed by a later connection that resumes
    /// it (see [`Session::resumable`]). Like [`Session::shutdown`] for a server without one.
    pub async fn detach(&self, grace: Duration) {
        self.shared.transport.detach(grace).await;
    }

    /// What a later connection needs to carry on this session instead of initializing anew: set
    /// for a legacy server whose transport keeps a session beyond the connection (HTTP), while
    /// the server has not said it is gone. A modern server has no session: its tasks are found by
    /// id alone.
    pub fn resumable(&self) -> Option<Resumable> {
        let info = lock(&self.shared.state).info.clone()?;
        if info.era != Era::Legacy {
            return None;
        }
        // The id is the server's to choose: one past any sensible size is not kept for it.
        let session_id = self.shared.transport.session_id().filter(|id| id.len() <= MAX_SESSION_ID)?;
        Some(Resumable { session_id, info, hosted: Vec::new() })
    }

    /// Whether this connection carried on a stored session, or why it could not.
    pub fn resumption(&self) -> Resumption {
        lock(&self.shared.state).resumption.clone()
    }

    /// Takes up a question (`elicitation/create` request `id`, for the server's task `task_id`)
    /// that the server asked on this session before this connection resumed it: the server's
    /// request is open on the session, not on a connection, so it can still be answered here.
    /// Refused (`false`) unless this connection resumed a stored session.
    pub fn carry_question(&self, id: RequestId, task_id: Option<String>) -> bool {
        let mut state = lock(&self.shared.state);
        if state.resumption != Resumption::Resumed || state.dead.is_some() {
            return false;
        }
        state.questions.entry(id).or_insert(task_id);
        true
    }

    /// A liveness check: a hung server fails it with [`ClientError::Timeout`].
    pub async fn ping(&self, timeout: Duration) -> Result<(), ClientError> {
        self.request(methods::PING, json!({}), Some(timeout)).await.map(|_| ())
    }

    /// Sends a request, adding the per-request `_meta` in the modern era.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let params = self.with_era_meta(params);
        self.request_raw(method, params, timeout).await
    }

    /// `params` with the per-request `_meta` of the modern era: the protocol version, the client's
    /// capabilities and info, and the log level asked for. Unchanged in the legacy era.
    fn with_era_meta(&self, params: Value) -> Value {
        let (era, level) = {
            let state = lock(&self.shared.state);
            (state.info.as_ref().map(|i| i.era), state.log_level.clone())
        };
        if era != Some(Era::Modern) {
            return params;
        }
        let mut params = with_request_meta(params, modern::PROTOCOL_VERSION, &self.shared.opts.client_info);
        if let Some(level) = level
            && let Some(m) = params.get_mut("_meta").and_then(Value::as_object_mut)
        {
            m.entry(taskdeck_protocol::meta::LOG_LEVEL).or_insert(Value::String(level));
        }
        params
    }

    pub(crate) async fn request_raw(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        self.request_raw_as(self.next_request_id(), method, params, timeout).await
    }

    /// The id the next request will go out with, for a caller that must know it before sending
    /// (to cancel it later): pass it to [`Session::request_as`].
    pub(crate) fn next_request_id(&self) -> RequestId {
        RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// [`Session::request`] under an id from [`Session::next_request_id`].
    pub(crate) async fn request_as(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let params = self.with_era_meta(params);
        self.request_raw_as(id, method, params, timeout).await
    }

    /// A request whose answer nobody waits for any more: a late answer is discarded as unknown.
    pub(crate) fn forget_request(&self, id: &RequestId) {
        lock(&self.shared.pending).remove(id);
    }

    async fn request_raw_as(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let s = &self.shared;
        let (tx, rx) = oneshot::channel();
        {
            // Checked under the pending lock so a concurrent death cannot strand this request.
            let mut pending = lock(&s.pending);
            if let Some(dead) = lock(&s.state).dead.clone() {
                return Err(dead);
            }
            pending.insert(id.clone(), (method.to_owned(), tx));
        }
        if let Err(e) = self.send(&Message::request(id.clone(), method, params)) {
            lock(&s.pending).remove(&id);
            return Err(e);
        }
        let answer = match timeout {
            Some(t) => match tokio::time::timeout(t, rx).await {
                Ok(a) => a,
                Err(_) => {
                    lock(&s.pending).remove(&id);
                    // Tell the server we gave up, so it can stop working on it.
                    let _ = self.send(&Message::notification(
                        methods::CANCELLED,
                        Some(json!({"requestId": id, "reason": "timed out"})),
                    ));
                    return Err(ClientError::Timeout { server: s.name.clone(), method: method.into(), timeout: t });
                }
            },
            None => rx.await,
        };
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(Refusal::Rpc(error))) => {
                Err(ClientError::Rpc { server: s.name.clone(), method: method.into(), error: Box::new(error) })
            }
            Ok(Err(Refusal::Unreadable(fault))) => {
                Err(ClientError::UnreadableResponse { server: s.name.clone(), method: method.into(), fault })
            }
            // The sender is dropped only when the session dies.
            Err(_) => Err(lock(&s.state).dead.clone().unwrap_or_else(|| ClientError::ServerExited {
                server: s.name.clone(),
                reason: "the connection closed".into(),
            })),
        }
    }

    pub(crate) fn send(&self, msg: &Message) -> Result<(), ClientError> {
        let s = &self.shared;
        if let Some(dead) = lock(&s.state).dead.clone() {
            return Err(dead);
        }
        s.transport.send(msg.to_line()).map_err(|e| match e {
            SendError::TooLarge { limit } => ClientError::TooLarge { server: s.name.clone(), limit },
            SendError::Closed { reason } => ClientError::ServerExited { server: s.name.clone(), reason },
        })
    }

    /// Era detection as the 2026-07-28 stdio binding describes it: probe with `server/discover`;
    /// a modern answer or a modern-only error means modern; anything else, or silence, means legacy.
    async fn handshake(&self) -> Result<ServerInfo, ClientError> {
        let opts = &self.shared.opts;
        let name = self.shared.name.clone();
        let era = match opts.force_era {
            Some(era) => era,
            None => {
                let params = with_request_meta(json!({}), modern::PROTOCOL_VERSION, &opts.client_info);
                match self.request_raw(methods::SERVER_DISCOVER, params, Some(opts.probe_timeout)).await {
                    // Only a DiscoverResult (or a modern error, below) marks a modern server: a
                    // 2025-era server that answers every method it does not know with an empty
                    // result is a legacy one, as the modern spec's backward-compatibility rules say.
                    Ok(result) => match serde_json::from_value::<DiscoverResult>(result) {
                        Err(e) => {
                            tracing::debug!(server = %name, "server/discover answered without a DiscoverResult ({e}): legacy");
                            Era::Legacy
                        }
                        Ok(discover) => {
                            if discover.supported_versions.iter().any(|v| v == modern::PROTOCOL_VERSION) {
                                return Ok(modern_info(discover));
                            }
                            if !discover.supported_versions.iter().any(|v| v == legacy::PROTOCOL_VERSION) {
                                return Err(no_common_version(&name, &discover.supported_versions));
                            }
                            Era::Legacy
                        }
                    },
                    Err(ClientError::Rpc { error, .. }) if error.code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
                        let supported = error
                            .data
                            .clone()
                            .and_then(|d| serde_json::from_value::<UnsupportedVersionData>(d).ok())
                            .map(|d| d.supported)
                            .unwrap_or_default();
                        if !supported.iter().any(|v| v == legacy::PROTOCOL_VERSION) {
                            return Err(no_common_version(&name, &supported));
                        }
                        Era::Legacy
                    }
                    Err(ClientError::Rpc { error, .. }) if codes::is_modern_only(error.code) => Era::Modern,
                    Err(e @ (ClientError::ServerExited { .. } | ClientError::TooLarge { .. })) => return Err(e),
                    Err(_) => Era::Legacy,
                }
            }
        };
        match era {
            Era::Legacy => self.initialize().await,
            Era::Modern => {
                // Forced or recognised modern without a discover result: ask again for capabilities.
                let params = with_request_meta(json!({}), modern::PROTOCOL_VERSION, &opts.client_info);
                let result = self.request_raw(methods::SERVER_DISCOVER, params, Some(opts.request_timeout)).await?;
                let discover: DiscoverResult = serde_json::from_value(result).map_err(|e| ClientError::Handshake {
                    server: name.clone(),
                    detail: format!("invalid server/discover result: {e}"),
                })?;
                Ok(modern_info(discover))
            }
        }
    }

    async fn initialize(&self) -> Result<ServerInfo, ClientError> {
        let opts = &self.shared.opts;
        let params = legacy::initialize::InitializeParams {
            protocol_version: legacy::PROTOCOL_VERSION.into(),
            capabilities: legacy::initialize::client_capabilities(),
            client_info: opts.client_info.clone(),
            extra: Default::default(),
        };
        let result = self
            .request_raw(
                methods::INITIALIZE,
                serde_json::to_value(params).unwrap_or_default(),
                Some(opts.request_timeout),
            )
            .await?;
        let init: legacy::initialize::InitializeResult =
            serde_json::from_value(result).map_err(|e| ClientError::Handshake {
                server: self.shared.name.clone(),
                detail: format!("invalid initialize result: {e}"),
            })?;
        self.send(&Message::notification(methods::INITIALIZED, None))?;
        // Tasks exist only in 2025-11-25; an older server may still answer tools/call plainly.
        let tasks = init.protocol_version == legacy::PROTOCOL_VERSION
            && legacy::initialize::server_supports_task_tools(&init.capabilities);
        Ok(ServerInfo {
            era: Era::Legacy,
            protocol_version: init.protocol_version,
            name: Some(init.server_info.name),
            version: Some(init.server_info.version),
            instructions: init.instructions,
            capabilities: init.capabilities,
            tasks,
        })
    }

    /// The server's tools, from the cache when it is fresh. Follows `nextCursor`.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        if let Some(tools) = lock(&self.shared.state).tools.clone() {
            return Ok(tools);
        }
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // A server that keeps returning cursors must not keep us here forever.
        for _ in 0..1000 {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let result = self.request(methods::TOOLS_LIST, params, Some(self.shared.opts.request_timeout)).await?;
            let page: taskdeck_protocol::types::ListToolsResult =
                serde_json::from_value(result).map_err(|e| self.invalid(methods::TOOLS_LIST, e))?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(c) if Some(&c) != cursor.as_ref() => cursor = Some(c),
                _ => break,
            }
        }
        lock(&self.shared.state).tools = Some(tools.clone());
        Ok(tools)
    }

    pub(crate) fn invalid(&self, method: &str, e: impl std::fmt::Display) -> ClientError {
        ClientError::InvalidResponse { server: self.shared.name.clone(), method: method.into(), detail: e.to_string() }
    }
}

fn modern_info(d: DiscoverResult) -> ServerInfo {
    ServerInfo {
        era: Era::Modern,
        protocol_version: modern::PROTOCOL_VERSION.into(),
        name: d.server_info.as_ref().map(|i| i.name.clone()),
        version: d.server_info.as_ref().map(|i| i.version.clone()),
        instructions: d.instructions.clone(),
        tasks: d.supports_tasks(),
        capabilities: d.capabilities,
    }
}

fn no_common_version(server: &str, supported: &[String]) -> ClientError {
    ClientError::Handshake {
        server: server.into(),
        detail: format!(
            "no protocol version in common: the server supports {supported:?}, Taskdeck speaks {:?} and {:?}",
            legacy::PROTOCOL_VERSION,
            modern::PROTOCOL_VERSION
        ),
    }
}

/// Dispatches what the transport received, in order. Holds the session only while it handles an
/// item, so that dropping the last session still ends the connection.
async fn read_loop(shared: Weak<Shared>, mut frames: Box<dyn FrameSource>) {
    while let Some(item) = frames.receive().await {
        let Some(shared) = shared.upgrade() else { return };
        match item {
            Received::Message(text) => dispatch(&shared, &text, None),
            Received::OnStream { text, request } => dispatch(&shared, &text, Some(&request)),
            Received::Unreadable { error, start } => {
                let fault = match &error {
                    FrameError::Line(taskdeck_protocol::framing::FrameError::TooLong { limit }) => {
                        ResponseFault::TooLarge { limit: *limit }
                    }
                    other => ResponseFault::Unreadable { detail: other.to_string() },
                };
                unreadable(&shared, &start, fault, error.to_string());
            }
            Received::Stderr(line) => {
                lock(&shared.stderr).push(line.clone());
                shared.handler.on_event(SessionEvent::Stderr(line));
            }
            Received::Closed { reason } => {
                mark_dead(&shared, with_stderr_tail(&shared, reason));
                // A peer that stopped reading may live on; nothing can reach it any more.
                shared.transport.kill();
            }
        }
    }
    if let Some(shared) = shared.upgrade() {
        mark_dead(&shared, with_stderr_tail(&shared, "the connection closed".into()));
    }
}

/// A server's last stderr lines usually say why it ended, but they are its own words, secrets
/// included, and the reason ends up in the error a task keeps for good. So the reason points to the
/// server's log, which has the lines (and is rotated away), instead of quoting them.
fn with_stderr_tail(shared: &Shared, mut reason: String) -> String {
    if !lock(&shared.stderr).tail(1).is_empty() {
        reason.push_str("; its last stderr lines are in the server's log");
    }
    reason
}

pub(crate) fn mark_dead(shared: &Shared, reason: String) {
    let err = ClientError::ServerExited { server: shared.name.clone(), reason: reason.clone() };
    {
        let mut pending = lock(&shared.pending);
        let mut state = lock(&shared.state);
        if state.dead.is_some() {
            return;
        }
        state.dead = Some(err);
        state.questions.clear();
        // Dropping the senders wakes every waiter, which then reads `dead`.
        pending.clear();
    }
    tracing::warn!(server = %shared.name, %reason, "server session closed");
    shared.handler.on_event(SessionEvent::Closed { reason });
}

fn discard(shared: &Shared, reason: Discard, detail: String) {
    tracing::warn!(server = %shared.name, ?reason, %detail, "server message set aside");
    shared.handler.on_event(SessionEvent::Discarded { reason, detail });
}

/// `on`: the request whose stream carried it, where the transport knows.
fn dispatch(shared: &Shared, text: &str, on: Option<&RequestId>) {
    match Message::parse(text) {
        Ok(Message::Response(r)) => on_response(shared, r),
        Ok(Message::Request(r)) => on_request(shared, r),
        Ok(Message::Notification(n)) => on_notification(shared, n, on),
        Err(e) => {
            let detail = format!("{e}: {}", truncate(text, 200));
            let start = &text[..floor_char_boundary(text, FRAME_START)];
            unreadable(shared, start, ResponseFault::Unreadable { detail: e.to_string() }, detail);
        }
    }
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// A frame that could not be read as a message. If it was an answer, the request it answered
/// fails with `fault` instead of waiting for an answer that has come and gone: the one its start
/// names, or, when the start shows a response without naming the request, every request open.
fn unreadable(shared: &Shared, start: &str, fault: ResponseFault, detail: String) {
    let failed: Vec<(RequestId, String, Pending)> = match frame_answers(start) {
        Answers::Request(id) => lock(&shared.pending).remove(&id).map(|(m, tx)| vec![(id, m, tx)]).unwrap_or_default(),
        Answers::Unnamed => lock(&shared.pending).drain().map(|(id, (m, tx))| (id, m, tx)).collect(),
        Answers::Nothing => Vec::new(),
    };
    discard(shared, Discard::Malformed, detail);
    for (id, method, tx) in failed {
        tracing::warn!(server = %shared.name, %id, %method, %fault, "an answer that could not be read fails its request");
        let _ = tx.send(Err(Refusal::Unreadable(fault.clone())));
    }
}

/// Which request a frame's start shows it answered.
#[derive(Debug, PartialEq)]
pub(crate) enum Answers {
    Request(RequestId),
    /// A response (it has a `result` or `error`) whose `id` is not in the part read.
    Unnamed,
    /// Not a response: not a JSON object, or a notification or request (it has a `method`).
    Nothing,
}

/// Reads the top-level members of a JSON object's start, as far as it goes, without parsing
/// values it does not need: bounded by the text given, whatever the nesting inside.
pub(crate) fn frame_answers(start: &str) -> Answers {
    let b = start.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // The end of the string starting at `i` (a quote), or None if it runs past the text.
    let string_end = |mut i: usize| -> Option<usize> {
        i += 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return Answers::Nothing;
    }
    i += 1;
    let (mut id, mut response) = (None, false);
    loop {
        ws(&mut i);
        if b.get(i) != Some(&b'"') {
            break;
        }
        let Some(key_end) = string_end(i) else { break };
        let key = &start[i + 1..key_end - 1];
        i = key_end;
        ws(&mut i);
        if b.get(i) != Some(&b':') {
            break;
        }
        i += 1;
        ws(&mut i);
        match key {
            "method" => return Answers::Nothing,
            "result" | "error" => response = true,
            _ => {}
        }
        // Skip the value: scalars and strings here; a nested value by depth.
        let value_start = i;
        let mut depth = 0usize;
        let mut complete = false;
        while i < b.len() {
            match b[i] {
                b'"' => match string_end(i) {
                    Some(e) => i = e,
                    None => {
                        i = b.len();
                        break;
                    }
                },
                b'{' | b'[' => {
                    depth += 1;
                    i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    i += 1;
                }
                b',' | b'}' if depth == 0 => {
                    complete = true;
                    break;
                }
                _ => i += 1,
            }
            if depth == 0 && i > value_start && matches!(b[i - 1], b'"' | b'}' | b']') {
                complete = i < b.len();
                break;
            }
        }
        if key == "id" && complete {
            id = serde_json::from_str::<RequestId>(start[value_start..i].trim()).ok();
        }
        if !complete {
            break;
        }
        ws(&mut i);
        if b.get(i) == Some(&b',') {
            i += 1;
        } else {
            break;
        }
    }
    match (id, response) {
        (Some(id), _) => Answers::Request(id),
        (None, true) => Answers::Unnamed,
        (None, false) => Answers::Nothing,
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn on_response(shared: &Shared, r: Response) {
    let Some(id) = r.id().cloned() else {
        // An error without an id: the server could not parse something we sent.
        if let Response::Error { error, .. } = r {
            discard(shared, Discard::UnknownResponse, format!("error without id: {error}"));
        }
        return;
    };
    let Some((method, tx)) = lock(&shared.pending).remove(&id) else {
        return discard(shared, Discard::UnknownResponse, format!("response to unknown request id {id}"));
    };
    if let (methods::TOOLS_CALL, Response::Result { result, .. }) = (method.as_str(), &r) {
        // Register the task before reading on: the server's next lines may already be about it.
        if let Some(handle) = task_handle(shared, result) {
            let early = lock(&shared.state).tracker.claim(&handle);
            if let Some(early) = early {
                shared.handler.on_event(SessionEvent::Task(Box::new(early)));
            }
        }
    }
    let _ = tx.send(match r {
        Response::Result { result, .. } => Ok(result),
        Response::Error { error, .. } => Err(Refusal::Rpc(error)),
    });
}

/// The task handle in a `tools/call` result, if the server made the call a task.
fn task_handle(shared: &Shared, result: &Value) -> Option<TaskSnapshot> {
    let era = lock(&shared.state).info.as_ref()?.era;
    match era {
        Era::Legacy if legacy::tasks::CreateTaskResult::matches(result) => {
            serde_json::from_value::<legacy::tasks::CreateTaskResult>(result.clone())
                .ok()
                .map(|c| TaskSnapshot::from_legacy(c.task))
        }
        Era::Modern if modern::tasks::is_create_task_result(result) => {
            serde_json::from_value::<modern::tasks::DetailedTask>(result.clone())
                .ok()
                .and_then(|d| TaskSnapshot::from_modern(d).ok())
        }
        _ => None,
    }
}

/// Whether the connection's session outlives it (a legacy HTTP session a later one may resume).
pub(crate) fn keeps_session(shared: &Shared) -> bool {
    shared.transport.session_id().is_some()
}

pub(crate) fn respond(shared: &Shared, msg: Message) {
    if let Err(e) = shared.transport.send(msg.to_line()) {
        tracing::warn!(server = %shared.name, error = %e, "could not answer a server request");
    }
}

fn on_request(shared: &Shared, r: Request) {
    match r.method.as_str() {
        methods::PING => respond(shared, Message::result(r.id, json!({}))),
        methods::ROOTS_LIST => {
            let roots = shared.handler.roots();
            respond(shared, Message::result(r.id, json!({ "roots": roots })));
        }
        methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE => {
            let task_id = meta::related_task_id(r.params.as_ref(), None).map(str::to_owned);
            let request = QuestionRequest { method: r.method, params: r.params.unwrap_or(Value::Null) };
            let q = Question::decode(QuestionKey::Request(r.id.clone()), task_id.clone(), request);
            if let Asks::Malformed { reason } = &q.asks {
                respond(shared, Message::error(Some(r.id), ErrorObject::new(codes::INVALID_PARAMS, reason.clone())));
                return;
            }
            // A server that asked for its question to run as a task here gets the handle at once.
            let hosted = q.request.params.get("task").filter(|t| t.is_object()).cloned();
            if let Some(task) = hosted {
                let Some(created) = crate::hosted::accept(shared, &r.id, &task) else {
                    let error = ErrorObject::new(
                        codes::INTERNAL_ERROR,
                        format!(
                            "Taskdeck already holds {} unanswered questions of this session as tasks; \
                             ask again once the user has answered some",
                            crate::hosted::MAX_HOSTED
                        ),
                    );
                    respond(shared, Message::error(Some(r.id), error));
                    return;
                };
                lock(&shared.state).questions.insert(r.id.clone(), task_id);
                respond(shared, Message::result(r.id.clone(), created));
            } else {
                lock(&shared.state).questions.insert(r.id.clone(), task_id);
            }
            shared.handler.on_event(SessionEvent::Question(q));
        }
        methods::TASKS_GET | methods::TASKS_RESULT | methods::TASKS_CANCEL => {
            if let Some(r) = crate::hosted::on_request(shared, r) {
                let error = ErrorObject::new(codes::INVALID_PARAMS, "no task with this id is hosted by Taskdeck");
                respond(shared, Message::error(Some(r.id), error));
            }
        }
        other => respond(
            shared,
            Message::error(
                Some(r.id),
                ErrorObject::new(codes::METHOD_NOT_FOUND, format!("Taskdeck does not serve {other}")),
            ),
        ),
    }
}

fn on_notification(shared: &Shared, n: Notification, on: Option<&RequestId>) {
    let params = n.params.clone().unwrap_or(Value::Null);
    match n.method.as_str() {
        methods::PROGRESS => match serde_json::from_value::<ProgressParams>(params) {
            Ok(p) => shared.handler.on_event(SessionEvent::Progress {
                token: p.progress_token,
                progress: p.progress,
                total: p.total,
                message: p.message,
            }),
            Err(e) => discard(shared, Discard::InvalidParams, format!("{}: {e}", n.method)),
        },
        methods::TASKS_STATUS | methods::TASKS_NOTIFICATION => {
            let snapshot = if n.method == methods::TASKS_STATUS {
                serde_json::from_value::<legacy::tasks::Task>(params)
                    .map(TaskSnapshot::from_legacy)
                    .map_err(|e| e.to_string())
            } else {
                serde_json::from_value::<modern::tasks::DetailedTask>(params)
                    .map_err(|e| e.to_string())
                    .and_then(TaskSnapshot::from_modern)
            };
            // A status on a task subscription goes to the follow that opened it.
            let subscription = meta::params_meta(n.params.as_ref())
                .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
                .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
            match snapshot {
                Ok(s) => {
                    let mut state = lock(&shared.state);
                    let verdict = state.tracker.observe(&s);
                    let follower = subscription.and_then(|id| state.subscriptions.get(&id)).map(|f| f.statuses.clone());
                    drop(state);
                    match verdict {
                        Verdict::Deliver => match follower {
                            Some(tx) => {
                                if let Err(e) = tx.send(s) {
                                    shared.handler.on_event(SessionEvent::Task(Box::new(e.0)));
                                }
                            }
                            None => shared.handler.on_event(SessionEvent::Task(Box::new(s))),
                        },
                        Verdict::Held => {
                            tracing::debug!(server = %shared.name, task = %s.task_id, "status for a task not yet known; held")
                        }
                        Verdict::Discard(reason, detail) => discard(shared, reason, detail),
                    }
                }
                Err(e) => discard(shared, Discard::InvalidParams, format!("{}: {e}", n.method)),
            }
        }
        methods::SUBSCRIPTIONS_ACKNOWLEDGED => {
            let id = meta::params_meta(n.params.as_ref())
                .and_then(|m| m.get(meta::SUBSCRIPTION_ID))
                .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
            let accepted: Vec<String> = params
                .get("notifications")
                .and_then(|f| f.get("taskIds"))
                .and_then(Value::as_array)
                .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
            let ack = id.and_then(|id| lock(&shared.state).subscriptions.get_mut(&id).and_then(|s| s.ack.take()));
            match ack {
                Some(ack) => {
                    let _ = ack.send(accepted);
                }
                None => discard(shared, Discard::InvalidParams, format!("{} for no open subscription", n.method)),
            }
        }
        methods::LOG_MESSAGE => match serde_json::from_value(params) {
            Ok(entry) => {
                // The call whose stream it came on, by its progress token (the host's task id).
                let call = on.and_then(|id| {
                    lock(&shared.state).calls.iter().find(|(_, r)| *r == id).map(|(token, _)| token.clone())
                });
                shared.handler.on_event(SessionEvent::Log { entry, call })
            }
            Err(e) => discard(shared, Discard::InvalidParams, format!("{}: {e}", n.method)),
        },
        methods::TOOLS_LIST_CHANGED => {
            lock(&shared.state).tools = None;
            shared.handler.on_event(SessionEvent::ToolsChanged);
        }
        methods::ELICITATION_COMPLETE => match params.get("elicitationId").and_then(Value::as_str) {
            Some(id) => shared.handler.on_event(SessionEvent::ElicitationComplete { elicitation_id: id.to_owned() }),
            None => discard(shared, Discard::InvalidParams, format!("{} without elicitationId", n.method)),
        },
        methods::CANCELLED => {
            // The server withdrew one of its own requests: a question nobody needs to answer now.
            let id = params.get("requestId").cloned().and_then(|v| serde_json::from_value::<RequestId>(v).ok());
            if let Some(id) = id
                && lock(&shared.state).questions.remove(&id).is_some()
            {
                shared.handler.on_event(SessionEvent::QuestionWithdrawn { key: QuestionKey::Request(id) });
            }
        }
        other => tracing::debug!(server = %shared.name, method = other, "notification ignored"),
    }
}

impl Session {
    pub(crate) fn handler(&self) -> &Arc<dyn SessionHandler> {
        &self.shared.handler
    }

    /// Answers an open legacy question by responding to the server's request: with its result, or
    /// with an error (a declined sampling request, which has no refusal in its result).
    pub(crate) fn respond_to_question(&self, id: &RequestId, reply: crate::Reply) -> Result<(), ClientError> {
        let task_id = lock(&self.shared.state)
            .questions
            .remove(id)
            .ok_or_else(|| ClientError::NoSuchQuestion { server: self.shared.name.clone(), key: id.to_string() })?;
        if crate::hosted::complete(&self.shared, id, &reply) {
            return Ok(());
        }
        let mut result = match reply {
            crate::Reply::Result(result) => result,
            crate::Reply::Refused(error) => return self.send(&Message::error(Some(id.clone()), error)),
        };
        if let (Some(task_id), Some(obj)) = (task_id, result.as_object_mut()) {
            let meta_entry = obj.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta_entry.as_object_mut() {
                m.insert(meta::RELATED_TASK.into(), json!({ "taskId": task_id }));
            }
        }
        self.send(&Message::result(id.clone(), result))
    }

    pub(crate) fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.shared.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_frame_is_tied_to_the_request_its_start_names() {
        let id = |n| Answers::Request(RequestId::Number(n));
        assert_eq!(frame_answers(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xx"#), id(7));
        assert_eq!(frame_answers(r#" { "id" : "task-1" , "result": [[[["#), Answers::Request("task-1".into()));
        assert_eq!(frame_answers(r#"{"jsonrpc":"2.0","result":{"a":"}"},"id":3}"#), id(3));
        assert_eq!(frame_answers(r#"{"error":{"code":1,"message":"\"id\":9"},"id":4"#), Answers::Unnamed);
        assert_eq!(frame_answers(r#"{"jsonrpc":"2.0","result":{"text":"xxxxxxxx"#), Answers::Unnamed);
        assert_eq!(frame_answers(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"#), Answers::Nothing);
        assert_eq!(frame_answers(r#"{"id":5,"method":"elicitation/create","params":{"#), Answers::Nothing);
        assert_eq!(frame_answers("this is not json"), Answers::Nothing);
        assert_eq!(frame_answers(""), Answers::Nothing);
        let deep = format!(r#"{{"jsonrpc":"2.0","id":12,"result":{}"#, "[".repeat(100_000));
        assert_eq!(frame_answers(&deep[..FRAME_START]), id(12));
    }
}
