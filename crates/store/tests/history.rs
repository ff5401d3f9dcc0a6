//! Months of history: pages, filters and counts from SQL; full-text search; delete, the purge log
//! and retention; space given back. Real files, through the public API (and raw SQL only where a
//! test must reach past it).

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use taskdeck_store::{
    Answer, NewTask, PageRequest, PurgeReason, Retention, Store, StoreError, TaskQuery, TaskStatus, Update,
};

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|t| id(t).to_owned()).collect()
}

fn page(store: &Store, query: &TaskQuery, before: Option<&str>, limit: usize) -> (Vec<String>, Option<String>) {
    let p = store.summaries(query, &PageRequest { before: before.map(str::to_owned), limit: Some(limit) }).unwrap();
    (ids(&p.items, |s| &s.id), p.next_before)
}

fn search(store: &Store, text: &str) -> Vec<String> {
    let q = TaskQuery { search: Some(text.to_owned()), ..Default::default() };
    ids(&store.summaries(&q, &PageRequest::default()).unwrap().items, |s| &s.id)
}

fn with(tool: &str, server: &str, key: &str, arguments: serde_json::Value) -> NewTask {
    NewTask {
        server: server.into(),
        tool: tool.into(),
        arguments,
        idempotency_key: key.into(),
        mode: taskdeck_store::Mode::Task,
    }
}

fn complete_with_text(store: &Store, id: &str, text: &str) {
    store
        .apply(
            id,
            Update::Completed { result: json!({"content": [{"type": "text", "text": text}]}), server_status: None },
        )
        .unwrap();
}

#[test]
fn pages_are_newest_first_and_stay_put_while_tasks_are_added() {
    let f = fixture();
    let made: Vec<String> = (0..7).map(|i| f.store.create_task(new_task(&format!("k{i}"))).unwrap().id).collect();
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();
    let all = TaskQuery::default();

    let (first, next) = page(&f.store, &all, None, 3);
    assert_eq!(first, newest_first[..3]);
    // New tasks arrive while someone reads: the next page is where it was.
    for i in 0..5 {
        f.store.create_task(new_task(&format!("late{i}"))).unwrap();
    }
    let (second, next) = page(&f.store, &all, next.as_deref(), 3);
    assert_eq!(second, newest_first[3..6]);
    let (third, next) = page(&f.store, &all, next.as_deref(), 3);
    assert_eq!(third, newest_first[6..]);
    assert_eq!(next, None, "the last page says there is no more");
    // The whole list by pages is the list as `list` has always given it.
    let listed = ids(&f.store.list(&Default::default()).unwrap(), |t| &t.id);
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let (items, next) = page(&f.store, &all, before.as_deref(), 4);
        paged.extend(items);
        match next {
            Some(n) => before = Some(n),
            None => break,
        }
    }
    assert_eq!(paged, listed);
    // A cursor that is not a task is said to be so.
    let err = f.store.summaries(&all, &PageRequest { before: Some("gone".into()), limit: Some(1) }).unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}

#[test]
fn summaries_carry_what_the_list_shows_without_the_bodies() {
    let f = fixture();
    let asked = task_in(&f.store, "asked", TaskStatus::InputRequired);
    let done = task_in(&f.store, "done", TaskStatus::Completed);
    let failed = task_in(&f.store, "failed", TaskStatus::Failed);
    let s = f.store.summary(&asked.id).unwrap();
    let q = s.question.expect("the pending question is summarised");
    assert_eq!(
        (q.key.as_str(), q.message.as_deref(), q.kind.as_deref()),
        (answer_key("q1").as_str(), Some("Continue?"), Some("form"))
    );
    assert!(!s.has_result && !s.pinned);
    assert!(f.store.summary(&done.id).unwrap().has_result);
    let s = f.store.summary(&failed.id).unwrap();
    assert_eq!(s.error.map(|e| e.message), Some("boom".to_owned()));
    assert_eq!(
        (s.tool.as_str(), s.server.as_str(), s.created_at),
        (failed.tool.as_str(), failed.server.as_str(), failed.created_at)
    );
}

