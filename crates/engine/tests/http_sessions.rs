//! A remote server's legacy session as the engine keeps it: a config change that takes the server
//! away while its task waits leaves the session open and stored, so the server's return resumes it
//! and the task's question can still be answered; a shutdown with nothing running there ends it.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, json};
use taskdeck_engine::config::Paths;
use taskdeck_engine::{AnswerInput, Engine, EngineOptions};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::Store;
use taskdeck_test_support::{everything_server_http, write_servers_config};

fn paths(dir: &Path) -> Paths {
    Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }
}

fn stored_session(store: &Store) -> Option<String> {
    store.http_session("everything").unwrap().map(|s| s.session_id)
}

#[tokio::test]
async fn a_remote_server_taken_away_mid_question_resumes_its_session_when_it_comes_back() {
    let server = everything_server_http(None);
    let dir = tempfile::tempdir().unwrap();
    let with = || write_servers_config(&dir.path().join("servers.json"), [("everything", server.entry(None))]);
    with();
    let opts = EngineOptions { server_wait: Duration::from_secs(20), ..EngineOptions::default() };
    let engine = Engine::open(paths(dir.path()), opts).await.unwrap();
    let rec = engine.run("everything", "simulate-research-query", json!({"topic": "rust", "ambiguous": true})).await;
    let rec = rec.unwrap();
    let wait = engine.wait(&rec.id, taskdeck_engine::is_waiting_for_answer);
    tokio::time::timeout(Duration::from_secs(30), wait).await.unwrap().unwrap();
    let session = stored_session(engine.store()).expect("the session is stored once connected");

    write_servers_config(&dir.path().join("servers.json"), std::iter::empty());
    engine.reload_config().await.unwrap();
    assert_eq!(stored_session(engine.store()).as_deref(), Some(session.as_str()), "left open: a task waits there");

    with();
    engine.reload_config().await.unwrap();
    let mut content = Map::new();
    content.insert("interpretation".into(), json!("current"));
    engine.answer(&rec.id, AnswerInput::Accept(content)).await.unwrap();
    let done = engine.wait(&rec.id, |r| r.status.is_terminal());
    let done = tokio::time::timeout(Duration::from_secs(30), done).await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert!(done.result.unwrap().to_string().contains("rust (current)"));
    assert_eq!(stored_session(engine.store()).as_deref(), Some(session.as_str()), "the same session, resumed");
    let log = engine.server_log("everything").unwrap();
    assert!(log.iter().any(|l| l.text == "resumed the stored HTTP session"), "{log:#?}");

    let store = engine.store().clone();
    engine.shutdown().await;
    assert_eq!(stored_session(&store), None, "nothing runs there: the session is ended and forgotten");
}
