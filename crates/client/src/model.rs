//! The era-neutral view of tasks and questions that a session hands its caller.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskdeck_protocol::modern::tasks::{DetailedTask, TaskProgress};
use taskdeck_protocol::types::{CallToolResult, LoggingMessageParams};
use taskdeck_protocol::{Era, ErrorObject, TaskStatus, legacy, limits};

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
    /// A task in `status` with nothing else said about it, both timestamps `at`: what Taskdeck
    /// knows of a task without a fresh word from the server.
    pub fn bare(task_id: &str, status: TaskStatus, at: &str) -> Self {
        Self {
            task_id: task_id.to_owned(),
            status,
            status_message: None,
            created_at: at.to_owned(),
            last_updated_at: at.to_owned(),
            ttl_ms: None,
            poll_interval_ms: None,
            progress: None,
            questions: Vec::new(),
            lists_questions: false,
            result: None,
            error: None,
            result_follows: false,
        }
    }

    pub fn from_legacy(task: legacy::tasks::Task) -> Self {
        Self {
            task_id: task.task_id,
            status: task.status,
            status_message: task.status_message.map(limits::status_message),
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
        let progress = task.progress().map(|p| TaskProgress { message: p.message.map(limits::progress_message), ..p });
        let t = task.task;
        let mut questions = Vec::new();
        for (key, req) in task.input_requests.into_iter().flatten() {
            questions.push(question_from_input_request(Some(&t.task_id), key, req)?);
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
            status_message: t.status_message.map(limits::status_message),
            created_at: t.created_at,
            last_updated_at: t.last_updated_at,
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            progress,
            questions,
            lists_questions: true,
            result,
            error: task.error.map(bounded_error),
            result_follows: false,
        })
    }
}

/// A server's JSON-RPC error within the bounds of [`limits`]: its message cut to
/// [`limits::ERROR_TEXT_BYTES`], and `data` over that size kept only for its `reason` (cut too),
/// which is the one member Taskdeck reads from it.
pub fn bounded_error(mut e: ErrorObject) -> ErrorObject {
    e.message = limits::error_text(e.message);
    if let Some(data) = &e.data
        && limits::json_size(data) > limits::ERROR_TEXT_BYTES
    {
        let reason = data.get("reason").and_then(Value::as_str).map(|r| limits::error_text(r.to_owned()));
        e.data = reason.map(|r| serde_json::json!({ "reason": r }));
    }
    e
}

// The question types live with the wire types, where the store (which keeps them) can see them;
// the client is where they are decoded, in `Session`'s `elicitation/create` branch and in
// [`TaskSnapshot::from_modern`], both through [`Question::decode`].
pub use taskdeck_protocol::question::{Asks, Question, QuestionKey, QuestionRequest};

/// What a question is answered with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The result the server's request asked for: an `ElicitResult`, a `CreateMessageResult`, a
    /// `ListRootsResult`.
    Result(Value),
    /// A refusal of a request whose result has none (sampling, a method Taskdeck does not serve): a
    /// legacy server gets this error; a modern one, whose input responses are results only, the
    /// decline of an `ElicitResult`.
    Refused(ErrorObject),
}

/// A modern `inputRequests` entry as a question. An entry that is not `{method, params}` makes the
/// whole snapshot malformed (reported, not dropped); one whose params do not fit its method is a
/// question that asks something malformed.
fn question_from_input_request(task_id: Option<&str>, key: String, req: Value) -> Result<Question, String> {
    let request = serde_json::from_value(req).map_err(|e| format!("input request {key:?} is not a request: {e}"))?;
    Ok(Question::decode(QuestionKey::InputKey(key), task_id.map(str::to_owned), request))
}

/// What a tool call turned into.
#[derive(Debug, Clone, PartialEq)]
pub enum Started {
    /// The server made it a task: here is its handle.
    Task(Box<TaskSnapshot>),
    /// The server answered at once.
    Completed(CallToolResult),
    /// Modern: the server needs answers before it can go on (a multi-round-trip request). Nothing
    /// runs on the server meanwhile; the call is sent again with the answers
    /// ([`crate::Session::retry_tool`]).
    InputRequired(Box<InputRound>),
}

