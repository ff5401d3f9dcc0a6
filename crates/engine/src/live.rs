//! What only this process knows, and where each thing a server says goes: which driver follows
//! which task, remote ids to local ones, the plain calls in flight, the questions that can be
//! answered on the sessions open now, and the reports that overtook their task's handle.
//!
//! Routing keeps wire order per task: status reports and legacy questions join the task's
//! driver queue in the order they came, and those that arrive before the handle is registered
//! are kept (the latest [`MAX_EARLY`]) and handed over, in order, when it is.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use taskdeck_client::{Question, QuestionKey, Reply, TaskSnapshot};
use taskdeck_store::TaskRecord;
use tokio::sync::{mpsc, oneshot};

use crate::error::Result;
use crate::gate::lock;

/// How many early reports are kept for handles still to come; the oldest make room.
pub(crate) const MAX_EARLY: usize = 256;

/// What a task's driver is handed, in order.
pub(crate) enum DriverMsg {
    /// A status notification.
    Snapshot(Box<TaskSnapshot>),
    /// The server asked the user something about this task (legacy `elicitation/create`).
    Question(Box<Question>),
    /// The user's answer, to deliver and record in turn with the reports around it.
    Answer(Box<AnswerMsg>),
    /// Something changed locally (a cancel): look again.
    Wake,
}

pub(crate) struct AnswerMsg {
    /// The key the question can be answered under on the session open now.
    pub key: QuestionKey,
    pub response: Reply,
    /// What the event log keeps beside a sampling reply (`sampling::Note`).
    pub note: Option<serde_json::Value>,
    /// The answers to the other questions pending with it, given together (one `tasks/update`).
    pub more: Vec<(QuestionKey, Reply, Option<serde_json::Value>)>,
    pub reply: oneshot::Sender<Result<TaskRecord>>,
}

#[derive(Debug, Clone)]
pub(crate) struct LiveQuestion {
    pub key: QuestionKey,
    /// The connection that asked ([`connection_key`](crate::servers::connection_key):
    /// the server's process, or its HTTP session): a legacy question is an open request on that one.
    pub connection: Option<u32>,
}

/// Where a question or report went.
#[derive(Debug)]
pub(crate) enum Routed {
    /// Handed to the task's driver, or kept until its handle is registered.
    Queued,
    /// For this task, which has no driver to take it: record it now.
    Record { id: String, question: Question },
    /// Nobody here can be shown it: decline it on the server.
    Orphan(Question),
}

struct Early {
    server: String,
    remote: String,
    msg: DriverMsg,
}

#[derive(Default)]
struct State {
    remote: HashMap<(String, String), String>,
    drivers: HashMap<String, mpsc::UnboundedSender<DriverMsg>>,
    /// Local ids of plain calls in flight, per server: where a question without a task id belongs.
    plain_calls: HashMap<String, Vec<String>>,
    questions: HashMap<String, LiveQuestion>,
    early: VecDeque<Early>,
    /// Tasks whose driver stopped without an end, and why (the server is unavailable).
    stalled: HashMap<String, String>,
    /// The server each driven task runs on: only that server's progress is the task's.
    server_of: HashMap<String, String>,
}

#[derive(Default)]
pub(crate) struct Live(Mutex<State>);

impl Live {
    /// Registers a driver for the task, unless it has one; returns its queue.
    pub fn add_driver(&self, id: &str) -> Option<mpsc::UnboundedReceiver<DriverMsg>> {
        let mut live = lock(&self.0);
        if live.drivers.contains_key(id) {
            return None;
        }
        live.stalled.remove(id);
        let (tx, rx) = mpsc::unbounded_channel();
        live.drivers.insert(id.to_owned(), tx);
        Some(rx)
    }

    pub fn has_driver(&self, id: &str) -> bool {
        lock(&self.0).drivers.contains_key(id)
    }

    /// The driver stopped; `stalled` says why when the task has not ended.
    pub fn driver_ended(&self, id: &str, stalled: Option<String>) {
        let mut live = lock(&self.0);
        live.drivers.remove(id);
        live.server_of.remove(id);
        if let Some(reason) = stalled {
            live.stalled.insert(id.to_owned(), reason);
        }
    }

