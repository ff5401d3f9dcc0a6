//! A plain call the demo server answers with input requests (2026-07-28, multi-round-trip
//! requests), through the session alone: the round comes back as questions with its state, the
//! call goes again with the answers and the state, and every message on the wire, the retry's
//! `inputResponses` and `requestState` and the per-request log level included, fits the schema.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{Recorder, check_wire_log, demo_spec, tapped};
use taskdeck_client::{
    Asks, QuestionKey, Reply, RetryInputs, Session, SessionEvent, SessionOptions, StartOptions, Started,
};
use taskdeck_protocol::Era;

async fn modern(state: &std::path::Path, log: &std::path::Path) -> (Session, std::sync::Arc<Recorder>) {
    let rec = Recorder::new();
    let opts = SessionOptions { force_era: Some(Era::Modern), ..Default::default() };
    let session = Session::connect(&tapped(demo_spec(state), log), opts, rec.clone()).await.unwrap();
    (session, rec)
}

#[tokio::test]
async fn a_round_comes_back_as_questions_and_the_call_goes_again_with_the_answers_and_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("wire.jsonl");
    let (session, _) = modern(dir.path(), &log).await;
    let args = json!({"title": "Q3", "rounds": 2});
    let opts = StartOptions::default();

    let Started::InputRequired(first) = session.start_tool("publish_notes", args.clone(), &opts).await.unwrap() else {
        panic!("the call was not answered with input requests");
    };
    let keys: Vec<&QuestionKey> = first.questions.iter().map(|q| &q.key).collect();
    assert_eq!(keys, [&QuestionKey::InputKey("confirm-1".into()), &QuestionKey::InputKey("destination".into())]);
    assert!(matches!(first.questions[0].asks, Asks::Form { .. }), "{:?}", first.questions[0]);
    assert_eq!(first.questions[1].asks, Asks::Roots);
    assert!(first.questions.iter().all(|q| q.task_id.is_none()), "no task: {first:?}");
    let state = first.request_state.clone().expect("a state to echo");

    let yes = Reply::Result(json!({"action": "accept", "content": {"publish": true}}));
    let roots = Reply::Result(json!({"roots": [{"uri": "file:///srv/shelf", "name": "shelf"}]}));
    let inputs = RetryInputs {
        responses: vec![("confirm-1".into(), yes.clone()), ("destination".into(), roots)],
        request_state: Some(state.clone()),
    };
    let Started::InputRequired(second) =
        session.retry_tool("publish_notes", args.clone(), &opts, &inputs).await.unwrap()
    else {
        panic!("the second confirmation was not asked");
    };
    assert_eq!(second.questions.len(), 1, "{second:?}");
    assert_eq!(second.questions[0].key, QuestionKey::InputKey("confirm-2".into()));
    assert_ne!(second.request_state.as_deref(), Some(state.as_str()), "the state moved on");

    let inputs =
        RetryInputs { responses: vec![("confirm-2".into(), yes)], request_state: second.request_state.clone() };
    let Started::Completed(done) = session.retry_tool("publish_notes", args, &opts, &inputs).await.unwrap() else {
        panic!("the call did not end");
    };
    let published = done.structured_content.clone().unwrap();
    assert_eq!(published["confirmations"], 2, "{published}");
    assert_eq!(published["destination"], "file:///srv/shelf", "the state carried the first round's roots");
    session.shutdown(Duration::from_millis(500)).await;
    assert!(check_wire_log(&log, Era::Modern, true) > 4, "the tap saw too little");
}

#[tokio::test]
async fn a_state_presented_with_other_arguments_is_refused_by_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (session, _) = modern(dir.path(), &dir.path().join("wire.jsonl")).await;
    let opts = StartOptions::default();
    let Started::InputRequired(round) = session.start_tool("publish_notes", json!({}), &opts).await.unwrap() else {
        panic!("no round");
    };
    let yes = Reply::Result(json!({"action": "accept", "content": {"publish": true}}));
    let forged = RetryInputs { responses: vec![("confirm-1".into(), yes)], request_state: round.request_state };
    let e = session.retry_tool("publish_notes", json!({"title": "other"}), &opts, &forged).await.unwrap_err();
    assert_eq!(e.rpc_error().map(|r| r.code), Some(-32602), "{e}");
    session.shutdown(Duration::from_millis(500)).await;
}

#[tokio::test]
async fn the_log_level_rides_every_modern_request_and_without_it_no_entry_comes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("wire.jsonl");
    let (session, rec) = modern(dir.path(), &log).await;
    let opts = StartOptions::default();
    let asked = |s: &Started| matches!(s, Started::InputRequired(_));
    assert!(asked(&session.start_tool("publish_notes", json!({}), &opts).await.unwrap()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let logged = |rec: &Recorder| rec.events().iter().filter(|e| matches!(e, SessionEvent::Log { .. })).count();
    assert_eq!(logged(&rec), 0, "no level asked, no entries");

    assert!(!session.set_log_level("debug").await.unwrap(), "nothing is sent for it in this era");
    assert!(asked(&session.start_tool("publish_notes", json!({}), &opts).await.unwrap()));
    rec.wait_for(
        Duration::from_secs(5),
        "the debug entry",
        |e| matches!(e, SessionEvent::Log { entry, .. } if entry.level == "debug"),
    )
    .await;
    assert_eq!(logged(&rec), 1, "{:?}", rec.events());
    session.shutdown(Duration::from_millis(500)).await;
    let wire = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<serde_json::Value> = wire
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l["line"].as_str()?).ok())
        .filter(|m| m["method"] == "tools/call")
        .collect();
    let levels: Vec<&serde_json::Value> =
        calls.iter().map(|c| &c["params"]["_meta"]["io.modelcontextprotocol/logLevel"]).collect();
    assert_eq!(levels, [&serde_json::Value::Null, &json!("debug")], "the level went with the request once set");
    assert!(check_wire_log(&log, Era::Modern, true) > 4);
}
