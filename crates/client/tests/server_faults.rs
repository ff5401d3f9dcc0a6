//! What a misbehaving server sends back, and the bounded end the session gives each request:
//! answers it cannot read fail the request they answered, answers about another task are
//! refused, a tool is never sent twice, and a server that stops reading ends its session.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Recorder, fault_spec};
use taskdeck_client::{
    ClientError, FollowOptions, Followed, ResponseFault, ServerSpec, Session, SessionOptions, StartOptions, Started,
    TaskSnapshot,
};

/// Small frames, so "too long" costs little.
const MAX_FRAME: usize = 64 * 1024;

fn opts() -> SessionOptions {
    SessionOptions {
        probe_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_secs(5),
        max_frame: MAX_FRAME,
        ..Default::default()
    }
}

/// The fault server in `scenario`, counting what it executes in `count`.
fn spec(scenario: &str, count: &Path) -> ServerSpec {
    let mut spec = fault_spec(scenario);
    spec.env.insert("FAULT_COUNT".into(), count.display().to_string());
    spec.env.insert("FAULT_BIG".into(), (2 * MAX_FRAME).to_string());
    spec
}

fn executions(count: &Path) -> Vec<String> {
    std::fs::read_to_string(count).unwrap_or_default().lines().map(str::to_owned).collect()
}

async fn start_task(session: &Session) -> TaskSnapshot {
    match session.start_tool("job", json!({}), &StartOptions::default()).await.unwrap() {
        Started::Task(handle) => *handle,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Everything a follow yields until it ends, within `bound`.
async fn follow_to_the_end(session: &Session, handle: &TaskSnapshot, opts: FollowOptions, bound: Duration) -> Followed {
    let mut follow = session.follow(handle, opts);
    let mut last = None;
    tokio::time::timeout(bound, async {
        while let Some(next) = follow.next().await {
            last = Some(next);
        }
    })
    .await
    .expect("the follow ends within its bound");
    last.expect("the follow yields something")
}

const FOLLOW: FollowOptions = FollowOptions {
    min_poll: Duration::from_millis(50),
    max_poll: Duration::from_secs(1),
    default_poll: Duration::from_millis(100),
    give_up: Duration::from_secs(1),
};

#[tokio::test]
async fn a_result_too_long_to_read_fails_the_request_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::connect(&spec("result-huge", &dir.path().join("count")), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    let started = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(10), session.task_result(&handle.task_id))
        .await
        .expect("the request ends instead of waiting for ever")
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::UnreadableResponse { method, fault: ResponseFault::TooLarge { limit }, .. }
            if method == "tasks/result" && *limit == MAX_FRAME),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(session.dead().is_none(), "one unreadable answer is not a dead server");
    session.get_task(&handle.task_id).await.expect("the session carries on");
}

#[tokio::test]
async fn a_result_nested_too_deep_or_with_a_lone_surrogate_fails_the_request_it_answered() {
    for scenario in ["result-deep", "result-surrogate"] {
        let dir = tempfile::tempdir().unwrap();
        // 100,000 levels are 200,000 bytes: within the frame limit, past serde's depth limit.
        let opts = SessionOptions { max_frame: 1024 * 1024, ..opts() };
        let session =
            Session::connect(&spec(scenario, &dir.path().join("count")), opts, Recorder::new()).await.unwrap();
        let handle = start_task(&session).await;
        let err = tokio::time::timeout(Duration::from_secs(10), session.task_result(&handle.task_id))
            .await
            .unwrap_or_else(|_| panic!("{scenario}: the request ends instead of waiting for ever"))
            .unwrap_err();
        assert!(
            matches!(&err, ClientError::UnreadableResponse { fault: ResponseFault::Unreadable { .. }, .. }),
            "{scenario}: {err}"
        );
    }
}

#[tokio::test]
async fn an_unreadable_answer_that_names_no_request_fails_the_open_requests() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::connect(&spec("result-id-last", &dir.path().join("count")), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    let err = tokio::time::timeout(Duration::from_secs(10), session.task_result(&handle.task_id))
        .await
        .expect("the request ends instead of waiting for ever")
        .unwrap_err();
    assert!(matches!(&err, ClientError::UnreadableResponse { fault: ResponseFault::TooLarge { .. }, .. }), "{err}");
}

