//! From a server's URL (and its challenge) to the authorization server that signs users in for
//! it: protected resource metadata (RFC 9728), then authorization server metadata (RFC 8414,
//! OpenID Connect Discovery), in the orders the MCP spec gives, with the checks it requires.
//!
//! A server with no protected resource metadata is a 2025-03-26 server: its own origin is the
//! authorization server, found through RFC 8414 there or, failing that, at the default
//! endpoints `/authorize`, `/token` and `/register`.

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AuthError;
use super::challenge::BearerChallenge;
use super::http::{AuthHttp, Fetched, require_secure, secure_url};

/// RFC 9728 §2, the fields a client uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceMetadata {
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 §2 (and the OpenID provider metadata fields of the same names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207 §2.3: the issuer is in every authorization response.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// Where a sign-in for one server goes, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The `resource` parameter (RFC 8707) of every authorization and token request.
    pub resource: String,
    /// `None` for a 2025-03-26 server, which has none.
    pub resource_metadata: Option<ResourceMetadata>,
    /// Where the resource metadata came from, for the log and the tests.
    pub resource_metadata_url: Option<String>,
    pub auth_server: AuthServerMetadata,
    /// Where the authorization server metadata came from; `None` when the 2025-03-26 default
    /// endpoints are used because there was none.
    pub auth_server_metadata_url: Option<String>,
}

impl Discovery {
    pub fn issuer(&self) -> &str {
        &self.auth_server.issuer
    }

    /// True when the 2025-03-26 default endpoints stand in for missing metadata.
    pub fn uses_default_endpoints(&self) -> bool {
        self.auth_server_metadata_url.is_none()
    }
}

/// The sign-in a server publishes (RFC 9728 metadata at its well-known place) without having
/// asked for one in a refusal: for a user who asks to sign in to a server that has let
/// everything through so far (some refuse only the work itself). `None` where it publishes
/// none: the 2025-03-26 defaults are no reason to open a browser.
pub async fn discover_published(http: &AuthHttp, server: &Url) -> Option<Discovery> {
    discover(http, server, None).await.ok().filter(|d| d.resource_metadata.is_some())
}

/// The server's URL as a resource identifier (RFC 8707 §2, MCP's canonical server URI): no
/// fragment, lowercase scheme and host (the URL parser does that), and no trailing slash on a
/// bare origin.
pub fn canonical_resource(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    let s = url.to_string();
    if url.path() == "/" && url.query().is_none() { s.trim_end_matches('/').to_owned() } else { s }
}

/// The whole discovery for the server at `server` that answered with `challenge` (if any).
pub async fn discover(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&BearerChallenge>,
) -> Result<Discovery, AuthError> {
    require_secure(server)?;
    let expected = canonical_resource(server);
    match resource_metadata(http, server, challenge).await? {
        Some((url, prm)) => {
            check_resource(&expected, &prm.resource)?;
            let issuer = prm
                .authorization_servers
                .first()
                .ok_or_else(|| AuthError::Malformed {
                    url: url.to_string(),
                    detail: "it names no authorization server".into(),
                })?
                .clone();
            let (as_url, auth_server) =
                auth_server_metadata(http, &issuer, true).await?.ok_or_else(|| AuthError::Malformed {
                    url: issuer.clone(),
                    detail: "the authorization server publishes no metadata (RFC 8414 or OpenID discovery)".into(),
                })?;
            check_auth_server(&auth_server)?;
            // The PRM's own identifier, once checked, is what the authorization server knows
            // the resource as.
            let resource = prm.resource.trim_end_matches('/').to_owned();
            let resource = if resource.is_empty() { expected } else { resource };
            Ok(Discovery {
                resource,
                resource_metadata: Some(prm),
                resource_metadata_url: Some(url.to_string()),
                auth_server,
                auth_server_metadata_url: Some(as_url.to_string()),
            })
        }
        None => legacy(http, server, expected).await,
    }
}

/// 2025-03-26: the authorization base URL is the server's origin.
async fn legacy(http: &AuthHttp, server: &Url, resource: String) -> Result<Discovery, AuthError> {
    let origin = server.origin().ascii_serialization();
    // The 2025-03-26 spec places the metadata by the server's origin, not by an issuer, and
    // servers of that era name their issuer as they like (often with a path): it is not checked.
    match auth_server_metadata(http, &origin, false).await? {
        Some((url, auth_server)) => {
            check_auth_server(&auth_server)?;
            Ok(Discovery {
                resource,
                resource_metadata: None,
                resource_metadata_url: None,
                auth_server,
                auth_server_metadata_url: Some(url.to_string()),
            })
        }
        None => {
            let at = |path: &str| format!("{origin}{path}");
            let auth_server = AuthServerMetadata {
                issuer: origin.clone(),
                authorization_endpoint: at("/authorize"),
                token_endpoint: at("/token"),
                registration_endpoint: Some(at("/register")),
                scopes_supported: None,
                // 2025-03-26 made PKCE S256 mandatory for every server, so a server of that era
                // with no metadata to say so still supports it.
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: false,
                authorization_response_iss_parameter_supported: false,
            };
            Ok(Discovery {
                resource,
                resource_metadata: None,
                resource_metadata_url: None,
                auth_server,
                auth_server_metadata_url: None,
            })
        }
    }
}

