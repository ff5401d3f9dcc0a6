//! Questions as the store keeps them: typed, and still readable from files an older Taskdeck wrote
//! (the bare request in `question`, its key beside it in `question_key`), which the
//! `typed_questions` migration rewraps.

mod common;

use common::*;
use serde_json::json;
use taskdeck_protocol::form::{FieldKind, FormModel};
use taskdeck_protocol::question::{Asks, QuestionKey};
use taskdeck_store::{Answer, Store, StoreError, TaskStatus, Update};

/// A store file as the Taskdeck before typed questions left it: its one migration applied, and
/// one pending task per `(remote task id, question key, question cell)`, written the old way (the
/// bare request in `question`, its key beside it).
fn old_store(path: &std::path::Path, rows: &[(Option<&str>, &str, &str)]) -> Vec<String> {
    let conn = raw(path);
    conn.execute_batch(include_str!("../src/migrations/20261130091500_init.sql")).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    let mut ids = Vec::new();
    for (i, (remote, key, question)) in rows.iter().enumerate() {
        let id = format!("0000000{i}-old");
        conn.execute(
            "INSERT INTO tasks (id, server, tool, arguments, idempotency_key, mode, era, remote_task_id, status,
                 question_key, question, created_at, updated_at)
             VALUES (?1, 'demo', 'diagnose_incident', '{}', ?1, 'task', 'modern', ?2, 'input_required', ?3, ?4,
                 '2026-11-30T09:15:00.000Z', '2026-11-30T09:15:01.000Z')",
            rusqlite::params![id, remote, key, question],
        )
        .unwrap();
        ids.push(id);
    }
    ids
}

#[test]
fn a_question_written_before_questions_were_typed_reads_as_its_form_and_can_be_answered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
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
    let ids = old_store(&path, &[(Some("remote-1"), old_key, &request.to_string())]);

    let store = Store::open(&path).unwrap();
    let q = store.get(&ids[0]).unwrap().question.expect("the old question is still pending");
    assert_eq!(q.key, QuestionKey::InputKey("service".into()));
    assert_eq!(q.task_id.as_deref(), Some("remote-1"), "the question belongs to the row's remote task");
    assert_eq!(q.message.as_deref(), Some("Which service?"));
    assert_eq!(serde_json::to_value(&q.request).unwrap(), request);
    let Asks::Form { form: FormModel::Ready { fields }, .. } = &q.asks else { panic!("expected a form: {q:?}") };
    assert_eq!((fields[0].name.as_str(), fields[0].required), ("service", true));
    assert!(
        matches!(&fields[0].kind, FieldKind::Choice { options } if options[0].label.as_deref() == Some("Checkout API"))
    );

    // Answered under the key the old code would have used.
    let rec = store
        .apply(
            &ids[0],
            Update::Answer(Answer { key: old_key.into(), response: json!({"action": "decline"}), note: None }),
        )
        .unwrap();
    assert_eq!(rec.status, TaskStatus::Working);
}

#[test]
fn old_legacy_url_and_unknown_questions_keep_their_keys_and_what_they_ask() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    let legacy = json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {}}});
    let url = json!({"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in",
        "url": "https://auth.example/x", "elicitationId": "e1"}});
    let odd = json!({"method": "tea/brew", "params": {"message": "Milk?"}});
    let ids = old_store(
        &path,
        &[
            (Some("t"), r#"{"kind":"request","value":"task-t:2-0"}"#, &legacy.to_string()),
            (None, r#"{"kind":"request","value":4}"#, &url.to_string()),
            (None, "k", &odd.to_string()),
        ],
    );

    let store = Store::open(&path).unwrap();
    let q = store.get(&ids[0]).unwrap().question.unwrap();
    assert_eq!(q.key, QuestionKey::Request("task-t:2-0".into()));
    assert_eq!(q.form(), Some(&FormModel::Ready { fields: vec![] }));
    let q = store.get(&ids[1]).unwrap().question.unwrap();
    assert_eq!((q.key, q.task_id), (QuestionKey::Request(4.into()), None));
    assert_eq!(q.asks, Asks::Url { url: "https://auth.example/x".into(), elicitation_id: "e1".into() });
    let q = store.get(&ids[2]).unwrap().question.unwrap();
    assert!(matches!(q.asks, Asks::Unsupported { .. }), "{q:?}");
    assert_eq!(q.message.as_deref(), Some("Milk?"));
}

#[test]
fn an_old_question_cell_that_is_not_json_stays_as_it_was_and_reads_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    let ids = old_store(&path, &[(None, "k", "{not json")]);
    let store = Store::open(&path).expect("one bad cell does not keep the file from opening");
    let err = store.get(&ids[0]).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { column: "question", .. }), "{err:?}");
    let cell: String = raw(&path).query_row("SELECT question FROM tasks", [], |r| r.get(0)).unwrap();
    assert_eq!(cell, "{not json");
}

/// Writes a cell of a migrated store by hand.
fn write_cell(path: &std::path::Path, id: &str, question: &str) {
    let n = raw(path).execute("UPDATE tasks SET question = ?2 WHERE id = ?1", rusqlite::params![id, question]).unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_question_cell_that_is_no_request_at_all_is_a_typed_corruption_error() {
    let f = fixture();
    let task = task_in(&f.store, "bad", TaskStatus::InputRequired);
    write_cell(&f.path, &task.id, "[1, 2]");
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

#[test]
fn several_pending_questions_are_kept_together_survive_a_reopen_and_are_answered_together() {
    let f = fixture();
    let task = f.store.create_task(new_task("several")).unwrap();
    let (a, b) = (question("a"), question("b"));
    let message = Some("Two things".to_owned());
    let rec = f.store.apply(&task.id, Update::Questions { questions: vec![a.clone(), b.clone()], message }).unwrap();
    assert_eq!((rec.status, rec.question.as_ref(), rec.questions.len()), (TaskStatus::InputRequired, Some(&a), 2));
    drop(f.store);
    let store = Store::open(&f.path).unwrap();
    let rec = store.get(&task.id).unwrap();
    assert_eq!(rec.questions, vec![a.clone(), b.clone()]);
    // An answer for a question that is not pending is refused, naming it.
    let stray = Answer { key: answer_key("c"), response: json!({"action": "decline"}), note: None };
    let err = store.apply(&task.id, Update::Answers(vec![stray])).unwrap_err();
    assert!(matches!(err, StoreError::Refused { .. }) && err.to_string().contains("\\\"c\\\""), "{err}");
    let answers = vec![
        Answer { key: answer_key("a"), response: json!({"action": "accept", "content": {}}), note: None },
        Answer {
            key: answer_key("b"),
            response: json!({"action": "decline"}),
            note: Some(json!({"outcome": "declined"})),
        },
    ];
    let rec = store.apply(&task.id, Update::Answers(answers)).unwrap();
    assert_eq!((rec.status, rec.question.is_none(), rec.questions.is_empty()), (TaskStatus::Working, true, true));
    assert_eq!(rec.answered_keys, vec![answer_key("a"), answer_key("b")]);
    let events = store.events(&task.id).unwrap();
    let answer = events.iter().rev().find(|e| e.kind == taskdeck_store::EventKind::Answer).unwrap();
    assert_eq!(answer.data["answers"].as_array().unwrap().len(), 2);
    assert_eq!(answer.data["answers"][1]["sampling"]["outcome"], "declined");
    // One question again: the record holds it alone.
    let rec = store.apply(&task.id, Update::Question { question: Box::new(question("d")), message: None }).unwrap();
    assert_eq!(rec.questions, vec![question("d")]);
}
