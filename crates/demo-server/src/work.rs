//! What the tools do, and the workers that run them as tasks.
//!
//! A worker owns its task's non-terminal transitions; anyone may make a terminal one (a legacy
//! cancel, a purge), and the worker notices at its next step because the store refuses to move a
//! terminal task. Between steps the worker sleeps on its `Notify`, so cancels and answers take
//! effect at once instead of at the end of a delay.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use taskdeck_protocol::elicitation::{ElicitAction, ElicitRequestParams, ElicitResult};
use taskdeck_protocol::modern::tasks::TaskProgress;
use taskdeck_protocol::types::CallToolResult;
use taskdeck_protocol::{Era, ErrorObject, Message, TaskStatus, codes, meta, methods};
use tokio::sync::Notify;

use crate::question;
use crate::server::{Conn, Server};
use crate::store::TaskRow;
use crate::tools::{
    self, COUNT, DIAGNOSE_INCIDENT, FLAKY_EXPORT, GENERATE_REPORT, NOTES_SEARCH, PLAN_RELEASE, PUBLISH_NOTES,
    REPORT_STAGES, SUMMARIZE_FINDINGS,
};

/// Why a run stopped before producing a result.
#[derive(Debug)]
pub enum Stop {
    Cancelled,
    /// The task became terminal elsewhere, or was purged: nothing left to write.
    Gone,
}

struct TaskCtx {
    id: String,
    era: Era,
    waker: Arc<Notify>,
}

/// One execution of a tool, as a task or as a plain call.
pub struct Run {
    server: Arc<Server>,
    task: Option<TaskCtx>,
    /// Plain calls: the requesting connection and the request's own progress token.
    inline: Option<(Arc<Conn>, Option<Value>)>,
    /// Modern plain calls: the log level the request asked for (none: no entries).
    inline_level: Option<String>,
}

impl Run {
    pub fn inline(conn: &Arc<Conn>, progress_token: Option<Value>) -> Self {
        Self {
            server: conn.server.clone(),
            task: None,
            inline: Some((conn.clone(), progress_token)),
            inline_level: None,
        }
    }

    /// A modern plain call's run, sending the log entries its request asked for.
    pub fn logging_at(mut self, level: Option<String>) -> Self {
        self.inline_level = level;
        self
    }

    /// Re-reads the task and says whether it may go on.
    fn check(&self) -> Result<Option<TaskRow>, Stop> {
        let Some(t) = &self.task else { return Ok(None) };
        let row = match self.server.store().get(&t.id) {
            Ok(Some(row)) => row,
            Ok(None) => return Err(Stop::Gone),
            Err(e) => {
                tracing::error!(task = %t.id, "{e}");
                return Err(Stop::Gone);
            }
        };
        if row.status.is_terminal() {
            return Err(Stop::Gone);
        }
        if row.cancel_requested {
            return Err(Stop::Cancelled);
        }
        Ok(Some(row))
    }

