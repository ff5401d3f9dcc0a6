//! The durable task table. Every transition is a single conditional `UPDATE` that refuses to touch a
//! terminal row, so whichever of worker, cancel or purge gets there first wins and terminal stays
//! final without any locking beyond SQLite's own.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use taskdeck_protocol::{Era, TaskStatus};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("task store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("task store: cannot create state directory {path}: {source}")]
    Dir { path: String, source: std::io::Error },
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// One task as persisted. JSON columns are kept as `Value` so the server never has to re-derive
/// what it told a client earlier.
#[derive(Debug, Clone)]
pub struct TaskRow {
    pub id: String,
    pub tool: String,
    pub arguments: Value,
    pub era: Era,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    /// Kept for diagnosis only: a token is meaningful to the connection that sent it, never after a restart.
    #[allow(dead_code)]
    pub progress_token: Option<Value>,
    pub checkpoint: i64,
    pub question: Option<Value>,
    pub question_key: Option<String>,
    pub answer: Option<Value>,
    pub result: Option<Value>,
    pub error: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
    pub created_ms: i64,
    pub ttl_ms: i64,
    pub poll_interval_ms: i64,
    pub cancel_requested: bool,
    /// Modern tasks: whether the creating request declared elicitation (capabilities are per request).
    pub client_elicitation: bool,
    /// Modern tasks: whether the creating request declared sampling.
    pub client_sampling: bool,
}

impl TaskRow {
    pub fn expired(&self, now_ms: i64) -> bool {
        now_ms >= self.created_ms.saturating_add(self.ttl_ms)
    }
}

/// What a new task starts with; everything else has a fixed initial value.
pub struct NewTask<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub era: Era,
    pub progress_token: Option<&'a Value>,
    pub ttl_ms: i64,
    pub poll_interval_ms: i64,
    pub client_elicitation: bool,
    pub client_sampling: bool,
}

pub struct Store {
    conn: Connection,
}

const SCHEMA_VERSION: i64 = 2;

const COLUMNS: &str = "id, tool, arguments, era, status, status_message, progress_token, checkpoint, question, \
     question_key, answer, result, error, created_at, updated_at, created_ms, ttl_ms, poll_interval_ms, \
     cancel_requested, client_elicitation, client_sampling";

const NOT_TERMINAL: &str = "status IN ('working', 'input_required')";

pub fn now() -> (String, i64) {
    let now = chrono::Utc::now();
    (now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true), now.timestamp_millis())
}

