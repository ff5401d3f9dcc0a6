//! The store's history side: the task list a page at a time, counts per status, and the filters
//! both share, all done in SQL. A page reads summaries ([`TaskSummary`]): no arguments, results or
//! question bodies are decoded, so a page costs the same whatever those hold.

use chrono::{DateTime, Utc};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};
use serde::{Deserialize, Serialize};
use taskdeck_protocol::{Era, TaskStatus};

use crate::error::{Result, StoreError};
use crate::store::{RawTask, Store, TASK_COLUMNS_OF_T};
use crate::task::{FailureReason, Mode, Progress, TaskError, TaskRecord};
use crate::time;

/// The most characters of a pending question's message a summary carries: a line in a list, not
/// the question.
pub const SUMMARY_MESSAGE_CHARS: usize = 1000;

/// Which tasks a page, a count or an export is about. Every field narrows; the default is every
/// task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskQuery {
    /// Any of these statuses; empty means any status.
    pub statuses: Vec<TaskStatus>,
    pub server: Option<String>,
    pub tool: Option<String>,
    /// Created at or after this moment.
    #[serde(with = "optional_time")]
    pub created_from: Option<DateTime<Utc>>,
    /// Created before this moment.
    #[serde(with = "optional_time")]
    pub created_until: Option<DateTime<Utc>>,
    /// Only tasks waiting for the user: `input_required` with its question known.
    pub waiting: bool,
    /// Only pinned (`Some(true)`) or only unpinned (`Some(false)`) tasks.
    pub pinned: Option<bool>,
    /// Words the task's searchable text must all contain (see [`crate::search`]); `None` or blank
    /// means no search.
    pub search: Option<String>,
}

/// Where a page starts and how long it is. Pages are newest first (by creation, then by insertion
/// for tasks created in the same millisecond); `before` is the last task of the previous page, so
/// a task created while someone pages never shifts the pages after the first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PageRequest {
    pub before: Option<String>,
    /// `None`: every task after `before`.
    pub limit: Option<usize>,
}

/// What the task list shows of a task: the record without its arguments, result and question
/// body, none of which is read to make it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub id: String,
    pub server: String,
    pub tool: String,
    pub mode: Mode,
    pub era: Option<Era>,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub progress: Option<Progress>,
    pub question: Option<QuestionBrief>,
    pub error: Option<TaskError>,
    /// Whether a result is stored (the whole record has it).
    pub has_result: bool,
    pub pinned: bool,
    #[serde(with = "time::rfc3339_millis")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub created_at: DateTime<Utc>,
    #[serde(with = "time::rfc3339_millis")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub updated_at: DateTime<Utc>,
}

/// A pending question as a list shows it: which one (its key as the store writes it), the first
/// [`SUMMARY_MESSAGE_CHARS`] characters of its message, and the kind of answer it wants as it was
/// written (`form`, `url`, …; the whole record decides it afresh).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionBrief {
    pub key: String,
    pub message: Option<String>,
    pub kind: Option<String>,
}

/// One page, and the cursor of the next one (`None` when this page reached the end).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_before: Option<String>,
}

/// Tasks per status under a query (its own `statuses` ignored, so every tab can show its count),
/// and how many of them wait for the user.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCounts {
    pub working: u64,
    pub input_required: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// `input_required` with the question known: what "waiting for me" shows.
    pub waiting: u64,
    pub total: u64,
}

const SUMMARY_COLUMNS: &str = "t.id, t.server, t.tool, t.mode, t.era, t.status, t.status_message, t.progress, \
     t.progress_total, t.progress_message, t.question_key, \
     CASE WHEN t.question IS NOT NULL AND json_valid(t.question) AND json_type(t.question, '$.message') = 'text' \
          THEN json_extract(t.question, '$.message') END, \
     CASE WHEN t.question IS NOT NULL AND json_valid(t.question) AND json_type(t.question, '$.asks.kind') = 'text' \
          THEN json_extract(t.question, '$.asks.kind') END, \
     t.error_code, t.error_message, t.error_reason, t.result IS NOT NULL, t.pinned, t.created_at, t.updated_at";

/// A WHERE clause over `tasks AS t` and its parameters, built from a query: user text only ever
/// reaches SQL as a parameter. The search is kept apart (`search`), because how it is best joined
/// depends on how many tasks it matches (see [`Plan`]).
pub(crate) struct Clause {
    pub sql: String,
    pub params: Vec<SqlValue>,
    /// The FTS5 query, when the query searches.
    pub search: Option<String>,
}

impl Clause {
    pub(crate) fn of(query: &TaskQuery, with_statuses: bool) -> Result<Option<Clause>> {
        Clause::build(query, with_statuses, false)
    }

    /// `in_order`: the clause is for a walk of the tasks newest first, so the terms whose indexes
    /// cannot give that order (several statuses, the pinned flag) are written so that SQLite does
    /// not pick them (a unary `+`): reading every unpinned task by that index and sorting them all
    /// to keep the first fifty was most of a search's time. Otherwise the pinned tasks, pinned by
    /// hand and so few, are read by their index whatever else narrows (SQLite, with no statistics,
    /// picked the status index and read every completed task to find none pinned), and the
    /// unpinned ones, nearly every task, never by it.
    fn build(query: &TaskQuery, with_statuses: bool, in_order: bool) -> Result<Option<Clause>> {
        let mut terms: Vec<String> = Vec::new();
        let mut params: Vec<SqlValue> = Vec::new();
        let param = |params: &mut Vec<SqlValue>, v: SqlValue| {
            params.push(v);
            format!("?{}", params.len())
        };
        let by_pins = !in_order && query.pinned == Some(true);
        let col =
            |name: &str, indexed: bool| if indexed && !by_pins { format!("t.{name}") } else { format!("+t.{name}") };
        if with_statuses && !query.statuses.is_empty() {
            let list: Vec<String> =
                query.statuses.iter().map(|s| param(&mut params, SqlValue::Text(s.as_str().to_owned()))).collect();
            // One status is an equality on `tasks_by_status_created`, which is in order.
            let column = col("status", !(in_order && list.len() > 1));
            terms.push(format!("{column} IN ({})", list.join(", ")));
        }
        if let Some(server) = &query.server {
            terms.push(format!("{} = {}", col("server", true), param(&mut params, SqlValue::Text(server.clone()))));
        }
        if let Some(tool) = &query.tool {
            terms.push(format!("{} = {}", col("tool", true), param(&mut params, SqlValue::Text(tool.clone()))));
        }
        if let Some(from) = &query.created_from {
            let at = param(&mut params, SqlValue::Text(time::format(from)));
            terms.push(format!("{} >= {at}", col("created_at", true)));
        }
        if let Some(until) = &query.created_until {
            let at = param(&mut params, SqlValue::Text(time::format(until)));
            terms.push(format!("{} < {at}", col("created_at", true)));
        }
        if query.waiting {
            terms.push(format!("{} = 'input_required' AND t.question_key IS NOT NULL", col("status", true)));
        }
        if let Some(pinned) = query.pinned {
            let column = if pinned && !in_order { "t.pinned" } else { "+t.pinned" };
            terms.push(format!("{column} = {}", i64::from(pinned)));
        }
        let mut search = None;
        if let Some(text) = query.search.as_deref().filter(|s| !s.trim().is_empty()) {
            // Words that cannot match anything match nothing, rather than everything.
            let Some(fts) = crate::search::fts_query(text) else { return Ok(None) };
            search = Some(fts);
        }
        let sql = if terms.is_empty() { "1".to_owned() } else { terms.join(" AND ") };
        Ok(Some(Clause { sql, params, search }))
    }

