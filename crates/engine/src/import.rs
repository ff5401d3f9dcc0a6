//! Importing the servers a user already has in another host's config: Claude Desktop, Cursor,
//! VS Code and Windsurf, at their usual places on Linux, macOS and Windows, or any file.
//!
//! [`scan`] reads the files and says what each holds: its entries in Taskdeck's form, which of them
//! Taskdeck has already under the same name (and whether identically), what cannot be imported
//! and why, and which VS Code `inputs` an entry needs. [`apply`] copies the chosen entries into
//! Taskdeck's config through [`crate::config_edit`]; an input's value is asked once, and a
//! password goes to the sign-in store (the OS keyring, or its 0600 file), the config naming it as
//! `${secret:KEY}`. Another host's file is only ever read: nothing here opens one for writing.
//!
//! Everything in those files is untrusted: names, commands and messages are shown through a
//! front end's sanitiser, and an entry is imported only when Taskdeck's own loader reads it back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use taskdeck_client::auth::{Secret, TokenStore};

use crate::config::{MAX_CONFIG_BYTES, Paths};
use crate::config_edit::{ConfigFile, EditError};

/// A host whose config Taskdeck can read, or a file given by the user.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Host {
    Claude,
    Cursor,
    Vscode,
    Windsurf,
    File,
}

impl Host {
    pub const KNOWN: [Host; 4] = [Host::Claude, Host::Cursor, Host::Vscode, Host::Windsurf];

    pub fn as_str(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Cursor => "cursor",
            Host::Vscode => "vscode",
            Host::Windsurf => "windsurf",
            Host::File => "file",
        }
    }

    /// The name people know it by.
    pub fn title(self) -> &'static str {
        match self {
            Host::Claude => "Claude Desktop",
            Host::Cursor => "Cursor",
            Host::Vscode => "VS Code",
            Host::Windsurf => "Windsurf",
            Host::File => "File",
        }
    }

    /// `claude`, `cursor`, `vscode`, `windsurf`; anything else is a file.
    pub fn parse(s: &str) -> Option<Host> {
        Host::KNOWN.into_iter().find(|h| h.as_str() == s)
    }
}

/// One file to look in.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFile {
    pub host: Host,
    pub path: PathBuf,
}

/// The files each known host keeps its servers in on this platform, read from the environment.
pub fn known_files(hosts: &[Host]) -> Vec<HostFile> {
    known_files_with(hosts, |k| std::env::var_os(k).map(PathBuf::from))
}

/// [`known_files`] with the environment passed in.
pub fn known_files_with(hosts: &[Host], env: impl Fn(&str) -> Option<PathBuf>) -> Vec<HostFile> {
    let set = |k: &str| env(k).filter(|v| !v.as_os_str().is_empty());
    let mut out = Vec::new();
    let Some(dirs) = platform::dirs(&set) else { return out };
    for &host in hosts {
        let paths: Vec<PathBuf> = match host {
            Host::Claude => vec![dirs.app_config.join("Claude").join("claude_desktop_config.json")],
            Host::Cursor => vec![dirs.home.join(".cursor").join("mcp.json")],
            // The user's `mcp.json`; `settings.json` for the `mcp.servers` VS Code read before it.
            Host::Vscode => ["Code", "Code - Insiders"]
                .iter()
                .flat_map(|app| {
                    let user = dirs.app_config.join(app).join("User");
                    [user.join("mcp.json"), user.join("settings.json")]
                })
                .collect(),
            Host::Windsurf => vec![dirs.home.join(".codeium").join("windsurf").join("mcp_config.json")],
            Host::File => Vec::new(),
        };
        out.extend(paths.into_iter().map(|path| HostFile { host, path }));
    }
    out
}

struct Dirs {
    home: PathBuf,
    /// Where applications keep per-user config: `~/.config`, `~/Library/Application Support`,
    /// `%APPDATA%`.
    app_config: PathBuf,
}

#[cfg(not(any(windows, target_os = "macos")))]
mod platform {
    use std::path::PathBuf;

    pub(super) fn dirs(env: &impl Fn(&str) -> Option<PathBuf>) -> Option<super::Dirs> {
        let home = env("HOME")?;
        let app_config = env("XDG_CONFIG_HOME").filter(|p| p.is_absolute()).unwrap_or_else(|| home.join(".config"));
        Some(super::Dirs { home, app_config })
    }
}

#[cfg(target_os = "macos")]
mod platform {
    use std::path::PathBuf;

    pub(super) fn dirs(env: &impl Fn(&str) -> Option<PathBuf>) -> Option<super::Dirs> {
        let home = env("HOME").or_else(|| directories::BaseDirs::new().map(|d| d.home_dir().to_owned()))?;
        let app_config = home.join("Library").join("Application Support");
        Some(super::Dirs { home, app_config })
    }
}

