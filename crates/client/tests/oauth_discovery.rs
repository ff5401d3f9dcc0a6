//! Discovery against a real protected resource and authorization server on loopback: where the
//! metadata is looked for, in which order, and what is refused.

#[path = "support/oauth_support.rs"]
mod oauth_support;

use oauth_support::AuthServer;
use serde_json::json;
use taskdeck_client::auth::{AuthError, AuthHttp, BearerChallenge, discover};

fn http() -> AuthHttp {
    AuthHttp::new().expect("http")
}

#[tokio::test]
async fn discovery_follows_the_resource_metadata_url_of_the_challenge() {
    let server = AuthServer::start(json!({})).await;
    let challenge = server.challenge().await;
    let found = discover(&http(), &server.url(), Some(&challenge)).await.expect("discovery");
    assert_eq!(found.resource, format!("{}/mcp", server.base));
    assert_eq!(found.issuer(), server.base);
    assert_eq!(found.resource_metadata_url.as_deref(), challenge.resource_metadata.as_deref());
    assert_eq!(found.auth_server.token_endpoint, format!("{}/token", server.base));
    assert!(!found.uses_default_endpoints());
}

#[tokio::test]
async fn without_a_metadata_url_the_well_known_uris_are_tried_path_first_then_root() {
    let server = AuthServer::start(json!({"challenge_prm": false, "prm_at": "root"})).await;
    let challenge = server.challenge().await;
    assert_eq!(challenge.resource_metadata, None);
    let found = discover(&http(), &server.url(), Some(&challenge)).await.expect("discovery");
    assert_eq!(found.resource_metadata_url, Some(format!("{}/.well-known/oauth-protected-resource", server.base)));
    let paths = server.paths().await;
    let wk: Vec<&str> = paths.iter().map(String::as_str).filter(|p| p.starts_with("/.well-known/")).collect();
    assert_eq!(
        wk,
        vec![
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server",
        ]
    );
}

#[tokio::test]
async fn an_issuer_with_a_path_is_found_by_path_insertion_then_openid_discovery() {
    let server = AuthServer::start(json!({"issuer_path": "/tenant1", "openid": true})).await;
    let found = discover(&http(), &server.url(), None).await.expect("discovery");
    assert_eq!(found.issuer(), format!("{}/tenant1", server.base));
    let paths = server.paths().await;
    let wk: Vec<&str> = paths.iter().map(String::as_str).filter(|p| p.contains("/.well-known/o")).collect();
    assert_eq!(
        wk,
        vec![
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server/tenant1",
            "/.well-known/openid-configuration/tenant1",
        ]
    );
}

#[tokio::test]
async fn a_2025_03_26_server_without_any_metadata_gets_the_default_endpoints_at_its_origin() {
    let server = AuthServer::start(json!({"legacy": true})).await;
    let challenge = server.challenge().await;
    let found = discover(&http(), &server.url(), Some(&challenge)).await.expect("discovery");
    assert!(found.uses_default_endpoints());
    assert_eq!(found.resource_metadata, None);
    assert_eq!(found.auth_server.authorization_endpoint, format!("{}/authorize", server.base));
    assert_eq!(found.auth_server.token_endpoint, format!("{}/token", server.base));
    assert_eq!(found.auth_server.registration_endpoint, Some(format!("{}/register", server.base)));
    assert_eq!(found.resource, format!("{}/mcp", server.base));
}

#[tokio::test]
async fn metadata_that_speaks_for_another_resource_is_refused() {
    let server = AuthServer::start(json!({"prm_resource": "https://elsewhere.example/mcp"})).await;
    let challenge = server.challenge().await;
    let err = discover(&http(), &server.url(), Some(&challenge)).await.expect_err("refused");
    assert!(matches!(err, AuthError::ResourceMismatch { .. }), "{err}");
}

#[tokio::test]
async fn an_authorization_server_without_s256_is_refused() {
    for methods in [json!(["plain"]), json!(null)] {
        let server = AuthServer::start(json!({"pkce_methods": methods})).await;
        let err = discover(&http(), &server.url(), None).await.expect_err("refused");
        assert!(matches!(err, AuthError::NoPkce { .. }), "{err}");
        assert!(err.to_string().contains("S256"), "{err}");
    }
}

#[tokio::test]
async fn metadata_that_names_another_issuer_is_refused() {
    let server = AuthServer::start(json!({"metadata_issuer": "https://honest.example"})).await;
    let err = discover(&http(), &server.url(), None).await.expect_err("refused");
    assert!(matches!(err, AuthError::IssuerMismatch { .. }), "{err}");
}

#[tokio::test]
async fn a_metadata_redirect_to_another_host_is_not_followed() {
    let server = AuthServer::start(json!({"redirect_prm": true})).await;
    let challenge = server.challenge().await;
    let err = discover(&http(), &server.url(), Some(&challenge)).await.expect_err("refused");
    assert!(matches!(err, AuthError::Redirected { .. }), "{err}");
    assert!(!server.log().await.is_empty());
}

#[tokio::test]
async fn plain_http_to_another_machine_is_refused_before_any_request() {
    let url = reqwest::Url::parse("http://mcp.example.com/mcp").expect("url");
    let err = discover(&http(), &url, None).await.expect_err("refused");
    assert!(matches!(err, AuthError::Insecure { .. }), "{err}");
    let challenge = BearerChallenge {
        resource_metadata: Some("http://mcp.example.com/.well-known/oauth-protected-resource".into()),
        ..Default::default()
    };
    let local = reqwest::Url::parse("http://127.0.0.1:9/mcp").expect("url");
    let err = discover(&http(), &local, Some(&challenge)).await.expect_err("refused");
    assert!(matches!(err, AuthError::Insecure { .. }), "{err}");
}

#[tokio::test]
async fn hostile_challenge_headers_are_read_without_panicking() {
    let nasty = [
        "Bearer resource_metadata=\"http://127.0.0.1:1/\u{0}x\", scope=\"a\\\"b\"".to_owned(),
        format!("Bearer {}", "x=\"".repeat(3000)),
        "Bearer, , , ,=,=\"\",\\".to_owned(),
        format!("Bearer scope=\"{}\"", "s ".repeat(4000)),
    ];
    for h in &nasty {
        let _ = BearerChallenge::from_header(h);
    }
    let c = BearerChallenge::from_header(&nasty[0]).expect("bearer");
    assert_eq!(c.scope, vec!["a\"b"]);
    assert_eq!(c.resource_metadata.as_deref(), Some("http://127.0.0.1:1/x"));
}

#[tokio::test]
async fn metadata_that_is_not_json_or_too_large_is_refused_with_its_url() {
    let server = AuthServer::start(json!({"prm_raw": "<html><body>Sign in here</body></html>"})).await;
    let challenge = server.challenge().await;
    let err = discover(&http(), &server.url(), Some(&challenge)).await.expect_err("refused");
    assert!(matches!(err, AuthError::Malformed { .. }), "{err}");
    assert!(err.to_string().contains("oauth-protected-resource/mcp"), "{err}");

    let server = AuthServer::start(json!({"prm_huge": 3 * 1024 * 1024})).await;
    let challenge = server.challenge().await;
    let err = discover(&http(), &server.url(), Some(&challenge)).await.expect_err("refused");
    assert!(matches!(err, AuthError::TooLarge { .. }), "{err}");
}