    /// Adds a term with one more parameter (`{}` in `term` is where it goes).
    fn and(&mut self, term: &str, value: SqlValue) {
        self.params.push(value);
        let at = format!("?{}", self.params.len());
        self.sql = format!("{} AND {}", self.sql, term.replace("{}", &at));
    }
}

/// The most matches (or filtered tasks) counted to choose a [`Plan`]: below it a set is small
/// enough to read whole and sort; the count stops there, so choosing costs the same for a word in
/// every task.
const SMALL_SET: i64 = 2000;

/// How a page under a search is read. A few matches (or a page as long as the list): the index's
/// matches are read, their tasks looked up by id and sorted. Many matches and few tasks under the
/// other filters: those tasks are read by their index and each tested against the search by its
/// row of the index. Many of both: the tasks are walked newest first and tested one by one, so a
/// page stops at its length instead of reading every match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    FromMatches,
    TestFiltered,
    TestInOrder,
}

/// A task's test against the search: its row of the index, by rowid, with the query (`{}`).
const SEARCH_TEST: &str = "EXISTS (SELECT 1 FROM task_search WHERE task_search MATCH {} AND task_search.rowid = \
     (SELECT r.row FROM task_search_rows AS r WHERE r.task_id = t.id))";

/// The tasks the index matches, in its order, each joined to its task by id (`CROSS JOIN` keeps
/// SQLite from starting anywhere else).
const FROM_MATCHES: &str = "task_search CROSS JOIN task_search_rows AS r ON r.row = task_search.rowid CROSS JOIN tasks AS t ON t.id = r.task_id";

/// Whether the index matches fewer than [`SMALL_SET`] tasks for `fts`.
fn few_matches(conn: &Connection, fts: &str) -> Result<bool> {
    Ok(first_matches(conn, fts)?.is_none())
}

/// When the index matches [`SMALL_SET`] tasks or more for `fts`: the share of the rows up to the
/// last of the first [`SMALL_SET`] matches that match, which says roughly how much of the store
/// the search matches without reading every match (a guess, to choose how to count; rows follow
/// creation, so a word only in recent tasks is guessed rarer than it is).
fn first_matches(conn: &Connection, fts: &str) -> Result<Option<f64>> {
    let (n, last): (i64, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*), max(rowid) FROM (SELECT rowid FROM task_search WHERE task_search MATCH ?1 LIMIT ?2)",
        )?
        .query_row(rusqlite::params![fts, SMALL_SET], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let Some(last) = last.filter(|_| n >= SMALL_SET) else { return Ok(None) };
    let rows: i64 = conn
        .prepare_cached("SELECT count(*) FROM task_search_rows WHERE row <= ?1")?
        .query_row([last], |r| r.get(0))?;
    Ok(Some(n as f64 / rows.max(n).max(1) as f64))
}

/// The tasks whose row of the index `fts` does not match: the matches and the rows both walked in
/// row order, side by side (half the time of testing each row against a set of every match).
fn unmatched(conn: &Connection, fts: &str) -> Result<Vec<String>> {
    let mut matches = conn.prepare_cached("SELECT rowid FROM task_search WHERE task_search MATCH ?1 ORDER BY rowid")?;
    let mut rows = conn.prepare_cached("SELECT row, task_id FROM task_search_rows ORDER BY row")?;
    let mut matches = matches.query([fts])?;
    let mut rows = rows.query([])?;
    let mut next: Option<i64> = match matches.next()? {
        Some(m) => Some(m.get(0)?),
        None => None,
    };
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let at: i64 = row.get(0)?;
        while next.is_some_and(|m| m < at) {
            next = match matches.next()? {
                Some(m) => Some(m.get(0)?),
                None => None,
            };
        }
        if next != Some(at) {
            out.push(row.get(1)?);
        }
    }
    Ok(out)
}

/// Whether fewer than [`SMALL_SET`] tasks pass `clause` (its search aside).
fn few_filtered(conn: &Connection, clause: &Clause) -> Result<bool> {
    let mut params = clause.params.clone();
    params.push(SqlValue::Integer(SMALL_SET));
    let sql = format!("SELECT count(*) FROM (SELECT 1 FROM tasks AS t WHERE {} LIMIT ?{})", clause.sql, params.len());
    let n: i64 = conn.prepare_cached(&sql)?.query_row(params_from_iter(params), |r| r.get(0))?;
    Ok(n < SMALL_SET)
}

impl Store {
    /// A page of summaries, newest first.
    pub fn summaries(&self, query: &TaskQuery, page: &PageRequest) -> Result<Page<TaskSummary>> {
        let conn = self.conn();
        let raw = paged(&conn, query, page, SUMMARY_COLUMNS, read_summary, |s| s.id.clone())?;
        Ok(Page {
            items: raw.items.into_iter().map(RawSummary::decode).collect::<Result<_>>()?,
            next_before: raw.next_before,
        })
    }