#[cfg(windows)]
mod platform {
    use std::path::PathBuf;

    pub(super) fn dirs(env: &impl Fn(&str) -> Option<PathBuf>) -> Option<super::Dirs> {
        let base = directories::BaseDirs::new();
        let home = env("USERPROFILE").or_else(|| base.as_ref().map(|d| d.home_dir().to_owned()))?;
        let app_config = env("APPDATA")
            .or_else(|| base.as_ref().map(|d| d.config_dir().to_owned()))
            .unwrap_or_else(|| home.join("AppData").join("Roaming"));
        Some(super::Dirs { home, app_config })
    }
}

/// What one file holds.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub host: Host,
    pub path: String,
    /// Why the file could not be read as a whole (not JSON, no servers object); its entries are
    /// then empty.
    pub error: Option<String>,
    pub entries: Vec<FoundEntry>,
}

/// One server of another host's file.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoundEntry {
    pub name: String,
    /// `stdio`, `http` or `sse`, as far as it can be told.
    pub transport: Option<String>,
    /// The command line or URL, for display; never the environment or headers.
    pub target: String,
    pub status: EntryStatus,
    /// Why it cannot be imported, for [`EntryStatus::CannotImport`].
    pub problem: Option<String>,
    /// The VS Code inputs its `${input:ID}` references need, asked once at import.
    pub inputs: Vec<InputNeeded>,
    /// The entry as Taskdeck would write it (`${input:ID}` still in it).
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub entry: Option<Map<String, Value>>,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// Not in Taskdeck's config: can be imported.
    New,
    /// Taskdeck has a server of that name with the same entry: nothing to do.
    Same,
    /// Taskdeck has a server of that name with another entry: importing it is refused until one of
    /// them is renamed or removed.
    Clash,
    CannotImport,
}

/// A VS Code `inputs` entry an imported server refers to.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputNeeded {
    pub id: String,
    pub description: Option<String>,
    /// A password is kept in the sign-in store and the config refers to it; any other value is
    /// written into the config.
    pub password: bool,
    pub default: Option<String>,
    /// For a `pickString`: the values to choose from.
    pub options: Vec<String>,
}

/// Reads each file that exists (a missing one is left out) against Taskdeck's config.
pub fn scan(paths: &Paths, files: &[HostFile]) -> Result<Vec<Found>, EditError> {
    let taskdeck = ConfigFile::open(paths)?;
    let home = platform::dirs(&|k: &str| std::env::var_os(k).map(PathBuf::from)).map(|d| d.home);
    let mut found: Vec<Found> =
        files.iter().filter(|f| f.path.exists()).map(|f| read_host_file(f, &taskdeck, home.as_deref())).collect();
    // A VS Code settings.json without MCP servers is an ordinary settings file: nothing to list.
    found.retain(|f| {
        !(f.host == Host::Vscode && f.path.ends_with("settings.json") && f.error.is_none() && f.entries.is_empty())
    });
    Ok(found)
}

/// What `file` holds; `taskdeck` is what each entry is compared with.
pub fn read_host_file(file: &HostFile, taskdeck: &ConfigFile, home: Option<&Path>) -> Found {
    let mut found = Found { host: file.host, path: file.path.display().to_string(), error: None, entries: Vec::new() };
    let root = match read_limited(&file.path)
        .map_err(|e| format!("cannot read it: {e}"))
        .and_then(|text| serde_json::from_str::<Value>(&strip_jsonc(&text)).map_err(|e| format!("not valid JSON: {e}")))
    {
        Ok(v) => v,
        Err(e) => {
            found.error = Some(e);
            return found;
        }
    };
    let Some((servers, inputs)) = servers_of(&root) else {
        // A VS Code settings.json without MCP servers says nothing worth listing.
        if !(file.host == Host::Vscode && file.path.file_name().is_some_and(|n| n == "settings.json")) {
            found.error = Some("has no \"mcpServers\" (or VS Code \"servers\") object".into());
        }
        return found;
    };
    let inputs = read_inputs(inputs);
    let ctx = Context {
        host: file.host,
        file: &file.path,
        dir: file.path.parent().unwrap_or(Path::new(".")),
        home,
        inputs: &inputs,
    };
    for (name, raw) in servers {
        found.entries.push(ctx.entry(name, raw, taskdeck));
    }
    found
}

