//! Handing things to the desktop: the browser for links, the editor for the config file.

use std::path::Path;

use taskdeck_engine::ErrorCode;
use tauri_plugin_opener::OpenerExt;

use crate::commands::CommandError;

pub fn open_url(app: &tauri::AppHandle, url: &str) -> Result<(), CommandError> {
    app.opener()
        .open_url(url, None::<&str>)
        .map_err(|e| CommandError::new(ErrorCode::OpenFailed, format!("could not open {url}: {e}")))
}

pub fn open_path(app: &tauri::AppHandle, path: &Path) -> Result<(), CommandError> {
    app.opener()
        .open_path(path.display().to_string(), None::<&str>)
        .map_err(|e| CommandError::new(ErrorCode::OpenFailed, format!("could not open {}: {e}", path.display())))
}
