//! The baseline for `make bench-app`: one window with a static page and one command, nothing else.

/// The page calls this once it has painted; `bench/app/appbench.py` times start-up to this line.
/// Taskdeck's `ui_ready` prints the same line at the same moment of its own start-up.
#[tauri::command]
fn ready() {
    println!("ready");
}

fn main() {
    tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![ready])
        .run(tauri::generate_context!())
        .expect("the minimal app failed to start");
}
