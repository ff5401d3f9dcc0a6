//! Signing in as the desktop app does, through an engine in this test process (the app's side of
//! the data directory): the two steps with the question between them, cancelling, a browser that
//! never comes back, and `taskdeck-cli login` as a second process while this one holds the lock.

use std::process::{Command, Stdio};

use serde_json::json;
use taskdeck_engine::config::{Config, Paths};
use taskdeck_engine::{AuthState, Engine, EngineOptions, SIGN_IN_CANCELLED};

#[path = "support/signin_env.rs"]
mod signin_env;
use signin_env::{Env, Out, sign_in_cli, support};

/// Never the keyring of whoever runs the tests: the engine here reads the variable itself. Every
/// test calls this first, so no thread of this binary reads the environment while it is set.
fn file_store_only() -> tokio::runtime::Runtime {
    static SET: std::sync::Once = std::sync::Once::new();
    // SAFETY: see above; the other tests wait on the `Once` before they do anything.
    SET.call_once(|| unsafe { std::env::set_var("TASKDECK_SIGN_IN_STORE", "file") });
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

async fn engine_for(env: &Env) -> Engine {
    let paths = Paths { config: env.config.clone(), data_dir: env.dir.path().join("data") };
    let config = Config::load(&paths).unwrap();
    Engine::open_with_config(paths, EngineOptions::default(), config).await.unwrap()
}

/// A browser that opens nothing: the user closed it, or never looked.
fn closed_browser() -> taskdeck_engine::signin::OpenBrowser {
    std::sync::Arc::new(|_: &str| Ok(()))
}

#[test]
fn the_prompt_names_the_authorization_server_before_anything_opens_and_cancel_ends_the_wait() {
    file_store_only().block_on(async {
        let env = Env::new();
        let engine = engine_for(&env).await;
        let prompt = engine.find_out_sign_in("remote").await.unwrap().unwrap().expect("a sign-in is needed");
        assert_eq!(prompt.server, "remote");
        assert_eq!(prompt.authorization_host, env.gate.base.trim_start_matches("http://"));
        assert!(
            !env.gate.seen().iter().any(|p| p.starts_with("/authorize")),
            "nothing opened yet: {:?}",
            env.gate.seen()
        );
        assert!(engine.cancel_sign_in("remote"), "the plan is dropped");

        let going = tokio::spawn({
            let engine = engine.clone();
            async move { engine.continue_sign_in("remote", closed_browser(), None).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        assert!(engine.cancel_sign_in("remote"), "the wait for the browser is ended");
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), going)
            .await
            .expect("cancelled promptly, not after the browser timeout")
            .unwrap()
            .unwrap();
        assert_eq!(ended, Err(SIGN_IN_CANCELLED.to_owned()));
        assert_eq!(engine.sign_in_state("remote").await.unwrap().auth, AuthState::None, "nothing was kept");
        engine.shutdown().await;
    });
}

#[test]
fn a_browser_that_never_comes_back_ends_the_sign_in_with_a_message_saying_so() {
    file_store_only().block_on(async {
        let env = Env::new();
        let engine = engine_for(&env).await;
        let timeout = Some(std::time::Duration::from_secs(1));
        let ended = engine.continue_sign_in("remote", closed_browser(), timeout).await.unwrap();
        let why = ended.expect_err("no sign-in came back");
        assert!(why.contains("was the browser closed?"), "{why}");
        engine.shutdown().await;
    });
}

#[test]
fn signing_in_from_the_app_shows_who_until_when_and_signing_out_forgets_it() {
    file_store_only().block_on(async {
        let env = Env::new();
        let engine = engine_for(&env).await;
        assert_ne!(engine.sign_in_state("remote").await.unwrap().auth, AuthState::SignedIn);
        let browser: taskdeck_engine::signin::OpenBrowser = std::sync::Arc::new(|url: &str| {
            let script = support("../client/tests/support/oauth_browser.py");
            Command::new("python3").arg(script).arg(url).stdin(Stdio::null()).stdout(Stdio::null()).spawn().map(|_| ())
        });
        engine.find_out_sign_in("remote").await.unwrap().unwrap().expect("a sign-in is needed");
        let signed = engine.continue_sign_in("remote", browser, None).await.unwrap();
        assert!(matches!(signed, Ok(taskdeck_engine::SignInOutcome::SignedIn { .. })), "{signed:?}");
        let state = engine.sign_in_state("remote").await.unwrap();
        assert_eq!(state.auth, AuthState::SignedIn);
        assert_eq!(state.issuer_host.as_deref(), Some(env.gate.base.trim_start_matches("http://")));
        assert!(state.expires_at.is_some_and(|at| at > chrono_now()), "{state:?}");
        assert!(state.renewable, "{state:?}");

        engine.sign_out("remote").await.unwrap().unwrap();
        assert_ne!(engine.sign_in_state("remote").await.unwrap().auth, AuthState::SignedIn);
        engine.shutdown().await;
    });
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// The app's side of the data directory, played by an engine in this test process: it holds
/// the lock while `taskdeck-cli login` runs as a second process.
#[test]
fn login_while_another_process_drives_the_tasks_signs_in_and_its_waiting_task_goes_on() {
    file_store_only().block_on(login_while_another_process_drives_the_tasks());
}

async fn login_while_another_process_drives_the_tasks() {
    let env = Env::new();
    assert_eq!(env.run(&["login", "remote"]).code, 0);
    let engine = engine_for(&env).await;
    let rec = engine.run("remote", "generate_report", json!({"topic": "tides", "seconds": 4})).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    env.gate.admin("revoke");
    env.gate.admin("expire");
    let waiting = engine.wait(&rec.id, |_| false).await.unwrap();
    assert_eq!(waiting.status.to_string(), "working", "not failed: {waiting:?}");
    assert!(waiting.status_message.as_deref().unwrap_or_default().contains("taskdeck-cli login remote"), "{waiting:?}");
    assert_eq!(engine.sign_in_state("remote").await.unwrap().auth, AuthState::SignInNeeded);

    let out = tokio::task::spawn_blocking({
        let (config, data) = (env.config.clone(), env.dir.path().join("data"));
        move || -> Out { sign_in_cli(&config, &data, &["login", "remote"]).output().unwrap().into() }
    })
    .await
    .unwrap();
    assert_eq!(out.code, 0, "login needs no lock: {out:?}");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let done = loop {
        let now = engine.get(&rec.id).unwrap();
        if now.status.is_terminal() {
            break now;
        }
        assert!(std::time::Instant::now() < deadline, "the task goes on by itself after the login: {now:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(done.status.to_string(), "completed", "{done:?}");
    assert_eq!(engine.sign_in_state("remote").await.unwrap().auth, AuthState::SignedIn);
    engine.shutdown().await;
}
