//! Sampling through the real `taskdeck-cli`: a server's request for a language model's reply is a
//! question on its task, shown for review, answered by hand (`answer --json`), declined, and kept
//! across a `kill -9` of the CLI; against the demo server in both eras and the reference server.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskdeck_test_support::{demo_server_entry, everything_server_entry, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

struct Env {
    dir: tempfile::TempDir,
    config: PathBuf,
}

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
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

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(CLI);
        c.arg("--config").arg(&self.config).arg("--data-dir").arg(self.dir.path().join("data")).args(args);
        c.env_remove("TASKDECK_CONFIG").env_remove("TASKDECK_DATA_DIR").env_remove("TASKDECK_LOG");
        c.stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Out {
        let o = self.cmd(args).output().unwrap();
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
    }

    fn only_task(&self) -> Value {
        let out = self.run(&["tasks", "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        out.json().as_array().and_then(|a| a.first().cloned()).unwrap_or(Value::Null)
    }

    fn show(&self, id: &str) -> Value {
        let out = self.run(&["show", id, "--json"]);
        assert_eq!(out.code, 0, "{out:?}");
        out.json()
    }

    fn wait_task(&self, ready: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let t = self.only_task();
            if !t.is_null() && ready(&t) {
                return t;
            }
            assert!(Instant::now() < deadline, "no task got ready: {t}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn id_of(t: &Value) -> String {
    t["id"].as_str().unwrap().to_owned()
}

fn answer_event(task: &Value) -> Value {
    task["events"].as_array().unwrap().iter().rev().find(|e| e["kind"] == "answer").cloned().unwrap_or(Value::Null)
}

fn result_text(task: &Value) -> String {
    task["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
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
        let mut child = env.spawn(&["run", "demo", "summarize_findings", "--args", r#"{"topic": "search"}"#]);
        let t = env.wait_task(|t| t["status"] == "input_required" && t["question"]["asks"]["kind"] == "sampling");
        child.kill().unwrap();
        child.wait().unwrap();
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
    assert!(out.stderr.contains("2 questions are pending"), "{out:?}");
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
