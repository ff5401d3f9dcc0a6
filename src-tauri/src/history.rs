//! The app's side of history: the task list's pages (pinned tasks first under a filter), the
//! snippet that shows where a search matched, and what the delete and export dialogs send. The
//! commands at the end of `commands.rs` are thin wrappers over these.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskdeck_engine::{ErrorCode, TaskRecord};
use taskdeck_protocol::TaskStatus;
use taskdeck_protocol::types::CallToolResult;
use taskdeck_store::{PageRequest, Store, StoreError, TaskQuery, TaskSummary};
use ts_rs::TS;

use crate::commands::CommandError;

/// The most tasks one page request returns, whatever the webview asks for.
pub const MAX_PAGE: usize = 2000;
/// The most ids one snippet request looks at: the rows on screen.
pub const MAX_SNIPPETS: usize = 200;
/// The most ids one membership request looks at: a frame's worth of changed tasks.
pub const MAX_MATCHES: usize = 2000;

/// Which tasks the list shows. Every field narrows; the default is every task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct TaskFilter {
    /// Any of these; empty means any status.
    pub statuses: Vec<TaskStatus>,
    pub server: Option<String>,
    pub tool: Option<String>,
    /// Created at or after this moment (RFC 3339).
    pub created_from: Option<String>,
    /// Created before this moment (RFC 3339).
    pub created_until: Option<String>,
    /// Only tasks whose question waits for the user.
    pub waiting: bool,
    /// Words every task shown contains somewhere (see `taskdeck_store::search`).
    pub search: Option<String>,
}

impl TaskFilter {
    pub fn query(&self) -> Result<TaskQuery, CommandError> {
        Ok(TaskQuery {
            statuses: self.statuses.clone(),
            server: self.server.clone(),
            tool: self.tool.clone(),
            created_from: moment(self.created_from.as_deref())?,
            created_until: moment(self.created_until.as_deref())?,
            waiting: self.waiting,
            pinned: None,
            search: self.search.clone().filter(|s| !s.trim().is_empty()),
        })
    }

    /// Under a filter the pinned tasks come first: what someone narrowing the list keeps coming
    /// back to. The whole list stays in plain time order.
    pub fn pinned_first(&self) -> bool {
        let mut plain = self.clone();
        plain.search = plain.search.filter(|s| !s.trim().is_empty());
        plain != TaskFilter::default()
    }
}

fn moment(text: Option<&str>) -> Result<Option<DateTime<Utc>>, CommandError> {
    text.map(|t| {
        DateTime::parse_from_rfc3339(t)
            .map(|d| d.with_timezone(&Utc))
            .map_err(|e| CommandError::new(ErrorCode::InvalidArguments, format!("not a date and time: {e}")))
    })
    .transpose()
}

/// Where the next page starts: after task `before` (from the top when `None`) in the segment
/// `pinned` names (`Some(true)` the pinned tasks, `Some(false)` the others; `None` when the list is
/// one segment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PageCursor {
    pub pinned: Option<bool>,
    pub before: Option<String>,
}

/// A page of the list and where the next one starts (`None`: this page reached the end).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TaskPage {
    pub items: Vec<TaskSummary>,
    pub next: Option<PageCursor>,
}

/// One page of the list under `filter`, newest first, the pinned tasks before the others when
/// [`TaskFilter::pinned_first`]. A page may span both segments.
pub fn page(
    store: &Store,
    filter: &TaskFilter,
    cursor: Option<PageCursor>,
    limit: usize,
) -> Result<TaskPage, CommandError> {
    let limit = limit.clamp(1, MAX_PAGE);
    let query = filter.query()?;
    if cursor.is_none()
        && let Some(found) = by_id(store, &query)?
    {
        return Ok(TaskPage { items: vec![found], next: None });
    }
    let mut at = cursor.unwrap_or(PageCursor { pinned: filter.pinned_first().then_some(true), before: None });
    let mut items: Vec<TaskSummary> = Vec::new();
    loop {
        let segment = TaskQuery { pinned: at.pinned, ..query.clone() };
        let page = store
            .summaries(&segment, &PageRequest { before: at.before.clone(), limit: Some(limit - items.len()) })
            .map_err(|e| CommandError::from(taskdeck_engine::EngineError::from(e)))?;
        items.extend(page.items);
        match (page.next_before, at.pinned) {
            (Some(before), pinned) => {
                return Ok(TaskPage { items, next: Some(PageCursor { pinned, before: Some(before) }) });
            }
            (None, Some(true)) => {
                at = PageCursor { pinned: Some(false), before: None };
                if items.len() >= limit {
                    return Ok(TaskPage { items, next: Some(at) });
                }
            }
            (None, _) => return Ok(TaskPage { items, next: None }),
        }
    }
}

