//! The window's life: closing hides to the tray while tasks run, quitting asks first and stops the
//! engine cleanly, and the window's size and place are remembered.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use tauri::{AppHandle, Manager, RunEvent, Window, WindowEvent};
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
use tauri_plugin_window_state::StateFlags;

use crate::bridge::AppState;
use crate::notify::Watch;

#[derive(Default)]
pub struct Lifecycle {
    /// The quit question is on screen: a second Quit must not stack another one.
    asking: AtomicBool,
    /// Shutdown has started; further quit requests wait for it.
    exiting: AtomicBool,
    /// The engine has stopped: the next exit request may proceed.
    stopped: AtomicBool,
}

/// Window geometry, kept beside the task store: every data directory (each test, each profile) is
/// its own instance, and instances must not share or fight over one file. Visibility is left out, so
/// quitting from the tray while hidden does not start the next launch hidden.
pub fn state_plugin(data_dir: &Path) -> tauri::plugin::TauriPlugin<tauri::Wry> {
    tauri_plugin_window_state::Builder::new()
        // The plugin joins this to the config dir; an absolute path replaces it.
        .with_filename(data_dir.join("window-state.json").display().to_string())
        .with_state_flags(StateFlags::SIZE | StateFlags::POSITION | StateFlags::MAXIMIZED)
        .build()
}

/// Builds the main window from its entry in `tauri.conf.json` (marked `create: false`, so that it
/// is built here, with the navigation guard: a config window cannot be given one).
pub fn build_main(app: &AppHandle, paths: &taskdeck_engine::config::Paths) -> tauri::Result<()> {
    let Some(config) = app.config().app.windows.iter().find(|w| w.label == crate::MAIN_WINDOW).cloned() else {
        tracing::error!("tauri.conf.json declares no {:?} window", crate::MAIN_WINDOW);
        return Ok(());
    };
    tauri::WebviewWindowBuilder::from_config(app, &config)?
        .initialization_script(crate::theme::start_script(paths))
        .on_navigation(crate::navigation::allow_navigation)
        .on_new_window(|url, _features| crate::navigation::refuse_new_window(url))
        .build()?;
    Ok(())
}

pub fn on_window_event(window: &Window, event: &WindowEvent) {
    if window.label() != crate::MAIN_WINDOW {
        return;
    }
    let app = window.app_handle();
    match event {
        WindowEvent::Focused(focused) => app.state::<Watch>().window_focused.store(*focused, Ordering::Relaxed),
        WindowEvent::CloseRequested { api, .. } => {
            if app.state::<Watch>().running() == 0 || app.state::<Lifecycle>().exiting.load(Ordering::Relaxed) {
                return; // the last window goes, and with it the app (see `on_run_event`)
            }
            api.prevent_close();
            if crate::tray::exists(app) {
                let _ = window.hide();
            } else {
                // Without a tray a hidden window could not be found again.
                request_quit(app);
            }
        }
        _ => {}
    }
}

/// Quits, asking first while tasks run.
pub fn request_quit(app: &AppHandle) {
    let running = app.state::<Watch>().running();
    if running == 0 {
        return begin_exit(app);
    }
    let lifecycle = app.state::<Lifecycle>();
    if lifecycle.asking.swap(true, Ordering::SeqCst) {
        return;
    }
    let handle = app.clone();
    app.dialog()
        .message(quit_question(running))
        .title("Quit Taskdeck?")
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom("Quit".into(), "Keep running".into()))
        .show(move |quit| {
            handle.state::<Lifecycle>().asking.store(false, Ordering::SeqCst);
            if quit {
                begin_exit(&handle);
            }
        });
}

/// Every way out passes here: the last window closed, Quit, or `AppHandle::exit` from anywhere.
pub fn on_run_event(app: &AppHandle, event: RunEvent) {
    if let RunEvent::ExitRequested { api, .. } = event
        && !app.state::<Lifecycle>().stopped.load(Ordering::SeqCst)
    {
        api.prevent_exit();
        begin_exit(app);
    }
}

/// Stops the engine (tasks stay in the store, to resume on the next launch), then exits.
fn begin_exit(app: &AppHandle) {
    if app.state::<Lifecycle>().exiting.swap(true, Ordering::SeqCst) {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if let Some(engine) = app.state::<AppState>().engine() {
            engine.shutdown().await;
        }
        app.state::<Lifecycle>().stopped.store(true, Ordering::SeqCst);
        tracing::info!("taskdeck exits");
        let guard = app.state::<AppState>().log_guard.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(guard);
        app.exit(0);
    });
}

fn quit_question(running: usize) -> String {
    let tasks = if running == 1 { "1 task is".to_owned() } else { format!("{running} tasks are") };
    format!("{tasks} still running. Quit anyway? They resume next time.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_counts_tasks() {
        assert_eq!(quit_question(1), "1 task is still running. Quit anyway? They resume next time.");
        assert_eq!(quit_question(3), "3 tasks are still running. Quit anyway? They resume next time.");
    }
}
