//! Where the transport gets its `Authorization` header: a [`SignIn`] the owner of the spec (the
//! engine) puts in, backed by the [`TokenStore`] through [`authorization_for`]. The transport
//! asks before every request and, on a 401, once whether a retry is worth it; it never sees the
//! store, and never logs what it is given.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use super::super::BoxFuture;
use crate::auth::{
    AuthError, AuthHttp, BearerChallenge, StoredAuth, TokenStore, authorization_for, refresh, step_up_scopes,
};

/// A token renewed this long before it expires, so no request goes out with one about to lapse.
const MARGIN: Duration = Duration::from_secs(30);

/// What gives a remote server's requests their `Authorization` header.
pub trait Authorize: Send + Sync {
    /// The header value for the next request; `None` when there is no usable sign-in (the
    /// request goes without, and a server that needs one answers 401).
    fn header(&self) -> BoxFuture<'_, Option<String>>;
    /// The server answered 401 to a request that carried `sent`: true when a new header is to
    /// be had (a sign-in made elsewhere since, or a refresh), so the request is worth one retry.
    fn rejected(&self, sent: Option<String>) -> BoxFuture<'_, bool>;
    /// The server answered 403 with this challenge: signed in, but short of a scope. What it
    /// asks for is remembered, for the next sign-in to ask for too (a step-up).
    fn forbidden(&self, _www_authenticate: Option<String>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The sign-in of one remote server, or none. Not part of what the config says: two specs are
/// equal whatever their sign-in, and it is never serialized or shown.
#[derive(Clone, Default)]
pub struct SignIn(Option<Arc<dyn Authorize>>);

impl SignIn {
    pub fn new(auth: Arc<dyn Authorize>) -> SignIn {
        SignIn(Some(auth))
    }

    pub fn none() -> SignIn {
        SignIn(None)
    }

    pub(crate) async fn header(&self) -> Option<String> {
        match &self.0 {
            Some(a) => a.header().await,
            None => None,
        }
    }

    pub(crate) async fn forbidden(&self, www_authenticate: Option<String>) {
        if let Some(a) = &self.0 {
            a.forbidden(www_authenticate).await
        }
    }

    pub(crate) async fn rejected(&self, sent: Option<String>) -> bool {
        match &self.0 {
            Some(a) => a.rejected(sent).await,
            None => false,
        }
    }
}

impl PartialEq for SignIn {
    fn eq(&self, _: &SignIn) -> bool {
        true
    }
}

impl Eq for SignIn {}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "SignIn(stored)" } else { "SignIn(none)" })
    }
}

/// The sign-in kept in a [`TokenStore`] under the server's name. Loaded once, and again after a
/// 401 (a `taskdeck-cli login` in another process may have signed in since); renewed through the
/// refresh token when it is about to expire, and saved back.
pub struct StoredSignIn {
    server: String,
    store: Arc<dyn TokenStore>,
    http: AuthHttp,
    state: Mutex<Option<Option<StoredAuth>>>,
    /// The server refused the last request for want of a sign-in, and none was to be had.
    needed: std::sync::atomic::AtomicBool,
}

impl StoredSignIn {
    pub fn new(server: &str, store: Arc<dyn TokenStore>) -> Result<StoredSignIn, AuthError> {
        Ok(StoredSignIn {
            server: server.to_owned(),
            store,
            http: AuthHttp::new()?,
            state: Mutex::new(None),
            needed: Default::default(),
        })
    }