/// One round of a multi-round-trip request (2026-07-28, `InputRequiredResult`): what the server
/// asks before the call can go on, and the state it wants back with the answers.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRound {
    /// Its `inputRequests`, each a question under its key (no task: the call has none).
    pub questions: Vec<Question>,
    /// Its `requestState`, opaque: echoed exactly, never read.
    pub request_state: Option<String>,
}

/// The `inputRequests` map of a result or task as questions, in the server's order. An entry that
/// is not `{method, params}` makes the whole map unusable.
pub(crate) fn questions_of(task_id: Option<&str>, requests: Map<String, Value>) -> Result<Vec<Question>, String> {
    requests.into_iter().map(|(key, req)| question_from_input_request(task_id, key, req)).collect()
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
    Progress { token: Value, progress: f64, total: Option<f64>, message: Option<String> },
    /// The server asks the user something (legacy `elicitation/create`, `sampling/createMessage`).
    Question(Question),
    /// The server withdrew a question (it cancelled its request).
    QuestionWithdrawn { key: QuestionKey },
    /// A task the server made of its question here was made or changed: what the host keeps so
    /// that a later connection resuming the session serves it (`Session::carry_hosted`). Sent only
    /// where the session outlives the connection.
    Hosted(crate::hosted::HostedTask),
    /// A URL-mode elicitation was completed out of band.
    ElicitationComplete { elicitation_id: String },
    /// The tool list changed; the session's cache is already invalidated.
    ToolsChanged,
    /// An MCP log entry; `call` is the progress token of the call whose request stream carried
    /// it (Streamable HTTP), which then is what the entry is about.
    Log { entry: LoggingMessageParams, call: Option<String> },
    /// One line the server wrote to stderr.
    Stderr(String),
    /// A server message was not delivered; logged and typed, and the session carries on.
    Discarded { reason: Discard, detail: String },
    /// The server process is gone; every pending request has failed.
    Closed { reason: String },
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

/// What a later connection needs to carry on a legacy HTTP session without initializing it again:
/// the server's session id and what the handshake taught (the negotiated version is
/// `info.protocol_version`). A server that keeps its tasks in its session (as the reference
/// server does) knows them only on that session, so a host that wants them back after it restarts
/// keeps this durably and gives it to [`SessionOptions::resume`](crate::SessionOptions::resume).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumable {
    /// Not a credential, but private to the session: never shown or logged.
    pub session_id: String,
    pub info: ServerInfo,
    /// The tasks the server made of its questions on this session (as [`SessionEvent::Hosted`]
    /// reported them), served again from the moment the session is resumed: the server may ask
    /// about them before anything else. Kept by the host beside the session, not in it.
    #[serde(skip)]
    pub hosted: Vec<crate::hosted::HostedTask>,
}

/// Debug output leaves the session id out: options holding one end up in logs.
impl std::fmt::Debug for Resumable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumable")
            .field("session_id", &"(hidden)")
            .field("info", &self.info)
            .field("hosted", &self.hosted.len())
            .finish()
    }
}

/// What became of the session a connection was asked to resume.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Resumption {
    /// Nothing was to be resumed: the connection was initialized (or discovered) afresh.
    #[default]
    NotAsked,
    /// The stored session answered: no `initialize` was sent.
    Resumed,
    /// The stored session could not be carried on (the server no longer knows it, or its first
    /// request failed), and the connection was initialized afresh; the reason says why.
    Gone { reason: String },
}

#[cfg(test)]
mod question_tests {
    use super::*;
    use serde_json::json;

