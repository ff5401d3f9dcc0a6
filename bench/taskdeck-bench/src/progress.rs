//! Durable progress: one commit per update against the engine's way of writing it, which keeps the
//! latest value per task in memory and writes all of them in one `apply_batch` per flush interval.
//!
//! The engine's `Live.progress` map and its flush loop are private, so this reproduces them with the
//! same data structure, the same store call and the engine's own default interval. Each offered
//! update is first parsed from a `notifications/progress` line, as the session reader does, so the
//! producer is not unrealistically cheap.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_engine::EngineOptions;
use taskdeck_store::{Mode, NewTask, Progress, Store, Update};

use crate::stats;

pub struct Args {
    pub tasks: usize,
    /// Updates for the commit-per-update and plain batch runs.
    pub updates_single: usize,
    /// Updates offered to the engine path.
    pub updates_engine: usize,
}

fn setup(dir: &std::path::Path, name: &str, tasks: usize) -> Result<(Store, Vec<String>), String> {
    let store = Store::open(dir.join(name)).map_err(|e| e.to_string())?;
    let ids = (0..tasks)
        .map(|i| {
            let new = NewTask {
                server: "bench".into(),
                tool: "count".into(),
                arguments: json!({ "i": i }),
                idempotency_key: format!("{name}-{i}"),
                mode: Mode::Task,
            };
            store.create_task(new).map(|r| r.id).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    Ok((store, ids))
}

fn progress(n: usize) -> Update {
    Update::Progress(Progress { progress: n as f64, total: None, message: Some(format!("step {n}")) })
}

/// The line a server sends for one step, as the session reader receives it.
fn notification_line(token: &str, n: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"{token}","progress":{n},"message":"step {n}"}}}}"#
    )
}

/// What the session reader and `on_session_event` do per notification, minus the routing.
fn parse(line: &str) -> Option<(String, Progress)> {
    let v: Value = serde_json::from_str(line).ok()?;
    let p = v.get("params")?;
    Some((
        p.get("progressToken")?.as_str()?.to_owned(),
        Progress {
            progress: p.get("progress")?.as_f64()?,
            total: p.get("total").and_then(Value::as_f64),
            message: p.get("message").and_then(Value::as_str).map(str::to_owned),
        },
    ))
}

fn single(dir: &std::path::Path, a: &Args) -> Result<Value, String> {
    let (store, ids) = setup(dir, "single.sqlite3", a.tasks)?;
    let start = Instant::now();
    for n in 0..a.updates_single {
        store.apply(&ids[n % ids.len()], progress(n)).map_err(|e| e.to_string())?;
    }
    let took = start.elapsed();
    Ok(
        json!({"updates": a.updates_single, "commits": a.updates_single, "updates_per_s": stats::per_second(a.updates_single, took)}),
    )
}

/// Every update written, `tasks` of them per transaction: batching alone, without coalescing.
fn batched(dir: &std::path::Path, a: &Args) -> Result<Value, String> {
    let (store, ids) = setup(dir, "batched.sqlite3", a.tasks)?;
    let start = Instant::now();
    let mut commits = 0;
    for chunk in (0..a.updates_single).collect::<Vec<_>>().chunks(ids.len()) {
        let batch = chunk.iter().map(|&n| (ids[n % ids.len()].clone(), progress(n))).collect();
        for r in store.apply_batch(batch).map_err(|e| e.to_string())? {
            r.map_err(|e| e.to_string())?;
        }
        commits += 1;
    }
    let took = start.elapsed();
    Ok(json!({"updates": a.updates_single, "batch": ids.len(), "commits": commits,
              "updates_per_s": stats::per_second(a.updates_single, took)}))
}

fn engine_path(dir: &std::path::Path, a: &Args) -> Result<Value, String> {
    let (store, ids) = setup(dir, "engine.sqlite3", a.tasks)?;
    let interval = EngineOptions::default().progress_flush;
    let live: Arc<Mutex<HashMap<String, Progress>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));

    let flusher = {
        let (live, stop, store) = (live.clone(), stop.clone(), store.clone());
        std::thread::spawn(move || -> Result<(usize, usize, Duration), String> {
            let (mut commits, mut rows, mut slowest) = (0, 0, Duration::ZERO);
            loop {
                let done = stop.load(Ordering::Acquire);
                let pending: Vec<(String, Progress)> = live.lock().unwrap_or_else(|p| p.into_inner()).drain().collect();
                if !pending.is_empty() {
                    let t0 = Instant::now();
                    rows += pending.len();
                    let updates = pending.into_iter().map(|(id, p)| (id, Update::Progress(p))).collect();
                    for r in store.apply_batch(updates).map_err(|e| e.to_string())? {
                        r.map_err(|e| e.to_string())?;
                    }
                    commits += 1;
                    slowest = slowest.max(t0.elapsed());
                }
                if done {
                    return Ok((commits, rows, slowest));
                }
                std::thread::sleep(interval);
            }
        })
    };

    let start = Instant::now();
    for n in 0..a.updates_engine {
        let line = notification_line(&ids[n % ids.len()], n);
        let Some((token, p)) = parse(&line) else { return Err(format!("unparsable line {line}")) };
        live.lock().unwrap_or_else(|p| p.into_inner()).insert(token, p);
    }
    let offered = start.elapsed();
    stop.store(true, Ordering::Release);
    let (commits, rows, slowest) = flusher.join().map_err(|_| "flusher panicked".to_string())??;
    // Durable means the last value of every task is on disk: the clock stops after the final flush.
    let took = start.elapsed();

    let last = a.updates_engine - 1;
    let check = store.get(&ids[last % ids.len()]).map_err(|e| e.to_string())?;
    if check.progress.map(|p| p.progress) != Some(last as f64) {
        return Err("the engine path lost the last update".into());
    }
    Ok(json!({
        "updates": a.updates_engine, "tasks": ids.len(), "flush_interval_ms": interval.as_millis() as u64,
        "commits": commits, "rows_written": rows,
        "offer_s": offered.as_secs_f64(), "elapsed_s": took.as_secs_f64(),
        "updates_per_s": stats::per_second(a.updates_engine, took),
        "rows_per_s": stats::per_second(rows, took),
        "slowest_flush_ms": slowest.as_secs_f64() * 1000.0,
    }))
}

pub fn run(a: Args) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let single = single(dir.path(), &a)?;
    let batched = batched(dir.path(), &a)?;
    let engine = engine_path(dir.path(), &a)?;
    let rate = |v: &Value| v["updates_per_s"].as_f64().unwrap_or(0.0);
    let ratio = |x: f64, y: f64| if y > 0.0 { (x / y * 100.0).round() / 100.0 } else { 0.0 };
    Ok(json!({
        "commit_per_update": single,
        "batched_every_update": batched,
        "engine_path": engine,
        "ratio_batched_vs_single": ratio(rate(&batched), rate(&single)),
        "ratio_engine_vs_single": ratio(rate(&engine), rate(&single)),
    }))
}
