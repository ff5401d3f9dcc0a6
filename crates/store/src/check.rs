//! The integrity check of an up-to-date store, run beside the reads instead of before them.
//!
//! `PRAGMA quick_check` reads every page of the file, which at 100,000 tasks is most of what
//! opening costs (docs/benchmarks.md, section 4). A read gains nothing from waiting for it: a page
//! it reads is either sound or fails the read itself with SQLITE_CORRUPT ([`StoreError::Damaged`]),
//! never as "no rows". A write must wait: a damaged store is refused before a single byte is
//! written to it. So the check runs on a connection of its own that holds the file's write lock
//! from before the store's own connection is opened (`BEGIN IMMEDIATE`: in WAL mode readers go on,
//! every other writer, in this process or another, waits), and:
//! - the store's writes wait for the outcome itself (not for the busy timeout, which a long check
//!   could outlast), then go on, or fail with the same [`StoreError::Damaged`] as a refusal at open;
//! - a store found damaged keeps the lock until it is dropped, so no writer gets past it, whoever
//!   asked for the write.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, InterruptHandle, OpenFlags};

use crate::error::{Result, StoreError};

/// How a check ended.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Passed,
    /// Damaged pages, as SQLite described them.
    Damaged(String),
    /// The check itself could not run to its end (an I/O error, or the store was dropped first).
    Failed(rusqlite::ffi::Error, String),
}

impl Outcome {
    fn to_result(&self, path: &Path) -> Result<()> {
        match self {
            Outcome::Passed => Ok(()),
            Outcome::Damaged(reason) => {
                Err(StoreError::Damaged { path: Some(path.to_owned()), reason: reason.clone() })
            }
            Outcome::Failed(code, message) => {
                Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(*code, Some(message.clone()))))
            }
        }
    }
}

/// Runs [`PRAGMA quick_check`] on `conn`, which must have had its virtual-table modules dropped.
pub(crate) fn quick_check(conn: &Connection) -> Outcome {
    const SHOWN: usize = 3;
    let problems: Vec<String> = match conn
        .prepare(&format!("PRAGMA quick_check({SHOWN})"))
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
    {
        Ok(rows) => rows,
        Err(e) => return failed(e),
    };
    match problems.as_slice() {
        [ok] if ok == "ok" => Outcome::Passed,
        [] => Outcome::Damaged("the integrity check returned nothing".to_owned()),
        _ => Outcome::Damaged(problems.join("; ")),
    }
}

fn failed(e: rusqlite::Error) -> Outcome {
    match e {
        _ if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)) => {
            Outcome::Damaged(e.to_string())
        }
        rusqlite::Error::SqliteFailure(code, message) => {
            let message = message.unwrap_or_else(|| code.to_string());
            Outcome::Failed(code, message)
        }
        other => Outcome::Failed(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            format!("the integrity check failed: {other}"),
        ),
    }
}

/// SQLite 3.44 and later also ask each virtual table to check itself, and FTS5 then walks every
/// posting list of the search index, which was most of the check's time (1.1 s of a 1.2 s open at
/// 100,000 tasks, against 0.45 s without it) and grows with the text stored. Without the modules
/// on the connection SQLite skips that step; every page of the index's tables is still checked.
pub(crate) fn drop_modules(conn: &Connection) -> Result<()> {
    // SAFETY: the handle is this connection's own and outlives the call; a null keep-list is
    // documented as "drop every module". No statement of this connection is running, and none it
    // runs later uses a virtual table.
    let dropped = unsafe { rusqlite::ffi::sqlite3_drop_modules(conn.handle(), std::ptr::null_mut()) };
    if dropped != rusqlite::ffi::SQLITE_OK {
        return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(dropped), None)));
    }
    Ok(())
}

/// A check under way (or over) for one store.
pub(crate) struct Check {
    path: PathBuf,
    outcome: Mutex<Option<Outcome>>,
    ended: Condvar,
    /// Set when the store is dropped: the thread lets go of the lock (and a running check stops).
    release: (Mutex<bool>, Condvar),
    interrupt: InterruptHandle,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Tests only: holds the check after it took the lock and before it reads a page, until sent
/// (or dropped).
pub(crate) type Hold = std::sync::mpsc::Receiver<()>;

impl Check {
    /// Takes the write lock on a connection of its own and starts the check on a thread. `None`
    /// when the caller is to check the file before opening it, as for any store that needs
    /// writing at open: when the lock is not free (another opener's check, or a short write:
    /// waiting for a check would cost what checking costs), or the file turned out, under the
    /// lock, to have frames in its WAL or not to be at `latest` (another process wrote it between
    /// the inspection and the lock).
    pub(crate) fn start(path: &Path, latest: i64, hold: Option<Hold>) -> Result<Option<Running>> {
        // Read-write without create: the file is there (it was just inspected), and only a
        // writable connection can hold the write lock. Opening it writes nothing; nor does closing
        // it, as it never checkpoints: were it the last connection to close, with a WAL another
        // process filled, closing would otherwise copy that WAL into a file not yet checked.
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        drop_modules(&conn)?;
        conn.busy_timeout(Duration::ZERO)?;
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => {}
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version != latest || !crate::open::wal_is_empty(path) {
            return Ok(None);
        }
        let check = Arc::new(Check {
            path: path.to_owned(),
            outcome: Mutex::new(None),
            ended: Condvar::new(),
            release: (Mutex::new(false), Condvar::new()),
            interrupt: conn.get_interrupt_handle(),
            thread: Mutex::new(None),
        });
        let report = check.clone();
        let thread = std::thread::Builder::new()
            .name("taskdeck-store-check".into())
            .spawn(move || run(conn, &report, hold))
            .map_err(|source| StoreError::Io { path: path.to_owned(), source })?;
        *lock(&check.thread) = Some(thread);
        Ok(Some(Running(check)))
    }

