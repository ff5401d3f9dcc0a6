//! The task state machine as a user meets it: terminal is final, refusals say what the task really
//! is, and a tool error reported as "completed" shows as failed.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{
    Answer, Attempt, Era, EventKind, StoreError, TaskStatus, Update, can_transition, taskdeck_status,
};

const TERMINAL: [TaskStatus; 3] = [TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

#[test]
fn a_finished_task_refuses_every_update_and_stays_as_it_was() {
    let f = fixture();
    for terminal in TERMINAL {
        for (i, update) in every_update().into_iter().enumerate() {
            let task = task_in(&f.store, &format!("{terminal}-{i}"), terminal);
            let events_before = event_count(&f.store, &task.id);
            let attempted = update.attempt();

            let err = f.store.apply(&task.id, update).unwrap_err();
            match err {
                StoreError::Refused { id, current, attempted: a, .. } => {
                    assert_eq!(id, task.id);
                    assert_eq!(current, terminal, "refusal must carry the real status");
                    assert_eq!(a, attempted);
                }
                other => panic!("{terminal} × {attempted:?}: expected Refused, got {other:?}"),
            }
            assert_eq!(f.store.get(&task.id).unwrap(), task, "{terminal} × {attempted:?} changed the row");
            assert_eq!(event_count(&f.store, &task.id), events_before, "{terminal} × {attempted:?} logged an event");
        }
    }
}

#[test]
fn a_finished_task_refuses_a_new_remote_id() {
    let f = fixture();
    for terminal in TERMINAL {
        let task = task_in(&f.store, &format!("remote-{terminal}"), terminal);
        let err = f.store.set_remote(&task.id, Era::Modern, Some("r-1"), None, None).unwrap_err();
        assert!(
            matches!(err, StoreError::Refused { current, attempted: Attempt::SetRemote, .. } if current == terminal),
            "{err:?}"
        );
        assert_eq!(f.store.get(&task.id).unwrap(), task);
    }
}

#[test]
fn a_finished_task_refuses_updates_inside_a_batch_too() {
    let f = fixture();
    let done = task_in(&f.store, "done", TaskStatus::Completed);
    let results = f.store.apply_batch(every_update().into_iter().map(|u| (done.id.clone(), u)).collect()).unwrap();
    for r in results {
        assert!(matches!(r, Err(StoreError::Refused { current: TaskStatus::Completed, .. })), "{r:?}");
    }
    assert_eq!(f.store.get(&done.id).unwrap(), done);
}

#[test]
fn transition_table_allows_live_moves_and_nothing_out_of_terminal() {
    for from in TaskStatus::ALL {
        for to in TaskStatus::ALL {
            assert_eq!(can_transition(from, to), !from.is_terminal(), "{from} -> {to}");
        }
    }
}

#[test]
fn answering_when_nothing_is_asked_is_refused_with_the_real_status() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Working);
    let err = f
        .store
        .apply(&task.id, Update::Answer(Answer { key: answer_key("q1"), response: json!({}), note: None }))
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Refused { current: TaskStatus::Working, attempted: Attempt::Answer, .. }),
        "{err:?}"
    );
}

#[test]
fn answering_a_different_question_is_refused_and_the_question_stays() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::InputRequired);
    let err = f
        .store
        .apply(&task.id, Update::Answer(Answer { key: "other".into(), response: json!({}), note: None }))
        .unwrap_err();
    assert!(matches!(err, StoreError::Refused { current: TaskStatus::InputRequired, .. }), "{err:?}");
    assert_eq!(f.store.get(&task.id).unwrap().question, task.question);
}

#[test]
fn answer_clears_the_question_keeps_the_answer_and_resumes_work() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::InputRequired);
    let answer = Answer {
        key: answer_key("q1"),
        response: json!({ "action": "accept", "content": { "ok": true } }),
        note: None,
    };
    let after = f.store.apply(&task.id, Update::Answer(answer.clone())).unwrap();
    assert_eq!(after.status, TaskStatus::Working);
    assert_eq!(after.question, None);
    assert_eq!(after.answer, Some(answer));
}

