//! `--http`: both eras over Streamable HTTP, driven by a plain HTTP/1.1 client over raw TCP.

mod common;

use std::time::Duration;

use common::http::{HttpServer, LegacyClient, ModernClient, send};
use common::{WAIT, error_code, text_of};
use serde_json::{Value, json};

fn terminal(r: &Value) -> bool {
    matches!(r["status"].as_str(), Some("completed" | "failed" | "cancelled"))
}

fn legacy_task(c: &mut LegacyClient, name: &str, args: Value) -> String {
    let r = c.call("tools/call", json!({"name": name, "arguments": args, "task": {}}));
    assert_eq!(r["result"]["task"]["status"], "working", "{r}");
    r["result"]["task"]["taskId"].as_str().unwrap().to_owned()
}

fn modern_task(c: &mut ModernClient, name: &str, args: Value) -> String {
    let (status, r) = c.call("tools/call", json!({"name": name, "arguments": args}));
    assert_eq!((status, r["result"]["resultType"].as_str()), (200, Some("task")), "{r}");
    r["result"]["taskId"].as_str().unwrap().to_owned()
}

#[test]
fn prints_its_url_with_the_real_port_first_and_ends_cleanly_on_sigterm_and_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"), "{}", server.url);
    assert_ne!(server.port(), 0);
    let other = send(&server.addr, "GET", "/", &[], None);
    assert_eq!(other.status, 404);
    let other = send(&server.addr, "POST", "/mcp/x", &[], Some(b"{}"));
    assert_eq!(other.status, 404);
    let put = send(&server.addr, "PUT", "/mcp", &[], Some(b"{}"));
    assert_eq!(put.status, 405);
    // A page of another site must not drive a local server.
    let evil = send(
        &server.addr,
        "POST",
        "/mcp",
        &[("Origin", "https://evil.example".into()), ("Content-Type", "application/json".into())],
        Some(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
    );
    assert_eq!(evil.status, 403);
    let status = server.signal("TERM");
    assert!(status.success(), "{status:?}");

    // Ctrl-C ends it as cleanly, with a session and a task open; the task stays in the store.
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let id = legacy_task(&mut c, "count", json!({"n": 1000, "delay_ms": 10}));
    let status = server.signal("INT");
    assert!(status.success(), "{status:?}");
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    assert_eq!(c.call("tasks/get", json!({"taskId": id}))["result"]["status"], "working");
}

#[test]
fn legacy_session_runs_a_report_task_to_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let tools = c.call("tools/list", json!({}));
    let report = tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "generate_report").cloned();
    assert_eq!(report.unwrap()["execution"]["taskSupport"], "required", "a legacy client gets the legacy catalogue");

    let id = legacy_task(&mut c, "generate_report", json!({"topic": "tides", "seconds": 0.2}));
    let r = c.call("tasks/result", json!({"taskId": id}));
    let result = &r["result"];
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str(), "{r}");
    assert_eq!(result["structuredContent"]["topic"], "tides");
    assert_eq!(result["structuredContent"]["resumed_from_stage"], Value::Null);
    assert!(text_of(result).contains("# Report: tides"));
    let get = c.call("tasks/get", json!({"taskId": id}));
    assert_eq!(get["result"]["status"], "completed");
    let listed = c.call("tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());

    // A plain call with a progress token streams its progress before the answer.
    let (rid, reply) = c.request(
        "tools/call",
        json!({"name": "count", "arguments": {"n": 3, "delay_ms": 20}, "_meta": {"progressToken": "p"}}),
    );
    assert!(reply.is_sse(), "progress comes first, so the answer is an SSE stream");
    let r = c.finish(&rid, reply);
    assert_eq!(text_of(&r["result"]), "counted to 3");
    let progress =
        c.side.iter().filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "p");
    assert_eq!(progress.count(), 3, "{:#?}", c.side);
}

