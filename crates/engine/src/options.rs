//! How the engine is tuned: waits, poll bounds and the progress flush.

use std::time::Duration;

use taskdeck_client::{FollowOptions, SessionOptions};

#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub session: SessionOptions,
    /// How long a command waits for a server to come up.
    pub server_wait: Duration,
    /// Bounds on the server's `pollInterval` (real servers ask for 250 ms to 5 s). The interval is
    /// the server's word on how often it can be asked, and a poll that learns nothing new writes
    /// nothing, so it is honoured down to a floor that only catches nonsense such as 0.
    pub min_poll: Duration,
    pub max_poll: Duration,
    /// Progress and status messages are written at most this often per task; status changes are
    /// written at once.
    pub progress_flush: Duration,
    /// How long `answer` waits for a legacy server to ask its question again after a restart.
    pub question_wait: Duration,
    /// How long a task's polls (or re-attaching) may fail without a break before the task fails
    /// with the reason: a server that cannot be read or does not answer must not keep a task
    /// `working` for ever.
    pub poll_give_up: Duration,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            session: SessionOptions::default(),
            server_wait: Duration::from_secs(60),
            min_poll: Duration::from_millis(50),
            max_poll: Duration::from_secs(5),
            progress_flush: Duration::from_millis(100),
            question_wait: Duration::from_secs(30),
            poll_give_up: Duration::from_secs(120),
        }
    }
}

impl EngineOptions {
    /// The polling policy a driver hands the client: the server's interval within our bounds,
    /// once a second while it has not given one.
    pub(crate) fn follow(&self) -> FollowOptions {
        FollowOptions {
            min_poll: self.min_poll,
            max_poll: self.max_poll,
            default_poll: Duration::from_secs(1),
            give_up: self.poll_give_up,
        }
    }
}
