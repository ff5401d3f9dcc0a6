//! The Streamable HTTP transport, both eras on one endpoint (`/mcp`).
//!
//! How a POST finds its era, as the 2026-07-28 backward-compatibility rules have a dual-era
//! server decide from how the client opens: `initialize` starts a legacy session (2025-11-25,
//! `Mcp-Session-Id`); a request naming a modern protocol version (header or `_meta`) is served
//! statelessly as 2026-07-28, on a connection that lives as long as that one request; anything
//! else belongs to the legacy session its `Mcp-Session-Id` names.
//!
//! Everything above the wire is the same code stdio runs: HTTP only turns requests into
//! [`dispatch`] calls on a [`Conn`] and the connection's outbound queue into HTTP responses.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use taskdeck_protocol::modern::request_meta::RequestEnvelope;
use taskdeck_protocol::{Era, ErrorObject, Message, Request, RequestId, Response, codes, methods};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};

use crate::server::{Conn, Interest, Server, dispatch, lock, unparsable};
use crate::session::{Refused, Reply, ResumeError, Session};

pub const ENDPOINT: &str = "/mcp";

/// Revisions that open with `initialize`; a request naming any other version is modern.
const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Open TCP connections at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 1024;
/// Time for a client to send a request's headers, and then its body.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub addr: SocketAddr,
    pub max_sessions: usize,
    pub session_idle: Duration,
    pub max_body: usize,
    pub sse_cut: Option<Duration>,
}

/// The body of every response: a whole JSON document, or the events of an SSE stream as they come.
pub enum OutBody {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl Body for OutBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            OutBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            OutBody::Stream(rx) => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, OutBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            OutBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            OutBody::Full(None) => SizeHint::with_exact(0),
            OutBody::Stream(_) => SizeHint::default(),
        }
    }
}

type HttpResponse = hyper::Response<OutBody>;

struct Front {
    server: Arc<Server>,
    cfg: HttpConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// Binds, reports the endpoint's URL through `ready`, and serves until `shutdown` resolves.
pub async fn serve(
    server: Arc<Server>,
    cfg: HttpConfig,
    ready: impl FnOnce(&str) -> std::io::Result<()>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(cfg.addr).await?;
    let url = format!("http://{}{ENDPOINT}", listener.local_addr()?);
    ready(&url)?;
    tracing::info!(%url, state = %server.cfg.state_dir.display(), "taskdeck-demo-server ready over HTTP");

    let purger = server.start();
    let front = Arc::new(Front { server, cfg, sessions: Mutex::new(HashMap::new()) });
    let reaper = tokio::spawn(reap_loop(front.clone()));
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = &mut shutdown => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors and the like: wait a little instead of spinning.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // An SSE answer goes out in several small writes; with Nagle's algorithm on, each after the
        // first waits for the client's delayed ACK, some 40 ms, on every such answer.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {e}");
        }
        let front = front.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |req| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(front.handle(req).await) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("HTTP connection ended: {e}");
            }
        });
    }
    tracing::info!("shutting down");
    let sessions: Vec<Arc<Session>> = lock(&front.sessions).drain().map(|(_, s)| s).collect();
    for s in sessions {
        s.close();
    }
    reaper.abort();
    purger.abort();
    Ok(())
}

async fn reap_loop(front: Arc<Front>) {
    let every = (front.cfg.session_idle / 2).clamp(Duration::from_millis(10), Duration::from_secs(5));
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        front.reap();
    }
}

impl Front {
    fn reap(&self) {
        let idle = self.cfg.session_idle;
        let gone: Vec<Arc<Session>> = {
            let mut sessions = lock(&self.sessions);
            let ids: Vec<String> =
                sessions.iter().filter(|(_, s)| s.idle_for(idle)).map(|(id, _)| id.clone()).collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for s in gone {
            tracing::info!(session = %s.id, "idle session expired");
            s.close();
        }
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id).cloned()
    }

