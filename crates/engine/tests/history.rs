//! The history side of the engine against the real demo server: what a delete, a pin and a
//! delete of everything finished before a moment publish, and the one policy for a running task.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::open_engine;
use taskdeck_engine::{Engine, EngineError, EngineEvent, ErrorCode};
use taskdeck_protocol::TaskStatus;
use taskdeck_test_support::{demo_server_entry, write_servers_config};
use tokio::sync::broadcast::Receiver;

async fn open(dir: &Path) -> Engine {
    write_servers_config(&dir.join("servers.json"), [("demo", demo_server_entry(&dir.join("state")))]);
    open_engine(dir, Duration::from_secs(20)).await
}

async fn report(engine: &Engine, seconds: u32) -> String {
    engine.run("demo", "generate_report", json!({"topic": "history", "seconds": seconds})).await.unwrap().id
}

async fn finished(engine: &Engine, id: &str) {
    let rec = tokio::time::timeout(Duration::from_secs(30), engine.wait(id, |r| r.status.is_terminal()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.status, TaskStatus::Completed, "{rec:#?}");
}

/// The next event that is not a task write, a server's status or a log line.
async fn next_history_event(rx: &mut Receiver<EngineEvent>) -> EngineEvent {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await {
                Ok(e @ (EngineEvent::Deleted { .. } | EngineEvent::Pinned { .. })) => return e,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(e) => panic!("the engine's events ended: {e}"),
            }
        }
    })
    .await
    .expect("no history event within 10 s")
}

#[tokio::test]
async fn a_pin_and_a_delete_are_published_for_every_window() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path()).await;
    let id = report(&engine, 0).await;
    finished(&engine, &id).await;
    let mut rx = engine.subscribe();

    let pinned = engine.pin(&id, true).unwrap();
    assert!(pinned.pinned);
    match next_history_event(&mut rx).await {
        EngineEvent::Pinned { task } => assert!(task.id == id && task.pinned, "{task:?}"),
        other => panic!("expected the pin, got {other:?}"),
    }

    engine.delete(std::slice::from_ref(&id), false).await.unwrap();
    match next_history_event(&mut rx).await {
        EngineEvent::Deleted { tasks } => {
            assert_eq!(tasks.len(), 1);
            assert_eq!((tasks[0].id.as_str(), tasks[0].status), (id.as_str(), TaskStatus::Completed));
        }
        other => panic!("expected the delete, got {other:?}"),
    }
    engine.shutdown().await;
}

#[tokio::test]
async fn a_running_task_is_refused_with_its_real_status_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path()).await;
    let id = report(&engine, 60).await;
    let err = engine.delete(std::slice::from_ref(&id), false).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Refused, "{err}");
    assert_eq!(err.status(), Some(TaskStatus::Working));
    assert!(engine.get(&id).is_ok(), "a refused delete removes nothing");

    let mut rx = engine.subscribe();
    let purged = engine.delete(std::slice::from_ref(&id), true).await.unwrap();
    assert_eq!(purged[0].status, TaskStatus::Cancelled, "cancelled first, then deleted");
    assert!(matches!(next_history_event(&mut rx).await, EngineEvent::Deleted { .. }));
    assert!(matches!(engine.get(&id), Err(EngineError::Store(taskdeck_store::StoreError::NotFound { .. }))));
    engine.shutdown().await;
}

#[tokio::test]
async fn everything_finished_before_a_moment_goes_but_pinned_and_later_tasks_stay() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path()).await;
    let old = report(&engine, 0).await;
    let kept = report(&engine, 0).await;
    finished(&engine, &old).await;
    finished(&engine, &kept).await;
    engine.pin(&kept, true).unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cutoff = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let later = report(&engine, 0).await;
    finished(&engine, &later).await;

    let would = engine.delete_finished_before(cutoff, true).unwrap();
    assert_eq!(would.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), [old.as_str()]);
    assert!(engine.get(&old).is_ok(), "a dry run removes nothing");
    let removed = engine.delete_finished_before(cutoff, false).unwrap();
    assert_eq!(removed.len(), 1);
    assert!(engine.get(&old).is_err() && engine.get(&kept).is_ok() && engine.get(&later).is_ok());
    let log = engine.purge_log_newest(None, 10).unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].task_id.as_str(), log[0].why), (old.as_str(), taskdeck_store::PurgeReason::User));
    engine.shutdown().await;
}
