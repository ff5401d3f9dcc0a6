//! Logs a user can send: the `tracing` set-up the app and the CLI share (daily files in the log
//! folder, which `Paths::log_dir` of the config module names), and each server's stderr in a file of its own, so
//! "Show log" still has the last lines after a restart. The entries a server sends as MCP log
//! messages (`notifications/message`) join the same log, with their level (see [`LogLine::mcp`]):
//! they are the server's own words like its stderr, read by the same person in the same place, and
//! one log keeps them in the order they came under the one bound every server log has.
//!
//! Nothing secret goes in: no `env` values of a server, no arguments, answers or results. What a
//! server writes to its stderr or sends as a log entry is its own business and is kept as written
//! (bounded; terminals and the webview make it inert when they show it).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskdeck_protocol::limits;
use taskdeck_store::private_fs;
use tracing::Subscriber;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer};

/// One line of a server's log, in memory, on disk and as the UI shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogLine {
    /// RFC 3339 time the line was read.
    pub at: String,
    /// `stderr` for what the server wrote, `taskdeck` for what Taskdeck noted about it, `mcp` for
    /// a log entry the server sent (`notifications/message`).
    pub source: &'static str,
    /// An MCP entry's `data`: as written when it is a string, else its JSON.
    pub text: String,
    /// An MCP entry's level; `None` for stderr and notes, and for a level the spec does not name.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<LogLevel>,
    /// An MCP entry's `logger`, cut to [`LOGGER_CHARS`].
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The local task an MCP entry names (its related-task `_meta`, or the plain call it came
    /// during), whose timeline shows it too.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The server's id of the task an MCP entry names (its related-task `_meta`), kept beside
    /// `task`: an entry sent the moment a task is made may come before Taskdeck knows whose it is.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task: Option<String>,
}

/// The syslog levels of MCP logging (RFC 5424), least severe first, so they compare by severity.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    pub fn parse(s: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A logger name is a label, not a message.
pub const LOGGER_CHARS: usize = 128;

impl LogLine {
    /// A line of stderr or a note of Taskdeck's, cut to [`limits::LOG_LINE_BYTES`].
    pub fn plain(at: String, source: &'static str, text: String) -> LogLine {
        LogLine { at, source, text: limits::log_line(text), level: None, logger: None, task: None, remote_task: None }
    }

    /// An MCP log entry as kept: `data` as text within the line bound, the level when it is one of
    /// the spec's (an unknown one is said in the text instead of being lost), the logger cut.
    pub fn mcp(
        at: String,
        level: &str,
        logger: Option<&str>,
        data: &Value,
        task: Option<String>,
        remote_task: Option<&str>,
    ) -> LogLine {
        let parsed = LogLevel::parse(level);
        let mut text = match data {
            Value::String(s) => cut(s, limits::LOG_LINE_BYTES + 4),
            other => {
                let json = other.to_string();
                cut(&json, limits::LOG_LINE_BYTES + 4)
            }
        };
        if parsed.is_none() {
            text = format!("[level {}] {text}", cut(level, 32));
        }
        let logger = logger.map(|l| l.chars().take(LOGGER_CHARS).collect::<String>()).filter(|l| !l.is_empty());
        let remote_task = remote_task.map(|r| r.chars().take(LOGGER_CHARS).collect());
        LogLine { at, source: "mcp", text: limits::log_line(text), level: parsed, logger, task, remote_task }
    }
}

