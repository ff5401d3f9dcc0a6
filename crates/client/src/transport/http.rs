//! MCP over Streamable HTTP, in both eras: what a remote server is ([`HttpSpec`]) and the
//! transport that reaches it.
//!
//! Every message the session sends is its own POST; what comes back (one JSON body, or an event
//! stream carrying the server's notifications and requests before the answer) is handed to the
//! session as [`Received`] items, in arrival order. The era is read message by message: a
//! request whose `_meta` names its protocol version is a 2026-07-28 one and carries the mirrored
//! headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`); anything else is legacy and
//! carries the session (`Mcp-Session-Id`, taken from the `initialize` answer) and the negotiated
//! version. Legacy servers also get the GET stream for what they send unasked, resumption of a
//! broken stream with `Last-Event-ID`, and a `DELETE` on close.
//!
//! An exchange that fails without the server's JSON-RPC word (unreachable, an HTML error page,
//! a stream that broke off) becomes an error response for exactly the request it carried
//! ([`HttpFailure`]); an answer too large to read is [`Received::Unreadable`], as on stdio; a
//! session the server no longer knows (404) is [`Received::Closed`], so the server is started
//! again and initialized anew.

mod auth;
mod failure;
mod headers;
mod params;
mod sse;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION, WWW_AUTHENTICATE,
};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskdeck_protocol::framing::FrameError as LineError;
use taskdeck_protocol::{RequestId, methods};
use tokio::sync::{mpsc, oneshot, watch};

pub use self::auth::{Authorize, SignIn, StoredSignIn, probe};
pub use self::failure::{DATA_KEY, HTTP_FAILURE, HttpFailure};
use self::headers::{Kind, LAST_EVENT_ID, Outgoing, PROTOCOL_VERSION, SESSION_ID};
use self::params::ParamHeaders;
use self::sse::{SseDecoder, SseItem};
use super::{BoxFuture, Connection, FrameError, FrameSource, Identity, Received, SendError, Transport};
use crate::ClientError;
use crate::session::{Answers, frame_answers};

/// A remote server, as the config gives it: the endpoint and the headers sent with every request
/// (already resolved: `${env:NAME}` references are the config's business, not the transport's).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpSpec {
    pub name: String,
    /// The MCP endpoint, `http(s)://host[:port]/path`.
    pub url: String,
    /// Sent on every request. They may hold secrets (an API key): never logged.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Where the `Authorization` header comes from, for a server that wants a sign-in: set by
    /// whoever holds the tokens (the engine), not by the config.
    #[serde(skip)]
    pub sign_in: SignIn,
}

/// Debug output names the headers but never shows their values, nor the URL's query or
/// userinfo: a spec ends up in logs.
impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = Url::parse(&self.url).map(|u| shown(&u)).unwrap_or_else(|_| "(not a URL)".into());
        let headers: BTreeMap<&str, &str> = self.headers.keys().map(|k| (k.as_str(), "(hidden)")).collect();
        f.debug_struct("HttpSpec").field("name", &self.name).field("url", &url).field("headers", &headers).finish()
    }
}

/// How long reaching the server may take (DNS, TCP, TLS).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a server may take to start answering: the status and headers. Not applied to a
/// tool call or `tasks/result`, whose answer may rightly come only when the work is done (the
/// session's own timeout bounds those), and never to a body or an event stream.
const HEADERS_TIMEOUT: Duration = Duration::from_secs(30);
/// Finds a peer that vanished under a quiet event stream.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// Items read ahead of the session, as on stdio.
const INBOX: usize = 64;
/// Before reconnecting a stream, when the server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// A server's `retry` beyond this is taken as this: a stream must not go quiet for hours.
const MAX_RETRY: Duration = Duration::from_secs(60);
/// Reconnections of a request's broken stream that bring nothing before the request fails.
const RESUME_ATTEMPTS: u32 = 5;
/// How long the messages after `initialized` wait for the GET stream to open: a server that
/// holds its headers back until it has an event must not hold the session up for longer.
const GET_OPEN_WAIT: Duration = Duration::from_secs(2);
/// Failed attempts in a row at the GET stream before Taskdeck stops opening it.
const LISTEN_ATTEMPTS: u32 = 8;
/// The most a JSON-RPC error body of an HTTP error may take.
const ERROR_BODY_LIMIT: usize = 1024 * 1024;
/// Same-origin redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

/// The sending half. Dropping it ends every exchange in flight.
pub struct HttpTransport {
    identity: Identity,
    inner: Arc<Inner>,
    out: mpsc::UnboundedSender<Out>,
}

enum Out {
    Message(Box<Outgoing>),
    /// Everything queued before it has been sent.
    Flushed(oneshot::Sender<()>),
}

