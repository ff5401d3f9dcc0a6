use std::path::PathBuf;

use serde::Serialize;
use taskdeck_client::ClientError;
use taskdeck_protocol::TaskStatus;
use taskdeck_store::StoreError;

use crate::config::ConfigError;
use crate::lock::LockError;
use crate::settings::SettingsError;

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
    #[error(transparent)]
    Settings(#[from] SettingsError),
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
    /// The store cannot take the task's next write (a full disk, a damaged file): Taskdeck stopped
    /// driving the task, which stays recorded as it was, and sends nothing more for it.
    #[error("{}", unwritable_message(path, *fault, task.as_deref(), detail))]
    StoreUnwritable { path: PathBuf, fault: StoreFault, task: Option<String>, detail: String },
    /// A sampling request could not be sent to a model (none configured, or it failed).
    #[error(transparent)]
    Model(#[from] crate::sampling::ModelError),
}

/// Why the store cannot be written: the two store failures no retry can get past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFault {
    DiskFull,
    Damaged,
}

impl StoreFault {
    /// The fault a store error is, if it is one; anything else may pass with another try.
    pub fn of(e: &StoreError) -> Option<StoreFault> {
        match e {
            StoreError::DiskFull(_) => Some(StoreFault::DiskFull),
            StoreError::Damaged { .. } => Some(StoreFault::Damaged),
            _ => None,
        }
    }
}

fn unwritable_message(path: &std::path::Path, fault: StoreFault, task: Option<&str>, detail: &str) -> String {
    let (what, fix) = match fault {
        StoreFault::DiskFull => ("the disk holding the task store is full", "free some disk space"),
        StoreFault::Damaged => {
            ("the task store is damaged", "restore the file from a backup (or move it aside for a new one)")
        }
    };
    match task {
        Some(id) => format!(
            "{}: {what} ({detail}); Taskdeck stopped driving task {id}, which stays recorded as it was: {fix}, \
             then run `taskdeck-cli resume`",
            path.display()
        ),
        None => format!("{}: {what} ({detail}); nothing was recorded or sent: {fix}, then run again", path.display()),
    }
}

/// The kind of a failure, for a front end to act on without reading the message. Serialised as the
/// snake_case names the app has always sent; a variant exists because some caller acts on it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    Config,
    DataDirLocked,
    UnknownServer,
    /// The server cannot be reached now (not started, exited, failed to start): restarting it may help.
    ServerUnavailable,
    /// The server did not answer in time; it may still be working.
    ServerTimeout,
    /// The server answered with its own JSON-RPC error (its code is in the details).
    ServerError,
    /// The server does not offer the tool (any more): the tool list is stale.
    UnknownTool,
    /// Any other failure of a server or its session.
    Server,
    InvalidArguments,
    InvalidAnswer,
    QuestionNotLive,
    /// The disk holding the store is full: nothing more is written until there is room.
    DiskFull,
    /// The store file is damaged: it needs a backup or a new file.
    Damaged,
    /// No model is configured for sampling: the reply is the user's to write.
    NoModel,
    /// The model a sampling request was sent to failed or refused it.
    ModelFailed,
    // The store's kinds, named as `StoreError::code` names them.
    NotSqlite,
    ForeignDatabase,
    DatabaseTooNew,
    Io,
    Migration,
    NotFound,
    AmbiguousPrefix,
    Duplicate,
    /// The task's status does not allow what was asked; the real status is in the details.
    Refused,
    Corrupt,
    Sqlite,
    // What only the desktop shell refuses.
    /// The engine did not start (for instance another process drives the data directory).
    EngineUnavailable,
    NoResult,
    InvalidUrl,
    /// The desktop would not open a link or a file.
    OpenFailed,
    /// The settings file cannot be read (it is left as it is) or written, or a value is out of range
    /// (its pointer is in `path`).
    Settings,
}

