//! An engine opened in two steps (`Engine::open_readable`, then `Opening::ready`): its store is
//! read while the integrity check runs, and nothing starts a server, resumes a task or writes the
//! store before the check passed. A store the check finds damaged is refused as at open.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use taskdeck_engine::config::{Config, Paths};
use taskdeck_engine::{Engine, EngineOptions, ErrorCode, Opening};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::{CheckHold, Mode, NewTask, PageRequest, TaskQuery, Update};
use taskdeck_test_support::{demo_server_entry, write_servers_config};

/// Long enough for a `ready` that did not wait for the check to have returned.
const SETTLE: Duration = Duration::from_millis(300);

struct Setup {
    _dir: tempfile::TempDir,
    paths: Paths,
    /// The demo server's own state: it is there once the server was started.
    server_state: PathBuf,
}

impl Setup {
    fn store_file(&self) -> PathBuf {
        self.paths.store_file()
    }

    async fn open_readable(&self) -> (Opening, CheckHold) {
        let config = Config::load(&self.paths).unwrap();
        Engine::open_readable_check_later(self.paths.clone(), EngineOptions::default(), config).await.unwrap()
    }
}

/// A data directory closed cleanly, its store holding 20 finished tasks and one plain call that
/// was running when Taskdeck stopped (resuming fails it, which is a write), and a config whose
/// server leaves its state behind once started.
async fn closed_data_dir() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let server_state = dir.path().join("server-state");
    let config = dir.path().join("servers.json");
    write_servers_config(&config, [("demo", demo_server_entry(&server_state))]);
    let paths = Paths { config, data_dir: dir.path().join("data") };
    let engine = Engine::open(paths.clone(), EngineOptions::default()).await.unwrap();
    let store = engine.store().clone();
    let new = |i: usize| NewTask {
        server: "demo".into(),
        tool: "count".into(),
        arguments: json!({"n": i}),
        idempotency_key: format!("key-{i}"),
        mode: Mode::Call,
    };
    for i in 0..20 {
        let t = store.create_task(new(i)).unwrap();
        let result = json!({"content": [{"type": "text", "text": format!("counted to {i}")}]});
        store.apply(&t.id, Update::Completed { result, server_status: None }).unwrap();
    }
    let running = store.create_task(new(20)).unwrap();
    assert!(!running.status.is_terminal(), "{running:?}");
    drop(store);
    engine.shutdown().await;
    drop(engine);
    let wal = PathBuf::from(format!("{}-wal", paths.store_file().display()));
    assert!(!wal.exists(), "closing the engine leaves no WAL");
    assert!(!server_state.exists(), "writing the tasks started the server");
    Setup { _dir: dir, paths, server_state }
}

/// Overwrites the root page of `table` in the closed store, keeping its header (and WAL mode).
fn damage(path: &Path, table: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let root: i64 =
        conn.query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [table], |r| r.get(0)).unwrap();
    drop(conn);
    let mut data = std::fs::read(path).unwrap();
    let start = ((root - 1) * page_size) as usize;
    for (i, b) in data[start..start + page_size as usize].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ 0x5A;
    }
    std::fs::write(path, &data).unwrap();
}

#[tokio::test]
async fn the_history_is_read_while_the_check_runs_and_the_engine_is_ready_once_it_passed() {
    let setup = closed_data_dir().await;
    let (opening, hold) = setup.open_readable().await;
    let reader = opening.reader();
    let page = reader.store().summaries(&TaskQuery::default(), &PageRequest::default()).unwrap();
    assert_eq!(page.items.len(), 21);
    let counts = reader.store().counts(&TaskQuery::default()).unwrap();
    assert_eq!((counts.completed, counts.working, counts.total), (20, 1, 21), "{counts:?}");
    let servers: Vec<String> = reader.servers().into_iter().map(|s| s.name).collect();
    assert_eq!(servers, ["demo"]);

    let ready = tokio::spawn(opening.ready());
    tokio::time::sleep(SETTLE).await;
    assert!(!ready.is_finished(), "the engine was ready before its store's check ended");
    hold.release();
    let engine = tokio::time::timeout(Duration::from_secs(20), ready).await.unwrap().unwrap().unwrap();
    let resumed = engine.resume().await.unwrap();
    assert!(resumed.iter().all(|r| r.status.is_terminal()), "the interrupted call was failed: {resumed:?}");
    let now = engine.store().counts(&TaskQuery::default()).unwrap();
    assert_eq!((now.failed, now.working), (1, 0), "{now:?}");
    drop(reader);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_store_the_check_finds_damaged_after_open_starts_no_server_resumes_nothing_and_is_refused() {
    let setup = closed_data_dir().await;
    let path = setup.store_file();
    // The tasks stay readable; the search index's pages are where the damage is.
    damage(&path, "task_search_data");
    let before = std::fs::read(&path).unwrap();

    let (opening, hold) = setup.open_readable().await;
    let reader = opening.reader();
    let page = reader.store().summaries(&TaskQuery::default(), &PageRequest::default()).unwrap();
    assert_eq!(page.items.len(), 21, "the first page was not served while the check ran");
    assert!(page.items.iter().any(|t| t.status == TaskStatus::Working));
    assert_eq!(reader.store().counts(&TaskQuery::default()).unwrap().total, 21);

    let ready = tokio::spawn(opening.ready());
    tokio::time::sleep(SETTLE).await;
    assert!(!ready.is_finished(), "the engine was ready before its store's check ended");
    hold.release();
    let refused = tokio::time::timeout(Duration::from_secs(20), ready).await.unwrap().unwrap();
    let err = refused.err().expect("an engine on a damaged store");
    assert_eq!(err.code(), ErrorCode::Damaged, "{err}");
    assert!(err.to_string().contains("taskdeck.sqlite3"), "the message names the file: {err}");
    drop(reader);

    assert!(!setup.server_state.exists(), "a server was started on a damaged store");
    assert!(std::fs::read(&path).unwrap() == before, "the damaged store was written to (the call resumed?)");
    // The data directory was let go: the next open is refused for the same reason, not locked out.
    let again = Engine::open(setup.paths.clone(), EngineOptions::default()).await.err().expect("opened");
    assert_eq!(again.code(), ErrorCode::Damaged, "{again}");
    assert_eq!(again.to_string(), err.to_string(), "refused later as at open");
    assert!(!setup.server_state.exists(), "a server was started on a damaged store");
}
