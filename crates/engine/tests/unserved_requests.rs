//! What a server asks that a host may not serve, in both eras, against `asking_server.py`: a
//! request kind Taskdeck does not know is answered with something the server can read (legacy: a
//! JSON-RPC error; modern: a decline, the one refusal an input response can carry), beside a roots
//! request answered from the grant, and nobody is asked; and a sampling request that offers the
//! model tools, which a server may send only to a client that declared `sampling.tools`, reaches
//! the user's review with its tools, the model with them, and the server with the tool call.

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
use taskdeck_engine::{Engine, EngineOptions, TaskRecord};
use taskdeck_protocol::TaskStatus;
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
        "env": {"ERA": era, "REPLIES": dir.join("replies.jsonl")},
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
