//! Legacy client-hosted tasks: a server may ask for its `elicitation/create` or
//! `sampling/createMessage` to run as a task on Taskdeck's side (`params.task`, allowed by the
//! `tasks.requests` client capabilities). The request is answered at once with the task's handle;
//! the question goes to the user as any other; the server follows the task with `tasks/get`,
//! waits on `tasks/result` and may `tasks/cancel` it. The user's answer, whenever it comes while
//! the session lives, completes the task and reaches every `tasks/result` waiting on it.
//!
//! The session outlives its connection where the transport keeps one (legacy HTTP, resumed by a
//! later connection or process): so do its hosted tasks. The client keeps no store; it reports
//! each task it makes or changes as [`SessionEvent::Hosted`], which the host keeps, and takes them
//! back with the session itself ([`Resumable::hosted`](crate::Resumable)) on the connection that
//! resumes it, so a question answered hours later, after a restart, still reaches the server.

use std::collections::HashMap;

use serde_json::{Value, json};
use taskdeck_protocol::{ErrorObject, Message, Request, RequestId, TaskStatus, codes, legacy, meta, methods};

use crate::model::{QuestionKey, Reply, SessionEvent};
use crate::session::{Shared, keeps_session, lock, respond};

/// How often the server is told it may poll, in milliseconds.
const POLL_INTERVAL_MS: i64 = 1000;
/// The most hosted tasks one session keeps; past it the finished ones go first. With every one
/// of them still waiting for the user, a new one is refused rather than an unanswered question
/// dropped (the host bounds what it keeps the same way).
pub const MAX_HOSTED: usize = 256;

/// A hosted task as the host keeps it: what `tasks/get` and `tasks/result` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedTask {
    pub task_id: String,
    /// The server's request it was made for: the question's key.
    pub request: RequestId,
    /// The task as `tasks/get` answers it.
    pub task: Value,
    /// What `tasks/result` answers, once the user has.
    pub outcome: Option<Result<Value, ErrorObject>>,
}

impl HostedTask {
    pub fn is_terminal(&self) -> bool {
        self.task
            .get("status")
            .and_then(|s| serde_json::from_value::<TaskStatus>(s.clone()).ok())
            .is_some_and(|s| s.is_terminal())
    }
}

pub(crate) struct Hosted {
    task: legacy::tasks::Task,
    /// The request it was made for: the question's key.
    request: RequestId,
    outcome: Option<Result<Value, ErrorObject>>,
    /// `tasks/result` requests waiting for the outcome.
    waiting: Vec<RequestId>,
    /// Its place in the order tasks were made (or carried over), oldest first.
    seq: u64,
}

impl Hosted {
    fn kept(&self) -> HostedTask {
        HostedTask {
            task_id: self.task.task_id.clone(),
            request: self.request.clone(),
            task: serde_json::to_value(&self.task).unwrap_or_default(),
            outcome: self.outcome.clone(),
        }
    }
}

#[derive(Default)]
pub(crate) struct HostedTasks {
    by_id: HashMap<String, Hosted>,
    by_request: HashMap<RequestId, String>,
    next: u64,
}

impl HostedTasks {
    /// Makes room for one more: finished tasks first, oldest first, then (only when `live_too`)
    /// the oldest of all. Whether there is room now.
    fn make_room(&mut self, live_too: bool) -> bool {
        while self.by_id.len() >= MAX_HOSTED {
            let oldest = |done: bool| {
                self.by_id
                    .iter()
                    .filter(|(_, h)| !done || h.task.status.is_terminal())
                    .min_by_key(|(_, h)| h.seq)
                    .map(|(k, _)| k.clone())
            };
            let Some(k) = oldest(true).or_else(|| live_too.then(|| oldest(false)).flatten()) else { return false };
            if let Some(h) = self.by_id.remove(&k) {
                self.by_request.remove(&h.request);
            }
        }
        true
    }

    fn insert(&mut self, hosted: Hosted) {
        self.by_request.insert(hosted.request.clone(), hosted.task.task_id.clone());
        self.by_id.insert(hosted.task.task_id.clone(), hosted);
    }

    /// Whether the session holds as many unanswered hosted tasks as it keeps.
    fn full_of_live(&mut self) -> bool {
        !self.make_room(false)
    }
}

/// Tells the host what to keep of a task, where the session outlives the connection.
fn report(shared: &Shared, kept: Option<HostedTask>) {
    if let Some(kept) = kept
        && keeps_session(shared)
    {
        shared.handler.on_event(SessionEvent::Hosted(kept));
    }
}

