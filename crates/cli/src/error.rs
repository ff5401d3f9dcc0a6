//! How every failure becomes an exit code and one clear line on stderr.

use taskdeck_client::ClientError;
use taskdeck_engine::EngineError;
use taskdeck_protocol::TaskStatus;
use taskdeck_store::StoreError;

pub const EXIT_COMPLETED: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_WAITING: u8 = 3;
pub const EXIT_CANCELLED: u8 = 4;

#[derive(Debug)]
pub struct CliError {
    pub exit: u8,
    pub message: String,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> Self {
        CliError { exit: EXIT_USAGE, message: message.into() }
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        CliError { exit: EXIT_FAILED, message: message.into() }
    }
}

impl From<EngineError> for CliError {
    fn from(e: EngineError) -> Self {
        // Usage errors are the caller's to fix by changing the command line or the config; anything
        // that could succeed on another try (a server down, the lock held) is a runtime error.
        let usage = matches!(
            e,
            EngineError::Config(_)
                | EngineError::UnknownServer { .. }
                | EngineError::InvalidArguments { .. }
                | EngineError::InvalidAnswer { .. }
                | EngineError::Client(ClientError::UnknownTool { .. })
        );
        CliError { exit: if usage { EXIT_USAGE } else { EXIT_FAILED }, message: e.to_string() }
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError::runtime(e.to_string())
    }
}

pub fn exit_for(status: TaskStatus) -> u8 {
    match status {
        TaskStatus::Completed => EXIT_COMPLETED,
        TaskStatus::Failed => EXIT_FAILED,
        TaskStatus::InputRequired => EXIT_WAITING,
        TaskStatus::Cancelled => EXIT_CANCELLED,
        // Only reached when the driver gave up on a task that has not ended.
        TaskStatus::Working => EXIT_FAILED,
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use taskdeck_engine::StoreFault;

    #[test]
    fn a_store_that_cannot_take_writes_is_a_runtime_failure_with_the_engines_message() {
        let e = EngineError::StoreUnwritable {
            path: "/data/taskdeck.sqlite3".into(),
            fault: StoreFault::DiskFull,
            task: Some("t1".into()),
            detail: "database or disk is full".into(),
        };
        let message = e.to_string();
        let cli = CliError::from(e);
        assert_eq!((cli.exit, cli.message), (EXIT_FAILED, message));
    }
}
