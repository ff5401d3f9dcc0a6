//! How long a search takes over a large store, as the app asks it: the pinned tasks' page, then the
//! others' page, and the counts per status. Not part of the suite (it needs a seeded store):
//! `TASKDECK_SEARCH_STORE=/copy/of/store.sqlite3 cargo test --release -p taskdeck-store --test search_speed -- --ignored --nocapture`.
//! The store is opened as it is; work on a copy.

use std::time::{Duration, Instant};

use taskdeck_store::{PageRequest, Store, TaskQuery};

fn pct(sorted: &[Duration], p: usize) -> f64 {
    let i = (sorted.len().saturating_sub(1) * p).div_ceil(100);
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:>10}: p50 {:7.2} ms  p95 {:7.2} ms  max {:7.2} ms",
        pct(&times, 50),
        pct(&times, 95),
        pct(&times, 100)
    );
}

#[test]
#[ignore = "needs a seeded store named by TASKDECK_SEARCH_STORE"]
fn search_over_a_large_store_is_timed_page_by_page() {
    let Ok(path) = std::env::var("TASKDECK_SEARCH_STORE") else { return };
    let store = Store::open(path).expect("the store opens");
    let total = store.counts(&TaskQuery::default()).expect("counts").total;
    let words = ["latency", "checkout", "payments", "forecast", "failover"];
    let n = 40;
    let queries: Vec<String> = (0..n)
        .map(|i| {
            if i % 2 == 1 {
                format!("tag{}", (i * 7919) % total.max(1) as usize)
            } else {
                words[i % words.len()].to_owned()
            }
        })
        .collect();
    let (mut pages, mut counts, mut dense, mut sparse) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let tab: Vec<taskdeck_store::TaskStatus> = match std::env::var("TASKDECK_SEARCH_TAB").as_deref() {
        Ok("completed") => vec![taskdeck_store::TaskStatus::Completed],
        Ok("active") => vec![taskdeck_store::TaskStatus::Working, taskdeck_store::TaskStatus::InputRequired],
        _ => Vec::new(),
    };
    println!("tab {tab:?}");
    for (i, q) in queries.iter().enumerate() {
        let query = TaskQuery { search: Some(q.clone()), statuses: tab.clone(), ..Default::default() };
        let t0 = Instant::now();
        let pinned = store
            .summaries(
                &TaskQuery { pinned: Some(true), ..query.clone() },
                &PageRequest { before: None, limit: Some(50) },
            )
            .expect("pinned page");
        let rest = store
            .summaries(
                &TaskQuery { pinned: Some(false), ..query.clone() },
                &PageRequest { before: None, limit: Some(50 - pinned.items.len().min(49)) },
            )
            .expect("page");
        let paged = t0.elapsed();
        let t1 = Instant::now();
        let c = store.counts(&query).expect("counts");
        let counted = t1.elapsed();
        if i < 10 {
            println!(
                "{q}: {} pinned, {} more, {} in all; page {paged:?} counts {counted:?}",
                pinned.items.len(),
                rest.items.len(),
                c.total
            );
        }
        if i == 0 {
            // What the snippets of a page's rows read: each whole record.
            let t2 = Instant::now();
            for t in &rest.items {
                store.get(&t.id).expect("record");
            }
            println!("{} records for snippets: {:?}", rest.items.len(), t2.elapsed());
        }
        pages.push(paged);
        counts.push(counted);
        if i % 2 == 1 { sparse.push(paged + counted) } else { dense.push(paged + counted) }
    }
    println!("{total} tasks, {n} searches");
    report("page", pages);
    report("counts", counts);
    report("dense", dense);
    report("sparse", sparse);
}

#[test]
#[ignore = "needs a seeded store named by TASKDECK_SEARCH_STORE"]
fn parts_of_a_count_are_timed() {
    let Ok(path) = std::env::var("TASKDECK_SEARCH_STORE") else { return };
    let conn = rusqlite::Connection::open(path).unwrap();
    for sql in [
        "SELECT count(*) FROM task_search WHERE task_search MATCH '\"latency\"'",
        "SELECT count(*) FROM task_search_rows",
        "SELECT count(*) FROM tasks",
        "SELECT t.status, count(*) FROM tasks AS t WHERE 1 GROUP BY t.status",
        "SELECT count(*) FROM task_search_rows AS r WHERE r.row NOT IN (SELECT rowid FROM task_search WHERE task_search MATCH '\"latency\"')",
        "EXPLAIN QUERY PLAN SELECT t.id FROM tasks AS t WHERE +t.pinned = 0 AND EXISTS (SELECT 1 FROM task_search WHERE task_search MATCH '\"latency\"' AND task_search.rowid = (SELECT r.row FROM task_search_rows AS r WHERE r.task_id = t.id)) ORDER BY t.created_at DESC, t.rowid DESC LIMIT 51",
        "EXPLAIN QUERY PLAN SELECT t.id FROM task_search CROSS JOIN task_search_rows AS r ON r.row = task_search.rowid CROSS JOIN tasks AS t ON t.id = r.task_id WHERE t.pinned = 0 AND task_search MATCH '\"tag1\"' ORDER BY t.created_at DESC, t.rowid DESC LIMIT 51",
    ] {
        if sql.starts_with("EXPLAIN") {
            let mut st = conn.prepare(sql).unwrap();
            let rows: Vec<String> = st.query_map([], |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect();
            println!("{sql}\n  {}", rows.join("\n  "));
            continue;
        }
        for _ in 0..3 {
            let t0 = Instant::now();
            let n: i64 = conn.query_row(sql, [], |r| r.get(1).or_else(|_| r.get(0))).unwrap();
            println!("{:8.2} ms  {n}  {sql}", t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
}
