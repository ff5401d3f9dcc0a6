//! Whatever a client writes, the server answers what it can and keeps serving.

mod common;

use common::{Peer, error_code};
use serde_json::json;
use taskdeck_schema_check::Era;

#[test]
fn malformed_and_oversized_lines_do_not_kill_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &["--max-line-bytes", "2048"]);
    p.send_raw("this is not json");
    let e = p.expect("a parse error", |m| m["error"]["code"] == -32700);
    assert!(e.get("id").is_none());
    p.send_raw("[1, 2]");
    p.expect("an invalid request error", |m| m["error"]["code"] == -32600);
    p.send_raw(r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#);
    p.expect("an invalid request error", |m| m["error"]["code"] == -32600);
    p.send_bytes(b"\xff\xfe not utf-8\n");
    p.expect("a parse error for bad UTF-8", |m| m["error"]["code"] == -32700);
    let big = format!(r#"{{"jsonrpc":"2.0","id":77,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(10_000));
    p.send_raw(&big);
    p.send_raw("");
    p.send_raw("   ");

    let r = p.call("no/such/method", json!({}));
    assert_eq!(error_code(&r), -32601);
    let r = p.call("tasks/get", json!({}));
    assert_eq!(error_code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("taskId"));
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": 3}, "task": {}}));
    assert!(r["error"]["message"].as_str().unwrap().contains("arguments.delay_ms"), "{r}");
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": "3", "delay_ms": 0}}));
    assert!(r["error"]["message"].as_str().unwrap().contains("arguments.n"), "{r}");
    let r = p.call("tools/call", json!({"name": "nope"}));
    assert!(r["error"]["message"].as_str().unwrap().contains("params.name"), "{r}");
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": 1, "delay_ms": 0}, "task": {"ttl": "x"}}));
    assert!(r["error"]["message"].as_str().unwrap().contains("params.task.ttl"), "{r}");
    assert_eq!(error_code(&p.call("tasks/cancel", json!({"taskId": 5}))), -32602);
    // An answer to a request the server never sent is ignored.
    p.send(&json!({"jsonrpc": "2.0", "id": "elicit-nobody-1", "result": {"action": "accept"}}));

    assert_eq!(p.call("ping", json!({}))["result"], json!({}));
    assert!(!p.seen.iter().any(|m| m["id"] == 77), "the oversized line must be skipped, not answered");
    assert!(p.close().success());
}

#[test]
fn stdin_eof_exits_cleanly_and_keeps_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let r = p.call("tools/call", json!({"name": "count", "arguments": {"n": 50, "delay_ms": 20}, "task": {}}));
    let id = r["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    assert!(p.close().success());
    let mut p = Peer::legacy(dir.path(), true, &[]);
    let r = p.call("tasks/result", json!({"taskId": id}));
    assert_eq!(r["result"]["content"][0]["text"], "counted to 50");
}

#[test]
fn requests_before_the_era_is_known_are_refused_except_ping_and_discover() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = Peer::spawn(dir.path(), Era::Legacy, &[]);
    assert_eq!(p.call("ping", json!({}))["result"], json!({}));
    assert_eq!(error_code(&p.call("tools/list", json!({}))), -32600);
    // Once opened with initialize, modern `_meta` on a request changes nothing.
    let r = p.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert!(r["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
    let r = p.call("tools/list", json!({"_meta": common::modern_meta(true, true)}));
    assert!(r["result"]["tools"][0]["execution"].is_object());
    assert_eq!(error_code(&p.call("server/discover", json!({}))), -32601);
}
