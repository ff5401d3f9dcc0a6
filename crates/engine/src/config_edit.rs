//! Writing Taskdeck's own config: adding a server, removing one, changing one entry's settings.
//!
//! The file is the user's as much as Taskdeck's: every edit keeps the other entries, the order of
//! keys (serde_json's `preserve_order`) and keys Taskdeck does not know exactly as they were, and
//! changes only what was asked. A write is atomic (a private temporary file beside the config,
//! renamed over it), so the engine's watcher, which reads the file by content, sees either the old
//! text or the new one, never half of it. Without a file, the first edit creates it with the demo
//! server in it, which the embedded default ran until then, so adding a server never loses it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskdeck_protocol::Era;

use crate::config::{Config, ConfigError, DEMO_SERVER_NAME, MAX_CONFIG_BYTES, Paths, demo_server_command};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// A server of that name is in the config already: Taskdeck never replaces one by adding.
    #[error("{file}: a server named {name:?} is already in the config; remove it first or choose another name")]
    Exists { file: PathBuf, name: String },
    #[error("{file}: no server named {name:?} in the config")]
    NotFound { file: PathBuf, name: String },
    /// The entry or setting asked for would not be read back: the field and why.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// The file as it is cannot be edited without losing something (not JSON, no `mcpServers`).
    #[error(transparent)]
    Config(ConfigError),
    #[error("{file}: cannot write the config: {reason}")]
    Write { file: PathBuf, reason: String },
}

/// A server's per-server settings as the Settings panel shows and sends them: every value, `None`
/// for one left to the engine.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsEdit {
    /// `false` writes `"disabled": true`.
    pub enabled: bool,
    /// `timeout`, seconds a plain tool call may take.
    pub timeout_secs: Option<f64>,
    /// `minPollInterval` / `maxPollInterval`, seconds.
    pub min_poll_secs: Option<f64>,
    pub max_poll_secs: Option<f64>,
    /// `era` pinned; `None` detects it.
    pub era: Option<Era>,
    /// `inheritEnv`: a local server gets the user's whole environment. Refused for a remote one.
    pub inherit_env: bool,
}

/// A new server as the "Add server" dialog describes it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NewServer {
    /// A local server: a command with its arguments and environment (in the order given).
    Command { command: String, args: Vec<String>, env: Vec<(String, String)> },
    /// A remote server: its URL and the headers sent with every request.
    Url { url: String, headers: Vec<(String, String)> },
}

impl NewServer {
    /// The entry as written in `mcpServers`: only the keys that say something.
    pub fn entry(&self) -> Map<String, Value> {
        let pairs = |pairs: &[(String, String)]| {
            pairs.iter().map(|(k, v)| (k.trim().to_owned(), Value::from(v.as_str()))).collect::<Map<_, _>>()
        };
        let mut entry = Map::new();
        match self {
            NewServer::Command { command, args, env } => {
                entry.insert("command".into(), Value::from(command.trim()));
                if !args.is_empty() {
                    entry.insert("args".into(), Value::from(args.clone()));
                }
                if !env.is_empty() {
                    entry.insert("env".into(), Value::Object(pairs(env)));
                }
            }
            NewServer::Url { url, headers } => {
                entry.insert("type".into(), Value::from("http"));
                entry.insert("url".into(), Value::from(url.trim()));
                if !headers.is_empty() {
                    entry.insert("headers".into(), Value::Object(pairs(headers)));
                }
            }
        }
        entry
    }
}

/// The config file as JSON, being edited. [`ConfigFile::save`] writes it back.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    root: Map<String, Value>,
    /// Whether the file existed when read: a new one is created with the demo server in it.
    existed: bool,
}

impl ConfigFile {
    /// Reads the config to edit; a missing file is one holding the demo server, as the embedded
    /// default runs it.
    pub fn open(paths: &Paths) -> Result<ConfigFile, EditError> {
        let path = paths.config.clone();
        let read_error = |reason: String| EditError::Config(ConfigError::Read { file: path.clone(), reason });
        let text = match read_text(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut servers = Map::new();
                servers.insert(DEMO_SERVER_NAME.into(), Value::Object(demo_entry(&paths.data_dir)));
                let mut root = Map::new();
                root.insert("mcpServers".into(), Value::Object(servers));
                return Ok(ConfigFile { path, root, existed: false });
            }
            Err(e) => return Err(read_error(e.to_string())),
        };
        let root: Value = serde_json::from_str(&text)
            .map_err(|e| EditError::Config(ConfigError::Json { file: path.clone(), reason: e.to_string() }))?;
        let whole = |reason: &str| {
            EditError::Config(ConfigError::Field {
                file: path.clone(),
                field: "mcpServers".into(),
                reason: reason.to_owned(),
            })
        };
        let Value::Object(root) = root else { return Err(whole("the file must be a JSON object")) };
        match root.get("mcpServers") {
            Some(Value::Object(_)) => {}
            Some(_) => return Err(whole("must be an object of servers by name")),
            None => return Err(whole("missing: the file must have an \"mcpServers\" object")),
        }
        Ok(ConfigFile { path, root, existed: true })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is there yet; [`ConfigFile::save`] creates it.
    pub fn exists(&self) -> bool {
        self.existed
    }

