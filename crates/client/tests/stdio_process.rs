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

/// The fault server behind a shell that first prints the environment it was given to stderr.
fn server_printing_its_env(inherit_env: bool) -> ServerSpec {
    let inner = fault_spec("hang");
    let script = format!("env >&2; echo env-end >&2; exec {} {}", inner.command, inner.args.join(" "));
    let mut env = std::collections::BTreeMap::new();
    env.insert("FROM_THE_CONFIG".to_owned(), "yes".to_owned());
    // The config's value wins over Taskdeck's own.
    env.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default() + ":/from-the-config");
    ServerSpec { command: "sh".into(), args: vec!["-c".into(), script], env, inherit_env, ..inner }
}

/// The variable names the server printed, once it printed them all.
async fn env_seen_by(spec: &ServerSpec) -> (Session, Vec<(String, String)>) {
    let session = Session::connect(spec, SessionOptions::default(), Recorder::new()).await.expect("connects");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !session.stderr().iter().any(|l| l == "env-end") {
        assert!(Instant::now() < deadline, "the server printed no environment: {:?}", session.stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let vars = session
        .stderr()
        .iter()
        .take_while(|l| *l != "env-end")
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    (session, vars)
}

/// Variables of this test process that the allow-list keeps from servers (cargo sets several).
fn withheld() -> Vec<String> {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        // Less those the shell in between sets itself.
        .filter(|k| !taskdeck_client::env_allowed(k) && !["PWD", "OLDPWD", "SHLVL", "_"].contains(&k.as_str()))
        .collect();
    assert!(!names.is_empty(), "the test needs a variable outside the allow-list in its own environment");
    names
}

#[tokio::test]
async fn a_server_gets_only_the_allowed_environment_and_its_configs_env() {
    let (session, vars) = env_seen_by(&server_printing_its_env(false)).await;
    let has = |name: &str| vars.iter().any(|(k, _)| k == name);
    for name in withheld() {
        assert!(!has(&name), "{name} reached the server: {vars:?}");
    }
    assert!(has("HOME") && has("FROM_THE_CONFIG"), "{vars:?}");
    let path = vars.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str()).unwrap_or_default();
    assert!(path.ends_with(":/from-the-config"), "the config's env wins: {path}");
    session.kill();
}

#[tokio::test]
async fn a_server_that_opts_in_inherits_the_whole_environment() {
    let (session, vars) = env_seen_by(&server_printing_its_env(true)).await;
    for name in withheld() {
        assert!(vars.iter().any(|(k, _)| *k == name), "{name} did not reach the server");
    }
    assert!(vars.iter().any(|(k, v)| k == "FROM_THE_CONFIG" && v == "yes"));
    session.kill();
}

fn kill_9(pid: u32) {
    assert!(std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().unwrap().success());
}

#[tokio::test]
async fn what_a_wrapper_started_goes_when_the_wrapper_exits_first() {
    let (session, pid, grandchild) = connect_with_grandchild().await;
    // The leader ends on its own while the session still holds it (as `npx` does when it crashes).
    kill_9(pid);
    assert!(gone_within(pid, Duration::from_secs(5)).await);
    assert!(gone_within(grandchild, Duration::from_secs(5)).await, "the wrapper's child outlived it");
    drop(session);
}

#[tokio::test]
async fn a_missing_working_directory_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder");
    let spec = ServerSpec { cwd: Some(missing.clone()), ..fault_spec("hang") };
    let err = Session::connect(&spec, SessionOptions::default(), Recorder::new()).await.err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("working directory") && text.contains("does not exist"), "{text}");
    assert!(!text.contains("command not found"), "{text}");
}
