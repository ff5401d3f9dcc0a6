//! Method names, so a typo is a compile error rather than a silent `-32601`.

pub const INITIALIZE: &str = "initialize";
pub const INITIALIZED: &str = "notifications/initialized";
pub const PING: &str = "ping";
pub const SERVER_DISCOVER: &str = "server/discover";

pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

pub const PROGRESS: &str = "notifications/progress";
pub const CANCELLED: &str = "notifications/cancelled";
pub const LOG_MESSAGE: &str = "notifications/message";
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

pub const ELICITATION_CREATE: &str = "elicitation/create";
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
pub const ROOTS_LIST: &str = "roots/list";
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";

pub const TASKS_GET: &str = "tasks/get";
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Legacy only: blocks until the task is terminal; removed in the extension (`-32601` there).
pub const TASKS_RESULT: &str = "tasks/result";
/// Legacy only.
pub const TASKS_LIST: &str = "tasks/list";
/// Modern only: answers `inputRequests`.
pub const TASKS_UPDATE: &str = "tasks/update";
/// Legacy status notification.
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// Modern status notification, delivered on a `subscriptions/listen` stream.
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";

/// Modern only.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
