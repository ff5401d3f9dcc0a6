//! The 2026-07-28 era over Streamable HTTP, against a fixture that refuses (400 HeaderMismatch)
//! any request whose mirrored headers disagree with its body: detection by `server/discover`, a
//! task started by `tools/call` on a per-request stream and followed by `tasks/get`, a tool name
//! carried in the Base64 sentinel, and cancellation of a plain call by closing its stream.

#[path = "support/http_servers.rs"]
mod http_servers;
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http_servers::{HttpServer, fixture_log, fixture_with};
use serde_json::{Value, json};
use support::Recorder;
use taskdeck_client::{ClientError, Endpoint, Session, SessionEvent, SessionOptions, StartOptions, Started};
use taskdeck_protocol::{Era, TaskStatus};

struct Peer {
    session: Session,
    rec: std::sync::Arc<Recorder>,
    log: PathBuf,
    _server: HttpServer,
    _dir: tempfile::TempDir,
}

async fn connect(opts: SessionOptions) -> Peer {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = fixture_with("modern", &[("FIXTURE_LOG", log.display().to_string())]).await;
    let rec = Recorder::new();
    let session = Session::open(&Endpoint::Http(server.spec("modern")), opts, rec.clone()).await.unwrap();
    Peer { session, rec, log, _server: server, _dir: dir }
}

#[tokio::test]
async fn a_modern_task_runs_over_http_with_every_header_matching_its_body() {
    let p = connect(SessionOptions::default()).await;
    assert_eq!(p.session.era(), Era::Modern);
    assert!(p.session.info().tasks);
    let tool = "slow job ☂";
    let Started::Task(t) = p.session.start_tool(tool, json!({}), &StartOptions::default()).await.unwrap() else {
        panic!("expected a task")
    };
    assert_eq!(t.status, TaskStatus::Working);
    // The notification the call's own stream carried before its answer.
    p.rec.wait_for(Duration::from_secs(2), "the log line", |e| matches!(e, SessionEvent::Log { .. })).await;
    let mut done = None;
    for _ in 0..50 {
        let s = p.session.get_task(&t.task_id).await.unwrap();
        if s.status.is_terminal() {
            done = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = done.expect("the task completed");
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result.expect("its result").joined_text(), format!("done {}", t.task_id));

    let log = fixture_log(&p.log);
    assert!(!log.iter().any(|e| e["event"] == "header mismatch"), "{log:#?}");
    let posts: Vec<&Value> = log.iter().filter(|e| e["verb"] == "POST").collect();
    assert!(posts.len() >= 4, "{posts:#?}");
    for post in &posts {
        let h = &post["headers"];
        assert_eq!(h["mcp-protocol-version"], "2026-07-28", "{post}");
        assert_eq!(h["mcp-method"], post["method"], "{post}");
        assert!(h.get("mcp-session-id").is_none(), "no sessions in the modern era: {post}");
    }
    let call = posts.iter().find(|e| e["method"] == "tools/call").unwrap();
    // Not plain ASCII, so carried in the sentinel.
    assert_eq!(call["headers"]["mcp-name"], "=?base64?c2xvdyBqb2Ig4piC?=");
    let get = posts.iter().find(|e| e["method"] == "tasks/get").unwrap();
    assert_eq!(get["headers"]["mcp-name"], t.task_id.as_str());
    // No GET stream, and nothing but requests.
    assert!(!log.iter().any(|e| e["verb"] == "GET" || e["verb"] == "DELETE"), "{log:#?}");
}

#[tokio::test]
async fn giving_up_on_a_modern_call_closes_its_stream_which_is_the_cancellation() {
    let p = connect(SessionOptions { call_timeout: Duration::from_secs(1), ..Default::default() }).await;
    let started = Instant::now();
    let err =
        tokio::time::timeout(Duration::from_secs(5), p.session.start_tool("hang", json!({}), &StartOptions::default()))
            .await
            .expect("the call ends within its bound")
            .unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !fixture_log(&p.log).iter().any(|e| e["event"] == "stream closed by the client") {
        assert!(Instant::now() < deadline, "the stream was never closed: {:#?}", fixture_log(&p.log));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Over HTTP the closed stream is the cancellation: no notification is posted.
    assert!(!fixture_log(&p.log).iter().any(|e| e["method"] == "notifications/cancelled"));
    assert!(p.session.dead().is_none());
}

#[tokio::test]
async fn annotated_tool_parameters_are_mirrored_as_headers_and_misannotated_tools_left_out() {
    let p = connect(SessionOptions::default()).await;
    let tools: Vec<String> = p.session.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(tools.contains(&"regional".to_owned()), "{tools:?}");
    assert!(
        !tools.contains(&"misannotated".to_owned()),
        "an annotation inside items makes the tool invalid: {tools:?}"
    );
    let args = json!({"region": "Zürich", "query": "SELECT 1"});
    let Started::Completed(r) = p.session.start_tool("regional", args, &StartOptions::default()).await.unwrap() else {
        panic!("a plain result")
    };
    assert_eq!(r.joined_text(), "ran in Zürich");
    let log = fixture_log(&p.log);
    let call = log.iter().find(|e| e["method"] == "tools/call").unwrap();
    assert_eq!(call["headers"]["mcp-param-region"], "=?base64?WsO8cmljaA==?=");
    assert!(call["headers"].get("mcp-param-query").is_none());
}

#[tokio::test]
async fn the_fixture_refuses_a_request_whose_headers_disagree_with_its_body() {
    // The check the tests above rely on: a request with a wrong Mcp-Name is refused.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = fixture_with("modern", &[("FIXTURE_LOG", log.display().to_string())]).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a",
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}});
    let response = reqwest::Client::new()
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "b")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32020);
}