    /// True when the server refused a request for want of a sign-in and none could be had: the
    /// user has to sign in.
    pub fn needs_sign_in(&self) -> bool {
        self.needed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a sign-in with tokens is kept (as last loaded).
    pub async fn signed_in(&self) -> bool {
        let mut state = self.state.lock().await;
        if state.is_none() {
            *state = Some(self.load().await);
        }
        state.as_ref().and_then(Option::as_ref).is_some_and(|a| a.tokens.is_some())
    }

    /// The store's calls may block (the keyring is D-Bus on Linux).
    async fn load(&self) -> Option<StoredAuth> {
        let (store, server) = (self.store.clone(), self.server.clone());
        match tokio::task::spawn_blocking(move || store.load(&server)).await {
            Ok(Ok(auth)) => auth,
            Ok(Err(e)) => {
                tracing::warn!(server = %self.server, "could not read the stored sign-in: {e}");
                None
            }
            Err(_) => None,
        }
    }

    async fn save(&self, auth: StoredAuth) {
        let (store, server) = (self.store.clone(), self.server.clone());
        match tokio::task::spawn_blocking(move || store.save(&server, &auth)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(server = %self.server, "could not keep the renewed sign-in: {e}"),
            Err(_) => {}
        }
    }
}

impl Authorize for StoredSignIn {
    fn header(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let mut state = self.state.lock().await;
            if state.is_none() {
                *state = Some(self.load().await);
            }
            let auth = state.as_mut().and_then(Option::as_mut)?;
            match authorization_for(&self.http, auth, MARGIN).await {
                Ok((header, changed)) => {
                    if changed {
                        tracing::info!(server = %self.server, "the access token was renewed");
                        self.save(auth.clone()).await;
                    }
                    Some(header.expose().to_owned())
                }
                Err(e) if e.needs_sign_in() => {
                    tracing::info!(server = %self.server, "{e}");
                    None
                }
                // The authorization server is unreachable for now: the token held may still do.
                Err(e) => {
                    tracing::info!(server = %self.server, "could not renew the access token: {e}");
                    auth.tokens.as_ref().map(|t| t.authorization())
                }
            }
        })
    }

    fn forbidden(&self, www_authenticate: Option<String>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(challenge) = www_authenticate.as_deref().and_then(BearerChallenge::from_header) else { return };
            if !challenge.is_insufficient_scope() {
                return;
            }
            let mut state = self.state.lock().await;
            let Some(mut auth) = self.load().await else { return };
            let wanted = step_up_scopes(&auth.requested_scopes, &challenge);
            if wanted != auth.requested_scopes {
                tracing::info!(server = %self.server, "the server asks for more scopes: a sign-in with them is needed");
                auth.requested_scopes = wanted;
                self.save(auth.clone()).await;
            }
            *state = Some(Some(auth));
            self.needed.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    }

    fn rejected(&self, sent: Option<String>) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let renewed = self.renew(sent).await;
            self.needed.store(!renewed, std::sync::atomic::Ordering::Relaxed);
            renewed
        })
    }
}

impl StoredSignIn {
    async fn renew(&self, sent: Option<String>) -> bool {
        {
            let mut state = self.state.lock().await;
            let Some(mut auth) = self.load().await else {
                *state = Some(None);
                return false;
            };
            let stored = auth.tokens.as_ref().map(|t| t.authorization());
            if stored.is_some() && stored != sent {
                // Signed in anew since the header was made.
                *state = Some(Some(auth));
                return true;
            }
            match refresh(&self.http, &auth).await {
                Ok(tokens) => {
                    tracing::info!(server = %self.server, "the server refused the access token; renewed it");
                    auth.tokens = Some(tokens);
                    self.save(auth.clone()).await;
                    *state = Some(Some(auth));
                    true
                }
                Err(e) => {
                    tracing::info!(server = %self.server, "the server refused the access token: {e}");
                    // The refresh is not tried again for every request: the next login reloads.
                    if e.needs_sign_in() {
                        auth.tokens = None;
                    }
                    *state = Some(Some(auth));
                    false
                }
            }
        }
    }
}

/// What a remote server says to a request without a sign-in: the status, and its
/// `WWW-Authenticate` when it sent one, with the URL as parsed. For `login`, which signs in only
/// where it is asked to.
pub async fn probe(spec: &super::HttpSpec) -> Result<(reqwest::Url, u16, Option<String>), String> {
    let url = reqwest::Url::parse(&spec.url).map_err(|e| format!("the URL is not valid: {e}"))?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
        .body(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": taskdeck_protocol::legacy::PROTOCOL_VERSION,
                "capabilities": {}, "clientInfo": {"name": "taskdeck", "version": env!("CARGO_PKG_VERSION")}}})
            .to_string(),
        );
    for (name, value) in &spec.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.map_err(|e| {
        let mut cause: Option<&dyn std::error::Error> = Some(&e);
        let mut last = String::new();
        while let Some(c) = cause {
            last = c.to_string();
            cause = c.source();
        }
        format!("could not reach the server: {last}")
    })?;
    let www =
        response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Ok((url, response.status().as_u16(), www))
}
