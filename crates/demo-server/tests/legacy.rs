//! The 2025-11-25 era, end to end over stdio.

mod common;

use std::time::Duration;

use common::{Peer, error_code, text_of};
use serde_json::{Value, json};

fn create_task(p: &mut Peer, name: &str, args: Value, extra: Value) -> String {
    let mut params = json!({"name": name, "arguments": args, "task": {}});
    if let Some(obj) = extra.as_object() {
        for (k, v) in obj {
            params[k] = v.clone();
        }
    }
    let r = p.call("tools/call", params);
    let task = &r["result"]["task"];
    assert_eq!(task["status"], "working", "{r}");
    task["taskId"].as_str().unwrap().to_owned()
}

#[test]
fn report_completes_with_progress_statuses_and_related_task_meta() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let tools = p.call("tools/list", json!({}));
    let support: Vec<(String, String)> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().into(), t["execution"]["taskSupport"].as_str().unwrap().into()))
        .collect();
    assert!(support.contains(&("notes_search".into(), "forbidden".into())));
    assert!(support.contains(&("count".into(), "optional".into())));
    assert!(support.contains(&("generate_report".into(), "required".into())));

    let id = create_task(
        &mut p,
        "generate_report",
        json!({"topic": "tides", "seconds": 0.2}),
        json!({"_meta": {"progressToken": "rep"}}),
    );
    let r = p.call("tasks/result", json!({"taskId": id}));
    let result = &r["result"];
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert_eq!(result["structuredContent"]["topic"], "tides");
    assert_eq!(result["structuredContent"]["sections"].as_array().unwrap().len(), 4);
    assert_eq!(result["structuredContent"]["resumed_from_stage"], Value::Null);
    assert!(text_of(result).contains("# Report: tides"));

    let progress: Vec<f64> = p
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "rep");
            assert_eq!(m["params"]["total"], 20);
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress.len(), 20, "one progress notification per step");
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "progress must increase: {progress:?}");
    p.expect("a completed status notification", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
    });
    let get = p.call("tasks/get", json!({"taskId": id}));
    assert_eq!(get["result"]["status"], "completed");
    assert_eq!(get["result"]["pollInterval"], 50);
    assert_eq!(get["result"]["ttl"], 86_400_000);
    // Nothing about the task is sent once it is terminal.
    let after = p.seen.iter().position(|m| m["params"]["status"] == "completed").unwrap();
    assert!(!p.seen[after..].iter().any(|m| m["method"] == "notifications/progress"));
}

#[test]
fn tool_error_fails_the_task_and_result_carries_is_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let id = create_task(&mut p, "flaky_export", json!({"fail_at": 10}), json!({}));
    let r = p.call("tasks/result", json!({"taskId": id}));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text_of(&r["result"]).contains("Export failed at 10%"));
    let get = p.call("tasks/get", json!({"taskId": id}));
    assert_eq!(get["result"]["status"], "failed");
}

#[test]
fn cancel_is_immediate_and_not_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let id = create_task(&mut p, "count", json!({"n": 1000, "delay_ms": 10}), json!({}));
    let waiting = p.request("tasks/result", json!({"taskId": id}));
    let r = p.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    let get = p.call("tasks/get", json!({"taskId": id}));
    assert_eq!(get["result"]["status"], "cancelled");
    let again = p.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(error_code(&again), -32602);
    let result = p.response(&waiting);
    assert_eq!(error_code(&result), -32603);
    assert!(result["error"]["message"].as_str().unwrap().contains("no result stored"));
}

fn answer_question(p: &mut Peer, id: &str, answer: Value) -> Value {
    let waiting = p.request("tasks/result", json!({"taskId": id}));
    let ask = p.expect("elicitation/create", |m| m["method"] == "elicitation/create");
    assert_eq!(ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    assert!(ask["id"].as_str().unwrap().starts_with(&format!("elicit-{id}-")));
    let schema = &ask["params"]["requestedSchema"];
    assert_eq!(schema["required"], json!(["service"]));
    assert_eq!(schema["properties"]["page_oncall"]["type"], "boolean");
    p.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}));
    p.response(&waiting)
}

#[test]
fn question_answered_through_elicitation_completes_the_diagnosis() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let id = create_task(&mut p, "diagnose_incident", json!({}), json!({}));
    p.expect("input_required status", |m| m["params"]["status"] == "input_required");
    let r = answer_question(
        &mut p,
        &id,
        json!({"action": "accept", "content": {"service": "checkout", "notes": "since 9:00", "page_oncall": true}}),
    );
    assert_eq!(r["result"]["isError"], Value::Null, "{r}");
    let text = text_of(&r["result"]);
    assert!(text.contains("Checkout API") && text.contains("since 9:00") && text.contains("paged"), "{text}");
    // The question went out once, although both the transition and tasks/result could send it.
    assert_eq!(p.seen.iter().filter(|m| m["method"] == "elicitation/create").count(), 1);
}

