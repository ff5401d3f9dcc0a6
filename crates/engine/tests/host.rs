//! The host's side against the reference server `@modelcontextprotocol/server-everything`: the
//! roots the user grants (and their change announced without a restart), and the MCP log entries
//! a server sends, kept with their levels in the server's log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use taskdeck_engine::config::Paths;
use taskdeck_engine::logs::LogLevel;
use taskdeck_engine::{Engine, EngineOptions, TaskRecord};
use taskdeck_protocol::TaskStatus;
use taskdeck_test_support::{everything_server_entry, write_servers_config};

fn write_config(dir: &Path, extra: Value) -> PathBuf {
    let mut entry = json!({"command": "node", "args": [everything_server_entry(), "stdio"]});
    for (k, v) in extra.as_object().unwrap() {
        entry[k] = v.clone();
    }
    write_servers_config(&dir.join("servers.json"), [("everything", entry)])
}

async fn open(dir: &Path) -> Engine {
    let mut opts = EngineOptions::default();
    opts.server_wait = Duration::from_secs(30);
    Engine::open(Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }, opts).await.unwrap()
}

/// Runs `tool` once its server lists it (the reference server registers tools after `initialized`).
async fn run_to_end(engine: &Engine, tool: &str) -> TaskRecord {
    for _ in 0..100 {
        if engine.tools("everything").await.unwrap().iter().any(|t| t.name == tool) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rec = engine.run("everything", tool, json!({})).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), engine.wait(&rec.id, |r| r.status.is_terminal()))
        .await
        .unwrap()
        .unwrap()
}

fn text_of(rec: &TaskRecord) -> String {
    assert_eq!(rec.status, TaskStatus::Completed, "{rec:#?}");
    rec.result.as_ref().unwrap()["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_server_is_granted_no_roots_by_default() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({}));
    let engine = open(dir.path()).await;
    let text = text_of(&run_to_end(&engine, "get-roots-list").await);
    assert!(text.contains("no roots are currently configured"), "{text}");
    assert!(engine.roots_for("everything").unwrap().is_empty());
    engine.shutdown().await;
}

#[tokio::test]
async fn a_granted_directory_comes_back_and_a_changed_grant_reaches_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let (notes, work) = (dir.path().join("my notes"), dir.path().join("work"));
    write_config(dir.path(), json!({"roots": [notes]}));
    let engine = open(dir.path()).await;
    let text = text_of(&run_to_end(&engine, "get-roots-list").await);
    let notes_uri = format!("file://{}", notes.display()).replace(' ', "%20");
    assert!(text.contains(&notes_uri) && text.contains("my notes"), "{text}");
    let pid = engine.servers()[0].pid;

    write_config(dir.path(), json!({"roots": [notes, work]}));
    engine.reload_config().await.unwrap();
    assert_eq!(engine.servers()[0].pid, pid, "a new grant does not restart the server");
    let work_uri = format!("file://{}", work.display());
    // The server asks roots/list again when it hears list_changed; it answers from what it has.
    let mut text = String::new();
    for _ in 0..50 {
        text = text_of(&run_to_end(&engine, "get-roots-list").await);
        if text.contains(&work_uri) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(text.contains(&work_uri) && text.contains(&notes_uri), "{text}");
    let log = engine.server_log("everything").unwrap();
    assert!(log.iter().any(|l| l.text.contains("granted roots changed (2); told the server")), "{log:#?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn mcp_log_entries_are_kept_with_their_levels_at_the_configured_level() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"logLevel": "debug"}));
    let engine = open(dir.path()).await;
    let text = text_of(&run_to_end(&engine, "toggle-simulated-logging").await);
    assert!(text.contains("Started simulated"), "{text}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let entries = loop {
        let log = engine.server_log("everything").unwrap();
        // The server logs other things too (the roots it received); these are the simulated ones.
        let entries: Vec<_> =
            log.into_iter().filter(|l| l.source == "mcp" && l.text.to_lowercase().contains("level")).collect();
        if entries.len() >= 2 || tokio::time::Instant::now() > deadline {
            break entries;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(entries.len() >= 2, "the first entry comes at once, the next within 5 s: {entries:#?}");
    for e in &entries {
        let level = e.level.expect("a level the spec names");
        assert!(e.text.to_lowercase().contains(&level.as_str()[..4]), "{e:?}");
    }
    let log = engine.server_log("everything").unwrap();
    assert!(log.iter().any(|l| l.text == "asked for log entries of level debug and above"), "{log:#?}");
    assert!(LogLevel::Emergency > LogLevel::Debug);
    engine.shutdown().await;
}
