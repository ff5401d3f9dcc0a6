//! The engine inside the app: opened (and pending tasks resumed) before the window shows them, its
//! events forwarded to the webview in batches of at most one per animation frame.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use taskdeck_engine::config::{Config, ConfigStamp, Paths, next_config_change};
use taskdeck_engine::{Engine, EngineEvent, EngineOptions, LogLine, ServerStatus, TaskRecord};
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::broadcast::error::RecvError;
use ts_rs::TS;

use crate::commands::TaskSummary;

/// The event the webview patches its stores from.
pub const BATCH_EVENT: &str = "engine-batch";
/// The event that says the config file changed and was applied (or refused): its payload is the
/// servers now, and `app_info` has the config's error and its unreadable entries.
pub const CONFIG_EVENT: &str = "config-reloaded";
/// How often the config file is looked at, and how long it must hold still before it is applied.
const CONFIG_POLL: Duration = Duration::from_millis(500);
const CONFIG_SETTLE: Duration = Duration::from_millis(300);
/// One frame at 60 Hz: the UI cannot show changes faster than it paints them.
const FRAME: Duration = Duration::from_millis(16);
/// Log lines kept in one batch; a server flooding stderr must not flood the webview.
const MAX_LOG_LINES_PER_BATCH: usize = 500;
/// The log text in one batch: each line is within `limits::LOG_LINE_BYTES`, and 500 such lines a
/// frame would still be megabytes a second for the webview to parse.
const MAX_LOG_BYTES_PER_BATCH: usize = 256 * 1024;

/// Everything that changed since the last batch: the latest whole record per task and server.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct EngineBatch {
    pub tasks: Vec<TaskSummary>,
    pub servers: Vec<ServerStatus>,
    pub logs: Vec<ServerLogLine>,
    pub tools_changed: Vec<String>,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct ServerLogLine {
    pub server: String,
    pub line: LogLine,
}

#[derive(Default)]
struct Pending {
    tasks: HashMap<String, TaskSummary>,
    task_order: Vec<String>,
    servers: HashMap<String, ServerStatus>,
    logs: Vec<ServerLogLine>,
    log_bytes: usize,
    tools_changed: BTreeSet<String>,
}

impl Pending {
    fn add(&mut self, event: EngineEvent) {
        match event {
            EngineEvent::Task { task } => match self.tasks.get(&task.id) {
                // Writes from different threads may publish out of order; the newer record wins.
                Some(held) if held.updated_at > task.updated_at => {}
                held => {
                    if held.is_none() {
                        self.task_order.push(task.id.clone());
                    }
                    self.tasks.insert(task.id.clone(), TaskSummary::from(&*task));
                }
            },
            EngineEvent::Server { server } => {
                self.servers.insert(server.name.clone(), server);
            }
            EngineEvent::ServerLog { server, line } => {
                self.log_bytes += line.text.len();
                self.logs.push(ServerLogLine { server, line });
                // The oldest lines go first; the newest line is always kept.
                let mut drop = 0;
                while drop + 1 < self.logs.len()
                    && (self.logs.len() - drop > MAX_LOG_LINES_PER_BATCH || self.log_bytes > MAX_LOG_BYTES_PER_BATCH)
                {
                    self.log_bytes -= self.logs[drop].line.text.len();
                    drop += 1;
                }
                self.logs.drain(..drop);
            }
            EngineEvent::ToolsChanged { server } => {
                self.tools_changed.insert(server);
            }
            // Followed by `notify::follow_settings`, which tells the windows at once.
            EngineEvent::Settings { .. } => {}
        }
    }

    fn take(&mut self) -> Option<EngineBatch> {
        if self.tasks.is_empty() && self.servers.is_empty() && self.logs.is_empty() && self.tools_changed.is_empty() {
            return None;
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        Some(EngineBatch {
            tasks: std::mem::take(&mut self.task_order).into_iter().filter_map(|id| tasks.remove(&id)).collect(),
            servers: std::mem::take(&mut self.servers).into_values().collect(),
            logs: {
                self.log_bytes = 0;
                std::mem::take(&mut self.logs)
            },
            tools_changed: std::mem::take(&mut self.tools_changed).into_iter().collect(),
        })
    }
}

/// What the shell keeps beside the engine: the user's notification choices.
#[derive(Debug, Default)]
pub struct UiState {
    pub notifications_muted: bool,
    /// The task the user has open, if the window is focused: no notification for it.
    pub viewing_task: Option<String>,
}

pub struct AppState {
    pub paths: Paths,
    /// `None` when the engine could not start (another process holds the data directory, or the
    /// store is damaged); `startup_error` says why and every command reports it.
    pub engine: Option<Engine>,
    pub startup_error: Option<String>,
    pub config_error: Mutex<Option<String>>,
    pub ui: Mutex<UiState>,
    /// Flushes the log file; taken and dropped on the way out, since Tauri exits without dropping state.
    pub log_guard: Mutex<Option<taskdeck_engine::logs::WorkerGuard>>,
}

impl AppState {
    /// Opens the engine and resumes what a previous run left, before any window shows tasks. A
    /// broken config starts the engine with no servers and shows the error instead.
    pub fn start(paths: Paths) -> AppState {
        let (config, config_error) = match Config::load(&paths) {
            Ok(c) => (c, None),
            Err(e) => (Config::empty(Some(paths.config.clone())), Some(e.to_string())),
        };
        let opened = tauri::async_runtime::block_on(async {
            let engine = Engine::open_with_config(paths.clone(), EngineOptions::default(), config).await?;
            engine.resume().await?;
            Ok::<_, taskdeck_engine::EngineError>(engine)
        });
        let (engine, startup_error) = match opened {
            Ok(e) => (Some(e), None),
            Err(e) => {
                tracing::error!(code = %e.code(), "the engine did not start: {e}");
                (None, Some(e.to_string()))
            }
        };
        AppState {
            paths,
            engine,
            startup_error,
            config_error: Mutex::new(config_error),
            ui: Mutex::new(UiState::default()),
            log_guard: Mutex::new(None),
        }
    }
}

/// Forwards engine events to the webview, coalesced per frame. Runs for the life of the app.
pub fn forward_events(app: AppHandle, engine: Engine, on_task: impl Fn(&TaskRecord) + Send + 'static) {
    let mut rx = engine.subscribe();
    tauri::async_runtime::spawn(async move {
        let mut pending = Pending::default();
        loop {
            // Wait for the first change, then gather whatever else arrives within the frame.
            let first = match rx.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!("the UI fell {n} events behind; it will catch up from the next batches");
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if let EngineEvent::Task { task } = &first {
                on_task(task);
            }
            pending.add(first);
            let deadline = tokio::time::Instant::now() + FRAME;
            loop {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Ok(e)) => {
                        if let EngineEvent::Task { task } = &e {
                            on_task(task);
                        }
                        pending.add(e)
                    }
                    Ok(Err(RecvError::Lagged(_))) => continue,
                    Ok(Err(RecvError::Closed)) | Err(_) => break,
                }
            }
            if let Some(batch) = pending.take() {
                let _ = app.emit(BATCH_EVENT, batch);
            }
        }
    });
}

