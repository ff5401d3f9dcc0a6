//! Everything the webview may call. Each command is declared once more, in one line of
//! `registry.in`, from which its handler, its permission and the UI's typed `invoke` map come; each
//! type it takes or returns is exported to `ui/src/lib/bindings/` (see `tests/bindings.rs`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskdeck_engine::{
    AnswerInput, Endpoint, Engine, EngineError, ErrorCode, LogLine, ServerStatus, TaskEvent, TaskRecord, ToolInfo,
};
use taskdeck_protocol::TaskStatus;
use tauri::State;
use ts_rs::TS;

use crate::bridge::AppState;
use crate::links::OfferedUrl;

/// What the UI shows about this running instance.
#[derive(Debug, Clone, Serialize, TS)]
pub struct AppInfo {
    pub version: String,
    pub config_path: String,
    pub data_dir: String,
    /// Where the app's, the CLI's and each server's logs are written.
    pub log_dir: String,
    /// Whether the config file exists; without it the demo server is the embedded default.
    pub config_exists: bool,
    /// Why the config could not be used, if it could not; the servers list is empty meanwhile.
    pub config_error: Option<String>,
    /// Why the engine did not start at all (for instance another process drives this data dir).
    pub engine_error: Option<String>,
    pub notifications_muted: bool,
    /// The config entries that run nothing: the disabled ones (phase `disabled`), then those that
    /// could not be read, each with its error (phase `invalid`). Apart from the servers list, which
    /// holds only servers that can be used.
    pub entries_not_run: Vec<ServerStatus>,
}

/// A failed command, as the webview receives it: act on `code` and the details, show `message`.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CommandError {
    pub code: ErrorCode,
    pub message: String,
    /// For `invalid_arguments` and `invalid_answer`: the offending value as a JSON Pointer
    /// (`/topic`), `""` when the object as a whole is wrong.
    pub path: Option<String>,
    /// For `refused`: the task's real status now.
    pub status: Option<TaskStatus>,
    /// The server the failure concerns, when it concerns one.
    pub server: Option<String>,
    /// For `server_error`: the server's own JSON-RPC error code.
    pub rpc_code: Option<i64>,
}

impl CommandError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CommandError { code, message: message.into(), path: None, status: None, server: None, rpc_code: None }
    }
}

impl From<EngineError> for CommandError {
    fn from(e: EngineError) -> Self {
        let error = CommandError {
            code: e.code(),
            path: e.path().map(str::to_owned),
            status: e.status(),
            server: e.server().map(str::to_owned),
            rpc_code: e.rpc_code(),
            message: e.to_string(),
        };
        // The kind and where, not the message: an invalid answer's message quotes the answer.
        tracing::info!(code = %error.code, server = error.server.as_deref(), path = error.path.as_deref(), "command refused");
        error
    }
}

type Result<T> = std::result::Result<T, CommandError>;

fn engine<'a>(state: &'a State<'_, AppState>) -> Result<&'a Engine> {
    state.engine().ok_or_else(|| {
        CommandError::new(
            ErrorCode::EngineUnavailable,
            state.startup_error().unwrap_or("the task engine is not running").to_owned(),
        )
    })
}

/// What the history's reads use, as soon as the store is open (see `AppState::reader`); the
/// engine's start-up error, as every other command reports it, when there is no engine.
async fn reader(state: &State<'_, AppState>) -> Result<taskdeck_engine::Reader> {
    match state.reader().await {
        Some(reader) => Ok(reader),
        None => Err(CommandError::new(
            ErrorCode::EngineUnavailable,
            state.startup_error().unwrap_or("the task engine is not running").to_owned(),
        )),
    }
}

