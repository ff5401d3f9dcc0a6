//! The config side of a server's grants: writing its `roots` to the config file, and telling an
//! edit that changed only grants (roots, log level) from one that needs a restart. Apart from
//! `roots` so that the config module can read a grant without this module's writing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::ConfigError;

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
    let granted = crate::roots::parse(Some(&value), path.parent().unwrap_or(Path::new("."))).map_err(field)?;
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
}
