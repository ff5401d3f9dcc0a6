//! How the engine is tuned: waits, poll bounds and the progress flush; and how one server's
//! settings from the config narrow them.

use std::time::Duration;

use taskdeck_client::{FollowOptions, SessionOptions};

use crate::config::ServerSettings;

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
    /// The models sampling requests may be sent to (none until a provider is configured).
    pub models: crate::sampling::Models,
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
            models: crate::sampling::Models::none(),
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

impl ServerSettings {
    /// The engine's session options with this server's timeout and pinned era.
    pub(crate) fn session(&self, base: &SessionOptions) -> SessionOptions {
        let mut opts = base.clone();
        if let Some(t) = self.call_timeout {
            opts.call_timeout = t;
        }
        if let Some(era) = self.era {
            opts.force_era = Some(era);
        }
        opts
    }

    /// The engine's polling policy within this server's bounds. A bound given alone moves the other
    /// out of its way, so that the two never cross.
    pub(crate) fn follow(&self, base: FollowOptions) -> FollowOptions {
        let mut f = base;
        if let Some(min) = self.min_poll {
            f.min_poll = min;
            f.max_poll = f.max_poll.max(min);
        }
        if let Some(max) = self.max_poll {
            f.max_poll = max;
            f.min_poll = f.min_poll.min(max);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskdeck_protocol::Era;

    #[test]
    fn a_server_s_settings_override_the_engine_s_and_keep_the_rest() {
        let engine = EngineOptions::default();
        let none = ServerSettings::default();
        let s = none.session(&engine.session);
        assert_eq!((s.call_timeout, s.force_era), (engine.session.call_timeout, None));
        let set = ServerSettings {
            call_timeout: Some(Duration::from_secs(9)),
            min_poll: None,
            max_poll: None,
            era: Some(Era::Legacy),
            oauth: None,
            sampling: Default::default(),
        };
        let s = set.session(&engine.session);
        assert_eq!((s.call_timeout, s.force_era), (Duration::from_secs(9), Some(Era::Legacy)));
        assert_eq!(s.request_timeout, engine.session.request_timeout);
    }

    #[test]
    fn poll_bounds_per_server_never_cross() {
        let base = EngineOptions::default().follow();
        let f = ServerSettings { min_poll: Some(Duration::from_secs(10)), ..Default::default() }.follow(base);
        assert_eq!((f.min_poll, f.max_poll), (Duration::from_secs(10), Duration::from_secs(10)));
        let f = ServerSettings { max_poll: Some(Duration::from_millis(20)), ..Default::default() }.follow(base);
        assert_eq!((f.min_poll, f.max_poll), (Duration::from_millis(20), Duration::from_millis(20)));
        let f = ServerSettings {
            min_poll: Some(Duration::from_millis(200)),
            max_poll: Some(Duration::from_secs(2)),
            ..Default::default()
        }
        .follow(base);
        assert_eq!(
            (f.min_poll, f.max_poll, f.give_up),
            (Duration::from_millis(200), Duration::from_secs(2), base.give_up)
        );
    }
}
