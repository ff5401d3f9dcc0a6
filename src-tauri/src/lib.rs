//! The desktop shell. It owns windows, IPC and OS integration only; task logic lives in the engine crates.

pub mod bridge;
mod cli;
pub mod commands;
pub mod history;
pub mod links;
pub mod navigation;
pub mod notify;
mod os;
pub mod registry;
pub mod rendering;
#[cfg(test)]
mod testing;
mod theme;
pub mod tray;
pub mod window;

use taskdeck_engine::SettingsFile;
use tauri::Manager;

pub use cli::{Cli, Paths, PathsError};

/// The longest the first retention pass waits for the first paint (a webview that never paints).
const RETENTION_AFTER_START: std::time::Duration = std::time::Duration::from_secs(10);

/// The label of the one window declared in `tauri.conf.json`.
pub const MAIN_WINDOW: &str = "main";

pub fn run(paths: Paths) -> tauri::Result<()> {
    let log_guard = start_logging(&paths);
    let instance_id = single_instance_id(&paths);
    let window_state = window::state_plugin(&paths.data_dir);
    // The store is opened while GTK, the plugins and the webview start, and read for the first
    // page while its check runs; pending tasks are resumed once it passed, and every batch from
    // then on reaches the page.
    let (mut state, opener) = bridge::AppState::opening(paths.clone());
    state.log_guard = std::sync::Mutex::new(log_guard);
    tauri::Builder::default()
        // Registered first so a second launch exits before it builds anything of its own.
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(instance_id)
                .callback(|app, _argv, _cwd| focus_main(app))
                .build(),
        )
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_dialog::init())
        .plugin(window_state)
        .manage(state)
        .manage(notify::Watch::default())
        .manage(notify::Notifier::default())
        .manage(window::Lifecycle::default())
        .on_window_event(window::on_window_event)
        .invoke_handler(registry::handler())
        .setup(move |app| {
            let handle = app.handle().clone();
            let hooked = handle.clone();
            opener.start(move |started| hook_up(&hooked, started));
            window::build_main(&handle, &paths)?;
            // A desktop without a tray still gets the window; closing it then asks to quit instead.
            // The pause is read from the file: the engine may still be opening.
            let paused = SettingsFile::in_dir(&paths.data_dir).read().is_ok_and(|s| s.notifications.paused);
            if let Err(e) = tray::build(&handle, paused) {
                tracing::warn!("no tray icon: {e}");
            }
            notify::start(&handle);
            Ok(())
        })
        .build(tauri::generate_context!())?
        .run(window::on_run_event);
    Ok(())
}

/// The daily log file in the log folder (see `Paths::log_dir`), with the lines that say which build
/// runs on which files: the first thing to read in a log a user sends. Without a writable folder the
/// app still runs, and says so on stderr.
fn start_logging(paths: &Paths) -> Option<taskdeck_engine::logs::WorkerGuard> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let log_dir = paths.log_dir();
    let (layer, guard) = match taskdeck_engine::logs::daily_file(&log_dir, "taskdeck") {
        Ok(file) => file,
        Err(e) => {
            eprintln!("taskdeck: no log file in {}: {e}", log_dir.display());
            return None;
        }
    };
    if tracing_subscriber::registry().with(layer).try_init().is_err() {
        return None;
    }
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        os = std::env::consts::OS,
        data_dir = %paths.data_dir.display(),
        config = %paths.config.display(),
        log_dir = %log_dir.display(),
        "taskdeck starting"
    );
    Some(guard)
}

/// What follows the engine for the life of the app, set up on the thread that opened it, before
/// any command but the reads can reach it (see `AppState::opening`): nothing here may wait for a
/// command.
fn hook_up(app: &tauri::AppHandle, started: Option<bridge::Started<'_>>) {
    notify::load_settings(app, started.as_ref().map(|s| s.engine));
    let Some(bridge::Started { engine, events }) = started else { return };
    notify::seed(app, engine);
    notify::follow_settings(app.clone(), engine.clone());
    // After the first paint, not beside it: a pass holds the store for its length (a second or
    // more over a big one; what it removes leaves the list as it goes), and the first page would
    // wait behind it. Then daily and on a change.
    let keeper = engine.clone();
    tauri::async_runtime::spawn(async move {
        commands::first_paint(RETENTION_AFTER_START).await;
        keeper.keep_history_within_policy().await
    });
    bridge::watch_config(app.clone(), engine.clone());
    let handle = app.clone();
    bridge::forward_events(app.clone(), engine.clone(), events, move |task| notify::on_task(&handle, task));
}

pub(crate) fn focus_main(app: &tauri::AppHandle) {
    if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
        // Each step is best effort: a window manager may refuse focus, and there is nothing to report to.
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// One instance per data directory, not per user: two instances on one store would fight over it, while
/// instances on different stores (tests, a second profile) are independent and may run side by side.
fn single_instance_id(paths: &Paths) -> String {
    format!("dev.taskdeck.Taskdeck.store_{:016x}", fnv1a(paths.data_dir.as_os_str().as_encoded_bytes()))
}

// A hash that stays the same across Rust releases, so two builds agree on the same D-Bus name.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(data_dir: &str) -> Paths {
        Paths { config: "/c/servers.json".into(), data_dir: data_dir.into() }
    }

    #[test]
    fn instances_on_the_same_store_share_an_id() {
        assert_eq!(single_instance_id(&paths("/a")), single_instance_id(&paths("/a")));
        assert_ne!(single_instance_id(&paths("/a")), single_instance_id(&paths("/b")));
    }

    #[test]
    fn instance_id_is_a_valid_dbus_name() {
        let id = single_instance_id(&paths("/tmp/some dir/ünï"));
        // D-Bus: elements of [A-Za-z0-9_], none starting with a digit, at most 255 bytes in all.
        assert!(id.len() < 200);
        for element in id.split('.') {
            assert!(!element.is_empty() && !element.starts_with(|c: char| c.is_ascii_digit()), "{id}");
            assert!(element.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{id}");
        }
    }
}
