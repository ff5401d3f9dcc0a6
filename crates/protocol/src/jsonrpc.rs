//! JSON-RPC 2.0 messages, as MCP uses them in both eras.
//!
//! Parsing is deliberately lenient about what it does not need (unknown members are kept) and
//! strict about what it does (a message that is neither request, notification nor response is a
//! typed error, never a panic).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A request id. Servers send strings (`"task-<id>-3"`) as well as numbers, and `0` is valid.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// The error member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// Error codes used on the wire. The MCP-specific ones are named after the spec's error types.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// 2026-07-28: an HTTP header disagreed with `_meta` (never sent on stdio, but recognised).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request lacks a client capability the server needs (e.g. the tasks extension).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the requested protocol version is not supported; `data.supported` lists versions.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// 2025-11-25: a URL-mode elicitation must be completed first.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;

    /// The codes only a 2026-07-28 server answers with; seeing one identifies the modern era.
    pub fn is_modern_only(code: i64) -> bool {
        matches!(code, HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Some servers put `_meta` at the top level of the message instead of inside `params`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Result {
        id: RequestId,
        result: Value,
    },
    /// `id` is absent when the peer could not tell which request failed (e.g. a parse error).
    Error {
        id: Option<RequestId>,
        error: ErrorObject,
    },
}

impl Response {
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Response::Result { id, .. } => Some(id),
            Response::Error { id, .. } => id.as_ref(),
        }
    }
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// Why a frame is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MessageError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("missing or wrong \"jsonrpc\" member (must be \"2.0\")")]
    BadVersion,
    #[error("invalid id: {0}")]
    BadId(String),
    #[error("\"method\" must be a string")]
    BadMethod,
    #[error("a response needs exactly one of \"result\" and \"error\"")]
    BadResponse,
    #[error("invalid error object: {0}")]
    BadError(String),
    #[error("\"params\" must be an object or an array")]
    BadParams,
}

impl Message {
    pub fn request(id: impl Into<RequestId>, method: &str, params: Value) -> Self {
        Message::Request(Request { id: id.into(), method: method.to_owned(), params: Some(params) })
    }

    pub fn notification(method: &str, params: Option<Value>) -> Self {
        Message::Notification(Notification { method: method.to_owned(), params, meta: None })
    }

    pub fn result(id: RequestId, result: Value) -> Self {
        Message::Response(Response::Result { id, result })
    }

    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Message::Response(Response::Error { id, error })
    }

    /// Parses one frame's text.
    pub fn parse(text: &str) -> Result<Self, MessageError> {
        let value: Value = serde_json::from_str(text).map_err(|e| MessageError::Json(e.to_string()))?;
        Self::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Self, MessageError> {
        let Value::Object(mut obj) = value else {
            return Err(MessageError::NotAnObject);
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(MessageError::BadVersion);
        }
        let id = match obj.remove("id") {
            None => None,
            Some(Value::Null) => None,
            Some(v) => Some(parse_id(v)?),
        };
        let params = match obj.remove("params") {
            None | Some(Value::Null) => None,
            Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
            Some(_) => return Err(MessageError::BadParams),
        };
        match obj.remove("method") {
            Some(Value::String(method)) => Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params, meta: obj.remove("_meta") }),
            }),
            Some(_) => Err(MessageError::BadMethod),
            None => {
                let result = obj.remove("result");
                let error = obj.remove("error");
                match (result, error, id) {
                    (Some(result), None, Some(id)) => Ok(Message::Response(Response::Result { id, result })),
                    (None, Some(error), id) => {
                        let error: ErrorObject =
                            serde_json::from_value(error).map_err(|e| MessageError::BadError(e.to_string()))?;
                        Ok(Message::Response(Response::Error { id, error }))
                    }
                    _ => Err(MessageError::BadResponse),
                }
            }
        }
    }

    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Message::Request(r) => {
                obj.insert("id".into(), id_value(&r.id));
                obj.insert("method".into(), Value::from(r.method.clone()));
                if let Some(p) = &r.params {
                    obj.insert("params".into(), p.clone());
                }
            }
            Message::Notification(n) => {
                obj.insert("method".into(), Value::from(n.method.clone()));
                if let Some(p) = &n.params {
                    obj.insert("params".into(), p.clone());
                }
                if let Some(m) = &n.meta {
                    obj.insert("_meta".into(), m.clone());
                }
            }
            Message::Response(Response::Result { id, result }) => {
                obj.insert("id".into(), id_value(id));
                obj.insert("result".into(), result.clone());
            }
            Message::Response(Response::Error { id, error }) => {
                if let Some(id) = id {
                    obj.insert("id".into(), id_value(id));
                }
                obj.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
            }
        }
        Value::Object(obj)
    }

    /// The message as one line of text, without the trailing newline. serde_json never emits a
    /// raw newline inside a value, so the result is always a single frame.
    pub fn to_line(&self) -> String {
        self.to_value().to_string()
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

fn parse_id(v: Value) -> Result<RequestId, MessageError> {
    match v {
        Value::String(s) => Ok(RequestId::String(s)),
        Value::Number(n) => {
            n.as_i64().map(RequestId::Number).ok_or_else(|| MessageError::BadId(format!("{n} is not an integer")))
        }
        other => Err(MessageError::BadId(format!("{other} is neither a string nor a number"))),
    }
}

fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => Value::from(*n),
        RequestId::String(s) => Value::from(s.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_and_zero_ids_round_trip() {
        for raw in
            [r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#, r#"{"jsonrpc":"2.0","id":"task-a:b-1","method":"ping"}"#]
        {
            let msg = Message::parse(raw).unwrap();
            assert!(matches!(msg, Message::Request(_)));
            assert_eq!(Message::parse(&msg.to_line()).unwrap(), msg);
        }
    }

    #[test]
    fn notification_keeps_top_level_meta() {
        let msg = Message::parse(r#"{"jsonrpc":"2.0","method":"notifications/x","_meta":{"k":1}}"#).unwrap();
        let Message::Notification(n) = msg else { panic!("not a notification") };
        assert_eq!(n.meta, Some(json!({"k": 1})));
    }

    #[test]
    fn malformed_messages_are_typed_errors() {
        assert!(matches!(Message::parse("{"), Err(MessageError::Json(_))));
        assert_eq!(Message::parse("[1]"), Err(MessageError::NotAnObject));
        assert_eq!(Message::parse(r#"{"id":1,"method":"x"}"#), Err(MessageError::BadVersion));
        assert_eq!(
            Message::parse(r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#).unwrap_err().to_string(),
            "invalid id: 1.5 is not an integer"
        );
        assert_eq!(Message::parse(r#"{"jsonrpc":"2.0","id":1}"#), Err(MessageError::BadResponse));
        assert_eq!(
            Message::parse(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#),
            Err(MessageError::BadResponse)
        );
        assert!(matches!(
            Message::parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#),
            Err(MessageError::BadError(_))
        ));
        assert_eq!(Message::parse(r#"{"jsonrpc":"2.0","method":7}"#), Err(MessageError::BadMethod));
        assert_eq!(Message::parse(r#"{"jsonrpc":"2.0","method":"m","params":3}"#), Err(MessageError::BadParams));
    }

    #[test]
    fn error_response_without_id_parses() {
        let msg =
            Message::parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#).unwrap();
        assert_eq!(msg, Message::error(None, ErrorObject::new(codes::PARSE_ERROR, "Parse error")));
    }
}
