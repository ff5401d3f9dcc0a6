//! `taskdeck-cli models ...` as a user runs it: providers in settings.json, the key in the
//! sign-in store only (the 0600 file here, `TASKDECK_SIGN_IN_STORE=file`), and a sampling
//! request sent to a loopback stand-in for an OpenAI-compatible server that checks what it gets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use taskdeck_test_support::cli::{cli_command, output_with_input};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");
const KEY: &str = "sk-cli-7d1e0b";

/// One request as the stand-in read it.
#[derive(Debug, Clone)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

/// Answers every request with `answer`, one connection at a time, and keeps what it was sent.
fn stand(answer: Value) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((n, v)) = line.trim_end().split_once(':') {
                    headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
                }
            }
            let len =
                headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            log.lock().expect("log").push(Seen {
                request_line: request_line.trim_end().to_owned(),
                headers,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            });
            let text = answer.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (base, seen)
}

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env { dir: tempfile::tempdir().expect("dir") }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut c = cli_command(CLI, &self.dir.path().join("servers.json"), &self.data(), args);
        // Never the keyring of whoever runs the tests.
        c.env("TASKDECK_SIGN_IN_STORE", "file");
        output_with_input(c, stdin)
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir`, with its contents.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.clone(), String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned()));
        }
    }
    out
}

fn add_local(env: &Env, base: &str) {
    let base_url = format!("{base}/v1");
    let out = env.run(
        &[
            "models",
            "add",
            "local",
            "--kind",
            "openai",
            "--base-url",
            &base_url,
            "--model",
            "gpt-test@2,8,5",
            "--key-stdin",
        ],
        &format!("{KEY}\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn an_added_providers_key_is_kept_in_the_sign_in_store_and_in_no_other_file() {
    let env = Env::new();
    add_local(&env, "http://127.0.0.1:9");

    let out = env.run(&["models", "list", "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(listed[0]["name"], "local");
    assert_eq!(listed[0]["kind"], "openai");
    assert_eq!(listed[0]["has_key"], true);
    assert_eq!(listed[0]["models"][0], json!({"id": "gpt-test", "cost": 2, "speed": 8, "intelligence": 5}));
    assert!(!text(&out.stdout).contains(KEY) && !text(&out.stderr).contains(KEY));

    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(env.data().join("settings.json")).expect("settings"))
            .expect("json");
    assert_eq!(settings["models"]["providers"][0]["base_url"], "http://127.0.0.1:9/v1");
    let mut in_store = false;
    for (path, contents) in files(env.dir.path()) {
        if path.file_name().is_some_and(|n| n == "sign-ins.json") {
            in_store = contents.contains(KEY);
        } else {
            assert!(!contents.contains(KEY), "the key is in {}", path.display());
        }
    }
    assert!(in_store, "the key is kept in the sign-in store");
}

#[test]
fn models_sample_sends_the_params_with_the_key_and_prints_the_create_message_result() {
    let (base, seen) = stand(json!({
        "model": "gpt-test",
        "choices": [{"message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2}
    }));
    let env = Env::new();
    add_local(&env, &base);
    let params = json!({
        "systemPrompt": "Answer in one word.",
        "maxTokens": 20,
        "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]
    });
    let out = env.run(&["models", "sample"], &params.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        result,
        json!({"role": "assistant", "content": {"type": "text", "text": "Paris."}, "model": "gpt-test", "stopReason": "endTurn"})
    );

    let seen = seen.lock().expect("log");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].request_line, "POST /v1/chat/completions HTTP/1.1");
    assert!(seen[0].headers.contains(&("authorization".into(), format!("Bearer {KEY}"))), "{:?}", seen[0].headers);
    assert_eq!(seen[0].body["model"], "gpt-test");
    assert_eq!(seen[0].body["max_tokens"], 20);
    assert_eq!(
        seen[0].body["messages"],
        json!([{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Capital of France?"}])
    );
}

#[test]
fn removing_a_provider_removes_its_key_too() {
    let env = Env::new();
    add_local(&env, "http://127.0.0.1:9");
    let out = env.run(&["models", "remove", "local"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let store = std::fs::read_to_string(env.data().join("sign-ins.json")).unwrap_or_default();
    assert!(!store.contains(KEY), "{store}");
    let out = env.run(&["models", "list", "--json"], "");
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).expect("json"), json!([]));

    let out = env.run(&["models", "remove", "local"], "");
    assert_eq!(out.status.code(), Some(2), "an unknown provider is a usage error");
}

#[test]
fn a_bad_provider_or_no_provider_is_a_usage_error_that_says_what_to_do() {
    let env = Env::new();
    let out = env.run(&["models", "add", "x", "--kind", "gemini", "--model", "m"], "");
    assert_eq!(out.status.code(), Some(2));
    let out = env.run(&["models", "add", "x", "--kind", "openai", "--base-url", "ftp://h", "--model", "m"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("base URL"), "{}", text(&out.stderr));
    assert!(!env.data().join("settings.json").exists(), "nothing written for a refused provider");

    let out = env.run(&["models", "sample"], r#"{"maxTokens": 5, "messages": []}"#);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("models add"), "{}", text(&out.stderr));
}

#[test]
fn answer_sample_refuses_a_question_that_is_not_a_sampling_request_and_leaves_it_waiting() {
    let env = Env::new();
    let entry = taskdeck_test_support::demo_server_entry(&env.dir.path().join("demo-state"));
    taskdeck_test_support::write_servers_config(&env.dir.path().join("servers.json"), [("demo", entry)]);
    let out = env.run(&["run", "demo", "diagnose_incident", "--json"], "");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let task: Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = task["id"].as_str().expect("id").to_owned();

    let out = env.run(&["answer", &id, "--sample"], "");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not waiting for a sampling reply"), "{}", text(&out.stderr));
    let out = env.run(&["show", &id, "--json"], "");
    let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(shown["status"], "input_required");

    // --edit is only for --sample; --sample and --json are one answer or the other.
    assert_eq!(env.run(&["answer", &id, "--edit", "--decline"], "").status.code(), Some(2));
    assert_eq!(env.run(&["answer", &id, "--sample", "--json", "{}"], "").status.code(), Some(2));
}

/// The demo server's `summarize_findings` asks for a completion mid-task; with a provider
/// configured, `answer --sample` sends it there (`edit`: through `$EDITOR` first).
fn a_sampled_summary(edit: bool) -> (Value, Vec<Seen>) {
    let (base, seen) = stand(json!({
        "model": "claude-test",
        "choices": [{"message": {"role": "assistant", "content": "Two of three fixed."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5}
    }));
    let env = Env::new();
    add_local(&env, &base);
    let entry = taskdeck_test_support::demo_server_entry(&env.dir.path().join("demo-state"));
    taskdeck_test_support::write_servers_config(&env.dir.path().join("servers.json"), [("demo", entry)]);
    let out = env.run(&["run", "demo", "summarize_findings", "--args", r#"{"topic": "checkout"}"#, "--json"], "");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let task: Value = serde_json::from_slice(&out.stdout).expect("json");
    let id = task["id"].as_str().expect("id").to_owned();

    let mut args = vec!["answer", id.as_str(), "--sample"];
    if edit {
        args.push("--edit");
    }
    let mut c = cli_command(CLI, &env.dir.path().join("servers.json"), &env.data(), &args);
    c.env_remove("VISUAL").env("TASKDECK_SIGN_IN_STORE", "file").env("EDITOR", "sed -i s/fixed/mended/");
    let out = c.output().expect("answer");
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("Two of three fixed."), "the completion is shown: {}", text(&out.stdout));

    let out = env.run(&["show", &id, "--json"], "");
    let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(shown["status"], "completed", "{shown}");
    for (path, contents) in files(env.dir.path()) {
        if path.file_name().is_some_and(|n| n != "sign-ins.json") {
            assert!(!contents.contains(KEY), "the key is in {}", path.display());
        }
    }
    let seen = seen.lock().expect("log").clone();
    (shown, seen)
}

fn result_text(task: &Value) -> String {
    task["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// The note of the task's answer in `show --json`'s events.
fn answer_note(task: &Value) -> Value {
    let events = task["events"].as_array().cloned().unwrap_or_default();
    events.iter().rev().find(|e| e["kind"] == "answer").map(|e| e["data"]["sampling"].clone()).unwrap_or(Value::Null)
}

#[test]
fn answer_sample_sends_the_servers_request_to_the_configured_model_and_returns_the_completion_with_its_tokens_logged() {
    let (task, seen) = a_sampled_summary(false);
    assert!(result_text(&task).contains("Two of three fixed."), "{task}");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].headers.contains(&("authorization".into(), format!("Bearer {KEY}"))), "{:?}", seen[0].headers);
    assert_eq!(seen[0].body["model"], "gpt-test");
    assert_eq!(seen[0].body["max_tokens"], 200);
    assert_eq!(
        seen[0].body["messages"][0],
        json!({"role": "system", "content": "You are a concise analyst. Answer in one sentence."})
    );
    let asked = seen[0].body["messages"][1]["content"].as_str().unwrap_or_default();
    assert!(asked.starts_with("Summarize these findings on checkout"), "{asked}");
    // The log says the user sent the model's completion, and the tokens the provider reported.
    assert_eq!(
        answer_note(&task),
        json!({"approved_by": "user", "model": "claude-test", "tokens": {"input": 50, "output": 5},
            "outcome": "sent", "max_tokens": 200}),
        "{task}"
    );
}

#[test]
fn answer_sample_edit_returns_the_completion_as_the_editor_left_it_and_logs_it_as_edited() {
    let (task, seen) = a_sampled_summary(true);
    assert!(result_text(&task).contains("Two of three mended."), "{task}");
    assert_eq!(seen.len(), 1);
    // What the edit started from cost the tokens the provider reported; the log says it was edited.
    assert_eq!(
        answer_note(&task),
        json!({"approved_by": "user", "model": "claude-test", "tokens": {"input": 50, "output": 5},
            "outcome": "sent", "max_tokens": 200, "edited": true}),
        "{task}"
    );
}

#[test]
fn models_test_asks_the_first_model_for_one_word_with_the_stored_key() {
    let (base, seen) =
        stand(json!({"model": "gpt-test", "choices": [{"message": {"content": "OK"}, "finish_reason": "stop"}]}));
    let env = Env::new();
    add_local(&env, &base);
    let out = env.run(&["models", "test", "local"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("gpt-test answered \"OK\""), "{}", text(&out.stdout));
    let seen = seen.lock().expect("log");
    assert_eq!(seen[0].body["model"], "gpt-test");
    assert_eq!(seen[0].body["max_tokens"], 8);
    assert!(seen[0].headers.contains(&("authorization".into(), format!("Bearer {KEY}"))));

    let out = env.run(&["models", "test", "nobody"], "");
    assert_eq!(out.status.code(), Some(2));
}
