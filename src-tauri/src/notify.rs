//! Desktop notifications for the moments a task needs the user: it finished, it failed, or it asks a
//! question. Also keeps the count of running tasks the tray shows and the window's quit logic asks.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use taskdeck_engine::{Engine, ListFilter, TaskRecord};
use taskdeck_protocol::TaskStatus;
use tauri::{AppHandle, Emitter, Manager};

use crate::bridge::AppState;

/// Emitted when a notification is clicked: the webview selects the task.
pub const FOCUS_TASK_EVENT: &str = "focus-task";
/// Emitted whenever notifications are paused or resumed, from the tray or from the webview itself.
pub const MUTED_EVENT: &str = "notifications-muted";

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
    question: Option<taskdeck_protocol::question::QuestionKey>,
}

impl Seen {
    fn of(task: &TaskRecord) -> Seen {
        Seen { status: task.status, question: task.question.as_ref().map(|q| q.key.clone()) }
    }

    fn running(&self) -> bool {
        matches!(self.status, TaskStatus::Working | TaskStatus::InputRequired)
    }

    fn worth_telling(&self) -> bool {
        match self.status {
            TaskStatus::Completed | TaskStatus::Failed => true,
            TaskStatus::InputRequired => self.question.is_some(),
            TaskStatus::Working | TaskStatus::Cancelled => false,
        }
    }
}

/// The shell's own view of every task's last state, fed by the engine's events.
#[derive(Default)]
pub struct Watch {
    tasks: Mutex<HashMap<String, Seen>>,
    running: Mutex<usize>,
    /// Kept from window events: asking the window would wait on the main thread.
    pub window_focused: AtomicBool,
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
    /// Remembers the tasks as they are at startup: finishing or asking before the window opened is
    /// what the task list shows, not news to announce.
    pub fn seed(&self, tasks: &[TaskRecord]) -> usize {
        let mut map = lock(&self.tasks);
        for t in tasks {
            map.entry(t.id.clone()).or_insert_with(|| Seen::of(t));
        }
        let running = map.values().filter(|s| s.running()).count();
        *lock(&self.running) = running;
        running
    }

    pub fn observe(&self, task: &TaskRecord) -> Observed {
        let now = Seen::of(task);
        let before = lock(&self.tasks).insert(task.id.clone(), now.clone());
        let tell = now.worth_telling() && before.as_ref() != Some(&now);
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
}

/// Seeds the watch from the store. Call before events are forwarded.
pub fn seed(app: &AppHandle, engine: &Engine) {
    match engine.list(&ListFilter::default()) {
        Ok(tasks) => {
            let running = app.state::<Watch>().seed(&tasks);
            crate::tray::set_running(app, running);
        }
        Err(e) => tracing::warn!("could not read the tasks to watch: {e}"),
    }
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
    if let Some(alert) = Alert::for_task(task) {
        deliver(app.clone(), alert);
    }
}

/// Pauses or resumes notifications and tells everyone who shows that choice.
pub fn set_muted(app: &AppHandle, muted: bool) {
    lock(&app.state::<AppState>().ui).notifications_muted = muted;
    crate::tray::set_muted(app, muted);
    let _ = app.emit(MUTED_EVENT, NotificationsMuted { muted });
}

#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub task_id: String,
    pub summary: String,
    pub body: String,
}

impl Alert {
    pub fn for_task(task: &TaskRecord) -> Option<Alert> {
        let (what, body) = match task.status {
            TaskStatus::Completed => ("Done", task.status_message.clone().unwrap_or_else(|| "Finished".into())),
            TaskStatus::Failed => (
                "Failed",
                task.status_message
                    .clone()
                    .or_else(|| task.error.as_ref().map(|e| e.message.clone()))
                    .unwrap_or_else(|| "Failed".into()),
            ),
            TaskStatus::InputRequired => {
                let question = task.question.as_ref()?;
                let message = question.message.clone();
                ("Needs your input", message.unwrap_or_else(|| "The task has a question for you".into()))
            }
            TaskStatus::Working | TaskStatus::Cancelled => return None,
        };
        Some(Alert { task_id: task.id.clone(), summary: format!("{} on {}: {what}", task.tool, task.server), body })
    }
}

