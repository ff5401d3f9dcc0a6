//! The loopback redirect listener (RFC 8252 §7.3): one port on 127.0.0.1 that waits for the
//! browser to come back with the authorization response.
//!
//! Anything can connect to a loopback port, so the listener believes only a request for
//! `/callback` that carries the `state` it is waiting for; everything else gets a short answer
//! and is otherwise ignored. Each connection is bounded in size and time, and the whole wait in
//! time.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::AuthError;
use super::tokens::Secret;

/// The path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";
const MAX_REQUEST_HEAD: usize = 16 * 1024;
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CONNECTIONS: usize = 16;

/// What the authorization server sent back through the browser (with the right `state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    pub code: Option<Secret>,
    /// RFC 9207's `iss`, checked by the flow before the code is used.
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// A bound listener, not yet waiting.
#[derive(Debug)]
pub struct Loopback {
    listener: TcpListener,
    port: u16,
}

impl Loopback {
    /// Binds 127.0.0.1:`port`, or an ephemeral port when `None`.
    pub async fn bind(port: Option<u16>) -> Result<Loopback, AuthError> {
        let wanted = port.unwrap_or(0);
        let listener = TcpListener::bind(("127.0.0.1", wanted))
            .await
            .map_err(|e| AuthError::Listener { port: wanted, detail: e.to_string() })?;
        let port =
            listener.local_addr().map_err(|e| AuthError::Listener { port: wanted, detail: e.to_string() })?.port();
        Ok(Loopback { listener, port })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/callback`: an IP literal, not `localhost`, as RFC 8252 §7.3 advises.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits for the one callback with `state`, answering the browser, for at most `timeout`.
    pub async fn wait(self, state: &str, timeout: Duration) -> Result<Callback, AuthError> {
        let (tx, mut rx) = mpsc::channel::<Callback>(1);
        let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let state = state.to_owned();
        let accept = async {
            loop {
                tokio::select! {
                    got = rx.recv() => {
                        if let Some(callback) = got {
                            return callback;
                        }
                    }
                    accepted = self.listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        // Over the limit, a connection is dropped unanswered: it is not the browser.
                        let Ok(permit) = slots.clone().try_acquire_owned() else { continue };
                        let tx = tx.clone();
                        let state = state.clone();
                        tokio::spawn(async move {
                            let _permit = permit;
                            if let Ok(Some(callback)) = tokio::time::timeout(CONNECTION_TIMEOUT, serve(stream, &state)).await {
                                let _ = tx.try_send(callback);
                            }
                        });
                    }
                }
            }
        };
        tokio::time::timeout(timeout, accept).await.map_err(|_| AuthError::TimedOut { seconds: timeout.as_secs() })
    }
}

/// Answers one connection; `Some` when it was the callback with the right state.
async fn serve(mut stream: TcpStream, state: &str) -> Option<Callback> {
    let head = read_head(&mut stream).await?;
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", "Nothing here.").await;
        return None;
    }
    let params = parse_query(query);
    let get = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    if get("state").as_deref() != Some(state) {
        respond(&mut stream, "400 Bad Request", "This is not the sign-in Taskdeck is waiting for. Nothing was done.")
            .await;
        return None;
    }
    let callback = Callback {
        code: get("code").filter(|c| !c.is_empty()).map(Secret::new),
        iss: get("iss"),
        error: get("error"),
        error_description: get("error_description"),
    };
    if callback.code.is_none() && callback.error.is_none() {
        respond(&mut stream, "400 Bad Request", "The sign-in answer has neither a code nor an error.").await;
        return None;
    }
    let page = if callback.error.is_some() {
        "The sign-in did not complete. You can close this tab and return to Taskdeck."
    } else {
        // The code is not exchanged yet, so this page cannot promise the sign-in worked.
        "Sign-in received. You can close this tab and return to Taskdeck."
    };
    respond(&mut stream, "200 OK", page).await;
    Some(callback)
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buf.len() > MAX_REQUEST_HEAD {
            return None;
        }
    }
    String::from_utf8(buf).ok()
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("Taskdeck: {text}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// `application/x-www-form-urlencoded` pairs, percent-decoded (invalid UTF-8 replaced).
pub(crate) fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .take(64)
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_decoded_and_bad_escapes_kept() {
        let q = parse_query("code=a%2Fb+c&state=%zz&iss=https%3A%2F%2Fas.example&x=%4");
        assert_eq!(q[0], ("code".into(), "a/b c".into()));
        assert_eq!(q[1], ("state".into(), "%zz".into()));
        assert_eq!(q[2], ("iss".into(), "https://as.example".into()));
        assert_eq!(q[3], ("x".into(), "%4".into()));
    }
}
