//! Shared test support: real server processes, an event recorder, and the wire tap whose log
//! every test checks against the official schemas.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use taskdeck_client::{
    ClientError, Question, ServerSpec, Session, SessionEvent, SessionHandler, Started, TaskSnapshot,
};
use taskdeck_protocol::types::CallToolResult;
use taskdeck_schema_check::{Era as SchemaEra, Schemas, Sender};

pub fn demo_spec(state: &Path) -> ServerSpec {
    ServerSpec {
        name: "demo".into(),
        command: taskdeck_test_support::demo_server().display().to_string(),
        args: vec!["--state".into(), state.display().to_string(), "--poll-interval-ms".into(), "100".into()],
        env: Default::default(),
        cwd: None,
        inherit_env: false,
    }
}

/// `@modelcontextprotocol/server-everything`, as pinned in tests/peers (installed by `make test`).
pub fn everything_spec() -> ServerSpec {
    let entry = taskdeck_test_support::everything_server_entry();
    ServerSpec {
        name: "everything".into(),
        command: "node".into(),
        args: vec![entry.display().to_string(), "stdio".into()],
        env: Default::default(),
        cwd: None,
        inherit_env: false,
    }
}

pub fn fault_spec(scenario: &str) -> ServerSpec {
    ServerSpec {
        name: format!("fault-{scenario}"),
        command: "python3".into(),
        args: vec![
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fault_server.py").display().to_string(),
            scenario.into(),
        ],
        env: Default::default(),
        cwd: None,
        inherit_env: false,
    }
}

/// Wraps a server so every line both ways is logged to `log`.
pub fn tapped(spec: ServerSpec, log: &Path) -> ServerSpec {
    let mut args = vec![
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/tap.py").display().to_string(),
        log.display().to_string(),
        "--".into(),
        spec.command.clone(),
    ];
    args.extend(spec.args.clone());
    ServerSpec { command: "python3".into(), args, ..spec }
}

/// Validates the messages in a tap log against their era's schema: the client's always, the
/// server's when `check_server` (third-party servers are not ours to hold to the schema). Returns
/// how many messages were checked, so a test can insist the log was not empty.
pub fn check_wire_log(log: &Path, era: taskdeck_protocol::Era, check_server: bool) -> usize {
    let schemas = Schemas::load();
    let era = match era {
        taskdeck_protocol::Era::Legacy => SchemaEra::Legacy,
        taskdeck_protocol::Era::Modern => SchemaEra::Modern,
    };
    let text = std::fs::read_to_string(log).unwrap();
    let mut client_requests = std::collections::HashMap::new();
    let mut server_requests = std::collections::HashMap::new();
    let mut checked = 0;
    let mut errors = Vec::new();
    for entry in text.lines() {
        let entry: Value = serde_json::from_str(entry).unwrap();
        let dir = entry["dir"].as_str().unwrap();
        let Ok(msg) = serde_json::from_str::<Value>(entry["line"].as_str().unwrap()) else { continue };
        let sender = if dir == "c2s" { Sender::Client } else { Sender::Server };
        let id = msg.get("id").map(|v| v.to_string());
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        // The probe is sent before the era is known, so it is checked against the modern schema.
        let msg_era = if method.as_deref() == Some("server/discover")
            || (sender == Sender::Server
                && id.as_ref().is_some_and(|i| client_requests.get(i) == Some(&"server/discover".to_owned())))
        {
            SchemaEra::Modern
        } else {
            era
        };
        let answering = match (&method, &id, sender) {
            (Some(m), Some(i), Sender::Client) => {
                client_requests.insert(i.clone(), m.clone());
                None
            }
            (Some(m), Some(i), Sender::Server) => {
                server_requests.insert(i.clone(), m.clone());
                None
            }
            (None, Some(i), Sender::Server) => client_requests.get(i).cloned(),
            (None, Some(i), Sender::Client) => server_requests.get(i).cloned(),
            _ => None,
        };
        // A legacy server may answer the modern probe with any error; that is how it is detected.
        if msg_era == SchemaEra::Modern && era == SchemaEra::Legacy && msg.get("error").is_some() {
            continue;
        }
        if sender == Sender::Server && !check_server {
            continue;
        }
        if let Err(e) = schemas.check(msg_era, sender, &msg, answering.as_deref()) {
            errors.push(e);
        }
        checked += 1;
    }
    assert!(errors.is_empty(), "{} message(s) off-schema:\n{}", errors.len(), errors.join("\n"));
    checked
}

/// Collects session events for assertions.
#[derive(Default)]
pub struct Recorder {
    events: Mutex<Vec<SessionEvent>>,
}

impl SessionHandler for Recorder {
    fn on_event(&self, event: SessionEvent) {
        self.events.lock().unwrap().push(event);
    }
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn events(&self) -> Vec<SessionEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Waits until an event matches, returning it; fails the test after `timeout`.
    pub async fn wait_for(&self, timeout: Duration, what: &str, pred: impl Fn(&SessionEvent) -> bool) -> SessionEvent {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.events.lock().unwrap().iter().find(|e| pred(e)) {
                return e.clone();
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; events: {:#?}", self.non_stderr());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The reasons of every `Discarded` event so far, in order.
    pub fn discards(&self) -> Vec<taskdeck_client::Discard> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                SessionEvent::Discarded { reason, .. } => Some(reason),
                _ => None,
            })
            .collect()
    }

    fn non_stderr(&self) -> Vec<SessionEvent> {
        self.events().into_iter().filter(|e| !matches!(e, SessionEvent::Stderr(_))).collect()
    }
}

/// Waits until the server lists `name`. The reference server registers its task and elicitation
/// tools only after `initialized`, then says so with list_changed (server-quirks): a test that
/// trusted the first list would race it.
pub async fn wait_for_tool(session: &Session, name: &str) {
    for _ in 0..100 {
        if session.list_tools().await.unwrap().iter().any(|t| t.name == name) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("tool {name} never appeared");
}

/// Polls `tasks/get` every `every`, at most `tries` times, until `done` holds for the task.
pub async fn poll_task(
    session: &Session,
    task_id: &str,
    tries: u32,
    every: Duration,
    mut done: impl FnMut(&TaskSnapshot) -> bool,
) -> TaskSnapshot {
    for _ in 0..tries {
        let s = session.get_task(task_id).await.unwrap();
        if done(&s) {
            return s;
        }
        tokio::time::sleep(every).await;
    }
    panic!("task {task_id} never reached the expected state");
}

/// The task a call started; a call answered at once fails the test.
pub fn expect_task(started: Started) -> TaskSnapshot {
    match started {
        Started::Task(t) => *t,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The question a legacy server asks while `tasks/result` for the task is outstanding (it sends
/// it on that request's stream, server-quirks 2, so the result must be asked for first), and the
/// waiting result, which the answer lets finish.
pub async fn question_during_result(
    session: &Session,
    rec: &Recorder,
    task_id: &str,
    within: Duration,
    what: &str,
) -> (Question, tokio::task::JoinHandle<Result<CallToolResult, ClientError>>) {
    let waiter = {
        let (s, id) = (session.clone(), task_id.to_owned());
        tokio::spawn(async move { s.task_result(&id).await })
    };
    let SessionEvent::Question(q) = rec.wait_for(within, what, |e| matches!(e, SessionEvent::Question(_))).await else {
        unreachable!("wait_for returns only what its predicate accepts")
    };
    (q, waiter)
}
