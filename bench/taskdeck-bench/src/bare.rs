//! The store-less baseline: the same client library the engine uses, on one session, with nothing
//! written anywhere. Whatever the engine costs beyond this is its store, its drivers and its events.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_client::{
    Endpoint, Session, SessionEvent, SessionHandler, SessionOptions, StartOptions, Started, TaskSnapshot,
};
use taskdeck_protocol::Era;
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
async fn lifecycle(session: &Session, tool: &str, arguments: &Value, n: usize, plain: &AtomicUsize) -> bool {
    // Progress is asked for as the engine asks for it (a token per call), so the server does the
    // same work for both and the difference is the engine's own.
    let opts = StartOptions { progress_token: Some(format!("bare-{n}")), ttl_ms: None };
    let handle = match session.start_tool(tool, arguments.clone(), &opts).await {
        Ok(Started::Task(h)) => h,
        Ok(Started::Completed(r)) => {
            plain.fetch_add(1, Ordering::Relaxed);
            return !r.is_error();
        }
        // A benchmark has nobody to answer a server's questions.
        Ok(Started::InputRequired(_)) | Err(_) => return false,
    };
    if session.era() == Era::Legacy {
        return session.task_result(&handle.task_id).await.is_ok_and(|r| !r.is_error());
    }
    let mut every = poll_interval(&handle);
    loop {
        tokio::time::sleep(every).await;
        let s = match session.get_task(&handle.task_id).await {
            Ok(s) => s,
            Err(_) => return false,
        };
        if s.status.is_terminal() {
            if s.status != TaskStatus::Completed {
                return false;
            }
            // A legacy server keeps the result behind tasks/result, which no longer blocks now.
            return match &s.result {
                Some(r) => !r.is_error(),
                None => session.task_result(&handle.task_id).await.is_ok_and(|r| !r.is_error()),
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

    let next = Arc::new(AtomicUsize::new(0));
    // Calls the server answered with the result itself: for a tool that never runs as a task,
    // every one, and then a lifecycle is one round trip.
    let plain = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..args.concurrency)
        .map(|_| {
            let (session, next, plain, tool, arguments) =
                (session.clone(), next.clone(), plain.clone(), args.tool.clone(), args.arguments.clone());
            let total = args.tasks;
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        break;
                    }
                    let t0 = Instant::now();
                    let ok = lifecycle(&session, &tool, &arguments, n, &plain).await;
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
        "client": "bare",
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