/// The rows at positions `offset..offset + limit` of the list under `filter`, in the order [`page`]
/// gives it (the pinned tasks first under a filter): what the list asks for when it is scrolled
/// to any stretch of itself, without the pages before it. Fewer rows than asked means the list
/// ends there. At most [`MAX_PAGE`] rows.
pub fn window(
    store: &Store,
    filter: &TaskFilter,
    offset: usize,
    limit: usize,
) -> Result<Vec<TaskSummary>, CommandError> {
    let limit = limit.clamp(1, MAX_PAGE);
    let query = filter.query()?;
    let fail = |e: StoreError| CommandError::from(taskdeck_engine::EngineError::from(e));
    if let Some(found) = by_id(store, &query)? {
        return Ok(if offset == 0 { vec![found] } else { Vec::new() });
    }
    if !filter.pinned_first() {
        return store.summaries_at(&query, offset, limit).map_err(fail);
    }
    // Pinned by hand, so few: the segment is read whole (by its index) to know where the others
    // start.
    let pinned = store
        .summaries(&TaskQuery { pinned: Some(true), ..query.clone() }, &PageRequest::default())
        .map_err(fail)?
        .items;
    let from = offset.saturating_sub(pinned.len());
    let mut items: Vec<TaskSummary> = pinned.into_iter().skip(offset).take(limit).collect();
    if items.len() < limit {
        let rest =
            store.summaries_at(&TaskQuery { pinned: Some(false), ..query }, from, limit - items.len()).map_err(fail)?;
        items.extend(rest);
    }
    Ok(items)
}

/// Which of `ids` (tasks that just changed) are in the list under `filter` now, by the same rules
/// as [`page`]: a search for a task's id admits that task only. The list is patched from the
/// answer, so a task that came to match a search joins it and one that no longer does leaves.
/// At most [`MAX_MATCHES`] ids are looked at.
pub fn matching(store: &Store, filter: &TaskFilter, ids: &[String]) -> Result<Vec<String>, CommandError> {
    let ids = &ids[..ids.len().min(MAX_MATCHES)];
    let query = filter.query()?;
    if let Some(found) = by_id(store, &query)? {
        return Ok(ids.iter().filter(|id| **id == found.id).cloned().collect());
    }
    store.matching(&query, ids).map_err(|e| CommandError::from(taskdeck_engine::EngineError::from(e)))
}

/// A search that is one word shaped like a task id (8 or more hex digits and dashes, as the
/// detail pane shows it) and names one task: the list was searched by id, as it always could be.
/// The full-text index holds no ids.
fn by_id(store: &Store, query: &TaskQuery) -> Result<Option<TaskSummary>, CommandError> {
    let Some(word) = query.search.as_deref().map(str::trim) else { return Ok(None) };
    if word.len() < 8 || !word.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Ok(None);
    }
    let id = match store.resolve_prefix(word) {
        Ok(rec) => rec.id,
        Err(StoreError::NotFound { .. } | StoreError::Ambiguous { .. }) => return Ok(None),
        Err(e) => return Err(taskdeck_engine::EngineError::from(e).into()),
    };
    let t = store.summary(&id).map_err(|e| CommandError::from(taskdeck_engine::EngineError::from(e)))?;
    let admitted = (query.statuses.is_empty() || query.statuses.contains(&t.status))
        && query.server.as_ref().is_none_or(|s| *s == t.server)
        && query.tool.as_ref().is_none_or(|s| *s == t.tool)
        && query.created_from.is_none_or(|from| t.created_at >= from)
        && query.created_until.is_none_or(|until| t.created_at < until)
        && (!query.waiting || (t.status == TaskStatus::InputRequired && t.question.is_some()));
    Ok(admitted.then_some(t))
}

