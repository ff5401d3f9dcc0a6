use std::path::Path;

fn main() {
    ensure_frontend_dist();
    // Declaring the app's commands makes Tauri generate one `allow-<command>` permission per command,
    // so a command is unreachable from the webview until a capability grants it explicitly.
    let commands: &[&str] = &include!("src/command_names.in");
    println!("cargo:rerun-if-changed=src/command_names.in");
    let manifest = tauri_build::AppManifest::new().commands(commands);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)).expect("tauri-build failed");
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
