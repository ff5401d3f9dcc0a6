//! What one write costs the file: a plain call's end is one commit, not two, with the same rows and
//! events as before; a write that changes nothing the search index holds leaves the index alone.
//! Commits and pages are read from the WAL itself (a frame with a database size is a commit's last).

mod common;

use std::path::Path;

use common::*;
use rusqlite::Connection;
use serde_json::{Value, json};
use taskdeck_store::{
    Answer, Era, Mode, NewTask, Progress, PurgeReason, Store, StoreError, TaskQuery, TaskStatus, Update,
};

/// Empties the WAL (every page already in the file) so that what follows is counted alone.
fn checkpoint(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
}

/// (commits, pages) in the WAL since the last [`checkpoint`].
fn wal_since_checkpoint(path: &Path) -> (usize, usize) {
    let wal = std::fs::read(path.with_extension("sqlite3-wal")).unwrap_or_default();
    if wal.len() < 32 {
        return (0, 0);
    }
    let page = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as usize;
    let salt = &wal[16..24];
    let (mut commits, mut pages) = (0, 0);
    for frame in wal[32..].chunks_exact(24 + page) {
        // Frames left from before the checkpoint carry the old salt.
        if &frame[8..16] != salt {
            break;
        }
        pages += 1;
        if frame[4..8] != [0, 0, 0, 0] {
            commits += 1;
        }
    }
    (commits, pages)
}

fn plain_call(key: &str) -> NewTask {
    NewTask {
        server: "demo".into(),
        tool: "notes_search".into(),
        arguments: json!({ "query": "deploy" }),
        idempotency_key: key.into(),
        mode: Mode::Call,
    }
}

fn result() -> Value {
    json!({ "content": [{ "type": "text", "text": "found three notes" }] })
}

/// The log without what differs by time or id.
fn log_of(store: &Store, id: &str) -> Vec<(String, Option<TaskStatus>, Option<TaskStatus>, Value)> {
    store
        .events(id)
        .unwrap()
        .into_iter()
        .map(|e| {
            let mut data = e.data;
            if let Some(map) = data.as_object_mut() {
                map.remove("idempotency_key");
            }
            (e.kind.as_str().to_owned(), e.from_status, e.to_status, data)
        })
        .collect()
}

#[test]
fn a_plain_calls_era_and_result_are_one_commit_with_the_rows_and_events_two_made() {
    let f = fixture();
    f.store.checkpoint_inline_for_tests().unwrap();
    let progress = || Update::Progress(Progress { progress: 1.0, total: Some(2.0), message: None });
    let done = || Update::Completed { result: result(), server_status: None };

    let before = f.store.create_task(plain_call("two")).unwrap();
    checkpoint(&f.path);
    f.store.set_remote(&before.id, Era::Legacy, None, None, None).unwrap();
    f.store.apply_batch(vec![(before.id.clone(), progress()), (before.id.clone(), done())]).unwrap();
    let (two_commits, two_pages) = wal_since_checkpoint(&f.path);
    assert_eq!(two_commits, 2);

    let now = f.store.create_task(plain_call("one")).unwrap();
    checkpoint(&f.path);
    let (era, results) = f.store.set_era_then_apply(&now.id, Era::Legacy, vec![progress(), done()]).unwrap();
    let (one_commit, one_pages) = wal_since_checkpoint(&f.path);
    assert_eq!(one_commit, 1, "one commit for the era and the outcome");
    assert!(one_pages < two_pages, "{one_pages} pages against {two_pages}");

    let era = era.unwrap();
    assert_eq!((era.era, era.status, era.progress.clone()), (Some(Era::Legacy), TaskStatus::Working, None));
    let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].progress.as_ref().map(|p| p.progress), Some(1.0));
    assert_eq!(results[0].status, TaskStatus::Working);
    let (old, new) = (f.store.get(&before.id).unwrap(), f.store.get(&now.id).unwrap());
    assert_eq!(new, results[1]);
    assert_eq!(
        (new.status, new.era, &new.result, &new.progress, &new.error),
        (old.status, old.era, &old.result, &old.progress, &old.error)
    );
    assert_eq!(new.status, TaskStatus::Completed);
    assert_eq!(log_of(&f.store, &now.id), log_of(&f.store, &before.id));
    assert_eq!(
        log_of(&f.store, &now.id).iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["created", "remote", "result"]
    );
}

