//! Taskdeck against a modern-era task server it shares no code with: FastMCP 4 with fastmcp-tasks
//! (`tests/peers/fastmcp_tasks_server.py`, installed by `make peers`), over Streamable HTTP on
//! loopback, through the real `taskdeck-cli` and its real store. Lifecycles with their status
//! messages, a question answered by a second process, a tool error, cancelling, `kill -9` of the
//! CLI then `resume`, and the server restarted mid-task: fastmcp-tasks keeps its tasks in memory,
//! so after a restart the task is gone, and Taskdeck must say so rather than wait for it.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::cli::{Out, TestCli, cli_command, has_remote, id_of};
use taskdeck_test_support::{workspace_root, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// The server a test runs: a Python process on a loopback port, killed when dropped.
struct FastMcp {
    url: String,
    port: u16,
    child: Child,
    /// Where its stderr goes, shown when it does not start.
    log: PathBuf,
}

impl FastMcp {
    /// Starts the server on `port` (0 for a free one) and waits for the URL it prints.
    fn start(dir: &std::path::Path, port: u16) -> FastMcp {
        let root = workspace_root();
        let venv = root.join("tests/peers/.venv");
        // `make peers` marks the venv once everything in it is installed.
        assert!(
            venv.join(".installed").exists(),
            "{} is missing or incomplete: run `make peers` (it installs FastMCP 4 and fastmcp-tasks there)",
            venv.display()
        );
        let python = venv.join("bin/python");
        let script = root.join("tests/peers/fastmcp_tasks_server.py");
        let deadline = Instant::now() + Duration::from_secs(40);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let log = dir.join(format!("fastmcp-{port}-{attempt}.log"));
            let mut child = Command::new(&python)
                .arg(&script)
                .args(["--port", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(File::create(&log).unwrap())
                .spawn()
                .expect("the venv's python runs");
            let stdout = child.stdout.take().expect("piped");
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
                let _ = tx.send(line);
            });
            // It prints its URL once its port is bound, before it imports FastMCP.
            if let Ok(line) = rx.recv_timeout(Duration::from_secs(20))
                && let Some(url) =
                    line.trim().strip_prefix("http://127.0.0.1:").map(|rest| format!("http://127.0.0.1:{rest}"))
            {
                let port = url.rsplit(':').next().and_then(|p| p.split('/').next()).and_then(|p| p.parse().ok());
                return FastMcp { port: port.expect("a port in the URL"), url, child, log };
            }
            let _ = child.kill();
            let _ = child.wait();
            let stderr = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(Instant::now() < deadline, "the FastMCP server did not start on port {port}:\n{stderr}");
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// SIGKILL, as a crash or an OOM kill would: its in-memory tasks die with it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for FastMcp {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One server, data directory and config per test.
struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
    server: FastMcp,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let server = FastMcp::start(dir.path(), 0);
        let config =
            write_servers_config(&dir.path().join("servers.json"), [("fastmcp", json!({ "url": server.url }))]);
        Env { dir, config, server }
    }

    /// Kills the server and starts a new one on the same URL, as a redeploy or a crash and
    /// restart would.
    fn restart_server(&mut self) {
        self.server.kill();
        self.server = FastMcp::start(self.dir.path(), self.server.port);
    }

    fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("data/logs/servers/fastmcp.log")).unwrap_or_default()
    }
}

impl TestCli for Env {
    fn cmd(&self, args: &[&str]) -> Command {
        cli_command(CLI, &self.config, &self.dir.path().join("data"), args)
    }

    /// Under a watchdog: a command that hangs on this server fails the test instead.
    fn run(&self, args: &[&str]) -> Out {
        finish(self.spawn(args))
    }

    fn wait_context(&self) -> String {
        format!("\n--- the server's stderr\n{}", self.server.stderr())
    }
}

/// Waits for a command to end: none may take a minute, whatever the server does.
fn finish(child: Child) -> Out {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap().into(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            panic!("taskdeck-cli hung for a minute");
        }
    }
}

fn events_of<'a>(task: &'a Value, kind: &str) -> Vec<&'a Value> {
    task["events"].as_array().unwrap().iter().filter(|e| e["kind"] == kind).collect()
}

/// The status messages on record, in order.
fn status_messages(task: &Value) -> Vec<String> {
    events_of(task, "status")
        .into_iter()
        .map(|e| {
            e["data"]["message"]
                .as_str()
                .unwrap_or_else(|| panic!("a status event without its message: {e}"))
                .to_owned()
        })
        .collect()
}