    fn snapshot(input_requests: Value) -> Result<TaskSnapshot, String> {
        let task: DetailedTask = serde_json::from_value(json!({
            "taskId": "t1", "status": "input_required", "createdAt": "2026-12-01T08:00:00Z",
            "lastUpdatedAt": "2026-12-01T08:00:01Z", "ttlMs": null, "inputRequests": input_requests
        }))
        .unwrap();
        TaskSnapshot::from_modern(task)
    }

    #[test]
    fn every_kind_of_modern_input_request_is_decoded_into_a_question_of_its_task() {
        let s = snapshot(json!({
            "form": {"method": "elicitation/create", "params": {"mode": "form", "message": "Which?",
                "requestedSchema": {"type": "object", "properties": {"a": {"type": "boolean"}}}}},
            "visit": {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in",
                "url": "https://auth.example/x", "elicitationId": "e1"}},
            "llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
            "roots": {"method": "roots/list"},
            "broken": {"method": "elicitation/create", "params": {"message": "no schema"}},
            "odd": {"method": "tea/brew", "params": {}}
        }))
        .unwrap();
        let by_key =
            |k: &str| s.questions.iter().find(|q| q.key == QuestionKey::InputKey(k.into())).map(|q| &q.asks).unwrap();
        assert!(s.questions.iter().all(|q| q.task_id.as_deref() == Some("t1")));
        assert!(matches!(by_key("form"), Asks::Form { form, .. } if form.fields().is_some_and(|f| f.len() == 1)));
        assert_eq!(by_key("visit"), &Asks::Url { url: "https://auth.example/x".into(), elicitation_id: "e1".into() });
        assert!(matches!(by_key("llm"), Asks::Sampling { .. }));
        assert_eq!(by_key("roots"), &Asks::Roots);
        assert!(matches!(by_key("broken"), Asks::Malformed { .. }));
        assert!(matches!(by_key("odd"), Asks::Unsupported { .. }));
    }

    #[test]
    fn huge_status_progress_and_error_texts_from_a_server_are_cut_with_the_marker() {
        let huge = "z".repeat(15 * 1024 * 1024);
        let task: DetailedTask = serde_json::from_value(json!({
            "taskId": "t1", "status": "failed", "statusMessage": huge, "createdAt": "2026-12-01T08:00:00Z",
            "lastUpdatedAt": "2026-12-01T08:00:01Z", "ttlMs": null,
            "_meta": {"dev.taskdeck/progress": {"progress": 1, "message": huge}},
            "error": {"code": -32000, "message": huge, "data": {"reason": huge, "trace": huge}}
        }))
        .unwrap();
        let s = TaskSnapshot::from_modern(task).unwrap();
        let cut = |t: &str, max: usize| t.len() <= max && t.ends_with(limits::CUT_MARKER);
        assert!(cut(s.status_message.as_deref().unwrap(), limits::STATUS_MESSAGE_BYTES));
        assert!(cut(s.progress.and_then(|p| p.message).as_deref().unwrap(), limits::PROGRESS_MESSAGE_BYTES));
        let error = s.error.unwrap();
        assert!(cut(&error.message, limits::ERROR_TEXT_BYTES));
        let data = error.data.unwrap();
        assert!(cut(data["reason"].as_str().unwrap(), limits::ERROR_TEXT_BYTES));
        assert_eq!(data.get("trace"), None);

        let legacy: legacy::tasks::Task = serde_json::from_value(json!({
            "taskId": "t2", "status": "working", "statusMessage": huge, "createdAt": "2026-12-01T08:00:00Z",
            "lastUpdatedAt": "2026-12-01T08:00:01Z", "ttl": null
        }))
        .unwrap();
        let s = TaskSnapshot::from_legacy(legacy);
        assert!(cut(s.status_message.as_deref().unwrap(), limits::STATUS_MESSAGE_BYTES));
    }

    #[test]
    fn an_input_request_that_is_not_a_request_makes_the_snapshot_malformed() {
        let err = snapshot(json!({"k": {"params": {}}})).unwrap_err();
        assert!(err.contains("input request \"k\""), "{err}");
    }
}
