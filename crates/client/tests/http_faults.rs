//! What a misbehaving Streamable HTTP server does, and the bounded end each request gets: error
//! pages and bare statuses fail the request they answered with a clear, typed error naming the
//! server and the status; a JSON-RPC error body is that error; broken, endless and oversized
//! streams end the request within its bounds; a lost or changed session ends the connection so
//! the server is initialized again; a redirect to another host is not followed.

#[path = "support/http_servers.rs"]
mod http_servers;
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http_servers::{HttpServer, fixture_log, fixture_with};
use serde_json::{Value, json};
use support::Recorder;
use taskdeck_client::transport::http::{HTTP_FAILURE, HttpFailure};
use taskdeck_client::{
    ClientError, Endpoint, ResponseFault, Session, SessionEvent, SessionOptions, StartOptions, Started,
};
use taskdeck_protocol::Era;

const MAX_FRAME: usize = 64 * 1024;

struct Peer {
    session: Session,
    rec: std::sync::Arc<Recorder>,
    log: PathBuf,
    _server: HttpServer,
    _dir: tempfile::TempDir,
}

async fn connect() -> Peer {
    connect_with(SessionOptions::default()).await
}

async fn connect_with(opts: SessionOptions) -> Peer {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = fixture_with(
        "legacy",
        &[("FIXTURE_LOG", log.display().to_string()), ("FIXTURE_BIG", (2 * MAX_FRAME).to_string())],
    )
    .await;
    let mut spec = server.spec("faulty");
    spec.headers.insert("X-Api-Key".into(), "secret-key".into());
    let rec = Recorder::new();
    let opts = SessionOptions { max_frame: MAX_FRAME, probe_timeout: Duration::from_secs(2), ..opts };
    let session = Session::open(&Endpoint::Http(spec), opts, rec.clone()).await.unwrap();
    Peer { session, rec, log, _server: server, _dir: dir }
}

impl Peer {
    async fn call(&self, tool: &str) -> Result<Started, ClientError> {
        self.session.start_tool(tool, json!({}), &StartOptions::default()).await
    }

    /// Calls `tool`, which must fail within `bound`.
    async fn fails(&self, tool: &str, bound: Duration) -> ClientError {
        let started = Instant::now();
        let err = tokio::time::timeout(bound, self.call(tool)).await.expect("the request ends within its bound");
        let err = err.expect_err("the call fails");
        assert!(started.elapsed() < bound);
        assert!(err.to_string().contains("\"faulty\""), "the error names the server: {err}");
        err
    }
}

fn failure(err: &ClientError) -> HttpFailure {
    HttpFailure::of(err).unwrap_or_else(|| panic!("not an HTTP failure: {err:?}"))
}

#[tokio::test]
async fn the_legacy_session_and_version_ride_on_every_request_with_the_configured_headers() {
    let p = connect().await;
    assert_eq!(p.session.era(), Era::Legacy);
    let Started::Completed(r) = p.call("echo").await.unwrap() else { panic!("a plain call") };
    assert_eq!(r.joined_text(), "echo");
    // The notification before the answer on the same stream reached the session.
    p.rec.wait_for(Duration::from_secs(2), "the log line", |e| matches!(e, SessionEvent::Log { .. })).await;
    let reqs = fixture_log(&p.log);
    let sent = reqs.iter().filter(|r| r.get("headers").is_some());
    assert!(sent.clone().count() > 3 && sent.clone().all(|r| r["headers"]["x-api-key"] == "secret-key"), "{reqs:#?}");
    let probe = reqs.iter().find(|r| r["method"] == "server/discover").expect("the era was probed");
    assert_eq!(probe["headers"]["mcp-method"], "server/discover");
    let init = reqs.iter().position(|r| r["method"] == "initialize").unwrap();
    assert!(reqs[init]["headers"].get("mcp-session-id").is_none());
    for r in reqs.iter().skip(init + 1).filter(|r| r["verb"] == "POST") {
        assert_eq!(r["headers"]["mcp-session-id"], "sess-1", "{r}");
        assert_eq!(r["headers"]["mcp-protocol-version"], "2025-11-25", "{r}");
        assert!(r["headers"].get("mcp-method").is_none(), "legacy requests carry no modern headers: {r}");
    }
    assert!(reqs.iter().any(|r| r["method"] == "notifications/initialized"));
    // The GET stream was opened for what the server sends unasked, with the session, and before
    // anything after `initialized`: a server may ask its own question on it as a call begins.
    let get = reqs.iter().position(|r| r["verb"] == "GET").expect("the GET stream was opened");
    assert_eq!(reqs[get]["headers"]["mcp-session-id"], "sess-1");
    assert_eq!(reqs[get]["headers"]["accept"], "text/event-stream");
}

