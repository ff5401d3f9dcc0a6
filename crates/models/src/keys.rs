//! API keys, in the sign-in store the remote servers' sign-ins use (the OS keyring, or the 0600
//! file where there is none; `TASKDECK_SIGN_IN_STORE=file` picks the file): one store for every
//! secret Taskdeck keeps, never `settings.json`, a log or an event.
//!
//! A key is kept as a sign-in whose only token is the key, under the account
//! `model-provider:NAME`, apart from the servers' accounts (their config names). The store's calls
//! may block (D-Bus): async callers run these on a blocking thread.

use taskdeck_client::auth::registration::{ClientOrigin, RegisteredClient, TokenAuthMethod};
use taskdeck_client::auth::{Secret, StoredAuth, TokenSet, TokenStore};

use crate::ModelError;

/// The account prefix of every provider's key in the store.
pub const ACCOUNT_PREFIX: &str = "model-provider:";

/// A key longer than this is not a key (and would need the keyring's pieces).
pub const MAX_KEY_BYTES: usize = 1024;

pub fn account(provider: &str) -> String {
    format!("{ACCOUNT_PREFIX}{provider}")
}

fn store_error(e: impl std::fmt::Display) -> ModelError {
    ModelError::Store(e.to_string())
}

/// Keeps the key for a provider, replacing any earlier one.
pub fn save_key(store: &dyn TokenStore, provider: &str, key: &str) -> Result<(), ModelError> {
    let key = key.trim();
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(|c| c.is_control() || c == ' ') {
        return Err(ModelError::Config {
            provider: provider.into(),
            detail: format!("an API key is 1 to {MAX_KEY_BYTES} printable characters without spaces"),
        });
    }
    let account = account(provider);
    let auth = StoredAuth {
        resource: account.clone(),
        issuer: String::new(),
        token_endpoint: String::new(),
        client: RegisteredClient {
            client_id: String::new(),
            client_secret: None,
            auth_method: TokenAuthMethod::None,
            issuer: String::new(),
            redirect_uri: None,
            origin: ClientOrigin::Preregistered,
        },
        requested_scopes: Vec::new(),
        tokens: Some(TokenSet {
            access_token: Secret::new(key),
            refresh_token: None,
            expires_at: None,
            scopes: Vec::new(),
        }),
    };
    store.save(&account, &auth).map_err(store_error)
}

/// The provider's key; `None` when none is kept (a local server that needs none).
pub fn load_key(store: &dyn TokenStore, provider: &str) -> Result<Option<Secret>, ModelError> {
    let auth = store.load(&account(provider)).map_err(store_error)?;
    Ok(auth.and_then(|a| a.tokens).map(|t| t.access_token))
}

pub fn delete_key(store: &dyn TokenStore, provider: &str) -> Result<(), ModelError> {
    store.delete(&account(provider)).map_err(store_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskdeck_client::auth::FileStore;

    #[test]
    fn a_key_round_trips_through_the_file_store_and_is_gone_when_deleted() {
        let dir = tempfile::tempdir().expect("dir");
        let store = FileStore::in_dir(dir.path());
        save_key(&store, "work", "sk-test-123").expect("save");
        assert_eq!(
            load_key(&store, "work").expect("load").map(|s| s.expose().to_owned()).as_deref(),
            Some("sk-test-123")
        );
        assert!(load_key(&store, "other").expect("load").is_none());
        delete_key(&store, "work").expect("delete");
        assert!(load_key(&store, "work").expect("load").is_none());
    }

    #[test]
    fn a_key_with_spaces_or_nothing_in_it_is_refused() {
        let store = taskdeck_client::auth::MemoryStore::default();
        assert!(save_key(&store, "p", "  ").is_err());
        assert!(save_key(&store, "p", "two words").is_err());
    }
}