#[test]
fn filters_narrow_pages_and_counts_are_per_status_under_the_other_filters() {
    let f = fixture();
    let w = task_in(&f.store, "w", TaskStatus::Working);
    let asked = task_in(&f.store, "asked", TaskStatus::InputRequired);
    let done = task_in(&f.store, "done", TaskStatus::Completed);
    let other = f.store.create_task(with("generate_report", "remote", "o", json!({}))).unwrap();
    let all = |q: TaskQuery| ids(&f.store.summaries(&q, &PageRequest::default()).unwrap().items, |s| &s.id);

    assert_eq!(
        all(TaskQuery { statuses: vec![TaskStatus::Working], ..Default::default() }),
        [other.id.clone(), w.id.clone()]
    );
    assert_eq!(
        all(TaskQuery { statuses: vec![TaskStatus::Completed, TaskStatus::InputRequired], ..Default::default() }),
        [done.id.clone(), asked.id.clone()]
    );
    assert_eq!(all(TaskQuery { server: Some("remote".into()), ..Default::default() }), [other.id.as_str()]);
    assert_eq!(all(TaskQuery { tool: Some("slow_count".into()), ..Default::default() }).len(), 3);
    assert_eq!(all(TaskQuery { waiting: true, ..Default::default() }), [asked.id.as_str()]);
    let from = done.created_at;
    assert_eq!(all(TaskQuery { created_from: Some(from), ..Default::default() }).first(), Some(&other.id));
    assert!(!all(TaskQuery { created_until: Some(from), ..Default::default() }).contains(&done.id));
    f.store.set_pinned(&done.id, true).unwrap();
    assert_eq!(all(TaskQuery { pinned: Some(true), ..Default::default() }), [done.id.as_str()]);

    let counts = f.store.counts(&TaskQuery::default()).unwrap();
    assert_eq!(
        (counts.working, counts.input_required, counts.completed, counts.failed, counts.waiting, counts.total),
        (2, 1, 1, 0, 1, 4)
    );
    // Counts ignore the query's own statuses, so each tab can show its number.
    let counts = f
        .store
        .counts(&TaskQuery { statuses: vec![TaskStatus::Failed], server: Some("demo".into()), ..Default::default() })
        .unwrap();
    assert_eq!((counts.working, counts.waiting, counts.total), (1, 1, 3));
    // The waiting count is under the other filters too.
    let counts = f.store.counts(&TaskQuery { server: Some("remote".into()), ..Default::default() }).unwrap();
    assert_eq!((counts.working, counts.input_required, counts.waiting, counts.total), (1, 0, 0, 1));
}

#[test]
fn the_bundled_sqlite_has_fts5() {
    let f = fixture();
    let conn = raw(&f.path);
    let on: i64 = conn.query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| r.get(0)).unwrap();
    assert_eq!(on, 1);
    conn.execute_batch("CREATE VIRTUAL TABLE temp.probe USING fts5(x, content = '', contentless_delete = 1);").unwrap();
}

