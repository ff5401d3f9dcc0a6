//! The session against a transport that is not a process: a scripted peer on in-memory channels.
//! What holds here holds for any transport, stdio or the next one.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::Recorder;
use taskdeck_client::transport::{
    BoxFuture, Connection, FrameError, FrameSource, Identity, Received, SendError, Transport,
};
use taskdeck_client::{ClientError, Discard, Session, SessionEvent, SessionOptions};
use taskdeck_protocol::Era;
use tokio::sync::mpsc;

/// What the session did to its transport, for the test to check.
#[derive(Default)]
struct Seen {
    closed_with: Mutex<Option<Duration>>,
    killed: AtomicBool,
    dropped: AtomicBool,
}

struct MemoryTransport {
    identity: Identity,
    to_peer: mpsc::UnboundedSender<String>,
    seen: Arc<Seen>,
}

impl Transport for MemoryTransport {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn send(&self, message: String) -> Result<(), SendError> {
        if message.len() > 64 * 1024 {
            return Err(SendError::TooLarge { limit: 64 * 1024 });
        }
        self.to_peer.send(message).map_err(|_| SendError::Closed { reason: "the peer is gone".into() })
    }

    fn close(&self, grace: Duration) -> BoxFuture<'_, ()> {
        *self.seen.closed_with.lock().unwrap() = Some(grace);
        Box::pin(async {})
    }

    fn kill(&self) {
        self.seen.killed.store(true, Ordering::SeqCst);
    }
}

impl Drop for MemoryTransport {
    fn drop(&mut self) {
        self.seen.dropped.store(true, Ordering::SeqCst);
    }
}

struct MemoryFrames(mpsc::Receiver<Received>);

impl FrameSource for MemoryFrames {
    fn receive(&mut self) -> BoxFuture<'_, Option<Received>> {
        Box::pin(self.0.recv())
    }
}

/// The peer's side: what the session sent, and a way to send it anything a transport can deliver.
struct Peer {
    from_session: mpsc::UnboundedReceiver<String>,
    to_session: mpsc::Sender<Received>,
}

impl Peer {
    async fn next_request(&mut self) -> Value {
        loop {
            let text = tokio::time::timeout(Duration::from_secs(5), self.from_session.recv())
                .await
                .expect("the session sent nothing")
                .expect("the session closed the transport");
            let msg: Value = serde_json::from_str(&text).unwrap();
            if msg.get("id").is_some() {
                return msg;
            }
        }
    }

    async fn deliver(&self, item: Received) {
        self.to_session.send(item).await.unwrap();
    }

    async fn answer(&self, request: &Value, result: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        self.deliver(Received::Message(msg.to_string())).await;
    }

    /// A legacy server's handshake: it does not know `server/discover`, then initializes.
    async fn handshake(&mut self) {
        let probe = self.next_request().await;
        assert_eq!(probe["method"], "server/discover");
        let error =
            json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32601, "message": "no such method"}});
        self.deliver(Received::Message(error.to_string())).await;
        let init = self.next_request().await;
        assert_eq!(init["method"], "initialize");
        self.answer(
            &init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}}),
        )
        .await;
    }
}

fn memory_connection() -> (Connection, Peer, Arc<Seen>) {
    let (to_peer, from_session) = mpsc::unbounded_channel();
    let (to_session, rx) = mpsc::channel(16);
    let seen = Arc::new(Seen::default());
    let transport = MemoryTransport {
        identity: Identity { name: "memory".into(), kind: "memory", peer: "a scripted peer".into(), pid: None },
        to_peer,
        seen: seen.clone(),
    };
    let connection = Connection { transport: Box::new(transport), frames: Box::new(MemoryFrames(rx)) };
    (connection, Peer { from_session, to_session }, seen)
}

fn opts() -> SessionOptions {
    SessionOptions {
        probe_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(2),
        ..Default::default()
    }
}

async fn connected(rec: Arc<Recorder>) -> (Session, Peer, Arc<Seen>) {
    let (connection, mut peer, seen) = memory_connection();
    let (session, ()) = tokio::join!(Session::connect_with(connection, opts(), rec), peer.handshake());
    (session.expect("the handshake over memory succeeds"), peer, seen)
}

#[tokio::test]
async fn a_session_over_an_in_memory_transport_handshakes_and_correlates_answers() {
    let rec = Recorder::new();
    let (session, mut peer, _seen) = connected(rec.clone()).await;
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.info().name.as_deref(), Some("scripted"));
    assert_eq!((session.name(), session.pid()), ("memory", None));
    let peer_task = tokio::spawn(async move {
        let list = peer.next_request().await;
        assert_eq!(list["method"], "tools/list");
        // An answer to a request never made, then the real one.
        peer.deliver(Received::Message(json!({"jsonrpc": "2.0", "id": 999, "result": {}}).to_string())).await;
        peer.answer(&list, json!({"tools": [{"name": "job", "inputSchema": {"type": "object"}}]})).await;
        peer
    });
    let tools = session.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "job");
    let _peer = peer_task.await.unwrap();
    assert_eq!(rec.discards(), vec![Discard::UnknownResponse]);
    assert!(session.dead().is_none());
}