    fn servers(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        self.root.get("mcpServers").and_then(Value::as_object).unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }

    fn servers_mut(&mut self) -> &mut Map<String, Value> {
        let servers = self.root.entry("mcpServers").or_insert_with(|| Value::Object(Map::new()));
        if !servers.is_object() {
            *servers = Value::Object(Map::new());
        }
        match servers {
            Value::Object(m) => m,
            _ => unreachable!("made an object above"),
        }
    }

    /// The servers' names, in file order.
    pub fn names(&self) -> Vec<String> {
        self.servers().keys().cloned().collect()
    }

    /// One entry as written.
    pub fn entry(&self, name: &str) -> Option<&Value> {
        self.servers().get(name)
    }

    /// Adds `entry` as `name`, after the others. Refused when the name is taken or the entry would
    /// not be read back as a server.
    pub fn add(&mut self, name: &str, entry: Map<String, Value>) -> Result<(), EditError> {
        check_name(name)?;
        if self.servers().contains_key(name) {
            return Err(EditError::Exists { file: self.path.clone(), name: name.to_owned() });
        }
        check_entry(&self.path, name, &entry)?;
        self.servers_mut().insert(name.to_owned(), Value::Object(entry));
        Ok(())
    }

    /// Removes the entry named `name`, the others keeping their order; returns it.
    pub fn remove(&mut self, name: &str) -> Result<Value, EditError> {
        let file = self.path.clone();
        self.servers_mut().shift_remove(name).ok_or(EditError::NotFound { file, name: name.to_owned() })
    }

    /// The settings of the entry `name` as they are written (what a missing key means, for one
    /// not written).
    pub fn settings(&self, name: &str) -> Result<SettingsEdit, EditError> {
        let entry = self.object(name)?;
        let secs = |key: &str| entry.get(key).and_then(Value::as_f64);
        Ok(SettingsEdit {
            enabled: entry.get("disabled").and_then(Value::as_bool) != Some(true),
            timeout_secs: secs("timeout"),
            min_poll_secs: secs("minPollInterval"),
            max_poll_secs: secs("maxPollInterval"),
            era: entry.get("era").and_then(Value::as_str).and_then(|e| e.parse().ok()),
            inherit_env: entry.get("inheritEnv").and_then(Value::as_bool) == Some(true),
        })
    }

    fn object(&self, name: &str) -> Result<&Map<String, Value>, EditError> {
        match self.servers().get(name) {
            Some(Value::Object(o)) => Ok(o),
            Some(_) => Err(EditError::Invalid {
                field: format!("mcpServers.{name}"),
                reason: "is not an object; fix it in the file first".into(),
            }),
            None => Err(EditError::NotFound { file: self.path.clone(), name: name.to_owned() }),
        }
    }

    /// Changes the per-server settings of `name` to `edit`. A key whose value stays is untouched;
    /// one set to the engine's default is removed; a new one goes after the entry's others.
    pub fn update_settings(&mut self, name: &str, edit: &SettingsEdit) -> Result<(), EditError> {
        let mut entry = self.object(name)?.clone();
        let remote = entry.contains_key("url") && !entry.contains_key("command")
            || matches!(entry.get("type").and_then(Value::as_str), Some("http" | "streamable-http"));
        if remote && edit.inherit_env {
            return Err(EditError::Invalid {
                field: format!("mcpServers.{name}.inheritEnv"),
                reason: "applies to local servers only: a remote server is not started by Taskdeck".into(),
            });
        }
        let seconds = |s: Option<f64>| s.and_then(serde_json::Number::from_f64).map(Value::Number);
        set(&mut entry, "disabled", (!edit.enabled).then_some(Value::Bool(true)));
        set(&mut entry, "timeout", seconds(edit.timeout_secs));
        set(&mut entry, "minPollInterval", seconds(edit.min_poll_secs));
        set(&mut entry, "maxPollInterval", seconds(edit.max_poll_secs));
        set(&mut entry, "era", edit.era.map(|e| Value::from(e.as_str())));
        if !remote {
            set(&mut entry, "inheritEnv", edit.inherit_env.then_some(Value::Bool(true)));
        }
        check_entry(&self.path, name, &entry)?;
        self.servers_mut().insert(name.to_owned(), Value::Object(entry));
        Ok(())
    }

