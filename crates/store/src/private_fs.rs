//! Files and folders only their user can read: the store (tasks hold arguments, answers and
//! results), the lock, the logs, exported results and the config. Every file Taskdeck creates goes
//! through here, so the rule is in one place rather than a mode at each call.
//!
//! On Unix folders are made 0700 and files 0600 when they are created, whatever the umask. On
//! Windows these are no-ops: the per-user profile folders Taskdeck writes under (`%LOCALAPPDATA%`,
//! `%APPDATA%`) already grant access to the user, SYSTEM and Administrators only, and files made
//! there inherit that ACL.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The mode of every folder Taskdeck creates.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file Taskdeck creates.
pub const FILE_MODE: u32 = 0o600;

/// `OpenOptions` that create a file readable by its user only. Set the access flags as usual; the
/// mode applies when the call creates the file (an existing file keeps its own, see
/// [`restrict`]).
pub fn open_options() -> OpenOptions {
    #[allow(unused_mut)] // Only Unix has a mode to set.
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    options
}

/// `create_dir_all` with every folder it creates private. Folders that already exist keep their
/// mode: a user who chose a shared parent (or `--data-dir ~`) chose it; the files in it are private
/// anyway.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// Takes group and other access away from an existing file of Taskdeck's (one written before
/// files were created private). A file that is not there is not an error.
pub fn restrict(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let mode = meta.permissions().mode();
        if meta.is_file() && mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Writes `bytes` to `path` so that a reader (or a crash) sees the old file or the new one, never
/// half of it: a private temporary file beside it, synced, then renamed over it. The result is
/// private whatever the old file's mode was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// [`write_atomic`] for what is written a piece at a time (an export of many tasks): `write` fills
/// the private temporary file, which replaces `path` only once it returned `Ok` and was synced. On
/// an error the temporary file is removed and `path` is as it was.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&mut std::fs::File) -> io::Result<()>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    create_dir_all(&dir)?;
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut attempt = 0u32;
    let (tmp, mut file) = loop {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.{attempt}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match open_options().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            // One left by a killed writer of the same pid: take the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let written = write(&mut file).and_then(|()| file.flush()).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(&dir) {
        // The rename is durable once the folder is; a failure here loses nothing already there.
        let _ = d.sync_all();
    }
    Ok(())
}

/// Refuses a path that exists and is not a regular file (a FIFO, a device, a folder): opening one
/// of those to read can block forever or never end.
pub fn check_regular(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file (a {})", file_kind(&m.file_type())),
        )),
        Err(e) => Err(e),
    }
}

fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "named pipe";
        }
        if t.is_char_device() || t.is_block_device() {
            return "device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    if t.is_dir() { "folder" } else { "special file" }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn folders_and_files_are_created_for_their_user_only() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        create_dir_all(&deep).unwrap();
        assert_eq!((mode(&dir.path().join("a")), mode(&deep)), (0o700, 0o700));
        let file = deep.join("f");
        open_options().write(true).create(true).open(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
    }

    #[test]
    fn an_atomic_write_replaces_a_readable_file_with_a_private_one_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("servers.json");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&file, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn restrict_takes_away_group_and_other_access() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
        restrict(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        restrict(&dir.path().join("absent")).unwrap();
    }

    #[test]
    fn a_named_pipe_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = check_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        check_regular(&dir.path().join("absent")).unwrap_err();
    }
}
