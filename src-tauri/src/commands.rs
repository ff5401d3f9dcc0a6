//! Everything the webview may call. Each command here must also be listed in `build.rs` and granted in
//! `capabilities/main.json`, and each type it returns is exported to `ui/src/lib/bindings/`.

use serde::Serialize;
use ts_rs::TS;

use crate::Paths;

/// What the UI shows about this running instance.
#[derive(Debug, Clone, Serialize, TS)]
pub struct AppInfo {
    pub version: String,
    pub config_path: String,
    pub data_dir: String,
}

impl AppInfo {
    pub fn new(paths: &Paths) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            config_path: paths.config.display().to_string(),
            data_dir: paths.data_dir.display().to_string(),
        }
    }
}

#[tauri::command]
pub fn app_info(paths: tauri::State<'_, Paths>) -> AppInfo {
    AppInfo::new(&paths)
}