    async fn pause(&self, d: Duration) -> Result<(), Stop> {
        let Some(t) = &self.task else {
            tokio::time::sleep(d).await;
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + d;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                _ = t.waker.notified() => { self.check()?; }
            }
        }
        self.check().map(drop)
    }

    fn progress(&self, progress: i64, total: i64, message: String) {
        let (to, related) = match &self.task {
            None => (self.inline.clone(), None),
            Some(t) if t.era == Era::Modern => {
                let p = TaskProgress { progress: progress as f64, total: Some(total as f64), message: Some(message) };
                self.server.set_progress(&t.id, p);
                // Subscribers hear it with the task (its `_meta`), as a poll would show it.
                self.server.progress_changed(&t.id);
                return;
            }
            Some(t) => (self.server.owner(&t.id), Some(&t.id)),
        };
        let Some((conn, Some(token))) = to else { return };
        let mut params = json!({"progressToken": token, "progress": progress, "total": total, "message": message});
        if let Some(id) = related {
            params["_meta"] = json!({ meta::RELATED_TASK: {"taskId": id} });
        }
        conn.send_lossy(Message::notification(methods::PROGRESS, Some(params)));
    }

    /// An MCP log entry (`notifications/message`) about this run, in either era, to the connection
    /// that asked for it, tied to its task by the related-task `_meta`: a host shows it with the task.
    fn log(&self, level: &str, text: String) {
        self.log_as("demo.report", level, text);
    }

    /// [`Run::log`] under another logger. The level the client asked for decides: in 2025-11-25
    /// the connection's `logging/setLevel` (everything until it is called); in 2026-07-28 the
    /// request's `_meta` level, without which nothing is sent.
    fn log_as(&self, logger: &str, level: &str, text: String) {
        let (to, related) = match &self.task {
            None => (self.inline.clone(), None),
            Some(t) => (self.server.owner(&t.id), Some(&t.id)),
        };
        let Some((conn, _)) = to else { return };
        let era = self.task.as_ref().map(|t| t.era).or(conn.state().era);
        let wanted = match era {
            Some(Era::Modern) => match &self.task {
                Some(t) => self.server.owner_log_level(&t.id),
                None => self.inline_level.clone(),
            },
            _ => Some(conn.state().log_level.clone().unwrap_or_else(|| "debug".into())),
        };
        if !wanted_at(wanted.as_deref(), level) {
            return;
        }
        let mut params = json!({"level": level, "logger": logger, "data": text});
        if let Some(id) = related {
            params["_meta"] = json!({ meta::RELATED_TASK: {"taskId": id} });
        }
        conn.send_lossy(Message::notification(methods::LOG_MESSAGE, Some(params)));
    }

    /// Persists how far the work got. `announce` also tells observers (a status notification in
    /// the legacy era), which is worth it for a stage change but not for every counted step.
    fn checkpoint(&self, checkpoint: i64, message: &str, announce: bool) -> Result<(), Stop> {
        let Some(t) = &self.task else { return Ok(()) };
        match self.server.store().checkpoint(&t.id, checkpoint, message) {
            Ok(true) => {}
            Ok(false) => return Err(Stop::Gone),
            Err(e) => tracing::error!(task = %t.id, "checkpoint: {e}"),
        }
        if announce {
            self.server.changed(&t.id);
        }
        self.check().map(drop)
    }
}

