//! `taskdeck-cli`: the Taskdeck engine from a terminal or a script.
//!
//! Commands that drive servers take the engine, and with it the data directory's lock; `tasks`
//! and `show` only read the store, so they work beside a running Taskdeck.

mod args;
mod bench;
mod error;
mod follow;
mod form;
mod history;
mod import;
mod login;
mod logs;
mod models;
mod output;
mod sampling;
mod terminal;

use std::collections::VecDeque;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::{Map, Value};
use taskdeck_engine::config::{Config, Paths};
use taskdeck_engine::{
    AnswerInput, Engine, EngineOptions, PageRequest, PruneReport, ServerPhase, TaskQuery, TaskRecord,
};
use taskdeck_store::{Store, StoreError};

use crate::args::{Cli, Command};
use crate::error::{CliError, EXIT_COMPLETED, EXIT_FAILED, EXIT_USAGE, Result};
use crate::follow::{Follow, waiting};

use taskdeck_engine::logs::{LOG_ENV, WorkerGuard};

fn main() -> ExitCode {
    quiet_on_closed_output();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // clap's own exit code is 2 for usage errors and 0 for --help/--version.
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let _log_guard = init_logging(&cli);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(dispatch(cli))));
    let code = match outcome {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            terminal::err(&format!("error: {}\n", e.message));
            e.exit
        }
        // The engine and its servers were dropped on the way out, which ends them.
        Err(payload) if output_closed(payload.as_ref()) => EXIT_OUTPUT_CLOSED,
        Err(payload) => std::panic::resume_unwind(payload),
    };
    // A blocked prompt read or a server still being killed must not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    ExitCode::from(code)
}

/// Stderr as it always was (warnings only unless `TASKDECK_LOG` says otherwise), and a daily file in
/// the log folder at info. The guard flushes the file when `main` returns.
fn init_logging(cli: &Cli) -> Option<WorkerGuard> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_env(LOG_ENV)
        // The client warns when a server's session closes, which is also every deliberate shutdown at
        // exit; the supervisor's own log already records unexpected ends.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,taskdeck_client::session=error"));
    // Log lines quote what servers said, so they reach the terminal cleaned like everything else;
    // colour codes would be cleaned too, so there are none.
    let stderr = tracing_subscriber::fmt::layer().with_writer(terminal::stderr).with_ansi(false).with_filter(filter);
    // Paths that do not resolve are reported by `dispatch`; there is no log folder to speak of then.
    let log_dir = Paths::resolve(cli.config.clone(), cli.data_dir.clone()).ok().map(|p| p.log_dir());
    // A log folder that cannot be written must not stop a command: stderr still says what matters.
    let file = log_dir.as_deref().and_then(|dir| taskdeck_engine::logs::daily_file(dir, "taskdeck-cli").ok());
    let (file, guard) = file.map_or((None, None), |(layer, guard)| (Some(layer), Some(guard)));
    tracing_subscriber::registry().with(stderr).with(file).init();
    // Which build wrote what follows; never the command line, whose `--args` may hold anything.
    if let Some(dir) = &log_dir {
        tracing::info!(version = env!("CARGO_PKG_VERSION"), log_dir = %dir.display(), "taskdeck-cli starting");
    }
    guard
}

