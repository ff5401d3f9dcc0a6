//! The event log: one event per transition, written with the change, never rewritten.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{Answer, Era, EventKind, Progress, TaskStatus, Update};

#[test]
fn every_transition_writes_exactly_one_event_and_progress_writes_none() {
    let f = fixture();
    let s = &f.store;
    let task = s.create_task(new_task("a")).unwrap();
    let id = task.id.as_str();
    let mut expected = 1; // created
    assert_eq!(event_count(s, id), expected);

    s.set_remote(id, Era::Modern, Some("r-1"), Some(60_000), Some(1_000)).unwrap();
    expected += 1;
    assert_eq!(event_count(s, id), expected);

    let same = Update::Status { status: TaskStatus::Working, message: None, server_status: Some("working".into()) };
    s.apply(id, same).unwrap();
    assert_eq!(event_count(s, id), expected, "an unchanged status is not a transition");

    let msg = Update::Status {
        status: TaskStatus::Working,
        message: Some("halfway".into()),
        server_status: Some("working".into()),
    };
    s.apply(id, msg).unwrap();
    expected += 1;
    assert_eq!(event_count(s, id), expected, "a new status message is logged");

    for i in 0..5 {
        s.apply(id, Update::Progress(Progress { progress: i as f64, total: Some(5.0), message: None })).unwrap();
    }
    assert_eq!(event_count(s, id), expected, "progress is never logged");
    assert_eq!(s.get(id).unwrap().progress.unwrap().progress, 4.0);

    s.apply(id, Update::Question { question: Box::new(question("k")), message: None }).unwrap();
    expected += 1;
    assert_eq!(event_count(s, id), expected);

    s.apply(id, Update::Answer(Answer { key: answer_key("k"), response: json!({ "action": "accept" }), note: None }))
        .unwrap();
    expected += 1;
    assert_eq!(event_count(s, id), expected, "an answer is one event, not an answer plus a status");

    let done = s.apply(id, Update::Completed { result: ok_result(), server_status: Some("completed".into()) }).unwrap();
    expected += 1;

    let events = s.events(id).unwrap();
    assert_eq!(events.len(), expected);
    let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Created,
            EventKind::Remote,
            EventKind::Status,
            EventKind::Question,
            EventKind::Answer,
            EventKind::Result
        ]
    );
    let walk: Vec<_> = events.iter().map(|e| (e.from_status, e.to_status)).collect();
    use TaskStatus::*;
    assert_eq!(
        walk,
        [
            (None, Some(Working)),
            (Some(Working), Some(Working)),
            (Some(Working), Some(Working)),
            (Some(Working), Some(InputRequired)),
            (Some(InputRequired), Some(Working)),
            (Some(Working), Some(Completed)),
        ]
    );
    assert_eq!(events[4].data["response"], json!({ "action": "accept" }), "answers are logged whole");
    assert_eq!(events.last().unwrap().at, done.updated_at, "the event is written with the change it records");
}

#[test]
fn a_refused_update_writes_no_event() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Cancelled);
    let before = event_count(&f.store, &task.id);
    for update in every_update() {
        f.store.apply(&task.id, update).unwrap_err();
    }
    assert_eq!(event_count(&f.store, &task.id), before);
}

#[test]
fn the_event_log_cannot_be_rewritten_or_deleted() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Completed);
    let before = f.store.events(&task.id).unwrap();

    let conn = raw(&f.path);
    let update = conn.execute("UPDATE task_events SET kind = 'forged' WHERE task_id = ?1", [&task.id]);
    assert!(update.unwrap_err().to_string().contains("append-only"));
    let delete = conn.execute("DELETE FROM task_events WHERE task_id = ?1", [&task.id]);
    assert!(delete.unwrap_err().to_string().contains("append-only"));
    drop(conn);

    assert_eq!(f.store.events(&task.id).unwrap(), before);
}

#[test]
fn event_ids_only_grow_across_tasks() {
    let f = fixture();
    let a = task_in(&f.store, "a", TaskStatus::InputRequired);
    let b = task_in(&f.store, "b", TaskStatus::Failed);
    let mut ids: Vec<i64> = f.store.events(&a.id).unwrap().iter().map(|e| e.id).collect();
    ids.extend(f.store.events(&b.id).unwrap().iter().map(|e| e.id));
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}

#[test]
fn a_question_repeated_by_every_poll_is_logged_once() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    for _ in 0..3 {
        f.store.apply(&task.id, Update::Question { question: Box::new(question("k")), message: None }).unwrap();
    }
    f.store.apply(&task.id, Update::Question { question: Box::new(question("k2")), message: None }).unwrap();
    let kinds: Vec<_> = f.store.events(&task.id).unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::Created, EventKind::Question, EventKind::Question]);
}

#[test]
fn repeating_the_same_remote_task_is_logged_once() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    for _ in 0..3 {
        f.store.set_remote(&task.id, Era::Legacy, Some("r-1"), Some(1_000), None).unwrap();
    }
    let after = f.store.set_remote(&task.id, Era::Legacy, Some("r-1"), Some(2_000), None).unwrap();
    assert_eq!(after.ttl_ms, Some(2_000));
    let kinds: Vec<_> = f.store.events(&task.id).unwrap().into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::Created, EventKind::Remote, EventKind::Remote]);
}

#[test]
fn a_view_holding_the_history_reads_only_the_newer_events_of_its_own_task() {
    let f = fixture();
    let s = &f.store;
    let a = s.create_task(new_task("a")).unwrap();
    let b = s.create_task(new_task("b")).unwrap();
    let held = s.events(&a.id).unwrap();
    let last = held.last().unwrap().id;
    assert!(s.events_after(&a.id, last).unwrap().is_empty(), "nothing new yet");

    s.apply(&b.id, Update::Question { question: Box::new(question("kb")), message: None }).unwrap();
    s.apply(&a.id, Update::Question { question: Box::new(question("ka")), message: None }).unwrap();
    let newer = s.events_after(&a.id, last).unwrap();
    assert_eq!(
        newer.iter().map(|e| (e.task_id.as_str(), e.kind)).collect::<Vec<_>>(),
        [(a.id.as_str(), EventKind::Question)]
    );

    let whole = s.events(&a.id).unwrap();
    assert_eq!([held, newer].concat(), whole, "the held history and the newer events are the whole log");
    assert_eq!(s.events_after(&a.id, 0).unwrap(), whole);
    assert!(s.events_after("no-such-task", 0).is_err(), "an unknown task is an error, not an empty log");
}
