//! Putting a [`Notice`] on screen and hearing its click, per desktop.

use tauri::{AppHandle, Emitter};

use super::planner::Notice;
use super::{FOCUS_TASK_EVENT, FocusTask};

/// What a click on a notice does: the window comes forward, with the notice's task selected.
fn clicked(app: &AppHandle, task_id: Option<&str>) {
    crate::focus_main(app);
    if let Some(id) = task_id {
        let _ = app.emit(FOCUS_TASK_EVENT, FocusTask { id: id.to_owned() });
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
pub use freedesktop::Desktop;

/// Linux and the BSDs: the freedesktop notification server, over one session-bus connection kept
/// for the app's life, and one thread that hears every click on it.
#[cfg(all(unix, not(target_os = "macos")))]
mod freedesktop {
    use std::collections::{HashMap, VecDeque};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use tauri::AppHandle;
    use zbus::blocking::{Connection, MessageIterator};
    use zbus::zvariant::Value;

    use super::super::text::escape_markup;
    use super::Notice;

    const NAME: &str = "org.freedesktop.Notifications";
    const PATH: &str = "/org/freedesktop/Notifications";
    /// Notifications whose click still means something; older ones only bring the window forward.
    const TARGETS: usize = 64;
    /// A session without a notification server is asked again after this long, not per notice.
    const RETRY: Duration = Duration::from_secs(30);

    type Targets = Arc<Mutex<VecDeque<(u32, Option<String>)>>>;

    struct Bus {
        conn: Connection,
        markup: bool,
        actions: bool,
        targets: Targets,
        /// Cleared by the click thread when the connection is gone.
        alive: Arc<AtomicBool>,
    }

    pub struct Desktop {
        app: AppHandle,
        bus: Option<Bus>,
        retry_at: Option<Instant>,
    }

    impl Desktop {
        pub fn new(app: AppHandle) -> Desktop {
            Desktop { app, bus: None, retry_at: None }
        }

        pub fn show(&mut self, notice: &Notice) {
            if self.bus.as_ref().is_some_and(|b| !b.alive.load(Ordering::Relaxed)) {
                self.bus = None;
            }
            if self.bus.is_none() {
                if self.retry_at.is_some_and(|at| Instant::now() < at) {
                    return tracing::debug!("no notification server; a notice is not shown");
                }
                match Bus::connect(&self.app) {
                    Ok(bus) => self.bus = Some(bus),
                    Err(e) => {
                        self.retry_at = Some(Instant::now() + RETRY);
                        return tracing::warn!("could not reach the notification server: {e}");
                    }
                }
            }
            if let Some(bus) = &self.bus
                && let Err(e) = bus.notify(notice)
            {
                tracing::warn!("could not show a notification: {e}");
                self.bus = None;
            }
        }
    }

    impl Bus {
        fn connect(app: &AppHandle) -> zbus::Result<Bus> {
            let conn = Connection::session()?;
            let caps: Vec<String> =
                conn.call_method(Some(NAME), PATH, Some(NAME), "GetCapabilities", &())?.body().deserialize()?;
            let has = |c: &str| caps.iter().any(|x| x == c);
            let bus = Bus {
                markup: has("body-markup"),
                actions: has("actions"),
                targets: Arc::default(),
                alive: Arc::new(AtomicBool::new(true)),
                conn,
            };
            bus.hear_clicks(app)?;
            Ok(bus)
        }

        fn notify(&self, notice: &Notice) -> zbus::Result<()> {
            let body = if self.markup { escape_markup(&notice.body) } else { notice.body.clone() };
            let actions: Vec<&str> = if self.actions { vec!["default", "Show"] } else { vec![] };
            let hints: HashMap<&str, Value<'_>> = HashMap::new();
            let reply = self.conn.call_method(
                Some(NAME),
                PATH,
                Some(NAME),
                "Notify",
                &("Taskdeck", 0u32, "taskdeck", notice.summary.as_str(), body.as_str(), actions, hints, -1i32),
            )?;
            let id: u32 = reply.body().deserialize()?;
            let mut targets = super::super::lock(&self.targets);
            if targets.len() == TARGETS {
                targets.pop_front();
            }
            targets.push_back((id, notice.task_id.clone()));
            Ok(())
        }

        /// One thread for the connection's life: a click names the notification by its id.
        fn hear_clicks(&self, app: &AppHandle) -> zbus::Result<()> {
            let rule =
                zbus::MatchRule::builder().msg_type(zbus::message::Type::Signal).interface(NAME)?.path(PATH)?.build();
            let messages = MessageIterator::for_match_rule(rule, &self.conn, Some(64))?;
            let (app, targets, alive) = (app.clone(), self.targets.clone(), self.alive.clone());
            let spawned = std::thread::Builder::new().name("notification-clicks".into()).spawn(move || {
                for message in messages {
                    let Ok(message) = message else { continue };
                    let header = message.header();
                    let Some(member) = header.member() else { continue };
                    match member.as_str() {
                        "ActionInvoked" => {
                            let Ok((id, action)) = message.body().deserialize::<(u32, String)>() else { continue };
                            if action != "default" {
                                continue;
                            }
                            let task =
                                super::super::lock(&targets).iter().find(|(n, _)| *n == id).map(|(_, t)| t.clone());
                            if let Some(task) = task {
                                super::clicked(&app, task.as_deref());
                            }
                        }
                        "NotificationClosed" => {
                            if let Ok((id, _reason)) = message.body().deserialize::<(u32, u32)>() {
                                super::super::lock(&targets).retain(|(n, _)| *n != id);
                            }
                        }
                        _ => {}
                    }
                }
                alive.store(false, Ordering::Relaxed);
            });
            spawned.map(drop).map_err(|e| zbus::Error::Failure(format!("no thread for notification clicks: {e}")))
        }
    }
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
pub use toast::Desktop;

/// Windows toasts and macOS notifications: plain text, buttons always there, no server to ask.
/// Showing one and waiting for its click both block, so each notice has a thread; the planner's
/// cap bounds how many exist at once.
#[cfg(not(all(unix, not(target_os = "macos"))))]
mod toast {
    use tauri::AppHandle;

    use super::Notice;

    pub struct Desktop {
        app: AppHandle,
    }

    impl Desktop {
        pub fn new(app: AppHandle) -> Desktop {
            Desktop { app }
        }

        pub fn show(&mut self, notice: &Notice) {
            let (app, notice) = (self.app.clone(), notice.clone());
            let spawned = std::thread::Builder::new().name("notification".into()).spawn(move || {
                let mut n = notify_rust::Notification::new();
                n.appname("Taskdeck").summary(&notice.summary).body(&notice.body).icon("taskdeck");
                n.action("default", "Show");
                let handle = match n.show() {
                    Ok(h) => h,
                    Err(e) => return tracing::warn!("could not show a notification: {e}"),
                };
                // Windows reports the button by its identifier, macOS by its label or `default` for a
                // click on the body; either way anything but a dismissal means "show me".
                handle.wait_for_action(|action| {
                    if action != "__closed" {
                        super::clicked(&app, notice.task_id.as_deref());
                    }
                });
            });
            if let Err(e) = spawned {
                tracing::warn!("could not start a notification thread: {e}");
            }
        }
    }
}