#[test]
fn a_word_in_a_result_in_arguments_or_in_an_answer_finds_its_task() {
    let f = fixture();
    let report = f.store.create_task(with("generate_report", "demo", "r", json!({"topic": "tides"}))).unwrap();
    complete_with_text(&f.store, &report.id, "The report on Q3 revenue is ready.");
    let payments = f
        .store
        .create_task(with("diagnose_incident", "demo", "p", json!({"service": "payments", "depth": 3})))
        .unwrap();
    let asked = task_in(&f.store, "asked", TaskStatus::InputRequired);
    f.store
        .apply(
            &asked.id,
            Update::Answer(Answer {
                key: answer_key("q1"),
                response: json!({"action": "accept", "content": {"region": "Antarctica"}}),
                note: None,
            }),
        )
        .unwrap();
    let structured = f.store.create_task(new_task("s")).unwrap();
    f.store
        .apply(
            &structured.id,
            Update::Completed {
                result: json!({"content": [{"type": "image", "data": "aGVsbG8gd29ybGQ=", "mimeType": "image/png"}],
                    "structuredContent": {"owner": "Zebediah"}}),
                server_status: None,
            },
        )
        .unwrap();

    assert_eq!(search(&f.store, "q3"), [report.id.as_str()]);
    assert_eq!(search(&f.store, "report Q3"), [report.id.as_str()], "all words, in any column");
    assert_eq!(search(&f.store, "revenu*"), [report.id.as_str()], "a prefix");
    assert_eq!(search(&f.store, "service=payments"), [payments.id.as_str()], "key=value of an argument");
    assert_eq!(search(&f.store, "antarctica"), [asked.id.as_str()], "an answer");
    assert_eq!(search(&f.store, "Continue"), [asked.id.as_str()], "the question");
    assert_eq!(search(&f.store, "zebediah"), [structured.id.as_str()], "structured content");
    assert!(search(&f.store, "aGVsbG8gd29ybGQ").is_empty(), "base64 data is not text");
    assert_eq!(search(&f.store, "diagnose_incident").len(), 1, "the tool");
    assert!(search(&f.store, "q3 payments").is_empty());
    // Status messages, also ones the task no longer shows: indexed when the task next asks, is
    // answered or ends, not with every message.
    let w = f.store.create_task(new_task("w")).unwrap();
    for m in ["collecting sources", "drafting"] {
        f.store
            .apply(&w.id, Update::Status { status: TaskStatus::Working, message: Some(m.into()), server_status: None })
            .unwrap();
    }
    assert!(search(&f.store, "collecting").is_empty());
    f.store
        .apply(
            &w.id,
            Update::Cancelled { reason: Some("stopped by hand".into()), server_status: None, server_told: None },
        )
        .unwrap();
    assert_eq!(search(&f.store, "collecting"), [w.id.as_str()]);
    assert_eq!(search(&f.store, "stopped hand"), [w.id.as_str()], "the cancel's reason");
    // Paged like the list.
    let q = TaskQuery { search: Some("demo".into()), ..Default::default() };
    let first = f.store.summaries(&q, &PageRequest { before: None, limit: Some(2) }).unwrap();
    assert_eq!(first.items.len(), 2);
    let rest = f.store.summaries(&q, &PageRequest { before: first.next_before, limit: None }).unwrap();
    assert_eq!(first.items.len() + rest.items.len(), 5);
}

#[test]
fn what_is_indexed_of_a_task_is_bounded() {
    let f = fixture();
    let t = f.store.create_task(new_task("big")).unwrap();
    // Past the result's 196,608 characters, nothing more is indexed.
    let text = format!("openingword {} closingword", "filler ".repeat(40_000));
    complete_with_text(&f.store, &t.id, &text);
    assert_eq!(search(&f.store, "openingword"), [t.id.as_str()]);
    assert!(search(&f.store, "closingword").is_empty());
}

#[test]
fn what_a_user_types_is_never_fts5_syntax() {
    let f = fixture();
    let t = f.store.create_task(with("t", "demo", "k", json!({"note": "AND the \"Q3\" NEAR(col: x) ^start"}))).unwrap();
    for hostile in [
        "service=payments",
        "\"Q3\"",
        "\"",
        "\"\"\"",
        "AND",
        "OR NOT",
        "NEAR(",
        "col:",
        "note:",
        "^start",
        "a*b",
        "*",
        "(",
        ")",
        "-x",
        "+",
        "'; DROP TABLE tasks; --",
        "{}[]",
        "\u{0}",
        "é",
    ] {
        let q = TaskQuery { search: Some(hostile.into()), ..Default::default() };
        f.store.summaries(&q, &PageRequest::default()).unwrap_or_else(|e| panic!("{hostile:?}: {e}"));
        f.store.counts(&q).unwrap_or_else(|e| panic!("{hostile:?}: {e}"));
    }
    assert_eq!(search(&f.store, "\"Q3\""), [t.id.as_str()]);
    assert_eq!(search(&f.store, "NEAR(col:"), [t.id.as_str()], "the phrase near col");
    assert!(search(&f.store, "*").is_empty(), "nothing to look for matches nothing");
    assert_eq!(search(&f.store, "  ").len(), 1, "a blank search is no search");
}

