//! Where Taskdeck keeps things, and which servers it runs: the `mcpServers` JSON format people
//! already use, with the bundled demo server as the embedded default when no config exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use taskdeck_client::auth::{ClientConfig, Secret};
use taskdeck_client::{Endpoint, HttpSpec, ServerSpec};
use taskdeck_protocol::Era;

/// The file name and data layout every front end shares.
pub const CONFIG_ENV: &str = "TASKDECK_CONFIG";
pub const DATA_DIR_ENV: &str = "TASKDECK_DATA_DIR";
pub const DEMO_SERVER_NAME: &str = "demo";
pub const DEMO_SERVER_BIN: &str = "taskdeck-demo-server";
pub const STORE_FILE: &str = "taskdeck.sqlite3";

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("{file}: cannot read the config: {reason}")]
    Read { file: PathBuf, reason: String },
    #[error("{file}: not valid JSON: {reason}")]
    Json { file: PathBuf, reason: String },
    #[error("{file}: {field}: {reason}")]
    Field { file: PathBuf, field: String, reason: String },
    #[error("no home directory: set {var}{hint}", var = .0, hint = HOME_HINT)]
    NoHome(&'static str),
    #[error("cannot make {path} absolute: {reason}")]
    Absolute { path: PathBuf, reason: String },
}

/// The config and data locations a front end was started with.
#[derive(Debug, Clone, PartialEq)]
pub struct Paths {
    pub config: PathBuf,
    pub data_dir: PathBuf,
}

impl Paths {
    /// Resolves `--config`/`--data-dir`, then `TASKDECK_CONFIG`/`TASKDECK_DATA_DIR`, then the
    /// platform's defaults: on Linux and the BSDs the XDG ones (`$XDG_CONFIG_HOME/taskdeck/servers.json`,
    /// `$XDG_DATA_HOME/taskdeck`), on macOS `~/Library/Application Support/taskdeck`, on Windows
    /// `%APPDATA%\taskdeck` (the config file in it as `servers.json`).
    /// Both paths come back absolute: they are shown to the user and handed to child processes
    /// that run elsewhere.
    pub fn resolve(config: Option<PathBuf>, data_dir: Option<PathBuf>) -> Result<Paths, ConfigError> {
        Self::resolve_with(config, data_dir, |k| std::env::var_os(k).map(PathBuf::from))
    }

    /// [`Paths::resolve`] with the environment passed in, so the fallbacks can be tested.
    pub fn resolve_with(
        config: Option<PathBuf>,
        data_dir: Option<PathBuf>,
        env: impl Fn(&str) -> Option<PathBuf>,
    ) -> Result<Paths, ConfigError> {
        let set = |k: &str| env(k).filter(|v| !v.as_os_str().is_empty());
        let config = match config.or_else(|| set(CONFIG_ENV)) {
            Some(c) => c,
            None => platform::config_home(&set).ok_or(ConfigError::NoHome(CONFIG_ENV))?.join(APP_DIR).join(CONFIG_FILE),
        };
        let data_dir = match data_dir.or_else(|| set(DATA_DIR_ENV)) {
            Some(d) => d,
            None => platform::data_home(&set).ok_or(ConfigError::NoHome(DATA_DIR_ENV))?.join(APP_DIR),
        };
        let absolute = |p: PathBuf| {
            std::path::absolute(&p).map_err(|e| ConfigError::Absolute { path: p.clone(), reason: e.to_string() })
        };
        Ok(Paths { config: absolute(config)?, data_dir: absolute(data_dir)? })
    }

    pub fn store_file(&self) -> PathBuf {
        self.data_dir.join(STORE_FILE)
    }

    /// Where the logs go: with the default data directory, the platform's state folder
    /// (`$XDG_STATE_HOME/taskdeck/logs`, `~/.local/state/taskdeck/logs`, on Linux; inside the data
    /// directory where the platform has no such folder); `<data dir>/logs` beside one given by flag
    /// or `TASKDECK_DATA_DIR` (a test's, a second profile's), so separate stores never share logs.
    pub fn log_dir(&self) -> PathBuf {
        self.log_dir_with(|k| std::env::var_os(k).map(PathBuf::from))
    }

    /// [`Paths::log_dir`] with the environment passed in.
    pub fn log_dir_with(&self, env: impl Fn(&str) -> Option<PathBuf>) -> PathBuf {
        let set = |k: &str| env(k).filter(|v| !v.as_os_str().is_empty());
        let beside_data = self.data_dir.join("logs");
        // What the data directory would have been had none been given: the one resolution decides.
        let unset = |k: &str| if k == DATA_DIR_ENV { None } else { set(k) };
        let default_data = Paths::resolve_with(Some(self.config.clone()), None, unset).ok().map(|p| p.data_dir);
        if default_data.as_deref() != Some(self.data_dir.as_path()) {
            return beside_data;
        }
        platform::state_home(&set).map_or(beside_data, |s| s.join(APP_DIR).join("logs"))
    }
}

/// The folder Taskdeck's config and data live in, inside the platform's own.
const APP_DIR: &str = "taskdeck";
const CONFIG_FILE: &str = "servers.json";

/// Where the platform keeps per-user config and data, read from the environment at each call
/// (tests and users set `XDG_*` per process). The XDG rules are applied here rather than through
/// `directories`, so that the environment given to [`Paths::resolve_with`] is the one obeyed.
#[cfg(not(any(windows, target_os = "macos")))]
mod platform {
    use std::path::PathBuf;

    pub(super) fn config_home(env: &impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        xdg(env, "XDG_CONFIG_HOME", ".config")
    }

    pub(super) fn data_home(env: &impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        xdg(env, "XDG_DATA_HOME", ".local/share")
    }

    pub(super) fn state_home(env: &impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        xdg(env, "XDG_STATE_HOME", ".local/state")
    }

    fn xdg(env: &impl Fn(&str) -> Option<PathBuf>, var: &str, home_suffix: &str) -> Option<PathBuf> {
        // The XDG spec says a relative value must be ignored, as if unset.
        env(var).filter(|p| p.is_absolute()).or_else(|| env("HOME").map(|h| h.join(home_suffix)))
    }
}

/// macOS (`~/Library/Application Support`) and Windows (`%APPDATA%`, the roaming profile) by
/// their own conventions, which `directories` asks the system for.
#[cfg(any(windows, target_os = "macos"))]
mod platform {
    use std::path::PathBuf;

    pub(super) fn config_home(_env: &impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        directories::BaseDirs::new().map(|d| d.config_dir().to_owned())
    }

    pub(super) fn data_home(_env: &impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        directories::BaseDirs::new().map(|d| d.data_dir().to_owned())
    }

    /// Neither has a per-user state folder of the XDG kind: logs stay inside the data directory.
    pub(super) fn state_home(_env: &impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
        None
    }
}

