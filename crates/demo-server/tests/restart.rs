//! Killing the server (SIGKILL) and starting it again on the same state directory.

mod common;

use std::time::Duration;

use common::{Peer, error_code, text_of};
use serde_json::{Value, json};
use taskdeck_schema_check::Era;

fn legacy_task(p: &mut Peer, name: &str, args: Value, ttl: Option<i64>) -> String {
    let task = ttl.map_or(json!({}), |t| json!({"ttl": t}));
    let r = p.call("tools/call", json!({"name": name, "arguments": args, "task": task}));
    r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {r}")).to_owned()
}

fn modern_task(p: &mut Peer, name: &str, args: Value) -> String {
    let r = p.call("tools/call", json!({"name": name, "arguments": args}));
    r["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {r}")).to_owned()
}

fn terminal(r: &Value) -> bool {
    matches!(r["status"].as_str(), Some("completed" | "failed" | "cancelled"))
}

fn past_first_stage(r: &Value) -> bool {
    matches!(r["statusMessage"].as_str(), Some("Reading" | "Drafting"))
}

#[test]
fn legacy_report_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let id = legacy_task(&mut p, "generate_report", json!({"topic": "rivers", "seconds": 1.6}), None);
    p.expect("the second stage", |m| m["method"] == "notifications/tasks/status" && past_first_stage(&m["params"]));
    p.kill();

    let mut p = Peer::legacy(dir.path(), true, &[]);
    let r = p.call("tasks/result", json!({"taskId": id}));
    let resumed = r["result"]["structuredContent"]["resumed_from_stage"].as_i64().expect("resumed_from_stage");
    assert!(resumed >= 1, "{r}");
    assert!(text_of(&r["result"]).contains("Resumed after a restart"));
    assert_eq!(p.call("tasks/get", json!({"taskId": id}))["result"]["status"], "completed");
}

#[test]
fn modern_report_resumes_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = modern_task(&mut p, "generate_report", json!({"topic": "rivers", "seconds": 1.6}));
    p.poll(&id, past_first_stage);
    p.kill();

    let mut p = Peer::modern(dir.path(), &[]);
    let done = p.poll(&id, terminal);
    assert_eq!(done["status"], "completed");
    assert!(done["result"]["structuredContent"]["resumed_from_stage"].as_i64().unwrap() >= 1, "{done}");
}

#[test]
fn legacy_question_is_asked_again_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let id = legacy_task(&mut p, "diagnose_incident", json!({}), None);
    p.expect("the question", |m| m["method"] == "elicitation/create");
    p.kill();

    let mut p = Peer::legacy(dir.path(), true, &[]);
    assert_eq!(p.call("tasks/get", json!({"taskId": id}))["result"]["status"], "input_required");
    let waiting = p.request("tasks/result", json!({"taskId": id}));
    let ask = p.expect("the question again", |m| m["method"] == "elicitation/create");
    assert_eq!(ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    p.send(
        &json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"service": "billing"}}}),
    );
    let r = p.response(&waiting);
    assert!(text_of(&r["result"]).contains("Billing workers"), "{r}");
}

#[test]
fn modern_question_survives_restart_and_answer_persists() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = modern_task(&mut p, "diagnose_incident", json!({}));
    let before = p.poll(&id, |r| r["status"] == "input_required");
    p.kill();

    let mut p = Peer::modern(dir.path(), &[]);
    let after = p.call("tasks/get", json!({"taskId": id}));
    assert_eq!(after["result"]["inputRequests"], before["inputRequests"]);
    let key = before["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answer = json!({"action": "accept", "content": {"service": "auth"}});
    p.call("tasks/update", json!({"taskId": id, "inputResponses": {key: answer}}));
    // Killed right after the answer was acknowledged: the answer is in the store, so the next
    // start continues with it instead of asking again.
    p.kill();
    let mut p = Peer::modern(dir.path(), &[]);
    let done = p.poll(&id, terminal);
    assert!(text_of(&done["result"]).contains("Auth gateway"), "{done}");
}

#[test]
fn interrupted_export_fails_with_crash_recovery_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let legacy_id = legacy_task(&mut p, "flaky_export", json!({"fail_at": 100}), None);
    p.kill();
    let mut p = Peer::modern(dir.path(), &[]);
    let modern_id = modern_task(&mut p, "flaky_export", json!({"fail_at": 100}));
    p.kill();

    let mut p = Peer::legacy(dir.path(), true, &[]);
    assert_eq!(p.call("tasks/get", json!({"taskId": legacy_id}))["result"]["status"], "failed");
    let r = p.call("tasks/result", json!({"taskId": legacy_id}));
    assert_eq!(r["error"]["data"]["reason"], "CRASH_RECOVERY", "{r}");
    // A task lives in the era that created it.
    assert_eq!(error_code(&p.call("tasks/get", json!({"taskId": modern_id}))), -32602);
    drop(p);

    let mut p = Peer::modern(dir.path(), &[]);
    let r = p.call("tasks/get", json!({"taskId": modern_id}));
    assert_eq!(r["result"]["status"], "failed");
    assert_eq!(r["result"]["error"]["data"]["reason"], "CRASH_RECOVERY");
}

#[test]
fn count_continues_and_expired_tasks_are_purged_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let counting = legacy_task(&mut p, "count", json!({"n": 40, "delay_ms": 20}), None);
    let short = legacy_task(&mut p, "count", json!({"n": 1000, "delay_ms": 20}), Some(300));
    std::thread::sleep(Duration::from_millis(400));
    p.kill();

    let mut p = Peer::spawn(dir.path(), Era::Legacy, &[]);
    let r = p.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert!(r["result"].is_object());
    let get = p.call("tasks/get", json!({"taskId": counting}));
    let message = get["result"]["statusMessage"].as_str().unwrap_or_default().to_owned();
    let reached: i64 = message
        .strip_prefix("Counting (")
        .and_then(|m| m.split('/').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("expected a checkpointed count, got {message:?}"));
    assert!(reached > 0, "the count restarted from zero");
    assert_eq!(text_of(&p.call("tasks/result", json!({"taskId": counting}))["result"]), "counted to 40");
    assert_eq!(error_code(&p.call("tasks/get", json!({"taskId": short}))), -32602);
}
