//! How long a page at a position of a large store's list takes, the way the scrolled list asks for
//! it (`Store::summaries_at`), against the two other ways of reaching the same rows: a keyset seek
//! from an anchor found by a walk of the index alone, and the keyset pages of up to 2,000 rows
//! walked from the top that the list used before. Not part of the suite (it needs a seeded store):
//! `TASKDECK_POSITION_STORE=/copy/of/taskdeck.sqlite3 cargo test --release -p taskdeck-store --test position_speed -- --ignored --nocapture`.
//! The store is opened as it is; work on a copy.

use std::time::{Duration, Instant};

use taskdeck_store::{PageRequest, Store, TaskQuery, TaskStatus};

const ROWS: usize = 200;

fn best_of(n: usize, mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut got = 0;
    for _ in 0..n {
        let t0 = Instant::now();
        got = f();
        best = best.min(t0.elapsed());
    }
    (best, got)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[test]
#[ignore = "needs a seeded store named by TASKDECK_POSITION_STORE"]
fn a_page_at_any_position_of_a_large_store_is_timed() {
    let Ok(path) = std::env::var("TASKDECK_POSITION_STORE") else { return };
    let store = Store::open(&path).expect("the store opens");
    let total = store.counts(&TaskQuery::default()).expect("counts").total as usize;
    println!("{total} tasks");
    let raw = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("raw");
    let queries = [
        ("all", TaskQuery::default()),
        ("completed", TaskQuery { statuses: vec![TaskStatus::Completed], ..Default::default() }),
        ("unpinned", TaskQuery { pinned: Some(false), ..Default::default() }),
        (
            "completed, unpinned",
            TaskQuery { statuses: vec![TaskStatus::Completed], pinned: Some(false), ..Default::default() },
        ),
        ("search 'latency'", TaskQuery { search: Some("latency".into()), ..Default::default() }),
    ];
    for (name, query) in &queries {
        for at in [0, 1_000, 10_000, 50_000, total.saturating_sub(ROWS)] {
            let (d, n) = best_of(3, || store.summaries_at(query, at, ROWS).expect("page").len());
            println!("{name:>20} @ {at:>6}: offset {:7.2} ms ({n} rows)", ms(d));
        }
    }
    // The same stretches of the whole list, by an anchor found in the index alone, then a keyset
    // page from it; and by keyset pages from the top.
    for at in [0, 1_000, 10_000, 50_000, total.saturating_sub(ROWS)] {
        let (anchor, _) = best_of(3, || {
            let (c, r): (String, i64) = raw
                .query_row(
                    "SELECT created_at, rowid FROM tasks INDEXED BY tasks_by_created ORDER BY created_at DESC, rowid DESC LIMIT 1 OFFSET ?1",
                    [at as i64],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .expect("anchor");
            let mut st = raw
                .prepare_cached(
                    "SELECT id, status, status_message FROM tasks WHERE created_at <= ?1 AND (created_at < ?1 OR rowid <= ?2) \
                     ORDER BY created_at DESC, rowid DESC LIMIT ?3",
                )
                .expect("page");
            st.query_map(rusqlite::params![c, r, ROWS as i64], |_| Ok(())).expect("rows").count()
        });
        let (walk, _) = best_of(1, || {
            let mut before = None;
            let mut seen = 0;
            while seen < at + ROWS {
                let limit = (at + ROWS - seen).min(2000);
                let page = store
                    .summaries(&TaskQuery::default(), &PageRequest { before: before.clone(), limit: Some(limit) })
                    .expect("page");
                seen += page.items.len();
                match page.next_before {
                    Some(b) => before = Some(b),
                    None => break,
                }
            }
            seen
        });
        println!(
            "{:>20} @ {at:>6}: anchor+keyset {:7.2} ms, keyset walk from the top {:8.2} ms",
            "all",
            ms(anchor),
            ms(walk)
        );
    }
}
