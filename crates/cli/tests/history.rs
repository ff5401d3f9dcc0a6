//! The history commands through the real binary with the real demo server: `tasks` filters and
//! pages, search, `delete`, `prune`, `export` and `pin`, with their exit codes.

use std::path::PathBuf;

use serde_json::{Value, json};
use taskdeck_test_support::cli::{Out, cli_command, id_of};
use taskdeck_test_support::{demo_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Env {
    fn demo() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let entry = demo_server_entry(&dir.path().join("demo-state"));
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        Env { dir, config }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, args: &[&str]) -> Out {
        cli_command(CLI, &self.config, &self.data_dir(), args).output().unwrap().into()
    }

    fn ok(&self, args: &[&str]) -> Out {
        let out = self.run(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        out
    }

    fn tasks(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["tasks", "--json"];
        args.extend_from_slice(extra);
        self.ok(&args).json().as_array().cloned().unwrap()
    }

    fn report(&self, topic: &str) -> String {
        let args = json!({"topic": topic, "seconds": 0}).to_string();
        let out = self.ok(&["run", "demo", "generate_report", "--args", &args, "--json"]);
        id_of(&out.json())
    }
}

fn ids(tasks: &[Value]) -> Vec<String> {
    tasks.iter().map(id_of).collect()
}

#[test]
fn tasks_filters_pages_and_searches_and_is_unchanged_without_flags() {
    let env = Env::demo();
    let tides = env.report("tides");
    let lighthouses = env.report("lighthouses");
    let notes = env.ok(&["run", "demo", "notes_search", "--args", r#"{"query": "tasks"}"#, "--json"]).json();
    let notes = id_of(&notes);
    assert_eq!(env.run(&["run", "demo", "flaky_export", "--args", r#"{"fail_at": 0}"#]).code, 1);

    // Without flags: every task, whole records, as before.
    let all = env.tasks(&[]);
    assert_eq!(all.len(), 4);
    for field in ["id", "server", "tool", "arguments", "status", "result", "error", "created_at", "updated_at"] {
        assert!(all[1].get(field).is_some(), "{field} missing from {}", all[1]);
    }
    assert!(all[1].get("pinned").is_none(), "the record's fields are as they were");
    assert_eq!(ids(&all)[1..], [notes.clone(), lighthouses.clone(), tides.clone()]);

    assert_eq!(ids(&env.tasks(&["--tool", "generate_report"])), [lighthouses.clone(), tides.clone()]);
    assert_eq!(env.tasks(&["--server", "demo"]).len(), 4);
    assert!(env.tasks(&["--server", "elsewhere"]).is_empty());
    assert_eq!(env.tasks(&["--status", "failed"]).len(), 1);
    // Pages: --limit, then --before the last one shown (a prefix will do).
    let first = env.tasks(&["--limit", "2"]);
    assert_eq!(first.len(), 2);
    let last = id_of(&first[1]);
    let rest = env.tasks(&["--before", &last[..8]]);
    assert_eq!([ids(&first), ids(&rest)].concat(), ids(&all));
    // A word of a result, of the arguments; quoting a user cannot break.
    assert_eq!(ids(&env.tasks(&["--search", "lighthouses"])), [lighthouses.as_str()]);
    assert_eq!(ids(&env.tasks(&["--search", "topic=tides"])), [tides.as_str()]);
    assert_eq!(env.tasks(&["--search", "\"Report\" lightho*"]).len(), 1);
    assert!(env.tasks(&["--search", "NEAR( \" AND"]).is_empty());
    let out = env.ok(&["tasks", "--search", "tides"]);
    assert!(out.stdout.starts_with("ID") && out.stdout.contains("generate_report"), "{out:?}");
    let out = env.run(&["tasks", "--before", "nosuchtask"]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn delete_removes_a_finished_task_and_refuses_a_waiting_one_unless_forced() {
    let env = Env::demo();
    let done = env.report("tides");
    let out = env.run(&["run", "demo", "diagnose_incident"]);
    assert_eq!(out.code, 3, "{out:?}");
    let waiting = id_of(&env.tasks(&["--status", "input_required"])[0]);

    let out = env.run(&["delete", &waiting[..8]]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("input_required"), "the real state: {out:?}");
    assert_eq!(env.tasks(&[]).len(), 2, "nothing deleted");
    // All or nothing: a finished task beside it stays too.
    assert_eq!(env.run(&["delete", &done, &waiting]).code, 1);
    assert_eq!(env.tasks(&[]).len(), 2);

    let out = env.ok(&["delete", &done[..8]]);
    assert!(out.stdout.contains(&format!("task {done} deleted")), "{out:?}");
    let out = env.ok(&["delete", &waiting, "--force"]);
    assert!(out.stdout.contains(&waiting), "{out:?}");
    assert!(env.tasks(&[]).is_empty());
    assert_eq!(env.run(&["show", &done]).code, 1, "gone");
    assert!(env.tasks(&["--search", "tides"]).is_empty(), "from the search index too");
    assert_eq!(env.run(&["delete", "nosuchtask"]).code, 1);
    assert_eq!(env.run(&["delete"]).code, 2, "a task is required");

    // The purge log says what was removed, and why, without what it held.
    let conn = rusqlite::Connection::open(env.data_dir().join("taskdeck.sqlite3")).unwrap();
    let lines: Vec<(String, String, String)> = conn
        .prepare("SELECT task_id, tool, why FROM purge_log ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        lines,
        [(done, "generate_report".into(), "user".into()), (waiting, "diagnose_incident".into(), "user".into())]
    );
}

#[test]
fn prune_keeps_pinned_and_waiting_tasks_and_says_what_it_removes() {
    let env = Env::demo();
    let oldest = env.report("one");
    let pinned = env.report("two");
    let newest = env.report("three");
    assert_eq!(env.run(&["run", "demo", "diagnose_incident"]).code, 3);
    env.ok(&["pin", &pinned[..8]]);

    // No rule is a usage error; so is a live status or a bad duration.
    assert_eq!(env.run(&["prune"]).code, 2);
    assert_eq!(env.run(&["prune", "--status", "working"]).code, 2);
    assert_eq!(env.run(&["prune", "--older-than", "soon"]).code, 2);
    assert_eq!(env.run(&["prune", "--older-than", "30x"]).code, 2);

    let out = env.ok(&["prune", "--keep", "0", "--dry-run", "--json"]);
    let report = out.json();
    assert_eq!(report["dry_run"], true);
    let would: Vec<String> = report["removed"].as_array().unwrap().iter().map(id_of).collect();
    assert_eq!(would, [newest.clone(), oldest.clone()], "pinned and waiting tasks are kept");
    assert_eq!(env.tasks(&[]).len(), 4, "a dry run removes nothing");

    let out = env.ok(&["prune", "--older-than", "30d"]);
    assert!(out.stderr.contains("removed 0 tasks"), "{out:?}");
    let out = env.ok(&["prune", "--keep", "1", "--status", "completed", "--json"]);
    let removed: Vec<String> = out.json()["removed"].as_array().unwrap().iter().map(id_of).collect();
    assert_eq!(removed, [oldest.as_str()]);
    env.ok(&["unpin", &pinned]);
    env.ok(&["prune", "--status", "completed"]);
    let left = env.tasks(&[]);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["status"], "input_required");
    assert_eq!(env.run(&["pin", "nosuchtask"]).code, 1);
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Reads a CSV as RFC 4180 writes it: quoted cells may hold commas, quotes and line breaks.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    rows
}

#[test]
fn export_writes_jsonl_csv_and_markdown_privately_and_defuses_formulas() {
    let env = Env::demo();
    let formula = env.report("=HYPERLINK(\"http://evil.example\",\"click\")");
    let plain = env.report("tides, and \"quotes\"");
    let out_dir = env.dir.path().join("exports");

    let jsonl = out_dir.join("all.jsonl");
    let out = env.ok(&["export", "--output", jsonl.to_str().unwrap()]);
    assert!(out.stderr.contains("exported 2 tasks"), "{out:?}");
    let records: Vec<Value> = read(&jsonl).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(ids(&records), [plain.clone(), formula.clone()]);
    assert_eq!(records[0]["arguments"]["topic"], "tides, and \"quotes\"");
    assert!(records[0]["result"]["content"][0]["text"].as_str().unwrap().contains("tides"));
    assert!(records[0]["events"].as_array().unwrap().iter().any(|e| e["kind"] == "result"), "with events");
    #[cfg(unix)]
    assert_eq!(mode(&jsonl), 0o600);

    let csv = out_dir.join("all.csv");
    env.ok(&["export", "--format", "csv", "--output", csv.to_str().unwrap()]);
    let rows = parse_csv(&read(&csv));
    assert_eq!(rows.len(), 3, "{rows:?}");
    let header = &rows[0];
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(rows[1][col("id")], plain);
    let args: Value = serde_json::from_str(&rows[1][col("arguments")]).unwrap();
    assert_eq!(args["topic"], "tides, and \"quotes\"", "quoting round-trips");
    assert!(rows[2][col("result")].contains("HYPERLINK"));
    for row in &rows[1..] {
        for cell in row {
            assert!(!cell.starts_with(['=', '+', '-', '@']), "a cell a spreadsheet would run: {cell:?}");
        }
    }
    #[cfg(unix)]
    assert_eq!(mode(&csv), 0o600);

    let md = out_dir.join("report.md");
    env.ok(&["export", "--format", "md", "--search", "tides", "--output", md.to_str().unwrap()]);
    let text = read(&md);
    assert!(text.starts_with("# Taskdeck export"), "{text}");
    assert!(text.contains("## generate\\_report on demo: completed"), "{text}");
    assert!(text.contains("# Report: tides"), "the result as text: {text}");
    assert!(!text.contains(&formula), "only what the search found");

    // To stdout, by status; an unknown format is a usage error; a file is replaced whole.
    let out = env.ok(&["export", "--status", "completed"]);
    assert_eq!(out.stdout.lines().count(), 2);
    assert_eq!(env.run(&["export", "--format", "xml"]).code, 2);
    std::fs::write(&csv, "old").unwrap();
    env.ok(&["export", "--format", "csv", "--search", "nothingmatches", "--output", csv.to_str().unwrap()]);
    assert_eq!(parse_csv(&read(&csv)).len(), 1, "the header only");
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 3, "no temporary file is left");
}
