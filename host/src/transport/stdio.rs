//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one session.
//!
//! This is the only code that writes to stdout in stdio mode. Lines are bounded: an over-long
//! line is skipped (without buffering it) and answered with an error. EOF on the input waits
//! for running requests to finish (bounded), flushes, and returns.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::jsonrpc::{self, ErrorObject};
use crate::router::Router;
use crate::session::Session;

/// The longest line accepted, in bytes.
pub const MAX_LINE: usize = 16 << 20;
/// How long EOF waits for running requests before giving up on them.
const DRAIN_ON_EOF: Duration = Duration::from_secs(10);

/// Serves one session over `input`/`output` until `input` ends.
pub async fn serve<R, W>(router: Arc<Router>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(rx, output));
    let session = Session::new(router, tx);
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match read_bounded_line(&mut input, &mut line, MAX_LINE).await? {
            Line::Eof => break,
            Line::TooLong => {
                let error = ErrorObject::new(jsonrpc::INVALID_REQUEST, format!("message larger than {MAX_LINE} bytes"));
                session.handle_rejection(jsonrpc::error_line(None, &error));
            }
            Line::Complete => {
                let text = match std::str::from_utf8(&line) {
                    Ok(text) => text.trim(),
                    Err(_) => {
                        let error = ErrorObject::new(jsonrpc::PARSE_ERROR, "parse error: the line is not valid UTF-8");
                        session.handle_rejection(jsonrpc::error_line(None, &error));
                        continue;
                    }
                };
                if !text.is_empty() {
                    session.handle_frame(text).await;
                }
            }
        }
    }
    session.drain(DRAIN_ON_EOF).await;
    drop(session);
    writer.await.map_err(std::io::Error::other)?
}

enum Line {
    Complete,
    TooLong,
    Eof,
}

/// Reads up to and excluding the next `\n` into `line`. A line longer than `max` is consumed
/// and dropped without being kept in memory.
async fn read_bounded_line<R: AsyncBufRead + Unpin>(input: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = found.unwrap_or(available.len());
        input.consume(consumed);
        if found.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Complete });
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::UnboundedReceiver<String>, output: W) -> std::io::Result<()> {
    let mut output = tokio::io::BufWriter::with_capacity(64 * 1024, output);
    while let Some(line) = rx.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        // Batch lines that are already queued; flush once the queue is empty.
        while let Ok(line) = rx.try_recv() {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
        }
        output.flush().await?;
    }
    output.flush().await
}