/// At most `max` bytes of `s` on a character boundary, before the real bound cuts it with its mark:
/// a 10 MB string is not copied whole only to be cut.
fn cut(s: &str, max: usize) -> String {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// An MCP entry on disk: the text field of its line is this, as JSON (which has no raw tab or
/// newline), so a line stays one line and an older Taskdeck skips it as a source it does not know.
#[derive(Serialize, Deserialize)]
struct McpOnDisk {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    level: Option<LogLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    logger: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote_task: Option<String>,
    text: String,
}

/// Flushes a log file's queued lines when dropped.
pub use tracing_appender::non_blocking::WorkerGuard;

/// The filter for the log files (and the CLI's stderr), in `EnvFilter` syntax.
pub const LOG_ENV: &str = "TASKDECK_LOG";
/// Taskdeck's own crates at info; the libraries under them (WebKit's glue, D-Bus, HTTP) only warn.
pub const DEFAULT_FILTER: &str = "warn,taskdeck=info,taskdeck_app=info,taskdeck_cli=info,taskdeck_engine=info,\
                                  taskdeck_client=info,taskdeck_store=info,taskdeck_protocol=info";
/// Daily files kept per program: two weeks is enough to cover "it broke last week".
const KEEP_FILES: usize = 14;

/// `TASKDECK_LOG`, or [`DEFAULT_FILTER`] when it is unset or does not parse.
pub fn file_filter() -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// A layer writing to `<dir>/<program>.<YYYY-MM-DD>.log`, a file a day, the last 14 kept. Writes go
/// through a background thread, so a slow disk never holds a task; the guard flushes what is queued
/// when dropped, so keep it for as long as the program logs.
pub fn daily_file<S>(dir: &Path, program: &str) -> io::Result<(Box<dyn Layer<S> + Send + Sync>, WorkerGuard)>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    private_fs::create_dir_all(dir)?;
    let appender = RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix(program)
        .filename_suffix("log")
        .max_log_files(KEEP_FILES)
        .build(dir)
        .map_err(io::Error::other)?;
    let appender = PrivateDaily { inner: appender, dir: dir.to_owned(), prefix: format!("{program}."), day: None };
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let layer =
        tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false).with_filter(file_filter()).boxed();
    Ok((layer, guard))
}

/// The rolling appender creates each day's file with the default mode and offers no way to set
/// one, so the files are made private right after it creates them: at the first write and at the
/// first write of each new (UTC) day. The folder is private from the start, so the file is never
/// readable by anyone else in between.
struct PrivateDaily {
    inner: RollingFileAppender,
    dir: PathBuf,
    prefix: String,
    day: Option<chrono::NaiveDate>,
}

impl Write for PrivateDaily {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let today = chrono::Utc::now().date_naive();
        if self.day != Some(today) {
            self.day = Some(today);
            restrict_logs(&self.dir, &self.prefix);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn restrict_logs(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix)
            && let Err(e) = private_fs::restrict(&entry.path())
        {
            // Not through tracing: this runs inside the log writer.
            eprintln!("taskdeck: cannot make {} private: {e}", entry.path().display());
        }
    }
}

/// Past this a server's log file is moved aside to `<name>.log.1` (replacing the one before) and
/// started afresh: a server that floods stderr costs at most twice this on disk.
const SERVER_LOG_BYTES: u64 = 1024 * 1024;

/// One server's stderr (and Taskdeck's notes about it) on disk, a line per [`LogLine`]:
/// `<at>\t<source>\t<text>`.
pub(crate) struct ServerLogFile {
    path: PathBuf,
    file: Option<File>,
    size: u64,
}

impl ServerLogFile {
    /// The file for `server` in `<log dir>/servers/`; nothing is created until the first line.
    pub fn new(log_dir: &Path, server: &str) -> ServerLogFile {
        ServerLogFile { path: log_dir.join("servers").join(file_name(server)), file: None, size: 0 }
    }

    /// The last `max` lines a previous run left, oldest first; empty when there is no file.
    pub fn tail(&self, max: usize) -> Vec<LogLine> {
        let mut lines: Vec<LogLine> = Vec::new();
        for path in [self.rotated(), self.path.clone()] {
            lines.extend(read_tail(&path).lines().filter_map(parse_line));
        }
        let skip = lines.len().saturating_sub(max);
        lines.split_off(skip)
    }

