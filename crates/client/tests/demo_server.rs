//! Task lifecycles against the bundled demo server, in both eras, with every message on the wire
//! (both directions: the demo server is ours) checked against its era's schema.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, json};
use support::{Recorder, check_wire_log, demo_spec, expect_task, poll_task, question_during_result, tapped};
use taskdeck_client::{Session, SessionEvent, SessionOptions, StartOptions, TaskSnapshot};
use taskdeck_protocol::elicitation::ElicitResult;
use taskdeck_protocol::types::CallToolResult;
use taskdeck_protocol::{Era, TaskStatus};

struct Demo {
    session: Session,
    rec: Arc<Recorder>,
    era: Era,
    state: tempfile::TempDir,
    log: std::path::PathBuf,
}

async fn connect_to(state: tempfile::TempDir, era: Era) -> Demo {
    let log = state.path().join(format!("wire-{}.jsonl", rand_suffix()));
    let rec = Recorder::new();
    let opts = SessionOptions { force_era: Some(era), ..Default::default() };
    let session = Session::connect(&tapped(demo_spec(state.path()), &log), opts, rec.clone()).await.unwrap();
    assert_eq!(session.era(), era);
    Demo { session, rec, era, state, log }
}

async fn connect(era: Era) -> Demo {
    connect_to(tempfile::tempdir().unwrap(), era).await
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

impl Demo {
    async fn start(&self, tool: &str, args: serde_json::Value) -> TaskSnapshot {
        let opts = StartOptions { progress_token: Some("tok".into()), ttl_ms: None };
        expect_task(self.session.start_tool(tool, args, &opts).await.unwrap())
    }

    /// Every 50 ms for 15 s: the demo server's tasks take a second or two.
    async fn poll_until(&self, id: &str, done: impl FnMut(&TaskSnapshot) -> bool) -> TaskSnapshot {
        poll_task(&self.session, id, 300, Duration::from_millis(50), done).await
    }

    /// The tool's result, however the era delivers it.
    async fn result(&self, done: &TaskSnapshot) -> CallToolResult {
        match self.era {
            Era::Legacy => self.session.task_result(&done.task_id).await.unwrap(),
            Era::Modern => done.result.clone().expect("a completed modern task carries its result"),
        }
    }

    fn check_wire(&self) {
        assert!(check_wire_log(&self.log, self.era, true) > 4, "the tap saw too little");
    }
}

async fn completes(era: Era) {
    let d = connect(era).await;
    let t = d.start("generate_report", json!({"topic": "tides", "seconds": 0.4})).await;
    let mut progressed = t.progress.is_some();
    let done = d
        .poll_until(&t.task_id, |s| {
            progressed |= s.progress.is_some();
            s.status.is_terminal()
        })
        .await;
    assert_eq!(done.status, TaskStatus::Completed);
    let result = d.result(&done).await;
    assert!(!result.is_error());
    assert!(result.joined_text().contains("tides"));
    assert_eq!(result.structured_content.as_ref().unwrap()["topic"], "tides");
    match era {
        // Legacy progress arrives as notifications carrying our token, and increases.
        Era::Legacy => {
            let p: Vec<f64> = d
                .rec
                .events()
                .into_iter()
                .filter_map(|e| match e {
                    SessionEvent::Progress { token, progress, .. } if token == "tok" => Some(progress),
                    _ => None,
                })
                .collect();
            assert!(p.len() >= 2 && p.windows(2).all(|w| w[0] < w[1]), "{p:?}");
        }
        // Modern progress rides on the task itself.
        Era::Modern => assert!(progressed, "no snapshot carried progress"),
    }
    d.check_wire();
}

async fn tool_error(era: Era) {
    let d = connect(era).await;
    let t = d.start("flaky_export", json!({"fail_at": 10})).await;
    let done = d.poll_until(&t.task_id, |s| s.status.is_terminal()).await;
    // What each era calls a tool error: legacy says failed, modern says completed.
    let expected = if era == Era::Legacy { TaskStatus::Failed } else { TaskStatus::Completed };
    assert_eq!(done.status, expected);
    assert!(d.result(&done).await.is_error());
    d.check_wire();
}

async fn cancel(era: Era) {
    let d = connect(era).await;
    let t = d.start("generate_report", json!({"topic": "long", "seconds": 30})).await;
    let answer = d.session.cancel_task(&t.task_id).await.unwrap();
    assert_eq!(answer.map(|s| s.status), if era == Era::Legacy { Some(TaskStatus::Cancelled) } else { None });
    let done = d.poll_until(&t.task_id, |s| s.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
    d.check_wire();
}

async fn question_and_answer(era: Era) {
    let d = connect(era).await;
    let t = d.start("diagnose_incident", json!({})).await;
    let answer = {
        let mut c = Map::new();
        c.insert("service".into(), json!("search"));
        ElicitResult::accept(c)
    };
    match era {
        Era::Legacy => {
            let (q, waiter) =
                question_during_result(&d.session, &d.rec, &t.task_id, Duration::from_secs(10), "the question").await;
            assert_eq!(q.task_id.as_deref(), Some(t.task_id.as_str()));
            d.session.answer(&q.key, q.task_id.as_deref(), &answer).await.unwrap();
            let result = tokio::time::timeout(Duration::from_secs(20), waiter).await.unwrap().unwrap().unwrap();
            assert!(result.joined_text().to_lowercase().contains("search"), "{}", result.joined_text());
        }
        Era::Modern => {
            let waiting = d.poll_until(&t.task_id, |s| s.status == TaskStatus::InputRequired).await;
            let q = &waiting.questions[0];
            assert!(q.schema().is_some(), "a well-formed form question: {q:?}");
            d.session.answer(&q.key, Some(&t.task_id), &answer).await.unwrap();
            let done = d.poll_until(&t.task_id, |s| s.status.is_terminal()).await;
            assert_eq!(done.status, TaskStatus::Completed);
            assert!(d.result(&done).await.joined_text().to_lowercase().contains("search"));
        }
    }
    d.check_wire();
}

async fn reattach_after_restart(era: Era) {
    let d = connect(era).await;
    let t = d.start("generate_report", json!({"topic": "restart", "seconds": 2})).await;
    // Past the first stage, so there is a checkpoint to continue from.
    d.poll_until(&t.task_id, |s| s.status_message.as_deref().is_some_and(|m| m != "Collecting sources")).await;
    d.session.kill();
    d.rec.wait_for(Duration::from_secs(5), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    d.check_wire();
    let d2 = connect_to(d.state, era).await;
    let again = d2.session.attach(&t.task_id).await.unwrap();
    assert!(!again.status.is_terminal(), "{again:?}");
    let done = d2.poll_until(&t.task_id, |s| s.status.is_terminal()).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let result = d2.result(&done).await;
    let resumed = &result.structured_content.as_ref().unwrap()["resumed_from_stage"];
    assert!(resumed.as_u64().is_some_and(|n| n >= 1), "the report continued from its checkpoint: {resumed}");
    d2.check_wire();
}

macro_rules! both_eras {
    ($($name:ident),*) => {
        mod legacy { $( #[tokio::test] async fn $name() { super::$name(taskdeck_protocol::Era::Legacy).await } )* }
        mod modern { $( #[tokio::test] async fn $name() { super::$name(taskdeck_protocol::Era::Modern).await } )* }
    };
}

both_eras!(completes, tool_error, cancel, question_and_answer, reattach_after_restart);

#[tokio::test]
async fn era_is_detected_as_modern_by_the_discover_probe() {
    let state = tempfile::tempdir().unwrap();
    let session = Session::connect(&demo_spec(state.path()), SessionOptions::default(), Recorder::new()).await.unwrap();
    let info = session.info();
    assert_eq!((info.era, info.protocol_version.as_str(), info.tasks), (Era::Modern, "2026-07-28", true));
}
