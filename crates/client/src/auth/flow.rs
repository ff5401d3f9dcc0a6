//! The authorization code flow with PKCE (OAuth 2.1 §4.1), refresh (§4.3) and step-up, as the
//! MCP spec shapes them: `resource` on every authorization and token request, scopes from the
//! challenge first, the issuer of the answer checked (RFC 9207) before its code is used.

use std::time::Duration;

use reqwest::Url;
use serde_json::Value;

use super::AuthError;
use super::browser::OpenBrowser;
use super::challenge::BearerChallenge;
use super::discovery::{Discovery, ResourceMetadata, discover};
use super::http::{AuthHttp, secure_url};
use super::pkce::{Pkce, random_urlsafe};
use super::redirect::{Callback, Loopback};
use super::registration::{self, ClientConfig, RegisteredClient, TokenAuthMethod, error_of};
use super::tokens::{Secret, StoredAuth, TokenSet};

/// How a sign-in runs.
#[derive(Clone)]
pub struct SignInOptions {
    pub client: ClientConfig,
    /// Opens the authorization URL for the user ([`super::open_in_browser`] by default).
    pub open_browser: OpenBrowser,
    /// How long to wait for the browser to come back.
    pub timeout: Duration,
}

impl SignInOptions {
    pub fn new(client: ClientConfig) -> SignInOptions {
        SignInOptions {
            client,
            open_browser: std::sync::Arc::new(super::browser::open_in_browser),
            timeout: Duration::from_secs(300),
        }
    }
}

impl std::fmt::Debug for SignInOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInOptions").field("client", &self.client).field("timeout", &self.timeout).finish()
    }
}

/// A finished sign-in: what to store, and where it came from.
#[derive(Debug, Clone)]
pub struct Authorization {
    pub stored: StoredAuth,
    pub discovery: Discovery,
}

/// One authorization request in flight: the URL to open and what its answer is checked against.
#[derive(Debug)]
pub struct PendingAuthorization {
    pub url: String,
    pub state: String,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pkce: Pkce,
    issuer: String,
    iss_required: bool,
}

/// Scopes for a first authorization: the challenge's when it names any (authoritative for the
/// request), else everything the resource metadata lists, else none; plus the config's own.
pub fn select_scopes(
    challenge: Option<&BearerChallenge>,
    resource_metadata: Option<&ResourceMetadata>,
    configured: &[String],
) -> Vec<String> {
    let mut scopes: Vec<String> = match challenge.filter(|c| !c.scope.is_empty()) {
        Some(c) => c.scope.clone(),
        None => resource_metadata.and_then(|m| m.scopes_supported.clone()).unwrap_or_default(),
    };
    union_into(&mut scopes, configured);
    scopes
}

/// Scopes for a step-up after 403 `insufficient_scope`: everything asked for before and what the
/// challenge asks for now, so that no permission granted earlier is lost.
pub fn step_up_scopes(previous: &[String], challenge: &BearerChallenge) -> Vec<String> {
    let mut scopes = previous.to_vec();
    union_into(&mut scopes, &challenge.scope);
    scopes
}

fn union_into(scopes: &mut Vec<String>, more: &[String]) {
    for s in more {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
}

/// Builds the authorization request (a new PKCE pair and `state`) for `client`.
pub fn authorization_request(
    discovery: &Discovery,
    client: &RegisteredClient,
    scopes: &[String],
    redirect_uri: &str,
) -> Result<PendingAuthorization, AuthError> {
    let mut url = secure_url(&discovery.auth_server.authorization_endpoint)?;
    let pkce = Pkce::new();
    let state = random_urlsafe(24);
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", &discovery.resource);
        if !scopes.is_empty() {
            q.append_pair("scope", &scopes.join(" "));
        }
    }
    Ok(PendingAuthorization {
        url: url.to_string(),
        state,
        redirect_uri: redirect_uri.to_owned(),
        scopes: scopes.to_vec(),
        pkce,
        issuer: discovery.issuer().to_owned(),
        iss_required: discovery.auth_server.authorization_response_iss_parameter_supported,
    })
}

/// The code of an authorization response, once its issuer is checked (RFC 9207 §2.4, the MCP
/// table: a present `iss` is always compared, an absent one refused only when promised). On a
/// mismatch nothing of the answer, its error included, is used.
pub fn check_callback(pending: &PendingAuthorization, callback: Callback) -> Result<Secret, AuthError> {
    match &callback.iss {
        // Simple string comparison, no normalisation, as the spec requires.
        Some(iss) if iss != &pending.issuer => {
            return Err(AuthError::WrongIssuer {
                expected: pending.issuer.clone(),
                got: iss.chars().take(200).collect(),
            });
        }
        None if pending.iss_required => return Err(AuthError::MissingIssuer { issuer: pending.issuer.clone() }),
        _ => {}
    }
    if let Some(error) = callback.error {
        let clean = |s: String| s.chars().filter(|c| !c.is_control()).take(300).collect::<String>();
        return Err(AuthError::Denied { error: clean(error), description: callback.error_description.map(clean) });
    }
    callback.code.ok_or_else(|| AuthError::Denied { error: "no code".into(), description: None })
}

