//! `taskdeck-demo-server`: the MCP task server bundled with Taskdeck, used as the first server a
//! new user meets and as a test peer for both task eras.

mod http;
mod legacy;
mod modern;
mod publish;
mod question;
mod server;
mod session;
mod stdio;
mod store;
mod tools;
mod work;

use std::io::Write;
use std::net::SocketAddr;
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
/// With --http ADDR it serves MCP over Streamable HTTP instead, at http://ADDR/mcp (ADDR such as
/// 127.0.0.1:8080, or 127.0.0.1:0 for any free port). The first line on stdout is the endpoint's
/// URL with the real port, e.g. http://127.0.0.1:41234/mcp; nothing else is written to stdout.
/// It serves until SIGTERM or SIGINT. Both eras share the endpoint and the task store:
///   - POST initialize opens a 2025-11-25 session (Mcp-Session-Id); its requests are answered as
///     JSON, or as an SSE stream when something comes first (a task's question for the
///     tasks/result waiting on it); GET opens the session's own SSE stream; events carry ids for
///     Last-Event-ID resumption; DELETE ends the session; idle sessions expire.
///   - A POST with MCP-Protocol-Version: 2026-07-28 and the matching _meta is one stateless
///     request; Mcp-Method and Mcp-Name must match the body (400 HeaderMismatch otherwise).
///     subscriptions/listen (task statuses, both transports) is answered as an SSE stream.
///
/// Bodies over --max-line-bytes get 413. Browsers' Origin must be this machine or the Host asked.
///
/// Tools:
///   generate_report {topic, seconds?}   task required; four stages with progress, resumes after a restart
///   diagnose_incident {service?}        task required; asks which service when not given (input_required)
///   notes_search {query, delay_ms?}     never a task; answers at once (or after delay_ms)
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

    /// Longest accepted message, in bytes: a longer stdio line is logged and skipped, a longer
    /// HTTP request body is refused with 413.
    #[arg(long, default_value_t = taskdeck_protocol::framing::DEFAULT_MAX_FRAME as u64,
          value_parser = clap::value_parser!(u64).range(1024..=1 << 30))]
    max_line_bytes: u64,

    /// How often expired tasks are purged while running, in milliseconds.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(10..=86_400_000))]
    purge_interval_ms: u64,

    /// Serve Streamable HTTP on this address instead of stdio (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// HTTP: legacy sessions open at once; an initialize beyond gets 503.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_sessions: u64,

    /// HTTP: a legacy session with no request and no open stream for this long ends, in milliseconds.
    #[arg(long, default_value_t = 30 * 60 * 1000, value_parser = clap::value_parser!(u64).range(10..=86_400_000))]
    session_idle_ms: u64,

    /// HTTP, for testing clients: end every SSE connection this long after it opened (with a
    /// `retry` hint), so a client must resume the stream with Last-Event-ID, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=86_400_000))]
    sse_cut_ms: Option<u64>,

    /// For testing clients: a `subscriptions/listen` subscription ends with an error this long
    /// after it opened, as a dropped one would, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    listen_for_ms: Option<u64>,

    /// For testing clients: a legacy task-augmented `tools/call` is answered with its task this
    /// long after it came, in milliseconds; the task is made only then, so a `notifications/cancelled`
    /// before it stops the call and no task is made.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    handle_delay_ms: Option<u64>,

    /// With `--handle-delay-ms`: the delayed task is made and its handle sent even when the client
    /// cancelled the request meanwhile (a server that read the cancel too late).
    #[arg(long, requires = "handle_delay_ms")]
    handle_despite_cancel: bool,
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
        listen_for_ms: args.listen_for_ms,
        handle_delay_ms: args.handle_delay_ms,
        handle_despite_cancel: args.handle_despite_cancel,
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
    let server = server::Server::new(cfg, store);
    let outcome = match args.http {
        Some(addr) => {
            let http = http::HttpConfig {
                addr,
                max_sessions: args.max_sessions as usize,
                session_idle: Duration::from_millis(args.session_idle_ms),
                max_body: args.max_line_bytes as usize,
                sse_cut: args.sse_cut_ms.map(Duration::from_millis),
            };
            runtime.block_on(http::serve(server, http, announce, terminated()))
        }
        None => {
            tracing::info!(state = %args.state.display(), "taskdeck-demo-server ready on stdio");
            runtime.block_on(stdio::serve(server, tokio::io::stdin(), tokio::io::stdout()))
        }
    };
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

/// The one line a launcher waits for: where to connect.
fn announce(url: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{url}")?;
    out.flush()
}

/// SIGTERM or SIGINT. Without a way to listen for them only Ctrl-C is waited for.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM"),
                    _ = int.recv() => tracing::info!("SIGINT"),
                }
                return;
            }
            (Err(e), _) | (_, Err(e)) => tracing::warn!("cannot listen for signals: {e}"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
