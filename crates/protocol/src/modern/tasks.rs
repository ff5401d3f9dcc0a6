//! Tasks as the `io.modelcontextprotocol/tasks` extension: the flat `CreateTaskResult`,
//! `tasks/get` with `inputRequests`/`result`/`error`, `tasks/update`, the `tasks/cancel` ack and
//! `notifications/tasks`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;
use crate::{TaskStatus, meta};

/// A task as the extension describes it (`ttlMs`/`pollIntervalMs`, not `ttl`/`pollInterval`).
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
    #[serde(rename = "ttlMs", default)]
    pub ttl_ms: Option<i64>,
    #[serde(rename = "pollIntervalMs", default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<i64>,
}

/// One entry of `inputRequests`: a request without `jsonrpc`/`id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

/// The body of `tasks/get` and of `notifications/tasks`: the task plus whatever its status carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetailedTask {
    #[serde(flatten)]
    pub task: Task,
    /// Present when `input_required`: every outstanding request, keyed uniquely for the task's life.
    #[serde(rename = "inputRequests", default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
    /// Present when `completed`: the original request's result (e.g. a `CallToolResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Present when `failed`: the JSON-RPC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    #[serde(rename = "resultType", default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DetailedTask {
    /// Progress the server attached under Taskdeck's `_meta` key, if any.
    pub fn progress(&self) -> Option<TaskProgress> {
        let v = self.meta.as_ref()?.get(meta::TASK_PROGRESS)?;
        serde_json::from_value(v.clone()).ok()
    }
}

/// `{progress, total?, message?}` under `_meta["dev.taskdeck/progress"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskProgress {
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The flat `CreateTaskResult`: the task's fields plus `resultType: "task"`.
pub fn is_create_task_result(result: &Value) -> bool {
    super::result_type(result) == super::result_type::TASK
}

/// `tasks/update` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateTaskParams {
    #[serde(rename = "taskId")]
    pub task_id: String,
    #[serde(rename = "inputResponses")]
    pub input_responses: Map<String, Value>,
}

/// `subscriptions/listen` params: the notifications a client opts in to on one stream. The tasks
/// extension adds `taskIds`, whose statuses then arrive as `notifications/tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SubscriptionsListenParams {
    pub notifications: SubscriptionFilter,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SubscriptionFilter {
    #[serde(rename = "toolsListChanged", default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    #[serde(rename = "taskIds", default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