impl ErrorCode {
    /// The name the code serialises to.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Config => "config",
            ErrorCode::DataDirLocked => "data_dir_locked",
            ErrorCode::UnknownServer => "unknown_server",
            ErrorCode::ServerUnavailable => "server_unavailable",
            ErrorCode::ServerTimeout => "server_timeout",
            ErrorCode::ServerError => "server_error",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::Server => "server",
            ErrorCode::InvalidArguments => "invalid_arguments",
            ErrorCode::InvalidAnswer => "invalid_answer",
            ErrorCode::QuestionNotLive => "question_not_live",
            ErrorCode::DiskFull => "disk_full",
            ErrorCode::Damaged => "damaged",
            ErrorCode::NoModel => "no_model",
            ErrorCode::ModelFailed => "model_failed",
            ErrorCode::NotSqlite => "not_sqlite",
            ErrorCode::ForeignDatabase => "foreign_database",
            ErrorCode::DatabaseTooNew => "database_too_new",
            ErrorCode::Io => "io",
            ErrorCode::Migration => "migration",
            ErrorCode::NotFound => "not_found",
            ErrorCode::AmbiguousPrefix => "ambiguous_prefix",
            ErrorCode::Duplicate => "duplicate",
            ErrorCode::Refused => "refused",
            ErrorCode::Corrupt => "corrupt",
            ErrorCode::Sqlite => "sqlite",
            ErrorCode::EngineUnavailable => "engine_unavailable",
            ErrorCode::NoResult => "no_result",
            ErrorCode::InvalidUrl => "invalid_url",
            ErrorCode::OpenFailed => "open_failed",
            ErrorCode::Settings => "settings",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&StoreError> for ErrorCode {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::NotSqlite { .. } => ErrorCode::NotSqlite,
            StoreError::Foreign { .. } => ErrorCode::ForeignDatabase,
            StoreError::TooNew { .. } => ErrorCode::DatabaseTooNew,
            StoreError::Damaged { .. } => ErrorCode::Damaged,
            StoreError::DiskFull(_) => ErrorCode::DiskFull,
            StoreError::Io { .. } => ErrorCode::Io,
            StoreError::Migration { .. } => ErrorCode::Migration,
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::Ambiguous { .. } => ErrorCode::AmbiguousPrefix,
            StoreError::Duplicate { .. } => ErrorCode::Duplicate,
            StoreError::Refused { .. } => ErrorCode::Refused,
            StoreError::Corrupt { .. } => ErrorCode::Corrupt,
            StoreError::Sqlite(_) => ErrorCode::Sqlite,
        }
    }
}

impl From<&ClientError> for ErrorCode {
    fn from(e: &ClientError) -> Self {
        match e {
            ClientError::Spawn { .. } | ClientError::ServerExited { .. } => ErrorCode::ServerUnavailable,
            ClientError::Timeout { .. } => ErrorCode::ServerTimeout,
            ClientError::Rpc { .. } => ErrorCode::ServerError,
            ClientError::UnknownTool { .. } => ErrorCode::UnknownTool,
            ClientError::InvalidResponse { .. }
            | ClientError::Handshake { .. }
            | ClientError::Unsupported { .. }
            | ClientError::NoSuchQuestion { .. }
            | ClientError::TooLarge { .. }
            | ClientError::UnreadableResponse { .. }
            | ClientError::WrongTask { .. } => ErrorCode::Server,
        }
    }
}

impl EngineError {
    /// The kind of failure, for the UI and JSON output.
    pub fn code(&self) -> ErrorCode {
        match self {
            EngineError::Config(_) => ErrorCode::Config,
            EngineError::Lock(_) => ErrorCode::DataDirLocked,
            EngineError::Store(e) => e.into(),
            EngineError::Client(e) => e.into(),
            EngineError::Settings(_) => ErrorCode::Settings,
            EngineError::UnknownServer { .. } => ErrorCode::UnknownServer,
            EngineError::ServerUnavailable { .. } => ErrorCode::ServerUnavailable,
            EngineError::InvalidArguments { .. } => ErrorCode::InvalidArguments,
            EngineError::InvalidAnswer { .. } => ErrorCode::InvalidAnswer,
            EngineError::QuestionNotLive { .. } => ErrorCode::QuestionNotLive,
            EngineError::StoreUnwritable { fault: StoreFault::DiskFull, .. } => ErrorCode::DiskFull,
            EngineError::StoreUnwritable { fault: StoreFault::Damaged, .. } => ErrorCode::Damaged,
            EngineError::Model(crate::sampling::ModelError::NoModel) => ErrorCode::NoModel,
            EngineError::Model(_) => ErrorCode::ModelFailed,
        }
    }

    /// The offending value of invalid arguments or an invalid answer, as a JSON Pointer (RFC 6901):
    /// `/topic`, `/address/city`; `""` when the object as a whole is wrong (a required field missing).
    pub fn path(&self) -> Option<&str> {
        match self {
            EngineError::InvalidArguments { path, .. } | EngineError::InvalidAnswer { path, .. } => {
                // The validator's display name for the root; a pointer says it with the empty string.
                Some(if path == ROOT { "" } else { path.as_str() })
            }
            EngineError::Settings(e) => e.path(),
            _ => None,
        }
    }

    /// The task's real status when a transition was refused, so a caller can resync without a read.
    pub fn status(&self) -> Option<TaskStatus> {
        match self {
            EngineError::Store(e) => e.current_status(),
            _ => None,
        }
    }