impl Store {
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir { path: dir.display().to_string(), source })?;
        let conn = Connection::open(dir.join("tasks.sqlite3"))?;
        // WAL with NORMAL sync survives a killed process, which is the failure this store exists
        // for; power loss is not something a demo server needs to pay fsyncs for.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version < SCHEMA_VERSION {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS tasks (
                    id TEXT PRIMARY KEY,
                    tool TEXT NOT NULL,
                    arguments TEXT NOT NULL,
                    era TEXT NOT NULL,
                    status TEXT NOT NULL,
                    status_message TEXT,
                    progress_token TEXT,
                    checkpoint INTEGER NOT NULL DEFAULT 0,
                    question TEXT,
                    question_key TEXT,
                    answer TEXT,
                    result TEXT,
                    error TEXT,
                    created_at TEXT NOT NULL,
                    updated_at TEXT NOT NULL,
                    created_ms INTEGER NOT NULL,
                    ttl_ms INTEGER NOT NULL,
                    poll_interval_ms INTEGER NOT NULL,
                    cancel_requested INTEGER NOT NULL DEFAULT 0,
                    client_elicitation INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX IF NOT EXISTS tasks_by_creation ON tasks (created_ms, id);
                PRAGMA user_version = 1;",
            )?;
        }
        if version < 2 {
            // Version 2: modern tasks remember whether their client can be asked for a sampling.
            conn.execute_batch(
                "ALTER TABLE tasks ADD COLUMN client_sampling INTEGER NOT NULL DEFAULT 0;
                 PRAGMA user_version = 2;",
            )?;
        }
        Ok(Self { conn })
    }

    pub fn insert(&self, new: NewTask<'_>) -> Result<TaskRow> {
        let (at, ms) = now();
        // v4 uuids carry 122 random bits: task ids are bearer tokens and must not be guessable.
        let id = uuid::Uuid::new_v4().to_string();
        self.conn.execute(
            "INSERT INTO tasks (id, tool, arguments, era, status, progress_token, created_at, updated_at,
                created_ms, ttl_ms, poll_interval_ms, client_elicitation, client_sampling)
             VALUES (?1, ?2, ?3, ?4, 'working', ?5, ?6, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                id,
                new.tool,
                new.arguments.to_string(),
                new.era.as_str(),
                new.progress_token.map(Value::to_string),
                at,
                ms,
                new.ttl_ms,
                new.poll_interval_ms,
                new.client_elicitation,
                new.client_sampling,
            ],
        )?;
        self.get(&id)?.ok_or(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows))
    }

    pub fn get(&self, id: &str) -> Result<Option<TaskRow>> {
        let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1");
        Ok(self.conn.query_row(&sql, [id], read_row).optional()?)
    }

    /// Tasks of one era, oldest first, strictly after the task `after` (keyset pagination).
    pub fn page(&self, era: Era, after: Option<&TaskRow>, limit: usize) -> Result<Vec<TaskRow>> {
        let (after_ms, after_id) = after.map(|t| (t.created_ms, t.id.as_str())).unwrap_or((i64::MIN, ""));
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE era = ?1 AND (created_ms, id) > (?2, ?3)
             ORDER BY created_ms, id LIMIT ?4"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params![era.as_str(), after_ms, after_id, limit as i64], read_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub fn unfinished(&self) -> Result<Vec<TaskRow>> {
        let sql = format!("SELECT {COLUMNS} FROM tasks WHERE {NOT_TERMINAL} ORDER BY created_ms, id");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], read_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Deletes every task whose TTL has run out, whatever its status; returns the ids removed.
    pub fn purge_expired(&self, now_ms: i64) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare("DELETE FROM tasks WHERE created_ms + ttl_ms <= ?1 RETURNING id")?;
        let ids = stmt.query_map([now_ms], |r| r.get::<_, String>(0))?;
        Ok(ids.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Stage progress of a running task. Returns false when the task is terminal or gone.
    pub fn checkpoint(&self, id: &str, checkpoint: i64, message: &str) -> Result<bool> {
        let (at, _) = now();
        let n = self.conn.execute(
            &format!(
                "UPDATE tasks SET checkpoint = ?2, status_message = ?3, updated_at = ?4 WHERE id = ?1 AND {NOT_TERMINAL}"
            ),
            params![id, checkpoint, message, at],
        )?;
        Ok(n == 1)
    }

    pub fn ask(&self, id: &str, key: &str, question: &Value, message: &str) -> Result<bool> {
        let (at, _) = now();
        let n = self.conn.execute(
            &format!(
                "UPDATE tasks SET status = 'input_required', question_key = ?2, question = ?3, answer = NULL,
                 status_message = ?4, updated_at = ?5 WHERE id = ?1 AND {NOT_TERMINAL}"
            ),
            params![id, key, question.to_string(), message, at],
        )?;
        Ok(n == 1)
    }

    /// Records the answer to the outstanding question `key`; an answer to any other key is stale
    /// and ignored (returns false).
    pub fn answer(&self, id: &str, key: &str, answer: &Value) -> Result<bool> {
        let (at, _) = now();
        let n = self.conn.execute(
            "UPDATE tasks SET status = 'working', answer = ?3, status_message = 'Answer received', updated_at = ?4
             WHERE id = ?1 AND status = 'input_required' AND question_key = ?2 AND answer IS NULL",
            params![id, key, answer.to_string(), at],
        )?;
        Ok(n == 1)
    }

    /// Records the responses given so far to a question that asks several things at once
    /// (`answers`, a map by key, replacing the earlier one, which `previous` must still be); the
    /// task works again once `complete`. Returns false when the question moved on meanwhile.
    pub fn answer_part(
        &self,
        id: &str,
        key: &str,
        previous: Option<&Value>,
        answers: &Value,
        complete: bool,
    ) -> Result<bool> {
        let (at, _) = now();
        let status = if complete { "working" } else { "input_required" };
        let message = if complete { "Answers received" } else { "Waiting for the remaining answers" };
        let n = self.conn.execute(
            "UPDATE tasks SET status = ?5, answer = ?3, status_message = ?6, updated_at = ?7
             WHERE id = ?1 AND status = 'input_required' AND question_key = ?2 AND answer IS ?4",
            params![id, key, answers.to_string(), previous.map(Value::to_string), status, message, at],
        )?;
        Ok(n == 1)
    }

    pub fn request_cancel(&self, id: &str) -> Result<bool> {
        let n = self
            .conn
            .execute(&format!("UPDATE tasks SET cancel_requested = 1 WHERE id = ?1 AND {NOT_TERMINAL}"), [id])?;
        Ok(n == 1)
    }

    /// Moves a task to a terminal status. Returns false if it already was terminal (or is gone).
    pub fn finish(
        &self,
        id: &str,
        status: TaskStatus,
        message: Option<&str>,
        result: Option<&Value>,
        error: Option<&Value>,
    ) -> Result<bool> {
        debug_assert!(status.is_terminal());
        let (at, _) = now();
        let n = self.conn.execute(
            &format!(
                "UPDATE tasks SET status = ?2, status_message = ?3, result = ?4, error = ?5, updated_at = ?6
                 WHERE id = ?1 AND {NOT_TERMINAL}"
            ),
            params![id, status.as_str(), message, result.map(Value::to_string), error.map(Value::to_string), at],
        )?;
        Ok(n == 1)
    }
}