    /// The outcome, waiting for it if the check is still running.
    pub(crate) fn wait(&self) -> Result<()> {
        self.wait_outcome().to_result(&self.path)
    }

    fn wait_outcome(&self) -> Outcome {
        let mut outcome = lock(&self.outcome);
        loop {
            if let Some(o) = outcome.as_ref() {
                return o.clone();
            }
            outcome = self.ended.wait(outcome).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn released(&self) -> bool {
        *lock(&self.release.0)
    }

    /// Lets the lock go and waits for the thread; a check still running is stopped, as nobody is
    /// left to hear how it ends. Once stopped, stopping again does nothing.
    pub(crate) fn stop(&self) {
        let (flag, wake) = &self.release;
        *lock(flag) = true;
        wake.notify_all();
        if lock(&self.outcome).is_none() {
            self.interrupt.interrupt();
        }
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
    }

    /// Makes `conn`'s busy handler wait for the outcome while the check holds the lock: a write
    /// this process makes without asking [`Check::wait`] first (and a read that begins as a
    /// writer) goes on when the check passes and fails as busy, having written nothing, when it
    /// does not.
    ///
    /// # Safety
    /// `self` must outlive `conn`, or the handler must be replaced before it is dropped.
    pub(crate) unsafe fn guard(&self, conn: &Connection) -> Result<()> {
        let arg = self as *const Check as *mut c_void;
        // SAFETY: the handle is `conn`'s own; the caller keeps `self` alive as long as `conn`.
        let rc = unsafe { rusqlite::ffi::sqlite3_busy_handler(conn.handle(), Some(busy), arg) };
        if rc != rusqlite::ffi::SQLITE_OK {
            return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rc), None)));
        }
        Ok(())
    }
}

/// A check that is stopped (its lock let go, its thread joined) when this is dropped: by the store,
/// or by an open that failed after the check started.
pub(crate) struct Running(Arc<Check>);

impl std::ops::Deref for Running {
    type Target = Check;
    fn deref(&self) -> &Check {
        &self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Once the check has passed and the lock is free, a busy connection is another process's doing:
/// the handler then retries for about the busy timeout, as SQLite's own would.
const RETRY: Duration = Duration::from_millis(5);

extern "C" fn busy(arg: *mut c_void, attempts: c_int) -> c_int {
    // SAFETY: `arg` is the `Check` of `Check::guard`, alive as long as the connection is.
    let check = unsafe { &*(arg as *const Check) };
    match check.wait_outcome() {
        Outcome::Passed => {
            let limit = (crate::open::BUSY_TIMEOUT.as_millis() / RETRY.as_millis()) as c_int;
            if attempts >= limit {
                return 0;
            }
            std::thread::sleep(RETRY);
            1
        }
        _ => 0,
    }
}

fn run(conn: Connection, check: &Check, hold: Option<Hold>) {
    if let Some(hold) = hold {
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = hold.recv_timeout(Duration::from_millis(10)) {
            if check.released() {
                break;
            }
        }
    }
    // An interrupt reaches running statements only: a store dropped before the check began is not
    // checked at all.
    let outcome = if check.released() {
        Outcome::Failed(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT), "the store was closed".to_owned())
    } else {
        quick_check(&conn)
    };
    let passed = matches!(outcome, Outcome::Passed);
    if passed {
        // The lock goes before anyone hears the news, so a woken writer finds it free.
        let _ = conn.execute_batch("ROLLBACK");
        drop(conn);
        publish(check, outcome);
        return;
    }
    publish(check, outcome);
    // A store found damaged (or not checked to the end) keeps the lock until it is dropped.
    let (flag, wake) = &check.release;
    let mut released = lock(flag);
    while !*released {
        released = wake.wait(released).unwrap_or_else(|p| p.into_inner());
    }
    drop(released);
    drop(conn);
}

fn publish(check: &Check, outcome: Outcome) {
    *lock(&check.outcome) = Some(outcome);
    check.ended.notify_all();
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every value guarded here is whole after any panic: poisoning carries no information.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
