//! Legacy client-hosted questions that outlive Taskdeck: a remote server (a Streamable HTTP
//! fixture, `support/hosted_server.py`) makes its `sampling/createMessage` (or
//! `elicitation/create`) a task on Taskdeck's side and follows it with `tasks/get` and
//! `tasks/result`; the `taskdeck-cli` that got the question ends (killed, or on its own at the
//! question), a new one resumes the server's session, the user answers there, and the server gets
//! the answer through the hosted task, which its own task's result quotes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::cli::cli_command;

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// The fixture, killed when dropped.
struct Fixture {
    url: String,
    child: Child,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture(scenario: &str, log: &Path) -> Fixture {
    fixture_paused(scenario, log, &log.with_extension("pause"))
}

/// The fixture sends no poll while `pause` exists.
fn fixture_paused(scenario: &str, log: &Path, pause: &Path) -> Fixture {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/hosted_server.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(scenario)
        .env("FIXTURE_LOG", log)
        .env("FIXTURE_PAUSE", pause)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the fixture's URL");
    Fixture { url: line.trim().to_owned(), child }
}

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Env {
    fn new(url: &str) -> Env {
        let dir = tempfile::tempdir().expect("dir");
        let config = taskdeck_test_support::write_servers_config(
            &dir.path().join("servers.json"),
            [("hosted", json!({ "url": url, "era": "legacy" }))],
        );
        Env { dir, config }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = cli_command(CLI, &self.config, &self.dir.path().join("data"), args);
        c.env("TASKDECK_SIGN_IN_STORE", "file");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("the CLI runs")
    }

    fn only_task(&self) -> Value {
        let out = self.run(&["tasks", "--json"]);
        let tasks: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        tasks.as_array().and_then(|a| a.first().cloned()).unwrap_or(Value::Null)
    }

    fn show(&self, id: &str) -> Value {
        let out = self.run(&["show", id, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }

    /// The hosted tasks as the store keeps them: (task, outcome).
    fn hosted_rows(&self) -> Vec<(Value, Option<Value>)> {
        let conn = rusqlite::Connection::open(self.dir.path().join("data").join("taskdeck.sqlite3")).expect("store");
        let mut st = conn.prepare("SELECT task, outcome FROM hosted_tasks ORDER BY seq").expect("table");
        st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))
            .expect("rows")
            .map(|r| {
                let (t, o) = r.expect("row");
                (serde_json::from_str(&t).expect("task"), o.map(|o| serde_json::from_str(&o).expect("outcome")))
            })
            .collect()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn log_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Starts `ask_model` and ends the CLI while its question is pending: killed as soon as the store
/// shows the question, or ended on its own at it (exit 3), whichever comes first.
fn ask_and_end(env: &Env) -> String {
    let mut run = env.cmd(&["run", "hosted", "ask_model"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = env.only_task();
        if t["status"] == "input_required" && !t["question"].is_null() {
            let _ = run.kill();
            let _ = run.wait();
            return t["id"].as_str().expect("id").to_owned();
        }
        if let Ok(Some(status)) = run.try_wait() {
            assert_eq!(status.code(), Some(3), "the run ended before its question: {t}");
        }
        assert!(Instant::now() < deadline, "no question came: {t}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_end(env: &Env, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t = env.show(id);
        if ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap_or_default()) {
            return t;
        }
        assert!(Instant::now() < deadline, "the task did not end: {t}");
        // Nobody drives it between commands: `resume` follows it to its end.
        let _ = env.run(&["resume"]);
    }
}

fn result_text(t: &Value) -> String {
    t["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_hosted_sampling_question_answered_after_taskdeck_restarts_still_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    let server = fixture("sample", &log);
    let env = Env::new(&server.url);

    let id = ask_and_end(&env);
    let rows = env.hosted_rows();
    assert_eq!(rows.len(), 1, "the hosted task is kept: {rows:?}");
    assert_eq!((rows[0].0["status"].as_str(), &rows[0].1), (Some("input_required"), &None));
    let t = env.show(&id);
    assert_eq!(t["question"]["asks"]["kind"], "sampling", "the question is still shown: {t}");

    // A new process resumes the session, with its hosted task, and takes the answer.
    let out = env.run(&["answer", &id, "--json", r#"{"text": "Teal."}"#]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let t = wait_end(&env, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(result_text(&t), "the server got: Teal.", "{t}");

    let lines = log_lines(&log);
    let inits = lines.iter().filter(|l| l["event"] == "initialize").count();
    assert_eq!(inits, 1, "the session was resumed, not made again: {lines:?}");
    let declared = &lines.iter().find(|l| l["event"] == "initialize").unwrap()["capabilities"];
    assert!(declared["tasks"]["requests"]["sampling"]["createMessage"].is_object(), "{declared}");
    let ended = lines.iter().find(|l| l["event"] == "hosted task ended").map(|l| &l["status"]);
    assert_eq!(ended, Some(&json!("completed")), "{lines:?}");
    // With nothing left to follow there the session ends, and its hosted tasks with it.
    if lines.iter().any(|l| l["event"] == "session deleted") {
        assert_eq!(env.hosted_rows(), []);
    }
}

#[test]
fn a_hosted_elicitation_answered_after_a_restart_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    let server = fixture("elicit", &log);
    let env = Env::new(&server.url);

    let id = ask_and_end(&env);
    assert_eq!(env.show(&id)["question"]["asks"]["kind"], "form");
    let out = env.run(&["answer", &id, "--json", r#"{"colour": "ochre"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let t = wait_end(&env, &id);
    assert_eq!(result_text(&t), r#"the server got: {"colour": "ochre"}"#, "{t}");
}

#[test]
fn a_hosted_task_answered_before_a_restart_gives_the_server_its_outcome_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    let pause = dir.path().join("pause");
    let server = fixture_paused("sample", &log, &pause);
    let env = Env::new(&server.url);

    let id = ask_and_end(&env);
    // The server looks away: the answer is given, kept, and the process that took it is killed
    // before the server asks about it.
    std::fs::write(&pause, "").unwrap();
    let mut answer = env
        .cmd(&["answer", &id, "--json", r#"{"text": "Saffron."}"#])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let kept = |env: &Env| {
        env.hosted_rows().first().is_some_and(|(t, _)| t["status"] == "completed") && !env.show(&id)["answer"].is_null()
    };
    while !kept(&env) {
        assert!(Instant::now() < deadline, "the answer was not kept: {:?}", env.hosted_rows());
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = answer.kill();
    let _ = answer.wait();
    let rows = env.hosted_rows();
    assert_eq!(rows[0].1.as_ref().map(|o| &o["result"]["content"]["text"]), Some(&json!("Saffron.")), "{rows:?}");

    // Another process resumes the session; the server asks now, and the kept outcome answers it.
    std::fs::remove_file(&pause).unwrap();
    let t = wait_end(&env, &id);
    assert_eq!(result_text(&t), "the server got: Saffron.", "{t}");
    let answers = t["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "answer").count();
    assert_eq!(answers, 1, "answered once: {t}");
}
