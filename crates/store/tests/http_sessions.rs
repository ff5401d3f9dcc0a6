//! The legacy HTTP sessions a store keeps for the next process to resume: added to files an older
//! Taskdeck wrote, written, replaced and removed, and the live-task check that decides whether a
//! session is left open.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{HttpSession, SCHEMA_VERSION, Store, Update};

fn session(server: &str, id: &str) -> HttpSession {
    HttpSession {
        server: server.into(),
        url: "http://127.0.0.1:3001/mcp".into(),
        session_id: id.into(),
        protocol_version: "2025-11-25".into(),
        info: json!({"era": "legacy", "protocol_version": "2025-11-25", "name": "everything", "tasks": true}),
    }
}

#[test]
fn a_store_from_before_http_sessions_gains_the_table_and_keeps_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    {
        let conn = store_at_version_4(&path);
        conn.execute(
            "INSERT INTO tasks (id, server, tool, arguments, idempotency_key, mode, status, created_at, updated_at)
             VALUES ('old-1', 'everything', 'simulate-research-query', '{}', 'old-1', 'task', 'working',
                 '2026-12-01T09:00:00.000Z', '2026-12-01T09:00:01.000Z')",
            [],
        )
        .unwrap();
    }

    let store = Store::open(&path).unwrap();
    let version: i64 = raw(&path).query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.get("old-1").unwrap().server, "everything", "the task is as it was");
    assert!(store.has_live_tasks("everything").unwrap());
    assert_eq!(store.http_session("everything").unwrap(), None, "no session until one is kept");
    store.keep_http_session(&session("everything", "s-1")).unwrap();
    assert_eq!(store.http_session("everything").unwrap(), Some(session("everything", "s-1")));
}

#[test]
fn a_kept_session_outlives_the_handle_is_replaced_by_the_next_and_is_removed_once() {
    let f = fixture();
    f.store.keep_http_session(&session("everything", "s-1")).unwrap();
    f.store.keep_http_session(&session("other", "o-1")).unwrap();
    drop(f.store);

    let store = Store::open(&f.path).unwrap();
    assert_eq!(store.http_session("everything").unwrap().map(|s| s.session_id).as_deref(), Some("s-1"));
    store.keep_http_session(&session("everything", "s-2")).unwrap();
    assert_eq!(store.http_session("everything").unwrap().map(|s| s.session_id).as_deref(), Some("s-2"));

    assert!(store.forget_http_session("everything").unwrap());
    assert!(!store.forget_http_session("everything").unwrap(), "nothing left to remove");
    assert_eq!(store.http_session("everything").unwrap(), None);
    assert_eq!(store.http_session("other").unwrap().map(|s| s.session_id).as_deref(), Some("o-1"), "others stay");
}

#[test]
fn a_stored_session_never_shows_its_id_in_debug_output() {
    let text = format!("{:?}", session("everything", "secret-session-7"));
    assert!(!text.contains("secret-session-7") && text.contains("everything"), "{text}");
}

#[test]
fn only_a_working_or_waiting_task_keeps_its_server_s_session_needed() {
    let f = fixture();
    assert!(!f.store.has_live_tasks("demo").unwrap());
    let t = f.store.create_task(new_task("a")).unwrap();
    assert!(f.store.has_live_tasks("demo").unwrap());
    assert!(!f.store.has_live_tasks("elsewhere").unwrap(), "another server's task is not this one's");
    f.store.apply(&t.id, Update::Cancelled { reason: None, server_status: None, server_told: None }).unwrap();
    assert!(!f.store.has_live_tasks("demo").unwrap(), "an ended task needs nothing kept");
}