#[test]
fn a_bare_terminal_status_is_refused_because_it_would_lose_the_result() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Working);
    for status in TERMINAL {
        let err = f.store.apply(&task.id, Update::Status { status, message: None, server_status: None }).unwrap_err();
        assert!(
            matches!(err, StoreError::Refused { current: TaskStatus::Working, attempted: Attempt::Status, .. }),
            "{err:?}"
        );
    }
    assert_eq!(f.store.get(&task.id).unwrap().status, TaskStatus::Working);
}

#[test]
fn a_different_remote_task_id_is_refused_but_repeating_the_same_one_is_fine() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Working);
    f.store.set_remote(&task.id, Era::Legacy, Some("r-1"), Some(60_000), Some(500)).unwrap();
    let again = f.store.set_remote(&task.id, Era::Legacy, Some("r-1"), Some(60_000), Some(500)).unwrap();
    assert_eq!(again.remote_task_id.as_deref(), Some("r-1"));
    let err = f.store.set_remote(&task.id, Era::Legacy, Some("r-2"), None, None).unwrap_err();
    assert!(matches!(err, StoreError::Refused { current: TaskStatus::Working, .. }), "{err:?}");
    assert_eq!(f.store.get(&task.id).unwrap().remote_task_id.as_deref(), Some("r-1"));
}

#[test]
fn unknown_task_ids_are_not_found_for_every_operation() {
    let f = fixture();
    let missing = "00000000-0000-4000-8000-000000000000";
    for update in every_update() {
        assert!(matches!(f.store.apply(missing, update), Err(StoreError::NotFound { .. })));
    }
    assert!(matches!(f.store.get(missing), Err(StoreError::NotFound { .. })));
    assert!(matches!(f.store.events(missing), Err(StoreError::NotFound { .. })));
    assert!(matches!(f.store.set_remote(missing, Era::Modern, None, None, None), Err(StoreError::NotFound { .. })));
}

#[test]
fn modern_tool_error_reported_as_completed_is_stored_failed_and_the_log_keeps_what_the_server_said() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Working);
    f.store.set_remote(&task.id, Era::Modern, Some("r-1"), None, None).unwrap();
    let result = json!({ "content": [{ "type": "text", "text": "disk full" }], "isError": true });
    let after = f
        .store
        .apply(&task.id, Update::Completed { result: result.clone(), server_status: Some("completed".into()) })
        .unwrap();

    assert_eq!(after.status, TaskStatus::Failed);
    assert_eq!(after.result, Some(result), "the tool's own error content is kept for display");
    let error = after.error.expect("a failed task says why");
    assert_eq!(error.message, "disk full");

    let last = f.store.events(&task.id).unwrap().pop().unwrap();
    assert_eq!(last.kind, EventKind::Result);
    assert_eq!(last.to_status, Some(TaskStatus::Failed));
    assert_eq!(last.data["server_status"], "completed");
}

#[test]
fn status_mapping_turns_tool_errors_into_failed_in_every_era() {
    let err = json!({ "content": [], "isError": true });
    let ok = json!({ "content": [], "isError": false });
    for era in [Some(Era::Modern), Some(Era::Legacy), None] {
        assert_eq!(taskdeck_status(era, TaskStatus::Completed, Some(&err)), TaskStatus::Failed);
        assert_eq!(taskdeck_status(era, TaskStatus::Completed, Some(&ok)), TaskStatus::Completed);
        assert_eq!(taskdeck_status(era, TaskStatus::Completed, None), TaskStatus::Completed);
        for status in [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Failed, TaskStatus::Cancelled] {
            assert_eq!(taskdeck_status(era, status, Some(&err)), status);
        }
    }
}

#[test]
fn leaving_input_required_without_an_answer_drops_the_stale_question() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::InputRequired);
    let after = f
        .store
        .apply(&task.id, Update::Status { status: TaskStatus::Working, message: None, server_status: None })
        .unwrap();
    assert_eq!(after.status, TaskStatus::Working);
    assert_eq!(after.question, None);
}

#[test]
fn a_refusal_serialises_with_a_code_and_the_real_status_for_the_ui() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Completed);
    let err = f.store.apply(&task.id, Update::Cancelled { reason: None, server_status: None }).unwrap_err();
    assert_eq!(err.current_status(), Some(TaskStatus::Completed));
    let v = serde_json::to_value(&err).unwrap();
    assert_eq!(v["code"], "refused");
    assert_eq!(v["current"], "completed");
    assert_eq!(v["attempted"], "cancel");
    assert_eq!(v["id"], task.id.as_str());
}
