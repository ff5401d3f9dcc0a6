//! The server child process: spawning it in a process group of its own, capturing its stderr into
//! a bounded log, and killing the whole group when the session ends.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::ClientError;

/// How to start one server: the `mcpServers` entry of a config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

pub(crate) struct Spawned {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    pub process: Arc<ProcessHandle>,
}

/// Owns the child's lifetime. Dropping the last handle kills the process group.
pub struct ProcessHandle {
    pid: Option<u32>,
    exit: watch::Receiver<Option<String>>,
}

impl ProcessHandle {
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Kills the server and everything it started (servers launched through `npx` or a shell
    /// leave grandchildren holding the pipes otherwise).
    pub fn kill(&self) {
        if let Some(pid) = self.pid {
            // SAFETY: kill(2) on a process group we created; no memory is involved.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
        }
    }

    /// The exit description once the process has ended (`"exit status: 1"`, `"signal: 9"`).
    pub async fn wait_exit(&self, timeout: std::time::Duration) -> Option<String> {
        let mut rx = self.exit.clone();
        let fut = async {
            loop {
                if let Some(s) = rx.borrow().clone() {
                    return Some(s);
                }
                if rx.changed().await.is_err() {
                    return rx.borrow().clone();
                }
            }
        };
        tokio::time::timeout(timeout, fut).await.ok().flatten()
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        if self.exit.borrow().is_none() {
            self.kill();
        }
    }
}

pub(crate) fn spawn(spec: &ServerSpec) -> Result<Spawned, ClientError> {
    let mut cmd = Command::new(&spec.command);
    cmd.args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let mut child: Child = cmd.spawn().map_err(|e| ClientError::Spawn {
        server: spec.name.clone(),
        command: spec.command.clone(),
        message: match e.kind() {
            std::io::ErrorKind::NotFound => format!("command not found ({e})"),
            _ => e.to_string(),
        },
    })?;
    let pid = child.id();
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
        return Err(ClientError::Spawn {
            server: spec.name.clone(),
            command: spec.command.clone(),
            message: "the process has no stdio pipes".into(),
        });
    };
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown exit ({e})"),
        };
        let _ = tx.send(Some(status));
    });
    Ok(Spawned { stdin, stdout, stderr, process: Arc::new(ProcessHandle { pid, exit: rx }) })
}

/// The last lines a server wrote to stderr, bounded in count and in bytes per line.
#[derive(Debug)]
pub struct StderrLog {
    lines: VecDeque<String>,
    max_lines: usize,
}

/// Longer stderr lines are cut; tracebacks stay readable, a binary dump cannot eat memory.
pub const MAX_STDERR_LINE: usize = 4096;

impl StderrLog {
    pub fn new(max_lines: usize) -> Self {
        Self { lines: VecDeque::new(), max_lines: max_lines.max(1) }
    }

    pub fn push(&mut self, line: String) {
        if self.lines.len() == self.max_lines {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }

    pub fn tail(&self, n: usize) -> Vec<String> {
        self.lines.iter().skip(self.lines.len().saturating_sub(n)).cloned().collect()
    }
}

/// Reads stderr line by line into `log`, calling `each` for every line.
pub(crate) async fn capture_stderr(mut stderr: ChildStderr, log: Arc<Mutex<StderrLog>>, each: impl Fn(String)) {
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let emit = |line: &mut Vec<u8>, cut: &mut bool| {
        let mut text = String::from_utf8_lossy(line).trim_end_matches('\r').to_string();
        if *cut {
            text.push_str(" […]");
        }
        line.clear();
        *cut = false;
        log.lock().unwrap_or_else(|p| p.into_inner()).push(text.clone());
        each(text);
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                emit(&mut line, &mut cut);
            } else if line.len() < MAX_STDERR_LINE {
                line.push(b);
            } else {
                cut = true;
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line, &mut cut);
    }
}