/// Runs a tool to its result. `row` is the task's current row when run as a task.
pub async fn run_tool(
    run: &Run,
    tool: &str,
    args: &Map<String, Value>,
    row: Option<&TaskRow>,
) -> Result<CallToolResult, Stop> {
    let checkpoint = row.map_or(0, |r| r.checkpoint);
    match tool {
        GENERATE_REPORT => generate_report(run, args, checkpoint).await,
        DIAGNOSE_INCIDENT => diagnose_incident(run, args, row).await,
        NOTES_SEARCH => {
            // An entry about this call alone, for hosts telling apart calls in flight together.
            let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
            run.log_as("demo.search", "info", format!("searching the notes for {query:?}"));
            if let Some(ms) = args.get("delay_ms").and_then(Value::as_u64) {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            Ok(notes_search(args))
        }
        FLAKY_EXPORT => flaky_export(run, args).await,
        COUNT => count(run, args, checkpoint).await,
        SUMMARIZE_FINDINGS => summarize_findings(run, args, row).await,
        PLAN_RELEASE => plan_release(run, args, row).await,
        // Reached in the legacy era only: the modern one asks first (`publish::modern_call`).
        PUBLISH_NOTES => {
            let mut entries = Vec::new();
            let result = crate::publish::legacy_call(args, &mut entries);
            for (level, text) in entries {
                run.log_as(crate::publish::LOGGER, level, text);
            }
            Ok(result)
        }
        other => Ok(CallToolResult::error_text(format!("unknown tool {other:?}"))),
    }
}

async fn generate_report(run: &Run, args: &Map<String, Value>, start: i64) -> Result<CallToolResult, Stop> {
    const STEPS: i64 = 5;
    let topic = args.get("topic").and_then(Value::as_str).unwrap_or("untitled");
    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(8.0).clamp(0.0, 3600.0);
    let stages = REPORT_STAGES.len() as i64;
    let total = stages * STEPS;
    let step = Duration::from_secs_f64(seconds / total as f64);
    let start = start.clamp(0, stages);
    if start > 0 {
        tracing::info!(stage = start, "generate_report resumes from its checkpoint");
    }
    for stage in start..stages {
        let name = REPORT_STAGES[stage as usize];
        run.checkpoint(stage, name, true)?;
        for s in 0..STEPS {
            run.pause(step).await?;
            run.progress(stage * STEPS + s + 1, total, format!("{name} ({}/{STEPS})", s + 1));
        }
        // After the stage's steps, so the stage's status is the first word about it on any stream.
        run.log("info", format!("finished stage {} of {stages}: {name} for {topic:?}", stage + 1));
    }
    run.checkpoint(stages, "Report ready", false)?;

    let sections: Vec<Value> = REPORT_STAGES
        .iter()
        .map(|stage| {
            let body = match *stage {
                "Collecting sources" => format!("Gathered three demo sources about {topic}."),
                "Reading" => format!("Read them and noted the main points on {topic}."),
                "Drafting" => format!("Drafted a summary of what is known about {topic}."),
                _ => "Formatted the report as markdown.".to_owned(),
            };
            json!({"title": stage, "body": body})
        })
        .collect();
    let mut text = format!("# Report: {topic}\n\nWhat it covers:\n\n");
    for s in &sections {
        text.push_str(&format!("- {}\n", s["title"].as_str().unwrap_or("")));
    }
    for s in &sections {
        text.push_str(&format!("\n## {}\n{}\n", s["title"].as_str().unwrap_or(""), s["body"].as_str().unwrap_or("")));
    }
    if start > 0 {
        text.push_str(&format!(
            "\n_Resumed after a restart from stage {} ({})._\n",
            start + 1,
            REPORT_STAGES[start.min(stages - 1) as usize]
        ));
    }
    let mut result = CallToolResult::text(text);
    result.structured_content = Some(json!({
        "topic": topic,
        "sections": sections,
        // null on an uninterrupted run; otherwise how many stages were already done at restart.
        "resumed_from_stage": if start > 0 { json!(start) } else { Value::Null },
    }));
    Ok(result)
}

enum Answer {
    Service { service: String, notes: Option<String>, page_oncall: bool },
    Declined(String),
    Cancelled,
}

async fn diagnose_incident(
    run: &Run,
    args: &Map<String, Value>,
    row: Option<&TaskRow>,
) -> Result<CallToolResult, Stop> {
    let (service, notes, page_oncall) = match args.get("service").and_then(Value::as_str) {
        Some(s) => (s.to_owned(), None, false),
        None => match obtain_answer(run, row).await? {
            Answer::Service { service, notes, page_oncall } => (service, notes, page_oncall),
            Answer::Declined(why) => return Ok(CallToolResult::error_text(why)),
            Answer::Cancelled => return Err(Stop::Cancelled),
        },
    };
    let title = tools::service_title(&service).unwrap_or("unknown service");
    let steps = ["Reading logs", "Correlating metrics", "Writing the diagnosis"];
    for (i, step) in steps.iter().enumerate() {
        run.checkpoint(0, &format!("{step} of {title}"), i == 0)?;
        run.pause(Duration::from_millis(150)).await?;
        run.progress(i as i64 + 1, steps.len() as i64, step.to_string());
    }
    let mut text = format!(
        "Diagnosis for {title}: error rate rose after the last deploy; the connection pool is exhausted. \
         Suggested fix: roll back the deploy and raise the pool size."
    );
    if let Some(n) = notes.as_deref().filter(|n| !n.trim().is_empty()) {
        text.push_str(&format!("\nYour notes: {n}"));
    }
    if page_oncall {
        text.push_str("\nOn-call was paged (simulated).");
    }
    let mut result = CallToolResult::text(text);
    result.structured_content = Some(json!({
        "service": service, "cause": "connection pool exhausted", "paged_oncall": page_oncall,
    }));
    Ok(result)
}

/// Asks for the service (once per task; the question survives restarts) and waits for the answer.
async fn obtain_answer(run: &Run, row: Option<&TaskRow>) -> Result<Answer, Stop> {
    let (Some(t), Some(row)) = (&run.task, row) else {
        return Ok(Answer::Declined("diagnosis needs a service: pass arguments.service".into()));
    };
    if row.answer.is_none() && (row.status != TaskStatus::InputRequired || row.question.is_none()) {
        let can_ask = match t.era {
            // A task resumed after a restart has no creator in this process, so nobody can say
            // yet: ask and wait; the question goes out once a client shows up and calls tasks/result.
            Era::Legacy => run.server.owner(&t.id).is_none_or(|(conn, _)| conn.state().legacy_elicitation),
            Era::Modern => row.client_elicitation,
        };
        if !can_ask {
            return Ok(Answer::Declined(
                "diagnosis needs a service, and this client cannot be asked for one (it did not declare the \
                 elicitation capability): call diagnose_incident again with arguments.service"
                    .into(),
            ));
        }
        let n = next_key_number(row.question_key.as_deref());
        let key = format!("service-{n}");
        let question = serde_json::to_value(ElicitRequestParams::form(
            "Which service is affected by the incident?",
            tools::diagnosis_form(),
        ))
        .unwrap_or(Value::Null);
        record_question(run, &t.id, &key, &question, "Waiting for you to pick the affected service")?;
    }
    loop {
        if let Some(row) = run.check()?
            && let Some(answer) = row.answer
        {
            return Ok(parse_answer(answer));
        }
        t.waker.notified().await;
    }
}

/// Stores task `id`'s question under `key` and tells its watchers; a task that is gone (or a
/// store that fails, logged) stops the work.
fn record_question(run: &Run, id: &str, key: &str, question: &Value, message: &str) -> Result<(), Stop> {
    match run.server.store().ask(id, key, question, message) {
        Ok(true) => {}
        Ok(false) => return Err(Stop::Gone),
        Err(e) => {
            tracing::error!(task = %id, "{e}");
            return Err(Stop::Gone);
        }
    }
    run.server.changed(id);
    Ok(())
}

/// What a task's client may be asked.
#[derive(Clone, Copy)]
enum Needs {
    Sampling,
    SamplingAndElicitation,
}

/// Asks the question `make(key)` builds, under a fresh key `{prefix}-N`, once per task (it
/// survives restarts), and waits until nothing of it is pending: the answer, or for several
/// requests the map of their responses. `None` when the client cannot be asked (it did not declare
/// what the question needs).
async fn ask_and_wait(
    run: &Run,
    row: Option<&TaskRow>,
    prefix: &str,
    needs: Needs,
    message: &str,
    make: impl FnOnce(&str) -> Value,
) -> Result<Option<Value>, Stop> {
    let (Some(t), Some(row)) = (&run.task, row) else { return Ok(None) };
    if row.answer.is_none() && (row.status != TaskStatus::InputRequired || row.question.is_none()) {
        let can_ask = match t.era {
            // Resumed after a restart: nobody can say yet; the question waits for a client.
            Era::Legacy => run.server.owner(&t.id).is_none_or(|(conn, _)| conn.state().legacy_sampling),
            Era::Modern => match needs {
                Needs::Sampling => row.client_sampling,
                Needs::SamplingAndElicitation => row.client_sampling && row.client_elicitation,
            },
        };
        if !can_ask {
            return Ok(None);
        }
        let key = format!("{prefix}-{}", next_key_number(row.question_key.as_deref()));
        let question = make(&key);
        record_question(run, &t.id, &key, &question, message)?;
    }
    loop {
        if let Some(row) = run.check()?
            && question::pending(&row).is_empty()
            && let Some(answer) = row.answer
        {
            return Ok(Some(answer));
        }
        t.waker.notified().await;
    }
}

/// A sampling request's answer, as this server reads it.
enum Sampled {
    Text { model: String, text: String },
    Declined(String),
    Cancelled,
}

fn sampled(answer: &Value) -> Sampled {
    use taskdeck_protocol::sampling::CreateMessageResult;
    if let Some(error) = answer.get("error") {
        let why = error.get("message").and_then(Value::as_str).unwrap_or("refused");
        return Sampled::Declined(format!("the client refused the sampling request: {why}"));
    }
    if let Ok(r) = serde_json::from_value::<CreateMessageResult>(answer.clone()) {
        let text = r.content.text();
        let text =
            if text.is_empty() { "(the reply had no text)".to_owned() } else { text.chars().take(2000).collect() };
        return Sampled::Text { model: r.model.chars().take(200).collect(), text };
    }
    match serde_json::from_value::<ElicitResult>(answer.clone()).map(|r| r.action) {
        Ok(ElicitAction::Cancel) => Sampled::Cancelled,
        Ok(_) => Sampled::Declined("the client declined the sampling request".into()),
        Err(_) => Sampled::Declined("the client's reply to the sampling request could not be read".into()),
    }
}

const FINDINGS: &str = "Three incidents this quarter; two were fixed by rolling back a deploy; the third was a \
                        connection pool that was too small.";

fn summary_request(topic: &str) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text",
            "text": format!("Summarize these findings on {topic} in one sentence: {FINDINGS}")}}],
        "systemPrompt": "You are a concise analyst. Answer in one sentence.",
        "modelPreferences": {"hints": [{"name": "claude"}], "intelligencePriority": 0.8, "speedPriority": 0.3},
        "includeContext": "none",
        "maxTokens": 200
    })
}