    /// The summaries at positions `offset..offset + limit` of the query's list (newest first, as
    /// [`Store::summaries`] orders it; position 0 is the newest): what a list that shows any
    /// stretch of itself asks for, without reading the pages before it. Fewer past the end.
    ///
    /// Without a search the rows before `offset` are passed over in an index alone: the task at
    /// `offset` is found by an OFFSET over `(created_at, rowid)` of the index the filter reads in
    /// order (covering, so no row of the table is read), and the page is a keyset page from it.
    /// Measured on the benchmark's 100,000-task store (`tests/position_speed.rs`, release, on a
    /// loaded machine), a page of 200 summaries at 50,000 and at 99,800: 1.6 and 2.0 ms, against
    /// 6.5 and 12.5 ms for an OFFSET on the page's own query (each row passed over still cost a
    /// step into the table) and 0.2–1 s to walk keyset pages from the top. Anchors sampled every N
    /// rows would save about 2 ms at the cost of keeping them true through every insert and
    /// delete: not worth it. The unpinned segment (the index has no pin) is found the same way in
    /// the list with the pinned tasks, corrected by the pinned ones before it (few: pinned by
    /// hand): 1.7 ms at 99,800, against 320 ms for an OFFSET testing each row's pin; under the
    /// Completed tab 3.3 ms. Several statuses are not one index range and a search tests each row
    /// passed over, so a deep position there costs what reading up to it costs (a word in every
    /// task, 10,000 rows down or more: about half a second).
    pub fn summaries_at(&self, query: &TaskQuery, offset: usize, limit: usize) -> Result<Vec<TaskSummary>> {
        let conn = self.conn();
        let searches = query.search.as_deref().is_some_and(|s| !s.trim().is_empty());
        let (skip, from) = if offset == 0 || searches {
            (offset, None)
        } else {
            match anchor_at(&conn, query, offset)? {
                Some(Anchor::At(key)) => (0, Some(key)),
                Some(Anchor::Skip(n)) => (n, None),
                None => return Ok(Vec::new()),
            }
        };
        let page = PageRequest { before: None, limit: Some(limit) };
        let raw = paged_at(&conn, query, &page, Start { skip, from }, SUMMARY_COLUMNS, read_summary, |s| s.id.clone())?;
        raw.items.into_iter().map(RawSummary::decode).collect()
    }

    /// A page of whole records, newest first, by the same rules as [`Store::summaries`]: what the
    /// CLI's `tasks` prints and exports read.
    pub fn records(&self, query: &TaskQuery, page: &PageRequest) -> Result<Page<TaskRecord>> {
        let conn = self.conn();
        let raw = paged(&conn, query, page, &TASK_COLUMNS_OF_T, RawTask::read, RawTask::id)?;
        Ok(Page {
            items: raw.items.into_iter().map(RawTask::decode).collect::<Result<_>>()?,
            next_before: raw.next_before,
        })
    }

    /// Which of `ids` are in the query's list now (the search included), in no order; unknown ids
    /// are in none. What a front end asks when tasks it was told about changed under a search it
    /// shows: each task is looked at by its id, the search tested against that one task's row of
    /// the index (FTS5 with its rowid given), so the cost is per task asked about, not per match.
    pub fn matching(&self, query: &TaskQuery, ids: &[String]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let search = query.search.as_deref().filter(|s| !s.trim().is_empty());
        let fts = match search {
            Some(text) => match crate::search::fts_query(text) {
                Some(fts) => Some(fts),
                // Words that cannot match anything match nothing, as in a page.
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        let plain = TaskQuery { search: None, ..query.clone() };
        let Some(clause) = Clause::of(&plain, true)? else { return Ok(Vec::new()) };
        let conn = self.conn();
        // One task at a time, so no statement's size depends on how many were asked about.
        let mut admitted = conn.prepare(&format!(
            "SELECT r.row FROM tasks AS t LEFT JOIN task_search_rows AS r ON r.task_id = t.id \
             WHERE t.id = ?{} AND {}",
            clause.params.len() + 1,
            clause.sql
        ))?;
        let mut hit = conn.prepare_cached("SELECT 1 FROM task_search WHERE task_search MATCH ?1 AND rowid = ?2")?;
        let mut out = Vec::new();
        for id in ids {
            let mut params = clause.params.clone();
            params.push(SqlValue::Text(id.clone()));
            let Some(row) = admitted.query_row(params_from_iter(params), |r| r.get::<_, Option<i64>>(0)).optional()?
            else {
                continue;
            };
            let found = match (&fts, row) {
                (None, _) => true,
                // A task without a row in the index holds no words.
                (Some(_), None) => false,
                (Some(fts), Some(row)) => hit.query_row(rusqlite::params![fts, row], |_| Ok(())).optional()?.is_some(),
            };
            if found {
                out.push(id.clone());
            }
        }
        Ok(out)
    }

    /// Tasks per status under the query (its statuses aside), counted in SQL. Under a search every
    /// match is counted, so what is read is the smaller side: the matches when they are few, the
    /// tasks under the other filters when those are few, and otherwise the tasks the search does
    /// not match, taken from the counts without it (a word in nearly every task costs what the
    /// tasks without it cost).
    pub fn counts(&self, query: &TaskQuery) -> Result<StatusCounts> {
        let guard = self.conn();
        // One snapshot for every statement below: what is taken away was counted in the same
        // store as what it is taken from, whoever writes meanwhile. Read only, so it ends with a
        // rollback when dropped; deferred (not the connection's IMMEDIATE), so it never waits for
        // the write lock, which the open's integrity check holds while the first page is counted.
        let conn = rusqlite::Transaction::new_unchecked(&guard, rusqlite::TransactionBehavior::Deferred)?;
        let Some(mut clause) = Clause::of(query, false)? else { return Ok(StatusCounts::default()) };
        let Some(fts) = clause.search.take() else { return tally(&conn, "tasks AS t", &clause, true) };
        let Some(share) = first_matches(&conn, &fts)? else {
            clause.and("task_search MATCH {}", SqlValue::Text(fts));
            return tally(&conn, FROM_MATCHES, &clause, false);
        };
        if few_filtered(&conn, &clause)? {
            clause.and(SEARCH_TEST, SqlValue::Text(fts));
            return tally(&conn, "tasks AS t", &clause, false);
        }
        let rows: i64 = conn.prepare_cached("SELECT count(*) FROM task_search_rows")?.query_row([], |r| r.get(0))?;
        let tasks: i64 = conn.prepare_cached("SELECT count(*) FROM tasks")?.query_row([], |r| r.get(0))?;
        // The index's rows are its tasks one for one (each row names a task, at most once), so
        // the rows outside the matches are the tasks outside them; a task without a row (none
        // should be) would be in neither, and then the matches are counted.
        if rows != tasks || share <= 0.5 {
            clause.and("task_search MATCH {}", SqlValue::Text(fts));
            return tally(&conn, FROM_MATCHES, &clause, false);
        }
        let all = tally(&conn, "tasks AS t", &clause, true)?;
        let mut outside = StatusCounts::default();
        let mut st = conn.prepare_cached(&format!(
            "SELECT t.status, t.question_key IS NOT NULL FROM tasks AS t WHERE t.id = ?{} AND {}",
            clause.params.len() + 1,
            clause.sql
        ))?;
        for id in unmatched(&conn, &fts)? {
            let mut params = clause.params.clone();
            params.push(SqlValue::Text(id));
            if let Some((status, asked)) = st
                .query_row(params_from_iter(params), |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?)))
                .optional()?
            {
                outside.add(&status, 1, u64::from(asked));
            }
        }
        Ok(all.without(&outside))
    }
}

