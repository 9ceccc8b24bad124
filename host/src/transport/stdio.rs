//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one session.
//!
//! This is the only code that writes to stdout in stdio mode. Lines are bounded: an over-long
//! line is skipped (without buffering it) and answered with an error. EOF on the input waits
//! for running requests to finish (bounded), flushes, and returns.
//!
//! For the process's own stdin and stdout (`serve_process`), a reader thread and a writer
//! thread do blocking IO, because tokio's stdin and stdout hand every read and write to the
//! blocking pool, which costs a thread hop per message. `serve` runs the same loop over any
//! async reader and writer (tests use in-memory pipes).

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::jsonrpc::{self, ErrorObject};
use crate::router::Router;
use crate::session::Session;

/// The longest line accepted, in bytes.
pub const MAX_LINE: usize = 16 << 20;
/// How long EOF waits for running requests before giving up on them.
const DRAIN_ON_EOF: Duration = Duration::from_secs(10);
/// How long the writer may take to flush after the drain.
const WRITER_GRACE: Duration = Duration::from_secs(2);
/// Lines read ahead of the session.
const READ_AHEAD: usize = 64;

/// One unit of input.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A complete line, without its `\n`.
    Complete(Vec<u8>),
    /// A line longer than `MAX_LINE`, dropped.
    TooLong,
}

/// Splits a byte stream into bounded lines.
struct Splitter {
    line: Vec<u8>,
    too_long: bool,
    max: usize,
}

impl Splitter {
    fn new(max: usize) -> Splitter {
        Splitter { line: Vec::new(), too_long: false, max }
    }

    /// Feeds `bytes`, calling `emit` for each line they complete.
    fn feed(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(Line) -> bool) -> bool {
        while !bytes.is_empty() {
            let (chunk, rest, ended) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..at], &bytes[at + 1..], true),
                None => (bytes, &[][..], false),
            };
            if !self.too_long {
                if self.line.len() + chunk.len() > self.max {
                    self.too_long = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            if ended && !self.emit_line(emit) {
                return false;
            }
            bytes = rest;
        }
        true
    }

    /// Flushes a last line without `\n` at EOF.
    fn finish(&mut self, emit: &mut impl FnMut(Line) -> bool) {
        if self.too_long || !self.line.is_empty() {
            self.emit_line(emit);
        }
    }

    fn emit_line(&mut self, emit: &mut impl FnMut(Line) -> bool) -> bool {
        let line = if std::mem::take(&mut self.too_long) { Line::TooLong } else { Line::Complete(std::mem::take(&mut self.line)) };
        emit(line)
    }
}

/// Serves one session over the process's stdin and stdout until stdin ends.
pub async fn serve_process(router: Arc<Router>) -> std::io::Result<()> {
    let (lines_tx, lines_rx) = mpsc::channel(READ_AHEAD);
    std::thread::Builder::new().name("paddock-stdin".into()).spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut splitter = Splitter::new(MAX_LINE);
        let mut emit = |line| lines_tx.blocking_send(line).is_ok();
        loop {
            let consumed = match input.fill_buf() {
                Ok([]) => break,
                Ok(bytes) => {
                    if !splitter.feed(bytes, &mut emit) {
                        return;
                    }
                    bytes.len()
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => 0,
                Err(err) => {
                    tracing::error!(error = %err, "reading stdin failed");
                    break;
                }
            };
            input.consume(consumed);
        }
        splitter.finish(&mut emit);
    })?;
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
    let writer = std::thread::Builder::new().name("paddock-stdout".into()).spawn(move || -> std::io::Result<()> {
        let stdout = std::io::stdout();
        let mut output = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
        while let Some(line) = out_rx.blocking_recv() {
            write_line(&mut output, &line)?;
            // Batch lines that are already queued; flush once the queue is empty.
            while let Ok(line) = out_rx.try_recv() {
                write_line(&mut output, &line)?;
            }
            output.flush()?;
        }
        output.flush()
    })?;
    drive(Session::new(router, out_tx), lines_rx).await;
    // The writer ends once every request has let go of the session; a request still running
    // after the drain must not keep the process alive, so the wait is bounded too.
    match tokio::time::timeout(WRITER_GRACE, tokio::task::spawn_blocking(move || writer.join())).await {
        Ok(joined) => joined.map_err(std::io::Error::other)?.map_err(|_| std::io::Error::other("the stdout writer panicked"))?,
        Err(_) => {
            tracing::warn!("requests still running at exit; their replies are dropped");
            Ok(())
        }
    }
}

