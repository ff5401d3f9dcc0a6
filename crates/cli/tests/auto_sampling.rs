//! A server whose sampling policy is `auto` within a budget, through the real `taskdeck-cli`: its
//! requests go to the configured model (a loopback stand-in for an OpenAI-compatible server that
//! checks what it gets) without asking while the task's budget holds, and are asked as usual past
//! it; against the demo server's `summarize_findings` in both eras.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use taskdeck_test_support::cli::{cli_command, output_with_input};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");
const KEY: &str = "sk-auto-41c9";

/// The JSON bodies the stand-in was sent, with their `authorization` header.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// Answers every chat-completions request with one completion and keeps what it was sent.
fn stand_in() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() || !line.starts_with("POST /v1/chat/completions ") {
                let _ = write!(stream, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                continue;
            }
            let (mut len, mut auth) = (0usize, None);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                if let Some((n, v)) = h.trim_end().split_once(':') {
                    match n.trim().to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap_or(0),
                        "authorization" => auth = Some(v.trim().to_owned()),
                        _ => {}
                    }
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            log.lock().expect("log").push((auth, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            let answer = json!({
                "model": "gpt-test",
                "choices": [{"message": {"role": "assistant", "content": "Two of three fixed."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5}
            })
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (base, seen)
}

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    /// The demo server pinned to `era` (`None`: detected, modern) with this sampling policy, and
    /// one model provider, the stand-in at `base`.
    fn new(era: Option<&str>, policy: Value, base: &str) -> Env {
        let env = Env { dir: tempfile::tempdir().expect("dir") };
        let mut entry = taskdeck_test_support::demo_server_entry(&env.dir.path().join("demo-state"));
        if let Some(era) = era {
            entry["era"] = json!(era);
        }
        entry["sampling"] = policy;
        taskdeck_test_support::write_servers_config(&env.dir.path().join("servers.json"), [("demo", entry)]);
        let add = ["models", "add", "local", "--kind", "openai", "--base-url", base, "--model", "gpt-test"];
        let out = env.run(&[&add[..], &["--key-stdin"]].concat(), &format!("{KEY}\n"));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        env
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut c = cli_command(CLI, &self.dir.path().join("servers.json"), &self.dir.path().join("data"), args);
        c.env("TASKDECK_SIGN_IN_STORE", "file");
        output_with_input(c, stdin)
    }

    fn show(&self, id: &str) -> Value {
        let out = self.run(&["show", id, "--json"], "");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn events_of<'a>(task: &'a Value, kind: &str) -> Vec<&'a Value> {
    task["events"].as_array().into_iter().flatten().filter(|e| e["kind"] == kind).collect()
}

fn summarize(env: &Env) -> (i32, Value) {
    let out = env.run(&["run", "demo", "summarize_findings", "--args", r#"{"topic": "checkout"}"#, "--json"], "");
    let task: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    (out.status.code().unwrap_or(-1), task)
}

#[test]
fn within_its_budget_a_sampling_request_goes_to_the_model_unasked_and_the_log_says_the_policy_approved_it() {
    for era in [None, Some("legacy")] {
        let (base, seen) = stand_in();
        let env = Env::new(era, json!({"auto": {"maxTokensPerTask": 1000}}), &base);
        let (code, task) = summarize(&env);
        assert_eq!(code, 0, "{era:?}: nobody was asked: {task}");
        assert_eq!(task["status"], "completed", "{era:?}: {task}");
        let result = task["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(result.contains("Summary (gpt-test): Two of three fixed."), "{era:?}: {result}");

        let seen = seen.lock().expect("log").clone();
        assert_eq!(seen.len(), 1, "{era:?}: {seen:?}");
        assert_eq!(seen[0].0.as_deref(), Some(format!("Bearer {KEY}").as_str()), "{era:?}");
        assert_eq!((&seen[0].1["model"], &seen[0].1["max_tokens"]), (&json!("gpt-test"), &json!(200)), "{era:?}");
        let asked = seen[0].1["messages"][1]["content"].as_str().unwrap_or_default();
        assert!(asked.starts_with("Summarize these findings on checkout"), "{era:?}: {asked}");

        let shown = env.show(task["id"].as_str().expect("id"));
        let questions = events_of(&shown, "question");
        assert_eq!(questions.len(), 1, "{era:?}: the request is in the log: {shown}");
        assert_eq!(questions[0]["data"]["request"]["method"], "sampling/createMessage", "{era:?}");
        let answers = events_of(&shown, "answer");
        assert_eq!(answers.len(), 1, "{era:?}: {shown}");
        let data = &answers[0]["data"];
        assert_eq!(data["response"]["content"]["text"], "Two of three fixed.", "{era:?}: the completion: {data}");
        assert_eq!(
            data["sampling"],
            json!({"approved_by": "policy", "model": "gpt-test", "tokens": {"input": 50, "output": 5},
                "outcome": "sent", "max_tokens": 200}),
            "{era:?}"
        );
    }
}

#[test]
fn past_its_budget_a_sampling_request_is_asked_as_usual_and_the_model_is_not_called() {
    for era in [None, Some("legacy")] {
        let (base, seen) = stand_in();
        // The request allows 200 tokens: more than the whole budget.
        let env = Env::new(era, json!({"auto": {"maxTokensPerTask": 150}}), &base);
        let (code, task) = summarize(&env);
        assert_eq!(code, 3, "{era:?}: the user is asked: {task}");
        assert_eq!(task["status"], "input_required", "{era:?}: {task}");
        assert_eq!(task["question"]["asks"]["kind"], "sampling", "{era:?}: {task}");
        assert!(seen.lock().expect("log").is_empty(), "{era:?}: the model was not called");

        // The user's reply costs the budget nothing and is logged as theirs.
        let id = task["id"].as_str().expect("id");
        let out = env.run(&["answer", id, "--json", r#"{"text": "By hand."}"#], "");
        assert_eq!(out.status.code(), Some(0), "{era:?}: {}", text(&out.stderr));
        let shown = env.show(id);
        let answers = events_of(&shown, "answer");
        assert_eq!(answers[0]["data"]["sampling"]["approved_by"], "user", "{era:?}: {shown}");
    }
}

#[test]
fn a_plain_modern_calls_sampling_request_goes_to_the_model_within_the_budget_while_its_form_is_asked() {
    let (base, seen) = stand_in();
    let env = Env::new(None, json!({"auto": {"maxTokensPerTask": 1000}}), &base);
    // `publish_notes` is a plain call that asks, in one round, a confirmation (the user's) and a
    // blurb from a model (the policy's): only the form is left to answer.
    let args = json!({"title": "Q3 notes", "blurb": true}).to_string();
    let out =
        env.run(&["run", "demo", "publish_notes", "--args", &args, "--answer", r#"{"publish": true}"#, "--json"], "");
    let task: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{task} {}", text(&out.stderr));
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["result"]["structuredContent"]["blurb"], "Two of three fixed.", "the model's line: {task}");
    assert_eq!(seen.lock().expect("log").len(), 1, "the model was asked once");

    let shown = env.show(task["id"].as_str().expect("id"));
    let answers = events_of(&shown, "answer");
    let by_policy: Vec<_> = answers.iter().filter(|a| a["data"]["sampling"]["approved_by"] == "policy").collect();
    assert_eq!(by_policy.len(), 1, "the blurb is logged as the policy's: {shown}");
    assert_eq!(by_policy[0]["data"]["sampling"]["tokens"], json!({"input": 50, "output": 5}));
    assert_eq!(answers.len(), 2, "and the confirmation as the user's: {shown}");
}
