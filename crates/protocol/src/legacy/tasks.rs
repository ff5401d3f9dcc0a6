//! Legacy task messages: `params.task`, the nested `CreateTaskResult`, `tasks/get|result|list|cancel`
//! and `notifications/tasks/status`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::TaskStatus;

/// `params.task` on a task-augmented request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TaskMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
}

/// A task as the legacy era describes it. Also the body of `tasks/get`, `tasks/cancel` and
/// `notifications/tasks/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    #[serde(rename = "taskId")]
    pub task_id: String,
    pub status: TaskStatus,
    #[serde(rename = "statusMessage", default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    #[serde(rename = "createdAt")]
    pub created_at: String,
    #[serde(rename = "lastUpdatedAt")]
    pub last_updated_at: String,
    /// Required on the wire, `null` meaning unlimited. Tolerated when absent.
    #[serde(default)]
    pub ttl: Option<i64>,
    #[serde(rename = "pollInterval", default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<i64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The immediate answer to a task-augmented request: `{ "task": Task }`, nested.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    pub task: Task,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateTaskResult {
    /// Whether a `tools/call` result is a task handle rather than a `CallToolResult`.
    pub fn matches(result: &Value) -> bool {
        result.get("task").is_some_and(Value::is_object) && result.get("content").is_none()
    }
}

/// `{ "taskId": string }`: the params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskIdParams {
    #[serde(rename = "taskId")]
    pub task_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListTasksResult {
    pub tasks: Vec<Task>,
    #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
