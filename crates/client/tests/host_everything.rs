//! What the host tells a server of its own accord, on the wire to the reference server
//! `@modelcontextprotocol/server-everything` and checked against the 2025-11-25 schema: the log
//! level it asks for, the roots it grants (answering `roots/list`), and that they changed.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::{Recorder, check_wire_log, everything_spec, tapped};
use taskdeck_client::{Session, SessionEvent, SessionHandler, SessionOptions, StartOptions, Started};
use taskdeck_protocol::Era;
use taskdeck_protocol::types::Root;

/// Grants whatever roots the test sets, and records events like [`Recorder`].
struct Granting {
    roots: Mutex<Vec<Root>>,
    rec: Arc<Recorder>,
}

impl SessionHandler for Granting {
    fn on_event(&self, event: SessionEvent) {
        self.rec.on_event(event);
    }

    fn roots(&self) -> Vec<Root> {
        self.roots.lock().unwrap().clone()
    }
}

async fn roots_text(session: &Session) -> String {
    for _ in 0..100 {
        if session.list_tools().await.unwrap().iter().any(|t| t.name == "get-roots-list") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    match session.start_tool("get-roots-list", json!({}), &StartOptions::default()).await.unwrap() {
        Started::Completed(r) => serde_json::to_value(&r).unwrap()["content"][0]["text"].as_str().unwrap().to_owned(),
        other => panic!("a plain tool did not answer plainly: {other:?}"),
    }
}

#[tokio::test]
async fn the_log_level_and_a_changed_grant_reach_the_server_in_schema() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("wire.jsonl");
    let rec = Recorder::new();
    let root = |uri: &str, name: &str| Root { uri: uri.into(), name: Some(name.into()) };
    let handler = Arc::new(Granting { roots: Mutex::new(vec![root("file:///srv/a", "a")]), rec: rec.clone() });
    let session =
        Session::connect(&tapped(everything_spec(), &log), SessionOptions::default(), handler.clone()).await.unwrap();
    assert_eq!(session.era(), Era::Legacy);
    assert!(session.declares_logging(), "the reference server declares logging");
    assert!(session.set_log_level("warning").await.unwrap(), "sent to a legacy server that declares logging");

    let text = roots_text(&session).await;
    assert!(text.contains("file:///srv/a"), "{text}");
    *handler.roots.lock().unwrap() = vec![root("file:///srv/a", "a"), root("file:///srv/b%20c", "b c")];
    assert!(session.roots_changed().unwrap());
    let mut text = String::new();
    for _ in 0..50 {
        text = roots_text(&session).await;
        if text.contains("file:///srv/b%20c") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(text.contains("file:///srv/b%20c") && text.contains("b c"), "{text}");
    drop(session);
    let wire = std::fs::read_to_string(&log).unwrap();
    assert!(wire.contains("logging/setLevel") && wire.contains("notifications/roots/list_changed"), "{wire}");
    assert!(wire.contains(r#"\"listChanged\":true"#), "roots are declared with listChanged: {wire}");
    assert!(check_wire_log(&log, Era::Legacy, false) > 5);
}
