//! A legacy (2025-11-25) Streamable HTTP session: one [`Conn`] whose outbound queue is routed onto
//! the HTTP responses of that session.
//!
//! Every POSTed request opens a *stream*. It stays undecided until the first message for it: when
//! that is its response, the request is answered as `application/json`; when something comes
//! first (a question for the task a `tasks/result` waits on, progress of a plain call), it becomes
//! an SSE stream that ends with the response. A GET opens the session's own stream for messages
//! that belong to no open request. Every SSE event has an id `<stream>-<n>` and is kept in a
//! bounded per-stream buffer, so a client that lost a connection resumes the stream with a GET
//! carrying `Last-Event-ID`.
//!
//! Questions (`elicitation/create` for a task) are remembered until answered: one that found no
//! open stream waits for the next `tasks/result` on its task or the next GET stream, and one
//! whose stream was lost without being resumed is put on the next such stream again.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use taskdeck_protocol::{Message, Request, RequestId, TaskStatus, meta, methods};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::server::{Conn, lock};

/// Events kept per stream for resumption, and their total size.
const REPLAY_EVENTS: usize = 256;
const REPLAY_BYTES: usize = 1 << 20;
/// Requests of one session waiting for their response at once.
pub const MAX_IN_FLIGHT: usize = 1024;
/// Finished SSE streams kept for a late resumption.
const KEEP_FINISHED: usize = 32;
/// Questions remembered until answered.
const MAX_ASKS: usize = 256;
/// Events queued to one HTTP connection before the client counts as stalled and is cut off (it
/// can resume from the buffer).
const LIVE_QUEUE: usize = 256;
/// How often an idle SSE connection gets a comment line, so intermediaries and clients keep it
/// open and a vanished client is noticed.
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// The reconnection delay a connection ended by `--sse-cut-ms` tells its client to wait.
const RETRY_MS: u64 = 250;

/// How a POSTed request is answered.
pub enum Reply {
    Json(Message),
    Sse(mpsc::Receiver<Bytes>),
}

/// Why a request could not be taken.
pub enum Refused {
    TooMany,
    DuplicateId,
    SessionClosed,
}

/// Why a GET could not be served.
pub enum ResumeError {
    UnknownStream,
}

enum Mode {
    /// A POST whose answer form is not decided yet.
    Pending {
        first: oneshot::Sender<Reply>,
        sse_ok: bool,
    },
    Sse,
}

struct Stream {
    mode: Mode,
    /// The request this stream answers; none for a GET stream.
    request: Option<RequestId>,
    token: Option<String>,
    task: Option<String>,
    events: VecDeque<(u64, Bytes)>,
    bytes: usize,
    next_event: u64,
    live: Option<mpsc::Sender<Bytes>>,
    attached_at: Instant,
    /// The response was written: nothing more comes, the stream ends once replayed.
    done: bool,
    finished_at: Option<Instant>,
}

impl Stream {
    fn new(mode: Mode, request: Option<RequestId>) -> Self {
        Self {
            mode,
            request,
            token: None,
            task: None,
            events: VecDeque::new(),
            bytes: 0,
            next_event: 1,
            live: None,
            attached_at: Instant::now(),
            done: false,
            finished_at: None,
        }
    }

    fn attach(&mut self, tx: mpsc::Sender<Bytes>) {
        self.live = Some(tx);
        self.attached_at = Instant::now();
    }

    fn is_live(&self) -> bool {
        self.live.as_ref().is_some_and(|l| !l.is_closed())
    }

    /// Whether a message other than the response may go here.
    fn carries_side_messages(&self) -> bool {
        match &self.mode {
            Mode::Pending { sse_ok, .. } => *sse_ok,
            Mode::Sse => !self.done,
        }
    }
}

/// A question sent (or to be sent) to the client, until it answers.
struct Ask {
    task: Option<String>,
    msg: Message,
    stream: Option<u64>,
    seq: u64,
}