/// A store as the Taskdeck before history left it: the migrations up to the dropped marker, with
/// tasks in it.
fn store_before_search(path: &std::path::Path) {
    let conn = store_at_version_4(path);
    conn.execute_batch(
        r#"INSERT INTO tasks (id, server, tool, arguments, idempotency_key, mode, status, result, created_at, updated_at)
           VALUES ('old-1', 'demo', 'generate_report', '{"topic": "lighthouses"}', 'old-1', 'task', 'completed',
                   '{"content": [{"type": "text", "text": "Beacons of the northern coast"}]}',
                   '2026-11-30T09:15:00.000Z', '2026-11-30T09:16:00.000Z'),
                  ('old-2', 'demo', 'count', 'not json', 'old-2', 'call', 'failed', NULL,
                   '2026-11-30T09:17:00.000Z', '2026-11-30T09:18:00.000Z');
           INSERT INTO task_events (task_id, at, kind, to_status, data)
           VALUES ('old-1', '2026-11-30T09:15:30.000Z', 'status', 'working', '{"message": "Reading the archives"}'),
                  ('old-2', '2026-11-30T09:17:30.000Z', 'failed', 'failed', '{"error": {"message": "Quota exceeded"}}');"#,
    )
    .unwrap();
}

#[test]
fn the_migration_builds_the_index_of_a_store_made_before_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taskdeck.sqlite3");
    store_before_search(&path);
    let store = Store::open(&path).unwrap();
    assert_eq!(search(&store, "lighthouses"), ["old-1"]);
    assert_eq!(search(&store, "beacons northern"), ["old-1"]);
    assert_eq!(search(&store, "archives"), ["old-1"]);
    assert_eq!(search(&store, "quota"), ["old-2"], "a cell that is not JSON does not stop the rest");
    // And the old tasks can be deleted like any other.
    store.delete_tasks(&["old-1".into()], PurgeReason::User).unwrap();
    assert!(search(&store, "lighthouses").is_empty());
}

fn count(path: &std::path::Path, sql: &str, id: &str) -> i64 {
    raw(path).query_row(sql, [id], |r| r.get(0)).unwrap()
}