/// The servers object and the inputs list, whichever shape the file has: `mcpServers` (Claude,
/// Cursor, Windsurf), `servers` with `inputs` (VS Code's `mcp.json`), or `mcp.servers` (VS Code's
/// settings.json before it).
fn servers_of(root: &Value) -> Option<(&Map<String, Value>, Option<&Value>)> {
    if let Some(s) = root.get("mcpServers").and_then(Value::as_object) {
        return Some((s, root.get("inputs")));
    }
    if let Some(s) = root.get("servers").and_then(Value::as_object) {
        return Some((s, root.get("inputs")));
    }
    let mcp = root.get("mcp")?;
    Some((mcp.get("servers")?.as_object()?, mcp.get("inputs")))
}

/// The inputs by id; of a kind that cannot be answered at import (`command`), `None`.
fn read_inputs(inputs: Option<&Value>) -> BTreeMap<String, Option<InputNeeded>> {
    let mut out = BTreeMap::new();
    for input in inputs.and_then(Value::as_array).into_iter().flatten() {
        let Some(id) = input.get("id").and_then(Value::as_str) else { continue };
        let text = |k: &str| input.get(k).and_then(Value::as_str).map(|s| cut(s, 500));
        let needed = match input.get("type").and_then(Value::as_str) {
            Some("promptString") => Some(InputNeeded {
                id: id.to_owned(),
                description: text("description"),
                password: input.get("password").and_then(Value::as_bool) == Some(true),
                default: text("default"),
                options: Vec::new(),
            }),
            Some("pickString") => Some(InputNeeded {
                id: id.to_owned(),
                description: text("description"),
                password: false,
                default: text("default"),
                options: input
                    .get("options")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|o| o.as_str().or_else(|| o.get("value").and_then(Value::as_str)))
                    .map(|s| cut(s, 500))
                    .take(100)
                    .collect(),
            }),
            _ => None,
        };
        out.insert(id.to_owned(), needed);
    }
    out
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_owned() } else { s.chars().take(max).chain(['…']).collect() }
}

struct Context<'a> {
    host: Host,
    /// The file itself, which errors name.
    file: &'a Path,
    /// The file's folder, for its relative paths.
    dir: &'a Path,
    home: Option<&'a Path>,
    inputs: &'a BTreeMap<String, Option<InputNeeded>>,
}