/// Where a search matched in a task, to show under its row: a stretch of one field's text and the
/// matches in it, as offsets in UTF-16 code units (JavaScript's string indices). The text is made
/// plain here (controls, bidirectional and invisible characters are spaces), so the offsets hold
/// for what the page shows; the page renders the parts as text, never as markup.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Snippet {
    pub task_id: String,
    /// Which part of the task: `result`, `arguments`, `message`, `error`, `question` or `answer`.
    pub field: String,
    pub text: String,
    pub matches: Vec<MatchRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct MatchRange {
    pub start: u32,
    pub end: u32,
}

/// Characters of context before the first match and after it.
const BEFORE: usize = 40;
const AFTER: usize = 140;
/// The most characters of one field looked at; the search index bounds what it holds the same way.
const FIELD_CHARS: usize = 200_000;

/// The search's words as the index reads them: letters and digits, case folded; `*` at the end of a
/// word makes its last part a prefix.
fn terms(search: &str) -> Vec<(Vec<char>, bool)> {
    let mut out = Vec::new();
    for word in search.split_whitespace() {
        let prefix = word.ends_with('*');
        let parts: Vec<&str> = word.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()).collect();
        let n = parts.len();
        for (i, part) in parts.into_iter().enumerate() {
            out.push((part.chars().map(fold).collect(), prefix && i + 1 == n));
        }
    }
    out
}

fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// The matches of any term in `text`, as character ranges, each starting at a word's start and,
/// unless a prefix, ending at its end.
fn matches_in(text: &[char], terms: &[(Vec<char>, bool)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if i > 0 && text[i - 1].is_alphanumeric() {
            i += 1;
            continue;
        }
        let hit = terms
            .iter()
            .filter(|(t, prefix)| {
                let end = i + t.len();
                end <= text.len()
                    && text[i..end].iter().zip(t).all(|(a, b)| fold(*a) == *b)
                    && (*prefix || end == text.len() || !text[end].is_alphanumeric())
            })
            .map(|(t, _)| t.len())
            .max();
        match hit {
            Some(len) if len > 0 => {
                out.push((i, i + len));
                i += len;
            }
            _ => i += 1,
        }
    }
    out
}

fn plain(c: char) -> char {
    let hidden = matches!(c,
        '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}'
        | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}');
    if c.is_control() || hidden { ' ' } else { c }
}

/// The snippet of one field's text, when a term matches in it.
pub fn snippet_of(text: &str, terms_of: &[(Vec<char>, bool)]) -> Option<(String, Vec<MatchRange>)> {
    let chars: Vec<char> = text.chars().take(FIELD_CHARS).collect();
    let found = matches_in(&chars, terms_of);
    let (first, first_end) = *found.first()?;
    let start = first.saturating_sub(BEFORE);
    let end = chars.len().min(first_end + AFTER);
    let mut shown = String::new();
    let mut units: u32 = 0;
    let mut at_unit = Vec::with_capacity(end - start + 1);
    if start > 0 {
        shown.push('…');
        units += 1;
    }
    for c in &chars[start..end] {
        at_unit.push(units);
        let c = plain(*c);
        shown.push(c);
        units += c.len_utf16() as u32;
    }
    at_unit.push(units);
    if end < chars.len() {
        shown.push('…');
    }
    let ranges = found
        .into_iter()
        .filter(|(s, e)| *s >= start && *e <= end)
        .map(|(s, e)| MatchRange { start: at_unit[s - start], end: at_unit[e - start] })
        .collect();
    Some((shown, ranges))
}

/// JSON as `key value` pairs, the way the index reads arguments and structured content.
fn pairs(value: &Value, key: Option<&str>, out: &mut String) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| pairs(v, Some(k), out)),
        Value::Array(items) => items.iter().for_each(|v| pairs(v, key, out)),
        Value::Null => {}
        scalar => {
            if !out.is_empty() {
                out.push_str(" · ");
            }
            if let Some(k) = key {
                out.push_str(k);
                out.push(' ');
            }
            match scalar {
                Value::String(s) => out.push_str(s),
                other => out.push_str(&other.to_string()),
            }
        }
    }
}