impl StatusCounts {
    fn add(&mut self, status: &str, n: u64, waiting: u64) {
        self.total += n;
        match status.parse::<TaskStatus>() {
            Ok(TaskStatus::Working) => self.working += n,
            Ok(TaskStatus::InputRequired) => {
                self.input_required += n;
                self.waiting += waiting;
            }
            Ok(TaskStatus::Completed) => self.completed += n,
            Ok(TaskStatus::Failed) => self.failed += n,
            Ok(TaskStatus::Cancelled) => self.cancelled += n,
            // The column's CHECK allows no other value.
            Err(_) => {}
        }
    }

    fn without(&self, other: &StatusCounts) -> StatusCounts {
        StatusCounts {
            working: self.working.saturating_sub(other.working),
            input_required: self.input_required.saturating_sub(other.input_required),
            completed: self.completed.saturating_sub(other.completed),
            failed: self.failed.saturating_sub(other.failed),
            cancelled: self.cancelled.saturating_sub(other.cancelled),
            waiting: self.waiting.saturating_sub(other.waiting),
            total: self.total.saturating_sub(other.total),
        }
    }
}

/// The counts of the tasks `from` and `clause` select. `waiting_apart`: the tasks waiting for the
/// user are counted by a query of their own, so the count per status needs no column but the
/// status and is read from its index alone (reading `question_key` for every task read the whole
/// table); where each task's row is read anyway, one query counts both.
fn tally(conn: &Connection, from: &str, clause: &Clause, waiting_apart: bool) -> Result<StatusCounts> {
    let waiting = if waiting_apart { "0" } else { "sum(t.question_key IS NOT NULL)" };
    let sql = format!("SELECT t.status, count(*), {waiting} FROM {from} WHERE {} GROUP BY t.status", clause.sql);
    let mut counts = StatusCounts::default();
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(params_from_iter(clause.params.iter()), |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, Option<i64>>(2)?))
    })?;
    for row in rows {
        let (status, n, with_question) = row?;
        counts.add(&status, n.max(0) as u64, with_question.unwrap_or(0).max(0) as u64);
    }
    if waiting_apart && counts.input_required > 0 {
        let sql = format!(
            "SELECT count(*) FROM {from} WHERE {} AND t.status = 'input_required' AND t.question_key IS NOT NULL",
            clause.sql
        );
        let n: i64 = conn.prepare_cached(&sql)?.query_row(params_from_iter(clause.params.iter()), |r| r.get(0))?;
        counts.waiting = n.max(0) as u64;
    }
    Ok(counts)
}