/// Runs a read of the history off the async threads, on the store as soon as it is open. A read
/// that met a damaged page while the store's check ran ends as the check does: with the engine's
/// start-up error, as every command reports it for a store refused at open.
async fn read<T: Send + 'static>(
    state: &State<'_, AppState>,
    f: impl FnOnce(taskdeck_store::Store) -> Result<T> + Send + 'static,
) -> Result<T> {
    let store = reader(state).await?.store().clone();
    match blocking(move || f(store)).await {
        Err(e) if e.code == ErrorCode::Damaged => {
            state.settled().await;
            Err(match state.engine() {
                Some(_) => e,
                None => CommandError::new(
                    ErrorCode::EngineUnavailable,
                    state.startup_error().unwrap_or("the task engine is not running").to_owned(),
                ),
            })
        }
        done => done,
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct TaskDetail {
    pub task: TaskRecord,
    pub events: Vec<TaskEvent>,
}

/// A task as the list shows it is the store's `TaskSummary` (the record without arguments, result
/// and question body), read by SQL for pages and made from the published record for batches
/// (`bridge::summary_of`), so the two cannot differ.
pub use taskdeck_store::TaskSummary;

/// What a command that changed a task replies: the task as the list shows it.
fn summary(engine: &Engine, task: &TaskRecord) -> TaskSummary {
    let pinned = engine.store().summary(&task.id).map(|s| s.pinned).unwrap_or(false);
    crate::bridge::summary_of(task, pinned)
}

/// The user's answer to a question.
#[derive(Debug, Clone, Deserialize, TS)]
pub struct AnswerPayload {
    pub action: AnswerAction,
    pub content: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Copy, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum AnswerAction {
    Accept,
    Decline,
    Cancel,
}

// `app_info`, `list_servers` and `get_settings` are asked for at start-up: async, so that waiting
// for the engine does not hold up the main thread, and with it the first paint.
#[tauri::command]
pub async fn app_info(state: State<'_, AppState>) -> Result<AppInfo> {
    // The engine's outcome, so that a store the check finds damaged shows its banner.
    state.settled().await;
    Ok(AppInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        config_path: state.paths.config.display().to_string(),
        data_dir: state.paths.data_dir.display().to_string(),
        log_dir: state.paths.log_dir().display().to_string(),
        config_exists: state.paths.config.exists(),
        config_error: lock(state.config_error()).clone(),
        engine_error: state.startup_error().map(str::to_owned),
        notifications_muted: lock(&state.ui).notifications_muted,
        entries_not_run: state.engine().map(|e| e.entries_not_run()).unwrap_or_default(),
    })
}

#[tauri::command]
pub async fn list_servers(state: State<'_, AppState>) -> Result<Vec<ServerStatus>> {
    // None is started before the engine is ready: the config's servers as they stand.
    Ok(reader(&state).await?.servers())
}

#[tauri::command]
pub fn restart_server(state: State<'_, AppState>, name: String) -> Result<()> {
    Ok(engine(&state)?.restart_server(&name)?)
}

#[tauri::command]
pub fn server_log(state: State<'_, AppState>, name: String) -> Result<Vec<LogLine>> {
    Ok(engine(&state)?.server_log(&name)?)
}

#[tauri::command]
pub async fn reload_config(state: State<'_, AppState>) -> Result<Vec<ServerStatus>> {
    let result = engine(&state)?.reload_config().await;
    *lock(state.config_error()) = result.as_ref().err().map(ToString::to_string);
    Ok(result?)
}

/// The directories the server is granted (its `roots`), as the Roots panel edits them.
#[tauri::command]
pub fn server_roots(state: State<'_, AppState>, name: String) -> Result<Vec<String>> {
    Ok(engine(&state)?.granted_roots(&name)?.into_iter().map(|p| p.display().to_string()).collect())
}

/// Grants the server these directories: written to its entry in the config file, then applied as
/// a reload applies it (a running server is told, not restarted).
#[tauri::command]
pub async fn set_server_roots(state: State<'_, AppState>, name: String, roots: Vec<String>) -> Result<Vec<String>> {
    let engine = engine(&state)?;
    engine.granted_roots(&name)?;
    taskdeck_engine::roots_edit::write_grant(&state.paths.config, &name, &roots).map_err(EngineError::from)?;
    let result = engine.reload_config().await;
    *lock(state.config_error()) = result.as_ref().err().map(ToString::to_string);
    result?;
    Ok(engine.granted_roots(&name)?.into_iter().map(|p| p.display().to_string()).collect())
}

/// Opens the config file in the user's editor, writing the current servers to it first when it
/// does not exist yet, so there is something to edit.
#[tauri::command]
pub fn edit_config(app: tauri::AppHandle, state: State<'_, AppState>) -> Result<()> {
    let path = &state.paths.config;
    let io = |e: std::io::Error| CommandError::new(ErrorCode::Io, format!("{}: {e}", path.display()));
    if !path.exists() {
        let servers: Map<String, Value> = engine(&state)?
            .config()
            .servers
            .into_iter()
            .map(|s| {
                let mut entry = Map::new();
                match s.endpoint {
                    Endpoint::Stdio(spec) => {
                        entry.insert("command".into(), Value::from(spec.command));
                        entry.insert("args".into(), Value::from(spec.args));
                    }
                    // Only the URL: header values were resolved from the environment and may be secrets.
                    Endpoint::Http(spec) => {
                        entry.insert("url".into(), Value::from(spec.url));
                    }
                }
                (s.name, Value::Object(entry))
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({ "mcpServers": servers })).unwrap_or_default();
        // Private (a config's `env` often holds tokens) and atomic (the engine may read it meanwhile).
        taskdeck_store::private_fs::write_atomic(path, (text + "\n").as_bytes()).map_err(io)?;
    }
    crate::os::open_path(&app, path)
}

/// Opens the log folder in the file manager, so a user can find the files to send. The folder is
/// made when missing: the app may not have written there yet if its log could not be opened.
#[tauri::command]
pub fn open_log_folder(app: tauri::AppHandle, state: State<'_, AppState>) -> Result<()> {
    let dir = state.paths.log_dir();
    std::fs::create_dir_all(&dir).map_err(|e| CommandError::new(ErrorCode::Io, format!("{}: {e}", dir.display())))?;
    crate::os::open_path(&app, &dir)
}

#[tauri::command]
pub async fn list_tools(state: State<'_, AppState>, server: String) -> Result<Vec<ToolInfo>> {
    Ok(engine(&state)?.tools(&server).await?)
}

#[tauri::command]
pub async fn run_tool(
    state: State<'_, AppState>,
    server: String,
    tool: String,
    arguments: Value,
    idempotency_key: Option<String>,
) -> Result<TaskSummary> {
    // One key per submission of the run form: a double click or a retried call gets the task the
    // first one made.
    let task = engine(&state)?.run_once(&server, &tool, arguments, idempotency_key.as_deref()).await?;
    tracing::info!(task = %task.id, server = %server, tool = %tool, "run from the window");
    Ok(summary(engine(&state)?, &task))
}

/// Saves a task's result to a file the user picks, from the store rather than from what the page
/// shows. `None` when the user closed the dialog without choosing.
#[tauri::command]
pub async fn export_result(app: tauri::AppHandle, state: State<'_, AppState>, id: String) -> Result<Option<String>> {
    use tauri::Manager;
    use tauri_plugin_dialog::DialogExt;

    let task = engine(&state)?.get(&id)?;
    let Some(result) = task.result else {
        return Err(CommandError::new(ErrorCode::NoResult, "this task has no result to export yet"));
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut dialog = app
        .dialog()
        .file()
        .set_title("Export result")
        .set_file_name(export_file_name(&task.tool, &task.id))
        .add_filter("JSON", &["json"]);
    if let Ok(dir) = app.path().download_dir()
        && dir.is_dir()
    {
        dialog = dialog.set_directory(dir);
    }
    dialog.save_file(move |picked| {
        let _ = tx.send(picked);
    });
    let Some(picked) = rx.await.ok().flatten() else { return Ok(None) };
    let path = picked.into_path().map_err(|e| CommandError::new(ErrorCode::Io, e.to_string()))?;
    let text = serde_json::to_string_pretty(&result).unwrap_or_else(|_| result.to_string());
    // A result can hold anything the tool saw: private, and whole or not at all.
    taskdeck_store::private_fs::write_atomic(&path, (text + "\n").as_bytes())
        .map_err(|e| CommandError::new(ErrorCode::Io, format!("could not write {}: {e}", path.display())))?;
    Ok(Some(path.display().to_string()))
}

/// `<tool>-<first part of the id>.json`, with anything a file system could object to replaced: the
/// tool name is the server's choice.
fn export_file_name(tool: &str, id: &str) -> String {
    let safe: String = tool
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(80)
        .collect();
    let short = id.split('-').next().unwrap_or(id);
    let safe = safe.trim_start_matches(['_', '-']);
    if safe.is_empty() { format!("result-{short}.json") } else { format!("{safe}-{short}.json") }
}

#[tauri::command]
pub async fn rerun_task(state: State<'_, AppState>, id: String) -> Result<TaskSummary> {
    let engine = engine(&state)?;
    let old = engine.get(&id)?;
    let task = engine.run(&old.server, &old.tool, old.arguments).await?;
    tracing::info!(task = %task.id, server = %task.server, tool = %task.tool, rerun_of = %old.id, "run again from the window");
    Ok(summary(engine, &task))
}

#[tauri::command]
pub fn task_detail(state: State<'_, AppState>, id: String) -> Result<TaskDetail> {
    let engine = engine(&state)?;
    let task = engine.get(&id)?;
    let events = engine.events(&task.id)?;
    Ok(TaskDetail { task, events })
}

/// The task's events with an id above `after`: the detail pane holds the timeline up to its last
/// event and asks only for what is newer when the task moves on.
#[tauri::command]
pub fn task_events(state: State<'_, AppState>, id: String, after: i64) -> Result<Vec<TaskEvent>> {
    Ok(engine(&state)?.store().events_after(&id, after).map_err(EngineError::from)?)
}

#[tauri::command]
pub async fn answer_task(state: State<'_, AppState>, id: String, answer: AnswerPayload) -> Result<TaskSummary> {
    let input = match answer.action {
        AnswerAction::Accept => AnswerInput::Accept(answer.content.unwrap_or_default()),
        AnswerAction::Decline => AnswerInput::Decline,
        AnswerAction::Cancel => AnswerInput::Cancel,
    };
    let task = engine(&state)?.answer(&id, input).await?;
    tracing::info!(task = %task.id, server = %task.server, action = ?answer.action, "answered from the window");
    Ok(summary(engine(&state)?, &task))
}

#[tauri::command]
pub async fn cancel_task(state: State<'_, AppState>, id: String) -> Result<TaskSummary> {
    let task = engine(&state)?.cancel(&id).await?;
    tracing::info!(task = %task.id, server = %task.server, "cancelled from the window");
    Ok(summary(engine(&state)?, &task))
}

/// Opens a link in the system browser: only one the engine holds for the task, as `which` of its
/// links, and exactly the address the page showed (see `links::checked`). The webview asks the user
/// first and calls this only after they agreed.
#[tauri::command]
pub fn open_url(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    task_id: String,
    which: OfferedUrl,
    url: String,
) -> Result<()> {
    let task = engine(&state)?.get(&task_id)?;
    let url = crate::links::checked(&task, which, &url).inspect_err(|e| {
        tracing::warn!(task = %task.id, ?which, reason = %e.message, "open_url refused");
    })?;
    crate::os::open_url(&app, &url)
}

/// Also moves the tray's check mark and tells every listener, so the two switches agree; the
/// choice is kept in the settings.
#[tauri::command]
pub fn set_notifications_muted(app: tauri::AppHandle, muted: bool) -> Result<()> {
    Ok(crate::notify::set_muted(&app, muted)?)
}

#[tauri::command]
pub fn set_viewing_task(state: State<'_, AppState>, id: Option<String>) -> Result<()> {
    lock(&state.ui).viewing_task = id;
    Ok(())
}

/// Set (to anything) to have [`ui_ready`] print `ready` on stdout. `make bench-app` times start-up
/// to that line, and the minimal Tauri app it compares with prints the same line at the same moment.
pub const READY_MARK_ENV: &str = "TASKDECK_READY_MARK";

/// Told when the first paint is on screen: what start-up can put off waits for it.
static FIRST_PAINT: tokio::sync::Notify = tokio::sync::Notify::const_new();
static PAINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits until the first paint is on screen, or `at_most`: a window that never paints (hidden at
/// start, a webview that failed) must not hold start-up back for ever. Any number of waiters,
/// before or after the paint.
pub async fn first_paint(at_most: std::time::Duration) {
    let painted = FIRST_PAINT.notified();
    tokio::pin!(painted);
    // Registered before the flag is read, so a paint in between still wakes it.
    painted.as_mut().enable();
    if PAINTED.load(std::sync::atomic::Ordering::Acquire) {
        return;
    }
    let _ = tokio::time::timeout(at_most, painted).await;
}

/// The webview calls this once, when its first render with the tasks loaded has been painted: the
/// moment a user sees the app rather than a blank window.
#[tauri::command]
pub fn ui_ready() -> Result<()> {
    // Later waiters read the flag; a second call (a reload) changes nothing.
    PAINTED.store(true, std::sync::atomic::Ordering::Release);
    FIRST_PAINT.notify_waiters();
    if std::env::var_os(READY_MARK_ENV).is_some() {
        use std::io::Write;
        // A desktop launch may have no stdout at all; the mark is not worth a failed command.
        let _ = writeln!(std::io::stdout().lock(), "ready");
    }
    release_startup_memory();
    Ok(())
}

/// Start-up (opening the engine, resuming, the first pages and their IPC copies) frees what it
/// built, and glibc keeps what was freed for reuse instead of returning it; when start-up still
/// read every task, tens of MiB at 10,000 tasks were held for nothing (docs/benchmarks.md). Hand it back.
fn release_startup_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tauri::async_runtime::spawn_blocking(|| {
        // SAFETY: malloc_trim only returns free heap pages to the kernel; it touches no live
        // allocation and is safe to call from any thread at any time.
        unsafe { libc::malloc_trim(0) };
    });
}

/// The settings as `settings.json` holds them (the defaults without it). A file that cannot be
/// read fails with code `settings`, naming it; it is never written over.
#[tauri::command]
pub async fn get_settings(state: State<'_, AppState>) -> Result<taskdeck_engine::Settings> {
    state.settled().await;
    Ok(engine(&state)?.settings()?)
}

/// Replaces the sections given, keeps every other, and announces the change to every window and
/// the tray (`settings-changed`). A value out of range fails with its pointer in `path`.
#[tauri::command]
pub fn update_settings(
    state: State<'_, AppState>,
    update: taskdeck_engine::SettingsUpdate,
) -> Result<taskdeck_engine::Settings> {
    Ok(engine(&state)?.update_settings(&update)?)
}

// --- Servers: import, add, remove, per-server settings -------------------------------------------
// Each writes Taskdeck's config through `taskdeck_engine::config_edit` and returns; the config
// watcher (`bridge::watch_config`) applies the new file as the Reload button would.

/// One entry the user ticked in the import dialog: the file it is in (as `import_preview` named
/// it) and its name there.
#[derive(Debug, Clone, Deserialize, TS)]
pub struct ImportChoice {
    pub path: String,
    pub name: String,
}

fn edit_error(e: taskdeck_engine::config_edit::EditError) -> CommandError {
    use taskdeck_engine::config_edit::EditError;
    let code = match &e {
        EditError::Exists { .. } => ErrorCode::Duplicate,
        EditError::NotFound { .. } => ErrorCode::UnknownServer,
        EditError::Invalid { .. } | EditError::Config(_) => ErrorCode::Config,
        EditError::Write { .. } => ErrorCode::Io,
    };
    let server = match &e {
        EditError::Exists { name, .. } | EditError::NotFound { name, .. } => Some(name.clone()),
        _ => None,
    };
    CommandError { server, ..CommandError::new(code, e.to_string()) }
}

fn import_error(e: taskdeck_engine::import::ImportError) -> CommandError {
    use taskdeck_engine::import::ImportError;
    let (code, server) = match &e {
        ImportError::Edit(_) => {
            let ImportError::Edit(inner) = e else { unreachable!("matched above") };
            return edit_error(inner);
        }
        ImportError::UnknownServer { name, .. } => (ErrorCode::UnknownServer, Some(name.clone())),
        ImportError::NoSuchFile { .. } => (ErrorCode::NotFound, None),
        ImportError::Clash { name } => (ErrorCode::Duplicate, Some(name.clone())),
        ImportError::Secret { name, .. } => (ErrorCode::Io, Some(name.clone())),
        ImportError::Ambiguous { name, .. }
        | ImportError::CannotImport { name, .. }
        | ImportError::MissingInput { name, .. } => (ErrorCode::Config, Some(name.clone())),
    };
    CommandError { server, ..CommandError::new(code, e.to_string()) }
}

/// The files to look in: every known host's, one host's (`claude`, `cursor`, `vscode`,
/// `windsurf`), or a file.
fn import_files(from: Option<&str>) -> Result<Vec<taskdeck_engine::import::HostFile>> {
    use taskdeck_engine::import::{Host, HostFile, known_files};
    Ok(match from.map(str::trim).filter(|f| !f.is_empty()) {
        None => known_files(&Host::KNOWN),
        Some(f) => match Host::parse(f) {
            Some(host) => known_files(&[host]),
            None if std::path::Path::new(f).is_file() => vec![HostFile { host: Host::File, path: f.into() }],
            None => return Err(CommandError::new(ErrorCode::NotFound, format!("{f}: no such file"))),
        },
    })
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tauri::async_runtime::spawn_blocking(f).await.map_err(|e| CommandError::new(ErrorCode::Io, e.to_string()))?
}

/// What the other hosts' config files (or the file `from`) hold, against Taskdeck's config.
#[tauri::command]
pub async fn import_preview(
    state: State<'_, AppState>,
    from: Option<String>,
) -> Result<Vec<taskdeck_engine::import::Found>> {
    let paths = state.paths.clone();
    blocking(move || {
        let files = import_files(from.as_deref())?;
        taskdeck_engine::import::scan(&paths, &files).map_err(edit_error)
    })
    .await
}

/// Copies the chosen entries into Taskdeck's config; `inputs` holds each VS Code input's value by
/// id (a password goes to the sign-in store, never the config).
#[tauri::command]
pub async fn import_apply(
    state: State<'_, AppState>,
    from: Option<String>,
    choices: Vec<ImportChoice>,
    inputs: std::collections::BTreeMap<String, String>,
) -> Result<taskdeck_engine::import::ImportReport> {
    let paths = state.paths.clone();
    blocking(move || {
        use taskdeck_engine::import;
        let files = import_files(from.as_deref())?;
        let found = import::scan(&paths, &files).map_err(edit_error)?;
        let picks: Vec<(String, String)> = choices.into_iter().map(|c| (c.path, c.name)).collect();
        let chosen = import::pick(&found, &picks).map_err(import_error)?;
        let store = chosen
            .iter()
            .any(|c| c.entry.inputs.iter().any(|i| i.password))
            .then(|| taskdeck_engine::supervisor::sign_in_store(&paths.data_dir).0);
        import::apply(&paths, &chosen, Vec::new(), &inputs, store.as_deref(), false).map_err(import_error)
    })
    .await
}

/// Adds a server to Taskdeck's config (created with the demo server when there is none).
#[tauri::command]
pub async fn add_server(
    state: State<'_, AppState>,
    name: String,
    server: taskdeck_engine::config_edit::NewServer,
) -> Result<()> {
    let paths = state.paths.clone();
    blocking(move || taskdeck_engine::config_edit::add_server(&paths, &name, &server).map_err(edit_error)).await
}

/// Removes a server from Taskdeck's config, and the secrets an import kept for it alone.
#[tauri::command]
pub async fn remove_server(state: State<'_, AppState>, name: String) -> Result<()> {
    let paths = state.paths.clone();
    blocking(move || {
        let keys = taskdeck_engine::config_edit::remove_server(&paths, &name).map_err(edit_error)?;
        if !keys.is_empty() {
            let (store, _) = taskdeck_engine::supervisor::sign_in_store(&paths.data_dir);
            for key in keys {
                // The server is gone either way; a secret left behind is named in the log, never its value.
                if let Err(e) = store.delete_secret(&key) {
                    tracing::warn!(server = %name, secret = %key, "could not forget the server's secret: {e}");
                }
            }
        }
        Ok(())
    })
    .await
}

/// A server's per-server settings as its config entry has them.
#[tauri::command]
pub async fn server_settings(
    state: State<'_, AppState>,
    name: String,
) -> Result<taskdeck_engine::config_edit::SettingsEdit> {
    let paths = state.paths.clone();
    blocking(move || {
        taskdeck_engine::config_edit::ConfigFile::open(&paths).and_then(|f| f.settings(&name)).map_err(edit_error)
    })
    .await
}

/// Changes a server's per-server settings in Taskdeck's config.
#[tauri::command]
pub async fn update_server_settings(
    state: State<'_, AppState>,
    name: String,
    settings: taskdeck_engine::config_edit::SettingsEdit,
) -> Result<()> {
    let paths = state.paths.clone();
    blocking(move || taskdeck_engine::config_edit::update_settings(&paths, &name, &settings).map_err(edit_error)).await
}

// History (issue 13): the task list a page at a time, counts, search snippets, delete, the purge
// log, pin, export. The logic is in `history.rs`; these only reach the engine.

// The history reads run off the main thread: a sync command runs on it, and while the store
// reads a page (2000 rows when the list is dragged far) the window paints no frame.

/// A page of the task list under `filter`, starting at `cursor` (the top when `None`).
#[tauri::command]
pub async fn task_page(
    state: State<'_, AppState>,
    filter: crate::history::TaskFilter,
    cursor: Option<crate::history::PageCursor>,
    limit: u32,
) -> Result<crate::history::TaskPage> {
    read(&state, move |store| crate::history::page(&store, &filter, cursor, limit as usize)).await
}

/// The rows at positions `offset..offset + limit` of the list under `filter`: the stretch the
/// scrolled list shows, wherever it is, without the pages before it.
#[tauri::command]
pub async fn task_window(
    state: State<'_, AppState>,
    filter: crate::history::TaskFilter,
    offset: u32,
    limit: u32,
) -> Result<Vec<TaskSummary>> {
    read(&state, move |store| crate::history::window(&store, &filter, offset as usize, limit as usize)).await
}

/// Tasks per status under `filter` (its statuses aside), counted by the store.
#[tauri::command]
pub async fn task_counts(
    state: State<'_, AppState>,
    filter: crate::history::TaskFilter,
) -> Result<taskdeck_store::StatusCounts> {
    let query = filter.query()?;
    read(&state, move |store| Ok(store.counts(&query).map_err(EngineError::from)?)).await
}

/// Where `search` matched in each of these tasks (the rows on screen).
#[tauri::command]
pub async fn search_snippets(
    state: State<'_, AppState>,
    ids: Vec<String>,
    search: String,
) -> Result<Vec<crate::history::Snippet>> {
    read(&state, move |store| crate::history::snippets(&store, &ids, &search)).await
}

/// Which of these tasks (just changed) are in the list under `filter` now: how the list keeps a
/// search true as tasks come to match it or stop.
#[tauri::command]
pub async fn task_matches(
    state: State<'_, AppState>,
    filter: crate::history::TaskFilter,
    ids: Vec<String>,
) -> Result<Vec<String>> {
    read(&state, move |store| crate::history::matching(&store, &filter, &ids)).await
}

/// Deletes what `scope` names, as the CLI's `delete` does: a task still running is refused with its
/// real status, or cancelled first when `force`. Every window learns of it from the engine's
/// `Deleted` event. Returns how many were deleted (or, with `dry_run`, would be).
#[tauri::command]
pub async fn delete_tasks(
    state: State<'_, AppState>,
    scope: crate::history::DeleteScope,
    force: bool,
    dry_run: bool,
) -> Result<u64> {
    let engine = engine(&state)?;
    let count = match scope {
        crate::history::DeleteScope::Tasks { ids } if dry_run => ids.len(),
        crate::history::DeleteScope::Tasks { ids } => engine.delete(&ids, force).await?.len(),
        crate::history::DeleteScope::FinishedBefore { before } => {
            engine.delete_finished_before(crate::history::before_moment(&before)?, dry_run)?.len()
        }
    };
    if !dry_run {
        tracing::info!(count, "deleted from the window");
    }
    Ok(count as u64)
}

/// The newest purge-log lines before line `before`, newest first.
#[tauri::command]
pub fn purge_log(
    state: State<'_, AppState>,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<taskdeck_store::PurgeLine>> {
    Ok(engine(&state)?.purge_log_newest(before, (limit as usize).min(1000))?)
}

#[tauri::command]
pub fn pin_task(state: State<'_, AppState>, id: String, pinned: bool) -> Result<TaskSummary> {
    Ok(engine(&state)?.pin(&id, pinned)?)
}

/// Exports what `scope` names as `format` (`jsonl`, `csv` or `md`) to a file the user picks, as the
/// CLI's `export` writes it. `None` when the user closed the dialog without choosing.
#[tauri::command]
pub async fn export_tasks(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    scope: crate::history::ExportScope,
    format: String,
) -> Result<Option<String>> {
    use tauri::Manager;
    use tauri_plugin_dialog::DialogExt;

    let store = engine(&state)?.store().clone();
    let format: taskdeck_engine::ExportFormat =
        format.parse().map_err(|e: String| CommandError::new(ErrorCode::InvalidArguments, e))?;
    let query = match &scope {
        crate::history::ExportScope::Filter { filter } => Some(filter.query()?),
        crate::history::ExportScope::Tasks { .. } => None,
    };
    let (name, ext) = crate::history::export_file_name(format, chrono::Utc::now());
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut dialog = app.dialog().file().set_title("Export tasks").set_file_name(name).add_filter(ext, &[ext]);
    if let Ok(dir) = app.path().download_dir()
        && dir.is_dir()
    {
        dialog = dialog.set_directory(dir);
    }
    dialog.save_file(move |picked| {
        let _ = tx.send(picked);
    });
    let Some(picked) = rx.await.ok().flatten() else { return Ok(None) };
    let path = picked.into_path().map_err(|e| CommandError::new(ErrorCode::Io, e.to_string()))?;
    let target = path.clone();
    // Private, whole or not at all, and written a page at a time off the async threads: an export
    // of a large store is large.
    let written = tauri::async_runtime::spawn_blocking(move || {
        // The engine's error, when the export itself failed rather than the file.
        let mut failure: Option<EngineError> = None;
        let mut count = 0;
        let io = taskdeck_store::private_fs::write_atomic_with(&target, |file| {
            let mut out = std::io::BufWriter::new(file);
            let done = match (&scope, &query) {
                (crate::history::ExportScope::Tasks { ids }, _) => {
                    taskdeck_engine::history::export_ids(&store, ids, format, &mut out)
                }
                (_, Some(query)) => taskdeck_engine::history::export(Some(&store), query, format, &mut out),
                (_, None) => Ok(0),
            };
            match done {
                Ok(n) => {
                    count = n;
                    std::io::Write::flush(&mut out)
                }
                Err(e) => {
                    failure = Some(e);
                    Err(std::io::Error::other("the export failed"))
                }
            }
        });
        match (io, failure) {
            (_, Some(e)) => Err(CommandError::from(e)),
            (Err(e), None) => {
                Err(CommandError::new(ErrorCode::Io, format!("could not write {}: {e}", target.display())))
            }
            (Ok(()), None) => Ok(count),
        }
    })
    .await
    .map_err(|e| CommandError::new(ErrorCode::Io, e.to_string()))?;
    let count = written?;
    tracing::info!(format = ext, count, "exported from the window");
    Ok(Some(path.display().to_string()))
}

// Signing in to remote servers from the window: the Servers view's auth state and its Sign in /
// Sign out, and the Sign in of a task that waits for one. A sign-in is two calls, so that the
// window asks the user between them, naming the server and the authorization server's host:
// `find_out_sign_in` (nothing opened), then `continue_sign_in` (the browser, the redirect), which
// `cancel_sign_in` ends at any time.

/// How a `continue_sign_in` ended.
#[derive(Debug, Clone, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SignInEnd {
    SignedIn,
    /// The server lets Taskdeck in as it is.
    NotNeeded,
    /// The user (or the window) cancelled it.
    Cancelled,
    /// It did not succeed; `message` says why and what to do.
    Failed,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct SignInResult {
    pub end: SignInEnd,
    pub message: Option<String>,
    /// The server's sign-in as it stands now.
    pub state: taskdeck_engine::SignInState,
}

#[tauri::command]
pub async fn sign_in_state(state: State<'_, AppState>, server: String) -> Result<taskdeck_engine::SignInState> {
    Ok(engine(&state)?.sign_in_state(&server).await?)
}

/// Whether `server` wants a sign-in and where it goes: what the window asks the user before the
/// browser opens. `None` when it needs none. A failure (an unreachable server, metadata that
/// points elsewhere) is a `server` error whose message says what was wrong.
#[tauri::command]
pub async fn find_out_sign_in(
    state: State<'_, AppState>,
    server: String,
) -> Result<Option<taskdeck_engine::SignInPrompt>> {
    match engine(&state)?.find_out_sign_in(&server).await? {
        Ok(prompt) => Ok(prompt),
        Err(why) => {
            let mut e = CommandError::new(ErrorCode::Server, format!("cannot sign in to {server}: {why}"));
            e.server = Some(server);
            Err(e)
        }
    }
}

/// Opens the browser (`$BROWSER` when set) on the sign-in `find_out_sign_in` found and waits for
/// the redirect; the tasks that waited for it then go on by themselves.
#[tauri::command]
pub async fn continue_sign_in(state: State<'_, AppState>, server: String) -> Result<SignInResult> {
    let engine = engine(&state)?;
    let opener: taskdeck_engine::signin::OpenBrowser = std::sync::Arc::new(taskdeck_engine::signin::open_in_browser);
    let went = engine.continue_sign_in(&server, opener, None).await?;
    let (end, message) = match went {
        Ok(taskdeck_engine::SignInOutcome::SignedIn { issuer }) => {
            (SignInEnd::SignedIn, Some(format!("Signed in by {issuer}.")))
        }
        Ok(taskdeck_engine::SignInOutcome::NotNeeded) => {
            (SignInEnd::NotNeeded, Some(format!("{server} needs no sign-in.")))
        }
        Err(why) if why == taskdeck_engine::SIGN_IN_CANCELLED => {
            (SignInEnd::Cancelled, Some("The sign-in was cancelled.".into()))
        }
        Err(why) => (SignInEnd::Failed, Some(format!("Could not sign in to {server}: {why}"))),
    };
    tracing::info!(server = %server, end = ?end, "sign-in from the window");
    Ok(SignInResult { end, message, state: engine.sign_in_state(&server).await? })
}

/// Gives up the sign-in of `server` found out or waiting for the browser. True when there was one.
#[tauri::command]
pub fn cancel_sign_in(state: State<'_, AppState>, server: String) -> Result<bool> {
    Ok(engine(&state)?.cancel_sign_in(&server))
}

#[tauri::command]
pub async fn sign_out(state: State<'_, AppState>, server: String) -> Result<taskdeck_engine::SignInState> {
    let engine = engine(&state)?;
    if let Err(why) = engine.sign_out(&server).await? {
        return Err(CommandError::new(ErrorCode::Io, format!("could not sign out of {server}: {why}")));
    }
    tracing::info!(server = %server, "signed out from the window");
    Ok(engine.sign_in_state(&server).await?)
}

/// Keeps a model provider's API key in the sign-in store (the OS keyring, or the 0600 file), or
/// removes it when `key` is none; never in settings.json. The provider itself is a settings section
/// (`update_settings` with `models`).
#[tauri::command]
pub async fn set_model_key(state: State<'_, AppState>, provider: String, key: Option<String>) -> Result<()> {
    let store = engine(&state)?.secret_store().await;
    let done = tauri::async_runtime::spawn_blocking(move || match key {
        Some(k) => taskdeck_models::keys::save_key(store.as_ref(), &provider, &k),
        None => taskdeck_models::keys::delete_key(store.as_ref(), &provider),
    })
    .await
    .map_err(|e| CommandError::new(ErrorCode::Settings, format!("the key store failed: {e}")))?;
    done.map_err(|e| CommandError::new(ErrorCode::Settings, e.to_string()))
}

/// What testing a model provider found: the model and its one-word answer, or why not.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ModelTest {
    pub model: Option<String>,
    pub text: Option<String>,
    /// The provider's failure (a refused key, unreachable, ...), which names it and never the key.
    pub error: Option<String>,
}

/// Asks the provider's first model for one word, with its stored key.
#[tauri::command]
pub async fn test_model_provider(state: State<'_, AppState>, provider: String) -> Result<ModelTest> {
    let engine = engine(&state)?;
    let models = engine.settings()?.models;
    let p = models
        .provider(&provider)
        .ok_or_else(|| CommandError::new(ErrorCode::Settings, format!("no model provider is named {provider:?}")))?;
    let outcome = match taskdeck_models::load_key_blocking(engine.secret_store().await, &provider).await {
        Ok(key) => taskdeck_models::test_provider(p, key.as_ref()).await,
        Err(e) => Err(e),
    };
    Ok(match outcome {
        Ok(c) => ModelTest { model: Some(c.model.clone()), text: Some(c.text()), error: None },
        Err(e) => ModelTest { model: None, text: None, error: Some(e.to_string()) },
    })
}

/// A model's completion for a task's sampling question, for the user to read (and edit) before it
/// goes back with `answer_task`: `result` as it is, or the edited text.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SampledReply {
    /// The model that wrote it, as the provider named it.
    pub model: String,
    /// Its text blocks, joined; empty when it holds none (a tool call, say).
    pub text: String,
    /// The whole `CreateMessageResult`, to return unchanged.
    pub result: Value,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// Sends the task's pending sampling question `key` (the first pending one when `None`) to the
/// configured model and returns its completion; nothing goes to the server until the user returns it.
#[tauri::command]
pub async fn sample_task(state: State<'_, AppState>, id: String, key: Option<String>) -> Result<SampledReply> {
    let completion = engine(&state)?.sample(&id, key.as_deref()).await?;
    let result = serde_json::to_value(&completion.result)
        .map_err(|e| CommandError::new(ErrorCode::ModelFailed, format!("the completion could not be read: {e}")))?;
    tracing::info!(task = %id, model = %completion.result.model, "sampled from the window");
    Ok(SampledReply {
        model: completion.result.model.clone(),
        text: completion.result.content.text(),
        result,
        input_tokens: completion.usage.map(|u| u.input),
        output_tokens: completion.usage.map(|u| u.output),
    })
}

/// The configured model a sampling request with these params would go to (the rule of
/// `taskdeck_models::choose`), as `provider/model`; `None` when no model is configured.
#[tauri::command]
pub fn sampling_model(state: State<'_, AppState>, params: Value) -> Result<Option<String>> {
    let models = engine(&state)?.settings()?.models;
    let prefs = taskdeck_models::wire::request_from_params(&params).map(|r| r.preferences).unwrap_or_default();
    Ok(taskdeck_models::choose::choose(&models, &prefs).map(|c| format!("{}/{}", c.provider.name, c.model.id)))
}

/// Answers every question pending on the task at once, one answer per question in the order of
/// its `questions`, in one update to the server.
#[tauri::command]
pub async fn answer_task_all(
    state: State<'_, AppState>,
    id: String,
    answers: Vec<AnswerPayload>,
) -> Result<TaskSummary> {
    let inputs = answers
        .into_iter()
        .map(|a| match a.action {
            AnswerAction::Accept => AnswerInput::Accept(a.content.unwrap_or_default()),
            AnswerAction::Decline => AnswerInput::Decline,
            AnswerAction::Cancel => AnswerInput::Cancel,
        })
        .collect();
    let task = engine(&state)?.answer_all(&id, inputs).await?;
    tracing::info!(task = %task.id, server = %task.server, "answered every question from the window");
    Ok(summary(engine(&state)?, &task))
}

#[cfg(test)]
mod tests {
    use super::export_file_name;

    #[test]
    fn export_names_are_safe_whatever_the_tool_is_called() {
        let id = "0c8f3e2a-1b2c-4d5e-8f90-123456789abc";
        assert_eq!(export_file_name("generate_report", id), "generate_report-0c8f3e2a.json");
        assert_eq!(export_file_name("../../etc/passwd", id), "etc_passwd-0c8f3e2a.json");
        assert_eq!(export_file_name("répertoire de notes", id), "r_pertoire_de_notes-0c8f3e2a.json");
        assert_eq!(export_file_name("...", id), "result-0c8f3e2a.json");
    }
}