/// Takes up the tasks a host kept for this session (see the module's doc). One already known is
/// left as it is; one whose task cannot be read is dropped.
pub(crate) fn carry(shared: &Shared, tasks: Vec<HostedTask>) {
    let mut state = lock(&shared.state);
    let hosted = &mut state.hosted;
    for t in tasks {
        if hosted.by_id.contains_key(&t.task_id) {
            continue;
        }
        let Ok(task) = serde_json::from_value::<legacy::tasks::Task>(t.task) else { continue };
        if task.task_id != t.task_id {
            continue;
        }
        hosted.next += 1;
        let seq = hosted.next;
        // The host kept no more than a session holds; should it have, the oldest give way.
        hosted.make_room(true);
        hosted.insert(Hosted { task, request: t.request, outcome: t.outcome, waiting: Vec::new(), seq });
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The task made for request `id` (whose `params.task` is `task`): its handle, to answer the
/// request with at once; `None` when the session already holds [`MAX_HOSTED`] questions nobody
/// has answered, and the request is to be refused.
pub(crate) fn accept(shared: &Shared, id: &RequestId, task: &Value) -> Option<Value> {
    let mut state = lock(&shared.state);
    let hosted = &mut state.hosted;
    if hosted.full_of_live() {
        return None;
    }
    hosted.next += 1;
    let seq = hosted.next;
    let mut random = [0u8; 8];
    let _ = getrandom::fill(&mut random);
    let task_id = format!("taskdeck-{}-{}", hosted.next, random.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let at = now();
    let t = legacy::tasks::Task {
        task_id: task_id.clone(),
        status: TaskStatus::InputRequired,
        status_message: Some("Waiting for the user".into()),
        created_at: at.clone(),
        last_updated_at: at,
        ttl: task.get("ttl").and_then(Value::as_i64),
        poll_interval: Some(POLL_INTERVAL_MS),
        extra: Default::default(),
    };
    let created = json!({ "task": t });
    let made = Hosted { task: t, request: id.clone(), outcome: None, waiting: Vec::new(), seq };
    let kept = made.kept();
    hosted.insert(made);
    drop(state);
    report(shared, Some(kept));
    Some(created)
}

/// Completes the task made for request `id` with the user's reply; `false` when no task was made
/// for it (the reply then answers the request itself).
pub(crate) fn complete(shared: &Shared, id: &RequestId, reply: &Reply) -> bool {
    let (task_id, waiting, outcome, kept) = {
        let mut state = lock(&shared.state);
        let hosted = &mut state.hosted;
        let Some(task_id) = hosted.by_request.get(id).cloned() else { return false };
        let Some(h) = hosted.by_id.get_mut(&task_id) else { return false };
        if h.task.status.is_terminal() {
            return true;
        }
        let outcome = match reply {
            Reply::Result(v) => Ok(v.clone()),
            Reply::Refused(e) => Err(e.clone()),
        };
        h.task.status = if outcome.is_ok() { TaskStatus::Completed } else { TaskStatus::Failed };
        h.task.status_message = None;
        h.task.last_updated_at = now();
        h.outcome = Some(outcome.clone());
        (task_id, std::mem::take(&mut h.waiting), outcome, h.kept())
    };
    report(shared, Some(kept));
    for w in waiting {
        respond(shared, outcome_message(w, &task_id, &outcome));
    }
    true
}

fn outcome_message(id: RequestId, task_id: &str, outcome: &Result<Value, ErrorObject>) -> Message {
    match outcome {
        Ok(v) => {
            let mut v = v.clone();
            if let Some(obj) = v.as_object_mut() {
                let m = obj.entry("_meta").or_insert_with(|| json!({}));
                if let Some(m) = m.as_object_mut() {
                    m.insert(meta::RELATED_TASK.into(), json!({ "taskId": task_id }));
                }
            }
            Message::result(id, v)
        }
        Err(e) => Message::error(Some(id), e.clone()),
    }
}

/// Serves the server's `tasks/get`, `tasks/result` and `tasks/cancel` about a task hosted here;
/// gives the request back when it names no such task.
pub(crate) fn on_request(shared: &Shared, r: Request) -> Option<Request> {
    let task_id = r.params.as_ref().and_then(|p| p.get("taskId")).and_then(Value::as_str).map(str::to_owned);
    let Some(task_id) = task_id.filter(|t| lock(&shared.state).hosted.by_id.contains_key(t)) else {
        return Some(r);
    };
    let mut withdrawn = None;
    let mut kept = None;
    let message = {
        let mut state = lock(&shared.state);
        let Some(h) = state.hosted.by_id.get_mut(&task_id) else { return Some(r) };
        match r.method.as_str() {
            methods::TASKS_GET => Some(Message::result(r.id, json!(h.task))),
            methods::TASKS_RESULT => match &h.outcome {
                Some(outcome) => Some(outcome_message(r.id, &task_id, outcome)),
                None if h.task.status == TaskStatus::Cancelled => {
                    Some(Message::error(Some(r.id), ErrorObject::new(codes::INTERNAL_ERROR, "the task was cancelled")))
                }
                None => {
                    h.waiting.push(r.id);
                    None
                }
            },
            methods::TASKS_CANCEL if h.task.status.is_terminal() => Some(Message::error(
                Some(r.id),
                ErrorObject::new(codes::INVALID_PARAMS, format!("the task is already {}", h.task.status)),
            )),
            methods::TASKS_CANCEL => {
                h.task.status = TaskStatus::Cancelled;
                h.task.last_updated_at = now();
                let waiting = std::mem::take(&mut h.waiting);
                let request = h.request.clone();
                let answer = Message::result(r.id, json!(h.task));
                kept = Some(h.kept());
                state.questions.remove(&request);
                withdrawn = Some((request, waiting));
                Some(answer)
            }
            _ => return Some(r),
        }
    };
    report(shared, kept);
    if let Some((request, waiting)) = withdrawn {
        for w in waiting {
            respond(shared, Message::error(Some(w), ErrorObject::new(codes::INTERNAL_ERROR, "the task was cancelled")));
        }
        shared.handler.on_event(SessionEvent::QuestionWithdrawn { key: QuestionKey::Request(request) });
    }
    if let Some(m) = message {
        respond(shared, m);
    }
    None
}
