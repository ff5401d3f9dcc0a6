//! A search's pages are the same whichever way the store joins the index: for a word in a few
//! tasks, a word in most of them, and one in every task, under each filter, the pinned segment,
//! and page after page through the cursor, they are the tasks without the search narrowed to those
//! holding the word, in the same order. Enough tasks that a common word is past the size at which
//! the store stops reading every match.

mod common;

use common::*;
use serde_json::json;
use taskdeck_store::{NewTask, PageRequest, StatusCounts, Store, TaskQuery, TaskStatus, TaskSummary, Update};

const TASKS: usize = 2600;

struct Seeded {
    /// Each task's id and the words its arguments hold, in creation order.
    tasks: Vec<(String, String)>,
}

fn seed(store: &Store) -> Seeded {
    let mut tasks = Vec::with_capacity(TASKS);
    for i in 0..TASKS {
        let mut words = vec!["common".to_owned(), format!("tag{i}")];
        if i % 2 == 0 {
            words.push("even".into());
        }
        if i % 9 != 0 {
            words.push("most".into());
        }
        let words = words.join(" ");
        let t = store
            .create_task(NewTask {
                server: if i % 3 == 0 { "b" } else { "a" }.into(),
                tool: "slow_count".into(),
                arguments: json!({ "note": words }),
                idempotency_key: format!("k{i}"),
                mode: taskdeck_store::Mode::Task,
            })
            .unwrap();
        if i % 5 == 0 {
            store.apply(&t.id, Update::Completed { result: json!({"content": []}), server_status: None }).unwrap();
        }
        if i % 11 == 1 && i % 5 != 0 {
            let asked = Update::Question { question: Box::new(question(&format!("q{i}"))), message: None };
            store.apply(&t.id, asked).unwrap();
        }
        if i % 7 == 0 {
            store.set_pinned(&t.id, true).unwrap();
        }
        tasks.push((t.id, words));
    }
    Seeded { tasks }
}

/// Every page of the query, 50 at a time through the cursor, joined.
fn paged(store: &Store, query: &TaskQuery) -> Vec<String> {
    let mut out = Vec::new();
    let mut before = None;
    loop {
        let p = store.summaries(query, &PageRequest { before: before.clone(), limit: Some(50) }).unwrap();
        out.extend(p.items.iter().map(|s| s.id.clone()));
        match p.next_before {
            Some(next) => before = Some(next),
            None => return out,
        }
    }
}

/// The tasks the query means, found by hand: every task newest first (the list with no filter,
/// which is creation order reversed here), narrowed in Rust by the query's filters and `word`.
fn expected(store: &Store, seeded: &Seeded, query: &TaskQuery, word: &str) -> Vec<TaskSummary> {
    let all = store.summaries(&TaskQuery::default(), &PageRequest::default()).unwrap().items;
    let newest_first: Vec<&String> = seeded.tasks.iter().rev().map(|(id, _)| id).collect();
    assert_eq!(all.iter().map(|s| &s.id).collect::<Vec<_>>(), newest_first);
    all.into_iter()
        .filter(|s| query.statuses.is_empty() || query.statuses.contains(&s.status))
        .filter(|s| query.server.as_ref().is_none_or(|x| *x == s.server))
        .filter(|s| query.pinned.is_none_or(|p| p == s.pinned))
        .filter(|s| !query.waiting || (s.status == TaskStatus::InputRequired && s.question.is_some()))
        .filter(|s| {
            let words = &seeded.tasks.iter().find(|(id, _)| *id == s.id).unwrap().1;
            words.split(' ').any(|w| w == word)
        })
        .collect()
}

fn counted(tasks: &[TaskSummary]) -> StatusCounts {
    let mut c = StatusCounts { total: tasks.len() as u64, ..Default::default() };
    for t in tasks {
        match t.status {
            TaskStatus::Working => c.working += 1,
            TaskStatus::InputRequired => {
                c.input_required += 1;
                c.waiting += u64::from(t.question.is_some());
            }
            TaskStatus::Completed => c.completed += 1,
            TaskStatus::Failed => c.failed += 1,
            TaskStatus::Cancelled => c.cancelled += 1,
        }
    }
    c
}

