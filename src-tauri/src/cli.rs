use std::path::{Path, PathBuf};

use clap::Parser;

/// Where Taskdeck keeps its server list and its task store.
#[derive(Debug, Parser)]
#[command(name = "taskdeck", version, about = "Desktop host for long-running MCP tool tasks")]
pub struct Cli {
    /// Server list (JSON). Default: $XDG_CONFIG_HOME/taskdeck/servers.json
    #[arg(long, value_name = "FILE", env = "TASKDECK_CONFIG")]
    pub config: Option<PathBuf>,

    /// Directory for the task store and logs. Default: $XDG_DATA_HOME/taskdeck
    #[arg(long, value_name = "DIR", env = "TASKDECK_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

/// The resolved, absolute locations the app runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub config: PathBuf,
    pub data_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot locate a home directory: set HOME, or pass --config and --data-dir")]
    NoHome,
    #[error("cannot make {path} absolute: {source}")]
    Absolute { path: PathBuf, source: std::io::Error },
}

impl Cli {
    pub fn resolve(&self) -> Result<Paths, PathsError> {
        resolve_with(self, |name| std::env::var_os(name).map(PathBuf::from))
    }
}

/// The environment is passed in so the XDG fallbacks can be tested without touching the process env.
fn resolve_with(cli: &Cli, env: impl Fn(&str) -> Option<PathBuf>) -> Result<Paths, PathsError> {
    // The XDG spec says relative values must be ignored, as if unset.
    let xdg = |var: &str, home_suffix: &str| -> Result<PathBuf, PathsError> {
        match env(var).filter(|p| p.is_absolute()) {
            Some(dir) => Ok(dir),
            None => {
                env("HOME").filter(|h| !h.as_os_str().is_empty()).map(|h| h.join(home_suffix)).ok_or(PathsError::NoHome)
            }
        }
    };
    let config = match &cli.config {
        Some(path) => path.clone(),
        None => xdg("XDG_CONFIG_HOME", ".config")?.join("taskdeck").join("servers.json"),
    };
    let data_dir = match &cli.data_dir {
        Some(path) => path.clone(),
        None => xdg("XDG_DATA_HOME", ".local/share")?.join("taskdeck"),
    };
    Ok(Paths { config: absolute(&config)?, data_dir: absolute(&data_dir)? })
}

// Relative paths from the command line are shown in the UI and handed to child processes later,
// so they are pinned to the directory Taskdeck was started from.
fn absolute(path: &Path) -> Result<PathBuf, PathsError> {
    std::path::absolute(path).map_err(|source| PathsError::Absolute { path: path.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<PathBuf> {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| PathBuf::from(v))
    }

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("taskdeck").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn defaults_follow_xdg_dirs() {
        let paths =
            resolve_with(&parse(&[]), env_of(&[("XDG_CONFIG_HOME", "/x/cfg"), ("XDG_DATA_HOME", "/x/data")])).unwrap();
        assert_eq!(paths.config, PathBuf::from("/x/cfg/taskdeck/servers.json"));
        assert_eq!(paths.data_dir, PathBuf::from("/x/data/taskdeck"));
    }

    #[test]
    fn defaults_fall_back_to_home_when_xdg_unset_or_relative() {
        let paths = resolve_with(&parse(&[]), env_of(&[("HOME", "/home/ada"), ("XDG_DATA_HOME", "rel")])).unwrap();
        assert_eq!(paths.config, PathBuf::from("/home/ada/.config/taskdeck/servers.json"));
        assert_eq!(paths.data_dir, PathBuf::from("/home/ada/.local/share/taskdeck"));
    }

    #[test]
    fn flags_override_defaults() {
        let cli = parse(&["--config", "/etc/td.json", "--data-dir", "/var/td"]);
        let paths = resolve_with(&cli, env_of(&[])).unwrap();
        assert_eq!(paths, Paths { config: "/etc/td.json".into(), data_dir: "/var/td".into() });
    }

    #[test]
    fn relative_flags_become_absolute() {
        let paths = resolve_with(&parse(&["--data-dir", "here"]), env_of(&[("HOME", "/h")])).unwrap();
        assert!(paths.data_dir.is_absolute());
        assert!(paths.data_dir.ends_with("here"));
    }

    #[test]
    fn no_home_and_no_flags_is_an_error() {
        assert!(matches!(resolve_with(&parse(&[]), env_of(&[])), Err(PathsError::NoHome)));
    }
}
