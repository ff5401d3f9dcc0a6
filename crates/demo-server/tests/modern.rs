//! The 2026-07-28 era with the tasks extension, end to end over stdio.

mod common;

use common::{Peer, error_code, modern_meta, text_of};
use serde_json::{Value, json};

fn create_task(p: &mut Peer, name: &str, args: Value) -> String {
    let r = p.call("tools/call", json!({"name": name, "arguments": args}));
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    assert_eq!(r["result"]["pollIntervalMs"], 50);
    assert_eq!(r["result"]["ttlMs"], 86_400_000);
    r["result"]["taskId"].as_str().unwrap().to_owned()
}

fn terminal(r: &Value) -> bool {
    matches!(r["status"].as_str(), Some("completed" | "failed" | "cancelled"))
}

#[test]
fn discovery_tools_and_version_negotiation() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let d = p.call("server/discover", json!({}));
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert!(d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    assert!(d["result"]["capabilities"]["tools"].is_object());
    let tools = p.call("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 8);
    let mut meta = modern_meta(true, true);
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2030-01-01");
    let r = p.call("tools/list", json!({"_meta": meta}));
    assert_eq!(error_code(&r), -32022);
    assert_eq!(r["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "2030-01-01"}));
    assert_eq!(p.call("ping", json!({}))["result"]["resultType"], "complete");
}

#[test]
fn report_completes_with_progress_in_task_meta() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = create_task(&mut p, "generate_report", json!({"topic": "kelp", "seconds": 0.6}));
    let working = p.poll(&id, |r| r["_meta"]["dev.taskdeck/progress"]["progress"].as_f64().unwrap_or(0.0) > 0.0);
    assert_eq!(working["_meta"]["dev.taskdeck/progress"]["total"], 20.0);
    let done = p.poll(&id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["topic"], "kelp");
    assert_eq!(done["result"]["structuredContent"]["resumed_from_stage"], Value::Null);
    assert!(done.get("_meta").is_none(), "no progress once terminal");
    // The extension forbids progress notifications for tasks.
    assert!(!p.seen.iter().any(|m| m["method"] == "notifications/progress"));
}

#[test]
fn tool_error_is_completed_with_is_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = create_task(&mut p, "flaky_export", json!({"fail_at": 5}));
    let done = p.poll(&id, terminal);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
    assert!(text_of(&done["result"]).contains("Export failed at 5%"));
}

#[test]
fn cancel_is_acknowledged_then_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = create_task(&mut p, "count", json!({"n": 1000, "delay_ms": 10}));
    let r = p.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(r["result"], json!({"resultType": "complete"}));
    assert_eq!(p.poll(&id, terminal)["status"], "cancelled");
    assert_eq!(error_code(&p.call("tasks/cancel", json!({"taskId": "no-such-task"}))), -32602);
}

#[test]
fn question_in_input_requests_answered_by_update() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = create_task(&mut p, "diagnose_incident", json!({}));
    let asked = p.poll(&id, |r| r["status"] == "input_required");
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "form");
    assert!(request["params"]["requestedSchema"]["properties"]["service"]["oneOf"].is_array());
    // An unknown key is ignored; the task keeps waiting.
    let r = p.call("tasks/update", json!({"taskId": id, "inputResponses": {"bogus": {"action": "accept"}}}));
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(p.call("tasks/get", json!({"taskId": id}))["result"]["status"], "input_required");
    let bad = p.call("tasks/update", json!({"taskId": id, "inputResponses": {key.clone(): {"nope": 1}}}));
    assert!(bad["error"]["message"].as_str().unwrap().contains(key.as_str()), "{bad}");
    let answer = json!({"action": "accept", "content": {"service": "search"}});
    let r = p.call("tasks/update", json!({"taskId": id, "inputResponses": {key.clone(): answer}}));
    assert_eq!(r["result"]["resultType"], "complete");
    let done = p.poll(&id, terminal);
    assert_eq!(done["status"], "completed");
    assert!(text_of(&done["result"]).contains("Search cluster"));

    let id = create_task(&mut p, "diagnose_incident", json!({}));
    let asked = p.poll(&id, |r| r["status"] == "input_required");
    let key = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    p.call("tasks/update", json!({"taskId": id, "inputResponses": {key: {"action": "decline"}}}));
    let done = p.poll(&id, terminal);
    assert_eq!((done["status"].as_str(), done["result"]["isError"].as_bool()), (Some("completed"), Some(true)));
}

