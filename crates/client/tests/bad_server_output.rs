//! What a broken server can send, and what the session makes of it: a typed, logged discard and
//! a session that carries on, or a clear error instead of a hang.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{Recorder, fault_spec};
use taskdeck_client::{
    ClientError, Discard, QuestionKey, Session, SessionEvent, SessionOptions, StartOptions, Started,
};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::{Era, RequestId, TaskStatus};

fn opts() -> SessionOptions {
    SessionOptions {
        // Long enough for a slow start of the Python server on a loaded machine: a probe timing out
        // first would see its late answer discarded as unknown, which the tests count.
        probe_timeout: Duration::from_secs(3),
        request_timeout: Duration::from_secs(2),
        max_frame: 4096,
        ..Default::default()
    }
}

#[tokio::test]
async fn garbage_lines_are_set_aside_and_the_session_carries_on() {
    let rec = Recorder::new();
    let session = Session::connect(&fault_spec("garbage"), opts(), rec.clone()).await.unwrap();
    assert_eq!(session.era(), Era::Legacy);
    let tools = session.list_tools().await.expect("the valid answer after the garbage still arrives");
    assert_eq!(tools[0].name, "job");
    let reasons = rec.discards();
    // not JSON, too long, not UTF-8, unknown response id, invalid progress params
    assert_eq!(
        reasons,
        vec![
            Discard::Malformed,
            Discard::Malformed,
            Discard::Malformed,
            Discard::UnknownResponse,
            Discard::InvalidParams
        ]
    );
    assert!(session.dead().is_none());
}

#[tokio::test]
async fn out_of_order_duplicate_and_late_statuses_are_filtered() {
    let rec = Recorder::new();
    let session = Session::connect(&fault_spec("statuses"), opts(), rec.clone()).await.unwrap();
    let Started::Task(handle) = session.start_tool("job", json!({}), &StartOptions::default()).await.unwrap() else {
        panic!("expected a task");
    };
    assert_eq!(handle.task_id, "t:1");
    rec.wait_for(Duration::from_secs(5), "the after-terminal discard", |e| {
        matches!(e, SessionEvent::Discarded { reason: Discard::AfterTerminal, .. })
    })
    .await;
    let delivered: Vec<TaskStatus> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Task(s) => Some(s.status),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, vec![TaskStatus::InputRequired, TaskStatus::Completed]);
    let discards = rec.discards();
    assert_eq!(discards, vec![Discard::Duplicate, Discard::Stale, Discard::AfterTerminal]);
}

#[tokio::test]
async fn a_hung_server_times_out_instead_of_hanging() {
    let session = Session::connect(&fault_spec("hang"), opts(), Recorder::new()).await.unwrap();
    let err = session.list_tools().await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { ref method, .. } if method == "tools/list"), "{err}");
    assert!(session.dead().is_none(), "a slow answer is not a dead server");
}

#[tokio::test]
async fn a_server_that_exits_mid_request_fails_the_request_with_its_exit_not_its_stderr() {
    let rec = Recorder::new();
    let session = Session::connect(&fault_spec("exit-mid-request"), opts(), rec.clone()).await.unwrap();
    let err = session.list_tools().await.unwrap_err();
    let ClientError::ServerExited { reason, .. } = &err else { panic!("expected ServerExited, got {err}") };
    assert!(reason.contains("exit status: 3"), "{reason}");
    // Its stderr may hold a secret: it stays in the session's lines (and the log), not the reason.
    assert!(!reason.contains("out of cheese") && reason.contains("server's log"), "{reason}");
    assert!(session.stderr().iter().any(|l| l.contains("out of cheese")), "{:?}", session.stderr());
    rec.wait_for(Duration::from_secs(2), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    // Later requests fail at once with the same reason.
    assert_eq!(session.ping(Duration::from_secs(1)).await.unwrap_err(), err);
}

#[tokio::test]
async fn a_silent_server_fails_to_connect_with_a_timeout() {
    let started = std::time::Instant::now();
    let err = Session::connect(&fault_spec("silent"), opts(), Recorder::new()).await.err().expect("must not connect");
    assert!(matches!(err, ClientError::Timeout { ref method, .. } if method == "initialize"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_missing_command_is_a_spawn_error() {
    let mut spec = fault_spec("garbage");
    spec.command = "/nonexistent/taskdeck-no-such-server".into();
    let err = Session::connect(&spec, opts(), Recorder::new()).await.err().expect("must not connect");
    assert!(matches!(err, ClientError::Spawn { .. }), "{err}");
    assert!(err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn string_and_zero_request_ids_from_the_server_are_served() {
    let rec = Recorder::new();
    let session = Session::connect(&fault_spec("questions"), opts(), rec.clone()).await.unwrap();
    session.start_tool("job", json!({}), &StartOptions::default()).await.unwrap();
    let SessionEvent::Question(q) =
        rec.wait_for(Duration::from_secs(5), "the question", |e| matches!(e, SessionEvent::Question(_))).await
    else {
        unreachable!()
    };
    assert_eq!(q.key, QuestionKey::Request(RequestId::String("task-t:2-0".into())));
    assert_eq!(q.task_id.as_deref(), Some("t:2"));
    let mut content = serde_json::Map::new();
    content.insert("x".into(), json!("yes"));
    session.answer(&q.key, q.task_id.as_deref(), &ElicitResult::accept(content)).await.unwrap();
    // Answering twice is an error, not a second response on the wire.
    let again = session.answer(&q.key, None, &ElicitResult::decline()).await.unwrap_err();
    assert!(matches!(again, ClientError::NoSuchQuestion { .. }));
    // The server echoes our answers to stderr: ping with id 0, the answer with the related task,
    // and an invalid-params error for the malformed elicitation.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let lines = session.stderr().join("\n");
        if lines.matches("client answered").count() >= 3 {
            assert!(lines.contains(r#""id": 0, "result": {}"#), "{lines}");
            assert!(lines.contains(r#""io.modelcontextprotocol/related-task": {"taskId": "t:2"}"#), "{lines}");
            assert!(lines.contains(r#""id": 5, "error": {"code": -32602"#), "{lines}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "answers not seen: {lines}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
