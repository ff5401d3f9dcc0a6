// Keeps a console window from opening next to the app on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use clap::Parser;

fn main() {
    // Parsed before Tauri starts so that `--help`, `--version` and bad flags never open a window.
    let cli = taskdeck_app::Cli::parse();
    // SAFETY: nothing has started a thread yet (clap does not), and WebKit must find these
    // settings in the environment it inherits.
    unsafe { taskdeck_app::rendering::apply(cli.rendering) };
    let paths = match cli.resolve() {
        Ok(paths) => paths,
        Err(err) => {
            eprintln!("taskdeck: {err}");
            std::process::exit(2);
        }
    };
    if let Err(err) = taskdeck_app::run(paths) {
        eprintln!("taskdeck: {err}");
        std::process::exit(1);
    }
}