struct Inner {
    name: String,
    url: Url,
    client: reqwest::Client,
    /// The config's headers, marked sensitive so no debug output shows them.
    headers: HeaderMap,
    sign_in: SignIn,
    max_frame: usize,
    tx: mpsc::Sender<Received>,
    /// Set once, with the reason, when the connection is over: every exchange ends on it.
    stop: watch::Sender<Option<String>>,
    state: Mutex<Conn>,
}

#[derive(Default)]
struct Conn {
    /// The legacy session, from the `initialize` answer.
    session_id: Option<HeaderValue>,
    /// The legacy version `initialize` negotiated, sent on every request after it.
    protocol_version: Option<HeaderValue>,
    /// The requests in flight, each with what ends its exchange early, and whether it was
    /// modern (where closing its stream is the cancellation).
    open: HashMap<RequestId, (bool, oneshot::Sender<()>)>,
    listening: bool,
    /// `initialize` was sent: the server is legacy, whose cancellations are notifications.
    legacy: bool,
    /// The `x-mcp-header` annotations of the tools listed so far.
    params: ParamHeaders,
    /// A resumed session whose GET stream is not open yet: it opens once the server has taken a
    /// request on the session (what `initialized` does on a fresh one), so a session the server
    /// no longer knows is learnt from that request alone.
    resumed: bool,
}

struct HttpFrames {
    rx: mpsc::Receiver<Received>,
    stop: watch::Receiver<Option<String>>,
    done: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl HttpTransport {
    /// Prepares the connection to `spec.url`; nothing is sent until the session's first message,
    /// so an unreachable server fails that request, with why. `max_frame` bounds one message
    /// body or event.
    pub fn connect(spec: &HttpSpec, max_frame: usize) -> Result<Connection, ClientError> {
        Self::open(spec, max_frame, None)
    }

    /// Prepares a connection that carries on the legacy session `session_id` a connection before
    /// this one (maybe another Taskdeck process) initialized with `protocol_version`: every
    /// request carries both from the first, and the GET stream opens at once, so no `initialize`
    /// is sent. A session the server no longer knows ends the connection at its first request
    /// (404), as any ended session does, and the caller initializes afresh.
    pub fn resume(
        spec: &HttpSpec,
        max_frame: usize,
        session_id: &str,
        protocol_version: &str,
    ) -> Result<Connection, ClientError> {
        let bad = |detail: &str| ClientError::Handshake { server: spec.name.clone(), detail: detail.into() };
        // Never quoted: the id is private to the session.
        let mut session = HeaderValue::from_str(session_id).map_err(|_| bad("the stored session id is not valid"))?;
        session.set_sensitive(true);
        let version =
            HeaderValue::from_str(protocol_version).map_err(|_| bad("the stored protocol version is not valid"))?;
        Self::open(spec, max_frame, Some((session, version)))
    }

    fn open(
        spec: &HttpSpec,
        max_frame: usize,
        resumed: Option<(HeaderValue, HeaderValue)>,
    ) -> Result<Connection, ClientError> {
        let bad = |detail: String| ClientError::Handshake { server: spec.name.clone(), detail };
        let url = Url::parse(&spec.url).map_err(|e| bad(format!("the URL is not valid: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad("the URL must be http:// or https:// with a host".into()));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &spec.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(format!("{name:?} is not a valid HTTP header name")))?;
            // The value is never quoted: it may be a secret.
            let mut value =
                HeaderValue::from_str(value).map_err(|_| bad(format!("the value of header {name} is not valid")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let origin = url.origin();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_keepalive(TCP_KEEPALIVE)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.url().origin() == origin && attempt.previous().len() <= MAX_REDIRECTS {
                    attempt.follow()
                } else {
                    // Handed back as the 3xx it is, and refused with where it pointed.
                    attempt.stop()
                }
            }))
            .build()
            .map_err(|e| bad(format!("could not set up HTTPS: {}", describe(&e))))?;
        let identity = Identity { name: spec.name.clone(), kind: "http", peer: shown(&url), pid: None };
        let (tx, rx) = mpsc::channel(INBOX);
        let (stop, stop_rx) = watch::channel(None);
        let mut conn = Conn::default();
        if let Some((session, version)) = resumed {
            conn.session_id = Some(session);
            conn.protocol_version = Some(version);
            conn.legacy = true;
            conn.resumed = true;
        }
        let inner = Arc::new(Inner {
            name: spec.name.clone(),
            url,
            client,
            headers,
            sign_in: spec.sign_in.clone(),
            max_frame,
            tx,
            stop,
            state: Mutex::new(conn),
        });
        let (out, out_rx) = mpsc::unbounded_channel();
        spawn(&inner, write_loop(inner.clone(), out_rx));
        let transport = HttpTransport { identity, inner, out };
        Ok(Connection {
            transport: Box::new(transport),
            frames: Box::new(HttpFrames { rx, stop: stop_rx, done: false }),
        })
    }
}

/// The URL as logs and errors show it: without userinfo, query or fragment, which may hold
/// secrets.
fn shown(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// Runs `work` until it ends or the connection stops.
fn spawn(inner: &Arc<Inner>, work: impl std::future::Future<Output = ()> + Send + 'static) {
    let mut stop = inner.stop.subscribe();
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.wait_for(Option::is_some) => {}
            () = work => {}
        }
    });
}

impl Transport for HttpTransport {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn send(&self, message: String) -> Result<(), SendError> {
        if message.len() > self.inner.max_frame {
            return Err(SendError::TooLarge { limit: self.inner.max_frame });
        }
        if let Some(reason) = self.inner.stopped() {
            return Err(SendError::Closed { reason });
        }
        // The session sends only messages it built; anything else is not ours to carry.
        let outgoing = Outgoing::read(message).ok_or(SendError::TooLarge { limit: self.inner.max_frame })?;
        self.out.send(Out::Message(Box::new(outgoing))).map_err(|_| SendError::Closed {
            reason: self.inner.stopped().unwrap_or_else(|| "the connection closed".into()),
        })
    }

