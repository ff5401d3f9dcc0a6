//! `${secret:KEY}` in a config entry: a value the config names rather than holds (a password a
//! VS Code `inputs` entry asked for at import), kept in the sign-in store (the OS keyring, or the
//! 0600 file without one) and put in only when the server starts, so it is never in the config,
//! the store, a log or what a front end is shown.
//!
//! The loader keeps the reference as written (in `env` values, `args` and header values); the
//! supervisor calls [`resolve_with`] on the endpoint it is about to connect to.

use taskdeck_client::auth::{Secret, TokenStore};
use taskdeck_client::{ClientError, Endpoint};

const OPEN: &str = "${secret:";

/// The text a config holds in place of the secret `key`.
pub fn reference(key: &str) -> String {
    format!("{OPEN}{key}}}")
}

/// Whether `text` names a secret.
pub fn has_reference(text: &str) -> bool {
    text.contains(OPEN)
}

/// A key is what an import makes (`server.input`): letters, digits and `._-`, so that it can be
/// found again in the text and never runs into what follows it.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The keys of the secrets named anywhere in `value` (an entry of the config), sorted, once each.
pub fn keys_in(value: &serde_json::Value) -> Vec<String> {
    let mut keys = Vec::new();
    let mut visit = vec![value];
    while let Some(v) = visit.pop() {
        match v {
            serde_json::Value::String(s) => {
                let mut rest = s.as_str();
                while let Some(at) = rest.find(OPEN) {
                    let after = &rest[at + OPEN.len()..];
                    let Some(end) = after.find('}') else { break };
                    if valid_key(&after[..end]) && !keys.iter().any(|k| k == &after[..end]) {
                        keys.push(after[..end].to_owned());
                    }
                    rest = &after[end + 1..];
                }
            }
            serde_json::Value::Array(a) => visit.extend(a),
            serde_json::Value::Object(o) => visit.extend(o.values()),
            _ => {}
        }
    }
    keys.sort();
    keys
}

/// `text` with every `${secret:KEY}` replaced by the secret's value; `Err` names the key that is
/// missing or malformed (never a value).
pub fn substitute(text: &str, lookup: &impl Fn(&str) -> Result<Option<Secret>, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let end = after.find('}').ok_or("has an unclosed ${secret:")?;
        let key = &after[..end];
        if !valid_key(key) {
            return Err(format!("${{secret:{key}}} does not name a secret"));
        }
        match lookup(key)? {
            Some(v) => out.push_str(v.expose()),
            None => {
                return Err(format!(
                    "the secret {key} (from ${{secret:{key}}}) is not kept on this machine; import the server again \
                     to enter it"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `endpoint` with its secrets put in, read from the store `store` gives (which may block: call it
/// on a blocking thread). An endpoint naming none is returned as it is, and `store` is not called:
/// a local-only config never waits for a keyring.
pub fn resolve_with<S: std::ops::Deref<Target = dyn TokenStore>>(
    endpoint: &Endpoint,
    store: impl FnOnce() -> Option<S>,
) -> Result<Endpoint, ClientError> {
    let (server, mentions) = match endpoint {
        Endpoint::Stdio(s) => {
            (&s.name, s.args.iter().any(|a| has_reference(a)) || s.env.values().any(|v| has_reference(v)))
        }
        Endpoint::Http(h) => (&h.name, h.headers.values().any(|v| has_reference(v))),
    };
    if !mentions {
        return Ok(endpoint.clone());
    }
    let fail = |message: String| ClientError::Spawn { server: server.clone(), command: endpoint.describe(), message };
    let store =
        store().ok_or_else(|| fail("no secret store is available to read its ${secret:…} values from".into()))?;
    let lookup = |key: &str| store.load_secret(key).map_err(|e| e.to_string());
    let mut endpoint = endpoint.clone();
    match &mut endpoint {
        Endpoint::Stdio(s) => {
            for a in &mut s.args {
                *a = substitute(a, &lookup).map_err(&fail)?;
            }
            for v in s.env.values_mut() {
                *v = substitute(v, &lookup).map_err(&fail)?;
            }
        }
        Endpoint::Http(h) => {
            for v in h.headers.values_mut() {
                *v = substitute(v, &lookup).map_err(&fail)?;
            }
        }
    }
    Ok(endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use taskdeck_client::ServerSpec;
    use taskdeck_client::auth::{FileStore, MemoryStore};

    fn stdio(env: &[(&str, &str)], args: &[&str]) -> Endpoint {
        Endpoint::Stdio(ServerSpec {
            name: "s".into(),
            command: "cmd".into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
            cwd: None,
            inherit_env: false,
        })
    }

    fn store_ref(store: &MemoryStore) -> &(dyn TokenStore + 'static) {
        store
    }

    #[test]
    fn a_secret_reference_is_replaced_when_the_server_starts() {
        let store = MemoryStore::default();
        store.save_secret("s.api-key", &Secret::new("k-123")).unwrap();
        let e = resolve_with(&stdio(&[("API_KEY", "${secret:s.api-key}")], &["--key=${secret:s.api-key}"]), || {
            Some(store_ref(&store))
        })
        .unwrap();
        let Endpoint::Stdio(s) = e else { panic!("stdio") };
        assert_eq!(s.env["API_KEY"], "k-123");
        assert_eq!(s.args, ["--key=k-123"]);
    }

    #[test]
    fn a_missing_secret_fails_the_start_naming_the_key_not_a_value() {
        let store = MemoryStore::default();
        let e = resolve_with(&stdio(&[("API_KEY", "${secret:s.gone}")], &[]), || Some(store_ref(&store))).unwrap_err();
        let shown = e.to_string();
        assert!(shown.contains("s.gone") && shown.contains("import the server again"), "{shown}");
        let plain = stdio(&[("A", "b")], &[]);
        let no_store = || -> Option<Box<dyn TokenStore>> { panic!("no reference, no store needed") };
        assert_eq!(resolve_with(&plain, no_store).unwrap(), plain);
    }

    #[test]
    fn the_secrets_an_entry_names_are_found_once_each() {
        let entry = serde_json::json!({"env": {"A": "${secret:s.a}", "B": "x${secret:s.b}y${secret:s.a}"}, "args": ["${secret:bad key}"]});
        assert_eq!(keys_in(&entry), ["s.a", "s.b"]);
    }

    #[test]
    fn the_file_store_keeps_secrets_beside_sign_ins_privately() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::in_dir(dir.path());
        store.save_secret("a.b", &Secret::new("v1")).unwrap();
        assert_eq!(
            FileStore::in_dir(dir.path()).load_secret("a.b").unwrap().map(|s| s.expose().to_owned()),
            Some("v1".into())
        );
        assert!(store.load("a").unwrap().is_none());
        store.delete_secret("a.b").unwrap();
        assert!(store.load_secret("a.b").unwrap().is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