#[cfg(not(any(windows, target_os = "macos")))]
const HOME_HINT: &str = ", XDG_DATA_HOME/XDG_CONFIG_HOME or HOME";
#[cfg(target_os = "macos")]
const HOME_HINT: &str = " or HOME";
#[cfg(windows)]
const HOME_HINT: &str = " (the user profile has no %APPDATA% folder)";

/// Past this a config file is refused unread: a real one is a few kilobytes, and `--config
/// /dev/zero` (or a log file given by mistake) must not grow memory without bound.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The longest `timeout` a server may be given: past a week a plain call is a task in disguise,
/// and the bound keeps the seconds a `Duration` can hold.
const MAX_TIMEOUT_SECS: f64 = 7.0 * 24.0 * 3600.0;
/// The slowest poll a server may be given; past an hour a task looks stuck.
const MAX_POLL_SECS: f64 = 3600.0;

/// The servers to run, in config order, and the entries that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The servers to run. An entry with `"disabled": true` is not among them.
    pub servers: Vec<ServerConfig>,
    /// The entries with `"disabled": true`, in config order: never started, not runnable, listed
    /// so that a front end can show them as disabled.
    pub disabled: Vec<ServerConfig>,
    /// The entries that could not be read, in config order, each with why. One bad entry never
    /// keeps the others from starting.
    pub unreadable: Vec<UnreadableEntry>,
    /// Where they came from: the file, or `None` for the embedded default.
    pub source: Option<PathBuf>,
}

/// One server of the config, as Taskdeck reaches and runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub endpoint: Endpoint,
    pub settings: ServerSettings,
    /// Keys Taskdeck does not know (another host's, or a later Taskdeck's), kept as written.
    pub unknown: Map<String, Value>,
    /// What of the entry was ignored and why, each naming the file, server and field: warnings a
    /// front end shows beside the server.
    pub notes: Vec<String>,
}

/// What one server may be tuned by, beside where it is. The supervisor turns it into that server's
/// session and follow options; `None` everywhere keeps the engine's own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSettings {
    /// `timeout`: how long a tool call the server answers without making a task may take.
    pub call_timeout: Option<Duration>,
    /// `minPollInterval` / `maxPollInterval`: the bounds put on the server's `pollInterval`.
    pub min_poll: Option<Duration>,
    pub max_poll: Option<Duration>,
    /// `era`: the protocol era pinned; detected when `None`.
    pub era: Option<Era>,
    /// `oauth`: how a remote server's sign-in registers (a pre-registered client, scopes, the
    /// redirect port). Its secret is a [`Secret`], so no debug output of a config shows it.
    pub oauth: Option<ClientConfig>,
    /// `sampling`: what the server's requests for a language model's reply get (`"ask"`, the
    /// default; `{"auto": {"maxTokensPerTask": N}}`; `"refuse"`).
    pub sampling: crate::sampling::SamplingPolicy,
}

/// A config entry that could not be read: listed with its error, never started.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadableEntry {
    pub name: String,
    /// The transport the entry asks for as far as it can be told (`stdio`, `http`, `sse`), for display.
    pub transport: Option<&'static str>,
    /// Always [`ConfigError::Field`]: the file, the field and the reason.
    pub error: ConfigError,
}

impl Config {
    /// Loads the config file; a missing file means the embedded default (the demo server).
    pub fn load(paths: &Paths) -> Result<Config, ConfigError> {
        match read_limited(&paths.config) {
            Ok(text) => Self::parse(&paths.config, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::embedded_default(&paths.data_dir)),
            Err(e) => Err(ConfigError::Read { file: paths.config.clone(), reason: e.to_string() }),
        }
    }

    /// No servers, from `source`: what a front end runs with while the config file is broken.
    pub fn empty(source: Option<PathBuf>) -> Config {
        Config { servers: Vec::new(), disabled: Vec::new(), unreadable: Vec::new(), source }
    }

    /// The first-launch default: one server, the bundled demo task server, keeping its state inside
    /// Taskdeck's data directory.
    pub fn embedded_default(data_dir: &Path) -> Config {
        let spec = ServerSpec {
            name: DEMO_SERVER_NAME.into(),
            command: demo_server_command().display().to_string(),
            args: vec!["--state".into(), data_dir.join("demo-server").display().to_string()],
            env: BTreeMap::new(),
            cwd: None,
            inherit_env: false,
        };
        Config {
            servers: vec![ServerConfig {
                name: DEMO_SERVER_NAME.into(),
                endpoint: Endpoint::Stdio(spec),
                settings: ServerSettings::default(),
                unknown: Map::new(),
                notes: Vec::new(),
            }],
            ..Config::empty(None)
        }
    }

    /// Reads a config's text, `${env:NAME}` references resolved from Taskdeck's environment. Only a
    /// file that is not JSON or has no `mcpServers` object is an error as a whole; a bad entry is
    /// listed in [`Config::unreadable`].
    pub fn parse(file: &Path, text: &str) -> Result<Config, ConfigError> {
        Self::parse_with(file, text, |name| std::env::var(name).ok())
    }

    /// [`Config::parse`] with the environment passed in.
    pub fn parse_with(file: &Path, text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let whole = |reason: &str| ConfigError::Field {
            file: file.to_owned(),
            field: "mcpServers".into(),
            reason: reason.to_owned(),
        };
        let root: Value = serde_json::from_str(text)
            .map_err(|e| ConfigError::Json { file: file.to_owned(), reason: e.to_string() })?;
        let servers = root
            .get("mcpServers")
            .ok_or_else(|| whole("missing: the file must have an \"mcpServers\" object"))?
            .as_object()
            .ok_or_else(|| whole("must be an object of servers by name"))?;
        let mut config = Config::empty(Some(file.to_owned()));
        for (name, entry) in servers {
            let reader = Entry { file, name, env: &env };
            match reader.read(entry) {
                Ok((server, false)) => config.servers.push(server),
                Ok((server, true)) => config.disabled.push(server),
                Err(error) => config.unreadable.push(UnreadableEntry {
                    name: name.clone(),
                    transport: entry.as_object().and_then(transport_hint),
                    error,
                }),
            }
        }
        Ok(config)
    }

    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The entry named `name` if it could not be read.
    pub fn unreadable_entry(&self, name: &str) -> Option<&UnreadableEntry> {
        self.unreadable.iter().find(|u| u.name == name)
    }
}

/// Keys every entry may have, whatever its transport.
const COMMON_KEYS: &[&str] = &["type", "disabled", "timeout", "minPollInterval", "maxPollInterval", "era", "sampling"];
/// Keys of a local server started as a process.
const STDIO_KEYS: &[&str] = &["command", "args", "env", "envFile", "cwd", "inheritEnv"];
/// Keys of a remote server.
const HTTP_KEYS: &[&str] = &["url", "headers", "oauth"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Transport {
    Stdio,
    Http,
}

/// What an entry that could not be read asked for, so a list of entries can still say it.
fn transport_hint(entry: &Map<String, Value>) -> Option<&'static str> {
    match entry.get("type").and_then(Value::as_str) {
        Some("stdio") => Some("stdio"),
        Some("http" | "streamable-http") => Some("http"),
        Some("sse") => Some("sse"),
        Some(_) => None,
        None if entry.contains_key("url") && !entry.contains_key("command") => Some("http"),
        None if entry.contains_key("command") && !entry.contains_key("url") => Some("stdio"),
        None => None,
    }
}

