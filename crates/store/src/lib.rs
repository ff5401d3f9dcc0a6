//! The durable task store (see docs/ARCHITECTURE.md): one SQLite file holding every task Taskdeck
//! has shown, the state machine that guards it, and an append-only log of what happened.
//!
//! Once a task has a handle on screen nothing about it may be lost, whatever is killed. So every
//! change is one transaction that updates the task row and appends its event together; WAL lets
//! the CLI and the UI read while the engine writes; and a file that is not ours is never touched.

mod check;
mod checkpoint;
mod error;
mod history;
mod hosted;
mod migrations;
mod open;
pub mod private_fs;
mod search;
mod sessions;
pub mod state;
mod store;
mod task;
mod time;

pub use error::{Result, StoreError};
pub use history::{
    Page, PageRequest, PurgeLine, PurgeReason, Purged, QuestionBrief, Retention, SUMMARY_MESSAGE_CHARS, Space,
    StatusCounts, TaskQuery, TaskSummary,
};
pub use hosted::{HostedTaskRow, MAX_HOSTED_PER_SERVER};
pub use open::APPLICATION_ID;
pub use sessions::HttpSession;
pub use state::{Attempt, EVENTS_PER_TASK, Update, can_transition, taskdeck_status};
pub use store::{CheckHold, Store};
pub use task::{
    Answer, EventKind, FailureReason, ListFilter, Mode, NewTask, Progress, Question, Reclaimed, TaskError, TaskEvent,
    TaskRecord, dropped_message,
};
pub use taskdeck_protocol::{Era, TaskStatus};
pub use time::rfc3339_millis;

/// The schema version this binary migrates to; a file above it was written by a newer Taskdeck.
pub const SCHEMA_VERSION: i64 = migrations::LATEST;
