//! The whole sign-in against a strict authorization server on loopback, with the browser step
//! done by a `$BROWSER` script that follows the redirect to the loopback listener: registration,
//! the code flow with PKCE, refresh, step-up, and what the user sees when it goes wrong.

#[path = "support/oauth_support.rs"]
mod oauth_support;

use std::sync::Arc;
use std::time::Duration;

use oauth_support::{AuthServer, browser_options, sign_in_from_401};
use serde_json::json;
use taskdeck_client::auth::{
    AuthError, AuthHttp, BearerChallenge, ClientConfig, ClientOrigin, FileStore, Secret, SignInOptions,
    TokenAuthMethod, TokenStore, authorization_for, open_with_browser_var, refresh, sign_in,
};

fn access(auth: &taskdeck_client::auth::StoredAuth) -> String {
    auth.tokens.as_ref().expect("tokens").access_token.expose().to_owned()
}

#[tokio::test]
async fn signing_in_through_the_browser_registers_taskdeck_and_the_token_opens_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("browser.log");
    let server = AuthServer::start(json!({})).await;
    let options = browser_options(ClientConfig::default(), &seen, "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    let stored = &signed.stored;
    assert_eq!(stored.client.origin, ClientOrigin::Dynamic);
    assert_eq!(stored.client.auth_method, TokenAuthMethod::None);
    assert!(stored.client.client_id.starts_with("dyn-"));
    assert_eq!(stored.resource, format!("{}/mcp", server.base));
    assert_eq!(stored.requested_scopes, vec!["mcp:read"], "the metadata's scopes_supported, with no challenge scope");
    assert_eq!(server.call("/mcp", Some(&access(stored))).await.0, 200);
    assert!(server.refusals().await.is_empty(), "{:?}", server.refusals().await);
    let page = std::fs::read_to_string(&seen).expect("the browser ran");
    assert!(page.contains("callback 200 Taskdeck: Sign-in received."), "{page}");
}

#[tokio::test]
async fn a_callback_with_another_state_is_ignored_and_the_real_one_still_signs_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("browser.log");
    let server = AuthServer::start(json!({})).await;
    let options = browser_options(ClientConfig::default(), &seen, "--wrong-state-first");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert_eq!(server.call("/mcp", Some(&access(&signed.stored))).await.0, 200);
    let page = std::fs::read_to_string(&seen).expect("the browser ran");
    assert!(page.contains("forged 400 Taskdeck: This is not the sign-in Taskdeck is waiting for"), "{page}");
    assert!(page.contains("callback 200"), "{page}");
    // The forged code never reached the token endpoint.
    assert!(server.refusals().await.is_empty(), "{:?}", server.refusals().await);
}

#[tokio::test]
async fn the_challenge_scope_is_what_is_asked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"challenge_scope": "mcp:tasks mcp:read"})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert_eq!(signed.stored.requested_scopes, vec!["mcp:tasks", "mcp:read"]);
    assert_eq!(signed.stored.tokens.as_ref().expect("tokens").scopes, vec!["mcp:tasks", "mcp:read"]);
}

#[tokio::test]
async fn offline_access_is_asked_for_only_where_the_authorization_server_lists_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"as_scopes": ["mcp:read", "offline_access"]})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert_eq!(signed.stored.requested_scopes, vec!["mcp:read", "offline_access"]);
    // Without it listed, the first test's sign-in asks for `mcp:read` alone.
}

#[tokio::test]
async fn a_2025_03_26_server_signs_in_at_its_default_endpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"legacy": true})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert!(signed.discovery.uses_default_endpoints());
    assert_eq!(server.call("/mcp", Some(&access(&signed.stored))).await.0, 200);
    let paths = server.paths().await;
    for p in ["/register", "/authorize", "/token"] {
        assert!(paths.iter().any(|x| x == p), "{p} in {paths:?}");
    }
}

#[tokio::test]
async fn a_preregistered_client_with_a_secret_authenticates_the_way_the_server_takes() {
    for (methods, expected) in [
        (json!(["client_secret_basic", "client_secret_post"]), TokenAuthMethod::ClientSecretBasic),
        (json!(["client_secret_post"]), TokenAuthMethod::ClientSecretPost),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let method = expected;
        let server = AuthServer::start(json!({
            "auth_methods": methods,
            "registration": false,
            "clients": {"taskdeck-pre": {"secret": "s3cr:et &+", "method": method.as_str()}},
        }))
        .await;
        let client = ClientConfig {
            client_id: Some("taskdeck-pre".into()),
            client_secret: Some(Secret::new("s3cr:et &+")),
            ..ClientConfig::default()
        };
        let options = browser_options(client, &dir.path().join("b.log"), "");
        let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
        assert_eq!(signed.stored.client.auth_method, expected);
        assert_eq!(signed.stored.client.origin, ClientOrigin::Preregistered);
        assert_eq!(server.call("/mcp", Some(&access(&signed.stored))).await.0, 200);
        assert!(!server.paths().await.iter().any(|p| p == "/register"));
    }
}

