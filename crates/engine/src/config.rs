//! Where Taskdeck keeps things, and which servers it runs: the `mcpServers` JSON format people
//! already use, with the bundled demo server as the embedded default when no config exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use taskdeck_client::ServerSpec;

/// The file name and data layout every front end shares.
pub const CONFIG_ENV: &str = "TASKDECK_CONFIG";
pub const DATA_DIR_ENV: &str = "TASKDECK_DATA_DIR";
pub const DEMO_SERVER_NAME: &str = "demo";
pub const DEMO_SERVER_BIN: &str = "taskdeck-demo-server";
pub const STORE_FILE: &str = "taskdeck.sqlite3";

#[derive(Debug, thiserror::Error, PartialEq)]
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

/// The servers to run, in config order.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The servers to run. An entry with `"disabled": true` is not among them.
    pub servers: Vec<ServerSpec>,
    /// The entries with `"disabled": true`, in config order: never started, not runnable, listed
    /// so that a front end can show them as disabled.
    pub disabled: Vec<ServerSpec>,
    /// Where they came from: the file, or `None` for the embedded default.
    pub source: Option<PathBuf>,
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

    /// The first-launch default: one server, the bundled demo task server, keeping its state inside
    /// Taskdeck's data directory.
    pub fn embedded_default(data_dir: &Path) -> Config {
        Config {
            servers: vec![ServerSpec {
                name: DEMO_SERVER_NAME.into(),
                command: demo_server_command().display().to_string(),
                args: vec!["--state".into(), data_dir.join("demo-server").display().to_string()],
                env: BTreeMap::new(),
                cwd: None,
                inherit_env: false,
            }],
            disabled: Vec::new(),
            source: None,
        }
    }

    pub fn parse(file: &Path, text: &str) -> Result<Config, ConfigError> {
        let field_err = |field: String, reason: &str| ConfigError::Field {
            file: file.to_owned(),
            field,
            reason: reason.to_owned(),
        };
        let root: Value = serde_json::from_str(text)
            .map_err(|e| ConfigError::Json { file: file.to_owned(), reason: e.to_string() })?;
        let servers = root
            .get("mcpServers")
            .ok_or_else(|| field_err("mcpServers".into(), "missing: the file must have an \"mcpServers\" object"))?
            .as_object()
            .ok_or_else(|| field_err("mcpServers".into(), "must be an object of servers by name"))?;
        let mut out = Vec::new();
        let mut disabled = Vec::new();
        for (name, entry) in servers {
            let at = |f: &str| format!("mcpServers.{name}.{f}");
            if name.trim().is_empty() {
                return Err(field_err("mcpServers".into(), "a server name must not be empty"));
            }
            let entry =
                entry.as_object().ok_or_else(|| field_err(format!("mcpServers.{name}"), "must be an object"))?;
            if entry.get("command").is_none() && (entry.contains_key("url") || entry.contains_key("type")) {
                return Err(field_err(
                    format!("mcpServers.{name}"),
                    "only stdio servers (with \"command\") are supported; remote servers (\"url\") are not",
                ));
            }
            let command = match entry.get("command") {
                Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
                Some(Value::String(_)) => return Err(field_err(at("command"), "must not be empty")),
                Some(_) => return Err(field_err(at("command"), "must be a string")),
                None => return Err(field_err(at("command"), "missing")),
            };
            let args = match entry.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| field_err(format!("{}[{i}]", at("args")), "must be a string"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(field_err(at("args"), "must be an array of strings")),
            };
            let env = match entry.get("env") {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => Ok((k.clone(), s.clone())),
                        Value::Number(n) => Ok((k.clone(), n.to_string())),
                        Value::Bool(b) => Ok((k.clone(), b.to_string())),
                        _ => Err(field_err(format!("{}.{k}", at("env")), "must be a string")),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(field_err(at("env"), "must be an object of strings")),
            };
            let cwd = match entry.get("cwd") {
                None | Some(Value::Null) => None,
                Some(Value::String(c)) => {
                    let p = PathBuf::from(c);
                    // Relative working directories are taken relative to the config file.
                    Some(if p.is_relative() { file.parent().unwrap_or(Path::new(".")).join(p) } else { p })
                }
                Some(_) => return Err(field_err(at("cwd"), "must be a string")),
            };
            let flag = |key: &str| match entry.get(key) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(field_err(at(key), "must be true or false")),
            };
            let inherit_env = flag("inheritEnv")?;
            let spec = ServerSpec { name: name.clone(), command, args, env, cwd, inherit_env };
            if flag("disabled")? {
                disabled.push(spec);
            } else {
                out.push(spec);
            }
        }
        Ok(Config { servers: out, disabled, source: Some(file.to_owned()) })
    }

    pub fn server(&self, name: &str) -> Option<&ServerSpec> {
        self.servers.iter().find(|s| s.name == name)
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

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/x/servers.json"), text)
    }

    #[test]
    fn reads_the_mcp_servers_format() {
        let c = parse(
            r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "server"], "env": {"K": "v", "N": 3}, "cwd": "sub"}}}"#,
        )
        .unwrap();
        let s = &c.servers[0];
        assert_eq!((s.name.as_str(), s.command.as_str()), ("files", "npx"));
        assert_eq!(s.args, vec!["-y", "server"]);
        assert_eq!(s.env.get("N").map(String::as_str), Some("3"));
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/etc/x/sub")));
    }

    #[test]
    fn errors_name_the_file_the_server_and_the_field() {
        let e = parse(r#"{"mcpServers": {"files": {"command": "x", "args": ["a", 2]}}}"#).unwrap_err();
        assert_eq!(e.to_string(), "/etc/x/servers.json: mcpServers.files.args[1]: must be a string");
        let e = parse(r#"{"mcpServers": {"files": {"args": []}}}"#).unwrap_err();
        assert_eq!(e.to_string(), "/etc/x/servers.json: mcpServers.files.command: missing");
        let e = parse(r#"{"servers": {}}"#).unwrap_err();
        assert!(e.to_string().contains("mcpServers: missing"), "{e}");
        let e = parse(r#"{"mcpServers": {"web": {"url": "https://x"}}}"#).unwrap_err();
        assert!(e.to_string().contains("only stdio servers"), "{e}");
        assert!(matches!(parse("{oops"), Err(ConfigError::Json { .. })));
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
        assert!(c.servers[0].args.contains(&dir.path().join("data/demo-server").display().to_string()));
    }

    #[test]
    fn a_disabled_server_is_listed_apart_and_not_among_those_to_run() {
        let c = parse(
            r#"{"mcpServers": {"on": {"command": "a"}, "off": {"command": "b", "disabled": true},
                "also": {"command": "c", "disabled": false}}}"#,
        )
        .unwrap();
        assert_eq!(c.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["on", "also"]);
        assert_eq!(c.disabled.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["off"]);
        assert!(c.server("off").is_none(), "a disabled server cannot be run");
        let e = parse(r#"{"mcpServers": {"x": {"command": "a", "disabled": "yes"}}}"#).unwrap_err();
        assert_eq!(e.to_string(), "/etc/x/servers.json: mcpServers.x.disabled: must be true or false");
    }

    #[test]
    fn inherit_env_is_an_opt_in_per_server() {
        let c = parse(r#"{"mcpServers": {"a": {"command": "a", "inheritEnv": true}, "b": {"command": "b"}}}"#).unwrap();
        assert!(c.servers[0].inherit_env);
        assert!(!c.servers[1].inherit_env);
        assert!(parse(r#"{"mcpServers": {"a": {"command": "a", "inheritEnv": 1}}}"#).is_err());
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