#[test]
fn legacy_question_comes_on_the_tasks_result_stream_and_is_answered_by_post() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let id = legacy_task(&mut c, "diagnose_incident", json!({}));
    let (rid, reply) = c.request("tasks/result", json!({"taskId": id}));
    assert!(reply.is_sse(), "the question comes before the result");
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let ask = c.until(&reply, |m| m["method"] == "elicitation/create");
    assert_eq!(ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert_eq!(ask["params"]["requestedSchema"]["required"], json!(["service"]));
    let answer = json!({"action": "accept", "content": {"service": "billing"},
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}}});
    let ack = c.post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}));
    assert_eq!((ack.status, ack.body.len()), (202, 0));
    let r = c.until(&reply, |m| m.get("method").is_none() && m["id"] == rid);
    assert!(text_of(&r["result"]).contains("Billing workers"), "{r}");
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert!(reply.next_event(WAIT).is_none(), "the stream ends with its response");
    assert_eq!(c.call("tasks/get", json!({"taskId": id}))["result"]["status"], "completed");
    // Asked once, although both the status change and tasks/result could have asked.
    let asked = c.checker.seen.iter().filter(|m| m["method"] == "elicitation/create").count();
    assert_eq!(asked, 1);
}

#[test]
fn legacy_question_waits_for_a_stream_and_a_lost_stream_gets_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let id = legacy_task(&mut c, "diagnose_incident", json!({}));
    let (_, first) = c.request("tasks/result", json!({"taskId": id}));
    let ask = c.until(&first, |m| m["method"] == "elicitation/create");
    // The client goes away without answering and without resuming; a new tasks/result is asked
    // the same question again (same request id), and the answer to it is taken.
    first.hang_up();
    std::thread::sleep(Duration::from_millis(300));
    let (rid, second) = c.request("tasks/result", json!({"taskId": id}));
    let again = c.until(&second, |m| m["method"] == "elicitation/create");
    assert_eq!(again["id"], ask["id"]);
    c.post(
        &json!({"jsonrpc": "2.0", "id": again["id"], "result": {"action": "accept", "content": {"service": "auth"}}}),
    );
    let r = c.until(&second, |m| m.get("method").is_none() && m["id"] == rid);
    assert!(text_of(&r["result"]).contains("Auth gateway"), "{r}");
}

#[test]
fn legacy_tasks_result_stream_resumes_with_its_response_after_a_lost_connection() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let id = legacy_task(&mut c, "diagnose_incident", json!({}));
    let (rid, reply) = c.request("tasks/result", json!({"taskId": id}));
    let ask = c.until(&reply, |m| m["method"] == "elicitation/create");
    let seen = c.last_event_id.clone().expect("the question's event id");
    reply.hang_up();
    c.post(
        &json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"service": "search"}}}),
    );
    // What the lost connection would have carried comes on the resumed one, response included.
    let resumed = c.get(Some(&seen));
    assert_eq!(resumed.status, 200);
    let r = c.until(&resumed, |m| m.get("method").is_none() && m["id"] == rid);
    assert!(text_of(&r["result"]).contains("Search cluster"), "{r}");
    assert!(resumed.next_event(WAIT).is_none(), "the resumed stream ends with its response");
    assert!(!c.side.iter().any(|m| m["method"] == "elicitation/create"), "nothing before {seen} again");
}

#[test]
fn connections_the_server_cuts_are_resumed_from_the_last_event_after_its_retry() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &["--sse-cut-ms", "300"]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let id = legacy_task(&mut c, "diagnose_incident", json!({}));
    let (rid, reply) = c.request("tasks/result", json!({"taskId": id}));
    let ask = c.until(&reply, |m| m["method"] == "elicitation/create");
    let is_response = |m: &Value| m.get("method").is_none() && m["id"] == rid;
    assert!(c.read_until(&reply, is_response).is_none(), "the server ends the connection, not the stream");
    assert_eq!(c.last_retry, Some(250), "with a retry hint first");
    c.post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"service": "auth"}}}));
    // A client resumes from the last event it saw, as often as it is cut off, until the response.
    let mut resumed = 0;
    let r = loop {
        assert!(resumed < 20, "never got the response; side: {:#?}", c.side);
        let last = c.last_event_id.clone().expect("an event id to resume from");
        let again = c.get(Some(&last));
        assert_eq!(again.status, 200);
        resumed += 1;
        if let Some(r) = c.read_until(&again, is_response) {
            break r;
        }
    };
    assert!(text_of(&r["result"]).contains("Auth gateway"), "{r}");
    let asked = c.checker.seen.iter().filter(|m| m["method"] == "elicitation/create").count();
    assert_eq!(asked, 1, "no event is delivered twice");
}

