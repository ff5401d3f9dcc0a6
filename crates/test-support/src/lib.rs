//! What the test suites share, so each finds the built binaries, the pinned reference servers and
//! its server configs the same way: one place to change when the layout does.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub mod cli;

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

/// The processes whose parent is `parent`, read from `/proc`: a CLI's servers are its children,
/// which is how a test finds the one to kill.
#[cfg(target_os = "linux")]
pub fn child_pids(parent: u32) -> Vec<u32> {
    proc_pids().filter(|&pid| proc_stat(pid).is_some_and(|(_, ppid)| ppid == parent)).collect()
}

/// Whether the process runs: a zombie (ended, not yet reaped) does not.
#[cfg(target_os = "linux")]
pub fn pid_alive(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// The live processes with `arg` as one of their arguments, exactly: a server started with a state
/// directory of the test's own is found this way even after its parent is gone.
#[cfg(target_os = "linux")]
pub fn pids_with_arg(arg: impl AsRef<std::ffi::OsStr>) -> Vec<u32> {
    use std::os::unix::ffi::OsStrExt;
    let arg = arg.as_ref().as_bytes();
    proc_pids()
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line.split(|b| *b == 0).any(|a| a == arg))
        })
        .filter(|&pid| pid_alive(pid))
        .collect()
}

#[cfg(target_os = "linux")]
fn proc_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc").into_iter().flatten().filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
}

/// A process's state letter and parent pid. The name between the parentheses may hold anything,
/// spaces and parentheses included, so the fields are read after the last `)`.
#[cfg(target_os = "linux")]
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// A server a test runs on loopback, killed with SIGKILL when dropped (or by [`LoopbackServer::kill`]).
pub struct LoopbackServer {
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    child: std::process::Child,
}

impl LoopbackServer {
    /// The server's port, for starting its successor on the same URL.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|p| p.split('/').next()).and_then(|p| p.parse().ok()).expect("a port")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process at once (its sessions die with it) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A config entry for this server: `{"url": ...}`, pinned to `era` when given.
    pub fn entry(&self, era: Option<&str>) -> Value {
        match era {
            Some(era) => json!({ "url": self.url, "era": era }),
            None => json!({ "url": self.url }),
        }
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Lines of `from` sent on as they come, in a thread of their own, so that the pipe never fills.
fn lines_of(from: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(from)).map_while(|l| l.ok()) {
            // The receiver may have stopped listening; the pipe is still drained.
            let _ = tx.send(line);
        }
    });
    rx
}

/// The demo server in its Streamable HTTP mode at `addr` (`127.0.0.1:0` for a free port, or the
/// port of one it replaces), keeping its state in `state` and asking to be polled every 100 ms.
pub fn demo_server_http(state: &Path, addr: &str) -> LoopbackServer {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut child = std::process::Command::new(demo_server())
            .arg("--state")
            .arg(state)
            .args(["--poll-interval-ms", "100", "--http", addr])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the demo server starts");
        let lines = lines_of(child.stdout.take().expect("piped"));
        // Its first line is its URL.
        if let Ok(url) = lines.recv_timeout(std::time::Duration::from_secs(10)) {
            return LoopbackServer { url, child };
        }
        let _ = child.kill();
        let _ = child.wait();
        // The port of a server just killed may take a moment to be free again.
        assert!(std::time::Instant::now() < deadline, "the demo server did not start at {addr}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `@modelcontextprotocol/server-everything` with its `streamableHttp` transport, on `port` or a
/// free one (it reads `PORT`, and says only that it listens, not where, when given 0).
pub fn everything_server_http(port: Option<u16>) -> LoopbackServer {
    let entry = everything_server_entry();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let port = port.unwrap_or_else(|| {
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
        });
        let mut child = std::process::Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("node runs");
        let lines = lines_of(child.stderr.take().expect("piped"));
        while let Ok(line) = lines.recv_timeout(std::time::Duration::from_secs(10)) {
            if line.contains("listening on port") {
                return LoopbackServer { url: format!("http://127.0.0.1:{port}/mcp"), child };
            }
            if line.contains("already in use") {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(std::time::Instant::now() < deadline, "the everything server did not start in HTTP mode");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
