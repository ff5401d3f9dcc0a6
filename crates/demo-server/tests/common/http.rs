//! A plain HTTP/1.1 peer for the demo server's `--http` mode, over raw TCP: one connection per
//! request, JSON and SSE answers read as they come, and every JSON-RPC message the server sends
//! checked against the official schema of the era.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_schema_check::{Era, Sender};

use super::{WAIT, demo_server, lines_of, modern_meta, schemas, without_own_meta};

/// The demo server started with `--http 127.0.0.1:0`.
pub struct HttpServer {
    child: Child,
    pub url: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// Lines the server wrote to stdout after its URL (there must be none).
    stdout: Receiver<String>,
}

impl HttpServer {
    pub fn start(state: &Path, extra: &[&str]) -> Self {
        let args = [&["--http", "127.0.0.1:0"], extra].concat();
        let mut child = demo_server(state, &args).stdin(Stdio::null()).spawn().expect("spawn demo server");
        let rx = lines_of(child.stdout.take().unwrap());
        let url = rx.recv_timeout(WAIT).expect("the server prints its URL first");
        let addr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("not an endpoint URL: {url:?}"))
            .to_owned();
        Self { child, url, addr, stdout: rx }
    }

    pub fn port(&self) -> u16 {
        self.addr.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port")
    }

    pub fn kill(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }

    /// A signal (`"TERM"`, `"INT"`), and the exit status once the server is gone.
    pub fn signal(mut self, name: &str) -> ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([&format!("-{name}"), &pid]).status().expect("kill").success());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let extra: Vec<String> = self.stdout.try_iter().collect();
                assert!(extra.is_empty(), "stdout carries only the URL, also saw {extra:?}");
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit after SIG{name}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub data: String,
    /// A `retry` field: how long the server asks the client to wait before reconnecting.
    pub retry: Option<u64>,
}

/// An HTTP response: a whole body, or SSE events arriving on a channel.
pub struct Reply {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    events: Option<Receiver<Event>>,
    socket: TcpStream,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn is_sse(&self) -> bool {
        self.events.is_some()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("status {} body is not JSON ({e}): {:?}", self.status, self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The next event of an SSE answer; None once the stream ended (or after `timeout`).
    pub fn next_event(&self, timeout: Duration) -> Option<Event> {
        self.events.as_ref().expect("an SSE answer").recv_timeout(timeout).ok()
    }

    /// Hangs up, as a client whose network went away.
    pub fn hang_up(self) {
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// Sends one request on a fresh connection and reads the answer's head (and a whole body).
pub fn send(addr: &str, method: &str, path: &str, headers: &[(&str, String)], body: Option<&[u8]>) -> Reply {
    let mut socket = TcpStream::connect(addr).expect("connect");
    socket.set_read_timeout(Some(WAIT)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or_default();
    if method == "POST" || !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).expect("write head");
    // A server may refuse early (413) and close; that is not the test's failure.
    let _ = socket.write_all(body);
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').unwrap_or_else(|| panic!("bad header {line:?}"));
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let get = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    let chunked = get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    let is_sse = get("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
    if is_sse {
        socket.set_read_timeout(None).unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut parser = SseParser::default();
            let mut feed = |bytes: &[u8]| {
                for ev in parser.feed(bytes) {
                    if tx.send(ev).is_err() {
                        return false;
                    }
                }
                true
            };
            if chunked {
                while let Some(chunk) = read_chunk(&mut reader) {
                    if !feed(&chunk) {
                        return;
                    }
                }
            } else {
                let mut buf = [0u8; 4096];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 || !feed(&buf[..n]) {
                        return;
                    }
                }
            }
        });
        return Reply { status, headers, body: Vec::new(), events: Some(rx), socket };
    }
    let mut body = Vec::new();
    if chunked {
        while let Some(chunk) = read_chunk(&mut reader) {
            body.extend_from_slice(&chunk);
        }
    } else if let Some(len) = get("content-length").and_then(|l| l.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).expect("body");
    } else {
        let _ = reader.read_to_end(&mut body);
    }
    Reply { status, headers, body, events: None, socket }
}

fn read_chunk(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut size = String::new();
    if reader.read_line(&mut size).ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
    if size == 0 {
        return None;
    }
    let mut chunk = vec![0u8; size];
    reader.read_exact(&mut chunk).ok()?;
    let mut crlf = [0u8; 2];
    reader.read_exact(&mut crlf).ok()?;
    Some(chunk)
}

#[derive(Default)]
struct SseParser {
    line: Vec<u8>,
    id: Option<String>,
    data: Option<String>,
    retry: Option<u64>,
}

impl SseParser {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                continue;
            }
            let line = String::from_utf8_lossy(&self.line).trim_end_matches('\r').to_owned();
            self.line.clear();
            if line.is_empty() {
                if self.id.is_some() || self.data.is_some() || self.retry.is_some() {
                    let data = self.data.take().unwrap_or_default();
                    out.push(Event { id: self.id.take(), data, retry: self.retry.take() });
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => self.id = Some(value.to_owned()),
                "retry" => self.retry = value.parse().ok(),
                "data" => match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
        out
    }
}

/// What every message of one era goes through: the schema check, and a record.
pub struct Checker {
    era: Era,
    asked: HashMap<String, String>,
    pub seen: Vec<Value>,
}

impl Checker {
    pub fn new(era: Era) -> Self {
        Self { era, asked: HashMap::new(), seen: Vec::new() }
    }

