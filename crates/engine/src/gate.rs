//! The write gate: every store write the engine makes goes through here, and every write that
//! lands is published as [`EngineEvent::Task`] from here, so no caller can forget to.
//!
//! Progress and the status messages of a task that stays `working` are not worth a commit each
//! (servers send one per stage, progress many a second): they wait in memory and are written
//! together in one transaction per flush. Any other write to a task first takes what waits for
//! it into the same transaction, so the log keeps every message in order and a task's final
//! progress lands before its result.
//!
//! A write the store cannot take for good (a full disk, a damaged file: [`StoreFault`]) halts the
//! task it was for: the gate writes nothing more for it, its driver stops (so nothing more is sent
//! to the server for it), and every waiter gets [`EngineError::StoreUnwritable`]. The task stays
//! recorded where it was until `resume` tries again. Retrying such a write is what a user met as
//! "database or disk is full" once a second for ever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use taskdeck_protocol::{Era, TaskStatus};
use taskdeck_store::{NewTask, Progress, Store, StoreError, TaskRecord, Update};
use tokio::sync::{broadcast, watch};

use crate::error::{EngineError, Result, StoreFault};
use crate::event::EngineEvent;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

type Watched = Arc<Mutex<HashMap<String, watch::Sender<Option<TaskRecord>>>>>;

/// Status messages that may wait for the flush per task. A server can send thousands between two
/// flushes; past this many they are written at once, so what waits in memory stays bounded (each
/// message is within `limits::STATUS_MESSAGE_BYTES`) and the store's event cap counts the rest.
const MAX_DEFERRED_MESSAGES: usize = 1000;

pub(crate) struct Gate {
    store: Store,
    events: broadcast::Sender<EngineEvent>,
    /// The tasks someone waits on, each with the record last published for it.
    watched: Watched,
    deferred: Mutex<Deferred>,
    /// Held while deferred writes are taken and written, so a task's deferred writes always land
    /// before (never after) the next update applied to it.
    writing: Mutex<()>,
    /// Tasks whose write the store could not take, and why; nothing more is written for them.
    halted: Mutex<HashMap<String, Halt>>,
    /// Calls created without their search row (`Store::create_task_unindexed`) and not ended
    /// since: the next flush writes their rows. Most end first, and their end writes it.
    unindexed: Mutex<std::collections::HashSet<String>>,
}

#[derive(Debug, Clone)]
struct Halt {
    fault: StoreFault,
    detail: String,
}

#[derive(Default)]
struct Deferred {
    /// The latest progress per task.
    progress: HashMap<String, Progress>,
    /// Status-message changes, in arrival order per task.
    messages: HashMap<String, Vec<Update>>,
}

impl Gate {
    pub fn new(store: Store) -> Gate {
        let (events, _) = broadcast::channel(4096);
        Gate {
            store,
            events,
            watched: Arc::default(),
            deferred: Mutex::default(),
            writing: Mutex::new(()),
            halted: Mutex::default(),
            unindexed: Mutex::default(),
        }
    }

    /// Why the task's writes stopped, if the store could not take one of them.
    pub fn halted(&self, id: &str) -> Option<EngineError> {
        let halt = lock(&self.halted).get(id).cloned()?;
        Some(self.unwritable(Some(id), halt))
    }

    /// Lets halted tasks be written again (after the user freed space): each is halted anew by its
    /// next write if the store still cannot take it.
    pub fn clear_halts(&self) {
        lock(&self.halted).clear();
    }

    fn unwritable(&self, id: Option<&str>, halt: Halt) -> EngineError {
        EngineError::StoreUnwritable {
            path: self.store.path().to_owned(),
            fault: halt.fault,
            task: id.map(str::to_owned),
            detail: halt.detail,
        }
    }

    /// What a failed write means: a fault of the store halts the task.
    fn failed(&self, id: &str, e: StoreError) -> EngineError {
        match StoreFault::of(&e) {
            Some(fault) => self.halt(id, Halt { fault, detail: fault_detail(&e) }),
            None => e.into(),
        }
    }

