//! Remote tasks outlive the `taskdeck-cli` process that started them, over Streamable HTTP in both
//! eras: against the reference server (legacy, whose tasks live in its HTTP session) and the demo
//! server's `--http` mode (both eras, its tasks durable beside its sessions), each on loopback,
//! with real CLI processes and their real store files.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use taskdeck_store::Store;
use taskdeck_test_support::cli::{Out, TestCli, cli_command, has_remote, id_of, result_events};
use taskdeck_test_support::{LoopbackServer, demo_server_http, everything_server_http, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// One data directory and config per test.
struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
    server: String,
}

impl Env {
    fn new(server: &str, entry: Value) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let config = write_servers_config(&dir.path().join("servers.json"), [(server, entry)]);
        Env { dir, config, server: server.into() }
    }

    /// The session id the store keeps for the server, read while no CLI runs.
    fn stored_session(&self) -> Option<String> {
        let store = Store::open(self.dir.path().join("data/taskdeck.sqlite3")).unwrap();
        store.http_session(&self.server).unwrap().map(|s| s.session_id)
    }

    fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("data/logs/servers/{}.log", self.server)))
            .unwrap_or_default()
    }
}

impl TestCli for Env {
    fn cmd(&self, args: &[&str]) -> Command {
        cli_command(CLI, &self.config, &self.dir.path().join("data"), args)
    }

    /// Its output unread: these tests kill the process and read the store instead.
    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    }
}

fn everything() -> (LoopbackServer, Env) {
    let server = everything_server_http(None);
    let env = Env::new("everything", server.entry(None));
    (server, env)
}

const AMBIGUOUS: &str = r#"{"topic":"rust","ambiguous":true}"#;

