//! The directories the user grants a server (`"roots": ["/path", ...]` in its config entry; none by
//! default), and the one reading of that grant as MCP roots ([`as_roots`]): what a legacy
//! `roots/list` is answered with, and what a modern roots input request is answered from
//! (`Hub::roots_for`). Writing the grant to the config file is `roots_edit`'s.
//!
//! A grant is the user's word, so it is taken as written: absolute paths only (relative ones are
//! taken beside the config file when it is read), never checked for existence at load (a
//! removable disk may come and go), and never widened: a path is a root, not its parent.

use std::path::{Path, PathBuf};

use serde_json::Value;
use taskdeck_protocol::types::Root;

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
    fn roots_are_file_uris_named_by_their_folder() {
        let roots = as_roots(&[PathBuf::from("/home/me/my notes"), PathBuf::from("/")]);
        assert_eq!(roots[0].uri, "file:///home/me/my%20notes");
        assert_eq!(roots[0].name.as_deref(), Some("my notes"));
        assert_eq!(roots[1].uri, "file:///");
        assert_eq!(file_uri(Path::new("/tmp/%?#ü")), "file:///tmp/%25%3F%23%C3%BC");
    }
}
