//! What a server asks that a host may not serve, in both eras, against `asking_server.py`: a
//! request kind Taskdeck does not know is answered with something the server can read (legacy: a
//! JSON-RPC error; modern: a decline, the one refusal an input response can carry), beside a roots
//! request answered from the grant, and nobody is asked; and a sampling request that offers the
//! model tools, which a server may send only to a client that declared `sampling.tools`, reaches
//! the user's review with its tools, the model with them, and the server with the tool call.
//! A modern server that serves no `subscriptions/listen` is followed by polls, and asked once.
//! A legacy question that belongs to no task is cancelled on the server, and its log says so.

mod support;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::fixture;
use taskdeck_engine::config::Paths;
use taskdeck_engine::sampling::{Completion, ModelError, ModelProvider, Models};
use taskdeck_engine::{AnswerInput, Engine, EngineOptions, TaskRecord};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::question::Asks;
use taskdeck_protocol::sampling::{CreateMessageParams, CreateMessageResult};
use taskdeck_store::EventKind;
use taskdeck_test_support::write_servers_config;

/// A model that keeps the names of the tools each request offered it.
struct ToolsSeen(Arc<Mutex<Vec<Vec<String>>>>);

impl ModelProvider for ToolsSeen {
    fn name(&self) -> &str {
        "tools-seen"
    }
    fn complete<'a>(
        &'a self,
        request: &'a CreateMessageParams,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>> {
        let names = request.tools.iter().flatten().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect();
        self.0.lock().unwrap().push(names);
        Box::pin(async move {
            Ok(Completion { result: CreateMessageResult::text("I would search.", "tools-seen"), usage: None })
        })
    }
}

/// The fixture in `era`, granted `roots`, with the [`ToolsSeen`] model.
async fn open(dir: &Path, era: &str, roots: &[&Path], seen: Arc<Mutex<Vec<Vec<String>>>>) -> Engine {
    let entry = json!({
        "command": "python3",
        "args": [fixture("asking_server.py")],
        "env": {"ERA": era, "REPLIES": dir.join("replies.jsonl"), "METHODS": dir.join("methods.txt")},
        "era": era,
        "roots": roots,
    });
    write_servers_config(&dir.join("servers.json"), [("asking", entry)]);
    let opts = EngineOptions {
        server_wait: Duration::from_secs(20),
        models: Models::new(vec![Arc::new(ToolsSeen(seen))]),
        ..EngineOptions::default()
    };
    Engine::open(Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }, opts).await.unwrap()
}

async fn wait_for(engine: &Engine, id: &str, done: impl Fn(&TaskRecord) -> bool) -> TaskRecord {
    tokio::time::timeout(Duration::from_secs(30), engine.wait(id, done)).await.expect("in time").unwrap()
}

