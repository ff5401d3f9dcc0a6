//! The [`Store`]: every read and write of tasks and their events. Policy lives in [`crate::state`];
//! this file turns accepted plans into SQL, one transaction per change, event included.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Value, json};
use taskdeck_protocol::{Era, TaskStatus};

use crate::error::{Result, StoreError};
use crate::state::{self, Plan, Update};
use crate::task::{
    Answer, EventKind, FailureReason, ListFilter, Mode, NewTask, Progress, Question, Reclaimed, TaskError, TaskEvent,
    TaskRecord,
};
use crate::time;

/// A handle on one store file. Cloning is cheap and shares the connection; calls are blocking, so
/// async callers should go through `spawn_blocking`.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Dropped after the connection: the last to close the file checkpoints it.
    checkpointer: Mutex<Option<crate::checkpoint::Checkpointer>>,
    /// The integrity check running beside the reads, when open did not wait for it. Dropped after
    /// the connection, whose busy handler points at it.
    check: Option<crate::check::Running>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The check's connection (which never checkpoints) closes first, so the store's own is
        // the last to close and takes the emptied WAL away with it.
        if let Some(check) = &self.check {
            check.stop();
        }
    }
}

/// A store opened with its check holding the write lock but not yet reading
/// ([`Store::open_check_later`]); the check starts when this is released or dropped.
pub struct CheckHold(Option<std::sync::mpsc::Sender<()>>);