async fn dispatch(cli: Cli) -> Result<u8> {
    let (given_config, given_data_dir) = (cli.config.is_some(), cli.data_dir.is_some());
    let paths = Paths::resolve(cli.config, cli.data_dir).map_err(|e| CliError::usage(e.to_string()))?;
    // Resolved to absolute paths, so the printed `answer` command works from any directory.
    let mut invocation = String::new();
    if given_config {
        invocation.push_str(&format!(" --config {}", shell_word(&paths.config.display().to_string())));
    }
    if given_data_dir {
        invocation.push_str(&format!(" --data-dir {}", shell_word(&paths.data_dir.display().to_string())));
    }
    match cli.command {
        Command::Tasks { status, server, tool, search, limit, before, json } => {
            let store = read_store(&paths)?;
            let listed = (|| {
                let tasks = match &store {
                    Some(store) => {
                        let before = match before {
                            Some(b) => Some(store.resolve_prefix(&b).map_err(not_found)?.id),
                            None => None,
                        };
                        let query = TaskQuery {
                            statuses: status.into_iter().collect(),
                            server,
                            tool,
                            search,
                            ..Default::default()
                        };
                        store.records(&query, &PageRequest { before, limit })?.items
                    }
                    None if before.is_some() => {
                        return Err(CliError::runtime(format!("no task with id {}", before.unwrap_or_default())));
                    }
                    None => Vec::new(),
                };
                if json {
                    output::print_json(&tasks);
                } else if tasks.is_empty() {
                    eprintln!("no tasks{}", status.map(|s| format!(" with status {s}")).unwrap_or_default());
                } else {
                    terminal::out(&output::tasks_table(&tasks));
                }
                Ok(EXIT_COMPLETED)
            })();
            once_checked(store.as_ref(), listed)
        }
        Command::Show { task, json } => {
            let store = read_store(&paths)?.ok_or_else(|| CliError::runtime(format!("no task with id {task}")))?;
            let shown = (|| {
                let rec = store.resolve_prefix(&task).map_err(not_found)?;
                let events = output::shown_events(store.events(&rec.id)?);
                let server_log = logs::of_task(&paths, &rec.server, &rec.id, rec.remote_task_id.as_deref());
                if json {
                    output::print_json(&output::TaskWithEvents {
                        task: &rec,
                        events: &events,
                        server_log: &server_log,
                    });
                } else {
                    let mut text = output::show_task(&rec, &events);
                    if !server_log.is_empty() {
                        text.push_str("server log:\n");
                        for line in &server_log {
                            text.push_str(&format!("  {}\n", logs::human(line)));
                        }
                    }
                    terminal::out(&text);
                }
                Ok(EXIT_COMPLETED)
            })();
            once_checked(Some(&store), shown)
        }
        Command::Import { from, all, servers, dry_run } => import::run(&paths, from, all, servers, dry_run),
        Command::Models { action } => models::run(&paths.data_dir, action).await,
        Command::Export { format, search, status, output } => {
            history::export(&paths, &format, search, status, output.as_deref())
        }
        Command::Logs { server, follow, json } => logs::logs(&paths, &server, follow, json).await,
        Command::Prune { older_than, keep, status, dry_run: true, json } => {
            let rule = history::retention(older_than, keep, status)?;
            let store = read_store(&paths)?;
            let report = match &store {
                Some(store) => taskdeck_engine::history::prune_dry_run(store, &rule).map_err(CliError::from),
                None => Ok(PruneReport { dry_run: true, removed: Vec::new(), space: Default::default() }),
            };
            let report = once_checked(store.as_ref(), report)?;
            history::print_prune(&report, json);
            Ok(EXIT_COMPLETED)
        }
        command => {
            if let Command::Prune { older_than, keep, status, .. } = &command {
                // No rule is a mistake, not "remove everything".
                history::retention(*older_than, *keep, status.clone())?;
            }
            // Usage errors in the command line come before the lock: a typo must not wait on
            // another Taskdeck or start servers.
            let prepared = Prepared::of(&command)?;
            let config = Config::load(&paths).map_err(|e| CliError::usage(e.to_string()))?;
            if let Some(bad) = named_server(&command).and_then(|name| config.unreadable_entry(name)) {
                return Err(CliError::usage(format!("server {:?} cannot be used: {}", bad.name, bad.error)));
            }
            // Signing in needs no lock: it works while another process drives the tasks.
            match &command {
                Command::Login { server } => return login::login(&paths, &config, server).await,
                Command::Logout { server } => return login::logout(&paths, &config, server).await,
                _ => {}
            }
            let engine = open_engine(paths, config, idempotency_key(&command)).await?;
            let server = named_server(&command).map(str::to_owned);
            let outcome = with_engine(&engine, command, prepared, invocation).await;
            let outcome = login::waiting_for_sign_in(&engine, server.as_deref(), outcome);
            engine.shutdown().await;
            outcome
        }
    }
}

/// Arguments parsed from JSON on the command line, checked before anything starts.
#[derive(Default)]
struct Prepared {
    args: Value,
    answers: VecDeque<Map<String, Value>>,
    accept: Option<Vec<Map<String, Value>>>,
}

