//! The directories the user grants a server (`"roots": ["/path", ...]` in its config entry; none by
//! default), and the one reading of that grant as MCP roots: what a legacy `roots/list` is
//! answered with, and what a modern roots input request is answered from ([`roots_for`]).
//!
//! A grant is the user's word, so it is taken as written: absolute paths only (relative ones are
//! taken beside the config file when it is read), never checked for existence at load (a
//! removable disk may come and go), and never widened: a path is a root, not its parent.

use std::path::{Path, PathBuf};

use serde_json::Value;
use taskdeck_protocol::types::Root;

use crate::config::ConfigError;

/// More than this many roots in one entry is a mistake, not a grant.
pub const MAX_ROOTS: usize = 256;

/// The `roots` key of an entry: an array of directory paths, relative ones beside the config file.
pub fn parse(value: Option<&Value>, config_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("must be an array of directory paths".into()),
    };
    if items.len() > MAX_ROOTS {
        return Err(format!("at most {MAX_ROOTS} directories"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(text) = item.as_str().filter(|t| !t.trim().is_empty()) else {
            return Err(format!("item {i} must be a non-empty path"));
        };
        let path = PathBuf::from(text);
        let path = if path.is_relative() { config_dir.join(path) } else { path };
        if !out.contains(&path) {
            out.push(path);
        }
    }
    Ok(out)
}

/// The grant as MCP roots: a `file://` URI per directory, named by its last component.
pub fn as_roots(paths: &[PathBuf]) -> Vec<Root> {
    paths.iter().map(|p| Root { uri: file_uri(p), name: Some(root_name(p)) }).collect()
}

fn root_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// `file://` and the absolute path, percent-encoded where a URI may not hold the byte as is
/// (RFC 3986 path characters stay, so `/home/me/my notes` is `file:///home/me/my%20notes`).
pub fn file_uri(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut uri = String::from("file://");
    // A Windows drive path (`C:/x`) is `file:///C:/x`.
    if !text.starts_with('/') {
        uri.push('/');
    }
    for b in text.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b);
        if keep {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The roots `server` is granted now: what a modern `roots/list` input request is answered with,
/// and the same list a legacy `roots/list` gets. Empty for a server not configured (or removed).
pub(crate) fn roots_for(servers: &crate::servers::Servers, server: &str) -> Vec<Root> {
    servers.get(server).map(|s| s.roots()).unwrap_or_default()
}

/// Writes `roots` as the `roots` of `server`'s entry in the config file at `path`, everything else
/// in the file kept as written (key order included), privately and atomically (the app watches the
/// file; it must never read half of it). An empty grant removes the key. The grant is checked as a
/// load would check it before anything is written. Self-contained on purpose: one function to
/// switch to a general config editor.
pub fn write_grant(path: &Path, server: &str, roots: &[String]) -> Result<Vec<PathBuf>, ConfigError> {
    let read_err = |reason: String| ConfigError::Read { file: path.to_owned(), reason };
    let text = crate::config::read_limited(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            read_err("there is no config file yet (the built-in default is in use): edit the config first".into())
        }
        _ => read_err(e.to_string()),
    })?;
    let mut root: Value =
        serde_json::from_str(&text).map_err(|e| ConfigError::Json { file: path.to_owned(), reason: e.to_string() })?;
    let field = |reason: String| ConfigError::Field {
        file: path.to_owned(),
        field: format!("mcpServers.{server}.roots"),
        reason,
    };
    let entry = root
        .get_mut("mcpServers")
        .and_then(|m| m.get_mut(server))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| field("the server has no entry in this file".into()))?;
    let value = Value::from(roots.iter().map(|r| Value::from(r.trim())).collect::<Vec<_>>());
    let granted = parse(Some(&value), path.parent().unwrap_or(Path::new("."))).map_err(field)?;
    if roots.is_empty() {
        entry.remove("roots");
    } else {
        entry.insert("roots".into(), value);
    }
    let text = serde_json::to_string_pretty(&root).unwrap_or_default() + "\n";
    taskdeck_store::private_fs::write_atomic(path, text.as_bytes()).map_err(|e| read_err(e.to_string()))?;
    Ok(granted)
}

/// Whether two entries of one server differ in their grants (roots, log level) at most: such an
/// edit is applied to the running server rather than restarting it.
pub(crate) fn same_apart_from_grants(a: &crate::config::ServerConfig, b: &crate::config::ServerConfig) -> bool {
    let strip = |c: &crate::config::ServerConfig| {
        let mut c = c.clone();
        c.settings.roots.clear();
        c.settings.log_level = None;
        c
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_grant_is_absolute_paths_without_repeats_and_none_by_default() {
        let dir = Path::new("/etc/taskdeck");
        assert!(parse(None, dir).unwrap().is_empty());
        let paths = parse(Some(&json!(["/home/me/notes", "work", "/home/me/notes"])), dir).unwrap();
        assert_eq!(paths, [PathBuf::from("/home/me/notes"), PathBuf::from("/etc/taskdeck/work")]);
        assert!(parse(Some(&json!("/home")), dir).unwrap_err().contains("array"));
        assert!(parse(Some(&json!([""])), dir).unwrap_err().contains("item 0"));
        assert!(parse(Some(&json!([1])), dir).is_err());
    }

    #[test]
    fn a_written_grant_keeps_the_rest_of_the_file_and_an_empty_one_removes_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        let text = r#"{"mcpServers": {"zed": {"command": "z", "env": {"TOKEN": "t"}}, "alpha": {"command": "a"}}, "other": 1}"#;
        std::fs::write(&path, text).unwrap();
        let granted = write_grant(&path, "zed", &["/home/me/notes".into()]).unwrap();
        assert_eq!(granted, [PathBuf::from("/home/me/notes")]);
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back["mcpServers"]["zed"]["roots"], serde_json::json!(["/home/me/notes"]));
        assert_eq!(back["mcpServers"]["zed"]["env"]["TOKEN"], "t");
        assert_eq!(back["mcpServers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["zed", "alpha"]);
        assert_eq!(back["other"], 1);
        write_grant(&path, "zed", &[]).unwrap();
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(back["mcpServers"]["zed"].get("roots").is_none());
        assert!(write_grant(&path, "nobody", &[]).unwrap_err().to_string().contains("no entry"));
        assert!(write_grant(&path, "zed", &["".into()]).is_err());
        assert!(write_grant(&dir.path().join("absent.json"), "zed", &[]).is_err());
    }

    #[test]
    fn roots_are_file_uris_named_by_their_folder() {
        let roots = as_roots(&[PathBuf::from("/home/me/my notes"), PathBuf::from("/")]);
        assert_eq!(roots[0].uri, "file:///home/me/my%20notes");
        assert_eq!(roots[0].name.as_deref(), Some("my notes"));
        assert_eq!(roots[1].uri, "file:///");
        assert_eq!(file_uri(Path::new("/tmp/%?#ü")), "file:///tmp/%25%3F%23%C3%BC");
    }
}