#[test]
fn a_delete_removes_the_task_its_events_and_its_search_row_and_leaves_a_purge_line() {
    let f = fixture();
    let keep = task_in(&f.store, "keep", TaskStatus::Completed);
    let gone = f.store.create_task(with("generate_report", "demo", "gone", json!({"topic": "secret plans"}))).unwrap();
    complete_with_text(&f.store, &gone.id, "the secret plans");
    assert_eq!(search(&f.store, "secret"), [gone.id.as_str()]);

    let purged = f.store.delete_tasks(std::slice::from_ref(&gone.id), PurgeReason::User).unwrap();
    assert_eq!((purged[0].id.as_str(), purged[0].status), (gone.id.as_str(), TaskStatus::Completed));
    assert!(matches!(f.store.get(&gone.id), Err(StoreError::NotFound { .. })));
    assert_eq!(count(&f.path, "SELECT count(*) FROM task_events WHERE task_id = ?1", &gone.id), 0);
    assert_eq!(count(&f.path, "SELECT count(*) FROM task_search_rows WHERE task_id = ?1", &gone.id), 0);
    assert!(search(&f.store, "secret").is_empty());
    let line = f.store.purge_log(0, 10).unwrap();
    assert_eq!(line.len(), 1);
    assert_eq!(
        (line[0].task_id.as_str(), line[0].tool.as_str(), line[0].server.as_str(), line[0].why),
        (gone.id.as_str(), "generate_report", "demo", PurgeReason::User)
    );
    // Nothing of what it held is in the file's tables any more.
    let conn = raw(&f.path);
    let held: i64 = conn
        .query_row("SELECT count(*) FROM tasks WHERE arguments LIKE '%secret%' OR result LIKE '%secret%'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(held, 0);
    assert_eq!(f.store.get(&keep.id).unwrap().id, keep.id);
    assert_eq!(event_count(&f.store, &keep.id), 2);
}

#[test]
fn a_live_task_is_refused_with_its_real_status_and_nothing_is_deleted() {
    let f = fixture();
    let done = task_in(&f.store, "done", TaskStatus::Completed);
    let asked = task_in(&f.store, "asked", TaskStatus::InputRequired);
    let err = f.store.delete_tasks(&[done.id.clone(), asked.id.clone()], PurgeReason::User).unwrap_err();
    assert_eq!(err.current_status(), Some(TaskStatus::InputRequired), "{err}");
    assert!(f.store.get(&done.id).is_ok(), "all or nothing");
    assert!(f.store.purge_log(0, 10).unwrap().is_empty());
    // Not through raw SQL either.
    let e = raw(&f.path).execute("DELETE FROM tasks WHERE id = ?1", [&asked.id]).unwrap_err();
    assert!(e.to_string().contains("cannot be deleted"), "{e}");
    let e = f.store.delete_tasks(&["no-such".into()], PurgeReason::User).unwrap_err();
    assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
}

#[test]
fn a_failure_half_way_through_a_delete_leaves_everything_as_it_was() {
    let f = fixture();
    let a = task_in(&f.store, "a", TaskStatus::Completed);
    let b = task_in(&f.store, "b", TaskStatus::Failed);
    let events_a = f.store.events(&a.id).unwrap();
    // The second task's purge line cannot be written: the first task is deleted by then, in the
    // same transaction.
    raw(&f.path)
        .execute_batch(&format!(
            "CREATE TRIGGER test_fail BEFORE INSERT ON purge_log WHEN NEW.task_id = '{}'
             BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            b.id
        ))
        .unwrap();
    let err = f.store.delete_tasks(&[a.id.clone(), b.id.clone()], PurgeReason::User).unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    assert_eq!(f.store.get(&a.id).unwrap(), a);
    assert_eq!(f.store.events(&a.id).unwrap(), events_a);
    assert_eq!(count(&f.path, "SELECT count(*) FROM task_search_rows WHERE task_id = ?1", &a.id), 1);
    assert!(!search(&f.store, "done").is_empty(), "its search row too");
    assert!(f.store.purge_log(0, 10).unwrap().is_empty());
}

#[test]
fn the_log_refuses_a_lone_event_delete_and_a_task_delete_that_leaves_its_events() {
    let f = fixture();
    let t = task_in(&f.store, "t", TaskStatus::Completed);
    let conn = raw(&f.path);
    let e = conn.execute("DELETE FROM task_events WHERE task_id = ?1", [&t.id]).unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    let e = conn.execute("UPDATE task_events SET data = '{}' WHERE task_id = ?1", [&t.id]).unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    // The task alone: its events' foreign key refuses.
    conn.execute_batch("PRAGMA foreign_keys = ON;").unwrap();
    let e = conn.execute("DELETE FROM tasks WHERE id = ?1", [&t.id]).unwrap_err();
    assert!(e.to_string().to_lowercase().contains("foreign key"), "{e}");
    assert_eq!(event_count(&f.store, &t.id), 2);
    // The purge log is append-only too.
    f.store.delete_tasks(&[task_in(&f.store, "u", TaskStatus::Cancelled).id], PurgeReason::User).unwrap();
    assert!(conn.execute("DELETE FROM purge_log", []).is_err());
    assert!(conn.execute("UPDATE purge_log SET why = 'policy'", []).is_err());
}

#[test]
fn retention_keeps_pinned_waiting_and_working_tasks() {
    let f = fixture();
    let working = task_in(&f.store, "working", TaskStatus::Working);
    let waiting = task_in(&f.store, "waiting", TaskStatus::InputRequired);
    let pinned = task_in(&f.store, "pinned", TaskStatus::Completed);
    f.store.set_pinned(&pinned.id, true).unwrap();
    let old_failed = task_in(&f.store, "old-failed", TaskStatus::Failed);
    let done: Vec<String> = (0..4).map(|i| task_in(&f.store, &format!("d{i}"), TaskStatus::Completed).id).collect();
    // Make the working and waiting tasks and one failure look ancient.
    raw(&f.path)
        .execute(
            "UPDATE tasks SET updated_at = '2020-01-01T00:00:00.000Z' WHERE id IN (?1, ?2, ?3, ?4)",
            [&working.id, &waiting.id, &old_failed.id, &pinned.id],
        )
        .unwrap();

    let by_age = Retention { older_than: Some(Duration::from_secs(30 * 86_400)), ..Default::default() };
    assert_eq!(ids(&f.store.prune_candidates(&by_age).unwrap(), |p| &p.id), [old_failed.id.as_str()]);
    let by_count = Retention { keep: Some(2), ..Default::default() };
    assert_eq!(
        ids(&f.store.prune_candidates(&by_count).unwrap(), |p| &p.id),
        [done[1].clone(), done[0].clone(), old_failed.id.clone()]
    );
    let by_status = Retention { statuses: vec![TaskStatus::Failed], ..Default::default() };
    assert_eq!(ids(&f.store.prune_candidates(&by_status).unwrap(), |p| &p.id), [old_failed.id.as_str()]);
    let live_status = Retention { statuses: vec![TaskStatus::Working], ..Default::default() };
    assert!(f.store.prune_candidates(&live_status).unwrap().is_empty());
    assert!(f.store.prune(&Retention::default()).unwrap().0.is_empty(), "no rule removes nothing");

    let (purged, _) = f.store.prune(&by_count).unwrap();
    assert_eq!(purged.len(), 3);
    let left = ids(&f.store.list(&Default::default()).unwrap(), |t| &t.id);
    assert_eq!(left, [done[3].clone(), done[2].clone(), pinned.id.clone(), waiting.id.clone(), working.id.clone()]);
    assert!(f.store.purge_log(0, 10).unwrap().iter().all(|l| l.why == PurgeReason::Policy));
}

#[test]
fn a_size_budget_removes_the_oldest_finished_tasks_first() {
    let f = fixture();
    let big = "x".repeat(100_000);
    let made: Vec<String> = (0..5)
        .map(|i| {
            let t = f.store.create_task(new_task(&format!("b{i}"))).unwrap();
            complete_with_text(&f.store, &t.id, &big);
            t.id
        })
        .collect();
    let live = f.store.create_task(new_task("live")).unwrap();
    let rule = Retention { max_bytes: Some(250_000), ..Default::default() };
    // The newest two fit in 250 kB; the three before them go, oldest last in the list.
    assert_eq!(
        ids(&f.store.prune_candidates(&rule).unwrap(), |p| &p.id),
        [made[2].clone(), made[1].clone(), made[0].clone()]
    );
    f.store.prune(&rule).unwrap();
    assert_eq!(
        ids(&f.store.list(&Default::default()).unwrap(), |t| &t.id),
        [live.id.clone(), made[4].clone(), made[3].clone()]
    );
}

#[test]
fn a_new_store_gives_pruned_space_back_to_the_file_system() {
    let f = fixture();
    let mode: i64 = raw(&f.path).query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, 2, "incremental");
    let big = "lorem ipsum ".repeat(20_000);
    for i in 0..30 {
        let t = f.store.create_task(new_task(&format!("b{i}"))).unwrap();
        complete_with_text(&f.store, &t.id, &big);
    }
    let before = f.store.space(false).unwrap().bytes_after;
    assert!(before > 5_000_000, "{before}");
    let (purged, space) = f.store.prune(&Retention { keep: Some(2), ..Default::default() }).unwrap();
    assert_eq!(purged.len(), 28);
    assert!(space.incremental);
    assert!(space.bytes_after < before / 4, "{space:?} from {before}");
    assert!(std::fs::metadata(&f.path).unwrap().len() < before / 4);
    // Most of the file was free, so it was rebuilt: what is kept reads as before.
    let removed = ids(&purged, |p| &p.id);
    let (listed, _) = page(&f.store, &TaskQuery::default(), None, 10);
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|id| !removed.contains(id)));
    assert_eq!(search(&f.store, "lorem"), listed, "found by its words, newest first");
    assert!(f.store.get(&listed[0]).unwrap().result.is_some());

    // A third more of what is left: given back page by page.
    for i in 0..4 {
        let t = f.store.create_task(new_task(&format!("c{i}"))).unwrap();
        complete_with_text(&f.store, &t.id, &big);
    }
    let before = f.store.space(false).unwrap().bytes_after;
    let (purged, space) = f.store.prune(&Retention { keep: Some(4), ..Default::default() }).unwrap();
    assert_eq!(purged.len(), 2);
    assert!(space.bytes_after < before * 3 / 4, "{space:?} from {before}");
    assert_eq!(search(&f.store, "lorem").len(), 4);
}

