//! The few HTTP exchanges a sign-in makes: metadata documents, registration and the token
//! endpoint. Every answer is bounded in size and time, and a redirect is followed only within
//! the same origin: a metadata document that sends the client elsewhere is refused, not obeyed.

use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde_json::Value;

use super::AuthError;

/// No metadata document, registration or token answer is anywhere near this.
pub const MAX_BODY: usize = 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_REDIRECTS: usize = 5;

/// An HTTP client for sign-in requests.
#[derive(Debug, Clone)]
pub struct AuthHttp {
    client: reqwest::Client,
    /// Sent with discovery requests, as the 2025-03-26 spec asks, when the era is known.
    protocol_version: Option<String>,
}

/// What a GET of a document found.
pub(crate) enum Fetched {
    /// 404 and the other answers that mean "not here" (so the next candidate is tried).
    Missing,
    Json(Value),
}

impl AuthHttp {
    pub fn new() -> Result<AuthHttp, AuthError> {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("Taskdeck/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let same_origin =
                    attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
                if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if same_origin {
                    attempt.follow()
                } else {
                    // Stopping hands the 3xx back, which becomes `AuthError::Redirected`.
                    attempt.stop()
                }
            }))
            .build()
            .map_err(|e| AuthError::Unreachable {
                url: "the network (no HTTP client)".into(),
                detail: e.to_string(),
            })?;
        Ok(AuthHttp { client, protocol_version: None })
    }

    /// Discovery requests carry `MCP-Protocol-Version: version`.
    pub fn with_protocol_version(mut self, version: impl Into<String>) -> AuthHttp {
        self.protocol_version = Some(version.into());
        self
    }

    /// A JSON document, or `Missing` when the server says it has none there.
    pub(crate) async fn get_document(&self, url: &Url) -> Result<Fetched, AuthError> {
        let mut request = self.client.get(url.clone()).header("Accept", "application/json");
        if let Some(v) = &self.protocol_version {
            request = request.header("MCP-Protocol-Version", v);
        }
        let response = request.send().await.map_err(|e| unreachable(url, &e))?;
        let status = response.status();
        check_redirect(url, &response)?;
        if matches!(status.as_u16(), 400 | 401 | 403 | 404 | 405 | 406 | 410) {
            return Ok(Fetched::Missing);
        }
        if !status.is_success() {
            return Err(AuthError::Status { url: url.to_string(), status: status.as_u16() });
        }
        let body = read_bounded(url, response).await?;
        let value = serde_json::from_slice::<Value>(&body)
            .map_err(|e| AuthError::Malformed { url: url.to_string(), detail: format!("not JSON: {e}") })?;
        if !value.is_object() {
            return Err(AuthError::Malformed { url: url.to_string(), detail: "not a JSON object".into() });
        }
        Ok(Fetched::Json(value))
    }

    /// A form POST (the token endpoint), with HTTP Basic client authentication when given.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<(StatusCode, Value), AuthError> {
        let mut request = self.client.post(url.clone()).header("Accept", "application/json").form(form);
        if let Some((user, password)) = basic {
            request = request.header("Authorization", basic_authorization(user, password));
        }
        self.answer(url, request).await
    }

    /// A JSON POST (dynamic client registration).
    pub(crate) async fn post_json(&self, url: &Url, body: &Value) -> Result<(StatusCode, Value), AuthError> {
        let request = self
            .client
            .post(url.clone())
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .body(body.to_string());
        self.answer(url, request).await
    }

    async fn answer(&self, url: &Url, request: reqwest::RequestBuilder) -> Result<(StatusCode, Value), AuthError> {
        let response = request.send().await.map_err(|e| unreachable(url, &e))?;
        check_redirect(url, &response)?;
        let status = response.status();
        let body = read_bounded(url, response).await?;
        // Error answers may be HTML; they are still answers, with an empty object for a body.
        let value = serde_json::from_slice::<Value>(&body).ok().filter(Value::is_object);
        match value {
            Some(v) => Ok((status, v)),
            None if status.is_success() => {
                Err(AuthError::Malformed { url: url.to_string(), detail: "the answer is not a JSON object".into() })
            }
            None => Ok((status, Value::Object(Default::default()))),
        }
    }
}

/// RFC 6749 §2.3.1: the id and the secret are form-encoded before they are joined and encoded.
fn basic_authorization(user: &str, password: &str) -> String {
    use base64::Engine;
    let encode = |s: &str| -> String {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-._*".contains(&b) {
                out.push(b as char);
            } else if b == b' ' {
                out.push('+');
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    let raw = format!("{}:{}", encode(user), encode(password));
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(raw))
}

fn check_redirect(url: &Url, response: &reqwest::Response) -> Result<(), AuthError> {
    if response.status().is_redirection() {
        let to = response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .map(|l| l.chars().take(200).collect())
            .unwrap_or_else(|| "nowhere".to_owned());
        return Err(AuthError::Redirected { url: url.to_string(), to });
    }
    Ok(())
}

fn unreachable(url: &Url, e: &reqwest::Error) -> AuthError {
    let detail = if e.is_timeout() {
        "no answer in time".to_owned()
    } else if e.is_redirect() {
        "too many redirects".to_owned()
    } else {
        // reqwest's own text names the URL; the innermost cause says why.
        let mut source: &dyn std::error::Error = e;
        while let Some(s) = source.source() {
            source = s;
        }
        source.to_string()
    };
    AuthError::Unreachable { url: url.to_string(), detail }
}

async fn read_bounded(url: &Url, mut response: reqwest::Response) -> Result<Vec<u8>, AuthError> {
    if response.content_length().is_some_and(|n| n > MAX_BODY as u64) {
        return Err(AuthError::TooLarge { url: url.to_string(), limit: MAX_BODY });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| unreachable(url, &e))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::TooLarge { url: url.to_string(), limit: MAX_BODY });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// https, or plain http to this machine (RFC 8252 §8.3 loopback; and local test servers).
pub fn require_secure(url: &Url) -> Result<(), AuthError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        _ => Err(AuthError::Insecure { url: url.to_string() }),
    }
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Parses and checks a URL a server handed over.
pub fn secure_url(s: &str) -> Result<Url, AuthError> {
    let url =
        Url::parse(s).map_err(|e| AuthError::BadUrl { url: s.chars().take(200).collect(), detail: e.to_string() })?;
    require_secure(&url)?;
    Ok(url)
}
