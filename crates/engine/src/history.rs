//! The history side of the facade, shared by both front ends so they follow one policy: deleting
//! (a live task is refused with its real status, or cancelled first when forced), retention,
//! pinning, and export. Writes go through the gate; reading and exporting need only the store.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::types::CallToolResult;
use taskdeck_store::{
    Attempt, Page, PageRequest, PurgeLine, PurgeReason, Purged, Retention, Space, StatusCounts, Store, StoreError,
    TaskEvent, TaskQuery, TaskRecord, TaskSummary,
};

use chrono::{DateTime, Utc};

use crate::engine::Engine;
use crate::error::Result;
use crate::event::EngineEvent;

/// What a retention pass removed (or, on a dry run, would remove), and the file's size around it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PruneReport {
    pub dry_run: bool,
    pub removed: Vec<Purged>,
    pub space: Space,
}

/// An export's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExportFormat {
    /// One JSON object per line: the whole record with its events, as `show --json` prints it.
    Jsonl,
    /// One row per task, for a spreadsheet.
    Csv,
    /// A report for people, results as text.
    Markdown,
}

impl std::str::FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "jsonl" => Ok(ExportFormat::Jsonl),
            "csv" => Ok(ExportFormat::Csv),
            "md" => Ok(ExportFormat::Markdown),
            other => Err(format!("unknown export format {other:?} (jsonl, csv or md)")),
        }
    }
}

impl Engine {
    /// Deletes the tasks, all or none. A task still working or waiting for input is refused with
    /// its real status, unless `force`, when it is cancelled first (as `cancel` does: the server is
    /// asked, and the task is marked cancelled here whatever it says).
    pub async fn delete(&self, ids: &[String], force: bool) -> Result<Vec<Purged>> {
        for id in ids {
            let rec = self.store().get(id)?;
            if rec.status.is_terminal() {
                continue;
            }
            if !force {
                return Err(StoreError::Refused {
                    id: rec.id.clone(),
                    current: rec.status,
                    attempted: Attempt::Delete,
                    reason: "it has not ended: cancel it first, or delete with force".into(),
                }
                .into());
            }
            self.cancel(id).await?;
        }
        let purged = self.gate().delete(ids, PurgeReason::User)?;
        self.announce_deleted(&purged);
        Ok(purged)
    }

    /// Deletes every finished, unpinned task last updated before `before` (what "delete everything
    /// finished before DATE" means), as the user's delete: `user` purge lines, a chunk of tasks per
    /// transaction so the engine's writes go in between. Working and waiting tasks are never among
    /// them, so nothing needs cancelling. `dry_run` only says which.
    pub fn delete_finished_before(&self, before: DateTime<Utc>, dry_run: bool) -> Result<Vec<Purged>> {
        let rule = finished_before(before);
        let candidates = self.store().prune_candidates(&rule)?;
        if dry_run {
            return Ok(candidates);
        }
        let mut removed = Vec::with_capacity(candidates.len());
        for chunk in candidates.chunks(DELETE_CHUNK) {
            let ids: Vec<String> = chunk.iter().map(|p| p.id.clone()).collect();
            let purged = self.gate().delete(&ids, PurgeReason::User)?;
            self.announce_deleted(&purged);
            removed.extend(purged);
        }
        Ok(removed)
    }

    fn announce_deleted(&self, purged: &[Purged]) {
        if !purged.is_empty() {
            self.gate().announce(EngineEvent::Deleted { tasks: purged.to_vec() });
        }
    }

    /// Applies a retention rule: finished, unpinned tasks that break it are removed, each with a
    /// `policy` purge line, and the freed pages go back to the file system where the store allows
    /// it. Working and waiting tasks are never touched. `dry_run` removes nothing.
    pub fn prune(&self, rule: &Retention, dry_run: bool) -> Result<PruneReport> {
        let report = prune(self.store(), rule, dry_run, |rule| self.gate().prune(rule))?;
        if !report.dry_run {
            self.announce_deleted(&report.removed);
        }
        Ok(report)
    }

    /// A page of the task list, newest first (see `Store::summaries`).
    pub fn summaries(&self, query: &TaskQuery, page: &PageRequest) -> Result<Page<TaskSummary>> {
        Ok(self.store().summaries(query, page)?)
    }

    /// Tasks per status under the query, its statuses aside (see `Store::counts`).
    pub fn counts(&self, query: &TaskQuery) -> Result<StatusCounts> {
        Ok(self.store().counts(query)?)
    }

    /// The purge log after line `after`, oldest first.
    pub fn purge_log(&self, after: i64, limit: usize) -> Result<Vec<PurgeLine>> {
        Ok(self.store().purge_log(after, limit)?)
    }

    /// The newest lines of the purge log before line `before` (from the newest when `None`), newest
    /// first: what a front end shows of the history's removals.
    pub fn purge_log_newest(&self, before: Option<i64>, limit: usize) -> Result<Vec<PurgeLine>> {
        Ok(self.store().purge_log_newest(before, limit)?)
    }

