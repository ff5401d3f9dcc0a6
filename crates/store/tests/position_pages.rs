//! Pages addressed by position (`Store::summaries_at`): what a list that shows any stretch of
//! itself asks for. Real files; every page is checked against the whole list read at the same
//! moment, under no filter, a status filter, a segment and a search.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{PageRequest, PurgeReason, Store, TaskError, TaskQuery, TaskStatus, Update};

fn whole(store: &Store, query: &TaskQuery) -> Vec<String> {
    store.summaries(query, &PageRequest::default()).unwrap().items.into_iter().map(|s| s.id).collect()
}

fn at(store: &Store, query: &TaskQuery, offset: usize, limit: usize) -> Vec<String> {
    store.summaries_at(query, offset, limit).unwrap().into_iter().map(|s| s.id).collect()
}

/// 30 tasks, every third completed with a word in its result, every fifth failed, five pinned.
fn mixed(store: &Store) -> Vec<String> {
    let mut made = Vec::new();
    for i in 0..30 {
        let t = store.create_task(new_task(&format!("k{i}"))).unwrap();
        if i % 3 == 0 {
            let text = if i % 2 == 0 { "the wombat report" } else { "nothing here" };
            store
                .apply(
                    &t.id,
                    Update::Completed {
                        result: json!({"content": [{"type": "text", "text": text}]}),
                        server_status: None,
                    },
                )
                .unwrap();
        } else if i % 5 == 0 {
            store
                .apply(
                    &t.id,
                    Update::Failed {
                        error: TaskError { code: None, message: "wombat gone".into(), reason: None },
                        server_status: None,
                    },
                )
                .unwrap();
        }
        made.push(t.id);
    }
    // Pinned tasks at the top, the bottom and in between, so the unpinned segment's positions
    // are found around each.
    for i in [0, 7, 8, 20, 29] {
        store.set_pinned(&made[i], true).unwrap();
    }
    made
}

fn queries() -> Vec<(&'static str, TaskQuery)> {
    vec![
        ("all", TaskQuery::default()),
        ("completed", TaskQuery { statuses: vec![TaskStatus::Completed], ..Default::default() }),
        ("two statuses", TaskQuery { statuses: vec![TaskStatus::Completed, TaskStatus::Failed], ..Default::default() }),
        ("unpinned", TaskQuery { pinned: Some(false), ..Default::default() }),
        ("pinned", TaskQuery { pinned: Some(true), ..Default::default() }),
        (
            "completed, unpinned",
            TaskQuery { statuses: vec![TaskStatus::Completed], pinned: Some(false), ..Default::default() },
        ),
        ("search", TaskQuery { search: Some("wombat".into()), ..Default::default() }),
        (
            "search, completed",
            TaskQuery { search: Some("wombat".into()), statuses: vec![TaskStatus::Completed], ..Default::default() },
        ),
    ]
}

#[test]
fn pages_of_any_size_from_any_position_hold_every_row_exactly_once() {
    let f = fixture();
    mixed(&f.store);
    for (name, query) in queries() {
        let list = whole(&f.store, &query);
        assert!(!list.is_empty(), "{name}: the fixture has rows under it");
        for size in [1, 2, 3, 7, 30, 100] {
            let mut paged = Vec::new();
            let mut offset = 0;
            loop {
                let page = at(&f.store, &query, offset, size);
                assert!(page.len() <= size, "{name}: a page is at most its size");
                if page.is_empty() {
                    break;
                }
                offset += page.len();
                paged.extend(page);
            }
            assert_eq!(paged, list, "{name}, pages of {size}: the whole list, each row once, in order");
        }
        // Any stretch is the list's own stretch, wherever it starts; past the end there is nothing.
        for start in 0..list.len() {
            assert_eq!(at(&f.store, &query, start, 4), list[start..(start + 4).min(list.len())], "{name} at {start}");
        }
        assert!(at(&f.store, &query, list.len(), 10).is_empty(), "{name}: nothing past the end");
    }
}

#[test]
fn a_reader_that_shifts_its_positions_by_what_it_was_told_sees_every_row_once_while_tasks_come_and_go() {
    let f = fixture();
    mixed(&f.store);
    for (name, query) in queries() {
        let before = whole(&f.store, &query);
        let first = at(&f.store, &query, 0, 5);
        assert_eq!(first, before[..5], "{name}");
        // Two tasks made at the top and one of the rows read deleted, between two requests: the
        // next stretch is at 5 + 2 - 1 of the list as it is now.
        let extra: Vec<String> = (0..2)
            .map(|i| {
                let t = f.store.create_task(new_task(&format!("late-{name}-{i}"))).unwrap();
                f.store
                    .apply(
                        &t.id,
                        Update::Completed {
                            result: json!({"content": [{"type": "text", "text": "wombat"}]}),
                            server_status: None,
                        },
                    )
                    .unwrap();
                t.id
            })
            .collect();
        let now = whole(&f.store, &query);
        let came = extra.iter().filter(|id| now.contains(id)).count();
        let gone = first
            .iter()
            .find(|id| f.store.summary(id).unwrap().status.is_terminal())
            .expect("a finished task among the first rows")
            .clone();
        f.store.delete_tasks(std::slice::from_ref(&gone), PurgeReason::User).unwrap();
        let next = at(&f.store, &query, 5 + came - 1, 100);
        assert_eq!(next, before[5..], "{name}: the rest, each row once, none of the new ones");
        // And the stretch where the new ones are is the top.
        assert_eq!(at(&f.store, &query, 0, came), now[..came], "{name}");
    }
}

#[test]
fn a_position_page_is_the_page_the_keyset_cursor_gives_at_the_same_place() {
    let f = fixture();
    mixed(&f.store);
    let query = TaskQuery::default();
    let first = f.store.summaries(&query, &PageRequest { before: None, limit: Some(11) }).unwrap();
    let keyset = f.store.summaries(&query, &PageRequest { before: first.next_before.clone(), limit: Some(6) }).unwrap();
    let by_position = f.store.summaries_at(&query, 11, 6).unwrap();
    assert_eq!(by_position, keyset.items, "whole summaries, field for field");
}