    /// Drops every driver's queue, which stops them.
    pub fn clear_drivers(&self) {
        let mut live = lock(&self.0);
        live.drivers.clear();
        live.server_of.clear();
    }

    /// The driver of `id` drives it on `server` (the task's record says which).
    pub fn drives_on(&self, id: &str, server: &str) {
        let mut live = lock(&self.0);
        if live.drivers.contains_key(id) {
            live.server_of.insert(id.to_owned(), server.to_owned());
        }
    }

    /// Hands a message to the task's driver; gives it back when there is none.
    pub fn send(&self, id: &str, msg: DriverMsg) -> std::result::Result<(), DriverMsg> {
        let tx = lock(&self.0).drivers.get(id).cloned();
        match tx {
            Some(tx) => tx.send(msg).map_err(|mpsc::error::SendError(msg)| msg),
            None => Err(msg),
        }
    }

    pub fn stalled(&self, id: &str) -> Option<String> {
        let live = lock(&self.0);
        if live.drivers.contains_key(id) { None } else { live.stalled.get(id).cloned() }
    }

    pub fn set_stalled(&self, id: &str, reason: String) {
        lock(&self.0).stalled.insert(id.to_owned(), reason);
    }

    pub fn call_started(&self, server: &str, id: &str) {
        lock(&self.0).plain_calls.entry(server.to_owned()).or_default().push(id.to_owned());
    }

    pub fn call_ended(&self, server: &str, id: &str) {
        if let Some(calls) = lock(&self.0).plain_calls.get_mut(server) {
            calls.retain(|c| c != id);
        }
    }

    pub fn open_question(&self, id: &str, question: LiveQuestion) {
        lock(&self.0).questions.insert(id.to_owned(), question);
    }

    pub fn question(&self, id: &str) -> Option<LiveQuestion> {
        lock(&self.0).questions.get(id).cloned()
    }

    pub fn close_question(&self, id: &str) {
        lock(&self.0).questions.remove(id);
    }

    /// The server withdrew a question (it cancelled its request).
    pub fn withdraw(&self, key: &QuestionKey) {
        lock(&self.0).questions.retain(|_, l| &l.key != key);
    }

    /// Whether progress for this local id, sent by `server`, has a driver to follow it: a
    /// progress token is the local task id, and another server that names it is not its server.
    pub fn is_driven_on(&self, id: &str, server: &str) -> bool {
        let live = lock(&self.0);
        live.drivers.contains_key(id) && live.server_of.get(id).is_some_and(|s| s == server)
    }

    /// The local task a server's log entry belongs to: the task its related-task id names, or
    /// the call in flight on that server whose request stream carried it (`call`, the local id the
    /// session knows it by; none when that call is not in flight), or the one plain call in flight on that server (an entry sent during
    /// it). Never a guess among several: an entry tied to the wrong task would mislead more than
    /// one left on the server's log.
    pub fn task_of_log(&self, server: &str, remote: Option<&str>, call: Option<&str>) -> Option<String> {
        let live = lock(&self.0);
        let calls = live.plain_calls.get(server).map(Vec::as_slice).unwrap_or_default();
        match (remote, call) {
            (Some(remote), _) => Self::local_for_remote(&live, server, remote),
            // The stream names the call: another one in flight is never the answer.
            (None, Some(call)) => calls.iter().find(|c| *c == call).cloned(),
            (None, None) => match calls {
                [only] => Some(only.clone()),
                _ => None,
            },
        }
    }

    fn local_for_remote(live: &State, server: &str, remote: &str) -> Option<String> {
        live.remote.get(&(server.to_owned(), remote.to_owned())).cloned()
    }