    pub fn asking(&mut self, id: &Value, method: &str) {
        self.asked.insert(id.to_string(), method.to_owned());
    }

    pub fn check(&mut self, msg: Value) -> Value {
        let answering = match (msg.get("method"), msg.get("id")) {
            (None, Some(id)) => self.asked.get(&id.to_string()).cloned(),
            _ => None,
        };
        schemas()
            .check(self.era, Sender::Server, &without_own_meta(&msg), answering.as_deref())
            .unwrap_or_else(|e| panic!("server message fails the {:?} schema: {e}\n{msg}", self.era));
        self.seen.push(msg.clone());
        msg
    }

    /// The JSON-RPC message of an SSE event; None for a priming event (an id and no data).
    pub fn event(&mut self, ev: &Event) -> Option<Value> {
        if ev.data.is_empty() {
            return None;
        }
        let v: Value =
            serde_json::from_str(&ev.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {ev:?}"));
        Some(self.check(v))
    }
}

fn json_headers() -> Vec<(&'static str, String)> {
    vec![("Content-Type", "application/json".into()), ("Accept", "application/json, text/event-stream".into())]
}

/// A 2025-11-25 client: one session, requests answered as JSON or SSE.
pub struct LegacyClient {
    pub addr: String,
    pub session: Option<String>,
    next_id: i64,
    pub checker: Checker,
    /// Messages that came on a request's SSE stream before its response.
    pub side: Vec<Value>,
    /// The id of the last SSE event read, to resume from.
    pub last_event_id: Option<String>,
    /// The last `retry` the server gave.
    pub last_retry: Option<u64>,
}

impl LegacyClient {
    /// A client that has completed `initialize` and `notifications/initialized`.
    pub fn connect(addr: &str, elicitation: bool) -> Self {
        let mut c = Self {
            addr: addr.to_owned(),
            session: None,
            next_id: 1,
            checker: Checker::new(Era::Legacy),
            side: vec![],
            last_event_id: None,
            last_retry: None,
        };
        let caps = if elicitation { json!({"elicitation": {}}) } else { json!({}) };
        let params =
            json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}});
        let (id, reply) = c.request("initialize", params);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let session = reply.header("mcp-session-id").expect("initialize answers with Mcp-Session-Id").to_owned();
        assert!(session.len() >= 16 && session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{session:?}");
        let r = c.finish(&id, reply);
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
        c.session = Some(session);
        let ack = c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!((ack.status, ack.body.len()), (202, 0));
        c
    }

    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = json_headers();
        if let Some(s) = &self.session {
            h.push(("Mcp-Session-Id", s.clone()));
            h.push(("MCP-Protocol-Version", "2025-11-25".into()));
        }
        h
    }

    /// A GET on the session: its own stream, or with `last_event_id` the stream that event was on.
    pub fn get(&self, last_event_id: Option<&str>) -> Reply {
        let mut h: Vec<(&str, String)> = self.headers().into_iter().filter(|(k, _)| *k != "Accept").collect();
        h.push(("Accept", "text/event-stream".into()));
        if let Some(id) = last_event_id {
            h.push(("Last-Event-ID", id.into()));
        }
        send(&self.addr, "GET", "/mcp", &h, None)
    }

    pub fn post(&mut self, body: &Value) -> Reply {
        send(&self.addr, "POST", "/mcp", &self.headers(), Some(body.to_string().as_bytes()))
    }

    /// Sends a request; its answer is read with [`LegacyClient::finish`] or [`LegacyClient::until`].
    pub fn request(&mut self, method: &str, params: Value) -> (Value, Reply) {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.checker.asking(&id, method);
        let reply = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        (id, reply)
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let (id, reply) = self.request(method, params);
        self.finish(&id, reply)
    }

    /// The response to `id`, whether answered as JSON or at the end of an SSE stream.
    pub fn finish(&mut self, id: &Value, reply: Reply) -> Value {
        assert_eq!(reply.status, 200, "{}", reply.text());
        if !reply.is_sse() {
            assert_eq!(reply.header("content-type"), Some("application/json"));
            return self.checker.check(reply.json());
        }
        let id = id.clone();
        self.until(&reply, |m| m.get("method").is_none() && m["id"] == id)
    }

    /// Reads an SSE answer up to the first message matching `pred`; the others go to `side`.
    pub fn until(&mut self, reply: &Reply, pred: impl Fn(&Value) -> bool) -> Value {
        self.read_until(reply, pred).unwrap_or_else(|| panic!("stream ended or stalled; side: {:#?}", self.side))
    }

    /// As [`LegacyClient::until`], but None when the connection ends first.
    pub fn read_until(&mut self, reply: &Reply, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ev = reply.next_event(left)?;
            if ev.retry.is_some() {
                self.last_retry = ev.retry;
            }
            if ev.data.is_empty() && ev.id.is_none() {
                continue;
            }
            assert!(ev.id.as_deref().is_some_and(|i| !i.is_empty()), "every event carries an id: {ev:?}");
            self.last_event_id = ev.id.clone();
            let Some(msg) = self.checker.event(&ev) else { continue };
            if pred(&msg) {
                return Some(msg);
            }
            self.side.push(msg);
        }
    }
}