async fn summarize_findings(
    run: &Run,
    args: &Map<String, Value>,
    row: Option<&TaskRow>,
) -> Result<CallToolResult, Stop> {
    let topic = args.get("topic").and_then(Value::as_str).unwrap_or("the topic").to_owned();
    if row.is_none_or(|r| r.question.is_none()) {
        run.checkpoint(1, &format!("Gathering findings on {topic}"), true)?;
        run.pause(Duration::from_millis(150)).await?;
        run.progress(1, 2, "Findings gathered".into());
    }
    let asked = ask_and_wait(run, row, "summary", Needs::Sampling, "Waiting for a summary from your model", |_| {
        question::one(methods::SAMPLING_CREATE_MESSAGE, summary_request(&topic))
    })
    .await?;
    let Some(answer) = asked else {
        return Ok(CallToolResult::error_text(
            "summarize_findings needs a language model's reply, and this client cannot be asked for one (it did \
             not declare the sampling capability)",
        ));
    };
    match sampled(&answer) {
        Sampled::Text { model, text } => {
            run.progress(2, 2, "Summary received".into());
            let mut result =
                CallToolResult::text(format!("Findings on {topic}: {FINDINGS}\nSummary ({model}): {text}"));
            result.structured_content = Some(json!({"topic": topic, "summary": text, "model": model}));
            Ok(result)
        }
        Sampled::Declined(why) => Ok(CallToolResult::error_text(format!("no summary: {why}"))),
        Sampled::Cancelled => Err(Stop::Cancelled),
    }
}

