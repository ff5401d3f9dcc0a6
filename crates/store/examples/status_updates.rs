//! How many durable status updates per second the store takes: one commit per update versus
//! `apply_batch` of 100 per commit. Each update changes a status message, so each one writes the
//! task row and its event. Run with `cargo run --release -p taskdeck-store --example status_updates`.
//!
//! Numbers are for the store's own settings (WAL, `synchronous=NORMAL`): a commit reaches the OS,
//! not the platter, so they measure SQLite's per-transaction work rather than the disk's fsync.

use std::time::{Duration, Instant};

use serde_json::json;
use taskdeck_store::{Mode, NewTask, Store, TaskStatus, Update};

const TASKS: usize = 20;
const UPDATES: usize = 4_000;
const BATCH: usize = 100;

fn update(n: usize) -> Update {
    Update::Status { status: TaskStatus::Working, message: Some(format!("step {n}")), server_status: None }
}

fn setup(dir: &std::path::Path, name: &str) -> (Store, Vec<String>) {
    let store = Store::open(dir.join(name)).expect("open store");
    let ids = (0..TASKS)
        .map(|i| {
            let new = NewTask {
                server: "bench".into(),
                tool: "noop".into(),
                arguments: json!({ "i": i }),
                idempotency_key: format!("{name}-{i}"),
                mode: Mode::Task,
            };
            store.create_task(new).expect("create").id
        })
        .collect();
    (store, ids)
}

fn per_second(n: usize, took: Duration) -> f64 {
    n as f64 / took.as_secs_f64()
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");

    let (store, ids) = setup(dir.path(), "single.sqlite3");
    let start = Instant::now();
    for n in 0..UPDATES {
        store.apply(&ids[n % TASKS], update(n)).expect("apply");
    }
    let single = per_second(UPDATES, start.elapsed());

    let (store, ids) = setup(dir.path(), "batched.sqlite3");
    let start = Instant::now();
    for chunk in (0..UPDATES).collect::<Vec<_>>().chunks(BATCH) {
        let batch = chunk.iter().map(|&n| (ids[n % TASKS].clone(), update(n))).collect();
        for result in store.apply_batch(batch).expect("batch") {
            result.expect("apply");
        }
    }
    let batched = per_second(UPDATES, start.elapsed());

    println!("durable status updates ({UPDATES} updates over {TASKS} tasks, each writing row + event)");
    println!("  one commit per update:     {single:>10.0} updates/s");
    println!("  apply_batch of {BATCH}:        {batched:>10.0} updates/s");
    println!("  ratio batched/single:      {:>10.1}x", batched / single);
}
