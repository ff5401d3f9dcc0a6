//! Opening the file: decide whether it is ours before writing a single byte, then migrate.
//!
//! Anything that is not clearly a Taskdeck store (or a blank file) is refused untouched: the path
//! comes from the user, and a wrong path must not cost them another program's data.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::check::{Check, Hold, Running};
use crate::error::{Result, StoreError};
use crate::migrations::{LATEST, MIGRATIONS};
use crate::private_fs;

/// `PRAGMA application_id` of every Taskdeck store: "TSKD". Set by the first migration.
pub const APPLICATION_ID: i32 = 0x5453_4B44;

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Long enough to ride out another process's checkpoint or migration, short enough that a wedged
/// peer surfaces as an error rather than a hang.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// What [`inspect`] found a file fit for.
enum Verdict {
    /// Blank, or a store checked already: open and migrate.
    Checked,
    /// An up-to-date store in WAL mode with an empty WAL: nothing to migrate and nothing to
    /// checkpoint, so nothing writes to it until the first write, which waits for the check.
    CheckBeside,
}

/// Where the integrity check of a store that needs nothing written at open runs.
pub(crate) enum Checking {
    /// Beside the reads ([`crate::check`]); the hold (tests only) keeps it from starting.
    Beside(Option<Hold>),
    /// Before the open returns.
    First,
}

/// Opens the file; the check, when it runs beside the reads, comes with it, already holding the
/// write lock (and is stopped if the open fails after all).
pub(crate) fn open(path: &Path, checking: Checking) -> Result<(Connection, Option<Running>)> {
    let verdict = inspect(path)?;
    create_private(path)?;
    // Before the store's own connection: the lock is the check's before anything could write.
    let check = match (verdict, checking) {
        (Verdict::CheckBeside, Checking::First) => {
            check_now(path)?;
            None
        }
        (Verdict::CheckBeside, Checking::Beside(hold)) => match Check::start(path, LATEST, hold)? {
            Some(running) => Some(running),
            None => {
                check_now(path)?;
                None
            }
        },
        (Verdict::Checked, _) => None,
    };

    let mut conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Every write transaction takes the write lock up front: a deferred one that read first could
    // fail with SQLITE_BUSY_SNAPSHOT when another process commits, which the busy timeout cannot fix.
    conn.set_transaction_behavior(TransactionBehavior::Immediate);
    // A new store gives the pages a delete frees back to the file system (a pass of
    // `incremental_vacuum` after a prune). The mode can only be chosen before the first table; an
    // older store keeps reusing its free pages, as a full VACUUM (the only way to change it there)
    // would rewrite the whole file while holding it.
    let empty: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if empty == 0 {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    enable_wal(&conn, path)?;
    // With WAL, NORMAL survives any process being killed; only an OS crash or power cut can lose
    // the last commits, and it never corrupts the file.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;

    // A store checked beside the reads is at LATEST (read under the check's lock): migrating would
    // only wait for that lock.
    if check.is_none() {
        migrate(&mut conn, path)?;
    }
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    debug_assert_eq!(app_id, APPLICATION_ID, "the first migration sets the application id");
    Ok((conn, check))
}

/// How often a migration that failed is tried again from where the file then is.
const MIGRATION_ATTEMPTS: u32 = 5;

/// Brings the file to [`LATEST`]. Two processes opening a new file at once both read version 0,
/// and each step is its own transaction: the loser's step fails on tables the winner just made,
/// while the winner may still be on a later step. So a failed step is retried from the version
/// the file has now, and a file some other opener fully migrated is success.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let mut attempt = 1;
    loop {
        let Err(source) = MIGRATIONS.to_latest(conn) else { return Ok(()) };
        if user_version(conn)? == LATEST {
            return Ok(());
        }
        if attempt == MIGRATION_ATTEMPTS {
            return Err(StoreError::Migration { path: path.to_owned(), source });
        }
        attempt += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn enable_wal(conn: &Connection, path: &Path) -> Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::Io {
                    path: path.to_owned(),
                    source: std::io::Error::other(format!("cannot switch to WAL (journal mode stays {mode})")),
                });
            }
            // Switching a new file to WAL needs it to itself, and SQLite reports a racing opener as
            // busy at once, without the busy handler; so wait here, as the busy timeout would.
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Creates a missing store file empty and private before SQLite opens it: SQLite gives its `-wal`
/// and `-shm` files the database file's mode, so this is what keeps all three to their user. A
/// file from before this rule is tightened the same way.
fn create_private(path: &Path) -> Result<()> {
    let io_err = |source| StoreError::Io { path: path.to_owned(), source };
    match private_fs::open_options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            for suffix in ["", "-wal", "-shm"] {
                let mut name = path.as_os_str().to_owned();
                name.push(suffix);
                private_fs::restrict(Path::new(&name)).map_err(io_err)?;
            }
            Ok(())
        }
        Err(e) => Err(io_err(e)),
    }
}