#[tokio::test]
async fn following_a_task_whose_result_cannot_be_read_ends_with_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let session = Session::connect(&spec("result-huge", &count), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    let end = follow_to_the_end(&session, &handle, FOLLOW, Duration::from_secs(10)).await;
    assert!(
        matches!(&end, Followed::Failed(ClientError::UnreadableResponse { fault: ResponseFault::TooLarge { .. }, .. })),
        "{end:?}"
    );
    assert_eq!(executions(&count), ["job"]);
}

#[tokio::test]
async fn a_task_said_to_have_ended_whose_result_never_comes_ends_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::connect(&spec("ended-no-result", &dir.path().join("count")), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    let end = follow_to_the_end(&session, &handle, FOLLOW, Duration::from_secs(20)).await;
    let Followed::Snapshot { snapshot, .. } = &end else { panic!("{end:?}") };
    assert!(snapshot.is_final() && snapshot.result.is_none() && snapshot.error.is_none(), "{snapshot:?}");
}

#[tokio::test]
async fn polls_that_keep_failing_end_after_the_bound_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::connect(&spec("polls-deep", &dir.path().join("count")), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    let started = Instant::now();
    let end = follow_to_the_end(&session, &handle, FOLLOW, Duration::from_secs(10)).await;
    assert!(
        matches!(&end, Followed::Failed(ClientError::UnreadableResponse { method, .. }) if method == "tasks/get"),
        "{end:?}"
    );
    let took = started.elapsed();
    assert!(took >= FOLLOW.give_up && took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn an_answer_about_another_task_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::connect(&spec("wrong-task", &dir.path().join("count")), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    let err = session.get_task(&handle.task_id).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::WrongTask { asked, answered, .. } if *asked == handle.task_id && answered == "someone-else"),
        "{err}"
    );
}

#[tokio::test]
async fn a_plain_tool_whose_error_text_names_minus_32601_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let session = Session::connect(&spec("error-text", &count), opts(), Recorder::new()).await.unwrap();
    let started = session.start_tool("plain", json!({}), &StartOptions::default()).await.unwrap();
    let Started::Completed(result) = started else { panic!("expected the tool's own result, got {started:?}") };
    assert!(result.is_error());
    assert_eq!(executions(&count), ["plain"], "the tool ran once");
}

#[tokio::test]
async fn a_plain_call_the_server_refuses_as_needing_a_task_is_sent_again_as_one_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let session = Session::connect(&spec("refuses-plain", &count), opts(), Recorder::new()).await.unwrap();
    let started = session.start_tool("plain", json!({}), &StartOptions::default()).await.unwrap();
    assert!(matches!(&started, Started::Task(h) if h.task_id == "t:p"), "{started:?}");
    assert_eq!(executions(&count), ["plain"]);
}

#[tokio::test]
async fn a_tool_listed_as_required_is_sent_as_a_task_and_runs_once() {
    // Quirk 4's servers answer a plain call of such a tool with an error text naming -32601; the
    // tool list says `required`, so that call is never made.
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let session = Session::connect(&spec("quirk4", &count), opts(), Recorder::new()).await.unwrap();
    let handle = start_task(&session).await;
    assert_eq!(handle.task_id, "t:q");
    assert_eq!(executions(&count), ["job"]);
}

#[tokio::test]
async fn a_server_that_stops_reading_ends_its_session_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let session =
        Session::connect(&spec("close-stdin", &dir.path().join("count")), opts(), Recorder::new()).await.unwrap();
    let pid = session.pid().expect("a stdio server has a pid");
    let handle = start_task(&session).await;
    let end = follow_to_the_end(&session, &handle, FOLLOW, Duration::from_secs(10)).await;
    let Followed::Lost(ClientError::ServerExited { reason, .. }) = &end else { panic!("expected Lost, got {end:?}") };
    assert!(reason.contains("stopped reading"), "{reason}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while session.dead().is_none() {
        assert!(Instant::now() < deadline, "the session is still alive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dead = session.dead().unwrap().to_string();
    assert!(dead.contains("stopped reading"), "{dead}");
    while Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid) {
        assert!(Instant::now() < deadline, "the server {pid} is still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

#[tokio::test]
async fn a_server_that_exits_at_once_fails_to_connect_with_its_exit() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let err = Session::connect(&spec("exit-at-once", &dir.path().join("count")), opts(), Recorder::new())
        .await
        .err()
        .expect("must not connect");
    assert!(matches!(&err, ClientError::ServerExited { reason, .. } if reason.contains("exit status: 2")), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