#[derive(Default)]
struct Routes {
    next_stream: u64,
    streams: HashMap<u64, Stream>,
    by_request: HashMap<String, u64>,
    by_token: HashMap<String, u64>,
    /// The latest open `tasks/result` stream per task.
    by_task: HashMap<String, u64>,
    get_stream: Option<u64>,
    asks: HashMap<String, Ask>,
    ask_seq: u64,
    closed: bool,
}

pub struct Session {
    pub id: String,
    pub conn: Arc<Conn>,
    routes: std::sync::Mutex<Routes>,
    last_active: std::sync::Mutex<Instant>,
    router: std::sync::Mutex<Option<AbortHandle>>,
    /// Ends each SSE connection after this long, leaving the stream to be resumed.
    sse_cut: Option<Duration>,
}

/// Keys that keep a string id and a numeric id apart.
fn id_key(id: &RequestId) -> String {
    match id {
        RequestId::String(s) => format!("s:{s}"),
        RequestId::Number(n) => format!("n:{n}"),
    }
}

fn token_key(token: &Value) -> String {
    token.to_string()
}

pub fn sse_event(id: &str, data: &str) -> Bytes {
    Bytes::from(format!("id: {id}\ndata: {data}\n\n"))
}

impl Session {
    /// A new session; its router starts draining the connection's queue at once.
    pub fn start(id: String, conn: Arc<Conn>, rx: mpsc::Receiver<Message>, sse_cut: Option<Duration>) -> Arc<Self> {
        let session = Arc::new(Self {
            id,
            conn,
            routes: std::sync::Mutex::new(Routes::default()),
            last_active: std::sync::Mutex::new(Instant::now()),
            router: std::sync::Mutex::new(None),
            sse_cut,
        });
        let every = sse_cut.map_or(KEEPALIVE, |cut| (cut / 2).clamp(Duration::from_millis(10), KEEPALIVE));
        let handle = tokio::spawn(route_loop(Arc::downgrade(&session), rx, every)).abort_handle();
        *lock(&session.router) = Some(handle);
        tokio::spawn(crate::legacy::status_listener(session.conn.clone()));
        session
    }

    pub fn touch(&self) {
        *lock(&self.last_active) = Instant::now();
    }

    /// Idle: no request for `idle` and no client connected to any of its streams.
    pub fn idle_for(&self, idle: Duration) -> bool {
        if lock(&self.last_active).elapsed() < idle {
            return false;
        }
        !lock(&self.routes).streams.values().any(Stream::is_live)
    }

    /// Ends the session: open requests are answered as gone, streams end, handlers stop.
    pub fn close(&self) {
        {
            let mut routes = lock(&self.routes);
            routes.closed = true;
            routes.streams.clear();
            routes.by_request.clear();
            routes.by_token.clear();
            routes.by_task.clear();
            routes.asks.clear();
            routes.get_stream = None;
        }
        if let Some(router) = lock(&self.router).take() {
            router.abort();
        }
        self.conn.abandon_all();
    }