/// Applies each saved edit of the config file as the Reload button does, so that the user need not
/// press it. A broken edit changes nothing (the servers keep running) and its error is shown;
/// the next good save clears it. Runs for the life of the app.
pub fn watch_config(app: AppHandle, engine: Engine) {
    tauri::async_runtime::spawn(async move {
        let path = engine.paths().config.clone();
        let mut applied = ConfigStamp::of(&path);
        loop {
            applied = next_config_change(&path, &applied, CONFIG_POLL, CONFIG_SETTLE).await;
            let result = engine.reload_config().await;
            match &result {
                Ok(_) => tracing::info!(config = %path.display(), "the config changed and was applied"),
                Err(e) => tracing::warn!(config = %path.display(), "the config changed and was refused: {e}"),
            }
            let state = app.state::<AppState>();
            *state.config_error.lock().unwrap_or_else(|p| p.into_inner()) = result.err().map(|e| e.to_string());
            let _ = app.emit(CONFIG_EVENT, engine.servers());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskdeck_engine::{ServerPhase, TaskRecord};

    fn task(id: &str, message: &str) -> TaskRecord {
        crate::testing::record(serde_json::json!({"id": id, "status_message": message}))
    }

    #[test]
    fn a_batch_keeps_the_latest_record_per_task_in_first_seen_order() {
        let mut p = Pending::default();
        p.add(EngineEvent::Task { task: Box::new(task("a", "1")) });
        p.add(EngineEvent::Task { task: Box::new(task("b", "1")) });
        p.add(EngineEvent::Task { task: Box::new(task("a", "2")) });
        let batch = p.take().unwrap();
        let got: Vec<(&str, Option<&str>)> =
            batch.tasks.iter().map(|t| (t.id.as_str(), t.status_message.as_deref())).collect();
        assert_eq!(got, vec![("a", Some("2")), ("b", Some("1"))]);
        assert!(p.take().is_none(), "a taken batch leaves nothing behind");
    }

    #[test]
    fn log_lines_in_one_batch_are_bounded() {
        let mut p = Pending::default();
        for i in 0..(MAX_LOG_LINES_PER_BATCH + 50) {
            p.add(EngineEvent::ServerLog {
                server: "s".into(),
                line: LogLine::plain(String::new(), "stderr", i.to_string()),
            });
        }
        p.add(EngineEvent::Server {
            server: ServerStatus {
                name: "s".into(),
                phase: ServerPhase::Ready,
                era: None,
                protocol_version: None,
                tasks: None,
                server_name: None,
                server_version: None,
                pid: None,
                restarts: 0,
                last_error: None,
                command: String::new(),
                transport: "stdio".into(),
                url: None,
                error: None,
                notes: Vec::new(),
                auth: taskdeck_engine::AuthState::None,
            },
        });
        let batch = p.take().unwrap();
        assert_eq!(batch.logs.len(), MAX_LOG_LINES_PER_BATCH);
        assert_eq!(batch.logs.last().unwrap().line.text, (MAX_LOG_LINES_PER_BATCH + 49).to_string());
        assert_eq!(batch.servers.len(), 1);
    }

    #[test]
    fn log_text_in_one_batch_is_bounded_in_bytes() {
        let mut p = Pending::default();
        for i in 0..400 {
            p.add(EngineEvent::ServerLog {
                server: "s".into(),
                line: LogLine::plain(String::new(), "stderr", format!("{i:04}{}", "x".repeat(4092))),
            });
        }
        let batch = p.take().unwrap();
        let bytes: usize = batch.logs.iter().map(|l| l.line.text.len()).sum();
        assert!(bytes <= MAX_LOG_BYTES_PER_BATCH, "{bytes}");
        assert!(batch.logs.last().unwrap().line.text.starts_with("0399"), "the newest line is kept");
        assert!(batch.logs.len() >= MAX_LOG_BYTES_PER_BATCH / 4096 - 1);
    }
}
