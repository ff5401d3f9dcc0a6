use std::time::Duration;

use taskdeck_protocol::ErrorObject;

/// Everything a session can report. Cloneable, because one server death fails every pending
/// request with the same error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("could not start server {server:?} ({command}): {message}")]
    Spawn { server: String, command: String, message: String },
    #[error("server {server:?} is not running: {reason}")]
    ServerExited { server: String, reason: String },
    #[error("server {server:?} did not answer {method} within {}s", timeout.as_secs_f32())]
    Timeout { server: String, method: String, timeout: Duration },
    #[error("server {server:?} answered {method} with an error: {error}")]
    Rpc { server: String, method: String, error: Box<ErrorObject> },
    #[error("server {server:?} sent an invalid answer to {method}: {detail}")]
    InvalidResponse { server: String, method: String, detail: String },
    #[error("could not connect to server {server:?}: {detail}")]
    Handshake { server: String, detail: String },
    #[error("server {server:?} has no tool {tool:?}")]
    UnknownTool { server: String, tool: String },
    #[error("server {server:?} does not support {what}")]
    Unsupported { server: String, what: String },
    #[error("server {server:?} has no open question {key}")]
    NoSuchQuestion { server: String, key: String },
    #[error("message to server {server:?} is larger than the {limit}-byte frame limit")]
    TooLarge { server: String, limit: usize },
    /// The answer arrived but could not be read (too long, not JSON, not UTF-8, nested too deep):
    /// the request is over, and asking again would most likely bring the same answer.
    #[error("server {server:?} sent an answer to {method} that could not be read: {fault}")]
    UnreadableResponse { server: String, method: String, fault: ResponseFault },
    /// The server answered about another task than the one asked about; nothing of it is used.
    #[error("server {server:?} answered {method} for task {asked:?} about task {answered:?}")]
    WrongTask { server: String, method: String, asked: String, answered: String },
}

/// Why an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseFault {
    #[error("it is longer than the {limit}-byte frame limit")]
    TooLarge { limit: usize },
    #[error("{detail}")]
    Unreadable { detail: String },
}

impl ClientError {
    /// The JSON-RPC error a server answered with, if that is what this is.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            ClientError::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The server the failure concerns: every failure concerns one.
    pub fn server(&self) -> &str {
        match self {
            ClientError::Spawn { server, .. }
            | ClientError::ServerExited { server, .. }
            | ClientError::Timeout { server, .. }
            | ClientError::Rpc { server, .. }
            | ClientError::InvalidResponse { server, .. }
            | ClientError::Handshake { server, .. }
            | ClientError::UnknownTool { server, .. }
            | ClientError::Unsupported { server, .. }
            | ClientError::NoSuchQuestion { server, .. }
            | ClientError::TooLarge { server, .. }
            | ClientError::UnreadableResponse { server, .. }
            | ClientError::WrongTask { server, .. } => server,
        }
    }

    /// True when the server process is gone: the caller should restart it, not retry the request.
    pub fn is_server_gone(&self) -> bool {
        matches!(self, ClientError::ServerExited { .. } | ClientError::Spawn { .. })
    }
}
