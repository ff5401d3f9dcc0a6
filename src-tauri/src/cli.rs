use std::path::PathBuf;

use clap::Parser;
pub use taskdeck_engine::config::{ConfigError as PathsError, Paths};

/// Where Taskdeck keeps its server list and its task store.
#[derive(Debug, Parser)]
#[command(name = "taskdeck", version, about = "Desktop host for long-running MCP tool tasks")]
pub struct Cli {
    /// Server list (JSON, the `mcpServers` format). Default: $XDG_CONFIG_HOME/taskdeck/servers.json
    #[arg(long, value_name = "FILE", env = "TASKDECK_CONFIG")]
    pub config: Option<PathBuf>,

    /// Directory for the task store (and the logs, when given). Default: $XDG_DATA_HOME/taskdeck
    #[arg(long, value_name = "DIR", env = "TASKDECK_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// How the window is drawn: `auto` uses the GPU when the machine has one and draws in
    /// software (no compositing) when it does not; `gpu` and `software` force either.
    #[arg(long, value_enum, value_name = "MODE", env = "TASKDECK_RENDERING", default_value = "auto")]
    pub rendering: crate::rendering::Rendering,
}

impl Cli {
    /// The same resolution as the command line's (see `Paths::resolve`), so both front ends find
    /// the same store.
    pub fn resolve(&self) -> Result<Paths, PathsError> {
        Paths::resolve(self.config.clone(), self.data_dir.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_reach_the_paths() {
        let cli = Cli::try_parse_from(["taskdeck", "--config", "/etc/td.json", "--data-dir", "/var/td"]).unwrap();
        assert_eq!(cli.resolve().unwrap(), Paths { config: "/etc/td.json".into(), data_dir: "/var/td".into() });
    }
}
