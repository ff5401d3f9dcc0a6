//! Which OAuth client Taskdeck is at an authorization server, in the spec's order: the one the
//! config names (pre-registered), a Client ID Metadata Document, one registered before at the
//! same issuer, or a new dynamic registration (RFC 7591).
//!
//! A Client ID Metadata Document is an https URL the authorization server fetches. The desktop
//! app cannot serve one itself (it runs on the user's machine, which no authorization server
//! can reach): the document is static, published on a site of the user's or the project's,
//! listing the loopback redirect URI, and its URL is the config's `oauth.clientMetadataUrl`
//! ([`ClientConfig::metadata_document`]). Without one, CIMD-only servers need a pre-registered
//! `clientId`.

use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::AuthError;
use super::discovery::Discovery;
use super::http::{AuthHttp, secure_url};
use super::tokens::Secret;

/// The `oauth` part of a server's config entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientConfig {
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    /// Scopes to ask for beyond what the server's challenge and metadata say.
    pub scopes: Vec<String>,
    /// The loopback redirect's port, for clients registered with one fixed redirect URI.
    pub redirect_port: Option<u16>,
    /// The https URL of Taskdeck's Client ID Metadata Document, used as the client id by
    /// servers that say `client_id_metadata_document_supported`.
    pub metadata_document: Option<String>,
}

/// RFC 7591 §2 `token_endpoint_auth_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenAuthMethod {
    /// A public client: the client id in the form, no secret.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