    /// Appends a line. A full disk or an unwritable folder must not stop the server: the line is
    /// still in memory, and the failure is logged once per opening.
    pub fn append(&mut self, line: &LogLine) {
        let text = format!("{}\t{}\t{}\n", line.at, line.source, on_disk(line));
        if self.size + text.len() as u64 > SERVER_LOG_BYTES && self.size > 0 {
            self.file = None;
            if let Err(e) = std::fs::rename(&self.path, self.rotated()) {
                tracing::debug!(path = %self.path.display(), "could not rotate the server log: {e}");
            }
            self.size = 0;
        }
        if self.file.is_none() {
            match self.open() {
                Ok((file, size)) => (self.file, self.size) = (Some(file), size),
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), "cannot write the server log: {e}");
                    return;
                }
            }
        }
        if let Some(file) = &mut self.file {
            match file.write_all(text.as_bytes()) {
                Ok(()) => self.size += text.len() as u64,
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), "cannot write the server log: {e}");
                    self.file = None;
                }
            }
        }
    }

    fn open(&self) -> io::Result<(File, u64)> {
        if let Some(dir) = self.path.parent() {
            private_fs::create_dir_all(dir)?;
        }
        let file = private_fs::open_options().create(true).append(true).open(&self.path)?;
        // One written before files were private (the rotated one keeps this file's mode).
        private_fs::restrict(&self.path)?;
        let size = file.metadata()?.len();
        Ok((file, size))
    }

    fn rotated(&self) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(".1");
        PathBuf::from(name)
    }
}

fn on_disk(line: &LogLine) -> String {
    if line.source == "mcp" {
        let entry = McpOnDisk {
            level: line.level,
            logger: line.logger.clone(),
            task: line.task.clone(),
            remote_task: line.remote_task.clone(),
            text: line.text.clone(),
        };
        return serde_json::to_string(&entry).unwrap_or_default();
    }
    line.text.replace(['\n', '\r'], " ")
}

