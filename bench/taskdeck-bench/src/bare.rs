//! The store-less baseline: the same client library the engine uses, on one session, with nothing
//! written anywhere. Whatever the engine costs beyond this is its store, its drivers and its events.
//!
//! With `--durable`, the same client also makes the commits Taskdeck's contract asks for and
//! nothing more: a call on disk before it is sent, a task's handle the moment it is known, the
//! outcome before it is reported, in one bare SQLite table with the store's pragmas. That is the
//! floor any durable host pays; the engine's distance to it is what its own design costs.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use serde_json::{Value, json};
use taskdeck_client::{
    Endpoint, Session, SessionEvent, SessionHandler, SessionOptions, StartOptions, Started, TaskSnapshot,
};
use taskdeck_protocol::Era;
use taskdeck_protocol::types::CallToolResult;
use taskdeck_store::TaskStatus;

use crate::stats;

pub struct Args {
    pub server: Endpoint,
    pub tool: String,
    pub arguments: Value,
    pub tasks: usize,
    pub concurrency: usize,
    /// Pins the era, as a config entry's `"era"` does for the engine; detected when `None`.
    pub era: Option<Era>,
    /// A directory for the durable floor's table; nothing is written when `None`.
    pub durable: Option<std::path::PathBuf>,
}

/// The contract's commits and nothing else: no indexes, events, search rows or publishes.
struct Floor(Mutex<Connection>);

impl Floor {
    fn open(dir: &Path) -> Result<Self, String> {
        let conn = Connection::open(dir.join("floor.sqlite3")).map_err(|e| e.to_string())?;
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| e.to_string())?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS calls (n INTEGER PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL,
             remote TEXT, status TEXT NOT NULL, result TEXT)",
        )
        .map_err(|e| e.to_string())?;
        Ok(Floor(Mutex::new(conn)))
    }

    /// One autocommit statement: one transaction, as each of the engine's writes is. Run in place
    /// on the runtime's thread, which is cheaper than the engine's hop to its store thread, so
    /// the floor stays a floor.
    fn write(&self, sql: &str, p: impl rusqlite::Params) -> bool {
        tokio::task::block_in_place(|| {
            let conn = match self.0.lock() {
                Ok(c) => c,
                Err(poisoned) => poisoned.into_inner(),
            };
            conn.execute(sql, p).is_ok()
        })
    }

    fn created(&self, n: usize, tool: &str, arguments: &Value) -> bool {
        self.write(
            "INSERT INTO calls (n, tool, arguments, status) VALUES (?1, ?2, ?3, 'working')",
            params![n as i64, tool, arguments.to_string()],
        )
    }

    fn handle(&self, n: usize, remote: &str) -> bool {
        self.write("UPDATE calls SET remote = ?2 WHERE n = ?1", params![n as i64, remote])
    }

    fn ended(&self, n: usize, ok: bool, result: &str) -> bool {
        let status = if ok { "completed" } else { "failed" };
        self.write("UPDATE calls SET status = ?2, result = ?3 WHERE n = ?1", params![n as i64, status, result])
    }
}

/// The server's suggested interval, with the same fallback the engine uses when it gives none.
fn poll_interval(s: &TaskSnapshot) -> Duration {
    Duration::from_millis(s.poll_interval_ms.filter(|m| *m > 0).unwrap_or(1000) as u64)
}

/// Counts the progress notifications that arrive, which is all a store-less client does with them;
/// the count shows the server really sent them.
#[derive(Default)]
struct CountProgress(AtomicUsize);