    async fn handle(self: &Arc<Self>, req: hyper::Request<Incoming>) -> HttpResponse {
        if req.uri().path() != ENDPOINT {
            return plain(StatusCode::NOT_FOUND, "Not found: the MCP endpoint is /mcp\n");
        }
        if let Err(why) = check_origin(req.headers()) {
            return rpc_error(StatusCode::FORBIDDEN, None, codes::INVALID_REQUEST, why);
        }
        match *req.method() {
            Method::POST => self.post(req).await,
            Method::GET => self.get(req.headers()),
            Method::DELETE => self.delete(req.headers()),
            _ => {
                let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "Use POST, GET or DELETE\n");
                r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
                r
            }
        }
    }

    async fn post(self: &Arc<Self>, req: hyper::Request<Incoming>) -> HttpResponse {
        let (parts, body) = req.into_parts();
        let headers = parts.headers;
        if let Some(ct) = headers.get(header::CONTENT_TYPE)
            && media_type(ct).is_none_or(|m| m != "application/json")
        {
            return rpc_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                codes::INVALID_REQUEST,
                "POST bodies must be application/json",
            );
        }
        let (json_ok, sse_ok) = accepts(&headers);
        if !json_ok && !sse_ok {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                None,
                codes::INVALID_REQUEST,
                "Accept must allow application/json and text/event-stream",
            );
        }
        let body = match read_body(body, self.cfg.max_body).await {
            Ok(b) => b,
            Err(r) => return r,
        };
        let msg = match serde_json::from_slice::<Value>(&body) {
            Ok(v) => Message::from_value(v),
            Err(e) => Err(taskdeck_protocol::MessageError::Json(e.to_string())),
        };
        let msg = match msg {
            Ok(m) => m,
            Err(e) => {
                let err = unparsable(&e);
                return json(StatusCode::BAD_REQUEST, &Message::error(None, err));
            }
        };
        let (version, session) =
            match (header_text(&headers, "mcp-protocol-version"), header_text(&headers, "mcp-session-id")) {
                (Ok(v), Ok(s)) => (v, s),
                (Err(why), _) | (_, Err(why)) => {
                    return rpc_error(StatusCode::BAD_REQUEST, request_id(&msg), codes::INVALID_REQUEST, why);
                }
            };
        if let Message::Request(r) = &msg
            && r.method == methods::INITIALIZE
        {
            let Message::Request(r) = msg else { return internal_error() };
            return self.initialize(r, sse_ok).await;
        }
        let modern = match version {
            Some(v) => !LEGACY_VERSIONS.contains(&v),
            None => session.is_none() && names_modern(&msg),
        };
        if modern {
            return self.modern(&headers, msg).await;
        }
        match session {
            Some(id) => self.in_session(id, version, msg, sse_ok).await,
            None => rpc_error(
                StatusCode::BAD_REQUEST,
                request_id(&msg),
                codes::INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required (start a 2025-11-25 session with initialize, or send \
                 2026-07-28 requests with MCP-Protocol-Version and _meta)",
            ),
        }
    }

    async fn initialize(self: &Arc<Self>, req: Request, sse_ok: bool) -> HttpResponse {
        if lock(&self.sessions).len() >= self.cfg.max_sessions {
            self.reap();
        }
        let session = {
            let mut sessions = lock(&self.sessions);
            if sessions.len() >= self.cfg.max_sessions {
                drop(sessions);
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(req.id),
                    codes::INTERNAL_ERROR,
                    "too many open sessions: end one (DELETE) or try again later",
                );
            }
            // 128 random bits, as hex: visible ASCII as the header needs, and not guessable.
            let id = uuid::Uuid::new_v4().simple().to_string();
            let (conn, rx) = Conn::open(&self.server, None, Interest::known());
            let session = Session::start(id.clone(), conn, rx, self.cfg.sse_cut);
            sessions.insert(id, session.clone());
            session
        };
        tracing::info!(session = %session.id, "legacy session opened");
        let reply = match self.run_request(&session, req, sse_ok).await {
            Ok(reply) => reply,
            Err(r) => {
                self.end_session(&session.id);
                return r;
            }
        };
        if let Reply::Json(Message::Response(Response::Error { .. })) = &reply {
            // A failed initialize opens nothing.
            self.end_session(&session.id);
            return reply_response(reply);
        }
        let mut r = reply_response(reply);
        if let Ok(v) = HeaderValue::from_str(&session.id) {
            r.headers_mut().insert("mcp-session-id", v);
        }
        r
    }

    fn end_session(&self, id: &str) -> bool {
        let removed = lock(&self.sessions).remove(id);
        match removed {
            Some(s) => {
                s.close();
                true
            }
            None => false,
        }
    }

    /// A request of a legacy session: its answer is JSON, or SSE if anything comes before it.
    async fn run_request(&self, session: &Arc<Session>, req: Request, sse_ok: bool) -> Result<Reply, HttpResponse> {
        let id = req.id.clone();
        let (sid, first) = session.open_request(&req, sse_ok).map_err(|why| match why {
            Refused::TooMany => rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(id.clone()),
                codes::INTERNAL_ERROR,
                format!("too many requests in flight in this session (at most {})", crate::session::MAX_IN_FLIGHT),
            ),
            Refused::DuplicateId => rpc_error(
                StatusCode::BAD_REQUEST,
                Some(id.clone()),
                codes::INVALID_REQUEST,
                format!("request id {id} is already in use by a request in flight"),
            ),
            Refused::SessionClosed => session_gone(Some(id.clone())),
        })?;
        // If the client hangs up before the answer form is decided, nothing can reach it.
        let mut guard = AbandonOnDrop { session: session.clone(), sid, armed: true };
        dispatch(&session.conn, Message::Request(req)).await;
        let reply = first.await;
        guard.armed = false;
        reply.map_err(|_| session_gone(Some(id)))
    }

    async fn in_session(&self, id: &str, version: Option<&str>, msg: Message, sse_ok: bool) -> HttpResponse {
        let Some(session) = self.session(id) else { return session_gone(request_id(&msg)) };
        if let Err(r) = check_session_version(version, request_id(&msg)) {
            return *r;
        }
        session.touch();
        match msg {
            Message::Request(req) => match self.run_request(&session, req, sse_ok).await {
                Ok(reply) => reply_response(reply),
                Err(r) => r,
            },
            Message::Response(resp) => {
                if let Some(id) = resp.id() {
                    session.answered(id);
                }
                dispatch(&session.conn, Message::Response(resp)).await;
                empty(StatusCode::ACCEPTED)
            }
            msg @ Message::Notification(_) => {
                dispatch(&session.conn, msg).await;
                empty(StatusCode::ACCEPTED)
            }
        }
    }

    /// One 2026-07-28 request on a connection of its own: no session, nothing shared but the store.
    async fn modern(&self, headers: &HeaderMap, msg: Message) -> HttpResponse {
        let req = match msg {
            Message::Request(req) => req,
            Message::Notification(_) => return empty(StatusCode::ACCEPTED),
            Message::Response(resp) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    resp.id().cloned(),
                    codes::INVALID_REQUEST,
                    "2026-07-28 clients send no JSON-RPC responses",
                );
            }
        };
        if let Err(why) = check_modern_headers(headers, &req) {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                Some(req.id),
                codes::HEADER_MISMATCH,
                format!("Header mismatch: {why}"),
            );
        }
        let id = req.id.clone();
        let listening = req.method == methods::SUBSCRIPTIONS_LISTEN;
        let (conn, mut rx) = Conn::open(&self.server, Some(Era::Modern), Interest::known());
        // Closing the connection cancels the request: a plain call stops with it.
        let mut guard = AbandonConnOnDrop { conn: conn.clone(), id: id.clone(), armed: true };
        dispatch(&conn, Message::Request(req)).await;
        let answer = loop {
            match rx.recv().await {
                Some(Message::Response(resp)) if resp.id() == Some(&id) => break resp,
                // An acknowledged subscription is a stream: its notifications, then its end. So is
                // a request with something to say before its answer (a plain call's log entries):
                // they go on its own stream, and its answer last.
                Some(first @ Message::Notification(_)) => {
                    if !listening {
                        tracing::debug!(method = ?first.method(), "the answer comes on a stream, after notifications");
                    }
                    guard.armed = false;
                    return listen_stream(conn, id, first, rx);
                }
                Some(other) => {
                    tracing::debug!(method = ?other.method(), "modern message with no place on HTTP; dropped")
                }
                None => return internal_error(),
            }
        };
        guard.armed = false;
        let status = match &answer {
            Response::Error { error, .. } => match error.code {
                codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
                codes::HEADER_MISMATCH
                | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
                | codes::UNSUPPORTED_PROTOCOL_VERSION
                | codes::PARSE_ERROR
                | codes::INVALID_REQUEST => StatusCode::BAD_REQUEST,
                _ => StatusCode::OK,
            },
            Response::Result { .. } => StatusCode::OK,
        };
        json(status, &Message::Response(answer))
    }

    fn get(&self, headers: &HeaderMap) -> HttpResponse {
        let session = match self.session_of(headers) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        let (_, sse_ok) = accepts(headers);
        if !sse_ok || headers.get(header::ACCEPT).is_none() {
            return rpc_error(
                StatusCode::NOT_ACCEPTABLE,
                None,
                codes::INVALID_REQUEST,
                "GET needs Accept: text/event-stream",
            );
        }
        session.touch();
        let last = match header_text(headers, "last-event-id") {
            Ok(l) => l,
            Err(why) => return rpc_error(StatusCode::BAD_REQUEST, None, codes::INVALID_REQUEST, why),
        };
        let rx = match last {
            Some(last) => match session.resume(last) {
                Ok(rx) => rx,
                Err(ResumeError::UnknownStream) => {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        None,
                        codes::INVALID_REQUEST,
                        format!(
                            "Last-Event-ID {last:?} names no stream this session still keeps; send the request again"
                        ),
                    );
                }
            },
            None => match session.open_get() {
                Some(rx) => rx,
                None => return session_gone(None),
            },
        };
        sse(rx)
    }

    fn delete(&self, headers: &HeaderMap) -> HttpResponse {
        let session = match self.session_of(headers) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        if self.end_session(&session.id) {
            tracing::info!(session = %session.id, "legacy session ended by the client");
        }
        empty(StatusCode::NO_CONTENT)
    }

    /// The session a GET or DELETE names, with its protocol version checked.
    fn session_of(&self, headers: &HeaderMap) -> Result<Arc<Session>, Box<HttpResponse>> {
        let refuse = |why: String| Box::new(rpc_error(StatusCode::BAD_REQUEST, None, codes::INVALID_REQUEST, why));
        let version = header_text(headers, "mcp-protocol-version").map_err(refuse)?;
        let id = header_text(headers, "mcp-session-id").map_err(refuse)?;
        let id = id.ok_or_else(|| refuse("Bad Request: Mcp-Session-Id header is required".into()))?;
        let session = self.session(id).ok_or_else(|| Box::new(session_gone(None)))?;
        check_session_version(version, None)?;
        Ok(session)
    }
}