    /// Halts the task: logged once, its deferred writes dropped, its waiters woken to learn so.
    fn halt(&self, id: &str, halt: Halt) -> EngineError {
        let first = lock(&self.halted).insert(id.to_owned(), halt.clone()).is_none();
        let error = self.unwritable(Some(id), halt);
        if first {
            tracing::error!(task = id, "{error}");
            {
                let mut deferred = lock(&self.deferred);
                deferred.messages.remove(id);
                deferred.progress.remove(id);
            }
            if let Some(watch) = lock(&self.watched).get(id) {
                watch.send_modify(|_| {});
            }
        }
        error
    }

    /// For reading. Writes go through the gate's own methods.
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn get(&self, id: &str) -> Result<TaskRecord> {
        self.store.get(id).map_err(|e| self.failed(id, e))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.events.subscribe()
    }

    /// Keeps a server's client-hosted task as its session reported it (`SessionEvent::Hosted`),
    /// for a later connection that resumes the session. Nothing is published: only the session
    /// reads it back. A failed write loses only what a restart would serve; it is logged.
    pub fn keep_hosted(&self, server: &str, task: &taskdeck_client::HostedTask) {
        let outcome = task.outcome.as_ref().map(|o| match o {
            Ok(result) => serde_json::json!({ "result": result }),
            Err(error) => serde_json::json!({ "error": error }),
        });
        let row = taskdeck_store::HostedTaskRow {
            server: server.to_owned(),
            task_id: task.task_id.clone(),
            request_id: serde_json::to_string(&task.request).unwrap_or_default(),
            task: task.task.clone(),
            outcome,
            terminal: task.is_terminal(),
        };
        if let Err(e) = self.store.keep_hosted_task(&row) {
            tracing::warn!(server, task = %task.task_id, "a hosted task could not be kept: {e}");
        }
    }

    /// Publishes an event that is not a task write (servers, logs, tools).
    pub fn announce(&self, event: EngineEvent) {
        let _ = self.events.send(event);
    }

