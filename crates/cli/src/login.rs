//! `login SERVER` and `logout SERVER`, and the exit 3 of a command that needs a sign-in it does
//! not have.
//!
//! Signing in and out needs neither the store nor the data directory's lock: only the config
//! and the token store. So `login` works while the desktop app (or another `taskdeck-cli`)
//! drives the tasks; that process sees the announcement `signin::go` leaves in the data
//! directory and follows on the tasks that waited.

use std::sync::Arc;

use taskdeck_engine::config::{Config, Paths};
use taskdeck_engine::signin::{self, SignInStep};
use taskdeck_engine::{AuthState, Engine, EngineError, ServerConfig};

use crate::error::{CliError, EXIT_COMPLETED, EXIT_FAILED, EXIT_WAITING, Result};
use crate::terminal;

/// Signs in to `server`: says first which server and which authorization server, then opens
/// the browser (`$BROWSER` when set) and waits for the redirect.
pub async fn login(paths: &Paths, config: &Config, server: &str) -> Result<u8> {
    let entry = entry(config, server)?;
    let store = store(paths).await;
    let plan = match signin::find_out_where(entry, store.clone()).await {
        Ok(SignInStep::NotNeeded) => {
            terminal::err(&format!("{server} needs no sign-in.\n"));
            return Ok(EXIT_COMPLETED);
        }
        Ok(SignInStep::Ready(plan)) => plan,
        Err(why) => return Err(failed(server, &why)),
    };
    let (name, host) = (server.to_owned(), plan.prompt.authorization_host.clone());
    let announce: taskdeck_client::auth::OpenBrowser = Arc::new(move |url: &str| {
        terminal::err(&format!(
            "Signing in to {name} at {host} (its authorization server); opening the browser.\n\
             If it does not open, go to: {url}\n"
        ));
        taskdeck_client::auth::open_in_browser(url)
    });
    match signin::go(*plan, store.clone(), &paths.data_dir, announce, None).await {
        Ok(issuer) => {
            let kept = store.describe();
            terminal::err(&format!("Signed in to {server} (by {issuer}); the sign-in is kept in {kept}.\n"));
            Ok(EXIT_COMPLETED)
        }
        Err(why) => Err(failed(server, &why)),
    }
}

/// Removes the sign-in kept for `server`.
pub async fn logout(paths: &Paths, config: &Config, server: &str) -> Result<u8> {
    entry(config, server)?;
    match signin::sign_out(server, store(paths).await, &paths.data_dir).await {
        Ok(()) => {
            terminal::err(&format!("Signed out of {server}.\n"));
            Ok(EXIT_COMPLETED)
        }
        Err(why) => Err(CliError::runtime(format!("could not sign out of {server}: {why}"))),
    }
}

fn entry<'a>(config: &'a Config, server: &str) -> Result<&'a ServerConfig> {
    if let Some(bad) = config.unreadable_entry(server) {
        return Err(CliError::usage(format!("server {:?} cannot be used: {}", bad.name, bad.error)));
    }
    config.servers.iter().find(|s| s.name == server).ok_or_else(|| {
        EngineError::UnknownServer {
            name: server.into(),
            known: config.servers.iter().map(|s| s.name.clone()).collect(),
        }
        .into()
    })
}

async fn store(paths: &Paths) -> Arc<dyn taskdeck_client::auth::TokenStore> {
    let dir = paths.data_dir.clone();
    match tokio::task::spawn_blocking(move || taskdeck_engine::supervisor::sign_in_store(&dir).0).await {
        Ok(s) => s,
        Err(_) => Arc::new(taskdeck_client::auth::FileStore::in_dir(&paths.data_dir)),
    }
}

fn failed(server: &str, why: &str) -> CliError {
    CliError { exit: EXIT_FAILED, message: format!("could not sign in to {server}: {why}") }
}

/// A run whose first request the server refused for want of a sign-in never started: it is not
/// kept (nothing is left in `tasks`), and the command waits for the user (exit 3) with the hint.
/// A task the server took and that later lost its sign-in is another matter: it keeps waiting.
/// Called before the run is followed (for a task, whose start is answered at once) and after.
pub async fn refused_before_start(engine: &Engine, rec: &taskdeck_engine::TaskRecord) -> Result<()> {
    if rec.mode == taskdeck_engine::Mode::Task {
        // Until the server took the task, or it stopped for a sign-in (or ended, or asks).
        let first = std::time::Duration::from_secs(5);
        let started = |r: &taskdeck_engine::TaskRecord| r.remote_task_id.is_some() || r.question.is_some();
        let _ = tokio::time::timeout(first, engine.wait(&rec.id, started)).await;
    }
    if engine.withdraw_unstarted(&rec.id).await? {
        let server = &rec.server;
        return Err(CliError {
            exit: EXIT_WAITING,
            message: format!(
                "{server} refused to run {} for want of a sign-in, so nothing was started.\n\
                 Sign-in needed: run `taskdeck-cli login {server}`",
                rec.tool
            ),
        });
    }
    Ok(())
}

/// A command that failed because `server` wants a sign-in is waiting for the user (exit 3),
/// and says how to sign in.
pub fn waiting_for_sign_in(engine: &Engine, server: Option<&str>, outcome: Result<u8>) -> Result<u8> {
    let Err(mut e) = outcome else { return outcome };
    let Some(server) = server else { return Err(e) };
    let needed = engine.servers().iter().any(|s| s.name == server && s.auth == AuthState::SignInNeeded);
    if needed && e.exit == EXIT_FAILED {
        e.exit = EXIT_WAITING;
        let hint = format!("taskdeck-cli login {server}");
        if !e.message.contains(&hint) {
            e.message.push_str(&format!("\nSign-in needed: run `{hint}`"));
        }
    }
    Err(e)
}

/// `resume`'s exit: 3 when a task it left waits for a sign-in (each said on stderr, with how),
/// else 0 as always.
pub fn resume_exit(engine: &Engine, done: &[taskdeck_engine::TaskRecord]) -> u8 {
    let mut waiting = false;
    for rec in done {
        if let Some(reason) = engine.stalled(&rec.id).filter(|r| r.starts_with("Sign-in needed")) {
            terminal::err(&format!("task {} is still {} and waits for a sign-in. {reason}\n", rec.id, rec.status));
            waiting = true;
        }
    }
    if waiting { EXIT_WAITING } else { EXIT_COMPLETED }
}
