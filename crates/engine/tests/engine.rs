//! The engine against the real demo server: questions that survive a restart of everything, in
//! both eras; progress on record; config changes while running; one engine per data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, json};
use taskdeck_engine::config::Paths;
use taskdeck_engine::{AnswerInput, Engine, EngineError, EngineOptions, ServerPhase};
use taskdeck_protocol::{Era, TaskStatus};
use taskdeck_test_support::{demo_server_entry, write_servers_config};

/// A config of demo servers, one state directory each.
fn write_config(dir: &Path, servers: &[&str]) -> PathBuf {
    let entries = servers.iter().map(|name| (*name, demo_server_entry(&dir.join(format!("state-{name}")))));
    write_servers_config(&dir.join("servers.json"), entries)
}

fn paths(dir: &Path) -> Paths {
    Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }
}

async fn open(dir: &Path, era: Era) -> Engine {
    let mut opts = EngineOptions::default();
    opts.session.force_era = Some(era);
    opts.server_wait = Duration::from_secs(20);
    Engine::open(paths(dir), opts).await.unwrap()
}

async fn wait_status(engine: &Engine, id: &str, status: TaskStatus) -> taskdeck_engine::TaskRecord {
    let rec =
        tokio::time::timeout(Duration::from_secs(30), engine.wait(id, |r| r.status == status)).await.unwrap().unwrap();
    assert_eq!(rec.status, status, "{rec:#?}");
    rec
}

async fn question_survives_a_restart_of_everything(era: Era) {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["demo"]);
    let id = {
        let engine = open(dir.path(), era).await;
        let rec = engine.run("demo", "diagnose_incident", json!({})).await.unwrap();
        let waiting =
            tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, taskdeck_engine::is_waiting_for_answer))
                .await
                .unwrap()
                .unwrap();
        assert!(waiting.question.is_some(), "{waiting:#?}");
        engine.shutdown().await;
        rec.id
    };
    // A new engine (a new process, as far as the servers can tell) finds the question again.
    let engine = open(dir.path(), era).await;
    let resumed = engine.resume().await.unwrap();
    assert_eq!(resumed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec![id.as_str()]);
    let mut content = Map::new();
    content.insert("service".into(), json!("auth"));
    // An answer that breaks the form's schema is refused before anything is sent.
    let mut bad = Map::new();
    bad.insert("service".into(), json!("mainframe"));
    let err = engine.answer(&id, AnswerInput::Accept(bad)).await.unwrap_err();
    assert!(matches!(err, EngineError::InvalidAnswer { ref path, .. } if path == "/service"), "{err}");
    engine.answer(&id, AnswerInput::Accept(content)).await.unwrap();
    let done = wait_status(&engine, &id, TaskStatus::Completed).await;
    let text = done.result.unwrap().to_string().to_lowercase();
    assert!(text.contains("auth"), "{text}");
    let answers = engine.events(&id).unwrap().iter().filter(|e| e.kind == taskdeck_store::EventKind::Answer).count();
    assert_eq!(answers, 1);
    engine.shutdown().await;
}

#[tokio::test]
async fn legacy_question_survives_a_restart_of_everything() {
    question_survives_a_restart_of_everything(Era::Legacy).await;
}

#[tokio::test]
async fn modern_question_survives_a_restart_of_everything() {
    question_survives_a_restart_of_everything(Era::Modern).await;
}

/// A declined question ends the demo's task at once: its result follows the answer closely, and
/// the answer must still be on record first, in both eras, for several tasks at once.
#[tokio::test]
async fn an_answer_is_on_record_before_the_result_it_led_to() {
    for era in [Era::Legacy, Era::Modern] {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &["demo"]);
        let engine = open(dir.path(), era).await;
        let mut ids = Vec::new();
        for _ in 0..5 {
            ids.push(engine.run("demo", "diagnose_incident", json!({})).await.unwrap().id);
        }
        for id in &ids {
            tokio::time::timeout(Duration::from_secs(30), engine.wait(id, taskdeck_engine::is_waiting_for_answer))
                .await
                .unwrap()
                .unwrap();
        }
        for id in &ids {
            let answered = engine.answer(id, AnswerInput::Decline).await.unwrap();
            // What `answer` returns is the task as the answer left it, never a later report.
            assert_eq!(answered.status, TaskStatus::Working, "{answered:#?}");
            assert!(answered.answer.is_some(), "{answered:#?}");
        }
        for id in &ids {
            let done = tokio::time::timeout(Duration::from_secs(30), engine.wait(id, |r| r.status.is_terminal()))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(done.status, TaskStatus::Failed, "{era:?}: a declined diagnosis is the tool's error");
            let events = engine.events(id).unwrap();
            let at = |kind: taskdeck_store::EventKind| events.iter().position(|e| e.kind == kind);
            let answer = at(taskdeck_store::EventKind::Answer);
            let result = at(taskdeck_store::EventKind::Result);
            assert!(answer.is_some() && result.is_some() && answer < result, "{era:?}: {events:#?}");
        }
        engine.shutdown().await;
    }
}

