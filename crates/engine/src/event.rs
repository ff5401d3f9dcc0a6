//! What the engine publishes to front ends.

use serde::Serialize;
use taskdeck_store::TaskRecord;

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
    /// The settings changed (from any window, the tray, or another section's owner): the whole of
    /// them as written, so every front end follows.
    Settings {
        settings: Box<Settings>,
    },
}
