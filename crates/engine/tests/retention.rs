//! The retention policy of the settings, applied by the engine to a real store: at start, and again
//! when the policy changes. Pinned tasks and tasks still working or waiting are never touched.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use taskdeck_engine::config::Paths;
use taskdeck_engine::{
    Engine, EngineOptions, NotificationSettings, PurgeReason, RetentionSettings, SettingsFile, SettingsUpdate, Theme,
};
use taskdeck_protocol::question::{QuestionKey, QuestionRequest};
use taskdeck_store::{Mode, NewTask, Question, Store, TaskStatus, Update};

fn paths(dir: &Path) -> Paths {
    Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }
}

fn create(store: &Store, key: &str) -> String {
    let new = NewTask {
        server: "demo".into(),
        tool: "slow_count".into(),
        arguments: json!({ "to": 3, "label": key }),
        idempotency_key: key.into(),
        mode: Mode::Task,
    };
    store.create_task(new).expect("create").id
}

fn finish(store: &Store, key: &str) -> String {
    let id = create(store, key);
    let result = json!({ "content": [{ "type": "text", "text": format!("report {key}") }] });
    store.apply(&id, Update::Completed { result, server_status: Some("completed".into()) }).expect("complete");
    id
}

fn waiting(store: &Store, key: &str) -> String {
    let id = create(store, key);
    let request = QuestionRequest {
        method: "elicitation/create".into(),
        params: json!({ "message": "Which?", "requestedSchema": { "type": "object", "properties": {} } }),
    };
    let question = Question::decode(QuestionKey::InputKey("q1".into()), None, request);
    store.apply(&id, Update::Question { question: Box::new(question), message: Some("Which?".into()) }).expect("ask");
    id
}

fn left(engine: &Engine) -> Vec<String> {
    engine.list(&Default::default()).expect("list").into_iter().map(|t| t.id).collect()
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_in_the_settings_is_applied_at_start_and_again_when_it_changes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let paths = paths(dir.path());
    std::fs::create_dir_all(&paths.data_dir).expect("data dir");

    // A history left by an earlier run: oldest first.
    let store = Store::open(paths.store_file()).expect("store");
    let pinned = finish(&store, "pinned");
    store.set_pinned(&pinned, true).expect("pin");
    let old: Vec<String> = (0..3).map(|i| finish(&store, &format!("old{i}"))).collect();
    let working = create(&store, "working");
    let asking = waiting(&store, "asking");
    let recent: Vec<String> = (0..2).map(|i| finish(&store, &format!("recent{i}"))).collect();
    drop(store);

    // The user chose to keep the two newest finished tasks, among other settings.
    let file = SettingsFile::in_dir(&paths.data_dir);
    file.update(&SettingsUpdate {
        retention: Some(RetentionSettings { keep_tasks: Some(2), ..Default::default() }),
        theme: Some(Theme::Dark),
        ..Default::default()
    })
    .expect("settings");

    let engine = Engine::open(paths.clone(), EngineOptions::default()).await.expect("engine");
    let keeper = tokio::spawn(engine.clone().keep_history_within_policy());
    until("the policy at start", || engine.purge_log(0, 100).map(|l| l.len() == 3).unwrap_or(false)).await;

    let mut expected = vec![recent[1].clone(), recent[0].clone(), asking.clone(), working.clone(), pinned.clone()];
    assert_eq!(left(&engine), expected, "the old finished tasks went; pinned, waiting and working stayed");
    let log = engine.purge_log(0, 100).expect("purge log");
    assert!(log.iter().all(|l| l.why == PurgeReason::Policy), "{log:?}");
    let mut purged: Vec<String> = log.iter().map(|l| l.task_id.clone()).collect();
    purged.sort();
    let mut want = old.clone();
    want.sort();
    assert_eq!(purged, want);
    assert_eq!(engine.get(&asking).expect("asking").status, TaskStatus::InputRequired);

    // A tighter policy from the Settings view applies at once, and other sections stay as they were.
    let mut events = engine.subscribe();
    let settings = engine
        .update_settings(&SettingsUpdate {
            retention: Some(RetentionSettings { keep_tasks: Some(1), ..Default::default() }),
            ..Default::default()
        })
        .expect("update");
    assert_eq!(settings.theme, Theme::Dark);
    assert_eq!(settings.notifications, NotificationSettings::default());
    let announced = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(taskdeck_engine::EngineEvent::Settings { settings }) = events.recv().await {
                return settings;
            }
        }
    })
    .await
    .expect("the change is announced");
    assert_eq!(announced.retention.keep_tasks, Some(1));
    until("the changed policy", || engine.purge_log(0, 100).map(|l| l.len() == 4).unwrap_or(false)).await;
    expected.remove(1);
    assert_eq!(left(&engine), expected);

    keeper.abort();
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_is_applied_again_at_each_turn_while_the_engine_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let paths = paths(dir.path());
    std::fs::create_dir_all(&paths.data_dir).expect("data dir");
    SettingsFile::in_dir(&paths.data_dir)
        .update(&SettingsUpdate {
            retention: Some(RetentionSettings { keep_tasks: Some(1), ..Default::default() }),
            ..Default::default()
        })
        .expect("settings");
    let engine = Engine::open(paths.clone(), EngineOptions::default()).await.expect("engine");
    let keeper = tokio::spawn(engine.clone().keep_history_every(Duration::from_millis(200)));
    // Nothing to remove at start; the history then grows behind the keeper's back (another
    // connection to the same file, as a day of work would).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(engine.purge_log(0, 10).expect("log").is_empty());
    let other = Store::open(paths.store_file()).expect("second connection");
    let older = finish(&other, "older");
    let newer = finish(&other, "newer");
    until("the next turn", || engine.purge_log(0, 10).map(|l| l.len() == 1).unwrap_or(false)).await;
    assert_eq!(engine.purge_log(0, 10).expect("log")[0].task_id, older);
    assert_eq!(left(&engine), [newer]);
    keeper.abort();
    drop(other);
    engine.shutdown().await;
}