impl CheckHold {
    pub fn release(mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

const TASK_COLUMNS: &str = "id, server, tool, arguments, idempotency_key, mode, era, remote_task_id, status, \
     status_message, progress, progress_total, progress_message, question_key, question, answer_key, answer, \
     result, error_code, error_message, error_reason, ttl_ms, poll_interval_ms, created_at, updated_at, questions, \
     answered_keys";

/// [`TASK_COLUMNS`] of `tasks AS t`, for queries that join.
pub(crate) static TASK_COLUMNS_OF_T: LazyLock<String> =
    LazyLock::new(|| TASK_COLUMNS.split(", ").map(|c| format!("t.{}", c.trim())).collect::<Vec<_>>().join(", "));

static LOAD_ONE: LazyLock<String> = LazyLock::new(|| format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"));

pub(crate) const LIVE: &str = "status IN ('working', 'input_required')";

impl Store {
    /// Opens (or creates) the store at `path`. A file that is not a blank file or a Taskdeck store
    /// this binary can read is refused and left byte-for-byte as it was.
    ///
    /// An up-to-date store is returned while its integrity check (`PRAGMA quick_check`, which
    /// reads the whole file) still runs, on a connection of its own that holds the file's write
    /// lock: reads go on meanwhile (a damaged page they meet fails them with
    /// [`StoreError::Damaged`]); every write waits for the check and, if it fails, is refused with
    /// the [`StoreError::Damaged`] a refusal at open gives, nothing written. [`Store::checked`]
    /// waits for the outcome. A store that needs a migration (or anything else written at open) is
    /// checked before this returns, as before.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Self::open_with(path.as_ref(), crate::open::Checking::Beside(None))
    }

    /// [`Store::open`] for a caller that would wait for the check before anything else (the
    /// engine: it starts servers and resumes tasks at once): the check runs first, on a read-only
    /// connection, holding no lock, so other processes' writes are not held up by it.
    pub fn open_checked(path: impl AsRef<Path>) -> Result<Store> {
        Self::open_with(path.as_ref(), crate::open::Checking::First)
    }

    /// [`Store::open`] with the check holding the lock at once but reading nothing until the
    /// [`CheckHold`] is released or dropped (a store that is checked at open is checked there,
    /// and the hold does nothing): for a front end whose first paint should not share the
    /// machine with a read of the whole file. Writes wait meanwhile, as during the check.
    pub fn open_check_later(path: impl AsRef<Path>) -> Result<(Store, CheckHold)> {
        let (tx, rx) = std::sync::mpsc::channel();
        let store = Self::open_with(path.as_ref(), crate::open::Checking::Beside(Some(rx)))?;
        Ok((store, CheckHold(Some(tx))))
    }

    fn open_with(path: &Path, checking: crate::open::Checking) -> Result<Store> {
        let path = path.to_owned();
        let opened = crate::open::open(&path, checking)?;
        // Bound in this order so that on an error below the connection is dropped first.
        let check = opened.1;
        let conn = opened.0;
        if let Some(check) = &check {
            // SAFETY: the connection is dropped before the check: here (above), and in `Inner`
            // (field order).
            unsafe { check.guard(&conn)? };
        }
        let checkpointer = crate::checkpoint::Checkpointer::start(&path);
        if checkpointer.is_some() {
            conn.pragma_update(None, "wal_autocheckpoint", crate::checkpoint::BACKSTOP_PAGES)?;
        }
        let inner = Inner { path, conn: Mutex::new(conn), checkpointer: Mutex::new(checkpointer), check };
        Ok(Store { inner: Arc::new(inner) })
    }

    /// Waits for the integrity check of [`Store::open`] if it still runs. `Ok` once the store
    /// passed it; otherwise the [`StoreError::Damaged`] (naming the file) that every write of
    /// this store now gets, nothing having been written.
    pub fn checked(&self) -> Result<()> {
        match &self.inner.check {
            Some(check) => check.wait(),
            None => Ok(()),
        }
    }

    /// The one door of every write: it waits for the check before it takes the connection, so
    /// reads go on meanwhile, and a store the check found damaged refuses the write with the
    /// [`StoreError::Damaged`] naming the file. A write that took [`Store::conn`] instead would
    /// meet the check's lock, which a damaged store keeps, and fail as "database is locked".
    pub(crate) fn writer(&self) -> Result<MutexGuard<'_, Connection>> {
        self.checked()?;
        Ok(self.conn())
    }

    /// Tests only, not part of the interface: checkpoints go back to SQLite's own, inside the
    /// commit that crosses 1,000 WAL pages, so a test that reads the WAL frame by frame sees only
    /// its own writes move it.
    #[doc(hidden)]
    pub fn checkpoint_inline_for_tests(&self) -> Result<()> {
        drop(self.inner.checkpointer.lock().unwrap_or_else(|p| p.into_inner()).take());
        self.conn().pragma_update(None, "wal_autocheckpoint", 1000)?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Tests only, not part of the interface: from now on this handle's file can grow no more
    /// (`PRAGMA max_page_count` at its present size), so every write that needs another page fails
    /// with SQLITE_FULL, as it would on a full disk.
    #[doc(hidden)]
    pub fn stop_growing_for_tests(&self) -> Result<i64> {
        let conn = self.conn();
        let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let capped: i64 = conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |r| r.get(0))?;
        Ok(capped)
    }

    /// The connection for reading; a write takes it through [`Store::writer`].
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock dropped its transaction, which rolls back: the
        // connection is still consistent, so poisoning carries no information here.
        self.inner.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Inserts a working task and its `created` event. A second task with the same idempotency key
    /// is refused with [`StoreError::Duplicate`] naming the existing task, so a retried create can
    /// tell "already there" from "new" and never makes two.
    ///
    /// The check and the insert are one `IMMEDIATE` transaction, which takes the file's write lock
    /// before the check: another connection, in this process or another, cannot insert the key in
    /// between. The column's `UNIQUE` index (there since the first schema) is the last word: an
    /// insert it refuses is the same [`StoreError::Duplicate`].
    pub fn create_task(&self, new: NewTask) -> Result<TaskRecord> {
        self.create(new, true)
    }

    /// [`Store::create_task`] without the task's row in the search index, which
    /// [`Store::index_tasks`] (or the task's next write that the index holds: a question, an
    /// answer, its end) writes later. For a plain call answered within milliseconds that row is
    /// rewritten by the call's end anyway: written at creation too, it cost a third of the
    /// creation commit's pages (the index's segment, its size and row tables) and the view's query,
    /// on the path between the user's run and the call going out. What must be on disk before a
    /// call is sent is the call itself, and that is all here, in the same one commit.
    pub fn create_task_unindexed(&self, new: NewTask) -> Result<TaskRecord> {
        self.create(new, false)
    }

    fn create(&self, new: NewTask, indexed: bool) -> Result<TaskRecord> {
        let mut conn = self.writer()?;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let existing = |tx: &Connection| -> Result<Option<String>> {
            Ok(tx
                .prepare_cached("SELECT id FROM tasks WHERE idempotency_key = ?1")?
                .query_row([&new.idempotency_key], |r| r.get(0))
                .optional()?)
        };
        if let Some(existing) = existing(&tx)? {
            return Err(StoreError::Duplicate { idempotency_key: new.idempotency_key, existing });
        }
        let id = uuid::Uuid::new_v4().to_string();
        let at = time::now();
        let now = time::format(&at);
        let arguments = new.arguments.to_string();
        // Parsed from the text written (see the record below), before anything is.
        let stored_arguments: Value = serde_json::from_str(&arguments).map_err(|e| StoreError::Corrupt {
            id: id.clone(),
            column: "arguments",
            reason: e.to_string(),
        })?;
        let inserted = tx
            .prepare_cached(
                "INSERT INTO tasks (id, server, tool, arguments, idempotency_key, mode, status, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'working', ?7, ?7)",
            )?
            .execute(params![id, new.server, new.tool, arguments, new.idempotency_key, new.mode.as_str(), now]);
        if let Err(rusqlite::Error::SqliteFailure(e, _)) = &inserted
            && e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
            && let Some(existing) = existing(&tx)?
        {
            return Err(StoreError::Duplicate { idempotency_key: new.idempotency_key, existing });
        }
        inserted?;
        let data = json!({
            "server": new.server, "tool": new.tool, "mode": new.mode, "idempotency_key": new.idempotency_key,
        });
        insert_event(&tx, &id, &now, EventKind::Created, None, Some(TaskStatus::Working), &data)?;
        if indexed {
            crate::search::refresh(&tx, &id)?;
        }
        tx.commit()?;
        // The row holds exactly what was inserted and nothing else (every other column starts
        // NULL or at its default), so it is not read back: one query fewer on the way to sending
        // the call. The arguments were parsed from the text written, so they are the value any
        // later read decodes, to the last bit of a float. `created_freshly_reads_back_as_made`
        // checks the two agree.
        Ok(TaskRecord {
            id,
            server: new.server,
            tool: new.tool,
            arguments: stored_arguments,
            idempotency_key: new.idempotency_key,
            mode: new.mode,
            era: None,
            remote_task_id: None,
            status: TaskStatus::Working,
            status_message: None,
            progress: None,
            question: None,
            questions: Vec::new(),
            answer: None,
            answered_keys: Vec::new(),
            result: None,
            error: None,
            ttl_ms: None,
            poll_interval_ms: None,
            created_at: at,
            updated_at: at,
        })
    }

    /// Writes the search row of each task that has none ([`Store::create_task_unindexed`] left it
    /// out, and no write since brought it), in one transaction. A task that has its row is left
    /// as it is (its own writes keep it current), and one that is gone (deleted meanwhile) is
    /// skipped.
    pub fn index_tasks(&self, ids: &[String]) -> Result<()> {
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        for id in ids {
            let indexed = tx
                .prepare_cached("SELECT 1 FROM task_search_rows WHERE task_id = ?1")?
                .query_row([id], |_| Ok(()))
                .optional()?
                .is_some();
            if indexed {
                continue;
            }
            match exists(&tx, id) {
                Ok(()) => crate::search::refresh(&tx, id)?,
                // Deleted meanwhile: there is no task for a search row to name.
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The task created under `idempotency_key`, if there is one.
    pub fn by_idempotency_key(&self, idempotency_key: &str) -> Result<Option<TaskRecord>> {
        let conn = self.conn();
        let id: Option<String> = conn
            .prepare_cached("SELECT id FROM tasks WHERE idempotency_key = ?1")?
            .query_row([idempotency_key], |r| r.get(0))
            .optional()?;
        id.map(|id| load(&conn, &id)).transpose()
    }

    /// Records the server side of the task the moment it is known. Repeating it with the same
    /// remote id is harmless; a different remote id is refused.
    pub fn set_remote(
        &self,
        id: &str,
        era: Era,
        remote_task_id: Option<&str>,
        ttl_ms: Option<i64>,
        poll_interval_ms: Option<i64>,
    ) -> Result<TaskRecord> {
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        let record = set_remote_in(&tx, id, era, remote_task_id, ttl_ms, poll_interval_ms)?;
        tx.commit()?;
        Ok(record)
    }

    /// [`Store::set_remote`] with no remote task (a plain call, answered already) and then
    /// `updates` as [`Store::apply_batch`] takes them, all in one transaction: what the two would
    /// write one after the other, the same rows and the same events in the same order, for one
    /// commit instead of two. Returns the task as the era left it (or the refusal, when the task
    /// has ended), then each update's outcome in its slot; the outer error means nothing was
    /// written.
    pub fn set_era_then_apply(
        &self,
        id: &str,
        era: Era,
        updates: Vec<Update>,
    ) -> Result<(Result<TaskRecord>, Vec<Result<TaskRecord>>)> {
        let updates: Vec<(String, Update)> = updates.into_iter().map(|u| (id.to_owned(), state::bounded(u))).collect();
        let mut conn = self.writer()?;
        let mut tx = conn.transaction()?;
        // A refusal (the task ended meanwhile) leaves the updates to be judged on their own, as
        // they were when this was two transactions; any other failure writes nothing at all, as
        // the second transaction would not have been tried.
        let remote = match set_remote_in(&tx, id, era, None, None, None) {
            Ok(record) => Ok(record),
            Err(e @ StoreError::Refused { .. }) => Err(e),
            Err(e) => return Err(e),
        };
        let previous = remote.as_ref().ok().cloned();
        let results = apply_in_batch(&mut tx, &updates, previous)?;
        tx.commit()?;
        Ok((remote, results))
    }

    /// Applies one update in its own transaction and returns the task as it now is.
    pub fn apply(&self, id: &str, update: Update) -> Result<TaskRecord> {
        let update = state::bounded(update);
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        let (record, searchable) = apply_in(&tx, id, &update, None)?;
        if searchable {
            crate::search::refresh(&tx, id)?;
        }
        tx.commit()?;
        Ok(record)
    }

    /// Applies many updates in one transaction (one fsync-worth of commit), each judged on its own:
    /// a refused or failing item is reported in its slot and does not undo the others. The outer
    /// error is for the transaction itself (begin or commit), in which case nothing was written.
    pub fn apply_batch(&self, updates: Vec<(String, Update)>) -> Result<Vec<Result<TaskRecord>>> {
        let updates: Vec<(String, Update)> = updates.into_iter().map(|(id, u)| (id, state::bounded(u))).collect();
        let mut conn = self.writer()?;
        let mut tx = conn.transaction()?;
        let results = apply_in_batch(&mut tx, &updates, None)?;
        tx.commit()?;
        Ok(results)
    }

    pub fn get(&self, id: &str) -> Result<TaskRecord> {
        load(&self.conn(), id)
    }

    /// Finds the one task whose id starts with `prefix` (case-insensitive, as ids are lowercase).
    pub fn resolve_prefix(&self, prefix: &str) -> Result<TaskRecord> {
        const SHOWN: usize = 10;
        let prefix = prefix.to_ascii_lowercase();
        let conn = self.conn();
        // substr, not LIKE: a prefix containing `%` or `_` must match literally.
        let mut st = conn.prepare(
            "SELECT id FROM tasks WHERE substr(id, 1, length(?1)) = ?1 AND ?1 <> '' ORDER BY created_at DESC, id
             LIMIT ?2",
        )?;
        let ids: Vec<String> =
            st.query_map(params![prefix, SHOWN as i64 + 1], |r| r.get(0))?.collect::<Result<_, _>>()?;
        match ids.as_slice() {
            [] => Err(StoreError::NotFound { id: prefix }),
            [one] => load(&conn, one),
            _ => Err(StoreError::Ambiguous { prefix, candidates: ids }),
        }
    }

    /// Tasks newest first, optionally by status and server.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<TaskRecord>> {
        let conn = self.conn();
        let limit = filter.limit.map_or(-1, |l| l as i64);
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR server = ?2)
             ORDER BY created_at DESC, rowid DESC LIMIT ?3"
        );
        let mut st = conn.prepare(&sql)?;
        let rows = st.query_map(params![filter.status.map(|s| s.as_str()), filter.server, limit], RawTask::read)?;
        rows.map(|raw| raw?.decode()).collect()
    }

    /// The task's history, oldest first.
    pub fn events(&self, id: &str) -> Result<Vec<TaskEvent>> {
        self.events_after(id, 0)
    }

    /// The task's events with an id above `after`, oldest first: what a view that already holds
    /// the history up to `after` lacks. Event ids only grow, so nothing older can appear later.
    pub fn events_after(&self, id: &str, after: i64) -> Result<Vec<TaskEvent>> {
        let conn = self.conn();
        exists(&conn, id)?;
        let mut st = conn.prepare(
            "SELECT id, task_id, at, kind, from_status, to_status, data FROM task_events
             WHERE task_id = ?1 AND id > ?2 ORDER BY id",
        )?;
        let rows = st.query_map(params![id, after], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, String>(6)?,
            ))
        })?;
        rows.map(|row| {
            let (event_id, task_id, at, kind, from, to, data) = row?;
            let corrupt = |column: &'static str, reason: String| StoreError::Corrupt {
                id: task_id.clone(),
                column,
                reason: format!("event {event_id}: {reason}"),
            };
            Ok(TaskEvent {
                id: event_id,
                at: time::parse(&at).map_err(|e| corrupt("task_events.at", e.to_string()))?,
                kind: EventKind::parse(&kind).ok_or_else(|| corrupt("task_events.kind", format!("{kind:?}")))?,
                from_status: from
                    .map(|s| s.parse::<TaskStatus>().map_err(|e| corrupt("task_events.from_status", e)))
                    .transpose()?,
                to_status: to
                    .map(|s| s.parse::<TaskStatus>().map_err(|e| corrupt("task_events.to_status", e)))
                    .transpose()?,
                data: serde_json::from_str(&data).map_err(|e| corrupt("task_events.data", e.to_string()))?,
                task_id,
            })
        })
        .collect()
    }

    /// Tasks still working or waiting for input, oldest first: what a restarted engine resumes.
    pub fn non_terminal(&self) -> Result<Vec<TaskRecord>> {
        let conn = self.conn();
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE {LIVE} ORDER BY created_at, rowid");
        let mut st = conn.prepare(&sql)?;
        let rows = st.query_map([], RawTask::read)?;
        rows.map(|raw| raw?.decode()).collect()
    }

    /// Fails every live task nobody has updated for longer than `older_than`, in one transaction,
    /// each with a `reclaimed` event. Returns what it reclaimed and why.
    pub fn reclaim(&self, older_than: Duration) -> Result<Vec<Reclaimed>> {
        let mut conn = self.writer()?;
        let tx = conn.transaction()?;
        let now = time::now();
        let bound = chrono::Duration::from_std(older_than).unwrap_or(chrono::Duration::MAX);
        let cutoff = now.checked_sub_signed(bound).unwrap_or(DateTime::<Utc>::MIN_UTC);
        let ids: Vec<String> = {
            let mut st =
                tx.prepare(&format!("SELECT id FROM tasks WHERE {LIVE} AND updated_at < ?1 ORDER BY rowid"))?;
            st.query_map([time::format(&cutoff)], |r| r.get(0))?.collect::<Result<_, _>>()?
        };
        let mut reclaimed = Vec::with_capacity(ids.len());
        for id in ids {
            let current = load(&tx, &id)?;
            let idle = (now - current.updated_at).num_seconds();
            let reason = format!("no update for {idle} s (limit {} s); reclaimed", older_than.as_secs());
            let plan = state::plan_reclaim(&current, &reason)?;
            let error = TaskError {
                code: None,
                message: "Taskdeck stopped waiting for this task".into(),
                reason: Some(FailureReason::from(reason.clone())),
            };
            let update = Update::Failed { error, server_status: None };
            write(&tx, &current, &update, &plan, &time::format(&now))?;
            crate::search::refresh(&tx, &id)?;
            reclaimed.push(Reclaimed { id, reason });
        }
        tx.commit()?;
        Ok(reclaimed)
    }
}