/// hyper drops a request's future when its client hangs up; these notice.
struct AbandonOnDrop {
    session: Arc<Session>,
    sid: u64,
    armed: bool,
}

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.session.abandon_request(self.sid);
        }
    }
}

struct AbandonConnOnDrop {
    conn: Arc<Conn>,
    id: RequestId,
    armed: bool,
}

impl Drop for AbandonConnOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.conn.abandon(&self.id);
        }
    }
}

fn check_session_version(version: Option<&str>, id: Option<RequestId>) -> Result<(), Box<HttpResponse>> {
    match version {
        Some(v) if v != taskdeck_protocol::legacy::PROTOCOL_VERSION => Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            codes::INVALID_REQUEST,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version {v:?} (this session speaks {})",
                taskdeck_protocol::legacy::PROTOCOL_VERSION
            ),
        ))),
        _ => Ok(()),
    }
}

/// Whether a message without a session names the modern era in its body.
fn names_modern(msg: &Message) -> bool {
    match msg {
        Message::Request(r) => {
            r.method == methods::SERVER_DISCOVER || RequestEnvelope::read(r.params.as_ref()).is_modern()
        }
        Message::Notification(n) => RequestEnvelope::read(n.params.as_ref()).is_modern(),
        Message::Response(_) => false,
    }
}

