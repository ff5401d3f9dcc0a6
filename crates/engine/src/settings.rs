//! The user's settings: `settings.json` in the data directory, one JSON object of sections.
//!
//! Each section belongs to one part of Taskdeck, which reads it typed with its defaults
//! ([`Settings`]) or, for a section this module does not know, as JSON ([`SettingsFile::section`]).
//! Whoever writes one section keeps every other as it was, unknown ones included, and the members
//! of a known section that this version does not know: a newer Taskdeck's settings survive an
//! older one. Every write reads the file afresh and replaces it atomically (a private temporary file
//! renamed over it), so a hand edit made meanwhile is kept and a crash leaves the old file or the
//! new one.
//!
//! A file that cannot be read as a JSON object is never written over: reading it is an error that
//! names the file and why, the front ends run on the defaults meanwhile, and a write fails the same
//! way until the file is fixed or removed. A known section that does not fit its type is reported
//! in [`Settings::problems`] and read as its defaults; it is replaced only by a write of that section.
//!
//! Adding a section: a type with `#[serde(default)]`, a field in [`Settings`] and in
//! [`SettingsUpdate`], and a line in `read_sections` and `apply_update`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskdeck_store::{Retention, private_fs};

/// The file's name in the data directory.
pub const SETTINGS_FILE: &str = "settings.json";

/// A settings file larger than this is not read: it is a handful of choices, and a huge file is
/// not one Taskdeck wrote.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

const NOTIFICATIONS: &str = "notifications";
const THEME: &str = "theme";
const RETENTION: &str = "retention";
/// The model providers behind sampling (`taskdeck_models`); their keys are in the sign-in store.
const MODELS: &str = "models";

/// Desktop notifications: whether they are paused, and which kinds are shown.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NotificationSettings {
    /// Nothing is shown while paused (the tray's "Pause notifications").
    pub paused: bool,
    /// A task completed.
    pub finished: bool,
    /// A task failed or was cancelled by its server.
    pub failed: bool,
    /// A task asks a question.
    pub needs_input: bool,
}

impl Default for NotificationSettings {
    fn default() -> Self {
        NotificationSettings { paused: false, finished: true, failed: true, needs_input: true }
    }
}

/// The window's colours.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    /// Follow the system's light or dark preference.
    #[default]
    System,
    Light,
    Dark,
}

/// How much finished history to keep. Each limit is optional; with none, everything is kept.
/// Pinned tasks and tasks still working or waiting are never removed.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetentionSettings {
    /// Remove finished tasks last updated more than this many days ago.
    pub keep_days: Option<u32>,
    /// Keep at most this many finished tasks, the newest.
    pub keep_tasks: Option<u32>,
    /// Keep the newest finished tasks whose data adds up to at most this many megabytes (MiB).
    pub max_mb: Option<u32>,
}

/// Upper bounds a value may take, so that a typo cannot overflow a duration or a size.
const MAX_DAYS: u32 = 100 * 366;
const MAX_MB: u32 = 1024 * 1024;

impl RetentionSettings {
    /// The store's rule for these settings; empty (nothing to remove) when no limit is set.
    pub fn rule(&self) -> Retention {
        Retention {
            older_than: self.keep_days.map(|d| Duration::from_secs(u64::from(d) * 86_400)),
            keep: self.keep_tasks.map(|n| n as usize),
            max_bytes: self.max_mb.map(|mb| u64::from(mb) * 1024 * 1024),
            statuses: Vec::new(),
        }
    }

    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.keep_days.is_some() || self.keep_tasks.is_some() || self.max_mb.is_some()
    }

    fn check(&self) -> Result<(), SettingsError> {
        // Zero would mean "remove every finished task", which nobody asks for by typing a limit.
        let within = |v: Option<u32>, max: u32, field: &str, unit: &str| match v {
            Some(0) => Err(SettingsError::Invalid {
                path: format!("/{RETENTION}/{field}"),
                message: format!("must be at least 1 {unit} (leave it empty to keep everything)"),
            }),
            Some(n) if n > max => Err(SettingsError::Invalid {
                path: format!("/{RETENTION}/{field}"),
                message: format!("must be at most {max} {unit}"),
            }),
            _ => Ok(()),
        };
        within(self.keep_days, MAX_DAYS, "keep_days", "day")?;
        within(self.keep_tasks, u32::MAX, "keep_tasks", "task")?;
        within(self.max_mb, MAX_MB, "max_mb", "MB")
    }
}

/// A known section that could not be read as its type; its defaults stand in for it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingsProblem {
    pub section: String,
    pub message: String,
}

/// Every known section, typed, with its defaults where the file has none.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Settings {
    pub notifications: NotificationSettings,
    pub theme: Theme,
    pub retention: RetentionSettings,
    pub models: taskdeck_models::ModelsSettings,
    /// Sections that were in the file but unreadable, read as their defaults meanwhile.
    pub problems: Vec<SettingsProblem>,
}