    /// Registers a POSTed request before it is handled, so everything it causes finds its way.
    pub fn open_request(&self, req: &Request, sse_ok: bool) -> Result<(u64, oneshot::Receiver<Reply>), Refused> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return Err(Refused::SessionClosed);
        }
        let key = id_key(&req.id);
        if routes.by_request.contains_key(&key) {
            return Err(Refused::DuplicateId);
        }
        let in_flight = routes.streams.values().filter(|s| !s.done).count();
        if in_flight >= MAX_IN_FLIGHT {
            return Err(Refused::TooMany);
        }
        let (tx, rx) = oneshot::channel();
        routes.next_stream += 1;
        let sid = routes.next_stream;
        let mut stream = Stream::new(Mode::Pending { first: tx, sse_ok }, Some(req.id.clone()));
        let params = req.params.as_ref();
        if let Some(token) = meta::params_meta(params).and_then(|m| m.get(meta::PROGRESS_TOKEN)) {
            let k = token_key(token);
            routes.by_token.insert(k.clone(), sid);
            stream.token = Some(k);
        }
        let waits_on = (req.method == methods::TASKS_RESULT)
            .then(|| params.and_then(|p| p.get("taskId")).and_then(Value::as_str))
            .flatten()
            .map(str::to_owned);
        routes.streams.insert(sid, stream);
        routes.by_request.insert(key, sid);
        if let Some(task) = waits_on {
            if let Some(s) = routes.streams.get_mut(&sid) {
                s.task = Some(task.clone());
            }
            routes.by_task.insert(task.clone(), sid);
            routes.redeliver(sid, Some(&task));
        }
        Ok((sid, rx))
    }

    /// The POST's client left before its answer form was decided: nothing can reach it any more.
    pub fn abandon_request(&self, sid: u64) {
        let request = {
            let mut routes = lock(&self.routes);
            match routes.streams.get(&sid) {
                Some(s) if matches!(s.mode, Mode::Pending { .. }) => routes.remove_stream(sid),
                _ => None,
            }
        };
        if let Some(id) = request {
            self.conn.abandon(&id);
        }
    }

    /// The client answered one of our questions.
    pub fn answered(&self, id: &RequestId) {
        lock(&self.routes).asks.remove(&id_key(id));
    }

    /// A GET without `Last-Event-ID`: the session's stream for messages of no open request. It
    /// replaces any earlier one.
    pub fn open_get(&self) -> Option<mpsc::Receiver<Bytes>> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return None;
        }
        if let Some(old) = routes.get_stream.take() {
            routes.remove_stream(old);
        }
        routes.next_stream += 1;
        let sid = routes.next_stream;
        let (tx, rx) = mpsc::channel(LIVE_QUEUE);
        let mut stream = Stream::new(Mode::Sse, None);
        // Primes the client with an id to resume from.
        let _ = tx.try_send(sse_event(&format!("{sid}-0"), ""));
        stream.attach(tx);
        routes.streams.insert(sid, stream);
        routes.get_stream = Some(sid);
        routes.redeliver(sid, None);
        Some(rx)
    }

    /// A GET with `Last-Event-ID`: the stream that event belongs to, from just after it.
    pub fn resume(&self, last_event_id: &str) -> Result<mpsc::Receiver<Bytes>, ResumeError> {
        let (sid, seen) = parse_event_id(last_event_id).ok_or(ResumeError::UnknownStream)?;
        let mut routes = lock(&self.routes);
        let is_get = routes.get_stream == Some(sid);
        let stream = routes.streams.get_mut(&sid).ok_or(ResumeError::UnknownStream)?;
        if !matches!(stream.mode, Mode::Sse) {
            return Err(ResumeError::UnknownStream);
        }
        let (tx, rx) = mpsc::channel(LIVE_QUEUE.max(stream.events.len() + 1));
        for (n, bytes) in &stream.events {
            if *n > seen {
                let _ = tx.try_send(bytes.clone());
            }
        }
        if stream.done {
            // Everything this stream will ever say was replayed: the body ends after it.
            stream.live = None;
        } else {
            stream.attach(tx);
        }
        if is_get {
            routes.redeliver(sid, None);
        }
        Ok(rx)
    }

    fn deliver(&self, msg: Message) {
        lock(&self.routes).deliver(msg);
    }

    /// Keeps idle connections open, notices vanished clients, and ends connections that are due.
    fn tick(&self) {
        let mut routes = lock(&self.routes);
        for stream in routes.streams.values_mut() {
            let Some(live) = &stream.live else { continue };
            if self.sse_cut.is_some_and(|cut| stream.attached_at.elapsed() >= cut) {
                // The connection ends, the stream does not: the client comes back with
                // Last-Event-ID after the delay it is given here.
                let _ = live.try_send(Bytes::from(format!("retry: {RETRY_MS}\n\n")));
                stream.live = None;
            } else if live.try_send(Bytes::from_static(b": keepalive\n\n")).is_err() {
                stream.live = None;
            }
        }
    }
}

/// `<stream>-<n>` as we write event ids.
fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (s, n) = id.trim().split_once('-')?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

async fn route_loop(session: std::sync::Weak<Session>, mut rx: mpsc::Receiver<Message>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let (Some(msg), Some(session)) = (msg, session.upgrade()) else { return };
                session.deliver(msg);
            }
            _ = tick.tick() => {
                let Some(session) = session.upgrade() else { return };
                session.tick();
            }
        }
    }
}

