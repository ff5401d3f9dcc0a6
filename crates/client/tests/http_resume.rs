//! A legacy HTTP session carried on by a later connection (as by another Taskdeck process): no
//! `initialize`, the tasks the server keeps in the session still there; and a session the server
//! no longer knows (ended by `DELETE`, or gone with a restarted server's 404) made afresh within
//! the same `Session::open`, the caller hearing nothing of the session that was gone.

#[path = "support/http_servers.rs"]
mod http_servers;
mod support;

use std::time::Duration;

use http_servers::everything_http;
use serde_json::json;
use support::Recorder;
use taskdeck_client::{Endpoint, HttpSpec, Resumption, Session, SessionEvent, SessionOptions, StartOptions, Started};
use taskdeck_protocol::{Era, TaskStatus};

fn resuming(stored: Option<taskdeck_client::Resumable>) -> SessionOptions {
    SessionOptions { resume: stored, ..SessionOptions::default() }
}

#[tokio::test]
async fn a_resumed_reference_session_sends_no_initialize_and_still_holds_its_task() {
    let server = everything_http().await;
    let endpoint = Endpoint::Http(server.spec("everything"));
    let first = Session::open(&endpoint, SessionOptions::default(), Recorder::new()).await.unwrap();
    assert_eq!(first.resumption(), Resumption::NotAsked);
    let mut tool = None;
    for _ in 0..100 {
        if first.list_tools().await.unwrap().iter().any(|t| t.name == "simulate-research-query") {
            tool = Some(());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tool.expect("the task tool appears");
    let started =
        first.start_tool("simulate-research-query", json!({"topic": "tides"}), &StartOptions::default()).await;
    let Started::Task(task) = started.unwrap() else { panic!("expected a task") };
    let stored = first.resumable().expect("a legacy HTTP session can be resumed");
    assert!(!format!("{stored:?}").contains(&stored.session_id), "the id stays out of debug output");
    first.detach(Duration::from_millis(500)).await;
    drop(first);

    let rec = Recorder::new();
    let second = Session::open(&endpoint, resuming(Some(stored.clone())), rec.clone()).await.unwrap();
    assert_eq!(second.resumption(), Resumption::Resumed);
    // An `initialize` would have made the reference server start another session, with its own id
    // and none of the first one's tasks.
    assert_eq!(second.resumable().map(|r| r.session_id), Some(stored.session_id));
    assert_eq!(second.info(), stored.info);
    let mut status = TaskStatus::Working;
    for _ in 0..100 {
        status = second.get_task(&task.task_id).await.expect("the session's task is known").status;
        if status.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, TaskStatus::Completed);
    assert!(second.task_result(&task.task_id).await.unwrap().joined_text().contains("tides"));
}

#[tokio::test]
async fn a_session_ended_with_delete_is_made_afresh_in_the_same_open() {
    let server = everything_http().await;
    let endpoint = Endpoint::Http(server.spec("everything"));
    let first = Session::open(&endpoint, SessionOptions::default(), Recorder::new()).await.unwrap();
    let stored = first.resumable().unwrap();
    first.shutdown(Duration::from_millis(500)).await;

    let rec = Recorder::new();
    let second = Session::open(&endpoint, resuming(Some(stored.clone())), rec.clone()).await.unwrap();
    assert!(matches!(second.resumption(), Resumption::Gone { .. }), "{:?}", second.resumption());
    let fresh = second.resumable().expect("a new session");
    assert_ne!(fresh.session_id, stored.session_id);
    second.ping(Duration::from_secs(5)).await.unwrap();
    assert!(
        !rec.events().iter().any(|e| matches!(e, SessionEvent::Closed { .. })),
        "the end of the gone session is not this session's: {:?}",
        rec.events()
    );
}

#[tokio::test]
async fn a_restarted_server_s_404_to_the_stored_session_leads_to_a_fresh_initialize() {
    let state = tempfile::tempdir().unwrap();
    let mut demo = taskdeck_test_support::demo_server_http(state.path(), "127.0.0.1:0");
    let spec = HttpSpec {
        name: "demo".into(),
        url: demo.url.clone(),
        headers: Default::default(),
        sign_in: Default::default(),
    };
    let endpoint = Endpoint::Http(spec);
    let legacy = SessionOptions { force_era: Some(Era::Legacy), ..SessionOptions::default() };
    let first = Session::open(&endpoint, legacy.clone(), Recorder::new()).await.unwrap();
    let stored = first.resumable().expect("a legacy session");
    first.detach(Duration::from_millis(500)).await;
    drop(first);
    demo.kill();
    let _demo = taskdeck_test_support::demo_server_http(state.path(), &format!("127.0.0.1:{}", demo.port()));

    let rec = Recorder::new();
    let opts = SessionOptions { resume: Some(stored.clone()), ..legacy };
    let second = Session::open(&endpoint, opts, rec.clone()).await.unwrap();
    let Resumption::Gone { reason } = second.resumption() else { panic!("{:?}", second.resumption()) };
    assert!(reason.contains("404"), "{reason}");
    assert_eq!(second.era(), Era::Legacy);
    assert_ne!(second.resumable().map(|r| r.session_id), Some(stored.session_id));
    assert!(second.list_tools().await.unwrap().iter().any(|t| t.name == "generate_report"));
    assert!(!rec.events().iter().any(|e| matches!(e, SessionEvent::Closed { .. })), "{:?}", rec.events());
}

#[tokio::test]
async fn a_modern_session_has_nothing_to_resume() {
    let state = tempfile::tempdir().unwrap();
    let demo = taskdeck_test_support::demo_server_http(state.path(), "127.0.0.1:0");
    let endpoint = Endpoint::Http(HttpSpec {
        name: "demo".into(),
        url: demo.url.clone(),
        headers: Default::default(),
        sign_in: Default::default(),
    });
    let session = Session::open(&endpoint, SessionOptions::default(), Recorder::new()).await.unwrap();
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.resumable(), None);
}

fn requests(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The fixture's session, as a connection before this one left it.
fn stored(session_id: &str) -> taskdeck_client::Resumable {
    taskdeck_client::Resumable {
        session_id: session_id.into(),
        hosted: Vec::new(),
        info: taskdeck_client::ServerInfo {
            era: Era::Legacy,
            protocol_version: "2025-11-25".into(),
            name: Some("http-fixture".into()),
            version: Some("1".into()),
            instructions: None,
            capabilities: json!({"tools": {}}),
            tasks: false,
        },
    }
}

#[tokio::test]
async fn a_resumed_session_s_first_request_carries_the_session_and_nothing_initializes_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = http_servers::fixture_with("legacy", &[("FIXTURE_LOG", log.display().to_string())]).await;
    let endpoint = Endpoint::Http(server.spec("fixture"));
    let session = Session::open(&endpoint, resuming(Some(stored("sess-1"))), Recorder::new()).await.unwrap();
    assert_eq!(session.resumption(), Resumption::Resumed);
    assert_eq!(session.info().name.as_deref(), Some("http-fixture"), "the stored info, not asked again");
    session.ping(Duration::from_secs(5)).await.unwrap();

    let posts: Vec<_> = requests(&log).into_iter().filter(|r| r["verb"] == "POST").collect();
    let methods: Vec<_> = posts.iter().map(|r| r["method"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(methods, ["tools/list", "ping"], "no server/discover, no initialize: {posts:?}");
    for post in &posts {
        assert_eq!(post["headers"]["mcp-session-id"], "sess-1", "{post}");
        assert_eq!(post["headers"]["mcp-protocol-version"], "2025-11-25", "{post}");
    }
    // The GET stream opens only after the session answered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all = requests(&log);
    let get = all.iter().position(|r| r["verb"] == "GET").expect("the GET stream opens");
    let list = all.iter().position(|r| r["method"] == "tools/list").unwrap();
    assert!(list < get, "{all:?}");
    assert_eq!(all[get]["headers"]["mcp-session-id"], "sess-1");
}

#[tokio::test]
async fn a_stored_session_the_server_refuses_is_followed_by_initialize_in_the_same_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = http_servers::fixture_with("legacy", &[("FIXTURE_LOG", log.display().to_string())]).await;
    let endpoint = Endpoint::Http(server.spec("fixture"));
    let session =
        Session::open(&endpoint, resuming(Some(stored("sess-from-yesterday"))), Recorder::new()).await.unwrap();
    assert!(matches!(session.resumption(), Resumption::Gone { .. }), "{:?}", session.resumption());
    assert_eq!(session.resumable().map(|r| r.session_id).as_deref(), Some("sess-1"), "the fresh session");

    let methods: Vec<_> = requests(&log)
        .into_iter()
        .filter(|r| r["verb"] == "POST")
        .map(|r| r["method"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(methods.first().map(String::as_str), Some("tools/list"), "the stored session is tried first");
    assert!(methods.iter().any(|m| m == "initialize"), "then a fresh handshake: {methods:?}");
}
