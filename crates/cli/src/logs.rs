//! `logs SERVER [--follow] [--json]`: a server's log (its stderr, Taskdeck's notes about it, and
//! the MCP log entries it sent) read from the files the engine writes, without the engine: the
//! app or another CLI may hold the data directory, and the files are only ever appended to and
//! rotated, so reading them needs no lock.

use std::time::Duration;

use taskdeck_engine::config::{Config, Paths};
use taskdeck_engine::logs::{LogLine, ServerLogReader};

use crate::error::{CliError, EXIT_COMPLETED, Result};
use crate::terminal;

/// How often `--follow` looks at the file: a log is read by a person.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);

/// The lines of `server`'s log that name the task `id` (or its remote id, for an entry that came
/// before the handle was known), as `show` gives them.
pub fn of_task(paths: &Paths, server: &str, id: &str, remote: Option<&str>) -> Vec<LogLine> {
    let mut reader = ServerLogReader::new(&paths.log_dir(), server);
    reader
        .read_all()
        .into_iter()
        .filter(|l| l.task.as_deref() == Some(id) || (remote.is_some() && l.remote_task.as_deref() == remote))
        .collect()
}

pub async fn logs(paths: &Paths, server: &str, follow: bool, json: bool) -> Result<u8> {
    let config = Config::load(paths).map_err(|e| CliError::usage(e.to_string()))?;
    let known = config.server(server).is_some()
        || config.unreadable_entry(server).is_some()
        || config.disabled.iter().any(|d| d.name == server);
    if !known {
        return Err(CliError::usage(format!("unknown server {server:?}")));
    }
    let mut reader = ServerLogReader::new(&paths.log_dir(), server);
    print(&reader.read_all(), json);
    if !follow {
        return Ok(EXIT_COMPLETED);
    }
    // Interrupting is how a follow ends: what was printed is the whole answer, so exit 0.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(FOLLOW_EVERY) => print(&reader.read_new(), json),
            _ = &mut ctrl_c => return Ok(EXIT_COMPLETED),
        }
    }
}

fn print(lines: &[LogLine], json: bool) {
    if lines.is_empty() {
        return;
    }
    let mut out = String::new();
    for line in lines {
        if json {
            out.push_str(&serde_json::to_string(line).unwrap_or_default());
        } else {
            out.push_str(&human(line));
        }
        out.push('\n');
    }
    // `print!`, which ends the command (141) when the reader went away: `--follow | head` must
    // not follow for ever. JSON is serde's, with every control character escaped already.
    let out = if json { out } else { terminal::clean(&out).into_owned() };
    print!("{out}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
}

/// `time  source  [level logger]  text`, on one line: a server's newlines would let it forge
/// lines of its own.
pub(crate) fn human(line: &LogLine) -> String {
    let source = match (line.source, line.level) {
        ("mcp", Some(level)) => level.as_str().to_owned(),
        ("mcp", None) => "log".to_owned(),
        (source, _) => source.to_owned(),
    };
    let logger = line.logger.as_deref().map(|l| format!("[{l}] ")).unwrap_or_default();
    let task =
        line.task.as_deref().map(|t| format!(" (task {})", t.chars().take(8).collect::<String>())).unwrap_or_default();
    format!("{} {source:<9} {logger}{}{task}", line.at, line.text.replace(['\n', '\r'], " "))
}