/// The work of [`Store::set_remote`] on the caller's transaction.
fn set_remote_in(
    tx: &Connection,
    id: &str,
    era: Era,
    remote_task_id: Option<&str>,
    ttl_ms: Option<i64>,
    poll_interval_ms: Option<i64>,
) -> Result<TaskRecord> {
    let current = load(tx, id)?;
    state::check_remote(&current, remote_task_id)?;
    let unchanged = current.era == Some(era)
        && (remote_task_id.is_none() || current.remote_task_id.as_deref() == remote_task_id)
        && current.ttl_ms == ttl_ms
        && current.poll_interval_ms == poll_interval_ms;
    if unchanged {
        // An engine re-reading the same CreateTaskResult after a restart learns nothing new.
        return Ok(current);
    }
    let at = time::now();
    let now = time::format(&at);
    tx.prepare_cached(
        "UPDATE tasks SET era = ?2, remote_task_id = COALESCE(?3, remote_task_id), ttl_ms = ?4,
             poll_interval_ms = ?5, updated_at = ?6
         WHERE id = ?1",
    )?
    .execute(params![id, era.as_str(), remote_task_id, ttl_ms, poll_interval_ms, now])?;
    let data = json!({
        "era": era, "remote_task_id": remote_task_id, "ttl_ms": ttl_ms, "poll_interval_ms": poll_interval_ms,
    });
    log_event(tx, id, &now, EventKind::Remote, Some(current.status), Some(current.status), &data)?;
    // The row as just read, with what the UPDATE above set: the same record a read back would
    // decode (its arguments and any result parsed again), without the read, on every handle and
    // every plain call's end. `the_remote_task_reads_back_as_recorded` checks the two agree.
    let mut record = current;
    record.era = Some(era);
    if let Some(remote) = remote_task_id {
        record.remote_task_id = Some(remote.to_owned());
    }
    record.ttl_ms = ttl_ms;
    record.poll_interval_ms = poll_interval_ms;
    record.updated_at = at;
    Ok(record)
}

