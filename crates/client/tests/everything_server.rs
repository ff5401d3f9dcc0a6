//! Task lifecycles against the reference server `@modelcontextprotocol/server-everything`
//! (legacy 2025-11-25 tasks), with every message the client sends checked against the schema.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use support::{
    Recorder, check_wire_log, everything_spec, expect_task, poll_task, question_during_result, tapped, wait_for_tool,
};
use taskdeck_client::{ClientError, Session, SessionEvent, SessionOptions, StartOptions, Started, TaskSnapshot};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::form::FormModel;
use taskdeck_protocol::{Era, TaskStatus};

struct Peer {
    session: Session,
    rec: Arc<Recorder>,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn connect() -> Peer {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("wire.jsonl");
    let rec = Recorder::new();
    let session =
        Session::connect(&tapped(everything_spec(), &log), SessionOptions::default(), rec.clone()).await.unwrap();
    Peer { session, rec, log, _dir: dir }
}

impl Peer {
    async fn wait_tool(&self, name: &str) {
        wait_for_tool(&self.session, name).await
    }

    /// Every 100 ms for 20 s: the reference server's research steps take seconds.
    async fn poll_until(&self, task_id: &str, done: impl Fn(&TaskSnapshot) -> bool) -> TaskSnapshot {
        poll_task(&self.session, task_id, 200, Duration::from_millis(100), done).await
    }

    fn check_wire(&self) {
        assert!(check_wire_log(&self.log, Era::Legacy, false) > 3, "the tap saw too little");
    }
}

#[tokio::test]
async fn research_query_runs_as_a_task_to_completion() {
    let p = connect().await;
    assert_eq!(p.session.era(), Era::Legacy);
    assert!(p.session.info().tasks);
    p.wait_tool("simulate-research-query").await;
    let t = expect_task(
        p.session
            .start_tool("simulate-research-query", json!({"topic": "tides"}), &StartOptions::default())
            .await
            .unwrap(),
    );
    assert_eq!(t.status, TaskStatus::Working);
    let done = p.poll_until(&t.task_id, |s| s.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let result = p.session.task_result(&t.task_id).await.unwrap();
    assert!(!result.is_error());
    assert!(result.joined_text().to_lowercase().contains("tides"), "{}", result.joined_text());
    p.check_wire();
}

#[tokio::test]
async fn ambiguous_research_asks_a_question_and_continues_with_the_answer() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    let t = expect_task(
        p.session
            .start_tool(
                "simulate-research-query",
                json!({"topic": "python", "ambiguous": true}),
                &StartOptions::default(),
            )
            .await
            .unwrap(),
    );
    // The question is delivered while tasks/result is outstanding (server-quirks 2).
    let (q, waiter) =
        question_during_result(&p.session, &p.rec, &t.task_id, Duration::from_secs(20), "the clarifying question")
            .await;
    assert_eq!(q.task_id.as_deref(), Some(t.task_id.as_str()));
    let Some(requested_schema) = q.schema().cloned() else { panic!("expected a form: {q:?}") };
    let content = fill_form(&requested_schema);
    p.session.answer(&q.key, q.task_id.as_deref(), &ElicitResult::accept(content)).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(30), waiter).await.unwrap().unwrap().unwrap();
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(p.session.get_task(&t.task_id).await.unwrap().status, TaskStatus::Completed);
    p.check_wire();
}

#[tokio::test]
async fn cancelling_a_running_task_ends_it_cancelled() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    let t = expect_task(
        p.session.start_tool("simulate-research-query", json!({"topic": "x"}), &StartOptions::default()).await.unwrap(),
    );
    let cancelled = p.session.cancel_task(&t.task_id).await.unwrap().expect("legacy answers with the task");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    // A second cancel of a terminal task is refused by the server (-32602), and reported typed.
    let again = p.session.cancel_task(&t.task_id).await.unwrap_err();
    assert_eq!(again.rpc_error().map(|e| e.code), Some(-32602), "{again}");
    // No result is stored for a cancelled task (server-quirks 6).
    assert!(matches!(p.session.task_result(&t.task_id).await, Err(ClientError::Rpc { .. })));
    p.check_wire();
}

#[tokio::test]
async fn long_running_operation_reports_progress_with_our_token() {
    let p = connect().await;
    p.wait_tool("trigger-long-running-operation").await;
    let opts = StartOptions { progress_token: Some("local-task-1".into()), ttl_ms: None };
    let started = p
        .session
        .start_tool("trigger-long-running-operation", json!({"duration": 1, "steps": 4}), &opts)
        .await
        .unwrap();
    let Started::Completed(result) = started else { panic!("a forbidden-task tool answers plainly") };
    assert!(!result.is_error());
    let progress: Vec<(Value, f64)> = p
        .rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Progress { token, progress, .. } => Some((token, progress)),
            _ => None,
        })
        .collect();
    assert!(progress.len() >= 3, "{progress:?}");
    assert!(progress.iter().all(|(t, _)| t == "local-task-1"));
    assert!(progress.windows(2).all(|w| w[0].1 < w[1].1), "progress must increase: {progress:?}");
    p.check_wire();
}

