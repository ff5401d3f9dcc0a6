//! Sampling through the real `taskdeck-cli`: a server's request for a language model's reply is a
//! question on its task, shown for review, answered by hand (`answer --json`), declined, and kept
//! across a `kill -9` of the CLI; against the demo server in both eras and the reference server.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use taskdeck_test_support::cli::{TestCli, cli_command, id_of};
use taskdeck_test_support::{demo_server_entry, everything_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Env {
    /// The demo server, pinned to `era` (`None` detects it: modern).
    fn demo(era: Option<&str>) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = demo_server_entry(&dir.path().join("demo-state"));
        if let Some(era) = era {
            entry["era"] = json!(era);
        }
        let config = write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        Env { dir, config }
    }

    fn everything() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let entry = json!({"command": "node", "args": [everything_server_entry(), "stdio"]});
        let config = write_servers_config(&dir.path().join("servers.json"), [("everything", entry)]);
        Env { dir, config }
    }

    fn only_task(&self) -> Value {
        let out = self.run(&["tasks", "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        out.json().as_array().and_then(|a| a.first().cloned()).unwrap_or(Value::Null)
    }
}

impl TestCli for Env {
    fn cmd(&self, args: &[&str]) -> Command {
        cli_command(CLI, &self.config, &self.dir.path().join("data"), args)
    }

    /// Its output unread: these tests kill the process or read the store instead.
    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    }
}

fn answer_event(task: &Value) -> Value {
    task["events"].as_array().unwrap().iter().rev().find(|e| e["kind"] == "answer").cloned().unwrap_or(Value::Null)
}