/// A 2026-07-28 client: every request a POST of its own, with the mirrored headers.
pub struct ModernClient {
    pub addr: String,
    next_id: i64,
    pub checker: Checker,
}

impl ModernClient {
    pub fn new(addr: &str) -> Self {
        Self { addr: addr.to_owned(), next_id: 1, checker: Checker::new(Era::Modern) }
    }

    /// The request as a conforming client sends it (full `_meta` unless given, headers from the body).
    pub fn build(&mut self, method: &str, mut params: Value) -> (Value, Vec<(&'static str, String)>) {
        if params.get("_meta").is_none() {
            params["_meta"] = modern_meta(true, true);
        }
        let id = json!(self.next_id);
        self.next_id += 1;
        self.checker.asking(&id, method);
        let mut headers = json_headers();
        headers.push((
            "MCP-Protocol-Version",
            params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str().unwrap_or("").into(),
        ));
        headers.push(("Mcp-Method", method.into()));
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            headers.push(("Mcp-Name", name.into()));
        }
        (json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}), headers)
    }

    /// Posts `body` with `headers`; the status and the (checked) JSON-RPC answer.
    pub fn post(&mut self, body: &Value, headers: &[(&str, String)]) -> (u16, Value) {
        let reply = send(&self.addr, "POST", "/mcp", headers, Some(body.to_string().as_bytes()));
        let msg = if reply.is_sse() {
            let id = body["id"].clone();
            let deadline = Instant::now() + WAIT;
            loop {
                let ev = reply.next_event(deadline.saturating_duration_since(Instant::now())).expect("a response");
                if let Some(m) = self.checker.event(&ev)
                    && m["id"] == id
                {
                    break m;
                }
            }
        } else {
            self.checker.check(reply.json())
        };
        (reply.status, msg)
    }

    pub fn call(&mut self, method: &str, params: Value) -> (u16, Value) {
        let (body, headers) = self.build(method, params);
        self.post(&body, &headers)
    }

    /// Polls `tasks/get` until `pred` holds for the result.
    pub fn poll(&mut self, task_id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let (status, r) = self.call("tasks/get", json!({"taskId": task_id}));
            assert_eq!(status, 200, "{r}");
            let result = r.get("result").cloned().unwrap_or_else(|| panic!("tasks/get failed: {r}"));
            if pred(&result) {
                return result;
            }
            assert!(Instant::now() < deadline, "task never reached the expected state; last: {result}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