#[test]
fn sessions_hear_only_about_their_own_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut a = LegacyClient::connect(&server.addr, true);
    let mut b = LegacyClient::connect(&server.addr, true);
    let b_stream = b.get(None);
    assert!(b_stream.next_event(WAIT).is_some_and(|e| e.data.is_empty()), "a priming event first");
    let a_stream = a.get(None);
    let id = legacy_task(&mut a, "count", json!({"n": 3, "delay_ms": 10}));
    let status =
        a.until(&a_stream, |m| m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed");
    assert_eq!(status["params"]["taskId"], id.as_str());
    assert!(b_stream.next_event(Duration::from_millis(300)).is_none(), "b never hears of a's task");
    // Once b asks about it by id, it hears about it too.
    assert_eq!(b.call("tasks/get", json!({"taskId": id}))["result"]["status"], "completed");
}

#[test]
fn legacy_get_stream_carries_status_and_resumes_after_last_event_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let mut headers = c.headers();
    headers.retain(|(k, _)| *k != "Accept" && *k != "Content-Type");
    headers.push(("Accept", "text/event-stream".into()));
    let stream = send(&server.addr, "GET", "/mcp", &headers, None);
    assert_eq!(stream.status, 200);
    assert!(stream.is_sse());
    let prime = stream.next_event(WAIT).expect("a priming event");
    assert!(prime.data.is_empty() && prime.id.is_some(), "{prime:?}");

    let id = legacy_task(&mut c, "generate_report", json!({"topic": "reefs", "seconds": 0.4}));
    let first = stream.next_event(WAIT).expect("a status notification");
    let msg = c.checker.event(&first).unwrap();
    assert_eq!(
        (msg["method"].as_str(), msg["params"]["taskId"].as_str()),
        (Some("notifications/tasks/status"), Some(id.as_str()))
    );
    stream.hang_up();

    // Everything after the first event is replayed on the resumed stream, in order.
    std::thread::sleep(Duration::from_millis(700));
    let mut resume = headers.clone();
    resume.push(("Last-Event-ID", first.id.clone().unwrap()));
    let resumed = send(&server.addr, "GET", "/mcp", &resume, None);
    assert_eq!(resumed.status, 200);
    let mut statuses = vec![];
    while let Some(ev) = resumed.next_event(Duration::from_millis(500)) {
        assert_ne!(ev.id, first.id, "nothing before the last seen event is replayed");
        if let Some(m) = c.checker.event(&ev) {
            statuses.push(m["params"]["status"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert_eq!(statuses.last().map(String::as_str), Some("completed"), "{statuses:?}");
    let unknown =
        send(&server.addr, "GET", "/mcp", &[&headers[..], &[("Last-Event-ID", "999-1".into())]].concat(), None);
    assert_eq!(unknown.status, 400);
}

#[test]
fn legacy_session_rules_unknown_is_404_missing_is_400_and_delete_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let mut h = c.headers();
    h.retain(|(k, _)| *k != "Mcp-Session-Id");
    let missing = send(&server.addr, "POST", "/mcp", &h, Some(ping.to_string().as_bytes()));
    assert_eq!(missing.status, 400);
    let mut unknown = h.clone();
    unknown.push(("Mcp-Session-Id", "0123456789abcdef0123456789abcdef".into()));
    let r = send(&server.addr, "POST", "/mcp", &unknown, Some(ping.to_string().as_bytes()));
    assert_eq!(r.status, 404);
    assert_eq!(error_code(&c.checker.check(r.json())), -32600);
    let mut bad_version = c.headers();
    bad_version.retain(|(k, _)| *k != "MCP-Protocol-Version");
    bad_version.push(("MCP-Protocol-Version", "2024-01-01".into()));
    let r = send(&server.addr, "POST", "/mcp", &bad_version, Some(ping.to_string().as_bytes()));
    assert_eq!(r.status, 400);
    // Without the header the session's own version holds.
    let mut no_version = c.headers();
    no_version.retain(|(k, _)| *k != "MCP-Protocol-Version");
    let r = send(&server.addr, "POST", "/mcp", &no_version, Some(ping.to_string().as_bytes()));
    assert_eq!(r.status, 200);
    assert_eq!(c.call("ping", json!({}))["result"], json!({}));

    let deleted = send(&server.addr, "DELETE", "/mcp", &c.headers(), None);
    assert_eq!(deleted.status, 204);
    let (_, after) = c.request("ping", json!({}));
    assert_eq!(after.status, 404, "a deleted session is gone: initialize again");
    assert_eq!(send(&server.addr, "DELETE", "/mcp", &c.headers(), None).status, 404);
    let mut fresh = LegacyClient::connect(&server.addr, true);
    assert_ne!(fresh.session, c.session);
    assert_eq!(fresh.call("ping", json!({}))["result"], json!({}));
}

#[test]
fn idle_sessions_expire_and_sessions_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &["--session-idle-ms", "800", "--max-sessions", "1"]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let h =
        vec![("Content-Type", "application/json".to_owned()), ("Accept", "application/json, text/event-stream".into())];
    let second = send(&server.addr, "POST", "/mcp", &h, Some(init.to_string().as_bytes()));
    assert_eq!(second.status, 503, "one session at most");
    std::thread::sleep(Duration::from_millis(2000));
    let (_, r) = c.request("ping", json!({}));
    assert_eq!(r.status, 404, "the idle session expired");
    let again = send(&server.addr, "POST", "/mcp", &h, Some(init.to_string().as_bytes()));
    assert_eq!(again.status, 200, "its place is free again");
}

#[test]
fn modern_requests_discover_run_a_task_to_completion_and_answer_a_question() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = ModernClient::new(&server.addr);
    let (status, d) = c.call("server/discover", json!({}));
    assert_eq!(status, 200);
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert!(d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    let (_, tools) = c.call("tools/list", json!({}));
    assert!(tools["result"]["tools"][0].get("execution").is_none(), "a modern client gets the modern catalogue");

    let id = modern_task(&mut c, "generate_report", json!({"topic": "kelp", "seconds": 0.4}));
    let working = c.poll(&id, |r| r["_meta"]["dev.taskdeck/progress"]["progress"].as_f64().unwrap_or(0.0) > 0.0);
    assert_eq!(working["status"], "working");
    let done = c.poll(&id, terminal);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["topic"], "kelp");

    let id = modern_task(&mut c, "diagnose_incident", json!({}));
    let asked = c.poll(&id, |r| r["status"] == "input_required");
    let key = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answer = json!({"action": "accept", "content": {"service": "search"}});
    let (status, r) = c.call("tasks/update", json!({"taskId": id, "inputResponses": {key: answer}}));
    assert_eq!((status, r["result"]["resultType"].as_str()), (200, Some("complete")), "{r}");
    let done = c.poll(&id, terminal);
    assert!(text_of(&done["result"]).contains("Search cluster"), "{done}");

    let id = modern_task(&mut c, "count", json!({"n": 1000, "delay_ms": 10}));
    let (_, r) = c.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(c.poll(&id, terminal)["status"], "cancelled");
    // Requests carry no session; a stray Mcp-Session-Id changes nothing.
    let (body, mut headers) = c.build("ping", json!({}));
    headers.push(("Mcp-Session-Id", "not-a-session".into()));
    let (status, r) = c.post(&body, &headers);
    assert_eq!((status, r["result"]["resultType"].as_str()), (200, Some("complete")), "{r}");
}