    fn close(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.flush(grace).await;
            let session = lock(&self.inner.state).session_id.clone();
            if let Some(session) = session {
                // A legacy server is told the session is over; one that does not end sessions
                // answers 405, which is as good.
                let request = self.inner.request(reqwest::Method::DELETE).header(SESSION_ID, session);
                let (mut request, _) = self.inner.authorized(request).await;
                if let Some(version) = lock(&self.inner.state).protocol_version.clone() {
                    request = request.header(PROTOCOL_VERSION, version);
                }
                match tokio::time::timeout(grace.min(HEADERS_TIMEOUT), request.send()).await {
                    Ok(Ok(r)) => tracing::debug!(server = %self.inner.name, status = %r.status(), "session ended"),
                    Ok(Err(e)) => {
                        tracing::debug!(server = %self.inner.name, "ending the session failed: {}", describe(&e))
                    }
                    Err(_) => tracing::debug!(server = %self.inner.name, "ending the session took too long"),
                }
            }
            self.inner.end("the connection was closed".into());
        })
    }

    fn kill(&self) {
        self.inner.end("the connection was closed".into());
    }

    fn session_id(&self) -> Option<String> {
        lock(&self.inner.state).session_id.as_ref().and_then(|v| v.to_str().ok()).map(str::to_owned)
    }

    /// No `DELETE`: the server keeps the session, and with it the tasks it holds there, for the
    /// next connection to resume.
    fn detach(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.flush(grace).await;
            tracing::debug!(server = %self.inner.name, "connection closed, the session left open");
            self.inner.end("the connection was closed".into());
        })
    }
}

impl HttpTransport {
    /// Waits (up to `grace`) until what was queued has been sent.
    async fn flush(&self, grace: Duration) {
        let (done, flushed) = oneshot::channel();
        if self.out.send(Out::Flushed(done)).is_ok() {
            let _ = tokio::time::timeout(grace, flushed).await;
        }
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.inner.end("the connection was closed".into());
    }
}

impl FrameSource for HttpFrames {
    fn receive(&mut self) -> BoxFuture<'_, Option<Received>> {
        Box::pin(async move {
            if self.done {
                return None;
            }
            tokio::select! {
                // What arrived before the end is handed on first.
                biased;
                Some(item) = self.rx.recv() => {
                    self.done = matches!(item, Received::Closed { .. });
                    Some(item)
                }
                reason = stopped(&mut self.stop) => {
                    self.done = true;
                    Some(Received::Closed { reason })
                }
            }
        })
    }
}

async fn stopped(stop: &mut watch::Receiver<Option<String>>) -> String {
    match stop.wait_for(Option::is_some).await {
        Ok(reason) => reason.clone().unwrap_or_default(),
        Err(_) => "the connection closed".into(),
    }
}

impl Inner {
    fn stopped(&self) -> Option<String> {
        self.stop.borrow().clone()
    }

    /// Ends the connection, once: every exchange stops and the frames report `reason`.
    fn end(&self, reason: String) {
        self.stop.send_if_modified(|r| {
            if r.is_some() {
                return false;
            }
            *r = Some(reason);
            true
        });
    }

    async fn deliver(&self, item: Received) {
        let _ = self.tx.send(item).await;
    }

    /// Fails request `id` with `failure`, as an error response from the server would.
    async fn fail(&self, id: &RequestId, method: &str, failure: HttpFailure) {
        let error = failure.to_error();
        // A refusal for want of a sign-in is the engine's to tell the user, with the way out.
        if failure.needs_sign_in() {
            tracing::info!(server = %self.name, %method, %id, "{}", error.message);
        } else {
            tracing::warn!(server = %self.name, %method, %id, "{}", error.message);
        }
        let id = serde_json::to_value(id).unwrap_or(Value::Null);
        self.deliver(Received::Message(failure::response(&id, &error))).await;
    }

