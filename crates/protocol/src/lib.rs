//! The MCP wire, as Taskdeck speaks it: JSON-RPC 2.0 over newline-delimited stdio, and typed
//! messages for both task eras.
//!
//! - [`legacy`]: protocol revision `2025-11-25`, with tasks as an experimental core feature
//!   (`initialize`, `params.task`, nested `CreateTaskResult`, `tasks/result`, related-task `_meta`).
//! - [`modern`]: revision `2026-07-28`, with no handshake, per-request `_meta`, `server/discover`,
//!   and tasks as the `io.modelcontextprotocol/tasks` extension.
//!
//! Everything common to both lives at the top level. Types keep members they do not know in an
//! `extra` map, so a message read and written again loses nothing.
//!
//! This crate does no I/O and holds no policy: sessions, timeouts and retries belong to
//! `taskdeck-client`; running tasks belongs to the servers.

pub mod elicitation;
pub mod form;
pub mod framing;
pub mod jsonrpc;
pub mod legacy;
pub mod limits;
pub mod meta;
pub mod methods;
pub mod modern;
pub mod question;
pub mod sampling;
pub mod task;
pub mod types;
pub mod url_check;

pub use jsonrpc::{ErrorObject, Message, MessageError, Notification, Request, RequestId, Response, codes};
pub use task::TaskStatus;

use serde::{Deserialize, Serialize};

/// Which protocol revision a session speaks. Decided once per server process.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// `2025-11-25`: initialize handshake, tasks as an experimental core feature.
    Legacy,
    /// `2026-07-28`: per-request `_meta`, tasks as the `io.modelcontextprotocol/tasks` extension.
    Modern,
}

impl Era {
    pub fn protocol_version(self) -> &'static str {
        match self {
            Era::Legacy => legacy::PROTOCOL_VERSION,
            Era::Modern => modern::PROTOCOL_VERSION,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Era {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(Era::Legacy),
            "modern" => Ok(Era::Modern),
            other => Err(format!("unknown era {other:?} (expected \"legacy\" or \"modern\")")),
        }
    }
}
