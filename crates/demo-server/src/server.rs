//! What every connection shares (the task store, the workers' wakers, progress) and what each
//! connection has of its own (its era, its outbound queue, its open questions).
//!
//! A connection is a pair of channels as far as the era handlers can tell: messages are handed to
//! [`dispatch`], and whatever the handlers and workers want to say to that client goes into the
//! connection's outbound queue. stdio has one connection per process; HTTP has one per legacy
//! session and one per modern request, all on the same [`Server`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use taskdeck_protocol::modern::request_meta::RequestEnvelope;
use taskdeck_protocol::modern::tasks::TaskProgress;
use taskdeck_protocol::{Era, ErrorObject, Message, MessageError, Request, RequestId, Response, codes, methods};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio::task::AbortHandle;

use crate::store::{Store, StoreError, TaskRow};
use crate::{legacy, modern};

pub const SERVER_NAME: &str = "taskdeck-demo-server";

#[derive(Debug, Clone)]
pub struct Config {
    pub state_dir: PathBuf,
    pub poll_interval_ms: i64,
    pub default_ttl_ms: i64,
    pub max_ttl_ms: i64,
    pub list_page_size: usize,
    pub max_line_bytes: usize,
    pub purge_interval: Duration,
    /// `--listen-for-ms`: subscriptions are dropped after this long (testing clients).
    pub listen_for_ms: Option<u64>,
    /// `--handle-delay-ms`: legacy task handles come this late (testing clients).
    pub handle_delay_ms: Option<u64>,
    /// `--handle-despite-cancel`: and a cancel meanwhile does not stop them.
    pub handle_despite_cancel: bool,
}

/// Which legacy tasks a connection hears about (status notifications, questions).
pub enum Interest {
    /// stdio: the one client of the process hears about every legacy task, including those it
    /// created before a restart.
    All,
    /// An HTTP session hears only about tasks it created or asked about, so one session never
    /// learns another's task ids. Bounded: the oldest are forgotten first.
    Known { ids: HashSet<String>, order: VecDeque<String> },
}

/// How many task ids an HTTP session keeps an interest in.
const MAX_KNOWN_TASKS: usize = 4096;

impl Interest {
    pub fn known() -> Self {
        Interest::Known { ids: HashSet::new(), order: VecDeque::new() }
    }

    fn add(&mut self, task_id: &str) {
        let Interest::Known { ids, order } = self else { return };
        if ids.contains(task_id) {
            return;
        }
        if order.len() >= MAX_KNOWN_TASKS
            && let Some(old) = order.pop_front()
        {
            ids.remove(&old);
        }
        ids.insert(task_id.to_owned());
        order.push_back(task_id.to_owned());
    }

    fn contains(&self, task_id: &str) -> bool {
        match self {
            Interest::All => true,
            Interest::Known { ids, .. } => ids.contains(task_id),
        }
    }
}

/// What this connection has told us about itself.
pub struct ConnState {
    pub era: Option<Era>,
    /// Legacy: the client declared `elicitation` in `initialize`.
    pub legacy_elicitation: bool,
    /// Legacy: the client declared `sampling` in `initialize`.
    pub legacy_sampling: bool,
    /// Legacy `elicitation/create` requests awaiting an answer: request id → (task id, question key).
    pub outstanding: HashMap<String, (String, String)>,
    /// Legacy: the level `logging/setLevel` asked for; every entry is sent until it is called.
    pub log_level: Option<String>,
    interest: Interest,
}

/// The legacy connection that created a task in this process, and the progress token it gave.
/// A token from an earlier process means nothing to the current client, so it is never revived
/// from the store.
struct Owner {
    conn: Weak<Conn>,
    token: Option<Value>,
    /// Modern: the log level the creating request asked for (none: no entries).
    log_level: Option<String>,
}

pub struct Server {
    pub cfg: Config,
    store: Mutex<Store>,
    /// Fired with a task id after every change a client could observe; receivers re-read the store.
    pub events: broadcast::Sender<String>,
    wakers: Mutex<HashMap<String, Arc<Notify>>>,
    /// Modern progress, reported in `tasks/get` `_meta`; memory only, rebuilt from the checkpoint.
    progress: Mutex<HashMap<String, TaskProgress>>,
    /// When each task's subscribers last heard of its progress.
    progress_pushed: Mutex<HashMap<String, std::time::Instant>>,
    owners: Mutex<HashMap<String, Owner>>,
    seq: AtomicU64,
}

/// How often a modern task's subscribers hear of its progress at most.
pub const PROGRESS_PUSH_EVERY: Duration = Duration::from_millis(50);

