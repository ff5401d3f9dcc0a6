//! Tokens and client secrets, and where they are kept between runs.
//!
//! Everything secret is a [`Secret`], whose `Debug` says nothing, so that no log line, error or
//! panic message can carry one. What outlives the process goes through a [`TokenStore`]: never
//! SQLite, never the config: the OS keyring ([`super::KeyringStore`]) or, where there is none,
//! [`FileStore`], one JSON file readable by its user only.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AuthError;
use super::registration::RegisteredClient;

/// A string that must not be shown: its `Debug` and `Display` are redacted.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// What a token endpoint granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    pub access_token: Secret,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// Unix seconds; `None` when the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// The scopes granted (the ones asked for when the answer does not say, RFC 6749 §5.1).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// Tokens this long are not tokens.
const MAX_TOKEN: usize = 64 * 1024;

impl TokenSet {
    /// RFC 6749 §5.1. `asked` are the scopes requested; `now` in Unix seconds.
    pub fn from_response(value: &Value, asked: &[String], now: i64) -> Result<TokenSet, String> {
        let access = value.get("access_token").and_then(Value::as_str).ok_or("the answer has no access_token")?;
        if access.is_empty() || access.len() > MAX_TOKEN || access.chars().any(|c| c.is_control() || c == ' ') {
            return Err("the access_token is not a usable token".into());
        }
        let token_type = value.get("token_type").and_then(Value::as_str).unwrap_or("");
        if !token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!("the token type is {token_type:?}, not Bearer"));
        }
        let refresh = value
            .get("refresh_token")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty() && r.len() <= MAX_TOKEN)
            .map(Secret::new);
        let expires_at = value
            .get("expires_in")
            .and_then(|v| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok())))
            .filter(|s| *s >= 0)
            .map(|s| now.saturating_add(s.min(10 * 365 * 86_400)));
        let scopes = match value.get("scope").and_then(Value::as_str) {
            Some(s) => super::challenge::split_scopes(s),
            None => asked.to_vec(),
        };
        Ok(TokenSet { access_token: Secret::new(access), refresh_token: refresh, expires_at, scopes })
    }

    /// Expired, or expiring within `margin` seconds: time to refresh before the next request.
    pub fn expires_within(&self, now: i64, margin: i64) -> bool {
        self.expires_at.is_some_and(|at| at <= now.saturating_add(margin))
    }

    /// The `Authorization` header value.
    pub fn authorization(&self) -> String {
        format!("Bearer {}", self.access_token.expose())
    }
}

/// Everything kept for one server's sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAuth {
    /// The `resource` the tokens are for.
    pub resource: String,
    /// The authorization server that issued the client and the tokens; a client is never used
    /// with another one.
    pub issuer: String,
    /// From the validated metadata, so that a refresh needs no discovery.
    pub token_endpoint: String,
    pub client: RegisteredClient,
    /// Every scope asked for so far: a step-up asks for these and the new ones.
    #[serde(default)]
    pub requested_scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
}

/// Where sign-ins are kept, per server (by the config's server name).
pub trait TokenStore: Send + Sync {
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, AuthError>;
    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), AuthError>;
    fn delete(&self, server: &str) -> Result<(), AuthError>;
    /// Where it keeps them, for the user ("the OS keyring", "file …, readable by you only").
    fn describe(&self) -> String;

    /// A value the config names as `${secret:KEY}` rather than holding it (a password asked when
    /// a server was imported), kept beside the sign-ins and as privately.
    fn load_secret(&self, key: &str) -> Result<Option<Secret>, AuthError> {
        let _ = key;
        Err(AuthError::Store { detail: format!("{} keeps no other secrets", self.describe()) })
    }
    fn save_secret(&self, key: &str, value: &Secret) -> Result<(), AuthError> {
        let _ = (key, value);
        Err(AuthError::Store { detail: format!("{} keeps no other secrets", self.describe()) })
    }
    /// Forgets the secret `key`; one not kept is no error.
    fn delete_secret(&self, key: &str) -> Result<(), AuthError> {
        let _ = key;
        Ok(())
    }
}

/// In memory only: a front end that must not write anything, and the tests.
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<BTreeMap<String, StoredAuth>>,
    secrets: Mutex<BTreeMap<String, String>>,
}

impl TokenStore for MemoryStore {
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, AuthError> {
        Ok(self.entries.lock().map_err(|_| poisoned())?.get(server).cloned())
    }
    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), AuthError> {
        self.entries.lock().map_err(|_| poisoned())?.insert(server.to_owned(), auth.clone());
        Ok(())
    }
    fn delete(&self, server: &str) -> Result<(), AuthError> {
        self.entries.lock().map_err(|_| poisoned())?.remove(server);
        Ok(())
    }
    fn describe(&self) -> String {
        "memory only (forgotten when Taskdeck stops)".to_owned()
    }
    fn load_secret(&self, key: &str) -> Result<Option<Secret>, AuthError> {
        Ok(self.secrets.lock().map_err(|_| poisoned())?.get(key).cloned().map(Secret::new))
    }
    fn save_secret(&self, key: &str, value: &Secret) -> Result<(), AuthError> {
        self.secrets.lock().map_err(|_| poisoned())?.insert(key.to_owned(), value.expose().to_owned());
        Ok(())
    }
    fn delete_secret(&self, key: &str) -> Result<(), AuthError> {
        self.secrets.lock().map_err(|_| poisoned())?.remove(key);
        Ok(())
    }
}