fn related_task(msg: &Message) -> Option<String> {
    match msg {
        Message::Request(r) => meta::related_task_id(r.params.as_ref(), None).map(str::to_owned),
        Message::Notification(n) => {
            let related = meta::related_task_id(n.params.as_ref(), n.meta.as_ref());
            let own = (n.method == methods::TASKS_STATUS)
                .then(|| n.params.as_ref().and_then(|p| p.get("taskId")).and_then(Value::as_str))
                .flatten();
            related.or(own).map(str::to_owned)
        }
        Message::Response(_) => None,
    }
}

impl Routes {
    fn deliver(&mut self, msg: Message) {
        if self.closed {
            return;
        }
        match &msg {
            Message::Response(resp) => {
                let Some(sid) = resp.id().and_then(|id| self.by_request.get(&id_key(id)).copied()) else {
                    tracing::debug!("response to a request whose client is gone; dropped");
                    return;
                };
                self.push(sid, msg, true);
            }
            Message::Request(req) => {
                let task = related_task(&msg);
                let key = id_key(&req.id);
                let target = self.side_target(task.as_deref(), None, true);
                self.ask_seq += 1;
                let ask = Ask { task, msg: msg.clone(), stream: target, seq: self.ask_seq };
                if self.asks.len() >= MAX_ASKS
                    && let Some(oldest) = self.asks.iter().min_by_key(|(_, a)| a.seq).map(|(k, _)| k.clone())
                {
                    self.asks.remove(&oldest);
                }
                self.asks.insert(key, ask);
                match target {
                    Some(sid) => self.push(sid, msg, false),
                    None => tracing::debug!("question held until the client opens a stream for it"),
                }
            }
            Message::Notification(n) => {
                let task = related_task(&msg);
                if n.method == methods::TASKS_STATUS
                    && let Some(t) = &task
                    && n.params.as_ref().and_then(|p| p.get("status")).and_then(Value::as_str)
                        != Some(TaskStatus::InputRequired.as_str())
                {
                    // Whatever was asked for this task was answered or no longer matters.
                    self.asks.retain(|_, a| a.task.as_deref() != Some(t));
                }
                let token = (n.method == methods::PROGRESS)
                    .then(|| n.params.as_ref().and_then(|p| p.get("progressToken")))
                    .flatten()
                    .map(token_key);
                match self.side_target(task.as_deref(), token.as_deref(), false) {
                    Some(sid) => self.push(sid, msg, false),
                    None => tracing::trace!("notification with no stream to go on; dropped"),
                }
            }
        }
    }

    /// Where a message that is not a response goes: the request it belongs to, the
    /// `tasks/result` waiting on its task, or the session's GET stream. A question only goes
    /// where a client is listening right now; a notification may wait in a stream's buffer.
    fn side_target(&self, task: Option<&str>, token: Option<&str>, needs_listener: bool) -> Option<u64> {
        let usable = |sid: &u64| {
            self.streams.get(sid).is_some_and(|s| {
                s.carries_side_messages() && (!needs_listener || matches!(s.mode, Mode::Pending { .. }) || s.is_live())
            })
        };
        token
            .and_then(|t| self.by_token.get(t))
            .filter(|s| usable(s))
            .or_else(|| task.and_then(|t| self.by_task.get(t)).filter(|s| usable(s)))
            .or_else(|| self.get_stream.as_ref().filter(|s| usable(s)))
            .copied()
    }

    /// Puts on stream `sid` the questions no client is listening for, of `task` or of any task.
    fn redeliver(&mut self, sid: u64, task: Option<&str>) {
        if !self.streams.get(&sid).is_some_and(Stream::carries_side_messages) {
            return;
        }
        let streams = &self.streams;
        let mut due: Vec<(u64, String)> = self
            .asks
            .iter()
            .filter(|(_, a)| task.is_none_or(|t| a.task.as_deref() == Some(t)))
            .filter(|(_, a)| a.stream.is_none_or(|s| s != sid && !streams.get(&s).is_some_and(Stream::is_live)))
            .map(|(k, a)| (a.seq, k.clone()))
            .collect();
        due.sort();
        for (_, key) in due {
            let Some(ask) = self.asks.get_mut(&key) else { continue };
            ask.stream = Some(sid);
            let msg = ask.msg.clone();
            self.push(sid, msg, false);
        }
    }