#[test]
fn a_plain_call_that_ended_meanwhile_records_neither_its_era_nor_its_result() {
    let f = fixture();
    f.store.checkpoint_inline_for_tests().unwrap();
    let task = f.store.create_task(plain_call("k")).unwrap();
    f.store.apply(&task.id, Update::Cancelled { reason: None, server_status: None, server_told: Some(true) }).unwrap();
    let logged = log_of(&f.store, &task.id);
    let (era, results) = f
        .store
        .set_era_then_apply(&task.id, Era::Modern, vec![Update::Completed { result: result(), server_status: None }])
        .unwrap();
    assert!(matches!(era, Err(StoreError::Refused { current: TaskStatus::Cancelled, .. })), "{era:?}");
    assert!(matches!(results.as_slice(), [Err(StoreError::Refused { .. })]), "{results:?}");
    let now = f.store.get(&task.id).unwrap();
    assert_eq!((now.status, now.era, now.result), (TaskStatus::Cancelled, None, None));
    assert_eq!(log_of(&f.store, &task.id), logged);
}

#[test]
fn a_plain_call_unknown_to_the_store_writes_nothing() {
    let f = fixture();
    f.store.checkpoint_inline_for_tests().unwrap();
    let err = f.store.set_era_then_apply("no-such-task", Era::Legacy, vec![]).unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}

/// Every page of the index's own tables, to tell "untouched" from "rewritten with the same words".
fn index_pages(path: &Path) -> Vec<(String, Vec<u8>)> {
    let conn = Connection::open(path).unwrap();
    let mut out = Vec::new();
    for table in ["task_search_data", "task_search_idx", "task_search_docsize", "task_search_config"] {
        let mut st = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
        let columns = st.column_count();
        let rows = st
            .query_map([], |r| {
                let mut row = Vec::new();
                for c in 0..columns {
                    match r.get_ref(c)? {
                        rusqlite::types::ValueRef::Blob(b) => row.extend_from_slice(b),
                        other => row.extend_from_slice(format!("{other:?}").as_bytes()),
                    }
                    row.push(0);
                }
                Ok(row)
            })
            .unwrap();
        for row in rows {
            out.push((table.to_owned(), row.unwrap()));
        }
    }
    out
}

fn found(store: &Store, words: &str) -> Vec<String> {
    let q = TaskQuery { search: Some(words.to_owned()), ..Default::default() };
    store.summaries(&q, &Default::default()).unwrap().items.into_iter().map(|s| s.id).collect()
}

#[test]
fn a_write_that_changes_no_indexed_text_leaves_the_search_index_untouched_and_each_that_does_finds_the_task() {
    let f = fixture();
    f.store.checkpoint_inline_for_tests().unwrap();
    let task = f.store.create_task(new_task("k")).unwrap();
    let untouched = index_pages(&f.path);

    f.store
        .apply(&task.id, Update::Progress(Progress { progress: 1.0, total: None, message: Some("p".into()) }))
        .unwrap();
    f.store.set_remote(&task.id, Era::Modern, Some("remote-1"), Some(60_000), Some(500)).unwrap();
    // The same status again, and a status message, which is indexed with the task's next
    // question, answer or end rather than each time (see `search.rs`).
    f.store
        .apply(&task.id, Update::Status { status: TaskStatus::Working, message: None, server_status: None })
        .unwrap();
    let msg =
        Update::Status { status: TaskStatus::Working, message: Some("warming caches".into()), server_status: None };
    f.store.apply_batch(vec![(task.id.clone(), msg)]).unwrap();
    assert_eq!(index_pages(&f.path), untouched, "progress, the remote task and status messages");

    // The question and the end do change it, and bring the message with them.
    assert!(found(&f.store, "caches").is_empty());
    f.store.apply(&task.id, Update::Question { question: Box::new(question("q1")), message: None }).unwrap();
    assert_ne!(index_pages(&f.path), untouched);
    assert_eq!(found(&f.store, "warming caches"), [task.id.as_str()]);
    assert_eq!(found(&f.store, "continue"), [task.id.as_str()], "the question's words");
    let asked = index_pages(&f.path);
    // The same question again, as a modern server repeats it on every poll, is not news.
    f.store.apply(&task.id, Update::Question { question: Box::new(question("q1")), message: None }).unwrap();
    assert_eq!(index_pages(&f.path), asked);

    // The answer and the result each bring their words; nothing found before stops being found.
    let response = json!({ "action": "accept", "content": { "region": "antarctica" } });
    f.store.apply(&task.id, Update::Answer(Answer { key: answer_key("q1"), response, note: None })).unwrap();
    assert_eq!(found(&f.store, "antarctica"), [task.id.as_str()]);
    assert!(found(&f.store, "penguins").is_empty());
    let result = json!({ "content": [{ "type": "text", "text": "counted the penguins" }] });
    f.store.apply(&task.id, Update::Completed { result, server_status: None }).unwrap();
    for words in ["penguins", "antarctica", "continue", "warming", "slow_count", "demo"] {
        assert_eq!(found(&f.store, words), [task.id.as_str()], "{words}");
    }
    // Deleted, it is found by none of them.
    f.store.delete_tasks(std::slice::from_ref(&task.id), PurgeReason::User).unwrap();
    for words in ["penguins", "antarctica", "continue", "warming", "slow_count"] {
        assert!(found(&f.store, words).is_empty(), "{words}");
    }
}

