//! The engine inside the app: its store read for the first page while the store's check runs, the
//! engine (and pending tasks resumed) once it passed, its events forwarded to the webview in
//! batches of at most one per animation frame.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use taskdeck_engine::config::{Config, ConfigStamp, Paths, next_config_change};
use taskdeck_engine::{Engine, EngineEvent, EngineOptions, LogLine, Reader, ServerStatus, TaskRecord};
use taskdeck_protocol::question::Asks;
use taskdeck_store::{PageRequest, Purged, QuestionBrief, SUMMARY_MESSAGE_CHARS, TaskQuery};
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::broadcast;
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

/// Everything that changed since the last batch: the latest summary per task (a pin changes one
/// too), the latest status per server, and the tasks deleted.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct EngineBatch {
    pub tasks: Vec<TaskSummary>,
    /// Removed from the store since the last batch; none of them is in `tasks`.
    pub deleted: Vec<Purged>,
    pub servers: Vec<ServerStatus>,
    pub logs: Vec<ServerLogLine>,
    pub tools_changed: Vec<String>,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct ServerLogLine {
    pub server: String,
    pub line: LogLine,
}

/// The summary the store's SQL would read for this record (`Store::summary`): the list's pages and
/// the batches carry the same thing. `pinned` is not in a record; the bridge keeps it.
pub fn summary_of(t: &TaskRecord, pinned: bool) -> TaskSummary {
    TaskSummary {
        id: t.id.clone(),
        server: t.server.clone(),
        tool: t.tool.clone(),
        mode: t.mode,
        era: t.era,
        status: t.status,
        status_message: t.status_message.clone(),
        progress: t.progress.clone(),
        question: t.question.as_ref().map(|q| QuestionBrief {
            key: q.key.to_text(),
            message: q.message.as_deref().map(|m| match m.char_indices().nth(SUMMARY_MESSAGE_CHARS) {
                Some((end, _)) => format!("{}…", &m[..end]),
                None => m.to_owned(),
            }),
            kind: Some(
                match q.asks {
                    Asks::Form { .. } => "form",
                    Asks::Url { .. } => "url",
                    Asks::Sampling { .. } => "sampling",
                    Asks::Roots => "roots",
                    Asks::Malformed { .. } => "malformed",
                    Asks::Unsupported { .. } => "unsupported",
                    Asks::TooLarge { .. } => "too_large",
                }
                .to_owned(),
            ),
        }),
        error: t.error.clone(),
        has_result: t.result.is_some(),
        pinned,
        created_at: t.created_at,
        updated_at: t.updated_at,
    }
}