/// One entry of `mcpServers` being read: where it is, for its errors and notes.
struct Entry<'a, E: Fn(&str) -> Option<String>> {
    file: &'a Path,
    name: &'a str,
    env: &'a E,
}

impl<E: Fn(&str) -> Option<String>> Entry<'_, E> {
    /// `mcpServers.NAME.FIELD`, or the entry itself for an empty field.
    fn at(&self, field: &str) -> String {
        if field.is_empty() { format!("mcpServers.{}", self.name) } else { format!("mcpServers.{}.{field}", self.name) }
    }

    fn err(&self, field: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Field { file: self.file.to_owned(), field: self.at(field), reason: reason.into() }
    }

    fn note(&self, field: &str, what: &str) -> String {
        format!("{}: {}: {what}", self.file.display(), self.at(field))
    }

    /// The server, and whether it is disabled.
    fn read(&self, entry: &Value) -> Result<(ServerConfig, bool), ConfigError> {
        if self.name.trim().is_empty() {
            return Err(self.err("", "a server name must not be empty"));
        }
        let entry = entry.as_object().ok_or_else(|| self.err("", "must be an object"))?;
        let transport = self.transport(entry)?;
        let endpoint = match transport {
            Transport::Stdio => Endpoint::Stdio(self.stdio(entry)?),
            Transport::Http => Endpoint::Http(self.http(entry)?),
        };
        let settings = self.settings(entry)?;
        let disabled = self.flag(entry, "disabled")?;
        let (own, other, other_kind) = match transport {
            Transport::Stdio => (STDIO_KEYS, HTTP_KEYS, "remote"),
            Transport::Http => (HTTP_KEYS, STDIO_KEYS, "local"),
        };
        let mut unknown = Map::new();
        let mut notes = Vec::new();
        for (key, value) in entry {
            if COMMON_KEYS.contains(&key.as_str()) || own.contains(&key.as_str()) {
                continue;
            }
            if other.contains(&key.as_str()) {
                notes.push(self.note(key, &format!("applies to {other_kind} servers only; ignored")));
            } else {
                notes.push(self.note(key, "unknown key; ignored"));
                unknown.insert(key.clone(), value.clone());
            }
        }
        Ok((ServerConfig { name: self.name.to_owned(), endpoint, settings, unknown, notes }, disabled))
    }

    fn transport(&self, entry: &Map<String, Value>) -> Result<Transport, ConfigError> {
        let ty = match entry.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.as_str()),
            Some(_) => return Err(self.err("type", "must be a string")),
        };
        match ty {
            Some("stdio") => Ok(Transport::Stdio),
            Some("http" | "streamable-http") => Ok(Transport::Http),
            Some("sse") => Err(self.err(
                "type",
                "\"sse\" is the old HTTP+SSE transport, which Taskdeck does not speak; if the server also \
                 offers Streamable HTTP, give that endpoint's URL with \"type\": \"http\"",
            )),
            Some(other) => Err(self.err(
                "type",
                format!("unknown transport {other:?} (expected \"stdio\", \"http\" or \"streamable-http\")"),
            )),
            None => match (entry.contains_key("command"), entry.contains_key("url")) {
                (true, true) => Err(self.err(
                    "",
                    "has both \"command\" and \"url\": give one, or say which with \"type\": \"stdio\" or \"http\"",
                )),
                (false, true) => Ok(Transport::Http),
                // Without either, reading it as stdio says what is missing.
                _ => Ok(Transport::Stdio),
            },
        }
    }

    fn string<'v>(&self, entry: &'v Map<String, Value>, key: &str) -> Result<Option<&'v str>, ConfigError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }

    fn flag(&self, entry: &Map<String, Value>, key: &str) -> Result<bool, ConfigError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err(key, "must be true or false")),
        }
    }

    /// A duration in seconds (fractions allowed), over zero and at most `max`.
    fn seconds(&self, entry: &Map<String, Value>, key: &str, max: f64) -> Result<Option<Duration>, ConfigError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(s) if s > 0.0 && s <= max => Ok(Some(Duration::from_secs_f64(s))),
                _ => Err(self.err(key, format!("must be a number of seconds over 0 and at most {max}"))),
            },
            Some(_) => Err(self.err(key, "must be a number of seconds")),
        }
    }

    /// Relative paths are taken relative to the config file.
    fn beside_config(&self, path: &str) -> PathBuf {
        let p = PathBuf::from(path);
        if p.is_relative() { self.file.parent().unwrap_or(Path::new(".")).join(p) } else { p }
    }

    fn settings(&self, entry: &Map<String, Value>) -> Result<ServerSettings, ConfigError> {
        let min_poll = self.seconds(entry, "minPollInterval", MAX_POLL_SECS)?;
        let max_poll = self.seconds(entry, "maxPollInterval", MAX_POLL_SECS)?;
        if let (Some(min), Some(max)) = (min_poll, max_poll)
            && min > max
        {
            return Err(self.err("minPollInterval", "must not be over maxPollInterval"));
        }
        let era = match self.string(entry, "era")? {
            None | Some("detected") => None,
            Some(e) => Some(e.parse::<Era>().map_err(|reason| {
                self.err("era", format!("{reason}; leave it out (or \"detected\") to detect the era"))
            })?),
        };
        let oauth = match entry.get("oauth") {
            None | Some(Value::Null) => None,
            Some(Value::Object(o)) => Some(self.oauth(o)?),
            Some(_) => return Err(self.err("oauth", "must be an object")),
        };
        let sampling = match entry.get("sampling") {
            None | Some(Value::Null) => Default::default(),
            Some(v) => {
                crate::sampling::SamplingPolicy::from_config(v).map_err(|reason| self.err("sampling", reason))?
            }
        };
        Ok(ServerSettings {
            call_timeout: self.seconds(entry, "timeout", MAX_TIMEOUT_SECS)?,
            min_poll,
            max_poll,
            era,
            oauth,
            sampling,
        })
    }

    /// `{"clientId", "clientSecret", "scopes", "redirectPort"}`; the secret may be `${env:NAME}`
    /// (and is never quoted back). Unknown keys are noted by nobody: the object is the sign-in's.
    fn oauth(&self, o: &Map<String, Value>) -> Result<ClientConfig, ConfigError> {
        let text = |key: &str| -> Result<Option<String>, ConfigError> {
            let field = format!("oauth.{key}");
            match o.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(v)) if v.trim().is_empty() => Err(self.err(&field, "must not be empty")),
                Some(Value::String(v)) => {
                    let v = expand_env(v, self.env).map_err(|reason| self.err(&field, reason))?;
                    if v.chars().any(char::is_control) {
                        return Err(self.err(&field, "must not hold control characters"));
                    }
                    Ok(Some(v))
                }
                Some(_) => Err(self.err(&field, "must be a string")),
            }
        };
        let client_id = text("clientId")?;
        let client_secret = text("clientSecret")?.map(Secret::new);
        if client_secret.is_some() && client_id.is_none() {
            return Err(self.err("oauth.clientSecret", "is given without oauth.clientId"));
        }
        let scopes = match o.get("scopes") {
            None | Some(Value::Null) => Vec::new(),
            // One space-separated string, as OAuth writes scopes, or a list.
            Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| match v.as_str() {
                    Some(s) if !s.is_empty() && !s.contains(char::is_whitespace) => Ok(s.to_owned()),
                    _ => Err(self.err(&format!("oauth.scopes[{i}]"), "must be a scope: a string without spaces")),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(self.err("oauth.scopes", "must be a list of scopes")),
        };
        let redirect_port = match o.get("redirectPort") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_u64().and_then(|p| u16::try_from(p).ok()).filter(|p| *p > 0) {
                Some(p) => Some(p),
                None => return Err(self.err("oauth.redirectPort", "must be a port number from 1 to 65535")),
            },
            Some(_) => return Err(self.err("oauth.redirectPort", "must be a port number")),
        };
        Ok(ClientConfig { client_id, client_secret, scopes, redirect_port, metadata_document: None })
    }

    fn stdio(&self, entry: &Map<String, Value>) -> Result<ServerSpec, ConfigError> {
        let command = match self.string(entry, "command")? {
            Some(c) if !c.trim().is_empty() => c.to_owned(),
            Some(_) => return Err(self.err("command", "must not be empty")),
            None if entry.get("type").and_then(Value::as_str) == Some("stdio") => {
                return Err(self.err("command", "missing"));
            }
            None => {
                return Err(
                    self.err("command", "missing: give \"command\" for a local server or \"url\" for a remote one")
                );
            }
        };
        let args = match entry.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().map(str::to_owned).ok_or_else(|| self.err(&format!("args[{i}]"), "must be a string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(self.err("args", "must be an array of strings")),
        };
        // The file's variables first, so that `env` can override one of them.
        let mut env = match self.string(entry, "envFile")? {
            None => BTreeMap::new(),
            Some(f) => {
                let path = self.beside_config(f);
                let text = read_limited(&path)
                    .map_err(|e| self.err("envFile", format!("cannot read {}: {e}", path.display())))?;
                parse_env_file(&text).map_err(|e| self.err("envFile", format!("{}: {e}", path.display())))?
            }
        };
        match entry.get("env") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => return Err(self.err(&format!("env.{k}"), "must be a string")),
                    };
                    env.insert(k.clone(), v);
                }
            }
            Some(_) => return Err(self.err("env", "must be an object of strings")),
        }
        let cwd = self.string(entry, "cwd")?.map(|c| self.beside_config(c));
        let inherit_env = self.flag(entry, "inheritEnv")?;
        Ok(ServerSpec { name: self.name.to_owned(), command, args, env, cwd, inherit_env })
    }

    fn http(&self, entry: &Map<String, Value>) -> Result<HttpSpec, ConfigError> {
        let url = match self.string(entry, "url")? {
            Some(u) => u.trim().to_owned(),
            None => return Err(self.err("url", "missing: a remote server needs the URL of its MCP endpoint")),
        };
        check_url(&url).map_err(|reason| self.err("url", reason))?;
        let mut headers = BTreeMap::new();
        match entry.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let field = format!("headers.{k}");
                    check_header_name(k).map_err(|reason| self.err(&field, reason))?;
                    let Value::String(v) = v else { return Err(self.err(&field, "must be a string")) };
                    // The value is never quoted back: it may be a secret.
                    let value = expand_env(v, self.env).map_err(|reason| self.err(&field, reason))?;
                    if value.chars().any(|c| c.is_control() && c != '\t') {
                        return Err(self.err(&field, "must not hold line breaks or other control characters"));
                    }
                    headers.insert(k.clone(), value);
                }
            }
            Some(_) => return Err(self.err("headers", "must be an object of strings")),
        }
        Ok(HttpSpec { name: self.name.to_owned(), url, headers, sign_in: Default::default() })
    }
}

