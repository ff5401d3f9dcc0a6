//! What the host side of a session tells the server of its own accord: the log level it wants
//! (`logging/setLevel`) and that the roots it grants changed (`notifications/roots/list_changed`).
//! The roots themselves are served by the reader through [`crate::SessionHandler::roots`].

use serde_json::{Value, json};
use taskdeck_protocol::{Era, Message, methods};

use crate::{ClientError, Session};

/// `notifications/roots/list_changed`: not in `methods` yet, which only the client sends.
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

impl Session {
    /// Whether the server declared the `logging` capability (legacy `initialize`, modern discover).
    pub fn declares_logging(&self) -> bool {
        self.info().capabilities.get("logging").is_some_and(Value::is_object)
    }

    /// Asks a legacy server that declares `logging` to send entries of `level` and above. A modern
    /// server is told with every request from now on (`_meta`'s `io.modelcontextprotocol/logLevel`,
    /// which replaced `logging/setLevel`), and nothing is sent now (`Ok(false)`), as for a legacy
    /// server without the capability, which would answer "method not found".
    pub async fn set_log_level(&self, level: &str) -> Result<bool, ClientError> {
        if self.era() == Era::Modern {
            self.log_level_per_request(Some(level));
            return Ok(false);
        }
        if !self.declares_logging() {
            return Ok(false);
        }
        let timeout = self.shared.opts.request_timeout;
        self.request(methods::LOGGING_SET_LEVEL, json!({ "level": level }), Some(timeout)).await?;
        Ok(true)
    }

    /// Modern: the log level every request asks for from now on (`None`: no entries).
    pub fn log_level_per_request(&self, level: Option<&str>) {
        self.lock_state().log_level = level.map(str::to_owned);
    }

    /// Tells a legacy server the granted roots changed, so it asks `roots/list` again. A modern
    /// server asks for roots with each request that needs them: nothing is sent (`Ok(false)`).
    pub fn roots_changed(&self) -> Result<bool, ClientError> {
        if self.era() != Era::Legacy {
            return Ok(false);
        }
        self.send(&Message::notification(ROOTS_LIST_CHANGED, None))?;
        Ok(true)
    }
}
