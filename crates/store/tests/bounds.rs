//! A chatty server cannot grow the store without bound: texts are cut to their size, and a task's
//! log keeps at most [`EVENTS_PER_TASK`] events, with one marker saying how many were dropped.

mod common;

use common::*;
use serde_json::json;
use taskdeck_protocol::limits;
use taskdeck_store::{Answer, EVENTS_PER_TASK, EventKind, Progress, TaskError, TaskStatus, Update};

fn working(message: String) -> Update {
    Update::Status { status: TaskStatus::Working, message: Some(message), server_status: Some("working".into()) }
}

fn dropped(events: &[taskdeck_store::TaskEvent]) -> u64 {
    let markers: Vec<_> = events.iter().filter(|e| e.kind == EventKind::Dropped).collect();
    assert!(markers.len() <= 1, "one marker per task: {markers:#?}");
    markers.first().map_or(0, |m| m.data["dropped"].as_u64().unwrap())
}

#[test]
fn a_hundred_thousand_status_messages_stay_under_the_cap_with_a_marker_counting_the_dropped() {
    let f = fixture();
    let task = f.store.create_task(new_task("chatty")).unwrap();
    let id = task.id.as_str();
    const SENT: usize = 100_000;
    // In batches, as the engine's flush writes them.
    for chunk in (0..SENT).collect::<Vec<_>>().chunks(1_000) {
        let batch = chunk.iter().map(|i| (id.to_owned(), working(format!("step {i}")))).collect();
        for r in f.store.apply_batch(batch).unwrap() {
            r.unwrap();
        }
    }
    let rec = f.store.get(id).unwrap();
    assert_eq!(rec.status_message.as_deref(), Some("step 99999"), "the row shows the latest message");

    // Read back from the file itself, by a second handle.
    drop(f.store);
    let store = taskdeck_store::Store::open(&f.path).unwrap();
    let events = store.events(id).unwrap();
    assert_eq!(events.len(), EVENTS_PER_TASK, "{}", events.len());
    let kept = events.iter().filter(|e| e.kind == EventKind::Status).count() as u64;
    assert_eq!(kept + dropped(&events), SENT as u64, "every message is either kept or counted");
    assert_eq!(events.last().unwrap().kind, EventKind::Dropped);
    let file = std::fs::metadata(&f.path).unwrap().len()
        + std::fs::metadata(f.path.with_extension("sqlite3-wal")).map_or(0, |m| m.len());
    assert!(file < 2 * 1024 * 1024, "the file stays small: {file} bytes");
}

#[test]
fn the_end_and_the_answers_after_the_cap_are_kept() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    let id = task.id.as_str();
    for i in 0..EVENTS_PER_TASK + 10 {
        f.store.apply(id, working(format!("step {i}"))).unwrap();
    }
    f.store.apply(id, Update::Question { question: Box::new(question("k")), message: None }).unwrap();
    f.store
        .apply(id, Update::Answer(Answer { key: answer_key("k"), response: json!({"action": "decline"}), note: None }))
        .unwrap();
    f.store.apply(id, working("after the answer".into())).unwrap();
    let error = TaskError { code: Some(-32603), message: "boom".into(), reason: None };
    let done = f.store.apply(id, Update::Failed { error, server_status: Some("failed".into()) }).unwrap();
    assert_eq!(done.status, TaskStatus::Failed);

    let events = f.store.events(id).unwrap();
    let kinds: Vec<_> = events.iter().rev().take(3).map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventKind::Failed, EventKind::Dropped, EventKind::Answer],
        "the end, the marker after the last event it counts, and the answer"
    );
    // `created` and the marker take two of the cap's places: the last 12 statuses, the question and
    // the status after the answer are counted, not kept.
    let statuses_kept = EVENTS_PER_TASK - 2;
    assert_eq!(dropped(&events), (EVENTS_PER_TASK + 10 - statuses_kept) as u64 + 1 + 1);
    assert_eq!(events.len(), EVENTS_PER_TASK + 2);
}

#[test]
fn the_same_status_message_again_writes_nothing() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    let first = f.store.apply(&task.id, working("same".into())).unwrap();
    for _ in 0..100 {
        let again = f.store.apply(&task.id, working("same".into())).unwrap();
        assert_eq!(again.updated_at, first.updated_at, "not even the row's time");
    }
    assert_eq!(event_count(&f.store, &task.id), 2);
}

