//! The integrity check of an up-to-date store runs beside the reads: the first page does not wait
//! for it, every write does, and a damaged store is still refused with nothing written to it.

mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use taskdeck_store::{
    HostedTaskRow, HttpSession, PageRequest, PurgeReason, Retention, Store, StoreError, TaskQuery, Update,
};

/// Long enough for a write that did not wait to have finished.
const SETTLE: Duration = Duration::from_millis(300);

/// A closed store of `n` finished tasks, in WAL mode with its WAL checkpointed away, as a clean
/// exit leaves it.
fn closed_store(n: usize) -> (tempfile::TempDir, PathBuf) {
    let Fixture { dir, path, store } = fixture();
    for i in 0..n {
        let t = store.create_task(new_task(&format!("t{i}"))).unwrap();
        let result = serde_json::json!({"content": [{"type": "text", "text": format!("report {i} on tides")}]});
        store.apply(&t.id, Update::Completed { result, server_status: None }).unwrap();
    }
    drop(store);
    assert!(!wal(&path).exists(), "closing the store leaves no WAL");
    let mode: String = raw(&path).query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    (dir, path)
}

fn wal(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", path.display()))
}

/// The store file and its WAL, as bytes (`None`: no WAL file).
fn on_disk(path: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    (std::fs::read(path).unwrap(), std::fs::read(wal(path)).ok())
}

/// Overwrites the root page of `table` in the closed file, keeping the header (and WAL mode).
fn damage(path: &Path, table: &str) {
    let conn = raw(path);
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let root: i64 =
        conn.query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [table], |r| r.get(0)).unwrap();
    drop(conn);
    assert!(root > 1, "{table} has a page of its own");
    let mut data = std::fs::read(path).unwrap();
    let start = ((root - 1) * page_size) as usize;
    for (i, b) in data[start..start + page_size as usize].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ 0x5A;
    }
    std::fs::write(path, &data).unwrap();
}

fn assert_unchanged(path: &Path, before: &(Vec<u8>, Option<Vec<u8>>)) {
    let now = on_disk(path);
    assert_eq!(now.1.as_ref().map(Vec::len), before.1.as_ref().map(Vec::len), "the WAL (its length)");
    assert!(now.1 == before.1, "the WAL was written to");
    assert_eq!(now.0.len(), before.0.len(), "the file's length");
    let first = now.0.iter().zip(&before.0).position(|(a, b)| a != b);
    assert_eq!(first, None, "the store was written to (first changed byte)");
}

fn first_page(store: &Store) -> taskdeck_store::Result<Vec<taskdeck_store::TaskRecord>> {
    Ok(store.records(&TaskQuery::default(), &PageRequest { before: None, limit: Some(50) })?.items)
}

type Outcome<T> = mpsc::Receiver<taskdeck_store::Result<T>>;

/// Runs `work` on a clone of the store on a thread; the receiver gets its outcome, and the
/// handle says when the thread (and its clone of the store) is gone.
fn in_background<T: Send + 'static>(
    store: &Store,
    work: impl FnOnce(&Store) -> taskdeck_store::Result<T> + Send + 'static,
) -> (Outcome<T>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let store = store.clone();
    let thread = std::thread::spawn(move || {
        let _ = tx.send(work(&store));
    });
    (rx, thread)
}

/// Starts `create_task` on a thread.
fn write_in_background(store: &Store, key: &str) -> (Outcome<taskdeck_store::TaskRecord>, std::thread::JoinHandle<()>) {
    let task = new_task(key);
    in_background(store, move |s| s.create_task(task))
}

fn assert_damaged_naming(err: &StoreError, path: &Path) {
    assert!(matches!(err, StoreError::Damaged { path: Some(_), .. }), "{err:?}");
    assert_eq!(err.code(), "damaged");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()) && message.contains("left untouched"), "{message}");
}

#[test]
fn the_first_page_is_read_while_the_check_has_not_finished() {
    let (_dir, path) = closed_store(60);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    let page = first_page(&store).unwrap();
    assert_eq!(page.len(), 50);
    hold.release();
    store.checked().unwrap();
}

