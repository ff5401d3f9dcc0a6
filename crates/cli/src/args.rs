//! The command line, as clap reads it. The shape of these commands is an interface scripts depend
//! on: change it only together with docs and tests.

use std::path::PathBuf;

use clap::{ArgGroup, Parser, Subcommand};
use taskdeck_protocol::TaskStatus;

/// Runs and follows MCP tool tasks through the Taskdeck engine.
///
/// Exit codes: 0 completed, 1 failed (or a runtime error), 2 usage or config error, 3 waiting for
/// input, 4 cancelled. Logs go to stderr, filtered by TASKDECK_LOG (default: warn).
#[derive(Debug, Parser)]
#[command(name = "taskdeck-cli", version, verbatim_doc_comment)]
pub struct Cli {
    /// The mcpServers config file [env: TASKDECK_CONFIG; default: $XDG_CONFIG_HOME/taskdeck/servers.json].
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Where tasks are kept [env: TASKDECK_DATA_DIR; default: $XDG_DATA_HOME/taskdeck].
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Servers, their state, era and protocol version, and whether they run tasks.
    Servers {
        #[arg(long)]
        json: bool,
    },
    /// A server's tools with their task support and input schema.
    Tools {
        server: String,
        #[arg(long)]
        json: bool,
    },
    /// Runs a tool and follows its task until it ends or waits for input.
    Run {
        server: String,
        tool: String,
        /// The tool's arguments, a JSON object.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Answers the next question with this JSON object (repeatable, used in order).
        #[arg(long, value_name = "JSON")]
        answer: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Tasks in the store, newest first.
    Tasks {
        #[arg(long, value_name = "STATUS", value_parser = parse_status)]
        status: Option<TaskStatus>,
        #[arg(long)]
        json: bool,
    },
    /// One task, with its event history.
    Show {
        /// The task id or a unique prefix of it.
        task: String,
        #[arg(long)]
        json: bool,
    },
    /// Answers a task's pending question, then follows it like `run`.
    #[command(group(ArgGroup::new("reply").required(true).args(["json", "decline", "cancel"])))]
    Answer {
        task: String,
        /// Accept, with this JSON object as the content.
        #[arg(long, value_name = "JSON")]
        json: Option<String>,
        #[arg(long)]
        decline: bool,
        #[arg(long)]
        cancel: bool,
        /// Prints the task record as JSON, as `run --json` does, whatever the exit code (`--json`
        /// is the answer's content here).
        #[arg(long)]
        record: bool,
    },
    /// Cancels a task that has not ended.
    Cancel { task: String },
    /// Drives every unfinished task that is not waiting for an answer, and prints where each ended.
    Resume {
        #[arg(long)]
        json: bool,
    },
    /// Signs in to a remote server: opens the browser ($BROWSER when set), waits for the redirect
    /// on the loopback listener and keeps the tokens (OS keyring, or a file readable by you only).
    /// Exit 0 when signed in or when the server needs no sign-in, 1 when it failed, 2 for an
    /// unknown server.
    Login { server: String },
    /// Removes the sign-in kept for a server.
    Logout { server: String },
    /// Runs N full task lifecycles, C at a time; prints tasks/s and latency percentiles.
    Bench {
        server: String,
        tool: String,
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        tasks: u64,
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        concurrency: u64,
        #[arg(long)]
        json: bool,
    },
}

fn parse_status(s: &str) -> Result<TaskStatus, String> {
    s.parse()
}
