//! The legacy client-hosted tasks Taskdeck keeps for its servers (`hosted_tasks`): a server's
//! question made a task on Taskdeck's side, kept so that `tasks/get` and `tasks/result` are
//! answered on a later connection that resumed the server's session, after a restart too. The
//! client serves them (`taskdeck_client`'s `hosted.rs`); the engine writes them here as they change.
//! Bounded per server: finished ones go first, then the oldest.

use rusqlite::params;
use serde_json::Value;

use crate::error::Result;
use crate::store::Store;

/// The most hosted tasks kept per server, as the client keeps them in memory.
pub const MAX_HOSTED_PER_SERVER: usize = 256;

/// One hosted task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedTaskRow {
    pub server: String,
    pub task_id: String,
    /// The server's request the task was made for, as its JSON (`7`, `"abc"`).
    pub request_id: String,
    /// The task as `tasks/get` answers it.
    pub task: Value,
    /// `{"result": ...}` or `{"error": ...}` once the user answered.
    pub outcome: Option<Value>,
    /// Whether the task has ended (its status completed, failed or cancelled).
    pub terminal: bool,
}

impl Store {
    /// Writes `row` (a new task, or a change of one), then keeps the server's rows within
    /// [`MAX_HOSTED_PER_SERVER`], finished ones dropped before live ones, oldest first. One
    /// transaction.
    pub fn keep_hosted_task(&self, row: &HostedTaskRow) -> Result<()> {
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        let next: i64 = tx
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM hosted_tasks WHERE server = ?1")?
            .query_row([&row.server], |r| r.get(0))?;
        tx.prepare_cached(
            "INSERT INTO hosted_tasks (server, task_id, request_id, task, outcome, terminal, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (server, task_id) DO UPDATE SET request_id = excluded.request_id,
                 task = excluded.task, outcome = excluded.outcome, terminal = excluded.terminal",
        )?
        .execute(params![
            row.server,
            row.task_id,
            row.request_id,
            row.task.to_string(),
            row.outcome.as_ref().map(Value::to_string),
            row.terminal,
            next
        ])?;
        tx.prepare_cached(
            "DELETE FROM hosted_tasks WHERE server = ?1 AND task_id IN (
                 SELECT task_id FROM hosted_tasks WHERE server = ?1
                 ORDER BY terminal DESC, seq ASC
                 LIMIT MAX(0, (SELECT COUNT(*) FROM hosted_tasks WHERE server = ?1) - ?2))",
        )?
        .execute(params![row.server, MAX_HOSTED_PER_SERVER as i64])?;
        tx.commit()?;
        Ok(())
    }

    /// The server's hosted tasks, oldest first. A row nobody can read is left out.
    pub fn hosted_tasks(&self, server: &str) -> Result<Vec<HostedTaskRow>> {
        let conn = self.conn();
        let mut st = conn.prepare_cached(
            "SELECT task_id, request_id, task, outcome, terminal FROM hosted_tasks WHERE server = ?1 ORDER BY seq",
        )?;
        let rows = st.query_map([server], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (task_id, request_id, task, outcome, terminal) = row?;
            let Ok(task) = serde_json::from_str(&task) else { continue };
            let outcome = match outcome.map(|o| serde_json::from_str(&o)) {
                Some(Ok(o)) => Some(o),
                Some(Err(_)) => continue,
                None => None,
            };
            out.push(HostedTaskRow { server: server.to_owned(), task_id, request_id, task, outcome, terminal });
        }
        Ok(out)
    }

    /// Removes the server's hosted tasks (its session is gone); returns how many there were.
    pub fn forget_hosted_tasks(&self, server: &str) -> Result<usize> {
        let conn = self.writer()?;
        Ok(conn.prepare_cached("DELETE FROM hosted_tasks WHERE server = ?1")?.execute([server])?)
    }
}