/// What to change: each section given replaces that section; the others stay as they are.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SettingsUpdate {
    #[cfg_attr(feature = "ts", ts(optional))]
    pub notifications: Option<NotificationSettings>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub theme: Option<Theme>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub retention: Option<RetentionSettings>,
    #[cfg_attr(feature = "ts", ts(optional))]
    pub models: Option<taskdeck_models::ModelsSettings>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file is there but is not a settings file Taskdeck can read. It is left as it is.
    #[error(
        "{}: the settings file cannot be read ({reason}); Taskdeck uses its defaults and will not write over \
         the file until it is fixed or removed",
        path.display()
    )]
    Unreadable { path: PathBuf, reason: String },
    /// A value given to an update is out of its range (`path` is a JSON Pointer to it).
    #[error("invalid setting {path}: {message}")]
    Invalid { path: String, message: String },
    /// The new file could not be written; the old one is as it was.
    #[error("{}: the settings could not be saved: {reason}", path.display())]
    Write { path: PathBuf, reason: String },
}

impl SettingsError {
    /// The offending value of an update, as a JSON Pointer.
    pub fn path(&self) -> Option<&str> {
        match self {
            SettingsError::Invalid { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// The settings file of one data directory. Writes from this process are serialised.
#[derive(Debug)]
pub struct SettingsFile {
    path: PathBuf,
    writing: Mutex<()>,
}

impl SettingsFile {
    pub fn in_dir(data_dir: &Path) -> SettingsFile {
        SettingsFile { path: data_dir.join(SETTINGS_FILE), writing: Mutex::new(()) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings as the file holds them now; the defaults when there is no file.
    pub fn read(&self) -> Result<Settings, SettingsError> {
        Ok(read_sections(&self.load()?))
    }

    /// Replaces the sections the update gives, keeping everything else in the file, and returns the
    /// settings as written.
    pub fn update(&self, update: &SettingsUpdate) -> Result<Settings, SettingsError> {
        if let Some(r) = &update.retention {
            r.check()?;
        }
        if let Some(m) = &update.models {
            m.check().map_err(|e| SettingsError::Invalid { path: "/models".into(), message: e.to_string() })?;
        }
        self.rewrite(|sections| apply_update(sections, update))
    }

    /// One section as JSON, for a part of Taskdeck whose section this module does not type.
    pub fn section(&self, name: &str) -> Result<Option<Value>, SettingsError> {
        Ok(self.load()?.remove(name))
    }

    /// Replaces one section, keeping every other. Returns the known settings as written.
    pub fn set_section(&self, name: &str, value: Value) -> Result<Settings, SettingsError> {
        self.rewrite(|sections| {
            put(sections, name, value);
        })
    }

    fn rewrite(&self, change: impl FnOnce(&mut Map<String, Value>)) -> Result<Settings, SettingsError> {
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let mut sections = self.load()?;
        change(&mut sections);
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(sections.clone()))
            .map_err(|e| SettingsError::Write { path: self.path.clone(), reason: e.to_string() })?;
        bytes.push(b'\n');
        private_fs::write_atomic(&self.path, &bytes)
            .map_err(|e| SettingsError::Write { path: self.path.clone(), reason: e.to_string() })?;
        Ok(read_sections(&sections))
    }

    /// The file's sections; none when there is no file.
    fn load(&self) -> Result<Map<String, Value>, SettingsError> {
        let unreadable = |reason: String| SettingsError::Unreadable { path: self.path.clone(), reason };
        // Checked before opening: a named pipe there would block the open forever.
        match private_fs::check_regular(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(unreadable(e.to_string())),
            Ok(()) => {}
        }
        let meta = std::fs::metadata(&self.path).map_err(|e| unreadable(e.to_string()))?;
        if meta.len() > MAX_SETTINGS_BYTES {
            return Err(unreadable(format!(
                "{} bytes, more than the {} a settings file may have",
                meta.len(),
                MAX_SETTINGS_BYTES
            )));
        }
        let bytes = std::fs::read(&self.path).map_err(|e| unreadable(e.to_string()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            // An empty file (a crash of another program, a `touch`) holds no choice to lose.
            return Ok(Map::new());
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(unreadable("not a JSON object".into())),
            Err(e) => Err(unreadable(format!("not JSON: {e}"))),
        }
    }
}

fn read_sections(sections: &Map<String, Value>) -> Settings {
    let mut settings = Settings::default();
    let mut problems = Vec::new();
    read_into(sections, NOTIFICATIONS, &mut settings.notifications, &mut problems);
    read_into(sections, THEME, &mut settings.theme, &mut problems);
    read_into(sections, RETENTION, &mut settings.retention, &mut problems);
    read_into(sections, MODELS, &mut settings.models, &mut problems);
    if let Err(e) = settings.models.check() {
        // Kept as it is: the other providers still work, and sampling names the broken one.
        problems.push(SettingsProblem { section: MODELS.into(), message: e.to_string() });
    }
    if settings.retention.check().is_err() {
        problems.push(SettingsProblem {
            section: RETENTION.into(),
            message: "a limit is zero or out of range; everything is kept until it is set again".into(),
        });
        settings.retention = RetentionSettings::default();
    }
    settings.problems = problems;
    settings
}

fn read_into<T: serde::de::DeserializeOwned>(
    sections: &Map<String, Value>,
    name: &str,
    into: &mut T,
    problems: &mut Vec<SettingsProblem>,
) {
    let Some(value) = sections.get(name) else { return };
    match T::deserialize(value) {
        Ok(v) => *into = v,
        Err(e) => problems.push(SettingsProblem { section: name.into(), message: e.to_string() }),
    }
}

fn apply_update(sections: &mut Map<String, Value>, update: &SettingsUpdate) {
    if let Some(n) = &update.notifications {
        put(sections, NOTIFICATIONS, json(n));
    }
    if let Some(t) = &update.theme {
        put(sections, THEME, json(t));
    }
    if let Some(r) = &update.retention {
        put(sections, RETENTION, json(r));
    }
    if let Some(m) = &update.models {
        put(sections, MODELS, json(m));
    }
}

/// Writes a section. When both the old and the new value are objects, the old one's members the
/// new one does not name are kept (a newer Taskdeck's members of a section this one knows).
fn put(sections: &mut Map<String, Value>, name: &str, value: Value) {
    match (sections.get_mut(name), value) {
        (Some(Value::Object(old)), Value::Object(new)) => {
            for (k, v) in new {
                old.insert(k, v);
            }
        }
        (_, value) => {
            sections.insert(name.to_owned(), value);
        }
    }
}

/// A section as JSON. Cannot fail: every section type is plain data with string keys.
fn json<T: Serialize>(section: &T) -> Value {
    serde_json::to_value(section).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file() -> (tempfile::TempDir, SettingsFile) {
        let dir = tempfile::tempdir().expect("temp dir");
        let f = SettingsFile::in_dir(dir.path());
        (dir, f)
    }

    fn written(f: &SettingsFile) -> Value {
        serde_json::from_slice(&std::fs::read(f.path()).expect("settings file")).expect("json")
    }

    #[test]
    fn no_file_means_the_defaults() {
        let (_dir, f) = file();
        let s = f.read().expect("read");
        assert_eq!(s, Settings::default());
        assert!(s.notifications.finished && s.notifications.needs_input && !s.notifications.paused);
        assert_eq!(s.theme, Theme::System);
        assert!(s.retention.rule().is_empty());
    }

    #[test]
    fn a_change_survives_a_new_reader() {
        let (dir, f) = file();
        let update = SettingsUpdate {
            theme: Some(Theme::Dark),
            notifications: Some(NotificationSettings { paused: true, ..Default::default() }),
            ..Default::default()
        };
        let s = f.update(&update).expect("update");
        assert_eq!(s.theme, Theme::Dark);
        let again = SettingsFile::in_dir(dir.path()).read().expect("read");
        assert_eq!(again.theme, Theme::Dark);
        assert!(again.notifications.paused);
        assert_eq!(written(&f)["theme"], json!("dark"));
    }

    #[test]
    fn another_modules_section_is_kept_when_this_one_writes() {
        let (_dir, f) = file();
        let providers = json!({"openai": {"model": "x", "future": [1, 2]}});
        std::fs::write(
            f.path(),
            serde_json::to_vec(&json!({"providers": providers, "notifications": {"paused": false, "sound": "bell"}}))
                .expect("json"),
        )
        .expect("write");
        f.update(&SettingsUpdate {
            notifications: Some(NotificationSettings { paused: true, ..Default::default() }),
            ..Default::default()
        })
        .expect("update");
        let on_disk = written(&f);
        assert_eq!(on_disk["providers"], providers);
        assert_eq!(on_disk["notifications"]["paused"], json!(true));
        // A member of a known section this version does not know is kept too.
        assert_eq!(on_disk["notifications"]["sound"], json!("bell"));
        assert_eq!(f.section("providers").expect("section"), Some(providers));
    }

    #[test]
    fn a_section_of_its_own_is_written_without_touching_the_rest() {
        let (_dir, f) = file();
        f.update(&SettingsUpdate { theme: Some(Theme::Light), ..Default::default() }).expect("update");
        f.set_section("providers", json!({"local": {"url": "http://localhost:1"}})).expect("set");
        let on_disk = written(&f);
        assert_eq!(on_disk["theme"], json!("light"));
        assert_eq!(on_disk["providers"]["local"]["url"], json!("http://localhost:1"));
    }

    #[test]
    fn a_broken_file_is_reported_and_never_written_over() {
        let (_dir, f) = file();
        let broken = b"{\"theme\": \"dark\",, oops";
        std::fs::write(f.path(), broken).expect("write");
        let err = f.read().expect_err("broken");
        let text = err.to_string();
        assert!(text.contains("settings.json") && text.contains("not JSON"), "{text}");
        let err = f.update(&SettingsUpdate { theme: Some(Theme::Light), ..Default::default() }).expect_err("refused");
        assert!(matches!(err, SettingsError::Unreadable { .. }), "{err}");
        assert_eq!(std::fs::read(f.path()).expect("read"), broken);

        std::fs::write(f.path(), b"[1, 2]").expect("write");
        assert!(f.read().expect_err("array").to_string().contains("not a JSON object"));
    }

    #[test]
    fn a_section_of_the_wrong_shape_is_reported_and_read_as_its_defaults() {
        let (_dir, f) = file();
        std::fs::write(f.path(), br#"{"theme": "sepia", "notifications": {"paused": true}}"#).expect("write");
        let s = f.read().expect("read");
        assert_eq!(s.theme, Theme::System);
        assert!(s.notifications.paused, "the readable section is read");
        assert_eq!(s.problems.len(), 1);
        assert_eq!(s.problems[0].section, "theme");
        // Writing another section leaves the unreadable one as the user wrote it.
        f.update(&SettingsUpdate { notifications: Some(NotificationSettings::default()), ..Default::default() })
            .expect("update");
        assert_eq!(written(&f)["theme"], json!("sepia"));
        // Writing that section replaces it.
        let s = f.update(&SettingsUpdate { theme: Some(Theme::Dark), ..Default::default() }).expect("update");
        assert!(s.problems.is_empty());
    }

    #[test]
    fn a_retention_limit_of_zero_is_refused_with_its_field() {
        let (_dir, f) = file();
        let err = f
            .update(&SettingsUpdate {
                retention: Some(RetentionSettings { keep_days: Some(0), ..Default::default() }),
                ..Default::default()
            })
            .expect_err("zero");
        assert_eq!(err.path(), Some("/retention/keep_days"));
        assert!(!f.path().exists(), "nothing was written");
    }

    #[test]
    fn retention_settings_become_the_stores_rule() {
        let r = RetentionSettings { keep_days: Some(30), keep_tasks: Some(1000), max_mb: Some(2) };
        let rule = r.rule();
        assert_eq!(rule.older_than, Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(rule.keep, Some(1000));
        assert_eq!(rule.max_bytes, Some(2 * 1024 * 1024));
        assert!(rule.statuses.is_empty());
    }

    #[test]
    fn an_empty_file_is_no_settings_and_a_huge_one_is_refused() {
        let (_dir, f) = file();
        std::fs::write(f.path(), b"  \n").expect("write");
        assert_eq!(f.read().expect("read"), Settings::default());
        let big = vec![b' '; (MAX_SETTINGS_BYTES + 1) as usize];
        std::fs::write(f.path(), big).expect("write");
        assert!(matches!(f.read(), Err(SettingsError::Unreadable { .. })));
    }

    #[test]
    fn model_providers_are_a_section_of_their_own_and_a_broken_one_is_refused() {
        use taskdeck_models::{ModelEntry, ModelsSettings, ProviderConfig, ProviderKind};
        let (dir, f) = file();
        let models = ModelsSettings {
            providers: vec![ProviderConfig {
                name: "local".into(),
                kind: ProviderKind::OpenAi,
                base_url: "http://localhost:11434/v1".into(),
                models: vec![ModelEntry::new("llama3.2")],
                timeout_secs: None,
            }],
        };
        f.update(&SettingsUpdate { models: Some(models.clone()), ..Default::default() }).expect("update");
        assert_eq!(written(&f)["models"]["providers"][0]["kind"], "openai");
        assert_eq!(SettingsFile::in_dir(dir.path()).read().expect("read").models, models);

        let mut broken = models;
        broken.providers[0].base_url = "ftp://x".into();
        let err = f.update(&SettingsUpdate { models: Some(broken), ..Default::default() }).expect_err("refused");
        assert_eq!(err.path(), Some("/models"));
        assert_eq!(written(&f)["models"]["providers"][0]["base_url"], "http://localhost:11434/v1");
    }

    #[cfg(unix)]
    #[test]
    fn the_settings_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, f) = file();
        f.update(&SettingsUpdate { theme: Some(Theme::Dark), ..Default::default() }).expect("update");
        let mode = std::fs::metadata(f.path()).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
