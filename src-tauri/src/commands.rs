//! Everything the webview may call. Each command is declared once more, in one line of
//! `registry.in`, from which its handler, its permission and the UI's typed `invoke` map come; each
//! type it takes or returns is exported to `ui/src/lib/bindings/` (see `tests/bindings.rs`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskdeck_engine::{
    AnswerInput, Endpoint, Engine, EngineError, ErrorCode, ListFilter, LogLine, ServerStatus, TaskError, TaskEvent,
    TaskRecord, ToolInfo,
};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::question::Asks;
use taskdeck_store::{Progress, Question};
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
    state.engine.as_ref().ok_or_else(|| {
        CommandError::new(
            ErrorCode::EngineUnavailable,
            state.startup_error.clone().unwrap_or_else(|| "the task engine is not running".into()),
        )
    })
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct TaskDetail {
    pub task: TaskRecord,
    pub events: Vec<TaskEvent>,
}

/// A task as the task list shows it: a `TaskRecord` without its arguments and result (and the
/// bookkeeping the UI never reads), which only the detail pane shows and fetches with
/// `task_detail`. With 10,000 tasks this is half the JSON the page receives at start-up.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TaskSummary {
    pub id: String,
    pub server: String,
    pub tool: String,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub progress: Option<Progress>,
    /// What the list shows of a pending question; the form reads the whole question from
    /// `task_detail`, so a big schema is not sent again with every progress tick.
    pub question: Option<QuestionSummary>,
    pub error: Option<TaskError>,
    /// Whether a result is stored (`task_detail` has it).
    pub has_result: bool,
    #[serde(with = "taskdeck_store::rfc3339_millis")]
    #[ts(type = "string")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "taskdeck_store::rfc3339_millis")]
    #[ts(type = "string")]
    pub updated_at: DateTime<Utc>,
}

