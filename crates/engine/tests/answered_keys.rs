//! A modern server's `tasks/update` acknowledgement is eventually consistent: for a while after it
//! took an answer, its polls may still list the question under the same key. Keys are unique for
//! the task's lifetime and the client should de-duplicate them across polls, so an answered key is
//! never asked again (issue 10, item 10: an answer the server took reported as still waiting).

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::{fixture, open_engine};
use taskdeck_engine::{AnswerInput, Engine, is_waiting_for_answer};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::EventKind;
use taskdeck_test_support::write_servers_config;

async fn open(dir: &Path, fields: usize) -> Engine {
    let script = fixture("lagging_server.py");
    let entry = json!({
        "command": "python3",
        "args": [script.display().to_string()],
        "env": {"ANSWERS": dir.join("answers.jsonl").display().to_string(), "FIELDS": fields.to_string()},
    });
    write_servers_config(&dir.join("servers.json"), [("lagging", entry)]);
    open_engine(dir, Duration::from_secs(20)).await
}

async fn answered_key_is_not_asked_again(fields: usize, input: AnswerInput) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), fields).await;
    let rec = engine.run("lagging", "job", json!({})).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), engine.wait(&rec.id, is_waiting_for_answer))
        .await
        .expect("the question is asked")
        .unwrap();
    let answered = engine.answer(&rec.id, input).await.unwrap();
    assert_eq!(answered.status, TaskStatus::Working, "{answered:#?}");
    // Whatever comes first, waiting again or the end, must be the end.
    let next = tokio::time::timeout(
        Duration::from_secs(20),
        engine.wait(&rec.id, |r| r.status.is_terminal() || is_waiting_for_answer(r)),
    )
    .await
    .expect("the task moves on")
    .unwrap();
    assert_eq!(next.status, TaskStatus::Completed, "the answered question came back: {next:#?}");
    let kinds: Vec<_> = engine.events(&rec.id).unwrap().iter().map(|e| e.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == EventKind::Question).count(), 1, "{kinds:?}");
    let answers = std::fs::read_to_string(dir.path().join("answers.jsonl")).unwrap();
    assert_eq!(answers.lines().count(), 1, "answered once: {answers}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_multi_megabyte_question_answered_is_not_asked_again_while_the_servers_polls_lag() {
    answered_key_is_not_asked_again(10_000, AnswerInput::Decline).await;
}

#[tokio::test]
async fn a_small_question_answered_is_not_asked_again_while_the_servers_polls_lag() {
    let mut content = serde_json::Map::new();
    content.insert("f0".into(), json!("x"));
    answered_key_is_not_asked_again(2, AnswerInput::Accept(content)).await;
}
