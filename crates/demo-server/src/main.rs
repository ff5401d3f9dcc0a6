//! `taskdeck-demo-server`: the MCP task server bundled with Taskdeck, used as the first server a
//! new user meets and as a test peer for both task eras.

mod legacy;
mod modern;
mod server;
mod stdio;
mod store;
mod tools;
mod work;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

pub const INSTRUCTIONS: &str = "Taskdeck's demo server. generate_report, diagnose_incident and flaky_export run as \
    tasks; count may; notes_search answers at once. diagnose_incident asks for the affected service when it is not \
    given.";

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// The MCP demo task server bundled with Taskdeck.
///
/// Speaks MCP over stdio: newline-delimited JSON-RPC on stdin and stdout (stdout carries protocol
/// messages only; logs go to stderr, filtered by RUST_LOG).
///
/// Both task eras are served, decided by how the client opens the connection: `initialize` first
/// means protocol 2025-11-25 (tasks as an experimental core feature: params.task, tasks/result,
/// tasks/list, elicitation/create requests); requests carrying
/// params._meta["io.modelcontextprotocol/protocolVersion"] mean 2026-07-28 with the
/// io.modelcontextprotocol/tasks extension (server/discover, flat task handles, tasks/get polling,
/// tasks/update for answers).
///
/// Tools:
///   generate_report {topic, seconds?}   task required; four stages with progress, resumes after a restart
///   diagnose_incident {service?}        task required; asks which service when not given (input_required)
///   notes_search {query}                never a task; answers at once
///   flaky_export {fail_at?}             task required; fails part-way with a tool error
///   count {n, delay_ms}                 task optional; counts with progress, cheap (tests, benchmarks)
///
/// Tasks are kept in a SQLite database in the state directory and survive restarts: unfinished work
/// continues from its last checkpoint, questions stay asked, and work that cannot continue fails
/// with reason CRASH_RECOVERY. Tasks are deleted once their TTL (from creation) has passed.
#[derive(Debug, Parser)]
#[command(name = "taskdeck-demo-server", version, verbatim_doc_comment)]
struct Args {
    /// Directory holding the task database (created if missing).
    #[arg(long, value_name = "DIR")]
    state: PathBuf,

    /// Poll interval suggested to clients for new tasks, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..=3_600_000))]
    poll_interval_ms: i64,

    /// TTL of a task whose client did not ask for one, in milliseconds.
    #[arg(long, default_value_t = DAY_MS, value_parser = clap::value_parser!(i64).range(1..=365 * DAY_MS))]
    default_ttl_ms: i64,

    /// The longest TTL granted, whatever a client asks for, in milliseconds.
    #[arg(long, default_value_t = 7 * DAY_MS, value_parser = clap::value_parser!(i64).range(1..=365 * DAY_MS))]
    max_ttl_ms: i64,

    /// Tasks per tasks/list page.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1000))]
    list_page_size: u64,

    /// Longest accepted input line, in bytes; longer lines are logged and skipped.
    #[arg(long, default_value_t = taskdeck_protocol::framing::DEFAULT_MAX_FRAME as u64,
          value_parser = clap::value_parser!(u64).range(1024..=1 << 30))]
    max_line_bytes: u64,

    /// How often expired tasks are purged while running, in milliseconds.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(10..=86_400_000))]
    purge_interval_ms: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();

    let cfg = server::Config {
        state_dir: args.state.clone(),
        poll_interval_ms: args.poll_interval_ms,
        default_ttl_ms: args.default_ttl_ms,
        max_ttl_ms: args.max_ttl_ms,
        list_page_size: args.list_page_size as usize,
        max_line_bytes: args.max_line_bytes as usize,
        purge_interval: Duration::from_millis(args.purge_interval_ms),
    };
    let store = match store::Store::open(&cfg.state_dir) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(state = %cfg.state_dir.display(), "taskdeck-demo-server ready on stdio");
    let server = server::Server::new(cfg, store);
    let outcome = runtime.block_on(stdio::serve(server, tokio::io::stdin(), tokio::io::stdout()));
    // Workers and blocked tasks/result waiters are abandoned on purpose: their tasks are in the
    // store and resume on the next start.
    runtime.shutdown_timeout(Duration::from_millis(500));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}