#[test]
fn modern_headers_must_match_the_body() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = ModernClient::new(&server.addr);
    fn with(
        headers: &[(&'static str, String)],
        name: &'static str,
        value: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        let mut h: Vec<(&'static str, String)> = headers.iter().filter(|(k, _)| *k != name).cloned().collect();
        if let Some(v) = value {
            h.push((name, v.to_owned()));
        }
        h
    }
    let call = json!({"name": "notes_search", "arguments": {"query": "pool"}});
    let (body, headers) = c.build("tools/call", call.clone());

    for (header, value) in [
        ("Mcp-Method", Some("tools/list")),
        ("Mcp-Method", None),
        ("Mcp-Name", Some("generate_report")),
        ("Mcp-Name", None),
        ("MCP-Protocol-Version", None),
    ] {
        let h = with(&headers, header, value);
        let (status, r) = c.post(&body, &h);
        assert_eq!((status, error_code(&r)), (400, -32020), "{header}: {value:?} gave {r}");
        assert!(r["error"]["message"].as_str().unwrap().starts_with("Header mismatch"), "{r}");
        assert_eq!(r["id"], body["id"]);
    }
    // A name a header cannot carry as it is comes Base64-encoded, and is compared decoded.
    let (status, r) = c.post(&body, &with(&headers, "Mcp-Name", Some("=?base64?bm90ZXNfc2VhcmNo?=")));
    assert_eq!(status, 200, "{r}");
    assert!(text_of(&r["result"]).contains("Checkout incident"));

    let mut meta = common::modern_meta(true, true);
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2030-01-01");
    let (status, r) = c.call("tools/list", json!({"_meta": meta}));
    assert_eq!((status, error_code(&r)), (400, -32022), "{r}");
    assert_eq!(r["error"]["data"]["supported"], json!(["2026-07-28"]));
    let (status, r) = c.call("tasks/result", json!({"taskId": "x"}));
    assert_eq!((status, error_code(&r)), (404, -32601), "a method the modern era lacks is 404 with -32601");
    let (status, r) = c.call(
        "tools/call",
        json!({"name": "generate_report", "arguments": {"topic": "x"},
        "_meta": common::modern_meta(false, true)}),
    );
    assert_eq!((status, error_code(&r)), (400, -32021), "{r}");
    let (status, r) = c.call("tasks/get", json!({"taskId": "no-such-task"}));
    assert_eq!((status, error_code(&r)), (200, -32602), "{r}");
    // A modern request without the headers is still recognisably modern: a modern error.
    let bare = send(
        &server.addr,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json".into())],
        Some(
            json!({"jsonrpc": "2.0", "id": 5, "method": "server/discover",
            "params": {"_meta": common::modern_meta(true, true)}})
            .to_string()
            .as_bytes(),
        ),
    );
    assert_eq!((bare.status, error_code(&c.checker.check(bare.json()))), (400, -32020));
}

#[test]
fn bad_bodies_are_refused_and_serving_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &["--max-line-bytes", "2048"]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(10_000)}});
    assert_eq!(c.post(&big).status, 413);
    let h = c.headers();
    let r = send(&server.addr, "POST", "/mcp", &h, Some(b"this is not json"));
    assert_eq!(r.status, 400);
    assert_eq!(error_code(&c.checker.check(r.json())), -32700);
    let r = send(&server.addr, "POST", "/mcp", &h, Some(b"[1, 2]"));
    assert_eq!((r.status, error_code(&r.json())), (400, -32600));
    let r = send(&server.addr, "POST", "/mcp", &h, Some(&[0xff, 0xfe, b'{']));
    assert_eq!(r.status, 400);
    let mut text = h.clone();
    text.retain(|(k, _)| *k != "Content-Type");
    text.push(("Content-Type", "text/plain".into()));
    assert_eq!(send(&server.addr, "POST", "/mcp", &text, Some(b"{}")).status, 415);
    let mut no_sse = h.clone();
    no_sse.retain(|(k, _)| *k != "Accept");
    assert_eq!(send(&server.addr, "GET", "/mcp", &no_sse, None).status, 406);
    assert_eq!(send(&server.addr, "GET", "/mcp", &[("Accept", "text/event-stream".into())], None).status, 400);
    // An answer to a question never asked is taken (202) and ignored.
    let stray = c.post(&json!({"jsonrpc": "2.0", "id": "elicit-nobody-1", "result": {"action": "accept"}}));
    assert_eq!(stray.status, 202);
    assert_eq!(c.call("ping", json!({}))["result"], json!({}));
}

