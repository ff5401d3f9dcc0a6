//! A raw JSON-lines peer for the demo server: spawns the binary, sends requests, and checks every
//! message the server writes against the official schema of the session's era.

#![allow(dead_code)]

pub mod http;

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_schema_check::{Era, Schemas, Sender};

pub const WAIT: Duration = Duration::from_secs(10);

pub fn schemas() -> Arc<Schemas> {
    static S: OnceLock<Arc<Schemas>> = OnceLock::new();
    S.get_or_init(|| Arc::new(Schemas::load())).clone()
}

pub fn modern_meta(tasks: bool, elicitation: bool) -> Value {
    let mut caps = json!({});
    if tasks {
        caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    if elicitation {
        caps["elicitation"] = json!({"form": {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "demo-server-tests", "version": "0"},
    })
}

/// The demo server of this build keeping its state in `state`, polled every 50 ms so tests do not
/// wait on its one-second default, with `args` after; its stdout piped, for a test to read, and
/// its stderr shown beside the test's at `RUST_LOG=warn`.
pub fn demo_server(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_taskdeck-demo-server"));
    c.arg("--state").arg(state).args(["--poll-interval-ms", "50"]).args(args);
    c.env("RUST_LOG", "warn").stdout(Stdio::piped()).stderr(Stdio::inherit());
    c
}

/// Lines of `from` as they come, read in a thread of their own so that the pipe never fills while
/// a test is busy; reading stops once the receiver is dropped.
pub fn lines_of(from: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    era: Era,
    next_id: i64,
    /// Method of each request we sent, by id, so responses can be checked against their schema.
    asked: HashMap<String, String>,
    /// Messages received but not yet taken by a test.
    backlog: VecDeque<Value>,
    /// Every message the server wrote, in order.
    pub seen: Vec<Value>,
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Peer {
    pub fn spawn(state: &Path, era: Era, extra: &[&str]) -> Self {
        let mut child = demo_server(state, extra).stdin(Stdio::piped()).spawn().expect("spawn demo server");
        let rx = lines_of(child.stdout.take().unwrap());
        let stdin = child.stdin.take();
        Self { child, stdin, lines: rx, era, next_id: 1, asked: HashMap::new(), backlog: VecDeque::new(), seen: vec![] }
    }

    /// A legacy session that has completed `initialize`.
    pub fn legacy(state: &Path, elicitation: bool, extra: &[&str]) -> Self {
        let caps = if elicitation { json!({"elicitation": {}}) } else { json!({}) };
        Self::legacy_with(state, caps, extra)
    }

    /// A legacy session that has completed `initialize` declaring `caps`.
    pub fn legacy_with(state: &Path, caps: Value, extra: &[&str]) -> Self {
        let mut p = Self::spawn(state, Era::Legacy, extra);
        let r = p.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
        p.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        p
    }

    pub fn modern(state: &Path, extra: &[&str]) -> Self {
        Self::spawn(state, Era::Modern, extra)
    }

    pub fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush");
    }

    /// Sends a request (modern ones get the full `_meta` unless `params` already has one).
    pub fn request(&mut self, method: &str, mut params: Value) -> Value {
        if self.era == Era::Modern && params.get("_meta").is_none() {
            params["_meta"] = modern_meta(true, true);
        }
        let id = json!(self.next_id);
        self.next_id += 1;
        self.asked.insert(id_key(&id), method.to_owned());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(&id)
    }

    /// The response to request `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.take(|m| m.get("method").is_none() && m.get("id") == Some(&id), WAIT)
            .unwrap_or_else(|| panic!("no response to {id} within {WAIT:?}; seen: {:#?}", self.seen))
    }

    /// Takes the first message, buffered or new, that matches `pred`.
    pub fn take(&mut self, pred: impl Fn(&Value) -> bool, timeout: Duration) -> Option<Value> {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            };
            let msg = self.check(&line);
            if pred(&msg) {
                return Some(msg);
            }
            self.backlog.push_back(msg);
        }
    }

    pub fn expect(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.take(pred, WAIT).unwrap_or_else(|| panic!("never saw {what}; seen: {:#?}", self.seen))
    }

    fn check(&mut self, line: &str) -> Value {
        let msg: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("server wrote non-JSON {line:?}: {e}"));
        let answering = match (msg.get("method"), msg.get("id")) {
            (None, Some(id)) => self.asked.get(&id_key(id)).cloned(),
            _ => None,
        };
        schemas()
            .check(self.era, Sender::Server, &without_own_meta(&msg), answering.as_deref())
            .unwrap_or_else(|e| panic!("server message fails the {:?} schema: {e}", self.era));
        self.seen.push(msg.clone());
        msg
    }

    /// Polls `tasks/get` until `pred` holds for the result.
    pub fn poll(&mut self, task_id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let r = self.call("tasks/get", json!({"taskId": task_id}));
            let result = r.get("result").cloned().unwrap_or_else(|| panic!("tasks/get failed: {r}"));
            if pred(&result) {
                return result;
            }
            assert!(Instant::now() < deadline, "task never reached the expected state; last: {result}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }

    /// Closes stdin and waits for the process to exit on its own.
    pub fn close(mut self) -> ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Whatever was still queued must also be valid.
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(50)) {
                    self.check(&line);
                }
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit after stdin closed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// schema-check tightens `ResultMetaObject` as if it were closed, although `_meta` is open to
/// prefixed keys; Taskdeck's own progress key is therefore checked here and removed before the
/// official schema sees the message.
pub fn without_own_meta(msg: &Value) -> Value {
    let mut msg = msg.clone();
    let Some(meta) = msg.pointer_mut("/result/_meta").and_then(Value::as_object_mut) else { return msg };
    if let Some(p) = meta.remove("dev.taskdeck/progress") {
        let obj = p.as_object().unwrap_or_else(|| panic!("progress must be an object: {p}"));
        assert!(obj["progress"].is_number(), "progress needs a number: {p}");
        assert!(obj.get("total").is_none_or(Value::is_number), "total must be a number: {p}");
        assert!(obj.get("message").is_none_or(Value::is_string), "message must be a string: {p}");
        assert!(obj.keys().all(|k| ["progress", "total", "message"].contains(&k.as_str())), "{p}");
    }
    if meta.is_empty() {
        msg["result"].as_object_mut().unwrap().remove("_meta");
    }
    msg
}

pub fn error_code(r: &Value) -> i64 {
    r["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error response, got {r}"))
}

pub fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}