#[derive(Default)]
struct Pending {
    tasks: HashMap<String, TaskSummary>,
    task_order: Vec<String>,
    deleted: Vec<Purged>,
    /// The pinned tasks, so a record's summary says so: loaded at start, then kept by `Pinned`
    /// and `Deleted` events.
    pinned: HashSet<String>,
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
                    let pinned = self.pinned.contains(&task.id);
                    self.tasks.insert(task.id.clone(), summary_of(&task, pinned));
                }
            },
            EngineEvent::Pinned { task } => {
                if task.pinned {
                    self.pinned.insert(task.id.clone());
                } else {
                    self.pinned.remove(&task.id);
                }
                match self.tasks.get_mut(&task.id) {
                    // A record of this frame is as new as the pin or newer: only the flag changes.
                    Some(held) => held.pinned = task.pinned,
                    None => {
                        self.task_order.push(task.id.clone());
                        self.tasks.insert(task.id.clone(), *task);
                    }
                }
            }
            EngineEvent::Deleted { tasks } => {
                for p in &tasks {
                    self.pinned.remove(&p.id);
                    if self.tasks.remove(&p.id).is_some() {
                        self.task_order.retain(|id| id != &p.id);
                    }
                }
                self.deleted.extend(tasks);
            }
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
        if self.tasks.is_empty()
            && self.deleted.is_empty()
            && self.servers.is_empty()
            && self.logs.is_empty()
            && self.tools_changed.is_empty()
        {
            return None;
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        Some(EngineBatch {
            tasks: std::mem::take(&mut self.task_order).into_iter().filter_map(|id| tasks.remove(&id)).collect(),
            deleted: std::mem::take(&mut self.deleted),
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
    /// Filled once by the thread that opens the engine (see [`AppState::opening`]).
    opened: Arc<OnceLock<Opened>>,
    /// The reads served while the engine waits for its store's check (see [`AppState::reader`]).
    early: Arc<Early>,
    pub ui: Mutex<UiState>,
    /// Flushes the log file; taken and dropped on the way out, since Tauri exits without dropping state.
    pub log_guard: Mutex<Option<taskdeck_engine::logs::WorkerGuard>>,
}

/// The engine (or why there is none) and the config's error.
struct Opened {
    /// `None` when the engine could not start (another process holds the data directory, or the
    /// store is damaged); `startup_error` says why and every command reports it.
    engine: Option<Engine>,
    startup_error: Option<String>,
    config_error: Mutex<Option<String>>,
}

/// Where start-up stands for the reads: they are served from the store as soon as it is open,
/// while its integrity check runs, and from the engine's outcome once that is known.
#[derive(Default)]
struct Early {
    phase: Mutex<Phase>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
enum Phase {
    #[default]
    Opening,
    /// The store is open and its check runs: reads only, nothing started, nothing written.
    Readable(Reader),
    /// [`AppState::opened`] is filled: the engine's reads, or its start-up error.
    Over,
}

impl Early {
    fn set(&self, phase: Phase) {
        let mut now = self.phase.lock().unwrap_or_else(|p| p.into_inner());
        // Once over, a late `Readable` would serve reads of a store the engine refused.
        if !matches!(*now, Phase::Over) {
            *now = phase;
        }
        self.changed.notify_all();
    }

    /// The reader while the check runs; `None` once start-up is over (or `Err` still opening).
    fn now(&self) -> std::result::Result<Option<Reader>, ()> {
        match &*self.phase.lock().unwrap_or_else(|p| p.into_inner()) {
            Phase::Opening => Err(()),
            Phase::Readable(reader) => Ok(Some(reader.clone())),
            Phase::Over => Ok(None),
        }
    }

    fn wait(&self) -> Option<Reader> {
        let mut phase = self.phase.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match &*phase {
                Phase::Opening => phase = self.changed.wait(phase).unwrap_or_else(|p| p.into_inner()),
                Phase::Readable(reader) => return Some(reader.clone()),
                Phase::Over => return None,
            }
        }
    }
}

impl AppState {
    /// Opens the engine and resumes what a previous run left (a broken config starts it with no
    /// servers and shows the error instead), on a thread of its own, so the webview loads its page
    /// and scripts meanwhile, and GTK and the plugins start. The store is readable as soon as it
    /// is open: its integrity check (`PRAGMA quick_check`, which reads the whole file: 0.3–0.4 s
    /// at 100,000 tasks) runs beside the first page's reads ([`AppState::reader`]); the engine,
    /// which starts servers, resumes tasks and writes, exists only once the check passed. Manage
    /// the state, then [`Opener::start`] what follows the engine. Every other command waits for
    /// the engine, or for its start-up error.
    pub fn opening(paths: Paths) -> (AppState, Opener) {
        let state = AppState::empty(paths);
        let opening = {
            let paths = state.paths.clone();
            let early = state.early.clone();
            std::thread::Builder::new().name("engine-open".into()).spawn(move || open_engine(&paths, &early))
        };
        let opener = Opener { opening, slot: state.opened.clone(), early: state.early.clone() };
        (state, opener)
    }

    fn empty(paths: Paths) -> AppState {
        AppState {
            paths,
            opened: Arc::new(OnceLock::new()),
            early: Arc::default(),
            ui: Mutex::new(UiState::default()),
            log_guard: Mutex::new(None),
        }
    }

    /// Waits for the start-up, if it is still opening the store.
    fn opened(&self) -> &Opened {
        self.opened.wait()
    }

    /// Waits for the start-up's outcome without holding up an async thread: call it before the
    /// accessors below in an async command (a sync one runs on the main thread, and waiting
    /// there for the store's check would hold the first paint back).
    pub async fn settled(&self) {
        if self.opened.get().is_some() {
            return;
        }
        let slot = self.opened.clone();
        let _ = tauri::async_runtime::spawn_blocking(move || {
            slot.wait();
        })
        .await;
    }

    /// The engine, once open: `None` when it could not start ([`AppState::startup_error`] says why).
    pub fn engine(&self) -> Option<&Engine> {
        self.opened().engine.as_ref()
    }

    pub fn startup_error(&self) -> Option<&str> {
        self.opened().startup_error.as_deref()
    }

    /// The config file's error now, if it has one: set at start and at each reload.
    pub fn config_error(&self) -> &Mutex<Option<String>> {
        &self.opened().config_error
    }

    /// What the history's reads use: the store as soon as it is open, while its check runs, then
    /// the engine's. `None` when there is no engine ([`AppState::startup_error`] says why): a
    /// store the check finds damaged ends the reads there too, as a store refused at open does.
    /// Waits (off the async threads) only while the store is being opened.
    pub async fn reader(&self) -> Option<Reader> {
        let early = match self.early.now() {
            Ok(early) => early,
            Err(()) => {
                let waiting = self.early.clone();
                tauri::async_runtime::spawn_blocking(move || waiting.wait()).await.ok().flatten()
            }
        };
        if early.is_some() {
            return early;
        }
        self.settled().await;
        self.engine().map(Engine::reader)
    }
}

/// What [`Opener::start`]'s `ready` gets: the engine, and its events since before it resumed
/// anything (the first page may have been read before, so nothing resume wrote may be missed).
pub struct Started<'a> {
    pub engine: &'a Engine,
    pub events: broadcast::Receiver<EngineEvent>,
}

/// Opens the engine of an [`AppState::opening`].
pub struct Opener {
    opening: std::io::Result<std::thread::JoinHandle<(Opened, Option<broadcast::Receiver<EngineEvent>>)>>,
    slot: Arc<OnceLock<Opened>>,
    early: Arc<Early>,
}

impl Opener {
    /// Waits for the engine on a thread of its own, then runs `ready` on it with the engine before
    /// any command but the reads can reach it, so what it subscribes to misses nothing a command
    /// could read; nothing it does may wait for a command.
    pub fn start(self, ready: impl FnOnce(Option<Started<'_>>) + Send + 'static) {
        let Opener { opening, slot, early } = self;
        let filled = slot.clone();
        let over = early.clone();
        let work = move || {
            // A panic must still fill the slot: every command waits for it.
            let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let (opened, events) = match opening {
                    Ok(thread) => thread.join().unwrap_or_else(|_| {
                        tracing::error!("the engine's start-up stopped");
                        (Opened::failed("the task engine stopped while it started".to_owned()), None)
                    }),
                    Err(e) => {
                        tracing::error!("no thread to open the engine on: {e}");
                        (Opened::failed(format!("the task engine could not start: {e}")), None)
                    }
                };
                let started = match (opened.engine.as_ref(), events) {
                    (Some(engine), Some(events)) => Some(Started { engine, events }),
                    (Some(engine), None) => Some(Started { engine, events: engine.subscribe() }),
                    (None, _) => None,
                };
                ready(started);
                opened
            }))
            .unwrap_or_else(|_| {
                tracing::error!("the engine's start-up stopped");
                Opened::failed("the task engine stopped while it started".to_owned())
            });
            let _ = filled.set(opened);
            over.set(Phase::Over);
        };
        if let Err(e) = std::thread::Builder::new().name("engine-start".into()).spawn(work) {
            tracing::error!("no thread to open the engine on: {e}");
            let _ = slot.set(Opened::failed(format!("the task engine could not start: {e}")));
            early.set(Phase::Over);
        }
    }
}