impl TokenAuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuthMethod::None => "none",
            TokenAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenAuthMethod::ClientSecretPost => "client_secret_post",
        }
    }

    fn parse(s: &str) -> Option<TokenAuthMethod> {
        match s {
            "none" => Some(TokenAuthMethod::None),
            "client_secret_basic" => Some(TokenAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(TokenAuthMethod::ClientSecretPost),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientOrigin {
    /// From the config.
    Preregistered,
    /// A Client ID Metadata Document's URL.
    MetadataDocument,
    /// From RFC 7591 registration, kept with the tokens.
    Dynamic,
}

/// A client id (and secret) at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    pub auth_method: TokenAuthMethod,
    /// The issuer it belongs to (client ids are per authorization server).
    pub issuer: String,
    /// The redirect URI registered, when registered by Taskdeck (its port is reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    pub origin: ClientOrigin,
}

impl RegisteredClient {
    /// The port of the redirect URI it was registered with, if any.
    pub fn redirect_port(&self) -> Option<u16> {
        reqwest::Url::parse(self.redirect_uri.as_deref()?).ok()?.port()
    }
}

/// `none` for a public client; with a secret, Basic unless the server takes only POST (RFC 8414:
/// an absent list means `client_secret_basic`).
pub fn choose_auth_method(supported: Option<&[String]>, has_secret: bool) -> TokenAuthMethod {
    if !has_secret {
        return TokenAuthMethod::None;
    }
    let offers = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if offers("client_secret_basic") {
        TokenAuthMethod::ClientSecretBasic
    } else if supported.is_some_and(|s| s.iter().any(|x| x == "client_secret_post")) {
        TokenAuthMethod::ClientSecretPost
    } else {
        TokenAuthMethod::ClientSecretBasic
    }
}

/// The client to sign in with: `config`'s, else `previous` if it belongs to this issuer and to
/// `redirect_uri` (when Taskdeck registered it), else `None` (register one).
pub fn reusable_client(
    discovery: &Discovery,
    config: &ClientConfig,
    previous: Option<&RegisteredClient>,
    redirect_uri: &str,
) -> Option<RegisteredClient> {
    if let Some(id) = &config.client_id {
        let supported = discovery.auth_server.token_endpoint_auth_methods_supported.as_deref();
        return Some(RegisteredClient {
            client_id: id.clone(),
            client_secret: config.client_secret.clone(),
            auth_method: choose_auth_method(supported, config.client_secret.is_some()),
            issuer: discovery.issuer().to_owned(),
            redirect_uri: None,
            origin: ClientOrigin::Preregistered,
        });
    }
    if let Some(url) = config.metadata_document.as_deref().filter(|u| is_metadata_document_url(u))
        && discovery.auth_server.client_id_metadata_document_supported
    {
        return Some(RegisteredClient {
            client_id: url.to_owned(),
            client_secret: None,
            auth_method: TokenAuthMethod::None,
            issuer: discovery.issuer().to_owned(),
            redirect_uri: None,
            origin: ClientOrigin::MetadataDocument,
        });
    }
    previous
        .filter(|c| c.origin == ClientOrigin::Dynamic && c.issuer == discovery.issuer())
        .filter(|c| c.redirect_uri.as_deref() == Some(redirect_uri))
        .cloned()
}

/// The draft's rule for a client id URL: https, with a path.
fn is_metadata_document_url(s: &str) -> bool {
    reqwest::Url::parse(s).is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && u.fragment().is_none())
}

/// RFC 7591 registration as a native public client with one loopback redirect URI.
pub async fn register(
    http: &AuthHttp,
    discovery: &Discovery,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<RegisteredClient, AuthError> {
    let issuer = discovery.issuer().to_owned();
    let endpoint = discovery
        .auth_server
        .registration_endpoint
        .as_deref()
        .ok_or_else(|| AuthError::NoRegistration { issuer: issuer.clone() })?;
    let url = secure_url(endpoint)?;
    let supported = discovery.auth_server.token_endpoint_auth_methods_supported.as_deref();
    // A public client when the server takes one; otherwise ask for a secret it will issue.
    let asked = match supported {
        Some(s) if !s.iter().any(|m| m == "none") => {
            if s.iter().any(|m| m == "client_secret_basic") || !s.iter().any(|m| m == "client_secret_post") {
                TokenAuthMethod::ClientSecretBasic
            } else {
                TokenAuthMethod::ClientSecretPost
            }
        }
        _ => TokenAuthMethod::None,
    };
    let mut body = json!({
        "client_name": "Taskdeck",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": asked.as_str(),
        "application_type": "native",
    });
    if !scopes.is_empty() {
        body["scope"] = json!(scopes.join(" "));
    }
    let (status, answer) = http.post_json(&url, &body).await?;
    if !(status == StatusCode::CREATED || status == StatusCode::OK) {
        let detail = match error_of(&answer) {
            Some((e, Some(d))) => format!("{e}: {d} (HTTP {})", status.as_u16()),
            Some((e, None)) => format!("{e} (HTTP {})", status.as_u16()),
            None => format!("HTTP {}", status.as_u16()),
        };
        return Err(AuthError::Registration { detail });
    }
    let client_id = answer
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 4096)
        .ok_or_else(|| AuthError::Registration { detail: "the answer has no client_id".into() })?;
    let client_secret = answer.get("client_secret").and_then(Value::as_str).filter(|s| !s.is_empty()).map(Secret::new);
    let auth_method = answer
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .and_then(TokenAuthMethod::parse)
        .unwrap_or(if client_secret.is_some() { asked } else { TokenAuthMethod::None });
    if auth_method != TokenAuthMethod::None && client_secret.is_none() {
        return Err(AuthError::Registration {
            detail: format!("it chose {} but issued no secret", auth_method.as_str()),
        });
    }
    Ok(RegisteredClient {
        client_id: client_id.to_owned(),
        client_secret,
        auth_method,
        issuer,
        redirect_uri: Some(redirect_uri.to_owned()),
        origin: ClientOrigin::Dynamic,
    })
}

/// An OAuth error answer's `error` and `error_description`, shortened and without control
/// characters, for a message.
pub(crate) fn error_of(answer: &Value) -> Option<(String, Option<String>)> {
    let clean = |s: &str| s.chars().filter(|c| !c.is_control()).take(300).collect::<String>();
    let error = answer.get("error").and_then(Value::as_str).map(clean)?;
    let description = answer.get("error_description").and_then(Value::as_str).map(clean);
    Some((error, description))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_client_uses_none_and_a_secret_prefers_basic() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(choose_auth_method(None, false), TokenAuthMethod::None);
        assert_eq!(choose_auth_method(None, true), TokenAuthMethod::ClientSecretBasic);
        let post = s(&["none", "client_secret_post"]);
        assert_eq!(choose_auth_method(Some(&post), true), TokenAuthMethod::ClientSecretPost);
        let both = s(&["client_secret_post", "client_secret_basic"]);
        assert_eq!(choose_auth_method(Some(&both), true), TokenAuthMethod::ClientSecretBasic);
    }
}
