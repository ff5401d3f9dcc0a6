//! Signing in to a remote server, in two steps a front end can put the user between: first
//! [`find_out_where`] (probe the server, discover its authorization server, touch no browser),
//! then [`go`] (the browser, the loopback redirect, the tokens kept). Neither needs the engine or
//! the data directory's lock, so `taskdeck-cli login` works while the app drives the tasks.
//!
//! A sign-in made here is announced to whoever drives the data directory through a small file
//! beside the lock ([`STAMP_FILE`]): the token store itself may be the OS keyring, which tells
//! nobody about a change, so the engine looks at this file instead and follows on the tasks that
//! waited for that server.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use taskdeck_client::auth::{
    self, AuthHttp, BearerChallenge, ClientConfig, Discovery, SignInOptions, StoredAuth, TokenStore,
};
use taskdeck_client::transport::http::{HttpFailure, SignIn, StoredSignIn, probe};
use taskdeck_client::{Endpoint, IgnoreEvents, Session, SessionOptions};

use crate::config::ServerConfig;
use crate::supervisor::AuthState;

pub use taskdeck_client::auth::{OpenBrowser, open_in_browser};

/// How the status message of a task waiting for its server's sign-in begins.
pub const SIGN_IN_NEEDED: &str = "Sign-in needed";

/// The task is not over and waits for a sign-in to its server (its status message says so).
pub fn waits_for_sign_in(rec: &taskdeck_store::TaskRecord) -> bool {
    is_sign_in_wait(rec.status, rec.status_message.as_deref())
}

/// [`waits_for_sign_in`] from what a task summary carries.
pub fn is_sign_in_wait(status: taskdeck_store::TaskStatus, status_message: Option<&str>) -> bool {
    !status.is_terminal() && status_message.is_some_and(|m| m.starts_with(SIGN_IN_NEEDED))
}

/// Written by every sign-in and sign-out: the server's name and a counter, one JSON object.
pub const STAMP_FILE: &str = "sign-ins.changed";

/// What the user is asked before the browser opens: which server, and where the sign-in goes.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignInPrompt {
    pub server: String,
    /// The host (and port) of the page the browser is sent to.
    pub authorization_host: String,
    /// The authorization server's issuer, as its metadata names it.
    pub issuer: String,
    pub scopes: Vec<String>,
    /// A sign-in is asked for because the server wants more scopes than the kept one has.
    pub step_up: bool,
}

/// A sign-in found out, not yet begun.
#[derive(Debug, Clone)]
pub struct SignInPlan {
    pub prompt: SignInPrompt,
    discovery: Discovery,
    challenge: Option<BearerChallenge>,
    previous: Option<StoredAuth>,
    client: ClientConfig,
}

/// What [`find_out_where`] found.
#[derive(Debug, Clone)]
pub enum SignInStep {
    /// The server lets Taskdeck in as it is (or is a local server).
    NotNeeded,
    Ready(Box<SignInPlan>),
}

/// How a server's sign-in stands, for the Servers view.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignInState {
    pub server: String,
    /// A remote server (only those sign in).
    pub remote: bool,
    pub auth: AuthState,
    /// The host of the authorization server the kept sign-in is from.
    pub issuer_host: Option<String>,
    /// Who is signed in, where the access token says (a JWT's `email`, `preferred_username`
    /// or `sub`); an opaque token says nothing.
    pub account: Option<String>,
    /// Unix seconds; `None` when the authorization server did not say.
    pub expires_at: Option<i64>,
    /// A refresh token is kept, so an expiry renews itself.
    pub renewable: bool,
    pub scopes: Vec<String>,
}

/// Probes `server` and, where it wants a sign-in, discovers where it goes. Nothing is opened
/// and nothing kept. Errors are for the user: they name what was wrong.
pub async fn find_out_where(server: &ServerConfig, store: Arc<dyn TokenStore>) -> Result<SignInStep, String> {
    let Endpoint::Http(spec) = &server.endpoint else { return Ok(SignInStep::NotNeeded) };
    let (url, status, www) = probe(spec).await?;
    let previous = load(&store, &server.name).await;
    // A request refused for want of a scope (403 insufficient_scope) left it among the
    // requested ones: a step-up is due whatever the probes say.
    let step_up_due = previous
        .as_ref()
        .is_some_and(|p| p.tokens.as_ref().is_some_and(|t| p.requested_scopes.iter().any(|s| !t.scopes.contains(s))));
    let mut challenge = www.as_deref().and_then(BearerChallenge::from_header);
    let step_up = status == 403 && challenge.as_ref().is_some_and(|c| c.is_insufficient_scope());
    if status != 401 && !step_up && !step_up_due {
        // Some servers let `initialize` through and refuse only what follows: ask as a session
        // would (with the kept sign-in), and sign in on that refusal's challenge.
        match refused_by_a_session(server, store.clone()).await {
            Some(www) => challenge = www.as_deref().and_then(BearerChallenge::from_header),
            // Nothing refused so far; a server that publishes protected resource metadata may
            // still refuse the work itself (only `tools/call`), and the user asked to sign in.
            None => match auth::discover_published(&auth_http()?, &url).await {
                Some(discovery) => return Ok(plan(server, discovery, None, previous, false)),
                None => return Ok(SignInStep::NotNeeded),
            },
        }
    }
    let http = auth_http()?;
    let discovery = auth::discover(&http, &url, challenge.as_ref()).await.map_err(|e| e.to_string())?;
    Ok(plan(server, discovery, challenge, previous, step_up || step_up_due))
}