    /// Makes the task's remote id routable and hands its driver what came for it early, in
    /// order. Returns the questions nobody could take, for the caller to record.
    pub fn register_remote(&self, rec: &TaskRecord) -> Vec<Question> {
        let Some(remote) = &rec.remote_task_id else { return Vec::new() };
        let (early, driver) = {
            let mut live = lock(&self.0);
            live.remote.insert((rec.server.clone(), remote.clone()), rec.id.clone());
            let (mine, rest): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut live.early)
                .into_iter()
                .partition(|e| e.server == rec.server && &e.remote == remote);
            live.early = rest;
            (mine, live.drivers.get(&rec.id).cloned())
        };
        let mut unsent = Vec::new();
        for e in early {
            let back = match &driver {
                Some(tx) => tx.send(e.msg).err().map(|mpsc::error::SendError(msg)| msg),
                None => Some(e.msg),
            };
            // Without a driver a report has nobody to act on it; a question is still the user's.
            if let Some(DriverMsg::Question(q)) = back {
                unsent.push(*q);
            }
        }
        unsent
    }

    /// Keeps a report or question for a remote task whose handle has not been registered yet.
    /// Returns a question the full buffer had to drop.
    fn keep_early(live: &mut State, server: &str, remote: &str, msg: DriverMsg) -> Option<Question> {
        let dropped = if live.early.len() >= MAX_EARLY { live.early.pop_front() } else { None };
        live.early.push_back(Early { server: server.to_owned(), remote: remote.to_owned(), msg });
        let old = dropped?;
        tracing::warn!(server = %old.server, task = %old.remote, "a report for a task no one here started was dropped");
        match old.msg {
            DriverMsg::Question(q) => Some(*q),
            _ => None,
        }
    }

    /// A status notification goes to its task's driver, or waits for the task's handle.
    pub fn route_snapshot(&self, server: &str, s: Box<TaskSnapshot>) -> Vec<Routed> {
        let mut live = lock(&self.0);
        match Self::local_for_remote(&live, server, &s.task_id) {
            Some(id) => {
                if let Some(tx) = live.drivers.get(&id) {
                    let _ = tx.send(DriverMsg::Snapshot(s));
                }
                vec![Routed::Queued]
            }
            None => {
                let remote = s.task_id.clone();
                let dropped = Self::keep_early(&mut live, server, &remote, DriverMsg::Snapshot(s));
                std::iter::once(Routed::Queued).chain(dropped.map(Routed::Orphan)).collect()
            }
        }
    }

    /// A question names its task (legacy related-task), or belongs to the one plain call in
    /// flight on that server; failing both, the only task being driven there. Anything else
    /// cannot be shown to the right person.
    pub fn route_question(&self, server: &str, q: Question) -> Vec<Routed> {
        let mut live = lock(&self.0);
        let target = match &q.task_id {
            Some(remote) => match Self::local_for_remote(&live, server, remote) {
                Some(id) => id,
                None => {
                    let remote = remote.clone();
                    let dropped = Self::keep_early(&mut live, server, &remote, DriverMsg::Question(Box::new(q)));
                    return std::iter::once(Routed::Queued).chain(dropped.map(Routed::Orphan)).collect();
                }
            },
            None => {
                let only = match live.plain_calls.get(server).map(Vec::as_slice) {
                    Some([only]) => Some(only.clone()),
                    _ => {
                        let driven: Vec<&String> = live
                            .remote
                            .iter()
                            .filter(|((s, _), id)| s == server && live.drivers.contains_key(*id))
                            .map(|(_, id)| id)
                            .collect();
                        (driven.len() == 1).then(|| driven[0].clone())
                    }
                };
                return vec![match only {
                    Some(id) => Routed::Record { id, question: q },
                    None => Routed::Orphan(q),
                }];
            }
        };
        // A task's driver applies its status reports in the order they came; its question joins
        // that queue, or a `working` sent just before the question, applied after it, would take
        // the question away again.
        let back = match live.drivers.get(&target) {
            Some(tx) => tx.send(DriverMsg::Question(Box::new(q))).err().map(|mpsc::error::SendError(m)| m),
            None => Some(DriverMsg::Question(Box::new(q))),
        };
        match back {
            Some(DriverMsg::Question(q)) => vec![Routed::Record { id: target, question: *q }],
            _ => vec![Routed::Queued],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskdeck_client::QuestionRequest;
    use taskdeck_protocol::{RequestId, TaskStatus};

    fn snapshot(remote: &str, status: TaskStatus) -> Box<TaskSnapshot> {
        Box::new(TaskSnapshot::bare(remote, status, "2026-01-01T00:00:00Z"))
    }

    fn question(remote: Option<&str>, n: i64) -> Question {
        let request = QuestionRequest { method: "elicitation/create".into(), params: json!({}) };
        Question::decode(QuestionKey::Request(RequestId::Number(n)), remote.map(str::to_owned), request)
    }

    fn record(id: &str, remote: &str) -> TaskRecord {
        let now = chrono::Utc::now();
        serde_json::from_value(json!({
            "id": id, "server": "s", "tool": "t", "arguments": {}, "idempotency_key": id, "mode": "task",
            "era": "legacy", "remote_task_id": remote, "status": "working", "status_message": null,
            "progress": null, "question": null, "answer": null, "result": null, "error": null,
            "ttl_ms": null, "poll_interval_ms": null,
            "created_at": now.to_rfc3339(), "updated_at": now.to_rfc3339(),
        }))
        .unwrap()
    }

    fn drain(rx: &mut mpsc::UnboundedReceiver<DriverMsg>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(m) = rx.try_recv() {
            out.push(match m {
                DriverMsg::Snapshot(s) => format!("status {}", s.status),
                DriverMsg::Question(q) => format!("question {}", q.key),
                DriverMsg::Answer(_) => "answer".into(),
                DriverMsg::Wake => "wake".into(),
            });
        }
        out
    }

    #[test]
    fn reports_and_questions_before_the_handle_reach_the_driver_in_wire_order() {
        let live = Live::default();
        let mut rx = live.add_driver("local").unwrap();
        live.route_snapshot("s", snapshot("r", TaskStatus::Working));
        live.route_snapshot("s", snapshot("r", TaskStatus::InputRequired));
        live.route_question("s", question(Some("r"), 1));
        live.route_snapshot("s", snapshot("other", TaskStatus::Working));
        assert!(drain(&mut rx).is_empty(), "nothing is routable before the handle");
        assert!(live.register_remote(&record("local", "r")).is_empty());
        assert_eq!(drain(&mut rx), ["status working", "status input_required", "question request 1"]);
        live.route_snapshot("s", snapshot("r", TaskStatus::Working));
        assert_eq!(drain(&mut rx), ["status working"]);
    }

    #[test]
    fn the_early_buffer_keeps_the_latest_and_gives_back_the_questions_it_drops() {
        let live = Live::default();
        live.route_question("s", question(Some("gone"), 0));
        for i in 0..MAX_EARLY - 1 {
            live.route_snapshot("s", snapshot(&format!("r{i}"), TaskStatus::Working));
        }
        let routed = live.route_snapshot("s", snapshot("last", TaskStatus::Working));
        assert!(
            matches!(routed.as_slice(), [Routed::Queued, Routed::Orphan(q)] if q.key == QuestionKey::Request(RequestId::Number(0)))
        );
    }

    #[test]
    fn a_question_without_a_task_goes_to_the_one_plain_call_in_flight() {
        let live = Live::default();
        live.call_started("s", "call-1");
        assert!(
            matches!(live.route_question("s", question(None, 3)).as_slice(), [Routed::Record { id, .. }] if id == "call-1")
        );
        live.call_started("s", "call-2");
        assert!(matches!(live.route_question("s", question(None, 4)).as_slice(), [Routed::Orphan(_)]));
    }

    #[test]
    fn progress_is_the_tasks_only_from_the_server_it_runs_on() {
        let live = Live::default();
        let _rx = live.add_driver("local").unwrap();
        assert!(!live.is_driven_on("local", "s"), "not before the driver says where");
        live.drives_on("local", "s");
        assert!(live.is_driven_on("local", "s"));
        assert!(!live.is_driven_on("local", "other"), "another server naming our token");
        live.driver_ended("local", None);
        assert!(!live.is_driven_on("local", "s"));
    }

    #[test]
    fn an_early_question_for_a_task_without_a_driver_is_given_back_to_record() {
        let live = Live::default();
        live.route_question("s", question(Some("r"), 5));
        let back = live.register_remote(&record("local", "r"));
        assert_eq!(back.len(), 1);
    }
}
