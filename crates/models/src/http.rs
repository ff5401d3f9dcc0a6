//! One POST to a provider, with what an untrusted answer needs: a timeout for the whole exchange
//! (a body that never ends included), a bounded body, no redirects (a redirect could carry the
//! key's header to another host), and each failure typed and naming the provider, never the key.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;
use taskdeck_client::auth::Secret;
use taskdeck_protocol::limits;

use crate::ModelError;

/// No answer is read past this: the same bound as one frame from a server.
pub const MAX_BODY_BYTES: usize = taskdeck_protocol::framing::DEFAULT_MAX_FRAME;

/// A request to send: where, with which headers (the key among them), what.
pub struct Post<'a> {
    pub provider: &'a str,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
    pub timeout: Duration,
    /// Scrubbed out of any text the provider sends back.
    pub key: Option<&'a Secret>,
}

fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(15)))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

/// Sends the request; the answer's JSON on a 2xx.
pub async fn post_json(post: Post<'_>) -> Result<Value, ModelError> {
    let provider = post.provider.to_owned();
    let secs = post.timeout.as_secs().max(1);
    let unreachable = |detail: String| ModelError::Unreachable { provider: provider.clone(), detail };
    let client = client(post.timeout).map_err(&unreachable)?;
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &post.headers {
        let mut value = HeaderValue::from_str(value).map_err(|_| ModelError::Config {
            provider: provider.clone(),
            detail: format!("the {name} header cannot hold the value given (is the key printable?)"),
        })?;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static(name), value);
    }
    let body = serde_json::to_vec(&post.body).map_err(|e| ModelError::Request(e.to_string()))?;
    let timed_out = || ModelError::Timeout { provider: provider.clone(), secs };
    let sent = client.post(&post.url).headers(headers).body(body).send().await;
    let mut response = match sent {
        Ok(r) => r,
        Err(e) if e.is_timeout() => return Err(timed_out()),
        // reqwest's text names the URL, never a header.
        Err(e) => return Err(unreachable(without_source_chain(&e))),
    };
    let status = response.status();
    if response.content_length().is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ModelError::TooLarge { provider, limit: MAX_BODY_BYTES });
    }
    let retry_after =
        response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(ModelError::TooLarge { provider, limit: MAX_BODY_BYTES });
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) if e.is_timeout() => return Err(timed_out()),
            Err(e) => return Err(unreachable(format!("the answer broke off: {}", without_source_chain(&e)))),
        }
    }
    if !status.is_success() {
        let message = error_message(&bytes, post.key);
        return Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                ModelError::BadKey { provider, status: status.as_u16() }
            }
            StatusCode::TOO_MANY_REQUESTS => ModelError::RateLimited { provider, retry_after_secs: retry_after },
            s if s.is_server_error() => ModelError::Server { provider, status: s.as_u16(), message },
            s => ModelError::Refused { provider, status: s.as_u16(), message },
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| ModelError::Malformed { provider, detail: format!("not JSON: {e}") })
}

fn without_source_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    limits::error_text(text)
}

/// A provider's error text: `error.message` (both APIs) or the body, cut, with the key scrubbed
/// in case a proxy echoes the request.
fn error_message(bytes: &[u8], key: Option<&Secret>) -> String {
    let text = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v
            .pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string()),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    };
    let text: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let text = match key {
        Some(k) if !k.expose().is_empty() => text.replace(k.expose(), "<redacted>"),
        _ => text,
    };
    let text = limits::error_text(text.trim().to_owned());
    if text.is_empty() { "no reason given".into() } else { text }
}

/// `{base}/{path}` with exactly one slash between.
pub fn join(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echoed_key_never_reaches_the_error_text() {
        let key = Secret::new("sk-live-secret");
        let m = error_message(br#"{"error":{"message":"bad key sk-live-secret\n"}}"#, Some(&key));
        assert_eq!(m, "bad key <redacted>");
    }

    #[test]
    fn base_urls_join_with_one_slash() {
        assert_eq!(join("http://h/v1/", "/chat/completions"), "http://h/v1/chat/completions");
        assert_eq!(join("http://h", "v1/messages"), "http://h/v1/messages");
    }
}