impl Opened {
    fn failed(why: String) -> Opened {
        Opened { engine: None, startup_error: Some(why), config_error: Mutex::new(None) }
    }
}

/// How long the store's check waits for the first paint before it starts anyway.
const CHECK_AFTER_START: std::time::Duration = std::time::Duration::from_secs(2);

/// The store opened for reading (handed to `early` while its check runs), then the engine once
/// the check passed, subscribed to before it resumes what a previous run left.
fn open_engine(paths: &Paths, early: &Early) -> (Opened, Option<broadcast::Receiver<EngineEvent>>) {
    let (config, config_error) = match Config::load(paths) {
        Ok(c) => (c, None),
        Err(e) => (Config::empty(Some(paths.config.clone())), Some(e.to_string())),
    };
    let opened = tauri::async_runtime::block_on(async {
        let (opening, check) =
            Engine::open_readable_check_later(paths.clone(), EngineOptions::default(), config).await?;
        early.set(Phase::Readable(opening.reader()));
        // The check reads the whole file (a third of a second at 100,000 tasks): beside the
        // first paint it took one of two cores from the webview. Nothing is written, no server
        // started and no task resumed before it passed, so putting it after the paint delays
        // only those, by the paint's own time.
        crate::commands::first_paint(CHECK_AFTER_START).await;
        check.release();
        let engine = opening.ready().await?;
        let events = engine.subscribe();
        engine.resume().await?;
        Ok::<_, taskdeck_engine::EngineError>((engine, events))
    });
    match opened {
        Ok((e, events)) => {
            (Opened { engine: Some(e), startup_error: None, config_error: Mutex::new(config_error) }, Some(events))
        }
        Err(e) => {
            tracing::error!(code = %e.code(), "the engine did not start: {e}");
            // The reads end with the start-up error, as for a store refused at open: the reader
            // (and the data directory it holds) goes once the slot is filled.
            (Opened { engine: None, startup_error: Some(e.to_string()), config_error: Mutex::new(config_error) }, None)
        }
    }
}