impl From<&TaskRecord> for TaskSummary {
    fn from(t: &TaskRecord) -> Self {
        TaskSummary {
            id: t.id.clone(),
            server: t.server.clone(),
            tool: t.tool.clone(),
            status: t.status,
            status_message: t.status_message.clone(),
            progress: t.progress.clone(),
            question: t.question.as_ref().map(QuestionSummary::from),
            error: t.error.clone(),
            has_result: t.result.is_some(),
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// The most of a question's message a summary carries: a line in the list, not the question.
pub const SUMMARY_MESSAGE_CHARS: usize = 1000;

/// A question as the task list needs it: which one (a new key is a new question), what it says,
/// and what kind of answer it wants. Its schema and request stay in the detail.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct QuestionSummary {
    /// Written as the question's key is (`Question::key`).
    pub key: String,
    /// The first [`SUMMARY_MESSAGE_CHARS`] characters of the message.
    pub message: Option<String>,
    pub kind: QuestionKind,
}

/// What a question asks for, without what it carries (see `Asks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    Form,
    Url,
    Sampling,
    Roots,
    Malformed,
    Unsupported,
    TooLarge,
}

impl From<&Question> for QuestionSummary {
    fn from(q: &Question) -> Self {
        let kind = match q.asks {
            Asks::Form { .. } => QuestionKind::Form,
            Asks::Url { .. } => QuestionKind::Url,
            Asks::Sampling { .. } => QuestionKind::Sampling,
            Asks::Roots => QuestionKind::Roots,
            Asks::Malformed { .. } => QuestionKind::Malformed,
            Asks::Unsupported { .. } => QuestionKind::Unsupported,
            Asks::TooLarge { .. } => QuestionKind::TooLarge,
        };
        let message = q.message.as_deref().map(|m| match m.char_indices().nth(SUMMARY_MESSAGE_CHARS) {
            Some((end, _)) => format!("{}…", &m[..end]),
            None => m.to_owned(),
        });
        QuestionSummary { key: q.key.to_text(), message, kind }
    }
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

#[tauri::command]
pub fn app_info(state: State<'_, AppState>) -> Result<AppInfo> {
    Ok(AppInfo {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        config_path: state.paths.config.display().to_string(),
        data_dir: state.paths.data_dir.display().to_string(),
        log_dir: state.paths.log_dir().display().to_string(),
        config_exists: state.paths.config.exists(),
        config_error: lock(&state.config_error).clone(),
        engine_error: state.startup_error.clone(),
        notifications_muted: lock(&state.ui).notifications_muted,
        entries_not_run: state.engine.as_ref().map(|e| e.entries_not_run()).unwrap_or_default(),
    })
}

#[tauri::command]
pub fn list_servers(state: State<'_, AppState>) -> Result<Vec<ServerStatus>> {
    Ok(engine(&state)?.servers())
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
    *lock(&state.config_error) = result.as_ref().err().map(ToString::to_string);
    Ok(result?)
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
) -> Result<TaskSummary> {
    let task = engine(&state)?.run(&server, &tool, arguments).await?;
    tracing::info!(task = %task.id, server = %server, tool = %tool, "run from the window");
    Ok((&task).into())
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
    Ok((&task).into())
}

#[tauri::command]
pub fn list_tasks(state: State<'_, AppState>) -> Result<Vec<TaskSummary>> {
    Ok(engine(&state)?.list(&ListFilter::default())?.iter().map(TaskSummary::from).collect())
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
    Ok((&task).into())
}

#[tauri::command]
pub async fn cancel_task(state: State<'_, AppState>, id: String) -> Result<TaskSummary> {
    let task = engine(&state)?.cancel(&id).await?;
    tracing::info!(task = %task.id, server = %task.server, "cancelled from the window");
    Ok((&task).into())
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

/// The webview calls this once, when its first render with the tasks loaded has been painted: the
/// moment a user sees the app rather than a blank window.
#[tauri::command]
pub fn ui_ready() -> Result<()> {
    if std::env::var_os(READY_MARK_ENV).is_some() {
        use std::io::Write;
        // A desktop launch may have no stdout at all; the mark is not worth a failed command.
        let _ = writeln!(std::io::stdout().lock(), "ready");
    }
    release_startup_memory();
    Ok(())
}

/// Loading the task list for that first render held the whole store in memory several times over
/// (records, their JSON, the IPC copy). glibc keeps what was freed for reuse instead of returning
/// it: with 10,000 tasks, tens of MiB held for nothing from then on (docs/benchmarks.md). Hand it back.
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
pub fn get_settings(state: State<'_, AppState>) -> Result<taskdeck_engine::Settings> {
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

#[cfg(test)]
mod tests {
    use super::{TaskSummary, export_file_name};

    #[test]
    fn a_summary_is_the_record_without_arguments_and_result() {
        let record = crate::testing::record(serde_json::json!({
            "arguments": {"topic": "x".repeat(500)}, "era": "legacy", "remote_task_id": "r1", "status": "completed",
            "status_message": "done", "progress": {"progress": 3.0, "total": 3.0, "message": null},
            "result": {"content": [{"type": "text", "text": "y".repeat(500)}]}, "poll_interval_ms": 250,
            "updated_at": "2026-11-30T10:00:05.250Z"
        }));
        let summary = serde_json::to_value(TaskSummary::from(&record)).unwrap();
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
        let summary = serde_json::to_value(TaskSummary::from(&record)).unwrap();
        let key = serde_json::to_value(question).unwrap()["key"].clone();
        assert_eq!(summary["question"], serde_json::json!({"key": key, "message": "Which incident?", "kind": "form"}));
        assert!(summary.to_string().len() < 1000, "{} bytes", summary.to_string().len());
    }

    #[test]
    fn a_summary_cuts_a_long_question_message() {
        let message = "é".repeat(super::SUMMARY_MESSAGE_CHARS * 50);
        let record = crate::testing::record(serde_json::json!({
            "status": "input_required",
            "question": {"key": "k1", "request": {"method": "elicitation/create", "params": {"message": message, "mode": "url", "url": "https://example.com/x", "elicitationId": "e1"}}},
        }));
        let summary = TaskSummary::from(&record).question.unwrap();
        assert_eq!(summary.kind, super::QuestionKind::Url);
        let shown = summary.message.unwrap();
        assert_eq!(shown.chars().count(), super::SUMMARY_MESSAGE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn export_names_are_safe_whatever_the_tool_is_called() {
        let id = "0c8f3e2a-1b2c-4d5e-8f90-123456789abc";
        assert_eq!(export_file_name("generate_report", id), "generate_report-0c8f3e2a.json");
        assert_eq!(export_file_name("../../etc/passwd", id), "etc_passwd-0c8f3e2a.json");
        assert_eq!(export_file_name("répertoire de notes", id), "r_pertoire_de_notes-0c8f3e2a.json");
        assert_eq!(export_file_name("...", id), "result-0c8f3e2a.json");
    }
}
