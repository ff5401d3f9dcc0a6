//! The host's side against the reference server `@modelcontextprotocol/server-everything`: the
//! roots the user grants (and their change announced without a restart), and the MCP log entries
//! a server sends, kept with their levels in the server's log.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{fixture, open_engine, python_entry};
use taskdeck_engine::logs::LogLevel;
use taskdeck_engine::{Engine, TaskRecord};
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
    open_engine(dir, Duration::from_secs(30)).await
}

/// Waits until the server lists `tool` (the reference server registers tools after `initialized`).
async fn wait_tool(engine: &Engine, tool: &str) {
    for _ in 0..100 {
        if engine.tools("everything").await.unwrap().iter().any(|t| t.name == tool) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `tool` once its server lists it.
async fn run_to_end(engine: &Engine, tool: &str) -> TaskRecord {
    wait_tool(engine, tool).await;
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

async fn wait_for(engine: &Engine, id: &str, done: impl Fn(&TaskRecord) -> bool) -> TaskRecord {
    tokio::time::timeout(Duration::from_secs(30), engine.wait(id, done)).await.unwrap().unwrap()
}

#[tokio::test]
async fn a_call_refused_with_32042_asks_for_the_page_and_is_sent_again_once_it_is_finished() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({}));
    let engine = open(dir.path()).await;
    wait_tool(&engine, "trigger-url-elicitation").await;
    let args = json!({"url": "https://example.com/authorize", "message": "Sign in to Example", "errorPath": true});
    let rec = engine.run("everything", "trigger-url-elicitation", args).await.unwrap();
    // The refusal's prerequisite is asked first, as a URL question on the call.
    let asked = wait_for(&engine, &rec.id, |r| r.status == TaskStatus::InputRequired).await;
    let q = asked.question.clone().unwrap();
    assert!(
        matches!(&q.asks, taskdeck_client::Asks::Url { url, .. } if url.starts_with("https://modelcontextprotocol.io")),
        "{q:#?}"
    );
    engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(Default::default())).await.unwrap();
    // Sent again, the call asks its own page this time (the request path).
    let again = wait_for(&engine, &rec.id, |r| {
        r.status == TaskStatus::InputRequired
            && r.question.as_ref().is_some_and(|q| q.key != asked.question.as_ref().unwrap().key)
    })
    .await;
    assert!(
        matches!(&again.question.as_ref().unwrap().asks, taskdeck_client::Asks::Url { url, .. } if url == "https://example.com/authorize")
    );
    engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(Default::default())).await.unwrap();
    let done = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
    assert!(text_of(&done).contains("User completed the URL elicitation flow"), "{done:#?}");
    let kinds: Vec<String> = engine.events(&rec.id).unwrap().iter().map(|e| e.kind.as_str().to_owned()).collect();
    assert_eq!(kinds.iter().filter(|k| *k == "answer").count(), 2, "{kinds:?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_call_refused_with_32042_and_declined_fails_with_the_servers_refusal() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({}));
    let engine = open(dir.path()).await;
    wait_tool(&engine, "trigger-url-elicitation").await;
    let args = json!({"url": "https://example.com/decline", "errorPath": true});
    let rec = engine.run("everything", "trigger-url-elicitation", args).await.unwrap();
    wait_for(&engine, &rec.id, |r| r.status == TaskStatus::InputRequired).await;
    engine.answer(&rec.id, taskdeck_engine::AnswerInput::Decline).await.unwrap();
    let done = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}");
    let error = done.error.unwrap();
    assert_eq!(error.code, Some(-32042));
    assert!(error.message.contains("was not finished"), "{error:?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn the_servers_completion_notice_closes_the_url_question_without_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let entry = python_entry(&fixture("url_complete_server.py"));
    write_servers_config(&dir.path().join("servers.json"), [("url", entry)]);
    let engine = open(dir.path()).await;
    let rec = engine.run("url", "connect", json!({})).await.unwrap();
    let done = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_ref().unwrap()["content"][0]["text"], "answered: accept");
    let kinds: Vec<String> = engine.events(&rec.id).unwrap().iter().map(|e| e.kind.as_str().to_owned()).collect();
    assert!(kinds.contains(&"question".to_owned()) && kinds.contains(&"answer".to_owned()), "{kinds:?}");

    // A completion for an elicitation nobody here waits on changes nothing: the question stays.
    let rec = engine.run("url", "connect", json!({"other": true})).await.unwrap();
    wait_for(&engine, &rec.id, |r| r.status == TaskStatus::InputRequired).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(engine.get(&rec.id).unwrap().status, TaskStatus::InputRequired);
    engine.cancel(&rec.id).await.unwrap();
    engine.shutdown().await;
}

