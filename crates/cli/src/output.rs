//! What people and scripts read: aligned tables and timelines for people, and JSON for scripts in
//! which every task is its `TaskRecord` as the store serialises it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use taskdeck_engine::{ServerStatus, TaskError, TaskEvent, TaskRecord, ToolInfo};
use taskdeck_protocol::types::CallToolResult;

/// `show --json`: the record, plus its history.
#[derive(Serialize)]
pub struct TaskWithEvents<'a> {
    #[serde(flatten)]
    pub task: &'a TaskRecord,
    pub events: &'a [TaskEvent],
    /// The entries of the server's log that name the task (its MCP log entries), oldest first:
    /// kept in the server's log, not the store, so only while that log still holds them.
    pub server_log: &'a [taskdeck_engine::logs::LogLine],
}

/// The events as `show` prints them: a `dropped` marker says in words how many it counts, also
/// when an older Taskdeck wrote it without the words.
pub fn shown_events(mut events: Vec<TaskEvent>) -> Vec<TaskEvent> {
    for e in &mut events {
        if e.kind == taskdeck_store::EventKind::Dropped
            && let Some(n) = e.data.get("dropped").and_then(Value::as_u64)
            && let Some(data) = e.data.as_object_mut()
        {
            data.entry("message").or_insert_with(|| Value::String(taskdeck_store::dropped_message(n)));
        }
    }
    events
}

pub fn print_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        // Only non-string map keys can fail, and no record has those.
        Err(e) => eprintln!("error: cannot write JSON: {e}"),
    }
}

/// Columns padded to their widest cell; the last column is left ragged so long messages do not
/// push trailing spaces.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    // Cells as the terminal will show them, so the columns line up after cleaning.
    let rows: Vec<Vec<String>> =
        rows.iter().map(|r| r.iter().map(|c| crate::terminal::clean(c).into_owned()).collect()).collect();
    let rows = rows.as_slice();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i == last {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

pub fn age(at: &DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - *at).num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

pub fn servers_table(servers: &[ServerStatus]) -> String {
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            let state = match &s.last_error {
                _ if s.error.is_some() => format!("{} (see below)", phase(s)),
                Some(e) if s.era.is_none() => format!("{} ({})", phase(s), one_line(e, 60)),
                _ => phase(s),
            };
            vec![
                s.name.clone(),
                opt(s.era),
                opt(s.protocol_version.clone()),
                s.tasks.map(|t| if t { "yes" } else { "no" }.to_owned()).unwrap_or_else(|| "-".into()),
                state,
                s.transport.clone(),
            ]
        })
        .collect();
    table(&["NAME", "ERA", "PROTOCOL", "TASKS", "STATE", "TRANSPORT"], &rows)
}

/// For stderr, after the table: each entry that could not be read with its error, then what of
/// the readable ones was ignored.
pub fn server_problems(servers: &[ServerStatus]) -> Vec<String> {
    let errors = servers.iter().filter_map(|s| s.error.as_ref().map(|e| format!("{}: cannot be read: {e}", s.name)));
    let notes = servers.iter().flat_map(|s| s.notes.iter().map(|n| format!("note: {n}")));
    errors.chain(notes).collect()
}

fn phase(s: &ServerStatus) -> String {
    serde_json::to_value(s.phase).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub fn tools_table(tools: &[ToolInfo]) -> String {
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.task_support.map(|s| s.as_str().to_owned()).unwrap_or_else(|| "server decides".into()),
                schema_summary(&t.input_schema),
                one_line(t.description.as_deref().or(t.title.as_deref()).unwrap_or(""), 80),
            ]
        })
        .collect();
    table(&["NAME", "TASK SUPPORT", "ARGUMENTS", "DESCRIPTION"], &rows)
}

/// `topic*: string, seconds: number` — enough to write `--args` without reading the schema.
fn schema_summary(schema: &Value) -> String {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return "-".into() };
    if props.is_empty() {
        return "-".into();
    }
    props
        .iter()
        .map(|(name, p)| {
            let ty = p.get("type").map(|t| t.as_str().map(str::to_owned).unwrap_or_else(|| t.to_string()));
            let star = if required.contains(&name.as_str()) { "*" } else { "" };
            format!("{name}{star}: {}", ty.unwrap_or_else(|| "any".into()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn tasks_table(tasks: &[TaskRecord]) -> String {
    let now = Utc::now();
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            vec![
                short_id(&t.id).to_owned(),
                t.status.to_string(),
                t.tool.clone(),
                t.server.clone(),
                age(&t.created_at, now),
                one_line(t.status_message.as_deref().unwrap_or(""), 60),
            ]
        })
        .collect();
    table(&["ID", "STATUS", "TOOL", "SERVER", "AGE", "MESSAGE"], &rows)
}

/// The text a person wants from a result: its text blocks, else the structured content or the
/// whole result as JSON, so nothing the server said is hidden.
pub fn result_text(result: &Value) -> String {
    let parsed = serde_json::from_value::<CallToolResult>(result.clone()).ok();
    let text = parsed.as_ref().map(|r| r.joined_text()).unwrap_or_default();
    if !text.is_empty() {
        return text;
    }
    let shown = result.get("structuredContent").unwrap_or(result);
    serde_json::to_string_pretty(shown).unwrap_or_default()
}

pub fn progress_text(t: &TaskRecord) -> Option<String> {
    let p = t.progress.as_ref()?;
    let amount = match p.total {
        Some(total) => format!("{}/{}", trim_num(p.progress), trim_num(total)),
        None => trim_num(p.progress),
    };
    Some(match &p.message {
        Some(m) => format!("{amount} {m}"),
        None => amount,
    })
}

fn trim_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x:.2}") }
}

