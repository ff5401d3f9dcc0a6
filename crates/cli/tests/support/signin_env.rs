//! What the sign-in tests share: the demo server over HTTP behind a gate that lets through only
//! the bearer tokens of a strict OAuth authorization server (the client's fixture), a config
//! naming it `remote`, and the CLI run with the fixture's browser script as `$BROWSER`.
#![allow(dead_code)] // Each test binary uses its own part.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
pub use taskdeck_test_support::cli::Out;
use taskdeck_test_support::cli::cli_command;
use taskdeck_test_support::{LoopbackServer, demo_server_http, write_servers_config};

pub const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

pub fn support(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The gate in front of the demo server; killed when dropped.
pub struct Gate {
    pub base: String,
    child: Child,
}

impl Gate {
    pub fn start(upstream: &str) -> Gate {
        let mut child = Command::new("python3")
            .arg(support("tests/support/signin_gate.py"))
            .arg(upstream)
            // The fixture's defaults: dynamic registration, a public client, PKCE S256.
            .arg("{}")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the gate");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "the gate printed {line:?}");
        Gate { base: line.trim().to_owned(), child }
    }

    pub fn admin(&self, what: &str) {
        let out = Command::new("python3")
            .arg("-c")
            .arg("import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b'', method='POST')).read()")
            .arg(format!("{}/admin/{what}", self.base))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// The paths the authorization server saw, in order.
    pub fn seen(&self) -> Vec<String> {
        let out = Command::new("python3")
            .arg("-c")
            .arg("import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())")
            .arg(format!("{}/admin/log", self.base))
            .output()
            .unwrap();
        let log: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        log.as_array().into_iter().flatten().filter_map(|e| e["path"].as_str().map(str::to_owned)).collect()
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CLI of a sign-in test: sign-ins kept in a file in its data directory, never the keyring of
/// whoever runs the tests, and the fixture's browser script as `$BROWSER`, which follows the
/// authorization page as a person would.
pub fn sign_in_cli(config: &Path, data_dir: &Path, args: &[&str]) -> Command {
    let mut c = cli_command(CLI, config, data_dir, args);
    c.env("TASKDECK_SIGN_IN_STORE", "file");
    c.env("BROWSER", format!("python3 {}", support("../client/tests/support/oauth_browser.py").display()));
    c
}

pub struct Env {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    _demo: LoopbackServer,
    _state: tempfile::TempDir,
    pub gate: Gate,
}

impl Env {
    pub fn new() -> Env {
        let state = tempfile::tempdir().unwrap();
        let demo = demo_server_http(state.path(), "127.0.0.1:0");
        let gate = Gate::start(&demo.url);
        let dir = tempfile::tempdir().unwrap();
        let entry = json!({"url": format!("{}/mcp", gate.base)});
        let config = write_servers_config(&dir.path().join("servers.json"), [("remote", entry)]);
        Env { dir, config, _demo: demo, _state: state, gate }
    }

    pub fn run(&self, args: &[&str]) -> Out {
        sign_in_cli(&self.config, &self.dir.path().join("data"), args).output().unwrap().into()
    }

    pub fn sign_ins(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("data/sign-ins.json")).unwrap_or_default()
    }

    pub fn logs(&self) -> String {
        let mut all = String::new();
        for dir in ["data/logs", "data/logs/servers"] {
            for e in std::fs::read_dir(self.dir.path().join(dir)).into_iter().flatten().flatten() {
                all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        all
    }
}
