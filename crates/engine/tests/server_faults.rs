//! Tasks on a misbehaving server (the client's fault server) end, with a reason, within a bound:
//! never left `working` because of what the server sent, never given another task's status,
//! never run twice.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use taskdeck_engine::config::Paths;
use taskdeck_engine::{Engine, EngineOptions, FailureReason, TaskRecord};
use taskdeck_protocol::TaskStatus;
use taskdeck_test_support::{workspace_root, write_servers_config};

fn fault_server() -> PathBuf {
    workspace_root().join("crates/client/tests/support/fault_server.py")
}

/// An engine whose one server, `fault`, misbehaves as `scenario` says, counting its executions.
async fn open(dir: &Path, scenario: &str, opts: EngineOptions) -> Engine {
    let entry = json!({
        "command": "python3",
        "args": [fault_server().display().to_string(), scenario],
        "env": {"FAULT_COUNT": dir.join("count").display().to_string()},
    });
    write_servers_config(&dir.join("servers.json"), [("fault", entry)]);
    let paths = Paths { config: dir.join("servers.json"), data_dir: dir.join("data") };
    Engine::open(paths, opts).await.unwrap()
}

fn options() -> EngineOptions {
    let mut opts = EngineOptions::default();
    opts.session.probe_timeout = Duration::from_millis(500);
    opts.server_wait = Duration::from_secs(20);
    opts.poll_give_up = Duration::from_secs(1);
    opts
}

async fn run_to_the_end(engine: &Engine, bound: Duration) -> TaskRecord {
    let rec = engine.run("fault", "job", json!({})).await.unwrap();
    tokio::time::timeout(bound, engine.wait(&rec.id, |r| r.status.is_terminal()))
        .await
        .expect("the task ends within its bound")
        .unwrap()
}

fn executions(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("count")).unwrap_or_default().lines().count()
}

#[tokio::test]
async fn a_task_whose_result_is_too_large_to_read_fails_with_that_reason() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "result-huge", options()).await;
    let started = Instant::now();
    let done = run_to_the_end(&engine, Duration::from_secs(30)).await;
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}");
    let error = done.error.unwrap();
    assert_eq!(error.reason, Some(FailureReason::ResponseTooLarge), "{error:?}");
    assert!(error.message.contains("frame limit"), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(executions(dir.path()), 1);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_task_whose_result_is_nested_too_deep_fails_as_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "result-deep", options()).await;
    let done = run_to_the_end(&engine, Duration::from_secs(30)).await;
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}");
    assert_eq!(done.error.unwrap().reason, Some(FailureReason::ServerUnreadable));
    engine.shutdown().await;
}

#[tokio::test]
async fn a_task_whose_polls_cannot_be_read_fails_once_polling_gives_up() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "polls-surrogate", options()).await;
    let started = Instant::now();
    let done = run_to_the_end(&engine, Duration::from_secs(30)).await;
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}");
    assert_eq!(done.error.as_ref().unwrap().reason, Some(FailureReason::ServerUnreadable), "{done:#?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(executions(dir.path()), 1);
    engine.shutdown().await;
}

#[tokio::test]
async fn another_tasks_status_is_never_applied_to_ours() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options();
    opts.poll_give_up = Duration::from_secs(60);
    opts.min_poll = Duration::from_millis(50);
    let engine = open(dir.path(), "wrong-task", opts).await;
    let done = run_to_the_end(&engine, Duration::from_secs(30)).await;
    assert_eq!(done.status, TaskStatus::Completed, "someone else's cancel is not ours: {done:#?}");
    let cancelled = engine.events(&done.id).unwrap().iter().any(|e| e.to_status == Some(TaskStatus::Cancelled));
    assert!(!cancelled);
    assert_eq!(executions(dir.path()), 1);
    engine.shutdown().await;
}

#[tokio::test]
async fn progress_from_another_server_is_not_applied_to_our_task() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    let entry = |scenario: &str| {
        json!({
            "command": "python3",
            "args": [fault_server().display().to_string(), scenario],
            "env": {"FAULT_COUNT": dir.path().join("count").display().to_string(), "FAULT_TOKEN": token.display().to_string()},
        })
    };
    write_servers_config(
        &dir.path().join("servers.json"),
        [("owner", entry("token-owner")), ("thief", entry("token-thief"))],
    );
    let paths = Paths { config: dir.path().join("servers.json"), data_dir: dir.path().join("data") };
    let engine = Engine::open(paths, options()).await.unwrap();
    let ours = engine.run("owner", "job", json!({})).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !token.exists() {
        assert!(Instant::now() < deadline, "the owner was never sent the task");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let theirs = engine.run("thief", "job", json!({})).await.unwrap();
    let wait_end = |id: String| {
        let engine = &engine;
        async move {
            tokio::time::timeout(Duration::from_secs(20), engine.wait(&id, |r| r.status.is_terminal()))
                .await
                .expect("the task ends")
                .unwrap()
        }
    };
    let theirs = wait_end(theirs.id).await;
    let ours = wait_end(ours.id).await;
    assert_eq!(theirs.status, TaskStatus::Completed, "{theirs:#?}");
    assert_eq!(ours.status, TaskStatus::Completed, "{ours:#?}");
    assert_eq!(ours.progress, None, "another server's progress: {ours:#?}");
    let events = engine.events(&ours.id).unwrap();
    assert!(!format!("{events:?}").contains("stolen"), "{events:#?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn an_accepted_answer_to_a_big_question_is_not_asked_again_by_a_poll_sent_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "modern-big-question", options()).await;
    let rec = engine.run("fault", "job", json!({})).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), engine.wait(&rec.id, taskdeck_engine::is_waiting_for_answer))
        .await
        .expect("the question is asked")
        .unwrap();
    let answered = engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(Default::default())).await.unwrap();
    assert_ne!(answered.status, TaskStatus::InputRequired, "{answered:#?}");
    let done = tokio::time::timeout(Duration::from_secs(20), engine.wait(&rec.id, |r| r.status.is_terminal()))
        .await
        .expect("the task ends")
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    let kinds: Vec<_> = engine.events(&rec.id).unwrap().iter().map(|e| e.kind).collect();
    let after_answer = kinds.iter().skip_while(|k| **k != taskdeck_store::EventKind::Answer).skip(1);
    assert!(!after_answer.clone().any(|k| *k == taskdeck_store::EventKind::Question), "asked again: {kinds:?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_plain_call_whose_result_is_too_large_to_read_fails_with_that_reason() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), "plain-huge", options()).await;
    let rec = engine.run("fault", "plain", json!({})).await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()))
        .await
        .expect("the call ends instead of waiting for its hour")
        .unwrap();
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}");
    assert_eq!(done.error.unwrap().reason, Some(FailureReason::ResponseTooLarge));
    assert_eq!(executions(dir.path()), 1);
    engine.shutdown().await;
}
