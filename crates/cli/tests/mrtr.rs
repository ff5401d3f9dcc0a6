//! A plain call the server answers with input requests (2026-07-28, multi-round-trip requests),
//! through the real `taskdeck-cli` against the demo server's `publish_notes`, over stdio and over
//! Streamable HTTP: its confirmation is asked like any task's question, its roots request is
//! answered from the grant, and the call is sent again with the answers, once per round and no
//! more than the bound.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use taskdeck_test_support::cli::{Out, TestCli, cli_command};
use taskdeck_test_support::{LoopbackServer, demo_server_entry, demo_server_http, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
    granted: PathBuf,
    _http: Option<LoopbackServer>,
}

impl Env {
    /// The demo server over stdio pinned to `era`, granted one directory.
    fn stdio(era: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = demo_server_entry(&dir.path().join("demo-state"));
        entry["era"] = json!(era);
        Env::with(dir, entry, None)
    }

    /// The demo server over Streamable HTTP in the modern era, granted one directory.
    fn http() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let server = demo_server_http(&dir.path().join("demo-state"), "127.0.0.1:0");
        let entry = server.entry(Some("modern"));
        Env::with(dir, entry, Some(server))
    }

    fn with(dir: tempfile::TempDir, mut entry: Value, http: Option<LoopbackServer>) -> Env {
        let granted = dir.path().join("shelf");
        std::fs::create_dir_all(&granted).unwrap();
        entry["roots"] = json!([granted]);
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        Env { dir, config, granted, _http: http }
    }
}

impl TestCli for Env {
    fn cmd(&self, args: &[&str]) -> Command {
        cli_command(CLI, &self.config, &self.dir.path().join("data"), args)
    }
}

