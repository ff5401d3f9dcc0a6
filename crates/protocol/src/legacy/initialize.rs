//! The `initialize` handshake and the capabilities it negotiates.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::types::Implementation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitializeParams {
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    pub capabilities: Value,
    #[serde(rename = "clientInfo")]
    pub client_info: Implementation,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitializeResult {
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    #[serde(default)]
    pub capabilities: Value,
    #[serde(rename = "serverInfo")]
    pub server_info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What Taskdeck really supports as a legacy client: form and URL elicitation (also as the
/// answer to a task's question), sampling (a question reviewed by the user; no `context`, which
/// Taskdeck never attaches; `tools`, since the review shows them, a reply written by hand may call
/// one, and both provider kinds pass them to the model: without it a server may not offer any), roots
/// (the user's grant, whose changes Taskdeck announces), and both questions as tasks hosted here (`tasks.requests`, served by the client's
/// `hosted.rs`: `tasks/get`, `tasks/result`, `tasks/cancel`), since a person may answer hours later.
pub fn client_capabilities() -> Value {
    json!({
        "elicitation": { "form": {}, "url": {} },
        "sampling": { "tools": {} },
        "roots": { "listChanged": true },
        "tasks": {
            "cancel": {},
            "requests": { "sampling": { "createMessage": {} }, "elicitation": { "create": {} } },
        },
    })
}

/// Reads a server's declared task support for tools/call out of its capabilities.
pub fn server_supports_task_tools(capabilities: &Value) -> bool {
    capabilities.pointer("/tasks/requests/tools/call").is_some_and(Value::is_object)
}

pub fn server_supports_task_cancel(capabilities: &Value) -> bool {
    capabilities.pointer("/tasks/cancel").is_some_and(Value::is_object)
}

pub fn server_supports_task_list(capabilities: &Value) -> bool {
    capabilities.pointer("/tasks/list").is_some_and(Value::is_object)
}
