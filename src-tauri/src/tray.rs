//! The tray icon: where the app lives while its window is hidden, and how many tasks still run.

use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};

const SHOW: &str = "show";
const MUTE: &str = "mute";
const QUIT: &str = "quit";

pub struct Tray {
    icon: TrayIcon<Wry>,
    /// Linux trays show no tooltip, so the count is also the first (disabled) menu line.
    summary: MenuItem<Wry>,
    mute: CheckMenuItem<Wry>,
}

pub fn build(app: &AppHandle, muted: bool) -> tauri::Result<()> {
    let summary = MenuItem::with_id(app, "running", running_text(0), false, None::<&str>)?;
    let show = MenuItem::with_id(app, SHOW, "Show Taskdeck", true, None::<&str>)?;
    let mute = CheckMenuItem::with_id(app, MUTE, "Pause notifications", true, muted, None::<&str>)?;
    let quit = MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?;
    let separator = || PredefinedMenuItem::separator(app);
    let menu = Menu::with_items(app, &[&summary, &separator()?, &show, &mute, &separator()?, &quit])?;
    let icon = TrayIconBuilder::with_id("main")
        .icon(tauri::include_image!("../icons/32x32.png"))
        .tooltip(tooltip(0))
        .menu(&menu)
        .on_menu_event(|app, event| match event.id.as_ref() {
            SHOW => crate::focus_main(app),
            MUTE => {
                // The menu toggles the check mark itself; the setting follows what it shows.
                if let Some(tray) = app.try_state::<Tray>() {
                    let muted = tray.mute.is_checked().unwrap_or(false);
                    if let Err(e) = crate::notify::set_muted(app, muted) {
                        tracing::warn!("the pause holds until Taskdeck quits: {e}");
                    }
                }
            }
            QUIT => crate::window::request_quit(app),
            _ => {}
        })
        .build(app)?;
    app.manage(Tray { icon, summary, mute });
    Ok(())
}

/// Updates the count. Posted to the main thread rather than done here: tray calls from another
/// thread wait for the main thread, and the caller is the engine's event forwarder.
pub fn set_running(app: &AppHandle, running: usize) {
    let handle = app.clone();
    let _ = app.run_on_main_thread(move || {
        let Some(tray) = handle.try_state::<Tray>() else { return };
        let _ = tray.icon.set_tooltip(Some(tooltip(running)));
        // The panel label beside the icon, where the platform has one (appindicator does).
        let _ = tray.icon.set_title((running > 0).then(|| running.to_string()));
        let _ = tray.summary.set_text(running_text(running));
    });
}

pub fn set_muted(app: &AppHandle, muted: bool) {
    let handle = app.clone();
    let _ = app.run_on_main_thread(move || {
        if let Some(tray) = handle.try_state::<Tray>()
            && tray.mute.is_checked().ok() != Some(muted)
        {
            let _ = tray.mute.set_checked(muted);
        }
    });
}

pub fn exists(app: &AppHandle) -> bool {
    app.try_state::<Tray>().is_some()
}

fn tooltip(running: usize) -> String {
    format!("Taskdeck: {}", running_text(running).to_lowercase())
}

fn running_text(running: usize) -> String {
    match running {
        0 => "Nothing running".into(),
        1 => "1 task running".into(),
        n => format!("{n} tasks running"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_text_counts() {
        assert_eq!(tooltip(0), "Taskdeck: nothing running");
        assert_eq!(running_text(1), "1 task running");
        assert_eq!(running_text(3), "3 tasks running");
    }
}
