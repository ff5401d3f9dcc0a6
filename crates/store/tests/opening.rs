//! Opening a file: blank files become stores; anything else that is not ours is refused, and left
//! byte-for-byte as it was.

mod common;

use std::path::Path;

use common::*;
use taskdeck_store::{APPLICATION_ID, SCHEMA_VERSION, Store, StoreError};

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

fn siblings(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Opens `path`, expects a refusal, and checks that nothing on disk changed.
fn assert_refused_untouched(path: &Path) -> StoreError {
    let before = bytes(path);
    let files_before = siblings(path);
    let err = match Store::open(path) {
        Ok(_) => panic!("{} was opened as a store", path.display()),
        Err(e) => e,
    };
    assert_eq!(bytes(path), before, "{} was modified", path.display());
    assert_eq!(siblings(path), files_before, "opening left files behind");
    assert!(err.to_string().contains(&path.display().to_string()), "error must name the path: {err}");
    err
}

#[test]
fn a_new_path_becomes_a_taskdeck_store() {
    let f = fixture();
    let conn = raw(&f.path);
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(app_id, APPLICATION_ID);
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(mode, "wal");
}

#[test]
fn an_empty_file_is_initialised() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    std::fs::write(&path, b"").unwrap();
    let store = Store::open(&path).unwrap();
    store.create_task(new_task("a")).unwrap();
}

#[test]
fn reopening_an_up_to_date_store_changes_nothing_it_holds() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    let Fixture { dir, path, store } = f;
    drop(store);
    let again = Store::open(&path).unwrap();
    assert_eq!(again.get(&task.id).unwrap(), task);
    drop(dir);
}

#[test]
fn garbage_bytes_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let err = assert_refused_untouched(&path);
    assert!(matches!(err, StoreError::NotSqlite { .. }), "{err:?}");
}

#[test]
fn a_text_file_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "my notes\n").unwrap();
    let err = assert_refused_untouched(&path);
    assert!(matches!(err, StoreError::NotSqlite { .. }), "{err:?}");
}

#[test]
fn a_sqlite_header_over_damaged_pages_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    }
    let mut data = bytes(&path);
    // Keep the 16-byte magic, wreck the rest of the header (page size, counters) and page 1.
    for b in &mut data[16..] {
        *b = 0xA5;
    }
    std::fs::write(&path, &data).unwrap();
    let err = assert_refused_untouched(&path);
    assert!(matches!(err, StoreError::NotSqlite { .. } | StoreError::Foreign { .. }), "{err:?}");
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA application_id = 0x0F0F0F0F; PRAGMA user_version = 1;
             CREATE TABLE tasks (id TEXT); INSERT INTO tasks VALUES ('theirs');",
        )
        .unwrap();
    }
    let err = assert_refused_untouched(&path);
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
    assert!(err.to_string().contains("0x0f0f0f0f"), "{err}");
}

#[test]
fn a_database_with_unknown_tables_and_no_application_id_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');").unwrap();
    }
    let err = assert_refused_untouched(&path);
    assert!(matches!(&err, StoreError::Foreign { reason, .. } if reason.contains("notes")), "{err:?}");
}

#[test]
fn a_store_from_a_newer_taskdeck_is_refused_untouched() {
    let f = fixture();
    f.store.create_task(new_task("a")).unwrap();
    let Fixture { dir, path, store } = f;
    drop(store);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        // Back to a rollback journal so the file alone is the whole database and can be compared.
        conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(())).unwrap();
    }
    let err = assert_refused_untouched(&path);
    match err {
        StoreError::TooNew { found, supported, .. } => {
            assert_eq!(found, SCHEMA_VERSION + 1);
            assert_eq!(supported, SCHEMA_VERSION);
        }
        other => panic!("expected TooNew, got {other:?}"),
    }
    drop(dir);
}