/// The keyset of a task: where a page that starts after it begins.
fn keyset(conn: &Connection, id: &str) -> Result<(String, i64)> {
    conn.prepare_cached("SELECT created_at, rowid FROM tasks WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .ok_or_else(|| StoreError::NotFound { id: id.to_owned() })
}

fn paged<R>(
    conn: &Connection,
    query: &TaskQuery,
    page: &PageRequest,
    columns: &str,
    read: impl Fn(&Row<'_>) -> rusqlite::Result<R>,
    id_of: impl Fn(&R) -> String,
) -> Result<Page<R>> {
    paged_at(conn, query, page, Start::default(), columns, read, id_of)
}

/// Where a page by position starts: at the task with this key (`created_at`, `rowid`), and
/// `skip` rows after that passed over.
#[derive(Debug, Default)]
struct Start {
    skip: usize,
    from: Option<(String, i64)>,
}

/// How to reach a position: the task there, or (when the index cannot say) rows to pass over.
enum Anchor {
    At((String, i64)),
    Skip(usize),
}

/// The key of the task at `offset` of the list (no search), or `None` past its end.
fn anchor_at(conn: &Connection, query: &TaskQuery, offset: usize) -> Result<Option<Anchor>> {
    if query.pinned != Some(false) {
        return Ok(nth_key(conn, query, offset)?.map(Anchor::At));
    }
    // The k-th unpinned task is the task at k + (the pinned ones up to it) of the list with the
    // pinned ones: each step moves the guess down by the pinned tasks found above it, so it ends
    // within as many steps as there are pinned tasks.
    let with_pins = TaskQuery { pinned: None, ..query.clone() };
    let pinned = keys(conn, &TaskQuery { pinned: Some(true), ..query.clone() })?;
    let mut at = offset;
    for _ in 0..pinned.len() + 2 {
        let Some(key) = nth_key(conn, &with_pins, at)? else { return Ok(None) };
        let above = pinned.iter().filter(|p| **p >= key).count();
        let guess = offset + above;
        if guess == at {
            if !pinned.contains(&key) {
                return Ok(Some(Anchor::At(key)));
            }
            at += 1;
        } else {
            at = guess.max(at + 1);
        }
    }
    Ok(Some(Anchor::Skip(offset)))
}

/// `(created_at, rowid)` of the task at `offset` of the list, read from the index that gives its
/// order alone.
fn nth_key(conn: &Connection, query: &TaskQuery, offset: usize) -> Result<Option<(String, i64)>> {
    let Some(mut clause) = Clause::build(query, true, true)? else { return Ok(None) };
    clause.params.push(SqlValue::Integer(offset.min(i64::MAX as usize) as i64));
    let sql = format!(
        "SELECT t.created_at, t.rowid FROM tasks AS t WHERE {} ORDER BY t.created_at DESC, t.rowid DESC LIMIT 1 OFFSET ?{}",
        clause.sql,
        clause.params.len()
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(clause.params), |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Every key of the list (a few tasks: the pinned ones).
fn keys(conn: &Connection, query: &TaskQuery) -> Result<Vec<(String, i64)>> {
    let Some(clause) = Clause::of(query, true)? else { return Ok(Vec::new()) };
    let sql = format!("SELECT t.created_at, t.rowid FROM tasks AS t WHERE {}", clause.sql);
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(params_from_iter(clause.params), |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// [`paged`], starting at `start` (after the cursor).
fn paged_at<R>(
    conn: &Connection,
    query: &TaskQuery,
    page: &PageRequest,
    start: Start,
    columns: &str,
    read: impl Fn(&Row<'_>) -> rusqlite::Result<R>,
    id_of: impl Fn(&R) -> String,
) -> Result<Page<R>> {
    let Some(mut clause) = Clause::of(query, true)? else { return Ok(Page { items: Vec::new(), next_before: None }) };
    let cursor = match &page.before {
        Some(before) => Some(keyset(conn, before)?),
        None => None,
    };
    let after = |clause: &mut Clause| {
        if let Some((created_at, rowid)) = &cursor {
            clause.params.push(SqlValue::Text(created_at.clone()));
            let c = clause.params.len();
            clause.params.push(SqlValue::Integer(*rowid));
            let r = clause.params.len();
            // A range on the index's first column, then the tie-break among the same millisecond.
            clause.sql = format!("{} AND t.created_at <= ?{c} AND (t.created_at < ?{c} OR t.rowid < ?{r})", clause.sql);
        }
    };
    let at = |clause: &mut Clause| {
        if let Some((created_at, rowid)) = &start.from {
            clause.params.push(SqlValue::Text(created_at.clone()));
            let c = clause.params.len();
            clause.params.push(SqlValue::Integer(*rowid));
            let r = clause.params.len();
            // From that task on, itself included.
            clause.sql =
                format!("{} AND t.created_at <= ?{c} AND (t.created_at < ?{c} OR t.rowid <= ?{r})", clause.sql);
        }
    };
    let skip = start.skip;
    after(&mut clause);
    at(&mut clause);
    let mut from = "tasks AS t";
    if let Some(fts) = clause.search.take() {
        // A walk tests a task per row it reads, which costs more than reading a match: it pays
        // for a page, not for every task (`limit` none, as an export asks) or a long stretch.
        let short = page.limit.is_some_and(|l| l.saturating_add(skip) < SMALL_SET as usize);
        let plan = if few_matches(conn, &fts)? {
            Plan::FromMatches
        } else if few_filtered(conn, &clause)? {
            Plan::TestFiltered
        } else if short {
            Plan::TestInOrder
        } else {
            Plan::FromMatches
        };
        if plan == Plan::TestInOrder {
            let Some(ordered) = Clause::build(query, true, true)? else {
                return Ok(Page { items: Vec::new(), next_before: None });
            };
            clause = ordered;
            clause.search = None;
            after(&mut clause);
            at(&mut clause);
        }
        match plan {
            Plan::FromMatches => {
                from = FROM_MATCHES;
                clause.and("task_search MATCH {}", SqlValue::Text(fts));
            }
            Plan::TestFiltered | Plan::TestInOrder => clause.and(SEARCH_TEST, SqlValue::Text(fts)),
        }
    }
    // One more than asked, to know whether there is a next page without a second query.
    let limit = page.limit.map_or(-1, |l| l.saturating_add(1).min(i64::MAX as usize) as i64);
    clause.params.push(SqlValue::Integer(limit));
    let limit_at = clause.params.len();
    clause.params.push(SqlValue::Integer(skip.min(i64::MAX as usize) as i64));
    let sql = format!(
        "SELECT {columns} FROM {from} WHERE {} ORDER BY t.created_at DESC, t.rowid DESC LIMIT ?{limit_at} OFFSET ?{}",
        clause.sql,
        clause.params.len()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let mut items: Vec<R> =
        st.query_map(params_from_iter(clause.params), |r| read(r))?.collect::<rusqlite::Result<_>>()?;
    let more = page.limit.is_some_and(|l| items.len() > l);
    if let Some(l) = page.limit {
        items.truncate(l);
    }
    let next_before = if more { items.last().map(&id_of) } else { None };
    Ok(Page { items, next_before })
}

/// A summary row as SQLite holds it; decoding is apart so a bad cell is [`StoreError::Corrupt`].
struct RawSummary {
    id: String,
    server: String,
    tool: String,
    mode: String,
    era: Option<String>,
    status: String,
    status_message: Option<String>,
    progress: Option<f64>,
    progress_total: Option<f64>,
    progress_message: Option<String>,
    question_key: Option<String>,
    question_message: Option<String>,
    question_kind: Option<String>,
    error_code: Option<i64>,
    error_message: Option<String>,
    error_reason: Option<String>,
    has_result: bool,
    pinned: bool,
    created_at: String,
    updated_at: String,
}

fn read_summary(r: &Row<'_>) -> rusqlite::Result<RawSummary> {
    Ok(RawSummary {
        id: r.get(0)?,
        server: r.get(1)?,
        tool: r.get(2)?,
        mode: r.get(3)?,
        era: r.get(4)?,
        status: r.get(5)?,
        status_message: r.get(6)?,
        progress: r.get(7)?,
        progress_total: r.get(8)?,
        progress_message: r.get(9)?,
        question_key: r.get(10)?,
        question_message: r.get(11)?,
        question_kind: r.get(12)?,
        error_code: r.get(13)?,
        error_message: r.get(14)?,
        error_reason: r.get(15)?,
        has_result: r.get(16)?,
        pinned: r.get(17)?,
        created_at: r.get(18)?,
        updated_at: r.get(19)?,
    })
}

impl RawSummary {
    fn decode(self) -> Result<TaskSummary> {
        let id = self.id;
        let corrupt = |column: &'static str, reason: String| StoreError::Corrupt { id: id.clone(), column, reason };
        Ok(TaskSummary {
            mode: Mode::parse(&self.mode).ok_or_else(|| corrupt("mode", format!("unknown mode {:?}", self.mode)))?,
            era: self.era.map(|e| e.parse::<Era>().map_err(|e| corrupt("era", e))).transpose()?,
            status: self.status.parse::<TaskStatus>().map_err(|e| corrupt("status", e))?,
            progress: self.progress.map(|progress| Progress {
                progress,
                total: self.progress_total,
                message: self.progress_message,
            }),
            question: self.question_key.map(|key| QuestionBrief {
                key,
                message: self.question_message.map(cut_message),
                kind: self.question_kind,
            }),
            error: self.error_message.map(|message| TaskError {
                code: self.error_code,
                message,
                reason: self.error_reason.map(FailureReason::from),
            }),
            created_at: time::parse(&self.created_at).map_err(|e| corrupt("created_at", e.to_string()))?,
            updated_at: time::parse(&self.updated_at).map_err(|e| corrupt("updated_at", e.to_string()))?,
            server: self.server,
            tool: self.tool,
            status_message: self.status_message,
            has_result: self.has_result,
            pinned: self.pinned,
            id: id.clone(),
        })
    }
}

fn cut_message(m: String) -> String {
    match m.char_indices().nth(SUMMARY_MESSAGE_CHARS) {
        Some((end, _)) => format!("{}…", &m[..end]),
        None => m,
    }
}

mod optional_time {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => crate::time::rfc3339_millis::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        s.map(|s| crate::time::parse(&s).map_err(serde::de::Error::custom)).transpose()
    }
}

/// Why a task was removed, as the purge log says it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PurgeReason {
    /// Someone asked for this task to be deleted.
    User,
    /// A retention rule removed it.
    Policy,
}

impl PurgeReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PurgeReason::User => "user",
            PurgeReason::Policy => "policy",
        }
    }
}

/// A task that was removed: what a front end needs to say so and drop it from its list.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Purged {
    pub id: String,
    pub tool: String,
    pub server: String,
    pub status: TaskStatus,
}

/// One line of the purge log: that a task was removed, never what it held.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeLine {
    pub seq: i64,
    pub task_id: String,
    pub tool: String,
    pub server: String,
    #[serde(with = "time::rfc3339_millis")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub purged_at: DateTime<Utc>,
    pub why: PurgeReason,
}

/// Which finished tasks a retention pass removes. A task goes when it breaks any rule given;
/// pinned tasks and tasks still working or waiting for input are never candidates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Retention {
    /// Finished (last updated) longer ago than this.
    pub older_than: Option<std::time::Duration>,
    /// Beyond the newest N (in list order) of the candidates.
    pub keep: Option<usize>,
    /// Beyond the newest candidates whose stored data (arguments, result, question, answer and
    /// events, in bytes) adds up to this much: a budget for the store's size, kept by removing the
    /// oldest finished tasks first. Live and pinned tasks are not counted, as they are never
    /// removed.
    pub max_bytes: Option<u64>,
    /// Only tasks with these statuses (all terminal); empty means every finished status.
    pub statuses: Vec<TaskStatus>,
}

