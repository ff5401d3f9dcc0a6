//! MCP over Streamable HTTP, in both eras: what a remote server is ([`HttpSpec`]) and the
//! transport that reaches it.
//!
//! The transport itself is being built; until it lands, connecting reports the server as not
//! supported rather than failing in some other way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Connection;
use crate::ClientError;

/// A remote server, as the config gives it: the endpoint and the headers sent with every request
/// (already resolved: `${env:NAME}` references are the config's business, not the transport's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpSpec {
    pub name: String,
    /// The MCP endpoint, `http(s)://host[:port]/path`.
    pub url: String,
    /// Sent on every request. They may hold secrets (an API key): never logged.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

pub struct HttpTransport;

impl HttpTransport {
    /// Opens a connection to `spec.url`; `max_frame` bounds one message or event body.
    pub fn connect(spec: &HttpSpec, _max_frame: usize) -> Result<Connection, ClientError> {
        Err(ClientError::Unsupported { server: spec.name.clone(), what: "remote servers (Streamable HTTP) yet".into() })
    }
}
