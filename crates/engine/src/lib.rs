//! Taskdeck's engine: everything a front end needs, with no UI in it.
//!
//! - [`config`]: the `mcpServers` config and the data directory, with the demo server as default;
//! - [`config_edit`]: adding, removing and tuning a server in that file, keeping the rest as written;
//! - [`import`]: the servers of other hosts' configs (Claude Desktop, Cursor, VS Code, Windsurf);
//! - [`secrets`]: `${secret:KEY}` in an entry, put in from the sign-in store when the server starts;
//! - [`lock`]: one process drives a data directory at a time;
//! - [`supervisor`]: keeps each server running, restarting it with backoff;
//! - [`Engine`]: starts tasks (writing each before anything is sent), drives them through a
//!   driver per task, answers and cancels them, resumes them after a restart, and publishes every
//!   change as an [`EngineEvent`].
//!
//! Inside, one job per module and no cycle between them: `decide` says what a server's report
//! means for a task (pure); `gate` is the one door to the store and publishes every write;
//! `live` holds what only this process knows and routes session events; `driver` follows one
//! task, doing only I/O; `hub` is what the facade and the drivers share.
//!
//! The order of truth is one way: server messages → driver → decide → gate (store) → events →
//! front end.

pub mod config;
pub mod config_edit;
mod decide;
mod driver;
mod engine;
mod error;
mod event;
mod gate;
pub mod history;
mod hub;
pub mod import;
mod inputs;
mod live;
pub mod lock;
pub mod logs;
mod mrtr;
mod options;
mod reply;
mod retention;
pub mod roots;
pub mod roots_edit;
pub mod sampling;
pub mod secrets;
mod servers;
pub mod settings;
pub mod signin;
pub mod supervisor;
mod url_mode;
mod validate;

pub use config::{ServerConfig, ServerSettings, UnreadableEntry};
pub use engine::{
    AnswerInput, CANCELLED_BY_USER, Engine, EngineEvent, EngineOptions, Opening, Reader, SIGN_IN_CANCELLED,
    SignInOutcome, ToolInfo, is_waiting_for_answer,
};
pub use error::{EngineError, ErrorCode, Result, StoreFault};
pub use history::{ExportFormat, PruneReport};
pub use settings::{
    NotificationSettings, RetentionSettings, Settings, SettingsError, SettingsFile, SettingsProblem, SettingsUpdate,
    Theme,
};
pub use signin::{SignInPrompt, SignInState};
pub use supervisor::{AuthState, LogLine, SIGN_IN_STORE_ENV, ServerPhase, ServerStatus};
/// What [`ServerConfig::endpoint`] is made of, so that a front end needs no client crate to read it.
pub use taskdeck_client::{Endpoint, HttpSpec, ServerSpec};
pub use taskdeck_store::{
    FailureReason, ListFilter, Mode, Page, PageRequest, PurgeLine, PurgeReason, Purged, Retention, StatusCounts,
    TaskError, TaskEvent, TaskQuery, TaskRecord, TaskSummary,
};
