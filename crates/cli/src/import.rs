//! `import [--from claude|cursor|vscode|windsurf|FILE] [--all | SERVER...] [--dry-run]`: the
//! servers of another host's config, listed, or copied into Taskdeck's.
//!
//! Without `--all` or names nothing changes: it says what each file holds. Exit 0 when done (or
//! listed), 2 for an unknown server name or a file that is not there, 1 when an import failed
//! (a name Taskdeck has with another entry, an entry that cannot be imported, a write that failed).
//! What the files hold is another program's (or anyone's) text: it reaches the terminal cleaned.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use taskdeck_engine::config::Paths;
use taskdeck_engine::import::{
    self, EntryStatus, Found, Host, HostFile, ImportError, InputNeeded, Selection, choose, known_files, scan,
};

use crate::error::{CliError, EXIT_COMPLETED, EXIT_FAILED, EXIT_USAGE, Result};
use crate::terminal;

pub fn run(paths: &Paths, from: Option<String>, all: bool, servers: Vec<String>, dry_run: bool) -> Result<u8> {
    let files = match from.as_deref() {
        None => known_files(&Host::KNOWN),
        Some(name) => match Host::parse(name) {
            Some(host) => known_files(&[host]),
            None => {
                let path = std::path::absolute(PathBuf::from(name)).unwrap_or_else(|_| PathBuf::from(name));
                if !path.is_file() {
                    return Err(CliError::usage(format!("{}: no such file", path.display())));
                }
                vec![HostFile { host: Host::File, path }]
            }
        },
    };
    let found = scan(paths, &files).map_err(|e| CliError::runtime(e.to_string()))?;
    if !all && servers.is_empty() {
        list(&files, &found, from.as_deref());
        return Ok(EXIT_COMPLETED);
    }
    let selection = if all { Selection::All } else { Selection::Names(servers) };
    let (chosen, skipped) = choose(&found, &selection).map_err(failure)?;
    let mut inputs: Vec<&InputNeeded> = Vec::new();
    for c in &chosen {
        for input in &c.entry.inputs {
            if !inputs.iter().any(|i| i.id == input.id) {
                inputs.push(input);
            }
        }
    }
    let values = if dry_run {
        // Nothing is asked or kept: a password shows as the reference the config would hold.
        inputs.iter().map(|i| (i.id.clone(), format!("<{} asked at import>", i.id))).collect()
    } else {
        ask(&inputs)?
    };
    let store = if !dry_run && inputs.iter().any(|i| i.password) {
        let (store, note) = taskdeck_engine::supervisor::sign_in_store(&paths.data_dir);
        if let Some(note) = note {
            terminal::err(&format!("{note}\n"));
        }
        Some(store)
    } else {
        None
    };
    let report = import::apply(paths, &chosen, skipped, &values, store.as_deref(), dry_run).map_err(failure)?;
    for (name, why) in &report.skipped {
        terminal::err(&format!("skipped {name}: {why}\n"));
    }
    if dry_run {
        terminal::err(&format!("would write {}:\n", report.config_path));
        terminal::out(&report.config_text);
    } else if report.imported.is_empty() {
        terminal::err("nothing to import\n");
    } else {
        terminal::err(&format!("imported {} into {}\n", report.imported.join(", "), report.config_path));
    }
    Ok(EXIT_COMPLETED)
}

fn failure(e: ImportError) -> CliError {
    let exit = match e {
        ImportError::UnknownServer { .. } | ImportError::NoSuchFile { .. } => EXIT_USAGE,
        _ => EXIT_FAILED,
    };
    CliError { exit, message: e.to_string() }
}

/// What each file holds, and how to import from it.
fn list(files: &[HostFile], found: &[Found], from: Option<&str>) {
    if found.is_empty() {
        let looked: Vec<String> = files.iter().map(|f| format!("  {}\n", f.path.display())).collect();
        terminal::err(&format!("no other host's config found; looked at:\n{}", looked.concat()));
        return;
    }
    let mut out = String::new();
    for f in found {
        out.push_str(&format!("{} ({}):\n", f.host.title(), f.path));
        if let Some(e) = &f.error {
            out.push_str(&format!("  cannot be read: {e}\n"));
            continue;
        }
        if f.entries.is_empty() {
            out.push_str("  no servers\n");
        }
        for e in &f.entries {
            let status = match e.status {
                EntryStatus::New => "new".to_owned(),
                EntryStatus::Same => "already in Taskdeck".to_owned(),
                EntryStatus::Clash => "in Taskdeck with another entry".to_owned(),
                EntryStatus::CannotImport => {
                    format!("cannot be imported: {}", e.problem.as_deref().unwrap_or("unreadable"))
                }
            };
            let transport = e.transport.as_deref().unwrap_or("?");
            out.push_str(&format!("  {:<20} {:<6} {}  [{status}]\n", e.name, transport, e.target));
            if !e.inputs.is_empty() {
                let asks: Vec<String> = e
                    .inputs
                    .iter()
                    .map(|i| if i.password { format!("{} (a secret)", i.id) } else { i.id.clone() })
                    .collect();
                out.push_str(&format!("  {:<20} asks for {}\n", "", asks.join(", ")));
            }
        }
    }
    terminal::out(&out);
    let from = from.map(|f| format!(" --from {f}")).unwrap_or_default();
    terminal::err(&format!(
        "nothing was changed; to import run `taskdeck-cli import{from} --all` or `taskdeck-cli import{from} SERVER...`\n"
    ));
}

/// Asks each input's value once, on the terminal (or reads it from stdin, a line each).
fn ask(inputs: &[&InputNeeded]) -> Result<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    for input in inputs {
        let what = input.description.as_deref().unwrap_or(&input.id);
        let mut prompt = format!("{what} [{}]", input.id);
        if !input.options.is_empty() {
            prompt.push_str(&format!(" ({})", input.options.join(", ")));
        }
        if let Some(d) = input.default.as_deref().filter(|_| !input.password) {
            prompt.push_str(&format!(" (default {d})"));
        }
        if input.password {
            prompt.push_str(" (kept in the sign-in store, not in the config)");
        }
        terminal::err(&format!("{prompt}: "));
        let hidden = if input.password { Echo::off() } else { None };
        let line = lines.next().transpose().map_err(|e| CliError::runtime(format!("cannot read the answer: {e}")))?;
        drop(hidden);
        if input.password {
            terminal::err("\n");
        }
        let value = match line.map(|l| l.trim_end_matches(['\r', '\n']).to_owned()) {
            Some(v) if !v.is_empty() => v,
            _ => match &input.default {
                Some(d) => d.clone(),
                None => return Err(CliError::runtime(format!("no value was given for the input {}", input.id))),
            },
        };
        values.insert(input.id.clone(), value);
    }
    Ok(values)
}

/// The terminal's echo, off while a secret is typed (Unix, through `stty`); back on when dropped.
struct Echo;

impl Echo {
    fn off() -> Option<Echo> {
        if !std::io::stdin().is_terminal() || !cfg!(unix) {
            return None;
        }
        let ok = std::process::Command::new("stty").arg("-echo").status().is_ok_and(|s| s.success());
        ok.then_some(Echo)
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = std::process::Command::new("stty").arg("echo").status();
    }
}
