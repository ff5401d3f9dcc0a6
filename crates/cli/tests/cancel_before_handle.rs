//! A legacy task-augmented call interrupted before the demo server's `CreateTaskResult` came
//! (`--handle-delay-ms`): the CLI's cancel tells the server with `notifications/cancelled`, the task
//! records that it was told, and the server, told in time, stops the call before
//! it made the task.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::cli::cli_command;
use taskdeck_test_support::{demo_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// Its output piped, for `json_of` to read.
fn cli(config: &Path, data: &Path, args: &[&str]) -> Command {
    let mut c = cli_command(CLI, config, data, args);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn json_of(c: &mut Command) -> Value {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{o:?}");
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_legacy_task_call_interrupted_before_its_handle_tells_the_server_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("demo-state");
    let mut entry = demo_server_entry(&state);
    entry["era"] = json!("legacy");
    entry["args"].as_array_mut().unwrap().extend([json!("--handle-delay-ms"), json!("2000")]);
    let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
    let data = dir.path().join("data");

    let args = json!({"topic": "tides", "seconds": 1}).to_string();
    let child = cli(&config, &data, &["run", "demo", "generate_report", "--args", &args]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        let tasks = json_of(&mut cli(&config, &data, &["tasks", "--json"]));
        if let Some(id) = tasks[0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(Instant::now() < deadline, "no task recorded");
        std::thread::sleep(Duration::from_millis(50));
    };
    // On the wire by now; its handle is more than a second away.
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill").arg("-INT").arg(child.id().to_string()).status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");

    let shown = json_of(&mut cli(&config, &data, &["show", &id, "--json"]));
    assert_eq!(shown["status"], "cancelled", "{shown}");
    assert_eq!(shown["remote_task_id"], Value::Null, "{shown}");
    let cancelled = shown["events"].as_array().unwrap().iter().find(|e| e["kind"] == "cancelled").cloned().unwrap();
    assert_eq!(cancelled["data"]["server_told"], true, "{cancelled}");

    // The server stopped the call's handler, which had yet to make the task.
    let abandoned = std::fs::read_to_string(state.join("abandoned-requests.log")).unwrap_or_default();
    assert!(abandoned.contains("notifications/cancelled") && !abandoned.contains("after its end"), "{abandoned:?}");
}