impl Prepared {
    fn of(command: &Command) -> Result<Prepared> {
        let mut p = Prepared::default();
        match command {
            Command::Run { args, answer, .. } => {
                p.args = json_object("--args", args.as_deref())?;
                for (i, a) in answer.iter().enumerate() {
                    match json_object(&format!("--answer #{}", i + 1), Some(a))? {
                        Value::Object(m) => p.answers.push_back(m),
                        _ => unreachable!("json_object returns objects"),
                    }
                }
            }
            Command::Bench { args, .. } => p.args = json_object("--args", args.as_deref())?,
            // clap's `requires` is met by a flag's default, so it is checked here.
            Command::Answer { edit: true, sample: false, .. } => {
                return Err(CliError::usage("--edit goes with --sample"));
            }
            Command::Answer { json, .. } => {
                for (i, j) in json.iter().enumerate() {
                    let flag = if json.len() == 1 { "--json".to_owned() } else { format!("--json #{}", i + 1) };
                    if let Value::Object(m) = json_object(&flag, Some(j))? {
                        p.accept.get_or_insert_with(Vec::new).push(m);
                    }
                }
            }
            _ => {}
        }
        Ok(p)
    }
}

fn json_object(flag: &str, text: Option<&str>) -> Result<Value> {
    let Some(text) = text else { return Ok(Value::Object(Map::new())) };
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(CliError::usage(format!("{flag}: must be a JSON object, not {other}"))),
        Err(e) => Err(CliError::usage(format!("{flag}: not valid JSON: {e}"))),
    }
}

/// The server a command is aimed at, if it names one.
fn named_server(command: &Command) -> Option<&str> {
    match command {
        Command::Tools { server, .. } | Command::Run { server, .. } | Command::Bench { server, .. } => Some(server),
        _ => None,
    }
}

