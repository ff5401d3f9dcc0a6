//! Protocol revision `2025-11-25`: an `initialize` handshake, then tasks as an experimental core
//! feature.

pub mod initialize;
pub mod tasks;

pub const PROTOCOL_VERSION: &str = "2025-11-25";