#[test]
fn huge_status_progress_and_error_texts_are_cut_with_the_marker() {
    let f = fixture();
    let huge = || "ü".repeat(8 * 1024 * 1024);
    let cut = |t: &str, max: usize| t.len() <= max && t.ends_with(limits::CUT_MARKER);
    let task = f.store.create_task(new_task("a")).unwrap();
    let id = task.id.as_str();
    let rec = f.store.apply(id, working(huge())).unwrap();
    assert!(cut(rec.status_message.as_deref().unwrap(), limits::STATUS_MESSAGE_BYTES));
    let p = Progress { progress: 1.0, total: None, message: Some(huge()) };
    let rec = f.store.apply(id, Update::Progress(p)).unwrap();
    assert!(cut(rec.progress.unwrap().message.as_deref().unwrap(), limits::PROGRESS_MESSAGE_BYTES));
    let error = TaskError { code: Some(-1), message: huge(), reason: Some(huge().into()) };
    let rec = f.store.apply(id, Update::Failed { error, server_status: Some(huge()) }).unwrap();
    let error = rec.error.unwrap();
    assert!(cut(&error.message, limits::ERROR_TEXT_BYTES));
    assert!(cut(error.reason.as_deref().unwrap(), limits::ERROR_TEXT_BYTES));
    // The log holds the cut texts too.
    let events = f.store.events(id).unwrap();
    let logged = serde_json::to_string(&events).unwrap();
    assert!(logged.len() < 4 * limits::ERROR_TEXT_BYTES + 4096, "{}", logged.len());
    let cancelled = f.store.create_task(new_task("b")).unwrap();
    let rec = f.store.apply(&cancelled.id, Update::Cancelled { reason: Some(huge()), server_status: None }).unwrap();
    assert!(rec.status_message.is_none() || cut(rec.status_message.as_deref().unwrap(), limits::ERROR_TEXT_BYTES));
}

#[test]
fn no_event_changes_after_it_is_written_and_only_a_replaced_marker_goes() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    for i in 0..EVENTS_PER_TASK + 1 {
        f.store.apply(&task.id, working(format!("step {i}"))).unwrap();
    }
    let conn = raw(&f.path);
    let forged = conn.execute("UPDATE task_events SET kind = 'status' WHERE kind = 'dropped'", []);
    assert!(forged.unwrap_err().to_string().contains("append-only"));
    let recount = conn.execute("UPDATE task_events SET data = '{}' WHERE kind = 'dropped'", []);
    assert!(recount.unwrap_err().to_string().contains("append-only"), "the marker is not edited either");
    let rewritten = conn.execute("UPDATE task_events SET data = '{}' WHERE kind = 'status'", []);
    assert!(rewritten.unwrap_err().to_string().contains("append-only"));
    let hidden = conn.execute("DELETE FROM task_events WHERE kind = 'dropped'", []);
    assert!(hidden.unwrap_err().to_string().contains("append-only"), "the last marker stays");
}

#[test]
fn a_view_reading_only_newer_events_sees_the_dropped_count_grow() {
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    let id = task.id.as_str();
    for i in 0..EVENTS_PER_TASK {
        f.store.apply(id, working(format!("step {i}"))).unwrap();
    }
    let held = f.store.events(id).unwrap();
    assert_eq!(dropped(&held), 2, "{:?}", held.last());
    let marker = held.last().unwrap();
    assert_eq!(marker.data["message"], "2 earlier events were dropped");
    let cursor = marker.id;

    f.store.apply(id, working("one more".into())).unwrap();
    let newer = f.store.events_after(id, cursor).unwrap();
    assert_eq!(newer.len(), 1, "{newer:#?}");
    assert_eq!((newer[0].kind, newer[0].data["dropped"].as_u64()), (EventKind::Dropped, Some(3)));
    assert_eq!(newer[0].data["message"], "3 earlier events were dropped");
    // The marker it replaces is gone: the whole log still has one, with the latest count.
    let whole = f.store.events(id).unwrap();
    assert_eq!((whole.len(), dropped(&whole)), (EVENTS_PER_TASK, 3));
    assert!(whole.iter().all(|e| e.id != cursor));
}

#[test]
fn a_question_over_the_bound_is_recorded_as_too_large_without_its_body_and_can_be_declined() {
    use taskdeck_protocol::question::{Asks, Question, QuestionKey, QuestionRequest};
    let f = fixture();
    let task = f.store.create_task(new_task("a")).unwrap();
    let options: Vec<String> = (0..100_000).map(|i| format!("option-{i}")).collect();
    let params = json!({"message": "Pick one", "requestedSchema": {"type": "object",
        "properties": {"pick": {"type": "string", "enum": options}}}});
    let request = QuestionRequest { method: "elicitation/create".into(), params };
    let q = Question::decode(QuestionKey::InputKey("k".into()), None, request);
    f.store.apply(&task.id, Update::Question { question: Box::new(q), message: None }).unwrap();

    drop(f.store);
    let store = taskdeck_store::Store::open(&f.path).unwrap();
    let rec = store.get(&task.id).unwrap();
    let q = rec.question.expect("the question is pending");
    assert!(matches!(q.asks, Asks::TooLarge { size } if size > limits::QUESTION_BYTES), "{:?}", q.asks);
    assert_eq!(q.message.as_deref(), Some("Pick one"));
    let stored = serde_json::to_string(&store.events(&task.id).unwrap()).unwrap();
    assert!(stored.len() < 4096, "neither the row nor the log keeps the body: {}", stored.len());
    let declined = Answer { key: answer_key("k"), response: json!({"action": "decline"}), note: None };
    assert_eq!(store.apply(&task.id, Update::Answer(declined)).unwrap().status, TaskStatus::Working);
}
