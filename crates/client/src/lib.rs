//! One MCP server, spoken to over stdio in whichever task era it speaks.
//!
//! [`Session::connect`] spawns the server, detects its era exactly as the 2026-07-28 stdio binding
//! says (probe `server/discover`; fall back to `initialize`), and declares what Taskdeck really
//! supports. After that the caller sees one era-neutral task API: [`Session::start_tool`],
//! [`Session::get_task`], [`Session::task_result`], [`Session::answer`], [`Session::cancel_task`]
//! and [`Session::attach`], plus a [`SessionHandler`] that receives notifications, questions and
//! stderr in arrival order.
//!
//! The session talks to a [`transport::Transport`], not to a process: [`Session::connect`] is the
//! stdio convenience, [`Session::connect_with`] takes any [`transport::Connection`].
//!
//! The session holds no policy about *when* to poll or retry: that is the engine's.

pub mod auth;
mod endpoint;
mod error;
mod follow;
mod host;
mod hosted;
mod model;
mod process;
mod session;
mod tasks;
mod tracker;
pub mod transport;

pub use endpoint::Endpoint;
pub use error::{ClientError, ResponseFault};
pub use follow::{Follow, FollowOptions, Followed};
pub use host::ROOTS_LIST_CHANGED;
pub use hosted::{HostedTask, MAX_HOSTED};
pub use model::{
    Asks, Discard, InputRound, Question, QuestionKey, QuestionRequest, Reply, Resumable, Resumption, ServerInfo,
    SessionEvent, Started, TaskSnapshot,
};
pub use process::{ALLOWED_ENV, MAX_STDERR_LINE, ServerSpec, env_allowed, server_env};
pub use session::{IgnoreEvents, Session, SessionHandler, SessionOptions};
pub use tasks::{RetryInputs, StartOptions};
pub use transport::http::HttpSpec;
