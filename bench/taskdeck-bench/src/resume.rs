//! Resume after a restart, at 10,000 and 20,000 unfinished tasks, in two shapes:
//!
//! - `call`: plain calls left running. `Engine::resume` can only fail them as interrupted, one
//!   store transaction each, with no server involved: pure store and engine work.
//! - `task`: tasks with a remote id on the configured server. `resume()` reads them, registers
//!   them and starts a driver per task, then returns; each driver then re-attaches with
//!   `tasks/get`. The server here was started with an empty state directory, so it answers every
//!   re-attach with "unknown task" and the driver records that: the full round trip per task
//!   without the server having to hold 20,000 live workers.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_engine::config::{Config, Paths};
use taskdeck_engine::{Engine, EngineOptions};
use taskdeck_store::{Era, Mode, NewTask, Store};

pub struct Args {
    pub config: PathBuf,
    pub server: String,
    pub sizes: Vec<usize>,
}

fn fill(data_dir: &Path, server: &str, n: usize, mode: Mode) -> Result<(), String> {
    let store = Store::open(data_dir.join(taskdeck_engine::config::STORE_FILE)).map_err(|e| e.to_string())?;
    for i in 0..n {
        let rec = store
            .create_task(NewTask {
                server: server.into(),
                tool: "count".into(),
                arguments: json!({"n": 1, "delay_ms": 0}),
                idempotency_key: format!("resume-{i}"),
                mode,
            })
            .map_err(|e| e.to_string())?;
        if mode == Mode::Task {
            store
                .set_remote(&rec.id, Era::Modern, Some(&format!("gone-{i}")), None, Some(250))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Counted on a connection of its own so watching does not queue behind the engine's writes.
fn live_count(db: &Path) -> Result<i64, String> {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| e.to_string())?;
    conn.query_row("SELECT count(*) FROM tasks WHERE status IN ('working', 'input_required')", [], |r| r.get(0))
        .map_err(|e| e.to_string())
}

/// How the tasks ended, by error reason: shows that `task` really went through re-attachment.
fn reasons(db: &Path) -> Result<Value, String> {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| e.to_string())?;
    let mut st = conn
        .prepare("SELECT status || ':' || coalesce(error_reason, '-'), count(*) FROM tasks GROUP BY 1 ORDER BY 1")
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .map_err(|e| e.to_string())?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(rows.into_iter().map(|(k, n)| (k, json!(n))).collect::<serde_json::Map<_, _>>().into())
}

async fn one(a: &Args, n: usize, mode: Mode) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let paths = Paths { config: a.config.clone(), data_dir: dir.path().to_owned() };
    let fill_dir = paths.data_dir.clone();
    let (server, fill_mode) = (a.server.clone(), mode);
    tokio::task::spawn_blocking(move || fill(&fill_dir, &server, n, fill_mode)).await.map_err(|e| e.to_string())??;

    let t0 = Instant::now();
    let engine = Engine::open(paths.clone(), EngineOptions::default()).await.map_err(|e| e.to_string())?;
    let opened = t0.elapsed();
    let t1 = Instant::now();
    let resumed = engine.resume().await.map_err(|e| e.to_string())?;
    let resume_returned = t1.elapsed();
    if resumed.len() != n {
        return Err(format!("resume returned {} of {n} tasks", resumed.len()));
    }

    // For `call` nothing is left by now; for `task` the drivers are still at work.
    let db = paths.store_file();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut left = live_count(&db)?;
    while left > 0 {
        if Instant::now() > deadline {
            return Err(format!("{left} of {n} tasks still unsettled after 300 s"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = live_count(&db)?;
    }
    let settled = t1.elapsed();
    engine.shutdown().await;

    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    Ok(json!({
        "shape": if mode == Mode::Call { "call" } else { "task" },
        "tasks": n,
        "open_ms": ms(opened),
        "resume_returned_ms": ms(resume_returned),
        "all_settled_ms": ms(settled),
        "us_per_task_settled": (settled.as_secs_f64() * 1e6 / n as f64).round(),
        "outcomes": reasons(&db)?,
    }))
}

pub async fn run(a: Args) -> Result<Value, String> {
    // Fail early on a config without the server, rather than after filling 20,000 tasks.
    let probe = Paths { config: a.config.clone(), data_dir: std::env::temp_dir() };
    let config = Config::load(&probe).map_err(|e| e.to_string())?;
    if !config.servers.iter().any(|s| s.name == a.server) {
        return Err(format!("{}: no server {:?}", a.config.display(), a.server));
    }
    let mut runs = Vec::new();
    for &n in &a.sizes {
        for mode in [Mode::Call, Mode::Task] {
            runs.push(one(&a, n, mode).await?);
        }
    }
    Ok(json!({ "runs": runs }))
}