/// Exchanges the code for tokens.
pub async fn exchange_code(
    http: &AuthHttp,
    discovery: &Discovery,
    client: &RegisteredClient,
    pending: &PendingAuthorization,
    code: &Secret,
) -> Result<TokenSet, AuthError> {
    let form = vec![
        ("grant_type", "authorization_code"),
        ("code", code.expose()),
        ("redirect_uri", pending.redirect_uri.as_str()),
        ("code_verifier", pending.pkce.verifier.expose()),
        ("resource", discovery.resource.as_str()),
    ];
    let (status, answer) = token_request(http, &discovery.auth_server.token_endpoint, client, form).await?;
    if !status.is_success() {
        let (error, description) = error_of(&answer).unwrap_or_else(|| (format!("HTTP {}", status.as_u16()), None));
        return Err(AuthError::Token { error, description });
    }
    TokenSet::from_response(&answer, &pending.scopes, now())
        .map_err(|detail| AuthError::Malformed { url: discovery.auth_server.token_endpoint.clone(), detail })
}

/// Renews the access token of `stored`. The authorization server refusing is
/// [`AuthError::SignInAgain`]; an unreachable one is not (try again later).
pub async fn refresh(http: &AuthHttp, stored: &StoredAuth) -> Result<TokenSet, AuthError> {
    let tokens = stored.tokens.as_ref().ok_or_else(|| AuthError::SignInAgain { reason: "never signed in".into() })?;
    let refresh_token = tokens
        .refresh_token
        .as_ref()
        .ok_or_else(|| AuthError::SignInAgain { reason: "the authorization server gave no refresh token".into() })?;
    let form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.expose()),
        ("resource", stored.resource.as_str()),
    ];
    let (status, answer) = token_request(http, &stored.token_endpoint, &stored.client, form).await?;
    if status.is_server_error() {
        return Err(AuthError::Status { url: stored.token_endpoint.clone(), status: status.as_u16() });
    }
    if !status.is_success() {
        let reason = match error_of(&answer) {
            Some((e, Some(d))) => format!("{e}: {d}"),
            Some((e, None)) => e,
            None => format!("HTTP {}", status.as_u16()),
        };
        return Err(AuthError::SignInAgain { reason });
    }
    let mut renewed =
        TokenSet::from_response(&answer, &tokens.scopes, now()).map_err(|reason| AuthError::SignInAgain { reason })?;
    // Servers that do not rotate refresh tokens send none back: the old one still works.
    if renewed.refresh_token.is_none() {
        renewed.refresh_token = tokens.refresh_token.clone();
    }
    Ok(renewed)
}

/// The `Authorization` header for the next request to the server, refreshing first when the
/// access token expires within `margin`. The flag is true when `stored` changed (save it).
/// [`AuthError::SignInAgain`] means there is no way on without the user.
pub async fn authorization_for(
    http: &AuthHttp,
    stored: &mut StoredAuth,
    margin: Duration,
) -> Result<(Secret, bool), AuthError> {
    let tokens = stored.tokens.as_ref().ok_or_else(|| AuthError::SignInAgain { reason: "never signed in".into() })?;
    let margin = i64::try_from(margin.as_secs()).unwrap_or(i64::MAX);
    if !tokens.expires_within(now(), margin) {
        return Ok((Secret::new(tokens.authorization()), false));
    }
    let renewed = refresh(http, stored).await?;
    let header = Secret::new(renewed.authorization());
    stored.tokens = Some(renewed);
    Ok((header, true))
}

async fn token_request(
    http: &AuthHttp,
    endpoint: &str,
    client: &RegisteredClient,
    mut form: Vec<(&str, &str)>,
) -> Result<(reqwest::StatusCode, Value), AuthError> {
    let url: Url = secure_url(endpoint)?;
    let secret = client.client_secret.as_ref().map(Secret::expose);
    let mut basic = None;
    match (client.auth_method, secret) {
        (TokenAuthMethod::ClientSecretBasic, Some(secret)) => basic = Some((client.client_id.as_str(), secret)),
        (TokenAuthMethod::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", &client.client_id));
            form.push(("client_secret", secret));
        }
        _ => form.push(("client_id", &client.client_id)),
    }
    http.post_form(&url, &form, basic).await
}

/// The whole sign-in for the server at `server`: discovery, the client, the browser, the loopback
/// redirect and the token exchange. `previous` is what the store had for this server (its
/// registration is reused, its scopes kept in a step-up).
pub async fn sign_in(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&BearerChallenge>,
    previous: Option<&StoredAuth>,
    options: &SignInOptions,
) -> Result<Authorization, AuthError> {
    let discovery = discover(http, server, challenge).await?;
    sign_in_discovered(http, discovery, challenge, previous, options).await
}

/// The host the browser is sent to for a sign-in found by [`discover`]: what a front end names
/// before it opens the browser, so the user knows where their password goes.
pub fn authorization_host(discovery: &Discovery) -> String {
    let endpoint = &discovery.auth_server.authorization_endpoint;
    match Url::parse(endpoint) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            _ => endpoint.clone(),
        },
        Err(_) => endpoint.clone(),
    }
}

