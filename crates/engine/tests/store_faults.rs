//! A store that stops taking writes while a task runs (a full disk): the task is no longer driven,
//! stays recorded as it was, and everyone waiting on it learns why within a bound, instead of the
//! write being retried for ever.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use taskdeck_engine::config::Paths;
use taskdeck_engine::{AnswerInput, Engine, EngineError, EngineOptions, ErrorCode, StoreFault};
use taskdeck_protocol::TaskStatus;
use taskdeck_test_support::{demo_server_entry, write_servers_config};

fn paths(dir: &Path) -> Paths {
    Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }
}

async fn open(dir: &Path) -> Engine {
    write_servers_config(&dir.join("servers.json"), [("demo", demo_server_entry(&dir.join("demo-state")))]);
    let opts = EngineOptions { server_wait: Duration::from_secs(20), ..EngineOptions::default() };
    Engine::open(paths(dir), opts).await.unwrap()
}

fn is_disk_full(e: &EngineError) -> bool {
    matches!(e, EngineError::StoreUnwritable { fault: StoreFault::DiskFull, .. })
}

#[tokio::test]
async fn a_task_running_when_the_disk_fills_ends_its_wait_with_the_disk_full_error_and_stays_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path()).await;
    // A long topic makes the report's result span several pages: recording it needs new ones.
    let args = json!({"topic": "t".repeat(1000), "seconds": 2});
    let rec = engine.run("demo", "generate_report", args).await.unwrap();
    let running = tokio::time::timeout(Duration::from_secs(20), engine.wait(&rec.id, |r| r.remote_task_id.is_some()))
        .await
        .expect("the task starts")
        .unwrap();
    assert_eq!(running.status, TaskStatus::Working, "{running:#?}");

    engine.store().stop_growing_for_tests().unwrap();
    let started = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(20), engine.wait(&rec.id, |r| r.status.is_terminal()))
        .await
        .expect("the wait ends within its bound")
        .unwrap_err();
    assert!(is_disk_full(&err), "{err:?}");
    assert_eq!(err.code(), ErrorCode::DiskFull);
    let text = err.to_string();
    let store_file = paths(dir.path()).store_file();
    assert!(text.contains(&store_file.display().to_string()), "names the file: {text}");
    assert!(text.contains(&rec.id) && text.contains("free some disk space, then run `taskdeck-cli resume`"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());

    // Every later waiter learns the same at once, and nothing is sent for the task any more.
    let again = tokio::time::timeout(Duration::from_secs(2), engine.wait(&rec.id, |_| false)).await.unwrap();
    assert!(again.as_ref().is_err_and(is_disk_full), "{again:?}");
    let answered = engine.answer(&rec.id, AnswerInput::Decline).await;
    assert!(answered.as_ref().is_err_and(is_disk_full), "{answered:?}");
    let cancelled = engine.cancel(&rec.id).await;
    assert!(cancelled.as_ref().is_err_and(is_disk_full), "{cancelled:?}");
    assert!(engine.stalled(&rec.id).is_some(), "no driver follows it");
    let held = engine.get(&rec.id).unwrap();
    engine.shutdown().await;

    // The file holds the task where it was when the disk filled: not ended, no result.
    let store = taskdeck_store::Store::open(&store_file).unwrap();
    let stored = store.get(&rec.id).unwrap();
    assert_eq!(stored, held);
    assert_eq!(stored.status, TaskStatus::Working, "{stored:#?}");
    assert!(stored.result.is_none() && stored.error.is_none(), "{stored:#?}");
    drop(store);

    // With room again, resuming picks the task up where it was, and it ends with its result.
    let engine = open(dir.path()).await;
    engine.resume().await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    engine.shutdown().await;
}