pub fn show_task(t: &TaskRecord, events: &[TaskEvent]) -> String {
    let mut fields: Vec<(&str, String)> = vec![
        ("id", t.id.clone()),
        ("server", t.server.clone()),
        ("tool", t.tool.clone()),
        ("arguments", t.arguments.to_string()),
        ("status", t.status.to_string()),
    ];
    if let Some(m) = &t.status_message {
        fields.push(("message", m.clone()));
    }
    if let Some(p) = progress_text(t) {
        fields.push(("progress", p));
    }
    fields.push(("mode", t.mode.as_str().to_owned()));
    fields.push(("era", opt(t.era)));
    fields.push(("remote id", opt(t.remote_task_id.clone())));
    fields.push(("created", crate::output::timestamp(&t.created_at)));
    fields.push(("updated", crate::output::timestamp(&t.updated_at)));
    if let Some(q) = &t.question {
        fields.push(("question", q.message.clone().unwrap_or_else(|| "(no message)".into())));
        if let (taskdeck_protocol::question::Asks::Url { url, .. }, Some(check)) = (&q.asks, &q.url_check) {
            for line in crate::form::url_lines(url, check) {
                fields.push(("", line));
            }
        }
    }
    if let Some(e) = &t.error {
        fields.push(("error", error_text(e)));
    }
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in &fields {
        out.push_str(&format!("{k:<width$}  {v}\n"));
    }
    if let Some(r) = &t.result {
        out.push_str("result:\n");
        for line in result_text(r).lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push_str("events:\n");
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let change = match (e.from_status, e.to_status) {
                (Some(a), Some(b)) if a != b => format!("{a} → {b}"),
                (None, Some(b)) => format!("→ {b}"),
                (_, Some(b)) => b.to_string(),
                _ => String::new(),
            };
            vec![format!("  {}", timestamp(&e.at)), e.kind.as_str().to_owned(), change, event_detail(e)]
        })
        .collect();
    let timeline = table(&["", "", "", ""], &rows);
    // The header row of an untitled table is blank.
    out.push_str(timeline.split_once('\n').map(|(_, rest)| rest).unwrap_or(""));
    out
}

/// A task's error as `show` prints it: the server's (or Taskdeck's) words, then the code and the
/// reason from the typed error, each said once.
pub fn error_text(e: &TaskError) -> String {
    let mut s = e.message.clone();
    if let Some(c) = e.code {
        s = format!("{s} (code {c})");
    }
    if let Some(r) = &e.reason {
        s = format!("{s} [{r}]");
    }
    s
}

/// How a finished task ended, in words from its record, for a refusal to say why; `None` for a
/// task that has not ended, or completed (its status says all).
pub fn how_it_ended(t: &TaskRecord) -> Option<String> {
    match t.status {
        taskdeck_protocol::TaskStatus::Failed => Some(match &t.error {
            Some(e) => format!("it failed: {}", error_text(e)),
            None => "it failed: no reason given".into(),
        }),
        taskdeck_protocol::TaskStatus::Cancelled => {
            Some(format!("it was cancelled: {}", t.status_message.as_deref().unwrap_or("no reason given")))
        }
        _ => None,
    }
}

/// For `resume`: one line for each task it left unfinished because nobody can drive it now (its
/// server out of reach, or gone from the config): which server, why, and what to do. A task
/// waiting for a sign-in is said by `login::resume_exit`, with the sign-in's own way out.
pub fn left_waiting(tasks: &[TaskRecord], stalled: impl Fn(&str) -> Option<String>) -> Vec<String> {
    tasks
        .iter()
        .filter(|t| !t.status.is_terminal())
        .filter_map(|t| {
            let why = stalled(&t.id).filter(|r| !r.starts_with("Sign-in needed"))?;
            Some(format!(
                "task {} ({}) is still {}, waiting for its server {:?}: {why}\n  \
                 nothing is lost: run `taskdeck-cli resume` again once the server can be reached\n",
                t.id, t.tool, t.status, t.server
            ))
        })
        .collect()
}

pub fn timestamp(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn event_detail(e: &TaskEvent) -> String {
    let d = &e.data;
    let s = |p: &str| d.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let text = match e.kind.as_str() {
        "created" => s("/mode").map(|m| format!("as {m}")),
        "remote" => match (s("/era"), s("/remote_task_id")) {
            (Some(era), Some(r)) => Some(format!("{era} era, remote task {r}")),
            (Some(era), None) => Some(format!("{era} era, answered at once")),
            _ => None,
        },
        "status" => s("/message"),
        "question" => s("/message").or_else(|| s("/request/params/message")),
        "answer" => s("/response/action"),
        "result" => Some(if d.get("is_error").and_then(Value::as_bool) == Some(true) {
            "tool reported an error".into()
        } else {
            "result received".into()
        }),
        "failed" => s("/error/message"),
        "cancelled" | "reclaimed" => s("/reason"),
        "dropped" => d.get("dropped").and_then(Value::as_u64).map(taskdeck_store::dropped_message),
        _ => None,
    };
    one_line(&text.unwrap_or_default(), 100)
}