fn json_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<Value>> {
    let text: Option<String> = row.get(idx)?;
    // A column that no longer parses is treated as absent rather than poisoning every lookup.
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<TaskRow> {
    let era: String = row.get(3)?;
    let status: String = row.get(4)?;
    let bad =
        |i: usize, msg: String| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, msg.into());
    Ok(TaskRow {
        id: row.get(0)?,
        tool: row.get(1)?,
        arguments: json_col(row, 2)?.unwrap_or(Value::Object(Default::default())),
        era: era.parse().map_err(|e| bad(3, e))?,
        status: status.parse().map_err(|e| bad(4, e))?,
        status_message: row.get(5)?,
        progress_token: json_col(row, 6)?,
        checkpoint: row.get(7)?,
        question: json_col(row, 8)?,
        question_key: row.get(9)?,
        answer: json_col(row, 10)?,
        result: json_col(row, 11)?,
        error: json_col(row, 12)?,
        created_at: row.get(13)?,
        updated_at: row.get(14)?,
        created_ms: row.get(15)?,
        ttl_ms: row.get(16)?,
        poll_interval_ms: row.get(17)?,
        cancel_requested: row.get(18)?,
        client_elicitation: row.get(19)?,
        client_sampling: row.get(20)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new_task<'a>(args: &'a Value) -> NewTask<'a> {
        NewTask {
            tool: "count",
            arguments: args,
            era: Era::Legacy,
            progress_token: None,
            ttl_ms: 60_000,
            poll_interval_ms: 500,
            client_elicitation: false,
            client_sampling: false,
        }
    }

    #[test]
    fn terminal_is_final_and_stale_answers_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let args = json!({"n": 1});
        let t = store.insert(new_task(&args)).unwrap();
        assert!(store.ask(&t.id, "q-1", &json!({"m": 1}), "Waiting").unwrap());
        assert!(!store.answer(&t.id, "q-0", &json!({"action": "cancel"})).unwrap());
        assert!(store.answer(&t.id, "q-1", &json!({"action": "cancel"})).unwrap());
        assert!(store.finish(&t.id, TaskStatus::Cancelled, None, None, None).unwrap());
        assert!(!store.finish(&t.id, TaskStatus::Completed, None, Some(&json!({})), None).unwrap());
        assert!(!store.checkpoint(&t.id, 3, "late").unwrap());
        assert_eq!(store.get(&t.id).unwrap().unwrap().status, TaskStatus::Cancelled);
    }

    #[test]
    fn pages_follow_creation_order_and_purge_removes_expired() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let args = json!({});
        let ids: Vec<String> = (0..5).map(|_| store.insert(new_task(&args)).unwrap().id).collect();
        let first = store.page(Era::Legacy, None, 3).unwrap();
        let rest = store.page(Era::Legacy, first.last(), 3).unwrap();
        let seen: Vec<String> = first.iter().chain(&rest).map(|t| t.id.clone()).collect();
        let mut expected = ids.clone();
        let mut sorted = seen.clone();
        expected.sort();
        sorted.sort();
        assert_eq!(sorted, expected);
        assert!(store.page(Era::Modern, None, 3).unwrap().is_empty());
        let (_, now) = now();
        assert_eq!(store.purge_expired(now + 60_001).unwrap().len(), 5);
        assert!(store.get(&ids[0]).unwrap().is_none());
    }
}