#[tokio::test]
async fn a_fixed_redirect_port_from_the_config_is_the_redirect_uri() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let server = AuthServer::start(json!({
        "registration": false,
        "clients": {"fixed": {"method": "none", "redirect_uris": [redirect]}},
    }))
    .await;
    let client = ClientConfig { client_id: Some("fixed".into()), redirect_port: Some(port), ..ClientConfig::default() };
    let options = browser_options(client, &dir.path().join("b.log"), "");
    sign_in_from_401(&server, None, &options).await.expect("signed in on the fixed port");
}

#[tokio::test]
async fn without_registration_or_client_id_the_user_is_told_to_configure_one() {
    let server = AuthServer::start(json!({"registration": false})).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let err = sign_in_from_401(&server, None, &options).await.expect_err("no client");
    assert!(matches!(err, AuthError::NoRegistration { .. }), "{err}");
    assert!(err.to_string().contains("oauth.clientId"), "{err}");
}

#[tokio::test]
async fn refresh_renews_the_access_token_and_keeps_the_scopes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"expires_in": 1})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let mut stored = sign_in_from_401(&server, None, &options).await.expect("signed in").stored;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(server.call("/mcp", Some(&access(&stored))).await.0, 401, "the first token expired");
    let http = AuthHttp::new().expect("http");
    let renewed = refresh(&http, &stored).await.expect("refreshed");
    assert_ne!(renewed.access_token.expose(), access(&stored));
    assert_ne!(renewed.refresh_token, stored.tokens.as_ref().expect("tokens").refresh_token, "rotated");
    assert_eq!(renewed.scopes, vec!["mcp:read"]);
    assert_eq!(server.call("/mcp", Some(renewed.access_token.expose())).await.0, 200);
    // The rotated refresh token works once more; the old one does not.
    let old = stored.clone();
    stored.tokens = Some(renewed);
    refresh(&http, &stored).await.expect("refreshed again");
    let err = refresh(&http, &old).await.expect_err("a used refresh token");
    assert!(err.needs_sign_in(), "{err}");
}

#[tokio::test]
async fn a_refused_refresh_says_sign_in_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let stored = sign_in_from_401(&server, None, &options).await.expect("signed in").stored;
    server.revoke_refresh_tokens().await;
    let err = refresh(&AuthHttp::new().expect("http"), &stored).await.expect_err("revoked");
    assert!(matches!(err, AuthError::SignInAgain { .. }), "{err}");
    assert!(err.to_string().contains("sign in again"), "{err}");
    assert!(err.to_string().contains("invalid_grant"), "{err}");
}

#[tokio::test]
async fn insufficient_scope_steps_up_to_the_union_of_old_and_new_scopes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let first = sign_in_from_401(&server, None, &options).await.expect("signed in").stored;
    let (status, header) = server.call("/mcp/write", Some(&access(&first))).await;
    assert_eq!(status, 403);
    let challenge = BearerChallenge::from_header(&header.expect("challenge")).expect("bearer");
    assert!(challenge.is_insufficient_scope());
    let http = AuthHttp::new().expect("http");
    let second =
        sign_in(&http, &server.url(), Some(&challenge), Some(&first), &options).await.expect("stepped up").stored;
    assert_eq!(second.requested_scopes, vec!["mcp:read", "mcp:write"]);
    assert_eq!(second.client.client_id, first.client.client_id, "the registration is reused");
    assert_eq!(server.call("/mcp/write", Some(&access(&second))).await.0, 200);
    assert_eq!(server.call("/mcp", Some(&access(&second))).await.0, 200);
}

#[tokio::test]
async fn an_answer_from_another_issuer_is_refused_before_its_code_is_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"wrong_iss": true})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let err = sign_in_from_401(&server, None, &options).await.expect_err("mix-up");
    assert!(matches!(err, AuthError::WrongIssuer { .. }), "{err}");
    assert!(!server.log().await.iter().any(|e| e["path"] == "/token"), "the code never went to a token endpoint");
}

#[tokio::test]
async fn the_right_issuer_in_the_answer_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"iss": true})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    sign_in_from_401(&server, None, &options).await.expect("signed in");
}

#[tokio::test]
async fn a_browser_that_never_comes_back_times_out_with_a_clear_message() {
    let server = AuthServer::start(json!({})).await;
    let mut options = SignInOptions::new(ClientConfig::default());
    options.open_browser = Arc::new(|url: &str| open_with_browser_var(Some("true"), url));
    options.timeout = Duration::from_secs(1);
    let err = sign_in_from_401(&server, None, &options).await.expect_err("timed out");
    assert!(matches!(err, AuthError::TimedOut { .. }), "{err}");
    assert!(err.to_string().contains("browser"), "{err}");
}