fn write_line(output: &mut impl Write, line: &str) -> std::io::Result<()> {
    output.write_all(line.as_bytes())?;
    output.write_all(b"\n")
}

/// Serves one session over `input`/`output` until `input` ends.
pub async fn serve<R, W>(router: Arc<Router>, mut input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (lines_tx, lines_rx) = mpsc::channel(READ_AHEAD);
    let reader = tokio::spawn(async move {
        let mut splitter = Splitter::new(MAX_LINE);
        let mut buf = vec![0u8; 64 * 1024];
        let mut pending = Vec::new();
        loop {
            let n = match input.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            splitter.feed(&buf[..n], &mut |line| {
                pending.push(line);
                true
            });
            for line in pending.drain(..) {
                if lines_tx.send(line).await.is_err() {
                    return;
                }
            }
        }
        splitter.finish(&mut |line| {
            pending.push(line);
            true
        });
        for line in pending {
            let _ = lines_tx.send(line).await;
        }
    });
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(out_rx, output));
    drive(Session::new(router, out_tx), lines_rx).await;
    reader.abort();
    writer.await.map_err(std::io::Error::other)?
}

/// Hands each line to the session; at the end of input, waits for running requests.
async fn drive(session: Arc<Session>, mut lines: mpsc::Receiver<Line>) {
    while let Some(line) = lines.recv().await {
        match line {
            Line::TooLong => {
                let error = ErrorObject::new(jsonrpc::INVALID_REQUEST, format!("message larger than {MAX_LINE} bytes"));
                session.handle_rejection(jsonrpc::error_line(None, &error));
            }
            Line::Complete(bytes) => match std::str::from_utf8(&bytes) {
                Ok(text) => {
                    let text = text.trim();
                    if !text.is_empty() {
                        session.handle_frame(text).await;
                    }
                }
                Err(_) => {
                    let error = ErrorObject::new(jsonrpc::PARSE_ERROR, "parse error: the line is not valid UTF-8");
                    session.handle_rejection(jsonrpc::error_line(None, &error));
                }
            },
        }
    }
    session.drain(DRAIN_ON_EOF).await;
}

async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::UnboundedReceiver<String>, output: W) -> std::io::Result<()> {
    let mut output = tokio::io::BufWriter::with_capacity(64 * 1024, output);
    while let Some(line) = rx.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        while let Ok(line) = rx.try_recv() {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
        }
        output.flush().await?;
    }
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<Line> {
        let mut splitter = Splitter::new(max);
        let mut lines = Vec::new();
        let mut emit = |line| {
            lines.push(line);
            true
        };
        for chunk in chunks {
            splitter.feed(chunk, &mut emit);
        }
        splitter.finish(&mut emit);
        lines
    }

    #[test]
    fn lines_split_across_chunks_and_the_last_one_needs_no_newline() {
        let lines = split(&[b"ab", b"c\nde", b"\n\nf"], 100);
        assert_eq!(lines, vec![Line::Complete(b"abc".to_vec()), Line::Complete(b"de".to_vec()), Line::Complete(vec![]), Line::Complete(b"f".to_vec())]);
    }

    #[test]
    fn an_over_long_line_is_dropped_and_the_next_one_survives() {
        let lines = split(&[b"0123456789", b"0123456789\nok\n"], 15);
        assert_eq!(lines, vec![Line::TooLong, Line::Complete(b"ok".to_vec())]);
    }
}