#[test]
fn a_reference_server_question_left_by_one_process_is_answered_by_the_next() {
    let (_server, env) = everything();
    let out = env.run(&["run", "everything", "simulate-research-query", "--args", AMBIGUOUS]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.tasks()[0]);
    assert!(env.stored_session().is_some(), "the session holding the task is kept for the next process");
    assert!(!env.server_log().contains(&env.stored_session().unwrap()), "the session id is never logged");

    let out = env.run(&["answer", &id, "--json", r#"{"interpretation":"technical"}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("# Research Report: rust (technical)"), "{out:?}");
    assert!(env.server_log().contains("resumed the stored HTTP session"), "{}", env.server_log());
    assert_eq!(env.stored_session(), None, "nothing runs there any more: the session was ended and forgotten");
}

#[test]
fn a_reference_server_task_whose_cli_was_killed_is_finished_by_resume() {
    let (_server, env) = everything();
    let t = env
        .kill_9_when(&["run", "everything", "simulate-research-query", "--args", r#"{"topic":"tides"}"#], has_remote);
    assert_eq!(env.show(&id_of(&t))["status"], "working");

    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()[0]["status"], "completed", "{out:?}");
    let t = env.show(&id_of(&t));
    assert_eq!(result_events(&t), 1, "{t}");
    assert!(t["result"].to_string().contains("Research Report: tides"), "{t}");
}

#[test]
fn after_the_reference_server_restarts_resume_reports_its_task_lost_and_starts_a_new_session() {
    let (mut server, env) = everything();
    let id =
        id_of(&env.kill_9_when(
            &["run", "everything", "simulate-research-query", "--args", r#"{"topic":"tides"}"#],
            has_remote,
        ));
    let old = env.stored_session().expect("a session kept");
    server.kill();
    let _server = everything_server_http(Some(server.port()));

    let started = Instant::now();
    let out = env.run(&["resume", "--json"]);
    assert!(started.elapsed() < Duration::from_secs(60), "no hang: {out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "failed", "{t}");
    let reason = t["error"].to_string();
    assert!(reason.contains("no longer knows"), "a reason the user can read: {reason}");
    let log = env.server_log();
    assert!(log.contains("the stored HTTP session could not be resumed"), "{log}");
    assert_ne!(env.stored_session().as_deref(), Some(old.as_str()), "the gone session is not kept");
}

fn demo(era: &str) -> (tempfile::TempDir, LoopbackServer, Env) {
    let state = tempfile::tempdir().unwrap();
    let server = demo_server_http(state.path(), "127.0.0.1:0");
    let env = Env::new("demo", server.entry(Some(era)));
    (state, server, env)
}

#[test]
fn a_demo_server_report_over_http_completes_in_both_eras() {
    for era in ["legacy", "modern"] {
        let (_state, _server, env) = demo(era);
        let out = env.run(&["run", "demo", "generate_report", "--args", r#"{"topic":"tides","seconds":0.3}"#]);
        assert_eq!(out.code, 0, "{era}: {out:?}");
        assert!(out.stdout.contains("# Report: tides"), "{era}: {out:?}");
        assert_eq!(env.stored_session(), None, "{era}: nothing left to resume");
    }
}

#[test]
fn a_demo_server_question_over_http_is_answered_by_a_second_process_in_both_eras() {
    for era in ["legacy", "modern"] {
        let (_state, _server, env) = demo(era);
        let out = env.run(&["run", "demo", "diagnose_incident"]);
        assert_eq!(out.code, 3, "{era}: {out:?}");
        let id = id_of(&env.tasks()[0]);
        assert_eq!(env.stored_session().is_some(), era == "legacy", "{era}: only a legacy session is kept");

        let out = env.run(&["answer", &id, "--json", r#"{"service": "auth"}"#]);
        assert_eq!(out.code, 0, "{era}: {out:?}");
        assert_eq!(env.show(&id)["status"], "completed", "{era}");
    }
}

#[test]
fn a_demo_server_restarted_mid_task_over_http_lets_resume_complete_the_task_in_both_eras() {
    for era in ["legacy", "modern"] {
        let (state, mut server, env) = demo(era);
        let t = env
            .kill_9_when(&["run", "demo", "generate_report", "--args", r#"{"topic":"tides","seconds":3}"#], has_remote);
        // Its sessions die with it; its tasks are in its state directory.
        server.kill();
        let _server = demo_server_http(state.path(), &format!("127.0.0.1:{}", server.port()));

        let out = env.run(&["resume", "--json"]);
        assert_eq!(out.code, 0, "{era}: {out:?}");
        assert_eq!(out.json()[0]["status"], "completed", "{era}: {out:?}");
        let t = env.show(&id_of(&t));
        assert_eq!(result_events(&t), 1, "{era}: {t}");
        if era == "legacy" {
            let log = env.server_log();
            assert!(log.contains("the stored HTTP session could not be resumed"), "{log}");
        }
    }
}

#[test]
fn a_reference_server_question_over_http_is_answered_in_the_same_process() {
    let (_server, env) = everything();
    let args = ["run", "everything", "simulate-research-query", "--args", AMBIGUOUS];
    let out = env.run(&[&args[..], &["--answer", r#"{"interpretation":"historical"}"#]].concat());
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("# Research Report: rust (historical)"), "{out:?}");
}

#[test]
fn a_session_stored_for_one_url_is_never_sent_to_another() {
    let (server, env) = everything();
    assert_eq!(env.run(&["run", "everything", "simulate-research-query", "--args", AMBIGUOUS]).code, 3);
    let id = id_of(&env.tasks()[0]);
    let old = env.stored_session().expect("a session kept");
    // The same server under another name: to Taskdeck, another endpoint.
    let elsewhere = server.url.replace("127.0.0.1", "localhost");
    write_servers_config(&env.config, [("everything", serde_json::json!({ "url": elsewhere }))]);

    let out = env.run(&["answer", &id, "--json", r#"{"interpretation":"technical"}"#]);
    assert_ne!(out.code, 0, "{out:?}");
    let log = env.server_log();
    assert!(log.contains(&format!("connecting to {elsewhere}")), "{log}");
    assert!(!log.contains("resumed the stored HTTP session"), "{log}");
    assert_ne!(env.stored_session().as_deref(), Some(old.as_str()));
    assert_eq!(env.show(&id)["status"], "failed", "the new session knows nothing of the task");
}

/// The demo server's task left running under a CLI whose server then went away for good.
fn outage(era: &str) -> (tempfile::TempDir, Env, String, std::process::Child) {
    let (state, mut server, env) = demo(era);
    let child = env
        .cmd(&["run", "demo", "generate_report", "--args", r#"{"topic":"tides","seconds":60}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = id_of(&env.wait_task(has_remote));
    server.kill();
    (state, env, id, child)
}

#[test]
fn a_run_whose_server_stays_unreachable_says_the_task_has_not_failed_and_resume_picks_it_up() {
    let (_state, env, id, child) = outage("modern");
    let out: Out = child.wait_with_output().unwrap().into();
    assert_eq!(env.show(&id)["status"], "working", "{out:?}");
    // The contract's code for a task the run could not follow to its end (`exit_for(Working)`).
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(&format!("task {id} has not failed: it is still working")), "{out:?}");
    assert!(
        out.stderr.contains("`taskdeck-cli resume` picks it up once its server \"demo\" can be reached"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("error:"), "nothing went wrong with the task: {out:?}");
}

#[test]
fn resume_during_an_outage_says_which_task_waits_for_which_server_and_what_to_do() {
    let (_state, mut server, env) = demo("modern");
    let t =
        env.kill_9_when(&["run", "demo", "generate_report", "--args", r#"{"topic":"tides","seconds":60}"#], has_remote);
    server.kill();

    let out = env.run(&["resume"]);
    // As it always was: only a task waiting for a sign-in makes it 3.
    assert_eq!(out.code, 0, "{out:?}");
    let id = id_of(&t);
    let said = format!("task {id} (generate_report) is still working, waiting for its server \"demo\": ");
    let line = out.stderr.lines().find(|l| l.starts_with(&said)).unwrap_or_else(|| panic!("{out:?}"));
    assert!(line.contains("could not be reached"), "why: {line}");
    assert!(out.stderr.contains("run `taskdeck-cli resume` again once the server can be reached"), "{out:?}");
    assert_eq!(env.show(&id)["status"], "working");
}