impl Context<'_> {
    fn entry(&self, name: &str, raw: &Value, taskdeck: &ConfigFile) -> FoundEntry {
        let transport = raw.as_object().and_then(transport_of);
        let target = raw.as_object().map(target_of).unwrap_or_default();
        let mut found = FoundEntry {
            name: name.to_owned(),
            transport: transport.map(str::to_owned),
            target,
            status: EntryStatus::CannotImport,
            problem: None,
            inputs: Vec::new(),
            entry: None,
        };
        match self.translate(name, raw).and_then(|(entry, inputs)| {
            // What Taskdeck's loader would refuse is said now, not when the import is applied.
            crate::config_edit::check_name(name).map_err(|e| e.to_string())?;
            let mut probe = Value::Object(entry.clone());
            let stand_ins = inputs.iter().map(|i| (format!("${{input:{}}}", i.id), "input".to_owned())).collect();
            replace_all(&mut probe, &stand_ins);
            if let Value::Object(probe) = &probe {
                crate::config_edit::check_entry(Path::new(self.file), name, probe).map_err(|e| e.to_string())?;
            }
            Ok((entry, inputs))
        }) {
            Ok((entry, inputs)) => {
                found.status = match taskdeck.entry(name) {
                    None => EntryStatus::New,
                    Some(Value::Object(have)) if *have == entry => EntryStatus::Same,
                    Some(_) => EntryStatus::Clash,
                };
                found.inputs = inputs;
                found.entry = Some(entry);
            }
            Err(why) => found.problem = Some(why),
        }
        found
    }

    /// The entry in Taskdeck's form, with the inputs it needs; `Err` says why it cannot be.
    fn translate(&self, name: &str, raw: &Value) -> Result<(Map<String, Value>, Vec<InputNeeded>), String> {
        if name.trim().is_empty() || name != name.trim() || name.chars().any(char::is_control) {
            return Err("its name is empty, has spaces around it or holds control characters".into());
        }
        let raw = raw.as_object().ok_or("is not an object")?;
        if raw.get("type").and_then(Value::as_str) == Some("sse") {
            return Err("uses the old HTTP+SSE transport, which Taskdeck does not speak; if the server also offers \
                        Streamable HTTP, add that URL instead"
                .into());
        }
        let mut entry = Map::new();
        for (key, value) in raw {
            // Windsurf calls a remote server's URL `serverUrl`.
            let key = if self.host == Host::Windsurf && key == "serverUrl" && !raw.contains_key("url") {
                "url"
            } else {
                key.as_str()
            };
            entry.insert(key.to_owned(), value.clone());
        }
        let mut needed = Vec::new();
        // Claude Desktop substitutes nothing: its text is taken as written.
        if self.host != Host::Claude {
            for key in ["command", "args", "env", "url", "headers", "cwd", "envFile"] {
                if let Some(v) = entry.get_mut(key) {
                    self.variables(v, key, &mut needed)?;
                }
            }
        }
        for key in ["cwd", "envFile"] {
            if let Some(Value::String(p)) = entry.get_mut(key)
                && Path::new(p.as_str()).is_relative()
            {
                *p = self.dir.join(p.as_str()).display().to_string();
            }
        }
        Ok((entry, needed))
    }

    /// Resolves what the host would have substituted and Taskdeck can substitute the same way now
    /// (`${userHome}`, `${pathSeparator}`); keeps `${env:NAME}` (Taskdeck resolves it) and
    /// `${input:ID}` (asked at import); refuses what has no meaning outside the host
    /// (`${workspaceFolder}` and the like).
    fn variables(&self, v: &mut Value, at: &str, needed: &mut Vec<InputNeeded>) -> Result<(), String> {
        match v {
            Value::String(s) => {
                let mut out = String::new();
                let mut rest = s.as_str();
                while let Some(i) = rest.find("${") {
                    out.push_str(&rest[..i]);
                    let after = &rest[i + 2..];
                    let end = after.find('}').ok_or_else(|| format!("{at}: has an unclosed ${{"))?;
                    let var = &after[..end];
                    match var.split_once(':') {
                        _ if var == "userHome" => match self.home {
                            Some(h) => out.push_str(&h.display().to_string()),
                            None => return Err(format!("{at}: uses ${{userHome}}, and no home folder is set")),
                        },
                        _ if var == "pathSeparator" || var == "/" => out.push(std::path::MAIN_SEPARATOR),
                        Some(("env", _)) => out.push_str(&rest[i..i + 2 + end + 1]),
                        Some(("input", id)) if self.host == Host::Vscode => match self.inputs.get(id) {
                            Some(Some(input)) => {
                                if !needed.iter().any(|n| n.id == id) {
                                    needed.push(input.clone());
                                }
                                out.push_str(&rest[i..i + 2 + end + 1]);
                            }
                            Some(None) => {
                                return Err(format!(
                                    "{at}: ${{input:{id}}} is an input of a kind Taskdeck cannot ask (only promptString and pickString)"
                                ));
                            }
                            None => return Err(format!("{at}: ${{input:{id}}} is not among the file's inputs")),
                        },
                        _ => {
                            return Err(format!(
                                "{at}: uses ${{{var}}}, which only means something inside {}",
                                self.host.title()
                            ));
                        }
                    }
                    rest = &after[end + 1..];
                }
                out.push_str(rest);
                *s = out;
                Ok(())
            }
            Value::Array(a) => a.iter_mut().try_for_each(|v| self.variables(v, at, needed)),
            Value::Object(o) => o.iter_mut().try_for_each(|(k, v)| self.variables(v, &format!("{at}.{k}"), needed)),
            _ => Ok(()),
        }
    }
}

fn transport_of(entry: &Map<String, Value>) -> Option<&'static str> {
    match entry.get("type").and_then(Value::as_str) {
        Some("stdio") => Some("stdio"),
        Some("http" | "streamable-http" | "streamableHttp") => Some("http"),
        Some("sse") => Some("sse"),
        Some(_) => None,
        None if entry.contains_key("command") => Some("stdio"),
        None if entry.contains_key("url") || entry.contains_key("serverUrl") => Some("http"),
        None => None,
    }
}

fn target_of(entry: &Map<String, Value>) -> String {
    let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_owned);
    let target = match text("command") {
        Some(c) => std::iter::once(c)
            .chain(
                entry
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| a.as_str().map(str::to_owned)),
            )
            .collect::<Vec<_>>()
            .join(" "),
        None => text("url").or_else(|| text("serverUrl")).unwrap_or_default(),
    };
    cut(&target, 1000)
}

/// Comments (`//`, `/* */`) and trailing commas, which VS Code's JSON with comments allows, taken
/// out; strings are left as they are.
pub fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            '}' | ']' => {
                // A comma before the closing bracket, with only whitespace between, goes.
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    taskdeck_store::private_fs::check_regular(path)?;
    let mut bytes = Vec::new();
    // Read only: another host's file is never opened for writing.
    std::fs::File::open(path)?.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "larger than a config is"));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    #[error("no server named {name:?} in {where_}")]
    UnknownServer { name: String, where_: String },
    #[error("{path}: no such file")]
    NoSuchFile { path: String },
    #[error("{name:?} is in more than one file ({files}) with different entries; choose one with --from")]
    Ambiguous { name: String, files: String },
    #[error("{name:?} cannot be imported: {reason}")]
    CannotImport { name: String, reason: String },
    #[error(
        "{name:?} is already in Taskdeck's config with another entry; remove it there first (or rename it) to import this one"
    )]
    Clash { name: String },
    #[error("no value was given for the input {id:?} that {name:?} needs")]
    MissingInput { name: String, id: String },
    #[error("could not keep the secret for {name:?}: {reason}")]
    Secret { name: String, reason: String },
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// Entries left out of an import, each with why.
pub type Skipped = Vec<(String, String)>;

