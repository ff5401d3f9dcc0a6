//! The `_meta` every modern request carries: protocol version, client capabilities and client
//! info. Servers must not infer capabilities from earlier requests, so every request repeats them.

use serde_json::{Map, Value, json};

use crate::meta;
use crate::types::Implementation;

/// The capabilities Taskdeck declares as a modern client: form and URL elicitation and sampling
/// with tools (answered through `inputRequests`; tools as in the legacy era's
/// [`crate::legacy::initialize::client_capabilities`]), roots, and the tasks extension.
pub fn client_capabilities() -> Value {
    json!({
        "elicitation": { "form": {}, "url": {} },
        "sampling": { "tools": {} },
        "roots": {},
        "extensions": { meta::TASKS_EXTENSION: {} },
    })
}

/// Builds a request's `_meta` for `version`.
pub fn request_meta(version: &str, client_info: &Implementation) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(meta::PROTOCOL_VERSION.into(), Value::from(version));
    m.insert(meta::CLIENT_CAPABILITIES.into(), client_capabilities());
    m.insert(meta::CLIENT_INFO.into(), serde_json::to_value(client_info).unwrap_or(Value::Null));
    m
}

/// Returns `params` with the request `_meta` merged in (keys already present, such as
/// `progressToken`, are kept).
pub fn with_request_meta(params: Value, version: &str, client_info: &Implementation) -> Value {
    let mut obj = match params {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    let meta_entry = obj.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if !meta_entry.is_object() {
        *meta_entry = Value::Object(Map::new());
    }
    if let Value::Object(m) = meta_entry {
        for (k, v) in request_meta(version, client_info) {
            m.entry(k).or_insert(v);
        }
    }
    Value::Object(obj)
}

/// What a server reads out of a request's `_meta`: the version asked for and whether the client
/// declared the tasks extension on this very request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestEnvelope {
    pub protocol_version: Option<String>,
    pub client_capabilities: Option<Value>,
    /// `io.modelcontextprotocol/logLevel`: the log entries the client wants for this request;
    /// without it, none may be sent.
    pub log_level: Option<String>,
}

impl RequestEnvelope {
    pub fn read(params: Option<&Value>) -> Self {
        let m = meta::params_meta(params);
        Self {
            protocol_version: m.and_then(|m| m.get(meta::PROTOCOL_VERSION)).and_then(Value::as_str).map(str::to_owned),
            client_capabilities: m.and_then(|m| m.get(meta::CLIENT_CAPABILITIES)).cloned(),
            log_level: m.and_then(|m| m.get(meta::LOG_LEVEL)).and_then(Value::as_str).map(str::to_owned),
        }
    }

    /// A request is modern when it names a protocol version in its `_meta`.
    pub fn is_modern(&self) -> bool {
        self.protocol_version.is_some()
    }

    pub fn declares_tasks(&self) -> bool {
        self.client_capabilities
            .as_ref()
            .and_then(|c| c.pointer("/extensions"))
            .and_then(|e| e.get(meta::TASKS_EXTENSION))
            .is_some_and(Value::is_object)
    }

    pub fn declares_sampling(&self) -> bool {
        self.client_capabilities.as_ref().and_then(|c| c.get("sampling")).is_some_and(Value::is_object)
    }

    pub fn declares_elicitation(&self) -> bool {
        self.client_capabilities.as_ref().and_then(|c| c.get("elicitation")).is_some_and(Value::is_object)
    }
}