    /// The server ended the session: the supervisor starts a new one, with a fresh `initialize`.
    async fn session_gone(&self, what: &str) {
        let reason = format!("the server ended the HTTP session (404 to {what}); it must be initialized again");
        tracing::warn!(server = %self.name, "{reason}");
        // Nobody may come back with it: the server said it knows it no more.
        lock(&self.state).session_id = None;
        self.deliver(Received::Closed { reason: reason.clone() }).await;
        self.end(reason);
    }

    /// The server cannot be reached: the connection is over, as when a stdio server's process
    /// ends, and whoever supervises the server starts it again, with backoff.
    async fn unreachable(&self, detail: &str) {
        let reason = format!("it could not be reached at {} ({detail})", shown(&self.url));
        tracing::warn!(server = %self.name, "{reason}");
        self.deliver(Received::Closed { reason: reason.clone() }).await;
        self.end(reason);
    }

    /// A request to the endpoint with the config's headers.
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        self.client.request(method, self.url.clone()).headers(self.headers.clone())
    }

    /// `request` with the sign-in's `Authorization` header, when there is one (a header of that
    /// name in the config wins: the user set it). Returns the value sent, to tell a 401 to it
    /// from one to a newer sign-in.
    async fn authorized(&self, request: reqwest::RequestBuilder) -> (reqwest::RequestBuilder, Option<String>) {
        if self.headers.contains_key(AUTHORIZATION) {
            return (request, None);
        }
        let Some(header) = self.sign_in.header().await else { return (request, None) };
        match HeaderValue::from_str(&header) {
            Ok(mut value) => {
                value.set_sensitive(true);
                (request.header(AUTHORIZATION, value), Some(header))
            }
            Err(_) => {
                tracing::warn!(server = %self.name, "the stored access token is not sendable as a header");
                (request, None)
            }
        }
    }

    /// Sends what `build` makes with the sign-in's header; on a 401, once more when the sign-in
    /// has a new header to offer (renewed, or signed in again since).
    async fn send_authorized(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, HttpFailure> {
        let (request, sent) = self.authorized(build()).await;
        let response = send(request, timeout).await?;
        if response.status() != StatusCode::UNAUTHORIZED || !self.sign_in.rejected(sent).await {
            return Ok(response);
        }
        tracing::info!(server = %self.name, "sending again with the renewed sign-in");
        let (request, _) = self.authorized(build()).await;
        send(request, timeout).await
    }

    /// The POST carrying `m`, with the headers its era asks for. Returns whether it carried
    /// the session, whose 404 then means the session is gone.
    fn post(&self, m: &Outgoing) -> (reqwest::RequestBuilder, bool) {
        let mut request = self
            .request(reqwest::Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(m.text.clone());
        let mut with_session = false;
        if m.is_modern() {
            let mut mirrored: Vec<(String, String)> =
                m.modern_headers.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
            if m.method() == Some(methods::TOOLS_CALL) {
                let params = m.params.as_ref();
                let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str).unwrap_or_default();
                mirrored.extend(lock(&self.state).params.headers(tool, params.and_then(|p| p.get("arguments"))));
            }
            for (name, value) in mirrored {
                match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value)) {
                    (Ok(n), Ok(v)) => request = request.header(n, v),
                    // Names are checked when learnt and values encoded to visible ASCII.
                    _ => tracing::warn!(server = %self.name, header = %name, "header not sendable"),
                }
            }
        } else if m.method() != Some(methods::INITIALIZE) {
            let conn = lock(&self.state);
            if let Some(session) = &conn.session_id {
                request = request.header(SESSION_ID, session.clone());
                with_session = true;
            }
            if let Some(version) = &conn.protocol_version {
                request = request.header(PROTOCOL_VERSION, version.clone());
            }
        }
        (request, with_session)
    }

    /// The legacy GET stream, or a resumption of a broken one from `last_event_id`.
    fn get(&self, last_event_id: Option<&str>) -> (reqwest::RequestBuilder, bool) {
        let mut request = self.request(reqwest::Method::GET).header(ACCEPT, "text/event-stream");
        let conn = lock(&self.state);
        let with_session = conn.session_id.is_some();
        if let Some(session) = &conn.session_id {
            request = request.header(SESSION_ID, session.clone());
        }
        if let Some(version) = &conn.protocol_version {
            request = request.header(PROTOCOL_VERSION, version.clone());
        }
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            request = request.header(LAST_EVENT_ID, id);
        }
        (request, with_session)
    }

    /// Reads the session a legacy answer names. A different one than ours mid-session is not a
    /// session Taskdeck has: the connection ends, and the server is initialized again.
    async fn check_session(&self, response: &reqwest::Response, initialize: bool) -> bool {
        let Some(id) = response.headers().get(SESSION_ID) else { return true };
        let changed = {
            let mut conn = lock(&self.state);
            match &conn.session_id {
                None if initialize => {
                    conn.session_id = Some(id.clone());
                    false
                }
                None => false,
                Some(ours) => ours != id,
            }
        };
        if changed {
            // Neither id is a session Taskdeck can carry on.
            lock(&self.state).session_id = None;
            let reason = "the server changed the HTTP session id mid-session; it must be initialized again".to_owned();
            tracing::warn!(server = %self.name, "{reason}");
            self.deliver(Received::Closed { reason: reason.clone() }).await;
            self.end(reason);
            return false;
        }
        true
    }

    /// What the transport learns from an answer before the session sees it: the version
    /// `initialize` negotiated, for the header on every later request; the `x-mcp-header`
    /// annotations of listed tools, leaving out those whose annotations are invalid.
    fn answered(&self, m: &Outgoing, answer: &mut Value) {
        if m.is_initialize() {
            if let Some(version) = answer.pointer("/result/protocolVersion").and_then(Value::as_str)
                && let Ok(v) = HeaderValue::from_str(version)
            {
                lock(&self.state).protocol_version = Some(v);
            }
        } else if m.is_modern() && m.method() == Some(methods::TOOLS_LIST) {
            let rejected = lock(&self.state).params.learn(answer);
            for (tool, why) in rejected {
                tracing::warn!(server = %self.name, %tool, "tool left out: {why}");
            }
        }
    }
}

