//! Desktop notifications for the moments a task needs the user: it finished, it failed, or it asks a
//! question. Also keeps the count of running tasks the tray shows and the window's quit logic asks.
//!
//! A task's news becomes an [`Alert`] here, goes to one worker thread over a bounded channel, and
//! the worker's [`planner::Planner`] decides what reaches the screen (gathered, capped); the
//! desktop backend keeps one connection to the notification server for the app's life.

mod desktop;
pub mod planner;
pub mod text;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;
use taskdeck_engine::{Engine, EngineError, EngineEvent, NotificationSettings, Settings, SettingsUpdate, TaskRecord};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::{PageRequest, Purged, TaskQuery, TaskSummary};
use tauri::{AppHandle, Emitter, Manager};

use crate::bridge::AppState;
pub use planner::{Alert, AlertKind};
use planner::{Planner, Step};

/// Emitted when a notification is clicked: the webview selects the task.
pub const FOCUS_TASK_EVENT: &str = "focus-task";
/// Emitted whenever notifications are paused or resumed, from the tray or from the webview itself.
pub const MUTED_EVENT: &str = "notifications-muted";
/// Emitted whenever the settings change, whoever changed them: its payload is the whole `Settings`.
pub const SETTINGS_EVENT: &str = "settings-changed";

#[derive(Debug, Clone, Serialize)]
pub struct FocusTask {
    pub id: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct NotificationsMuted {
    pub muted: bool,
}

/// What a task looked like the last time it was seen. The question key is part of it so that a
/// second question on the same task is a new transition, and so that a legacy server's
/// `input_required` that arrives before its question is not mistaken for one.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    status: TaskStatus,
    /// The key as the store writes it (`QuestionKey::to_text`), which a summary carries too.
    question: Option<String>,
    /// It waits for a sign-in to its server: the user has to act, as for a question.
    sign_in: bool,
}

impl Seen {
    fn of(task: &TaskRecord) -> Seen {
        let sign_in = taskdeck_engine::signin::waits_for_sign_in(task);
        Seen { status: task.status, question: task.question.as_ref().map(|q| q.key.to_text()), sign_in }
    }

    fn of_summary(task: &TaskSummary) -> Seen {
        let sign_in = taskdeck_engine::signin::is_sign_in_wait(task.status, task.status_message.as_deref());
        Seen { status: task.status, question: task.question.as_ref().map(|q| q.key.clone()), sign_in }
    }

    fn running(&self) -> bool {
        matches!(self.status, TaskStatus::Working | TaskStatus::InputRequired)
    }

    fn worth_telling(&self) -> bool {
        if self.sign_in {
            return true;
        }
        match self.status {
            TaskStatus::Completed | TaskStatus::Failed => true,
            TaskStatus::InputRequired => self.question.is_some(),
            TaskStatus::Working | TaskStatus::Cancelled => false,
        }
    }
}

/// The shell's own view of the last state of every task it saw move, fed by the engine's events.
/// Finished tasks from before start-up are not in it (reading them all is what start-up must not
/// do); `seeded_at` tells their news from new news.
#[derive(Default)]
pub struct Watch {
    tasks: Mutex<HashMap<String, Seen>>,
    seeded_at: Mutex<Option<DateTime<Utc>>>,
    running: Mutex<usize>,
    /// Kept from window events: asking the window would wait on the main thread.
    pub window_focused: AtomicBool,
    /// Which kinds of news are shown (the settings' `notifications`); paused is `UiState`'s.
    kinds: Mutex<NotificationSettings>,
}

/// What changed in one observation.
#[derive(Debug, PartialEq)]
pub struct Observed {
    /// The task just reached a state the user wants to hear about.
    pub tell: bool,
    /// The number of running tasks, when it changed.
    pub running: Option<usize>,
}

impl Watch {
    /// Remembers the tasks still running at `at` (start-up) as they are: asking before the window
    /// opened is what the task list shows, not news to announce, and neither is a task that
    /// finished before `at`.
    pub fn seed(&self, live: &[TaskSummary], at: DateTime<Utc>) -> usize {
        *lock(&self.seeded_at) = Some(at);
        let mut map = lock(&self.tasks);
        for t in live {
            map.entry(t.id.clone()).or_insert_with(|| Seen::of_summary(t));
        }
        let running = map.values().filter(|s| s.running()).count();
        *lock(&self.running) = running;
        running
    }

