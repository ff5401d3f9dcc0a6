//! Message bodies shared by both eras: tools, results, progress, logging, cancellation, roots.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Name and version of a client or server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    pub fn new(name: &str, version: &str) -> Self {
        Self { name: name.into(), version: version.into(), extra: Map::new() }
    }
}

/// Whether a tool may, must, or must not be called as a task (legacy `execution.taskSupport`).
/// The modern era dropped the annotation: there the server alone decides per call.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    Forbidden,
    Optional,
    Required,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolExecution {
    #[serde(rename = "taskSupport", default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(rename = "outputSchema", default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Legacy only; see [`TaskSupport`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// The declared task support; absent means `forbidden` in the legacy era.
    pub fn task_support(&self) -> TaskSupport {
        self.execution.as_ref().and_then(|e| e.task_support).unwrap_or(TaskSupport::Forbidden)
    }

    /// Display name precedence from the spec: `title`, `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title.as_deref().or_else(|| self.extra.get("annotations")?.get("title")?.as_str()).unwrap_or(&self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListToolsResult {
    pub tools: Vec<Tool>,
    #[serde(rename = "nextCursor", default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of a tool call. Content blocks are kept as JSON: the host renders them by `type`,
/// and a block type it does not know must survive a round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CallToolResult {
    #[serde(default)]
    pub content: Vec<Value>,
    #[serde(rename = "structuredContent", default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(rename = "isError", default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![text_block(text)], ..Default::default() }
    }

    pub fn error_text(text: impl Into<String>) -> Self {
        Self { content: vec![text_block(text)], is_error: Some(true), ..Default::default() }
    }

    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }

    /// The text blocks joined by newlines: what a terminal shows of a result.
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub fn text_block(text: impl Into<String>) -> Value {
    serde_json::json!({ "type": "text", "text": text.into() })
}

/// `notifications/progress` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressParams {
    #[serde(rename = "progressToken")]
    pub progress_token: Value,
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `notifications/message` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    pub level: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    pub data: Value,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `notifications/cancelled` params: cancels an ordinary in-flight request (never a task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelledParams {
    #[serde(rename = "requestId", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<crate::RequestId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ListRootsResult {
    pub roots: Vec<Root>,
}