/// The pages written to the WAL since the last [`checkpoint`], by number.
fn wal_pages(path: &Path) -> Vec<u32> {
    let wal = std::fs::read(path.with_extension("sqlite3-wal")).unwrap_or_default();
    if wal.len() < 32 {
        return Vec::new();
    }
    let page = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as usize;
    let salt = &wal[16..24];
    wal[32..]
        .chunks_exact(24 + page)
        .take_while(|frame| &frame[8..16] == salt)
        .map(|frame| u32::from_be_bytes(frame[0..4].try_into().unwrap()))
        .collect()
}

fn root_page(path: &Path, index: &str) -> u32 {
    let conn = Connection::open(path).unwrap();
    conn.query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [index], |r| r.get(0)).unwrap()
}

#[test]
fn a_new_status_message_alone_leaves_the_status_indexes_alone_and_the_question_where_it_was() {
    let f = fixture();
    f.store.checkpoint_inline_for_tests().unwrap();
    let task = f.store.create_task(new_task("k")).unwrap();
    // One small store: each index is its root page alone.
    let by_status_created = root_page(&f.path, "tasks_by_status_created");
    let message = |text: &str, status| Update::Status { status, message: Some(text.into()), server_status: None };

    checkpoint(&f.path);
    f.store.apply(&task.id, message("one", TaskStatus::Working)).unwrap();
    assert!(!wal_pages(&f.path).contains(&by_status_created), "the status did not change");

    f.store.apply(&task.id, Update::Question { question: Box::new(question("q1")), message: None }).unwrap();
    checkpoint(&f.path);
    let waiting = f.store.apply(&task.id, message("still asking", TaskStatus::InputRequired)).unwrap();
    assert!(!wal_pages(&f.path).contains(&by_status_created));
    assert_eq!(waiting.status_message.as_deref(), Some("still asking"));
    assert_eq!(waiting.question.as_ref().map(|q| q.key.to_text()), Some(answer_key("q1")), "still pending");

    checkpoint(&f.path);
    let moved_on = f.store.apply(&task.id, message("moved on", TaskStatus::Working)).unwrap();
    assert!(wal_pages(&f.path).contains(&by_status_created), "a new status is indexed");
    assert_eq!((moved_on.status, moved_on.question), (TaskStatus::Working, None));
    let messages: Vec<_> = f
        .store
        .events(&task.id)
        .unwrap()
        .into_iter()
        .filter_map(|e| e.data["message"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(messages, ["one", "still asking", "moved on"]);
}

/// The store's pages as the main file holds them now, without checkpointing anything.
fn main_file_pages(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len() / 4096
}

#[test]
fn commits_leave_the_checkpoint_to_the_stores_own_thread_which_brings_the_wal_back_into_the_file() {
    let f = fixture();
    let before = main_file_pages(&f.path);
    // Short of SQLite's own threshold (1,000 WAL pages), which the committing connection would
    // checkpoint at: only the store's thread can have copied these pages into the file.
    for i in 0..50 {
        f.store.create_task(new_task(&format!("bulk-{i}"))).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while main_file_pages(&f.path) <= before + 10 {
        assert!(std::time::Instant::now() < deadline, "nothing reached the file: {} pages", main_file_pages(&f.path));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(f.store.non_terminal().unwrap().len(), 50, "every write is still there");
}

#[test]
fn a_plain_calls_creation_commit_leaves_the_search_index_to_its_end_which_makes_it_searchable() {
    let f = fixture();
    f.store.checkpoint_inline_for_tests().unwrap();
    let untouched = index_pages(&f.path);
    checkpoint(&f.path);
    let indexed = f.store.create_task(plain_call("indexed")).unwrap();
    let (_, indexed_pages) = wal_since_checkpoint(&f.path);
    let with_row = index_pages(&f.path);
    assert_ne!(with_row, untouched, "a task is indexed as it is made");

    checkpoint(&f.path);
    let call = f.store.create_task_unindexed(plain_call("call")).unwrap();
    let (commits, pages) = wal_since_checkpoint(&f.path);
    assert_eq!(commits, 1, "the call on disk in one commit");
    assert!(pages < indexed_pages, "{pages} pages against {indexed_pages} with the search row");
    assert_eq!(index_pages(&f.path), with_row, "the call's creation wrote nothing of the index");
    assert_eq!(f.store.get(&call.id).unwrap(), call, "recorded before it is sent");
    assert_eq!(found(&f.store, "notes_search"), [indexed.id.as_str()]);

    // Its end writes its row, with everything the index holds of it.
    let (_, results) = f
        .store
        .set_era_then_apply(&call.id, Era::Legacy, vec![Update::Completed { result: result(), server_status: None }])
        .unwrap();
    assert!(results.into_iter().all(|r| r.is_ok()));
    for words in ["found three notes", "deploy", "notes_search", "demo"] {
        let mut hits = found(&f.store, words);
        hits.sort();
        assert!(hits.contains(&call.id), "{words}: {hits:?}");
    }
}

#[test]
fn a_running_call_left_unindexed_is_indexed_later_and_a_task_gone_meanwhile_is_skipped() {
    let f = fixture();
    let running = f.store.create_task_unindexed(plain_call("running")).unwrap();
    let gone = f.store.create_task_unindexed(plain_call("gone")).unwrap();
    f.store.apply(&gone.id, Update::Completed { result: result(), server_status: None }).unwrap();
    f.store.delete_tasks(std::slice::from_ref(&gone.id), PurgeReason::User).unwrap();
    assert!(found(&f.store, "deploy").is_empty());

    f.store.index_tasks(&[running.id.clone(), gone.id.clone()]).unwrap();
    assert_eq!(found(&f.store, "deploy"), [running.id.as_str()]);
    // Again, as a flush after the call's end may, or a resume does: a row already there is left
    // as it is.
    checkpoint(&f.path);
    f.store.index_tasks(std::slice::from_ref(&running.id)).unwrap();
    assert_eq!(wal_since_checkpoint(&f.path), (0, 0), "nothing written");
    assert_eq!(found(&f.store, "notes_search"), [running.id.as_str()]);
}

#[test]
fn created_freshly_reads_back_as_made() {
    let f = fixture();
    let arguments = json!({ "query": "deploy", "limit": 3, "ratio": 0.1, "nested": { "b": [1, 2.5, null], "a": "é" } });
    for (i, mode) in [Mode::Call, Mode::Task].into_iter().enumerate() {
        let new = NewTask { arguments: arguments.clone(), mode, ..plain_call(&format!("k{i}")) };
        let made = f.store.create_task(new.clone()).unwrap();
        assert_eq!(f.store.get(&made.id).unwrap(), made);
        let unindexed = f.store.create_task_unindexed(NewTask { idempotency_key: format!("u{i}"), ..new }).unwrap();
        assert_eq!(f.store.get(&unindexed.id).unwrap(), unindexed);
    }
}

#[test]
fn the_remote_task_reads_back_as_recorded() {
    let f = fixture();
    let task = f.store.create_task(new_task("t")).unwrap();
    let rec = f.store.set_remote(&task.id, Era::Legacy, Some("r-1"), Some(60_000), Some(500)).unwrap();
    assert_eq!(f.store.get(&task.id).unwrap(), rec);
    assert_eq!((rec.era, rec.remote_task_id.as_deref()), (Some(Era::Legacy), Some("r-1")));
    // Again with no remote id: the one recorded stays.
    let again = f.store.set_remote(&task.id, Era::Modern, None, None, Some(250)).unwrap();
    assert_eq!(f.store.get(&task.id).unwrap(), again);
    assert_eq!(again.remote_task_id.as_deref(), Some("r-1"));

    let call = f.store.create_task_unindexed(plain_call("c")).unwrap();
    let (era, _) = f.store.set_era_then_apply(&call.id, Era::Modern, Vec::new()).unwrap();
    assert_eq!(f.store.get(&call.id).unwrap(), era.unwrap());
}