async fn plan_release(run: &Run, args: &Map<String, Value>, row: Option<&TaskRow>) -> Result<CallToolResult, Stop> {
    let version = args.get("version").and_then(Value::as_str).unwrap_or("").chars().take(100).collect::<String>();
    if run.task.as_ref().is_some_and(|t| t.era == Era::Legacy) {
        return Ok(CallToolResult::error_text(
            "plan_release asks two questions at once, which only the 2026-07-28 era can: call it from a modern client",
        ));
    }
    let environment = json!({
        "mode": "form",
        "message": format!("Where should {version} be released?"),
        "requestedSchema": {"type": "object", "properties": {"environment": {"type": "string",
            "title": "Environment", "oneOf": [{"const": "staging", "title": "Staging"},
            {"const": "production", "title": "Production"}]}}, "required": ["environment"]}
    });
    let note = json!({
        "messages": [{"role": "user", "content": {"type": "text",
            "text": format!("Write a one-line release note for version {version}.")}}],
        "systemPrompt": "You write short release notes.",
        "maxTokens": 100
    });
    let asked = ask_and_wait(
        run,
        row,
        "plan",
        Needs::SamplingAndElicitation,
        "Waiting for the environment and the release note",
        |key| {
            question::several(vec![
                (format!("{key}/environment"), methods::ELICITATION_CREATE, environment),
                (format!("{key}/note"), methods::SAMPLING_CREATE_MESSAGE, note),
            ])
        },
    )
    .await?;
    let Some(answers) = asked else {
        return Ok(CallToolResult::error_text(
            "plan_release needs a form answered and a language model's reply, and this client declared only one \
             of elicitation and sampling (or neither)",
        ));
    };
    let answers = answers.as_object().cloned().unwrap_or_default();
    let of = |suffix: &str| answers.iter().find(|(k, _)| k.ends_with(suffix)).map(|(_, v)| v.clone());
    let env = of("/environment")
        .and_then(|v| serde_json::from_value::<ElicitResult>(v).ok())
        .filter(|r| r.action == ElicitAction::Accept)
        .and_then(|r| r.content?.get("environment")?.as_str().map(str::to_owned))
        .filter(|e| e == "staging" || e == "production");
    let Some(env) = env else {
        return Ok(CallToolResult::error_text("no release planned: the environment was not given"));
    };
    let note = match of("/note").as_ref().map(sampled) {
        Some(Sampled::Text { model, text }) => format!("Release note ({model}): {text}"),
        Some(Sampled::Cancelled) => return Err(Stop::Cancelled),
        Some(Sampled::Declined(why)) => format!("No release note: {why}"),
        None => "No release note".to_owned(),
    };
    let mut result = CallToolResult::text(format!("Release {version} to {env} planned.\n{note}"));
    result.structured_content = Some(json!({"version": version, "environment": env, "note": note}));
    Ok(result)
}

