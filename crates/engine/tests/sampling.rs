//! `Engine::sample` against the demo server's `plan_release`, which asks a form and a sampling
//! request at once (modern era): the question the caller names is the one sent to the model.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use taskdeck_engine::config::Paths;
use taskdeck_engine::sampling::{Completion, ModelError, ModelProvider, Models, TokenUsage};
use taskdeck_engine::{Engine, EngineError, EngineOptions};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::sampling::{CreateMessageParams, CreateMessageResult};
use taskdeck_store::EventKind;
use taskdeck_test_support::{demo_server_entry, write_servers_config};

/// A model that answers every request with one text and keeps the `maxTokens` it was asked for.
struct Recording(Arc<Mutex<Vec<u64>>>);

impl ModelProvider for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn complete<'a>(
        &'a self,
        request: &'a CreateMessageParams,
    ) -> Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>> {
        self.0.lock().unwrap().push(request.max_tokens);
        Box::pin(async move {
            let result = CreateMessageResult::text("Faster search.", "recording");
            Ok(Completion { result, usage: Some(TokenUsage { input: 9, output: 3 }) })
        })
    }
}

async fn open(dir: &Path, asked: Arc<Mutex<Vec<u64>>>) -> Engine {
    open_with(dir, asked, json!("ask")).await
}

async fn open_with(dir: &Path, asked: Arc<Mutex<Vec<u64>>>, policy: serde_json::Value) -> Engine {
    open_in(dir, asked, policy, None).await
}

/// `era`: the demo server pinned to it (`None` detects it: modern).
async fn open_in(dir: &Path, asked: Arc<Mutex<Vec<u64>>>, policy: serde_json::Value, era: Option<&str>) -> Engine {
    let mut entry = demo_server_entry(&dir.join("demo-state"));
    entry["sampling"] = policy;
    if let Some(era) = era {
        entry["era"] = json!(era);
    }
    write_servers_config(&dir.join("servers.json"), [("demo", entry)]);
    let models = Models::new(vec![Arc::new(Recording(asked))]);
    let opts = EngineOptions { server_wait: Duration::from_secs(30), models, ..Default::default() };
    Engine::open(Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }, opts).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_several_pending_questions_the_one_named_is_sampled_and_a_form_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let engine = open(dir.path(), asked.clone()).await;
    let rec = engine.run("demo", "plan_release", json!({"version": "3.0"})).await.unwrap();
    let wait = engine.wait(&rec.id, |r| r.status == TaskStatus::InputRequired && r.questions.len() == 2);
    let rec = tokio::time::timeout(Duration::from_secs(30), wait).await.unwrap().unwrap();
    let keys: Vec<String> = rec.questions.iter().map(|q| q.key.to_text()).collect();
    assert!(!rec.questions[0].is_sampling() && rec.questions[1].is_sampling(), "{rec:#?}");

    // The first pending question is the form: nothing to send to a model.
    let first = engine.sample(&rec.id, None).await.unwrap_err();
    assert!(first.to_string().contains("not waiting for a sampling reply"), "{first}");
    let named = engine.sample(&rec.id, Some(&keys[0])).await.unwrap_err();
    assert!(matches!(named, EngineError::Store(_)), "{named}");
    assert!(named.to_string().contains("that question is not a sampling request"), "{named}");
    let unknown = engine.sample(&rec.id, Some("\"no such key\"")).await.unwrap_err();
    assert!(unknown.to_string().contains("no pending question has that key"), "{unknown}");
    assert!(asked.lock().unwrap().is_empty(), "no model was asked");

    // The second, named by its key, is the one sent: the release note's 100 tokens.
    let completion = engine.sample(&rec.id, Some(&keys[1])).await.unwrap();
    assert_eq!(completion.result.content.text(), "Faster search.");
    assert_eq!(*asked.lock().unwrap(), [100]);
    // Nothing went to the server: both questions still wait.
    assert_eq!(engine.get(&rec.id).unwrap().questions.len(), 2);

    // Returned as the model wrote it, with the form: the log says the user approved the model's
    // completion, and what it cost.
    let form = json!({"environment": "staging"}).as_object().cloned().unwrap();
    let reply = serde_json::to_value(&completion.result).unwrap().as_object().cloned().unwrap();
    let inputs = vec![taskdeck_engine::AnswerInput::Accept(form), taskdeck_engine::AnswerInput::Accept(reply)];
    engine.answer_all(&rec.id, inputs).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()));
    assert_eq!(end.await.unwrap().unwrap().status, TaskStatus::Completed);
    let answer = engine.events(&rec.id).unwrap().into_iter().find(|e| e.kind == EventKind::Answer).unwrap();
    let notes: Vec<_> = answer.data["answers"].as_array().unwrap().iter().map(|a| a["sampling"].clone()).collect();
    assert_eq!(
        notes,
        [
            serde_json::Value::Null,
            json!({"approved_by": "user", "model": "recording", "tokens": {"input": 9, "output": 3},
                "outcome": "sent", "max_tokens": 100})
        ],
        "{answer:?}"
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_completion_the_user_edited_is_logged_as_edited_with_the_tokens_the_model_used() {
    for era in [None, Some("legacy")] {
        let dir = tempfile::tempdir().unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let engine = open_in(dir.path(), asked.clone(), json!("ask"), era).await;
        let rec = engine.run("demo", "summarize_findings", json!({"topic": "checkout"})).await.unwrap();
        let wait = engine.wait(&rec.id, |r| r.status == TaskStatus::InputRequired && r.question.is_some());
        let rec = tokio::time::timeout(Duration::from_secs(30), wait).await.unwrap().unwrap();
        let completion = engine.sample(&rec.id, None).await.unwrap();
        assert_eq!(completion.result.content.text(), "Faster search.", "{era:?}");

        let edited = json!({"text": "Faster search, mostly."}).as_object().cloned().unwrap();
        engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(edited)).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()));
        let rec = end.await.unwrap().unwrap();
        assert_eq!(rec.status, TaskStatus::Completed, "{era:?}: {rec:#?}");
        let answer = engine.events(&rec.id).unwrap().into_iter().find(|e| e.kind == EventKind::Answer).unwrap();
        assert_eq!(answer.data["response"]["content"]["text"], "Faster search, mostly.", "{era:?}: {answer:?}");
        assert_eq!(answer.data["response"]["model"], "human", "{era:?}: the server is told a person wrote it");
        assert_eq!(
            answer.data["sampling"],
            json!({"approved_by": "user", "model": "recording", "tokens": {"input": 9, "output": 3},
                "outcome": "sent", "max_tokens": 200, "edited": true}),
            "{era:?}"
        );
        engine.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_policy_answers_the_sampling_request_of_two_and_leaves_the_form_to_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let engine = open_with(dir.path(), asked.clone(), json!({"auto": {"maxTokensPerTask": 500}})).await;
    let rec = engine.run("demo", "plan_release", json!({"version": "3.0"})).await.unwrap();
    // The sampling request is recorded and answered in one breath; then the form is asked.
    let form_asked = |r: &taskdeck_engine::TaskRecord| r.question.as_ref().is_some_and(|q| !q.is_sampling());
    let wait = engine.wait(&rec.id, |r| r.status == TaskStatus::InputRequired && form_asked(r));
    let rec = tokio::time::timeout(Duration::from_secs(30), wait).await.unwrap().unwrap();
    assert_eq!(rec.questions.len(), 1, "only the form is the user's: {rec:#?}");
    assert!(!rec.questions[0].is_sampling());
    assert_eq!(*asked.lock().unwrap(), [100]);

    let content = json!({"environment": "staging"}).as_object().cloned().unwrap();
    engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(content)).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()));
    let rec = end.await.unwrap().unwrap();
    assert_eq!(rec.status, TaskStatus::Completed, "{rec:#?}");
    let text = rec.result.as_ref().unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(
        text.contains("Release 3.0 to staging") && text.contains("Release note (recording): Faster search."),
        "{text}"
    );
    let notes: Vec<_> =
        engine.events(&rec.id).unwrap().into_iter().filter_map(|e| e.data.get("sampling").cloned()).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["approved_by"], "policy");
    assert_eq!(notes[0]["tokens"], json!({"input": 9, "output": 3}));
    assert_eq!(*asked.lock().unwrap(), [100], "sent once, though polls listed it until the server took it");
    engine.shutdown().await;
}