/// Which entries to import.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// Every entry that can be imported and is not in Taskdeck yet.
    All,
    /// These, each of which must be found and importable.
    Names(Vec<String>),
}

/// One entry chosen: the file it is in and its name there.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen<'a> {
    pub found: &'a Found,
    pub entry: &'a FoundEntry,
}

/// What an import did or (dry run) would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ImportReport {
    /// Added to Taskdeck's config, in order.
    pub imported: Vec<String>,
    /// Left out, each with why (already there, cannot be imported, found twice).
    pub skipped: Vec<(String, String)>,
    /// The config as written (or as it would be); secrets are only referenced in it.
    pub config_text: String,
    pub config_path: String,
    pub dry_run: bool,
}

/// The entries `selection` picks from `found`. With names, an unknown one, one that cannot be
/// imported or clashes, or one found differently in two files is an error and nothing is chosen.
pub fn choose<'a>(found: &'a [Found], selection: &Selection) -> Result<(Vec<Chosen<'a>>, Skipped), ImportError> {
    let all: Vec<Chosen<'a>> =
        found.iter().flat_map(|f| f.entries.iter().map(move |entry| Chosen { found: f, entry })).collect();
    let mut chosen: Vec<Chosen<'a>> = Vec::new();
    let mut skipped = Vec::new();
    match selection {
        Selection::All => {
            for c in all {
                let why = match c.entry.status {
                    EntryStatus::New => None,
                    EntryStatus::Same => Some("already in Taskdeck, the same".to_owned()),
                    EntryStatus::Clash => Some("Taskdeck has a server of that name with another entry".to_owned()),
                    EntryStatus::CannotImport => c.entry.problem.clone(),
                };
                if let Some(why) = why {
                    skipped.push((c.entry.name.clone(), format!("{} ({}): {why}", c.found.host.title(), c.found.path)));
                } else if let Some(first) = chosen.iter().find(|k| k.entry.name == c.entry.name) {
                    if first.entry.entry != c.entry.entry {
                        skipped.push((
                            c.entry.name.clone(),
                            format!(
                                "{} ({}): also in {} with another entry, which is imported",
                                c.found.host.title(),
                                c.found.path,
                                first.found.path
                            ),
                        ));
                    }
                } else {
                    chosen.push(c);
                }
            }
        }
        Selection::Names(names) => {
            for name in names {
                let matches: Vec<&Chosen<'a>> = all.iter().filter(|c| &c.entry.name == name).collect();
                let Some(first) = matches.first() else {
                    let where_ = if found.is_empty() {
                        "any host's config (none was found)".to_owned()
                    } else {
                        found.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(", ")
                    };
                    return Err(ImportError::UnknownServer { name: name.clone(), where_ });
                };
                let importable: Vec<&&Chosen<'a>> = matches.iter().filter(|c| c.entry.entry.is_some()).collect();
                if importable.is_empty() {
                    let reason = first.entry.problem.clone().unwrap_or_else(|| "it cannot be read".into());
                    return Err(ImportError::CannotImport { name: name.clone(), reason });
                }
                if importable.iter().any(|c| c.entry.entry != importable[0].entry.entry) {
                    let files = importable.iter().map(|c| c.found.path.as_str()).collect::<Vec<_>>().join(", ");
                    return Err(ImportError::Ambiguous { name: name.clone(), files });
                }
                let pick = importable[0];
                match pick.entry.status {
                    EntryStatus::Clash => return Err(ImportError::Clash { name: name.clone() }),
                    EntryStatus::Same => skipped.push((name.clone(), "already in Taskdeck, the same".into())),
                    _ if chosen.iter().any(|c| &c.entry.name == name) => {}
                    _ => chosen.push(Chosen { found: pick.found, entry: pick.entry }),
                }
            }
        }
    }
    Ok((chosen, skipped))
}

