//! A store of finished tasks for the history benchmarks (`make bench-app` with
//! `BENCH_APP_HISTORY=1`): written through the store's own API, so the search index, the events
//! and the file are what the engine would leave, without running every lifecycle against a server.
//!
//! Realistic sizes: every result a report of a few KB (words from a small vocabulary, so a search
//! for one of them finds many tasks, and a word of its own, `tagN`, which finds one), and every
//! `large_every`-th one about 1 MB.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{Value, json};
use taskdeck_store::{Mode, NewTask, Store, Update};

pub struct Args {
    pub data_dir: PathBuf,
    pub tasks: usize,
    pub large_every: usize,
}

const WORDS: [&str; 24] = [
    "latency",
    "checkout",
    "payments",
    "quarterly",
    "review",
    "incident",
    "database",
    "cache",
    "deploy",
    "rollback",
    "region",
    "traffic",
    "budget",
    "forecast",
    "invoice",
    "customer",
    "search",
    "index",
    "report",
    "summary",
    "capacity",
    "storage",
    "network",
    "failover",
];
const TOOLS: [&str; 4] = ["generate_report", "count", "diagnose_incident", "flaky_export"];
/// Completions written per transaction.
const CHUNK: usize = 500;

fn report(i: usize, bytes: usize) -> String {
    let mut text = format!("# Report {i}: tag{i}\n\n");
    let mut k = i;
    while text.len() < bytes {
        k = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        text.push_str(WORDS[(k >> 33) % WORDS.len()]);
        text.push(if (k >> 20).is_multiple_of(12) { '\n' } else { ' ' });
    }
    text
}

pub fn run(a: Args) -> Result<Value, String> {
    std::fs::create_dir_all(&a.data_dir).map_err(|e| format!("{}: {e}", a.data_dir.display()))?;
    let path = a.data_dir.join(taskdeck_engine::config::STORE_FILE);
    let store = Store::open(&path).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut pending: Vec<(String, Update)> = Vec::with_capacity(CHUNK);
    let mut large = 0;
    for i in 0..a.tasks {
        let tool = TOOLS[i % TOOLS.len()];
        let rec = store
            .create_task(NewTask {
                server: if i % 10 == 0 { "remote".into() } else { "demo".into() },
                tool: tool.into(),
                arguments: json!({"topic": format!("{} {}", WORDS[i % WORDS.len()], WORDS[(i / 7) % WORDS.len()]), "n": i}),
                idempotency_key: format!("history-{i}"),
                mode: Mode::Task,
            })
            .map_err(|e| e.to_string())?;
        let bytes = if a.large_every > 0 && i % a.large_every == a.large_every - 1 {
            large += 1;
            1 << 20
        } else {
            2048 + (i % 5) * 1024
        };
        let text = report(i, bytes);
        pending.push((
            rec.id,
            Update::Completed {
                result: json!({"content": [{"type": "text", "text": text}], "structuredContent": {"tag": format!("tag{i}")}}),
                server_status: None,
            },
        ));
        if pending.len() == CHUNK {
            for r in store.apply_batch(std::mem::take(&mut pending)).map_err(|e| e.to_string())? {
                r.map_err(|e| e.to_string())?;
            }
        }
    }
    for r in store.apply_batch(pending).map_err(|e| e.to_string())? {
        r.map_err(|e| e.to_string())?;
    }
    let _ = store.space(false);
    Ok(json!({
        "tasks": a.tasks,
        "large_results": large,
        "seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        "store_bytes": std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
    }))
}
