//! `bench`: full task lifecycles through the engine and its store, measured from `run` to the end.
//! For a tool the server answers at once (one that never runs as a task), a lifecycle is a plain
//! `tools/call` round trip through the engine, and `plain_calls` says how many were.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use taskdeck_engine::Engine;
use taskdeck_protocol::TaskStatus;

use crate::error::{CliError, EXIT_USAGE, Result};
use crate::follow::waiting;

#[derive(Debug, Serialize, PartialEq)]
pub struct Report {
    pub tasks: u64,
    pub concurrency: u64,
    /// Lifecycles that did not end completed (failed, cancelled, waiting for input, or refused).
    pub failed: u64,
    pub tasks_per_s: f64,
    pub latency_ms: Latency,
    /// Lifecycles the server answered with the result itself, no task created: plain calls, whose
    /// latency is a round trip. A benchmark of round trips checks this equals `tasks`.
    pub plain_calls: u64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

pub async fn bench(engine: &Engine, server: &str, tool: &str, args: Value, n: u64, c: u64) -> Result<Report> {
    // Starting the server is not part of any lifecycle; do it before the clock runs.
    engine.tools(server).await?;
    // `c` runners, each taking the next lifecycle as soon as its last one ended, as the bare client
    // runs its own (bench/taskdeck-bench). A lifecycle spawned per call from this thread, which is
    // not one of the runtime's, cost two wake-ups between threads for every call (the finished
    // call's permit waking this thread, its spawn waking a worker) on top of what is measured.
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let runners: Vec<_> = (0..c.max(1))
        .map(|_| {
            let (engine, server, tool, args, next) =
                (engine.clone(), server.to_owned(), tool.to_owned(), args.clone(), next.clone());
            tokio::spawn(async move {
                let mut mine = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    let t0 = Instant::now();
                    let outcome = async {
                        let rec = engine.run(&server, &tool, args.clone()).await?;
                        // A question would wait forever here: it ends the lifecycle, as a failure.
                        engine.wait(&rec.id, waiting).await
                    }
                    .await;
                    mine.push((t0.elapsed(), outcome));
                }
                mine
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(n as usize);
    let mut failed = 0;
    let mut plain = 0;
    let mut usage: Option<CliError> = None;
    for runner in runners {
        let mine = runner.await.map_err(|e| CliError::runtime(format!("a lifecycle panicked: {e}")))?;
        for (took, outcome) in mine {
            if let Ok(rec) = &outcome
                && rec.remote_task_id.is_none()
                && rec.status.is_terminal()
            {
                plain += 1;
            }
            match outcome {
                Ok(rec) if rec.status == TaskStatus::Completed => latencies.push(took),
                Ok(_) => {
                    failed += 1;
                    latencies.push(took);
                }
                Err(e) => {
                    let e = CliError::from(e);
                    failed += 1;
                    if e.exit == EXIT_USAGE {
                        usage.get_or_insert(e);
                    }
                }
            }
        }
    }
    let wall = started.elapsed();
    // Every lifecycle was refused for the same reason the caller must fix: say so, not "0 tasks/s".
    if let Some(e) = usage {
        return Err(e);
    }
    Ok(Report { plain_calls: plain, ..report(n, c, failed, wall, latencies) })
}

pub fn report(n: u64, c: u64, failed: u64, wall: Duration, mut latencies: Vec<Duration>) -> Report {
    latencies.sort();
    let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    // Nearest rank: the smallest latency with at least p% of lifecycles at or under it.
    let pct = |p: f64| {
        if latencies.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * latencies.len() as f64).ceil().max(1.0) as usize;
        ms(latencies[rank.min(latencies.len()) - 1])
    };
    Report {
        tasks: n,
        concurrency: c,
        failed,
        tasks_per_s: if wall.is_zero() { 0.0 } else { (n as f64 / wall.as_secs_f64() * 100.0).round() / 100.0 },
        latency_ms: Latency {
            p50: pct(50.0),
            p90: pct(90.0),
            p99: pct(99.0),
            max: latencies.last().map(|d| ms(*d)).unwrap_or(0.0),
        },
        plain_calls: 0,
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.latency_ms;
        writeln!(f, "tasks        {} ({} at a time), {} failed", self.tasks, self.concurrency, self.failed)?;
        writeln!(f, "throughput   {:.2} tasks/s", self.tasks_per_s)?;
        writeln!(f, "latency ms   p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}", l.p50, l.p90, l.p99, l.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let lat: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let r = report(100, 4, 1, Duration::from_secs(2), lat);
        assert_eq!(r.tasks_per_s, 50.0);
        assert_eq!(r.latency_ms, Latency { p50: 50.0, p90: 90.0, p99: 99.0, max: 100.0 });
        let one = report(1, 1, 0, Duration::from_millis(10), vec![Duration::from_millis(7)]);
        assert_eq!((one.latency_ms.p50, one.latency_ms.max), (7.0, 7.0));
    }
}