fn next_key_number(previous: Option<&str>) -> u64 {
    previous.and_then(|k| k.rsplit('-').next()).and_then(|n| n.parse::<u64>().ok()).map_or(1, |n| n + 1)
}

fn parse_answer(answer: Value) -> Answer {
    let Ok(answer) = serde_json::from_value::<ElicitResult>(answer) else {
        return Answer::Declined("diagnosis needs a service: the answer could not be read".into());
    };
    match answer.action {
        ElicitAction::Cancel => Answer::Cancelled,
        ElicitAction::Decline => Answer::Declined("diagnosis needs a service: the question was declined".into()),
        ElicitAction::Accept => {
            let content = answer.content.unwrap_or_default();
            let service = content.get("service").and_then(Value::as_str).filter(|s| tools::service_title(s).is_some());
            match service {
                Some(s) => Answer::Service {
                    service: s.to_owned(),
                    notes: content.get("notes").and_then(Value::as_str).map(|n| n.chars().take(500).collect()),
                    page_oncall: content.get("page_oncall").and_then(Value::as_bool).unwrap_or(false),
                },
                None => Answer::Declined(format!(
                    "diagnosis needs a service: the answer did not name one of {}",
                    tools::service_list()
                )),
            }
        }
    }
}

pub const NOTES: [(&str, &str); 5] = [
    ("Deploy checklist", "Tag the release, run migrations, watch the error rate for ten minutes."),
    ("On-call handbook", "Page the secondary after 15 minutes without acknowledgement."),
    ("Checkout incident 2026-03", "Connection pool exhaustion after a config change; fixed by rollback."),
    ("Search cluster sizing", "Three data nodes per region; reindex on weekends."),
    ("Billing retries", "Workers retry failed charges three times with exponential backoff."),
];

fn notes_search(args: &Map<String, Value>) -> CallToolResult {
    let query = args.get("query").and_then(Value::as_str).unwrap_or("").to_lowercase();
    let words: Vec<&str> = query.split_whitespace().collect();
    let hits: Vec<&(&str, &str)> = NOTES
        .iter()
        .filter(|(title, body)| {
            let hay = format!("{title} {body}").to_lowercase();
            !words.is_empty() && words.iter().all(|w| hay.contains(w))
        })
        .collect();
    let text = if hits.is_empty() {
        format!("No notes match {query:?}.")
    } else {
        hits.iter().map(|(t, b)| format!("- {t}: {b}")).collect::<Vec<_>>().join("\n")
    };
    let mut result = CallToolResult::text(text);
    result.structured_content =
        Some(json!({"matches": hits.iter().map(|(t, b)| json!({"title": t, "body": b})).collect::<Vec<_>>()}));
    result
}

async fn flaky_export(run: &Run, args: &Map<String, Value>) -> Result<CallToolResult, Stop> {
    let fail_at = args.get("fail_at").and_then(Value::as_i64).unwrap_or(60).clamp(0, 100);
    run.checkpoint(0, "Exporting", true)?;
    let mut done = 0;
    while done < fail_at {
        run.pause(Duration::from_millis(100)).await?;
        done = (done + 5).min(fail_at);
        run.progress(done, 100, format!("Exported {done}%"));
    }
    Ok(CallToolResult::error_text(format!(
        "Export failed at {done}%: the storage backend closed the connection (simulated failure). \
         Nothing was written; retry the export."
    )))
}