/// Sends the session's messages in order. A request's exchange runs on its own, so a long
/// answer holds nothing up; a notification or response is sent before what follows it (so
/// `initialized` reaches the server before the requests after it), bounded by the headers
/// timeout.
async fn write_loop(inner: Arc<Inner>, mut rx: mpsc::UnboundedReceiver<Out>) {
    while let Some(out) = rx.recv().await {
        let m = match out {
            Out::Message(m) => m,
            Out::Flushed(done) => {
                let _ = done.send(());
                continue;
            }
        };
        match &m.kind {
            Kind::Request { id, method } => {
                let (cancel, cancelled) = oneshot::channel();
                let mut conn = lock(&inner.state);
                conn.legacy |= method == methods::INITIALIZE;
                conn.open.insert(id.clone(), (m.modern_version.is_some(), cancel));
                drop(conn);
                spawn(&inner, exchange(inner.clone(), *m, cancelled));
            }
            Kind::Notification { method, params } if method == methods::CANCELLED => {
                let id = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                let open = id.and_then(|id| lock(&inner.state).open.remove(&id));
                // The session gave up on the request: its stream ends here, which on a modern
                // server is the cancellation itself; a legacy one is told as well.
                let modern = match open {
                    Some((modern, cancel)) => {
                        let _ = cancel.send(());
                        modern
                    }
                    None => !lock(&inner.state).legacy,
                };
                if !modern {
                    one_way(&inner, &m).await;
                }
            }
            Kind::Notification { method, .. } => {
                let initialized = method == methods::INITIALIZED;
                if one_way(&inner, &m).await && initialized {
                    let start = !std::mem::replace(&mut lock(&inner.state).listening, true);
                    if start {
                        // What follows `initialized` waits until the GET stream is open (or
                        // refused): a server may send a request of its own on that stream as soon
                        // as a call begins, and some drop it when no stream is open yet.
                        let (opened, open) = oneshot::channel();
                        spawn(&inner, listen(inner.clone(), Some(opened)));
                        let _ = tokio::time::timeout(GET_OPEN_WAIT, open).await;
                    }
                }
            }
            Kind::Response => {
                one_way(&inner, &m).await;
            }
        }
    }
}

/// POSTs a notification or a response, which the server accepts with 202 and nothing else.
/// Returns whether it was accepted.
async fn one_way(inner: &Inner, m: &Outgoing) -> bool {
    let with_session = inner.post(m).1;
    let what = m.method().unwrap_or("a response");
    let response = match inner.send_authorized(|| inner.post(m).0, Some(HEADERS_TIMEOUT)).await {
        Ok(r) => r,
        Err(HttpFailure::Unreachable { detail }) => {
            inner.unreachable(&detail).await;
            return false;
        }
        Err(failure) => {
            tracing::warn!(server = %inner.name, "could not send {what}: {}", failure.message());
            return false;
        }
    };
    let status = response.status();
    tracing::debug!(server = %inner.name, %what, %status, "POST");
    if status == StatusCode::NOT_FOUND && with_session {
        inner.session_gone(what).await;
        return false;
    }
    if !status.is_success() {
        tracing::warn!(server = %inner.name, %what, %status, "the server did not accept the message");
    }
    status.is_success()
}

