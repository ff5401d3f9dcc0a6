//! The task state machine, whole: which update a task accepts in which status, what it becomes,
//! and how a server's report maps onto Taskdeck's statuses. The store asks [`plan`] before every
//! write, so one policy covers every operation: a refusal is always [`StoreError::Refused`] carrying
//! the status the task really has, never a silent no-op.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use taskdeck_protocol::types::CallToolResult;
use taskdeck_protocol::{Era, TaskStatus, limits};

use crate::error::StoreError;
use crate::task::{Answer, EventKind, FailureReason, Progress, Question, TaskError, TaskRecord};

/// A change to a task, as the engine reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The server reported a non-terminal status, possibly only a new message. `message: None`
    /// clears the message, as a server that omits `statusMessage` means "nothing to say".
    /// Terminal statuses are reached only through [`Update::Completed`], [`Update::Failed`] and
    /// [`Update::Cancelled`], which carry what a terminal task must keep.
    Status {
        status: TaskStatus,
        message: Option<String>,
        server_status: Option<String>,
    },
    /// Progress is written to the row only; it is too frequent to log and carries no decision.
    Progress(Progress),
    /// The server is waiting on the user. Replaces any question already pending.
    /// Boxed: a typed question (its form model beside the request) dwarfs every other update.
    Question {
        question: Box<Question>,
        message: Option<String>,
    },
    /// The server is waiting on several answers at once (a modern task's `inputRequests`), in its
    /// order. Replaces any question already pending.
    Questions {
        questions: Vec<Question>,
        message: Option<String>,
    },
    /// The user answered the pending question with the same key; the task is working again.
    Answer(Answer),
    /// The user answered several pending questions at once (one `tasks/update`).
    Answers(Vec<Answer>),
    /// The request's result arrived. A tool result with `isError: true` makes the task failed
    /// (see [`taskdeck_status`]); the result is kept either way.
    Completed {
        result: Value,
        server_status: Option<String>,
    },
    Failed {
        error: TaskError,
        server_status: Option<String>,
    },
    Cancelled {
        reason: Option<String>,
        server_status: Option<String>,
    },
}

/// Events a task keeps, the `dropped` marker included. A server can say "working" with a new
/// message for as long as it likes; past this, what it can repeat without end is dropped (see
/// [`may_drop`]) and the marker counts it, while what ends a task or answers it is always kept.
pub const EVENTS_PER_TASK: usize = 1000;

/// Whether an event may be dropped past [`EVENTS_PER_TASK`]: a status, a question, the remote
/// handle, all of which the task's row still shows as they last were. A result, failure, cancel or
/// reclaim (the end, at most once) and an answer (the user's word, once per question) never are.
pub(crate) fn may_drop(kind: EventKind) -> bool {
    match kind {
        EventKind::Status | EventKind::Question | EventKind::Remote => true,
        EventKind::Created
        | EventKind::Answer
        | EventKind::Result
        | EventKind::Failed
        | EventKind::Cancelled
        | EventKind::Reclaimed
        | EventKind::Dropped => false,
    }
}

/// The update with every server text in it within its bound ([`limits`]), however it reached the
/// store: what is written, logged and published is never bigger than that.
pub(crate) fn bounded(update: Update) -> Update {
    let error_text = |t: Option<String>| t.map(limits::error_text);
    match update {
        Update::Status { status, message, server_status } => Update::Status {
            status,
            message: message.map(limits::status_message),
            server_status: error_text(server_status),
        },
        Update::Progress(Progress { progress, total, message }) => {
            Update::Progress(Progress { progress, total, message: message.map(limits::progress_message) })
        }
        Update::Question { question, message } => {
            Update::Question { question, message: message.map(limits::status_message) }
        }
        Update::Questions { questions, message } => {
            Update::Questions { questions, message: message.map(limits::status_message) }
        }
        Update::Failed { error, server_status } => Update::Failed {
            error: TaskError {
                code: error.code,
                message: limits::error_text(error.message),
                reason: error.reason.map(|r| match r {
                    FailureReason::Other(text) => FailureReason::Other(limits::error_text(text)),
                    typed => typed,
                }),
            },
            server_status: error_text(server_status),
        },
        Update::Cancelled { reason, server_status } => {
            Update::Cancelled { reason: error_text(reason), server_status: error_text(server_status) }
        }
        Update::Completed { result, server_status } => {
            Update::Completed { result, server_status: error_text(server_status) }
        }
        answer @ (Update::Answer(_) | Update::Answers(_)) => answer,
    }
}

/// The kind of operation a refusal names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attempt {
    SetRemote,
    Status,
    Progress,
    Question,
    Answer,
    Complete,
    Fail,
    Cancel,
    Reclaim,
    Delete,
}

impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Attempt::SetRemote => "set the remote task",
            Attempt::Status => "change status",
            Attempt::Progress => "record progress",
            Attempt::Question => "record a question",
            Attempt::Answer => "record an answer",
            Attempt::Complete => "complete",
            Attempt::Fail => "fail",
            Attempt::Cancel => "cancel",
            Attempt::Reclaim => "reclaim",
            Attempt::Delete => "delete",
        })
    }
}

impl Update {
    pub fn attempt(&self) -> Attempt {
        match self {
            Update::Status { .. } => Attempt::Status,
            Update::Progress(_) => Attempt::Progress,
            Update::Question { .. } | Update::Questions { .. } => Attempt::Question,
            Update::Answer(_) | Update::Answers(_) => Attempt::Answer,
            Update::Completed { .. } => Attempt::Complete,
            Update::Failed { .. } => Attempt::Fail,
            Update::Cancelled { .. } => Attempt::Cancel,
        }
    }
}

/// Whether a task in `from` may move to `to`. Terminal is final; the two live statuses may move
/// anywhere, including to themselves (an update of message or question).
pub fn can_transition(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    // Spelled out rather than `!from.is_terminal()` so a new status cannot slip in without a decision.
    match (from, to) {
        (Completed | Failed | Cancelled, _) => false,
        (Working | InputRequired, Working | InputRequired | Completed | Failed | Cancelled) => true,
    }
}

/// What Taskdeck records for a server's report. A modern-era server carries a tool's own failure
/// inside a `completed` task whose result has `isError: true`; the user asked for the tool's
/// outcome, so Taskdeck calls that failed. The 2025-11-25 revision already asks legacy servers to
/// report such a call as `failed`, so one that says `completed` anyway is normalised the same way.
/// An era not yet known (a plain call) follows the same rule, since the result says it all.
pub fn taskdeck_status(era: Option<Era>, server_status: TaskStatus, result: Option<&Value>) -> TaskStatus {
    let tool_failed = result.and_then(|r| r.get("isError")).and_then(Value::as_bool) == Some(true);
    match (era, server_status) {
        (Some(Era::Modern), TaskStatus::Completed) if tool_failed => TaskStatus::Failed,
        (Some(Era::Legacy) | None, TaskStatus::Completed) if tool_failed => TaskStatus::Failed,
        (_, status) => status,
    }
}

/// What the store must write for an accepted update.
#[derive(Debug)]
pub(crate) struct Plan {
    pub to: TaskStatus,
    /// `None` for updates that only touch the row (progress, an unchanged status).
    pub event: Option<(EventKind, Value)>,
    /// Set when a result is mapped to failed: the error Taskdeck derives from it.
    pub derived_error: Option<TaskError>,
}

pub(crate) fn refuse(current: &TaskRecord, attempted: Attempt, reason: impl Into<String>) -> StoreError {
    StoreError::Refused { id: current.id.clone(), current: current.status, attempted, reason: reason.into() }
}

fn require_live(current: &TaskRecord, attempted: Attempt) -> Result<(), StoreError> {
    if current.status.is_terminal() {
        return Err(refuse(current, attempted, format!("{} is final", current.status)));
    }
    Ok(())
}

