//! A `kill -9` soak of `taskdeck-cli` and the demo server it starts. Round after round a `run`,
//! `answer` or `resume` is started and, at a random moment, the CLI, its server or both are killed
//! with SIGKILL. After every round the store (read through `tasks --json` and `show --json`) and the
//! server's own task database must agree: no task lost, none duplicated, none changed after it
//! ended, every result right, nothing run twice; after a last `resume`, none stranded.
//!
//! `TASKDECK_SOAK_ROUNDS` rounds (default 36) are shared by `TASKDECK_SOAK_LANES` data directories
//! (default 2) driven side by side, each with its own server state, even lanes in the modern era and
//! odd ones held to the legacy era. `TASKDECK_SOAK_SEED` replays a run's choices (what to start,
//! when and what to kill); the machine's timing is never the same twice, so a replay takes the same
//! decisions, not the same interleavings. `make soak` runs the same test with many rounds; the
//! figures are in `docs/soak.md`.
#![cfg(target_os = "linux")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::cli::cli_command;
use taskdeck_test_support::{child_pids, demo_server_entry, pids_with_arg, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");
const ROUNDS_ENV: &str = "TASKDECK_SOAK_ROUNDS";
const LANES_ENV: &str = "TASKDECK_SOAK_LANES";
const SEED_ENV: &str = "TASKDECK_SOAK_SEED";
const DEFAULT_ROUNDS: usize = 36;
const DEFAULT_LANES: usize = 2;
/// Longer than any command here takes on a loaded machine: a command still running then is a hang.
const COMMAND_LIMIT: Duration = Duration::from_secs(60);
/// A server outliving its CLI by more than this would meet the next round's server on one state.
const SERVER_EXIT_LIMIT: Duration = Duration::from_secs(5);
const SERVICES: [&str; 4] = ["checkout", "search", "auth", "billing"];

/// splitmix64: small, and the same sequence everywhere for a seed, which is all a replay needs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn percent(&mut self, p: u64) -> bool {
        self.range(1, 100) <= p
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() as u64 - 1) as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Nothing,
    Cli,
    Server,
    Both,
}