/// Sends a request, bounded by `timeout` until the status and headers are in.
async fn send(request: reqwest::RequestBuilder, timeout: Option<Duration>) -> Result<reqwest::Response, HttpFailure> {
    let sent = request.send();
    let response = match timeout {
        Some(t) => tokio::time::timeout(t, sent)
            .await
            .map_err(|_| HttpFailure::Exchange { detail: format!("no status and headers within {}s", t.as_secs()) })?,
        None => sent.await,
    };
    let response = response.map_err(|e| {
        if e.is_connect() {
            HttpFailure::Unreachable { detail: describe(&e) }
        } else {
            HttpFailure::Exchange { detail: describe(&e) }
        }
    })?;
    if response.status().is_redirection() {
        let to = response
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| response.url().join(l).ok())
            .map(|u| shown(&u))
            .unwrap_or_else(|| "an unnamed location".into());
        return Err(HttpFailure::Redirected { status: response.status().as_u16(), to });
    }
    Ok(response)
}

/// What went wrong, in words, without the URL (whose query may hold a secret): the kind of
/// failure and its innermost cause ("Connection refused", "invalid peer certificate").
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_connect() {
        "could not connect"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_body() || e.is_decode() {
        "the answer broke off"
    } else if e.is_redirect() {
        "too many redirects"
    } else {
        "the request failed"
    };
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut last = None;
    while let Some(c) = cause {
        last = Some(c.to_string());
        cause = c.source();
    }
    match last {
        Some(c) => format!("{kind}: {c}"),
        None => kind.to_owned(),
    }
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
}

/// One request's exchange, until it is answered or failed, or the session gives up on it.
async fn exchange(inner: Arc<Inner>, m: Outgoing, cancelled: oneshot::Receiver<()>) {
    let Some(id) = m.request_id().cloned() else { return };
    tokio::select! {
        _ = cancelled => tracing::debug!(server = %inner.name, %id, "stream closed: the session gave up on the request"),
        () = run_request(&inner, &m, &id) => {}
    }
    lock(&inner.state).open.remove(&id);
}

async fn run_request(inner: &Arc<Inner>, m: &Outgoing, id: &RequestId) {
    let method = m.method().unwrap_or_default();
    let modern = m.is_modern();
    let with_session = inner.post(m).1;
    let timeout = match method {
        methods::TOOLS_CALL | methods::TASKS_RESULT => None,
        _ => Some(HEADERS_TIMEOUT),
    };
    let response = match inner.send_authorized(|| inner.post(m).0, timeout).await {
        Ok(r) => r,
        Err(HttpFailure::Unreachable { detail }) => return inner.unreachable(&detail).await,
        Err(failure) => return inner.fail(id, method, failure).await,
    };
    let status = response.status();
    tracing::debug!(server = %inner.name, %method, %id, %status, "POST");
    if status == StatusCode::NOT_FOUND && with_session {
        return inner.session_gone(method).await;
    }
    if !status.is_success() {
        return refused(inner, id, method, response).await;
    }
    if !modern && !inner.check_session(&response, m.is_initialize()).await {
        return;
    }
    if with_session && std::mem::take(&mut lock(&inner.state).resumed) {
        lock(&inner.state).listening = true;
        spawn(inner, listen(inner.clone(), None));
    }
    match content_type(&response).as_deref() {
        Some("text/event-stream") => stream_answer(inner, m, id, method, response).await,
        Some("application/json") => json_answer(inner, m, id, method, response).await,
        _ if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT => {
            let detail = format!("the request was accepted (HTTP {status}) but not answered");
            inner.fail(id, method, HttpFailure::NoAnswer { detail }).await;
        }
        other => {
            let detail =
                format!("the answer has content type {}, neither JSON nor an event stream", other.unwrap_or("(none)"));
            inner.fail(id, method, HttpFailure::NoAnswer { detail }).await;
        }
    }
}

/// A body read whole, within a limit.
enum Body {
    Whole(Vec<u8>),
    /// Longer than the limit.
    TooLarge,
    Broken(String),
}

async fn read_body(mut response: reqwest::Response, limit: usize) -> Body {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Body::TooLarge;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Body::Whole(body),
            Err(e) => return Body::Broken(describe(&e)),
        }
    }
}

/// The start a frame too large to read is handed on with: a JSON body is the answer to the
/// request its POST carried, whatever its own first bytes name, so the start names that request.
fn start_naming(id: &RequestId) -> String {
    let id = serde_json::to_string(id).unwrap_or_default();
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#)
}