    fn publish(&self, rec: &TaskRecord) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(EngineEvent::Task { task: Box::new(rec.clone()) });
        }
        if let Some(watch) = lock(&self.watched).get(&rec.id) {
            watch.send_replace(Some(rec.clone()));
        }
    }

    /// Publishes the task as it is, without a write: for a task nobody drives any more, so whoever
    /// waits on it learns so.
    pub fn republish(&self, id: &str) {
        if let Ok(rec) = self.store.get(id) {
            self.publish(&rec);
        }
    }

    /// Records a new task. With `search_later` (a call the server may answer at once: a plain
    /// call, or any call in 2026-07-28, where the server decides) its search row waits for its
    /// end, or the next flush when it runs longer: the commit that must land before the call is
    /// sent carries only the call, and the row is written once, by the end, rather than twice.
    /// A legacy task's is written at once: its handle comes at once and it lives for far longer.
    pub fn create(&self, new: NewTask, search_later: bool) -> Result<TaskRecord> {
        let created = if search_later { self.store.create_task_unindexed(new) } else { self.store.create_task(new) };
        let rec = created.map_err(|e| match StoreFault::of(&e) {
            // Nothing was recorded, so there is no task to halt: the command ends with it.
            Some(fault) => self.unwritable(None, Halt { fault, detail: fault_detail(&e) }),
            None => e.into(),
        })?;
        if search_later {
            lock(&self.unindexed).insert(rec.id.clone());
        }
        self.publish(&rec);
        Ok(rec)
    }

    /// Has the next flush write the task's search row if it has none: for a task picked up
    /// after a restart that may have come before the flush that would have written it.
    pub fn index_later(&self, id: &str) {
        lock(&self.unindexed).insert(id.to_owned());
    }

    /// The task's end was written, and with it its search row: nothing is left for the flush.
    fn indexed_if_ended(&self, rec: &TaskRecord) {
        if rec.status.is_terminal() {
            lock(&self.unindexed).remove(&rec.id);
        }
    }

    /// Records the server side of a task (its era, and remote id when it is a task).
    pub fn set_remote(
        &self,
        id: &str,
        era: Era,
        remote: Option<&str>,
        ttl_ms: Option<i64>,
        poll_interval_ms: Option<i64>,
    ) -> Result<TaskRecord> {
        if let Some(e) = self.halted(id) {
            return Err(e);
        }
        let rec = self.store.set_remote(id, era, remote, ttl_ms, poll_interval_ms).map_err(|e| self.failed(id, e))?;
        self.publish(&rec);
        Ok(rec)
    }

    /// A plain call answered: its era and then its outcome, as [`Gate::set_remote`] with no remote
    /// task and [`Gate::apply_quietly`] would write and publish them one after the other, but in
    /// one transaction: a plain call is two commits (its creation and this), not three. The task's
    /// deferred messages and progress land between the two, as they would have.
    pub fn finish_call(&self, id: &str, era: Era, update: Update) -> Option<TaskRecord> {
        if self.halted(id).is_some() {
            return None;
        }
        let _writing = lock(&self.writing);
        let mut updates: Vec<Update> = self.take_deferred(id).into_iter().map(|(_, u)| u).collect();
        updates.push(update);
        let written = self.store.set_era_then_apply(id, era, updates).map_err(|e| self.failed(id, e));
        let (remote, mut results) = match written {
            Ok(w) => w,
            Err(e) => return self.quietly(id, Err(e)),
        };
        match remote {
            Ok(rec) => self.publish(&rec),
            // Refused: the task has ended, and so will its outcome be.
            Err(e) => tracing::debug!(task = id, "era not recorded: {e}"),
        }
        let last = results.pop().unwrap_or_else(|| Err(StoreError::NotFound { id: id.to_owned() }));
        for r in results {
            match r {
                Ok(rec) => self.publish(&rec),
                Err(e) if StoreFault::of(&e).is_some() => return self.quietly(id, Err(self.failed(id, e))),
                Err(e) => tracing::debug!(task = id, "deferred update not applied: {e}"),
            }
        }
        let rec = self.quietly(id, last.map_err(|e| self.failed(id, e)))?;
        self.indexed_if_ended(&rec);
        self.publish(&rec);
        Some(rec)
    }

    /// Applies one update and publishes the result. A refusal is returned, not published. The
    /// task's deferred messages and progress are written first, in the same transaction.
    pub fn apply(&self, id: &str, update: Update) -> Result<TaskRecord> {
        if let Some(e) = self.halted(id) {
            return Err(e);
        }
        let _writing = lock(&self.writing);
        let mut batch = self.take_deferred(id);
        if batch.is_empty() {
            let rec = self.store.apply(id, update).map_err(|e| self.failed(id, e))?;
            self.indexed_if_ended(&rec);
            self.publish(&rec);
            return Ok(rec);
        }
        batch.push((id.to_owned(), update));
        let mut results = self.store.apply_batch(batch).map_err(|e| self.failed(id, e))?;
        let last = results.pop().ok_or_else(|| StoreError::NotFound { id: id.to_owned() })?;
        for r in results {
            match r {
                Ok(rec) => self.publish(&rec),
                Err(e) if StoreFault::of(&e).is_some() => return Err(self.failed(id, e)),
                Err(e) => tracing::debug!(task = id, "deferred update not applied: {e}"),
            }
        }
        let rec = last.map_err(|e| self.failed(id, e))?;
        self.indexed_if_ended(&rec);
        self.publish(&rec);
        Ok(rec)
    }

    /// Like [`Gate::apply`] for updates that may race a terminal state: a refusal means the task
    /// has already ended, which is fine, and is logged rather than returned.
    pub fn apply_quietly(&self, id: &str, update: Update) -> Option<TaskRecord> {
        self.quietly(id, self.apply(id, update))
    }

    fn quietly(&self, id: &str, written: Result<TaskRecord>) -> Option<TaskRecord> {
        match written {
            Ok(r) => Some(r),
            Err(EngineError::Store(e @ StoreError::Refused { .. })) => {
                tracing::debug!(task = id, "update not applied: {e}");
                None
            }
            // Logged once, when the task was halted; its driver stops on it.
            Err(EngineError::StoreUnwritable { .. }) => None,
            Err(e) => {
                tracing::error!(task = id, "could not record an update: {e}");
                None
            }
        }
    }

    fn take_deferred(&self, id: &str) -> Vec<(String, Update)> {
        let mut deferred = lock(&self.deferred);
        let messages = deferred.messages.remove(id).unwrap_or_default();
        let progress = deferred.progress.remove(id);
        messages.into_iter().chain(progress.map(Update::Progress)).map(|u| (id.to_owned(), u)).collect()
    }

    /// Progress for the next flush; only the latest value per task is written. A legacy server's
    /// progress notification is decoded by the session, not by a snapshot, so its message is cut
    /// here rather than held whole until the flush.
    pub fn defer_progress(&self, id: &str, mut progress: Progress) {
        if lock(&self.halted).contains_key(id) {
            return;
        }
        progress.message = progress.message.map(taskdeck_protocol::limits::progress_message);
        lock(&self.deferred).progress.insert(id.to_owned(), progress);
    }

    /// A new status message on a task that stays `working`, for the next flush.
    pub fn defer_message(&self, id: &str, message: Option<String>, server_status: Option<String>) {
        if lock(&self.halted).contains_key(id) {
            return;
        }
        let update = Update::Status { status: TaskStatus::Working, message, server_status };
        let full = {
            let mut deferred = lock(&self.deferred);
            let queued = deferred.messages.entry(id.to_owned()).or_default();
            queued.push(update);
            queued.len() >= MAX_DEFERRED_MESSAGES
        };
        if full {
            self.write_deferred(id);
        }
    }

    /// Writes what waits for one task now, in one transaction.
    fn write_deferred(&self, id: &str) {
        let _writing = lock(&self.writing);
        let batch = self.take_deferred(id);
        self.write_batch(batch);
    }

    /// Writes deferred updates in one transaction and publishes what landed. A fault of the store
    /// halts the tasks it hit (all of the batch when the transaction itself failed); any other
    /// failure loses only what was deferred, which the next report brings again.
    fn write_batch(&self, batch: Vec<(String, Update)>) {
        let ids: Vec<String> = batch.iter().map(|(id, _)| id.clone()).collect();
        match self.store.apply_batch(batch) {
            Ok(results) => {
                for (id, r) in ids.iter().zip(results) {
                    match r {
                        Ok(rec) => self.publish(&rec),
                        Err(e) if StoreFault::of(&e).is_some() => {
                            self.failed(id, e);
                        }
                        Err(e) => tracing::debug!(task = %id, "deferred update not applied: {e}"),
                    }
                }
            }
            Err(e) => match StoreFault::of(&e) {
                Some(fault) => {
                    let halt = Halt { fault, detail: fault_detail(&e) };
                    let mut seen = std::collections::HashSet::new();
                    for id in ids.iter().filter(|id| seen.insert(id.as_str())) {
                        self.halt(id, halt.clone());
                    }
                }
                None => tracing::error!("could not record progress and status messages: {e}"),
            },
        }
    }

    /// The status message the task shows once what waits for it is written.
    pub fn latest_message(&self, rec: &TaskRecord) -> Option<String> {
        match lock(&self.deferred).messages.get(&rec.id).and_then(|queued| queued.last()) {
            Some(Update::Status { message, .. }) => message.clone(),
            _ => rec.status_message.clone(),
        }
    }

    /// Writes everything that waits, in one transaction, and the search rows of the plain calls
    /// still running.
    pub fn flush(&self) {
        let _writing = lock(&self.writing);
        let unindexed: Vec<String> = lock(&self.unindexed).drain().collect();
        if !unindexed.is_empty()
            && let Err(e) = self.store.index_tasks(&unindexed)
        {
            // Only search is behind: each call's end writes its row again.
            tracing::warn!("running calls could not be indexed for search: {e}");
        }
        let updates: Vec<(String, Update)> = {
            let mut deferred = lock(&self.deferred);
            let messages = std::mem::take(&mut deferred.messages);
            let progress = std::mem::take(&mut deferred.progress);
            let messages = messages.into_iter().flat_map(|(id, ms)| ms.into_iter().map(move |m| (id.clone(), m)));
            messages.chain(progress.into_iter().map(|(id, p)| (id, Update::Progress(p)))).collect()
        };
        if updates.is_empty() {
            return;
        }
        self.write_batch(updates);
    }

    /// Deletes finished tasks (see `Store::delete_tasks`); what waited for their flush goes with
    /// them, so no write is tried for a task that is gone.
    pub fn delete(&self, ids: &[String], why: taskdeck_store::PurgeReason) -> Result<Vec<taskdeck_store::Purged>> {
        let _writing = lock(&self.writing);
        let purged = self.store.delete_tasks(ids, why)?;
        self.forget(&purged);
        Ok(purged)
    }

    /// Applies a retention rule (see `Store::prune`).
    pub fn prune(
        &self,
        rule: &taskdeck_store::Retention,
    ) -> Result<(Vec<taskdeck_store::Purged>, taskdeck_store::Space)> {
        let _writing = lock(&self.writing);
        let (purged, space) = self.store.prune(rule)?;
        self.forget(&purged);
        Ok((purged, space))
    }

    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<taskdeck_store::TaskSummary> {
        Ok(self.store.set_pinned(id, pinned)?)
    }

    fn forget(&self, purged: &[taskdeck_store::Purged]) {
        let mut unindexed = lock(&self.unindexed);
        for p in purged {
            unindexed.remove(&p.id);
        }
        drop(unindexed);
        let mut deferred = lock(&self.deferred);
        for p in purged {
            deferred.messages.remove(&p.id);
            deferred.progress.remove(&p.id);
        }
    }

    /// Subscribes to one task's publishes.
    pub fn watch(&self, id: &str) -> TaskWatch {
        let rx = lock(&self.watched).entry(id.to_owned()).or_insert_with(|| watch::channel(None).0).subscribe();
        TaskWatch { watched: self.watched.clone(), id: id.to_owned(), rx }
    }
}

