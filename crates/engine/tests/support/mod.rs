//! What the engine's test files share: where this folder's fixture servers are, and an engine
//! opened over a test's own folder the way each of them opens it.
#![allow(dead_code)] // Each test binary uses its own part.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use taskdeck_engine::config::Paths;
use taskdeck_engine::{Engine, EngineOptions};

/// A fixture server script of `tests/support`, run with the system `python3`.
pub fn fixture(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support").join(script)
}

/// The config entry that runs `script` (a path) with the system `python3` and nothing else.
pub fn python_entry(script: &Path) -> Value {
    json!({"command": "python3", "args": [script]})
}

/// The engine over `dir`: its config `dir/servers.json`, its store under `dir/data`, giving a
/// server `server_wait` to answer, since a Python fixture on a machine busy with other tests can
/// take seconds to start.
pub async fn open_engine(dir: &Path, server_wait: Duration) -> Engine {
    open_engine_with(dir, EngineOptions { server_wait, ..EngineOptions::default() }).await
}

/// [`open_engine`] with options of the test's own.
pub async fn open_engine_with(dir: &Path, opts: EngineOptions) -> Engine {
    Engine::open(Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }, opts).await.unwrap()
}
