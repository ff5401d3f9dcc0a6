//! The era-neutral view of tasks and questions that a session hands its caller.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskdeck_protocol::elicitation::ElicitRequestParams;
use taskdeck_protocol::modern::tasks::{DetailedTask, TaskProgress};
use taskdeck_protocol::types::{CallToolResult, LoggingMessageParams};
use taskdeck_protocol::{Era, ErrorObject, RequestId, TaskStatus, legacy};

/// A task as the server last described it, whatever the era.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSnapshot {
    pub task_id: String,
    /// The status exactly as the server said it. Mapping it to what the user sees (a modern
    /// `completed` with `isError` is a failure) is the engine's job, so the event log can keep this.
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub created_at: String,
    pub last_updated_at: String,
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: Option<i64>,
    /// Modern only: progress the server attached to the task.
    pub progress: Option<TaskProgress>,
    /// The outstanding questions of an `input_required` task, where the server lists them with the
    /// task (modern `inputRequests`); see `lists_questions`.
    pub questions: Vec<Question>,
    /// Whether `questions` is the server's whole list of what it waits on. When it is not (legacy:
    /// questions come as requests of their own), a snapshot without questions says nothing about
    /// a question already asked.
    #[serde(default)]
    pub lists_questions: bool,
    /// The result of a `completed` task, when this snapshot carries it: always in the modern era,
    /// and in the legacy era once `tasks/result` has answered (see [`crate::Follow`]).
    pub result: Option<CallToolResult>,
    /// The JSON-RPC error of a `failed` task, when this snapshot carries it.
    pub error: Option<ErrorObject>,
    /// The task has ended but its result or error comes separately (legacy `tasks/result`). Such a
    /// snapshot is not the end yet: [`crate::Follow`] delivers a later one that carries it.
    #[serde(default)]
    pub result_follows: bool,
}

impl TaskSnapshot {
    pub fn from_legacy(task: legacy::tasks::Task) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message,
            created_at: task.created_at,
            last_updated_at: task.last_updated_at,
            ttl_ms: task.ttl,
            poll_interval_ms: task.poll_interval,
            progress: None,
            questions: Vec::new(),
            lists_questions: false,
            result: None,
            error: None,
            result_follows: matches!(task.status, TaskStatus::Completed | TaskStatus::Failed),
        }
    }

    /// Whether this snapshot is the task's last word: terminal, with whatever result or error the
    /// server will ever give.
    pub fn is_final(&self) -> bool {
        self.status.is_terminal() && !self.result_follows
    }

    /// Builds a snapshot from a modern `DetailedTask`. A malformed `result` or question is reported,
    /// not silently dropped.
    pub fn from_modern(task: DetailedTask) -> Result<Self, String> {
        let progress = task.progress();
        let t = task.task;
        let mut questions = Vec::new();
        for (key, req) in task.input_requests.into_iter().flatten() {
            questions.push(Question::from_input_request(&t.task_id, key, req)?);
        }
        let result = match task.result {
            Some(r) => {
                Some(serde_json::from_value(r).map_err(|e| format!("task result is not a CallToolResult: {e}"))?)
            }
            None => None,
        };
        Ok(Self {
            task_id: t.task_id,
            status: t.status,
            status_message: t.status_message,
            created_at: t.created_at,
            last_updated_at: t.last_updated_at,
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            progress,
            questions,
            lists_questions: true,
            result,
            error: task.error,
            result_follows: false,
        })
    }
}

/// How a question is answered: legacy questions are open JSON-RPC requests from the server;
/// modern ones are keys of a task's `inputRequests`, answered with `tasks/update`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum QuestionKey {
    Request(RequestId),
    InputKey(String),
}

impl std::fmt::Display for QuestionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuestionKey::Request(id) => write!(f, "request {id}"),
            QuestionKey::InputKey(k) => write!(f, "input {k:?}"),
        }
    }
}

/// A server asking the user something.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub key: QuestionKey,
    /// The task the question belongs to, when the server said so (legacy related-task `_meta`, or
    /// the task whose `inputRequests` carried it).
    pub task_id: Option<String>,
    /// The request method, normally `elicitation/create`.
    pub method: String,
    /// The request's params exactly as sent, so a form can be rebuilt from storage.
    pub params: Value,
}

impl Question {
    fn from_input_request(task_id: &str, key: String, req: Value) -> Result<Self, String> {
        let method =
            req.get("method").and_then(Value::as_str).ok_or_else(|| format!("input request {key:?} has no method"))?;
        Ok(Self {
            key: QuestionKey::InputKey(key),
            task_id: Some(task_id.to_owned()),
            method: method.to_owned(),
            params: req.get("params").cloned().unwrap_or(Value::Null),
        })
    }

    /// The elicitation this question carries, if it is one and is well formed.
    pub fn elicitation(&self) -> Result<ElicitRequestParams, String> {
        if self.method != taskdeck_protocol::methods::ELICITATION_CREATE {
            return Err(format!("{} is not an elicitation", self.method));
        }
        serde_json::from_value(self.params.clone()).map_err(|e| e.to_string())
    }
}

/// What a tool call turned into.
#[derive(Debug, Clone, PartialEq)]
pub enum Started {
    /// The server made it a task: here is its handle.
    Task(Box<TaskSnapshot>),
    /// The server answered at once.
    Completed(CallToolResult),
}

/// Why a message from the server was set aside rather than delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discard {
    /// Not JSON, not JSON-RPC, too long, or not UTF-8.
    Malformed,
    /// A response whose id matches no request in flight (e.g. one that already timed out).
    UnknownResponse,
    /// A status for a task this session never created or attached.
    UnknownTask,
    /// The same status and timestamp as one already delivered.
    Duplicate,
    /// Older than a status already delivered.
    Stale,
    /// A status after the task was already terminal.
    AfterTerminal,
    /// A notification whose params do not have the shape its method requires.
    InvalidParams,
}

/// Everything a session reports, delivered to the handler in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A task's status changed (from a status notification).
    Task(Box<TaskSnapshot>),
    /// `notifications/progress` for the request that carried `token`.
    Progress {
        token: Value,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// The server asks the user something (legacy `elicitation/create`).
    Question(Question),
    /// The server withdrew a question (it cancelled its request).
    QuestionWithdrawn {
        key: QuestionKey,
    },
    /// A URL-mode elicitation was completed out of band.
    ElicitationComplete {
        elicitation_id: String,
    },
    /// The tool list changed; the session's cache is already invalidated.
    ToolsChanged,
    Log(LoggingMessageParams),
    /// One line the server wrote to stderr.
    Stderr(String),
    /// A server message was not delivered; logged and typed, and the session carries on.
    Discarded {
        reason: Discard,
        detail: String,
    },
    /// The server process is gone; every pending request has failed.
    Closed {
        reason: String,
    },
}

/// What the session learned about the server when it connected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub era: Era,
    pub protocol_version: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub instructions: Option<String>,
    pub capabilities: Value,
    /// Whether tools can run as tasks on this server at all.
    pub tasks: bool,
}