/// Exactly the entries named by (file, name), as a front end that showed [`scan`]'s answer picks
/// them: each must be there and importable, and none may clash.
pub fn pick<'a>(found: &'a [Found], picks: &[(String, String)]) -> Result<Vec<Chosen<'a>>, ImportError> {
    let mut chosen: Vec<Chosen<'a>> = Vec::new();
    for (path, name) in picks {
        let f = found.iter().find(|f| &f.path == path).ok_or_else(|| ImportError::NoSuchFile { path: path.clone() })?;
        let entry = f
            .entries
            .iter()
            .find(|e| &e.name == name)
            .ok_or_else(|| ImportError::UnknownServer { name: name.clone(), where_: path.clone() })?;
        match entry.status {
            EntryStatus::Clash => return Err(ImportError::Clash { name: name.clone() }),
            EntryStatus::CannotImport => {
                let reason = entry.problem.clone().unwrap_or_default();
                return Err(ImportError::CannotImport { name: name.clone(), reason });
            }
            EntryStatus::Same => {}
            EntryStatus::New if chosen.iter().any(|c| &c.entry.name == name) => {
                let files = chosen.iter().filter(|c| &c.entry.name == name).map(|c| c.found.path.clone());
                let files = files.chain([path.clone()]).collect::<Vec<_>>().join(", ");
                return Err(ImportError::Ambiguous { name: name.clone(), files });
            }
            EntryStatus::New => chosen.push(Chosen { found: f, entry }),
        }
    }
    Ok(chosen)
}

/// The key a password input of `server` is kept under.
pub fn secret_key(server: &str, input: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') { c } else { '_' }).take(80).collect()
    };
    format!("{}.{}", clean(server), clean(input))
}

