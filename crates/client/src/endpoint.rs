//! Where a server is and how to reach it. Each transport is one variant here and one module under
//! [`transport`](crate::transport); nothing else in the client or the engine names a transport.

use serde::{Deserialize, Serialize};

use crate::ClientError;
use crate::process::ServerSpec;
use crate::transport::Connection;
use crate::transport::http::{HttpSpec, HttpTransport};
use crate::transport::stdio::StdioTransport;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case")]
pub enum Endpoint {
    /// A local process spoken to over its stdin and stdout.
    Stdio(ServerSpec),
    /// A remote server over Streamable HTTP.
    Http(HttpSpec),
}

impl Endpoint {
    /// The server's name in the config.
    pub fn name(&self) -> &str {
        match self {
            Endpoint::Stdio(s) => &s.name,
            Endpoint::Http(h) => &h.name,
        }
    }

    /// The transport's name, as logs and the Servers view show it.
    pub fn kind(&self) -> &'static str {
        match self {
            Endpoint::Stdio(_) => "stdio",
            Endpoint::Http(_) => "http",
        }
    }

    /// What the user configured, for display: the command line of a local server, the URL of a
    /// remote one. Never the environment or the headers, which may hold secrets.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Stdio(s) => {
                std::iter::once(s.command.clone()).chain(s.args.iter().cloned()).collect::<Vec<_>>().join(" ")
            }
            Endpoint::Http(h) => h.url.clone(),
        }
    }

    /// Opens the connection: starts the process, or reaches the endpoint.
    pub fn connect(&self, max_frame: usize) -> Result<Connection, ClientError> {
        match self {
            Endpoint::Stdio(s) => StdioTransport::spawn(s, max_frame),
            Endpoint::Http(h) => HttpTransport::connect(h, max_frame),
        }
    }
}

impl From<ServerSpec> for Endpoint {
    fn from(spec: ServerSpec) -> Self {
        Endpoint::Stdio(spec)
    }
}
