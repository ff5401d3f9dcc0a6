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
    /// For a sampling request: who approved the reply, its model and the tokens it used (see
    /// `taskdeck_engine::sampling::Note`). Kept in the `answer` event only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub note: Option<Value>,
}

/// Why a task failed. `code` is the JSON-RPC error code when a server sent one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskError {
    pub code: Option<i64>,
    pub message: String,
    pub reason: Option<FailureReason>,
}

/// The cause of a failure, as Taskdeck decided it or as the server gave it. Each serialises to
/// the string the store has always held and the CLI prints (`INTERRUPTED`, …), so the store's
/// column, the JSON output and the UI read the same words; a server's own reason (say
/// `CRASH_RECOVERY`) is kept exactly as given.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailureReason {
    /// The task was in flight when Taskdeck or its server stopped, and cannot be continued.
    #[serde(rename = "INTERRUPTED")]
    Interrupted,
    /// The server no longer knows the task (restarted, or expired it).
    #[serde(rename = "UNKNOWN_TO_SERVER")]
    UnknownToServer,
    /// The server said the task ended but sent no result or error.
    #[serde(rename = "NO_RESULT")]
    NoResult,
    /// The task was never sent: its server could not be reached.
    #[serde(rename = "SERVER_UNAVAILABLE")]
    ServerUnavailable,
    /// The tool itself reported failure (`isError: true`).
    #[serde(rename = "tool result has isError: true")]
    ToolError,
    /// The server's answer was longer than the frame limit and could not be read.
    #[serde(rename = "RESPONSE_TOO_LARGE")]
    ResponseTooLarge,
    /// The server's answers could not be read or used (not JSON, not UTF-8, nested too deep,
    /// about another task, or not the shape asked for), for longer than polling waits.
    #[serde(rename = "SERVER_UNREADABLE")]
    ServerUnreadable,
    /// The server stopped answering the task's polls for longer than polling waits.
    #[serde(rename = "SERVER_UNRESPONSIVE")]
    ServerUnresponsive,
    /// Anything else, word for word: a server's `error.data.reason`, or Taskdeck's own prose.
    #[serde(untagged)]
    Other(String),
}

impl FailureReason {
    pub fn as_str(&self) -> &str {
        match self {
            FailureReason::Interrupted => "INTERRUPTED",
            FailureReason::UnknownToServer => "UNKNOWN_TO_SERVER",
            FailureReason::NoResult => "NO_RESULT",
            FailureReason::ServerUnavailable => "SERVER_UNAVAILABLE",
            FailureReason::ToolError => "tool result has isError: true",
            FailureReason::ResponseTooLarge => "RESPONSE_TOO_LARGE",
            FailureReason::ServerUnreadable => "SERVER_UNREADABLE",
            FailureReason::ServerUnresponsive => "SERVER_UNRESPONSIVE",
            FailureReason::Other(s) => s,
        }
    }
}

impl From<String> for FailureReason {
    /// The inverse of [`FailureReason::as_str`], so a reason read back from the store is the one
    /// written.
    fn from(s: String) -> Self {
        use FailureReason::*;
        [
            Interrupted,
            UnknownToServer,
            NoResult,
            ServerUnavailable,
            ToolError,
            ResponseTooLarge,
            ServerUnreadable,
            ServerUnresponsive,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
        .unwrap_or(Other(s))
    }
}

impl From<&str> for FailureReason {
    fn from(s: &str) -> Self {
        FailureReason::from(s.to_owned())
    }
}

/// Reads as its string, so code that printed or compared the reason as text still does.
impl std::ops::Deref for FailureReason {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// Every question pending at once, in the server's order: `question` is the first. Empty
    /// when none is.
    #[serde(default)]
    pub questions: Vec<Question>,
    pub answer: Option<Answer>,
    /// The keys the last answer answered, when it answered several questions at once (`answer`
    /// is the first of them).
    #[serde(default)]
    pub answered_keys: Vec<String>,
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
    /// Stands for the events dropped past a task's cap (`data.dropped` says how many, `data.message`
    /// says so in words); one per task, after the last event it counts: a newer marker with the
    /// new count replaces it, under a new id.
    Dropped,
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
            EventKind::Dropped => "dropped",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<EventKind> {
        use EventKind::*;
        [Created, Remote, Status, Question, Answer, Result, Failed, Cancelled, Reclaimed, Dropped]
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

/// What a `dropped` marker says, in words: "3 earlier events were dropped".
pub fn dropped_message(dropped: u64) -> String {
    match dropped {
        1 => "1 earlier event was dropped".to_owned(),
        n => format!("{n} earlier events were dropped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_reasons_read_and_write_the_strings_stored_before_they_were_typed() {
        let cases = [
            (FailureReason::Interrupted, "INTERRUPTED"),
            (FailureReason::UnknownToServer, "UNKNOWN_TO_SERVER"),
            (FailureReason::NoResult, "NO_RESULT"),
            (FailureReason::ServerUnavailable, "SERVER_UNAVAILABLE"),
            (FailureReason::ToolError, "tool result has isError: true"),
            (FailureReason::Other("CRASH_RECOVERY".into()), "CRASH_RECOVERY"),
        ];
        for (reason, text) in cases {
            assert_eq!(serde_json::to_value(&reason).unwrap(), Value::String(text.into()));
            assert_eq!(serde_json::from_value::<FailureReason>(Value::String(text.into())).unwrap(), reason);
            assert_eq!(FailureReason::from(text), reason);
            assert_eq!(reason.to_string(), text);
        }
        let error = TaskError { code: None, message: "gone".into(), reason: Some(FailureReason::Interrupted) };
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            serde_json::json!({ "code": null, "message": "gone", "reason": "INTERRUPTED" })
        );
    }

    #[test]
    fn a_failure_reason_reads_back_from_the_store_as_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(dir.path().join("t.sqlite3")).unwrap();
        for (n, reason) in
            [FailureReason::UnknownToServer, FailureReason::Other("CRASH_RECOVERY".into())].into_iter().enumerate()
        {
            let task = store
                .create_task(NewTask {
                    server: "s".into(),
                    tool: "t".into(),
                    arguments: Value::Null,
                    idempotency_key: format!("k{n}"),
                    mode: Mode::Task,
                })
                .unwrap();
            let error = TaskError { code: Some(-32602), message: "gone".into(), reason: Some(reason.clone()) };
            let update = crate::Update::Failed { error: error.clone(), server_status: None };
            store.apply(&task.id, update).unwrap();
            assert_eq!(store.get(&task.id).unwrap().error, Some(error));
            let logged = store.events(&task.id).unwrap().pop().unwrap();
            assert_eq!(logged.data["error"]["reason"], Value::String(reason.as_str().into()));
        }
    }
}
