//! What a server's report means for a task: the one place a driver's updates are decided. Pure,
//! in the spirit of `store/state.rs::plan`: given the task as stored (and the little the engine
//! knows beside it) and a snapshot from the server, the actions to carry out. Which status the
//! task may move to is still the store's decision; this decides what the engine asks of it.
//!
//! No era is named here: the client's snapshot says whether a result is still to come
//! (`result_follows`) and whether its question list is the whole truth (`lists_questions`).

use serde_json::Value;
use taskdeck_client::{ClientError, Question, QuestionKey, ResponseFault, TaskSnapshot};
use taskdeck_protocol::{ErrorObject, TaskStatus};
use taskdeck_store::{FailureReason, Progress, TaskError, TaskRecord, Update};

/// One thing to do about a report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Written with the next flush; only the latest value per task.
    Progress(Progress),
    /// A new status message on a task that stays `working`: written with the next flush.
    DeferMessage { message: Option<String>, server_status: Option<String> },
    /// Written at once.
    Write(Update),
    /// The server waits on the user: recorded, and `key` kept to answer it on this session.
    Ask { key: QuestionKey, update: Update },
}

/// What the engine knows beside the stored record.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Context {
    /// The status message the task shows once the messages waiting for the flush are written.
    pub latest_message: Option<String>,
    /// The pending question was asked on the session open now (and not withdrawn), so it can
    /// still be answered.
    pub question_open: bool,
    /// The server's sampling policy refuses its requests: they are answered without asking.
    pub refuse_sampling: bool,
}

pub(crate) fn decide(rec: &TaskRecord, ctx: &Context, s: &TaskSnapshot) -> Vec<Action> {
    let mut out = Vec::new();
    if let Some(p) = &s.progress {
        let progress = Progress { progress: p.progress, total: p.total, message: p.message.clone() };
        // A modern server repeats its progress on every poll; written again it would only move the
        // task's `updated_at`, and a question would never look settled to whoever waits on it.
        if rec.progress.as_ref() != Some(&progress) {
            out.push(Action::Progress(progress));
        }
    }
    let server_status = Some(s.status.to_string());
    let waiting = rec.status == TaskStatus::InputRequired && rec.question.is_some();
    // What the user is asked; the rest of a modern task's input requests the driver answers
    // (`inputs.rs`).
    let asked = |q: &Question| q.asks_the_user() && !(ctx.refuse_sampling && q.is_sampling());
    match s.status {
        // A server whose questions come as requests of their own may go on saying `working`
        // while one is open (server-quirks 2); only its answer, its withdrawal or the task's end
        // takes the question away. A server that lists its questions has taken it back.
        TaskStatus::Working if waiting && ctx.question_open && !s.lists_questions => {}
        TaskStatus::Working if rec.status == TaskStatus::Working => {
            if ctx.latest_message != s.status_message {
                out.push(Action::DeferMessage { message: s.status_message.clone(), server_status });
            }
        }
        TaskStatus::Working => out.push(Action::Write(Update::Status {
            status: TaskStatus::Working,
            message: s.status_message.clone(),
            server_status,
        })),
        TaskStatus::InputRequired => match s.questions.iter().find(|q| asked(q) && !answered(rec, q)) {
            // Only what was answered already: the server has not taken the answer into its list
            // yet (its acknowledgement is eventually consistent), which is no news.
            None if s.questions.iter().any(&asked) => {}
            // Several at once: all of them are the user's, asked together and answered together.
            Some(_) if s.questions.iter().filter(|q| asked(q) && !answered(rec, q)).count() > 1 => {
                let questions: Vec<Question> =
                    s.questions.iter().filter(|q| asked(q) && !answered(rec, q)).cloned().collect();
                let message = s.status_message.clone().or_else(|| questions[0].message.clone());
                let repeated = rec.status == TaskStatus::InputRequired
                    && rec.questions == questions
                    && rec.status_message == message;
                if !repeated {
                    let key = questions[0].key.clone();
                    out.push(Action::Ask { key, update: Update::Questions { questions, message } });
                }
            }
            Some(q) => {
                let asked = ask(q, s.status_message.clone());
                let repeated = matches!(&asked, Action::Ask { update: Update::Question { question, message }, .. }
                    if rec.status == TaskStatus::InputRequired
                        && rec.question.as_ref() == Some(&**question)
                        && rec.status_message == *message);
                if !repeated {
                    out.push(asked);
                }
            }
            // The question comes as a request of its own; keep the one we have.
            None => {
                if rec.status != TaskStatus::InputRequired || rec.status_message != s.status_message {
                    out.push(Action::Write(Update::Status {
                        status: TaskStatus::InputRequired,
                        message: s.status_message.clone(),
                        server_status,
                    }));
                }
            }
        },
        TaskStatus::Cancelled => out.push(Action::Write(Update::Cancelled {
            reason: s.status_message.clone().or_else(|| Some("cancelled".into())),
            server_status,
        })),
        // Over, but how comes in a later snapshot.
        TaskStatus::Completed | TaskStatus::Failed if s.result_follows => {}
        TaskStatus::Completed | TaskStatus::Failed => out.push(Action::Write(match (&s.result, &s.error) {
            // A tool error is a result too (`isError`); the store makes it failed, in either era.
            (Some(result), _) => {
                Update::Completed { result: serde_json::to_value(result).unwrap_or_default(), server_status }
            }
            (None, Some(error)) => Update::Failed { error: from_rpc(error), server_status },
            (None, None) => Update::Failed {
                error: TaskError {
                    code: None,
                    message: format!("the server said {} but sent no result", s.status),
                    reason: Some(FailureReason::NoResult),
                },
                server_status,
            },
        })),
    }
    out
}