/// The work of [`Store::apply_batch`] on the caller's transaction, `previous` being the first
/// update's task as this transaction last wrote it, when the caller has it. The outer error means
/// the transaction is gone (SQLite rolled it back whole), so nothing of it is to be committed.
fn apply_in_batch(
    tx: &mut rusqlite::Transaction<'_>,
    updates: &[(String, Update)],
    mut previous: Option<TaskRecord>,
) -> Result<Vec<Result<TaskRecord>>> {
    let mut results: Vec<Result<TaskRecord>> = Vec::with_capacity(updates.len());
    // Each task's row in the search index is rewritten once, after its last update here.
    let mut searchable: Vec<&str> = Vec::new();
    for (i, (id, update)) in updates.iter().enumerate() {
        // A savepoint per item, so an SQL error halfway through one item leaves none of it.
        let sp = tx.savepoint()?;
        let outcome = apply_in(&sp, id, update, previous.take()).map(|(record, changed)| {
            if changed && !searchable.contains(&id.as_str()) {
                searchable.push(id);
            }
            record
        });
        match &outcome {
            Ok(_) => sp.commit()?,
            // SQLite may answer a full disk by rolling back the whole transaction, not just the
            // statement: then nothing of the batch is written, and saying otherwise per item
            // would be a lie.
            Err(_) if sp.is_autocommit() => return outcome.map(|_| Vec::new()),
            Err(_) => {}
        }
        // A task's updates tend to come together (its messages, then its progress): each one's
        // outcome is the next one's starting point, read back already.
        if let Ok(r) = &outcome
            && updates.get(i + 1).is_some_and(|(next, _)| next == id)
        {
            previous = Some(r.clone());
        }
        results.push(outcome);
    }
    for id in searchable {
        crate::search::refresh(tx, id)?;
    }
    Ok(results)
}