async fn json_answer(inner: &Inner, m: &Outgoing, id: &RequestId, method: &str, response: reqwest::Response) {
    let text = match read_body(response, inner.max_frame).await {
        Body::Whole(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let error = LineError::InvalidUtf8 { offset: e.utf8_error().valid_up_to() }.into();
                return inner.deliver(Received::Unreadable { error, start: start_naming(id) }).await;
            }
        },
        Body::TooLarge => {
            let error = LineError::TooLong { limit: inner.max_frame }.into();
            return inner.deliver(Received::Unreadable { error, start: start_naming(id) }).await;
        }
        Body::Broken(detail) => {
            let detail = format!("the answer broke off: {detail}");
            return inner.fail(id, method, HttpFailure::StreamEnded { detail }).await;
        }
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            let error = FrameError::Invalid { detail: format!("the answer is not JSON: {e}") };
            return inner.deliver(Received::Unreadable { error, start: start_naming(id) }).await;
        }
    };
    match answer_of(value, id) {
        Some(mut answer) => {
            inner.answered(m, &mut answer);
            inner.deliver(Received::Message(answer.to_string())).await;
        }
        None => {
            // Not an answer to this request: the session reads it for what it is, and the
            // request fails now rather than wait for an answer that is not coming.
            inner.deliver(Received::Message(text)).await;
            let detail = "what came back is not the answer to this request".to_owned();
            inner.fail(id, method, HttpFailure::NoAnswer { detail }).await;
        }
    }
}

/// `message` as the answer to request `id`, if it is one. An error without an id (the spec lets
/// a server leave it out) is the answer to the request its POST carried, and gets its id.
fn answer_of(mut message: Value, id: &RequestId) -> Option<Value> {
    let obj = message.as_object_mut()?;
    if obj.contains_key("method") || !(obj.contains_key("result") || obj.contains_key("error")) {
        return None;
    }
    match obj.get("id") {
        None | Some(Value::Null) if obj.contains_key("error") => {
            obj.insert("id".into(), serde_json::to_value(id).ok()?);
            Some(message)
        }
        Some(v) if serde_json::from_value::<RequestId>(v.clone()).ok().as_ref() == Some(id) => Some(message),
        _ => None,
    }
}

/// An HTTP error status: the server's JSON-RPC error when the body holds one, else a typed
/// failure naming the status.
async fn refused(inner: &Inner, id: &RequestId, method: &str, response: reqwest::Response) {
    let status = response.status();
    let www_authenticate = response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    match status {
        StatusCode::UNAUTHORIZED => {
            return inner.fail(id, method, HttpFailure::SignInNeeded { www_authenticate }).await;
        }
        StatusCode::FORBIDDEN => {
            inner.sign_in.forbidden(www_authenticate.clone()).await;
            return inner.fail(id, method, HttpFailure::Forbidden { www_authenticate }).await;
        }
        _ => {}
    }
    let content_type = content_type(&response);
    if let Body::Whole(bytes) = read_body(response, inner.max_frame.min(ERROR_BODY_LIMIT)).await
        && let Ok(value) = serde_json::from_slice::<Value>(&bytes)
        && value.get("error").is_some_and(Value::is_object)
        && let Some(answer) = answer_of(value, id)
    {
        tracing::debug!(server = %inner.name, %method, %status, "HTTP error with a JSON-RPC error");
        return inner.deliver(Received::Message(answer.to_string())).await;
    }
    inner.fail(id, method, HttpFailure::Status { status: status.as_u16(), content_type }).await;
}

/// How one event stream ended.
enum StreamEnd {
    /// It carried the answer to the request it was for.
    Answered,
    /// It ended (or broke) without it; `events` says whether it brought anything at all.
    Ended { detail: String, events: bool },
}

/// Reads an event stream, handing every message on; stops at the answer to `answering`.
async fn read_stream(
    inner: &Inner,
    mut response: reqwest::Response,
    decoder: &mut SseDecoder,
    answering: Option<(&RequestId, &Outgoing)>,
) -> StreamEnd {
    let mut items = Vec::new();
    let mut events = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                let detail = if decoder.mid_event() { "ended in the middle of an event" } else { "ended" };
                return StreamEnd::Ended { detail: detail.into(), events };
            }
            Err(e) => return StreamEnd::Ended { detail: format!("broke off ({})", describe(&e)), events },
        };
        decoder.feed(&chunk, &mut items);
        for item in items.drain(..) {
            events = true;
            match item {
                SseItem::Message(text) => {
                    let answer = answering.and_then(|(id, m)| {
                        let mut answer = answer_of(serde_json::from_str(&text).ok()?, id)?;
                        inner.answered(m, &mut answer);
                        Some(answer)
                    });
                    match answer {
                        Some(answer) => {
                            inner.deliver(Received::Message(answer.to_string())).await;
                            return StreamEnd::Answered;
                        }
                        None => match answering {
                            Some((id, _)) => inner.deliver(Received::OnStream { text, request: id.clone() }).await,
                            None => inner.deliver(Received::Message(text)).await,
                        },
                    }
                }
                SseItem::Unreadable { error, start } => {
                    let answered =
                        answering.is_some_and(|(id, _)| frame_answers(&start) == Answers::Request(id.clone()));
                    inner.deliver(Received::Unreadable { error, start }).await;
                    if answered {
                        return StreamEnd::Answered;
                    }
                }
            }
        }
    }
}