/// Whether the listed question is the one the task's last answer answered. Only a modern key says
/// so: it is unique for the task's lifetime (the extension asks clients to de-duplicate keys across
/// polls), while a legacy request id may come again, from a restarted server, for a new question.
fn answered(rec: &TaskRecord, q: &Question) -> bool {
    matches!(q.key, QuestionKey::InputKey(_))
        && (rec.answer.as_ref().is_some_and(|a| a.key == q.key.to_text())
            || rec.answered_keys.contains(&q.key.to_text()))
}

/// The question a server asked, as recorded: kept whole under its key so its form can be rebuilt
/// after a restart; its message is the task's, or else the question's own.
pub(crate) fn ask(q: &Question, status_message: Option<String>) -> Action {
    let message = status_message.or_else(|| q.message.clone());
    Action::Ask { key: q.key.clone(), update: Update::Question { question: Box::new(q.clone()), message } }
}

/// A failure Taskdeck decides itself.
pub(crate) fn failure(code: Option<i64>, message: impl Into<String>, reason: FailureReason) -> Update {
    Update::Failed { error: TaskError { code, message: message.into(), reason: Some(reason) }, server_status: None }
}

fn from_rpc(e: &ErrorObject) -> TaskError {
    TaskError {
        code: Some(e.code),
        message: e.message.clone(),
        reason: e.data.as_ref().and_then(|d| d.get("reason")).and_then(Value::as_str).map(FailureReason::from),
    }
}

/// How a request that failed on the client's side ends a task.
pub(crate) fn error_of(e: &ClientError) -> TaskError {
    match e {
        ClientError::Rpc { error, .. } => from_rpc(error),
        ClientError::ServerExited { .. } => {
            TaskError { code: None, message: e.to_string(), reason: Some(FailureReason::Interrupted) }
        }
        other => TaskError { code: None, message: other.to_string(), reason: reason_of(other) },
    }
}

/// The status message of a task whose server wants a sign-in: the way out, for the user.
pub(crate) fn sign_in_hint(server: &str) -> String {
    format!("Sign-in needed: run `taskdeck-cli login {server}` (or sign in from the app)")
}