/// The headers a 2026-07-28 request mirrors from its body, compared with it.
fn check_modern_headers(headers: &HeaderMap, req: &Request) -> Result<(), String> {
    let version = header_text(headers, "mcp-protocol-version")?.ok_or("MCP-Protocol-Version header is required")?;
    match RequestEnvelope::read(req.params.as_ref()).protocol_version {
        Some(body) if body == version => {}
        Some(body) => {
            return Err(format!("MCP-Protocol-Version header value {version:?} does not match body value {body:?}"));
        }
        None => {
            return Err(format!(
                "MCP-Protocol-Version header value {version:?} but params._meta carries no \
                 io.modelcontextprotocol/protocolVersion"
            ));
        }
    }
    let method = header_text(headers, "mcp-method")?.ok_or("Mcp-Method header is required")?;
    if method != req.method {
        return Err(format!("Mcp-Method header value {method:?} does not match body value {:?}", req.method));
    }
    let field = match req.method.as_str() {
        methods::TOOLS_CALL | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let body = req.params.as_ref().and_then(|p| p.get(field)).and_then(Value::as_str);
    let name = header_text(headers, "mcp-name")?.map(decode_sentinel).transpose()?;
    match (name, body) {
        (None, Some(_)) => Err(format!("Mcp-Name header is required for {}", req.method)),
        (Some(h), Some(b)) if h != b => Err(format!("Mcp-Name header value {h:?} does not match body value {b:?}")),
        (Some(h), None) => Err(format!("Mcp-Name header value {h:?} but the body has no params.{field}")),
        _ => Ok(()),
    }
}

/// A header's value as text; a header that repeats or is not visible ASCII is malformed.
fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(format!("{name} header appears more than once"));
    }
    first.to_str().map(|s| Some(s.trim())).map_err(|_| format!("{name} header contains invalid characters"))
}

