//! `export` and `prune`'s reading and printing: what the history commands share apart from the
//! engine, which holds the policy (`taskdeck_engine::history`).

use std::io::Write;
use std::path::Path;

use taskdeck_engine::config::Paths;
use taskdeck_engine::history::{ExportFormat, export as export_to};
use taskdeck_engine::{PruneReport, Retention, TaskQuery};
use taskdeck_protocol::TaskStatus;
use taskdeck_store::private_fs;

use crate::error::{CliError, EXIT_COMPLETED, Result};

/// The retention rule of the command line; none at all is a usage error, not "everything".
pub fn retention(
    older_than: Option<std::time::Duration>,
    keep: Option<usize>,
    statuses: Vec<TaskStatus>,
) -> Result<Retention> {
    let rule = Retention { older_than, keep, statuses, max_bytes: None };
    if rule.is_empty() {
        return Err(CliError::usage("say what to prune: --older-than, --keep or --status"));
    }
    Ok(rule)
}

pub fn print_prune(report: &PruneReport, json: bool) {
    if json {
        crate::output::print_json(report);
        return;
    }
    let verb = if report.dry_run { "would remove" } else { "removed" };
    for p in &report.removed {
        crate::terminal::out(&format!(
            "{} {}  {}  {}  {}\n",
            verb,
            crate::output::short_id(&p.id),
            p.status,
            p.tool,
            p.server
        ));
    }
    let n = report.removed.len();
    let mut line = format!("{verb} {n} task{}", if n == 1 { "" } else { "s" });
    if !report.dry_run && report.space.incremental && report.space.bytes_after < report.space.bytes_before {
        line.push_str(&format!(
            "; the store shrank from {} to {} bytes",
            report.space.bytes_before, report.space.bytes_after
        ));
    }
    eprintln!("{line}");
}

/// Writes the export to `output` (private, replaced whole, only once complete) or to stdout.
pub fn export(
    paths: &Paths,
    format: &str,
    search: Option<String>,
    status: Option<TaskStatus>,
    output: Option<&Path>,
) -> Result<u8> {
    let format: ExportFormat = format.parse().map_err(CliError::usage)?;
    let query = TaskQuery { statuses: status.into_iter().collect(), search, ..Default::default() };
    let store = crate::read_store(paths)?;
    // The check's outcome comes before a file is put in place: a damaged store leaves no export
    // that looks whole (what went to stdout is already out, and the exit says it is not).
    let write = |out: &mut dyn Write| -> Result<usize> {
        let written = export_to(store.as_ref(), &query, format, out).map_err(CliError::from);
        crate::once_checked(store.as_ref(), written)
    };
    match output {
        Some(path) => {
            let mut n = 0;
            let mut failed: Option<CliError> = None;
            private_fs::write_atomic_with(path, |file| {
                let mut buffered = std::io::BufWriter::new(file);
                match write(&mut buffered) {
                    Ok(count) => {
                        n = count;
                        buffered.flush()
                    }
                    Err(e) => {
                        let message = e.message.clone();
                        failed = Some(e);
                        Err(std::io::Error::other(message))
                    }
                }
            })
            .map_err(|e| failed.take().unwrap_or_else(|| CliError::runtime(format!("{}: {e}", path.display()))))?;
            eprintln!("exported {n} task{} to {}", if n == 1 { "" } else { "s" }, path.display());
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            write(&mut out)?;
        }
    }
    Ok(EXIT_COMPLETED)
}
