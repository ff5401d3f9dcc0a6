//! A legacy server that reports a stage, `input_required` and its question in one burst: however
//! the engine interleaves the three, the question must stay until it is answered. Its result then
//! comes right behind the answer, and the answer must still be on record before it.

mod support;

use std::time::Duration;

use serde_json::{Map, json};
use support::{fixture, open_engine, python_entry};
use taskdeck_engine::{AnswerInput, is_waiting_for_answer};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::EventKind;
use taskdeck_test_support::write_servers_config;

#[tokio::test]
async fn a_question_sent_right_after_a_stage_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_servers_config(&dir.path().join("servers.json"), [("burst", python_entry(&fixture("burst_server.py")))]);
    let engine = open_engine(dir.path(), Duration::from_secs(20)).await;

    // Many at once, so the stage report and the question meet in every order.
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(engine.run("burst", "ask", json!({})).await.unwrap().id);
    }
    for id in &ids {
        let rec = tokio::time::timeout(Duration::from_secs(10), engine.wait(id, is_waiting_for_answer))
            .await
            .unwrap_or_else(|_| panic!("{id} never showed its question: {:#?}", engine.get(id)))
            .unwrap();
        assert!(is_waiting_for_answer(&rec), "{rec:#?}");
    }
    // Whatever was still queued behind the question has landed by now, and took nothing away.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for id in &ids {
        let rec = engine.get(id).unwrap();
        assert!(is_waiting_for_answer(&rec), "{rec:#?}");
    }

    for id in &ids {
        let mut content = Map::new();
        content.insert("colour".into(), json!("teal"));
        engine.answer(id, AnswerInput::Accept(content)).await.unwrap();
    }
    for id in &ids {
        let done = tokio::time::timeout(Duration::from_secs(10), engine.wait(id, |r| r.status.is_terminal()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
        assert!(done.result.unwrap().to_string().contains("chose teal"));
        let events = engine.events(id).unwrap();
        // The server sends its result right behind the answer: the answer is still in the log,
        // before the result it led to.
        let at = |kind: EventKind| events.iter().position(|e| e.kind == kind);
        let answered =
            at(EventKind::Answer).unwrap_or_else(|| panic!("{id}: the answer is not in the log: {events:#?}"));
        assert!(at(EventKind::Result).is_some_and(|r| answered < r), "{events:#?}");
        let stages =
            events.iter().filter(|e| e.data.get("message").and_then(|m| m.as_str()) == Some("Preparing")).count();
        assert_eq!(stages, 1, "the stage is in the log once");
    }
    engine.shutdown().await;
}

/// A modern server that ends the task as soon as it reads the answer but acknowledges the
/// `tasks/update` only later, so every poll in between already sees the result.
const SLOW_ACK_SERVER: &str = r#"
import json, sys, threading
out = sys.stdout.buffer
lock = threading.Lock()
tasks = {}
clock = [0]

def send(obj):
    with lock:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()

def stamp():
    clock[0] += 1
    return "2026-01-01T00:00:%02d.%03dZ" % (clock[0] // 1000, clock[0] % 1000)

SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}

def shown(tid):
    t = tasks[tid]
    d = {"taskId": tid, "status": t["status"], "createdAt": "2026-01-01T00:00:00Z",
         "lastUpdatedAt": t["at"], "ttlMs": None, "pollIntervalMs": 50}
    if t["status"] == "input_required":
        d["inputRequests"] = {"colour": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Pick a colour", "requestedSchema": SCHEMA}}}
    if t["status"] == "completed":
        d["result"] = {"content": [{"type": "text", "text": "chose " + t["choice"]}]}
    return d

for line in sys.stdin:
    msg = json.loads(line)
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "serverInfo": {"name": "slow-ack", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "ask", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        tid = "slow-%d" % len(tasks)
        tasks[tid] = {"status": "input_required", "at": stamp(), "choice": None}
        handle = shown(tid)
        handle["resultType"] = "task"
        send({"jsonrpc": "2.0", "id": mid, "result": handle})
    elif method == "tasks/get":
        tid = params.get("taskId")
        if tid in tasks:
            send({"jsonrpc": "2.0", "id": mid, "result": shown(tid)})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown task"}})
    elif method == "tasks/update":
        t = tasks[params["taskId"]]
        t["choice"] = str(params["inputResponses"]["colour"]["content"]["colour"])
        t["status"], t["at"] = "completed", stamp()
        threading.Timer(0.3, send, args=({"jsonrpc": "2.0", "id": mid, "result": {}},)).start()
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
"#;

#[tokio::test]
async fn an_answer_is_on_record_although_the_result_overtakes_its_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("slow_ack_server.py");
    std::fs::write(&script, SLOW_ACK_SERVER).unwrap();
    write_servers_config(&dir.path().join("servers.json"), [("slow", python_entry(&script))]);
    let engine = open_engine(dir.path(), Duration::from_secs(20)).await;

    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(engine.run("slow", "ask", json!({})).await.unwrap().id);
    }
    for id in &ids {
        tokio::time::timeout(Duration::from_secs(10), engine.wait(id, is_waiting_for_answer)).await.unwrap().unwrap();
    }
    for id in &ids {
        let mut content = Map::new();
        content.insert("colour".into(), json!("teal"));
        // The task as the answer left it, not the result that came before the acknowledgement.
        let answered = engine.answer(id, AnswerInput::Accept(content)).await.unwrap();
        assert_eq!(answered.status, TaskStatus::Working, "{answered:#?}");
        assert!(answered.answer.is_some(), "{answered:#?}");
    }
    for id in &ids {
        let done = tokio::time::timeout(Duration::from_secs(10), engine.wait(id, |r| r.status.is_terminal()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
        let events = engine.events(id).unwrap();
        let at = |kind: EventKind| events.iter().position(|e| e.kind == kind);
        assert!(at(EventKind::Answer).is_some_and(|a| at(EventKind::Result).is_some_and(|r| a < r)), "{events:#?}");
    }
    engine.shutdown().await;
}