fn plan(
    server: &ServerConfig,
    discovery: Discovery,
    challenge: Option<BearerChallenge>,
    previous: Option<StoredAuth>,
    step_up: bool,
) -> SignInStep {
    let client = server.settings.oauth.clone().unwrap_or_default();
    let same_issuer = previous.as_ref().filter(|p| p.issuer == discovery.issuer());
    let mut scopes = auth::select_scopes(challenge.as_ref(), discovery.resource_metadata.as_ref(), &client.scopes);
    if let Some(p) = same_issuer {
        scopes = auth::step_up_scopes(&p.requested_scopes, &BearerChallenge { scope: scopes, ..Default::default() });
    }
    let prompt = SignInPrompt {
        server: server.name.clone(),
        authorization_host: auth::authorization_host(&discovery),
        issuer: discovery.issuer().to_owned(),
        scopes,
        step_up,
    };
    SignInStep::Ready(Box::new(SignInPlan { prompt, discovery, challenge, previous, client }))
}

/// Signs in as `plan` says: the browser is opened through `open_browser`, the redirect awaited
/// on the loopback listener (for at most `options_timeout`), the tokens kept in `store`, and the
/// sign-in announced in `data_dir`. Returns the issuer. Dropping the future gives up the sign-in
/// (the listener closes), which is how a front end cancels it.
pub async fn go(
    plan: SignInPlan,
    store: Arc<dyn TokenStore>,
    data_dir: &Path,
    open_browser: OpenBrowser,
    timeout: Option<std::time::Duration>,
) -> Result<String, String> {
    let http = auth_http()?;
    let mut options = SignInOptions::new(plan.client.clone());
    options.open_browser = open_browser;
    if let Some(t) = timeout {
        options.timeout = t;
    }
    let signed =
        auth::sign_in_discovered(&http, plan.discovery, plan.challenge.as_ref(), plan.previous.as_ref(), &options)
            .await
            .map_err(|e| e.to_string())?;
    let issuer = signed.stored.issuer.clone();
    let (name, stored) = (plan.prompt.server.clone(), signed.stored);
    blocking(move || store.save(&name, &stored).map_err(|e| e.to_string())).await?;
    announce(data_dir, &plan.prompt.server);
    Ok(issuer)
}

/// Removes the sign-in kept for `server`, and says so to whoever drives the data directory.
pub async fn sign_out(server: &str, store: Arc<dyn TokenStore>, data_dir: &Path) -> Result<(), String> {
    let name = server.to_owned();
    blocking(move || store.delete(&name).map_err(|e| e.to_string())).await?;
    announce(data_dir, server);
    Ok(())
}

/// How `server`'s sign-in stands: what is kept for it, and `live` (what its connection learnt:
/// a refusal the kept sign-in could not get past).
pub async fn state(server: &ServerConfig, store: Arc<dyn TokenStore>, live: AuthState) -> SignInState {
    let remote = matches!(server.endpoint, Endpoint::Http(_));
    let kept = if remote { load(&store, &server.name).await } else { None };
    let tokens = kept.as_ref().and_then(|k| k.tokens.as_ref());
    let auth = match (live, tokens) {
        (AuthState::SignInNeeded, _) => AuthState::SignInNeeded,
        (_, Some(_)) => AuthState::SignedIn,
        (other, None) => other,
    };
    SignInState {
        server: server.name.clone(),
        remote,
        auth,
        issuer_host: kept.as_ref().map(|k| host_of(&k.issuer)),
        account: tokens.and_then(|t| account_of(t.access_token.expose())),
        expires_at: tokens.and_then(|t| t.expires_at),
        renewable: tokens.is_some_and(|t| t.refresh_token.is_some()),
        scopes: tokens.map(|t| t.scopes.clone()).unwrap_or_default(),
    }
}