/// `current` is the task as this transaction last read or wrote it, when the caller has it. Also
/// says whether the task's search row is to be rewritten: when it asks, is answered or ends. A
/// status message alone does not (a server may send thousands, and each rewrite adds to the
/// index); the messages are indexed, all of them, at the task's next question, answer or end.
fn apply_in(conn: &Connection, id: &str, update: &Update, current: Option<TaskRecord>) -> Result<(TaskRecord, bool)> {
    let current = match current {
        Some(r) => r,
        None => load(conn, id)?,
    };
    let plan = state::plan(&current, update)?;
    write(conn, &current, update, &plan, &time::format(&time::now()))?;
    let searchable = matches!(&plan.event, Some((kind, _)) if *kind != EventKind::Status);
    Ok((load(conn, id)?, searchable))
}

/// Writes an accepted plan: the row, then its event, on the caller's transaction.
fn write(conn: &Connection, current: &TaskRecord, update: &Update, plan: &Plan, now: &str) -> Result<()> {
    let id = current.id.as_str();
    let to = plan.to.as_str();
    match update {
        // The same status and message again: nothing to write, not even the row's time.
        Update::Status { .. } if plan.event.is_none() => return Ok(()),
        // Only the message is new: `status` is left out of the SET, so SQLite leaves the indexes
        // that hold it alone (one page fewer in every such commit).
        Update::Status { message, .. } if plan.to == current.status => {
            conn.prepare_cached(
                "UPDATE tasks SET status_message = ?2, updated_at = ?3,
                     question_key = CASE WHEN status = 'input_required' THEN question_key END,
                     question = CASE WHEN status = 'input_required' THEN question END
                 WHERE id = ?1",
            )?
            .execute(params![id, message, now])?;
        }
        Update::Status { message, .. } => {
            // Leaving input_required without an answer (the server moved on) drops the question:
            // a form for a question nobody is waiting on must not come back after a restart.
            conn.prepare_cached(
                "UPDATE tasks SET status = ?2, status_message = ?3, updated_at = ?4,
                     question_key = CASE WHEN ?2 = 'input_required' THEN question_key END,
                     question = CASE WHEN ?2 = 'input_required' THEN question END,
                     questions = CASE WHEN ?2 = 'input_required' THEN questions END
                 WHERE id = ?1",
            )?
            .execute(params![id, to, message, now])?;
        }
        Update::Progress(Progress { progress, total, message }) => {
            conn.prepare_cached(
                "UPDATE tasks SET progress = ?2, progress_total = ?3, progress_message = ?4, updated_at = ?5
                 WHERE id = ?1",
            )?
            .execute(params![id, progress, total, message, now])?;
        }
        Update::Question { question, message } => {
            conn.prepare_cached(
                "UPDATE tasks SET status = ?2, question_key = ?3, question = ?4, status_message = ?5, updated_at = ?6,
                     questions = NULL
                 WHERE id = ?1",
            )?
            .execute(params![id, to, question.key.to_text(), question_json(question), message, now])?;
        }
        Update::Questions { questions, message } => {
            let first = questions.first().map(|q| (q.key.to_text(), question_json(q)));
            let all = serde_json::to_value(questions).unwrap_or_default().to_string();
            conn.prepare_cached(
                "UPDATE tasks SET status = ?2, question_key = ?3, question = ?4, status_message = ?5, updated_at = ?6,
                     questions = ?7
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                to,
                first.as_ref().map(|f| &f.0),
                first.as_ref().map(|f| &f.1),
                message,
                now,
                all
            ])?;
        }
        Update::Answers(answers) => {
            let keys = serde_json::to_value(answers.iter().map(|a| &a.key).collect::<Vec<_>>()).unwrap_or_default();
            let first = &answers[0];
            conn.prepare_cached(
                "UPDATE tasks SET status = ?2, question_key = NULL, question = NULL, questions = NULL, answer_key = ?3,
                     answer = ?4, answered_keys = ?5, updated_at = ?6
                 WHERE id = ?1",
            )?
            .execute(params![id, to, first.key, first.response.to_string(), keys.to_string(), now])?;
        }
        Update::Answer(Answer { key, response, .. }) => {
            conn.prepare_cached(
                "UPDATE tasks SET status = ?2, question_key = NULL, question = NULL, questions = NULL, answer_key = ?3,
                     answer = ?4, answered_keys = NULL, updated_at = ?5
                 WHERE id = ?1",
            )?
            .execute(params![id, to, key, response.to_string(), now])?;
        }
        Update::Completed { result, .. } => {
            set_outcome(conn, id, to, Some(result), plan.derived_error.as_ref(), None, now)?;
        }
        Update::Failed { error, .. } => {
            set_outcome(conn, id, to, None, Some(error), None, now)?;
        }
        Update::Cancelled { reason, .. } => {
            set_outcome(conn, id, to, None, None, reason.as_deref(), now)?;
        }
    }
    if let Some((kind, data)) = &plan.event {
        log_event(conn, id, now, *kind, Some(current.status), Some(plan.to), data)?;
    }
    Ok(())
}

