//! Questions as the store keeps them: typed, and still readable from rows an older Taskdeck wrote
//! (the bare request in `question`, its key beside it in `question_key`).

mod common;

use common::*;
use serde_json::json;
use taskdeck_protocol::form::{FieldKind, FormModel};
use taskdeck_protocol::question::{Asks, QuestionKey};
use taskdeck_store::{Answer, Store, StoreError, TaskStatus, Update};

/// Rewrites a pending question's row the way the code before typed questions wrote it.
fn write_old_shape(path: &std::path::Path, id: &str, key: &str, request: serde_json::Value) {
    let n = raw(path)
        .execute(
            "UPDATE tasks SET question_key = ?2, question = ?3 WHERE id = ?1",
            rusqlite::params![id, key, request.to_string()],
        )
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_question_written_before_questions_were_typed_reads_as_its_form_and_can_be_answered() {
    let f = fixture();
    let task = task_in(&f.store, "old", TaskStatus::InputRequired);
    let old_key = r#"{"kind":"input_key","value":"service"}"#;
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "message": "Which service?",
            "requestedSchema": {"type": "object", "properties": {
                "service": {"type": "string", "oneOf": [{"const": "checkout", "title": "Checkout API"}]}
            }, "required": ["service"]}
        }
    });
    let Fixture { dir, path, store } = f;
    drop(store);
    write_old_shape(&path, &task.id, old_key, request.clone());

    let store = Store::open(&path).unwrap();
    let q = store.get(&task.id).unwrap().question.expect("the old question is still pending");
    assert_eq!(q.key, QuestionKey::InputKey("service".into()));
    assert_eq!(q.message.as_deref(), Some("Which service?"));
    assert_eq!(serde_json::to_value(&q.request).unwrap(), request);
    let Asks::Form { form: FormModel::Ready { fields }, .. } = &q.asks else { panic!("expected a form: {q:?}") };
    assert_eq!((fields[0].name.as_str(), fields[0].required), ("service", true));
    assert!(
        matches!(&fields[0].kind, FieldKind::Choice { options } if options[0].label.as_deref() == Some("Checkout API"))
    );

    // Answered under the key the old code would have used.
    let rec = store
        .apply(&task.id, Update::Answer(Answer { key: old_key.into(), response: json!({"action": "decline"}) }))
        .unwrap();
    assert_eq!(rec.status, TaskStatus::Working);
    drop(dir);
}

#[test]
fn an_old_legacy_question_and_an_old_url_question_keep_their_keys_and_what_they_ask() {
    let f = fixture();
    let legacy = task_in(&f.store, "legacy", TaskStatus::InputRequired);
    let url = task_in(&f.store, "url", TaskStatus::InputRequired);
    let Fixture { dir, path, store } = f;
    drop(store);
    write_old_shape(
        &path,
        &legacy.id,
        r#"{"kind":"request","value":"task-t:2-0"}"#,
        json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {}}}),
    );
    write_old_shape(
        &path,
        &url.id,
        r#"{"kind":"request","value":4}"#,
        json!({"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in",
            "url": "https://auth.example/x", "elicitationId": "e1"}}),
    );

    let store = Store::open(&path).unwrap();
    let q = store.get(&legacy.id).unwrap().question.unwrap();
    assert_eq!(q.key, QuestionKey::Request("task-t:2-0".into()));
    assert_eq!(q.form(), Some(&FormModel::Ready { fields: vec![] }));
    let q = store.get(&url.id).unwrap().question.unwrap();
    assert_eq!(q.asks, Asks::Url { url: "https://auth.example/x".into(), elicitation_id: "e1".into() });
    drop(dir);
}

#[test]
fn an_old_question_that_is_not_an_elicitation_is_read_as_unsupported_not_refused() {
    let f = fixture();
    let task = task_in(&f.store, "odd", TaskStatus::InputRequired);
    let Fixture { dir, path, store } = f;
    drop(store);
    write_old_shape(&path, &task.id, "k", json!({"method": "tea/brew", "params": {"message": "Milk?"}}));

    let store = Store::open(&path).unwrap();
    let q = store.get(&task.id).unwrap().question.unwrap();
    assert!(matches!(q.asks, Asks::Unsupported { .. }), "{q:?}");
    assert_eq!(q.message.as_deref(), Some("Milk?"));
    drop(dir);
}

#[test]
fn a_question_cell_that_is_no_request_at_all_is_a_typed_corruption_error() {
    let f = fixture();
    let task = task_in(&f.store, "bad", TaskStatus::InputRequired);
    write_old_shape(&f.path, &task.id, "k", json!([1, 2]));
    let err = f.store.get(&task.id).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { column: "question", .. }), "{err:?}");
}

#[test]
fn a_typed_question_survives_a_reopen_whole() {
    let f = fixture();
    let task = task_in(&f.store, "typed", TaskStatus::InputRequired);
    let Fixture { dir, path, store } = f;
    drop(store);
    let stored: serde_json::Value = raw(&path)
        .query_row("SELECT question FROM tasks WHERE id = ?1", [&task.id], |r| r.get::<_, String>(0))
        .map(|s| serde_json::from_str(&s).unwrap())
        .unwrap();
    // What other readers of the file find: the typed question, with the request as sent.
    assert_eq!(stored["asks"]["kind"], "form");
    assert_eq!(stored["request"]["method"], "elicitation/create");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.get(&task.id).unwrap().question, task.question);
    drop(dir);
}
