//! How the webview draws. WebKitGTK's defaults suit a machine with a GPU: Skia rasterises on the
//! GPU and a compositor redraws the window every frame anything moves. Without a GPU, Mesa runs
//! that same OpenGL on the CPU (llvmpipe): compiling shaders delays the first frames and every
//! animation costs a core to composite. There WebKit's CPU paths are far cheaper: Skia drawing
//! into memory, and no compositor, only the rectangles that changed repainted (docs/benchmarks.md,
//! section 4, has the measurements).
//!
//! WebKit reads its settings from the environment when its processes start, and they inherit
//! Taskdeck's, so the choice is made in `main` before anything else runs.

use std::path::Path;

/// `--rendering`: what the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rendering {
    /// GPU drawing when this machine has a GPU the webview can use, software drawing otherwise.
    Auto,
    /// WebKit's defaults, whatever the machine.
    Gpu,
    /// CPU rasterisation without the compositor, whatever the machine.
    Software,
}

/// What `auto` found, and so what WebKit is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Gpu,
    Software,
}

/// WebKitGTK's own switches for the software path. A value the user set for either is kept.
const SOFTWARE_ENV: [(&str, &str); 2] =
    [("WEBKIT_DISABLE_COMPOSITING_MODE", "1"), ("WEBKIT_SKIA_ENABLE_CPU_RENDERING", "1")];

impl Rendering {
    pub fn choose(self, gpu_present: bool, mesa_forced_software: bool) -> Choice {
        match self {
            Rendering::Gpu => Choice::Gpu,
            Rendering::Software => Choice::Software,
            Rendering::Auto if gpu_present && !mesa_forced_software => Choice::Gpu,
            Rendering::Auto => Choice::Software,
        }
    }
}

/// Whether the kernel offers a render node (`/dev/dri/renderD128`, …). Every GPU driver Mesa can
/// use for hardware rendering has one; without one, OpenGL can only be llvmpipe. A render node
/// does not prove a fast GPU (a virtual one may have no 3D), which is why `--rendering` exists.
pub fn gpu_present(dri: &Path) -> bool {
    std::fs::read_dir(dri)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false)
}

/// Mesa's own switch for forcing llvmpipe even when a GPU is there.
fn mesa_forced_software() -> bool {
    std::env::var("LIBGL_ALWAYS_SOFTWARE").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The variables to set for a choice, leaving alone any the environment already has.
pub fn settings(choice: Choice, already_set: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    match choice {
        Choice::Gpu => Vec::new(),
        Choice::Software => SOFTWARE_ENV.into_iter().filter(|(k, _)| !already_set(k)).collect(),
    }
}

/// Decides and sets the environment WebKit will start with.
///
/// # Safety
/// Changes the process environment: call it before any other thread exists.
pub unsafe fn apply(rendering: Rendering) {
    // The switches are WebKitGTK's; elsewhere the platform's webview decides for itself.
    let gpu = !cfg!(target_os = "linux") || gpu_present(Path::new("/dev/dri"));
    let choice = rendering.choose(gpu, mesa_forced_software());
    for (key, value) in settings(choice, |k| std::env::var_os(k).is_some()) {
        // SAFETY: the caller guarantees no other thread runs, so nothing reads the environment
        // while it changes.
        unsafe { std::env::set_var(key, value) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_machine_and_explicit_choices_win() {
        assert_eq!(Rendering::Auto.choose(true, false), Choice::Gpu);
        assert_eq!(Rendering::Auto.choose(false, false), Choice::Software);
        assert_eq!(Rendering::Auto.choose(true, true), Choice::Software);
        assert_eq!(Rendering::Gpu.choose(false, true), Choice::Gpu);
        assert_eq!(Rendering::Software.choose(true, false), Choice::Software);
    }

    #[test]
    fn software_keeps_what_the_user_set() {
        assert_eq!(settings(Choice::Software, |_| false), SOFTWARE_ENV.to_vec());
        assert_eq!(
            settings(Choice::Software, |k| k == "WEBKIT_DISABLE_COMPOSITING_MODE"),
            vec![("WEBKIT_SKIA_ENABLE_CPU_RENDERING", "1")]
        );
        assert!(settings(Choice::Gpu, |_| false).is_empty());
    }

    #[test]
    fn a_render_node_means_a_gpu() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!gpu_present(dir.path()));
        assert!(!gpu_present(&dir.path().join("absent")));
        std::fs::write(dir.path().join("card0"), b"").unwrap();
        assert!(!gpu_present(dir.path()), "a display-only card node is not enough");
        std::fs::write(dir.path().join("renderD128"), b"").unwrap();
        assert!(gpu_present(dir.path()));
    }
}
