//! Protocol revision `2026-07-28`: no handshake, per-request `_meta`, `server/discover`, and tasks
//! as the `io.modelcontextprotocol/tasks` extension.

pub mod discover;
pub mod request_meta;
pub mod tasks;

pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// `resultType` values. An absent `resultType` means `complete` (results from older servers).
pub mod result_type {
    pub const COMPLETE: &str = "complete";
    pub const INPUT_REQUIRED: &str = "input_required";
    /// Added by the tasks extension.
    pub const TASK: &str = "task";
}

/// The `resultType` of a result, `complete` when absent.
pub fn result_type(result: &serde_json::Value) -> &str {
    result.get("resultType").and_then(serde_json::Value::as_str).unwrap_or(result_type::COMPLETE)
}