    pub fn observe(&self, task: &TaskRecord) -> Observed {
        let now = Seen::of(task);
        let before = lock(&self.tasks).insert(task.id.clone(), now.clone());
        let old_news = before.is_none()
            && task.status.is_terminal()
            && lock(&self.seeded_at).is_some_and(|at| task.updated_at <= at);
        let tell = now.worth_telling() && before.as_ref() != Some(&now) && !old_news;
        let was_running = before.as_ref().is_some_and(Seen::running);
        let running = (was_running != now.running()).then(|| {
            let mut n = lock(&self.running);
            *n = if now.running() { *n + 1 } else { n.saturating_sub(1) };
            *n
        });
        Observed { tell, running }
    }

    pub fn running(&self) -> usize {
        *lock(&self.running)
    }

    /// Forgets deleted tasks (finished ones: a running task is cancelled before it is deleted).
    pub fn forget(&self, ids: impl IntoIterator<Item = String>) -> Option<usize> {
        let mut map = lock(&self.tasks);
        let mut changed = false;
        for id in ids {
            if map.remove(&id).is_some_and(|s| s.running()) {
                changed = true;
            }
        }
        changed.then(|| {
            let running = map.values().filter(|s| s.running()).count();
            *lock(&self.running) = running;
            running
        })
    }
}

/// Seeds the watch from the store: the running tasks' summaries, read by SQL (no result is read,
/// whatever the store holds). Call before events are forwarded.
pub fn seed(app: &AppHandle, engine: &Engine) {
    let at = Utc::now();
    let live = TaskQuery { statuses: vec![TaskStatus::Working, TaskStatus::InputRequired], ..TaskQuery::default() };
    match engine.summaries(&live, &PageRequest::default()) {
        Ok(page) => {
            let running = app.state::<Watch>().seed(&page.items, at);
            crate::tray::set_running(app, running);
        }
        Err(e) => tracing::warn!("could not read the tasks to watch: {e}"),
    }
}

/// Called by the event forwarder when tasks were deleted.
pub fn forget(app: &AppHandle, purged: &[Purged]) {
    let ids: Vec<String> = purged.iter().map(|p| p.id.clone()).collect();
    if let Some(running) = app.state::<Watch>().forget(ids.iter().cloned()) {
        crate::tray::set_running(app, running);
    }
    app.state::<Notifier>().tell(Note::Forget(ids));
}

/// Called by the event forwarder for every task change; must never block it.
pub fn on_task(app: &AppHandle, task: &TaskRecord) {
    let watch = app.state::<Watch>();
    let observed = watch.observe(task);
    if let Some(running) = observed.running {
        crate::tray::set_running(app, running);
    }
    if !observed.tell {
        return;
    }
    {
        let state = app.state::<AppState>();
        let ui = lock(&state.ui);
        if ui.notifications_muted {
            return;
        }
        if ui.viewing_task.as_deref() == Some(task.id.as_str()) && watch.window_focused.load(Ordering::Relaxed) {
            return;
        }
    }
    if let Some(alert) = alert_for(task)
        && wanted(&lock(&watch.kinds), alert.kind)
    {
        app.state::<Notifier>().send(alert);
    }
}

/// Whether the user wants notifications of this kind.
fn wanted(kinds: &NotificationSettings, kind: AlertKind) -> bool {
    match kind {
        AlertKind::Done => kinds.finished,
        AlertKind::Failed => kinds.failed,
        AlertKind::NeedsInput => kinds.needs_input,
    }
}

/// Alerts on their way to the worker; a flood beyond this is dropped with a warning, the worker
/// being far faster than any server (it only files them).
const QUEUE: usize = 1024;

/// What the worker is told: a task's news, or that tasks were deleted.
enum Note {
    Alert(Alert),
    Forget(Vec<String>),
}

/// The way to the one notification worker, started with the app.
#[derive(Default)]
pub struct Notifier {
    queue: OnceLock<SyncSender<Note>>,
}

impl Notifier {
    fn send(&self, alert: Alert) {
        self.tell(Note::Alert(alert));
    }

