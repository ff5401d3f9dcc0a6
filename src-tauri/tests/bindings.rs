//! The UI imports the TypeScript twins of the IPC types from `ui/src/lib/bindings/`. They are committed so
//! the UI builds without Rust; this test fails when they drift from the Rust types.
//! Regenerate with `TASKDECK_UPDATE_BINDINGS=1 cargo test -p taskdeck-app --test bindings` (`make bindings`).

use std::path::{Path, PathBuf};

use taskdeck_app::commands::AppInfo;
use ts_rs::{Config, TS};

fn bindings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings")
}

/// Every type the webview receives or sends; a new command's types are added here.
fn rendered() -> Vec<(String, String)> {
    let cfg = Config::new();
    vec![render::<AppInfo>(&cfg)]
}

fn render<T: TS + 'static>(cfg: &Config) -> (String, String) {
    let file = format!("{}.ts", T::name(cfg));
    (file, T::export_to_string(cfg).expect("type renders to TypeScript"))
}

#[test]
fn typescript_bindings_match_the_rust_types() {
    let dir = bindings_dir();
    let update = std::env::var_os("TASKDECK_UPDATE_BINDINGS").is_some_and(|v| v != "0");
    let mut stale = Vec::new();
    for (file, text) in rendered() {
        let path = dir.join(&file);
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(file);
        }
    }
    assert!(
        stale.is_empty(),
        "stale TypeScript bindings in ui/src/lib/bindings: {stale:?}; run `make bindings` and commit the result"
    );
}
