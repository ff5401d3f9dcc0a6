//! What the transport reads from a message it sends, and the 2026-07-28 request headers it
//! mirrors from the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), so intermediaries
//! can route without parsing JSON and a modern server can check that both agree.

use serde_json::Value;
use taskdeck_protocol::{Message, RequestId, meta, methods};

pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const SESSION_ID: &str = "mcp-session-id";
pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";
pub const LAST_EVENT_ID: &str = "last-event-id";

/// One message the session sent, as the transport needs to know it.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub text: String,
    pub kind: Kind,
    /// The protocol version in the message's own `_meta`: set only on a 2026-07-28 request, which
    /// is how the transport tells the eras apart message by message.
    pub modern_version: Option<String>,
    /// The modern request headers, values already encoded.
    pub modern_headers: Vec<(&'static str, String)>,
    /// A request's params, for what its headers mirror from them.
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Request { id: RequestId, method: String },
    Notification { method: String, params: Option<Value> },
    Response,
}

impl Outgoing {
    /// Reads a message the session built. `None` for text that is not a message, which the
    /// session never sends.
    pub fn read(text: String) -> Option<Self> {
        let message = Message::parse(&text).ok()?;
        let (kind, params) = match message {
            Message::Request(r) => (Kind::Request { id: r.id, method: r.method }, r.params),
            Message::Notification(n) => {
                let params = n.params.clone();
                (Kind::Notification { method: n.method, params: n.params }, params)
            }
            Message::Response(_) => (Kind::Response, None),
        };
        let modern_version = meta::params_meta(params.as_ref())
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut modern_headers = Vec::new();
        if let (Some(version), Kind::Request { method, .. }) = (&modern_version, &kind) {
            modern_headers.push((PROTOCOL_VERSION, encode_value(version)));
            modern_headers.push((METHOD, encode_value(method)));
            if let Some(name) = name_of(method, params.as_ref()) {
                modern_headers.push((NAME, encode_value(name)));
            }
        }
        let params = if matches!(kind, Kind::Request { .. }) { params } else { None };
        Some(Self { text, kind, modern_version, modern_headers, params })
    }

    pub fn request_id(&self) -> Option<&RequestId> {
        match &self.kind {
            Kind::Request { id, .. } => Some(id),
            _ => None,
        }
    }

    pub fn is_modern(&self) -> bool {
        self.modern_version.is_some()
    }

    /// A legacy `initialize`, whose answer names the session and the version.
    pub fn is_initialize(&self) -> bool {
        !self.is_modern() && self.method() == Some(methods::INITIALIZE)
    }

    pub fn method(&self) -> Option<&str> {
        match &self.kind {
            Kind::Request { method, .. } | Kind::Notification { method, .. } => Some(method),
            Kind::Response => None,
        }
    }
}

/// The body field `Mcp-Name` mirrors: the tool, prompt or resource a request is about, or, for
/// the tasks extension's requests, the task (so a load balancer can route to where it runs).
fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let field = match method {
        methods::TOOLS_CALL | "prompts/get" => "name",
        "resources/read" => "uri",
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => "taskId",
        _ => return None,
    };
    params?.get(field)?.as_str()
}

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// A value as a header carries it: as it is when it is plain visible ASCII without surrounding
/// whitespace, otherwise (and when it would read as the sentinel itself) Base64 in the sentinel.
pub fn encode_value(value: &str) -> String {
    let visible = value.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    let plain = visible && !padded && !sentinel;
    if plain { value.to_owned() } else { format!("{SENTINEL_START}{}{SENTINEL_END}", base64(value.as_bytes())) }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 0x3f) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_a_header_cannot_carry_go_in_the_base64_sentinel() {
        // The spec's own examples.
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
    }

    #[test]
    fn a_modern_request_mirrors_method_name_and_version() {
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
        let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wetter ☂","_meta":meta}});
        let out = Outgoing::read(call.to_string()).unwrap();
        assert_eq!(out.modern_version.as_deref(), Some("2026-07-28"));
        assert_eq!(
            out.modern_headers,
            vec![
                (PROTOCOL_VERSION, "2026-07-28".to_owned()),
                (METHOD, "tools/call".to_owned()),
                (NAME, encode_value("wetter ☂")),
            ]
        );
        let get = json!({"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t-1","_meta":meta}});
        assert!(Outgoing::read(get.to_string()).unwrap().modern_headers.contains(&(NAME, "t-1".to_owned())));
        let list = json!({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":meta}});
        assert!(!Outgoing::read(list.to_string()).unwrap().modern_headers.iter().any(|(h, _)| *h == NAME));
        // A legacy request carries none of them: its version is the negotiated one, sent apart.
        let legacy = json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x"}});
        let out = Outgoing::read(legacy.to_string()).unwrap();
        assert!(out.modern_version.is_none() && out.modern_headers.is_empty());
    }
}
