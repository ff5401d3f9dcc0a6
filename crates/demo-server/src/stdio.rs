//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one connection per process.

use std::sync::Arc;
use std::time::Duration;

use taskdeck_protocol::framing::{FrameError, LineDecoder};
use taskdeck_protocol::{ErrorObject, Message, codes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::legacy;
use crate::server::{Conn, Interest, Server, dispatch, unparsable};

/// Serves one connection until stdin closes. Tasks stay in the store for the next start.
pub async fn serve<R, W>(server: Arc<Server>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (conn, rx) = Conn::open(&server, None, Interest::All);
    let max_line = server.cfg.max_line_bytes;
    let writer = tokio::spawn(write_loop(rx, output, max_line));
    let purger = server.start();
    tokio::spawn(legacy::status_listener(conn.clone()));

    read_loop(&conn, input).await;
    tracing::info!("stdin closed; shutting down");
    purger.abort();
    drop(conn);
    // Give queued responses a moment to reach stdout; workers still hold senders, so the writer
    // would otherwise wait for them forever.
    let _ = tokio::time::timeout(Duration::from_millis(200), writer).await;
    Ok(())
}

async fn write_loop<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Message>, mut out: W, max_line: usize) {
    while let Some(msg) = rx.recv().await {
        let line = msg.to_line();
        let Some(frame) = taskdeck_protocol::framing::encode(&line, max_line.max(line.len())) else {
            tracing::error!("refusing to send a message that would break framing");
            continue;
        };
        if out.write_all(&frame).await.is_err() || out.flush().await.is_err() {
            tracing::info!("stdout closed");
            return;
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(conn: &Arc<Conn>, mut input: R) {
    let mut decoder = LineDecoder::new(conn.cfg.max_line_bytes);
    let mut buf = vec![0u8; 64 * 1024];
    let mut frames = Vec::new();
    loop {
        let n = match input.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("reading stdin: {e}");
                break;
            }
        };
        decoder.feed(&buf[..n], &mut frames);
        for frame in frames.drain(..) {
            handle_frame(conn, frame).await;
        }
    }
    if let Some(frame) = decoder.finish() {
        handle_frame(conn, frame).await;
    }
}

async fn handle_frame(conn: &Arc<Conn>, frame: Result<String, FrameError>) {
    let text = match frame {
        Ok(t) => t,
        Err(FrameError::TooLong { limit }) => {
            // Nothing of the message survives, not even its id, so there is no one to answer.
            tracing::warn!("dropped an input line longer than {limit} bytes");
            return;
        }
        Err(e @ FrameError::InvalidUtf8 { .. }) => {
            conn.send(Message::error(None, ErrorObject::new(codes::PARSE_ERROR, format!("Parse error: {e}")))).await;
            return;
        }
    };
    match Message::parse(&text) {
        Ok(msg) => dispatch(conn, msg).await,
        Err(e) => conn.send(Message::error(None, unparsable(&e))).await,
    }
}