    /// Sets one key of the entry `name` where it is (appended when new, removed for `None`), for
    /// an editor of one key beside this module's own (`roots_edit`). Refused unless the entry
    /// would be read back.
    pub(crate) fn set_key(&mut self, name: &str, key: &str, value: Option<Value>) -> Result<(), EditError> {
        let mut entry = self.object(name)?.clone();
        set(&mut entry, key, value);
        check_entry(&self.path, name, &entry)?;
        self.servers_mut().insert(name.to_owned(), Value::Object(entry));
        Ok(())
    }

    /// The text [`ConfigFile::save`] writes.
    pub fn text(&self) -> String {
        // A map of JSON values always serialises.
        let mut text = serde_json::to_string_pretty(&self.root).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Writes the file atomically: a private temporary file in the same folder, synced, renamed
    /// over the config.
    pub fn save(&mut self) -> Result<(), EditError> {
        let text = self.text();
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(EditError::Write {
                file: self.path.clone(),
                reason: format!(
                    "it would be larger than {} KiB, which Taskdeck does not read",
                    MAX_CONFIG_BYTES / 1024
                ),
            });
        }
        taskdeck_store::private_fs::write_atomic(&self.path, text.as_bytes())
            .map_err(|e| EditError::Write { file: self.path.clone(), reason: e.to_string() })?;
        self.existed = true;
        Ok(())
    }
}

/// Sets `key` to `value` where it is, appends it when it is new, and removes it (the others keeping
/// their order) for `None`. A value equal to the one written is left as written (`1` stays `1`,
/// not `1.0`).
fn set(entry: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    match value {
        None => {
            entry.shift_remove(key);
        }
        Some(v) => {
            let same = match (entry.get(key), &v) {
                (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
                (Some(a), b) => a == b,
                (None, _) => false,
            };
            if !same {
                entry.insert(key.to_owned(), v);
            }
        }
    }
}

pub(crate) fn check_name(name: &str) -> Result<(), EditError> {
    let invalid = |reason: &str| EditError::Invalid { field: "name".into(), reason: reason.into() };
    if name.trim().is_empty() {
        return Err(invalid("a server needs a name"));
    }
    if name != name.trim() {
        return Err(invalid("must not start or end with spaces"));
    }
    if name.chars().count() > 128 {
        return Err(invalid("must be at most 128 characters"));
    }
    if name.chars().any(|c| c.is_control()) {
        return Err(invalid("must not hold control characters"));
    }
    Ok(())
}

/// The entry must read back as a server: what the loader would list as unreadable is refused
/// before it is written. `${env:NAME}` references are taken as set, because they are resolved
/// where Taskdeck runs, later.
pub(crate) fn check_entry(file: &Path, name: &str, entry: &Map<String, Value>) -> Result<(), EditError> {
    let mut servers = Map::new();
    servers.insert(name.to_owned(), Value::Object(entry.clone()));
    let text = serde_json::json!({ "mcpServers": servers }).to_string();
    let config = Config::parse_with(file, &text, |_| Some("set".to_owned())).map_err(EditError::Config)?;
    match config.unreadable.into_iter().next() {
        None => Ok(()),
        Some(bad) => Err(match bad.error {
            ConfigError::Field { field, reason, .. } => EditError::Invalid { field, reason },
            other => EditError::Config(other),
        }),
    }
}

/// The demo server's entry as the embedded default runs it.
fn demo_entry(data_dir: &Path) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("command".into(), Value::from(demo_server_command().display().to_string()));
    let state = data_dir.join("demo-server").display().to_string();
    entry.insert("args".into(), Value::from(vec!["--state".to_owned(), state]));
    entry
}

fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    taskdeck_store::private_fs::check_regular(path)?;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "larger than a config is"));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Adds one server to the config at `paths` and writes it.
pub fn add_server(paths: &Paths, name: &str, server: &NewServer) -> Result<(), EditError> {
    let mut file = ConfigFile::open(paths)?;
    file.add(name, server.entry())?;
    file.save()
}