/// An endpoint URL Taskdeck will send requests to: `http(s)://host[:port][/path]`.
///
/// Plain `http` is allowed only to this machine (`localhost`, `127.0.0.0/8`, `[::1]`): to any other
/// host it would carry the headers (API keys, tokens) and every message in clear text across the
/// network, while a local development server seldom has a certificate. Credentials in the URL are
/// refused because the URL is what the Servers view, `servers` and the logs show.
fn check_url(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    let (scheme, rest) = url.split_once("://").ok_or("must be an http:// or https:// URL")?;
    let secure = if scheme.eq_ignore_ascii_case("https") {
        true
    } else if scheme.eq_ignore_ascii_case("http") {
        false
    } else if scheme.eq_ignore_ascii_case("ws") || scheme.eq_ignore_ascii_case("wss") {
        return Err("WebSocket URLs are not an MCP transport Taskdeck speaks; give the http(s):// endpoint".into());
    } else {
        return Err(format!("must be an http:// or https:// URL, not {scheme}://"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("must not hold a user name or password (the URL is shown and logged); send credentials in \
                    \"headers\""
            .into());
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let (host, after) = inner.split_once(']').ok_or("has an unclosed [ in its host")?;
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("host [{host}] is not an IPv6 address"));
        }
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':').ok_or("has text after its host's ]")?)),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("has no host".into());
    }
    if !authority.starts_with('[') && !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
        return Err(format!("host {host:?} is not a host name or address"));
    }
    if let Some(port) = port
        && !(port.len() <= 5
            && port.chars().all(|c| c.is_ascii_digit())
            && matches!(port.parse::<u32>(), Ok(1..=65535)))
    {
        return Err(format!("port {port:?} is not a number from 1 to 65535"));
    }
    if !secure && !is_loopback(host) {
        return Err(format!(
            "plain http:// is allowed only to this machine (localhost, 127.0.0.1, [::1]); for {host} use https://, \
             so that the headers and messages are not sent across the network unencrypted"
        ));
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback())
        || host.parse::<std::net::Ipv6Addr>().is_ok_and(|a| a.is_loopback())
}

/// Header names are HTTP tokens; those that frame the message or carry MCP's own state are the
/// transport's to send.
fn check_header_name(name: &str) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err("is not a valid header name".into());
    }
    let lower = name.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "host" | "content-length" | "content-type" | "transfer-encoding" | "connection" | "last-event-id"
    ) || lower.starts_with("mcp-")
    {
        return Err("is set by Taskdeck's transport and cannot be configured".into());
    }
    Ok(())
}

