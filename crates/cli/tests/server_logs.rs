//! The demo server's MCP log entries (`notifications/message`) through the real `taskdeck-cli`, in
//! both eras: the server declares `logging`; in 2025-11-25 it honours `logging/setLevel`, in
//! 2026-07-28 the level each request carries in its `_meta`, which Taskdeck sends from the
//! server's `logLevel`. The entries reach `logs SERVER --json` and the task's `show --json`, and an
//! entry below the configured level never comes.

use std::path::PathBuf;

use serde_json::{Value, json};
use taskdeck_test_support::cli::cli_command;
use taskdeck_test_support::{demo_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Env {
    fn demo(era: &str, level: Option<&str>) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = demo_server_entry(&dir.path().join("demo-state"));
        entry["era"] = json!(era);
        if let Some(level) = level {
            entry["logLevel"] = json!(level);
        }
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        Env { dir, config }
    }

    fn run(&self, args: &[&str]) -> (i32, String) {
        let o = cli_command(CLI, &self.config, &self.dir.path().join("data"), args).output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr);
        (
            o.status.code().unwrap_or(-1),
            format!("{stdout}{}", if stdout.is_empty() { stderr.to_string() } else { String::new() }),
        )
    }

    fn json(&self, args: &[&str]) -> Value {
        let (code, out) = self.run(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// The MCP entries of the demo server's log, from `logs demo --json`.
    fn mcp_lines(&self) -> Vec<Value> {
        let (code, out) = self.run(&["logs", "demo", "--json"]);
        assert_eq!(code, 0, "{out}");
        out.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .filter(|l| l["source"] == "mcp")
            .collect()
    }
}

fn texts(lines: &[Value]) -> Vec<String> {
    lines.iter().map(|l| l["text"].as_str().unwrap_or_default().to_owned()).collect()
}

/// Runs a report (a task in both eras) to its end and returns `show --json` of it.
fn report(env: &Env) -> Value {
    let t = env.json(&["run", "demo", "generate_report", "--args", r#"{"topic": "tides", "seconds": 0.4}"#, "--json"]);
    assert_eq!(t["status"], "completed", "{t}");
    env.json(&["show", t["id"].as_str().unwrap(), "--json"])
}

/// Publishes the notes (a plain call in both eras, asking a confirmation first in the modern one)
/// and returns `show --json` of it.
fn publish(env: &Env) -> Value {
    let t = env.json(&["run", "demo", "publish_notes", "--answer", r#"{"publish": true}"#, "--json"]);
    assert_eq!(t["status"], "completed", "{t}");
    env.json(&["show", t["id"].as_str().unwrap(), "--json"])
}

#[test]
fn a_reports_stage_entries_reach_the_server_log_and_the_tasks_show_in_both_eras() {
    for era in ["legacy", "modern"] {
        let env = Env::demo(era, Some("info"));
        let shown = report(&env);
        let mine = shown["server_log"].as_array().cloned().unwrap_or_default();
        assert_eq!(mine.len(), 4, "{era}: one entry per stage: {shown}");
        assert!(texts(&mine)[0].starts_with("finished stage 1 of 4: Collecting sources"), "{era}: {mine:?}");
        assert!(mine.iter().all(|l| l["level"] == "info" && l["logger"] == "demo.report"), "{era}: {mine:?}");
        let logged = env.mcp_lines();
        assert!(texts(&logged).iter().any(|t| t.starts_with("finished stage 4 of 4: Formatting")), "{era}: {logged:?}");
    }
}

#[test]
fn a_level_above_the_entries_keeps_them_from_coming_in_both_eras() {
    for era in ["legacy", "modern"] {
        let env = Env::demo(era, Some("warning"));
        let shown = report(&env);
        assert_eq!(shown["server_log"], json!([]), "{era}: {shown}");
        let shown = publish(&env);
        assert_eq!(shown["server_log"], json!([]), "{era}: {shown}");
        assert_eq!(env.mcp_lines(), Vec::<Value>::new(), "{era}: nothing below warning is sent");
    }
}

#[test]
fn a_plain_calls_entries_name_it_and_debug_comes_only_when_asked_for() {
    for era in ["legacy", "modern"] {
        let env = Env::demo(era, Some("debug"));
        let shown = publish(&env);
        let mine = shown["server_log"].as_array().unwrap();
        assert_eq!(mine.len(), 2, "{era}: the debug entry and the info one: {shown}");
        assert_eq!(mine[0]["level"], "debug", "{era}: {mine:?}");
        assert!(texts(mine)[1].starts_with("published 5 notes"), "{era}: {mine:?}");
        assert!(mine.iter().all(|l| l["logger"] == "demo.publish"), "{era}: {mine:?}");

        let env = Env::demo(era, Some("info"));
        let shown = publish(&env);
        let mine = texts(shown["server_log"].as_array().unwrap());
        assert_eq!(mine.len(), 1, "{era}: the info entry alone: {shown}");
    }
}

#[test]
fn over_modern_http_a_plain_calls_entries_come_on_its_own_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = taskdeck_test_support::demo_server_http(&dir.path().join("demo-state"), "127.0.0.1:0");
    let mut entry = server.entry(Some("modern"));
    entry["logLevel"] = json!("debug");
    let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
    let env = Env { dir, config };
    let shown = publish(&env);
    let mine = texts(shown["server_log"].as_array().unwrap());
    assert_eq!(mine.len(), 2, "the debug entry of the first call and the info one of its retry: {shown}");
    drop(server);
}
