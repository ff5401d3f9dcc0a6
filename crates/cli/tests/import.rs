//! `taskdeck-cli import`: the real binary reading sample Claude Desktop, Cursor and VS Code files
//! at their usual places under a temporary HOME (and XDG_CONFIG_HOME, APPDATA), writing Taskdeck's
//! config, after which `servers` lists the imported servers and a task runs on one of them.

// The main test starts a server through `sh`, so it is Unix-only; its helpers are unused elsewhere.
#![cfg_attr(not(unix), allow(dead_code))]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use taskdeck_test_support::cli::{Out, cli_command, output_with_input};
use taskdeck_test_support::demo_server_entry;

const CLI: &str = env!("CARGO_BIN_EXE_taskdeck-cli");

/// A home folder of its own, with the other hosts' files in it, and Taskdeck's config and data.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home { dir: tempfile::tempdir().unwrap() }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn xdg(&self) -> PathBuf {
        self.dir.path().join("xdg")
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("taskdeck").join("servers.json")
    }

    fn write(&self, path: PathBuf, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn claude(&self, v: Value) -> PathBuf {
        self.write(self.xdg().join("Claude/claude_desktop_config.json"), &serde_json::to_string_pretty(&v).unwrap())
    }

    fn cursor(&self, v: Value) -> PathBuf {
        self.write(self.home().join(".cursor/mcp.json"), &serde_json::to_string_pretty(&v).unwrap())
    }

    fn vscode(&self, text: &str) -> PathBuf {
        self.write(self.xdg().join("Code/User/mcp.json"), text)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = cli_command(CLI, &self.config(), &self.dir.path().join("data"), args);
        c.env("HOME", self.home()).env("XDG_CONFIG_HOME", self.xdg()).env("APPDATA", self.xdg());
        c.env("USERPROFILE", self.home()).env("TASKDECK_SIGN_IN_STORE", "file");
        c
    }

    fn run(&self, args: &[&str]) -> Out {
        self.cmd(args).output().unwrap().into()
    }

    fn run_with_input(&self, args: &[&str], input: &str) -> Out {
        output_with_input(self.cmd(args), input).into()
    }

    fn state(&self, name: &str) -> PathBuf {
        self.dir.path().join("state").join(name)
    }
}

/// The demo server behind `sh`, which starts it only when `DEMO_TOKEN` holds `token` (split in two
/// quoted halves, so the script itself never holds it whole): a server that runs proves the secret
/// reached its environment.
fn demo_wanting_token(state: &Path, token: &str) -> Value {
    let (a, b) = token.split_at(token.len() / 2);
    let token = format!("\"{a}\"\"{b}\"");
    let demo = demo_server_entry(state);
    let mut args = vec![
        json!("-c"),
        json!(format!("test \"$DEMO_TOKEN\" = {token} && exec \"$0\" \"$@\"")),
        demo["command"].clone(),
    ];
    args.extend(demo["args"].as_array().unwrap().iter().cloned());
    json!({"type": "stdio", "command": "sh", "args": args, "env": {"DEMO_TOKEN": "${input:demo-token}"}})
}

fn names(servers: &Value) -> Vec<String> {
    servers.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect()
}