/// Copies `chosen` into Taskdeck's config. `values` holds each input's answer by id; passwords go
/// to `secrets` (not touched in a dry run, which writes nothing and says what would be written).
pub fn apply(
    paths: &Paths,
    chosen: &[Chosen<'_>],
    skipped: Skipped,
    values: &BTreeMap<String, String>,
    secrets: Option<&dyn TokenStore>,
    dry_run: bool,
) -> Result<ImportReport, ImportError> {
    let mut file = ConfigFile::open(paths)?;
    let mut to_keep: Vec<(String, String, Secret)> = Vec::new();
    let mut imported = Vec::new();
    for c in chosen {
        let name = &c.entry.name;
        let mut entry = c.entry.entry.clone().ok_or_else(|| ImportError::CannotImport {
            name: name.clone(),
            reason: c.entry.problem.clone().unwrap_or_default(),
        })?;
        let mut replacements = BTreeMap::new();
        for input in &c.entry.inputs {
            let value = values
                .get(&input.id)
                .filter(|v| !v.is_empty())
                .cloned()
                .or_else(|| input.default.clone())
                .ok_or_else(|| ImportError::MissingInput { name: name.clone(), id: input.id.clone() })?;
            let text = if input.password {
                let key = secret_key(name, &input.id);
                let reference = crate::secrets::reference(&key);
                to_keep.push((name.clone(), key, Secret::new(value)));
                reference
            } else {
                value
            };
            replacements.insert(format!("${{input:{}}}", input.id), text);
        }
        for v in entry.values_mut() {
            replace_all(v, &replacements);
        }
        file.add(name, entry).map_err(|e| match e {
            EditError::Exists { name, .. } => ImportError::Clash { name },
            other => ImportError::Edit(other),
        })?;
        imported.push(name.clone());
    }
    if !dry_run {
        if !to_keep.is_empty() {
            let store = secrets.ok_or_else(|| ImportError::Secret {
                name: to_keep[0].0.clone(),
                reason: "no secret store is available".into(),
            })?;
            // Before the config names them, so a started server never misses one.
            for (name, key, value) in &to_keep {
                store
                    .save_secret(key, value)
                    .map_err(|e| ImportError::Secret { name: name.clone(), reason: e.to_string() })?;
            }
        }
        if !imported.is_empty() {
            file.save()?;
        }
    }
    Ok(ImportReport {
        imported,
        skipped,
        config_text: file.text(),
        config_path: file.path().display().to_string(),
        dry_run,
    })
}

fn replace_all(v: &mut Value, replacements: &BTreeMap<String, String>) {
    match v {
        Value::String(s) if s.contains("${input:") => {
            for (from, to) in replacements {
                *s = s.replace(from.as_str(), to);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| replace_all(v, replacements)),
        Value::Object(o) => o.values_mut().for_each(|v| replace_all(v, replacements)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskdeck_client::auth::MemoryStore;

    fn setup(taskdeck: &str) -> (tempfile::TempDir, Paths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths { config: dir.path().join("taskdeck.json"), data_dir: dir.path().join("data") };
        std::fs::write(&paths.config, taskdeck).unwrap();
        (dir, paths)
    }

    fn host_file(dir: &Path, host: Host, name: &str, text: &str) -> HostFile {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        HostFile { host, path }
    }

    #[test]
    fn the_usual_places_follow_home_and_xdg() {
        let env = |k: &str| match k {
            "HOME" => Some(PathBuf::from("/home/u")),
            "XDG_CONFIG_HOME" => Some(PathBuf::from("/cfg")),
            _ => None,
        };
        let files = known_files_with(&Host::KNOWN, env);
        let paths: Vec<_> = files.iter().map(|f| (f.host, f.path.display().to_string())).collect();
        #[cfg(not(any(windows, target_os = "macos")))]
        {
            assert!(paths.contains(&(Host::Claude, "/cfg/Claude/claude_desktop_config.json".into())), "{paths:?}");
            assert!(paths.contains(&(Host::Cursor, "/home/u/.cursor/mcp.json".into())));
            assert!(paths.contains(&(Host::Vscode, "/cfg/Code/User/mcp.json".into())));
            assert!(paths.contains(&(Host::Vscode, "/cfg/Code/User/settings.json".into())));
            assert!(paths.contains(&(Host::Windsurf, "/home/u/.codeium/windsurf/mcp_config.json".into())));
        }
        let _ = paths;
    }

    #[test]
    fn each_entry_says_whether_taskdeck_has_it_and_what_cannot_be_imported() {
        let (dir, paths) = setup(r#"{"mcpServers": {"same": {"command": "s"}, "clash": {"command": "old"}}}"#);
        let f = host_file(
            dir.path(),
            Host::Cursor,
            "mcp.json",
            r#"{"mcpServers": {"same": {"command": "s"}, "clash": {"command": "new"}, "new": {"url": "https://n.example/mcp"},
                "old": {"type": "sse", "url": "https://o.example/sse"}, "ws": {"command": "x", "args": ["${workspaceFolder}"]},
                "home": {"command": "${userHome}/bin/srv", "env": {"T": "${env:TOKEN}"}},
                "plain": {"url": "http://remote.example/mcp"}}}"#,
        );
        let found = scan(&paths, &[f]).unwrap();
        let status: Vec<_> = found[0].entries.iter().map(|e| (e.name.as_str(), e.status)).collect();
        assert_eq!(
            status,
            [
                ("same", EntryStatus::Same),
                ("clash", EntryStatus::Clash),
                ("new", EntryStatus::New),
                ("old", EntryStatus::CannotImport),
                ("ws", EntryStatus::CannotImport),
                ("home", EntryStatus::New),
                ("plain", EntryStatus::CannotImport),
            ]
        );
        assert!(found[0].entries[6].problem.as_deref().unwrap().contains("mcpServers.plain.url: plain http://"));
        assert!(found[0].entries[3].problem.as_deref().unwrap().contains("HTTP+SSE"));
        assert!(found[0].entries[4].problem.as_deref().unwrap().contains("${workspaceFolder}"));
        let home = found[0].entries[5].entry.as_ref().unwrap();
        assert!(!home["command"].as_str().unwrap().contains("${userHome}"));
        assert_eq!(home["env"]["T"], "${env:TOKEN}", "Taskdeck resolves it where it runs");
    }

    #[test]
    fn vscode_inputs_are_asked_once_and_a_password_goes_to_the_secret_store_not_the_config() {
        let (dir, paths) = setup(r#"{"mcpServers": {}}"#);
        let f = host_file(
            dir.path(),
            Host::Vscode,
            "mcp.json",
            r#"{
              // VS Code's file has comments
              "inputs": [
                {"type": "promptString", "id": "api-key", "description": "API key", "password": true},
                {"type": "promptString", "id": "region", "description": "Region"},
              ],
              "servers": {
                "svc": {"type": "stdio", "command": "svc", "args": ["--region", "${input:region}"], "env": {"KEY": "${input:api-key}"}},
                "web": {"type": "http", "url": "https://w.example/mcp", "headers": {"Authorization": "Bearer ${input:api-key}"}}
              }
            }"#,
        );
        let before = std::fs::read(&f.path).unwrap();
        let found = scan(&paths, std::slice::from_ref(&f)).unwrap();
        assert_eq!(found[0].error, None);
        let svc = &found[0].entries[0];
        assert_eq!(
            svc.inputs.iter().map(|i| (i.id.as_str(), i.password)).collect::<Vec<_>>(),
            [("region", false), ("api-key", true)]
        );
        let (chosen, skipped) = choose(&found, &Selection::All).unwrap();
        let store = MemoryStore::default();
        let values =
            BTreeMap::from([("api-key".to_owned(), "k-secret".to_owned()), ("region".to_owned(), "eu".to_owned())]);
        let missing = apply(&paths, &chosen, skipped.clone(), &BTreeMap::new(), Some(&store), false).unwrap_err();
        assert!(matches!(missing, ImportError::MissingInput { .. }), "{missing:?}");
        let report = apply(&paths, &chosen, skipped, &values, Some(&store), false).unwrap();
        assert_eq!(report.imported, ["svc", "web"]);
        let text = std::fs::read_to_string(&paths.config).unwrap();
        assert!(!text.contains("k-secret"), "{text}");
        let written: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(written["mcpServers"]["svc"]["env"]["KEY"], "${secret:svc.api-key}");
        assert_eq!(written["mcpServers"]["svc"]["args"][1], "eu");
        assert_eq!(written["mcpServers"]["web"]["headers"]["Authorization"], "Bearer ${secret:web.api-key}");
        assert_eq!(store.load_secret("svc.api-key").unwrap().unwrap().expose(), "k-secret");
        assert_eq!(std::fs::read(&f.path).unwrap(), before, "another host's file is never written");
        // The config loads, the secret resolved only at the start.
        let config = crate::config::Config::load(&paths).unwrap();
        assert!(config.unreadable.is_empty(), "{config:?}");
        let started =
            crate::secrets::resolve_with(&config.servers[0].endpoint, || -> Option<&dyn TokenStore> { Some(&store) })
                .unwrap();
        let crate::Endpoint::Stdio(s) = started else { panic!() };
        assert_eq!(s.env["KEY"], "k-secret");
    }

    #[test]
    fn named_servers_must_exist_be_importable_and_not_clash() {
        let (dir, paths) = setup(r#"{"mcpServers": {"clash": {"command": "old"}}}"#);
        let a = host_file(
            dir.path(),
            Host::Claude,
            "a.json",
            r#"{"mcpServers": {"x": {"command": "a"}, "clash": {"command": "b"}}}"#,
        );
        let b = host_file(
            dir.path(),
            Host::Cursor,
            "b.json",
            r#"{"mcpServers": {"x": {"command": "other"}, "y": {"command": "y"}}}"#,
        );
        let found = scan(&paths, &[a, b]).unwrap();
        let names = |n: &[&str]| Selection::Names(n.iter().map(|s| (*s).to_owned()).collect());
        assert!(matches!(choose(&found, &names(&["nope"])), Err(ImportError::UnknownServer { .. })));
        assert!(matches!(choose(&found, &names(&["clash"])), Err(ImportError::Clash { .. })));
        assert!(matches!(choose(&found, &names(&["x"])), Err(ImportError::Ambiguous { .. })));
        let (chosen, _) = choose(&found, &names(&["y"])).unwrap();
        assert_eq!(chosen.len(), 1);
        // All: the first of two different entries of one name, the clash left out with why.
        let (chosen, skipped) = choose(&found, &Selection::All).unwrap();
        assert_eq!(chosen.iter().map(|c| c.entry.name.as_str()).collect::<Vec<_>>(), ["x", "y"]);
        assert!(skipped.iter().any(|(n, why)| n == "clash" && why.contains("another entry")), "{skipped:?}");
        let report = apply(&paths, &chosen, skipped, &BTreeMap::new(), None, true).unwrap();
        assert!(report.dry_run && report.config_text.contains("\"y\""));
        assert!(!std::fs::read_to_string(&paths.config).unwrap().contains("\"y\""), "a dry run writes nothing");
    }

    #[test]
    fn vscode_settings_are_listed_only_when_they_hold_mcp_servers() {
        let (dir, paths) = setup(r#"{"mcpServers": {}}"#);
        let plain = host_file(
            dir.path(),
            Host::Vscode,
            "settings.json",
            r#"{"editor.fontSize": 14, // mine
        }"#,
        );
        assert!(scan(&paths, &[plain]).unwrap().is_empty());
        let sub = dir.path().join("old");
        std::fs::create_dir_all(&sub).unwrap();
        let old =
            host_file(&sub, Host::Vscode, "settings.json", r#"{"mcp": {"servers": {"gh": {"command": "gh-mcp"}}}}"#);
        let found = scan(&paths, &[old]).unwrap();
        assert_eq!(found[0].entries[0].name, "gh");
    }

    #[test]
    fn windsurf_server_url_becomes_url_and_jsonc_is_read() {
        let (dir, paths) = setup(r#"{"mcpServers": {}}"#);
        let f = host_file(
            dir.path(),
            Host::Windsurf,
            "w.json",
            "{\"mcpServers\": {\"r\": {\"serverUrl\": \"https://r.example/mcp\",},},}",
        );
        let found = scan(&paths, &[f]).unwrap();
        assert_eq!(found[0].error, None, "{found:?}");
        assert_eq!(found[0].entries[0].entry.as_ref().unwrap()["url"], "https://r.example/mcp");
        assert_eq!(
            strip_jsonc(r#"{"a": "// not a comment", /* c */ "b": [1,],}"#),
            r#"{"a": "// not a comment",   "b": [1]}"#
        );
    }
}