    /// Pins a task (retention keeps it) or unpins it.
    pub fn pin(&self, id: &str, pinned: bool) -> Result<TaskSummary> {
        let summary = self.gate().set_pinned(id, pinned)?;
        self.gate().announce(EngineEvent::Pinned { task: Box::new(summary.clone()) });
        Ok(summary)
    }
}

/// Tasks removed per transaction by [`Engine::delete_finished_before`], as retention does.
const DELETE_CHUNK: usize = 500;

/// "Finished before this moment" as a retention rule: `updated_at` is when a finished task ended.
fn finished_before(before: DateTime<Utc>) -> Retention {
    let age = (Utc::now() - before).to_std().unwrap_or_default();
    Retention { older_than: Some(age), ..Retention::default() }
}

/// A dry run of a retention rule against a store read without the engine.
pub fn prune_dry_run(store: &Store, rule: &Retention) -> Result<PruneReport> {
    prune(store, rule, true, |_| unreachable!("a dry run writes nothing"))
}

fn prune(
    store: &Store,
    rule: &Retention,
    dry_run: bool,
    apply: impl FnOnce(&Retention) -> Result<(Vec<Purged>, Space)>,
) -> Result<PruneReport> {
    if dry_run {
        let removed = store.prune_candidates(rule)?;
        return Ok(PruneReport { dry_run, removed, space: store.space(false)? });
    }
    let (removed, space) = apply(rule)?;
    Ok(PruneReport { dry_run, removed, space })
}

/// Tasks read per page while exporting, so an export of a large store holds one page at a time.
const EXPORT_PAGE: usize = 200;

