//! `login SERVER` and `logout SERVER`, and the exit 3 of a command that needs a sign-in it does
//! not have.

use std::sync::Arc;

use taskdeck_engine::{AuthState, Engine, SignInOutcome};

use crate::error::{CliError, EXIT_COMPLETED, EXIT_FAILED, EXIT_WAITING, Result};
use crate::terminal;

/// Signs in to `server`: says first which server and which authorization server, then opens
/// the browser (`$BROWSER` when set) and waits for the redirect.
pub async fn login(engine: &Engine, server: &str) -> Result<u8> {
    let name = server.to_owned();
    let announce: taskdeck_client::auth::OpenBrowser = Arc::new(move |url: &str| {
        let host = reqwest_host(url);
        terminal::err(&format!(
            "Signing in to {name} at {host} (its authorization server); opening the browser.\n\
             If it does not open, go to: {url}\n"
        ));
        taskdeck_client::auth::open_in_browser(url)
    });
    match engine.sign_in(server, announce).await? {
        Ok(SignInOutcome::SignedIn { issuer }) => {
            let kept = engine.sign_in_store_description().await;
            terminal::err(&format!("Signed in to {server} (by {issuer}); the sign-in is kept in {kept}.\n"));
            Ok(EXIT_COMPLETED)
        }
        Ok(SignInOutcome::NotNeeded) => {
            terminal::err(&format!("{server} needs no sign-in.\n"));
            Ok(EXIT_COMPLETED)
        }
        Err(why) => Err(CliError { exit: EXIT_FAILED, message: format!("could not sign in to {server}: {why}") }),
    }
}

/// Removes the sign-in kept for `server`.
pub async fn logout(engine: &Engine, server: &str) -> Result<u8> {
    match engine.sign_out(server).await? {
        Ok(()) => {
            terminal::err(&format!("Signed out of {server}.\n"));
            Ok(EXIT_COMPLETED)
        }
        Err(why) => Err(CliError::runtime(format!("could not sign out of {server}: {why}"))),
    }
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

/// The host of a URL, for saying where the sign-in goes; the URL itself when it has none.
fn reqwest_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit('@').next().unwrap_or(authority).to_owned()
}