#[test]
fn the_counts_are_read_while_the_check_has_not_finished() {
    // The app asks for the first page and the counts together: neither may wait for the check's lock.
    let (_dir, path) = closed_store(7);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    let (tx, counted) = mpsc::channel();
    let counter = store.clone();
    std::thread::spawn(move || {
        let all = counter.counts(&TaskQuery::default()).map(|c| (c.completed, c.total));
        let searched = TaskQuery { search: Some("tides".into()), ..TaskQuery::default() };
        let _ = tx.send(all.and_then(|all| Ok((all, counter.counts(&searched)?.total))));
    });
    let counted = counted.recv_timeout(Duration::from_secs(5)).map(|r| r.unwrap());
    hold.release();
    assert_eq!(counted, Ok(((7, 7), 7)), "the counts waited for the check");
    store.checked().unwrap();
}

#[test]
fn a_write_during_the_check_waits_for_it_and_then_succeeds_on_a_sound_store() {
    let (_dir, path) = closed_store(5);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    let (outcome, _writer) = write_in_background(&store, "during");
    assert!(outcome.recv_timeout(SETTLE).is_err(), "the write went on before the check ended");
    // Reads go on while the write waits: it waits without holding the store's connection.
    let (tx, read) = mpsc::channel();
    let reader = store.clone();
    std::thread::spawn(move || {
        let _ = tx.send(first_page(&reader).map(|p| p.len()));
    });
    let read = read.recv_timeout(Duration::from_secs(5)).map(|r| r.unwrap());
    hold.release();
    assert_eq!(read, Ok(5), "the read waited for the write");
    let written = outcome.recv_timeout(Duration::from_secs(10)).expect("the write ended").unwrap();
    assert_eq!(store.get(&written.id).unwrap(), written);
}

#[test]
fn a_write_that_goes_straight_to_sql_waits_for_the_check_too() {
    // Pins, deletes and retention take the connection and write: the check's lock holds them, and
    // the store's busy handler makes them wait for its outcome rather than for the busy timeout.
    let (_dir, path) = closed_store(3);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    let id = first_page(&store).unwrap()[0].id.clone();
    let (tx, rx) = mpsc::channel();
    let pinner = store.clone();
    let pinned = id.clone();
    std::thread::spawn(move || {
        let _ = tx.send(pinner.set_pinned(&pinned, true));
    });
    assert!(rx.recv_timeout(SETTLE).is_err(), "the pin was written before the check ended");
    hold.release();
    let summary = rx.recv_timeout(Duration::from_secs(10)).expect("the pin ended").unwrap();
    assert!(summary.pinned, "{summary:?}");
}

#[test]
fn another_connection_cannot_write_while_the_check_runs() {
    let (_dir, path) = closed_store(3);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    let other = raw(&path);
    other.busy_timeout(Duration::from_millis(200)).unwrap();
    let err = other.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap_err();
    assert_eq!(err.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy), "{err}");
    // Reading goes on.
    let n: i64 = other.query_row("SELECT count(*) FROM tasks", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 3);
    hold.release();
    store.checked().unwrap();
    other.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap();
}

#[test]
fn a_second_opener_while_the_first_checks_checks_for_itself_and_opens() {
    let (_dir, path) = closed_store(3);
    let (first, hold) = Store::open_check_later(&path).unwrap();
    let started = std::time::Instant::now();
    let second = Store::open(&path).unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "the second opener waited for the lock");
    second.checked().unwrap();
    assert_eq!(first_page(&second).unwrap().len(), 3);
    hold.release();
    first.checked().unwrap();
    second.create_task(new_task("after")).unwrap();
}

#[test]
fn a_damaged_store_found_after_a_read_went_on_is_refused_with_nothing_written() {
    let (dir, path) = closed_store(40);
    // The tasks table stays readable; the search index's pages are where the damage is.
    damage(&path, "task_search_data");
    let before = on_disk(&path);

    let (store, hold) = Store::open_check_later(&path).unwrap();
    let page = first_page(&store).unwrap();
    assert_eq!(page.len(), 40, "a page away from the damage reads as it is");
    let (create, creator) = write_in_background(&store, "never");
    let id = page[0].id.clone();
    let (apply, applier) = in_background(&store, move |s| {
        s.apply(&id, Update::Status { status: taskdeck_store::TaskStatus::Working, message: None, server_status: None })
    });
    assert!(create.recv_timeout(SETTLE).is_err(), "the write did not wait for the check");
    hold.release();

    let err = store.checked().unwrap_err();
    assert_damaged_naming(&err, &path);
    let err = create.recv_timeout(Duration::from_secs(10)).expect("the write ended").unwrap_err();
    assert_damaged_naming(&err, &path);
    let err = apply.recv_timeout(Duration::from_secs(10)).expect("the update ended").unwrap_err();
    assert_damaged_naming(&err, &path);
    // Nor does a write that goes straight to SQL get through.
    assert!(store.set_pinned(&page[1].id, true).is_err());
    assert!(store.create_task(new_task("later")).is_err());
    // The last clone of the store is what closes the file.
    creator.join().unwrap();
    applier.join().unwrap();
    drop(store);

    assert_unchanged(&path, &before);
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec!["taskdeck.sqlite3".to_owned()], "opening left files behind");
}

