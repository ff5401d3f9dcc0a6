//! What the engine publishes to front ends.

use serde::Serialize;
use taskdeck_store::{Purged, TaskRecord, TaskSummary};

use crate::settings::Settings;
use crate::supervisor::{LogLine, ServerStatus};

/// Everything the engine publishes. Lagging subscribers should re-read the store.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEvent {
    Task {
        task: Box<TaskRecord>,
    },
    Server {
        server: ServerStatus,
    },
    ServerLog {
        server: String,
        line: LogLine,
    },
    /// The server's tools changed; re-list them.
    ToolsChanged {
        server: String,
    },
    /// Tasks were removed from the store (by a user's delete or by retention): every list drops
    /// them, and whoever counts them counts them out, by the status each had.
    Deleted {
        tasks: Vec<Purged>,
    },
    /// A task was pinned or unpinned. Not a write of the task's record (its `updated_at` stays),
    /// so it is not a [`EngineEvent::Task`].
    Pinned {
        task: Box<TaskSummary>,
    },
    /// The settings changed (from any window, the tray, or another section's owner): the whole of
    /// them as written, so every front end follows.
    Settings {
        settings: Box<Settings>,
    },
}