#[test]
fn a_pinned_task_says_so_and_unknown_tasks_cannot_be_pinned() {
    let f = fixture();
    let t = task_in(&f.store, "t", TaskStatus::Completed);
    assert!(f.store.set_pinned(&t.id, true).unwrap().pinned);
    assert_eq!(f.store.get(&t.id).unwrap().updated_at, t.updated_at, "pinning is not an update of the task");
    assert!(!f.store.set_pinned(&t.id, false).unwrap().pinned);
    assert!(matches!(f.store.set_pinned("nope", true), Err(StoreError::NotFound { .. })));
}

#[test]
fn the_newest_purge_lines_come_first_and_page_back_in_time() {
    let f = fixture();
    let ids: Vec<String> =
        ["a", "b", "c", "d", "e"].iter().map(|k| task_in(&f.store, k, TaskStatus::Completed).id).collect();
    for id in &ids {
        f.store.delete_tasks(std::slice::from_ref(id), PurgeReason::User).unwrap();
    }
    let newest = f.store.purge_log_newest(None, 2).unwrap();
    let got: Vec<&str> = newest.iter().map(|l| l.task_id.as_str()).collect();
    assert_eq!(got, [ids[4].as_str(), ids[3].as_str()]);
    let older = f.store.purge_log_newest(Some(newest[1].seq), 10).unwrap();
    let got: Vec<&str> = older.iter().map(|l| l.task_id.as_str()).collect();
    assert_eq!(got, [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]);
    assert!(f.store.purge_log_newest(Some(older[2].seq), 10).unwrap().is_empty());
}

