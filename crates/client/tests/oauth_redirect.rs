//! The loopback redirect listener, spoken to as any program on the machine could: it takes the
//! one callback with its `state` and answers everything else without acting on it.

use std::time::Duration;

use taskdeck_client::auth::{AuthError, Loopback};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn raw(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn the_listener_answers_junk_and_other_paths_and_takes_only_the_right_callback() {
    let loopback = Loopback::bind(None).await.expect("bound");
    let port = loopback.port();
    assert_eq!(loopback.redirect_uri(), format!("http://127.0.0.1:{port}/callback"));
    let waiting = tokio::spawn(loopback.wait("the-state", Duration::from_secs(20)));

    // A connection that never says anything does not hold the listener up.
    let _idle = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    assert!(raw(port, b"GET /favicon.ico HTTP/1.1\r\n\r\n").await.starts_with("HTTP/1.1 404"));
    assert!(raw(port, b"POST /callback?code=c&state=the-state HTTP/1.1\r\n\r\n").await.starts_with("HTTP/1.1 404"));
    let forged = raw(port, b"GET /callback?code=forged&state=other HTTP/1.1\r\n\r\n").await;
    assert!(forged.starts_with("HTTP/1.1 400") && forged.contains("not the sign-in"), "{forged}");
    assert!(raw(port, b"GET /callback?state=the-state HTTP/1.1\r\n\r\n").await.starts_with("HTTP/1.1 400"));
    let huge = format!("GET /callback?{} HTTP/1.1\r\n", "a".repeat(64 * 1024));
    let _ = raw(port, huge.as_bytes()).await;
    let _ = raw(port, &[0xff, 0xfe, b'\r', b'\n', b'\r', b'\n']).await;
    assert!(!waiting.is_finished(), "nothing so far was the callback");

    let page =
        raw(port, b"GET /callback?code=the%2Bcode&state=the-state&iss=https%3A%2F%2Fas.example HTTP/1.1\r\n\r\n").await;
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("text/plain"), "{page}");
    let callback = waiting.await.expect("joined").expect("the callback");
    assert_eq!(callback.code.as_ref().map(|c| c.expose().to_owned()), Some("the+code".to_owned()));
    assert_eq!(callback.iss.as_deref(), Some("https://as.example"));
    // Only one callback is taken: the port is closed after it.
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
}

#[tokio::test]
async fn an_error_from_the_authorization_server_comes_back_as_an_error() {
    let loopback = Loopback::bind(None).await.expect("bound");
    let port = loopback.port();
    let waiting = tokio::spawn(loopback.wait("s", Duration::from_secs(20)));
    let page =
        raw(port, b"GET /callback?error=access_denied&error_description=no+thanks&state=s HTTP/1.1\r\n\r\n").await;
    assert!(page.contains("did not complete"), "{page}");
    let callback = waiting.await.expect("joined").expect("the callback");
    assert_eq!(callback.error.as_deref(), Some("access_denied"));
    assert_eq!(callback.error_description.as_deref(), Some("no thanks"));
    assert!(callback.code.is_none());
}

#[tokio::test]
async fn a_port_in_use_is_reported_with_its_number() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let err = Loopback::bind(Some(port)).await.expect_err("in use");
    assert!(matches!(err, AuthError::Listener { .. }), "{err}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");
}
