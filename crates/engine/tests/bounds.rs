//! A server that sends too much, against the real engine: a question over the bound is shown as too
//! large and can be declined, and a chatty server leaves a bounded log with its texts cut.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, json};
use support::{fixture, open_engine, python_entry};
use taskdeck_engine::{AnswerInput, Engine, EngineError, is_waiting_for_answer};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::limits;
use taskdeck_protocol::question::Asks;
use taskdeck_store::{EVENTS_PER_TASK, EventKind};
use taskdeck_test_support::write_servers_config;

async fn engine(dir: &Path) -> Engine {
    write_servers_config(&dir.join("servers.json"), [("bounds", python_entry(&fixture("bounds_server.py")))]);
    open_engine(dir, Duration::from_secs(20)).await
}

#[tokio::test]
async fn a_question_over_the_bound_is_shown_as_too_large_and_can_be_declined() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path()).await;
    // About 2 MB: 2,000 fields and a 50,000-entry enum.
    let id = engine.run("bounds", "ask", json!({"fields": 2000, "options": 50000})).await.unwrap().id;
    let rec = tokio::time::timeout(Duration::from_secs(20), engine.wait(&id, is_waiting_for_answer))
        .await
        .expect("the question is shown")
        .unwrap();
    let q = rec.question.as_ref().unwrap();
    let Asks::TooLarge { size } = q.asks else { panic!("expected a question too large: {:?}", q.asks) };
    assert!(size > limits::QUESTION_BYTES, "{size}");
    assert_eq!(q.message.as_deref(), Some("Pick one"));
    // What is kept of it is small: the record, as stored and published, is not the question.
    assert!(serde_json::to_string(&rec).unwrap().len() < 16 * 1024);

    let accepted = engine.answer(&id, AnswerInput::Accept(Map::new())).await;
    assert!(matches!(accepted, Err(EngineError::InvalidAnswer { .. })), "{accepted:?}");
    engine.answer(&id, AnswerInput::Decline).await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(20), engine.wait(&id, |r| r.status.is_terminal()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert!(done.result.unwrap().to_string().contains("answered: decline"));
    engine.shutdown().await;
}

#[tokio::test]
async fn a_chatty_server_leaves_a_bounded_log_and_cut_texts() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path()).await;
    let id = engine.run("bounds", "chatty", json!({"messages": 3000})).await.unwrap().id;
    let done = tokio::time::timeout(Duration::from_secs(60), engine.wait(&id, |r| r.status.is_terminal()))
        .await
        .expect("the task ends")
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");

    let events = engine.events(&id).unwrap();
    assert!(events.len() <= EVENTS_PER_TASK + 1, "{}", events.len());
    assert_eq!(events.last().map(|e| e.kind), Some(EventKind::Result));
    let dropped = events.iter().find(|e| e.kind == EventKind::Dropped).expect("a marker");
    assert!(dropped.data["dropped"].as_u64().unwrap() > 1000, "{dropped:?}");
    let longest = events.iter().map(|e| e.data.to_string().len()).max().unwrap();
    assert!(longest < limits::STATUS_MESSAGE_BYTES + 512, "{longest}");

    // The huge stderr line and the note quoting the huge error are cut too.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let log = engine.server_log("bounds").unwrap();
        let note = log.iter().find(|l| l.source == "taskdeck" && l.text.contains("error without id"));
        if let Some(note) = note {
            assert!(note.text.len() <= limits::LOG_LINE_BYTES && note.text.ends_with(limits::CUT_MARKER));
            assert!(log.iter().all(|l| l.text.len() <= limits::LOG_LINE_BYTES));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no note about the error: {log:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    engine.shutdown().await;
}
