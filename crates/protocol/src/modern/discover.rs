//! `server/discover` and the version-negotiation error that identifies a modern server.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::Implementation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoverResult {
    #[serde(rename = "supportedVersions")]
    pub supported_versions: Vec<String>,
    #[serde(default)]
    pub capabilities: Value,
    #[serde(rename = "serverInfo", default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Implementation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(rename = "ttlMs", default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    #[serde(rename = "cacheScope", default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    #[serde(rename = "resultType", default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    pub fn supports_tasks(&self) -> bool {
        self.capabilities
            .pointer("/extensions")
            .and_then(|e| e.get(crate::meta::TASKS_EXTENSION))
            .is_some_and(Value::is_object)
    }
}

/// `data` of an `UnsupportedProtocolVersionError` (-32022).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    pub supported: Vec<String>,
    pub requested: String,
}