#[cfg(unix)]
#[test]
fn servers_from_claude_cursor_and_vscode_are_imported_and_run() {
    let h = Home::new();
    let claude = h.claude(json!({"mcpServers": {
        "claude-demo": demo_server_entry(&h.state("claude")),
        "old-sse": {"type": "sse", "url": "https://o.example/sse"},
    }}));
    let cursor = h.cursor(json!({"mcpServers": {
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Team": "ops"}},
    }}));
    let vscode = h.vscode(&format!(
        r#"{{
  // VS Code keeps comments in its JSON
  "inputs": [{{"type": "promptString", "id": "demo-token", "description": "Demo token", "password": true}}],
  "servers": {{"vs-demo": {}}},
}}"#,
        demo_wanting_token(&h.state("vscode"), "s3cret")
    ));
    let originals: Vec<(PathBuf, Vec<u8>)> =
        [&claude, &cursor, &vscode].iter().map(|p| ((*p).clone(), std::fs::read(p).unwrap())).collect();

    // Listing changes nothing and says what each file holds.
    let out = h.run(&["import"]);
    assert_eq!(out.code, 0, "{out:?}");
    for shown in ["Claude Desktop", "claude-demo", "Cursor", "remote", "VS Code", "vs-demo", "demo-token (a secret)"] {
        assert!(out.stdout.contains(shown), "{shown}: {out:?}");
    }
    assert!(out.stdout.contains("old-sse") && out.stdout.contains("cannot be imported"), "{out:?}");
    assert!(!h.config().exists(), "listing wrote the config");

    let out = h.run_with_input(&["import", "--all"], "s3cret\n");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("imported claude-demo, remote, vs-demo"), "{out:?}");
    assert!(out.stderr.contains("skipped old-sse"), "{out:?}");
    for (path, bytes) in &originals {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{} was changed", path.display());
    }
    let written = std::fs::read_to_string(h.config()).unwrap();
    assert!(!written.contains("s3cret"), "a secret went into the config: {written}");
    assert!(written.contains("${secret:vs-demo.demo-token}"), "{written}");

    let out = h.run(&["servers", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let servers: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(names(&servers), ["demo", "claude-demo", "remote", "vs-demo"], "the demo server is kept first");

    let out = h.run(&["run", "claude-demo", "generate_report", "--args", r#"{"topic": "tides", "seconds": 0.2}"#]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = h.run(&["run", "vs-demo", "generate_report", "--args", r#"{"topic": "tides", "seconds": 0.2}"#]);
    assert_eq!(out.code, 0, "the server got its secret at start: {out:?}");

    // A second import finds them there, the same, and changes nothing.
    let out = h.run(&["import", "--from", "claude", "claude-demo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("already in Taskdeck"), "{out:?}");
    assert_eq!(std::fs::read_to_string(h.config()).unwrap(), written);
}

#[test]
fn unknown_names_and_missing_files_exit_2_a_clash_exits_1_and_nothing_is_written() {
    let h = Home::new();
    h.cursor(json!({"mcpServers": {"tool": {"command": "tool-server"}, "demo": {"command": "another-demo"}}}));
    let out = h.run(&["import", "--from", "cursor", "nope"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no server named \"nope\""), "{out:?}");
    let out = h.run(&["import", "--from", "/no/such/file.json", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("no such file"), "{out:?}");
    assert!(!h.config().exists());

    // Taskdeck's own demo server (its default, written when the config is created) clashes.
    let out = h.run(&["import", "--from", "cursor", "demo"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("already in Taskdeck's config with another entry"), "{out:?}");
    assert!(!h.config().exists());

    let out = h.run(&["import", "--from", "cursor", "tool", "--dry-run"]);
    assert_eq!(out.code, 0, "{out:?}");
    let would: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(would["mcpServers"]["tool"], json!({"command": "tool-server"}));
    assert!(would["mcpServers"]["demo"].is_object(), "the demo server stays: {out:?}");
    assert!(!h.config().exists(), "a dry run wrote the config");
}

#[test]
fn a_file_given_by_path_is_read_in_any_of_the_shapes_and_what_it_says_is_shown_cleaned() {
    let h = Home::new();
    let file = h.write(
        h.dir.path().join("other.json"),
        r#"{"mcp": {"servers": {"evil\u001b]0;pwned\u0007": {"command": "x"}, "fine": {"command": "fine-server"}}}}"#,
    );
    let out = h.run(&["import", "--from", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains('\u{1b}') && !out.stdout.contains('\u{7}'), "{out:?}");
    assert!(out.stdout.contains("fine-server"), "{out:?}");
    let out = h.run(&["import", "--from", file.to_str().unwrap(), "fine"]);
    assert_eq!(out.code, 0, "{out:?}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(h.config()).unwrap()).unwrap();
    assert_eq!(written["mcpServers"]["fine"], json!({"command": "fine-server"}));
}