/// A task's searchable fields, in the order a snippet prefers them.
fn fields(rec: &TaskRecord) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(result) = &rec.result {
        let mut text =
            serde_json::from_value::<CallToolResult>(result.clone()).map(|r| r.joined_text()).unwrap_or_default();
        if let Some(structured) = result.get("structuredContent") {
            pairs(structured, None, &mut text);
        }
        out.push(("result", text));
    }
    let mut args = String::new();
    pairs(&rec.arguments, None, &mut args);
    out.push(("arguments", args));
    if let Some(m) = &rec.status_message {
        out.push(("message", m.clone()));
    }
    if let Some(e) = &rec.error {
        out.push(("error", e.message.clone()));
    }
    if let Some(m) = rec.question.as_ref().and_then(|q| q.message.clone()) {
        out.push(("question", m));
    }
    if let Some(a) = &rec.answer {
        let mut text = String::new();
        if let Ok(v) = serde_json::to_value(a) {
            pairs(&v, None, &mut text);
        }
        out.push(("answer", text));
    }
    out
}

/// Where `search` matched in each of the tasks (those that are gone, or where the match is not
/// in a field shown, such as an earlier status message, have none).
pub fn snippets(store: &Store, ids: &[String], search: &str) -> Result<Vec<Snippet>, CommandError> {
    let terms = terms(search);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for id in ids.iter().take(MAX_SNIPPETS) {
        let rec = match store.get(id) {
            Ok(rec) => rec,
            Err(StoreError::NotFound { .. }) => continue,
            Err(e) => return Err(taskdeck_engine::EngineError::from(e).into()),
        };
        if let Some((field, (text, matches))) =
            fields(&rec).into_iter().find_map(|(field, text)| snippet_of(&text, &terms).map(|s| (field, s)))
        {
            out.push(Snippet { task_id: rec.id.clone(), field: field.to_owned(), text, matches });
        }
    }
    Ok(out)
}

/// What "delete" removes: the tasks picked, or every finished task last updated before a moment.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeleteScope {
    Tasks { ids: Vec<String> },
    FinishedBefore { before: String },
}

/// What an export writes: the tasks picked, in the list's order, or every task under a filter.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportScope {
    Tasks { ids: Vec<String> },
    Filter { filter: TaskFilter },
}

pub fn before_moment(before: &str) -> Result<DateTime<Utc>, CommandError> {
    moment(Some(before))?.ok_or_else(|| CommandError::new(ErrorCode::InvalidArguments, "no date given"))
}

