//! Memory for a big question: an 11 MB elicitation (10,000 fields, a 100,000-entry enum) once cost
//! 70 to 90 times its size, copied into the form model, the record, the log and every publish. The
//! process's peak resident memory (`VmHWM`) is the measure, so this file holds this one test: no
//! other test in the same process can raise the peak.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{fixture, open_engine, python_entry};
use taskdeck_engine::{AnswerInput, is_waiting_for_answer};
use taskdeck_protocol::question::Asks;
use taskdeck_test_support::write_servers_config;

/// The peak resident set of this process so far, in bytes; `None` where `/proc` has no such line.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim();
    kb.parse::<u64>().ok().map(|kb| kb * 1024)
}

#[tokio::test]
async fn an_eleven_megabyte_question_costs_less_than_ten_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let entry = python_entry(&fixture("bounds_server.py"));
    write_servers_config(&dir.path().join("servers.json"), [("bounds", entry)]);
    let engine = open_engine(dir.path(), Duration::from_secs(30)).await;
    // A small task first, so the baseline has the server connected and everything warmed up.
    let warm = engine.run("bounds", "ask", json!({})).await.unwrap().id;
    tokio::time::timeout(Duration::from_secs(20), engine.wait(&warm, is_waiting_for_answer)).await.unwrap().unwrap();
    engine.answer(&warm, AnswerInput::Decline).await.unwrap();
    let Some(before) = peak_rss() else {
        eprintln!("no VmHWM in /proc/self/status here: nothing to measure");
        return;
    };

    let id = engine.run("bounds", "ask", json!({"fields": 10_000, "options": 100_000, "pad": 900})).await.unwrap().id;
    let rec = tokio::time::timeout(Duration::from_secs(60), engine.wait(&id, is_waiting_for_answer))
        .await
        .expect("the question is shown")
        .unwrap();
    let size: u64 = 11_000_000;
    // Let what the engine does after it settle (the flush, the publishes).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = peak_rss().unwrap().saturating_sub(before);
    eprintln!("an 11 MB question raised the peak by {grown} bytes");
    // Generous on purpose (a shared machine, an allocator's whims): the frame, its parse, the
    // measure, nothing more. Before the bound it was 70 to 90 times.
    assert!(grown < 10 * size, "{grown} bytes for a {size}-byte question");
    let Asks::TooLarge { size } = rec.question.as_ref().unwrap().asks else { panic!("{:?}", rec.question) };
    assert!(size > 11_000_000, "the question is the size it should be: {size}");
    engine.answer(&id, AnswerInput::Decline).await.unwrap();
    engine.shutdown().await;
}
