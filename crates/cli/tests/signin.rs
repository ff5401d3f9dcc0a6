//! Signing in to a remote server from the command line, against real loopback servers: the demo
//! server over HTTP behind a gate that lets through only the bearer tokens of a strict OAuth
//! authorization server (the client's fixture), and the fixture's browser script as `$BROWSER`.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use taskdeck_test_support::{demo_server_http, write_servers_config};

#[path = "support/signin_env.rs"]
mod signin_env;
use signin_env::{CLI, Env, Out, sign_in_cli};
use taskdeck_test_support::cli::cli_command;

const REPORT: &str = r#"{"topic":"tides","seconds":0.3}"#;

#[test]
fn a_run_before_login_exits_3_with_the_hint_then_login_signs_in_renews_and_logout_signs_out() {
    let env = Env::new();
    let out = env.run(&["run", "remote", "generate_report", "--args", REPORT, "--json"]);
    assert_eq!(out.code, 3, "waiting for the user: {out:?}");
    assert!(out.stderr.contains("taskdeck-cli login remote"), "says how to sign in: {out:?}");
    let out = env.run(&["tasks", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).unwrap(), json!([]), "a refused run left no task: {out:?}");

    let out = env.run(&["login", "remote"]);
    assert_eq!(out.code, 0, "{out:?}");
    let host = env.gate.base.trim_start_matches("http://");
    assert!(out.stderr.contains(&format!("Signing in to remote at {host}")), "names the server and host: {out:?}");
    assert!(env.gate.seen().iter().any(|p| p == "/token"), "the code was exchanged: {:?}", env.gate.seen());
    let kept = env.sign_ins();
    assert!(kept.contains("access_token"), "the tokens are kept: {kept}");

    let out = env.run(&["run", "remote", "generate_report", "--args", REPORT, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("# Report: tides"), "{out:?}");

    // An expired access token is renewed with the refresh token, without the user.
    env.gate.admin("expire");
    let out = env.run(&["run", "remote", "generate_report", "--args", REPORT, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_ne!(env.sign_ins(), kept, "the renewed tokens are kept");

    let token = serde_json::from_str::<Value>(&env.sign_ins()).unwrap().to_string();
    let logs = env.logs();
    for secret in token.split('"').filter(|s| s.len() > 20 && !s.contains("://")) {
        assert!(!logs.contains(secret), "no token or secret in a log");
    }

    let out = env.run(&["logout", "remote"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!env.sign_ins().contains("access_token"), "the sign-in is gone: {}", env.sign_ins());
    let out = env.run(&["tools", "remote"]);
    assert_eq!(out.code, 3, "signed out, it asks for a sign-in again: {out:?}");
}

#[test]
fn a_task_whose_sign_in_is_revoked_mid_run_stays_working_and_is_finished_after_login() {
    let env = Env::new();
    assert_eq!(env.run(&["login", "remote"]).code, 0);
    let config = env.config.clone();
    let data = env.dir.path().join("data");
    let run = std::thread::spawn(move || -> Out {
        let args = ["run", "remote", "generate_report", "--args", r#"{"topic":"tides","seconds":3}"#, "--json"];
        sign_in_cli(&config, &data, &args).output().unwrap().into()
    });
    std::thread::sleep(std::time::Duration::from_millis(1200));
    env.gate.admin("revoke");
    env.gate.admin("expire");
    let out = run.join().unwrap();
    assert_eq!(out.code, 3, "the task waits for the user: {out:?}");
    let rec: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rec["status"], "working", "not failed: {rec}");
    assert!(rec["status_message"].as_str().unwrap_or_default().contains("taskdeck-cli login remote"), "{rec}");
    assert!(out.stderr.contains("taskdeck-cli login remote"), "{out:?}");

    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 3, "resume before a sign-in leaves it waiting: {out:?}");
    assert!(out.stderr.contains("taskdeck-cli login remote"), "{out:?}");
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).unwrap()[0]["status"], "working", "{out:?}");

    assert_eq!(env.run(&["login", "remote"]).code, 0);
    let out = env.run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let done: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(done[0]["status"], "completed", "{done}");
}

#[test]
fn a_run_whose_call_is_refused_for_want_of_a_sign_in_leaves_no_task_and_exits_3() {
    let env = Env::new();
    env.gate.admin("guard-calls-only");
    let out = env.run(&["tools", "remote"]);
    assert_eq!(out.code, 0, "everything but the call goes through: {out:?}");
    let out = env.run(&["run", "remote", "generate_report", "--args", REPORT, "--json"]);
    assert_eq!(out.code, 3, "waiting for the user: {out:?}");
    assert!(out.stderr.contains("taskdeck-cli login remote"), "says how to sign in: {out:?}");
    let out = env.run(&["tasks", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&out.stdout).unwrap(), json!([]), "nothing was started: {out:?}");

    assert_eq!(env.run(&["login", "remote"]).code, 0);
    let out = env.run(&["run", "remote", "generate_report", "--args", REPORT, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn login_to_an_unknown_server_is_a_usage_error_and_a_local_one_needs_none() {
    let dir = tempfile::tempdir().unwrap();
    let demo = taskdeck_test_support::demo_server().display().to_string();
    let config = write_servers_config(&dir.path().join("servers.json"), [("local", json!({"command": demo}))]);
    let run = |args: &[&str]| -> Out {
        let mut c = cli_command(CLI, &config, &dir.path().join("data"), args);
        // No `$BROWSER`: nothing here may open one.
        c.env("TASKDECK_SIGN_IN_STORE", "file").output().unwrap().into()
    };
    let out = run(&["login", "nowhere"]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = run(&["logout", "nowhere"]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = run(&["login", "local"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("needs no sign-in"), "{out:?}");
}

/// `oauth2-mock-server` (pinned in tests/peers) as the authorization server, and a gate in
/// front of the demo server that takes only the tokens it signed (tests/peers/oauth-peer.mjs).
struct OauthPeer {
    mcp: String,
    admin: String,
    child: Child,
}

impl OauthPeer {
    fn start(upstream: &str) -> OauthPeer {
        let script = taskdeck_test_support::workspace_root().join("tests/peers/oauth-peer.mjs");
        let installed = taskdeck_test_support::workspace_root().join("tests/peers/node_modules/oauth2-mock-server");
        assert!(installed.exists(), "{} is missing: run `make peers`", installed.display());
        let mut child = Command::new("node")
            .arg(script)
            .arg(upstream)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs the OAuth peer");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let said: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("the peer printed {line:?}: {e}"));
        OauthPeer {
            mcp: said["mcp"].as_str().unwrap().to_owned(),
            admin: said["admin"].as_str().unwrap().to_owned(),
            child,
        }
    }

    fn post(&self, what: &str) {
        let out = Command::new("python3")
            .arg("-c")
            .arg("import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b'', method='POST')).read()")
            .arg(format!("{}/{what}", self.admin))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn log(&self) -> Vec<Value> {
        let out = Command::new("python3")
            .arg("-c")
            .arg("import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())")
            .arg(format!("{}/log", self.admin))
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).ok().and_then(|v| v.as_array().cloned()).unwrap_or_default()
    }
}

impl Drop for OauthPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_long_task_survives_its_sign_in_being_revoked_at_a_real_authorization_server() {
    let state = tempfile::tempdir().unwrap();
    let demo = demo_server_http(state.path(), "127.0.0.1:0");
    let peer = OauthPeer::start(&demo.url);
    let dir = tempfile::tempdir().unwrap();
    // The authorization server registers nobody: a pre-registered (public) client id.
    let entry = json!({"url": peer.mcp, "oauth": {"clientId": "taskdeck-test"}});
    let config = write_servers_config(&dir.path().join("servers.json"), [("remote", entry)]);
    let data = dir.path().join("data");
    let run = |args: &[&str]| -> Out { sign_in_cli(&config, &data, args).output().unwrap().into() };

    let out = run(&["login", "remote"]);
    assert_eq!(out.code, 0, "{out:?}");
    let started = std::thread::scope(|s| {
        let long = s.spawn(|| {
            run(&["run", "remote", "generate_report", "--args", r#"{"topic":"tides","seconds":4}"#, "--json"])
        });
        std::thread::sleep(std::time::Duration::from_millis(1500));
        peer.post("revoke");
        long.join().unwrap()
    });
    assert_eq!(started.code, 3, "the task waits for the user: {started:?}");
    let rec: Value = serde_json::from_str(&started.stdout).unwrap();
    assert_eq!(rec["status"], "working", "not failed: {rec}");
    assert!(rec["status_message"].as_str().unwrap_or_default().contains("taskdeck-cli login remote"), "{rec}");
    let log = peer.log();
    assert!(
        log.iter().any(|e| e["grant"] == "refresh_token" && e["refused"] == true),
        "a renewal was tried and refused before asking the user: {log:?}"
    );

    let out = run(&["login", "remote"]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = run(&["resume", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let done: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(done[0]["status"], "completed", "{done}");
    assert_eq!(done[0]["id"], rec["id"], "the same task, followed on: {done}");
}