fn poisoned() -> AuthError {
    AuthError::Store { detail: "the sign-in store's lock was poisoned".into() }
}

/// One JSON file, 0600 in a 0700 folder, written whole (a temporary file renamed over it) so a
/// crash never leaves half a file. Used when there is no OS keyring.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    // One writer at a time within the process; other processes rename over whole files.
    lock: Mutex<()>,
}

#[derive(Serialize, Deserialize, Default)]
struct FileContents {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, StoredAuth>,
    /// The config's `${secret:KEY}` values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    secrets: BTreeMap<String, String>,
}

/// The file's name in the data directory.
pub const FILE_NAME: &str = "sign-ins.json";

impl FileStore {
    /// The store in Taskdeck's data directory.
    pub fn in_dir(data_dir: &Path) -> FileStore {
        FileStore::at(data_dir.join(FILE_NAME))
    }

    pub fn at(path: PathBuf) -> FileStore {
        FileStore { path, lock: Mutex::new(()) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<FileContents, AuthError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(FileContents { version: 1, ..Default::default() });
            }
            Err(e) => return Err(self.error("read", &e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| AuthError::Store {
            detail: format!("{} could not be read ({e}); remove it and sign in again", self.path.display()),
        })
    }

    fn write(&self, contents: &FileContents) -> Result<(), AuthError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| self.error("create the folder of", &e))?;
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(contents).map_err(|e| AuthError::Store { detail: e.to_string() })?;
        let written = (|| {
            let _ = std::fs::remove_file(&tmp);
            let mut file = private_file_options().write(true).create_new(true).open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.error("write", &e));
        }
        Ok(())
    }

    fn error(&self, what: &str, e: &std::io::Error) -> AuthError {
        AuthError::Store { detail: format!("could not {what} {}: {e}", self.path.display()) }
    }
}

impl TokenStore for FileStore {
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, AuthError> {
        let _guard = self.lock.lock().map_err(|_| poisoned())?;
        Ok(self.read()?.servers.remove(server))
    }

    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), AuthError> {
        let _guard = self.lock.lock().map_err(|_| poisoned())?;
        let mut contents = self.read()?;
        contents.version = 1;
        contents.servers.insert(server.to_owned(), auth.clone());
        self.write(&contents)
    }

    fn delete(&self, server: &str) -> Result<(), AuthError> {
        let _guard = self.lock.lock().map_err(|_| poisoned())?;
        let mut contents = self.read()?;
        if contents.servers.remove(server).is_some() {
            self.write(&contents)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "the file {}, readable by you only (no OS keyring is used: anyone who can read your files as you can read it)",
            self.path.display()
        )
    }

    fn load_secret(&self, key: &str) -> Result<Option<Secret>, AuthError> {
        let _guard = self.lock.lock().map_err(|_| poisoned())?;
        Ok(self.read()?.secrets.remove(key).map(Secret::new))
    }

    fn save_secret(&self, key: &str, value: &Secret) -> Result<(), AuthError> {
        let _guard = self.lock.lock().map_err(|_| poisoned())?;
        let mut contents = self.read()?;
        contents.version = 1;
        contents.secrets.insert(key.to_owned(), value.expose().to_owned());
        self.write(&contents)
    }

    fn delete_secret(&self, key: &str) -> Result<(), AuthError> {
        let _guard = self.lock.lock().map_err(|_| poisoned())?;
        let mut contents = self.read()?;
        if contents.secrets.remove(key).is_some() {
            self.write(&contents)?;
        }
        Ok(())
    }
}

// The same rule as `taskdeck_store::private_fs` (0600 files, 0700 folders on Unix; Windows'
// per-user profile folders are private already), kept here because the client crate does not
// depend on the store.
fn private_file_options() -> std::fs::OpenOptions {
    #[allow(unused_mut)] // Only Unix has a mode to set.
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_never_show_in_debug() {
        let t = TokenSet::from_response(
            &json!({"access_token": "AT-123", "token_type": "bearer", "refresh_token": "RT-456", "expires_in": 60}),
            &["a".into()],
            1000,
        )
        .expect("tokens");
        let shown = format!("{t:?}");
        assert!(!shown.contains("AT-123") && !shown.contains("RT-456"), "{shown}");
        assert_eq!(t.expires_at, Some(1060));
        assert_eq!(t.scopes, vec!["a"]);
        assert!(t.expires_within(1050, 30));
        assert!(!t.expires_within(1000, 30));
    }

    #[test]
    fn a_token_answer_that_is_not_bearer_or_has_no_token_is_refused() {
        assert!(TokenSet::from_response(&json!({"access_token": "x", "token_type": "mac"}), &[], 0).is_err());
        assert!(TokenSet::from_response(&json!({"token_type": "Bearer"}), &[], 0).is_err());
        assert!(TokenSet::from_response(&json!({"access_token": "a b", "token_type": "Bearer"}), &[], 0).is_err());
        let t = TokenSet::from_response(
            &json!({"access_token": "x", "token_type": "Bearer", "expires_in": -5, "scope": "b a b"}),
            &[],
            0,
        )
        .expect("tokens");
        assert_eq!(t.expires_at, None);
        assert_eq!(t.scopes, vec!["b", "a"]);
    }
}
