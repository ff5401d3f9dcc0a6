//! The reference server `@modelcontextprotocol/server-everything` reached over Streamable HTTP
//! (legacy 2025-11-25): the session, its task lifecycle, a question that arrives on an event
//! stream, and cancel, all through the HTTP transport.

#[path = "support/http_servers.rs"]
mod http_servers;
mod support;

use std::sync::Arc;
use std::time::Duration;

use http_servers::{HttpServer, everything_http};
use serde_json::{Map, Value, json};
use support::{Recorder, expect_task, poll_task, question_during_result, wait_for_tool};
use taskdeck_client::{Endpoint, Session, SessionEvent, SessionOptions, StartOptions, Started, TaskSnapshot};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::{Era, TaskStatus};

struct Peer {
    session: Session,
    rec: Arc<Recorder>,
    _server: HttpServer,
}

async fn connect() -> Peer {
    let server = everything_http().await;
    let rec = Recorder::new();
    let endpoint = Endpoint::Http(server.spec("everything-http"));
    let session = Session::open(&endpoint, SessionOptions::default(), rec.clone()).await.unwrap();
    Peer { session, rec, _server: server }
}

impl Peer {
    async fn wait_tool(&self, name: &str) {
        wait_for_tool(&self.session, name).await
    }

    async fn start(&self, arguments: Value) -> TaskSnapshot {
        expect_task(
            self.session.start_tool("simulate-research-query", arguments, &StartOptions::default()).await.unwrap(),
        )
    }

    /// Every 100 ms for 20 s: the reference server's research steps take seconds.
    async fn poll_until(&self, task_id: &str, done: impl Fn(&TaskSnapshot) -> bool) -> TaskSnapshot {
        poll_task(&self.session, task_id, 200, Duration::from_millis(100), done).await
    }
}

#[tokio::test]
async fn a_remote_server_is_detected_as_legacy_and_lists_its_tools() {
    let p = connect().await;
    assert_eq!(p.session.era(), Era::Legacy);
    assert_eq!(p.session.info().protocol_version, "2025-11-25");
    assert!(p.session.info().tasks);
    assert_eq!(p.session.pid(), None);
    p.wait_tool("simulate-research-query").await;
    p.session.ping(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn what_the_server_sends_unasked_arrives_on_the_get_stream() {
    let p = connect().await;
    p.wait_tool("toggle-simulated-logging").await;
    let started = p.session.start_tool("toggle-simulated-logging", json!({}), &StartOptions::default()).await.unwrap();
    assert!(matches!(started, Started::Completed(_)), "{started:?}");
    // Its log messages belong to no request: only the GET stream carries them (every 5 s).
    p.rec.wait_for(Duration::from_secs(15), "a log message", |e| matches!(e, SessionEvent::Log { .. })).await;
}

#[tokio::test]
async fn a_research_query_over_http_runs_as_a_task_to_completion() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    let t = p.start(json!({"topic": "tides"})).await;
    assert_eq!(t.status, TaskStatus::Working);
    let done = p.poll_until(&t.task_id, |s| s.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let result = p.session.task_result(&t.task_id).await.unwrap();
    assert!(!result.is_error());
    assert!(result.joined_text().to_lowercase().contains("tides"), "{}", result.joined_text());
}

#[tokio::test]
async fn a_question_arrives_on_the_event_stream_and_its_answer_continues_the_task() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    let t = p.start(json!({"topic": "python", "ambiguous": true})).await;
    // The question comes on the stream of the outstanding tasks/result.
    let (q, waiter) =
        question_during_result(&p.session, &p.rec, &t.task_id, Duration::from_secs(20), "the clarifying question")
            .await;
    assert_eq!(q.task_id.as_deref(), Some(t.task_id.as_str()));
    let schema = q.schema().cloned().expect("a form");
    p.session.answer(&q.key, q.task_id.as_deref(), &ElicitResult::accept(fill(&schema))).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(30), waiter).await.unwrap().unwrap().unwrap();
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(p.session.get_task(&t.task_id).await.unwrap().status, TaskStatus::Completed);
}

#[tokio::test]
async fn cancelling_a_task_over_http_ends_it_cancelled() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    let t = p.start(json!({"topic": "x"})).await;
    let cancelled = p.session.cancel_task(&t.task_id).await.unwrap().expect("legacy answers with the task");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(p.session.get_task(&t.task_id).await.unwrap().status, TaskStatus::Cancelled);
    let again = p.session.cancel_task(&t.task_id).await.unwrap_err();
    assert_eq!(again.rpc_error().map(|e| e.code), Some(-32602), "{again}");
}

#[tokio::test]
async fn a_closed_session_reports_closed_and_takes_no_more_requests() {
    let p = connect().await;
    p.wait_tool("simulate-research-query").await;
    tokio::time::timeout(Duration::from_secs(10), p.session.shutdown(Duration::from_secs(5))).await.unwrap();
    p.rec.wait_for(Duration::from_secs(5), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    let err = p.session.ping(Duration::from_secs(5)).await.unwrap_err();
    assert!(err.is_server_gone(), "{err}");
}

/// Every required field, within its constraints.
fn fill(schema: &Value) -> Map<String, Value> {
    let mut content = Map::new();
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for (name, field) in schema["properties"].as_object().unwrap() {
        if !required.contains(&name.as_str()) {
            continue;
        }
        let value = if let Some(d) = field.get("default") {
            d.clone()
        } else if let Some(e) = field["enum"].as_array() {
            e[0].clone()
        } else if let Some(o) = field["oneOf"].as_array() {
            o[0]["const"].clone()
        } else {
            match field["type"].as_str() {
                Some("integer") | Some("number") => json!(1),
                Some("boolean") => json!(true),
                _ => json!("an answer"),
            }
        };
        content.insert(name.clone(), value);
    }
    content
}
