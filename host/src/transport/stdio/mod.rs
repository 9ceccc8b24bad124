//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one session.
//!
//! This is the only code that writes to stdout in stdio mode. Lines are bounded: an over-long
//! line is skipped (without buffering it) and answered with an error. EOF on the input waits
//! for running requests to finish and for the writer to flush, each for a bounded time, and
//! returns even when the client has stopped reading stdout.
//!
//! For the process's own stdin and stdout (`serve_process`), both are made non-blocking and
//! polled by tokio's reactor (`reactor_fd`), so reading, the session and writing all run on the
//! runtime's workers: tokio's own stdin and stdout would hand every read and write to the
//! blocking pool, a thread hop per message. Where the reactor cannot poll them (a regular file
//! or `/dev/null` on stdin), a reader thread and a writer thread do blocking IO instead. `serve`
//! runs the loop over any async reader and writer (tests use in-memory pipes).

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{self, ErrorObject};

use crate::identity::{Principal, Transport};
use crate::session::{OutboundLimits, OutboundReceiver, Outgoing, ServerState, Session, outbound_charged};

mod reactor_fd;

use reactor_fd::ReactorFd;

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
            let (chunk, rest, ended) = match memchr::memchr(b'\n', bytes) {
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

/// Serves one session over the process's stdin and stdout until stdin ends: on the runtime's
/// workers where the reactor can poll both, else on two blocking threads. Every request is
/// served for `principal` (the local user).
pub async fn serve_process(server: Arc<ServerState>, principal: Principal) -> std::io::Result<()> {
    use std::os::fd::AsFd;
    let stdin = ReactorFd::new(std::io::stdin().as_fd(), tokio::io::Interest::READABLE);
    let stdout = ReactorFd::new(std::io::stdout().as_fd(), tokio::io::Interest::WRITABLE);
    match (stdin, stdout) {
        (Ok((stdin, stdin_flags)), Ok((stdout, stdout_flags))) => {
            // A writer left behind (a client that stopped reading) may still hold stdout: it
            // stays non-blocking until the process exits.
            // On a worker, not the thread that blocks on the runtime: every hop to and from
            // that thread would be a context switch per message.
            let served = tokio::spawn(serve_io(server, stdin, stdout, principal)).await.map_err(std::io::Error::other)?;
            if served? == WriterEnd::Flushed {
                stdin_flags.restore();
                stdout_flags.restore();
            }
            Ok(())
        }
        (stdin, stdout) => {
            for (_, flags) in [stdin, stdout].into_iter().flatten() {
                flags.restore();
            }
            tracing::debug!("stdin or stdout cannot be polled; serving stdio on blocking threads");
            serve_on_threads(server, principal).await
        }
    }
}

/// Serves one session over the process's stdin and stdout with a blocking reader thread and a
/// blocking writer thread.
async fn serve_on_threads(server: Arc<ServerState>, principal: Principal) -> std::io::Result<()> {
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
    let (out_tx, mut out_rx) = outbound_charged(OutboundLimits::default(), server.budget());
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new().name("paddock-stdout".into()).spawn(move || {
        let stdout = std::io::stdout();
        let mut output = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
        let written = write_frames(&mut out_rx, &mut output);
        let _ = done_tx.send(written);
    })?;
    let counted = crate::telemetry::metrics::held(|m| m.connection("stdio"));
    drive(Session::new(server, out_tx, principal, Transport::Stdio), lines_rx).await;
    drop(counted);
    // The writer ends once every request has let go of the session. A request still running
    // after the drain, or a client that no longer reads stdout, must not keep the process
    // alive: the wait is bounded and the blocked thread is left behind for the process exit.
    match tokio::time::timeout(WRITER_GRACE, done_rx).await {
        Ok(Ok(written)) => written,
        Ok(Err(_)) => Err(std::io::Error::other("the stdout writer panicked")),
        Err(_) => {
            tracing::warn!("stdout is not being drained or requests are still running at exit; their replies are dropped");
            Ok(())
        }
    }
}

/// Writes frames until every sender is gone, batching what is already queued into one flush.
fn write_frames(frames: &mut OutboundReceiver, output: &mut impl Write) -> std::io::Result<()> {
    while let Some(frame) = frames.blocking_recv() {
        write_line(output, &frame.line)?;
        drop(frame);
        while let Some(frame) = frames.try_recv() {
            write_line(output, &frame.line)?;
        }
        output.flush()?;
    }
    output.flush()
}

fn write_line(output: &mut impl Write, line: &str) -> std::io::Result<()> {
    output.write_all(line.as_bytes())?;
    output.write_all(b"\n")
}

/// How the writer of a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriterEnd {
    /// Every reply was written and flushed.
    Flushed,
    /// Requests still running after the drain, or a client no longer reading: the writer was
    /// left behind after `WRITER_GRACE` and its replies are dropped at exit.
    LeftBehind,
}

/// Serves one session for `principal` over `input`/`output` until `input` ends.
pub async fn serve<R, W>(server: Arc<ServerState>, input: R, output: W, principal: Principal) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_io(server, input, output, principal).await.map(|_| ())
}