/// Outbound queue depth. Responses wait for room; progress is dropped when the client lags.
pub const OUT_QUEUE: usize = 1024;

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not take the whole server down with a poisoned lock.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn internal(e: StoreError) -> ErrorObject {
    tracing::error!("{e}");
    ErrorObject::new(codes::INTERNAL_ERROR, format!("internal error: {e}"))
}

pub fn invalid_params(msg: impl Into<String>) -> ErrorObject {
    ErrorObject::new(codes::INVALID_PARAMS, msg)
}

pub fn not_found(task_id: &str) -> ErrorObject {
    invalid_params(format!("Failed to retrieve task: Task not found ({task_id})"))
}

impl Server {
    pub fn new(cfg: Config, store: Store) -> Arc<Self> {
        Arc::new(Self {
            cfg,
            store: Mutex::new(store),
            events: broadcast::channel(1024).0,
            wakers: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            progress_pushed: Mutex::new(HashMap::new()),
            owners: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(1),
        })
    }

    pub fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    pub fn changed(&self, task_id: &str) {
        // No receivers is normal (nobody waiting); never an error worth reporting.
        let _ = self.events.send(task_id.to_owned());
    }

    pub fn register_waker(&self, task_id: &str) -> Arc<Notify> {
        lock(&self.wakers).entry(task_id.to_owned()).or_default().clone()
    }

    pub fn drop_waker(&self, task_id: &str) {
        lock(&self.wakers).remove(task_id);
        lock(&self.progress).remove(task_id);
        lock(&self.owners).remove(task_id);
    }

    pub fn wake(&self, task_id: &str) {
        if let Some(n) = lock(&self.wakers).get(task_id) {
            n.notify_one();
        }
    }

    pub fn set_progress(&self, task_id: &str, p: TaskProgress) {
        lock(&self.progress).insert(task_id.to_owned(), p);
    }

    /// Tells the task's subscribers its progress moved, at most once per [`PROGRESS_PUSH_EVERY`]:
    /// a fast count must not become a flood of notifications (the polls show the rest).
    pub fn progress_changed(&self, task_id: &str) {
        let now = std::time::Instant::now();
        let due = {
            let mut last = lock(&self.progress_pushed);
            match last.get(task_id) {
                Some(at) if now.duration_since(*at) < PROGRESS_PUSH_EVERY => false,
                _ => {
                    last.insert(task_id.to_owned(), now);
                    true
                }
            }
        };
        if due {
            self.changed(task_id);
        }
    }

    pub fn progress_of(&self, task_id: &str) -> Option<TaskProgress> {
        lock(&self.progress).get(task_id).cloned()
    }

    /// Records which connection created a legacy task, for its progress and its question.
    pub fn set_owner(&self, task_id: &str, conn: &Arc<Conn>, token: Option<Value>, log_level: Option<String>) {
        lock(&self.owners).insert(task_id.to_owned(), Owner { conn: Arc::downgrade(conn), token, log_level });
    }

    /// Modern: the log level the request that created the task asked for.
    pub fn owner_log_level(&self, task_id: &str) -> Option<String> {
        lock(&self.owners).get(task_id).and_then(|o| o.log_level.clone())
    }

    /// The creating connection, if still open, and the progress token it gave.
    pub fn owner(&self, task_id: &str) -> Option<(Arc<Conn>, Option<Value>)> {
        let owners = lock(&self.owners);
        let owner = owners.get(task_id)?;
        Some((owner.conn.upgrade()?, owner.token.clone()))
    }

    /// A task as a client of `era` may see it: unknown, expired and other-era tasks all look the
    /// same from outside (-32602), so a client cannot probe ids across eras.
    pub fn lookup(&self, task_id: &str, era: Era) -> Result<TaskRow, ErrorObject> {
        let row = self.store().get(task_id).map_err(internal)?.ok_or_else(|| not_found(task_id))?;
        let (_, now) = crate::store::now();
        if row.expired(now) {
            return Err(invalid_params(format!("Failed to retrieve task: Task has expired ({task_id})")));
        }
        if row.era != era {
            return Err(invalid_params(format!(
                "task {task_id} was created by a {} client and is only served in that protocol revision",
                row.era.protocol_version()
            )));
        }
        Ok(row)
    }

    pub fn ttl_for(&self, requested: Option<i64>) -> i64 {
        match requested {
            Some(ms) => ms.clamp(1, self.cfg.max_ttl_ms),
            None => self.cfg.default_ttl_ms.min(self.cfg.max_ttl_ms),
        }
    }

