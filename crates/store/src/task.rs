//! The records the store hands out. They serialise as the CLI prints them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskdeck_protocol::{Era, TaskStatus};

use crate::time;

/// Whether the tool runs as an MCP task (with a remote task id to poll) or as a plain blocking call.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Task,
    Call,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Task => "task",
            Mode::Call => "call",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Mode> {
        match s {
            "task" => Some(Mode::Task),
            "call" => Some(Mode::Call),
            _ => None,
        }
    }
}

/// What the caller knows before anything is sent to a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewTask {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    /// Unique across the store: retrying a create with the same key cannot make a second task.
    pub idempotency_key: String,
    pub mode: Mode,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// A question the server is waiting on, decoded by the client (see [`taskdeck_protocol::question`]).
/// Kept whole, with the request as the server sent it, so the form can be rebuilt after a restart;
/// it reads back through the same decoding (rows of the shape before questions were typed are
/// rewritten by the `typed_questions` migration).
pub use taskdeck_protocol::question::Question;

/// The answer given to the question with the same key.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub key: String,
    pub response: Value,
}

/// Why a task failed. `code` is the JSON-RPC error code when a server sent one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskError {
    pub code: Option<i64>,
    pub message: String,
    pub reason: Option<String>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    pub idempotency_key: String,
    pub mode: Mode,
    pub era: Option<Era>,
    pub remote_task_id: Option<String>,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub progress: Option<Progress>,
    pub question: Option<Question>,
    pub answer: Option<Answer>,
    pub result: Option<Value>,
    pub error: Option<TaskError>,
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: Option<i64>,
    #[serde(with = "time::rfc3339_millis")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub created_at: DateTime<Utc>,
    #[serde(with = "time::rfc3339_millis")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub updated_at: DateTime<Utc>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Created,
    Remote,
    Status,
    Question,
    Answer,
    /// A result arrived; `to_status` says whether Taskdeck counts it as completed or failed.
    Result,
    Failed,
    Cancelled,
    Reclaimed,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Created => "created",
            EventKind::Remote => "remote",
            EventKind::Status => "status",
            EventKind::Question => "question",
            EventKind::Answer => "answer",
            EventKind::Result => "result",
            EventKind::Failed => "failed",
            EventKind::Cancelled => "cancelled",
            EventKind::Reclaimed => "reclaimed",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<EventKind> {
        use EventKind::*;
        [Created, Remote, Status, Question, Answer, Result, Failed, Cancelled, Reclaimed]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// One line of a task's history. `data` keeps what the server actually said (`server_status`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    pub id: i64,
    pub task_id: String,
    #[serde(with = "time::rfc3339_millis")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub at: DateTime<Utc>,
    pub kind: EventKind,
    pub from_status: Option<TaskStatus>,
    pub to_status: Option<TaskStatus>,
    pub data: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListFilter {
    pub status: Option<TaskStatus>,
    pub server: Option<String>,
    pub limit: Option<usize>,
}

/// A task [`crate::Store::reclaim`] moved to failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reclaimed {
    pub id: String,
    pub reason: String,
}