#[tokio::test]
async fn unreadable_frames_are_discarded_and_stderr_arrives_in_order() {
    let rec = Recorder::new();
    let (session, peer, _seen) = connected(rec.clone()).await;
    peer.deliver(Received::Stderr("first".into())).await;
    peer.deliver(Received::Unreadable {
        error: FrameError::Invalid { detail: "a broken event".into() },
        start: String::new(),
    })
    .await;
    peer.deliver(Received::Message("{not json".into())).await;
    peer.deliver(Received::Stderr("second".into())).await;
    rec.wait_for(
        Duration::from_secs(5),
        "the second stderr line",
        |e| matches!(e, SessionEvent::Stderr(l) if l == "second"),
    )
    .await;
    let seen: Vec<String> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            SessionEvent::Stderr(l) => Some(format!("stderr {l}")),
            SessionEvent::Discarded { reason, detail } => Some(format!("{reason:?} {detail}")),
            _ => None,
        })
        .collect();
    assert_eq!(seen[0], "stderr first");
    assert_eq!(seen[1], "Malformed a broken event");
    assert!(seen[2].starts_with("Malformed "), "{seen:?}");
    assert_eq!(seen[3], "stderr second");
    assert_eq!(session.stderr(), vec!["first", "second"]);
}

#[tokio::test]
async fn a_closed_transport_fails_the_open_request_with_its_reason_but_not_its_stderr() {
    let rec = Recorder::new();
    let (session, mut peer, _seen) = connected(rec.clone()).await;
    let peer_task = tokio::spawn(async move {
        let list = peer.next_request().await;
        assert_eq!(list["method"], "tools/list");
        peer.deliver(Received::Stderr("out of cheese".into())).await;
        peer.deliver(Received::Closed { reason: "the peer hung up".into() }).await;
        peer
    });
    let err = session.list_tools().await.unwrap_err();
    let ClientError::ServerExited { reason, .. } = &err else { panic!("expected ServerExited, got {err}") };
    // Stderr may hold a secret the server printed: it stays in the log, out of the task's error.
    assert_eq!(reason, "the peer hung up; its last stderr lines are in the server's log");
    assert_eq!(session.stderr(), vec!["out of cheese"]);
    rec.wait_for(Duration::from_secs(2), "Closed", |e| matches!(e, SessionEvent::Closed { .. })).await;
    assert_eq!(session.ping(Duration::from_secs(1)).await.unwrap_err(), err, "later requests fail the same way");
    drop(peer_task.await.unwrap());
}

#[tokio::test]
async fn a_transport_that_ends_without_a_word_still_fails_the_open_request() {
    let (session, mut peer, _seen) = connected(Recorder::new()).await;
    let peer_task = tokio::spawn(async move {
        peer.next_request().await;
        // Dropping the peer ends the frame source: no `Closed`, just nothing more.
    });
    let err = session.list_tools().await.unwrap_err();
    assert!(matches!(&err, ClientError::ServerExited { reason, .. } if reason == "the connection closed"), "{err}");
    peer_task.await.unwrap();
}

#[tokio::test]
async fn shutdown_closes_the_transport_and_the_last_session_dropped_drops_it() {
    let (session, _peer, seen) = connected(Recorder::new()).await;
    session.shutdown(Duration::from_millis(300)).await;
    assert_eq!(*seen.closed_with.lock().unwrap(), Some(Duration::from_millis(300)));
    session.kill();
    assert!(seen.killed.load(Ordering::SeqCst));
    let clone = session.clone();
    drop(session);
    assert!(!seen.dropped.load(Ordering::SeqCst), "a clone still holds the connection");
    drop(clone);
    assert!(seen.dropped.load(Ordering::SeqCst), "the reader task must not keep the connection alive");
}

#[tokio::test]
async fn a_failed_handshake_kills_the_transport() {
    let (connection, mut peer, seen) = memory_connection();
    let script = async move {
        let probe = peer.next_request().await;
        peer.answer(&probe, json!({"supportedVersions": ["1999-01-01"]})).await;
        peer
    };
    let (result, _peer) = tokio::join!(Session::connect_with(connection, opts(), Recorder::new()), script);
    let err = result.err().expect("no common version");
    assert!(matches!(err, ClientError::Handshake { .. }), "{err}");
    assert!(seen.killed.load(Ordering::SeqCst));
}

/// A 2025-era server that answers every method it does not know with an empty result (the
/// conformance suite's servers do) is a legacy server, not a failed handshake.
#[tokio::test]
async fn an_empty_answer_to_the_era_probe_means_a_legacy_server() {
    let (connection, mut peer, _seen) = memory_connection();
    let server = async move {
        let probe = peer.next_request().await;
        assert_eq!(probe["method"], "server/discover");
        peer.answer(&probe, json!({})).await;
        let init = peer.next_request().await;
        assert_eq!(init["method"], "initialize", "the probe's odd answer is followed by initialize");
        peer.answer(
            &init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "lenient", "version": "1"}}),
        )
        .await;
        peer
    };
    let (session, _peer) = tokio::join!(Session::connect_with(connection, opts(), Recorder::new()), server);
    let session = session.expect("a legacy server behind a lenient probe answer connects");
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.info().name.as_deref(), Some("lenient"));
}

