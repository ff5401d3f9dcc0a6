//! The connection: reads frames, decides the era, routes each message to the era's handlers, and
//! owns everything the handlers and task workers share.
//!
//! stdio means exactly one client per process, so connection state and server state live together.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use taskdeck_protocol::framing::{FrameError, LineDecoder};
use taskdeck_protocol::modern::request_meta::RequestEnvelope;
use taskdeck_protocol::modern::tasks::TaskProgress;
use taskdeck_protocol::{Era, ErrorObject, Message, MessageError, Request, RequestId, Response, codes, methods};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, broadcast, mpsc};

use crate::store::{Store, StoreError, TaskRow};
use crate::{legacy, modern, work};

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
}

/// What this connection has told us about itself.
#[derive(Default)]
pub struct ConnState {
    pub era: Option<Era>,
    /// Legacy: the client declared `elicitation` in `initialize`.
    pub legacy_elicitation: bool,
    /// Legacy progress tokens of tasks created on this connection. A token from an earlier
    /// process means nothing to the current client, so it is never revived from the store.
    pub progress_tokens: HashMap<String, Value>,
    /// Legacy `elicitation/create` requests awaiting an answer: request id → (task id, question key).
    pub outstanding: HashMap<String, (String, String)>,
}

pub struct Server {
    pub cfg: Config,
    store: Mutex<Store>,
    out: mpsc::Sender<Message>,
    /// Fired with a task id after every change a client could observe; receivers re-read the store.
    pub events: broadcast::Sender<String>,
    wakers: Mutex<HashMap<String, Arc<Notify>>>,
    conn: Mutex<ConnState>,
    /// Modern progress, reported in `tasks/get` `_meta`; memory only, rebuilt from the checkpoint.
    progress: Mutex<HashMap<String, TaskProgress>>,
    seq: AtomicU64,
}

/// Outbound queue depth. Responses wait for room; progress is dropped when the client lags.
const OUT_QUEUE: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
    pub fn new(cfg: Config, store: Store, out: mpsc::Sender<Message>) -> Arc<Self> {
        Arc::new(Self {
            cfg,
            store: Mutex::new(store),
            out,
            events: broadcast::channel(1024).0,
            wakers: Mutex::new(HashMap::new()),
            conn: Mutex::new(ConnState::default()),
            progress: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(1),
        })
    }

    pub fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    pub fn conn(&self) -> MutexGuard<'_, ConnState> {
        lock(&self.conn)
    }

    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    pub async fn send(&self, msg: Message) {
        if self.out.send(msg).await.is_err() {
            tracing::debug!("stdout is closed; message dropped");
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
        self.conn().progress_tokens.remove(task_id);
    }

    pub fn wake(&self, task_id: &str) {
        if let Some(n) = lock(&self.wakers).get(task_id) {
            n.notify_one();
        }
    }

    pub fn set_progress(&self, task_id: &str, p: TaskProgress) {
        lock(&self.progress).insert(task_id.to_owned(), p);
    }

    pub fn progress_of(&self, task_id: &str) -> Option<TaskProgress> {
        lock(&self.progress).get(task_id).cloned()
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
}

/// Serves one connection until stdin closes. Tasks stay in the store for the next start.
pub async fn serve<R, W>(cfg: Config, store: Store, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let max_line = cfg.max_line_bytes;
    let writer = tokio::spawn(write_loop(rx, output, max_line));
    let server = Server::new(cfg, store, tx);

    server.purge();
    work::resume_all(&server);
    tokio::spawn(legacy::status_listener(server.clone()));
    let purger = {
        let server = server.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(server.cfg.purge_interval);
            tick.tick().await;
            loop {
                tick.tick().await;
                server.purge();
            }
        })
    };

    read_loop(&server, input).await;
    tracing::info!("stdin closed; shutting down");
    purger.abort();
    drop(server);
    // Give queued responses a moment to reach stdout; workers still hold senders, so the writer
    // would otherwise wait for them forever.
    let _ = tokio::time::timeout(Duration::from_millis(200), writer).await;
    Ok(())
}