#[test]
fn a_search_pages_as_the_list_does_for_rare_common_and_universal_words_under_every_filter() {
    let f = fixture();
    let seeded = seed(&f.store);
    let filters = [
        TaskQuery::default(),
        TaskQuery { server: Some("b".into()), ..Default::default() },
        TaskQuery { server: Some("a".into()), ..Default::default() },
        TaskQuery { pinned: Some(true), ..Default::default() },
        TaskQuery { waiting: true, ..Default::default() },
        TaskQuery { statuses: vec![TaskStatus::Completed], pinned: Some(true), ..Default::default() },
        TaskQuery { server: Some("b".into()), pinned: Some(true), ..Default::default() },
        TaskQuery { waiting: true, pinned: Some(false), ..Default::default() },
        TaskQuery { statuses: vec![TaskStatus::InputRequired], server: Some("a".into()), ..Default::default() },
        TaskQuery { pinned: Some(false), ..Default::default() },
        TaskQuery { statuses: vec![TaskStatus::Completed], ..Default::default() },
        TaskQuery { statuses: vec![TaskStatus::Working], pinned: Some(false), ..Default::default() },
        TaskQuery { statuses: vec![TaskStatus::Working, TaskStatus::Completed], ..Default::default() },
        TaskQuery {
            statuses: vec![TaskStatus::Working, TaskStatus::InputRequired],
            server: Some("a".into()),
            pinned: Some(false),
            ..Default::default()
        },
    ];
    for word in ["common", "most", "even", "tag1234", "tag0"] {
        for filter in &filters {
            let query = TaskQuery { search: Some(word.to_owned()), ..filter.clone() };
            let want: Vec<String> = expected(&f.store, &seeded, &query, word).into_iter().map(|s| s.id).collect();
            assert_eq!(paged(&f.store, &query), want, "{word} under {filter:?}");
            let whole = f.store.summaries(&query, &PageRequest::default()).unwrap();
            assert_eq!(whole.items.iter().map(|s| s.id.clone()).collect::<Vec<_>>(), want, "all of {word}");
            let every = expected(&f.store, &seeded, &TaskQuery { statuses: Vec::new(), ..query.clone() }, word);
            assert_eq!(f.store.counts(&query).unwrap(), counted(&every), "counts of {word} under {filter:?}");
        }
    }
    // The common word really is in more tasks than a page reads whole, and in every one; some wait.
    let c = f.store.counts(&TaskQuery { search: Some("most".into()), ..Default::default() }).unwrap();
    assert!(c.waiting > 0 && c.completed > 0 && c.working > 0, "{c:?}");
    assert_eq!(paged(&f.store, &TaskQuery { search: Some("common".into()), ..Default::default() }).len(), TASKS);
}

#[test]
fn a_task_whose_words_change_moves_in_and_out_of_a_common_words_pages() {
    let f = fixture();
    let seeded = seed(&f.store);
    let (id, _) = &seeded.tasks[TASKS - 1];
    // Its result now holds the odd tasks' missing word: it joins "even" however that is read.
    f.store
        .apply(
            id,
            Update::Completed { result: json!({"content": [{"type": "text", "text": "even"}]}), server_status: None },
        )
        .unwrap();
    let query = TaskQuery { search: Some("even".into()), ..Default::default() };
    assert!(paged(&f.store, &query).contains(id));
    let query = TaskQuery { search: Some("common even".into()), pinned: Some(false), ..Default::default() };
    let pages = paged(&f.store, &query);
    assert!(pages.contains(id));
    assert_eq!(pages.len(), TASKS / 2 - (0..TASKS).filter(|i| i % 2 == 0 && i % 7 == 0).count() + 1);
}