#[tokio::test]
async fn without_a_policy_nothing_is_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let paths = paths(dir.path());
    std::fs::create_dir_all(&paths.data_dir).expect("data dir");
    let store = Store::open(paths.store_file()).expect("store");
    let ids: Vec<String> = (0..3).map(|i| finish(&store, &format!("t{i}"))).collect();
    drop(store);

    let engine = Engine::open(paths, EngineOptions::default()).await.expect("engine");
    assert_eq!(engine.apply_retention().expect("apply"), None);
    assert_eq!(left(&engine).len(), ids.len());
    assert!(engine.purge_log(0, 10).expect("log").is_empty());
    engine.shutdown().await;
}

#[tokio::test]
async fn a_broken_settings_file_removes_nothing_and_stays_as_it_was() {
    let dir = tempfile::tempdir().expect("temp dir");
    let paths = paths(dir.path());
    std::fs::create_dir_all(&paths.data_dir).expect("data dir");
    let store = Store::open(paths.store_file()).expect("store");
    finish(&store, "t");
    drop(store);
    let broken = br#"{"retention": {"keep_tasks": 0"#;
    std::fs::write(paths.data_dir.join("settings.json"), broken).expect("write");

    let engine = Engine::open(paths.clone(), EngineOptions::default()).await.expect("engine");
    let err = engine.apply_retention().expect_err("broken");
    assert_eq!(err.code().as_str(), "settings");
    assert!(err.to_string().contains("settings.json"), "{err}");
    let err = engine.update_settings(&SettingsUpdate { theme: Some(Theme::Light), ..Default::default() });
    assert!(err.is_err());
    assert_eq!(std::fs::read(paths.data_dir.join("settings.json")).expect("read"), broken);
    assert_eq!(left(&engine).len(), 1);
    engine.shutdown().await;
}