/// The reference server over Streamable HTTP: `trigger-sampling-request-async` makes its question
/// a task on Taskdeck's side, which the store keeps beside the session while it waits, and which
/// the answer completes for the server's polls. (It cannot show a restart: the tool is a plain
/// call whose requests ride on its own POST stream, gone with the process; see
/// `crates/cli/tests/hosted_tasks.rs` for that.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_servers_hosted_sampling_task_is_kept_in_the_store_until_the_answer_completes_it() {
    let server = taskdeck_test_support::everything_server_http(None);
    let dir = tempfile::tempdir().unwrap();
    write_servers_config(&dir.path().join("servers.json"), [("everything", server.entry(None))]);
    let opts = EngineOptions { server_wait: Duration::from_secs(30), ..Default::default() };
    let paths = Paths { config: dir.path().join("servers.json"), data_dir: dir.path().join("data") };
    let engine = Engine::open(paths, opts).await.unwrap();
    let tool = "trigger-sampling-request-async";
    for _ in 0..100 {
        if engine.tools("everything").await.unwrap().iter().any(|t| t.name == tool) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rec = engine.run("everything", tool, json!({"prompt": "Name a colour.", "maxTokens": 20})).await.unwrap();
    let wait = engine.wait(&rec.id, taskdeck_engine::is_waiting_for_answer);
    tokio::time::timeout(Duration::from_secs(30), wait).await.unwrap().unwrap();
    let rows = engine.store().hosted_tasks("everything").unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].task["status"].as_str(), rows[0].terminal), (Some("input_required"), false));

    let reply = json!({"text": "Teal."}).as_object().cloned().unwrap();
    engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(reply)).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()));
    let rec = end.await.unwrap().unwrap();
    let text = rec.result.as_ref().unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("[COMPLETED]") && text.contains("Teal."), "{text}");
    // The session stays stored while the server runs, and the task's outcome with it.
    let rows = engine.store().hosted_tasks("everything").unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].task["status"], "completed", "{rows:?}");
    let kept = rows[0].outcome.as_ref().map(|o| &o["result"]["content"]["text"]);
    assert_eq!(kept, Some(&json!("Teal.")), "{rows:?}");
    engine.shutdown().await;
}
