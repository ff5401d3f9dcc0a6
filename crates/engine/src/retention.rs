//! The settings through the facade, and the retention policy they hold applied to the store: at
//! start, once a day, and when the policy changes.
//!
//! Settings are read from the file at each call (it is small, and a hand edit is then seen at the
//! next read); every change made through the engine is announced as [`EngineEvent::Settings`], so
//! every window, the tray and the retention keeper follow it.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::engine::Engine;
use crate::error::Result;
use crate::event::EngineEvent;
use crate::history::PruneReport;
use crate::settings::{RetentionSettings, Settings, SettingsFile, SettingsUpdate};

/// How often the policy is applied again while Taskdeck runs.
pub const RETENTION_EVERY: Duration = Duration::from_secs(24 * 60 * 60);

impl Engine {
    /// The settings as the file holds them now (the defaults without one). A file that cannot be
    /// read is an error naming it; it is left as it is.
    pub fn settings(&self) -> Result<Settings> {
        Ok(self.settings.read()?)
    }

    /// Replaces the sections the update gives, keeping every other section of the file, and
    /// announces the result.
    pub fn update_settings(&self, update: &SettingsUpdate) -> Result<Settings> {
        let settings = self.settings.update(update)?;
        self.announce_settings(&settings);
        Ok(settings)
    }

    /// Replaces one section this module does not type (another part's, such as model providers),
    /// and announces the settings.
    pub fn set_settings_section(&self, name: &str, value: Value) -> Result<Settings> {
        let settings = self.settings.set_section(name, value)?;
        self.announce_settings(&settings);
        Ok(settings)
    }

    /// The file itself, to read a section this module does not type.
    pub fn settings_file(&self) -> &SettingsFile {
        &self.settings
    }

    fn announce_settings(&self, settings: &Settings) {
        self.gate().announce(EngineEvent::Settings { settings: Box::new(settings.clone()) });
    }

    /// Applies the retention policy of the settings now: finished, unpinned tasks beyond it are
    /// removed, each with a `policy` purge line, and the freed pages go back to the file system.
    /// `None` when no limit is set (nothing is removed then).
    pub fn apply_retention(&self) -> Result<Option<PruneReport>> {
        let policy = self.settings()?.retention;
        self.apply_policy(&policy)
    }

    fn apply_policy(&self, policy: &RetentionSettings) -> Result<Option<PruneReport>> {
        if !policy.is_set() {
            return Ok(None);
        }
        let report = self.prune(&policy.rule(), false)?;
        if !report.removed.is_empty() {
            tracing::info!(
                removed = report.removed.len(),
                bytes_before = report.space.bytes_before,
                bytes_after = report.space.bytes_after,
                "retention policy applied"
            );
        }
        Ok(Some(report))
    }

    /// Keeps the history within the policy: applies it now, then every [`RETENTION_EVERY`], and
    /// at once when a settings change alters it. A failure is logged and tried again at the next
    /// turn; the app runs on. Runs as long as the engine does: spawn it.
    pub async fn keep_history_within_policy(self) {
        self.keep_history_every(RETENTION_EVERY).await
    }

    /// [`Engine::keep_history_within_policy`] with another period between passes.
    pub async fn keep_history_every(self, period: Duration) {
        // Subscribed before the first pass, so a change made while it runs is not missed.
        let mut events = self.subscribe();
        let mut applied: Option<RetentionSettings> = None;
        loop {
            match self.settings() {
                Ok(s) => {
                    let policy = s.retention;
                    let worker = self.clone();
                    match tokio::task::spawn_blocking(move || worker.apply_policy(&policy)).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => tracing::warn!("retention policy failed: {e}"),
                        Err(e) => tracing::warn!("retention policy stopped: {e}"),
                    }
                    applied = Some(policy);
                }
                Err(e) => tracing::warn!("retention not applied: {e}"),
            }
            let next = tokio::time::sleep(period);
            tokio::pin!(next);
            // Waits for the day to pass or for the policy to change; other events are skipped.
            loop {
                tokio::select! {
                    () = &mut next => break,
                    event = events.recv() => match event {
                        Ok(EngineEvent::Settings { settings }) if Some(settings.retention) != applied => break,
                        Ok(_) => {}
                        // Missed events may have held a change: look at the file.
                        Err(RecvError::Lagged(_)) => {
                            if self.settings().ok().map(|s| s.retention) != applied {
                                break;
                            }
                        }
                        Err(RecvError::Closed) => return,
                    },
                }
            }
        }
    }
}