/// `=?base64?...?=` carries a value a header cannot; anything else is the value itself.
fn decode_sentinel(value: &str) -> Result<String, String> {
    let Some(inner) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Ok(value.to_owned());
    };
    let bytes = base64_decode(inner).ok_or("Mcp-Name header carries invalid Base64")?;
    String::from_utf8(bytes).map_err(|_| "Mcp-Name header's Base64 value is not UTF-8".to_owned())
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let text = text.as_bytes();
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for (i, chunk) in text.chunks(4).enumerate() {
        let last = i + 1 == text.len() / 4;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// A browser page on another site must not reach a local server (DNS rebinding): an Origin, if
/// sent, must be this machine or the host the request was addressed to.
fn check_origin(headers: &HeaderMap) -> Result<(), String> {
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().map_err(|_| "Forbidden: malformed Origin".to_owned())?;
    let host_of = |authority: &str| -> String {
        let authority = authority.trim().to_ascii_lowercase();
        if let Some(rest) = authority.strip_prefix('[') {
            return rest.split(']').next().map(|h| format!("[{h}]")).unwrap_or_default();
        }
        authority.split(':').next().unwrap_or_default().to_owned()
    };
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| host_of(rest.split('/').next().unwrap_or_default()))
        .unwrap_or_default();
    let request_host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(host_of);
    let local = matches!(origin_host.as_str(), "localhost" | "127.0.0.1" | "[::1]");
    if !origin_host.is_empty() && (local || request_host.as_deref() == Some(origin_host.as_str())) {
        Ok(())
    } else {
        Err(format!("Forbidden: Origin {origin:?} may not use this server"))
    }
}

fn media_type(v: &HeaderValue) -> Option<String> {
    Some(v.to_str().ok()?.split(';').next()?.trim().to_ascii_lowercase())
}

/// Whether the client takes JSON and SSE answers. No Accept header at all is taken as both.
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let mut any = false;
    let (mut json, mut sse) = (false, false);
    for v in headers.get_all(header::ACCEPT) {
        let Ok(v) = v.to_str() else { continue };
        for item in v.split(',') {
            any = true;
            let m = item.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
            json |= matches!(m.as_str(), "application/json" | "application/*" | "*/*");
            sse |= matches!(m.as_str(), "text/event-stream" | "text/*" | "*/*");
        }
    }
    if any { (json, sse) } else { (true, true) }
}

async fn read_body(body: Incoming, max: usize) -> Result<Bytes, HttpResponse> {
    let too_large = || {
        rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            codes::INVALID_REQUEST,
            format!("request body larger than {max} bytes"),
        )
    };
    if body.size_hint().lower() > max as u64 {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, max);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => {
            Err(rpc_error(StatusCode::BAD_REQUEST, None, codes::PARSE_ERROR, format!("reading the body: {e}")))
        }
        Err(_) => Err(rpc_error(StatusCode::REQUEST_TIMEOUT, None, codes::INVALID_REQUEST, "the body took too long")),
    }
}