#[test]
fn a_newer_store_still_in_wal_mode_keeps_its_main_file_intact() {
    let f = fixture();
    f.store.create_task(new_task("a")).unwrap();
    let Fixture { dir, path, store } = f;
    drop(store);
    raw(&path).pragma_update(None, "user_version", SCHEMA_VERSION + 5).unwrap();
    let before = bytes(&path);
    let err = Store::open(&path).err().expect("refused");
    assert!(matches!(err, StoreError::TooNew { found, .. } if found == SCHEMA_VERSION + 5), "{err:?}");
    assert_eq!(bytes(&path), before);
    drop(dir);
}

/// The page size and the tasks table's root page of a closed store, read with SQLite itself.
fn tasks_root_page(path: &Path) -> (u64, u64) {
    root_page(path, "tasks")
}

fn root_page(path: &Path, table: &str) -> (u64, u64) {
    let conn = raw(path);
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let root: i64 = conn
        .query_row("SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?1", [table], |r| r.get(0))
        .unwrap();
    (page_size as u64, root as u64)
}

/// Overwrites one page of a closed store (put back in rollback-journal mode first, so the file
/// alone is the whole database).
fn damage_page(path: &Path, table: &str) {
    raw(path).query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(())).unwrap();
    let (page_size, root) = root_page(path, table);
    let mut data = bytes(path);
    let start = ((root - 1) * page_size) as usize;
    for (i, b) in data[start..start + page_size as usize].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ 0x5A;
    }
    std::fs::write(path, &data).unwrap();
}

#[test]
fn a_store_with_a_damaged_search_index_page_is_refused_too() {
    // The index's own consistency walk is left out of the check at open; its pages are not.
    let f = fixture();
    for n in 0..20 {
        let t = f.store.create_task(new_task(&format!("t{n}"))).unwrap();
        f.store
            .apply(
                &t.id,
                taskdeck_store::Update::Completed {
                    result: serde_json::json!({"content": [{"type": "text", "text": format!("report {n} on tides")}]}),
                    server_status: None,
                },
            )
            .unwrap();
    }
    let Fixture { dir, path, store } = f;
    drop(store);
    damage_page(&path, "task_search_data");

    let err = assert_refused_untouched(&path);
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    drop(dir);
}

#[test]
fn a_store_with_a_damaged_tasks_page_is_refused_before_anything_is_written() {
    let f = fixture();
    for n in 0..20 {
        f.store.create_task(new_task(&format!("t{n}"))).unwrap();
    }
    let Fixture { dir, path, store } = f;
    drop(store);
    // A rollback journal, so the closed file alone is the whole database and can be compared.
    raw(&path).query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(())).unwrap();
    let (page_size, root) = tasks_root_page(&path);
    let mut data = bytes(&path);
    let start = ((root - 1) * page_size) as usize;
    for (i, b) in data[start..start + page_size as usize].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ 0x5A;
    }
    std::fs::write(&path, &data).unwrap();

    let err = assert_refused_untouched(&path);
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    assert_eq!(err.code(), "damaged");
    assert!(err.to_string().contains("damaged") && err.to_string().contains("left untouched"), "{err}");
    drop(dir);
}

#[cfg(unix)]
#[test]
fn the_store_and_its_wal_and_shm_files_are_readable_by_their_user_only() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    f.store.create_task(new_task("a")).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let file = format!("{}{suffix}", f.path.display());
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}");
    }
}

#[cfg(unix)]
#[test]
fn a_store_made_before_files_were_private_is_tightened_when_opened() {
    use std::os::unix::fs::PermissionsExt;
    let Fixture { dir, path, store } = fixture();
    drop(store);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _store = Store::open(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    drop(dir);
}

#[cfg(unix)]
#[test]
fn a_named_pipe_as_the_store_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
    let started = std::time::Instant::now();
    let err = Store::open(&path).err().expect("refused");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(matches!(err, StoreError::Io { .. }) && err.to_string().contains("named pipe"), "{err:?}");
}