/// Tells whoever drives `data_dir` that `server`'s sign-in changed. Best effort: a failure
/// only means the running app notices at its next refused request instead.
pub fn announce(data_dir: &Path, server: &str) {
    let mut stamps = stamps(data_dir);
    let next = stamps.get(server).copied().unwrap_or(0).wrapping_add(1);
    stamps.insert(server.to_owned(), next);
    let _ = taskdeck_store::private_fs::create_dir_all(data_dir);
    if let Ok(bytes) = serde_json::to_vec(&stamps) {
        let _ = taskdeck_store::private_fs::write_atomic(&data_dir.join(STAMP_FILE), &bytes);
    }
}

/// The announcements so far, per server.
pub fn stamps(data_dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read(data_dir.join(STAMP_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// Servers whose announcement differs between `before` and `now`.
pub fn changed(before: &BTreeMap<String, u64>, now: &BTreeMap<String, u64>) -> Vec<String> {
    now.iter().filter(|(k, v)| before.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect()
}

/// A throwaway session with the kept sign-in: the `WWW-Authenticate` of the refusal, when the
/// server refuses what follows the handshake for want of a sign-in (or of a scope).
async fn refused_by_a_session(server: &ServerConfig, store: Arc<dyn TokenStore>) -> Option<Option<String>> {
    let Endpoint::Http(spec) = &server.endpoint else { return None };
    let mut spec = spec.clone();
    if let Ok(kept) = StoredSignIn::new(&server.name, store) {
        spec.sign_in = SignIn::new(Arc::new(kept));
    }
    let endpoint = Endpoint::Http(spec);
    let options = SessionOptions { force_era: server.settings.era, ..SessionOptions::default() };
    let failed = match Session::open(&endpoint, options, Arc::new(IgnoreEvents)).await {
        Ok(session) => {
            let listed = session.list_tools().await;
            session.shutdown(std::time::Duration::from_secs(2)).await;
            listed.err()?
        }
        Err(e) => e,
    };
    match HttpFailure::of(&failed) {
        Some(HttpFailure::SignInNeeded { www_authenticate }) => Some(www_authenticate),
        Some(HttpFailure::Forbidden { www_authenticate })
            if www_authenticate.as_deref().is_some_and(|w| w.contains("insufficient_scope")) =>
        {
            Some(www_authenticate)
        }
        _ => None,
    }
}

fn auth_http() -> Result<AuthHttp, String> {
    AuthHttp::new()
        .map(|h| h.with_protocol_version(taskdeck_protocol::legacy::PROTOCOL_VERSION))
        .map_err(|e| e.to_string())
}

async fn load(store: &Arc<dyn TokenStore>, server: &str) -> Option<StoredAuth> {
    let (store, name) = (store.clone(), server.to_owned());
    blocking(move || Ok(store.load(&name).ok().flatten())).await.ok().flatten()
}

/// The token store's calls may block (the keyring is D-Bus on Linux).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| e.to_string())?
}

fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit('@').next().unwrap_or(authority).to_owned()
}

/// Who a JWT access token is for, for display only: nothing here is trusted or checked, and an
/// opaque token (most of them) says nothing.
fn account_of(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if payload.len() > 16 * 1024 {
        return None;
    }
    let bytes = base64url(payload.trim_end_matches('='))?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    ["email", "preferred_username", "name", "sub"]
        .iter()
        .find_map(|k| claims.get(*k).and_then(|v| v.as_str()).filter(|s| !s.trim().is_empty()))
        .map(|s| s.chars().filter(|c| !c.is_control()).take(120).collect())
}

/// Base64url without padding (RFC 4648 §5), as JWTs write their parts.
fn base64url(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &str) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in v.as_bytes().chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn the_account_is_read_from_a_jwt_and_an_opaque_token_says_nothing() {
        let jwt = format!("{}.{}.sig", enc(r#"{"alg":"none"}"#), enc(r#"{"sub":"u-1","email":"ada@example.org"}"#));
        assert_eq!(account_of(&jwt).as_deref(), Some("ada@example.org"));
        let sub = format!("{}.{}.sig", enc("{}"), enc(r#"{"sub":"u-1"}"#));
        assert_eq!(account_of(&sub).as_deref(), Some("u-1"));
        assert_eq!(account_of("opaque-token-123"), None);
        assert_eq!(account_of("a.!!!.c"), None);
    }

    #[test]
    fn an_announcement_is_seen_as_a_change_of_that_server_only() {
        let dir = tempfile::tempdir().unwrap();
        let before = stamps(dir.path());
        announce(dir.path(), "remote");
        let after = stamps(dir.path());
        assert_eq!(changed(&before, &after), vec!["remote".to_owned()]);
        announce(dir.path(), "other");
        assert_eq!(changed(&after, &stamps(dir.path())), vec!["other".to_owned()]);
        assert!(changed(&stamps(dir.path()), &stamps(dir.path())).is_empty());
    }
}