#[derive(Debug)]
enum Action {
    Run { tool: &'static str, args: Value },
    Answer { id: String, service: &'static str },
    Resume,
}

impl Action {
    fn argv(&self) -> Vec<String> {
        match self {
            Action::Run { tool, args } => {
                ["run", "demo", tool, "--args", &args.to_string(), "--json"].map(str::to_owned).to_vec()
            }
            Action::Answer { id, service } => {
                ["answer", id, "--json", &json!({ "service": service }).to_string()].map(str::to_owned).to_vec()
            }
            Action::Resume => vec!["resume".into(), "--json".into()],
        }
    }

    /// How long the command may take when nothing is killed, so a kill lands anywhere in it; the
    /// start of the CLI and of its server is inside the window too.
    fn window_ms(&self) -> u64 {
        let start = 250;
        match self {
            Action::Run { tool: "count", args } => {
                start + args["n"].as_u64().unwrap_or(0) * args["delay_ms"].as_u64().unwrap_or(0)
            }
            Action::Run { tool: "generate_report", args } => {
                start + (args["seconds"].as_f64().unwrap_or(0.0) * 1000.0) as u64
            }
            Action::Run { .. } => start + 300,
            Action::Answer { .. } => start + 600,
            Action::Resume => start + 500,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Action::Run { .. } => "run",
            Action::Answer { .. } => "answer",
            Action::Resume => "resume",
        }
    }

    /// The exit code of the command when nothing was killed.
    fn clean_exit(&self) -> i32 {
        match self {
            Action::Run { tool: "diagnose_incident", .. } => 3,
            _ => 0,
        }
    }
}

/// What the store has shown of one task so far.
struct Seen {
    tool: String,
    arguments: Value,
    remote: Option<String>,
    /// Status, result and error once it ended: never to change again.
    ended: Option<Value>,
}

#[derive(Default)]
struct Stats {
    rounds: usize,
    commands: usize,
    cli_kills: usize,
    server_kills: usize,
    tasks: usize,
    /// Rounds by the command they started, and those in which something was killed.
    started: BTreeMap<&'static str, usize>,
    killed_in: BTreeMap<&'static str, usize>,
    statuses: BTreeMap<String, usize>,
    reasons: BTreeMap<String, usize>,
    server_rows: usize,
}

impl Stats {
    fn add(&mut self, other: Stats) {
        self.rounds += other.rounds;
        self.commands += other.commands;
        self.cli_kills += other.cli_kills;
        self.server_kills += other.server_kills;
        self.tasks += other.tasks;
        self.server_rows += other.server_rows;
        for (k, v) in other.started {
            *self.started.entry(k).or_default() += v;
        }
        for (k, v) in other.killed_in {
            *self.killed_in.entry(k).or_default() += v;
        }
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
        for (k, v) in other.reasons {
            *self.reasons.entry(k).or_default() += v;
        }
    }
}

/// One data directory, its config and its demo server's state, driven by one thread.
struct Lane {
    index: usize,
    seed: u64,
    /// Odd lanes hold the dual-era demo server to the legacy era, where a question rides on an
    /// open `tasks/result` instead of being polled, so a kill cuts different paths.
    era: &'static str,
    dir: tempfile::TempDir,
    config: PathBuf,
    state: PathBuf,
    rng: Rng,
    seen: BTreeMap<String, Seen>,
    /// The services each diagnosis was answered with (a killed answer may or may not have landed).
    answered: BTreeMap<String, BTreeSet<&'static str>>,
    /// What each round did, for the report of a failure.
    log: Vec<String>,
    stats: Stats,
    next_topic: usize,
}

type Check<T = ()> = Result<T, String>;

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    killed: Target,
}

impl Lane {
    fn new(index: usize, seed: u64) -> Lane {
        let dir = tempfile::Builder::new().prefix("taskdeck-soak-").tempdir().expect("a temporary directory");
        let state = dir.path().join("demo-state");
        let era = if index.is_multiple_of(2) { "modern" } else { "legacy" };
        let mut entry = demo_server_entry(&state);
        entry["era"] = json!(era);
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        Lane {
            index,
            seed,
            era,
            dir,
            config,
            state,
            rng: Rng(seed),
            seen: BTreeMap::new(),
            answered: BTreeMap::new(),
            log: Vec::new(),
            stats: Stats::default(),
            next_topic: 0,
        }
    }

    fn command(&self, args: &[String]) -> Command {
        cli_command(CLI, &self.config, &self.dir.path().join("data"), args)
    }

    /// Output goes to files, not pipes: a CLI killed or left unread must never block on a full pipe.
    fn spawn(&mut self, args: &[String]) -> Check<Child> {
        self.stats.commands += 1;
        let out = std::fs::File::create(self.dir.path().join("stdout")).map_err(|e| e.to_string())?;
        let err = std::fs::File::create(self.dir.path().join("stderr")).map_err(|e| e.to_string())?;
        self.command(args).stdout(out).stderr(err).spawn().map_err(|e| format!("cannot start the CLI: {e}"))
    }

    /// Runs a read-only command to its end (reads take no lock and start no server).
    fn read(&self, args: &[&str]) -> Check<Value> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let out = self.command(&args).output().map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "`{}` exited {:?}: {stdout}{}",
                args.join(" "),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        serde_json::from_str(&stdout).map_err(|e| format!("`{}` printed no JSON ({e}): {stdout}", args.join(" ")))
    }

    fn tasks(&self) -> Check<Vec<Value>> {
        match self.read(&["tasks", "--json"])? {
            Value::Array(tasks) => Ok(tasks),
            other => Err(format!("tasks --json is not a list: {other}")),
        }
    }