#[test]
fn declined_question_is_a_tool_error_and_cancelled_question_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let id = create_task(&mut p, "diagnose_incident", json!({}), json!({}));
    let r = answer_question(&mut p, &id, json!({"action": "decline"}));
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r["result"]).contains("diagnosis needs a service"));
    assert_eq!(p.call("tasks/get", json!({"taskId": id}))["result"]["status"], "failed");

    let id = create_task(&mut p, "diagnose_incident", json!({}), json!({}));
    let r = answer_question(&mut p, &id, json!({"action": "cancel"}));
    assert_eq!(error_code(&r), -32603);
    assert_eq!(p.call("tasks/get", json!({"taskId": id}))["result"]["status"], "cancelled");
}

#[test]
fn without_elicitation_the_question_fails_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), false, &[]);
    let id = create_task(&mut p, "diagnose_incident", json!({}), json!({}));
    let r = p.call("tasks/result", json!({"taskId": id}));
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r["result"]).contains("elicitation"));
    assert!(!p.seen.iter().any(|m| m["method"] == "elicitation/create"));
    // With the argument given, no question is needed at all.
    let id = create_task(&mut p, "diagnose_incident", json!({"service": "auth"}), json!({}));
    let r = p.call("tasks/result", json!({"taskId": id}));
    assert!(text_of(&r["result"]).contains("Auth gateway"));
}

#[test]
fn task_support_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let r = p.call("tools/call", json!({"name": "generate_report", "arguments": {"topic": "x"}}));
    assert_eq!(error_code(&r), -32601);
    let r = p.call("tools/call", json!({"name": "notes_search", "arguments": {"query": "x"}, "task": {}}));
    assert_eq!(error_code(&r), -32601);
    let r = p.call("tools/call", json!({"name": "notes_search", "arguments": {"query": "pool"}}));
    assert!(text_of(&r["result"]).contains("Checkout incident"), "{r}");

    // A plain call to an optional tool runs beside other requests instead of blocking them.
    let slow = p.request(
        "tools/call",
        json!({"name": "count", "arguments": {"n": 4, "delay_ms": 100}, "_meta": {"progressToken": 7}}),
    );
    let ping = p.request("ping", json!({}));
    p.response(&ping);
    assert!(!p.seen.iter().any(|m| m["id"] == slow), "ping waited for the count");
    let r = p.response(&slow);
    assert_eq!(text_of(&r["result"]), "counted to 4");
    assert!(p.seen.iter().any(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == 7));
}

#[test]
fn list_is_paginated_and_rejects_bad_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &["--list-page-size", "2"]);
    let ids: Vec<String> =
        (0..3).map(|_| create_task(&mut p, "count", json!({"n": 1, "delay_ms": 0}), json!({}))).collect();
    let first = p.call("tasks/list", json!({}));
    let cursor = first["result"]["nextCursor"].as_str().expect("a next cursor").to_owned();
    let second = p.call("tasks/list", json!({"cursor": cursor}));
    assert!(second["result"].get("nextCursor").is_none());
    let mut listed: Vec<String> = first["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["result"]["tasks"].as_array().unwrap())
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(error_code(&p.call("tasks/list", json!({"cursor": "nope"}))), -32602);
}

#[test]
fn expired_tasks_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &["--purge-interval-ms", "50"]);
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": 1, "delay_ms": 0}, "task": {"ttl": 150}}));
    let id = r["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(r["result"]["task"]["ttl"], 150);
    std::thread::sleep(Duration::from_millis(300));
    let get = p.call("tasks/get", json!({"taskId": id}));
    assert_eq!(error_code(&get), -32602);
    assert_eq!(error_code(&p.call("tasks/result", json!({"taskId": id}))), -32602);
    assert!(p.call("tasks/list", json!({}))["result"]["tasks"].as_array().unwrap().is_empty());
    // A huge TTL is capped at the server's maximum.
    let r = p.call(
        "tools/call",
        json!({"name": "count", "arguments": {"n": 1, "delay_ms": 0}, "task": {"ttl": 1_000_000_000_000_000i64}}),
    );
    assert_eq!(r["result"]["task"]["ttl"], 7 * 86_400_000);
}