/// At most the last [`SERVER_LOG_BYTES`] of a file, from its first whole line.
fn read_tail(path: &Path) -> String {
    let Ok(mut file) = File::open(path) else { return String::new() };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(SERVER_LOG_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    match (start, text.find('\n')) {
        (0, _) => text,
        (_, Some(i)) => text[i + 1..].to_owned(),
        (_, None) => String::new(),
    }
}

fn parse_line(line: &str) -> Option<LogLine> {
    let mut parts = line.splitn(3, '\t');
    let at = parts.next()?.to_owned();
    let source = match parts.next()? {
        "stderr" => "stderr",
        "taskdeck" => "taskdeck",
        "mcp" => {
            // The file is ours, but a damaged line is skipped rather than shown as something else.
            let entry: McpOnDisk = serde_json::from_str(parts.next()?).ok()?;
            let logger = entry.logger.map(|l| l.chars().take(LOGGER_CHARS).collect());
            return Some(LogLine {
                at,
                source: "mcp",
                text: limits::log_line(entry.text),
                level: entry.level,
                logger,
                task: entry.task.map(|t| t.chars().take(LOGGER_CHARS).collect()),
                remote_task: entry.remote_task.map(|t| t.chars().take(LOGGER_CHARS).collect()),
            });
        }
        _ => return None,
    };
    // A file an older Taskdeck wrote may hold longer lines than are kept today.
    Some(LogLine::plain(at, source, parts.next().unwrap_or_default().to_owned()))
}

/// Reads a server's log from its files, without the engine: what `taskdeck-cli logs` prints while
/// the app (or another CLI) holds the data directory. The engine only ever appends to the file and
/// renames it aside when it is full, so a reader needs no lock: [`ServerLogReader::read_new`]
/// picks up where it stopped, and starts the file afresh when it became shorter (rotated).
pub struct ServerLogReader {
    file: ServerLogFile,
    offset: u64,
    /// A line the writer had not finished when last read.
    partial: String,
    /// Which file was read (its inode, on Unix): a rotation that grew the new file past the old
    /// position before the next read is still noticed.
    identity: Option<u64>,
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(meta.ino())
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<u64> {
    None
}

impl ServerLogReader {
    pub fn new(log_dir: &Path, server: &str) -> ServerLogReader {
        ServerLogReader { file: ServerLogFile::new(log_dir, server), offset: 0, partial: String::new(), identity: None }
    }

    /// Every line kept on disk, oldest first (the rotated file, then the current one), and the
    /// position after it for [`ServerLogReader::read_new`].
    pub fn read_all(&mut self) -> Vec<LogLine> {
        let mut lines: Vec<LogLine> = read_tail(&self.file.rotated()).lines().filter_map(parse_line).collect();
        self.offset = 0;
        self.partial.clear();
        lines.extend(self.read_new());
        lines
    }

    /// The lines appended since the last read.
    pub fn read_new(&mut self) -> Vec<LogLine> {
        let Ok(mut file) = File::open(&self.file.path) else { return Vec::new() };
        let Ok(meta) = file.metadata() else { return Vec::new() };
        let len = meta.len();
        let id = identity(&meta);
        if len < self.offset || id != self.identity {
            // Rotated: what was left unread of the old file is in `.log.1` now; the new file is read whole.
            self.offset = 0;
            self.partial.clear();
            self.identity = id;
        }
        // A reader that starts on a full file skips to its last SERVER_LOG_BYTES like `tail`.
        let start = self.offset.max(len.saturating_sub(SERVER_LOG_BYTES));
        if file.seek(SeekFrom::Start(start)).is_err() {
            return Vec::new();
        }
        let mut bytes = Vec::new();
        if (&mut file).take(SERVER_LOG_BYTES).read_to_end(&mut bytes).is_err() {
            return Vec::new();
        }
        self.offset = start + bytes.len() as u64;
        let mut text = std::mem::take(&mut self.partial);
        text.push_str(&String::from_utf8_lossy(&bytes));
        let complete = match text.rfind('\n') {
            Some(i) => {
                self.partial = text[i + 1..].to_owned();
                &text[..i]
            }
            None => {
                self.partial = text;
                return Vec::new();
            }
        };
        complete.lines().filter_map(parse_line).collect()
    }
}

/// A server's name is the config's key, anything at all: the file name keeps what a file system
/// takes everywhere, and a hash of the whole name when that lost something, so two names never share
/// a file.
fn file_name(server: &str) -> String {
    let safe: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(64)
        .collect();
    if safe == server && !safe.is_empty() {
        format!("{safe}.log")
    } else {
        let hash =
            server.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        format!("{safe}-{hash:016x}.log")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> LogLine {
        LogLine::plain(format!("2026-12-01T08:00:{:02}.000Z", n % 60), "stderr", format!("line {n}\twith a tab"))
    }

    #[test]
    fn the_daily_file_gets_taskdecks_info_lines_with_their_fields() {
        use tracing_subscriber::layer::SubscriberExt;

        let dir = tempfile::tempdir().unwrap();
        let (layer, guard) = daily_file(&dir.path().join("logs"), "taskdeck-test").unwrap();
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(task = "t-1", server = "demo", "started");
            tracing::debug!("not at the default level");
        });
        drop(guard);
        let files: Vec<_> = std::fs::read_dir(dir.path().join("logs")).unwrap().map(|f| f.unwrap().path()).collect();
        assert_eq!(files.len(), 1);
        let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("taskdeck-test.") && name.ends_with(".log"), "{name}");
        let text = std::fs::read_to_string(&files[0]).unwrap();
        if std::env::var_os(LOG_ENV).is_none() {
            assert!(!text.contains("not at the default level"), "{text}");
        }
        assert!(
            text.contains("started") && text.contains("task=\"t-1\"") && text.contains("server=\"demo\""),
            "{text}"
        );
        assert!(!text.contains('\x1b'), "no colour codes in a file: {text}");
        #[cfg(unix)]
        {
            assert_eq!(mode(&dir.path().join("logs")), 0o700);
            assert_eq!(mode(&files[0]), 0o600);
        }
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn a_servers_log_and_its_folder_are_readable_by_their_user_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = ServerLogFile::new(dir.path(), "demo");
        file.append(&line(1));
        assert_eq!(mode(&dir.path().join("servers")), 0o700);
        assert_eq!(mode(&dir.path().join("servers/demo.log")), 0o600);
    }

    #[test]
    fn a_servers_lines_are_there_again_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = ServerLogFile::new(dir.path(), "demo");
        assert!(file.tail(10).is_empty());
        for n in 0..5 {
            file.append(&line(n));
        }
        file.append(&LogLine::plain("t".into(), "taskdeck", "exited".into()));
        let again = ServerLogFile::new(dir.path(), "demo");
        let tail = again.tail(3);
        assert_eq!(
            tail.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["line 3\twith a tab", "line 4\twith a tab", "exited"]
        );
        assert_eq!(tail[2].source, "taskdeck");
    }

    #[test]
    fn a_flooding_server_costs_at_most_two_files_and_keeps_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = ServerLogFile::new(dir.path(), "loud");
        let big = "x".repeat(10_000);
        for n in 0..300 {
            file.append(&LogLine::plain(n.to_string(), "stderr", big.clone()));
        }
        let files: Vec<_> = std::fs::read_dir(dir.path().join("servers")).unwrap().collect();
        assert_eq!(files.len(), 2);
        let total: u64 = files.iter().map(|f| f.as_ref().unwrap().metadata().unwrap().len()).sum();
        assert!(total <= 2 * SERVER_LOG_BYTES, "{total}");
        let tail = ServerLogFile::new(dir.path(), "loud").tail(2000);
        assert_eq!(tail.last().unwrap().at, "299");
        assert!(tail.len() > 100);
    }

    #[test]
    fn an_mcp_entry_keeps_its_level_logger_and_task_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = ServerLogFile::new(dir.path(), "demo");
        let data = serde_json::json!({"step": 2, "note": "line one\nline two\tend"});
        file.append(&LogLine::mcp("t1".into(), "warning", Some("db"), &data, Some("task-1".into()), Some("r-1")));
        file.append(&LogLine::mcp("t2".into(), "loud", None, &Value::from("said\nagain"), None, None));
        file.append(&line(3));
        let text = std::fs::read_to_string(dir.path().join("servers/demo.log")).unwrap();
        assert_eq!(text.lines().count(), 3, "a server's newlines never make lines of their own: {text}");
        let back = ServerLogFile::new(dir.path(), "demo").tail(10);
        assert_eq!(back[0].source, "mcp");
        assert_eq!(back[0].level, Some(LogLevel::Warning));
        assert_eq!(back[0].logger.as_deref(), Some("db"));
        assert_eq!(back[0].task.as_deref(), Some("task-1"));
        assert_eq!(back[0].remote_task.as_deref(), Some("r-1"));
        assert_eq!(back[0].text, r#"{"step":2,"note":"line one\nline two\tend"}"#);
        assert_eq!((back[1].level, back[1].text.as_str()), (None, "[level loud] said\nagain"));
        assert_eq!(back[2].source, "stderr");
    }

    #[test]
    fn an_mcp_entry_is_cut_to_the_line_bound_whatever_its_data() {
        let huge = Value::from("é".repeat(3_000_000));
        let entry = LogLine::mcp("t".into(), "info", Some(&"l".repeat(10_000)), &huge, None, None);
        assert!(entry.text.len() <= limits::LOG_LINE_BYTES && entry.text.ends_with('…'));
        assert_eq!(entry.logger.unwrap().chars().count(), LOGGER_CHARS);
        let deep = serde_json::json!({"a": vec![1; 100_000]});
        assert!(LogLine::mcp("t".into(), "info", None, &deep, None, None).text.len() <= limits::LOG_LINE_BYTES);
    }

    #[test]
    fn a_reader_without_the_engine_gets_every_line_then_only_new_ones_through_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = ServerLogFile::new(dir.path(), "demo");
        let mut reader = ServerLogReader::new(dir.path(), "demo");
        assert!(reader.read_all().is_empty(), "no file yet");
        for n in 0..3 {
            file.append(&line(n));
        }
        assert_eq!(reader.read_all().len(), 3);
        assert!(reader.read_new().is_empty());
        file.append(&line(3));
        assert_eq!(reader.read_new().iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), ["line 3\twith a tab"]);
        // Past the size bound the file is moved aside and started again: the reader starts it too.
        let big = "x".repeat(4000);
        let mut seen = 0;
        for n in 0..400 {
            file.append(&LogLine::plain(n.to_string(), "stderr", big.clone()));
            seen += reader.read_new().len();
        }
        assert!(dir.path().join("servers/demo.log.1").exists());
        assert_eq!(seen, 400, "every line was read once");
    }

    #[test]
    fn server_names_become_distinct_safe_file_names() {
        assert_eq!(file_name("demo"), "demo.log");
        let odd = file_name("../../etc/passwd");
        assert!(odd.starts_with("______etc_passwd-") && !odd.contains('/'), "{odd}");
        assert_ne!(file_name("a b"), file_name("a_b"));
        assert_ne!(file_name(""), ".log");
    }
}
