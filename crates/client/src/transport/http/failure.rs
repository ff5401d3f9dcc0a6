//! Why an HTTP exchange ended without the server's answer, as the session hears it.
//!
//! The transport knows which request each POST carried, so a failed exchange becomes a JSON-RPC
//! error response for exactly that request: the session fails it as it fails any refused request
//! ([`ClientError::Rpc`]), and the engine treats it as it treats a server's error, retrying a
//! poll rather than failing a task. The error's `data` carries the failure, typed, under
//! [`DATA_KEY`], for whoever needs to act on it (a sign-in, later).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use taskdeck_protocol::ErrorObject;

use crate::ClientError;

/// The code of every error the transport makes up: one of JSON-RPC's implementation-defined
/// server errors, and none that a modern server uses, so era detection reads it as "not modern".
pub const HTTP_FAILURE: i64 = -32099;

/// Where in the error's `data` the typed failure is.
pub const DATA_KEY: &str = "dev.taskdeck/http";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HttpFailure {
    /// 401: the server wants the user signed in. `www_authenticate` is the challenge, which names
    /// the protected resource metadata an OAuth sign-in starts from.
    SignInNeeded { www_authenticate: Option<String> },
    /// 403: signed in, but not allowed (an `insufficient_scope` challenge asks for more scopes).
    Forbidden { www_authenticate: Option<String> },
    /// An HTTP error status whose body is not a JSON-RPC error (an HTML page, nothing at all).
    Status { status: u16, content_type: Option<String> },
    /// The server could not be reached (DNS, TCP, TLS). The transport reports this as the
    /// connection's end rather than as one request's error: the server is down, as a stdio
    /// server whose process ended, and is started again by whoever supervises it.
    Unreachable { detail: String },
    /// The exchange broke, or the server took too long, before the answer's status and headers.
    Exchange { detail: String },
    /// The server sent the request to another origin, which Taskdeck does not follow: the
    /// headers (an API key) were meant for this one.
    Redirected { status: u16, to: String },
    /// The answer's event stream ended, or broke, before it carried the answer.
    StreamEnded { detail: String },
    /// A success status that carries no answer (`202` to a request, another content type).
    NoAnswer { detail: String },
}

impl HttpFailure {
    /// What happened, for a person. The server's name is not in it: every error that carries
    /// this one names the server already.
    pub fn message(&self) -> String {
        match self {
            HttpFailure::SignInNeeded { .. } => "sign-in needed (HTTP 401 Unauthorized)".to_owned(),
            HttpFailure::Forbidden { www_authenticate } => {
                if www_authenticate.as_deref().is_some_and(|w| w.contains("insufficient_scope")) {
                    "sign-in with more permissions needed (HTTP 403 insufficient_scope)".to_owned()
                } else {
                    "access refused (HTTP 403 Forbidden): sign-in as someone allowed to use it needed".to_owned()
                }
            }
            HttpFailure::Status { status, content_type } => {
                let reason = reqwest::StatusCode::from_u16(*status).ok().and_then(|s| s.canonical_reason());
                let what = match content_type {
                    Some(t) => format!("a {t} body"),
                    None => "no body".to_owned(),
                };
                format!(
                    "HTTP {status}{} with {what}, not a JSON-RPC answer",
                    reason.map(|r| format!(" {r}")).unwrap_or_default()
                )
            }
            HttpFailure::Unreachable { detail } => format!("could not be reached: {detail}"),
            HttpFailure::Exchange { detail } => format!("no answer: {detail}"),
            HttpFailure::Redirected { status, to } => format!(
                "redirected (HTTP {status}) to {to}, another origin, which Taskdeck does not follow; use that URL in the config if it is right"
            ),
            HttpFailure::StreamEnded { detail } | HttpFailure::NoAnswer { detail } => detail.clone(),
        }
    }

    /// The JSON-RPC error the session is handed for the request.
    pub fn to_error(&self) -> ErrorObject {
        let mut data = json!({ DATA_KEY: self });
        if matches!(self, HttpFailure::SignInNeeded { .. } | HttpFailure::Forbidden { .. }) {
            // The reason a task keeps, should a failed call end one.
            data["reason"] = json!("SIGN_IN_NEEDED");
        }
        ErrorObject::new(HTTP_FAILURE, self.message()).with_data(data)
    }

    /// The failure behind an error, when the HTTP transport made it up.
    pub fn of(error: &ClientError) -> Option<HttpFailure> {
        let e = error.rpc_error()?;
        if e.code != HTTP_FAILURE {
            return None;
        }
        serde_json::from_value(e.data.as_ref()?.get(DATA_KEY)?.clone()).ok()
    }

    /// True when signing in (again) is what the user can do about it.
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, HttpFailure::SignInNeeded { .. } | HttpFailure::Forbidden { .. })
    }
}

/// An error response for request `id`, as the server's own would read.
pub fn response(id: &Value, error: &ErrorObject) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "error": error }).to_string()
}
