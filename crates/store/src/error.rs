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

    /// The file is a Taskdeck store whose pages fail SQLite's integrity check (or SQLite found a
    /// damaged page while working).
    #[error("{}", damaged_message(path.as_deref(), reason))]
    Damaged { path: Option<PathBuf>, reason: String },

    /// SQLITE_FULL: the disk (or the user's quota) has no room for the next write, which was not
    /// made.
    #[error(
        "the disk holding the task store is full ({0}): free some space and run again; what was recorded \
         before stays recorded"
    )]
    DiskFull(rusqlite::Error),

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
    Sqlite(rusqlite::Error),
}

/// The SQLite failures a user can act on get a variant of their own, wherever they happen.
impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => StoreError::DiskFull(e),
            Some(rusqlite::ErrorCode::DatabaseCorrupt) => StoreError::Damaged { path: None, reason: e.to_string() },
            _ => StoreError::Sqlite(e),
        }
    }
}

impl StoreError {
    /// A stable, machine-readable name for the kind of failure, for the UI and the CLI's JSON.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotSqlite { .. } => "not_sqlite",
            StoreError::Foreign { .. } => "foreign_database",
            StoreError::TooNew { .. } => "database_too_new",
            StoreError::Damaged { .. } => "damaged",
            StoreError::DiskFull(_) => "disk_full",
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

fn damaged_message(path: Option<&std::path::Path>, reason: &str) -> String {
    let what = "move the file aside (or restore a backup) and run again";
    match path {
        // Found when opening: nothing was written and nothing sent.
        Some(p) => format!("{}: the task store is damaged ({reason}); left untouched, so {what}", p.display()),
        None => format!("the task store is damaged ({reason}); Taskdeck cannot go on with it: {what}"),
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_full_disk_and_a_damaged_page_get_variants_of_their_own() {
        let full = StoreError::from(sqlite(rusqlite::ffi::SQLITE_FULL));
        assert!(matches!(full, StoreError::DiskFull(_)), "{full:?}");
        assert_eq!(full.code(), "disk_full");
        assert!(full.to_string().contains("disk holding the task store is full"), "{full}");
        let damaged = StoreError::from(sqlite(rusqlite::ffi::SQLITE_CORRUPT));
        assert!(matches!(damaged, StoreError::Damaged { path: None, .. }), "{damaged:?}");
        assert!(damaged.to_string().starts_with("the task store is damaged"), "{damaged}");
        assert!(matches!(StoreError::from(sqlite(rusqlite::ffi::SQLITE_BUSY)), StoreError::Sqlite(_)));
    }
}