    fn tell(&self, note: Note) {
        let Some(queue) = self.queue.get() else { return };
        match queue.try_send(note) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => tracing::warn!("notifications are arriving faster than they can be filed"),
            Err(TrySendError::Disconnected(_)) => tracing::warn!("the notification worker has stopped"),
        }
    }
}

/// Starts the worker: call once, in setup, before tasks are forwarded.
pub fn start(app: &AppHandle) {
    let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
    let handle = app.clone();
    let spawned = std::thread::Builder::new().name("notifications".into()).spawn(move || worker(handle, rx));
    match spawned {
        Ok(_) => {
            let _ = app.state::<Notifier>().queue.set(tx);
        }
        Err(e) => tracing::warn!("no notification worker, so no notifications: {e}"),
    }
}

fn worker(app: AppHandle, alerts: Receiver<Note>) {
    let mut planner = Planner::default();
    let mut screen = desktop::Desktop::new(app.clone());
    loop {
        let arrived = match planner.next(Instant::now()) {
            Step::Show(notice) => {
                // Paused while it waited: the pause wins.
                if !lock(&app.state::<AppState>().ui).notifications_muted {
                    screen.show(&notice);
                }
                continue;
            }
            Step::WaitUntil(at) => alerts.recv_timeout(at.saturating_duration_since(Instant::now())),
            Step::Idle => alerts.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match arrived {
            Ok(Note::Alert(alert)) => planner.push(alert, Instant::now()),
            Ok(Note::Forget(ids)) => planner.forget(&ids),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Pauses or resumes notifications (the tray's item, the status bar) and keeps the choice in the
/// settings, whose change every window, and the tray, then follows ([`follow_settings`]). When the
/// settings cannot be written (a broken file, which is never written over) the pause still holds
/// for this run, and the error says why it will not last.
pub fn set_muted(app: &AppHandle, muted: bool) -> Result<(), EngineError> {
    show_muted(app, muted);
    let state = app.state::<AppState>();
    let Some(engine) = state.engine() else { return Ok(()) };
    let notifications = NotificationSettings { paused: muted, ..engine.settings()?.notifications };
    engine.update_settings(&SettingsUpdate { notifications: Some(notifications), ..Default::default() })?;
    Ok(())
}

/// Tells everyone who shows the pause, when it changed.
fn show_muted(app: &AppHandle, muted: bool) {
    let changed = {
        let state = app.state::<AppState>();
        let mut ui = lock(&state.ui);
        std::mem::replace(&mut ui.notifications_muted, muted) != muted
    };
    crate::tray::set_muted(app, muted);
    if changed {
        let _ = app.emit(MUTED_EVENT, NotificationsMuted { muted });
    }
}

/// Reads the notification settings at start, before the tray is built and before any task is
/// forwarded. Returns whether notifications are paused. A settings file that cannot be read leaves
/// the defaults (and the file as it was), with a warning in the log.
pub fn load_settings(app: &AppHandle, engine: Option<&Engine>) -> bool {
    let settings = match engine.map(Engine::settings) {
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            tracing::warn!("settings not read, the defaults apply: {e}");
            Settings::default()
        }
        None => Settings::default(),
    };
    *lock(&app.state::<Watch>().kinds) = settings.notifications;
    lock(&app.state::<AppState>().ui).notifications_muted = settings.notifications.paused;
    settings.notifications.paused
}

/// Follows every settings change the engine announces (from a window, the tray, another module's
/// section): the pause and the kinds here, the tray's check mark, and the `settings-changed` event
/// every window listens to. Runs for the life of the app.
pub fn follow_settings(app: AppHandle, engine: Engine) {
    let mut events = engine.subscribe();
    tauri::async_runtime::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let settings = match events.recv().await {
                Ok(EngineEvent::Settings { settings }) => *settings,
                Ok(_) => continue,
                // A change may have been among what was missed: read the file.
                Err(RecvError::Lagged(_)) => match engine.settings() {
                    Ok(s) => s,
                    Err(_) => continue,
                },
                Err(RecvError::Closed) => return,
            };
            *lock(&app.state::<Watch>().kinds) = settings.notifications;
            show_muted(&app, settings.notifications.paused);
            let _ = app.emit(SETTINGS_EVENT, &settings);
        }
    });
}

/// What a task's state says to the user, cut to size and plain (see [`text`]); `None` when it says
/// nothing worth a notification.
pub fn alert_for(task: &TaskRecord) -> Option<Alert> {
    if taskdeck_engine::signin::waits_for_sign_in(task) {
        return Some(sign_in_alert(task));
    }
    let (kind, what, body) = match task.status {
        TaskStatus::Completed => {
            (AlertKind::Done, "Done", task.status_message.clone().unwrap_or_else(|| "Finished".into()))
        }
        TaskStatus::Failed => (
            AlertKind::Failed,
            "Failed",
            task.status_message
                .clone()
                .or_else(|| task.error.as_ref().map(|e| e.message.clone()))
                .unwrap_or_else(|| "Failed".into()),
        ),
        TaskStatus::InputRequired => {
            let message = task.question.as_ref()?.message.clone();
            (
                AlertKind::NeedsInput,
                "Needs your input",
                message.unwrap_or_else(|| "The task has a question for you".into()),
            )
        }
        TaskStatus::Working | TaskStatus::Cancelled => return None,
    };
    let name = |s: &str| text::plain(s, text::NAME_CHARS, false);
    let summary = format!("{} on {}: {what}", name(&task.tool), name(&task.server));
    Some(Alert {
        task_id: task.id.clone(),
        kind,
        summary: text::plain(&summary, text::SUMMARY_CHARS, false),
        body: text::plain(&body, text::BODY_CHARS, true),
    })
}

/// A task that waits for its server's sign-in: the user acts in the app (or with `login`).
fn sign_in_alert(task: &TaskRecord) -> Alert {
    let name = |s: &str| text::plain(s, text::NAME_CHARS, false);
    let summary = format!("{} on {}: Sign-in needed", name(&task.tool), name(&task.server));
    Alert {
        task_id: task.id.clone(),
        kind: AlertKind::NeedsInput,
        summary: text::plain(&summary, text::SUMMARY_CHARS, false),
        body: format!("Sign in to {} to let it go on.", name(&task.server)),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(id: &str, status: &str, question: Option<&str>) -> TaskRecord {
        let question = question.map(|key| json!({"key": key, "request": {"method": "elicitation/create", "params": {"message": format!("Which one ({key})?")}}}));
        crate::testing::record(json!({"id": id, "status": status, "status_message": "Done", "question": question}))
    }

    #[test]
    fn only_the_kinds_chosen_in_the_settings_are_shown() {
        let all = NotificationSettings::default();
        assert!(
            wanted(&all, AlertKind::Done) && wanted(&all, AlertKind::Failed) && wanted(&all, AlertKind::NeedsInput)
        );
        let questions_only = NotificationSettings { finished: false, failed: false, ..Default::default() };
        assert!(!wanted(&questions_only, AlertKind::Done));
        assert!(!wanted(&questions_only, AlertKind::Failed));
        assert!(wanted(&questions_only, AlertKind::NeedsInput));
    }

    #[test]
    fn tells_once_per_transition_and_never_about_the_initial_load() {
        let w = Watch::default();
        let busy = crate::bridge::summary_of(&task("busy", "working", None), false);
        let at: DateTime<Utc> = "2026-11-30T10:00:00.000Z".parse().unwrap();
        assert_eq!(w.seed(&[busy], at), 1);
        let tells = |t: TaskRecord| w.observe(&t).tell;
        assert!(!tells(task("old", "completed", None)), "already done at startup");
        assert!(!tells(task("busy", "working", None)));
        let mut later = task("busy", "completed", None);
        later.updated_at = at + chrono::Duration::seconds(5);
        assert!(tells(later.clone()));
        assert!(!tells(later.clone()), "the same transition twice");
        later.id = "new".into();
        later.status = TaskStatus::Failed;
        assert!(tells(later), "a task first seen live, already failed");
    }

    #[test]
    fn a_question_seeded_from_its_summary_is_not_news_again() {
        let w = Watch::default();
        let asking = task("t", "input_required", Some("q1"));
        w.seed(&[crate::bridge::summary_of(&asking, false)], "2026-11-30T10:00:00.000Z".parse().unwrap());
        assert!(!w.observe(&asking).tell, "the same question as at start-up");
        assert!(w.observe(&task("t", "input_required", Some("q2"))).tell);
    }

    #[test]
    fn a_deleted_task_is_forgotten_and_the_running_count_follows() {
        let w = Watch::default();
        w.observe(&task("a", "working", None));
        w.observe(&task("b", "completed", None));
        assert_eq!(w.forget(["b".to_owned()]), None, "a finished task was not counted");
        assert_eq!(w.forget(["a".to_owned()]), Some(0));
        assert_eq!(w.running(), 0);
    }

    #[test]
    fn a_question_counts_once_it_is_known_and_each_new_question_counts_again() {
        let w = Watch::default();
        let tells = |t: TaskRecord| w.observe(&t).tell;
        assert!(!tells(task("t", "working", None)));
        assert!(!tells(task("t", "input_required", None)), "legacy: status before the question");
        assert!(tells(task("t", "input_required", Some("q1"))));
        assert!(!tells(task("t", "input_required", Some("q1"))), "progress while waiting");
        assert!(!tells(task("t", "working", None)));
        assert!(tells(task("t", "input_required", Some("q2"))));
    }

    #[test]
    fn counts_running_tasks_and_reports_only_changes() {
        let w = Watch::default();
        assert_eq!(w.observe(&task("a", "working", None)).running, Some(1));
        assert_eq!(w.observe(&task("b", "working", None)).running, Some(2));
        assert_eq!(w.observe(&task("a", "input_required", Some("q"))).running, None);
        assert_eq!(w.observe(&task("a", "cancelled", None)).running, Some(1));
        assert_eq!(w.observe(&task("b", "completed", None)).running, Some(0));
        assert_eq!(w.running(), 0);
    }

    #[test]
    fn alert_text() {
        let done = alert_for(&task("a", "completed", None)).unwrap();
        assert_eq!((done.summary.as_str(), done.body.as_str()), ("generate_report on demo: Done", "Done"));
        assert_eq!((done.kind, done.task_id.as_str()), (AlertKind::Done, "a"));
        let ask = alert_for(&task("a", "input_required", Some("k"))).unwrap();
        assert_eq!(ask.summary, "generate_report on demo: Needs your input");
        assert_eq!(ask.body, "Which one (k)?");
        let mut failed = task("a", "failed", None);
        failed.status_message = None;
        failed.error = serde_json::from_value(json!({"code": null, "message": "boom", "reason": null})).unwrap();
        let failed = alert_for(&failed).unwrap();
        assert_eq!((failed.summary.as_str(), failed.body.as_str()), ("generate_report on demo: Failed", "boom"));
        assert_eq!(alert_for(&task("a", "working", None)), None);
    }

    #[test]
    fn a_task_that_waits_for_a_sign_in_is_told_once_as_sign_in_needed() {
        let w = Watch::default();
        let mut t = task("t", "working", None);
        t.status_message = Some("Working…".into());
        assert!(!w.observe(&t).tell);
        t.status_message = Some("Sign-in needed: run `taskdeck-cli login demo` (or sign in from the app)".into());
        assert!(w.observe(&t).tell, "the user has to act");
        assert!(!w.observe(&t).tell, "told once");
        let alert = alert_for(&t).unwrap();
        assert_eq!(alert.summary, "generate_report on demo: Sign-in needed");
        assert_eq!(alert.body, "Sign in to demo to let it go on.");
        assert_eq!(alert.kind, AlertKind::NeedsInput);
        t.status = TaskStatus::Completed;
        assert_eq!(alert_for(&t).unwrap().summary, "generate_report on demo: Done", "an ended task is not waiting");
    }

    #[test]
    fn a_servers_text_reaches_the_notification_cut_and_plain() {
        let mut t = task("a", "completed", None);
        t.tool = format!("\u{1b}[2J{}", "t".repeat(500));
        t.server = "evil\u{202E}revres".into();
        t.status_message = Some(format!("<b>{}</b>", "m".repeat(15 << 20)));
        let alert = alert_for(&t).unwrap();
        assert!(alert.summary.chars().count() <= text::SUMMARY_CHARS, "{}", alert.summary);
        assert!(alert.summary.ends_with("… on evilrevres: Done"), "{}", alert.summary);
        assert!(!alert.summary.contains('\u{1b}'));
        assert_eq!(alert.body.chars().count(), text::BODY_CHARS);
        assert!(alert.body.starts_with("<b>mmm"), "escaping is the backend's, for a server that reads markup");
    }
}
