//! The HTTP servers the http_* tests run on loopback: the reference server in its Streamable
//! HTTP mode, and the Python fixture that misbehaves (or speaks the modern era) on request.
#![allow(dead_code)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use taskdeck_client::HttpSpec;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A server process on loopback, killed with the value.
pub struct HttpServer {
    pub url: String,
    _child: Child,
}

impl HttpServer {
    pub fn spec(&self, name: &str) -> HttpSpec {
        HttpSpec { name: name.into(), url: self.url.clone(), headers: Default::default(), sign_in: Default::default() }
    }
}

/// `@modelcontextprotocol/server-everything` with its `streamableHttp` transport, on a free
/// port (it reads `PORT`, and says only that it listens, not where, when given 0).
pub async fn everything_http() -> HttpServer {
    let entry = taskdeck_test_support::everything_server_entry();
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_secs(1), stderr.next_line()).await {
                Ok(Ok(Some(line))) if line.contains("listening on port") => {
                    // Keep draining its stderr so it never blocks on a full pipe.
                    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
                    return HttpServer { url: format!("http://127.0.0.1:{port}/mcp"), _child: child };
                }
                Ok(Ok(Some(line))) if line.contains("already in use") => break,
                Ok(Ok(None)) | Ok(Err(_)) => break,
                _ => {}
            }
        }
    }
    panic!("the everything server did not start in HTTP mode");
}

/// `support/http_fixture.py` in `scenario`; it prints its URL as its first line.
pub async fn fixture(scenario: &str) -> HttpServer {
    fixture_with(scenario, &[]).await
}

pub async fn fixture_with(scenario: &str, env: &[(&str, String)]) -> HttpServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/http_fixture.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(scenario)
        .envs(env.iter().map(|(k, v)| (k.to_string(), v.clone())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(10), stdout.next_line())
        .await
        .expect("the fixture says where it listens")
        .unwrap()
        .expect("a first line");
    tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
    HttpServer { url, _child: child }
}

/// What the fixture logged to its `FIXTURE_LOG` file, a JSON line per request or notable event;
/// a line that is not JSON fails the test, since the fixture writes each one whole.
pub fn fixture_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