#[test]
fn a_fastmcp_report_completes_with_its_status_messages_on_record() {
    let env = Env::new();
    let args = json!({"topic": "tides", "steps": 4, "step_seconds": 0.4}).to_string();
    let out = env.run(&["run", "fastmcp", "write_report", "--args", &args, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!((t["status"].as_str(), t["era"].as_str()), (Some("completed"), Some("modern")), "{t}");
    assert!(t["result"]["content"][0]["text"].as_str().unwrap().starts_with("# Report: tides"), "{t}");
    assert!(!t["result"]["isError"].as_bool().unwrap_or(false), "{t}");

    let t = env.show(&id_of(&t));
    assert_eq!(events_of(&t, "result").len(), 1, "{t}");
    // Polled every 100 ms, as the server asks, a 400 ms step is seen at least once on a quiet
    // machine; on a busy one some may be missed, never reordered.
    let messages = status_messages(&t);
    let sections: Vec<usize> = messages
        .iter()
        .filter_map(|m| m.strip_prefix("Writing section ")?.strip_suffix(" of 4")?.parse().ok())
        .collect();
    assert!(sections.len() >= 2, "the steps are on record: {messages:?}");
    assert!(sections.windows(2).all(|w| w[0] < w[1]), "in the order the server said them: {messages:?}");
}

#[test]
fn a_fastmcp_question_is_answered_by_a_second_process() {
    let env = Env::new();
    let out = env.run(&["run", "fastmcp", "deploy", "--args", r#"{"service": "api"}"#]);
    assert_eq!(out.code, 3, "waiting for the user: {out:?}");
    assert!(out.stderr.contains("Where should api be deployed?"), "{out:?}");
    assert!(out.stderr.contains("staging") && out.stderr.contains("production"), "the choices are shown: {out:?}");
    let t = &env.tasks()[0];
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(t["question"]["asks"]["kind"], "form", "{t}");
    let id = id_of(t);

    let out = env.run(&["answer", &id, "--json", r#"{"environment": "production", "note": "after the freeze"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Deployed api to production. Note: after the freeze"), "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(events_of(&t, "answer").len(), 1, "{t}");
    assert_eq!(events_of(&t, "result").len(), 1, "{t}");
}

#[test]
fn a_declined_fastmcp_question_fails_the_task_with_the_servers_words() {
    let env = Env::new();
    assert_eq!(env.run(&["run", "fastmcp", "deploy", "--args", r#"{"service": "api"}"#]).code, 3);
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["answer", &id, "--decline"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("Deployment of api stopped: the question was declined"), "{out:?}");
    assert_eq!(env.show(&id)["status"], "failed");
}

#[test]
fn a_fastmcp_tool_error_is_shown_as_a_failed_task() {
    let env = Env::new();
    let out = env.run(&["run", "fastmcp", "export_rows", "--args", r#"{"rows": 10, "fail_at": 3}"#]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("failed") && out.stderr.contains("Export failed at row 3"), "{out:?}");
    // fastmcp-tasks reports a raised tool error as a *completed* task whose result has
    // `isError: true`; to the user it is a failure, with the server's words.
    let t = env.show(&id_of(&env.tasks()[0]));
    assert_eq!(t["status"], "failed", "{t}");
    assert!(t["error"]["message"].as_str().unwrap().contains("Export failed at row 3"), "{t}");
    assert_eq!(t["result"]["isError"], true, "the server's result is kept as it came: {t}");
}

#[test]
fn ctrl_c_during_a_fastmcp_task_cancels_it() {
    let env = Env::new();
    let child = env.spawn(&["run", "fastmcp", "crunch", "--args", r#"{"seconds": 60}"#]);
    let t = env.wait_task(|t| has_remote(t) && t["status_message"].is_string());
    let ok = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success();
    assert!(ok);
    let out = finish(child);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stderr.contains("cancelled"), "{out:?}");
    assert_eq!(env.show(&id_of(&t))["status"], "cancelled");
}

#[test]
fn a_fastmcp_task_left_by_kill_9_is_cancelled_by_the_next_process() {
    let env = Env::new();
    let t = env.kill_9_when(&["run", "fastmcp", "crunch", "--args", r#"{"seconds": 60}"#], has_remote);
    let out = env.run(&["cancel", &id_of(&t)]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = env.show(&id_of(&t));
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(events_of(&t, "cancelled").len(), 1, "{t}");
    // The server took the cancel: a second one is refused here with the real state.
    let out = env.run(&["cancel", &id_of(&t)]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("cancelled"), "{out:?}");
}

#[test]
fn a_fastmcp_task_whose_cli_was_killed_is_finished_by_resume_exactly_once() {
    let env = Env::new();
    let args = json!({"topic": "tides", "steps": 6, "step_seconds": 0.5}).to_string();
    let t = env.kill_9_when(&["run", "fastmcp", "write_report", "--args", &args], has_remote);
    assert_eq!(env.show(&id_of(&t))["status"], "working");

    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()[0]["status"], "completed", "{out:?}");
    let t = env.show(&id_of(&t));
    assert_eq!(events_of(&t, "result").len(), 1, "{t}");
    assert!(t["result"].to_string().contains("# Report: tides"), "{t}");
    let out = env.run(&["resume", "--json"]);
    assert_eq!((out.code, out.json()), (0, json!([])), "nothing left: {out:?}");
}

#[test]
fn a_fastmcp_question_left_by_kill_9_is_asked_again_and_answered() {
    let env = Env::new();
    let t = env.kill_9_when(&["run", "fastmcp", "deploy", "--args", r#"{"service": "web"}"#], |t| {
        t["status"] == "input_required"
    });
    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()[0]["status"], "input_required", "the question is pending again: {out:?}");

    let out = env.run(&["answer", &id_of(&t), "--json", r#"{"environment": "staging"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Deployed web to staging."), "{out:?}");
}

/// What a user must see about a task its server forgot: failed, with the reason in words.
fn assert_lost(env: &Env, id: &str) {
    let t = env.show(id);
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["reason"], "UNKNOWN_TO_SERVER", "{t}");
    let message = t["error"]["message"].as_str().unwrap();
    assert!(message.contains("the server no longer knows this task"), "a reason the user can read: {message}");
}

#[test]
fn a_fastmcp_server_restarted_under_a_running_task_fails_it_as_forgotten_without_hanging() {
    let mut env = Env::new();
    let child = env.spawn(&["run", "fastmcp", "crunch", "--args", r#"{"seconds": 30}"#]);
    let t = env.wait_task(|t| has_remote(t) && t["status_message"].is_string());
    let started = Instant::now();
    env.restart_server();

    let out = finish(child);
    assert!(started.elapsed() < Duration::from_secs(45), "no waiting for a task that is gone: {out:?}");
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("the server no longer knows this task"), "{out:?}");
    assert_lost(&env, &id_of(&t));
}

#[test]
fn after_a_fastmcp_restart_resume_reports_the_killed_clis_task_lost() {
    let mut env = Env::new();
    let t = env.kill_9_when(&["run", "fastmcp", "crunch", "--args", r#"{"seconds": 30}"#], has_remote);
    env.restart_server();

    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()[0]["status"], "failed", "{out:?}");
    assert_lost(&env, &id_of(&t));
    // Failed for a reason the user can act on: run it again, with the same arguments.
    let out = env.run(&["resume", "--json"]);
    assert_eq!((out.code, out.json()), (0, json!([])), "{out:?}");
}

#[test]
fn a_fastmcp_question_whose_server_restarted_is_refused_with_the_task_failed() {
    let mut env = Env::new();
    assert_eq!(env.run(&["run", "fastmcp", "deploy", "--args", r#"{"service": "api"}"#]).code, 3);
    let id = id_of(&env.tasks()[0]);
    env.restart_server();

    let out = env.run(&["answer", &id, "--json", r#"{"environment": "staging"}"#]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("failed"), "{out:?}");
    assert_lost(&env, &id);
}

#[test]
fn while_the_fastmcp_server_is_down_resume_keeps_the_task_and_returns() {
    let mut env = Env::new();
    let t = env.kill_9_when(&["run", "fastmcp", "crunch", "--args", r#"{"seconds": 30}"#], has_remote);
    env.server.kill();

    let started = Instant::now();
    let out = env.run(&["resume", "--json"]);
    assert!(started.elapsed() < Duration::from_secs(45), "{out:?}");
    assert_eq!(out.code, 0, "{out:?}");
    // An outage is not the task's fault: it stays as it was, and the user is told why.
    assert_eq!(out.json()[0]["status"], "working", "{out:?}");
    assert!(out.stderr.contains("could not be reached"), "{out:?}");
    assert_eq!(env.show(&id_of(&t))["status"], "working");
    let log = env.server_log();
    assert!(log.contains("could not be reached"), "the outage is in the server's log: {log}");

    // Back, but without its in-memory tasks.
    env.server = FastMcp::start(env.dir.path(), env.server.port);
    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_lost(&env, &id_of(&t));
}

/// A modern server that is slow to answer its first request (a cold start, a busy machine) is
/// still a modern one: over HTTP a legacy server answers the era probe at once with an error, so
/// waiting is not taken for "legacy", which would run the task without the tasks extension.
#[test]
fn a_fastmcp_server_slow_to_answer_at_first_still_runs_its_tools_as_tasks() {
    let env = Env::new();
    let pid = env.server.child.id().to_string();
    // Stopped, it still accepts connections (the kernel does), and answers nothing.
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let waker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(7));
        Command::new("kill").args(["-CONT", &pid]).status().unwrap().success()
    });
    let args = json!({"topic": "tides", "steps": 2, "step_seconds": 0.1}).to_string();
    let out = env.run(&["run", "fastmcp", "write_report", "--args", &args, "--json"]);
    assert!(waker.join().unwrap());
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!((t["era"].as_str(), t["mode"].as_str()), (Some("modern"), Some("task")), "{t}");
    assert!(env.server_log().contains("connected: modern era"), "{}", env.server_log());
}