#[test]
fn changed_tasks_are_told_apart_by_whether_they_are_in_a_search_now() {
    let f = fixture();
    let quokka = f.store.create_task(with("generate_report", "demo", "a", json!({"topic": "quokka"}))).unwrap();
    let other = f.store.create_task(with("generate_report", "demo", "b", json!({"topic": "wombat"}))).unwrap();
    let elsewhere = f.store.create_task(with("generate_report", "remote", "c", json!({"topic": "quokka"}))).unwrap();
    let asked = vec![quokka.id.clone(), other.id.clone(), elsewhere.id.clone(), "no-such-task".to_owned()];
    let matching = |q: &TaskQuery| {
        let mut found = f.store.matching(q, &asked).unwrap();
        found.sort();
        found
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };

    let words = TaskQuery { search: Some("quokka".into()), ..Default::default() };
    assert_eq!(matching(&words), sorted(vec![quokka.id.clone(), elsewhere.id.clone()]));
    // The same answer as the pages give, task by task.
    assert_eq!(matching(&words), sorted(search(&f.store, "quokka")));
    let on_demo = TaskQuery { server: Some("demo".into()), ..words.clone() };
    assert_eq!(matching(&on_demo), [quokka.id.as_str()], "the other filters apply too");
    assert_eq!(matching(&TaskQuery { search: Some("quok*".into()), ..Default::default() }).len(), 2, "a prefix");
    assert!(matching(&TaskQuery { search: Some("= *".into()), ..Default::default() }).is_empty());
    let no_search = TaskQuery { server: Some("demo".into()), ..Default::default() };
    assert_eq!(matching(&no_search), sorted(vec![quokka.id.clone(), other.id.clone()]));

    // One that stops matching a status filter leaves; one that ends with a word joins.
    let running = TaskQuery { statuses: vec![TaskStatus::Working], ..words.clone() };
    assert_eq!(matching(&running).len(), 2);
    f.store.apply(&quokka.id, Update::Cancelled { reason: None, server_status: None, server_told: None }).unwrap();
    assert_eq!(matching(&running), [elsewhere.id.as_str()]);
    complete_with_text(&f.store, &other.id, "A quokka was seen");
    assert_eq!(matching(&words), sorted(vec![quokka.id.clone(), other.id.clone(), elsewhere.id.clone()]));

    // A deleted task is in no list.
    f.store.delete_tasks(std::slice::from_ref(&quokka.id), PurgeReason::User).unwrap();
    assert_eq!(matching(&words), sorted(vec![other.id.clone(), elsewhere.id.clone()]));
    assert!(f.store.matching(&words, &[]).unwrap().is_empty());
}