impl Retention {
    /// Whether the rule names anything to remove: with no rule at all nothing is, rather than
    /// everything.
    pub fn is_empty(&self) -> bool {
        self.older_than.is_none() && self.keep.is_none() && self.max_bytes.is_none() && self.statuses.is_empty()
    }
}

/// How the store file's size changed when freed pages were given back.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Space {
    /// Whether the file can give pages back at all (`auto_vacuum = INCREMENTAL`, every store made
    /// since this version); an older store reuses its free pages instead.
    pub incremental: bool,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// What a task holds in the file, in bytes, for [`Retention::max_bytes`]: its JSON cells and its
/// events' data (`octet_length` reads a cell's size without decoding it).
const TASK_BYTES: &str = "(octet_length(t.arguments) + coalesce(octet_length(t.result), 0) \
     + coalesce(octet_length(t.question), 0) + coalesce(octet_length(t.answer), 0) \
     + (SELECT coalesce(sum(octet_length(e.data)), 0) FROM task_events AS e WHERE e.task_id = t.id))";

/// Free pages from which, when they are half the file or more, space is given back by rebuilding
/// the file rather than page by page (see [`Store::space`]); below it either is quick.
const FULL_VACUUM_PAGES: i64 = 1000;

/// Tasks removed per transaction in a retention pass, so that a long pass never holds the writer
/// for long: the engine's own writes go in between.
const PURGE_CHUNK: usize = 500;

impl Store {
    /// One task's summary.
    pub fn summary(&self, id: &str) -> Result<TaskSummary> {
        let conn = self.conn();
        let raw = conn
            .prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM tasks AS t WHERE t.id = ?1"))?
            .query_row([id], read_summary)
            .optional()?;
        raw.ok_or_else(|| StoreError::NotFound { id: id.to_owned() })?.decode()
    }

    /// Pins or unpins a task: a pinned task is never removed by retention. Not an event of the
    /// task's (the server said nothing), and its `updated_at` stays as it was.
    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<TaskSummary> {
        let n = self
            .writer()?
            .prepare_cached("UPDATE tasks SET pinned = ?2 WHERE id = ?1")?
            .execute(rusqlite::params![id, pinned])?;
        if n == 0 {
            return Err(StoreError::NotFound { id: id.to_owned() });
        }
        self.summary(id)
    }

    /// Deletes the tasks, all or none, in one transaction: each one's row, events and search row,
    /// with one purge line each. A task still working or waiting for input is refused with its
    /// real status (the engine cancels it first when asked to force it), and so is the whole
    /// call.
    pub fn delete_tasks(&self, ids: &[String], why: PurgeReason) -> Result<Vec<Purged>> {
        let mut conn = self.writer()?;
        let saved = Deleting::begin(&conn)?;
        let done = (|| {
            let tx = conn.transaction()?;
            let purged = delete_in(&tx, ids, why)?;
            tx.commit()?;
            Ok(purged)
        })();
        saved.end(&conn)?;
        done
    }