fn user_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Refuses, without writing, any file that is not blank and not a store this binary can migrate.
fn inspect(path: &Path) -> Result<Verdict> {
    let io_err = |source| StoreError::Io { path: path.to_owned(), source };
    // Before opening: opening a named pipe to read waits for a writer, forever.
    match private_fs::check_regular(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Checked),
        r => r.map_err(io_err)?,
    }
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Checked),
        Err(e) => return Err(io_err(e)),
    };
    let mut header = Vec::with_capacity(100);
    (&mut file).take(100).read_to_end(&mut header).map_err(io_err)?;
    drop(file);
    if header.is_empty() {
        return Ok(Verdict::Checked);
    }
    let not_sqlite = |reason: String| StoreError::NotSqlite { path: path.to_owned(), reason };
    if header.len() < 100 || !header.starts_with(SQLITE_MAGIC) {
        return Err(not_sqlite("no SQLite header".to_owned()));
    }

    // Bytes 18 and 19 (the file format's write and read versions) are 2 in WAL mode. A store in
    // another mode is switched to WAL at open, which writes its header: it is checked first.
    let wal = header[18] == 2 && header[19] == 2;
    match inspect_sqlite(path, wal) {
        // A process killed mid-write (Taskdeck's own first open included, while it switched a new
        // file to WAL) leaves a hot rollback journal, which a read-only connection cannot roll
        // back: every later open would fail the same way, for good. Rolling it back is what any
        // SQLite opener does first and restores the file's last committed state, whoever wrote
        // it; then the file is looked at afresh.
        Err(StoreError::Sqlite(e)) if e.sqlite_error_code() == Some(ErrorCode::ReadOnly) && hot_journal(path) => {
            Connection::open(path)?.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
            inspect_sqlite(path, wal)
        }
        other => other,
    }
}

fn hot_journal(path: &Path) -> bool {
    let mut name = path.as_os_str().to_owned();
    name.push("-journal");
    std::fs::metadata(Path::new(&name)).is_ok_and(|m| m.len() > 0)
}

/// Frames left in the WAL (a process killed before its last connection closed): opening copies
/// them into the file at the first checkpoint, so such a store is checked before it is opened.
pub(crate) fn wal_is_empty(path: &Path) -> bool {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    match std::fs::metadata(Path::new(&name)) {
        Ok(m) => m.len() == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// The checks of [`inspect`] that need SQLite, on a file that has a SQLite header.
fn inspect_sqlite(path: &Path, wal: bool) -> Result<Verdict> {
    let not_sqlite = |reason: String| StoreError::NotSqlite { path: path.to_owned(), reason };
    // Read-only, so no pragma or hot-journal recovery of ours can change the file.
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let damaged = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => not_sqlite(e.to_string()),
        _ => StoreError::Sqlite(e),
    };
    // One read transaction for all three reads: separately, each would see its own snapshot, and a
    // store another process is creating right now would look like a foreign file (its id read
    // before the first migration committed, its tables after).
    let snapshot = conn.unchecked_transaction()?;
    let app_id: i32 = snapshot.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(damaged)?;
    let version: i64 = snapshot.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(damaged)?;
    let objects: Vec<String> = snapshot
        .prepare("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .map_err(damaged)?;
    drop(snapshot);

    let foreign = |reason: String| StoreError::Foreign { path: path.to_owned(), reason };
    match app_id {
        APPLICATION_ID if version > LATEST => {
            Err(StoreError::TooNew { path: path.to_owned(), found: version, supported: LATEST })
        }
        APPLICATION_ID if version == LATEST && wal && wal_is_empty(path) => Ok(Verdict::CheckBeside),
        APPLICATION_ID => check_integrity(&conn, path).map(|()| Verdict::Checked),
        0 if objects.is_empty() && version == 0 => Ok(Verdict::Checked),
        0 if objects.is_empty() => Err(foreign(format!("no application id but user_version {version}"))),
        0 => Err(foreign(format!("no application id and unknown tables: {}", preview(&objects)))),
        other => Err(foreign(format!("application id {other:#010x}, Taskdeck's is {APPLICATION_ID:#010x}"))),
    }
}

/// [`check_integrity`] on a connection of its own, read-only.
fn check_now(path: &Path) -> Result<()> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    check_integrity(&conn, path)
}

/// `PRAGMA quick_check`, read-only, before the first write: a store with a damaged page must be
/// refused before a task is recorded in it, let alone sent to a server. It reads every page once,
/// so it runs at open only; for a store that needs nothing written at open it runs beside the
/// reads instead ([`crate::check`]), with the same modules left out.
fn check_integrity(conn: &Connection, path: &Path) -> Result<()> {
    crate::check::drop_modules(conn)?;
    match crate::check::quick_check(conn) {
        crate::check::Outcome::Passed => Ok(()),
        crate::check::Outcome::Damaged(reason) => Err(StoreError::Damaged { path: Some(path.to_owned()), reason }),
        crate::check::Outcome::Failed(code, message) => {
            Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(code, Some(message))))
        }
    }
}

fn preview(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}