impl SessionHandler for CountProgress {
    fn on_event(&self, event: SessionEvent) {
        if let SessionEvent::Progress { .. } = event {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One lifecycle by the same means the engine uses: a legacy server's `tasks/result` blocks until
/// the end; otherwise `tasks/get` at the server's interval until terminal. Returns whether it
/// ended well.
async fn lifecycle(
    session: &Session,
    tool: &str,
    arguments: &Value,
    n: usize,
    plain: &AtomicUsize,
    floor: Option<&Floor>,
) -> bool {
    if let Some(f) = floor {
        if !f.created(n, tool, arguments) {
            return false;
        }
        let (ok, result) = run_one(session, tool, arguments, n, plain, Some(f)).await;
        return f.ended(n, ok, &result) && ok;
    }
    run_one(session, tool, arguments, n, plain, None).await.0
}

/// The lifecycle itself; with the outcome's text, which the durable floor stores.
async fn run_one(
    session: &Session,
    tool: &str,
    arguments: &Value,
    n: usize,
    plain: &AtomicUsize,
    floor: Option<&Floor>,
) -> (bool, String) {
    let text = |r: &CallToolResult| serde_json::to_string(r).unwrap_or_default();
    // Progress is asked for as the engine asks for it (a token per call), so the server does the
    // same work for both and the difference is the engine's own.
    let opts = StartOptions { progress_token: Some(format!("bare-{n}")), ttl_ms: None };
    let handle = match session.start_tool(tool, arguments.clone(), &opts).await {
        Ok(Started::Task(h)) => h,
        Ok(Started::Completed(r)) => {
            plain.fetch_add(1, Ordering::Relaxed);
            return (!r.is_error(), text(&r));
        }
        // A benchmark has nobody to answer a server's questions.
        Ok(Started::InputRequired(_)) => return (false, "the server asked a question".into()),
        Err(e) => return (false, e.to_string()),
    };
    if let Some(f) = floor
        && !f.handle(n, &handle.task_id)
    {
        return (false, "the handle was not stored".into());
    }
    let ended = |r: Result<CallToolResult, taskdeck_client::ClientError>| match r {
        Ok(r) => (!r.is_error(), text(&r)),
        Err(e) => (false, e.to_string()),
    };
    if session.era() == Era::Legacy {
        return ended(session.task_result(&handle.task_id).await);
    }
    let mut every = poll_interval(&handle);
    loop {
        tokio::time::sleep(every).await;
        let s = match session.get_task(&handle.task_id).await {
            Ok(s) => s,
            Err(e) => return (false, e.to_string()),
        };
        if s.status.is_terminal() {
            if s.status != TaskStatus::Completed {
                return (false, format!("{:?}", s.status));
            }
            // A legacy server keeps the result behind tasks/result, which no longer blocks now.
            return match &s.result {
                Some(r) => (!r.is_error(), text(r)),
                None => ended(session.task_result(&handle.task_id).await),
            };
        }
        every = poll_interval(&s);
    }
}

pub async fn run(args: Args) -> Result<Value, String> {
    let opts = SessionOptions { force_era: args.era, ..Default::default() };
    let progress = Arc::new(CountProgress::default());
    let session = Session::open(&args.server, opts, progress.clone())
        .await
        .map_err(|e| format!("connecting to {}: {e}", args.server.name()))?;
    // Listing once up front keeps the tool lookup out of the first timed calls, as the engine's
    // server is also connected and listed before its clock starts.
    session.tool(&args.tool).await.map_err(|e| e.to_string())?;
    let era = format!("{:?}", session.era()).to_lowercase();
    let floor = match &args.durable {
        Some(dir) => Some(Arc::new(Floor::open(dir)?)),
        None => None,
    };

    let next = Arc::new(AtomicUsize::new(0));
    // Calls the server answered with the result itself: for a tool that never runs as a task,
    // every one, and then a lifecycle is one round trip.
    let plain = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            let (session, next, plain, tool, arguments, floor) = (
                session.clone(),
                next.clone(),
                plain.clone(),
                args.tool.clone(),
                args.arguments.clone(),
                floor.clone(),
            );
            let total = args.tasks;
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        break;
                    }
                    let t0 = Instant::now();
                    let ok = lifecycle(&session, &tool, &arguments, n, &plain, floor.as_deref()).await;
                    mine.push((t0.elapsed(), ok));
                }
                mine
            })
        })
        .collect();
    let mut results = Vec::with_capacity(args.tasks);
    for w in workers {
        results.extend(w.await.map_err(|e| e.to_string())?);
    }
    let took = start.elapsed();
    session.shutdown(Duration::from_secs(2)).await;

    let latencies: Vec<Duration> = results.iter().map(|(d, _)| *d).collect();
    Ok(json!({
        "client": if args.durable.is_some() { "floor" } else { "bare" },
        "era": era,
        "tasks": results.len(),
        "concurrency": args.concurrency,
        "failed": results.iter().filter(|(_, ok)| !ok).count(),
        "elapsed_s": took.as_secs_f64(),
        "tasks_per_s": stats::per_second(results.len(), took),
        "latency_ms": stats::latency_json(&latencies),
        "progress_notifications": progress.0.load(Ordering::Relaxed),
        "plain_calls": plain.load(Ordering::Relaxed),
        "transport": args.server.kind(),
    }))
}
