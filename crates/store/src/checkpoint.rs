//! WAL checkpoints off the write path. SQLite's automatic checkpoint runs inside the commit that
//! crosses its threshold, so every fiftieth plain call or so waited for the copy back into the
//! main file and its `fsync`s: that one commit set the engine's p99 (docs/benchmarks.md, section
//! 5). Here a thread of the store's own, on a second connection, runs a PASSIVE checkpoint when the
//! WAL has been written since the last look; a PASSIVE checkpoint never waits for a writer or
//! blocks one, so commits only append. The store's connection keeps an automatic checkpoint at a
//! far larger threshold as a backstop, so the WAL stays bounded even if this thread falls behind
//! or cannot open its connection.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use rusqlite::Connection;

/// How often the thread looks at the WAL.
const EVERY: Duration = Duration::from_millis(200);
/// WAL pages past which the committing connection checkpoints by itself (SQLite's default is
/// 1,000): reached only when the thread cannot keep up.
pub(crate) const BACKSTOP_PAGES: i64 = 16_000;

pub(crate) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread for the store at `path`; `None` when it cannot run (the caller then
    /// leaves SQLite's own automatic checkpoint as it is).
    pub(crate) fn start(path: &Path) -> Option<Checkpointer> {
        let conn = Connection::open(path).ok()?;
        conn.busy_timeout(Duration::from_millis(50)).ok()?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let wal = wal_path(path);
        let thread = std::thread::Builder::new()
            .name("taskdeck-store-checkpoint".into())
            .spawn(move || run(&conn, &wal, &flag))
            .ok()?;
        Some(Checkpointer { stop, thread: Some(thread) })
    }
}

fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

fn run(conn: &Connection, wal: &Path, stop: &(Mutex<bool>, Condvar)) {
    let (lock, wake) = stop;
    let mut seen: Option<(SystemTime, u64)> = None;
    loop {
        {
            let stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
            // The flag is looked at before waiting too: a stop that came before this thread first
            // waited would otherwise cost the dropping thread a whole tick.
            let (stopped, _) = wake.wait_timeout_while(stopped, EVERY, |s| !*s).unwrap_or_else(|p| p.into_inner());
            if *stopped {
                return;
            }
        }
        // The WAL's modification time and size change with every commit: an idle store costs a
        // `stat` a tick and no checkpoint.
        let now = std::fs::metadata(wal).ok().and_then(|m| Some((m.modified().ok()?, m.len())));
        if now.is_none() || now == seen {
            continue;
        }
        seen = now;
        // Busy (another process checkpointing, or a reader in the way of part of the WAL) is
        // tried again at the next write's tick; nothing here can fail a write, so there is no
        // one to tell.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Copies the whole WAL into the main file and empties it, as a prune does to give space back:
/// the main file then has its real size. The checkpoint lock is one at a time, and SQLite
/// answers busy at once (no busy handler) while the thread above holds it, so a busy try is
/// tried again for a while; a reader holding an old snapshot can still leave part of the WAL to
/// a later checkpoint, which is not an error. Whether the WAL was emptied.
pub(crate) fn truncate_wal(conn: &Connection) -> bool {
    const PATIENCE: Duration = Duration::from_secs(2);
    let until = std::time::Instant::now() + PATIENCE;
    loop {
        // The pragma's first column says whether it was kept from finishing.
        let busy = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0)).unwrap_or(1);
        if busy == 0 {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
