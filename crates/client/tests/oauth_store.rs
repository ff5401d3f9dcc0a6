//! Where sign-ins are kept: the OS keyring when one answers, else a file only its user can read,
//! with a note that says so.

use taskdeck_client::auth::{
    ClientOrigin, FileStore, KeyringStore, RegisteredClient, Secret, StoredAuth, TokenAuthMethod, TokenSet, TokenStore,
    default_store,
};

fn sample(token_len: usize) -> StoredAuth {
    StoredAuth {
        resource: "https://mcp.example.com/mcp".into(),
        issuer: "https://auth.example.com".into(),
        token_endpoint: "https://auth.example.com/token".into(),
        client: RegisteredClient {
            client_id: "dyn-1".into(),
            client_secret: Some(Secret::new("client-secret-value")),
            auth_method: TokenAuthMethod::ClientSecretBasic,
            issuer: "https://auth.example.com".into(),
            redirect_uri: Some("http://127.0.0.1:4567/callback".into()),
            origin: ClientOrigin::Dynamic,
        },
        requested_scopes: vec!["mcp:read".into()],
        tokens: Some(TokenSet {
            access_token: Secret::new("a".repeat(token_len)),
            refresh_token: Some(Secret::new("refresh-token-value")),
            expires_at: Some(1_900_000_000),
            scopes: vec!["mcp:read".into()],
        }),
    }
}

#[test]
fn the_default_store_is_the_keyring_or_a_private_file_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, note) = default_store(dir.path());
    // Set where a Secret Service runs (`dbus-run-session` with `gnome-keyring-daemon --unlock`),
    // so that the keyring path itself is what is tested.
    if std::env::var_os("TASKDECK_TEST_KEYRING").is_some() {
        assert_eq!(note, None, "a keyring was expected");
        assert_eq!(store.describe(), "the OS keyring");
    }
    match KeyringStore::available() {
        Ok(_) => assert_eq!(note, None),
        Err(why) => {
            let note = note.expect("a note when there is no keyring");
            assert!(note.contains(&why) && note.contains("readable by you only"), "{note}");
            assert!(store.describe().contains("readable by you only"));
        }
    }
    // Large enough to need pieces in a keyring that caps entries.
    let server = format!("oauth-store-test-{}", std::process::id());
    let auth = sample(5000);
    store.save(&server, &auth).expect("saved");
    assert_eq!(store.load(&server).expect("loaded"), Some(auth));
    let smaller = sample(10);
    store.save(&server, &smaller).expect("saved again");
    assert_eq!(store.load(&server).expect("loaded"), Some(smaller));
    store.delete(&server).expect("deleted");
    assert_eq!(store.load(&server).expect("loaded"), None);
}

#[test]
fn the_sign_in_file_keeps_servers_apart_and_survives_a_new_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = FileStore::in_dir(dir.path());
    a.save("one", &sample(10)).expect("saved");
    a.save("two", &sample(20)).expect("saved");
    a.delete("one").expect("deleted");
    let b = FileStore::in_dir(dir.path());
    assert_eq!(b.load("one").expect("loaded"), None);
    assert_eq!(b.load("two").expect("loaded"), Some(sample(20)));
    let text = std::fs::read_to_string(b.path()).expect("file");
    assert!(text.contains("refresh-token-value"), "the file is the secret store");
    assert!(!format!("{:?}", sample(10)).contains("refresh-token-value"), "but Debug never shows it");
}

#[test]
fn a_damaged_sign_in_file_says_to_sign_in_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FileStore::in_dir(dir.path());
    std::fs::write(store.path(), b"{not json").expect("write");
    let err = store.load("one").expect_err("damaged");
    assert!(err.to_string().contains("sign in again"), "{err}");
}
