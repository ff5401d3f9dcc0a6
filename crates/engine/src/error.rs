use taskdeck_client::ClientError;
use taskdeck_store::StoreError;

use crate::config::ConfigError;
use crate::lock::LockError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("no server named {name:?} in the config (servers: {})", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownServer { name: String, known: Vec<String> },
    #[error("server {server:?} is not available: {reason}")]
    ServerUnavailable { server: String, reason: String },
    #[error("invalid arguments for {tool}: {path}: {message}")]
    InvalidArguments { tool: String, path: String, message: String },
    #[error("invalid answer: {path}: {message}")]
    InvalidAnswer { path: String, message: String },
    #[error("task {id}: the server has not asked its question again yet ({detail})")]
    QuestionNotLive { id: String, detail: String },
}

impl EngineError {
    /// A stable name for the kind of failure, for the UI and JSON output.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Config(_) => "config",
            EngineError::Lock(_) => "data_dir_locked",
            EngineError::Store(e) => e.code(),
            EngineError::Client(_) => "server",
            EngineError::UnknownServer { .. } => "unknown_server",
            EngineError::ServerUnavailable { .. } => "server_unavailable",
            EngineError::InvalidArguments { .. } => "invalid_arguments",
            EngineError::InvalidAnswer { .. } => "invalid_answer",
            EngineError::QuestionNotLive { .. } => "question_not_live",
        }
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