#[tokio::test]
async fn a_browser_that_cannot_start_gives_the_address_to_open_by_hand() {
    let server = AuthServer::start(json!({})).await;
    let mut options = SignInOptions::new(ClientConfig::default());
    options.open_browser = Arc::new(|url: &str| open_with_browser_var(Some("/nonexistent/taskdeck-browser"), url));
    let err = sign_in_from_401(&server, None, &options).await.expect_err("no browser");
    assert!(matches!(err, AuthError::Browser { .. }), "{err}");
    assert!(err.to_string().contains("/authorize?"), "{err}");
}

#[tokio::test]
async fn the_sign_in_file_is_readable_by_its_user_only_and_holds_no_secret_in_debug() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let stored = sign_in_from_401(&server, None, &options).await.expect("signed in").stored;
    let store = FileStore::in_dir(&dir.path().join("data"));
    store.save("remote", &stored).expect("saved");
    assert_eq!(store.load("remote").expect("loaded"), Some(stored.clone()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path()).expect("file").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("data")).expect("dir").permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
    }
    let shown = format!("{stored:?} {store:?}");
    assert!(!shown.contains(&access(&stored)), "{shown}");
    assert!(store.describe().contains("readable by you only"));
    store.delete("remote").expect("deleted");
    assert_eq!(store.load("remote").expect("loaded"), None);
}

#[tokio::test]
async fn a_sign_in_kept_in_the_store_opens_the_server_after_a_restart_and_renews_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"expires_in": 2})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let stored = sign_in_from_401(&server, None, &options).await.expect("signed in").stored;
    FileStore::in_dir(dir.path()).save("remote", &stored).expect("saved");

    // A new process: only the store is left.
    let store = FileStore::in_dir(dir.path());
    let mut loaded = store.load("remote").expect("loaded").expect("the sign-in");
    let http = AuthHttp::new().expect("http");
    let (header, changed) = authorization_for(&http, &mut loaded, Duration::from_secs(0)).await.expect("header");
    assert!(!changed, "a fresh token is used as it is");
    let token = header.expose().strip_prefix("Bearer ").expect("bearer").to_owned();
    assert_eq!(server.call("/mcp", Some(&token)).await.0, 200);

    // Within the margin of its expiry, the next request's header comes from a refresh.
    let (header, changed) = authorization_for(&http, &mut loaded, Duration::from_secs(60)).await.expect("header");
    assert!(changed);
    store.save("remote", &loaded).expect("saved");
    let renewed = header.expose().strip_prefix("Bearer ").expect("bearer").to_owned();
    assert_ne!(renewed, token);
    assert_eq!(server.call("/mcp", Some(&renewed)).await.0, 200);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(server.call("/mcp", Some(&token)).await.0, 401, "the first token expired");
    let after = store.load("remote").expect("loaded").expect("kept");
    assert_eq!(after.tokens.as_ref().map(|t| t.access_token.expose().to_owned()), Some(renewed));
}

#[tokio::test]
async fn a_2025_03_26_server_with_metadata_at_its_origin_uses_it_whatever_issuer_it_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = AuthServer::start(json!({"legacy": true, "legacy_metadata": true, "iss": true})).await;
    let options = browser_options(ClientConfig::default(), &dir.path().join("b.log"), "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert!(!signed.discovery.uses_default_endpoints());
    assert_eq!(signed.discovery.issuer(), format!("{}/oauth", server.base));
    assert_eq!(server.call("/mcp", Some(&access(&signed.stored))).await.0, 200);
}

#[tokio::test]
async fn a_client_id_metadata_document_is_the_client_where_the_server_takes_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = "https://taskdeck.example/oauth/client.json";
    let server = AuthServer::start(json!({"cimd": doc})).await;
    let client = ClientConfig { metadata_document: Some(doc.into()), ..ClientConfig::default() };
    let options = browser_options(client, &dir.path().join("b.log"), "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert_eq!(signed.stored.client.client_id, doc);
    assert_eq!(signed.stored.client.origin, ClientOrigin::MetadataDocument);
    assert!(!server.paths().await.iter().any(|p| p == "/register"), "no registration");
    assert_eq!(server.call("/mcp", Some(&access(&signed.stored))).await.0, 200);

    // A server that does not say it takes them gets a registration instead.
    let server = AuthServer::start(json!({})).await;
    let client = ClientConfig { metadata_document: Some(doc.into()), ..ClientConfig::default() };
    let options = browser_options(client, &dir.path().join("c.log"), "");
    let signed = sign_in_from_401(&server, None, &options).await.expect("signed in");
    assert_eq!(signed.stored.client.origin, ClientOrigin::Dynamic);
}