    /// Writes a message on a stream; `last` is the stream's response.
    fn push(&mut self, sid: u64, msg: Message, last: bool) {
        let Some(stream) = self.streams.get_mut(&sid) else { return };
        if let Mode::Pending { .. } = stream.mode {
            let Mode::Pending { first, .. } = std::mem::replace(&mut stream.mode, Mode::Sse) else { return };
            if last {
                // Nothing came before the response: a plain JSON answer, nothing to keep.
                let _ = first.send(Reply::Json(msg));
                self.remove_stream(sid);
                return;
            }
            let (tx, rx) = mpsc::channel(LIVE_QUEUE);
            if first.send(Reply::Sse(rx)).is_err() {
                self.remove_stream(sid);
                return;
            }
            let _ = tx.try_send(sse_event(&format!("{sid}-0"), ""));
            stream.attach(tx);
        }
        if stream.done {
            return;
        }
        let n = stream.next_event;
        stream.next_event += 1;
        let event = sse_event(&format!("{sid}-{n}"), &msg.to_line());
        stream.bytes += event.len();
        stream.events.push_back((n, event.clone()));
        while stream.events.len() > REPLAY_EVENTS || (stream.bytes > REPLAY_BYTES && stream.events.len() > 1) {
            if let Some((_, old)) = stream.events.pop_front() {
                stream.bytes -= old.len();
            }
        }
        if let Some(live) = &stream.live
            && live.try_send(event).is_err()
        {
            // Stalled or gone: it resumes from the buffer with Last-Event-ID if it wants.
            stream.live = None;
        }
        if last {
            stream.done = true;
            stream.finished_at = Some(Instant::now());
            // Dropping the sender ends the HTTP body after what was queued.
            stream.live = None;
            self.unroute(sid);
            self.trim_finished();
        }
    }

    /// Forgets where a stream's messages would be routed, keeping its buffer for resumption.
    fn unroute(&mut self, sid: u64) {
        let Some(stream) = self.streams.get(&sid) else { return };
        if let Some(id) = &stream.request
            && self.by_request.get(&id_key(id)) == Some(&sid)
        {
            self.by_request.remove(&id_key(id));
        }
        if let Some(t) = &stream.token
            && self.by_token.get(t) == Some(&sid)
        {
            self.by_token.remove(t);
        }
        if let Some(t) = &stream.task
            && self.by_task.get(t) == Some(&sid)
        {
            self.by_task.remove(t);
        }
        if self.get_stream == Some(sid) {
            self.get_stream = None;
        }
    }

    /// Removes a stream entirely; returns the request it was answering, if still unanswered.
    fn remove_stream(&mut self, sid: u64) -> Option<RequestId> {
        self.unroute(sid);
        let stream = self.streams.remove(&sid)?;
        if stream.done { None } else { stream.request }
    }

    fn trim_finished(&mut self) {
        let mut finished: Vec<(Instant, u64)> = self
            .streams
            .iter()
            .filter_map(|(sid, s)| s.finished_at.filter(|_| !s.is_live()).map(|t| (t, *sid)))
            .collect();
        if finished.len() <= KEEP_FINISHED {
            return;
        }
        finished.sort();
        let excess = finished.len() - KEEP_FINISHED;
        for (_, sid) in finished.into_iter().take(excess) {
            self.streams.remove(&sid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_name_their_stream() {
        assert_eq!(parse_event_id("12-7"), Some((12, 7)));
        assert_eq!(parse_event_id(" 3-0 "), Some((3, 0)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("17"), None);
        assert_eq!(&sse_event("1-2", "{}")[..], b"id: 1-2\ndata: {}\n\n");
    }
}