async fn progress_is_recorded(era: Era) {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["demo"]);
    let engine = open(dir.path(), era).await;
    let rec = engine.run("demo", "generate_report", json!({"topic": "bars", "seconds": 1.5})).await.unwrap();
    let with_progress = tokio::time::timeout(
        Duration::from_secs(20),
        engine.wait(&rec.id, |r| r.progress.as_ref().is_some_and(|p| p.total.is_some())),
    )
    .await
    .unwrap()
    .unwrap();
    let p = with_progress.progress.unwrap();
    assert!(p.progress <= p.total.unwrap());
    let done = wait_status(&engine, &rec.id, TaskStatus::Completed).await;
    assert_eq!(done.era, Some(era));
    engine.shutdown().await;
}

#[tokio::test]
async fn legacy_progress_is_recorded() {
    progress_is_recorded(Era::Legacy).await;
}

#[tokio::test]
async fn modern_progress_is_recorded() {
    progress_is_recorded(Era::Modern).await;
}

#[tokio::test]
async fn a_tool_error_is_a_failed_task_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &["demo"]);
        let engine = open(dir.path(), era).await;
        let rec = engine.run("demo", "flaky_export", json!({"fail_at": 10})).await.unwrap();
        let done = wait_status(&engine, &rec.id, TaskStatus::Failed).await;
        assert!(done.error.is_some());
        // The log keeps what the server said: `completed` in the modern era.
        let said: Vec<String> = engine
            .events(&rec.id)
            .unwrap()
            .iter()
            .filter_map(|e| e.data.get("server_status").and_then(|s| s.as_str()).map(str::to_owned))
            .collect();
        let expected = if era == Era::Modern { "completed" } else { "failed" };
        assert_eq!(said.last().map(String::as_str), Some(expected), "{era:?}: {said:?}");
        engine.shutdown().await;
    }
}

#[tokio::test]
async fn config_changes_are_picked_up_while_running() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["one"]);
    let engine = open(dir.path(), Era::Modern).await;
    assert_eq!(engine.servers().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["one"]);
    write_config(dir.path(), &["one", "two"]);
    let servers = engine.reload_config().await.unwrap();
    assert_eq!(servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["one", "two"]);
    assert_eq!(servers[1].phase, ServerPhase::Idle);
    assert!(engine.tools("two").await.unwrap().iter().any(|t| t.name == "generate_report"));
    // A broken file is reported and changes nothing.
    std::fs::write(dir.path().join("servers.json"), "{ not json").unwrap();
    assert!(matches!(engine.reload_config().await, Err(EngineError::Config(_))));
    assert_eq!(engine.servers().len(), 2);
    engine.shutdown().await;
}

#[tokio::test]
async fn one_engine_per_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["demo"]);
    let first = open(dir.path(), Era::Modern).await;
    let err =
        Engine::open(paths(dir.path()), EngineOptions::default()).await.err().expect("the second must be refused");
    let text = err.to_string();
    assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
    drop(first);
}

/// Stage messages wait for the progress flush, so a task that ends first must carry them (and its
/// last progress) into the store ahead of its result: the log keeps every stage, in order.
#[tokio::test]
async fn messages_and_progress_that_wait_for_a_flush_land_before_the_end() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &["demo"]);
    let mut opts = EngineOptions::default();
    opts.session.force_era = Some(Era::Legacy);
    opts.server_wait = Duration::from_secs(20);
    // Longer than the whole task: nothing pending can be written by the periodic flush.
    opts.progress_flush = Duration::from_secs(600);
    let engine = Engine::open(paths(dir.path()), opts).await.unwrap();
    let rec = engine.run("demo", "generate_report", json!({"topic": "order", "seconds": 0.4})).await.unwrap();
    let done = wait_status(&engine, &rec.id, TaskStatus::Completed).await;
    let p = done.progress.expect("the last progress is on the row");
    assert_eq!((p.progress, p.total), (20.0, Some(20.0)), "{p:?}");
    let events = engine.events(&rec.id).unwrap();
    let messages: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == taskdeck_store::EventKind::Status)
        .filter_map(|e| e.data.get("message").and_then(|m| m.as_str()))
        .collect();
    assert_eq!(messages, ["Collecting sources", "Reading", "Drafting", "Formatting"], "{events:#?}");
    assert_eq!(events.last().map(|e| e.kind), Some(taskdeck_store::EventKind::Result), "{events:#?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn an_integral_float_where_the_schema_says_integer_is_sent_as_an_integer() {
    for era in [Era::Legacy, Era::Modern] {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), &["demo"]);
        let engine = open(dir.path(), era).await;
        // The demo server decodes `n` into an integer, as many servers do.
        let rec = engine.run("demo", "count", json!({"n": 2.0, "delay_ms": 0.0})).await.unwrap();
        let done = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.status, TaskStatus::Completed, "{era:?}: {done:#?}");
        engine.shutdown().await;
    }
}
