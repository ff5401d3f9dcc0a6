//! The config side of a server's grants: writing its `roots` to the config file, and telling an
//! edit that changed only grants (roots, log level) from one that needs a restart. Apart from
//! `roots` so that the config module can read a grant without this module's writing, which goes
//! through `config_edit`, the config's one writer.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{ConfigError, Paths};
use crate::config_edit::{ConfigFile, EditError};

/// Writes `roots` as the `roots` of `server`'s entry in the config file at `path`, through the
/// config's one writer ([`ConfigFile`]): everything else in the file kept as written (key order
/// included), privately and atomically (the app watches the file; it must never read half of it),
/// within the size a load reads. An empty grant removes the key. The grant is checked as a load
/// would check it before anything is written.
pub fn write_grant(path: &Path, server: &str, roots: &[String]) -> Result<Vec<PathBuf>, ConfigError> {
    let field = |reason: String| ConfigError::Field {
        file: path.to_owned(),
        field: format!("mcpServers.{server}.roots"),
        reason,
    };
    let edit_error = |e: EditError| match e {
        EditError::Config(e) => e,
        EditError::NotFound { .. } => field("the server has no entry in this file".into()),
        EditError::Invalid { field, reason } => ConfigError::Field { file: path.to_owned(), field, reason },
        EditError::Write { reason, .. } => field(format!("cannot write the config: {reason}")),
        e @ EditError::Exists { .. } => field(e.to_string()),
    };
    // A grant only ever edits a file that is there, so the data directory (which names the demo
    // entry of a config not written yet) plays no part.
    let mut file =
        ConfigFile::open(&Paths { config: path.to_owned(), data_dir: PathBuf::new() }).map_err(edit_error)?;
    if !file.exists() {
        return Err(ConfigError::Read {
            file: path.to_owned(),
            reason: "there is no config file yet (the built-in default is in use): edit the config first".into(),
        });
    }
    let value = Value::from(roots.iter().map(|r| Value::from(r.trim())).collect::<Vec<_>>());
    let granted = crate::roots::parse(Some(&value), path.parent().unwrap_or(Path::new("."))).map_err(field)?;
    file.set_key(server, "roots", (!roots.is_empty()).then_some(value)).map_err(edit_error)?;
    file.save().map_err(edit_error)?;
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

    #[test]
    fn a_grant_that_would_make_the_config_too_large_to_load_is_refused_and_the_file_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("servers.json");
        // Just under what a load reads; the grant tips it over.
        let pad = "x".repeat(crate::config::MAX_CONFIG_BYTES as usize - 200);
        let text = format!(r#"{{"mcpServers": {{"zed": {{"command": "z"}}}}, "notes": "{pad}"}}"#);
        std::fs::write(&path, &text).unwrap();
        let long = format!("/home/me/{}", "deep/".repeat(60));
        let e = write_grant(&path, "zed", &[long]).unwrap_err().to_string();
        assert!(e.contains("mcpServers.zed.roots") && e.contains("larger than"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "nothing written");
    }
}
