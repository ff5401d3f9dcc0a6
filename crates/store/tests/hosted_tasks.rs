//! The legacy client-hosted tasks a store keeps per server: added to files an older Taskdeck
//! wrote, written and changed, read back after the file is opened again, bounded per server
//! (finished ones go first), and gone with the session they belong to.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{HostedTaskRow, HttpSession, MAX_HOSTED_PER_SERVER, SCHEMA_VERSION, Store};

fn session(server: &str, id: &str) -> HttpSession {
    HttpSession {
        server: server.into(),
        url: "http://127.0.0.1:3001/mcp".into(),
        session_id: id.into(),
        protocol_version: "2025-11-25".into(),
        info: json!({"era": "legacy"}),
    }
}

fn row(server: &str, n: usize, terminal: bool) -> HostedTaskRow {
    let status = if terminal { "completed" } else { "input_required" };
    HostedTaskRow {
        server: server.into(),
        task_id: format!("taskdeck-{n}"),
        request_id: n.to_string(),
        task: json!({"taskId": format!("taskdeck-{n}"), "status": status}),
        outcome: terminal.then(|| json!({"result": {"role": "assistant"}})),
        terminal,
    }
}

#[test]
fn a_store_from_before_hosted_tasks_gains_the_table_and_keeps_what_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    {
        let store = Store::open(&path).unwrap();
        store.keep_http_session(&session("everything", "s-1")).unwrap();
    }
    {
        // As the release before this table left it.
        let conn = raw(&path);
        conn.execute_batch("DROP TABLE hosted_tasks").unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION - 1).unwrap();
    }
    let store = Store::open(&path).unwrap();
    let version: i64 = raw(&path).query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.http_session("everything").unwrap(), Some(session("everything", "s-1")));
    assert_eq!(store.hosted_tasks("everything").unwrap(), []);
}

#[test]
fn a_hosted_task_and_its_outcome_are_read_back_after_the_file_is_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    {
        let store = Store::open(&path).unwrap();
        store.keep_http_session(&session("everything", "s-1")).unwrap();
        store.keep_hosted_task(&row("everything", 1, false)).unwrap();
        store.keep_hosted_task(&row("everything", 2, false)).unwrap();
        // The first is answered: the same task, changed.
        store.keep_hosted_task(&row("everything", 1, true)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.hosted_tasks("everything").unwrap(), [row("everything", 1, true), row("everything", 2, false)]);
    assert_eq!(store.hosted_tasks("other").unwrap(), []);
}

#[test]
fn a_servers_hosted_tasks_are_bounded_finished_ones_going_first_then_the_oldest() {
    let f = fixture();
    for n in 0..MAX_HOSTED_PER_SERVER {
        f.store.keep_hosted_task(&row("a", n, n == 10)).unwrap();
    }
    f.store.keep_hosted_task(&row("b", 0, false)).unwrap();
    f.store.keep_hosted_task(&row("a", 1000, false)).unwrap();
    let kept = f.store.hosted_tasks("a").unwrap();
    assert_eq!(kept.len(), MAX_HOSTED_PER_SERVER);
    assert!(!kept.iter().any(|r| r.task_id == "taskdeck-10"), "the finished one went first");
    assert_eq!(kept[0].task_id, "taskdeck-0");
    f.store.keep_hosted_task(&row("a", 1001, false)).unwrap();
    let kept = f.store.hosted_tasks("a").unwrap();
    assert_eq!(kept.len(), MAX_HOSTED_PER_SERVER);
    assert_eq!(kept[0].task_id, "taskdeck-1", "then the oldest");
    assert_eq!(kept.last().unwrap().task_id, "taskdeck-1001");
    assert_eq!(f.store.hosted_tasks("b").unwrap().len(), 1, "another server's are its own");
}

#[test]
fn hosted_tasks_go_with_their_session_when_it_is_replaced_or_forgotten() {
    let f = fixture();
    f.store.keep_http_session(&session("a", "s-1")).unwrap();
    f.store.keep_hosted_task(&row("a", 1, false)).unwrap();
    f.store.keep_http_session(&session("a", "s-1")).unwrap();
    assert_eq!(f.store.hosted_tasks("a").unwrap().len(), 1, "the same session kept again keeps them");
    f.store.keep_http_session(&session("a", "s-2")).unwrap();
    assert_eq!(f.store.hosted_tasks("a").unwrap(), [], "a new session has none");
    f.store.keep_hosted_task(&row("a", 2, false)).unwrap();
    f.store.forget_http_session("a").unwrap();
    assert_eq!(f.store.hosted_tasks("a").unwrap(), []);
}
