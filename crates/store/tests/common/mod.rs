//! Shared set-up for the store's behaviour tests: real files in temp dirs, and tasks driven to any
//! status through the public API only.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::json;
use taskdeck_protocol::question::{QuestionKey, QuestionRequest};
use taskdeck_store::{Answer, Mode, NewTask, Progress, Question, Store, TaskError, TaskRecord, TaskStatus, Update};
use tempfile::TempDir;

pub struct Fixture {
    pub dir: TempDir,
    pub path: PathBuf,
    pub store: Store,
}

pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    let store = Store::open(&path).unwrap();
    Fixture { dir, path, store }
}

pub fn new_task(key: &str) -> NewTask {
    NewTask {
        server: "demo".into(),
        tool: "slow_count".into(),
        arguments: json!({ "to": 3, "label": key }),
        idempotency_key: key.into(),
        mode: Mode::Task,
    }
}

pub fn question(key: &str) -> Question {
    let request = QuestionRequest {
        method: "elicitation/create".into(),
        params: json!({ "message": "Continue?", "requestedSchema": { "type": "object", "properties": {} } }),
    };
    Question::decode(QuestionKey::InputKey(key.into()), None, request)
}

/// The key an answer to `question(key)` is recorded under.
pub fn answer_key(key: &str) -> String {
    QuestionKey::InputKey(key.into()).to_text()
}

pub fn ok_result() -> serde_json::Value {
    json!({ "content": [{ "type": "text", "text": "done" }] })
}

/// One update of every kind and every live target, so "for every update" means every one.
pub fn every_update() -> Vec<Update> {
    vec![
        Update::Status { status: TaskStatus::Working, message: Some("still going".into()), server_status: None },
        Update::Status { status: TaskStatus::InputRequired, message: None, server_status: None },
        Update::Status { status: TaskStatus::Completed, message: None, server_status: None },
        Update::Progress(Progress { progress: 1.0, total: Some(3.0), message: None }),
        Update::Question { question: Box::new(question("q1")), message: None },
        Update::Answer(Answer { key: answer_key("q1"), response: json!({ "action": "accept" }), note: None }),
        Update::Completed { result: ok_result(), server_status: Some("completed".into()) },
        Update::Failed {
            error: TaskError { code: Some(-32603), message: "boom".into(), reason: None },
            server_status: Some("failed".into()),
        },
        Update::Cancelled {
            reason: Some("user cancelled".into()),
            server_status: Some("cancelled".into()),
            server_told: None,
        },
    ]
}

/// Creates a task and brings it to `status` the way an engine would.
pub fn task_in(store: &Store, key: &str, status: TaskStatus) -> TaskRecord {
    let task = store.create_task(new_task(key)).unwrap();
    let update = match status {
        TaskStatus::Working => return task,
        TaskStatus::InputRequired => {
            Update::Question { question: Box::new(question("q1")), message: Some("Continue?".into()) }
        }
        TaskStatus::Completed => Update::Completed { result: ok_result(), server_status: Some("completed".into()) },
        TaskStatus::Failed => Update::Failed {
            error: TaskError { code: Some(-32603), message: "boom".into(), reason: Some("server error".into()) },
            server_status: Some("failed".into()),
        },
        TaskStatus::Cancelled => {
            Update::Cancelled { reason: Some("user cancelled".into()), server_status: None, server_told: None }
        }
    };
    let record = store.apply(&task.id, update).unwrap();
    assert_eq!(record.status, status);
    record
}

pub fn event_count(store: &Store, id: &str) -> usize {
    store.events(id).unwrap().len()
}

pub fn raw(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    conn
}

/// A store file as schema version 4 left it (the migrations up to the dropped marker's move, before
/// history search and HTTP sessions), for a test of what opening it now does; the connection is
/// returned to put old rows in.
pub fn store_at_version_4(path: &std::path::Path) -> rusqlite::Connection {
    let conn = raw(path);
    for sql in [
        include_str!("../../src/migrations/20261130091500_init.sql"),
        include_str!("../../src/migrations/20261201090000_typed_questions.sql"),
        include_str!("../../src/migrations/20261201110000_event_cap.sql"),
        include_str!("../../src/migrations/20261201130000_dropped_marker_moves.sql"),
    ] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 4).unwrap();
    conn
}