/// A server may ask a question of its own on the GET stream as soon as a call begins, and some
/// drop it when no stream is open yet: nothing after `initialized` goes out before the GET stream
/// has answered, even when the server is slow to open it.
#[tokio::test]
async fn nothing_after_initialized_is_sent_before_the_get_stream_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let env = [("FIXTURE_LOG", log.display().to_string()), ("FIXTURE_GET_DELAY_MS", "500".to_owned())];
    let server = fixture_with("legacy", &env).await;
    let opts = SessionOptions { probe_timeout: Duration::from_secs(2), ..SessionOptions::default() };
    let session = Session::open(&Endpoint::Http(server.spec("slow-get")), opts, Recorder::new()).await.unwrap();
    session.list_tools().await.unwrap();
    let reqs = fixture_log(&log);
    let at = |what: &dyn Fn(&Value) -> bool| reqs.iter().position(what).unwrap_or_else(|| panic!("{reqs:#?}"));
    let initialized = at(&|r| r["method"] == "notifications/initialized");
    let open = at(&|r| r["event"] == "GET stream open");
    let list = at(&|r| r["method"] == "tools/list");
    assert!(initialized < open && open < list, "initialized, the GET stream open, then tools/list: {reqs:#?}");
}

#[tokio::test]
async fn an_html_error_page_fails_the_request_with_the_status_and_the_session_lives_on() {
    let p = connect().await;
    let err = p.fails("html500", Duration::from_secs(5)).await;
    assert_eq!(failure(&err), HttpFailure::Status { status: 500, content_type: Some("text/html".into()) });
    assert_eq!(err.rpc_error().map(|e| e.code), Some(HTTP_FAILURE));
    assert!(err.to_string().contains("HTTP 500 Internal Server Error"), "{err}");
    let err = p.fails("bare500", Duration::from_secs(5)).await;
    assert_eq!(failure(&err), HttpFailure::Status { status: 500, content_type: None });
    assert!(p.session.dead().is_none());
    p.session.ping(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn a_json_rpc_error_body_with_400_is_that_error_for_the_request() {
    let p = connect().await;
    let err = p.fails("rpc400", Duration::from_secs(5)).await;
    let rpc = err.rpc_error().expect("a JSON-RPC error");
    assert_eq!((rpc.code, rpc.message.as_str()), (-32602, "the arguments are wrong"));
    assert!(HttpFailure::of(&err).is_none());
}

#[tokio::test]
async fn a_stream_that_stops_mid_event_fails_its_request() {
    let p = connect().await;
    let err = p.fails("midevent", Duration::from_secs(5)).await;
    let HttpFailure::StreamEnded { detail } = failure(&err) else { panic!("{err:?}") };
    assert!(detail.contains("middle of an event"), "{detail}");
    assert!(p.session.dead().is_none());
}

#[tokio::test]
async fn a_broken_stream_is_resumed_after_its_retry_with_the_last_event_id() {
    let p = connect().await;
    let started = Instant::now();
    let Started::Completed(r) = p.call("midevent-resume").await.unwrap() else { panic!("a plain call") };
    assert_eq!(r.joined_text(), "resumed");
    let reqs = fixture_log(&p.log);
    let resumed = reqs
        .iter()
        .find(|r| r["verb"] == "GET" && r["headers"]["last-event-id"] == "p1")
        .expect("the stream was resumed from the last whole event");
    assert_eq!(resumed["headers"]["mcp-session-id"], "sess-1");
    assert!(started.elapsed() >= Duration::from_millis(300), "the server's retry was honoured");
}

#[tokio::test]
async fn a_stream_that_never_ends_ends_when_the_session_gives_up_and_the_server_is_told() {
    let p = connect_with(SessionOptions { call_timeout: Duration::from_secs(2), ..Default::default() }).await;
    let err = p.fails("forever", Duration::from_secs(6)).await;
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    // The transport closed the stream, and the legacy server got the cancellation.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reqs = fixture_log(&p.log);
        let closed = reqs.iter().any(|r| r["event"] == "stream closed by the client");
        let told = reqs.iter().any(|r| r["method"] == "notifications/cancelled");
        if closed && told {
            break;
        }
        assert!(Instant::now() < deadline, "stream closed: {closed}, cancellation sent: {told}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.session.ping(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn an_oversized_event_or_body_fails_the_request_it_answered_as_too_large() {
    let p = connect().await;
    for tool in ["oversized", "oversized-json"] {
        let err = p.fails(tool, Duration::from_secs(5)).await;
        assert!(
            matches!(err, ClientError::UnreadableResponse { fault: ResponseFault::TooLarge { limit: MAX_FRAME }, .. }),
            "{tool}: {err:?}"
        );
    }
    assert!(p.session.dead().is_none());
    p.session.ping(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn a_session_id_that_changes_ends_the_connection_for_a_new_session() {
    let p = connect().await;
    let err = p.fails("session-change", Duration::from_secs(5)).await;
    assert!(err.is_server_gone(), "{err:?}");
    let SessionEvent::Closed { reason } =
        p.rec.wait_for(Duration::from_secs(2), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await
    else {
        unreachable!()
    };
    assert!(reason.contains("changed the HTTP session id"), "{reason}");
}

#[tokio::test]
async fn a_404_on_the_session_means_it_is_gone_and_must_be_initialized_again() {
    let p = connect().await;
    let err = p.fails("session-gone", Duration::from_secs(5)).await;
    assert!(err.is_server_gone(), "{err:?}");
    assert!(err.to_string().contains("initialized again"), "{err}");
    let e = p.session.ping(Duration::from_secs(2)).await.unwrap_err();
    assert!(e.is_server_gone());
}

#[tokio::test]
async fn a_redirect_to_another_host_is_refused_and_not_followed() {
    let p = connect().await;
    let err = p.fails("redirect", Duration::from_secs(5)).await;
    let HttpFailure::Redirected { status, to } = failure(&err) else { panic!("{err:?}") };
    assert_eq!(status, 307);
    assert!(to.starts_with("http://localhost:") && to.ends_with("/elsewhere"), "{to}");
    assert!(!fixture_log(&p.log).iter().any(|r| r["path"] == "/elsewhere"), "the redirect was followed");
}

#[tokio::test]
async fn a_401_says_sign_in_is_needed_and_keeps_the_challenge() {
    let p = connect().await;
    let err = p.fails("sign-in", Duration::from_secs(5)).await;
    let f = failure(&err);
    assert!(f.needs_sign_in());
    let HttpFailure::SignInNeeded { www_authenticate: Some(challenge) } = f else { panic!("{err:?}") };
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    assert!(err.to_string().contains("sign-in needed"), "{err}");
}

#[tokio::test]
async fn a_request_accepted_without_an_answer_fails_at_once() {
    let p = connect().await;
    let err = p.fails("accepted", Duration::from_secs(5)).await;
    assert!(matches!(failure(&err), HttpFailure::NoAnswer { .. }), "{err:?}");
}

#[tokio::test]
async fn closing_ends_the_session_on_the_server_with_delete() {
    let p = connect().await;
    p.session.shutdown(Duration::from_secs(2)).await;
    p.rec.wait_for(Duration::from_secs(2), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    let reqs = fixture_log(&p.log);
    let delete = reqs.iter().find(|r| r["verb"] == "DELETE").expect("a DELETE");
    assert_eq!(delete["headers"]["mcp-session-id"], "sess-1");
    assert_eq!(delete["headers"]["x-api-key"], "secret-key");
}

#[tokio::test]
async fn an_unreachable_server_fails_the_connect_with_why() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let spec = taskdeck_client::HttpSpec {
        name: "nowhere".into(),
        url: format!("http://user:pw@127.0.0.1:{port}/mcp?token=abc"),
        headers: Default::default(),
        sign_in: Default::default(),
    };
    let endpoint = Endpoint::Http(spec);
    let started = Instant::now();
    let err = match tokio::time::timeout(
        Duration::from_secs(20),
        Session::open(&endpoint, SessionOptions::default(), Recorder::new()),
    )
    .await
    .expect("connecting ends within its bound")
    {
        Ok(_) => panic!("nothing listens there"),
        Err(e) => e,
    };
    assert!(started.elapsed() < Duration::from_secs(20));
    // As for a stdio server that will not start: the server is gone, to be started again.
    assert!(err.is_server_gone(), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("\"nowhere\"") && text.contains("could not be reached"), "{text}");
    assert!(text.contains("Connection refused"), "{text}");
    assert!(!text.contains("token=abc") && !text.contains("pw@"), "no secrets from the URL: {text}");
    let endpoint_conn = endpoint.connect(MAX_FRAME).unwrap();
    assert_eq!(endpoint_conn.transport.identity().peer, format!("http://127.0.0.1:{port}/mcp"));
    assert_eq!(endpoint_conn.transport.identity().kind, "http");
}

#[tokio::test]
async fn a_server_that_goes_away_mid_session_ends_the_connection_for_a_restart() {
    let Peer { session, rec, _server: server, _dir: dir, .. } = connect().await;
    session.ping(Duration::from_secs(5)).await.unwrap();
    drop(server);
    // The process is killed as it is dropped; give the port a moment to close.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let err = tokio::time::timeout(Duration::from_secs(15), session.ping(Duration::from_secs(10)))
        .await
        .expect("the request ends within its bound")
        .unwrap_err();
    assert!(err.is_server_gone(), "{err:?}");
    assert!(err.to_string().contains("could not be reached"), "{err}");
    rec.wait_for(Duration::from_secs(2), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    drop(dir);
}

#[tokio::test]
async fn a_server_whose_certificate_is_not_trusted_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let log = dir.path().join("requests.jsonl");
    let server = fixture_with(
        "legacy",
        &[
            ("FIXTURE_LOG", log.display().to_string()),
            ("FIXTURE_TLS_CERT", cert.display().to_string()),
            ("FIXTURE_TLS_KEY", key.display().to_string()),
        ],
    )
    .await;
    assert!(server.url.starts_with("https://"));
    let endpoint = Endpoint::Http(server.spec("self-signed"));
    let err = match tokio::time::timeout(
        Duration::from_secs(20),
        Session::open(&endpoint, SessionOptions::default(), Recorder::new()),
    )
    .await
    .expect("connecting ends within its bound")
    {
        Ok(_) => panic!("a certificate nobody vouches for was accepted"),
        Err(e) => e,
    };
    assert!(err.is_server_gone(), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("could not be reached") && text.contains("certificate"), "{text}");
    assert!(fixture_log(&log).is_empty(), "no request got through: {:?}", fixture_log(&log));
}