    /// Starts the command, kills what `target` says once `at` has passed (unless it ended before),
    /// and waits for the CLI and every server of this lane to be gone.
    fn drive(&mut self, args: &[String], target: Target, at: Duration) -> Check<Finished> {
        let mut child = self.spawn(args)?;
        let started = Instant::now();
        let mut killed = Target::Nothing;
        let mut status = None;
        while status.is_none() && started.elapsed() < at {
            status = child.try_wait().map_err(|e| e.to_string())?;
            std::thread::sleep(Duration::from_millis(5));
        }
        if status.is_none() && target != Target::Nothing {
            if matches!(target, Target::Server | Target::Both)
                && let Some(pid) = self.server_of(child.id(), Duration::from_millis(300))
            {
                kill_9(pid);
                self.stats.server_kills += 1;
                killed = Target::Server;
                // Sometimes the server the supervisor started again too, so a task re-attaches
                // more than once (or dies in the middle of re-attaching).
                if target == Target::Server && self.rng.percent(30) {
                    std::thread::sleep(Duration::from_millis(self.rng.range(50, 600)));
                    if child.try_wait().map_err(|e| e.to_string())?.is_none()
                        && let Some(again) = self.server_of(child.id(), Duration::from_millis(500))
                    {
                        kill_9(again);
                        self.stats.server_kills += 1;
                    }
                }
            }
            if matches!(target, Target::Cli | Target::Both) {
                kill_9(child.id());
                self.stats.cli_kills += 1;
                killed = if killed == Target::Server { Target::Both } else { Target::Cli };
            }
        }
        let status = loop {
            if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
                break s;
            }
            if started.elapsed() > COMMAND_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("hang: `{}` still ran after {COMMAND_LIMIT:?}", args.join(" ")));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // The servers die with their CLI (PR_SET_PDEATHSIG); one left over would share the state
        // with the next round's and run its tasks a second time.
        let deadline = Instant::now() + SERVER_EXIT_LIMIT;
        loop {
            let left = pids_with_arg(&self.state);
            if left.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                left.iter().for_each(|&pid| kill_9(pid));
                return Err(format!("servers {left:?} outlived the CLI by {SERVER_EXIT_LIMIT:?}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        Ok(Finished { code: status.code(), stdout: read("stdout"), stderr: read("stderr"), killed })
    }

    /// The demo server the CLI started, waiting up to `wait` for it to appear.
    fn server_of(&self, cli: u32, wait: Duration) -> Option<u32> {
        let deadline = Instant::now() + wait;
        loop {
            let servers = pids_with_arg(&self.state);
            if let Some(pid) = child_pids(cli).into_iter().find(|p| servers.contains(p)) {
                return Some(pid);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn choose(&mut self, tasks: &[Value]) -> Action {
        let waiting: Vec<String> = tasks.iter().filter(|t| is_waiting(t)).map(id_of).collect();
        let unfinished = tasks.iter().filter(|t| !is_terminal(t) && !is_waiting(t)).count();
        if !waiting.is_empty() && self.rng.percent(25) {
            let id = self.rng.pick(&waiting).clone();
            let service = *self.rng.pick(&SERVICES);
            return Action::Answer { id, service };
        }
        // Often enough that a kill cuts `resume` too, seldom enough that several tasks are left
        // for one `resume` to drive at once.
        if unfinished > 0 && self.rng.percent(20 + 15 * unfinished.min(4) as u64) {
            return Action::Resume;
        }
        match self.rng.range(1, 100) {
            1..=50 => {
                let n = self.rng.range(2, 8);
                let delay = self.rng.range(20, 100);
                Action::Run { tool: "count", args: json!({ "n": n, "delay_ms": delay }) }
            }
            51..=75 => {
                self.next_topic += 1;
                let topic = format!("soak lane {} report {}", self.index, self.next_topic);
                let seconds = self.rng.range(3, 12) as f64 / 10.0;
                Action::Run { tool: "generate_report", args: json!({ "topic": topic, "seconds": seconds }) }
            }
            _ => Action::Run { tool: "diagnose_incident", args: json!({}) },
        }
    }

    fn choose_target(&mut self) -> Target {
        match self.rng.range(1, 100) {
            1..=45 => Target::Cli,
            46..=70 => Target::Server,
            71..=85 => Target::Both,
            _ => Target::Nothing,
        }
    }

    fn round(&mut self, round: usize) -> Check {
        let tasks = self.tasks()?;
        let action = self.choose(&tasks);
        let target = self.choose_target();
        let at = Duration::from_millis(self.rng.range(0, action.window_ms()));
        if let Action::Answer { id, service } = &action {
            self.answered.entry(id.clone()).or_default().insert(service);
        }
        let argv = action.argv();
        let done = self.drive(&argv, target, at)?;
        self.log.push(format!(
            "round {round}: {} — kill {target:?} at {} ms, killed {:?}, exit {:?}",
            argv.join(" "),
            at.as_millis(),
            done.killed,
            done.code
        ));
        self.check_exit(&action, &done)?;
        *self.stats.started.entry(action.name()).or_default() += 1;
        if done.killed != Target::Nothing {
            *self.stats.killed_in.entry(action.name()).or_default() += 1;
        }
        let printed = printed_ids(&done.stdout);
        let runs = usize::from(matches!(action, Action::Run { .. }));
        self.check(runs, &printed)?;
        self.stats.rounds += 1;
        Ok(())
    }

    /// A command nobody killed ends the way its task does; one whose server was killed still ends
    /// by itself with an exit code of the contract, never by a signal or a panic.
    fn check_exit(&self, action: &Action, done: &Finished) -> Check {
        let said = || format!("\n--- stdout\n{}\n--- stderr\n{}", done.stdout, done.stderr);
        match (done.killed, done.code) {
            (Target::Cli | Target::Both, _) => Ok(()),
            (Target::Nothing, Some(code)) if code == action.clean_exit() => Ok(()),
            (Target::Server, Some(0..=4)) => Ok(()),
            (killed, code) => Err(format!("exit {code:?} (killed: {killed:?}){}", said())),
        }
    }

    /// The invariants, from the store through the CLI and from the server's own database.
    /// `runs` is how many `run` commands were started since the last check, `printed` the task ids
    /// the CLI printed meanwhile.
    fn check(&mut self, runs: usize, printed: &[String]) -> Check {
        let tasks = self.tasks()?;
        let mut ids = BTreeSet::new();
        for t in &tasks {
            if !ids.insert(id_of(t)) {
                return Err(format!("task {} is listed twice", id_of(t)));
            }
        }
        if let Some(lost) = self.seen.keys().chain(printed).find(|id| !ids.contains(*id)) {
            return Err(format!("task {lost} was lost: the store no longer lists it"));
        }
        let new = ids.iter().filter(|id| !self.seen.contains_key(*id)).count();
        if new > runs {
            return Err(format!("{new} new tasks after {runs} `run` commands"));
        }
        let mut remotes = BTreeMap::new();
        for t in &tasks {
            let id = id_of(t);
            let remote = t["remote_task_id"].as_str().map(str::to_owned);
            if let Some(r) = &remote
                && let Some(other) = remotes.insert(r.clone(), id.clone())
            {
                return Err(format!("tasks {other} and {id} share the server's task {r}"));
            }
            let seen = self.seen.entry(id.clone()).or_insert_with(|| Seen {
                tool: t["tool"].as_str().unwrap_or_default().to_owned(),
                arguments: t["arguments"].clone(),
                remote: None,
                ended: None,
            });
            if (seen.tool.as_str(), &seen.arguments) != (t["tool"].as_str().unwrap_or_default(), &t["arguments"]) {
                return Err(format!("task {id} changed its tool or arguments: {t}"));
            }
            match (&seen.remote, &remote) {
                (Some(was), now) if now.as_ref() != Some(was) => {
                    return Err(format!("task {id} had the server's task {was}, now {now:?}"));
                }
                _ => seen.remote = remote,
            }
            let ended =
                is_terminal(t).then(|| json!({"status": t["status"], "result": t["result"], "error": t["error"]}));
            match (&seen.ended, ended) {
                (Some(was), Some(now)) if *was != now => {
                    return Err(format!("task {id} ended as {was} and is now {now}"));
                }
                (Some(was), None) => return Err(format!("task {id} ended as {was} and is {} again", t["status"])),
                (None, Some(now)) => {
                    seen.ended = Some(now);
                    self.check_ended(t)?;
                }
                _ => {}
            }
        }
        self.check_server(&tasks)
    }

    /// Once, when a task is first seen ended: its result is right, and its log holds one end and at
    /// most one remote id.
    fn check_ended(&self, t: &Value) -> Check {
        let id = id_of(t);
        let shown = self.read(&["show", &id, "--json"])?;
        let events = shown["events"].as_array().cloned().unwrap_or_default();
        let kinds = |want: &[&str]| events.iter().filter(|e| want.contains(&e["kind"].as_str().unwrap_or(""))).count();
        let ends = kinds(&["result", "failed", "cancelled", "reclaimed"]);
        if ends != 1 {
            return Err(format!("task {id} has {ends} ends in its log: {shown:#}"));
        }
        if kinds(&["remote"]) > 1 {
            return Err(format!("task {id} was given more than one remote id: {shown:#}"));
        }
        if t["status"] != "completed" {
            return Ok(());
        }
        let result = &t["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        let right = match t["tool"].as_str() {
            Some("count") => {
                let n = &t["arguments"]["n"];
                result["structuredContent"]["counted"] == *n && text == format!("counted to {n}")
            }
            Some("generate_report") => {
                text.contains(&format!("# Report: {}", t["arguments"]["topic"].as_str().unwrap_or("?")))
            }
            Some("diagnose_incident") => {
                let service = result["structuredContent"]["service"].as_str().unwrap_or_default();
                self.answered.get(&id).is_some_and(|given| given.contains(service))
            }
            _ => false,
        };
        if right { Ok(()) } else { Err(format!("task {id} completed with a wrong result: {t:#}")) }
    }

    /// The demo server's own database: every remote id Taskdeck holds names one of its tasks, with
    /// the same tool and arguments, and for each tool and arguments it holds no more tasks than
    /// Taskdeck created (a task Taskdeck sent but never saw confirmed may be there without an id).
    fn check_server(&mut self, tasks: &[Value]) -> Check {
        let file = self.state.join("tasks.sqlite3");
        if !file.exists() {
            return Ok(());
        }
        let rows = server_rows(&file).map_err(|e| format!("the server's database: {e}"))?;
        self.stats.server_rows = rows.len();
        let mut unconfirmed: Vec<(&str, &Value)> = Vec::new();
        for t in tasks.iter().filter(|t| t["mode"] == "task") {
            let (tool, args) = (t["tool"].as_str().unwrap_or_default(), &t["arguments"]);
            match t["remote_task_id"].as_str() {
                Some(remote) => match rows.get(remote) {
                    Some(row) if row.tool == tool && row.arguments == *args => {}
                    Some(row) => return Err(format!("task {} is {row:?} on the server", id_of(t))),
                    None => return Err(format!("the server has no task {remote} for {}", id_of(t))),
                },
                None => unconfirmed.push((tool, args)),
            }
        }
        let confirmed: BTreeSet<&str> = tasks.iter().filter_map(|t| t["remote_task_id"].as_str()).collect();
        for (id, ServerRow { tool, arguments: args, .. }) in
            rows.iter().filter(|(id, _)| !confirmed.contains(id.as_str()))
        {
            match unconfirmed.iter().position(|(t, a)| t == tool && *a == args) {
                Some(at) => {
                    unconfirmed.swap_remove(at);
                }
                None => {
                    return Err(format!(
                        "the server ran {tool} {args} as task {id} more times than Taskdeck created it: \
                         ran twice"
                    ));
                }
            }
        }
        Ok(())
    }

    /// After the last `resume`, with every process gone: a task that ended here ended the same way
    /// on the server, and one waiting here waits there, so no answer went to a question the store
    /// still shows.
    fn check_server_agrees(&self, tasks: &[Value]) -> Check {
        let file = self.state.join("tasks.sqlite3");
        let rows = if file.exists() { server_rows(&file).map_err(|e| e.to_string())? } else { BTreeMap::new() };
        for t in tasks {
            let Some(row) = t["remote_task_id"].as_str().and_then(|r| rows.get(r)) else { continue };
            let here = t["status"].as_str().unwrap_or_default();
            let agree = match here {
                "completed" | "input_required" => row.status == here,
                // Taskdeck gave up on it (INTERRUPTED, UNKNOWN_TO_SERVER): the server may still
                // have finished it.
                _ => true,
            };
            if !agree {
                return Err(format!("task {} is {here} here and {} on the server: {t:#}", id_of(t), row.status));
            }
        }
        Ok(())
    }

    /// A last `resume`, nothing killed: afterwards every task has ended or waits on its question.
    fn finish(&mut self) -> Check {
        let argv = Action::Resume.argv();
        let done = self.drive(&argv, Target::Nothing, Duration::ZERO)?;
        self.log.push(format!("final: {} — exit {:?}", argv.join(" "), done.code));
        self.check_exit(&Action::Resume, &done)?;
        let printed = printed_ids(&done.stdout);
        self.check(0, &printed)?;
        let tasks = self.tasks()?;
        for t in &tasks {
            if !is_terminal(t) && !is_waiting(t) {
                return Err(format!("task {} is stranded after the last resume: {t:#}", id_of(t)));
            }
            let shown = self.read(&["show", &id_of(t), "--json"])?;
            let remotes = shown["events"].as_array().into_iter().flatten().filter(|e| e["kind"] == "remote").count();
            if remotes > 1 {
                return Err(format!("task {} was given {remotes} remote ids", id_of(t)));
            }
            *self.stats.statuses.entry(t["status"].as_str().unwrap_or("?").to_owned()).or_default() += 1;
            if let Some(reason) = t["error"]["reason"].as_str() {
                *self.stats.reasons.entry(reason.to_owned()).or_default() += 1;
            }
        }
        self.stats.tasks = tasks.len();
        self.check_server_agrees(&tasks)
    }
}

fn id_of(t: &Value) -> String {
    t["id"].as_str().unwrap_or_default().to_owned()
}

fn is_terminal(t: &Value) -> bool {
    matches!(t["status"].as_str(), Some("completed" | "failed" | "cancelled"))
}

fn is_waiting(t: &Value) -> bool {
    t["status"] == "input_required" && !t["question"].is_null()
}

/// The ids in what the CLI printed: a record (`run --json`) or a list of them (`resume --json`).
fn printed_ids(stdout: &str) -> Vec<String> {
    match serde_json::from_str::<Value>(stdout) {
        Ok(Value::Array(records)) => records.iter().map(id_of).collect(),
        Ok(record @ Value::Object(_)) => vec![id_of(&record)],
        _ => Vec::new(),
    }
}

/// One task in the demo server's database (schema: `crates/demo-server/src/store.rs`).
#[derive(Debug)]
struct ServerRow {
    tool: String,
    arguments: Value,
    status: String,
}

/// The demo server's tasks by id.
fn server_rows(file: &Path) -> rusqlite::Result<BTreeMap<String, ServerRow>> {
    let conn = rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    // A server killed while it created its database leaves the file without the table.
    let tables: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'tasks'", [], |r| r.get(0))?;
    if tables == 0 {
        return Ok(BTreeMap::new());
    }
    let mut stmt = conn.prepare("SELECT id, tool, arguments, status FROM tasks")?;
    let rows = stmt.query_map([], |r| {
        let arguments: String = r.get(2)?;
        let arguments = serde_json::from_str(&arguments).unwrap_or(Value::Null);
        Ok((r.get(0)?, ServerRow { tool: r.get(1)?, arguments, status: r.get(3)? }))
    })?;
    rows.collect()
}

/// A data directory's files and their sizes: a leftover `-journal` or `-wal` says how a kill ended.
fn files_in(dir: &Path) -> String {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| format!("{} {}", e.file_name().to_string_lossy(), e.metadata().map(|m| m.len()).unwrap_or(0)))
        .collect();
    files.sort();
    files.join(", ")
}

fn kill_9(pid: u32) {
    let Ok(pid) = i32::try_from(pid) else { return };
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a process that has already
    // ended makes it fail with ESRCH, which is fine here.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        _ => default,
    }
}

/// Where the summary goes whatever the test harness captures: `make test` shows the one line too.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[test]
fn kill_9_of_the_cli_and_its_server_loses_duplicates_strands_and_reruns_no_task() {
    let rounds: usize = env_number(ROUNDS_ENV, DEFAULT_ROUNDS);
    let lanes: usize = env_number(LANES_ENV, DEFAULT_LANES).max(1);
    let seed: u64 = env_number(SEED_ENV, {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (now.as_nanos() as u64) ^ u64::from(std::process::id())
    });
    say(&format!("soak: seed {seed} ({rounds} rounds, {lanes} lanes; replay with {SEED_ENV}={seed})"));
    let started = Instant::now();
    let outcomes: Vec<Result<Stats, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..lanes)
            .map(|index| {
                // Lane 0 takes the extra rounds; each lane's own seed follows from the run's.
                let share = rounds / lanes + usize::from(index < rounds % lanes);
                let lane_seed = Rng(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407)).next();
                scope.spawn(move || {
                    let mut lane = Lane::new(index, lane_seed);
                    let outcome = (0..share).try_for_each(|r| lane.round(r)).and_then(|()| lane.finish());
                    match outcome {
                        Ok(()) => Ok(lane.stats),
                        Err(problem) => {
                            let dir = lane.dir.keep();
                            let tail = lane.log.iter().rev().take(12).rev().cloned().collect::<Vec<_>>().join("\n  ");
                            Err(format!(
                                "lane {index} ({} era, seed {}): {problem}\n  last rounds:\n  {tail}\n  data kept in {} \
                                 ({})",
                                lane.era,
                                lane.seed,
                                dir.display(),
                                files_in(&dir.join("data"))
                            ))
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a lane panicked".into()))).collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut total = Stats::default();
    let mut problems = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(stats) => total.add(stats),
            Err(problem) => problems.push(problem),
        }
    }
    say(&format!(
        "soak: {} rounds {:?}, {} commands, {} kills of the CLI, {} of the server (rounds with a kill: {:?}), \
         {} tasks {:?} (failure reasons {:?}), {} on the server, {seconds:.1} s, seed {seed}",
        total.rounds,
        total.started,
        total.commands,
        total.cli_kills,
        total.server_kills,
        total.killed_in,
        total.tasks,
        total.statuses,
        total.reasons,
        total.server_rows,
    ));
    assert!(
        problems.is_empty(),
        "the soak (seed {seed}, replay with {SEED_ENV}={seed}) found:\n{}",
        problems.join("\n")
    );
}

/// A lane whose store holds one completed `count`, not yet checked, and that task's id.
fn lane_with_a_count() -> (Lane, String) {
    let mut lane = Lane::new(0, 1);
    let done = lane
        .drive(
            &Action::Run { tool: "count", args: json!({"n": 2, "delay_ms": 0}) }.argv(),
            Target::Nothing,
            Duration::ZERO,
        )
        .unwrap();
    assert_eq!(done.code, Some(0), "{}{}", done.stdout, done.stderr);
    let id = printed_ids(&done.stdout).pop().unwrap();
    (lane, id)
}

fn sql(file: &Path, statement: &str) {
    rusqlite::Connection::open(file).unwrap().execute_batch(statement).unwrap();
}

#[track_caller]
fn assert_finds(found: Check, what: &str) {
    match found {
        Err(problem) => assert!(problem.contains(what), "expected {what:?}, found: {problem}"),
        Ok(()) => panic!("the checks found nothing; expected {what:?}"),
    }
}

/// The checks themselves, each on a store or server database damaged the way a defect would leave it.
#[test]
fn the_soak_notices_a_wrong_result_a_changed_end_a_task_run_twice_and_a_lost_task() {
    let (mut lane, _) = lane_with_a_count();
    let store = lane.dir.path().join("data/taskdeck.sqlite3");
    sql(
        &store,
        r#"UPDATE tasks SET result = '{"content":[{"type":"text","text":"counted to 3"}],"structuredContent":{"counted":3}}'"#,
    );
    assert_finds(lane.check(1, &[]), "wrong result");

    let (mut lane, id) = lane_with_a_count();
    let store = lane.dir.path().join("data/taskdeck.sqlite3");
    let server = lane.state.join("tasks.sqlite3");
    lane.check(1, std::slice::from_ref(&id)).unwrap();
    sql(
        &server,
        "INSERT INTO tasks SELECT 'copy', tool, arguments, era, status, status_message, progress_token, checkpoint, question, question_key, answer, result, error, created_at, updated_at, created_ms, ttl_ms, poll_interval_ms, cancel_requested, client_elicitation, client_sampling FROM tasks",
    );
    assert_finds(lane.check(0, &[]), "ran twice");
    sql(&server, "DELETE FROM tasks WHERE id = 'copy'");
    lane.check(0, &[]).unwrap();
    sql(&store, "UPDATE tasks SET status = 'failed'");
    assert_finds(lane.check(0, &[]), "ended as");
    sql(&store, "UPDATE tasks SET status = 'completed'");
    lane.check(0, &[]).unwrap();
    // As if the row were gone: the log's foreign key is the only thing that would stop a rename.
    sql(&store, &format!("PRAGMA foreign_keys = OFF; UPDATE tasks SET id = 'elsewhere' WHERE id = '{id}'"));
    assert_finds(lane.check(0, &[]), "was lost");
}

/// What the soak found (seed 1796124896909765964, legacy lane 1, round 0: `run` killed 7 ms after it
/// started): the first command on a new data directory, killed while its store switches to WAL,
/// leaves a one-page `taskdeck.sqlite3` and a hot rollback journal beside it. The store's first
/// look at a file (`inspect` in `crates/store/src/open.rs`) is read-only, and a read-only
/// connection cannot roll a hot journal back: every command after that, `tasks` and `resume`
/// alike, fails with "database error: attempt to write a readonly database", for good, until the
/// journal was deleted by hand. The store now rolls such a journal back before it looks again.
#[test]
fn a_cli_killed_while_it_creates_the_store_leaves_a_data_directory_the_next_command_opens() {
    use std::os::unix::fs::DirBuilderExt;
    let lane = Lane::new(0, 1);
    let data = lane.dir.path().join("data");
    std::fs::DirBuilder::new().mode(0o700).create(&data).unwrap();
    let store = data.join("taskdeck.sqlite3");
    // The state the kill left, byte for byte where it matters: page 1 already written in WAL
    // format, and the journal's header (no pages; the file was empty before) still on disk.
    let conn = rusqlite::Connection::open(&store).unwrap();
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).unwrap();
    drop(conn);
    let mut journal = vec![0u8; 512];
    journal[..8].copy_from_slice(&[0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);
    journal[12..16].copy_from_slice(&[0x3b, 0x74, 0x73, 0x62]);
    journal[20..24].copy_from_slice(&512u32.to_be_bytes());
    journal[24..28].copy_from_slice(&4096u32.to_be_bytes());
    std::fs::write(data.join("taskdeck.sqlite3-journal"), journal).unwrap();

    assert_eq!(lane.read(&["tasks", "--json"]), Ok(json!([])));
    let run = Action::Run { tool: "count", args: json!({"n": 1, "delay_ms": 0}) }.argv();
    let out = lane.command(&run).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