/// What the server received, in order.
fn replies(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("replies.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_taskdeck_cannot_serve_is_answered_so_the_server_can_read_it_and_nobody_is_asked() {
    for era in ["legacy", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let granted = dir.path().join("notes");
        let engine = open(dir.path(), era, &[&granted], Arc::default()).await;
        let rec = engine.run("asking", "pick", json!({})).await.unwrap();
        let end = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
        assert_eq!(end.status, TaskStatus::Completed, "{era}: {end:#?}");
        let kinds: Vec<_> = engine.events(&rec.id).unwrap().iter().map(|e| e.kind).collect();
        assert!(!kinds.contains(&EventKind::Question), "{era}: nobody was asked: {kinds:?}");

        let got = replies(dir.path());
        if era == "legacy" {
            assert_eq!(got.len(), 1, "{got:?}");
            let error = &got[0]["reply"]["error"];
            assert_eq!(error["code"], -32601, "{got:?}");
            assert!(error["message"].as_str().is_some_and(|m| m.contains("widgets/pick")), "{got:?}");
        } else {
            let mut by_key = serde_json::Map::new();
            for r in &got {
                by_key.extend(r["reply"].as_object().cloned().unwrap());
            }
            assert_eq!(by_key.get("pick"), Some(&json!({"action": "decline"})), "{got:?}");
            let uri = format!("file://{}", granted.display());
            assert_eq!(by_key["dirs"]["roots"][0]["uri"], json!(uri), "the roots request, from the grant: {got:?}");
            assert_eq!(by_key.len(), 2, "{got:?}");
        }
        engine.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_offering_tools_is_reviewed_with_them_and_a_tool_call_reply_reaches_the_server() {
    for era in ["legacy", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let engine = open(dir.path(), era, &[], seen.clone()).await;
        let rec = engine.run("asking", "search_with_model", json!({})).await.unwrap();
        // Without `sampling.tools` declared, the server ends the call with a tool error instead.
        let rec = wait_for(&engine, &rec.id, |r| r.status.is_terminal() || r.question.is_some()).await;
        assert_eq!(rec.status, TaskStatus::InputRequired, "{era}: {rec:#?}");
        let question = rec.question.as_ref().unwrap();
        let Asks::Sampling { sampling } = &question.asks else { panic!("{era}: {question:?}") };
        assert_eq!(sampling.tools, ["search"], "{era}: the review names the tools offered");

        let completion = engine.sample(&rec.id, None).await.unwrap();
        assert_eq!(completion.result.content.text(), "I would search.");
        assert_eq!(*seen.lock().unwrap(), [vec!["search".to_owned()]], "{era}: the model was offered the tool");

        let call = json!({"role": "assistant", "model": "by hand", "stopReason": "toolUse",
            "content": {"type": "tool_use", "id": "u1", "name": "search", "input": {"q": "3.0 release"}}});
        engine.answer(&rec.id, AnswerInput::Accept(call.as_object().cloned().unwrap())).await.unwrap();
        let end = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
        assert_eq!(end.status, TaskStatus::Completed, "{era}: {end:#?}");
        let got = replies(dir.path());
        assert_eq!(got.len(), 1, "{era}: {got:?}");
        let reply = if era == "legacy" { &got[0]["reply"]["result"] } else { &got[0]["reply"]["s"] };
        assert_eq!(reply["content"]["type"], "tool_use", "{era}: {got:?}");
        assert_eq!(reply["content"]["name"], "search", "{era}: {got:?}");
        assert_eq!(reply["content"]["input"], json!({"q": "3.0 release"}), "{era}: {got:?}");
        engine.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_server_that_serves_no_subscriptions_is_polled_and_asked_once_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "modern", &[], Arc::default()).await;
    for _ in 0..2 {
        let rec = engine.run("asking", "pick", json!({})).await.unwrap();
        let end = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
        assert_eq!(end.status, TaskStatus::Completed, "{end:#?}");
    }
    let methods = std::fs::read_to_string(dir.path().join("methods.txt")).unwrap();
    let listens = methods.lines().filter(|m| *m == "subscriptions/listen").count();
    assert_eq!(listens, 1, "refused once, not asked again: {methods}");
    assert!(methods.lines().filter(|m| *m == "tasks/get").count() >= 2, "polled instead: {methods}");
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_of_no_task_is_cancelled_on_the_server_and_the_server_log_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "legacy", &[], Arc::default()).await;
    let rec = engine.run("asking", "ask_after", json!({})).await.unwrap();
    let end = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
    assert_eq!(end.status, TaskStatus::Completed, "{end:#?}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while replies(dir.path()).is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the server's late question got no answer");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(replies(dir.path())[0]["reply"]["result"]["action"], "cancel");
    let log = engine.server_log("asking").unwrap();
    assert!(log.iter().any(|l| l.text.contains("belongs to no task here; it was cancelled")), "{log:#?}");
    assert!(engine.events(&rec.id).unwrap().iter().all(|e| e.kind != EventKind::Question), "nobody was asked");
    engine.shutdown().await;
}