/// An export's file name: `taskdeck-<date>.<ext>`.
pub fn export_file_name(format: taskdeck_engine::ExportFormat, now: DateTime<Utc>) -> (String, &'static str) {
    let ext = match format {
        taskdeck_engine::ExportFormat::Jsonl => "jsonl",
        taskdeck_engine::ExportFormat::Csv => "csv",
        taskdeck_engine::ExportFormat::Markdown => "md",
    };
    (format!("taskdeck-{}.{ext}", now.format("%Y-%m-%d")), ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snippet(text: &str, search: &str) -> Option<(String, Vec<(String, MatchRange)>)> {
        let (shown, ranges) = snippet_of(text, &terms(search))?;
        let utf16: Vec<u16> = shown.encode_utf16().collect();
        let parts =
            ranges.iter().map(|r| (String::from_utf16_lossy(&utf16[r.start as usize..r.end as usize]), *r)).collect();
        Some((shown, parts))
    }

    #[test]
    fn a_snippet_marks_every_word_of_the_search_whatever_its_case() {
        let (shown, parts) = snippet("The Q3 report: revenue for q3 grew", "q3 REPORT").unwrap();
        assert_eq!(shown, "The Q3 report: revenue for q3 grew");
        let hits: Vec<&str> = parts.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(hits, ["Q3", "report", "q3"]);
    }

    #[test]
    fn a_snippet_matches_whole_words_unless_the_word_is_a_prefix() {
        assert!(snippet("payments are due", "pay").is_none());
        let (_, parts) = snippet("payments are due", "pay*").unwrap();
        assert_eq!(parts[0].0, "pay");
        let (_, parts) = snippet("service payments", "service=payments").unwrap();
        assert_eq!(parts.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(), ["service", "payments"]);
    }

    #[test]
    fn snippet_offsets_count_utf16_units_and_hidden_characters_are_spaces() {
        let (shown, parts) = snippet("😀 \u{202E}evil\u{1b}[31m word", "word").unwrap();
        assert!(!shown.contains('\u{202E}') && !shown.contains('\u{1b}'), "{shown:?}");
        assert_eq!(parts[0].0, "word");
        assert_eq!(parts[0].1.start, 2 + 1 + 1 + 4 + 1 + 4 + 1);
    }

    #[test]
    fn a_long_text_is_cut_around_the_first_match() {
        let text = format!("{} needle {}", "a".repeat(5000), "b".repeat(5000));
        let (shown, parts) = snippet(&text, "needle").unwrap();
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        assert!(shown.chars().count() < BEFORE + AFTER + 10);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].0, "needle");
    }

    #[test]
    fn only_punctuation_finds_no_snippet() {
        assert!(snippet("= * ( )", "= *").is_none());
    }

    #[test]
    fn any_narrowing_puts_pinned_tasks_first_but_the_whole_list_is_in_time_order() {
        assert!(!TaskFilter::default().pinned_first());
        assert!(!TaskFilter { search: Some("  ".into()), ..TaskFilter::default() }.pinned_first());
        assert!(TaskFilter { server: Some("demo".into()), ..TaskFilter::default() }.pinned_first());
        assert!(TaskFilter { search: Some("q3".into()), ..TaskFilter::default() }.pinned_first());
    }

    fn store_with(n: usize) -> (tempfile::TempDir, Store, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.sqlite3")).unwrap();
        let ids = (0..n)
            .map(|i| {
                store
                    .create_task(taskdeck_store::NewTask {
                        server: "demo".into(),
                        tool: "t".into(),
                        arguments: serde_json::json!({ "n": i }),
                        idempotency_key: format!("k{i}"),
                        mode: taskdeck_store::Mode::Task,
                    })
                    .unwrap()
                    .id
            })
            .collect();
        (dir, store, ids)
    }

    fn all_pages(store: &Store, filter: &TaskFilter, limit: usize) -> Vec<Vec<String>> {
        let mut pages = Vec::new();
        let mut cursor = None;
        loop {
            let p = page(store, filter, cursor, limit).unwrap();
            pages.push(p.items.iter().map(|t| t.id.clone()).collect());
            match p.next {
                Some(next) => cursor = Some(next),
                None => return pages,
            }
        }
    }

    #[test]
    fn under_a_filter_pinned_tasks_come_first_and_pages_cross_from_them_to_the_rest() {
        let (_dir, store, ids) = store_with(5);
        // Oldest first in `ids`; pin the oldest and the middle one.
        store.set_pinned(&ids[0], true).unwrap();
        store.set_pinned(&ids[2], true).unwrap();
        let filter = TaskFilter { server: Some("demo".into()), ..TaskFilter::default() };
        let pages = all_pages(&store, &filter, 3);
        let order: Vec<String> = pages.concat();
        assert_eq!(order, [&ids[2], &ids[0], &ids[4], &ids[3], &ids[1]].map(String::clone));
        assert_eq!(pages[0].len(), 3, "a page runs from the pinned tasks into the rest");

        let everything = all_pages(&store, &TaskFilter::default(), 2).concat();
        assert_eq!(everything, [&ids[4], &ids[3], &ids[2], &ids[1], &ids[0]].map(String::clone));
    }

    #[test]
    fn a_page_exactly_as_long_as_the_pinned_tasks_continues_with_the_rest() {
        let (_dir, store, ids) = store_with(3);
        store.set_pinned(&ids[1], true).unwrap();
        let filter = TaskFilter { tool: Some("t".into()), ..TaskFilter::default() };
        let pages = all_pages(&store, &filter, 1);
        assert_eq!(pages.concat(), [&ids[1], &ids[2], &ids[0]].map(String::clone));
        assert!(pages.iter().all(|p| p.len() <= 1));
    }

    #[test]
    fn a_window_anywhere_in_the_list_is_that_stretch_of_the_paged_list_pinned_tasks_first() {
        let (_dir, store, ids) = store_with(7);
        store.set_pinned(&ids[1], true).unwrap();
        store.set_pinned(&ids[4], true).unwrap();
        let short: String = ids[3].chars().take(8).collect();
        for filter in [
            TaskFilter::default(),
            TaskFilter { server: Some("demo".into()), ..TaskFilter::default() },
            TaskFilter { search: Some(short), ..TaskFilter::default() },
        ] {
            let list = all_pages(&store, &filter, 50).concat();
            for offset in 0..=list.len() {
                for limit in [1, 2, 3, 10] {
                    let got: Vec<String> =
                        window(&store, &filter, offset, limit).unwrap().into_iter().map(|t| t.id).collect();
                    let end = (offset + limit).min(list.len());
                    assert_eq!(got, list[offset.min(end)..end], "{filter:?} at {offset}, {limit} rows");
                }
            }
        }
    }

    #[test]
    fn a_search_for_a_tasks_id_finds_that_task() {
        let (_dir, store, ids) = store_with(3);
        let short: String = ids[1].chars().take(8).collect();
        let found =
            page(&store, &TaskFilter { search: Some(short.clone()), ..TaskFilter::default() }, None, 50).unwrap();
        assert_eq!(found.items.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [ids[1].as_str()]);
        assert!(found.next.is_none());
        let other_server =
            TaskFilter { search: Some(short), server: Some("elsewhere".into()), ..TaskFilter::default() };
        assert!(page(&store, &other_server, None, 50).unwrap().items.is_empty(), "the other filters still apply");
    }

    #[test]
    fn a_task_that_came_to_match_a_search_is_told_to_be_in_its_list() {
        let (_dir, store, ids) = store_with(3);
        store
            .apply(
                &ids[1],
                taskdeck_store::Update::Completed {
                    result: serde_json::json!({"content": [{"type": "text", "text": "quokka sighted"}]}),
                    server_status: None,
                },
            )
            .unwrap();
        let search = TaskFilter { search: Some("quokka".into()), ..TaskFilter::default() };
        assert_eq!(matching(&store, &search, &ids).unwrap(), [ids[1].clone()]);
        let listed: Vec<String> = page(&store, &search, None, 50).unwrap().items.into_iter().map(|t| t.id).collect();
        assert_eq!(listed, [ids[1].clone()], "the same answer as the page");
        let failed = TaskFilter { statuses: vec![TaskStatus::Failed], ..search };
        assert!(matching(&store, &failed, &ids).unwrap().is_empty());
        // A search by id admits that task only, as the page does.
        let short: String = ids[2].chars().take(8).collect();
        let by_id = TaskFilter { search: Some(short), ..TaskFilter::default() };
        assert_eq!(matching(&store, &by_id, &ids).unwrap(), [ids[2].clone()]);
        assert_eq!(matching(&store, &TaskFilter::default(), &ids).unwrap().len(), 3);
    }

    #[test]
    fn a_snippet_is_found_in_a_stored_result_and_a_gone_task_has_none() {
        let (_dir, store, ids) = store_with(2);
        store
            .apply(
                &ids[0],
                taskdeck_store::Update::Completed {
                    result: serde_json::json!({"content": [{"type": "text", "text": "The Q3 report is ready"}]}),
                    server_status: None,
                },
            )
            .unwrap();
        let found = snippets(&store, &[ids[0].clone(), ids[1].clone(), "gone".into()], "q3").unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "result");
        assert_eq!(found[0].text, "The Q3 report is ready");
        assert_eq!(found[0].matches, [MatchRange { start: 4, end: 6 }]);
        let by_argument = snippets(&store, &[ids[1].clone()], "n").unwrap();
        assert_eq!(by_argument[0].field, "arguments");
    }
}
