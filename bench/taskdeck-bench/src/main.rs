//! `taskdeck-bench`: the measurements `make bench` takes that no shipped program can take itself.
//! Each subcommand prints one JSON object on stdout; `bench/run.sh` collects them.

mod bare;
mod history;
mod progress;
mod resume;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use taskdeck_engine::config::{Config, Paths};

#[derive(Parser)]
#[command(name = "taskdeck-bench")]
struct Cli {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Task lifecycles through the client library alone: one session, no store.
    Bare {
        /// An `mcpServers` config, the same file `taskdeck-cli --config` reads.
        #[arg(long)]
        config: PathBuf,
        server: String,
        tool: String,
        #[arg(long, default_value = "{}")]
        args: String,
        #[arg(long, default_value_t = 100)]
        tasks: usize,
        #[arg(long, default_value_t = 10)]
        concurrency: usize,
        /// `legacy` or `modern`; detected when absent.
        #[arg(long)]
        era: Option<taskdeck_protocol::Era>,
        /// Also make the commits Taskdeck's durability contract needs, in a bare table in this
        /// directory: the floor a durable host cannot go below.
        #[arg(long)]
        durable: Option<PathBuf>,
    },
    /// Durable progress updates: one commit each, batched, and the engine's coalesced flush.
    Progress {
        #[arg(long, default_value_t = 100)]
        tasks: usize,
        #[arg(long, default_value_t = 4_000)]
        updates_single: usize,
        #[arg(long, default_value_t = 500_000)]
        updates_engine: usize,
    },
    /// `Engine::resume` over a store pre-filled with unfinished tasks.
    Resume {
        #[arg(long)]
        config: PathBuf,
        #[arg(long, default_value = "demo")]
        server: String,
        /// Store sizes to resume, e.g. `--size 10000 --size 20000`.
        #[arg(long = "size", required = true)]
        sizes: Vec<usize>,
    },
    /// Fills a data directory's store with finished tasks for the history benchmarks.
    HistoryStore {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long, default_value_t = 10_000)]
        tasks: usize,
        /// Every N-th result is about 1 MB (0: none).
        #[arg(long, default_value_t = 1_000)]
        large_every: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("taskdeck-bench: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.what {
            What::Bare { config, server, tool, args, tasks, concurrency, era, durable } => {
                let arguments = serde_json::from_str(&args).map_err(|e| format!("--args: {e}"))?;
                let paths = Paths { config: config.clone(), data_dir: std::env::temp_dir() };
                let found = Config::load(&paths)
                    .map_err(|e| e.to_string())?
                    .servers
                    .into_iter()
                    .find(|s| s.name == server)
                    .ok_or_else(|| format!("{}: no server {server:?}", config.display()))?;
                // `--era` wins over the entry's own, as the benchmark's rows say which era ran.
                let era = era.or(found.settings.era);
                bare::run(bare::Args { server: found.endpoint, tool, arguments, tasks, concurrency, era, durable })
                    .await
            }
            What::Progress { tasks, updates_single, updates_engine } => tokio::task::spawn_blocking(move || {
                progress::run(progress::Args { tasks, updates_single, updates_engine })
            })
            .await
            .map_err(|e| e.to_string())?,
            What::Resume { config, server, sizes } => resume::run(resume::Args { config, server, sizes }).await,
            What::HistoryStore { data_dir, tasks, large_every } => {
                tokio::task::spawn_blocking(move || history::run(history::Args { data_dir, tasks, large_every }))
                    .await
                    .map_err(|e| e.to_string())?
            }
        }
    });
    match outcome {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("taskdeck-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
