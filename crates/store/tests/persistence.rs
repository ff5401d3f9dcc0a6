//! What survives: everything, across a reopen; and what a corrupt cell does: a typed error.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{Answer, Era, ListFilter, Store, StoreError, TaskStatus, Update};

#[test]
fn tasks_questions_answers_and_history_survive_a_reopen() {
    let f = fixture();
    let asked = task_in(&f.store, "asked", TaskStatus::InputRequired);
    let asked = f.store.set_remote(&asked.id, Era::Modern, Some("remote-1"), Some(3_600_000), Some(2_000)).unwrap();
    let answered = task_in(&f.store, "answered", TaskStatus::InputRequired);
    let answered = f
        .store
        .apply(
            &answered.id,
            Update::Answer(Answer { key: answer_key("q1"), response: json!({ "action": "decline" }), note: None }),
        )
        .unwrap();
    let failed = task_in(&f.store, "failed", TaskStatus::Failed);
    let history = f.store.events(&asked.id).unwrap();
    let Fixture { dir, path, store } = f;
    drop(store);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.get(&asked.id).unwrap(), asked, "the pending question can be rebuilt after restart");
    assert_eq!(store.get(&answered.id).unwrap(), answered);
    assert_eq!(store.get(&failed.id).unwrap(), failed);
    assert_eq!(store.events(&asked.id).unwrap(), history);
    let live: Vec<_> = store.non_terminal().unwrap().into_iter().map(|t| t.id).collect();
    assert_eq!(live, [asked.id, answered.id]);
    drop(dir);
}

#[test]
fn a_duplicate_idempotency_key_names_the_existing_task_and_creates_nothing() {
    let f = fixture();
    let first = f.store.create_task(new_task("same")).unwrap();
    let err = f.store.create_task(new_task("same")).unwrap_err();
    assert!(matches!(&err, StoreError::Duplicate { existing, .. } if *existing == first.id), "{err:?}");
    assert_eq!(f.store.list(&ListFilter::default()).unwrap().len(), 1);
    assert_eq!(event_count(&f.store, &first.id), 1);
}

#[test]
fn list_is_newest_first_and_filters_by_status_server_and_limit() {
    let f = fixture();
    let a = task_in(&f.store, "a", TaskStatus::Working);
    let b = task_in(&f.store, "b", TaskStatus::Completed);
    let mut other = new_task("c");
    other.server = "other".into();
    let c = f.store.create_task(other).unwrap();

    let ids =
        |filter: ListFilter| -> Vec<String> { f.store.list(&filter).unwrap().into_iter().map(|t| t.id).collect() };
    assert_eq!(ids(ListFilter::default()), [c.id.as_str(), &b.id, &a.id]);
    assert_eq!(ids(ListFilter { status: Some(TaskStatus::Working), ..Default::default() }), [c.id.as_str(), &a.id]);
    assert_eq!(ids(ListFilter { server: Some("other".into()), ..Default::default() }), [c.id.as_str()]);
    assert_eq!(ids(ListFilter { limit: Some(1), ..Default::default() }), [c.id.as_str()]);
}

#[test]
fn a_corrupt_json_cell_is_a_typed_error_naming_task_and_column() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Completed);
    for column in ["arguments", "result"] {
        let conn = raw(&f.path);
        conn.execute(&format!("UPDATE tasks SET {column} = '{{\"cut off' WHERE id = ?1"), [&task.id]).unwrap();
        drop(conn);

        let err = f.store.get(&task.id).unwrap_err();
        match &err {
            StoreError::Corrupt { id, column: c, .. } => {
                assert_eq!(id, &task.id);
                assert_eq!(*c, column);
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert!(err.to_string().contains(&task.id) && err.to_string().contains(column), "{err}");
        assert!(matches!(f.store.list(&ListFilter::default()), Err(StoreError::Corrupt { .. })));
        raw(&f.path).execute("UPDATE tasks SET arguments = '{}', result = '{}' WHERE id = ?1", [&task.id]).unwrap();
    }
}

#[test]
fn records_print_as_json_with_the_fields_the_cli_shows() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Failed);
    let v = serde_json::to_value(&task).unwrap();
    for key in [
        "id",
        "server",
        "tool",
        "arguments",
        "status",
        "status_message",
        "progress",
        "question",
        "result",
        "error",
        "remote_task_id",
        "era",
        "created_at",
        "updated_at",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["status"], "failed");
    assert_eq!(v["progress"], serde_json::Value::Null);
    assert_eq!(v["error"], json!({ "code": -32603, "message": "boom", "reason": "server error" }));
    let created = v["created_at"].as_str().unwrap();
    assert_eq!(created.len(), "2026-01-01T00:00:00.000Z".len(), "{created}");
    assert!(created.ends_with('Z'));
    let back: taskdeck_store::TaskRecord = serde_json::from_value(v).unwrap();
    assert_eq!(back, task);
}
