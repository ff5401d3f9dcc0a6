//! The stdio transport: a server child process that reads newline-delimited JSON-RPC on stdin and
//! writes it on stdout, with whatever it wants to say on stderr.
//!
//! Framing and its hard size limit live here ([`taskdeck_protocol::framing`]), and so does the
//! process: its stderr, cut into bounded lines, arrives as [`Received::Stderr`]; its end, with its
//! exit status, as [`Received::Closed`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskdeck_protocol::framing::{LineDecoder, encode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::{BoxFuture, Connection, FRAME_START, FrameSource, Identity, Received, SendError, Transport};
use crate::ClientError;
use crate::process::{self, ExitWatch, MAX_STDERR_LINE, ProcessHandle, ServerSpec};

/// How long to wait for the process to be reaped once it closed stdout, so the reason can carry
/// its exit status; a server that closes stdout and lives on is reported without one.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// How long to wait, once the process ended, for the rest of its stderr: its last words are
/// usually why it ended. A grandchild holding stderr open must not hold the news.
const STDERR_DRAIN: Duration = Duration::from_millis(500);
/// How long a failed write waits to see whether the process is ending, whose reader then says
/// how, before it reports that the server stopped reading.
const EXIT_NOTICE: Duration = Duration::from_millis(200);
/// Items read ahead of the session: enough to keep the pipes flowing, few enough that a flood
/// waits in the server's pipe rather than in our memory.
const INBOX: usize = 64;

enum Out {
    Frame(Vec<u8>),
    /// Close stdin: how a stdio server is asked to exit.
    Close,
}

/// The sending half: owns the process, which dies with it.
pub struct StdioTransport {
    identity: Identity,
    max_frame: usize,
    out: mpsc::UnboundedSender<Out>,
    /// Why the server's stdin took nothing more, once a write to it failed.
    write_failed: Arc<Mutex<Option<String>>>,
    process: ProcessHandle,
}

struct StdioFrames {
    rx: mpsc::Receiver<Received>,
}

impl StdioTransport {
    /// Starts the server and the tasks that carry its pipes. `max_frame` bounds one message in
    /// either direction.
    pub fn spawn(spec: &ServerSpec, max_frame: usize) -> Result<Connection, ClientError> {
        let spawned = process::spawn(spec)?;
        let identity =
            Identity { name: spec.name.clone(), kind: "stdio", peer: spec.command.clone(), pid: spawned.process.pid() };
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::channel(INBOX);
        let (stderr_done_tx, stderr_done) = oneshot::channel();
        let write_failed = Arc::new(Mutex::new(None));
        tokio::spawn(write_loop(spawned.stdin, out_rx, in_tx.clone(), spawned.process.exit(), write_failed.clone()));
        let for_stderr = in_tx.clone();
        tokio::spawn(async move {
            capture_stderr(spawned.stderr, &for_stderr).await;
            let _ = stderr_done_tx.send(());
        });
        tokio::spawn(read_loop(spawned.stdout, max_frame, in_tx, spawned.process.exit(), stderr_done));
        let transport = StdioTransport { identity, max_frame, out: out_tx, write_failed, process: spawned.process };
        Ok(Connection { transport: Box::new(transport), frames: Box::new(StdioFrames { rx: in_rx }) })
    }
}

impl Transport for StdioTransport {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn send(&self, message: String) -> Result<(), SendError> {
        let frame = encode(&message, self.max_frame).ok_or(SendError::TooLarge { limit: self.max_frame })?;
        self.out.send(Out::Frame(frame)).map_err(|_| {
            let failed = self.write_failed.lock().unwrap_or_else(|p| p.into_inner()).clone();
            SendError::Closed { reason: failed.unwrap_or_else(|| "stdin closed".into()) }
        })
    }

    fn close(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.out.send(Out::Close);
            if self.process.exit().wait(grace).await.is_none() {
                self.process.kill();
            }
        })
    }

    fn kill(&self) {
        self.process.kill();
    }
}

impl FrameSource for StdioFrames {
    fn receive(&mut self) -> BoxFuture<'_, Option<Received>> {
        Box::pin(self.rx.recv())
    }
}