    /// The server the failure concerns, when it concerns one.
    pub fn server(&self) -> Option<&str> {
        match self {
            EngineError::Client(e) => Some(e.server()),
            EngineError::UnknownServer { name, .. } => Some(name),
            EngineError::ServerUnavailable { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The server's own JSON-RPC error code, for [`ErrorCode::ServerError`].
    pub fn rpc_code(&self) -> Option<i64> {
        match self {
            EngineError::Client(e) => e.rpc_error().map(|r| r.code),
            _ => None,
        }
    }
}

/// How `validate` names the whole value when no field is to blame.
const ROOT: &str = "(root)";

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use taskdeck_protocol::ErrorObject;

    use super::*;

    #[test]
    fn every_store_failure_keeps_the_name_the_store_gives_it() {
        let failures = [
            StoreError::NotFound { id: "t1".into() },
            StoreError::Refused {
                id: "t1".into(),
                current: TaskStatus::Completed,
                attempted: taskdeck_store::Attempt::Cancel,
                reason: "ended".into(),
            },
            StoreError::Ambiguous { prefix: "a".into(), candidates: vec![] },
            StoreError::Duplicate { idempotency_key: "k".into(), existing: "t".into() },
            StoreError::Corrupt { id: "t".into(), column: "result", reason: "x".into() },
            StoreError::TooNew { path: "/s".into(), found: 9, supported: 1 },
            StoreError::NotSqlite { path: "/s".into(), reason: "x".into() },
            StoreError::Foreign { path: "/s".into(), reason: "x".into() },
            StoreError::Io { path: "/s".into(), source: std::io::Error::other("x") },
            StoreError::Damaged { path: None, reason: "x".into() },
        ];
        for e in &failures {
            let code = ErrorCode::from(e);
            assert_eq!(code.as_str(), e.code());
            assert_eq!(serde_json::to_value(code).unwrap(), e.code());
        }
    }

    #[test]
    fn a_store_that_cannot_be_written_names_its_file_and_what_to_do() {
        let full = EngineError::StoreUnwritable {
            path: "/data/taskdeck.sqlite3".into(),
            fault: StoreFault::DiskFull,
            task: Some("t1".into()),
            detail: "database or disk is full".into(),
        };
        let text = full.to_string();
        assert!(text.starts_with("/data/taskdeck.sqlite3: the disk holding the task store is full"), "{text}");
        assert!(text.contains("task t1") && text.ends_with("free some disk space, then run `taskdeck-cli resume`"));
        assert_eq!(full.code(), ErrorCode::DiskFull);
        let damaged = EngineError::StoreUnwritable {
            path: "/s".into(),
            fault: StoreFault::Damaged,
            task: None,
            detail: "malformed".into(),
        };
        assert!(damaged.to_string().contains("nothing was recorded or sent"), "{damaged}");
        assert_eq!(damaged.code().as_str(), "damaged");
    }

    #[test]
    fn a_refusal_carries_the_real_status() {
        let e = EngineError::Store(StoreError::Refused {
            id: "t1".into(),
            current: TaskStatus::Cancelled,
            attempted: taskdeck_store::Attempt::Answer,
            reason: "ended".into(),
        });
        assert_eq!((e.code(), e.status()), (ErrorCode::Refused, Some(TaskStatus::Cancelled)));
    }

    #[test]
    fn a_server_failure_says_which_server_and_what_kind() {
        let rpc = EngineError::Client(ClientError::Rpc {
            server: "demo".into(),
            method: "tools/call".into(),
            error: Box::new(ErrorObject { code: -32602, message: "bad".into(), data: None }),
        });
        assert_eq!((rpc.code(), rpc.server(), rpc.rpc_code()), (ErrorCode::ServerError, Some("demo"), Some(-32602)));
        let gone = EngineError::Client(ClientError::ServerExited { server: "demo".into(), reason: "exit 1".into() });
        assert_eq!((gone.code(), gone.server()), (ErrorCode::ServerUnavailable, Some("demo")));
        let slow = EngineError::Client(ClientError::Timeout {
            server: "demo".into(),
            method: "tools/list".into(),
            timeout: Duration::from_secs(1),
        });
        assert_eq!(slow.code(), ErrorCode::ServerTimeout);
        let tool = EngineError::Client(ClientError::UnknownTool { server: "demo".into(), tool: "x".into() });
        assert_eq!(tool.code().as_str(), "unknown_tool");
    }

    #[test]
    fn invalid_arguments_point_at_the_field() {
        let field = EngineError::InvalidArguments { tool: "t".into(), path: "/seconds".into(), message: "m".into() };
        assert_eq!((field.code(), field.path()), (ErrorCode::InvalidArguments, Some("/seconds")));
        let root = EngineError::InvalidAnswer { path: ROOT.into(), message: "m".into() };
        assert_eq!(root.path(), Some(""));
    }
}
