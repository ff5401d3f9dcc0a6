//! Running `taskdeck-cli` from a test: each test gives it a config and a data directory of its
//! own, reads what a command left (exit code, stdout, stderr) and waits on the store for a task to
//! reach a state. One copy, so every suite runs the CLI the same way and fails with the same story.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// What a finished command left: its exit code (-1 when a signal ended it) and its output as text.
/// Its `Debug` shows all three, so `assert_eq!(out.code, 0, "{out:?}")` says why a command failed.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Stdout as JSON (what `--json` prints); a failure shows what came instead.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

impl From<Output> for Out {
    fn from(o: Output) -> Self {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// The CLI at `bin` with `--config` and `--data-dir` given and `args` after them. The variables
/// that would point it elsewhere or change its log are removed, so a test never reads the config,
/// store or settings of whoever runs it; stdin is closed, so nothing waits on a terminal.
pub fn cli_command(bin: impl AsRef<OsStr>, config: &Path, data_dir: &Path, args: &[impl AsRef<OsStr>]) -> Command {
    let mut c = Command::new(bin);
    c.arg("--config").arg(config).arg("--data-dir").arg(data_dir).args(args);
    c.env_remove("TASKDECK_CONFIG").env_remove("TASKDECK_DATA_DIR").env_remove("TASKDECK_LOG");
    c.stdin(Stdio::null());
    c
}

/// A test's CLI: it says how a command is made ([`TestCli::cmd`], usually [`cli_command`] with its
/// own config and data directory, sometimes with more environment); running it, reading its store
/// and waiting on a task come with it.
pub trait TestCli {
    /// The CLI with this test's config and data directory and `args`.
    fn cmd(&self, args: &[&str]) -> Command;

    /// How long [`TestCli::wait_task`] waits before it fails.
    const TASK_WAIT: Duration = Duration::from_secs(30);

    /// What a failed [`TestCli::wait_task`] shows beside the tasks (a server's stderr, say).
    fn wait_context(&self) -> String {
        String::new()
    }

    /// Runs a command to its end.
    fn run(&self, args: &[&str]) -> Out {
        self.cmd(args).output().expect("taskdeck-cli runs").into()
    }

    /// Starts a command, its output piped, for a test that kills it or answers its question
    /// while it runs.
    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("taskdeck-cli starts")
    }

    /// `tasks --json`, which must succeed.
    fn tasks(&self) -> Vec<Value> {
        let out = self.run(&["tasks", "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        out.json().as_array().cloned().expect("tasks --json prints an array")
    }

    /// `show ID --json`, which must succeed.
    fn show(&self, id: &str) -> Value {
        let out = self.run(&["show", id, "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        out.json()
    }

    /// Starts `args`, waits until `ready` holds for its task, then kills the CLI with SIGKILL, as a
    /// crash or an OOM kill would, and returns the task as it was then: how every test of a task
    /// that outlives its CLI begins.
    fn kill_9_when(&self, args: &[&str], ready: impl Fn(&Value) -> bool) -> Value {
        let mut child = self.spawn(args);
        let t = self.wait_task(ready);
        child.kill().expect("kill -9 the CLI");
        child.wait().expect("reap the CLI");
        t
    }

    /// The first task `tasks` lists once `ready` holds for it, read by other CLI processes beside
    /// the one running it (the store is read beside the engine), as a user would see it.
    fn wait_task(&self, ready: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Self::TASK_WAIT;
        loop {
            if let Some(t) = self.tasks().into_iter().next()
                && ready(&t)
            {
                return t;
            }
            assert!(Instant::now() < deadline, "no task got ready: {:?}{}", self.tasks(), self.wait_context());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A task record's id.
pub fn id_of(t: &Value) -> String {
    t["id"].as_str().expect("a task has an id").to_owned()
}

/// Whether the server has accepted the task (it has the server's task id): the moment a test may
/// kill the CLI and still expect the task to be finished later.
pub fn has_remote(t: &Value) -> bool {
    t["remote_task_id"].is_string()
}

/// How many results the task's record holds: exactly one, however often its CLI or server died.
pub fn result_events(task: &Value) -> usize {
    task["events"].as_array().expect("a shown task has events").iter().filter(|e| e["kind"] == "result").count()
}

/// Runs `cmd` to its end with `input` on its stdin, then closed, as a person typing a key or an
/// answer and pressing Ctrl-D would.
pub fn output_with_input(mut cmd: Command, input: &str) -> Output {
    use std::io::Write;
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    child.stdin.take().expect("stdin is piped").write_all(input.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("output")
}
