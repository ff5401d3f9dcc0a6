//! Every way the store can say no. Callers act on the variant (or on [`StoreError::code`] once it has
//! crossed into JSON), never on the message text.

use std::path::PathBuf;

use serde::{Serialize, Serializer, ser::SerializeStruct};
use taskdeck_protocol::TaskStatus;

use crate::state::Attempt;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: not a SQLite database ({reason}); left untouched")]
    NotSqlite { path: PathBuf, reason: String },

    #[error("{path}: a SQLite database of another application ({reason}); left untouched")]
    Foreign { path: PathBuf, reason: String },

    #[error(
        "{path}: schema version {found} was written by a newer Taskdeck (this one knows up to {supported}); \
         left untouched"
    )]
    TooNew { path: PathBuf, found: i64, supported: i64 },

    #[error("{path}: cannot read or create the file: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{path}: migrating the schema failed: {source}")]
    Migration {
        path: PathBuf,
        #[source]
        source: rusqlite_migration::Error,
    },

    #[error("no task with id {id}")]
    NotFound { id: String },

    #[error("task id prefix {prefix:?} is ambiguous: {}", candidates.join(", "))]
    Ambiguous { prefix: String, candidates: Vec<String> },

    #[error("a task with idempotency key {idempotency_key:?} already exists: {existing}")]
    Duplicate { idempotency_key: String, existing: String },

    #[error("task {id} is {current}; refused to {attempted}: {reason}")]
    Refused { id: String, current: TaskStatus, attempted: Attempt, reason: String },

    #[error("task {id}: column {column} holds unreadable data: {reason}")]
    Corrupt { id: String, column: &'static str, reason: String },

    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl StoreError {
    /// A stable, machine-readable name for the kind of failure, for the UI and the CLI's JSON.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotSqlite { .. } => "not_sqlite",
            StoreError::Foreign { .. } => "foreign_database",
            StoreError::TooNew { .. } => "database_too_new",
            StoreError::Io { .. } => "io",
            StoreError::Migration { .. } => "migration",
            StoreError::NotFound { .. } => "not_found",
            StoreError::Ambiguous { .. } => "ambiguous_prefix",
            StoreError::Duplicate { .. } => "duplicate",
            StoreError::Refused { .. } => "refused",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::Sqlite(_) => "sqlite",
        }
    }

    /// The task's status at the moment of a refusal, so a caller can resync without another read.
    pub fn current_status(&self) -> Option<TaskStatus> {
        match self {
            StoreError::Refused { current, .. } => Some(*current),
            _ => None,
        }
    }
}

/// `{code, message}` plus the fields a frontend needs to act without parsing the message.
impl Serialize for StoreError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("StoreError", 4)?;
        st.serialize_field("code", self.code())?;
        st.serialize_field("message", &self.to_string())?;
        match self {
            StoreError::Refused { id, current, attempted, .. } => {
                st.serialize_field("id", id)?;
                st.serialize_field("current", current)?;
                st.serialize_field("attempted", attempted)?;
            }
            StoreError::Duplicate { existing, .. } => st.serialize_field("existing", existing)?,
            StoreError::Ambiguous { candidates, .. } => st.serialize_field("candidates", candidates)?,
            StoreError::NotFound { id } | StoreError::Corrupt { id, .. } => st.serialize_field("id", id)?,
            _ => {}
        }
        st.end()
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