/// Writes every task the query selects, newest first, in `format`. Returns how many. Without a
/// store (nothing was ever stored) it writes the format's empty export.
pub fn export(store: Option<&Store>, query: &TaskQuery, format: ExportFormat, out: &mut dyn Write) -> Result<usize> {
    let mut written = 0;
    let mut before: Option<String> = None;
    export_head(format, out)?;
    let Some(store) = store else {
        out.flush().map_err(io_error)?;
        return Ok(0);
    };
    loop {
        let page = store.records(query, &PageRequest { before: before.take(), limit: Some(EXPORT_PAGE) })?;
        for rec in &page.items {
            export_record(store, rec, format, out)?;
            written += 1;
        }
        match page.next_before {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    out.flush().map_err(io_error)?;
    Ok(written)
}

/// Writes the named tasks in the order given (a selection in a list), in `format`, one record in
/// memory at a time. A task that is gone by now is left out rather than failing the export: it
/// was deleted after it was picked. Returns how many were written.
pub fn export_ids(store: &Store, ids: &[String], format: ExportFormat, out: &mut dyn Write) -> Result<usize> {
    export_head(format, out)?;
    let mut written = 0;
    for id in ids {
        let rec = match store.get(id) {
            Ok(rec) => rec,
            Err(StoreError::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        export_record(store, &rec, format, out)?;
        written += 1;
    }
    out.flush().map_err(io_error)?;
    Ok(written)
}

fn export_head(format: ExportFormat, out: &mut dyn Write) -> Result<()> {
    match format {
        ExportFormat::Csv => csv_row(out, CSV_HEADER.iter().map(|h| h.to_string())),
        ExportFormat::Markdown => writeln!(out, "# Taskdeck export\n").map_err(io_error),
        ExportFormat::Jsonl => Ok(()),
    }
}

fn export_record(store: &Store, rec: &TaskRecord, format: ExportFormat, out: &mut dyn Write) -> Result<()> {
    match format {
        ExportFormat::Jsonl => {
            let events = store.events(&rec.id)?;
            let line =
                serde_json::to_string(&WithEvents { task: rec, events: &events }).map_err(|e| io_error(e.into()))?;
            writeln!(out, "{line}").map_err(io_error)
        }
        ExportFormat::Csv => csv_row(out, csv_cells(rec)),
        ExportFormat::Markdown => markdown(out, rec),
    }
}

#[derive(Serialize)]
struct WithEvents<'a> {
    #[serde(flatten)]
    task: &'a TaskRecord,
    events: &'a [TaskEvent],
}

fn io_error(e: io::Error) -> crate::error::EngineError {
    StoreError::Io { path: "export".into(), source: e }.into()
}

const CSV_HEADER: [&str; 11] = [
    "id",
    "created_at",
    "updated_at",
    "server",
    "tool",
    "status",
    "status_message",
    "error",
    "arguments",
    "result",
    "remote_task_id",
];

fn csv_cells(rec: &TaskRecord) -> impl Iterator<Item = String> {
    [
        rec.id.clone(),
        millis(&rec.created_at),
        millis(&rec.updated_at),
        rec.server.clone(),
        rec.tool.clone(),
        rec.status.to_string(),
        rec.status_message.clone().unwrap_or_default(),
        rec.error.as_ref().map(|e| e.message.clone()).unwrap_or_default(),
        rec.arguments.to_string(),
        rec.result.as_ref().map(result_text).unwrap_or_default(),
        rec.remote_task_id.clone().unwrap_or_default(),
    ]
    .into_iter()
}

fn millis(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// One CSV row (RFC 4180): a cell with a comma, quote or line break is quoted, its quotes doubled.
fn csv_row(out: &mut dyn Write, cells: impl Iterator<Item = String>) -> Result<()> {
    let row: Vec<String> = cells.map(|c| csv_cell(&c)).collect();
    write!(out, "{}\r\n", row.join(",")).map_err(io_error)
}

/// A cell as a spreadsheet may read it: text a spreadsheet would run as a formula (starting with
/// `=`, `+`, `-`, `@`, or a tab or carriage return that hides one) is made plain text by a
/// leading `'`, which spreadsheets show as text and do not evaluate.
pub(crate) fn csv_cell(text: &str) -> String {
    let defused = match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_owned(),
    };
    if defused.contains([',', '"', '\n', '\r']) { format!("\"{}\"", defused.replace('"', "\"\"")) } else { defused }
}

/// The text a person wants from a result: its text blocks, else the structured content or the
/// whole result as JSON.
fn result_text(result: &Value) -> String {
    let text = serde_json::from_value::<CallToolResult>(result.clone()).map(|r| r.joined_text()).unwrap_or_default();
    if !text.is_empty() {
        return text;
    }
    serde_json::to_string_pretty(result.get("structuredContent").unwrap_or(result)).unwrap_or_default()
}

/// A fenced block that no line of `text` can close: the fence is longer than any run of
/// backticks in it.
fn fenced(text: &str, info: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{info}\n{text}\n{fence}\n")
}

/// Server text in a heading or a list line: one line, with Markdown's and HTML's active
/// characters escaped, so a name cannot become a link, an image or markup.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '!' | '<' | '>' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn markdown(out: &mut dyn Write, rec: &TaskRecord) -> Result<()> {
    let mut s = format!("## {} on {}: {}\n\n", inline(&rec.tool), inline(&rec.server), rec.status);
    s.push_str(&format!("- id: {}\n", inline(&rec.id)));
    s.push_str(&format!("- created: {}\n", millis(&rec.created_at)));
    s.push_str(&format!("- updated: {}\n", millis(&rec.updated_at)));
    if let Some(m) = &rec.status_message {
        s.push_str(&format!("- message: {}\n", inline(m)));
    }
    if let Some(e) = &rec.error {
        s.push_str(&format!("- error: {}\n", inline(&e.message)));
    }
    s.push_str("\nArguments:\n\n");
    s.push_str(&fenced(&serde_json::to_string_pretty(&rec.arguments).unwrap_or_default(), "json"));
    if let Some(r) = &rec.result {
        s.push_str("\nResult:\n\n");
        s.push_str(&fenced(&result_text(r), "text"));
    } else if rec.status == TaskStatus::InputRequired {
        s.push_str("\nWaiting for an answer.\n");
    }
    s.push('\n');
    out.write_all(s.as_bytes()).map_err(io_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_a_spreadsheet_would_run_is_made_text_and_quoting_is_rfc_4180() {
        assert_eq!(csv_cell("=HYPERLINK(\"http://x\")"), "\"'=HYPERLINK(\"\"http://x\"\")\"");
        assert_eq!(csv_cell("+1"), "'+1");
        assert_eq!(csv_cell("-2+3"), "'-2+3");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("\t=1"), "'\t=1");
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("line\nbreak"), "\"line\nbreak\"");
    }

    #[test]
    fn a_result_cannot_close_its_fence_and_names_cannot_become_markup() {
        let block = fenced("```\n# not a heading", "text");
        assert!(block.starts_with("````text\n") && block.ends_with("\n````\n"), "{block}");
        assert_eq!(inline("[x](javascript:y) <b>"), "\\[x\\]\\(javascript:y\\) \\<b\\>");
    }

    #[test]
    fn a_selection_is_exported_in_the_order_picked_and_a_task_gone_since_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.sqlite3")).unwrap();
        let ids: Vec<String> = (0..2)
            .map(|i| {
                store
                    .create_task(taskdeck_store::NewTask {
                        server: "demo".into(),
                        tool: format!("tool{i}"),
                        arguments: serde_json::json!({ "n": i }),
                        idempotency_key: format!("k{i}"),
                        mode: taskdeck_store::Mode::Task,
                    })
                    .unwrap()
                    .id
            })
            .collect();
        let picked = [ids[0].clone(), "gone".to_owned(), ids[1].clone()];
        let mut out = Vec::new();
        assert_eq!(export_ids(&store, &picked, ExportFormat::Csv, &mut out).unwrap(), 2);
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.split("\r\n").filter(|r| !r.is_empty()).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[0].starts_with("id,created_at"));
        assert!(rows[1].starts_with(&ids[0]) && rows[2].starts_with(&ids[1]), "{text}");
        let mut out = Vec::new();
        assert_eq!(export_ids(&store, &picked[..1], ExportFormat::Jsonl, &mut out).unwrap(), 1);
        let line: serde_json::Value = serde_json::from_slice(out.trim_ascii()).unwrap();
        assert_eq!(line["id"], ids[0].as_str());
        assert!(line["events"].as_array().is_some_and(|e| !e.is_empty()));
    }
}