/// Removes one server from the config at `paths` and writes it. Returns the keys of the secrets
/// its entry named and no other entry does, for the caller to forget in the sign-in store.
pub fn remove_server(paths: &Paths, name: &str) -> Result<Vec<String>, EditError> {
    let mut file = ConfigFile::open(paths)?;
    let removed = file.remove(name)?;
    file.save()?;
    let still = crate::secrets::keys_in(&Value::Object(file.servers().clone()));
    Ok(crate::secrets::keys_in(&removed).into_iter().filter(|k| !still.contains(k)).collect())
}

/// Changes one server's settings in the config at `paths` and writes it.
pub fn update_settings(paths: &Paths, name: &str, edit: &SettingsEdit) -> Result<(), EditError> {
    let mut file = ConfigFile::open(paths)?;
    file.update_settings(name, edit)?;
    file.save()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn paths(dir: &Path) -> Paths {
        Paths { config: dir.join("servers.json"), data_dir: dir.join("data") }
    }

    const WRITTEN: &str = r#"{
  "zeta": 1,
  "mcpServers": {
    "b": {"command": "b-server", "args": ["--x"], "x-note": {"kept": true}},
    "a": {"url": "https://a.example/mcp", "timeout": 30},
    "m": {"command": "m-server"}
  },
  "alpha": "kept"
}"#;

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn adding_a_server_keeps_every_other_entry_its_key_order_and_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        add_server(&p, "new", &NewServer::Url { url: "https://n.example/mcp".into(), headers: vec![] }).unwrap();
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&p.config).unwrap()).unwrap();
        assert_eq!(keys(&after), ["zeta", "mcpServers", "alpha"]);
        assert_eq!(keys(&after["mcpServers"]), ["b", "a", "m", "new"]);
        assert_eq!(after["mcpServers"]["b"]["x-note"], serde_json::json!({"kept": true}));
        assert_eq!(keys(&after["mcpServers"]["b"]), ["command", "args", "x-note"]);
        assert_eq!(after["alpha"], "kept");
        assert_eq!(after["mcpServers"]["new"], serde_json::json!({"type": "http", "url": "https://n.example/mcp"}));
        let config = Config::load(&p).unwrap();
        assert!(config.server("new").is_some() && config.unreadable.is_empty());
    }

    #[test]
    fn a_name_already_in_the_config_is_refused_and_the_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        let e =
            add_server(&p, "a", &NewServer::Command { command: "x".into(), args: vec![], env: vec![] }).unwrap_err();
        assert!(matches!(&e, EditError::Exists { name, .. } if name == "a"), "{e:?}");
        assert_eq!(std::fs::read_to_string(&p.config).unwrap(), WRITTEN);
    }

    #[test]
    fn an_entry_that_would_not_load_is_refused_with_its_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        let e = add_server(&p, "web", &NewServer::Url { url: "http://example.com/mcp".into(), headers: vec![] })
            .unwrap_err();
        assert!(matches!(&e, EditError::Invalid { field, .. } if field == "mcpServers.web.url"), "{e:?}");
        let e =
            add_server(&p, " ", &NewServer::Command { command: "x".into(), args: vec![], env: vec![] }).unwrap_err();
        assert!(matches!(&e, EditError::Invalid { field, .. } if field == "name"), "{e:?}");
        assert_eq!(std::fs::read_to_string(&p.config).unwrap(), WRITTEN);
    }

    #[test]
    fn removing_a_server_keeps_the_others_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        assert_eq!(remove_server(&p, "b").unwrap(), Vec::<String>::new());
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&p.config).unwrap()).unwrap();
        assert_eq!(keys(&after["mcpServers"]), ["a", "m"]);
        assert_eq!(keys(&after), ["zeta", "mcpServers", "alpha"]);
        assert!(matches!(remove_server(&p, "b"), Err(EditError::NotFound { .. })));
    }

    #[test]
    fn removing_a_server_names_the_secrets_only_it_used() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(
            &p.config,
            r#"{"mcpServers": {"a": {"command": "a", "env": {"K": "${secret:a.key}", "S": "${secret:shared}"}},
                "b": {"url": "https://b.example/mcp", "headers": {"X": "${secret:shared}"}}}}"#,
        )
        .unwrap();
        assert_eq!(remove_server(&p, "a").unwrap(), ["a.key"]);
        assert_eq!(remove_server(&p, "b").unwrap(), ["shared"]);
    }

    #[test]
    fn settings_change_only_their_keys_and_read_back_as_the_servers_settings() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        let mut file = ConfigFile::open(&p).unwrap();
        let mut s = file.settings("b").unwrap();
        assert_eq!(s, SettingsEdit { enabled: true, ..Default::default() });
        s.enabled = false;
        s.era = Some(Era::Legacy);
        s.min_poll_secs = Some(0.5);
        s.max_poll_secs = Some(10.0);
        s.inherit_env = true;
        file.update_settings("b", &s).unwrap();
        file.save().unwrap();
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&p.config).unwrap()).unwrap();
        assert_eq!(
            keys(&after["mcpServers"]["b"]),
            ["command", "args", "x-note", "disabled", "minPollInterval", "maxPollInterval", "era", "inheritEnv"]
        );
        let config = Config::load(&p).unwrap();
        let b = config.disabled.iter().find(|d| d.name == "b").unwrap();
        assert_eq!(b.settings.era, Some(Era::Legacy));
        assert_eq!(b.settings.min_poll, Some(std::time::Duration::from_millis(500)));
        assert_eq!(ConfigFile::open(&p).unwrap().settings("b").unwrap(), s);

        // Back to the defaults: the keys go, the entry is as it was written.
        update_settings(&p, "b", &SettingsEdit { enabled: true, ..Default::default() }).unwrap();
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&p.config).unwrap()).unwrap();
        assert_eq!(keys(&after["mcpServers"]["b"]), ["command", "args", "x-note"]);

        // A value that stays is left as written, in its place.
        let mut a = ConfigFile::open(&p).unwrap().settings("a").unwrap();
        assert_eq!(a.timeout_secs, Some(30.0));
        a.era = Some(Era::Modern);
        update_settings(&p, "a", &a).unwrap();
        let text = std::fs::read_to_string(&p.config).unwrap();
        assert!(text.contains("\"timeout\": 30,"), "{text}");
    }

    #[test]
    fn settings_that_would_not_load_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        let bad =
            SettingsEdit { enabled: true, min_poll_secs: Some(9.0), max_poll_secs: Some(1.0), ..Default::default() };
        let e = update_settings(&p, "m", &bad).unwrap_err();
        assert!(matches!(&e, EditError::Invalid { field, .. } if field == "mcpServers.m.minPollInterval"), "{e:?}");
        let e = update_settings(&p, "a", &SettingsEdit { enabled: true, inherit_env: true, ..Default::default() })
            .unwrap_err();
        assert!(matches!(&e, EditError::Invalid { field, .. } if field.ends_with("inheritEnv")), "{e:?}");
        let e = update_settings(&p, "nope", &SettingsEdit::default()).unwrap_err();
        assert!(matches!(e, EditError::NotFound { .. }));
        assert_eq!(std::fs::read_to_string(&p.config).unwrap(), WRITTEN);
    }

    #[test]
    fn the_first_edit_creates_the_file_with_the_demo_server_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = Paths { config: dir.path().join("new").join("servers.json"), data_dir: dir.path().join("data") };
        add_server(&p, "web", &NewServer::Url { url: "https://w.example/mcp".into(), headers: vec![] }).unwrap();
        let config = Config::load(&p).unwrap();
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [DEMO_SERVER_NAME, "web"]);
        assert_eq!(config.servers[0].endpoint, Config::embedded_default(&p.data_dir).servers[0].endpoint);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p.config).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "a config holds tokens");
        }
    }

    #[test]
    fn a_write_is_atomic_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        #[cfg(unix)]
        let before = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&p.config).unwrap());
        remove_server(&p, "m").unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from("servers.json")], "only the config is left");
        // A new file renamed over the old one, not the old one rewritten in place: a reader sees
        // one or the other.
        #[cfg(unix)]
        assert_ne!(std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&p.config).unwrap()), before);
    }

    #[tokio::test]
    async fn the_config_watcher_sees_an_edit_once_it_is_written() {
        use crate::config::{ConfigStamp, next_config_change};
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, WRITTEN).unwrap();
        let before = ConfigStamp::of(&p.config);
        let path = p.config.clone();
        let last = before.clone();
        let watcher = tokio::spawn(async move {
            next_config_change(&path, &last, Duration::from_millis(20), Duration::from_millis(60)).await
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        add_server(&p, "new", &NewServer::Command { command: "x".into(), args: vec![], env: vec![] }).unwrap();
        let seen = tokio::time::timeout(Duration::from_secs(10), watcher).await.unwrap().unwrap();
        assert_ne!(seen, before);
        assert_eq!(seen, ConfigStamp::of(&p.config), "what the watcher hands on is the new file");
    }

    #[test]
    fn a_file_that_is_not_json_is_not_edited() {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        std::fs::write(&p.config, "{oops").unwrap();
        let e = remove_server(&p, "a").unwrap_err();
        assert!(matches!(e, EditError::Config(ConfigError::Json { .. })), "{e:?}");
        assert_eq!(std::fs::read_to_string(&p.config).unwrap(), "{oops");
    }
}