/// Appends an event unless the task has used up its [`state::EVENTS_PER_TASK`] and the event is one
/// [`state::may_drop`]; a dropped event is counted in the task's one `dropped` marker instead,
/// written at the first drop (the cap keeps room for it). Events are never rewritten, the marker
/// included: when its count grows a new marker is appended and the one before it removed (the one
/// delete the log's trigger allows), so the marker always comes after the events it counts, and a
/// reader of [`Store::events_after`] sees the new count under a new id.
fn log_event(
    conn: &Connection,
    id: &str,
    at: &str,
    kind: EventKind,
    from: Option<TaskStatus>,
    to: Option<TaskStatus>,
    data: &Value,
) -> Result<()> {
    if !state::may_drop(kind) {
        return insert_event(conn, id, at, kind, from, to, data);
    }
    let logged: i64 =
        conn.prepare_cached("SELECT count(*) FROM task_events WHERE task_id = ?1")?.query_row([id], |r| r.get(0))?;
    if logged + 1 < state::EVENTS_PER_TASK as i64 {
        return insert_event(conn, id, at, kind, from, to, data);
    }
    let marker: Option<(i64, String)> = conn
        .prepare_cached("SELECT id, data FROM task_events WHERE task_id = ?1 AND kind = 'dropped' ORDER BY id LIMIT 1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let before = marker
        .as_ref()
        .and_then(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .and_then(|d| d["dropped"].as_u64())
        .unwrap_or(0);
    let dropped = before + 1;
    let data = json!({
        "dropped": dropped, "limit": state::EVENTS_PER_TASK, "last_at": at,
        "message": crate::task::dropped_message(dropped),
    });
    insert_event(conn, id, at, EventKind::Dropped, None, None, &data)?;
    if let Some((older, _)) = marker {
        conn.prepare_cached("DELETE FROM task_events WHERE id = ?1")?.execute([older])?;
    }
    Ok(())
}

/// The `question` column: the typed question as JSON. Serialising it cannot fail (its maps have
/// string keys); should it ever, `null` is written and the row reads back as corrupt, not as a
/// different question.
fn question_json(q: &Question) -> String {
    serde_json::to_value(q).unwrap_or_default().to_string()
}

/// The terminal write: the question is dropped (nobody can answer it any more), the rest kept.
fn set_outcome(
    conn: &Connection,
    id: &str,
    to: &str,
    result: Option<&Value>,
    error: Option<&TaskError>,
    message: Option<&str>,
    now: &str,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE tasks SET status = ?2, result = ?3, error_code = ?4, error_message = ?5, error_reason = ?6,
             status_message = COALESCE(?7, status_message), question_key = NULL, question = NULL, questions = NULL,
             updated_at = ?8
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        to,
        result.map(Value::to_string),
        error.and_then(|e| e.code),
        error.map(|e| e.message.as_str()),
        error.and_then(|e| e.reason.as_deref()),
        message,
        now
    ])?;
    Ok(())
}

