//! The oauth_* tests' peers: `oauth_fixture.py` (a strict protected resource and authorization
//! server) and `oauth_browser.py` (the user's browser, as `$BROWSER`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use taskdeck_client::auth::{
    AuthError, AuthHttp, Authorization, BearerChallenge, ClientConfig, SignInOptions, StoredAuth,
    open_with_browser_var, sign_in,
};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The fixture, killed with the value.
pub struct AuthServer {
    pub base: String,
    _child: Child,
}

impl AuthServer {
    pub async fn start(options: Value) -> AuthServer {
        let mut child = Command::new("python3")
            .arg(support_file("oauth_fixture.py"))
            .arg(options.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let base = tokio::time::timeout(Duration::from_secs(10), stdout.next_line())
            .await
            .expect("the fixture says where it listens")
            .expect("its stdout")
            .expect("a line");
        AuthServer { base, _child: child }
    }

    /// The protected MCP endpoint.
    pub fn url(&self) -> reqwest::Url {
        reqwest::Url::parse(&format!("{}/mcp", self.base)).expect("url")
    }

    /// GET `path` with the token; the status and the `WWW-Authenticate` challenge.
    pub async fn call(&self, path: &str, token: Option<&str>) -> (u16, Option<String>) {
        let mut request = reqwest::Client::new().get(format!("{}{path}", self.base));
        if let Some(t) = token {
            request = request.header("Authorization", format!("Bearer {t}"));
        }
        let response = request.send().await.expect("the fixture answers");
        let challenge = response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).map(str::to_owned);
        (response.status().as_u16(), challenge)
    }

    /// The 401's challenge, as the transport would hand it over.
    pub async fn challenge(&self) -> BearerChallenge {
        let (status, header) = self.call("/mcp", None).await;
        assert_eq!(status, 401);
        BearerChallenge::from_header(&header.expect("a challenge")).expect("a Bearer challenge")
    }

    /// Every request it saw: `[{method, path, refused?, why?, issued?}]`.
    pub async fn log(&self) -> Vec<Value> {
        let text = reqwest::get(format!("{}/admin/log", self.base)).await.expect("log").text().await.expect("text");
        serde_json::from_str(&text).expect("json")
    }

    pub async fn paths(&self) -> Vec<String> {
        self.log().await.iter().filter_map(|e| e["path"].as_str().map(str::to_owned)).collect()
    }

    pub async fn refusals(&self) -> Vec<String> {
        self.log().await.iter().filter_map(|e| e["why"].as_str().map(str::to_owned)).collect()
    }

    pub async fn revoke_refresh_tokens(&self) {
        reqwest::Client::new().post(format!("{}/admin/revoke", self.base)).send().await.expect("revoke");
    }
}

pub fn support_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support").join(name)
}

/// Options whose browser is `oauth_browser.py` through the `$BROWSER` rules, writing what it saw
/// to `log`.
pub fn browser_options(client: ClientConfig, log: &Path, extra: &str) -> SignInOptions {
    let browser = format!("python3 {} {extra} --log {}", support_file("oauth_browser.py").display(), log.display());
    let mut options = SignInOptions::new(client);
    options.open_browser = Arc::new(move |url: &str| open_with_browser_var(Some(&browser), url));
    options.timeout = Duration::from_secs(30);
    options
}

/// A whole sign-in against `server` from its 401.
pub async fn sign_in_from_401(
    server: &AuthServer,
    previous: Option<&StoredAuth>,
    options: &SignInOptions,
) -> Result<Authorization, AuthError> {
    let challenge = server.challenge().await;
    let http = AuthHttp::new().expect("http");
    sign_in(&http, &server.url(), Some(&challenge), previous, options).await
}