#[test]
fn every_write_on_a_store_the_check_found_damaged_is_refused_as_damaged_not_as_locked() {
    // Pins, deletes, retention, the purge log, sessions and hosted questions write past the task
    // updates: each must say what is wrong with the store, as a refusal at open does, not that
    // the database is locked (the lock a damaged store's check keeps).
    let (_dir, path) = closed_store(30);
    damage(&path, "task_search_data");
    let before = on_disk(&path);

    let (store, hold) = Store::open_check_later(&path).unwrap();
    let page = first_page(&store).unwrap();
    let ids: Vec<String> = page.iter().map(|t| t.id.clone()).collect();
    // One of them asked while the check had not ended: it waits for the outcome, then is refused.
    let one = vec![ids[0].clone()];
    let (waiting, deleter) = in_background(&store, move |s| s.delete_tasks(&one, PurgeReason::User));
    assert!(waiting.recv_timeout(SETTLE).is_err(), "the delete did not wait for the check");
    hold.release();
    let err = waiting.recv_timeout(Duration::from_secs(10)).expect("the delete ended").unwrap_err();
    assert_damaged_naming(&err, &path);
    deleter.join().unwrap();

    let session = HttpSession {
        server: "remote".into(),
        url: "https://example.invalid/mcp".into(),
        session_id: "s-1".into(),
        protocol_version: "2025-11-25".into(),
        info: serde_json::json!({}),
    };
    let hosted = HostedTaskRow {
        server: "remote".into(),
        task_id: "h-1".into(),
        request_id: "7".into(),
        task: serde_json::json!({"taskId": "h-1", "status": "working"}),
        outcome: None,
        terminal: false,
    };
    let every_prune = Retention { keep: Some(0), ..Retention::default() };
    let writes: Vec<(&str, taskdeck_store::Result<()>)> = vec![
        ("pin", store.set_pinned(&ids[1], true).map(drop)),
        ("unpin", store.set_pinned(&ids[1], false).map(drop)),
        ("delete", store.delete_tasks(&ids[2..4], PurgeReason::User).map(drop)),
        ("prune", store.prune(&every_prune).map(drop)),
        ("keep a session", store.keep_http_session(&session)),
        ("forget a session", store.forget_http_session("remote").map(drop)),
        ("keep a hosted task", store.keep_hosted_task(&hosted)),
        ("forget hosted tasks", store.forget_hosted_tasks("remote").map(drop)),
        ("index", store.index_tasks(&ids[..2])),
        ("reclaim", store.reclaim(Duration::ZERO).map(drop)),
        ("create", store.create_task(new_task("never")).map(drop)),
    ];
    for (what, outcome) in writes {
        let err = outcome.expect_err(what);
        assert!(matches!(err, StoreError::Damaged { path: Some(_), .. }), "{what}: {err:?}");
        assert_damaged_naming(&err, &path);
    }
    // What was read stays readable: the damage is in pages the list does not read.
    assert_eq!(first_page(&store).unwrap().len(), 30);
    assert!(store.purge_log(0, 10).unwrap().is_empty(), "a purge line was written");
    drop(store);
    assert_unchanged(&path, &before);
}

#[test]
fn a_read_that_meets_the_damaged_page_fails_instead_of_finding_nothing() {
    let (_dir, path) = closed_store(40);
    damage(&path, "tasks");
    let before = on_disk(&path);

    let (store, hold) = Store::open_check_later(&path).unwrap();
    let err = first_page(&store).expect_err("a damaged page read as a page");
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    hold.release();
    assert_damaged_naming(&store.checked().unwrap_err(), &path);
    drop(store);
    assert_unchanged(&path, &before);
}