/// Shows the notification and waits for a click on a thread of its own: both calls block (on
/// D-Bus, or on the system's notification centre), and waiting for the click lasts as long as the
/// notification stays on screen.
fn deliver(app: AppHandle, alert: Alert) {
    let spawned = std::thread::Builder::new().name("notification".into()).spawn(move || {
        let mut n = notify_rust::Notification::new();
        n.appname("Taskdeck").summary(&alert.summary).body(&platform::body(&alert.body)).icon("taskdeck");
        let clickable = platform::clickable();
        if clickable {
            n.action("default", "Show");
        }
        let handle = match n.show() {
            Ok(h) => h,
            Err(e) => return tracing::warn!("could not show a notification: {e}"),
        };
        if clickable {
            handle.wait_for_action(|action| {
                if platform::is_show(action) {
                    crate::focus_main(&app);
                    let _ = app.emit(FOCUS_TASK_EVENT, FocusTask { id: alert.task_id.clone() });
                }
            });
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("could not start a notification thread: {e}");
    }
}

/// Linux and the BSDs: a freedesktop notification server, which says what it can do.
#[cfg(all(unix, not(target_os = "macos")))]
mod platform {
    use std::sync::OnceLock;

    /// Asked once: the notification server rarely changes while the app runs, and asking costs a
    /// round trip.
    fn has(capability: &str) -> bool {
        static CAPS: OnceLock<Vec<String>> = OnceLock::new();
        CAPS.get_or_init(|| notify_rust::get_capabilities().unwrap_or_default()).iter().any(|c| c == capability)
    }

    /// Servers with body-markup read the body as markup; task text is plain and may contain `<`.
    pub fn body(text: &str) -> String {
        if has("body-markup") { escape_markup(text) } else { text.to_owned() }
    }

    pub fn clickable() -> bool {
        has("actions")
    }

    /// A click on the notification itself is the `default` action.
    pub fn is_show(action: &str) -> bool {
        action == "default"
    }

    pub fn escape_markup(text: &str) -> String {
        text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
    }
}

/// Windows toasts and macOS notifications: plain text, buttons always there, no server to ask.
#[cfg(not(all(unix, not(target_os = "macos"))))]
mod platform {
    pub fn body(text: &str) -> String {
        text.to_owned()
    }

    pub fn clickable() -> bool {
        true
    }

    /// Windows reports the button by its identifier, macOS by its label or `default` for a click
    /// on the body; either way anything but a dismissal means "show me".
    pub fn is_show(action: &str) -> bool {
        action != "__closed"
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
    fn tells_once_per_transition_and_never_about_the_initial_load() {
        let w = Watch::default();
        assert_eq!(w.seed(&[task("old", "completed", None), task("busy", "working", None)]), 1);
        let tells = |t: TaskRecord| w.observe(&t).tell;
        assert!(!tells(task("old", "completed", None)), "already done at startup");
        assert!(!tells(task("busy", "working", None)));
        assert!(tells(task("busy", "completed", None)));
        assert!(!tells(task("busy", "completed", None)), "the same transition twice");
        assert!(tells(task("new", "failed", None)), "a task first seen live, already failed");
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
        let done = Alert::for_task(&task("a", "completed", None)).unwrap();
        assert_eq!((done.summary.as_str(), done.body.as_str()), ("generate_report on demo: Done", "Done"));
        let ask = Alert::for_task(&task("a", "input_required", Some("k"))).unwrap();
        assert_eq!(ask.summary, "generate_report on demo: Needs your input");
        assert_eq!(ask.body, "Which one (k)?");
        let mut failed = task("a", "failed", None);
        failed.status_message = None;
        failed.error = serde_json::from_value(json!({"code": null, "message": "boom", "reason": null})).unwrap();
        let failed = Alert::for_task(&failed).unwrap();
        assert_eq!((failed.summary.as_str(), failed.body.as_str()), ("generate_report on demo: Failed", "boom"));
        assert_eq!(Alert::for_task(&task("a", "working", None)), None);
    }

    #[test]
    #[cfg(all(unix, not(target_os = "macos")))]
    fn markup_is_escaped() {
        assert_eq!(platform::escape_markup("a <b> & c"), "a &lt;b&gt; &amp; c");
    }
}