fn insert_event(
    conn: &Connection,
    id: &str,
    at: &str,
    kind: EventKind,
    from: Option<TaskStatus>,
    to: Option<TaskStatus>,
    data: &Value,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO task_events (task_id, at, kind, from_status, to_status, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        id,
        at,
        kind.as_str(),
        from.map(|s| s.as_str()),
        to.map(|s| s.as_str()),
        data.to_string()
    ])?;
    Ok(())
}

fn exists(conn: &Connection, id: &str) -> Result<()> {
    let found = conn.prepare_cached("SELECT 1 FROM tasks WHERE id = ?1")?.query_row([id], |_| Ok(())).optional()?;
    found.ok_or_else(|| StoreError::NotFound { id: id.to_owned() })
}

fn load(conn: &Connection, id: &str) -> Result<TaskRecord> {
    // Every update reads the row before and after: the statement is prepared once per connection.
    let raw = conn.prepare_cached(&LOAD_ONE)?.query_row([id], RawTask::read).optional()?;
    raw.ok_or_else(|| StoreError::NotFound { id: id.to_owned() })?.decode()
}

/// A row as SQLite holds it. Decoding is separate so a bad value becomes [`StoreError::Corrupt`]
/// naming the task and column, instead of a bare SQL conversion error or a panic.
pub(crate) struct RawTask {
    id: String,
    server: String,
    tool: String,
    arguments: String,
    idempotency_key: String,
    mode: String,
    era: Option<String>,
    remote_task_id: Option<String>,
    status: String,
    status_message: Option<String>,
    progress: Option<f64>,
    progress_total: Option<f64>,
    progress_message: Option<String>,
    question_key: Option<String>,
    question: Option<String>,
    answer_key: Option<String>,
    answer: Option<String>,
    result: Option<String>,
    error_code: Option<i64>,
    error_message: Option<String>,
    error_reason: Option<String>,
    ttl_ms: Option<i64>,
    poll_interval_ms: Option<i64>,
    created_at: String,
    updated_at: String,
    questions: Option<String>,
    answered_keys: Option<String>,
}