async fn with_engine(engine: &Engine, command: Command, prepared: Prepared, invocation: String) -> Result<u8> {
    let follow = |answers, json| Follow { engine, answers, json, invocation: invocation.clone() };
    match command {
        Command::Login { .. } | Command::Logout { .. } => unreachable!("signing in is dispatched without an engine"),
        Command::Servers { json } => {
            let mut servers = engine.start_servers().await;
            // Disabled entries and those that could not be read are listed too; the latter make
            // the exit a config error.
            let not_run = engine.entries_not_run();
            let unreadable = not_run.iter().any(|s| s.phase == ServerPhase::Invalid);
            servers.extend(not_run);
            if json {
                output::print_json(&servers);
            } else {
                terminal::out(&output::servers_table(&servers));
            }
            for line in output::server_problems(&servers) {
                eprintln!("{line}");
            }
            Ok(if unreadable { EXIT_USAGE } else { EXIT_COMPLETED })
        }
        Command::Tools { server, json } => {
            let tools = engine.tools(&server).await?;
            if json {
                output::print_json(&tools);
            } else {
                terminal::out(&output::tools_table(&tools));
            }
            Ok(EXIT_COMPLETED)
        }
        Command::Run { server, tool, json, idempotency_key, .. } => {
            let rec = engine.run_once(&server, &tool, prepared.args, idempotency_key.as_deref()).await?;
            tracing::info!(task = %rec.id, "started");
            let follower = follow(prepared.answers, json);
            // Ctrl-C while the server has yet to take the task cancels it, as it does later on.
            tokio::select! {
                refused = login::refused_before_start(engine, &rec) => refused?,
                _ = tokio::signal::ctrl_c() => return follower.cancel(&rec.id).await,
            }
            let outcome = follower.run(&rec.id).await;
            login::refused_before_start(engine, &rec).await?;
            outcome
        }
        Command::Answer { task, decline, cancel, record, sample, edit, .. } => {
            let rec = engine.get(&task).map_err(not_found_engine)?;
            let inputs = match (prepared.accept, decline, cancel) {
                (Some(contents), _, _) => contents.into_iter().map(AnswerInput::Accept).collect(),
                (None, true, _) => vec![AnswerInput::Decline],
                (None, _, true) => vec![AnswerInput::Cancel],
                (None, false, false) if sample => vec![sampling::sample(engine, &rec.id, edit).await?],
                // clap's group requires one of them.
                (None, false, false) => return Err(CliError::usage("give --json, --decline, --cancel or --sample")),
            };
            // One answer answers the first question pending; one per question answers them all.
            let answered = match <[AnswerInput; 1]>::try_from(inputs) {
                Ok([input]) => engine.answer(&rec.id, input).await,
                Err(inputs) => engine.answer_all(&rec.id, inputs).await,
            };
            if let Err(e) = answered {
                let now = engine.get(&rec.id).unwrap_or(rec);
                // Refused or not delivered: a script still learns where the task is.
                if record {
                    output::print_json(&now);
                }
                // A finished task's refusal says why it finished, as `show` would.
                let mut e = CliError::from(e);
                if let Some(why) = output::how_it_ended(&now) {
                    e.message = format!("{}; {why}", e.message);
                }
                return Err(e);
            }
            follow(VecDeque::new(), record).run(&rec.id).await
        }
        Command::Cancel { task } => {
            let rec = engine.get(&task).map_err(not_found_engine)?;
            let after = engine.cancel(&rec.id).await?;
            match after.status {
                taskdeck_protocol::TaskStatus::Cancelled => {
                    println!("task {} cancelled", after.id);
                    // Cancelled here, but the server did not confirm it: the engine says why.
                    if let Some(why) =
                        after.status_message.as_deref().filter(|m| *m != taskdeck_engine::CANCELLED_BY_USER)
                    {
                        terminal::err(&format!("task {}: {why}\n", after.id));
                    }
                    Ok(EXIT_COMPLETED)
                }
                // The server had finished it before the cancel arrived.
                other => Err(CliError::runtime(format!("task {} had already ended: it is {other}", after.id))),
            }
        }
        Command::Resume { json } => {
            let resumed = engine.resume().await?;
            let mut set = tokio::task::JoinSet::new();
            for rec in resumed {
                let engine = engine.clone();
                set.spawn(async move {
                    if rec.status.is_terminal() || waiting(&rec) {
                        return Ok(rec);
                    }
                    engine.wait(&rec.id, waiting).await
                });
            }
            let mut done: Vec<TaskRecord> = Vec::new();
            while let Some(j) = set.join_next().await {
                done.push(j.map_err(|e| CliError::runtime(e.to_string()))??);
            }
            done.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
            if json {
                output::print_json(&done);
            } else if done.is_empty() {
                eprintln!("nothing to resume");
            } else {
                terminal::out(&output::tasks_table(&done));
            }
            // The exit stays 0 for these, as it always was (only a sign-in makes it 3); the line
            // is what tells a person that a task is left waiting, and for what.
            for line in output::left_waiting(&done, |id| engine.stalled(id)) {
                terminal::err(&line);
            }
            Ok(login::resume_exit(engine, &done))
        }
        Command::Bench { server, tool, tasks, concurrency, json, .. } => {
            let report = bench::bench(engine, &server, &tool, prepared.args, tasks, concurrency).await?;
            if json {
                output::print_json(&report);
            } else {
                terminal::out(&report.to_string());
            }
            Ok(if report.failed == 0 { EXIT_COMPLETED } else { EXIT_FAILED })
        }
        Command::Delete { tasks, force } => {
            let mut ids = Vec::with_capacity(tasks.len());
            for t in &tasks {
                let id = engine.get(t).map_err(not_found_engine)?.id;
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            for p in engine.delete(&ids, force).await? {
                println!("task {} deleted", p.id);
            }
            Ok(EXIT_COMPLETED)
        }
        Command::Prune { older_than, keep, status, json, .. } => {
            let rule = history::retention(older_than, keep, status)?;
            let report = engine.prune(&rule, false)?;
            history::print_prune(&report, json);
            Ok(EXIT_COMPLETED)
        }
        Command::Pin { task } => {
            let id = engine.get(&task).map_err(not_found_engine)?.id;
            engine.pin(&id, true)?;
            println!("task {id} pinned");
            Ok(EXIT_COMPLETED)
        }
        Command::Unpin { task } => {
            let id = engine.get(&task).map_err(not_found_engine)?.id;
            engine.pin(&id, false)?;
            println!("task {id} unpinned");
            Ok(EXIT_COMPLETED)
        }
        Command::Tasks { .. }
        | Command::Show { .. }
        | Command::Export { .. }
        | Command::Import { .. }
        | Command::Logs { .. }
        | Command::Models { .. } => {
            unreachable!("handled without the engine")
        }
    }
}

fn idempotency_key(command: &Command) -> Option<String> {
    match command {
        Command::Run { idempotency_key, .. } => idempotency_key.clone(),
        _ => None,
    }
}

/// How long a keyed `run` waits for another Taskdeck's lock when the store does not show that one
/// running the key's task: long enough for a run racing with the same key to write it.
const KEYED_LOCK_WAIT: Duration = Duration::from_secs(10);

/// Opens the engine. A `run` with an idempotency key that finds another Taskdeck driving the data
/// directory waits for it instead of failing: the other one may be running this very key (two
/// scripts retrying one submission), and once it is done this one returns its task. It waits as
/// long as the key's task is live there, and [`KEYED_LOCK_WAIT`] otherwise.
async fn open_engine(paths: Paths, config: Config, key: Option<String>) -> Result<Engine> {
    let Some(key) = key else { return Ok(Engine::open_with_config(paths, EngineOptions::default(), config).await?) };
    let mut idle_since = tokio::time::Instant::now();
    let mut said = false;
    loop {
        match Engine::open_with_config(paths.clone(), EngineOptions::default(), config.clone()).await {
            Err(e @ taskdeck_engine::EngineError::Lock(taskdeck_engine::lock::LockError::Held { .. })) => {
                let live = read_store(&paths)
                    .ok()
                    .flatten()
                    .and_then(|s| s.by_idempotency_key(&key).ok().flatten())
                    .filter(|t| !t.status.is_terminal());
                match live {
                    Some(t) => {
                        idle_since = tokio::time::Instant::now();
                        if !std::mem::replace(&mut said, true) {
                            terminal::err(&format!(
                                "task {} of this idempotency key is running in another Taskdeck; waiting for it\n",
                                t.id
                            ));
                        }
                    }
                    None if idle_since.elapsed() >= KEYED_LOCK_WAIT => return Err(e.into()),
                    None => {}
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return Ok(other?),
        }
    }
}

/// The store for reading only, without the engine's lock; `None` when nothing was ever stored, so
/// looking does not create a data directory. Its integrity check may still be running: a command
/// that reports success ends through [`once_checked`].
pub(crate) fn read_store(paths: &Paths) -> Result<Option<Store>> {
    let file = paths.store_file();
    if !file.exists() {
        return Ok(None);
    }
    Ok(Some(Store::open(file)?))
}

/// What a reader of [`read_store`] ends with once the store's integrity check has ended. The open
/// returned before the check did, so what was read could be printed at once; a store the check
/// finds damaged (in a page the command never read, too) is still never an exit 0: it ends the
/// command with the error a store refused at open gives (`damaged`, naming the file, exit 1),
/// whatever the read made of it.
pub(crate) fn once_checked<T>(store: Option<&Store>, read: Result<T>) -> Result<T> {
    match store.map(Store::checked) {
        Some(Err(e)) => Err(e.into()),
        _ => read,
    }
}

fn not_found(e: StoreError) -> CliError {
    CliError::runtime(e.to_string())
}

fn not_found_engine(e: taskdeck_engine::EngineError) -> CliError {
    CliError::runtime(e.to_string())
}

/// Quotes a path for the printed hint only when the shell would split it.
fn shell_word(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What a shell reports for a command whose output's reader went away (128 + SIGPIPE).
const EXIT_OUTPUT_CLOSED: u8 = 141;

/// Rust ignores SIGPIPE, and it stays ignored: restored, it would also kill the CLI, silently,
/// the moment it writes to a server that has stopped reading, leaving the task `working` and the
/// server running. A write to a server's closed pipe is then an error its session reports; only
/// our own output whose reader went away (`| head`) ends the command, quietly: `println!` panics
/// on that write, the hook keeps the panic unsaid and `main` turns it into the exit code.
fn quiet_on_closed_output() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !output_closed(info.payload()) {
            default(info);
        }
    }));
}

/// Whether a panic is `print!` failing because stdout's pipe is closed.
fn output_closed(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    // The errors a write to a pipe without a reader fails with: EPIPE on Unix; on Windows
    // ERROR_BROKEN_PIPE and ERROR_NO_DATA.
    let codes: &[i32] = if cfg!(windows) { &[109, 232] } else { &[32] };
    text.starts_with("failed printing to stdout")
        && codes.iter().any(|&c| text.ends_with(&std::io::Error::from_raw_os_error(c).to_string()))
}