/// Forwards engine events to the webview, coalesced per frame. Runs for the life of the app.
pub fn forward_events(
    app: AppHandle,
    engine: Engine,
    mut rx: broadcast::Receiver<EngineEvent>,
    on_task: impl Fn(&TaskRecord) + Send + 'static,
) {
    // Subscribed first, so a pin made meanwhile is not lost between the read and the events.
    let pinned =
        match engine.summaries(&TaskQuery { pinned: Some(true), ..TaskQuery::default() }, &PageRequest::default()) {
            Ok(page) => page.items.into_iter().map(|t| t.id).collect(),
            Err(e) => {
                tracing::warn!("could not read the pinned tasks: {e}");
                HashSet::new()
            }
        };
    tauri::async_runtime::spawn(async move {
        let mut pending = Pending { pinned, ..Pending::default() };
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
            observe(&app, &on_task, &first);
            pending.add(first);
            let deadline = tokio::time::Instant::now() + FRAME;
            loop {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Ok(e)) => {
                        observe(&app, &on_task, &e);
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

/// What the shell itself follows of an event: tasks for notifications and the tray, deletions so
/// that a deleted task is forgotten there too.
fn observe(app: &AppHandle, on_task: &impl Fn(&TaskRecord), event: &EngineEvent) {
    match event {
        EngineEvent::Task { task } => on_task(task),
        EngineEvent::Deleted { tasks } => crate::notify::forget(app, tasks),
        _ => {}
    }
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
            *state.config_error().lock().unwrap_or_else(|p| p.into_inner()) = result.err().map(|e| e.to_string());
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

    fn temp_paths(dir: &std::path::Path) -> Paths {
        Paths { config: dir.join("no-servers.json"), data_dir: dir.join("data") }
    }

    #[test]
    fn the_reads_are_served_from_the_store_and_then_from_the_engine_once_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let (state, opener) = AppState::opening(temp_paths(dir.path()));
        let (tx, started) = std::sync::mpsc::channel();
        opener.start(move |s| {
            let _ = tx.send(s.is_some());
        });
        let reader = tauri::async_runtime::block_on(state.reader()).expect("no reads while the store opened");
        assert_eq!(reader.store().counts(&TaskQuery::default()).unwrap().total, 0);
        assert!(!reader.servers().is_empty(), "the default config's demo server");
        assert_eq!(started.recv_timeout(Duration::from_secs(20)), Ok(true));
        tauri::async_runtime::block_on(state.settled());
        assert_eq!(state.startup_error(), None);
        let engine = state.engine().expect("an engine").clone();
        let later = tauri::async_runtime::block_on(state.reader()).expect("no reads once the engine started");
        assert_eq!(later.servers(), engine.servers());
        drop((reader, later));
        tauri::async_runtime::block_on(engine.shutdown());
    }

    #[test]
    fn the_reads_fail_with_the_start_up_error_when_the_engine_cannot_start() {
        let dir = tempfile::tempdir().unwrap();
        let paths = temp_paths(dir.path());
        let holder = tauri::async_runtime::block_on(Engine::open(paths.clone(), EngineOptions::default())).unwrap();
        let (state, opener) = AppState::opening(paths);
        let (tx, started) = std::sync::mpsc::channel();
        opener.start(move |s| {
            let _ = tx.send(s.is_some());
        });
        assert!(tauri::async_runtime::block_on(state.reader()).is_none(), "reads of a store not opened");
        assert_eq!(started.recv_timeout(Duration::from_secs(20)), Ok(false));
        assert!(state.engine().is_none());
        assert!(state.startup_error().is_some_and(|e| !e.is_empty()));
        tauri::async_runtime::block_on(holder.shutdown());
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
    fn a_summary_is_the_record_without_arguments_and_result() {
        let record = crate::testing::record(serde_json::json!({
            "arguments": {"topic": "x".repeat(500)}, "era": "legacy", "remote_task_id": "r1", "status": "completed",
            "status_message": "done", "progress": {"progress": 3.0, "total": 3.0, "message": null},
            "result": {"content": [{"type": "text", "text": "y".repeat(500)}]}, "poll_interval_ms": 250,
            "updated_at": "2026-11-30T10:00:05.250Z"
        }));
        let summary = serde_json::to_value(summary_of(&record, false)).unwrap();
        let whole = serde_json::to_value(&record).unwrap();
        for same in
            ["id", "server", "tool", "status", "status_message", "progress", "error", "created_at", "updated_at"]
        {
            assert_eq!(summary[same], whole[same], "{same}");
        }
        assert_eq!(summary["has_result"], true);
        assert!(summary.get("arguments").is_none() && summary.get("result").is_none());
        assert!(summary.to_string().len() < whole.to_string().len() / 4);
    }

    #[test]
    fn a_summary_carries_a_questions_key_message_and_kind_but_not_its_schema() {
        // Large (about 145 KB), yet under the bound past which a question is kept without its body.
        let properties: serde_json::Map<String, serde_json::Value> = (0..1000)
            .map(|i| (format!("field_{i}"), serde_json::json!({"type": "string", "description": "d".repeat(100)})))
            .collect();
        let params = serde_json::json!({"message": "Which incident?", "requestedSchema": {"type": "object", "properties": properties}});
        let record = crate::testing::record(serde_json::json!({
            "status": "input_required",
            "question": {"key": "k1", "request": {"method": "elicitation/create", "params": params}},
        }));
        let question = record.question.as_ref().unwrap();
        assert!(
            matches!(question.form(), Some(taskdeck_protocol::form::FormModel::Ready { fields }) if fields.len() == 1000),
            "the record has the whole form"
        );
        let summary = serde_json::to_value(summary_of(&record, false)).unwrap();
        let key = serde_json::to_value(question).unwrap()["key"].clone();
        assert_eq!(summary["question"], serde_json::json!({"key": key, "message": "Which incident?", "kind": "form"}));
        assert!(summary.to_string().len() < 1000, "{} bytes", summary.to_string().len());
    }

    #[test]
    fn a_summary_cuts_a_long_question_message() {
        let message = "é".repeat(SUMMARY_MESSAGE_CHARS * 50);
        let record = crate::testing::record(serde_json::json!({
            "status": "input_required",
            "question": {"key": "k1", "request": {"method": "elicitation/create", "params": {"message": message, "mode": "url", "url": "https://example.com/x", "elicitationId": "e1"}}},
        }));
        let summary = summary_of(&record, false).question.unwrap();
        assert_eq!(summary.kind.as_deref(), Some("url"));
        let shown = summary.message.unwrap();
        assert_eq!(shown.chars().count(), SUMMARY_MESSAGE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn a_batch_summary_is_what_the_store_reads_for_the_same_task() {
        let dir = tempfile::tempdir().unwrap();
        let store = taskdeck_store::Store::open(dir.path().join("t.sqlite3")).unwrap();
        let rec = store
            .create_task(taskdeck_store::NewTask {
                server: "demo".into(),
                tool: "t".into(),
                arguments: serde_json::json!({"topic": "q3"}),
                idempotency_key: "k".into(),
                mode: taskdeck_store::Mode::Task,
            })
            .unwrap();
        let rec = store
            .apply(
                &rec.id,
                taskdeck_store::Update::Completed {
                    result: serde_json::json!({"content": [{"type": "text", "text": "done"}]}),
                    server_status: None,
                },
            )
            .unwrap();
        store.set_pinned(&rec.id, true).unwrap();
        assert_eq!(summary_of(&rec, true), store.summary(&rec.id).unwrap());
    }

    #[test]
    fn a_pin_and_a_delete_reach_the_batch_and_later_records_keep_the_pin() {
        let mut p = Pending::default();
        p.add(EngineEvent::Task { task: Box::new(task("a", "1")) });
        let mut pinned = summary_of(&task("b", "1"), true);
        pinned.pinned = true;
        p.add(EngineEvent::Pinned { task: Box::new(pinned) });
        p.add(EngineEvent::Task { task: Box::new(task("b", "2")) });
        p.add(EngineEvent::Deleted {
            tasks: vec![Purged {
                id: "a".into(),
                tool: "t".into(),
                server: "s".into(),
                status: taskdeck_protocol::TaskStatus::Completed,
            }],
        });
        let batch = p.take().unwrap();
        let got: Vec<(&str, bool)> = batch.tasks.iter().map(|t| (t.id.as_str(), t.pinned)).collect();
        assert_eq!(got, vec![("b", true)], "the deleted task's update is not sent");
        assert_eq!(batch.deleted.len(), 1);
        p.add(EngineEvent::Task { task: Box::new(task("b", "3")) });
        assert!(p.take().unwrap().tasks[0].pinned, "the pin is remembered for later records");
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