/// [`sign_in`] from a discovery already made: a front end discovers first, names the
/// authorization server to the user, and only then goes on to the browser with this.
pub async fn sign_in_discovered(
    http: &AuthHttp,
    discovery: Discovery,
    challenge: Option<&BearerChallenge>,
    previous: Option<&StoredAuth>,
    options: &SignInOptions,
) -> Result<Authorization, AuthError> {
    // Scopes asked for earlier at the same authorization server are kept (step-up).
    let previous = previous.filter(|p| p.issuer == discovery.issuer());
    let mut scopes = select_scopes(challenge, discovery.resource_metadata.as_ref(), &options.client.scopes);
    if let Some(p) = previous {
        scopes = step_up_scopes(&p.requested_scopes, &BearerChallenge { scope: scopes, ..Default::default() });
    }
    // A refresh token is worth asking for where the authorization server lists the scope that
    // grants one (2026-07-28 "Refresh Tokens"); never where it does not.
    let offline = "offline_access";
    if discovery.auth_server.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|x| x == offline))
        && !scopes.iter().any(|s| s == offline)
    {
        scopes.push(offline.to_owned());
    }

    // The port a dynamic client was registered with is reused, so its redirect URI still matches.
    let port = options.client.redirect_port.or_else(|| previous.and_then(|p| p.client.redirect_port()));
    let loopback = match Loopback::bind(port).await {
        Ok(l) => l,
        Err(e) if options.client.redirect_port.is_none() && port.is_some() => {
            // That port is taken now: a new one, and a new registration for it.
            tracing::debug!(error = %e, "redirect port of the earlier registration is taken");
            Loopback::bind(None).await?
        }
        Err(e) => return Err(e),
    };
    let redirect_uri = loopback.redirect_uri();
    let client =
        match registration::reusable_client(&discovery, &options.client, previous.map(|p| &p.client), &redirect_uri) {
            Some(c) => c,
            None => registration::register(http, &discovery, &redirect_uri, &scopes).await?,
        };

    let pending = authorization_request(&discovery, &client, &scopes, &redirect_uri)?;
    (options.open_browser)(&pending.url)
        .map_err(|e| AuthError::Browser { url: pending.url.clone(), detail: e.to_string() })?;
    let callback = loopback.wait(&pending.state, options.timeout).await?;
    let code = check_callback(&pending, callback)?;
    let tokens = exchange_code(http, &discovery, &client, &pending, &code).await?;
    let stored = StoredAuth {
        resource: discovery.resource.clone(),
        issuer: discovery.issuer().to_owned(),
        token_endpoint: discovery.auth_server.token_endpoint.clone(),
        client,
        requested_scopes: scopes,
        tokens: Some(tokens),
    };
    Ok(Authorization { stored, discovery })
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(scope: &[&str]) -> BearerChallenge {
        BearerChallenge { scope: scope.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn the_challenge_scope_wins_then_the_metadata_then_none() {
        let prm = ResourceMetadata {
            resource: "https://a.example".into(),
            authorization_servers: vec![],
            scopes_supported: Some(vec!["read".into(), "write".into()]),
        };
        assert_eq!(select_scopes(Some(&challenge(&["files:read"])), Some(&prm), &[]), vec!["files:read"]);
        assert_eq!(select_scopes(Some(&challenge(&[])), Some(&prm), &[]), vec!["read", "write"]);
        assert!(select_scopes(None, None, &[]).is_empty());
        assert_eq!(select_scopes(None, None, &["extra".into()]), vec!["extra"]);
    }

    #[test]
    fn the_host_named_before_the_browser_opens_is_the_authorization_endpoints() {
        let mut discovery = Discovery {
            resource: "https://mcp.example.com/mcp".into(),
            resource_metadata: None,
            resource_metadata_url: None,
            auth_server: super::super::AuthServerMetadata {
                issuer: "https://issuer.example".into(),
                authorization_endpoint: "https://login.example.org/oauth/authorize?x=1".into(),
                token_endpoint: "https://issuer.example/token".into(),
                registration_endpoint: None,
                scopes_supported: None,
                code_challenge_methods_supported: None,
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: false,
                authorization_response_iss_parameter_supported: false,
            },
            auth_server_metadata_url: None,
        };
        assert_eq!(authorization_host(&discovery), "login.example.org");
        discovery.auth_server.authorization_endpoint = "http://127.0.0.1:8123/authorize".into();
        assert_eq!(authorization_host(&discovery), "127.0.0.1:8123");
        discovery.auth_server.authorization_endpoint = "not a url".into();
        assert_eq!(authorization_host(&discovery), "not a url");
    }

    #[test]
    fn a_step_up_asks_for_the_union_of_old_and_new_scopes() {
        assert_eq!(step_up_scopes(&["a".into(), "b".into()], &challenge(&["b", "c"])), vec!["a", "b", "c"]);
    }
}