fn request_id(msg: &Message) -> Option<RequestId> {
    match msg {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

fn reply_response(reply: Reply) -> HttpResponse {
    match reply {
        Reply::Json(msg) => json(StatusCode::OK, &msg),
        Reply::Sse(rx) => sse(rx),
    }
}

fn session_gone(id: Option<RequestId>) -> HttpResponse {
    rpc_error(
        StatusCode::NOT_FOUND,
        id,
        codes::INVALID_REQUEST,
        "Session not found: it ended or expired; initialize again",
    )
}

fn internal_error() -> HttpResponse {
    rpc_error(StatusCode::INTERNAL_SERVER_ERROR, None, codes::INTERNAL_ERROR, "internal error")
}

fn rpc_error(status: StatusCode, id: Option<RequestId>, code: i64, message: impl Into<String>) -> HttpResponse {
    json(status, &Message::error(id, ErrorObject::new(code, message)))
}

fn json(status: StatusCode, msg: &Message) -> HttpResponse {
    let mut r = hyper::Response::new(OutBody::Full(Some(Bytes::from(msg.to_line()))));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A modern `subscriptions/listen` answered as an SSE stream: every message of the subscription
/// as one event, until its response (the subscription's end). The client closing the stream
/// cancels the subscription.
fn listen_stream(conn: Arc<Conn>, id: RequestId, first: Message, mut rx: mpsc::Receiver<Message>) -> HttpResponse {
    let (tx, body) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let mut guard = AbandonConnOnDrop { conn, id: id.clone(), armed: true };
        let mut msg = first;
        loop {
            let end = matches!(&msg, Message::Response(r) if r.id() == Some(&id));
            let event = Bytes::from(format!("data: {}\n\n", msg.to_line().trim_end()));
            if tx.send(event).await.is_err() {
                return;
            }
            if end {
                guard.armed = false;
                return;
            }
            msg = tokio::select! {
                next = rx.recv() => match next {
                    Some(m) => m,
                    None => return,
                },
                () = tx.closed() => return,
            };
        }
    });
    sse(body)
}

fn sse(rx: mpsc::Receiver<Bytes>) -> HttpResponse {
    let mut r = hyper::Response::new(OutBody::Stream(rx));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

fn plain(status: StatusCode, text: &'static str) -> HttpResponse {
    let mut r = hyper::Response::new(OutBody::Full(Some(Bytes::from_static(text.as_bytes()))));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

fn empty(status: StatusCode) -> HttpResponse {
    let mut r = hyper::Response::new(OutBody::Full(None));
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_values_are_decoded_before_comparison() {
        assert_eq!(decode_sentinel("get_weather").unwrap(), "get_weather");
        assert_eq!(decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
        assert_eq!(decode_sentinel("=?base64?IHBhZGRlZCA=?=").unwrap(), " padded ");
        assert_eq!(decode_sentinel("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").unwrap(), "=?base64?literal?=");
        assert!(decode_sentinel("=?base64?not base64?=").is_err());
        assert!(decode_sentinel("=?base64?QQ=A?=").is_err());
    }

    #[test]
    fn origins_of_other_sites_are_refused() {
        let with = |origin: &str, host: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
            h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            check_origin(&h)
        };
        assert!(with("http://localhost:5173", "127.0.0.1:9").is_ok());
        assert!(with("http://127.0.0.1:3000", "127.0.0.1:9").is_ok());
        assert!(with("http://[::1]:3000", "[::1]:9").is_ok());
        assert!(with("https://demo.example:8443", "demo.example:8443").is_ok());
        assert!(with("https://evil.example", "127.0.0.1:9").is_err());
        assert!(with("null", "127.0.0.1:9").is_err());
        assert!(check_origin(&HeaderMap::new()).is_ok());
    }

    #[test]
    fn accept_decides_json_and_sse() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            accepts(&h)
        };
        assert_eq!(with("application/json, text/event-stream"), (true, true));
        assert_eq!(with("application/json"), (true, false));
        assert_eq!(with("text/event-stream;q=0.9"), (false, true));
        assert_eq!(with("*/*"), (true, true));
        assert_eq!(accepts(&HeaderMap::new()), (true, true));
    }
}