/// A request of `rec` failed because its server wants a (new) sign-in: the task is not failed,
/// whatever the request was (a 401 is refused before the server does anything, so even a start
/// is sent again after the sign-in). It stays as it is, saying what to do; `None` for any other
/// failure. The one policy for every place a task's request can fail.
pub(crate) fn sign_in_needed(rec: &TaskRecord, e: &ClientError) -> Option<Update> {
    if !crate::supervisor::needs_sign_in(e) || rec.status.is_terminal() {
        return None;
    }
    Some(Update::Status { status: rec.status, message: Some(sign_in_hint(&rec.server)), server_status: None })
}

/// The reason a request that failed without a server's word gives a task.
fn reason_of(e: &ClientError) -> Option<FailureReason> {
    match e {
        ClientError::UnreadableResponse { fault: ResponseFault::TooLarge { .. }, .. } => {
            Some(FailureReason::ResponseTooLarge)
        }
        ClientError::UnreadableResponse { .. }
        | ClientError::WrongTask { .. }
        | ClientError::InvalidResponse { .. } => Some(FailureReason::ServerUnreadable),
        ClientError::Timeout { .. } => Some(FailureReason::ServerUnresponsive),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskdeck_client::QuestionRequest;
    use taskdeck_protocol::types::CallToolResult;
    use taskdeck_protocol::{Era, RequestId, methods};
    use taskdeck_store::Mode;

    fn record(status: TaskStatus, message: Option<&str>, question: Option<&Question>) -> TaskRecord {
        let now = chrono::Utc::now();
        let question = question.map(|q| match ask(q, None) {
            Action::Ask { update: Update::Question { question, .. }, .. } => *question,
            other => unreachable!("{other:?}"),
        });
        TaskRecord {
            id: "t".into(),
            server: "s".into(),
            tool: "tool".into(),
            arguments: json!({}),
            idempotency_key: "k".into(),
            mode: Mode::Task,
            era: Some(Era::Legacy),
            remote_task_id: Some("r".into()),
            status,
            status_message: message.map(str::to_owned),
            progress: None,
            questions: question.iter().cloned().collect(),
            question,
            answer: None,
            answered_keys: Vec::new(),
            result: None,
            error: None,
            ttl_ms: None,
            poll_interval_ms: None,
            created_at: now,
            updated_at: now,
        }
    }

    fn snap(status: TaskStatus, message: Option<&str>) -> TaskSnapshot {
        TaskSnapshot {
            status_message: message.map(str::to_owned),
            last_updated_at: "2026-01-01T00:00:01Z".into(),
            ..TaskSnapshot::bare("r", status, "2026-01-01T00:00:00Z")
        }
    }

    fn question(key: QuestionKey) -> Question {
        let request = QuestionRequest {
            method: methods::ELICITATION_CREATE.into(),
            params: json!({"mode": "form", "message": "Pick one", "requestedSchema": {"type": "object"}}),
        };
        Question::decode(key, Some("r".into()), request)
    }

    fn tool_result(is_error: bool) -> CallToolResult {
        serde_json::from_value(json!({"content": [{"type": "text", "text": "out"}], "isError": is_error})).unwrap()
    }

    fn status(status: TaskStatus, message: Option<&str>, said: &str) -> Action {
        Action::Write(Update::Status { status, message: message.map(str::to_owned), server_status: Some(said.into()) })
    }

    fn failed(message: &str, reason: FailureReason, said: &str) -> Action {
        Action::Write(Update::Failed {
            error: TaskError { code: None, message: message.into(), reason: Some(reason) },
            server_status: Some(said.into()),
        })
    }

    #[test]
    fn every_report_a_server_can_make_is_decided_once() {
        use TaskStatus::*;
        let legacy_q = question(QuestionKey::Request(RequestId::Number(7)));
        let modern_q = question(QuestionKey::InputKey("colour".into()));
        let other_q = question(QuestionKey::InputKey("size".into()));
        let answered_with = |mut r: TaskRecord, q: &Question| {
            r.answer = Some(taskdeck_store::Answer {
                key: q.key.to_text(),
                response: json!({"action": "decline"}),
                note: None,
            });
            r
        };
        let open = Context { latest_message: None, question_open: true, ..Default::default() };
        let with = |mut s: TaskSnapshot, f: &dyn Fn(&mut TaskSnapshot)| {
            f(&mut s);
            s
        };
        let listed = |q: &Question| {
            let q = q.clone();
            move |s: &mut TaskSnapshot| {
                s.questions = vec![q.clone()];
                s.lists_questions = true;
            }
        };
        let result = |r: CallToolResult| move |s: &mut TaskSnapshot| s.result = Some(r.clone());
        let cases: Vec<(&str, TaskRecord, Context, TaskSnapshot, Vec<Action>)> = vec![
            (
                "the handle's own working repeats what the store says",
                record(Working, None, None),
                Context::default(),
                snap(Working, None),
                vec![],
            ),
            (
                "a stage message on a working task waits for the flush",
                record(Working, None, None),
                Context::default(),
                snap(Working, Some("Preparing")),
                vec![Action::DeferMessage { message: Some("Preparing".into()), server_status: Some("working".into()) }],
            ),
            (
                "a duplicate of the message waiting for the flush is no news",
                record(Working, None, None),
                Context { latest_message: Some("Preparing".into()), question_open: false, ..Default::default() },
                snap(Working, Some("Preparing")),
                vec![],
            ),
            (
                "the message the store had, after another waits, is news again",
                record(Working, Some("A"), None),
                Context { latest_message: Some("B".into()), question_open: false, ..Default::default() },
                snap(Working, Some("A")),
                vec![Action::DeferMessage { message: Some("A".into()), server_status: Some("working".into()) }],
            ),
            (
                "progress rides along, whatever the status says",
                record(Working, None, None),
                Context::default(),
                with(snap(Working, None), &|s| {
                    s.progress = serde_json::from_value(json!({"progress": 2.0, "total": 5.0})).ok()
                }),
                vec![Action::Progress(Progress { progress: 2.0, total: Some(5.0), message: None })],
            ),
            (
                "input_required before its question: the status now, the question when it comes",
                record(Working, Some("Preparing"), None),
                Context::default(),
                snap(InputRequired, Some("Waiting for a choice")),
                vec![status(InputRequired, Some("Waiting for a choice"), "input_required")],
            ),
            (
                "input_required again with the question already kept changes nothing",
                record(InputRequired, Some("Waiting"), Some(&legacy_q)),
                open.clone(),
                snap(InputRequired, Some("Waiting")),
                vec![],
            ),
            (
                "a working that comes after an open question does not take it away",
                record(InputRequired, Some("Waiting"), Some(&legacy_q)),
                open.clone(),
                snap(Working, Some("Preparing")),
                vec![],
            ),
            (
                "a working after a question no longer open here means the server moved on",
                record(InputRequired, Some("Waiting"), Some(&legacy_q)),
                Context::default(),
                snap(Working, None),
                vec![status(Working, None, "working")],
            ),
            (
                "a server that lists its questions and lists none has taken it back",
                record(InputRequired, Some("Waiting"), Some(&modern_q)),
                open.clone(),
                with(snap(Working, None), &|s| s.lists_questions = true),
                vec![status(Working, None, "working")],
            ),
            (
                "a listed question is asked with the task's message",
                record(Working, None, None),
                Context::default(),
                with(snap(InputRequired, Some("Need a colour")), &listed(&modern_q)),
                vec![ask(&modern_q, Some("Need a colour".into()))],
            ),
            (
                "a listed question repeated by the next poll is not asked twice",
                record(InputRequired, Some("Need a colour"), Some(&modern_q)),
                open.clone(),
                with(snap(InputRequired, Some("Need a colour")), &listed(&modern_q)),
                vec![],
            ),
            (
                "a modern question listed again after its answer is no news (the ack is eventually consistent)",
                answered_with(record(Working, None, None), &modern_q),
                Context::default(),
                with(snap(InputRequired, Some("Need a colour")), &listed(&modern_q)),
                vec![],
            ),
            (
                "beside the one answered, a new modern question is asked",
                answered_with(record(Working, None, None), &modern_q),
                Context::default(),
                with(snap(InputRequired, None), &|s| s.questions = vec![modern_q.clone(), other_q.clone()]),
                vec![ask(&other_q, None)],
            ),
            (
                "a legacy request id may come again for a new question: it is asked",
                answered_with(record(Working, None, None), &legacy_q),
                Context::default(),
                with(snap(InputRequired, None), &listed(&legacy_q)),
                vec![ask(&legacy_q, None)],
            ),
            (
                "completed with its result",
                record(Working, None, None),
                Context::default(),
                with(snap(Completed, None), &result(tool_result(false))),
                vec![Action::Write(Update::Completed {
                    result: serde_json::to_value(tool_result(false)).unwrap(),
                    server_status: Some("completed".into()),
                })],
            ),
            (
                "completed without a result fails, saying so",
                record(Working, None, None),
                Context::default(),
                snap(Completed, None),
                vec![failed("the server said completed but sent no result", FailureReason::NoResult, "completed")],
            ),
            (
                "failed without an error fails, saying so",
                record(Working, None, None),
                Context::default(),
                snap(Failed, None),
                vec![failed("the server said failed but sent no result", FailureReason::NoResult, "failed")],
            ),
            (
                "an end whose result comes separately waits for it",
                record(InputRequired, None, Some(&legacy_q)),
                open.clone(),
                with(snap(Completed, None), &|s| s.result_follows = true),
                vec![],
            ),
            (
                "a tool error reported as failed (legacy) keeps the server's word and its result",
                record(Working, None, None),
                Context::default(),
                with(snap(Failed, None), &result(tool_result(true))),
                vec![Action::Write(Update::Completed {
                    result: serde_json::to_value(tool_result(true)).unwrap(),
                    server_status: Some("failed".into()),
                })],
            ),
            (
                "a tool error reported as completed with isError (modern) keeps the server's word",
                record(Working, None, None),
                Context::default(),
                with(snap(Completed, None), &result(tool_result(true))),
                vec![Action::Write(Update::Completed {
                    result: serde_json::to_value(tool_result(true)).unwrap(),
                    server_status: Some("completed".into()),
                })],
            ),
            (
                "a JSON-RPC error ends the task with the server's code and reason",
                record(Working, None, None),
                Context::default(),
                with(snap(Failed, None), &|s| {
                    s.error = Some(ErrorObject {
                        code: -32603,
                        message: "crashed".into(),
                        data: Some(json!({"reason": "CRASH_RECOVERY"})),
                    })
                }),
                vec![Action::Write(Update::Failed {
                    error: TaskError {
                        code: Some(-32603),
                        message: "crashed".into(),
                        reason: Some(FailureReason::Other("CRASH_RECOVERY".into())),
                    },
                    server_status: Some("failed".into()),
                })],
            ),
            (
                "cancelled, with the server's message as the reason",
                record(InputRequired, None, Some(&legacy_q)),
                open.clone(),
                snap(Cancelled, Some("stopped by the server")),
                vec![Action::Write(Update::Cancelled {
                    reason: Some("stopped by the server".into()),
                    server_status: Some("cancelled".into()),
                })],
            ),
            (
                "cancelled without a message",
                record(Working, None, None),
                Context::default(),
                snap(Cancelled, None),
                vec![Action::Write(Update::Cancelled {
                    reason: Some("cancelled".into()),
                    server_status: Some("cancelled".into()),
                })],
            ),
        ];
        let mut wrong = Vec::new();
        for (case, rec, ctx, s, expected) in &cases {
            let got = decide(rec, ctx, s);
            if &got != expected {
                wrong.push(format!("{case}:\n  expected {expected:?}\n  got      {got:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn a_question_that_came_early_is_asked_like_any_other() {
        // Reports that overtake their task's handle are decided the same way once it arrives:
        // the early question is recorded, and the handle's `working` after it leaves it alone.
        let q = question(QuestionKey::Request(RequestId::Number(1)));
        let rec = record(TaskStatus::Working, None, None);
        let asked = ask(&q, None);
        assert!(
            matches!(&asked, Action::Ask { update: Update::Question { message: Some(m), .. }, .. } if m == "Pick one")
        );
        let waiting = record(TaskStatus::InputRequired, Some("Pick one"), Some(&q));
        let ctx = Context { latest_message: Some("Pick one".into()), question_open: true, ..Default::default() };
        assert_eq!(decide(&waiting, &ctx, &snap(TaskStatus::Working, None)), vec![]);
        assert_eq!(decide(&rec, &Context::default(), &snap(TaskStatus::Working, None)), vec![]);
    }

    fn modern_asking(questions: Vec<Question>) -> TaskSnapshot {
        TaskSnapshot { questions, lists_questions: true, ..snap(TaskStatus::InputRequired, None) }
    }

    fn sampling(key: &str) -> Question {
        let request = QuestionRequest {
            method: methods::SAMPLING_CREATE_MESSAGE.into(),
            params: json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 9}),
        };
        Question::decode(QuestionKey::InputKey(key.into()), Some("r".into()), request)
    }

    #[test]
    fn several_input_requests_are_asked_together_and_roots_or_refused_sampling_are_not_asked() {
        let form = question(QuestionKey::InputKey("a".into()));
        let roots = Question::decode(
            QuestionKey::InputKey("r".into()),
            Some("r".into()),
            QuestionRequest { method: methods::ROOTS_LIST.into(), params: Value::Null },
        );
        let rec = record(TaskStatus::Working, None, None);
        let s = modern_asking(vec![form.clone(), roots.clone(), sampling("b")]);
        let got = decide(&rec, &Context::default(), &s);
        assert!(
            matches!(got.as_slice(), [Action::Ask { update: Update::Questions { questions, .. }, key }]
                if questions.iter().map(|q| q.key.to_text()).collect::<Vec<_>>()
                    == [form.key.to_text(), sampling("b").key.to_text()] && *key == form.key),
            "{got:?}"
        );
        // Asked again by the next poll: no news.
        let mut waiting = record(TaskStatus::InputRequired, Some("Pick one"), Some(&form));
        waiting.questions = vec![form.clone(), sampling("b")];
        assert_eq!(decide(&waiting, &Context::default(), &s), vec![]);
        // Both answered together: neither is asked again while the server catches up.
        let mut answered = record(TaskStatus::Working, None, None);
        answered.answered_keys = vec![form.key.to_text(), sampling("b").key.to_text()];
        assert_eq!(decide(&answered, &Context::default(), &s), vec![]);
        // A policy that refuses sampling leaves only the form to ask.
        let refusing = Context { refuse_sampling: true, ..Default::default() };
        let got = decide(&rec, &refusing, &modern_asking(vec![roots, sampling("b"), form.clone()]));
        assert!(
            matches!(got.as_slice(), [Action::Ask { update: Update::Question { question, .. }, .. }] if **question == form),
            "{got:?}"
        );
    }

    #[test]
    fn client_failures_end_tasks_with_a_typed_reason() {
        let gone = ClientError::ServerExited { server: "s".into(), reason: "killed".into() };
        assert_eq!(error_of(&gone).reason, Some(FailureReason::Interrupted));
        let rpc = ClientError::Rpc {
            server: "s".into(),
            method: "tools/call".into(),
            error: Box::new(ErrorObject { code: -32602, message: "bad".into(), data: None }),
        };
        assert_eq!(error_of(&rpc), TaskError { code: Some(-32602), message: "bad".into(), reason: None });
    }
}
