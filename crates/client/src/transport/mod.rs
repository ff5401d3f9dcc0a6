//! The seam between a [`Session`](crate::Session) and the way its messages travel.
//!
//! A session speaks JSON-RPC in whole messages; a transport carries them. The session never sees
//! bytes, pipes or processes: it sends a message's text through [`Transport::send`], reads
//! [`Received`] items from a [`FrameSource`] in one task, and asks the transport to
//! [`close`](Transport::close) or [`kill`](Transport::kill) the connection. Framing, size limits
//! and the peer's lifetime belong to the transport: the stdio child process ([`stdio`]) frames by
//! newline with a hard limit; a transport over HTTP frames by request and event instead.
//!
//! A new transport is a module here that builds a [`Connection`], plus its config; the session
//! takes it through [`Session::connect_with`](crate::Session::connect_with) unchanged.

pub mod http;
pub mod stdio;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use taskdeck_protocol::RequestId;

/// The futures a transport returns: boxed, so a transport can sit behind `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is at the other end: for logs, and for routing a message to the right server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The server's name in the config; every error and log line about it carries this.
    pub name: String,
    /// The kind of transport, for logs: `"stdio"`.
    pub kind: &'static str,
    /// Where the messages go, for logs: the command a stdio server runs, or an endpoint. Never
    /// arguments or environment, which may hold secrets.
    pub peer: String,
    /// The local process, when the transport runs one.
    pub pid: Option<u32>,
}

/// One thing a transport received, in the order it arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// One whole message's text, not yet parsed.
    Message(String),
    /// One whole message that came on the stream answering request `request` (Streamable
    /// HTTP's answer to a POST): a notification there is about that request, which names the
    /// call a log entry belongs to even while other calls are in flight.
    OnStream { text: String, request: RequestId },
    /// Something arrived that is not a message the transport can hand on (too long, not text).
    /// The session reports it as [`SessionEvent::Discarded`](crate::SessionEvent::Discarded), and
    /// fails the request it answered: `start` is the frame's first bytes (at most
    /// [`FRAME_START`]), where a JSON-RPC response names its request.
    Unreadable { error: FrameError, start: String },
    /// One line of what the peer said about itself outside the protocol (a stdio server's
    /// stderr).
    Stderr(String),
    /// The peer is gone for good, and why: it ended, or it stopped reading what we send. Requests
    /// still open fail with this reason and the connection is killed; `Stderr` lines may still
    /// follow.
    Closed { reason: String },
}

/// How much of an unreadable frame's start a transport keeps for the session to read its id from.
pub const FRAME_START: usize = 4096;

/// Why a frame could not be handed on as a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error(transparent)]
    Line(#[from] taskdeck_protocol::framing::FrameError),
    /// A transport's own framing failed in a way it describes (a broken event stream, say).
    #[error("{detail}")]
    Invalid { detail: String },
}

/// Why a message could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The message is larger than the transport carries, or cannot be framed at all.
    #[error("the message is larger than the {limit}-byte frame limit")]
    TooLarge { limit: usize },
    /// The connection is closed: nothing sent now can arrive.
    #[error("{reason}")]
    Closed { reason: String },
}

/// The sending and controlling half of a connection, shared by every clone of a session.
///
/// Dropping it ends the connection: a transport that runs a process kills it.
pub trait Transport: Send + Sync + 'static {
    fn identity(&self) -> &Identity;

    /// Queues one whole message for the peer, in order. Never waits on the peer: a slow reader
    /// at the other end must not block the session's reader, which sends answers too.
    fn send(&self, message: String) -> Result<(), SendError>;

    /// Ends the connection politely: what was queued is sent first, then the peer is told we are
    /// done (a stdio server's stdin is closed) and given `grace` to go before it is killed.
    fn close(&self, grace: Duration) -> BoxFuture<'_, ()>;

    /// Ends the connection now. The [`FrameSource`] then reports [`Received::Closed`].
    fn kill(&self);

    /// The session the peer keeps for this connection beyond it (a legacy HTTP server's
    /// `Mcp-Session-Id`), while the peer still knows it: `None` for a transport whose peer keeps
    /// nothing (stdio, where the process is the session) and once the peer said the session is gone.
    /// A server that keeps its tasks in the session loses them with it, so a host that means to
    /// resume them must keep this id and come back with it; the transport only reports it.
    fn session_id(&self) -> Option<String> {
        None
    }

    /// Ends this connection but leaves the peer's session, if it keeps one, for a later connection
    /// to resume: what was queued is sent first (within `grace`), and the peer is not told we are
    /// done. Where there is no session apart from the connection, it is [`close`](Transport::close).
    fn detach(&self, grace: Duration) -> BoxFuture<'_, ()> {
        self.close(grace)
    }
}

/// The receiving half of a connection, read by one task of the session.
pub trait FrameSource: Send + 'static {
    /// The next item; `None` once nothing more can arrive.
    fn receive(&mut self) -> BoxFuture<'_, Option<Received>>;
}

/// What a transport hands a session: both halves of one connection.
pub struct Connection {
    pub transport: Box<dyn Transport>,
    pub frames: Box<dyn FrameSource>,
}