/// Every text block of the task's result, joined.
fn result_text(task: &Value) -> String {
    let blocks = task["result"]["content"].as_array().cloned().unwrap_or_default();
    blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_reference_servers_sampling_call_is_answered_by_hand_and_logged_with_who_approved_it() {
    let env = Env::everything();
    let tools = env.run(&["tools", "everything"]);
    assert!(tools.stdout.contains("trigger-sampling-request"), "the server hides it without sampling: {tools:?}");
    let args = r#"{"prompt": "Capital of France?", "maxTokens": 40}"#;
    let reply = r#"{"text": "Paris."}"#;
    let out = env.run(&["run", "everything", "trigger-sampling-request", "--args", args, "--answer", reply, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    let text = result_text(&t);
    assert!(text.contains("Paris.") && text.contains("\"model\": \"human\""), "{t}");
    let answer = answer_event(&env.show(&id_of(&t)));
    assert_eq!(answer["data"]["sampling"]["approved_by"], "user", "{answer}");
    assert_eq!(answer["data"]["sampling"]["outcome"], "sent", "{answer}");
    assert_eq!(answer["data"]["response"]["content"]["text"], "Paris.", "{answer}");
}

#[test]
fn a_reply_that_is_not_the_assistants_is_refused_before_the_reference_server_sees_it() {
    let env = Env::everything();
    let args = r#"{"prompt": "x"}"#;
    let out = env.run(&[
        "run",
        "everything",
        "trigger-sampling-request",
        "--args",
        args,
        "--answer",
        r#"{"role": "user", "content": {"type": "text", "text": "x"}}"#,
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("\"role\" must be \"assistant\""), "{out:?}");
}

/// Runs `summarize_findings` to its question and checks the review the CLI prints.
fn asks_for_a_summary(env: &Env) -> String {
    let out = env.run(&["run", "demo", "summarize_findings", "--args", r#"{"topic": "checkout"}"#]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("demo asks for a language model's reply (up to 200 tokens)"), "{out:?}");
    assert!(out.stderr.contains("system prompt: You are a concise analyst."), "{out:?}");
    assert!(out.stderr.contains("user: Summarize these findings on checkout"), "{out:?}");
    assert!(out.stderr.contains("model hints: claude"), "{out:?}");
    assert!(out.stderr.contains(r#"--json '{"text":"your reply"}'"#), "{out:?}");
    let id = id_of(&env.only_task());
    let t = env.show(&id);
    assert_eq!(t["question"]["asks"]["kind"], "sampling", "{t}");
    assert_eq!(t["question"]["asks"]["sampling"]["max_tokens"], 200, "{t}");
    assert_eq!(t["question"]["request"]["method"], "sampling/createMessage", "{t}");
    id
}

fn a_sampling_question_is_reviewed_refused_when_wrong_and_answered_by_hand(era: Option<&str>) {
    let env = Env::demo(era);
    let id = asks_for_a_summary(&env);
    let out = env.run(&["answer", &id, "--json", r#"{"txt": "typo"}"#]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("unknown member \"txt\""), "{out:?}");
    let out = env.run(&["answer", &id, "--sample"]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("no model is configured"), "{out:?}");
    assert_eq!(env.show(&id)["status"], "input_required");

    let reply = r#"{"role": "assistant", "content": {"type": "text", "text": "Rollbacks fixed two of three."}, "model": "my-notes"}"#;
    let out = env.run(&["answer", &id, "--json", reply]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["status"], "completed", "{t}");
    assert!(result_text(&t).contains("Summary (my-notes): Rollbacks fixed two of three."), "{t}");
    assert_eq!(answer_event(&t)["data"]["sampling"]["model"], "my-notes");
}

#[test]
fn a_modern_sampling_question_is_reviewed_refused_when_wrong_and_answered_by_hand() {
    a_sampling_question_is_reviewed_refused_when_wrong_and_answered_by_hand(None);
}

#[test]
fn a_legacy_sampling_question_is_reviewed_refused_when_wrong_and_answered_by_hand() {
    a_sampling_question_is_reviewed_refused_when_wrong_and_answered_by_hand(Some("legacy"));
}

#[test]
fn a_declined_sampling_question_ends_the_task_as_the_server_decides_in_both_eras() {
    for era in [None, Some("legacy")] {
        let env = Env::demo(era);
        let id = asks_for_a_summary(&env);
        let out = env.run(&["answer", &id, "--decline"]);
        assert_eq!(out.code, 1, "{era:?}: {out:?}");
        let t = env.show(&id);
        assert_eq!(t["status"], "failed", "{era:?}: {t}");
        assert!(result_text(&t).starts_with("no summary:"), "{era:?}: {t}");
        assert_eq!(answer_event(&t)["data"]["sampling"]["outcome"], "declined");
        assert_eq!(answer_event(&t)["data"]["response"]["action"], "decline");
    }
}

#[test]
fn a_sampling_question_survives_a_kill_9_of_the_cli_and_is_answered_later_in_both_eras() {
    for era in [None, Some("legacy")] {
        let env = Env::demo(era);
        let t = env.kill_9_when(&["run", "demo", "summarize_findings", "--args", r#"{"topic": "search"}"#], |t| {
            t["status"] == "input_required" && t["question"]["asks"]["kind"] == "sampling"
        });
        let id = id_of(&t);
        let out = env.run(&["answer", &id, "--json", r#"{"text": "After the restart."}"#]);
        assert_eq!(out.code, 0, "{era:?}: {out:?}");
        let t = env.show(&id);
        assert_eq!(t["status"], "completed", "{era:?}: {t}");
        assert!(result_text(&t).contains("Summary (human): After the restart."), "{era:?}: {t}");
    }
}

#[test]
fn two_questions_at_once_are_shown_together_and_answered_in_order_in_one_update() {
    let env = Env::demo(None);
    let args = r#"{"version": "3.0"}"#;
    let out = env.run(&["run", "demo", "plan_release", "--args", args]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("2 questions are pending (answer them all at once"), "{out:?}");
    assert!(out.stderr.contains("#2: demo asks for a language model's reply"), "{out:?}");
    assert!(out.stderr.contains("#1: demo asks: Where should 3.0 be released?"), "{out:?}");
    let id = id_of(&env.only_task());
    let t = env.show(&id);
    let kinds: Vec<&str> =
        t["questions"].as_array().unwrap().iter().map(|q| q["asks"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["form", "sampling"], "{t}");
    assert_eq!(t["question"], t["questions"][0], "the first stays the question: {t}");

    // `answer` answers the first; the other is asked again on its own.
    let out = env.run(&["answer", &id, "--json", r#"{"environment": "production"}"#]);
    assert_eq!(out.code, 3, "{out:?}");
    let t = env.show(&id);
    assert_eq!(t["questions"].as_array().unwrap().len(), 1, "{t}");
    assert_eq!(t["question"]["asks"]["kind"], "sampling", "{t}");
    let out = env.run(&["answer", &id, "--json", r#"{"text": "Faster search."}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(result_text(&env.show(&id)).contains("Release 3.0 to production"));

    // A new process answers both at once, one --json per question; a count that does not fit is
    // refused before anything is sent.
    let out = env.run(&["run", "demo", "plan_release", "--args", args]);
    assert_eq!(out.code, 3, "{out:?}");
    let id = id_of(&env.only_task());
    let env_json = r#"{"environment": "staging"}"#;
    let out = env.run(&["answer", &id, "--json", env_json, "--json", "{}", "--json", "{}"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("2 questions are pending"), "{out:?}");
    let out = env.run(&["answer", &id, "--json", env_json, "--json", r#"{"text": "Both at once."}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = env.show(&id);
    assert!(result_text(&t).contains("Release note (human): Both at once."), "{t}");
    assert_eq!(answer_event(&t)["data"]["answers"].as_array().map(Vec::len), Some(2), "{t}");

    // Answers given up front go in order, together, in one answer.
    let out = env.run(&[
        "run",
        "demo",
        "plan_release",
        "--args",
        args,
        "--answer",
        r#"{"environment": "staging"}"#,
        "--answer",
        r#"{"text": "Fewer timeouts."}"#,
        "--json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = env.show(&id_of(&out.json()));
    let text = result_text(&t);
    assert!(text.contains("Release 3.0 to staging") && text.contains("Release note (human): Fewer timeouts."), "{t}");
    let answer = answer_event(&t);
    assert_eq!(answer["data"]["answers"].as_array().map(Vec::len), Some(2), "one update, both answers: {answer}");
}

#[test]
fn a_server_whose_policy_refuses_sampling_gets_a_refusal_it_can_read_and_nobody_is_asked() {
    for era in [None, Some("legacy")] {
        let env = Env::demo(era);
        let mut root: Value = serde_json::from_str(&std::fs::read_to_string(&env.config).unwrap()).unwrap();
        root["mcpServers"]["demo"]["sampling"] = json!("refuse");
        std::fs::write(&env.config, root.to_string()).unwrap();
        let out = env.run(&["run", "demo", "summarize_findings", "--args", r#"{"topic": "x"}"#, "--json"]);
        assert_eq!(out.code, 1, "{era:?}: {out:?}");
        let t = out.json();
        assert_eq!(t["status"], "failed", "{era:?}: {t}");
        assert!(result_text(&t).starts_with("no summary:"), "{era:?}: {t}");
        assert!(answer_event(&env.show(&id_of(&t))).is_null(), "nobody answered: {t}");
        if era.is_some() {
            assert!(result_text(&t).contains("refused for this server by the user's settings"), "{t}");
        }
    }
}

#[test]
fn the_reference_servers_async_sampling_and_elicitation_run_as_tasks_hosted_here_and_get_the_answer() {
    let env = Env::everything();
    let tools = env.run(&["tools", "everything"]);
    assert!(tools.stdout.contains("trigger-sampling-request-async"), "{tools:?}");
    assert!(tools.stdout.contains("trigger-elicitation-request-async"), "{tools:?}");
    let out = env.run(&[
        "run",
        "everything",
        "trigger-sampling-request-async",
        "--args",
        r#"{"prompt": "Capital of Peru?"}"#,
        "--answer",
        r#"{"text": "Lima."}"#,
        "--json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = result_text(&out.json());
    assert!(text.contains("Lima.") && !text.contains("[SYNC]"), "the server polled a task hosted here: {text}");

    let answer = r#"{"name": "Ada", "favoriteColor": "Green"}"#;
    let out = env.run(&["run", "everything", "trigger-elicitation-request-async", "--answer", answer, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let t = out.json();
    let text = result_text(&t);
    assert!(text.contains("Name: Ada") && text.contains("Poll 1: completed") && !text.contains("[SYNC]"), "{t}");
    let shown = env.show(&id_of(&t));
    let asked = shown["events"].as_array().unwrap().iter().find(|e| e["kind"] == "question").cloned().unwrap();
    assert!(asked["data"]["request"]["params"]["task"].is_object(), "{asked}");
}