    /// What [`Store::prune`] would remove now, newest first.
    pub fn prune_candidates(&self, rule: &Retention) -> Result<Vec<Purged>> {
        let conn = self.conn();
        candidates(&conn, rule)
    }

    /// Removes what the rule names, a chunk of tasks per transaction, each with a `policy` purge
    /// line; then gives the freed pages back to the file system where the file allows it.
    pub fn prune(&self, rule: &Retention) -> Result<(Vec<Purged>, Space)> {
        if rule.is_empty() {
            return Ok((Vec::new(), self.space(false)?));
        }
        // Waits for the check before the candidates are read, so they are read as the pass finds them.
        drop(self.writer()?);
        let all = self.prune_candidates(rule)?;
        let bulk = self.is_bulk(all.len())?;
        if bulk {
            crate::search::set_delete_merge(&*self.writer()?, false)?;
        }
        let saved = Deleting::begin(&self.conn())?;
        let removed = self.prune_chunks(&all);
        saved.end(&self.conn())?;
        if bulk {
            let conn = self.writer()?;
            // Back on, whatever became of the pass; then what it deleted leaves the index at once.
            crate::search::set_delete_merge(&conn, true)?;
            if removed.is_ok() {
                crate::search::optimize(&conn)?;
            }
        }
        let purged = removed?;
        let space = self.space(!purged.is_empty())?;
        Ok((purged, space))
    }

    /// Whether removing `n` tasks is a large share of the store (a quarter or more of its tasks,
    /// and more than one chunk): then the search index's rows are better dropped in one pass at
    /// the end than segment by segment as they go (see [`crate::search::set_delete_merge`]).
    fn is_bulk(&self, n: usize) -> Result<bool> {
        if n <= PURGE_CHUNK {
            return Ok(false);
        }
        let total: i64 = self.conn().query_row("SELECT count(*) FROM tasks", [], |r| r.get(0))?;
        Ok(n.saturating_mul(4) >= total.max(0) as usize)
    }

    fn prune_chunks(&self, all: &[Purged]) -> Result<Vec<Purged>> {
        let mut purged = Vec::with_capacity(all.len());
        for chunk in all.chunks(PURGE_CHUNK) {
            let ids: Vec<String> = chunk.iter().map(|p| p.id.clone()).collect();
            let mut conn = self.writer()?;
            let tx = conn.transaction()?;
            // Looked at again inside the transaction: a task pinned (or changed) since the
            // candidates were read is left alone.
            let still: Vec<String> = {
                let mut st = tx.prepare_cached(
                    "SELECT id FROM tasks WHERE id = ?1 AND pinned = 0 AND status IN ('completed', 'failed', 'cancelled')",
                )?;
                let mut still = Vec::with_capacity(ids.len());
                for id in &ids {
                    if let Some(id) = st.query_row([id], |r| r.get::<_, String>(0)).optional()? {
                        still.push(id);
                    }
                }
                still
            };
            purged.extend(delete_in(&tx, &still, PurgeReason::Policy)?);
            tx.commit()?;
        }
        Ok(purged)
    }

    /// Gives free pages back (when `vacuum` and the file allows it) and says how the size
    /// changed. The WAL is checkpointed so the main file really shrinks; a reader holding an old
    /// snapshot can delay that to a later checkpoint, which is not an error.
    pub fn space(&self, vacuum: bool) -> Result<Space> {
        let size = || std::fs::metadata(self.path()).map(|m| m.len()).unwrap_or(0);
        let conn = if vacuum { self.writer()? } else { self.conn() };
        let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
        let incremental = mode == 2;
        crate::checkpoint::truncate_wal(&conn);
        let bytes_before = size();
        if vacuum && incremental {
            let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
            // The incremental vacuum moves the file's last pages into free ones one at a time, and
            // each move searches the free list: when most of the file is free (a prune of most of
            // the store) that grows with the square of the free pages (8 s of a 90,000-task prune
            // against half a second to rebuild). A VACUUM rebuilds the file from what is kept, so
            // it costs what remains. It can fail where the incremental one does not (it needs room
            // for a copy of what is kept), and then the incremental one gives the pages back.
            let rebuilt = free * 2 >= pages && free >= FULL_VACUUM_PAGES && conn.execute_batch("VACUUM").is_ok();
            if !rebuilt {
                // Each step of the pragma frees pages; it is done only when stepped to the end.
                let mut st = conn.prepare("PRAGMA incremental_vacuum")?;
                let mut rows = st.query([])?;
                while rows.next()?.is_some() {}
            }
            crate::checkpoint::truncate_wal(&conn);
        }
        Ok(Space { incremental, bytes_before, bytes_after: size() })
    }