/// Replaces each `${env:NAME}` with the variable's value. A variable that is unset or empty is an
/// error naming it: sending `Bearer ` with no token would only earn a puzzling 401.
fn expand_env(value: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(name_and_rest) = after.strip_prefix("env:") else {
            return Err("only ${env:NAME} references are supported in header values".into());
        };
        let end = name_and_rest.find('}').ok_or("has an unclosed ${env:")?;
        let name = &name_and_rest[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("${{env:{name}}} does not name an environment variable"));
        }
        match env(name) {
            Some(v) if !v.is_empty() => out.push_str(&v),
            _ => return Err(format!("the environment variable {name} (from ${{env:{name}}}) is not set")),
        }
        rest = &name_and_rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A dotenv-style file: `KEY=VALUE` lines, `#` comments, an optional `export `, values optionally
/// in single or double quotes (taken as written), an unquoted value ending at ` #`.
fn parse_env_file(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut vars = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map(str::trim_start).unwrap_or(line);
        let (key, value) = line.split_once('=').ok_or_else(|| format!("line {}: expected NAME=VALUE", i + 1))?;
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("line {}: {key:?} is not a variable name", i + 1));
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let inner = &value[1..];
                let end = inner.find(q).ok_or_else(|| format!("line {}: the value's quote is not closed", i + 1))?;
                let after = inner[end + 1..].trim_start();
                if !(after.is_empty() || after.starts_with('#')) {
                    return Err(format!("line {}: text after the quoted value", i + 1));
                }
                &inner[..end]
            }
            _ => value.split(" #").next().unwrap_or_default().trim_end(),
        };
        vars.insert(key.to_owned(), value.to_owned());
    }
    Ok(vars)
}

/// What the config file holds now, to be compared with what it held: the watcher reloads when it
/// changes. By content, not modification time, so that a save that changes nothing (or a clock
/// that steps back) never restarts a server, and two saves within a timestamp's grain are seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigStamp {
    Missing,
    Unreadable(String),
    Text(u64),
}

impl ConfigStamp {
    pub fn of(path: &Path) -> ConfigStamp {
        use std::hash::{Hash, Hasher};
        match read_limited(path) {
            Ok(text) => {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                text.hash(&mut h);
                ConfigStamp::Text(h.finish())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ConfigStamp::Missing,
            Err(e) => ConfigStamp::Unreadable(e.to_string()),
        }
    }
}

/// Waits until the config file differs from `last` and then holds still for `settle` (an editor
/// saves in steps: truncate, write, rename), looking every `every`. Returns what it holds then.
pub async fn next_config_change(path: &Path, last: &ConfigStamp, every: Duration, settle: Duration) -> ConfigStamp {
    let stamp = |p: PathBuf| async move {
        tokio::task::spawn_blocking(move || ConfigStamp::of(&p))
            .await
            .unwrap_or_else(|e| ConfigStamp::Unreadable(e.to_string()))
    };
    loop {
        tokio::time::sleep(every).await;
        let mut seen = stamp(path.to_owned()).await;
        if seen == *last {
            continue;
        }
        loop {
            tokio::time::sleep(settle).await;
            let now = stamp(path.to_owned()).await;
            if now == seen {
                break;
            }
            seen = now;
        }
        if seen != *last {
            return seen;
        }
    }
}

/// The config file's text: refused unread when it is not a regular file (a named pipe would block
/// the read forever, a device never end it) and when it is over [`MAX_CONFIG_BYTES`], however it
/// grows while being read.
fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    taskdeck_store::private_fs::check_regular(path)?;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} KiB; a config is a few kilobytes", MAX_CONFIG_BYTES / 1024),
        ));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// The demo server ships beside the Taskdeck binaries (in `target/<profile>/` during development,
