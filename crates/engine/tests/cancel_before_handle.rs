//! A legacy task-augmented call cancelled before the server's `CreateTaskResult` came: the server
//! is told (`notifications/cancelled` for the call's request id) and the task says so; a handle
//! that comes anyway is cancelled with `tasks/cancel`, so no task is left running on the server.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{fixture, open_engine};
use taskdeck_engine::Engine;
use taskdeck_protocol::TaskStatus;
use taskdeck_test_support::write_servers_config;

/// The engine over the late-handle server, which writes what it heard to the returned file.
async fn open(dir: &Path, honour_cancel: bool) -> (Engine, PathBuf) {
    let script = fixture("late_handle_server.py");
    let heard = dir.join("heard.log");
    let mut args = vec![json!(script), json!("--delay"), json!("1.0"), json!("--heard"), json!(heard)];
    if honour_cancel {
        args.push(json!("--honour-cancel"));
    }
    write_servers_config(&dir.join("servers.json"), [("late", json!({"command": "python3", "args": args}))]);
    let engine = open_engine(dir, Duration::from_secs(30)).await;
    (engine, heard)
}

fn heard(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_default()
}

/// Waits until the server heard `what` (without blocking the runtime the engine's writes need).
async fn until_heard(file: &Path, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = heard(file);
        if text.contains(what) {
            return text;
        }
        assert!(Instant::now() < deadline, "the server never heard {what:?}: {text:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `slow`, cancels it while its handle is still to come, and returns the cancelled record.
async fn cancel_before_the_handle(engine: &Engine) -> taskdeck_engine::TaskRecord {
    let rec = engine.run("late", "slow", json!({})).await.unwrap();
    // The call is on the wire; its handle comes a second after it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = engine.cancel(&rec.id).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled, "{cancelled:#?}");
    assert!(cancelled.remote_task_id.is_none(), "{cancelled:#?}");
    let events = engine.events(&rec.id).unwrap();
    let event = events.iter().find(|e| e.kind == taskdeck_store::EventKind::Cancelled).expect("a cancelled event");
    assert_eq!(event.data["server_told"], json!(true), "{event:?}");
    cancelled
}

#[tokio::test]
async fn a_call_cancelled_before_its_handle_tells_the_server_which_then_makes_no_task() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, file) = open(dir.path(), true).await;
    cancel_before_the_handle(&engine).await;
    let text = until_heard(&file, "before a task was made").await;
    assert!(text.contains("notifications/cancelled"), "{text}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!heard(&file).contains("tasks/cancel"), "no task was made, so none is cancelled: {}", heard(&file));
    engine.shutdown().await;
}

#[tokio::test]
async fn a_handle_that_comes_after_the_cancel_is_cancelled_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, file) = open(dir.path(), false).await;
    let rec = cancel_before_the_handle(&engine).await;
    let text = until_heard(&file, "tasks/cancel late-").await;
    assert!(text.find("notifications/cancelled") < text.find("tasks/cancel"), "{text}");
    // The task stays as the user left it.
    assert_eq!(engine.get(&rec.id).unwrap().status, TaskStatus::Cancelled);
    engine.shutdown().await;
}
