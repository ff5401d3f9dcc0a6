//! Sampling mid-task in both eras, and a modern task that asks two things at once.

mod common;

use common::{Peer, text_of};
use serde_json::{Value, json};

fn terminal(r: &Value) -> bool {
    matches!(r["status"].as_str(), Some("completed" | "failed" | "cancelled"))
}

/// A modern request's `_meta` declaring tasks, elicitation and sampling.
fn meta_with_sampling() -> Value {
    let mut meta = common::modern_meta(true, true);
    meta["io.modelcontextprotocol/clientCapabilities"]["sampling"] = json!({});
    meta
}

fn modern_task(p: &mut Peer, name: &str, args: Value, meta: Value) -> String {
    let r = p.call("tools/call", json!({"name": name, "arguments": args, "_meta": meta}));
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    r["result"]["taskId"].as_str().unwrap().to_owned()
}

fn reply(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "test-model"})
}

#[test]
fn a_modern_task_asks_for_a_summary_in_its_input_requests_and_uses_the_reply() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = modern_task(&mut p, "summarize_findings", json!({"topic": "checkout"}), meta_with_sampling());
    let asked = p.poll(&id, |r| r["status"] == "input_required");
    let (key, request) =
        asked["inputRequests"].as_object().unwrap().iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(request["params"]["maxTokens"], 200);
    assert!(request["params"]["messages"][0]["content"]["text"].as_str().unwrap().contains("checkout"));
    // An elicitation's accept is not a reply to a sampling request.
    let bad = p.call("tasks/update", json!({"taskId": id, "inputResponses": {key.clone(): {"text": "x"}}}));
    assert!(bad["error"]["message"].as_str().unwrap().contains("sampling result"), "{bad}");
    let r = p.call("tasks/update", json!({"taskId": id, "inputResponses": {key: reply("Rollbacks fixed most.")}}));
    assert_eq!(r["result"]["resultType"], "complete");
    let done = p.poll(&id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(text_of(&done["result"]).contains("Summary (test-model): Rollbacks fixed most."), "{done}");
}

#[test]
fn a_modern_client_without_sampling_gets_a_tool_error_not_a_question() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = modern_task(&mut p, "summarize_findings", json!({"topic": "x"}), common::modern_meta(true, true));
    let done = p.poll(&id, terminal);
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(text_of(&done["result"]).contains("sampling capability"), "{done}");
}

#[test]
fn two_input_requests_at_once_take_one_update_or_two_partial_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::modern(dir.path(), &[]);
    let id = modern_task(&mut p, "plan_release", json!({"version": "2.1"}), meta_with_sampling());
    let asked = p.poll(&id, |r| r["status"] == "input_required");
    let requests = asked["inputRequests"].as_object().unwrap().clone();
    assert_eq!(requests.len(), 2, "{asked}");
    let key = |suffix: &str| requests.keys().find(|k| k.ends_with(suffix)).unwrap().clone();
    let (env, note) = (key("/environment"), key("/note"));
    assert_eq!(requests[&env]["method"], "elicitation/create");
    assert_eq!(requests[&note]["method"], "sampling/createMessage");
    let both = json!({env.clone(): {"action": "accept", "content": {"environment": "staging"}}, note.clone(): reply("Faster search.")});
    p.call("tasks/update", json!({"taskId": id, "inputResponses": both}));
    let done = p.poll(&id, terminal);
    let text = text_of(&done["result"]);
    assert!(text.contains("Release 2.1 to staging") && text.contains("Faster search."), "{done}");

    // Answered one at a time: the other stays listed until it comes.
    let id = modern_task(&mut p, "plan_release", json!({"version": "2.2"}), meta_with_sampling());
    let asked = p.poll(&id, |r| r["status"] == "input_required");
    let requests = asked["inputRequests"].as_object().unwrap().clone();
    let key = |suffix: &str| requests.keys().find(|k| k.ends_with(suffix)).unwrap().clone();
    let (env, note) = (key("/environment"), key("/note"));
    p.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {env: {"action": "accept", "content": {"environment": "production"}}}}),
    );
    let left = p.call("tasks/get", json!({"taskId": id}))["result"].clone();
    assert_eq!(left["status"], "input_required");
    assert_eq!(left["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), [&note], "{left}");
    p.call("tasks/update", json!({"taskId": id, "inputResponses": {note: {"action": "decline"}}}));
    let done = p.poll(&id, terminal);
    let text = text_of(&done["result"]);
    assert!(text.contains("to production") && text.contains("No release note"), "{done}");
}

#[test]
fn a_legacy_task_sends_its_sampling_request_with_the_related_task_and_reads_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy_with(dir.path(), json!({"sampling": {}}), &[]);
    let ask_summary = |p: &mut Peer| {
        let r =
            p.call("tools/call", json!({"name": "summarize_findings", "arguments": {"topic": "search"}, "task": {}}));
        let id = r["result"]["task"]["taskId"].as_str().unwrap().to_owned();
        let waiting = p.request("tasks/result", json!({"taskId": id}));
        let ask = p.expect("sampling/createMessage", |m| m["method"] == "sampling/createMessage");
        assert_eq!(ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
        assert_eq!(ask["params"]["systemPrompt"], "You are a concise analyst. Answer in one sentence.");
        (id, waiting, ask["id"].clone())
    };
    let (_, waiting, request) = ask_summary(&mut p);
    p.send(&json!({"jsonrpc": "2.0", "id": request, "result": reply("All good.")}));
    let r = p.response(&waiting);
    assert!(text_of(&r["result"]).contains("Summary (test-model): All good."), "{r}");

    let (id, waiting, request) = ask_summary(&mut p);
    p.send(&json!({"jsonrpc": "2.0", "id": request, "error": {"code": -1, "message": "the user declined"}}));
    let r = p.response(&waiting);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text_of(&r["result"]).contains("the user declined"), "{r}");
    assert_eq!(p.call("tasks/get", json!({"taskId": id}))["result"]["status"], "failed");
}

#[test]
fn plan_release_refuses_the_legacy_era_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy_with(dir.path(), json!({"sampling": {}, "elicitation": {}}), &[]);
    let r = p.call("tools/call", json!({"name": "plan_release", "arguments": {"version": "1"}, "task": {}}));
    let id = r["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    let r = p.call("tasks/result", json!({"taskId": id}));
    assert!(text_of(&r["result"]).contains("only the 2026-07-28 era"), "{r}");
}
