//! `taskdeck-cli bench` against a remote server over Streamable HTTP, in both eras, as `make bench`
//! runs it: a tool that never runs as a task is timed as a plain round trip, and the report says
//! how many calls were answered without a task, so a benchmark of round trips can check it.

use std::path::Path;

use serde_json::{Value, json};
use taskdeck_test_support::cli::cli_command;
use taskdeck_test_support::{demo_server_http, write_servers_config};

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// One `bench --json` run against the server at `url`, its era pinned, in a data directory of its own.
fn bench(dir: &Path, url: &str, era: &str, tool: &str, args: &str, tasks: u64, concurrency: u64) -> Value {
    let config =
        write_servers_config(&dir.join(format!("{era}-{tool}.json")), [("demo", json!({"url": url, "era": era}))]);
    let (tasks, concurrency) = (tasks.to_string(), concurrency.to_string());
    let args = ["bench", "demo", tool, "--args", args, "--json", "--tasks", &tasks, "--concurrency", &concurrency];
    let out = cli_command(CLI, &config, &dir.join(format!("data-{era}-{tool}")), &args).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{era} {tool}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn bench_over_http_times_a_never_task_tool_as_plain_round_trips_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let server = demo_server_http(&dir.path().join("state"), "127.0.0.1:0");
    for era in ["legacy", "modern"] {
        let r = bench(dir.path(), &server.url, era, "notes_search", r#"{"query":"deploy"}"#, 20, 1);
        let counts = (r["tasks"].as_u64(), r["concurrency"].as_u64(), r["failed"].as_u64(), r["plain_calls"].as_u64());
        assert_eq!(counts, (Some(20), Some(1), Some(0), Some(20)), "{era}: {r}");
        let l = &r["latency_ms"];
        assert!(l["p50"].as_f64() > Some(0.0) && l["p50"].as_f64() <= l["p99"].as_f64(), "{era}: {r}");
    }
}

#[test]
fn bench_over_http_runs_task_lifecycles_and_counts_none_of_them_as_plain_calls() {
    let dir = tempfile::tempdir().unwrap();
    let server = demo_server_http(&dir.path().join("state"), "127.0.0.1:0");
    for era in ["legacy", "modern"] {
        let r = bench(dir.path(), &server.url, era, "generate_report", r#"{"topic":"bench","seconds":0}"#, 6, 3);
        let counts = (r["tasks"].as_u64(), r["failed"].as_u64(), r["plain_calls"].as_u64());
        assert_eq!(counts, (Some(6), Some(0), Some(0)), "{era}: {r}");
        assert!(r["tasks_per_s"].as_f64() > Some(0.0), "{era}: {r}");
    }
}