/// Decides an update against the task as it is now. Pure: the caller applies the plan.
pub(crate) fn plan(current: &TaskRecord, update: &Update) -> Result<Plan, StoreError> {
    let attempted = update.attempt();
    require_live(current, attempted)?;
    let from = current.status;
    let plan = match update {
        Update::Status { status, message, server_status } => {
            if status.is_terminal() {
                return Err(refuse(
                    current,
                    attempted,
                    format!("{status} must be recorded with its result, error or reason, not as a bare status"),
                ));
            }
            let changed = *status != from || *message != current.status_message;
            let event =
                changed.then(|| (EventKind::Status, json!({ "server_status": server_status, "message": message })));
            Plan { to: *status, event, derived_error: None }
        }
        Update::Progress(_) => Plan { to: from, event: None, derived_error: None },
        Update::Question { question, message } => {
            // A modern server repeats its `inputRequests` on every poll; the same question again is
            // not news and must not flood the log.
            let repeated = from == TaskStatus::InputRequired
                && current.question.as_ref() == Some(&**question)
                && *message == current.status_message;
            let event = (!repeated).then(|| {
                (
                    EventKind::Question,
                    json!({ "key": question.key.to_text(), "request": question.request, "message": message }),
                )
            });
            Plan { to: TaskStatus::InputRequired, event, derived_error: None }
        }
        Update::Questions { questions, message } => {
            let Some(first) = questions.first() else {
                return Err(refuse(current, attempted, "no question given"));
            };
            let repeated = from == TaskStatus::InputRequired
                && current.questions == *questions
                && *message == current.status_message;
            let event = (!repeated).then(|| {
                let all: Vec<Value> =
                    questions.iter().map(|q| json!({ "key": q.key.to_text(), "request": q.request })).collect();
                (
                    EventKind::Question,
                    json!({ "key": first.key.to_text(), "request": first.request, "message": message,
                        "questions": all }),
                )
            });
            Plan { to: TaskStatus::InputRequired, event, derived_error: None }
        }
        Update::Answers(answers) => {
            if from != TaskStatus::InputRequired || current.questions.is_empty() {
                return Err(refuse(current, attempted, "the task is not waiting for input"));
            }
            let pending: Vec<String> = current.questions.iter().map(|q| q.key.to_text()).collect();
            if answers.is_empty() {
                return Err(refuse(current, attempted, "no answer given"));
            }
            if let Some(a) = answers.iter().find(|a| !pending.contains(&a.key)) {
                return Err(refuse(current, attempted, format!("no pending question is {:?}", a.key)));
            }
            let all: Vec<Value> = answers
                .iter()
                .map(|a| match &a.note {
                    None => json!({ "key": a.key, "response": a.response }),
                    Some(note) => json!({ "key": a.key, "response": a.response, "sampling": note }),
                })
                .collect();
            let mut data = all[0].clone();
            data["answers"] = Value::Array(all);
            Plan { to: TaskStatus::Working, event: Some((EventKind::Answer, data)), derived_error: None }
        }
        Update::Answer(answer) => {
            let Some(pending) = &current.question else {
                return Err(refuse(current, attempted, "no question is pending"));
            };
            if from != TaskStatus::InputRequired {
                return Err(refuse(current, attempted, "the task is not waiting for input"));
            }
            if pending.key.to_text() != answer.key {
                return Err(refuse(
                    current,
                    attempted,
                    format!("the pending question is {:?}, not {:?}", pending.key.to_text(), answer.key),
                ));
            }
            Plan {
                to: TaskStatus::Working,
                event: Some((
                    EventKind::Answer,
                    match &answer.note {
                        None => json!({ "key": answer.key, "response": answer.response }),
                        Some(note) => json!({ "key": answer.key, "response": answer.response, "sampling": note }),
                    },
                )),
                derived_error: None,
            }
        }
        Update::Completed { result, server_status } => {
            let to = taskdeck_status(current.era, TaskStatus::Completed, Some(result));
            let derived_error = (to == TaskStatus::Failed).then(|| tool_error(result));
            let data = json!({
                "server_status": server_status,
                "is_error": to == TaskStatus::Failed,
            });
            Plan { to, event: Some((EventKind::Result, data)), derived_error }
        }
        Update::Failed { error, server_status } => Plan {
            to: TaskStatus::Failed,
            event: Some((EventKind::Failed, json!({ "server_status": server_status, "error": error }))),
            derived_error: None,
        },
        Update::Cancelled { reason, server_status } => Plan {
            to: TaskStatus::Cancelled,
            event: Some((EventKind::Cancelled, json!({ "server_status": server_status, "reason": reason }))),
            derived_error: None,
        },
    };
    debug_assert!(can_transition(from, plan.to));
    Ok(plan)
}

/// Reclaiming is a failure Taskdeck decides itself, logged under its own kind so nobody mistakes it
/// for something a server said.
pub(crate) fn plan_reclaim(current: &TaskRecord, reason: &str) -> Result<Plan, StoreError> {
    require_live(current, Attempt::Reclaim)?;
    let data = json!({ "reason": reason, "last_update": crate::time::format(&current.updated_at) });
    Ok(Plan { to: TaskStatus::Failed, event: Some((EventKind::Reclaimed, data)), derived_error: None })
}

/// Checks that the remote identity may be recorded: once a remote task id is known it is the
/// task's identity on the server, and a different one would orphan the real task.
pub(crate) fn check_remote(current: &TaskRecord, remote_task_id: Option<&str>) -> Result<(), StoreError> {
    require_live(current, Attempt::SetRemote)?;
    if let (Some(known), Some(new)) = (current.remote_task_id.as_deref(), remote_task_id)
        && known != new
    {
        return Err(refuse(current, Attempt::SetRemote, format!("remote task id is already {known:?}, not {new:?}")));
    }
    Ok(())
}

fn tool_error(result: &Value) -> TaskError {
    let text = serde_json::from_value::<CallToolResult>(result.clone()).map(|r| r.joined_text()).unwrap_or_default();
    TaskError {
        code: None,
        message: if text.is_empty() { "the tool reported an error".to_owned() } else { text },
        reason: Some(FailureReason::ToolError),
    }
}
