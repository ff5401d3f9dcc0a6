//! The `taskdeck-cli` binary end to end against the real demo server (and the reference everything
//! server for the legacy era): exit codes, what goes to stdout and stderr, and that every task
//! survives kills of the CLI and of its server with exactly one result.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::cli::{Out, TestCli, cli_command, has_remote, id_of, result_events};
use taskdeck_test_support::{demo_server_entry, everything_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// One data directory and config per test, so tests run in parallel without meeting.
struct Env {
    dir: tempfile::TempDir,
    config: Option<PathBuf>,
    /// Pins every server of the config to this era, by its entry's `"era"` setting.
    force_era: Option<&'static str>,
}

/// A copy of `config` beside it with `"era": era` in every entry.
fn pinned_to(config: &Path, era: &str) -> PathBuf {
    let mut root: Value = serde_json::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
    for entry in root["mcpServers"].as_object_mut().unwrap().values_mut() {
        entry["era"] = json!(era);
    }
    let pinned = config.with_extension(format!("{era}.json"));
    std::fs::write(&pinned, root.to_string()).unwrap();
    pinned
}

impl TestCli for Env {
    /// With `force_era`, a copy of the config pinned to it; with no config, a path where none is,
    /// so the embedded default applies.
    fn cmd(&self, args: &[&str]) -> Command {
        let config = match (&self.config, self.force_era) {
            (Some(config), Some(era)) => pinned_to(config, era),
            (Some(config), None) => config.clone(),
            (None, _) => self.dir.path().join("absent.json"),
        };
        cli_command(CLI, &config, &self.data_dir(), args)
    }

    const TASK_WAIT: Duration = Duration::from_secs(20);
}

impl Env {
    fn demo() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let entry = demo_server_entry(&dir.path().join("demo-state"));
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        Env { dir, config: Some(config), force_era: None }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The CLI with `args` (words split by the shell) run by `script`, which gives it a terminal,
    /// so that what it draws only for a person (the live bar, its prompts) is drawn; its stdin,
    /// stdout and stderr are pipes the test holds.
    fn in_a_terminal(&self, args: &str) -> Child {
        let config = self.config.as_ref().unwrap().display().to_string();
        let cli = format!("{CLI} --config {config} --data-dir {} {args}", self.data_dir().display());
        Command::new("script")
            .args(["-qfec", &cli, "/dev/null"])
            .env_remove("TASKDECK_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The demo server's pid, found by its state directory, which no other test shares.
    fn demo_server_pid(&self) -> Option<u32> {
        let state = self.dir.path().join("demo-state");
        let out =
            Command::new("pgrep").arg("-f").arg("--").arg(format!("--state {}", state.display())).output().ok()?;
        String::from_utf8_lossy(&out.stdout).lines().next()?.trim().parse().ok()
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap().success();
    assert!(ok, "kill -{sig} {pid}");
}

fn finish(child: Child) -> Out {
    child.wait_with_output().unwrap().into()
}

fn report(seconds: f64) -> String {
    json!({"topic": "tides", "seconds": seconds}).to_string()
}

#[test]
fn a_report_completes_with_its_text_on_stdout_and_its_record_as_json() {
    let env = Env::demo();
    let out = env.run(&["run", "demo", "generate_report", "--args", &report(0.4)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("# Report: tides"), "{out:?}");
    // Not a terminal: no progress bar, nothing but what went wrong on stderr.
    assert!(out.stderr.trim().is_empty(), "{out:?}");

    let out = env.run(&["run", "demo", "generate_report", "--args", &report(0.2), "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    for field in [
        "id",
        "server",
        "tool",
        "arguments",
        "status",
        "status_message",
        "progress",
        "question",
        "result",
        "error",
        "remote_task_id",
        "era",
        "created_at",
        "updated_at",
    ] {
        assert!(t.get(field).is_some(), "{field} missing from {t}");
    }
    assert_eq!((t["status"].as_str(), t["era"].as_str()), (Some("completed"), Some("modern")));
    assert_eq!(t["arguments"]["topic"], "tides");
    assert!(t["result"]["content"][0]["text"].as_str().unwrap().contains("tides"));
    assert!(t["error"].is_null() && t["question"].is_null());
}

#[test]
fn a_tool_error_exits_1_and_keeps_the_error() {
    let env = Env::demo();
    let out = env.run(&["run", "demo", "flaky_export", "--args", r#"{"fail_at": 10}"#]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("failed") && out.stderr.contains("Export failed"), "{out:?}");
    let t = env.show(&id_of(&env.tasks()[0]));
    assert_eq!(t["status"], "failed");
    assert!(t["error"]["message"].as_str().unwrap().contains("Export failed"), "{t}");
}

#[test]
fn a_plain_call_and_the_embedded_default_config() {
    let env = Env { config: None, ..Env::demo() };
    let out = env.run(&["servers", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let s = &out.json()[0];
    assert_eq!(
        (s["name"].as_str(), s["phase"].as_str(), s["tasks"].as_bool()),
        (Some("demo"), Some("ready"), Some(true))
    );
    let out = env.run(&["servers"]);
    assert!(out.stdout.starts_with("NAME") && out.stdout.contains("demo  modern  2026-07-28"), "{out:?}");

    let out = env.run(&["tools", "demo", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let tools = out.json();
    let report = tools.as_array().unwrap().iter().find(|t| t["name"] == "generate_report").unwrap();
    assert_eq!(report["input_schema"]["required"], json!(["topic"]));
    let out = env.run(&["tools", "demo"]);
    assert!(out.stdout.contains("topic*: string"), "{out:?}");

    let out = env.run(&["run", "demo", "notes_search", "--args", r#"{"query": "tasks"}"#, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    // The server answered at once: there is no task on its side.
    assert_eq!(out.json()["status"], "completed");
    assert!(out.json()["remote_task_id"].is_null());
}

#[test]
fn a_question_without_a_terminal_waits_and_is_answered_by_a_new_process() {
    let env = Env::demo();
    let out = env.run(&["run", "demo", "diagnose_incident"]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.tasks()[0]);
    assert!(out.stderr.contains(&id), "{out:?}");
    assert!(out.stderr.contains("demo asks: "), "{out:?}");
    assert!(out.stderr.contains("service: one of: checkout"), "{out:?}");
    assert!(out.stderr.contains(&format!("answer {id} --json '{{\"service\":\"checkout\"}}'")), "{out:?}");

    // Persisted: the question survives the process that saw it.
    let t = env.show(&id[..8]);
    assert_eq!(t["status"], "input_required");
    assert_eq!(t["question"]["request"]["method"], "elicitation/create");
    // Typed for scripts too: what it asks, and the form the prompt was built from.
    assert_eq!(t["question"]["asks"]["kind"], "form");
    assert_eq!(t["question"]["asks"]["form"]["fields"][0]["name"], "service");
    assert!(t["question"]["key"].is_string(), "the key stays the text it always was: {t}");

    // A wrong answer is a usage error naming the field, and leaves the question waiting.
    let out = env.run(&["answer", &id, "--json", r#"{"service": "mainframe"}"#]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("/service"), "{out:?}");
    assert_eq!(env.show(&id)["status"], "input_required");

    let out = env.run(&["answer", &id[..8], "--json", r#"{"service": "auth"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Auth gateway") || out.stdout.to_lowercase().contains("auth"), "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "completed");
    assert_eq!(result_events(&t), 1);

    // Not waiting any more: refused, naming the real state.
    let out = env.run(&["answer", &id, "--json", r#"{"service": "auth"}"#]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("completed"), "{out:?}");
}

#[test]
fn answers_on_the_command_line_are_used_in_order() {
    let env = Env::demo();
    let out = env.run(&["run", "demo", "diagnose_incident", "--answer", r#"{"service": "search"}"#, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["status"], "completed");
    let events = env.show(&id_of(&t))["events"].clone();
    let answer = events.as_array().unwrap().iter().find(|e| e["kind"] == "answer").unwrap();
    assert_eq!(answer["data"]["response"]["content"]["service"], "search");

    // A declined question ends the diagnosis one way or another, and the exit code says which.
    let out = env.run(&["run", "demo", "diagnose_incident"]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["answer", &id, "--decline"]);
    let status = env.show(&id)["status"].as_str().unwrap().to_owned();
    assert_eq!(
        out.code,
        match status.as_str() {
            "completed" => 0,
            "failed" => 1,
            _ => 4,
        },
        "{out:?}"
    );
}

#[test]
fn bad_input_is_a_usage_error_naming_the_field() {
    let env = Env::demo();
    let out = env.run(&["run", "demo", "generate_report", "--args", r#"{"topic": 3}"#]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("/topic"), "{out:?}");
    let out = env.run(&["run", "demo", "generate_report", "--args", "{oops"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--args"), "{out:?}");
    let out = env.run(&["run", "demo", "generate_report", "--args", "[1]"]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = env.run(&["run", "nowhere", "generate_report"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("nowhere") && out.stderr.contains("demo"), "{out:?}");
    let out = env.run(&["run", "demo", "no_such_tool"]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = env.run(&["tasks", "--status", "sleeping"]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = env.run(&["answer", "abc"]);
    assert_eq!(out.code, 2, "{out:?}");
    // Nothing was started by any of them.
    assert!(env.tasks().is_empty());

    let bad = env.dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"mcpServers": {"x": {"args": []}}}"#).unwrap();
    let env = Env { config: Some(bad), ..Env::demo() };
    let out = env.run(&["servers"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("mcpServers.x.command"), "{out:?}");
}

#[test]
fn unknown_tasks_and_finished_tasks_are_refused_with_the_real_state() {
    let env = Env::demo();
    for args in [&["show", "deadbeef"][..], &["answer", "deadbeef", "--decline"], &["cancel", "deadbeef"]] {
        let out = env.run(args);
        assert_ne!(out.code, 0, "{args:?}: {out:?}");
        assert!(out.stderr.contains("no task"), "{args:?}: {out:?}");
    }
    assert_eq!(env.run(&["run", "demo", "generate_report", "--args", &report(0.0)]).code, 0);
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["cancel", &id[..6]]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("completed"), "{out:?}");
    let out = env.run(&["answer", &id, "--json", "{}"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("is completed"), "{out:?}");
}

#[test]
fn tasks_filter_by_status_and_show_finds_a_prefix() {
    let env = Env::demo();
    assert_eq!(env.run(&["run", "demo", "generate_report", "--args", &report(0.0)]).code, 0);
    assert_eq!(env.run(&["run", "demo", "flaky_export", "--args", r#"{"fail_at": 0}"#]).code, 1);
    let all = env.tasks();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["tool"], "flaky_export", "newest first");

    let out = env.run(&["tasks", "--status", "failed", "--json"]);
    let failed = out.json();
    assert_eq!(failed.as_array().unwrap().len(), 1, "{out:?}");
    assert_eq!(failed[0]["tool"], "flaky_export");

    let out = env.run(&["tasks"]);
    assert!(out.stdout.starts_with("ID"), "{out:?}");
    assert!(out.stdout.lines().any(|l| l.contains("failed") && l.contains("flaky_export")), "{out:?}");

    let id = id_of(&all[1]);
    let out = env.run(&["show", &id[..8]]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&id) && out.stdout.contains("events:"), "{out:?}");
    assert!(out.stdout.contains("created") && out.stdout.contains("result"), "{out:?}");
    assert!(out.stdout.contains("# Report: tides"), "{out:?}");
}

#[test]
fn ctrl_c_during_run_cancels_the_task() {
    let env = Env::demo();
    let child = env.spawn(&["run", "demo", "generate_report", "--args", &report(30.0)]);
    let t = env.wait_task(has_remote);
    signal(child.id(), "INT");
    let out = finish(child);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stderr.contains("cancelled"), "{out:?}");
    let t = env.show(&id_of(&t));
    assert_eq!(t["status"], "cancelled");
}

#[test]
fn a_task_left_by_kill_9_can_be_cancelled() {
    let env = Env::demo();
    let t = env.kill_9_when(&["run", "demo", "generate_report", "--args", &report(30.0)], has_remote);
    let out = env.run(&["cancel", &id_of(&t)[..8]]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(env.show(&id_of(&t))["status"], "cancelled");
    let out = env.run(&["cancel", &id_of(&t)]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("cancelled"), "{out:?}");
}

#[test]
fn kill_9_mid_task_then_resume_completes_it_exactly_once() {
    let env = Env::demo();
    let t = env.kill_9_when(&["run", "demo", "generate_report", "--args", &report(1.5)], has_remote);
    assert_eq!(env.show(&id_of(&t))["status"], "working");

    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let resumed = out.json();
    assert_eq!(resumed.as_array().unwrap().len(), 1, "{out:?}");
    assert_eq!(resumed[0]["status"], "completed", "{out:?}");
    let t = env.show(&id_of(&t));
    assert_eq!(result_events(&t), 1, "{t}");

    let out = env.run(&["resume", "--json"]);
    assert_eq!((out.code, out.json()), (0, json!([])), "{out:?}");
}

#[test]
fn kill_9_after_an_answer_then_resume_completes_it_exactly_once() {
    let env = Env::demo();
    assert_eq!(env.run(&["run", "demo", "diagnose_incident"]).code, 3);
    let id = id_of(&env.tasks()[0]);
    env.kill_9_when(&["answer", &id, "--json", r#"{"service": "billing"}"#], |t| t["status"] != "input_required");
    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(result_events(&t), 1, "{t}");
}

#[test]
fn a_server_killed_mid_task_is_restarted_and_the_task_completes() {
    let env = Env::demo();
    let child = env.spawn(&["run", "demo", "generate_report", "--args", &report(1.5), "--json"]);
    let t = env.wait_task(has_remote);
    let pid = env.demo_server_pid().expect("the demo server runs");
    signal(pid, "KILL");
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "completed");
    assert_ne!(env.demo_server_pid(), Some(pid));
    let t = env.show(&id_of(&t));
    assert_eq!(result_events(&t), 1, "{t}");
}

#[test]
fn a_second_cli_gets_the_lock_error_naming_the_holder_while_reads_still_work() {
    let env = Env::demo();
    let child = env.spawn(&["run", "demo", "generate_report", "--args", &report(1.5)]);
    let t = env.wait_task(has_remote);
    let out = env.run(&["servers"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(&format!("pid {}", child.id())), "{out:?}");
    assert!(out.stderr.contains("in use"), "{out:?}");
    let out = env.run(&["resume"]);
    assert_eq!(out.code, 1, "{out:?}");

    // Reading needs no lock.
    let out = env.run(&["show", &id_of(&t)[..8], "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "working");
    assert_eq!(finish(child).code, 0);
}

#[test]
fn interactive_prompt_on_a_terminal_and_kill_9_in_the_middle_of_it() {
    let env = Env::demo();
    // Answered at the keyboard: the second choice, empty notes, default for page_oncall.
    let mut child = env.in_a_terminal("run demo diagnose_incident");
    env.wait_task(|t| t["status"] == "input_required");
    std::thread::sleep(Duration::from_millis(300));
    child.stdin.as_mut().unwrap().write_all(b"2\n\n\n").unwrap();
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("demo asks:"), "the form is shown: {out:?}");
    let t = env.show(&id_of(&env.tasks()[0]));
    assert_eq!(t["status"], "completed");
    let answer = t["events"].as_array().unwrap().iter().find(|e| e["kind"] == "answer").unwrap().clone();
    assert_eq!(answer["data"]["response"]["content"], json!({"service": "search", "page_oncall": false}));

    // Killed while the form is open: the question stays, and a new process answers it.
    let mut child = env.in_a_terminal("run demo diagnose_incident");
    let t = env.wait_task(|t| t["status"] == "input_required" && t["tool"] == "diagnose_incident");
    std::thread::sleep(Duration::from_millis(300));
    // The CLI behind `script` (and its shell) is found by the lock it holds, which names it.
    let lock = std::fs::read_to_string(env.data_dir().join("engine.lock")).unwrap();
    let pid: u32 = lock.strip_prefix("pid ").and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok()).unwrap();
    signal(pid, "KILL");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}/cmdline")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(env.show(&id_of(&t))["status"], "input_required");
    let out = env.run(&["answer", &id_of(&t), "--json", r#"{"service": "checkout"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(result_events(&env.show(&id_of(&t))), 1);
}

#[test]
fn the_legacy_era_of_the_demo_server_runs_asks_and_resumes() {
    let env = Env { force_era: Some("legacy"), ..Env::demo() };
    let out = env.run(&["run", "demo", "generate_report", "--args", &report(0.2), "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["era"], "legacy");
    let out = env.run(&["tools", "demo"]);
    assert!(out.stdout.lines().any(|l| l.starts_with("generate_report") && l.contains("required")), "{out:?}");

    // A legacy question is an open request on one connection: after a new process the server
    // must ask again before the answer can go.
    let out = env.run(&["run", "demo", "diagnose_incident"]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["answer", &id, "--json", r#"{"service": "auth"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(result_events(&env.show(&id)), 1);
}

#[test]
fn the_everything_server_is_legacy_only_and_runs_a_research_task() {
    let env = Env::demo();
    let entry = json!({"command": "node", "args": [everything_server_entry(), "stdio"]});
    let config = write_servers_config(&env.dir.path().join("everything.json"), [("everything", entry)]);
    let env = Env { config: Some(config), ..env };
    let out = env.run(&["run", "everything", "simulate-research-query", "--args", r#"{"topic": "x"}"#, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!((t["status"].as_str(), t["era"].as_str()), (Some("completed"), Some("legacy")), "{t}");
}

#[test]
fn bench_reports_throughput_and_latency() {
    let env = Env::demo();
    let args = r#"{"n": 1, "delay_ms": 0}"#;
    let out = env.run(&["bench", "demo", "count", "--args", args, "--tasks", "12", "--concurrency", "4", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let r = out.json();
    assert_eq!((r["tasks"].as_u64(), r["concurrency"].as_u64(), r["failed"].as_u64()), (Some(12), Some(4), Some(0)));
    assert!(r["tasks_per_s"].as_f64().unwrap() > 0.0, "{r}");
    let l = &r["latency_ms"];
    assert!(l["p50"].as_f64() <= l["p90"].as_f64() && l["p99"].as_f64() <= l["max"].as_f64(), "{r}");
    assert_eq!(env.tasks().len(), 12);

    let out = env.run(&["bench", "demo", "count", "--args", r#"{"n": "x"}"#, "--tasks", "2"]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn a_server_that_cannot_start_is_a_runtime_error_naming_it() {
    let env = Env::demo();
    let config = env.dir.path().join("broken.json");
    let text = json!({"mcpServers": {"broken": {"command": env.dir.path().join("no-such-server")}}});
    std::fs::write(&config, text.to_string()).unwrap();
    let env = Env { config: Some(config), ..env };
    let out = env.run(&["run", "broken", "anything"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("broken") && out.stderr.contains("not available"), "{out:?}");
    assert!(env.tasks().is_empty());
}

/// `taskdeck-cli tasks | head` must not panic when `head` stops reading.
#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    let env = Env::demo();
    assert_eq!(env.run(&["run", "demo", "count", "--args", r#"{"n":1,"delay_ms":0}"#]).code, 0);
    // The reading end is gone before the command starts, so its first write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = env.cmd(&["tasks"]).stdout(writer).stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
}

/// A server whose every string is hostile (`tests/support/hostile_server.py`); files its shell
/// payloads would create land in `markers`.
fn hostile() -> (Env, PathBuf) {
    let env = Env::demo();
    let markers = env.dir.path().join("markers");
    std::fs::create_dir(&markers).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/hostile_server.py");
    let entry = json!({"command": "python3", "args": [script, &markers]});
    let config = write_servers_config(&env.dir.path().join("hostile.json"), [("hostile", entry)]);
    (Env { config: Some(config), ..env }, markers)
}

/// What no terminal may receive from a server: control characters other than newline and tab
/// (so no escape sequence), bidi controls and invisible characters.
fn raw_terminal_text(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
        })
        .collect()
}

fn assert_nothing_raw(out: &Out) {
    assert_eq!(raw_terminal_text(&out.stdout), [] as [char; 0], "stdout: {out:?}");
    assert_eq!(raw_terminal_text(&out.stderr), [] as [char; 0], "stderr: {out:?}");
}

fn markers_made(markers: &Path) -> Vec<String> {
    std::fs::read_dir(markers).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn a_hostile_servers_escapes_reach_the_terminal_only_as_visible_text() {
    let (env, _) = hostile();
    let out = env.run(&["tools", "hostile"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_nothing_raw(&out);
    assert!(out.stdout.contains(r"asks \u{1b}[2J"), "shown, not obeyed: {out:?}");

    let out = env.run(&["run", "hostile", "fail"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_nothing_raw(&out);
    assert!(out.stderr.contains(r"broke \u{1b}[2J\u{1b}[H\u{1b}]0;owned\u{7}"), "{out:?}");

    let out = env.run(&["run", "hostile", "ask"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_nothing_raw(&out);
    assert!(out.stderr.contains(r"Answer me \u{1b}[2J"), "{out:?}");
    assert!(out.stderr.contains(r"\u{202e}txt.exe") && out.stderr.contains(r"ad\u{200b}min"), "{out:?}");

    let id = id_of(&env.tasks()[0]);
    for args in [&["show", id.as_str()][..], &["tasks"], &["servers"]] {
        let out = env.run(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        assert_nothing_raw(&out);
    }
}

#[test]
fn the_answer_hint_pasted_into_a_shell_runs_only_the_answer_with_the_servers_names_intact() {
    let (env, markers) = hostile();
    let out = env.run(&["run", "hostile", "ask"]);
    assert_eq!(out.code, 3, "{out:?}");
    let hint = out.stderr.lines().find_map(|l| l.strip_prefix("answer with: ")).expect("a hint").to_owned();
    assert!(hint.starts_with("taskdeck-cli "), "{hint}");

    // Pasted as printed, with a `taskdeck-cli` on the PATH that writes down the words the shell gave it.
    let bin = env.dir.path().join("bin");
    let words = env.dir.path().join("words");
    std::fs::create_dir(&bin).unwrap();
    let recorder = format!("#!/bin/sh\nfor w in \"$@\"; do printf '%s\\0' \"$w\"; done > '{}'\n", words.display());
    std::fs::write(bin.join("taskdeck-cli"), recorder).unwrap();
    Command::new("chmod").arg("+x").arg(bin.join("taskdeck-cli")).status().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let status = Command::new("sh").arg("-c").arg(&hint).env("PATH", path).current_dir(&markers).status().unwrap();
    assert!(status.success(), "{hint}");
    assert_eq!(markers_made(&markers), Vec::<String>::new(), "the server's commands ran: {hint}");

    let words = std::fs::read(&words).unwrap();
    let words: Vec<String> = words.split(|b| *b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
    let at = words.iter().position(|w| w == "--json").expect("--json");
    assert_eq!(&words[at - 2..at], ["answer", id_of(&env.tasks()[0]).as_str()]);
    let content: Value = serde_json::from_str(&words[at + 1]).unwrap();
    let marker = markers.display();
    let choice = "choice\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\\u{202e}txt.exe\u{202c}ad\u{200b}min\r\u{9b}31m";
    assert_eq!(
        content,
        json!({
            format!("x'; touch {marker}/quote-in-name; echo '"): format!("'$(touch {marker}/subst-in-default)'"),
            choice: format!("it's`touch {marker}/backtick-in-option`\"; touch {marker}/after-option #"),
        }),
        "the shell hands the CLI the server's exact names and values"
    );
}

#[test]
fn run_json_prints_the_record_of_a_task_that_waits_for_input() {
    let env = Env::demo();
    let out = env.run(&["run", "demo", "diagnose_incident", "--json"]);
    assert_eq!(out.code, 3, "{out:?}");
    let t = out.json();
    assert_eq!(t["status"], "input_required", "{t}");
    assert_eq!(t["id"], id_of(&env.tasks()[0]).as_str());
    assert_eq!(t["question"]["asks"]["kind"], "form");
    // The person still gets the question and the hint on stderr.
    assert!(out.stderr.contains("answer with: "), "{out:?}");
}

#[test]
fn a_url_question_shows_the_whole_address_its_domain_and_refuses_javascript() {
    let (env, _) = hostile();
    let long = format!("https://login.example.co.uk/{}?end=1", "a".repeat(5000));
    let out = env.run(&["run", "hostile", "visit", "--args", &json!({"url": long}).to_string()]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains(&format!("open this address to answer: {long}\n")), "the whole URL: {out:?}");
    assert!(out.stderr.contains("site: example.co.uk (host login.example.co.uk)"), "{out:?}");
    assert!(out.stderr.contains("--json '{}'"), "{out:?}");

    let out = env.run(&["run", "hostile", "visit", "--args", r#"{"url": "https://xn--pple-43d.com/login"}"#]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("site: xn--pple-43d.com"), "{out:?}");
    assert!(
        out.stderr.contains("warning: An international name: xn--pple-43d.com is displayed as “аpple.com”"),
        "{out:?}"
    );
    assert!(out.stderr.contains("warning: “аpple” mixes alphabets"), "{out:?}");

    let out = env.run(&["run", "hostile", "visit", "--args", r#"{"url": "javascript:alert(document.cookie)"}"#]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_nothing_raw(&out);
    assert!(out.stderr.contains("Taskdeck will not open this address: javascript:alert(document.cookie)"), "{out:?}");
    assert!(
        out.stderr.contains("refused: Taskdeck only opens web addresses (http, https), not javascript: links."),
        "{out:?}"
    );
    assert!(!out.stderr.contains("--json"), "accepting is not offered: {out:?}");
    assert!(out.stderr.contains("--decline"), "{out:?}");
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["show", &id]);
    assert!(out.stdout.contains("refused: Taskdeck only opens web addresses"), "{out:?}");
}

#[test]
fn accepting_a_url_question_sends_no_content() {
    let (env, markers) = hostile();
    let args = r#"{"url": "https://a.example/sign-in"}"#;
    let out = env.run(&["run", "hostile", "visit", "--args", args, "--answer", "{}", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "completed", "{out:?}");
    let answers = std::fs::read_to_string(markers.join("../answers.jsonl")).unwrap();
    let answer: Value = serde_json::from_str(answers.lines().next().unwrap()).unwrap();
    assert_eq!(answer["result"]["action"], "accept", "{answers}");
    assert!(answer["result"].get("content").is_none(), "{answers}");
}

#[test]
fn the_prompt_at_a_terminal_shows_a_hostile_question_without_obeying_it() {
    let (env, _) = hostile();
    // At a terminal the live bar and the prompt are drawn.
    let mut child = env.in_a_terminal("run hostile ask");
    env.wait_task(|t| t["status"] == "input_required");
    std::thread::sleep(Duration::from_millis(300));
    child.stdin.as_mut().unwrap().write_all(b":decline\n").unwrap();
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("hostile asks: Answer me"), "the form is shown: {out:?}");
    // The bar draws with escapes of its own; none of the server's may arrive.
    for raw in ["\x1b[2J", "\x1b]0;owned", "\x1b]8;;", "\u{202e}", "\u{200b}", "\u{9b}"] {
        assert!(!out.stdout.contains(raw) && !out.stderr.contains(raw), "{raw:?} reached the terminal: {out:?}");
    }
    assert!(out.stdout.contains(r"Answer me \u{1b}[2J\u{1b}[H\u{1b}]0;owned\u{7}"), "{out:?}");
    assert!(out.stdout.contains(r"Described \u{1b}[2J"), "the fields' descriptions too: {out:?}");
}

/// Writes garbage over the root page of the tasks table of a closed store, leaving the header and
/// the schema readable: the damage SQLite meets only when it reads the tasks.
fn damage_tasks_page(store: &Path) {
    let conn = rusqlite::Connection::open(store).unwrap();
    // A rollback journal, so the closed file alone is the whole database and can be compared.
    conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(())).unwrap();
    drop(conn);
    overwrite_root_page(store, "tasks");
}

/// Writes garbage over the root page of `table` in a closed store.
fn overwrite_root_page(store: &Path, table: &str) {
    let conn = rusqlite::Connection::open(store).unwrap();
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let root: i64 =
        conn.query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [table], |r| r.get(0)).unwrap();
    drop(conn);
    let mut data = std::fs::read(store).unwrap();
    let (start, len) = (((root - 1) * page_size) as usize, page_size as usize);
    for (i, b) in data[start..start + len].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) ^ 0xC3;
    }
    std::fs::write(store, &data).unwrap();
}

#[test]
fn a_damaged_store_is_refused_before_the_task_is_recorded_or_sent() {
    let env = Env::demo();
    let args = r#"{"n":1,"delay_ms":0}"#;
    assert_eq!(env.run(&["run", "demo", "count", "--args", args]).code, 0);
    let store = env.data_dir().join("taskdeck.sqlite3");
    damage_tasks_page(&store);
    let before = std::fs::read(&store).unwrap();

    // A server of its own state, so anything it ran would show there.
    let state = env.dir.path().join("demo-state-after");
    let config = write_servers_config(&env.dir.path().join("after.json"), [("demo", demo_server_entry(&state))]);
    let env = Env { config: Some(config), ..env };
    let out = env.run(&["run", "demo", "count", "--args", args]);
    // The CLI's contract: a store that cannot be used is a runtime failure (1), not a usage error.
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("damaged") && out.stderr.contains("taskdeck.sqlite3"), "{out:?}");
    assert!(!state.exists(), "the server was started: {:?}", std::fs::read_dir(&state).map(|d| d.count()));
    assert_eq!(std::fs::read(&store).unwrap(), before, "the damaged store was written to");

    let out = env.run(&["tasks"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("damaged"), "{out:?}");
    assert_eq!(std::fs::read(&store).unwrap(), before, "reading wrote to the damaged store");
}

/// Writes garbage over the root page of the search index's data in a closed store, which stays in
/// WAL mode with no WAL (as a clean exit leaves it): a page `tasks`, `show`, `export` and `prune
/// --dry-run` never read, so only the store's integrity check finds it.
fn damage_search_page(store: &Path) {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    drop(conn);
    assert!(!PathBuf::from(format!("{}-wal", store.display())).exists(), "a WAL is left beside the store");
    overwrite_root_page(store, "task_search_data");
}

#[test]
fn a_reader_on_a_store_damaged_where_it_does_not_read_fails_as_a_refusal_at_open_does() {
    let env = Env::demo();
    let args = r#"{"n":1,"delay_ms":0}"#;
    let out = env.run(&["run", "demo", "count", "--args", args, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = id_of(&out.json());
    let store = env.data_dir().join("taskdeck.sqlite3");
    damage_search_page(&store);
    let before = std::fs::read(&store).unwrap();

    // A command with the engine checks the store before it opens it: the refusal every reader's
    // failure is to look like.
    let refused = env.run(&["pin", &id]);
    assert_eq!(refused.code, 1, "{refused:?}");
    let refusal = refused.stderr.trim_end().to_owned();
    assert!(refusal.contains("damaged") && refusal.contains(&store.display().to_string()), "{refused:?}");

    let exported = env.dir.path().join("export.jsonl");
    let exported_arg = exported.display().to_string();
    let readers: [&[&str]; 9] = [
        &["tasks"],
        &["tasks", "--json"],
        &["tasks", "--limit", "1"],
        &["show", &id],
        &["show", &id, "--json"],
        &["export"],
        &["export", "--format", "csv"],
        &["export", "--output", &exported_arg],
        &["prune", "--dry-run", "--keep", "0"],
    ];
    for reader in readers {
        let out = env.run(reader);
        assert_eq!(out.code, 1, "{reader:?}: {out:?}");
        assert_eq!(out.stderr.trim_end().lines().last(), Some(refusal.as_str()), "{reader:?}: {out:?}");
    }
    assert!(!exported.exists(), "an export of a damaged store was put in place");
    assert_eq!(std::fs::read(&store).unwrap(), before, "reading wrote to the damaged store");
}

/// Every file and folder under the data directory after a run, with its mode.
#[cfg(unix)]
fn modes_under(dir: &Path) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = vec![(dir.to_owned(), std::fs::metadata(dir).unwrap().permissions().mode() & 0o777)];
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            found.extend(modes_under(&entry.path()));
        } else {
            found.push((entry.path(), meta.permissions().mode() & 0o777));
        }
    }
    found
}

#[cfg(unix)]
#[test]
fn every_file_taskdeck_writes_is_readable_by_its_user_only() {
    let env = Env::demo();
    let mut child = env.spawn(&["run", "demo", "count", "--args", r#"{"n":3,"delay_ms":300}"#]);
    // While the run is going, so the lock, the WAL and the server's log are all there.
    env.wait_task(has_remote);
    let during = modes_under(&env.data_dir());
    let _ = child.wait();
    let after = modes_under(&env.data_dir());
    let names: Vec<String> =
        during.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in ["taskdeck.sqlite3", "taskdeck.sqlite3-wal", "engine.lock", "logs", "servers", "demo.log"] {
        assert!(names.iter().any(|n| n == expected), "no {expected} in {during:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("taskdeck-cli.")), "no CLI log in {during:?}");
    for (path, mode) in during.iter().chain(&after) {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(*mode, want, "{} is {mode:o}", path.display());
    }
}

#[cfg(target_os = "linux")]
fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The server is a shell that outlives its stdin (it sleeps once the demo server in it ends), so
/// only the kernel's parent-death signal can end it when the CLI is killed.
#[cfg(target_os = "linux")]
#[test]
fn a_server_dies_with_a_cli_killed_by_kill_9() {
    let env = Env::demo();
    let state = env.dir.path().join("demo-state");
    let marker = format!("pdeathsig-{}", env.dir.path().display());
    let script = format!(
        "'{}' --state '{}' --poll-interval-ms 100; sleep 600 # {marker}",
        taskdeck_test_support::demo_server().display(),
        state.display()
    );
    let config = write_servers_config(
        &env.dir.path().join("shell.json"),
        [("demo", json!({"command": "sh", "args": ["-c", script]}))],
    );
    let env = Env { config: Some(config), ..env };
    let child = env.spawn(&["run", "demo", "count", "--args", r#"{"n":100,"delay_ms":200}"#]);
    env.wait_task(has_remote);
    let out = Command::new("pgrep").arg("-f").arg("--").arg(&marker).output().unwrap();
    let leader: u32 = String::from_utf8_lossy(&out.stdout).lines().next().and_then(|l| l.trim().parse().ok()).unwrap();
    assert!(pid_alive(leader));
    signal(child.id(), "KILL");
    let _ = finish(child);
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(leader) {
        assert!(Instant::now() < deadline, "the server {leader} outlived the CLI");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An environment whose one server, `fault`, is the client's misbehaving server in `scenario`;
/// its command line carries the test's directory, so the test can look for its processes.
fn fault_env(scenario: &str) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/support/fault_server.py");
    let entry = json!({
        "command": "python3",
        "args": [script.display().to_string(), scenario, dir.path().display().to_string()],
        "env": {"FAULT_COUNT": dir.path().join("count").display().to_string()},
    });
    let config = write_servers_config(&dir.path().join("servers.json"), [("fault", entry)]);
    Env { dir, config: Some(config), force_era: None }
}

impl Env {
    /// The fault server's processes still running for this test.
    fn fault_server_pids(&self) -> Vec<String> {
        let out =
            Command::new("pgrep").arg("-f").arg("--").arg(self.dir.path().display().to_string()).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
    }
}

#[test]
fn a_server_that_exits_at_once_is_a_clear_error_not_a_silent_death() {
    let env = fault_env("exit-at-once");
    let started = Instant::now();
    let out = env.run(&["run", "fault", "job"]);
    assert_eq!(out.code, 1, "a runtime error, not a signal: {out:?}");
    assert!(out.stderr.contains("fault") && out.stderr.contains("not available"), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(env.tasks().iter().all(|t| t["status"] != "working"), "{:?}", env.tasks());
    assert!(env.fault_server_pids().is_empty());
}

#[test]
fn a_server_that_closes_its_input_mid_task_fails_the_task_and_leaves_no_process() {
    let env = fault_env("close-stdin");
    let started = Instant::now();
    let out = env.run(&["run", "fault", "job"]);
    assert_eq!(out.code, 1, "the task's failure, not a signal: {out:?}");
    assert!(!out.stderr.trim().is_empty(), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let task = env.wait_task(|t| t["status"] != "working");
    assert_eq!(task["status"], "failed", "{task:#}");
    assert_eq!(task["error"]["reason"], "UNKNOWN_TO_SERVER", "re-attached on the restarted server: {task:#}");
    let count = std::fs::read_to_string(env.dir.path().join("count")).unwrap_or_default();
    assert_eq!(count.lines().count(), 1, "sent once: {count}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !env.fault_server_pids().is_empty() {
        assert!(Instant::now() < deadline, "servers left running: {:?}", env.fault_server_pids());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn show_says_the_code_of_a_task_its_restarted_server_forgot_once() {
    let env = fault_env("close-stdin");
    assert_eq!(env.run(&["run", "fault", "job"]).code, 1);
    let task = env.wait_task(|t| t["status"] == "failed");
    assert_eq!(
        (task["error"]["code"].as_i64(), task["error"]["reason"].as_str()),
        (Some(-32602), Some("UNKNOWN_TO_SERVER"))
    );
    let message = task["error"]["message"].as_str().unwrap();
    assert!(message.ends_with(": unknown task"), "the server's words, without the code: {message}");

    let out = env.run(&["show", &id_of(&task)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.matches("-32602").count(), 1, "{out:?}");
    assert!(out.stdout.contains("unknown task (code -32602) [UNKNOWN_TO_SERVER]"), "{out:?}");
}

#[test]
fn answering_a_task_that_failed_or_was_cancelled_is_refused_with_how_it_ended() {
    let env = fault_env("close-stdin");
    assert_eq!(env.run(&["run", "fault", "job"]).code, 1);
    let id = id_of(&env.wait_task(|t| t["status"] == "failed"));

    let out = env.run(&["answer", &id, "--decline"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(&format!("task {id} is failed; refused to record an answer")), "{out:?}");
    assert!(out.stderr.contains("it failed: the server no longer knows this task"), "{out:?}");
    assert!(out.stderr.contains("(code -32602) [UNKNOWN_TO_SERVER]"), "{out:?}");

    let env = Env::demo();
    let child = env.spawn(&["run", "demo", "generate_report", "--args", &report(30.0)]);
    let id = id_of(&env.wait_task(has_remote));
    signal(child.id(), "INT");
    assert_eq!(finish(child).code, 4);
    let out = env.run(&["answer", &id, "--decline"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(&format!("task {id} is cancelled; refused")), "{out:?}");
    assert!(out.stderr.contains("; it was cancelled: "), "{out:?}");
}

/// An environment with the demo server beside the given entries.
fn demo_with(entries: Vec<(&'static str, Value)>) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut servers = vec![("demo", demo_server_entry(&dir.path().join("demo-state")))];
    servers.extend(entries);
    let config = write_servers_config(&dir.path().join("servers.json"), servers);
    Env { dir, config: Some(config), force_era: None }
}

#[test]
fn a_bad_entry_is_listed_with_its_error_and_the_good_server_still_runs() {
    let env = demo_with(vec![
        ("broken", json!({"command": 7})),
        ("old", json!({"type": "sse", "url": "https://mcp.example.com/sse"})),
    ]);
    let out = env.run(&["run", "demo", "generate_report", "--args", &report(0.0), "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "completed");

    let out = env.run(&["servers", "--json"]);
    assert_eq!(out.code, 2, "unreadable entries make it a config error: {out:?}");
    let list = out.json();
    let by_name = |n: &str| list.as_array().unwrap().iter().find(|s| s["name"] == n).cloned().unwrap();
    let demo = by_name("demo");
    assert_eq!((demo["phase"].as_str(), demo["transport"].as_str()), (Some("ready"), Some("stdio")));
    assert!(demo["error"].is_null() && demo["command"].as_str().unwrap().contains("taskdeck-demo-server"));
    let broken = by_name("broken");
    assert_eq!(broken["phase"], "invalid");
    let error = broken["error"].as_str().unwrap();
    assert!(error.contains("servers.json") && error.contains("mcpServers.broken.command"), "{error}");
    let old = by_name("old");
    assert_eq!((old["phase"].as_str(), old["transport"].as_str()), (Some("invalid"), Some("sse")));
    assert!(old["error"].as_str().unwrap().contains("HTTP+SSE"), "{old}");
    for field in ["era", "protocol_version", "tasks", "server_name", "server_version", "pid", "restarts", "last_error"]
    {
        assert!(broken.get(field).is_some(), "every field of a server is there for a bad entry too: {field}");
    }

    let out = env.run(&["servers"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.lines().any(|l| l.starts_with("broken") && l.contains("invalid")), "{out:?}");
    assert!(out.stderr.contains("broken: cannot be read:") && out.stderr.contains("mcpServers.old.type"), "{out:?}");

    let out = env.run(&["run", "old", "anything"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("\"old\"") && out.stderr.contains("HTTP+SSE"), "{out:?}");
}

#[test]
fn a_url_entry_is_an_http_server_and_a_command_against_it_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        write_servers_config(&dir.path().join("servers.json"), [("remote", json!({"url": "http://127.0.0.1:1/mcp"}))]);
    let env = Env { dir, config: Some(config), force_era: None };
    let started = Instant::now();
    let out = env.run(&["servers", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let s = &out.json()[0];
    assert_eq!(
        (s["name"].as_str(), s["transport"].as_str(), s["url"].as_str(), s["command"].as_str()),
        (Some("remote"), Some("http"), Some("http://127.0.0.1:1/mcp"), Some("http://127.0.0.1:1/mcp"))
    );
    assert_eq!(s["phase"], "failed", "nothing listens there: {s}");
    assert!(s["error"].is_null(), "the entry itself is fine: {s}");

    let out = env.run(&["run", "remote", "generate_report"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("remote"), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    assert!(env.tasks().is_empty(), "nothing was started: {:?}", env.tasks());
}

#[test]
fn unknown_keys_are_noted_and_the_server_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut entry = demo_server_entry(&dir.path().join("demo-state"));
    entry["alwaysAllow"] = json!(["generate_report"]);
    let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
    let env = Env { dir, config: Some(config), force_era: None };
    let out = env.run(&["servers", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let notes = out.json()[0]["notes"].clone();
    assert!(notes[0].as_str().unwrap().contains("mcpServers.demo.alwaysAllow: unknown key; ignored"), "{notes}");
    assert!(out.stderr.contains("note:") && out.stderr.contains("alwaysAllow"), "{out:?}");
}

#[test]
fn a_server_pinned_to_an_era_in_the_config_speaks_that_era() {
    for era in ["legacy", "modern"] {
        let env = Env { force_era: Some(era), ..Env::demo() };
        let out = env.run(&["servers", "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.json()[0]["era"], era, "{out:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut entry = demo_server_entry(&dir.path().join("demo-state"));
    entry["era"] = json!("medieval");
    let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
    let env = Env { dir, config: Some(config), force_era: None };
    let out = env.run(&["servers", "--json"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.json()[0]["error"].as_str().unwrap().contains("mcpServers.demo.era"), "{out:?}");
}

#[test]
fn answer_record_prints_the_task_record_whatever_the_exit_code() {
    let (env, _) = hostile();
    let out = env.run(&["run", "hostile", "twice"]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.tasks()[0]);
    // The answer leads to a second question: still waiting (3), and the record says which task.
    let out = env.run(&["answer", &id, "--json", r#"{"x": "one"}"#, "--record"]);
    assert_eq!(out.code, 3, "{out:?}");
    let t = out.json();
    assert_eq!((t["id"].as_str(), t["status"].as_str()), (Some(id.as_str()), Some("input_required")), "{t}");
    assert_eq!(t["question"]["request"]["params"]["message"], "Question 2", "{t}");
    assert!(out.stderr.contains("answer with: "), "the person still gets the hint: {out:?}");

    let out = env.run(&["answer", &id, "--json", r#"{"x": "two"}"#, "--record"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!((t["id"].as_str(), t["status"].as_str()), (Some(id.as_str()), Some("completed")), "{t}");
    assert_eq!(t["result"]["content"][0]["text"], "twice");

    // Refused (the task has ended): exit 1, and the record still.
    let out = env.run(&["answer", &id, "--decline", "--record"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.json()["status"], "completed", "{out:?}");

    // Without the flag, nothing but the result's text on stdout, as before.
    let env = Env::demo();
    assert_eq!(env.run(&["run", "demo", "diagnose_incident"]).code, 3);
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["answer", &id, "--json", r#"{"service": "auth"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(serde_json::from_str::<Value>(&out.stdout).is_err(), "{out:?}");
    let help = env.run(&["answer", "--help"]);
    assert!(help.stdout.contains("--record"), "{help:?}");
}

#[test]
fn a_cancel_answered_about_another_task_is_said_so_and_nothing_of_it_is_applied() {
    let (env, _) = hostile();
    let out = env.run(&["run", "hostile", "twice"]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.tasks()[0]);
    let out = env.run(&["cancel", &id]);
    assert_eq!(out.code, 0, "cancelled here: {out:?}");
    assert_nothing_raw(&out);
    assert!(out.stderr.contains("answered the cancel about another task (\"t:someone-else\")"), "{out:?}");
    assert!(out.stderr.contains("nothing of its answer was applied"), "{out:?}");
    assert!(!out.stderr.contains("could not be reached"), "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "cancelled", "{t}");
    let statuses: Vec<&str> = t["events"].as_array().unwrap().iter().filter_map(|e| e["to_status"].as_str()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == "cancelled").count(), 1, "only our own cancel: {statuses:?}");
}

#[test]
fn show_says_how_many_earlier_events_were_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/support/bounds_server.py");
    let entry = json!({"command": "python3", "args": [script.display().to_string()]});
    let config = write_servers_config(&dir.path().join("servers.json"), [("bounds", entry)]);
    let env = Env { dir, config: Some(config), force_era: None };
    let out = env.run(&["run", "bounds", "chatty", "--args", r#"{"messages": 1500}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    let id = id_of(&env.tasks()[0]);

    let t = env.show(&id);
    let marker = t["events"].as_array().unwrap().iter().find(|e| e["kind"] == "dropped").expect("a marker").clone();
    let n = marker["data"]["dropped"].as_u64().unwrap();
    assert!(n > 400, "{marker}");
    let words = format!("{n} earlier events were dropped");
    assert_eq!(marker["data"]["message"], words.as_str(), "{marker}");

    let out = env.run(&["show", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    let line = out.stdout.lines().find(|l| l.contains(" dropped ")).expect("the marker's line");
    assert!(line.ends_with(&words), "{line}");
}

/// Issue 10, item 10: the server takes the answer, asks the same multi-megabyte question again and
/// completes the task in the same moment; the answer must not be reported as still waiting.
#[test]
fn an_answer_the_server_took_is_not_reported_as_waiting_when_a_big_question_comes_again() {
    let (env, _) = hostile();
    for _ in 0..3 {
        let out = env.run(&["run", "hostile", "again"]);
        assert_eq!(out.code, 3, "{out:?}");
        assert!(!out.stderr.contains("--json"), "too large to accept: {out:?}");
        let id = id_of(&env.tasks()[0]);
        let out = env.run(&["answer", &id, "--decline", "--record"]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.json()["status"], "completed", "{out:?}");
        let t = env.show(&id);
        let answers = t["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "answer").count();
        assert_eq!(answers, 1, "{t}");
    }
}

#[test]
fn a_disabled_server_is_listed_as_disabled_and_never_started() {
    let env = demo_with(vec![
        ("off", json!({"command": "/nonexistent/server", "disabled": true})),
        ("far", json!({"url": "https://mcp.example.com/mcp", "disabled": true})),
    ]);
    let out = env.run(&["servers", "--json"]);
    assert_eq!(out.code, 0, "a disabled entry is no config error: {out:?}");
    let list = out.json();
    let by_name = |n: &str| list.as_array().unwrap().iter().find(|s| s["name"] == n).cloned().unwrap();
    assert_eq!(by_name("demo")["phase"], "ready");
    let off = by_name("off");
    assert_eq!((off["phase"].as_str(), off["transport"].as_str()), (Some("disabled"), Some("stdio")));
    assert!(off["pid"].is_null() && off["error"].is_null(), "never started: {off}");
    let far = by_name("far");
    assert_eq!((far["phase"].as_str(), far["url"].as_str()), (Some("disabled"), Some("https://mcp.example.com/mcp")));

    let out = env.run(&["servers"]);
    assert!(out.stdout.lines().any(|l| l.starts_with("off") && l.contains("disabled")), "{out:?}");
    let out = env.run(&["run", "off", "anything"]);
    assert_ne!(out.code, 0, "a disabled server's tools are not runnable: {out:?}");
    assert!(out.stderr.contains("off"), "{out:?}");
}

/// How many tool calls the demo server took as tasks: the rows of its own task store.
fn demo_calls(env: &Env) -> i64 {
    let db = env.dir.path().join("demo-state").join("tasks.sqlite3");
    let conn = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.query_row("SELECT count(*) FROM tasks", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_run_repeated_with_one_idempotency_key_gives_back_the_same_task() {
    let env = Env::demo();
    let run =
        || env.run(&["run", "demo", "generate_report", "--args", &report(0.3), "--idempotency-key", "k-1", "--json"]);
    let first = run();
    assert_eq!(first.code, 0, "{first:?}");
    let again = run();
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(id_of(&again.json()), id_of(&first.json()), "the same task, not a second one");
    assert_eq!(again.json()["status"], "completed");
    assert_eq!(again.json()["idempotency_key"], "k-1");
    assert_eq!(env.tasks().len(), 1);
    assert_eq!(demo_calls(&env), 1, "the server was called once");

    // The output is what `run` printed for that state, the result text included.
    let text = || env.run(&["run", "demo", "generate_report", "--args", &report(0.2), "--idempotency-key", "k-t"]);
    let (once, twice) = (text(), text());
    assert_eq!((once.code, twice.code), (0, 0), "{once:?}\n{twice:?}");
    assert!(!once.stdout.trim().is_empty(), "{once:?}");
    assert_eq!(twice.stdout, once.stdout);
    assert_eq!(demo_calls(&env), 2);

    // A key used for another run is refused rather than answered with a task nobody asked for.
    let other = env.run(&["run", "demo", "generate_report", "--args", &report(0.4), "--idempotency-key", "k-1"]);
    assert_eq!(other.code, 2, "{other:?}");
    assert!(other.stderr.contains("k-1") && other.stderr.contains("new key"), "{other:?}");
    // Another key is another run.
    let fresh =
        env.run(&["run", "demo", "generate_report", "--args", &report(0.3), "--idempotency-key", "k-2", "--json"]);
    assert_eq!(fresh.code, 0, "{fresh:?}");
    assert_ne!(id_of(&fresh.json()), id_of(&first.json()));
    assert_eq!(demo_calls(&env), 3);
}

#[test]
fn a_keyed_run_of_a_task_waiting_for_input_exits_3_with_the_same_task() {
    let env = Env::demo();
    let run = || env.run(&["run", "demo", "diagnose_incident", "--idempotency-key", "ask", "--json"]);
    let first = run();
    assert_eq!(first.code, 3, "{first:?}");
    let again = run();
    assert_eq!(again.code, 3, "{again:?}");
    assert_eq!(id_of(&again.json()), id_of(&first.json()));
    assert!(again.stderr.contains("is waiting for input"), "{again:?}");
    assert_eq!(env.tasks().len(), 1);
}

#[test]
fn two_processes_racing_with_one_idempotency_key_start_one_tool_call() {
    let env = Env::demo();
    let args = report(1.0);
    let racers: Vec<Child> = (0..2)
        .map(|_| env.spawn(&["run", "demo", "generate_report", "--args", &args, "--idempotency-key", "race", "--json"]))
        .collect();
    let outs: Vec<Out> = racers.into_iter().map(finish).collect();
    for out in &outs {
        assert_eq!(out.code, 0, "{out:?}");
    }
    assert_eq!(id_of(&outs[0].json()), id_of(&outs[1].json()), "{outs:?}");
    assert_eq!(env.tasks().len(), 1);
    assert_eq!(demo_calls(&env), 1, "one tool call reached the server");
}

/// What the demo server with state in `state` noted of requests its clients gave up on.
fn abandoned_requests(state: &Path) -> String {
    std::fs::read_to_string(state.join("abandoned-requests.log")).unwrap_or_default()
}

/// Starts a slow plain call, interrupts the CLI once the call is on the wire, and returns the
/// task's record with its events.
fn cancel_a_slow_plain_call(env: &Env, state: &Path) -> Value {
    let args = json!({"query": "pool", "delay_ms": 30_000}).to_string();
    let child = env.spawn(&["run", "demo", "notes_search", "--args", &args]);
    // A plain call (legacy), or one the modern server may still make a task: a request until answered.
    let t = env.wait_task(|t| t["tool"] == "notes_search");
    // Recorded before it is sent: give the call a moment to reach the server.
    std::thread::sleep(Duration::from_millis(500));
    assert!(abandoned_requests(state).is_empty());
    signal(child.id(), "INT");
    let out = finish(child);
    assert_eq!(out.code, 4, "{out:?}");
    env.show(&id_of(&t))
}

fn told(t: &Value) -> Value {
    let cancelled = t["events"].as_array().unwrap().iter().find(|e| e["kind"] == "cancelled").cloned();
    cancelled.unwrap_or_else(|| panic!("no cancelled event: {t:#}"))["data"]["server_told"].clone()
}

#[test]
fn cancelling_a_plain_call_tells_the_server_over_stdio_in_either_era() {
    for era in ["legacy", "modern"] {
        let mut env = Env::demo();
        env.force_era = Some(era);
        let state = env.dir.path().join("demo-state");
        let t = cancel_a_slow_plain_call(&env, &state);
        assert_eq!(t["status"], "cancelled", "{era}: {t:#}");
        assert_eq!(told(&t), json!(true), "{era}: {t:#}");
        let seen = Instant::now() + Duration::from_secs(5);
        while !abandoned_requests(&state).contains("notifications/cancelled") {
            assert!(Instant::now() < seen, "{era}: the server never heard of the cancel");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn cancelling_a_plain_call_over_http_posts_the_notification_legacy_and_closes_the_stream_modern() {
    for (era, how) in [("legacy", "notifications/cancelled"), ("modern", "its stream closed")] {
        // Legacy HTTP closes the call's stream and posts the notification too.
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("demo-state");
        let server = taskdeck_test_support::demo_server_http(&state, "127.0.0.1:0");
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", server.entry(Some(era)))]);
        let env = Env { dir, config: Some(config), force_era: None };
        let t = cancel_a_slow_plain_call(&env, &state);
        assert_eq!(t["status"], "cancelled", "{era}: {t:#}");
        assert_eq!(told(&t), json!(true), "{era}: {t:#}");
        let seen = Instant::now() + Duration::from_secs(5);
        while !abandoned_requests(&state).contains(how) {
            assert!(Instant::now() < seen, "{era}: {:?}", abandoned_requests(&state));
            std::thread::sleep(Duration::from_millis(50));
        }
        if era == "modern" {
            // The closed stream is the cancellation: no notification is posted as well.
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                !abandoned_requests(&state).contains("notifications/cancelled"),
                "{:?}",
                abandoned_requests(&state)
            );
        }
    }
}

#[test]
fn a_modern_tasks_end_is_pushed_to_the_cli_before_the_next_poll() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("demo-state");
    // The server asks for polls 30 s apart (Taskdeck polls every 5 s at the most): only a pushed
    // status ends the run within a few seconds.
    let entry = json!({
        "command": taskdeck_test_support::demo_server(),
        "args": ["--state", state, "--poll-interval-ms", "30000"],
        "era": "modern",
    });
    let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
    let env = Env { dir, config: Some(config), force_era: None };
    let started = Instant::now();
    let out = env.run(&["run", "demo", "count", "--args", r#"{"n": 3, "delay_ms": 100}"#, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "completed");
    assert!(started.elapsed() < Duration::from_secs(4), "the end waited for a poll: {:?}", started.elapsed());
}
