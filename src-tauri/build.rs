use std::path::Path;

// The names only: the same list registry.rs expands into the handler, read without its types.
macro_rules! commands {
    ($( $name:ident [$($ctx:ident),*] ( $($arg:ident : $ty:ty),* ) -> $ret:ty ; )*) => {
        const COMMANDS: &[&str] = &[$(stringify!($name)),*];
    };
}
include!("src/registry.in");

fn main() {
    ensure_frontend_dist();
    println!("cargo:rerun-if-changed=src/registry.in");
    write_capability(COMMANDS);
    // Declaring the app's commands makes Tauri generate one `allow-<command>` permission per command,
    // so a command is unreachable from the webview until a capability grants it explicitly.
    let manifest = tauri_build::AppManifest::new().commands(COMMANDS);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)).expect("tauri-build failed");
}

/// `capabilities/main.json` grants the main window exactly the registered commands and event
/// listening. It is written here, before tauri-build reads it, and only when it changed, so that an
/// unchanged registry rebuilds nothing.
fn write_capability(commands: &[&str]) {
    let mut permissions: Vec<String> = commands.iter().map(|c| format!("allow-{}", c.replace('_', "-"))).collect();
    permissions.extend(["core:event:allow-listen".to_owned(), "core:event:allow-unlisten".to_owned()]);
    let listed: Vec<String> = permissions.iter().map(|p| format!("    \"{p}\"")).collect();
    let text = format!(
        "{{\n  \"$schema\": \"../gen/schemas/desktop-schema.json\",\n  \"identifier\": \"main\",\n  \
         \"description\": \"The main window may call Taskdeck's own commands and listen to its events, nothing else. \
         Written by build.rs from src/registry.in.\",\n  \"windows\": [\n    \"main\"\n  ],\n  \
         \"permissions\": [\n{}\n  ]\n}}\n",
        listed.join(",\n")
    );
    let path = Path::new("capabilities/main.json");
    if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(path, text).expect("write capabilities/main.json");
    }
}

/// `generate_context!` refuses to compile without `ui/dist`, which only `npm run build` produces. So that
/// `cargo clippy --workspace` and `cargo test --workspace` work in a fresh clone without Node, a missing
/// build is replaced by a page that says what to do. `make app-build` always builds the real UI first.
fn ensure_frontend_dist() {
    let dist = Path::new("../ui/dist");
    let index = dist.join("index.html");
    println!("cargo:rerun-if-changed={}", index.display());
    if index.exists() {
        return;
    }
    std::fs::create_dir_all(dist).expect("create ui/dist");
    std::fs::write(
        &index,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Taskdeck</title></head>\
         <body><p>The UI was not built into this binary. Run <code>make app-build</code>.</p></body></html>\n",
    )
    .expect("write placeholder ui/dist/index.html");
}