#[tokio::test]
async fn a_server_that_keeps_asking_for_a_page_first_ends_the_call_after_three_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let entry = python_entry(&fixture("url_complete_server.py"));
    write_servers_config(&dir.path().join("servers.json"), [("url", entry)]);
    let engine = open(dir.path()).await;
    let rec = engine.run("url", "locked", json!({})).await.unwrap();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let asked = wait_for(&engine, &rec.id, |r| {
            r.status == TaskStatus::InputRequired && r.question.as_ref().is_some_and(|q| !keys.contains(&q.key))
        })
        .await;
        keys.push(asked.question.unwrap().key);
        engine.answer(&rec.id, taskdeck_engine::AnswerInput::Accept(Default::default())).await.unwrap();
    }
    let done = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Failed, "{done:#?}");
    let error = done.error.unwrap();
    assert!(error.message.contains("asked for a page first 3 times"), "{error:?}");
    assert_eq!(error.code, Some(-32042));
    engine.shutdown().await;
}

#[tokio::test]
async fn the_demo_servers_log_entries_name_their_task_in_both_eras() {
    for era in ["legacy", "modern"] {
        let dir = tempfile::tempdir().unwrap();
        let mut entry = taskdeck_test_support::demo_server_entry(&dir.path().join("state"));
        entry["era"] = json!(era);
        write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
        let engine = open(dir.path()).await;
        let rec = engine.run("demo", "generate_report", json!({"topic": "tides", "seconds": 0.4})).await.unwrap();
        let done = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
        assert_eq!(done.status, TaskStatus::Completed, "{era}: {done:#?}");
        let log = engine.server_log("demo").unwrap();
        // The first stage's entry may come before the handle is known here: it names the server's id.
        let remote = done.remote_task_id.clone().unwrap();
        let mine: Vec<_> = log
            .iter()
            .filter(|l| l.task.as_deref() == Some(rec.id.as_str()) || l.remote_task.as_deref() == Some(remote.as_str()))
            .collect();
        assert!(mine.iter().all(|l| l.remote_task.as_deref() == Some(remote.as_str())), "{mine:#?}");
        assert!(mine.iter().any(|l| l.task.as_deref() == Some(rec.id.as_str())), "resolved once known: {mine:#?}");
        assert_eq!(mine.len(), 4, "{era}: one entry per stage: {log:#?}");
        assert!(mine.iter().all(|l| l.source == "mcp" && l.level == Some(LogLevel::Info)), "{mine:#?}");
        assert_eq!(mine[0].logger.as_deref(), Some("demo.report"));
        assert!(mine[0].text.starts_with("finished stage 1 of 4: Collecting sources"), "{:?}", mine[0]);
        engine.shutdown().await;
    }
}

/// Modern only: the demo server's legacy era sends a plain call's entries on the session's GET
/// stream, which names no request, so there the one call in flight is all that names a task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_modern_http_two_plain_calls_in_flight_each_get_the_entries_their_own_stream_brought() {
    let dir = tempfile::tempdir().unwrap();
    let server = taskdeck_test_support::demo_server_http(&dir.path().join("state"), "127.0.0.1:0");
    let mut entry = server.entry(Some("modern"));
    entry["logLevel"] = json!("info");
    write_servers_config(&dir.path().join("servers.json"), [("demo", entry)]);
    let engine = open(dir.path()).await;
    let search = |query: &str| json!({"query": query, "delay_ms": 1500});
    let first = engine.run("demo", "notes_search", search("alpha")).await.unwrap();
    // The second call's entry comes while the first is still in flight.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = engine.run("demo", "notes_search", search("beta")).await.unwrap();
    for rec in [&first, &second] {
        let done = wait_for(&engine, &rec.id, |r| r.status.is_terminal()).await;
        assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    }
    let log = engine.server_log("demo").unwrap();
    let named = |id: &str| -> Vec<String> {
        log.iter().filter(|l| l.source == "mcp" && l.task.as_deref() == Some(id)).map(|l| l.text.clone()).collect()
    };
    assert_eq!(named(&first.id), [r#"searching the notes for "alpha""#], "{log:#?}");
    assert_eq!(named(&second.id), [r#"searching the notes for "beta""#], "{log:#?}");
    engine.shutdown().await;
    drop(server);
}