async fn write_loop(
    mut stdin: impl AsyncWrite + Unpin,
    mut rx: mpsc::UnboundedReceiver<Out>,
    tx: mpsc::Sender<Received>,
    exit: ExitWatch,
    write_failed: Arc<Mutex<Option<String>>>,
) {
    let error = loop {
        match rx.recv().await {
            Some(Out::Frame(frame)) => {
                if let Err(e) = write_frame(&mut stdin, &frame).await {
                    break e;
                }
            }
            // Dropping stdin here closes it: on `Close`, or when the transport goes.
            Some(Out::Close) | None => return,
        }
    };
    // The server stopped reading (it ended, or closed its stdin and lives on): nothing sent from
    // now on can arrive, so later sends fail at once, and the session hears why.
    let stopped = format!("the server stopped reading its input ({error})");
    *write_failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(stopped.clone());
    drop(rx);
    drop(stdin);
    // A process that is ending has usually ended by now; one that is not lives on.
    let reason = match exit.wait(EXIT_NOTICE).await {
        Some(status) => {
            // The reader reports an ended process with its last stderr; this is the fallback for
            // one whose stdout a grandchild still holds.
            tokio::time::sleep(STDERR_DRAIN * 2).await;
            format!("the server process ended ({status})")
        }
        None => stopped,
    };
    let _ = tx.send(Received::Closed { reason }).await;
}

async fn write_frame(stdin: &mut (impl AsyncWrite + Unpin), frame: &[u8]) -> std::io::Result<()> {
    stdin.write_all(frame).await?;
    stdin.flush().await
}

async fn read_loop(
    mut stdout: impl AsyncRead + Unpin,
    max_frame: usize,
    tx: mpsc::Sender<Received>,
    exit: ExitWatch,
    stderr_done: oneshot::Receiver<()>,
) {
    let mut decoder = LineDecoder::new(max_frame);
    let mut buf = vec![0u8; 64 * 1024];
    let mut frames = Vec::new();
    // The current line's first bytes: an unreadable frame is handed on with them, so the session
    // can tell which request it answered.
    let mut start: Vec<u8> = Vec::new();
    let received = |frame: taskdeck_protocol::framing::Frame, start: &[u8]| match frame {
        Ok(text) => Received::Message(text),
        Err(e) => Received::Unreadable { error: e.into(), start: String::from_utf8_lossy(start).into_owned() },
    };
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Fed a line at a time, so every frame the decoder gives out belongs to the line whose
        // start is kept.
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            let end = chunk.iter().position(|&b| b == b'\n').map_or(chunk.len(), |i| i + 1);
            let (part, rest) = chunk.split_at(end);
            chunk = rest;
            let room = FRAME_START.saturating_sub(start.len());
            start.extend_from_slice(&part[..part.len().min(room)]);
            decoder.feed(part, &mut frames);
            for frame in frames.drain(..) {
                if tx.send(received(frame, &start)).await.is_err() {
                    // The session is gone; the process goes with the transport.
                    return;
                }
            }
            if part.ends_with(b"\n") {
                start.clear();
            }
        }
    }
    if let Some(frame) = decoder.finish() {
        let _ = tx.send(received(frame, &start)).await;
    }
    let reason = match exit.wait(EXIT_WAIT).await {
        Some(status) => {
            let _ = tokio::time::timeout(STDERR_DRAIN, stderr_done).await;
            format!("the server process ended ({status})")
        }
        None => "the server closed its output".to_owned(),
    };
    let _ = tx.send(Received::Closed { reason }).await;
}

/// Reads stderr line by line, each cut to [`MAX_STDERR_LINE`] bytes.
async fn capture_stderr(mut stderr: impl AsyncRead + Unpin, tx: &mpsc::Sender<Received>) {
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let text = |line: &mut Vec<u8>, cut: &mut bool| {
        let mut text = String::from_utf8_lossy(line).trim_end_matches('\r').to_string();
        if *cut {
            text.push_str(" […]");
        }
        line.clear();
        *cut = false;
        Received::Stderr(text)
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                if tx.send(text(&mut line, &mut cut)).await.is_err() {
                    return;
                }
            } else if line.len() < MAX_STDERR_LINE {
                line.push(b);
            } else {
                cut = true;
            }
        }
    }
    if !line.is_empty() {
        let _ = tx.send(text(&mut line, &mut cut)).await;
    }
}