#[test]
fn a_store_dropped_before_its_check_ends_writes_nothing_and_opens_again() {
    let (_dir, path) = closed_store(10);
    let before = on_disk(&path);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    assert_eq!(first_page(&store).unwrap().len(), 10);
    drop(hold);
    drop(store);
    assert_unchanged(&path, &before);
    let again = Store::open(&path).unwrap();
    again.checked().unwrap();
    again.create_task(new_task("next")).unwrap();
}

const CHILD_ENV: &str = "TASKDECK_CHECK_CHILD_STORE";

/// Run as a child process by the test below: tries to take the write lock of the store named in
/// the environment, and says what happened.
#[test]
fn child_process_that_tries_to_write() {
    let Some(path) = std::env::var_os(CHILD_ENV) else { return };
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_millis(300)).unwrap();
    match conn.execute_batch("BEGIN IMMEDIATE; UPDATE tasks SET status_message = 'child' WHERE 0; COMMIT") {
        Ok(()) => println!("CHILD-WROTE"),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => println!("CHILD-BUSY"),
        Err(e) => println!("CHILD-ERROR {e}"),
    }
}

fn child_tries_to_write(path: &Path) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_that_tries_to_write", "--test-threads=1", "--nocapture", "--quiet"])
        .env(CHILD_ENV, path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().find(|l| l.starts_with("CHILD-")).unwrap_or("no answer").to_owned()
}

#[test]
fn another_process_cannot_write_while_the_check_runs_and_can_once_it_passed() {
    let (_dir, path) = closed_store(3);
    let (store, hold) = Store::open_check_later(&path).unwrap();
    assert_eq!(child_tries_to_write(&path), "CHILD-BUSY");
    hold.release();
    store.checked().unwrap();
    assert_eq!(child_tries_to_write(&path), "CHILD-WROTE");
}

#[test]
fn a_damaged_store_with_frames_in_its_wal_is_refused_at_open_with_nothing_written() {
    // Frames in the WAL would be copied into the file by the first checkpoint: such a store is
    // checked before it is opened.
    let (_dir, path) = closed_store(20);
    damage(&path, "task_search_data");
    let writer = raw(&path);
    writer.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).unwrap();
    writer.execute("UPDATE tasks SET status_message = 'left in the WAL'", []).unwrap();
    drop(writer);
    let before = on_disk(&path);
    assert!(before.1.as_ref().is_some_and(|w| !w.is_empty()), "the WAL holds frames");

    let err = Store::open(&path).err().expect("a damaged store was opened");
    assert_damaged_naming(&err, &path);
    assert_unchanged(&path, &before);
}

#[test]
fn a_damaged_store_whose_lock_another_connection_holds_is_refused_at_open() {
    // Its check runs at open then (waiting for the lock would cost what checking costs).
    let (_dir, path) = closed_store(20);
    damage(&path, "task_search_data");
    let before = on_disk(&path).0;
    let other = raw(&path);
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = Store::open(&path).err().expect("a damaged store was opened");
    assert_damaged_naming(&err, &path);
    other.execute_batch("ROLLBACK").unwrap();
    drop(other);
    assert!(on_disk(&path).0 == before, "the damaged store was written to");
}

#[test]
fn a_store_opened_checked_is_refused_at_open_when_damaged_and_holds_no_lock_when_sound() {
    let (_dir, path) = closed_store(20);
    let store = Store::open_checked(&path).unwrap();
    // Nothing holds the lock: another connection writes at once.
    let other = raw(&path);
    other.busy_timeout(Duration::ZERO).unwrap();
    other.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap();
    drop((store, other));

    damage(&path, "task_search_data");
    let before = on_disk(&path).0;
    let err = Store::open_checked(&path).err().expect("a damaged store was opened");
    assert_damaged_naming(&err, &path);
    assert!(on_disk(&path).0 == before, "the damaged store was written to");
    // A read-only connection cannot take the WAL away when it closes (as before the check ran
    // beside the reads); it leaves it empty.
    assert!(on_disk(&path).1.is_none_or(|wal| wal.is_empty()), "the WAL was written to");
}