#[test]
fn server_restarted_mid_task_continues_it_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut legacy = LegacyClient::connect(&server.addr, true);
    let legacy_id = legacy_task(&mut legacy, "generate_report", json!({"topic": "rivers", "seconds": 1.6}));
    let mut modern = ModernClient::new(&server.addr);
    let modern_id = modern_task(&mut modern, "generate_report", json!({"topic": "lakes", "seconds": 1.6}));
    let past_first_stage = |r: &Value| matches!(r["statusMessage"].as_str(), Some("Reading" | "Drafting"));
    modern.poll(&modern_id, past_first_stage);
    let deadline = std::time::Instant::now() + WAIT;
    while !past_first_stage(&legacy.call("tasks/get", json!({"taskId": legacy_id}))["result"]) {
        assert!(std::time::Instant::now() < deadline, "the legacy report never got past its first stage");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();

    let server = HttpServer::start(dir.path(), &[]);
    // The old session died with the process; the task did not.
    legacy.addr = server.addr.clone();
    let (_, r) = legacy.request("ping", json!({}));
    assert_eq!(r.status, 404);
    let mut legacy = LegacyClient::connect(&server.addr, true);
    let r = legacy.call("tasks/result", json!({"taskId": legacy_id}));
    let resumed = r["result"]["structuredContent"]["resumed_from_stage"].as_i64().expect("resumed_from_stage");
    assert!(resumed >= 1, "{r}");
    assert!(text_of(&r["result"]).contains("Resumed after a restart"));

    let mut modern = ModernClient::new(&server.addr);
    let done = modern.poll(&modern_id, terminal);
    assert_eq!(done["status"], "completed");
    assert!(done["result"]["structuredContent"]["resumed_from_stage"].as_i64().unwrap() >= 1, "{done}");
    // A task lives in the era that created it, over HTTP as over stdio.
    let (_, r) = modern.call("tasks/get", json!({"taskId": legacy_id}));
    assert_eq!(error_code(&r), -32602);
}

