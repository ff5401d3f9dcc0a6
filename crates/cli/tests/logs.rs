//! `taskdeck-cli logs SERVER [--follow] [--json]` through the real binary: the server's stderr, the
//! MCP log entries it sent (from the reference everything server's simulated logging), read from
//! the files on disk beside a CLI that holds the data directory; and a hostile server's log entry
//! that reaches the terminal inert.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::cli::cli_command;
use taskdeck_test_support::{demo_server_entry, everything_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

fn everything(dir: &Path, extra: Value) -> PathBuf {
    let mut entry = json!({"command": "node", "args": [everything_server_entry(), "stdio"]});
    for (k, v) in extra.as_object().unwrap() {
        entry[k] = v.clone();
    }
    let demo = demo_server_entry(&dir.join("demo-state"));
    write_servers_config(&dir.join("servers.json"), [("everything", entry), ("demo", demo)])
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {l}")))
        .collect()
}

#[test]
fn logs_prints_the_mcp_entries_a_server_sent_with_their_levels() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), json!({"logLevel": "debug"}));
    let data = dir.path().join("data");
    let out = cli_command(CLI, &config, &data, &["run", "everything", "toggle-simulated-logging", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let out = cli_command(CLI, &config, &data, &["logs", "everything", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out.stdout);
    let levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
    let simulated: Vec<&Value> = lines
        .iter()
        .filter(|l| l["source"] == "mcp" && l["text"].as_str().is_some_and(|t| t.to_lowercase().contains("level")))
        .collect();
    assert!(!simulated.is_empty(), "the entry sent at once is on record: {lines:#?}");
    for l in &simulated {
        assert!(levels.contains(&l["level"].as_str().unwrap_or_default()), "{l}");
        assert!(l["at"].as_str().is_some_and(|a| a.starts_with("20")), "{l}");
    }
    assert!(lines.iter().any(|l| l["source"] == "taskdeck"), "Taskdeck's own notes are there too: {lines:#?}");

    let text = cli_command(CLI, &config, &data, &["logs", "everything"]).output().unwrap();
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8_lossy(&text.stdout);
    let level = simulated[0]["level"].as_str().unwrap();
    assert!(text.lines().any(|l| l.contains(level) && l.to_lowercase().contains("level")), "{text}");
}

#[test]
fn logs_of_an_unknown_server_exit_2_and_a_known_one_without_a_log_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), json!({}));
    let data = dir.path().join("data");
    let out = cli_command(CLI, &config, &data, &["logs", "nobody"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown server"), "{out:?}");
    let out = cli_command(CLI, &config, &data, &["logs", "demo", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty());
}

#[test]
fn logs_follow_prints_new_lines_while_another_cli_holds_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), json!({}));
    let data = dir.path().join("data");
    let mut follow = cli_command(CLI, &config, &data, &["logs", "demo", "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // A CLI that holds the engine's lock while the demo server runs and writes its log.
    let run =
        cli_command(CLI, &config, &data, &["run", "demo", "generate_report", "--args", r#"{"seconds": 1}"#, "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            seen.push(v);
            if seen.iter().any(|l| l["text"].as_str().is_some_and(|t| t.starts_with("connected:"))) {
                break;
            }
        }
    }
    // Interrupted, a follow ends cleanly.
    let _ = Command::new("kill").arg("-INT").arg(follow.id().to_string()).status();
    let status = follow.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let mut run = run;
    let _ = run.wait();
    assert!(
        seen.iter()
            .any(|l| l["source"] == "taskdeck" && l["text"].as_str().is_some_and(|t| t.starts_with("connected:"))),
        "{seen:#?}"
    );
}

#[test]
fn a_hostile_servers_log_entries_reach_the_terminal_inert_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/hostile_logger.py");
    let config = write_servers_config(
        &dir.path().join("servers.json"),
        [("loud", json!({"command": "python3", "args": [script]}))],
    );
    let data = dir.path().join("data");
    let out = cli_command(CLI, &config, &data, &["run", "loud", "shout", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let text = cli_command(CLI, &config, &data, &["logs", "loud"]).output().unwrap();
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(!text.contains('\x1b') && !text.contains('\x07') && !text.contains('\u{202e}'), "{text:?}");
    assert!(text.contains("\\u{1b}]0;pwned"), "escapes are shown, visibly: {text}");
    // Every line is one of ours: the server's newline forged none.
    assert!(!text.lines().any(|l| l.starts_with("2099-")), "{text}");
    assert!(text.lines().all(|l| l.len() <= 4 * 1024 + 200), "every line within its bound");

    let json = cli_command(CLI, &config, &data, &["logs", "loud", "--json"]).output().unwrap();
    let lines = json_lines(&json.stdout);
    let entries: Vec<&Value> = lines.iter().filter(|l| l["source"] == "mcp").collect();
    assert_eq!(entries.len(), 3, "{lines:#?}");
    assert_eq!(entries[0]["level"], "warning");
    assert!(entries[0]["text"].as_str().unwrap().starts_with("\x1b]0;pwned"), "scripts get what was sent");
    assert!(entries[1].get("level").is_none(), "an unknown level is no level: {}", entries[1]);
    assert!(entries[1]["text"].as_str().unwrap().starts_with("[level \x1b[31mred] {"), "{}", entries[1]);
    let long = entries[2]["text"].as_str().unwrap();
    assert!(long.len() <= 4 * 1024 && long.ends_with('…'), "{}", long.len());
}