    pub fn purge(&self) {
        let (_, now) = crate::store::now();
        match self.store().purge_expired(now) {
            Ok(ids) => {
                for id in ids {
                    tracing::info!(task = %id, "expired task purged");
                    self.wake(&id);
                    self.changed(&id);
                }
            }
            Err(e) => tracing::error!("purging expired tasks: {e}"),
        }
    }

    /// Once per process, whatever the transport: drop what expired while we were down, pick up
    /// unfinished work, and keep purging.
    pub fn start(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        self.purge();
        crate::work::resume_all(self);
        let server = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(server.cfg.purge_interval);
            tick.tick().await;
            loop {
                tick.tick().await;
                server.purge();
            }
        })
    }
}

/// One client connection: its era, its outbound queue, and the handlers it has running.
pub struct Conn {
    pub server: Arc<Server>,
    out: mpsc::Sender<Message>,
    state: Mutex<ConnState>,
    /// Handlers that outlive `dispatch` (a waiting `tasks/result`, a plain call that takes a
    /// while), so a transport can stop them when their client is gone.
    running: Mutex<Vec<(RequestId, AbortHandle)>>,
}

/// A connection is a view of the server: the era handlers reach the store and the task machinery
/// through it as if they were the server's own.
impl Deref for Conn {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl Conn {
    /// A connection and the receiving end of its outbound queue, which its transport drains.
    pub fn open(server: &Arc<Server>, era: Option<Era>, interest: Interest) -> (Arc<Self>, mpsc::Receiver<Message>) {
        let (tx, rx) = mpsc::channel(OUT_QUEUE);
        let state = ConnState {
            era,
            legacy_elicitation: false,
            legacy_sampling: false,
            outstanding: HashMap::new(),
            log_level: None,
            interest,
        };
        let conn =
            Arc::new(Self { server: server.clone(), out: tx, state: Mutex::new(state), running: Mutex::default() });
        (conn, rx)
    }

    pub fn state(&self) -> MutexGuard<'_, ConnState> {
        lock(&self.state)
    }

    /// From now on this connection hears about the task.
    pub fn watch(&self, task_id: &str) {
        self.state().interest.add(task_id);
    }

    pub fn watches(&self, task_id: &str) -> bool {
        self.state().interest.contains(task_id)
    }

    pub async fn send(&self, msg: Message) {
        if self.out.send(msg).await.is_err() {
            tracing::debug!("connection closed; message dropped");
        }
    }

    /// For messages that may be lost without harm (progress): never waits on a slow client.
    pub fn send_lossy(&self, msg: Message) {
        if self.out.try_send(msg).is_err() {
            tracing::debug!("outbound queue full or closed; lossy message dropped");
        }
    }

    pub async fn respond(&self, id: RequestId, result: Result<Value, ErrorObject>) {
        let msg = match result {
            Ok(v) => Message::result(id, v),
            Err(e) => Message::error(Some(id), e),
        };
        self.send(msg).await;
    }

    /// Resolves once the transport stopped draining this connection's queue.
    pub async fn closed(&self) {
        self.out.closed().await
    }

    /// Runs a request's handler beside the connection's other work, stoppable by [`Conn::abandon`].
    pub fn spawn_for<F>(&self, id: &RequestId, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::spawn(fut).abort_handle();
        let mut running = lock(&self.running);
        running.retain(|(_, h)| !h.is_finished());
        running.push((id.clone(), handle));
    }

    /// The client of request `id` is gone: nothing it started on our side needs to go on. (Tasks
    /// are not requests; they keep running.)
    pub fn abandon(&self, id: &RequestId) {
        if self.stop_handler(id) {
            self.note_abandoned(id, "its stream closed");
        }
    }

    /// The client cancelled request `id` with `notifications/cancelled`: its handler stops, if it
    /// still runs (on HTTP its stream may have closed first).
    pub fn cancelled_by_client(&self, id: &RequestId) {
        let stopped = self.stop_handler(id);
        self.note_abandoned(
            id,
            if stopped { "notifications/cancelled" } else { "notifications/cancelled, after its end" },
        );
    }

    fn stop_handler(&self, id: &RequestId) -> bool {
        let mut stopped = false;
        lock(&self.running).retain(|(rid, h)| {
            if rid == id && !h.is_finished() {
                h.abort();
                stopped = true;
            }
            rid != id
        });
        stopped
    }

    /// Notes in the log, and in `abandoned-requests.log` in the state directory (`ID<TAB>how`),
    /// that the client gave up on a request, so a test can see that its cancellation arrived.
    fn note_abandoned(&self, id: &RequestId, how: &str) {
        tracing::info!(request = %id, "the client gave up on the request ({how})");
        let line = format!("{id}\t{how}\n");
        let file = self.cfg.state_dir.join("abandoned-requests.log");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        if let Err(e) = written {
            tracing::warn!("could not note the abandoned request: {e}");
        }
    }