#[test]
fn legacy_question_is_asked_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let id = legacy_task(&mut c, "diagnose_incident", json!({}));
    let deadline = std::time::Instant::now() + WAIT;
    while c.call("tasks/get", json!({"taskId": id}))["result"]["status"] != "input_required" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();
    let server = HttpServer::start(dir.path(), &[]);
    let mut c = LegacyClient::connect(&server.addr, true);
    let (rid, reply) = c.request("tasks/result", json!({"taskId": id}));
    let ask = c.until(&reply, |m| m["method"] == "elicitation/create");
    c.post(
        &json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"service": "checkout"}}}),
    );
    let r = c.until(&reply, |m| m.get("method").is_none() && m["id"] == rid);
    assert!(text_of(&r["result"]).contains("Checkout API"), "{r}");
}

#[test]
fn concurrent_modern_requests_each_get_their_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path(), &[]);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let addr = server.addr.clone();
            std::thread::spawn(move || {
                let mut c = ModernClient::new(&addr);
                let ids: Vec<String> =
                    (0..10).map(|_| modern_task(&mut c, "count", json!({"n": 20, "delay_ms": 5}))).collect();
                for id in ids {
                    assert_eq!(text_of(&c.poll(&id, terminal)["result"]), "counted to 20");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client thread failed");
    }
}