async fn write_loop<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Message>, mut out: W, max_line: usize) {
    while let Some(msg) = rx.recv().await {
        let line = msg.to_line();
        let Some(frame) = taskdeck_protocol::framing::encode(&line, max_line.max(line.len())) else {
            tracing::error!("refusing to send a message that would break framing");
            continue;
        };
        if out.write_all(&frame).await.is_err() || out.flush().await.is_err() {
            tracing::info!("stdout closed");
            return;
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(server: &Arc<Server>, mut input: R) {
    let mut decoder = LineDecoder::new(server.cfg.max_line_bytes);
    let mut buf = vec![0u8; 64 * 1024];
    let mut frames = Vec::new();
    loop {
        let n = match input.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("reading stdin: {e}");
                break;
            }
        };
        decoder.feed(&buf[..n], &mut frames);
        for frame in frames.drain(..) {
            handle_frame(server, frame).await;
        }
    }
    if let Some(frame) = decoder.finish() {
        handle_frame(server, frame).await;
    }
}

async fn handle_frame(server: &Arc<Server>, frame: Result<String, FrameError>) {
    let text = match frame {
        Ok(t) => t,
        Err(FrameError::TooLong { limit }) => {
            // Nothing of the message survives, not even its id, so there is no one to answer.
            tracing::warn!("dropped an input line longer than {limit} bytes");
            return;
        }
        Err(e @ FrameError::InvalidUtf8 { .. }) => {
            server.send(Message::error(None, ErrorObject::new(codes::PARSE_ERROR, format!("Parse error: {e}")))).await;
            return;
        }
    };
    match Message::parse(&text) {
        Ok(Message::Request(req)) => handle_request(server, req).await,
        Ok(Message::Notification(n)) => {
            if n.method != methods::INITIALIZED && n.method != methods::CANCELLED {
                tracing::debug!(method = %n.method, "notification ignored");
            }
        }
        Ok(Message::Response(resp)) => legacy::handle_response(server, resp).await,
        Err(e) => {
            let code = match e {
                MessageError::Json(_) => codes::PARSE_ERROR,
                _ => codes::INVALID_REQUEST,
            };
            let prefix = if code == codes::PARSE_ERROR { "Parse error" } else { "Invalid request" };
            // The MCP schemas do not allow `"id": null`, so an unattributable error has no id at all.
            server.send(Message::error(None, ErrorObject::new(code, format!("{prefix}: {e}")))).await;
        }
    }
}

async fn handle_request(server: &Arc<Server>, req: Request) {
    let envelope = RequestEnvelope::read(req.params.as_ref());
    let legacy_session = server.conn().era == Some(Era::Legacy);
    // A legacy session ignores modern `_meta`: the era was settled by how the client opened.
    if let Some(version) = envelope.protocol_version.as_deref()
        && !legacy_session
        && version != taskdeck_protocol::modern::PROTOCOL_VERSION
    {
        let err = ErrorObject::new(codes::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(json!({"supported": [taskdeck_protocol::modern::PROTOCOL_VERSION], "requested": version}));
        server.respond(req.id, Err(err)).await;
        return;
    }
    let era = {
        let mut conn = server.conn();
        if conn.era.is_none() {
            if req.method == methods::INITIALIZE {
                conn.era = Some(Era::Legacy);
            } else if envelope.is_modern() {
                conn.era = Some(Era::Modern);
            }
        }
        conn.era
    };
    match era {
        Some(Era::Legacy) => legacy::handle_request(server, req).await,
        Some(Era::Modern) => modern::handle_request(server, req, envelope).await,
        None if req.method == methods::PING => server.respond(req.id, Ok(json!({}))).await,
        None if req.method == methods::SERVER_DISCOVER => modern::discover(server, req.id).await,
        None => {
            let err = ErrorObject::new(
                codes::INVALID_REQUEST,
                "Start with initialize (protocol 2025-11-25), or send params._meta[\"io.modelcontextprotocol/\
                 protocolVersion\"] on every request (protocol 2026-07-28)",
            );
            server.respond(req.id, Err(err)).await;
        }
    }
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
