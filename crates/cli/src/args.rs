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
        /// Runs the tool at most once for this key: a key already used gives back its task (same
        /// id, its state now, the exit code of that state) instead of starting another.
        #[arg(long, value_name = "KEY")]
        idempotency_key: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Tasks in the store, newest first.
    Tasks {
        #[arg(long, value_name = "STATUS", value_parser = parse_status)]
        status: Option<TaskStatus>,
        #[arg(long, value_name = "SERVER")]
        server: Option<String>,
        #[arg(long, value_name = "TOOL")]
        tool: Option<String>,
        /// Only tasks whose tool, server, messages, arguments, result, questions or answers hold
        /// every word (`word*` matches a prefix).
        #[arg(long, value_name = "TEXT")]
        search: Option<String>,
        /// At most N tasks (default: all).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Only tasks older than this one (the last of the previous page).
        #[arg(long, value_name = "TASK")]
        before: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Deletes finished tasks with their history; a purge log keeps that they were removed.
    Delete {
        /// Task ids or unique prefixes.
        #[arg(required = true, value_name = "TASK")]
        tasks: Vec<String>,
        /// Cancel a task that has not ended, then delete it.
        #[arg(long)]
        force: bool,
    },
    /// Removes finished, unpinned tasks by age, count or status (working and waiting tasks are
    /// never removed), then gives the space back.
    Prune {
        /// Finished longer ago than this: `90s`, `45m`, `12h`, `30d`, `2w`.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: Option<std::time::Duration>,
        /// Keep the newest N finished tasks, remove the rest.
        #[arg(long, value_name = "N")]
        keep: Option<usize>,
        /// Only tasks with this status (completed, failed or cancelled; repeatable).
        #[arg(long, value_name = "STATUS", value_parser = parse_finished_status)]
        status: Vec<TaskStatus>,
        /// Say what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Writes tasks as JSON Lines (whole records with events), CSV (a row per task) or a Markdown
    /// report.
    Export {
        #[arg(long, value_name = "FORMAT", default_value = "jsonl", value_parser = ["jsonl", "csv", "md"])]
        format: String,
        #[arg(long, value_name = "TEXT")]
        search: Option<String>,
        #[arg(long, value_name = "STATUS", value_parser = parse_status)]
        status: Option<TaskStatus>,
        /// Write here (private to you, replaced whole) instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Pins a task: retention never removes it.
    Pin { task: String },
    /// Unpins a task.
    Unpin { task: String },
    /// One task, with its event history.
    Show {
        /// The task id or a unique prefix of it.
        task: String,
        #[arg(long)]
        json: bool,
    },
    /// Answers a task's pending question, then follows it like `run`.
    #[command(group(ArgGroup::new("reply").required(true).args(["json", "decline", "cancel", "sample"])))]
    Answer {
        task: String,
        /// Accept, with this JSON object as the content (for a sampling request: the reply, a
        /// CreateMessageResult or {"text": "..."}). With several questions pending, give one per
        /// question, in order: they go to the server together.
        #[arg(long, value_name = "JSON")]
        json: Vec<String>,
        #[arg(long)]
        decline: bool,
        #[arg(long)]
        cancel: bool,
        /// A sampling question: send it to the configured model (`models add`), print the
        /// completion and return it.
        #[arg(long)]
        sample: bool,
        /// With --sample: edit the completion in $VISUAL / $EDITOR before it is returned.
        #[arg(long)]
        edit: bool,
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
    /// Servers from another host's config (Claude Desktop, Cursor, VS Code, Windsurf) or a file:
    /// lists what each holds; with --all or names, copies them into Taskdeck's config (never
    /// changing the other file). Exit 0 done, 1 failed, 2 for an unknown server or no such file.
    Import {
        /// claude, cursor, vscode, windsurf, or a file; without it every known host is looked at.
        #[arg(long, value_name = "HOST|FILE")]
        from: Option<String>,
        /// Every server found that can be imported and is not in Taskdeck yet.
        #[arg(long, conflicts_with = "servers")]
        all: bool,
        #[arg(value_name = "SERVER")]
        servers: Vec<String>,
        /// Print the config that would be written; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// A server's log: its stderr, Taskdeck's notes and the MCP log entries it sent, from the
    /// files on disk (no lock: works beside a running Taskdeck). Exit 2 for an unknown server.
    Logs {
        server: String,
        /// Keep printing new lines until interrupted.
        #[arg(long)]
        follow: bool,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// The model providers that answer sampling requests (settings.json's `models`; keys in
    /// the OS keyring, or a file readable by you only).
    Models {
        #[command(subcommand)]
        action: crate::models::ModelsCommand,
    },
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

fn parse_finished_status(s: &str) -> Result<TaskStatus, String> {
    let status: TaskStatus = s.parse()?;
    if !status.is_terminal() {
        return Err(format!("{status} tasks are never pruned (completed, failed or cancelled)"));
    }
    Ok(status)
}

/// `90s`, `45m`, `12h`, `30d`, `2w`: a whole number and its unit.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("{s:?}: expected a number and a unit, like 30d"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(format!("{s:?}: the unit is s, m, h, d or w")),
    };
    n.checked_mul(seconds).map(std::time::Duration::from_secs).ok_or_else(|| format!("{s:?}: too long"))
}