    /// The purge log after line `after`, oldest first, at most `limit` lines.
    pub fn purge_log(&self, after: i64, limit: usize) -> Result<Vec<PurgeLine>> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT id, task_id, tool, server, purged_at, why FROM purge_log WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = st.query_map(rusqlite::params![after, limit.min(i64::MAX as usize) as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        rows.map(|row| {
            let (seq, task_id, tool, server, at, why) = row?;
            let corrupt = |reason: String| StoreError::Corrupt { id: task_id.clone(), column: "purge_log", reason };
            Ok(PurgeLine {
                purged_at: time::parse(&at).map_err(|e| corrupt(e.to_string()))?,
                why: match why.as_str() {
                    "user" => PurgeReason::User,
                    "policy" => PurgeReason::Policy,
                    other => return Err(corrupt(format!("unknown reason {other:?}"))),
                },
                seq,
                tool,
                server,
                task_id: task_id.clone(),
            })
        })
        .collect()
    }

    /// The newest lines of the purge log before line `before` (from the very newest when `None`),
    /// newest first, at most `limit`: what a front end shows after a delete.
    pub fn purge_log_newest(&self, before: Option<i64>, limit: usize) -> Result<Vec<PurgeLine>> {
        let before = before.unwrap_or(i64::MAX);
        let oldest: Option<i64> = self.conn().query_row(
            "SELECT min(id) FROM (SELECT id FROM purge_log WHERE id < ?1 ORDER BY id DESC LIMIT ?2)",
            rusqlite::params![before, limit.min(i64::MAX as usize) as i64],
            |r| r.get(0),
        )?;
        let Some(oldest) = oldest else { return Ok(Vec::new()) };
        let mut lines = self.purge_log(oldest - 1, limit)?;
        lines.retain(|l| l.seq < before);
        lines.reverse();
        Ok(lines)
    }
}

/// The connection's settings for deleting tasks, and what they were before, put back after. A
/// statement that removes a task journals every page it frees (a result's overflow pages among
/// them) so that it can be undone alone; past 64 KiB SQLite spills that journal to a temporary
/// file, which a prune of most of a store wrote more than ten times the store's size to. In
/// memory it is bounded by one task's pages. A larger page cache keeps a chunk's pages from
/// being spilled to the WAL and read back mid-transaction.
struct Deleting {
    temp_store: i64,
    cache_size: i64,
}

/// The page cache while deleting, in KiB (SQLite's negative `cache_size`).
const DELETING_CACHE_KIB: i64 = 32 * 1024;

impl Deleting {
    fn begin(conn: &Connection) -> Result<Deleting> {
        let saved = Deleting {
            temp_store: conn.query_row("PRAGMA temp_store", [], |r| r.get(0))?,
            cache_size: conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?,
        };
        conn.execute_batch(&format!("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -{DELETING_CACHE_KIB};"))?;
        Ok(saved)
    }

    fn end(self, conn: &Connection) -> Result<()> {
        conn.execute_batch(&format!(
            "PRAGMA temp_store = {}; PRAGMA cache_size = {};",
            self.temp_store.clamp(0, 2),
            self.cache_size
        ))?;
        Ok(())
    }
}

/// The delete itself, on the caller's transaction. The events' foreign key is deferred to the
/// commit, so the task's row goes first and its events after it: the log's trigger lets an event
/// go only once its task is gone (migration `20261201150300_delete_and_purge_log.sql`).
fn delete_in(tx: &Connection, ids: &[String], why: PurgeReason) -> Result<Vec<Purged>> {
    tx.execute_batch("PRAGMA defer_foreign_keys = ON;")?;
    let now = time::format(&time::now());
    let mut purged = Vec::with_capacity(ids.len());
    for id in ids {
        let (tool, server, status): (String, String, String) = tx
            .prepare_cached("SELECT tool, server, status FROM tasks WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?
            .ok_or_else(|| StoreError::NotFound { id: id.clone() })?;
        let status = status.parse::<TaskStatus>().map_err(|e| StoreError::Corrupt {
            id: id.clone(),
            column: "status",
            reason: e,
        })?;
        if !status.is_terminal() {
            return Err(StoreError::Refused {
                id: id.clone(),
                current: status,
                attempted: crate::state::Attempt::Delete,
                reason: "a task that has not ended is cancelled before it is deleted".into(),
            });
        }
        tx.prepare_cached("INSERT INTO purge_log (task_id, tool, server, purged_at, why) VALUES (?1, ?2, ?3, ?4, ?5)")?
            .execute(rusqlite::params![id, tool, server, now, why.as_str()])?;
        tx.prepare_cached("DELETE FROM tasks WHERE id = ?1")?.execute([id])?;
        tx.prepare_cached("DELETE FROM task_events WHERE task_id = ?1")?.execute([id])?;
        crate::search::remove(tx, id)?;
        purged.push(Purged { id: id.clone(), tool, server, status });
    }
    Ok(purged)
}

fn candidates(conn: &Connection, rule: &Retention) -> Result<Vec<Purged>> {
    if rule.is_empty() {
        return Ok(Vec::new());
    }
    let statuses: Vec<TaskStatus> = if rule.statuses.is_empty() {
        vec![TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled]
    } else {
        rule.statuses.iter().copied().filter(|s| s.is_terminal()).collect()
    };
    if statuses.is_empty() {
        return Ok(Vec::new());
    }
    let mut params: Vec<SqlValue> = statuses.iter().map(|s| SqlValue::Text(s.as_str().to_owned())).collect();
    let list = (1..=params.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    let eligible = format!("t.pinned = 0 AND t.status IN ({list})");
    let mut breaks: Vec<String> = Vec::new();
    if let Some(older) = rule.older_than {
        let bound = chrono::Duration::from_std(older).unwrap_or(chrono::Duration::MAX);
        let cutoff = time::now().checked_sub_signed(bound).unwrap_or(DateTime::<Utc>::MIN_UTC);
        params.push(SqlValue::Text(time::format(&cutoff)));
        breaks.push(format!("t.updated_at < ?{}", params.len()));
    }
    if let Some(keep) = rule.keep {
        params.push(SqlValue::Integer(keep.min(i64::MAX as usize) as i64));
        breaks.push(format!(
            "t.rowid NOT IN (SELECT t.rowid FROM tasks AS t WHERE {eligible} \
             ORDER BY t.created_at DESC, t.rowid DESC LIMIT ?{})",
            params.len()
        ));
    }
    if let Some(max) = rule.max_bytes {
        params.push(SqlValue::Integer(max.min(i64::MAX as u64) as i64));
        breaks.push(format!(
            "t.rowid IN (SELECT kept.rowid FROM (
                 SELECT t.rowid AS rowid, sum({TASK_BYTES}) OVER (ORDER BY t.created_at DESC, t.rowid DESC) AS running
                 FROM tasks AS t WHERE {eligible}) AS kept
             WHERE kept.running > ?{})",
            params.len()
        ));
    }
    let breaks = if breaks.is_empty() { "1".to_owned() } else { breaks.join(" OR ") };
    let sql = format!(
        "SELECT t.id, t.tool, t.server, t.status FROM tasks AS t WHERE {eligible} AND ({breaks})
         ORDER BY t.created_at DESC, t.rowid DESC"
    );
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(params_from_iter(params), |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
    })?;
    rows.map(|row| {
        let (id, tool, server, status) = row?;
        let status = status.parse::<TaskStatus>().map_err(|e| StoreError::Corrupt {
            id: id.clone(),
            column: "status",
            reason: e,
        })?;
        Ok(Purged { id, tool, server, status })
    })
    .collect()
}