#[test]
fn a_prune_of_most_of_the_store_drops_their_words_from_the_index_and_leaves_delete_merge_on() {
    let f = fixture();
    let mut made = Vec::new();
    for i in 0..700 {
        let t = f.store.create_task(new_task(&format!("m{i}"))).unwrap();
        made.push(t.id);
    }
    let done: Vec<(String, Update)> = made
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let text = format!("uniq{i} {}", "quarterly latency review ".repeat(40));
            (
                id.clone(),
                Update::Completed { result: json!({"content": [{"type": "text", "text": text}]}), server_status: None },
            )
        })
        .collect();
    for r in f.store.apply_batch(done).unwrap() {
        r.unwrap();
    }
    let index_bytes = |path: &std::path::Path| -> i64 {
        raw(path).query_row("SELECT sum(length(block)) FROM task_search_data", [], |r| r.get(0)).unwrap()
    };
    let before = index_bytes(&f.path);

    let (purged, _) = f.store.prune(&Retention { keep: Some(100), ..Default::default() }).unwrap();
    assert_eq!(purged.len(), 600);
    assert!(search(&f.store, "uniq10").is_empty(), "a removed task's word is gone");
    assert_eq!(search(&f.store, "uniq650"), [made[650].as_str()], "a kept task is found");
    assert_eq!(search(&f.store, "latency").len(), 100);
    let after = index_bytes(&f.path);
    assert!(after < before / 3, "the index dropped the removed rows: {before} -> {after}");
    let merge: String = raw(&f.path)
        .query_row("SELECT CAST(v AS TEXT) FROM task_search_config WHERE k = 'deletemerge'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(merge, "10", "delete-merge is back on for the deletes that follow");
}