    /// The connection is over: stops every handler it still had running.
    pub fn abandon_all(&self) {
        for (_, h) in lock(&self.running).drain(..) {
            h.abort();
        }
    }
}

/// Hands one client message to the era handlers. Returns once the message is handled or its
/// handler runs on its own; any answer goes into the connection's outbound queue.
pub async fn dispatch(conn: &Arc<Conn>, msg: Message) {
    match msg {
        Message::Request(req) => handle_request(conn, req).await,
        Message::Notification(n) if n.method == methods::CANCELLED => {
            let id = n.params.as_ref().and_then(|p| p.get("requestId")).cloned();
            match id.and_then(|v| serde_json::from_value::<RequestId>(v).ok()) {
                Some(id) => conn.cancelled_by_client(&id),
                None => tracing::debug!("notifications/cancelled without a request id ignored"),
            }
        }
        Message::Notification(n) => {
            if n.method != methods::INITIALIZED {
                tracing::debug!(method = %n.method, "notification ignored");
            }
        }
        Message::Response(resp) => legacy::handle_response(conn, resp).await,
    }
}

async fn handle_request(conn: &Arc<Conn>, req: Request) {
    let envelope = RequestEnvelope::read(req.params.as_ref());
    let legacy_session = conn.state().era == Some(Era::Legacy);
    // A legacy session ignores modern `_meta`: the era was settled by how the client opened.
    if let Some(version) = envelope.protocol_version.as_deref()
        && !legacy_session
        && version != taskdeck_protocol::modern::PROTOCOL_VERSION
    {
        conn.respond(req.id, Err(unsupported_version(version))).await;
        return;
    }
    let era = {
        let mut state = conn.state();
        if state.era.is_none() {
            if req.method == methods::INITIALIZE {
                state.era = Some(Era::Legacy);
            } else if envelope.is_modern() {
                state.era = Some(Era::Modern);
            }
        }
        state.era
    };
    match era {
        Some(Era::Legacy) => legacy::handle_request(conn, req).await,
        Some(Era::Modern) => modern::handle_request(conn, req, envelope).await,
        None if req.method == methods::PING => conn.respond(req.id, Ok(json!({}))).await,
        None if req.method == methods::SERVER_DISCOVER => modern::discover(conn, req.id).await,
        None => {
            let err = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Start with initialize (protocol 2025-11-25), or send params._meta[\"io.modelcontextprotocol/\
                 protocolVersion\"] on every request (protocol 2026-07-28)",
            );
            conn.respond(req.id, Err(err)).await;
        }
    }
}

pub fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(codes::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .with_data(json!({"supported": [taskdeck_protocol::modern::PROTOCOL_VERSION], "requested": requested}))
}

/// `Response` carries the answer to one of our own requests (legacy elicitation).
pub fn response_key(resp: &Response) -> Option<String> {
    match resp.id()? {
        RequestId::String(s) => Some(s.clone()),
        RequestId::Number(n) => Some(n.to_string()),
    }
}

/// A `tools/call` after its params were checked: the tool exists and its arguments are valid.
pub struct Call {
    pub spec: &'static crate::tools::ToolSpec,
    pub args: serde_json::Map<String, Value>,
}

pub fn parse_call(params: Option<&Value>) -> Result<Call, ErrorObject> {
    let name = match params.and_then(|p| p.get("name")) {
        Some(Value::String(n)) => n,
        Some(_) => return Err(invalid_params("params.name: must be a string")),
        None => return Err(invalid_params("params.name: required")),
    };
    let spec = crate::tools::find(name).ok_or_else(|| {
        let known: Vec<&str> = crate::tools::TOOLS.iter().map(|t| t.name).collect();
        invalid_params(format!("params.name: unknown tool {name:?} (tools: {})", known.join(", ")))
    })?;
    let args = match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(_) => return Err(invalid_params("params.arguments: must be an object")),
    };
    crate::tools::validate(spec.name, &args).map_err(|e| invalid_params(format!("params.{e}")))?;
    Ok(Call { spec, args })
}

/// The error for a message that could not be read, with no id: the MCP schemas do not allow
/// `"id": null`, so an unattributable error has no id at all.
pub fn unparsable(e: &MessageError) -> ErrorObject {
    match e {
        MessageError::Json(_) => ErrorObject::new(codes::PARSE_ERROR, format!("Parse error: {e}")),
        _ => ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {e}")),
    }
}
