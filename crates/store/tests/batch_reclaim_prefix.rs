//! Batched writes, reclaiming abandoned tasks, and finding a task by the start of its id.

mod common;

use std::time::Duration;

use common::*;
use taskdeck_store::{EventKind, Progress, StoreError, TaskStatus, Update};

fn progress(p: f64) -> Update {
    Update::Progress(Progress { progress: p, total: Some(10.0), message: Some(format!("step {p}")) })
}

#[test]
fn a_batch_applies_the_valid_items_and_reports_the_refused_ones_in_place() {
    let f = fixture();
    let a = task_in(&f.store, "a", TaskStatus::Working);
    let done = task_in(&f.store, "done", TaskStatus::Completed);
    let b = task_in(&f.store, "b", TaskStatus::InputRequired);
    let missing = "00000000-0000-4000-8000-000000000000".to_string();

    let results = f
        .store
        .apply_batch(vec![
            (a.id.clone(), progress(1.0)),
            (done.id.clone(), progress(2.0)),
            (missing.clone(), progress(3.0)),
            (b.id.clone(), progress(4.0)),
            (a.id.clone(), progress(5.0)),
            (a.id.clone(), Update::Cancelled { reason: Some("stop".into()), server_status: None, server_told: None }),
            (a.id.clone(), progress(6.0)),
        ])
        .unwrap();

    assert_eq!(results.len(), 7);
    assert_eq!(results[0].as_ref().unwrap().progress.as_ref().unwrap().progress, 1.0);
    assert!(matches!(results[1], Err(StoreError::Refused { current: TaskStatus::Completed, .. })));
    assert!(matches!(results[2], Err(StoreError::NotFound { .. })));
    assert_eq!(results[3].as_ref().unwrap().status, TaskStatus::InputRequired);
    assert_eq!(results[4].as_ref().unwrap().progress.as_ref().unwrap().progress, 5.0);
    assert_eq!(results[5].as_ref().unwrap().status, TaskStatus::Cancelled);
    assert!(
        matches!(results[6], Err(StoreError::Refused { current: TaskStatus::Cancelled, .. })),
        "later items see earlier ones: {:?}",
        results[6]
    );

    let a_now = f.store.get(&a.id).unwrap();
    assert_eq!(a_now.status, TaskStatus::Cancelled);
    assert_eq!(a_now.progress.unwrap().progress, 5.0);
    assert_eq!(f.store.get(&done.id).unwrap(), done);
    assert_eq!(f.store.get(&b.id).unwrap().progress.unwrap().progress, 4.0);
    assert_eq!(event_count(&f.store, &a.id), 2, "created + cancelled; progress is not logged");
}

fn backdate(f: &Fixture, id: &str, at: &str) {
    raw(&f.path).execute("UPDATE tasks SET updated_at = ?2 WHERE id = ?1", [id, at]).unwrap();
}

#[test]
fn reclaim_fails_only_live_tasks_nobody_updated_in_time_and_says_why() {
    let f = fixture();
    let stale_working = task_in(&f.store, "stale-working", TaskStatus::Working);
    let stale_asking = task_in(&f.store, "stale-asking", TaskStatus::InputRequired);
    let fresh = task_in(&f.store, "fresh", TaskStatus::Working);
    let old_done = task_in(&f.store, "old-done", TaskStatus::Completed);
    let two_hours_ago = "2000-01-01T00:00:00.000Z";
    for t in [&stale_working, &stale_asking, &old_done] {
        backdate(&f, &t.id, two_hours_ago);
    }

    let reclaimed = f.store.reclaim(Duration::from_secs(3600)).unwrap();
    let ids: Vec<_> = reclaimed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [stale_working.id.as_str(), stale_asking.id.as_str()]);
    for r in &reclaimed {
        assert!(r.reason.starts_with("no update for ") && r.reason.contains("limit 3600 s"), "{}", r.reason);
        let task = f.store.get(&r.id).unwrap();
        assert_eq!(task.status, TaskStatus::Failed);
        assert_eq!(task.question, None, "nobody can answer a reclaimed task");
        assert_eq!(task.error.unwrap().reason.as_deref(), Some(r.reason.as_str()));
        let last = f.store.events(&r.id).unwrap().pop().unwrap();
        assert_eq!(last.kind, EventKind::Reclaimed);
        assert_eq!(last.to_status, Some(TaskStatus::Failed));
        assert_eq!(last.data["reason"], r.reason.as_str());
    }
    assert_eq!(f.store.get(&fresh.id).unwrap().status, TaskStatus::Working);
    assert_eq!(f.store.get(&old_done.id).unwrap().status, TaskStatus::Completed);
    assert!(f.store.reclaim(Duration::from_secs(3600)).unwrap().is_empty(), "reclaim is not repeated");
}

#[test]
fn a_progress_update_keeps_a_task_from_being_reclaimed() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Working);
    backdate(&f, &task.id, "2000-01-01T00:00:00.000Z");
    f.store.apply(&task.id, progress(1.0)).unwrap();
    assert!(f.store.reclaim(Duration::from_secs(60)).unwrap().is_empty());
}

#[test]
fn a_unique_prefix_finds_its_task_in_any_case() {
    let f = fixture();
    let task = task_in(&f.store, "a", TaskStatus::Working);
    task_in(&f.store, "b", TaskStatus::Working);
    assert_eq!(f.store.resolve_prefix(&task.id).unwrap(), task);
    // Two random v4 ids share 8 leading hex digits with negligible probability.
    assert_eq!(f.store.resolve_prefix(&task.id[..8]).unwrap().id, task.id);
    assert_eq!(f.store.resolve_prefix(&task.id[..8].to_uppercase()).unwrap().id, task.id);
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    let f = fixture();
    // 17 ids over 16 possible first hex digits: at least two share one.
    let ids: Vec<String> = (0..17).map(|i| f.store.create_task(new_task(&format!("k{i}"))).unwrap().id).collect();
    let (first, _) =
        ids.iter().enumerate().find(|(i, id)| ids[i + 1..].iter().any(|o| o[..1] == id[..1])).expect("pigeonhole");
    let prefix = &ids[first][..1];
    let expected: Vec<&String> = ids.iter().filter(|id| id.starts_with(prefix)).collect();

    match f.store.resolve_prefix(prefix).unwrap_err() {
        StoreError::Ambiguous { prefix: p, candidates } => {
            assert_eq!(p, prefix);
            assert!(candidates.len() >= 2);
            for c in &candidates {
                assert!(expected.contains(&c), "{c} does not start with {prefix}");
            }
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
}

#[test]
fn a_prefix_matching_nothing_is_not_found_and_wildcards_match_literally() {
    let f = fixture();
    task_in(&f.store, "a", TaskStatus::Working);
    for prefix in ["zzz", "%", "_", ""] {
        assert!(matches!(f.store.resolve_prefix(prefix), Err(StoreError::NotFound { .. })), "{prefix:?}");
    }
}