/// The challenge's `resource_metadata` when there is one, else the well-known URIs, path-aware
/// first. `None` when the server has none at all.
async fn resource_metadata(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&BearerChallenge>,
) -> Result<Option<(Url, ResourceMetadata)>, AuthError> {
    let mut candidates = Vec::new();
    if let Some(s) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        // Relative references are resolved against the server, as a browser would.
        let url = server
            .join(s)
            .map_err(|e| AuthError::BadUrl { url: s.chars().take(200).collect(), detail: e.to_string() })?;
        require_secure(&url)?;
        candidates.push(url);
    }
    let path = server.path().trim_end_matches('/');
    let origin = server.origin().ascii_serialization();
    if !path.is_empty() {
        candidates.push(parse(&format!("{origin}/.well-known/oauth-protected-resource{path}"))?);
    }
    candidates.push(parse(&format!("{origin}/.well-known/oauth-protected-resource"))?);
    for url in candidates {
        if let Fetched::Json(value) = http.get_document(&url).await? {
            let prm: ResourceMetadata = from_value(&url, value)?;
            return Ok(Some((url, prm)));
        }
    }
    Ok(None)
}

/// RFC 8414 §3.1 path insertion, then OpenID Connect Discovery, in the MCP spec's order.
pub fn auth_server_metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

async fn auth_server_metadata(
    http: &AuthHttp,
    issuer: &str,
    check_issuer: bool,
) -> Result<Option<(Url, AuthServerMetadata)>, AuthError> {
    let issuer_url = secure_url(issuer)?;
    for candidate in auth_server_metadata_urls(&issuer_url) {
        let url = parse(&candidate)?;
        if let Fetched::Json(value) = http.get_document(&url).await? {
            let metadata: AuthServerMetadata = from_value(&url, value)?;
            // RFC 8414 §3.3: the document must be about the issuer it was looked up for. One
            // trailing slash is forgiven: URL parsers add it to a bare origin.
            if check_issuer && metadata.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
                return Err(AuthError::IssuerMismatch { expected: issuer.to_owned(), got: shown(&metadata.issuer) });
            }
            return Ok(Some((url, metadata)));
        }
    }
    Ok(None)
}

fn check_auth_server(m: &AuthServerMetadata) -> Result<(), AuthError> {
    if !m.code_challenge_methods_supported.as_ref().is_some_and(|v| v.iter().any(|s| s == "S256")) {
        return Err(AuthError::NoPkce { issuer: m.issuer.clone() });
    }
    secure_url(&m.authorization_endpoint)?;
    secure_url(&m.token_endpoint)?;
    if let Some(r) = &m.registration_endpoint {
        secure_url(r)?;
    }
    Ok(())
}

/// The metadata's resource must be the server, or a resource the server's URL lies under (same
/// origin, a path prefix at a segment boundary), as RFC 9728 §3.3 and §7.3 mean it.
fn check_resource(expected: &str, got: &str) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch { expected: expected.to_owned(), got: shown(got) };
    let (Ok(e), Ok(g)) = (Url::parse(expected), Url::parse(got)) else { return Err(mismatch()) };
    if e.origin() != g.origin() || g.fragment().is_some() {
        return Err(mismatch());
    }
    let ep = e.path().trim_end_matches('/');
    let gp = g.path().trim_end_matches('/');
    let under = ep == gp || gp.is_empty() || ep.strip_prefix(gp).is_some_and(|rest| rest.starts_with('/'));
    if under { Ok(()) } else { Err(mismatch()) }
}

/// A server's string, fit for a message: short, with no control characters.
fn shown(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(200).collect()
}

fn parse(s: &str) -> Result<Url, AuthError> {
    Url::parse(s).map_err(|e| AuthError::BadUrl { url: s.to_owned(), detail: e.to_string() })
}

fn from_value<T: serde::de::DeserializeOwned>(url: &Url, value: Value) -> Result<T, AuthError> {
    serde_json::from_value(value).map_err(|e| AuthError::Malformed { url: url.to_string(), detail: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_resource_drops_the_fragment_and_a_bare_slash() {
        let u = |s: &str| Url::parse(s).expect("url");
        assert_eq!(canonical_resource(&u("HTTPS://MCP.Example.com/")), "https://mcp.example.com");
        assert_eq!(canonical_resource(&u("https://mcp.example.com:8443/mcp#x")), "https://mcp.example.com:8443/mcp");
    }

    #[test]
    fn metadata_urls_follow_the_spec_order() {
        let u = |s: &str| Url::parse(s).expect("url");
        assert_eq!(
            auth_server_metadata_urls(&u("https://auth.example.com/tenant1")),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            auth_server_metadata_urls(&u("https://auth.example.com")),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_resource_for_another_server_or_path_is_refused() {
        assert!(check_resource("https://a.example/mcp", "https://a.example/mcp").is_ok());
        assert!(check_resource("https://a.example/mcp", "https://a.example").is_ok());
        assert!(check_resource("https://a.example/team/mcp", "https://a.example/team").is_ok());
        assert!(check_resource("https://a.example/mcp", "https://b.example/mcp").is_err());
        assert!(check_resource("https://a.example/mcp", "http://a.example/mcp").is_err());
        assert!(check_resource("https://a.example/mcpx", "https://a.example/mcp").is_err());
        assert!(check_resource("https://a.example/mcp", "https://a.example/other").is_err());
        assert!(check_resource("https://a.example/mcp", "not a url").is_err());
    }

    #[test]
    fn plain_http_is_refused_except_on_loopback() {
        assert!(secure_url("http://auth.example.com/token").is_err());
        assert!(secure_url("http://127.0.0.1:9/token").is_ok());
        assert!(secure_url("http://[::1]:9/token").is_ok());
        assert!(secure_url("http://localhost/x").is_ok());
        assert!(secure_url("ftp://127.0.0.1/x").is_err());
        assert!(secure_url("https://auth.example.com/token").is_ok());
    }
}
