//! `_meta` keys. Reserved MCP keys carry the `io.modelcontextprotocol/` prefix; Taskdeck's own
//! carry `dev.taskdeck/`.

/// Legacy: ties a message to the task it belongs to; value `{ "taskId": string }`.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// Legacy: an interim text the host may show while a task runs.
pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";

/// Modern per-request keys.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The tasks extension's identifier, under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// On every message of a `subscriptions/listen` stream (2026-07-28): the JSON-RPC id of the
/// request that opened it.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The progress token of a request, in its `params._meta`.
pub const PROGRESS_TOKEN: &str = "progressToken";

/// Taskdeck's own key for progress on a modern task. The extension forbids
/// `notifications/progress` for tasks, so the demo server reports `{progress, total?, message?}`
/// in the task's `_meta` instead; any server may do the same, and the client reads it when present.
pub const TASK_PROGRESS: &str = "dev.taskdeck/progress";

use serde_json::{Map, Value};

/// `params._meta` of a params object, if any.
pub fn params_meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// The related-task id carried by a legacy message's `params._meta` (or by a top-level `_meta`).
pub fn related_task_id<'a>(params: Option<&'a Value>, top_level_meta: Option<&'a Value>) -> Option<&'a str> {
    params_meta(params)
        .and_then(|m| m.get(RELATED_TASK))
        .or_else(|| top_level_meta?.get(RELATED_TASK))?
        .get("taskId")?
        .as_str()
}