async fn count(run: &Run, args: &Map<String, Value>, start: i64) -> Result<CallToolResult, Stop> {
    let n = args.get("n").and_then(Value::as_i64).unwrap_or(0).max(0);
    let delay = Duration::from_millis(args.get("delay_ms").and_then(Value::as_u64).unwrap_or(0));
    let start = start.clamp(0, n);
    run.checkpoint(start, &format!("Counting ({start}/{n})"), true)?;
    let mut saved = Instant::now();
    for i in start + 1..=n {
        run.pause(delay).await?;
        run.progress(i, n, format!("{i}/{n}"));
        // One write per step would make a fast count a disk benchmark; losing up to 100 ms of
        // counting on a crash is fine.
        if saved.elapsed() >= Duration::from_millis(100) || i == n {
            run.checkpoint(i, &format!("Counting ({i}/{n})"), false)?;
            saved = Instant::now();
        }
    }
    let mut result = CallToolResult::text(format!("counted to {n}"));
    result.structured_content = Some(json!({"counted": n}));
    Ok(result)
}

/// Starts the worker of a persisted task.
pub fn spawn(server: &Arc<Server>, row: TaskRow) {
    let server = server.clone();
    let waker = server.register_waker(&row.id);
    tokio::spawn(async move {
        let id = row.id.clone();
        let era = row.era;
        let run = Run {
            server: server.clone(),
            task: Some(TaskCtx { id: id.clone(), era, waker }),
            inline: None,
            inline_level: None,
        };
        let args = row.arguments.as_object().cloned().unwrap_or_default();
        let outcome = match run.check() {
            Ok(_) => run_tool(&run, &row.tool, &args, Some(&row)).await,
            Err(stop) => Err(stop),
        };
        finish(&server, &id, era, outcome);
        server.drop_waker(&id);
    });
}

fn finish(server: &Server, id: &str, era: Era, outcome: Result<CallToolResult, Stop>) {
    let done = match outcome {
        Ok(result) => {
            // The eras disagree on what a tool error is: a failed task in 2025-11-25, a completed
            // task whose result says isError in the extension.
            let status =
                if result.is_error() && era == Era::Legacy { TaskStatus::Failed } else { TaskStatus::Completed };
            let message = if result.is_error() { result.joined_text() } else { "Done".to_owned() };
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            server.store().finish(id, status, Some(&message), Some(&value), None)
        }
        Err(Stop::Cancelled) => {
            server.store().finish(id, TaskStatus::Cancelled, Some("The task was cancelled by request."), None, None)
        }
        Err(Stop::Gone) => Ok(false),
    };
    match done {
        Ok(true) => server.changed(id),
        Ok(false) => {}
        Err(e) => tracing::error!(task = %id, "finishing: {e}"),
    }
}

/// Whether an entry of `level` goes to a client that asked for `wanted` and above (nothing when it
/// asked for nothing).
pub fn wanted_at(wanted: Option<&str>, level: &str) -> bool {
    wanted.and_then(severity).zip(severity(level)).is_some_and(|(min, this)| this >= min)
}

/// A log level's severity, lowest first (RFC 5424's order); `None` for a word that is no level.
pub fn severity(level: &str) -> Option<u8> {
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
        .iter()
        .position(|l| *l == level)
        .map(|p| p as u8)
}

/// A JSON-RPC error for a task that failed for a reason outside the tool.
pub fn failure(reason: &str, message: &str) -> Value {
    serde_json::to_value(ErrorObject::new(codes::INTERNAL_ERROR, message).with_data(json!({"reason": reason})))
        .unwrap_or(Value::Null)
}

/// On start: every unfinished task either continues from its checkpoint or, when its work cannot
/// be picked up again, fails with `CRASH_RECOVERY`.
pub fn resume_all(server: &Arc<Server>) {
    let rows = match server.store().unfinished() {
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!("loading unfinished tasks: {e}");
            return;
        }
    };
    for row in rows {
        let resumable = matches!(
            row.tool.as_str(),
            GENERATE_REPORT | DIAGNOSE_INCIDENT | COUNT | SUMMARIZE_FINDINGS | PLAN_RELEASE
        );
        if resumable {
            tracing::info!(task = %row.id, tool = %row.tool, status = %row.status, "resuming task");
            spawn(server, row);
            continue;
        }
        let message = format!("{} was interrupted by a server restart and cannot continue", row.tool);
        let error = failure("CRASH_RECOVERY", &message);
        match server.store().finish(&row.id, TaskStatus::Failed, Some(&message), None, Some(&error)) {
            Ok(_) => tracing::warn!(task = %row.id, "{message}"),
            Err(e) => tracing::error!(task = %row.id, "{e}"),
        }
    }
}
