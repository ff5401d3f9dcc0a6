//! One process drives the tasks of a data directory at a time. The lock is an OS file lock
//! (`flock` on Unix, `LockFileEx` on Windows), so it dies with its process however that process
//! ends; the file also names the holder for the error a second process gets.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use taskdeck_store::private_fs;

pub const LOCK_FILE: &str = "engine.lock";
/// Windows locks are mandatory: nobody else can read a locked file, so the holder is also named in
/// a file beside it.
#[cfg(windows)]
const HOLDER_FILE: &str = "engine.lock.holder";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the data directory {dir} is in use by {holder}; only one Taskdeck may drive it at a time")]
    Held { dir: PathBuf, holder: String },
    #[error("cannot lock the data directory {dir}: {reason}")]
    Io { dir: PathBuf, reason: String },
}

#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    pub fn acquire(dir: &Path) -> Result<DataDirLock, LockError> {
        let io = |e: std::io::Error| LockError::Io { dir: dir.to_owned(), reason: e.to_string() };
        // The data directory is made here first: private, as the store in it holds every argument,
        // answer and result.
        private_fs::create_dir_all(dir).map_err(io)?;
        let mut file = private_fs::open_options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        // One left by a Taskdeck from before files were private.
        private_fs::restrict(&dir.join(LOCK_FILE)).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                #[cfg(windows)]
                if holder.trim().is_empty() {
                    holder = std::fs::read_to_string(dir.join(HOLDER_FILE)).unwrap_or_default();
                }
                let holder = holder.trim();
                return Err(LockError::Held {
                    dir: dir.to_owned(),
                    holder: if holder.is_empty() { "another process".into() } else { holder.to_owned() },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let me = format!(
            "pid {} ({})",
            std::process::id(),
            std::env::args().map(|a| if a.contains(' ') { format!("{a:?}") } else { a }).collect::<Vec<_>>().join(" ")
        );
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(me.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        #[cfg(windows)]
        private_fs::write_atomic(&dir.join(HOLDER_FILE), me.as_bytes()).map_err(io)?;
        Ok(DataDirLock { _file: file })
    }
}