async fn serve_io<R, W>(server: Arc<ServerState>, mut input: R, output: W, principal: Principal) -> std::io::Result<WriterEnd>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = outbound_charged(OutboundLimits::default(), server.budget());
    let writer = tokio::spawn(write_lines(out_rx, output));
    let session = Session::new(server, out_tx, principal, Transport::Stdio);
    // Lines are handed to the session as they are read, on this task: no queue, no hop.
    let mut splitter = Splitter::new(MAX_LINE);
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending = Vec::new();
    loop {
        let n = match input.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => {
                tracing::error!(error = %err, "reading stdin failed");
                break;
            }
        };
        splitter.feed(&buf[..n], &mut |line| {
            pending.push(line);
            true
        });
        for line in pending.drain(..) {
            handle_line(&session, line).await;
        }
    }
    splitter.finish(&mut |line| {
        pending.push(line);
        true
    });
    for line in pending {
        handle_line(&session, line).await;
    }
    end_of_input(session).await;
    match tokio::time::timeout(WRITER_GRACE, writer).await {
        Ok(joined) => joined.map_err(std::io::Error::other)?.map(|()| WriterEnd::Flushed),
        Err(_) => {
            tracing::warn!("stdout is not being drained or requests are still running at exit; their replies are dropped");
            Ok(WriterEnd::LeftBehind)
        }
    }
}

/// Hands each line to the session; at the end of input, waits for running requests.
async fn drive(session: Arc<Session>, mut lines: mpsc::Receiver<Line>) {
    while let Some(line) = lines.recv().await {
        handle_line(&session, line).await;
    }
    end_of_input(session).await;
}

/// Hands one line to the session; an over-long line or one that is not UTF-8 is answered here.
async fn handle_line(session: &Arc<Session>, line: Line) {
    match line {
        Line::TooLong => {
            let error = ErrorObject::new(jsonrpc::INVALID_REQUEST, format!("message larger than {MAX_LINE} bytes"));
            session.handle_rejection(jsonrpc::error_line(None, &error), error.code).await;
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
                session.handle_rejection(jsonrpc::error_line(None, &error), error.code).await;
            }
        },
    }
}

/// Ends the session's input and waits, for a bounded time, for its running requests.
async fn end_of_input(session: Arc<Session>) {
    session.end_of_input();
    session.drain(DRAIN_ON_EOF).await;
    let shed = session.notifications_shed();
    if shed > 0 {
        tracing::warn!(shed, "notifications were dropped because the client read too slowly");
    }
}

/// Writes the session's messages one per line until every sender is gone, each batch
/// (`OutboundReceiver::fill_batch`) in one flush.
async fn write_lines<W: AsyncWrite + Unpin>(mut rx: OutboundReceiver, output: W) -> std::io::Result<()> {
    let mut output = tokio::io::BufWriter::with_capacity(64 * 1024, output);
    let mut batch = Vec::new();
    while let Some(first) = rx.recv().await {
        rx.fill_batch(first, &mut batch).await;
        for frame in batch.drain(..) {
            write_frame(&mut output, frame).await?;
        }
        output.flush().await?;
    }
    output.flush().await
}

async fn write_frame<W: AsyncWrite + Unpin>(output: &mut W, frame: Outgoing) -> std::io::Result<()> {
    output.write_all(frame.line.as_bytes()).await?;
    output.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output that records what each write carried.
    struct Writes(Vec<Vec<u8>>);

    impl AsyncWrite for Writes {
        fn poll_write(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>, bytes: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
            self.0.push(bytes.to_vec());
            std::task::Poll::Ready(Ok(bytes.len()))
        }
        fn poll_flush(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn replies_finished_while_the_writer_waits_for_its_turn_share_one_write() {
        let (out, rx) = crate::session::outbound(crate::session::OutboundLimits { messages: 16, bytes: 1 << 20 });
        assert!(out.notify("first".into()));
        for i in 0..3 {
            let out = out.clone();
            tokio::spawn(async move { assert!(out.notify(format!("reply {i}"))) });
        }
        drop(out);
        let mut output = Writes(Vec::new());
        write_lines(rx, &mut output).await.expect("written");
        assert_eq!(output.0, vec![b"first\nreply 0\nreply 1\nreply 2\n".to_vec()], "one write, in order");
    }

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

    mod properties {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// However the input is cut into chunks, the splitter yields the same lines: every
            /// newline-separated line up to the limit exactly, and `TooLong` for each longer one.
            #[test]
            fn lines_do_not_depend_on_how_the_input_is_chunked(
                lines in proptest::collection::vec(proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40), 0..12),
                cuts in proptest::collection::vec(0usize..400, 0..10),
                max in 1usize..32,
            ) {
                let input: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain(std::iter::once(b'\n'))).collect();
                let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
                cuts.sort_unstable();
                let mut chunks = Vec::new();
                let mut start = 0;
                for cut in cuts.into_iter().chain(std::iter::once(input.len())) {
                    chunks.push(&input[start..cut]);
                    start = cut;
                }
                let expected: Vec<Line> = lines.iter().map(|l| if l.len() > max { Line::TooLong } else { Line::Complete(l.clone()) }).collect();
                prop_assert_eq!(split(&chunks, max), expected);
            }
        }
    }
}