#[test]
fn capability_and_method_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let plain = modern_meta(false, true);
    let r = p.call("tools/call", json!({"name": "generate_report", "arguments": {"topic": "x"}, "_meta": plain}));
    assert_eq!(error_code(&r), -32021);
    assert_eq!(r["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"], json!({}));
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": 2, "delay_ms": 1}, "_meta": plain}));
    assert_eq!(
        (r["result"]["resultType"].as_str(), text_of(&r["result"]).as_str()),
        (Some("complete"), "counted to 2")
    );
    let r = p.call("tools/call", json!({"name": "notes_search", "arguments": {"query": "on-call"}}));
    assert_eq!(r["result"]["resultType"], "complete", "a forbidden tool never becomes a task");
    assert!(text_of(&r["result"]).contains("On-call handbook"));

    let id = create_task(&mut p, "count", json!({"n": 1, "delay_ms": 0}));
    assert_eq!(error_code(&p.call("tasks/get", json!({"taskId": id, "_meta": plain}))), -32021);
    assert_eq!(error_code(&p.call("tasks/result", json!({"taskId": id}))), -32601);
    assert_eq!(error_code(&p.call("tasks/list", json!({}))), -32601);
    assert_eq!(p.poll(&id, terminal)["result"]["content"][0]["text"], "counted to 1");

    // Without elicitation on the creating request, the question cannot be asked.
    let r =
        p.call("tools/call", json!({"name": "diagnose_incident", "arguments": {}, "_meta": modern_meta(true, false)}));
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let done = p.poll(&id, terminal);
    assert_eq!(done["result"]["isError"], true);
}

#[test]
fn default_ttl_expiry_purges_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &["--default-ttl-ms", "150", "--purge-interval-ms", "50"]);
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": 1, "delay_ms": 0}}));
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(r["result"]["ttlMs"], 150);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(error_code(&p.call("tasks/get", json!({"taskId": id}))), -32602);
}

#[test]
fn many_concurrent_counts_all_complete() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let ids: Vec<String> = (0..200).map(|_| create_task(&mut p, "count", json!({"n": 20, "delay_ms": 5}))).collect();
    for id in &ids {
        let done = p.poll(id, terminal);
        assert_eq!(text_of(&done["result"]), "counted to 20");
    }
}

#[test]
fn subscriptions_listen_acknowledges_pushes_every_status_and_ends_with_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = create_task(&mut p, "count", json!({"n": 3, "delay_ms": 100}));
    let listen = p.request("subscriptions/listen", json!({"notifications": {"taskIds": [id, "no-such-task"]}}));
    let on = |m: &Value, method: &str| {
        m["method"] == method && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen
    };
    let ack = p.expect("the acknowledgement", |m| on(m, "notifications/subscriptions/acknowledged"));
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}), "only the tasks it knows: {ack}");
    let done = p.expect("the final status", |m| on(m, "notifications/tasks") && terminal(&m["params"]));
    assert_eq!(done["params"]["taskId"], id.as_str());
    assert_eq!(done["params"]["status"], "completed");
    assert!(done["params"]["result"].is_object(), "the result, as tasks/get gives it: {done}");
    // Every subscribed task has ended: the subscription ends with its response.
    let end = p.response(&listen);
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], listen);

    // Task statuses are for clients that declared the extension.
    let r =
        p.call("subscriptions/listen", json!({"_meta": modern_meta(false, true), "notifications": {"taskIds": [id]}}));
    assert_eq!(error_code(&r), -32021, "{r}");
}