#[tokio::test]
async fn elicitation_with_every_field_type_is_answered() {
    let p = connect().await;
    p.wait_tool("trigger-elicitation-request").await;
    let call = {
        let s = p.session.clone();
        tokio::spawn(
            async move { s.start_tool("trigger-elicitation-request", json!({}), &StartOptions::default()).await },
        )
    };
    let SessionEvent::Question(q) =
        p.rec.wait_for(Duration::from_secs(10), "the elicitation", |e| matches!(e, SessionEvent::Question(_))).await
    else {
        unreachable!()
    };
    assert_eq!(q.task_id, None, "a plain call's question belongs to no task");
    let Some(requested_schema) = q.schema().cloned() else { panic!("expected a form: {q:?}") };
    // Every field kind the elicitation schema allows is one the form model reads.
    assert!(matches!(q.form(), Some(FormModel::Ready { fields }) if fields.len() > 10), "{:?}", q.form());
    let content = fill_form(&requested_schema);
    p.session.answer(&q.key, None, &ElicitResult::accept(content)).await.unwrap();
    let Started::Completed(result) = call.await.unwrap().unwrap() else { panic!("expected a plain result") };
    assert!(!result.is_error(), "{result:?}");
    assert!(result.joined_text().contains("accept"), "{}", result.joined_text());
    p.check_wire();
}

#[tokio::test]
async fn a_restarted_server_no_longer_knows_the_task() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    let t = expect_task(
        p.session.start_tool("simulate-research-query", json!({"topic": "y"}), &StartOptions::default()).await.unwrap(),
    );
    p.session.kill();
    p.rec.wait_for(Duration::from_secs(5), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    assert!(p.session.get_task(&t.task_id).await.unwrap_err().is_server_gone());
    // Its task store lived in memory: re-attaching to a fresh process fails with -32602, which is
    // how the engine learns to fail the task as unknown to the server.
    let fresh = connect().await;
    let err = fresh.session.attach(&t.task_id).await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602), "{err}");
}

/// Answers a form the way a careful user would: every required field, within its constraints.
fn fill_form(schema: &Value) -> Map<String, Value> {
    let mut content = Map::new();
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for (name, field) in schema["properties"].as_object().unwrap() {
        if !required.contains(&name.as_str()) && field.get("default").is_none() {
            continue;
        }
        // The official JSON Schema admits only integers as answer values (`number` in the spec's
        // TypeScript became `integer` in its JSON Schema), so a number field gets a whole number.
        let value = if field["type"] == "number" {
            json!(field["minimum"].as_f64().map(|m| m.ceil() as i64).unwrap_or(3))
        } else if let Some(d) = field.get("default") {
            d.clone()
        } else if let Some(e) = field["enum"].as_array() {
            e[0].clone()
        } else if let Some(o) = field["oneOf"].as_array() {
            o[0]["const"].clone()
        } else {
            match (field["type"].as_str(), field["format"].as_str()) {
                (Some("string"), Some("email")) => json!("user@example.com"),
                (Some("string"), Some("uri")) => json!("https://example.com"),
                (Some("string"), Some("date")) => json!("2026-11-30"),
                (Some("string"), Some("date-time")) => json!("2026-11-30T10:00:00Z"),
                (Some("string"), _) => json!("an answer"),
                (Some("integer"), _) => json!(field["minimum"].as_i64().unwrap_or(1)),
                (Some("number"), _) => json!(field["minimum"].as_f64().unwrap_or(1.0)),
                (Some("boolean"), _) => json!(true),
                (Some("array"), _) => {
                    let items = &field["items"];
                    let first = items["enum"]
                        .as_array()
                        .map(|e| e[0].clone())
                        .or_else(|| items["anyOf"].as_array().map(|a| a[0]["const"].clone()));
                    json!([first.unwrap_or(json!("a"))])
                }
                _ => json!(null),
            }
        };
        content.insert(name.clone(), value);
    }
    content
}

#[tokio::test]
async fn a_task_the_server_refuses_to_create_is_a_typed_error() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    // The reference server has no task tool that ends in a tool error; arguments it rejects make
    // the call itself fail, which the engine records as a failed task with this code.
    let err = p
        .session
        .start_tool("simulate-research-query", json!({"topic": 5}), &StartOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602), "{err}");
    assert!(p.session.dead().is_none());
    p.check_wire();
}