fn retry_delay(decoder: &SseDecoder) -> Duration {
    decoder.retry_ms().map(Duration::from_millis).unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)
}

/// A request answered with an event stream: read to its answer; a legacy stream that breaks off
/// after naming an event id is resumed with `Last-Event-ID`, after the `retry` the server asked for.
async fn stream_answer(inner: &Inner, m: &Outgoing, id: &RequestId, method: &str, response: reqwest::Response) {
    let modern = m.is_modern();
    let mut decoder = SseDecoder::new(inner.max_frame);
    let mut response = response;
    // Resumptions in a row that brought nothing.
    let mut idle = 0;
    loop {
        let mut detail = match read_stream(inner, response, &mut decoder, Some((id, m))).await {
            StreamEnd::Answered => return,
            StreamEnd::Ended { detail, events } => {
                if events {
                    idle = 0;
                }
                format!("its event stream {detail}")
            }
        };
        decoder = decoder.resumed();
        response = loop {
            let last = decoder.last_event_id().map(str::to_owned);
            let Some(last) = last.filter(|_| !modern && idle < RESUME_ATTEMPTS) else {
                let detail = format!("no answer came: {detail}");
                return inner.fail(id, method, HttpFailure::StreamEnded { detail }).await;
            };
            idle += 1;
            let delay = retry_delay(&decoder);
            tracing::info!(server = %inner.name, %method, %id, attempt = idle, "{detail}; resuming in {}ms", delay.as_millis());
            tokio::time::sleep(delay).await;
            let with_session = inner.get(Some(&last)).1;
            match inner.send_authorized(|| inner.get(Some(&last)).0, Some(HEADERS_TIMEOUT)).await {
                Ok(r) if r.status() == StatusCode::NOT_FOUND && with_session => {
                    return inner.session_gone("a resumed stream").await;
                }
                Ok(r) if r.status().is_success() && content_type(&r).as_deref() == Some("text/event-stream") => {
                    break r;
                }
                Ok(r) => {
                    detail =
                        format!("its event stream ended, and resuming it was refused (HTTP {})", r.status().as_u16())
                }
                Err(failure) => {
                    detail = format!("its event stream ended, and resuming it failed ({})", failure.message())
                }
            }
        };
    }
}

/// The legacy GET stream: what the server sends unasked (notifications, its own requests),
/// kept open for the session's life. A server without one answers 405; one that closes it is
/// reconnected after its `retry`, from the last event id, backing off while attempts fail.
async fn listen(inner: Arc<Inner>, mut opened: Option<oneshot::Sender<()>>) {
    let mut decoder = SseDecoder::new(inner.max_frame);
    let mut failures: u32 = 0;
    loop {
        let with_session = inner.get(decoder.last_event_id()).1;
        let sent = inner.send_authorized(|| inner.get(decoder.last_event_id()).0, Some(HEADERS_TIMEOUT)).await;
        // The first answer, whatever it is, is what the write loop waits for.
        if let Some(opened) = opened.take() {
            let _ = opened.send(());
        }
        match sent {
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!(server = %inner.name, "the server offers no GET stream");
                return;
            }
            Ok(r) if r.status() == StatusCode::NOT_FOUND && with_session => {
                return inner.session_gone("the GET stream").await;
            }
            Ok(r) if r.status().is_success() && content_type(&r).as_deref() == Some("text/event-stream") => {
                tracing::debug!(server = %inner.name, "GET stream open");
                if !inner.check_session(&r, false).await {
                    return;
                }
                // A server may close its stream after every event and have it polled, at its
                // `retry`: a stream that opened is no failure.
                failures = 0;
                read_stream(&inner, r, &mut decoder, None).await;
                decoder = decoder.resumed();
            }
            Ok(r) => {
                tracing::info!(server = %inner.name, status = %r.status(), "the GET stream was refused");
                failures += 1;
            }
            Err(failure) => {
                tracing::info!(server = %inner.name, "the GET stream failed: {}", failure.message());
                failures += 1;
            }
        }
        if failures >= LISTEN_ATTEMPTS {
            tracing::warn!(server = %inner.name, "giving up on the server's GET stream after {failures} failed attempts");
            return;
        }
        let backoff = retry_delay(&decoder).saturating_mul(2u32.saturating_pow(failures.saturating_sub(1)));
        tokio::time::sleep(backoff.min(MAX_RETRY)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_in_debug_output_shows_no_secrets() {
        let spec = HttpSpec {
            name: "remote".into(),
            url: "https://user:pw@example.com/mcp?key=k1".into(),
            headers: [("Authorization".to_owned(), "Bearer t0ken".to_owned())].into(),
            sign_in: SignIn::none(),
        };
        let text = format!("{spec:?}");
        assert!(text.contains("Authorization") && text.contains("https://example.com/mcp"), "{text}");
        for secret in ["t0ken", "pw", "k1"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}