impl RawTask {
    pub(crate) fn read(r: &Row<'_>) -> rusqlite::Result<RawTask> {
        Ok(RawTask {
            id: r.get(0)?,
            server: r.get(1)?,
            tool: r.get(2)?,
            arguments: r.get(3)?,
            idempotency_key: r.get(4)?,
            mode: r.get(5)?,
            era: r.get(6)?,
            remote_task_id: r.get(7)?,
            status: r.get(8)?,
            status_message: r.get(9)?,
            progress: r.get(10)?,
            progress_total: r.get(11)?,
            progress_message: r.get(12)?,
            question_key: r.get(13)?,
            question: r.get(14)?,
            answer_key: r.get(15)?,
            answer: r.get(16)?,
            result: r.get(17)?,
            error_code: r.get(18)?,
            error_message: r.get(19)?,
            error_reason: r.get(20)?,
            ttl_ms: r.get(21)?,
            poll_interval_ms: r.get(22)?,
            created_at: r.get(23)?,
            updated_at: r.get(24)?,
            questions: r.get(25)?,
            answered_keys: r.get(26)?,
        })
    }

    pub(crate) fn id(&self) -> String {
        self.id.clone()
    }

    pub(crate) fn decode(self) -> Result<TaskRecord> {
        let id = self.id;
        let corrupt = |column: &'static str, reason: String| StoreError::Corrupt { id: id.clone(), column, reason };
        let json = |column: &'static str, text: &str| -> Result<Value> {
            serde_json::from_str(text).map_err(|e| corrupt(column, e.to_string()))
        };
        let question = match (self.question_key, self.question) {
            (Some(_), Some(q)) => {
                Some(serde_json::from_value(json("question", &q)?).map_err(|e| corrupt("question", e.to_string()))?)
            }
            (None, None) => None,
            _ => return Err(corrupt("question", "question and question_key must be set together".into())),
        };
        let questions: Vec<Question> = match self.questions {
            Some(all) => {
                serde_json::from_value(json("questions", &all)?).map_err(|e| corrupt("questions", e.to_string()))?
            }
            None => question.iter().cloned().collect(),
        };
        let answered_keys: Vec<String> = match self.answered_keys {
            Some(keys) => serde_json::from_value(json("answered_keys", &keys)?)
                .map_err(|e| corrupt("answered_keys", e.to_string()))?,
            None => Vec::new(),
        };
        let answer = match (self.answer_key, self.answer) {
            (Some(key), Some(response)) => Some(Answer { key, response: json("answer", &response)?, note: None }),
            (None, None) => None,
            _ => return Err(corrupt("answer", "answer and answer_key must be set together".into())),
        };
        let record = TaskRecord {
            arguments: json("arguments", &self.arguments)?,
            mode: Mode::parse(&self.mode).ok_or_else(|| corrupt("mode", format!("unknown mode {:?}", self.mode)))?,
            era: self.era.map(|e| e.parse::<Era>().map_err(|e| corrupt("era", e))).transpose()?,
            status: self.status.parse::<TaskStatus>().map_err(|e| corrupt("status", e))?,
            progress: self.progress.map(|progress| Progress {
                progress,
                total: self.progress_total,
                message: self.progress_message,
            }),
            question,
            questions,
            answer,
            answered_keys,
            result: self.result.map(|r| json("result", &r)).transpose()?,
            error: self.error_message.map(|message| TaskError {
                code: self.error_code,
                message,
                reason: self.error_reason.map(FailureReason::from),
            }),
            created_at: time::parse(&self.created_at).map_err(|e| corrupt("created_at", e.to_string()))?,
            updated_at: time::parse(&self.updated_at).map_err(|e| corrupt("updated_at", e.to_string()))?,
            server: self.server,
            tool: self.tool,
            idempotency_key: self.idempotency_key,
            remote_task_id: self.remote_task_id,
            status_message: self.status_message,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            id: id.clone(),
        };
        Ok(record)
    }
}
