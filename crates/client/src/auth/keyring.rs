//! The OS keyring as a [`TokenStore`]: the Secret Service on Linux, the Credential Manager on
//! Windows, the Keychain on macOS, through the `keyring` crate. Where none answers (no session
//! bus, a headless machine), [`default_store`] falls back to the [`FileStore`] and says why.
//!
//! The keyring's calls block (D-Bus round trips, a possible unlock prompt): async callers run
//! them on a blocking thread.

use std::path::Path;

use super::AuthError;
use super::tokens::{FileStore, Secret, StoredAuth, TokenStore};

/// The keyring's service name for every Taskdeck entry; each server is one account in it.
pub const SERVICE: &str = "dev.taskdeck.sign-in";
/// Windows caps a credential at 2560 bytes; a sign-in (two JWTs and a client) can be larger, so
/// it is kept in pieces of at most this many bytes.
const PIECE: usize = 2000;
const MAX_PIECES: usize = 64;

/// Picks where sign-ins are kept: the OS keyring when it answers, else the file in `data_dir`.
/// The note says why the keyring is not used, for the user.
pub fn default_store(data_dir: &Path) -> (Box<dyn TokenStore>, Option<String>) {
    match KeyringStore::available() {
        Ok(store) => (Box::new(store), None),
        Err(why) => {
            let file = FileStore::in_dir(data_dir);
            let note = format!(
                "no OS keyring is available ({why}); sign-ins are kept in {}, readable by you only",
                file.path().display()
            );
            (Box::new(file), Some(note))
        }
    }
}

/// Sign-ins in the OS keyring.
#[derive(Debug)]
pub struct KeyringStore {
    service: String,
}

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
impl KeyringStore {
    /// The keyring, if it answers a lookup now.
    pub fn available() -> Result<KeyringStore, String> {
        KeyringStore::with_service(SERVICE)
    }

    /// Under another service name (the tests use their own).
    pub fn with_service(service: &str) -> Result<KeyringStore, String> {
        let store = KeyringStore { service: service.to_owned() };
        match store.entry("probe").map_err(|e| e.to_string())?.get_password() {
            Ok(_) | Err(keyring::Error::NoEntry) => Ok(store),
            Err(e) => Err(e.to_string()),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, AuthError> {
        keyring::Entry::new(&self.service, account).map_err(store_error)
    }

    fn get(&self, account: &str) -> Result<Option<String>, AuthError> {
        match self.entry(account)?.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(store_error(e)),
        }
    }

    fn remove(&self, account: &str) -> Result<(), AuthError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }

    /// The head entry holds the JSON, or `pieces:N` with the JSON in `server#1`..`server#N`.
    fn pieces(head: &str) -> Option<usize> {
        head.strip_prefix("pieces:")?.parse().ok().filter(|n| *n <= MAX_PIECES)
    }
}

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
impl TokenStore for KeyringStore {
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, AuthError> {
        let Some(head) = self.get(server)? else { return Ok(None) };
        let json = match KeyringStore::pieces(&head) {
            Some(n) => {
                let mut json = String::new();
                for i in 1..=n {
                    match self.get(&format!("{server}#{i}"))? {
                        Some(p) => json.push_str(&p),
                        None => {
                            return Err(AuthError::Store {
                                detail: "a piece of the sign-in is missing from the keyring; sign in again".into(),
                            });
                        }
                    }
                }
                json
            }
            None => head,
        };
        serde_json::from_str(&json).map(Some).map_err(|e| AuthError::Store {
            detail: format!("the keyring's sign-in could not be read ({e}); sign in again"),
        })
    }

    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), AuthError> {
        let json = serde_json::to_string(auth).map_err(|e| AuthError::Store { detail: e.to_string() })?;
        let old = self.get(server)?.as_deref().and_then(KeyringStore::pieces).unwrap_or(0);
        if json.len() <= PIECE {
            self.entry(server)?.set_password(&json).map_err(store_error)?;
        } else {
            let chunks = split_at_chars(&json, PIECE);
            if chunks.len() > MAX_PIECES {
                return Err(AuthError::Store { detail: "the sign-in is too large for the keyring".into() });
            }
            for (i, chunk) in chunks.iter().enumerate() {
                self.entry(&format!("{server}#{}", i + 1))?.set_password(chunk).map_err(store_error)?;
            }
            self.entry(server)?.set_password(&format!("pieces:{}", chunks.len())).map_err(store_error)?;
            for i in chunks.len() + 1..=old {
                self.remove(&format!("{server}#{i}"))?;
            }
            return Ok(());
        }
        for i in 1..=old {
            self.remove(&format!("{server}#{i}"))?;
        }
        Ok(())
    }

    fn delete(&self, server: &str) -> Result<(), AuthError> {
        let old = self.get(server)?.as_deref().and_then(KeyringStore::pieces).unwrap_or(0);
        for i in 1..=old {
            self.remove(&format!("{server}#{i}"))?;
        }
        self.remove(server)
    }

    fn describe(&self) -> String {
        "the OS keyring".to_owned()
    }

    fn load_secret(&self, key: &str) -> Result<Option<Secret>, AuthError> {
        Ok(self.get(&secret_account(key))?.map(Secret::new))
    }

    fn save_secret(&self, key: &str, value: &Secret) -> Result<(), AuthError> {
        self.entry(&secret_account(key))?.set_password(value.expose()).map_err(store_error)
    }

    fn delete_secret(&self, key: &str) -> Result<(), AuthError> {
        self.remove(&secret_account(key))
    }
}

/// A config secret's account, apart from the sign-ins' (which are server names).
#[cfg(any(target_os = "linux", target_os = "macos", windows))]
fn secret_account(key: &str) -> String {
    format!("config-secret:{key}")
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
impl KeyringStore {
    /// No keyring backend is built for this platform.
    pub fn available() -> Result<KeyringStore, String> {
        Err("Taskdeck has no keyring backend for this platform".into())
    }
}

#[cfg(any(target_os = "linux", target_os = "macos", windows))]
fn store_error(e: keyring::Error) -> AuthError {
    AuthError::Store { detail: format!("the OS keyring: {e}") }
}

fn split_at_chars(s: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = rest.len().min(max);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_split_at_character_boundaries() {
        let s = "é".repeat(1500);
        let parts = split_at_chars(&s, PIECE);
        assert!(parts.iter().all(|p| p.len() <= PIECE));
        assert_eq!(parts.concat(), s);
    }
}