#[tokio::test]
async fn a_question_the_server_makes_a_task_is_hosted_here_until_answered_or_cancelled() {
    let rec = Recorder::new();
    let (session, mut peer, _seen) = connected(rec.clone()).await;
    let send = |msg: Value| Received::Message(msg.to_string());
    let ask = |id: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage", "params": {"task": {"ttl": 60000},
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}})
    };
    let call = |id: &str, method: &str, task: &str| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"taskId": task}});

    // The handle comes at once; the question goes to the user.
    peer.deliver(send(ask("s1"))).await;
    let handle = peer.next_request().await;
    assert_eq!(
        (handle["id"].as_str(), handle["result"]["task"]["status"].as_str()),
        (Some("s1"), Some("input_required"))
    );
    assert_eq!(handle["result"]["task"]["ttl"], 60000);
    let task = handle["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    let key =
        match rec.wait_for(Duration::from_secs(5), "the question", |e| matches!(e, SessionEvent::Question(_))).await {
            SessionEvent::Question(q) => q.key,
            other => unreachable!("{other:?}"),
        };
    peer.deliver(send(call("g1", "tasks/get", &task))).await;
    assert_eq!(peer.next_request().await["result"]["status"], "input_required");
    // A tasks/result waits for the answer, which reaches it with the related task.
    peer.deliver(send(call("r1", "tasks/result", &task))).await;
    let reply = json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "human"});
    session.reply(&key, None, taskdeck_client::Reply::Result(reply)).await.unwrap();
    let result = peer.next_request().await;
    assert_eq!((result["id"].as_str(), result["result"]["content"]["text"].as_str()), (Some("r1"), Some("hello")));
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task.as_str());
    peer.deliver(send(call("g2", "tasks/get", &task))).await;
    assert_eq!(peer.next_request().await["result"]["status"], "completed");

    // Cancelled by the server: the question is withdrawn, and answering it finds nothing.
    peer.deliver(send(ask("s2"))).await;
    let task2 = peer.next_request().await["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    peer.deliver(send(call("c1", "tasks/cancel", &task2))).await;
    assert_eq!(peer.next_request().await["result"]["status"], "cancelled");
    rec.wait_for(Duration::from_secs(5), "the withdrawal", |e| matches!(e, SessionEvent::QuestionWithdrawn { .. }))
        .await;
    let key2 = taskdeck_client::QuestionKey::Request("s2".into());
    let refused = taskdeck_client::Reply::Refused(taskdeck_protocol::ErrorObject::new(-1, "no"));
    assert!(matches!(session.reply(&key2, None, refused).await, Err(ClientError::NoSuchQuestion { .. })));

    // A task Taskdeck does not host is an error the server reads.
    peer.deliver(send(call("g3", "tasks/get", "nope"))).await;
    assert_eq!(peer.next_request().await["error"]["code"], -32602);
}

#[tokio::test]
async fn a_session_full_of_unanswered_hosted_questions_refuses_the_next_and_drops_none() {
    let rec = Recorder::new();
    let (session, mut peer, _seen) = connected(rec.clone()).await;
    let send = |msg: Value| Received::Message(msg.to_string());
    let ask = |n: usize| {
        json!({"jsonrpc": "2.0", "id": format!("s{n}"), "method": "elicitation/create", "params": {"task": {},
            "mode": "form", "message": "which?", "requestedSchema": {"type": "object", "properties": {}}}})
    };
    let questions = || rec.events().iter().filter(|e| matches!(e, SessionEvent::Question(_))).count();
    let max = taskdeck_client::MAX_HOSTED;
    for n in 0..max {
        peer.deliver(send(ask(n))).await;
        assert!(peer.next_request().await["result"]["task"]["taskId"].is_string(), "question {n} gets a handle");
    }
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while questions() < max {
        assert!(std::time::Instant::now() < until, "{} of {max} questions reached the user", questions());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // One more while none is answered: the server reads a refusal; no question is dropped for it.
    peer.deliver(send(ask(max))).await;
    let refused = peer.next_request().await;
    assert_eq!((refused["id"].as_str(), refused["error"]["code"].as_i64()), (Some(&*format!("s{max}")), Some(-32603)));
    assert_eq!(questions(), max, "the refused request reached the user");
    let first = taskdeck_client::QuestionKey::Request("s0".into());
    let accept = json!({"action": "accept", "content": {}});
    session.reply(&first, None, taskdeck_client::Reply::Result(accept.clone())).await.unwrap();

    // The answered one makes room, and every other question can still be answered.
    peer.deliver(send(ask(max + 1))).await;
    assert!(peer.next_request().await["result"]["task"]["taskId"].is_string(), "room was made by the answered one");
    let last = taskdeck_client::QuestionKey::Request("s1".into());
    session.reply(&last, None, taskdeck_client::Reply::Result(accept)).await.unwrap();
}