/// in `/usr/bin` when installed); falls back to `PATH`.
pub fn demo_server_command() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let dir = exe.parent()?;
            // Test binaries live one level deeper, in target/<profile>/deps.
            let file = format!("{DEMO_SERVER_BIN}{}", std::env::consts::EXE_SUFFIX);
            [dir.join(&file), dir.parent()?.join(&file)].into_iter().find(|p| p.exists())
        })
        .unwrap_or_else(|| PathBuf::from(DEMO_SERVER_BIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/etc/x/servers.json";

    fn parse(text: &str) -> Result<Config, ConfigError> {
        parse_env(text, &[])
    }

    fn parse_env(text: &str, vars: &'static [(&'static str, &'static str)]) -> Result<Config, ConfigError> {
        Config::parse_with(Path::new(FILE), text, |name| {
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        })
    }

    fn stdio(s: &ServerConfig) -> &ServerSpec {
        match &s.endpoint {
            Endpoint::Stdio(spec) => spec,
            other => panic!("not a stdio server: {other:?}"),
        }
    }

    fn http(s: &ServerConfig) -> &HttpSpec {
        match &s.endpoint {
            Endpoint::Http(spec) => spec,
            other => panic!("not an http server: {other:?}"),
        }
    }

    /// The error of the one entry, which must have been listed as unreadable.
    fn entry_error(text: &str) -> String {
        let c = parse(text).unwrap();
        assert!(c.servers.is_empty() && c.disabled.is_empty(), "{c:?}");
        assert_eq!(c.unreadable.len(), 1, "{c:?}");
        c.unreadable[0].error.to_string()
    }

    #[test]
    fn reads_the_mcp_servers_format() {
        let c = parse(
            r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v", "N": 3}, "cwd": "sub"}}}"#,
        )
        .unwrap();
        let s = stdio(&c.servers[0]);
        assert_eq!((c.servers[0].name.as_str(), s.name.as_str(), s.command.as_str()), ("files", "files", "npx"));
        assert_eq!(s.args, vec!["-y", "server"]);
        assert_eq!(s.env.get("N").map(String::as_str), Some("3"));
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/etc/x/sub")));
        assert_eq!(c.servers[0].settings, ServerSettings::default());
        assert!(c.servers[0].notes.is_empty() && c.unreadable.is_empty());
        let c = parse(r#"{"mcpServers": {"files": {"type": "stdio", "command": "npx"}}}"#).unwrap();
        assert_eq!(stdio(&c.servers[0]).command, "npx");
    }

    #[test]
    fn errors_name_the_file_the_server_and_the_field() {
        let e = entry_error(r#"{"mcpServers": {"files": {"command": "x", "args": ["a", 2]}}}"#);
        assert_eq!(e, "/etc/x/servers.json: mcpServers.files.args[1]: must be a string");
        let e = entry_error(r#"{"mcpServers": {"files": {"args": []}}}"#);
        assert!(e.starts_with("/etc/x/servers.json: mcpServers.files.command: missing"), "{e}");
        let e = entry_error(r#"{"mcpServers": {"files": {"type": "stdio", "url": "https://x"}}}"#);
        assert_eq!(e, "/etc/x/servers.json: mcpServers.files.command: missing");
        let e = entry_error(r#"{"mcpServers": {"files": 3}}"#);
        assert_eq!(e, "/etc/x/servers.json: mcpServers.files: must be an object");
        let e = entry_error(r#"{"mcpServers": {" ": {"command": "x"}}}"#);
        assert!(e.contains("must not be empty"), "{e}");
        let e = entry_error(r#"{"mcpServers": {"x": {"command": "a", "url": "https://h"}}}"#);
        assert!(e.contains("mcpServers.x: has both \"command\" and \"url\""), "{e}");
        let e = entry_error(r#"{"mcpServers": {"x": {"type": "websocket", "url": "https://h"}}}"#);
        assert!(e.contains("mcpServers.x.type: unknown transport \"websocket\""), "{e}");
        let e = entry_error(r#"{"mcpServers": {"x": {"type": 1, "url": "https://h"}}}"#);
        assert!(e.contains("mcpServers.x.type: must be a string"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_json_or_has_no_mcp_servers_is_refused_whole() {
        assert!(matches!(parse("{oops"), Err(ConfigError::Json { .. })));
        let e = parse(r#"{"servers": {}}"#).unwrap_err();
        assert!(e.to_string().contains("mcpServers: missing"), "{e}");
        let e = parse(r#"{"mcpServers": []}"#).unwrap_err();
        assert!(e.to_string().contains("mcpServers: must be an object"), "{e}");
    }

    #[test]
    fn one_bad_entry_leaves_every_good_server_in_the_config() {
        let c = parse(
            r#"{"mcpServers": {"a": {"command": "a"}, "bad": {"command": 7}, "old": {"type": "sse", "url": "https://h/sse"},
                "web": {"url": "https://h/mcp"}, "off": {"command": "b", "disabled": true}}}"#,
        )
        .unwrap();
        assert_eq!(c.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a", "web"]);
        assert_eq!(c.disabled.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["off"]);
        let bad: Vec<_> = c.unreadable.iter().map(|u| (u.name.as_str(), u.transport)).collect();
        assert_eq!(bad, [("bad", Some("stdio")), ("old", Some("sse"))]);
        assert!(
            matches!(&c.unreadable[0].error, ConfigError::Field { field, .. } if field == "mcpServers.bad.command")
        );
        assert_eq!(c.unreadable_entry("old").map(|u| u.name.as_str()), Some("old"));
        assert!(c.server("bad").is_none());
    }

    #[test]
    fn a_url_entry_is_a_remote_server_with_or_without_its_type() {
        for entry in [
            r#"{"url": "https://mcp.example.com/mcp"}"#,
            r#"{"type": "http", "url": "https://mcp.example.com/mcp"}"#,
            r#"{"type": "streamable-http", "url": " https://mcp.example.com/mcp "}"#,
        ] {
            let c = parse(&format!(r#"{{"mcpServers": {{"web": {entry}}}}}"#)).unwrap();
            let h = http(&c.servers[0]);
            assert_eq!((h.name.as_str(), h.url.as_str()), ("web", "https://mcp.example.com/mcp"), "{entry}");
            assert!(h.headers.is_empty());
            assert_eq!(c.servers[0].endpoint.kind(), "http");
        }
        let e = entry_error(r#"{"mcpServers": {"web": {"type": "http"}}}"#);
        assert!(e.contains("mcpServers.web.url: missing"), "{e}");
        let e = entry_error(r#"{"mcpServers": {"web": {"url": 5}}}"#);
        assert!(e.contains("mcpServers.web.url: must be a string"), "{e}");
    }

    #[test]
    fn the_old_sse_transport_is_refused_by_name() {
        let e = entry_error(r#"{"mcpServers": {"old": {"type": "sse", "url": "https://h/sse"}}}"#);
        assert!(e.contains("mcpServers.old.type: \"sse\" is the old HTTP+SSE transport"), "{e}");
    }

    #[test]
    fn urls_must_be_http_s_with_a_host_and_plain_http_only_to_this_machine() {
        for ok in [
            "https://h.example/mcp",
            "https://h.example:8443",
            "http://127.0.0.1:1/mcp",
            "http://localhost:3000/mcp",
            "HTTP://LOCALHOST/mcp",
            "http://[::1]:8080/mcp",
            "http://127.5.0.1/x?y=1",
            "https://[2001:db8::1]/mcp",
        ] {
            assert_eq!(check_url(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("mcp.example.com/mcp", "http:// or https://"),
            ("ftp://h/x", "not ftp://"),
            ("wss://h/x", "WebSocket"),
            ("https:///mcp", "no host"),
            ("https://:443/mcp", "no host"),
            ("https://user:pw@h/mcp", "user name or password"),
            ("https://h:0/mcp", "port"),
            ("https://h:99999/mcp", "port"),
            ("https://h:x/mcp", "port"),
            ("https://h x/mcp", "spaces"),
            ("https://[::1/mcp", "unclosed"),
            ("https://[nope]/mcp", "IPv6"),
            ("https://h%41/mcp", "not a host name"),
            ("http://mcp.example.com/mcp", "only to this machine"),
            ("http://10.0.0.1/mcp", "only to this machine"),
        ] {
            let e = check_url(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = entry_error(r#"{"mcpServers": {"web": {"url": "http://example.com/mcp"}}}"#);
        assert!(e.starts_with("/etc/x/servers.json: mcpServers.web.url: plain http://"), "{e}");
    }

    #[test]
    fn headers_resolve_env_references_at_load_and_a_missing_one_is_named() {
        let text = r#"{"mcpServers": {"web": {"url": "https://h/mcp",
            "headers": {"Authorization": "Bearer ${env:API_TOKEN}", "X-Team": "${env:TEAM}-${env:TEAM}", "X-Plain": "v"}}}}"#;
        let c = parse_env(text, &[("API_TOKEN", "s3cret"), ("TEAM", "ops")]).unwrap();
        let h = &http(&c.servers[0]).headers;
        assert_eq!(h.get("Authorization").map(String::as_str), Some("Bearer s3cret"));
        assert_eq!(h.get("X-Team").map(String::as_str), Some("ops-ops"));
        assert_eq!(h.get("X-Plain").map(String::as_str), Some("v"));

        let c = parse_env(text, &[("TEAM", "ops")]).unwrap();
        assert!(c.servers.is_empty());
        let e = c.unreadable[0].error.to_string();
        assert!(e.contains("mcpServers.web.headers.Authorization") && e.contains("API_TOKEN"), "{e}");
        let c = parse_env(text, &[("API_TOKEN", ""), ("TEAM", "ops")]).unwrap();
        assert!(c.unreadable[0].error.to_string().contains("API_TOKEN"), "an empty variable is as good as unset");
    }

    #[test]
    fn bad_headers_are_errors_that_never_quote_the_value() {
        let err = |headers: &str| {
            let c = parse_env(
                &format!(r#"{{"mcpServers": {{"web": {{"url": "https://h/mcp", "headers": {headers}}}}}}}"#),
                &[("LINE", "a\r\nInjected: yes")],
            )
            .unwrap();
            c.unreadable[0].error.to_string()
        };
        assert!(err(r#"["a"]"#).contains("headers: must be an object of strings"));
        assert!(err(r#"{"X-Key": 5}"#).contains("headers.X-Key: must be a string"));
        assert!(err(r#"{"Bad Name": "v"}"#).contains("not a valid header name"));
        assert!(err(r#"{"Mcp-Session-Id": "v"}"#).contains("set by Taskdeck's transport"));
        assert!(err(r#"{"content-length": "1"}"#).contains("set by Taskdeck's transport"));
        let e = err(r#"{"X-Key": "top${env:LINE}secret"}"#);
        assert!(e.contains("control characters") && !e.contains("secret") && !e.contains("Injected"), "{e}");
        assert!(err(r#"{"X-Key": "${input:token}"}"#).contains("only ${env:NAME}"));
        assert!(err(r#"{"X-Key": "${env:OPEN"}"#).contains("unclosed"));
        assert!(err(r#"{"X-Key": "${env:}"}"#).contains("does not name"));
    }

    #[test]
    fn per_server_settings_are_read_and_checked() {
        let c = parse(
            r#"{"mcpServers": {"a": {"command": "a", "timeout": 90, "minPollInterval": 0.5, "maxPollInterval": 10, "era": "legacy"},
                "b": {"url": "https://h/mcp", "era": "modern"}, "c": {"command": "c", "era": "detected"}}}"#,
        )
        .unwrap();
        assert_eq!(
            c.servers[0].settings,
            ServerSettings {
                call_timeout: Some(Duration::from_secs(90)),
                min_poll: Some(Duration::from_millis(500)),
                max_poll: Some(Duration::from_secs(10)),
                era: Some(Era::Legacy),
                oauth: None,
                sampling: Default::default(),
            }
        );
        assert_eq!(c.servers[1].settings.era, Some(Era::Modern));
        assert_eq!(c.servers[2].settings.era, None);
        for (entry, field, why) in [
            (r#""timeout": 0"#, "timeout", "over 0"),
            (r#""timeout": -3"#, "timeout", "over 0"),
            (r#""timeout": "90""#, "timeout", "number of seconds"),
            (r#""timeout": 1e12"#, "timeout", "at most"),
            (r#""maxPollInterval": 7200"#, "maxPollInterval", "at most"),
            (r#""minPollInterval": 5, "maxPollInterval": 1"#, "minPollInterval", "not be over maxPollInterval"),
            (r#""era": "ancient""#, "era", "unknown era"),
            (r#""sampling": "always""#, "sampling", "not a sampling policy"),
            (r#""era": true"#, "era", "must be a string"),
        ] {
            let e = entry_error(&format!(r#"{{"mcpServers": {{"a": {{"command": "a", {entry}}}}}}}"#));
            assert!(e.contains(&format!("mcpServers.a.{field}: ")) && e.contains(why), "{entry}: {e}");
        }
    }

    #[test]
    fn unknown_keys_are_kept_and_noted_not_refused() {
        let c = parse(
            r#"{"mcpServers": {"a": {"command": "a", "alwaysAllow": ["x"], "headers": {"K": "v"}},
                "web": {"url": "https://h/mcp", "env": {"K": "v"}, "oauth": {"clientId": "c"}}}}"#,
        )
        .unwrap();
        let a = &c.servers[0];
        assert_eq!(a.unknown.get("alwaysAllow"), Some(&serde_json::json!(["x"])));
        assert_eq!(
            a.notes,
            [
                "/etc/x/servers.json: mcpServers.a.alwaysAllow: unknown key; ignored",
                "/etc/x/servers.json: mcpServers.a.headers: applies to remote servers only; ignored",
            ]
        );
        let web = &c.servers[1];
        assert!(web.notes.iter().any(|n| n.contains("mcpServers.web.env: applies to local servers only")), "{web:?}");
        assert!(!web.unknown.contains_key("oauth") && !web.notes.iter().any(|n| n.contains("oauth")), "{web:?}");
        assert_eq!(web.settings.oauth.as_ref().and_then(|o| o.client_id.as_deref()), Some("c"));
    }

    #[test]
    fn oauth_settings_are_read_with_the_secret_from_the_environment_and_never_shown() {
        let env = |name: &str| (name == "WEB_SECRET").then(|| "s3cr3t-value".to_owned());
        let c = Config::parse_with(
            Path::new("/etc/x/servers.json"),
            r#"{"mcpServers": {"web": {"url": "https://h/mcp", "oauth": {"clientId": "c1",
                "clientSecret": "${env:WEB_SECRET}", "scopes": "read write", "redirectPort": 8765}},
                "bad": {"url": "https://h/mcp", "oauth": {"redirectPort": 70000}}}}"#,
            env,
        )
        .unwrap();
        let oauth = c.servers[0].settings.oauth.clone().unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("c1"));
        assert_eq!(oauth.client_secret.as_ref().map(Secret::expose), Some("s3cr3t-value"));
        assert_eq!((oauth.scopes, oauth.redirect_port), (vec!["read".to_owned(), "write".to_owned()], Some(8765)));
        assert!(!format!("{:?}", c.servers[0]).contains("s3cr3t"));
        let bad = &c.unreadable[0];
        assert!(bad.error.to_string().contains("mcpServers.bad.oauth.redirectPort"), "{bad:?}");
    }

    #[test]
    fn an_env_file_beside_the_config_gives_variables_that_env_overrides() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("server.env"),
            "# comment\nexport A=1\nB = \"two words\" # note\nC='x#y'\nD=plain # trailing\n\nE=\n",
        )
        .unwrap();
        let file = dir.path().join("servers.json");
        let text = r#"{"mcpServers": {"a": {"command": "a", "envFile": "server.env", "env": {"A": "from env"}}}}"#;
        let c = Config::parse_with(&file, text, |_| None).unwrap();
        let env = &stdio(&c.servers[0]).env;
        let got: Vec<_> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, [("A", "from env"), ("B", "two words"), ("C", "x#y"), ("D", "plain"), ("E", "")]);

        let text = r#"{"mcpServers": {"a": {"command": "a", "envFile": "missing.env"}}}"#;
        let e = Config::parse_with(&file, text, |_| None).unwrap().unreadable[0].error.to_string();
        assert!(e.contains("mcpServers.a.envFile: cannot read") && e.contains("missing.env"), "{e}");
        std::fs::write(dir.path().join("bad.env"), "A=1\njust words\n").unwrap();
        let text = r#"{"mcpServers": {"a": {"command": "a", "envFile": "bad.env"}}}"#;
        let e = Config::parse_with(&file, text, |_| None).unwrap().unreadable[0].error.to_string();
        assert!(e.contains("mcpServers.a.envFile") && e.contains("line 2"), "{e}");
        assert!(parse_env_file("A=\"open").unwrap_err().contains("not closed"));
        assert!(parse_env_file("1 2=x").unwrap_err().contains("not a variable name"));
    }

    #[cfg(not(any(windows, target_os = "macos")))]
    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<PathBuf> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| PathBuf::from(v))
    }

    #[test]
    #[cfg(not(any(windows, target_os = "macos")))]
    fn paths_follow_flags_then_env_then_xdg_then_home() {
        let p = Paths::resolve_with(None, None, env_of(&[("XDG_CONFIG_HOME", "/x/cfg"), ("XDG_DATA_HOME", "/x/data")]))
            .unwrap();
        assert_eq!(p, Paths { config: "/x/cfg/taskdeck/servers.json".into(), data_dir: "/x/data/taskdeck".into() });
        let p =
            Paths::resolve_with(None, None, env_of(&[("HOME", "/home/ada"), ("XDG_DATA_HOME", "relative")])).unwrap();
        assert_eq!(p.data_dir, PathBuf::from("/home/ada/.local/share/taskdeck"), "a relative XDG value is ignored");
        let p = Paths::resolve_with(None, None, env_of(&[("TASKDECK_CONFIG", "/c.json"), ("TASKDECK_DATA_DIR", "/d")]))
            .unwrap();
        assert_eq!(p, Paths { config: "/c.json".into(), data_dir: "/d".into() });
        let p =
            Paths::resolve_with(Some("/f.json".into()), Some("here".into()), env_of(&[("TASKDECK_CONFIG", "/c.json")]))
                .unwrap();
        assert_eq!(p.config, PathBuf::from("/f.json"));
        assert!(p.data_dir.is_absolute() && p.data_dir.ends_with("here"));
        assert!(matches!(Paths::resolve_with(None, None, env_of(&[])), Err(ConfigError::NoHome(_))));
    }

    #[cfg(not(any(windows, target_os = "macos")))]
    #[test]
    #[cfg(not(any(windows, target_os = "macos")))]
    fn logs_go_to_the_state_dir_unless_the_data_dir_was_chosen() {
        let env = env_of(&[("HOME", "/home/ada"), ("XDG_STATE_HOME", "/x/state")]);
        let default = Paths::resolve_with(None, None, &env).unwrap();
        assert_eq!(default.log_dir_with(&env), PathBuf::from("/x/state/taskdeck/logs"));
        let home_only = env_of(&[("HOME", "/home/ada")]);
        let p = Paths::resolve_with(None, None, &home_only).unwrap();
        assert_eq!(p.log_dir_with(&home_only), PathBuf::from("/home/ada/.local/state/taskdeck/logs"));
        let flag = Paths::resolve_with(None, Some("/d".into()), &env).unwrap();
        assert_eq!(flag.log_dir_with(&env), PathBuf::from("/d/logs"));
        let by_env = env_of(&[("HOME", "/home/ada"), ("XDG_STATE_HOME", "/x/state"), ("TASKDECK_DATA_DIR", "/e")]);
        let p = Paths::resolve_with(None, None, &by_env).unwrap();
        assert_eq!(p.log_dir_with(&by_env), PathBuf::from("/e/logs"));
    }

    #[test]
    fn no_config_file_means_the_demo_server() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths { config: dir.path().join("none.json"), data_dir: dir.path().join("data") };
        let c = Config::load(&paths).unwrap();
        assert_eq!(c.source, None);
        assert_eq!(c.servers.len(), 1);
        assert_eq!(c.servers[0].name, "demo");
        assert!(stdio(&c.servers[0]).args.contains(&dir.path().join("data/demo-server").display().to_string()));
    }

    #[test]
    fn a_disabled_server_is_listed_apart_and_not_among_those_to_run() {
        let c = parse(
            r#"{"mcpServers": {"on": {"command": "a"}, "off": {"command": "b", "disabled": true},
                "also": {"command": "c", "disabled": false}, "remote-off": {"url": "https://h/mcp", "disabled": true}}}"#,
        )
        .unwrap();
        assert_eq!(c.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["on", "also"]);
        assert_eq!(c.disabled.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["off", "remote-off"]);
        assert!(c.server("off").is_none(), "a disabled server cannot be run");
        let e = entry_error(r#"{"mcpServers": {"x": {"command": "a", "disabled": "yes"}}}"#);
        assert_eq!(e, "/etc/x/servers.json: mcpServers.x.disabled: must be true or false");
    }

    #[test]
    fn inherit_env_is_an_opt_in_per_server() {
        let c = parse(r#"{"mcpServers": {"a": {"command": "a", "inheritEnv": true}, "b": {"command": "b"}}}"#).unwrap();
        assert!(stdio(&c.servers[0]).inherit_env);
        assert!(!stdio(&c.servers[1]).inherit_env);
        assert!(entry_error(r#"{"mcpServers": {"a": {"command": "a", "inheritEnv": 1}}}"#).contains("inheritEnv"));
    }

    #[tokio::test]
    async fn a_config_change_is_reported_once_the_file_holds_still() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("servers.json");
        let last = ConfigStamp::of(&file);
        assert_eq!(last, ConfigStamp::Missing);
        let (every, settle) = (Duration::from_millis(20), Duration::from_millis(300));
        let writer = {
            let file = file.clone();
            tokio::spawn(async move {
                // Three quick saves: only what the file holds after the last one counts.
                for text in ["{", r#"{"mcpServers": {}"#, r#"{"mcpServers": {}}"#] {
                    std::fs::write(&file, text).unwrap();
                    tokio::time::sleep(Duration::from_millis(30)).await;
                }
            })
        };
        let changed = tokio::time::timeout(Duration::from_secs(10), next_config_change(&file, &last, every, settle))
            .await
            .unwrap();
        writer.await.unwrap();
        assert_eq!(changed, ConfigStamp::of(&file), "the last save, not a step on the way");
        // Written again with the same text: no change to report.
        std::fs::write(&file, r#"{"mcpServers": {}}"#).unwrap();
        let again =
            tokio::time::timeout(Duration::from_millis(800), next_config_change(&file, &changed, every, settle));
        assert!(again.await.is_err(), "the same text is no change");
    }

    fn load(config: PathBuf) -> Result<Config, ConfigError> {
        Config::load(&Paths { config, data_dir: PathBuf::from("/nonexistent") })
    }

    #[test]
    fn a_config_over_the_size_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("servers.json");
        let pad = " ".repeat(MAX_CONFIG_BYTES as usize);
        std::fs::write(&file, format!(r#"{{"mcpServers": {{}}}}{pad}"#)).unwrap();
        let e = load(file).unwrap_err();
        assert!(matches!(&e, ConfigError::Read { reason, .. } if reason.contains("larger than")), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_device_as_the_config_is_refused_without_reading_it() {
        let started = std::time::Instant::now();
        let e = load(PathBuf::from("/dev/zero")).unwrap_err();
        assert!(matches!(&e, ConfigError::Read { reason, .. } if reason.contains("device")), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_as_the_config_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("servers.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let started = std::time::Instant::now();
        let e = load(fifo).unwrap_err();
        assert!(matches!(&e, ConfigError::Read { reason, .. } if reason.contains("named pipe")), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
