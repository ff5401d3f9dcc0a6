//! The stdio transport's hold on the server's process tree: whatever the server started ends with
//! it, whether the session kills it, shuts it down or is simply dropped.
#![cfg(target_os = "linux")]

mod support;

use std::time::{Duration, Instant};

use support::{Recorder, fault_spec};
use taskdeck_client::{ServerSpec, Session, SessionOptions};

/// A process is gone once /proc forgets it or only its zombie is left for init to reap.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn gone_within(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// The fault server behind a shell that first starts a long sleep of its own, the way `npx` or a
/// wrapper script leaves a grandchild behind; the grandchild's pid comes first on stderr.
fn server_with_a_grandchild() -> ServerSpec {
    let inner = fault_spec("hang");
    let script = format!("sleep 600 & echo \"grandchild $!\" >&2; exec {} {}", inner.command, inner.args.join(" "));
    ServerSpec { command: "sh".into(), args: vec!["-c".into(), script], ..inner }
}

async fn connect_with_grandchild() -> (Session, u32, u32) {
    let session = Session::connect(&server_with_a_grandchild(), SessionOptions::default(), Recorder::new())
        .await
        .expect("the wrapped fault server connects");
    let pid = session.pid().expect("a stdio server has a pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    let grandchild = loop {
        if let Some(pid) = session.stderr().iter().find_map(|l| l.strip_prefix("grandchild ")?.trim().parse().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "no grandchild pid on stderr: {:?}", session.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(pid) && alive(grandchild));
    (session, pid, grandchild)
}

#[tokio::test]
async fn killing_a_session_kills_the_server_and_what_it_started() {
    let (session, pid, grandchild) = connect_with_grandchild().await;
    session.kill();
    assert!(gone_within(pid, Duration::from_secs(5)).await, "the server outlived kill");
    assert!(gone_within(grandchild, Duration::from_secs(5)).await, "the server's child outlived kill");
}

#[tokio::test]
async fn dropping_the_last_session_kills_the_server_and_what_it_started() {
    let (session, pid, grandchild) = connect_with_grandchild().await;
    let clone = session.clone();
    drop(session);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(alive(pid), "a clone still holds the server");
    drop(clone);
    assert!(gone_within(pid, Duration::from_secs(5)).await, "the server outlived its last session");
    assert!(gone_within(grandchild, Duration::from_secs(5)).await, "the server's child outlived its last session");
}

#[tokio::test]
async fn shutdown_closes_stdin_and_the_server_exits_on_its_own() {
    let session = Session::connect(&fault_spec("hang"), SessionOptions::default(), Recorder::new()).await.unwrap();
    let pid = session.pid().unwrap();
    let started = Instant::now();
    // The fault server reads stdin until it ends, then exits: no kill is needed within the grace.
    session.shutdown(Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(4), "shutdown waited out its grace: stdin was not closed");
    assert!(gone_within(pid, Duration::from_secs(2)).await);
}
