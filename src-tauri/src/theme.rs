//! The theme chosen in Settings, known to the page before its first paint: an initialization script
//! (run before any of the page's own scripts) says it as `window.__TASKDECK_THEME__` and sets it on
//! the root element where the document already has one; `ui/src/settings/theme.ts` reads it, and
//! follows every later change from `settings-changed`.

use taskdeck_engine::config::Paths;
use taskdeck_engine::{SettingsFile, Theme};

/// The script for the theme in the settings now (the system's without a readable file). Read from
/// the file itself: the window is built while the engine is still opening the store.
pub fn start_script(paths: &Paths) -> String {
    let theme = SettingsFile::in_dir(&paths.data_dir).read().ok().map(|s| s.theme).unwrap_or_default();
    script(theme)
}

fn script(theme: Theme) -> String {
    let name = match theme {
        Theme::System => "system",
        Theme::Light => "light",
        Theme::Dark => "dark",
    };
    format!(
        "window.__TASKDECK_THEME__ = '{name}';\n\
         if ('{name}' !== 'system' && document.documentElement) document.documentElement.setAttribute('data-theme', '{name}');"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_names_the_chosen_theme_and_sets_it_only_when_one_was_chosen() {
        assert!(script(Theme::Dark).starts_with("window.__TASKDECK_THEME__ = 'dark';"));
        assert!(script(Theme::Dark).contains("setAttribute('data-theme', 'dark')"));
        assert!(script(Theme::System).contains("'system' !== 'system'"), "system leaves the attribute off");
    }
}