fn kinds(task: &Value) -> Vec<String> {
    task["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap_or("").to_owned()).collect()
}

/// Runs `publish_notes` with `answers` given as `--answer`, one per round.
fn publish(env: &Env, args: Value, answers: &[&str]) -> Out {
    let args = args.to_string();
    let mut cli = vec!["run", "demo", "publish_notes", "--args", &args, "--json"];
    for a in answers {
        cli.extend(["--answer", a]);
    }
    env.run(&cli)
}

fn confirmed_and_published(env: &Env) {
    let out = publish(env, json!({"title": "Q3 notes"}), &[r#"{"publish": true}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["status"], "completed", "{t}");
    let published = &t["result"]["structuredContent"];
    assert_eq!(published["published"], true, "{t}");
    assert_eq!(published["confirmations"], 1, "{t}");
    // The round's roots request was answered from the grant, without asking.
    let shelf = std::fs::canonicalize(&env.granted).unwrap();
    let destination = published["destination"].as_str().unwrap_or_default();
    assert!(destination.starts_with("file://") && destination.ends_with("shelf"), "{destination} for {shelf:?}");

    let shown = env.show(t["id"].as_str().unwrap());
    let kinds = kinds(&shown);
    let (q, a, r) = (
        kinds.iter().position(|k| k == "question"),
        kinds.iter().position(|k| k == "answer"),
        kinds.iter().position(|k| k == "result"),
    );
    assert!(q.is_some() && q < a && a < r, "asked, answered, then the result: {kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "question").count(), 1, "one question, the confirmation: {kinds:?}");
    let question = shown["events"].as_array().unwrap().iter().find(|e| e["kind"] == "question").unwrap();
    assert!(question.to_string().contains("confirm-1"), "{question}");
    assert!(!question.to_string().contains("destination"), "the roots request is no question for the user: {question}");
}

#[test]
fn a_plain_modern_call_asks_its_confirmation_and_is_sent_again_with_the_answer_over_stdio() {
    confirmed_and_published(&Env::stdio("modern"));
}

#[test]
fn a_plain_modern_call_asks_its_confirmation_and_is_sent_again_with_the_answer_over_http() {
    confirmed_and_published(&Env::http());
}

#[test]
fn a_confirmation_declined_reaches_the_server_and_nothing_is_published() {
    let env = Env::stdio("modern");
    let out = publish(&env, json!({}), &[r#"{"publish": false}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["result"]["structuredContent"]["published"], false, "{t}");
}

#[test]
fn every_round_is_asked_and_answered_in_turn() {
    let env = Env::stdio("modern");
    let yes = r#"{"publish": true}"#;
    let out = publish(&env, json!({"rounds": 3}), &[yes, yes, yes]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["result"]["structuredContent"]["confirmations"], 3, "{t}");
    let shown = env.show(t["id"].as_str().unwrap());
    let kinds = kinds(&shown);
    assert_eq!(kinds.iter().filter(|k| *k == "question").count(), 3, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "answer").count(), 3, "{kinds:?}");
}

#[test]
fn a_server_that_keeps_asking_ends_the_call_after_ten_rounds() {
    let env = Env::stdio("modern");
    let yes = r#"{"publish": true}"#;
    let out = publish(&env, json!({"rounds": 12}), &[yes; 12]);
    assert_ne!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["status"], "failed", "{t}");
    assert!(t["error"]["message"].as_str().unwrap_or_default().contains("10 times"), "{t}");
    let shown = env.show(t["id"].as_str().unwrap());
    assert_eq!(kinds(&shown).iter().filter(|k| *k == "answer").count(), 10, "{shown}");
}

#[test]
fn the_legacy_era_publishes_without_asking() {
    let env = Env::stdio("legacy");
    let out = publish(&env, json!({}), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["result"]["structuredContent"]["published"], true, "{t}");
    assert!(!kinds(&env.show(t["id"].as_str().unwrap())).contains(&"question".to_owned()));
}

fn only_id(env: &Env) -> String {
    let out = env.run(&["tasks", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    out.json()[0]["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_round_answered_from_another_process_goes_on_where_it_was() {
    let env = Env::stdio("modern");
    let args = json!({"rounds": 2}).to_string();
    let out = env.run(&["run", "demo", "publish_notes", "--args", &args]);
    assert_eq!(out.code, 3, "the run stops on the first confirmation: {out:?}");
    let id = only_id(&env);
    let waiting = env.show(&id);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let yes = r#"{"publish": true}"#;
    let out = env.run(&["answer", &id, "--json", yes]);
    assert_eq!(out.code, 3, "the second confirmation is asked next: {out:?}");
    assert!(env.show(&id)["question"].to_string().contains("confirmation 2 of 2"), "{}", env.show(&id));
    let out = env.run(&["answer", &id, "--json", yes]);
    assert_eq!(out.code, 0, "{out:?}");
    let done = env.show(&id);
    assert_eq!(done["status"], "completed", "{done}");
    let published = &done["result"]["structuredContent"];
    assert_eq!(published["confirmations"], 2, "{done}");
    // The roots answered without asking in the first round went with the second as well.
    assert!(published["destination"].as_str().is_some_and(|d| d.ends_with("shelf")), "{done}");
    assert!(!env.dir.path().join("data/rounds").join(format!("{id}.json")).exists(), "nothing kept after the end");
}

#[test]
fn a_call_cancelled_between_rounds_says_nothing_ran_on_the_server() {
    let env = Env::stdio("modern");
    let out = env.run(&["run", "demo", "publish_notes"]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = only_id(&env);
    let out = env.run(&["cancel", &id]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "cancelled", "{t}");
    let cancelled = t["events"].as_array().unwrap().iter().find(|e| e["kind"] == "cancelled").unwrap();
    assert_eq!(cancelled["data"]["server_told"], false, "{cancelled}");
    assert!(cancelled.to_string().contains("nothing runs on the server"), "{cancelled}");
}

#[test]
fn two_questions_of_one_round_are_answered_together_and_go_back_in_one_retry() {
    let env = Env::stdio("modern");
    let out = publish(&env, json!({"blurb": true}), &[r#"{"publish": true}"#, r#"{"text": "Fresh notes, all five."}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    assert_eq!(t["result"]["structuredContent"]["blurb"], "Fresh notes, all five.", "{t}");
    let shown = env.show(t["id"].as_str().unwrap());
    let answer = shown["events"].as_array().unwrap().iter().find(|e| e["kind"] == "answer").unwrap();
    assert_eq!(answer["data"]["answers"].as_array().map(Vec::len), Some(2), "one answer event for both: {answer}");
    assert_eq!(answer["data"]["answers"][1]["sampling"]["approved_by"], "user", "{answer}");
}

#[test]
fn one_answer_for_a_round_of_two_is_refused_and_the_call_still_waits() {
    let env = Env::stdio("modern");
    let out = publish(&env, json!({"blurb": true}), &[]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = only_id(&env);
    assert_eq!(env.show(&id)["questions"].as_array().map(Vec::len), Some(2));
    let out = env.run(&["answer", &id, "--json", r#"{"publish": true}"#]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("2 questions are pending"), "{out:?}");
    let still = env.show(&id);
    assert_eq!(still["status"], "input_required", "{still}");
    let out = env.run(&["answer", &id, "--json", r#"{"publish": true}"#, "--json", r#"{"text": "Out now."}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(env.show(&id)["result"]["structuredContent"]["blurb"], "Out now.");
}
