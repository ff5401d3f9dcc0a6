//! A legacy server that reports a stage, `input_required` and its question in one burst: however
//! the engine interleaves the three, the question must stay until it is answered. Its result then
//! comes right behind the answer, and the answer must still be on record before it.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, json};
use taskdeck_engine::config::Paths;
use taskdeck_engine::{AnswerInput, Engine, EngineOptions, is_waiting_for_answer};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::EventKind;

#[tokio::test]
async fn a_question_sent_right_after_a_stage_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/burst_server.py");
    let config = dir.path().join("servers.json");
    let servers = json!({"mcpServers": {"burst": {"command": "python3", "args": [script]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let opts = EngineOptions { server_wait: Duration::from_secs(20), ..EngineOptions::default() };
    let engine = Engine::open(Paths { config, data_dir: dir.path().join("data") }, opts).await.unwrap();

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