fn fault_detail(e: &StoreError) -> String {
    match e {
        StoreError::DiskFull(inner) => inner.to_string(),
        StoreError::Damaged { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// One waiter's subscription to one task; the last one to leave removes the entry.
pub(crate) struct TaskWatch {
    watched: Watched,
    id: String,
    pub rx: watch::Receiver<Option<TaskRecord>>,
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        let mut watched = lock(&self.watched);
        if watched.get(&self.id).is_some_and(|tx| tx.receiver_count() <= 1) {
            watched.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskdeck_store::Mode;

    fn gate() -> (tempfile::TempDir, Gate, TaskRecord) {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::new(Store::open(dir.path().join("t.sqlite3")).unwrap());
        let rec = gate
            .create(
                NewTask {
                    server: "s".into(),
                    tool: "t".into(),
                    arguments: json!({}),
                    idempotency_key: "k".into(),
                    mode: Mode::Task,
                },
                false,
            )
            .unwrap();
        (dir, gate, rec)
    }

    fn published(rx: &mut broadcast::Receiver<EngineEvent>) -> Vec<TaskRecord> {
        let mut out = Vec::new();
        while let Ok(EngineEvent::Task { task }) = rx.try_recv() {
            out.push(*task);
        }
        out
    }

    #[test]
    fn recording_the_remote_task_is_published_like_every_other_write() {
        let (_dir, gate, rec) = gate();
        let mut rx = gate.subscribe();
        gate.set_remote(&rec.id, Era::Legacy, Some("r-1"), None, Some(500)).unwrap();
        let seen = published(&mut rx);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].remote_task_id.as_deref(), Some("r-1"));
    }

    #[test]
    fn deferred_messages_and_progress_land_before_the_next_update_in_order() {
        let (_dir, gate, rec) = gate();
        gate.defer_message(&rec.id, Some("one".into()), Some("working".into()));
        gate.defer_message(&rec.id, Some("two".into()), Some("working".into()));
        gate.defer_progress(&rec.id, Progress { progress: 3.0, total: Some(4.0), message: None });
        assert_eq!(gate.latest_message(&rec), Some("two".into()), "the message the task will show");
        assert_eq!(gate.get(&rec.id).unwrap().status_message, None, "nothing written yet");
        let mut rx = gate.subscribe();
        let done = gate.apply(&rec.id, Update::Completed { result: json!({"content": []}), server_status: None });
        let done = done.unwrap();
        assert_eq!(done.status, TaskStatus::Completed);
        assert_eq!(done.progress.map(|p| p.progress), Some(3.0));
        let messages: Vec<_> =
            gate.store().events(&rec.id).unwrap().iter().filter_map(|e| e.data.get("message").cloned()).collect();
        assert_eq!(messages, vec![json!("one"), json!("two")]);
        assert_eq!(published(&mut rx).last().map(|r| r.status), Some(TaskStatus::Completed));
        // Nothing is left to flush afterwards.
        gate.flush();
        assert!(published(&mut rx).is_empty());
    }

    #[test]
    fn a_flush_writes_what_waits_and_publishes_it() {
        let (_dir, gate, rec) = gate();
        let mut rx = gate.subscribe();
        gate.defer_progress(&rec.id, Progress { progress: 1.0, total: None, message: None });
        gate.defer_progress(&rec.id, Progress { progress: 2.0, total: None, message: None });
        gate.flush();
        let seen = published(&mut rx);
        assert_eq!(seen.len(), 1, "the latest value only");
        assert_eq!(gate.get(&rec.id).unwrap().progress.map(|p| p.progress), Some(2.0));
    }

    #[test]
    fn a_flood_of_messages_between_flushes_waits_in_bounded_memory_and_is_all_accounted_for() {
        let (_dir, gate, rec) = gate();
        const SENT: usize = 2_500;
        for i in 0..SENT {
            gate.defer_message(&rec.id, Some(format!("step {i}")), Some("working".into()));
            let queued = lock(&gate.deferred).messages.get(&rec.id).map_or(0, Vec::len);
            assert!(queued < MAX_DEFERRED_MESSAGES, "{queued} messages wait in memory");
        }
        gate.flush();
        assert_eq!(gate.get(&rec.id).unwrap().status_message.as_deref(), Some("step 2499"));
        let events = gate.store().events(&rec.id).unwrap();
        assert!(events.len() <= taskdeck_store::EVENTS_PER_TASK);
        let kept = events.iter().filter(|e| e.kind == taskdeck_store::EventKind::Status).count();
        let dropped = events.iter().find(|e| e.kind == taskdeck_store::EventKind::Dropped).map(|e| &e.data["dropped"]);
        assert_eq!(kept as u64 + dropped.and_then(serde_json::Value::as_u64).unwrap_or(0), SENT as u64);
    }

    #[test]
    fn a_write_the_full_store_cannot_take_halts_the_task_and_nothing_more_is_written_for_it() {
        let (_dir, gate, rec) = gate();
        let mut rx = gate.subscribe();
        gate.store().stop_growing_for_tests().unwrap();
        // A result bigger than a page needs pages the file can no longer add.
        let big = json!({"content": [{"type": "text", "text": "x".repeat(64 * 1024)}]});
        let err = gate.apply(&rec.id, Update::Completed { result: big, server_status: None }).unwrap_err();
        assert!(matches!(err, EngineError::StoreUnwritable { fault: StoreFault::DiskFull, .. }), "{err:?}");
        assert!(gate.halted(&rec.id).is_some());
        // What would fit is not written either, and nothing waits for a flush.
        gate.defer_progress(&rec.id, Progress { progress: 1.0, total: None, message: None });
        gate.flush();
        let small = Update::Progress(Progress { progress: 2.0, total: None, message: None });
        assert!(matches!(gate.apply(&rec.id, small), Err(EngineError::StoreUnwritable { .. })));
        assert!(
            gate.apply_quietly(&rec.id, Update::Cancelled { reason: None, server_status: None, server_told: None })
                .is_none()
        );
        assert!(published(&mut rx).is_empty());
        let now = gate.get(&rec.id).unwrap();
        assert_eq!((now.status, now.progress), (TaskStatus::Working, None), "recorded as it was");
        // Once cleared (room was made), the next write is tried again.
        gate.clear_halts();
        assert!(gate.halted(&rec.id).is_none());
    }

    #[test]
    fn a_plain_calls_end_is_published_as_its_era_then_its_outcome_as_when_they_were_two_writes() {
        let progress = Progress { progress: 2.0, total: Some(2.0), message: None };
        let done =
            || Update::Completed { result: json!({"content": [{"type": "text", "text": "ok"}]}), server_status: None };
        let seen = |rx: &mut broadcast::Receiver<EngineEvent>| -> Vec<_> {
            published(rx).into_iter().map(|r| (r.status, r.era, r.progress, r.status_message, r.result)).collect()
        };
        let kinds = |gate: &Gate, id: &str| -> Vec<_> {
            gate.store().events(id).unwrap().into_iter().map(|e| (e.kind, e.from_status, e.to_status)).collect()
        };

        let (_dir, two, rec) = gate();
        let mut rx = two.subscribe();
        two.defer_progress(&rec.id, progress.clone());
        two.set_remote(&rec.id, Era::Modern, None, None, None).unwrap();
        two.apply_quietly(&rec.id, done()).unwrap();
        let (expected, expected_log) = (seen(&mut rx), kinds(&two, &rec.id));

        let (_dir, one, rec) = gate();
        let mut rx = one.subscribe();
        one.defer_progress(&rec.id, progress);
        let last = one.finish_call(&rec.id, Era::Modern, done()).unwrap();
        assert_eq!(last.status, TaskStatus::Completed);
        let got = seen(&mut rx);
        assert_eq!(got.len(), 3, "the era, the progress that waited, the result");
        assert_eq!(got, expected);
        assert_eq!(kinds(&one, &rec.id), expected_log);
        one.flush();
        assert!(published(&mut rx).is_empty(), "nothing left waiting");
    }

    #[test]
    fn a_plain_call_that_ended_meanwhile_gets_no_era_or_result_and_nothing_is_published() {
        let (_dir, gate, rec) = gate();
        gate.apply(&rec.id, Update::Cancelled { reason: None, server_status: None, server_told: Some(true) }).unwrap();
        let mut rx = gate.subscribe();
        let done = Update::Completed { result: json!({"content": []}), server_status: None };
        assert!(gate.finish_call(&rec.id, Era::Legacy, done).is_none());
        assert!(published(&mut rx).is_empty());
        let now = gate.get(&rec.id).unwrap();
        assert_eq!((now.status, now.era), (TaskStatus::Cancelled, None));
    }

    #[test]
    fn a_plain_calls_end_the_full_store_cannot_take_halts_the_task_with_nothing_published() {
        let (_dir, gate, rec) = gate();
        let mut rx = gate.subscribe();
        gate.store().stop_growing_for_tests().unwrap();
        let big = json!({"content": [{"type": "text", "text": "x".repeat(64 * 1024)}]});
        assert!(
            gate.finish_call(&rec.id, Era::Legacy, Update::Completed { result: big, server_status: None }).is_none()
        );
        assert!(matches!(gate.halted(&rec.id), Some(EngineError::StoreUnwritable { fault: StoreFault::DiskFull, .. })));
        let now = gate.get(&rec.id).unwrap();
        assert_eq!(now.status, TaskStatus::Working, "recorded as it was");
        assert!(published(&mut rx).iter().all(|r| r.status == TaskStatus::Working), "no outcome published");
    }

    fn call(gate: &Gate, key: &str) -> TaskRecord {
        gate.create(
            NewTask {
                server: "s".into(),
                tool: "notes_search".into(),
                arguments: json!({"query": "deploy"}),
                idempotency_key: key.into(),
                mode: Mode::Call,
            },
            true,
        )
        .unwrap()
    }

    fn found(gate: &Gate, words: &str) -> Vec<String> {
        let q = taskdeck_store::TaskQuery { search: Some(words.to_owned()), ..Default::default() };
        gate.store().summaries(&q, &Default::default()).unwrap().items.into_iter().map(|s| s.id).collect()
    }

    #[test]
    fn a_plain_call_still_running_at_the_next_flush_is_found_by_search_after_it() {
        let (_dir, gate, _task) = gate();
        let rec = call(&gate, "c");
        assert_eq!(gate.get(&rec.id).unwrap(), rec, "recorded before it is sent");
        assert!(found(&gate, "deploy").is_empty(), "its search row waits");
        gate.flush();
        assert_eq!(found(&gate, "deploy"), [rec.id.as_str()]);
        assert!(lock(&gate.unindexed).is_empty());
    }

    #[test]
    fn a_modern_call_that_became_a_task_is_found_by_search_after_the_next_flush_and_indexed_once() {
        let (_dir, gate, _task) = gate();
        let new = NewTask {
            server: "s".into(),
            tool: "generate_report".into(),
            arguments: json!({"topic": "quarterly"}),
            idempotency_key: "m".into(),
            mode: Mode::Task,
        };
        let rec = gate.create(new, true).unwrap();
        gate.set_remote(&rec.id, Era::Modern, Some("r-1"), None, Some(500)).unwrap();
        assert!(found(&gate, "quarterly").is_empty(), "the handle writes no search row");
        gate.flush();
        assert_eq!(found(&gate, "quarterly"), [rec.id.as_str()]);
        // Picked up again after a restart, it has its row already: nothing is written for it.
        gate.index_later(&rec.id);
        gate.flush();
        assert_eq!(found(&gate, "quarterly"), [rec.id.as_str()]);
        assert!(lock(&gate.unindexed).is_empty());
    }

    #[test]
    fn a_plain_call_that_ends_before_the_flush_is_found_by_its_end_and_leaves_the_flush_nothing() {
        let (_dir, gate, _task) = gate();
        let answered = call(&gate, "answered");
        let done = Update::Completed {
            result: json!({"content": [{"type": "text", "text": "two penguins"}]}),
            server_status: None,
        };
        gate.finish_call(&answered.id, Era::Legacy, done).unwrap();
        let failed = call(&gate, "failed");
        let error = taskdeck_store::TaskError { code: None, message: "server went away".into(), reason: None };
        gate.apply(&failed.id, Update::Failed { error, server_status: None }).unwrap();
        assert!(lock(&gate.unindexed).is_empty(), "nothing left for the flush");
        assert_eq!(found(&gate, "penguins"), [answered.id.as_str()]);
        assert_eq!(found(&gate, "went away"), [failed.id.as_str()]);
        let mut both = found(&gate, "deploy");
        both.sort();
        let mut expected = vec![answered.id, failed.id];
        expected.sort();
        assert_eq!(both, expected);
    }

    #[test]
    fn a_refused_update_is_not_published() {
        let (_dir, gate, rec) = gate();
        gate.apply(&rec.id, Update::Cancelled { reason: None, server_status: None, server_told: None }).unwrap();
        let mut rx = gate.subscribe();
        assert!(
            gate.apply_quietly(&rec.id, Update::Cancelled { reason: None, server_status: None, server_told: None })
                .is_none()
        );
        assert!(published(&mut rx).is_empty());
    }
}
