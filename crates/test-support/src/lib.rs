//! What the test suites share, so each finds the built binaries, the pinned reference servers and
//! its server configs the same way: one place to change when the layout does.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// The root of the checkout.
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Where cargo put the binaries of this build (`target/debug`): a test executable lives in its
/// `deps/` folder, beside which `cargo test --workspace` builds every `[[bin]]` of the workspace.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    exe.parent().and_then(Path::parent).expect("a test executable sits in target/<profile>/deps").to_owned()
}

/// A binary of the workspace, built into the same target directory as the running test.
pub fn workspace_bin(name: &str) -> PathBuf {
    let bin = bin_dir().join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} is missing: build it first (cargo build --workspace --bins)", bin.display());
    bin
}

/// The bundled demo task server.
pub fn demo_server() -> PathBuf {
    workspace_bin("taskdeck-demo-server")
}

/// The demo server as an `mcpServers` entry, keeping its state in `state` and asking to be polled
/// every 100 ms, so tests do not wait on its one-second default.
pub fn demo_server_entry(state: &Path) -> Value {
    json!({ "command": demo_server(), "args": ["--state", state, "--poll-interval-ms", "100"] })
}

/// The entry point of `@modelcontextprotocol/server-everything` as pinned in `tests/peers`
/// (installed by `make peers`, which `make test` runs first).
pub fn everything_server_entry() -> PathBuf {
    let entry = workspace_root().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(entry.exists(), "{} is missing: run `make peers`", entry.display());
    entry
}

/// Writes an `mcpServers` config file with these entries, in this order, and returns its path.
pub fn write_servers_config<'a>(path: &Path, servers: impl IntoIterator<Item = (&'a str, Value)>) -> PathBuf {
    let map: Map<String, Value> = servers.into_iter().map(|(name, entry)| (name.to_owned(), entry)).collect();
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": map })).expect("a config is JSON");
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path.to_owned()
}
