//! Guest stdout and stderr: forwarded line by line to `tracing` (target `plugin`), bounded per
//! call, truncated silently, never written to the host's stdout.
//!
//! A `MemoryOutputPipe` is not used because a full pipe makes the guest's `println!` panic;
//! this sink always accepts the bytes and simply drops what is past the budget.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Longest line forwarded as one log record; longer lines are split.
const MAX_LINE: usize = 4096;

/// Which guest stream a sink serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// The per-call byte budget shared by a guest's stdout and stderr.
#[derive(Debug, Clone)]
pub(crate) struct OutputBudget {
    remaining: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl OutputBudget {
    pub(crate) fn new(bytes: u64) -> Self {
        OutputBudget { remaining: Arc::new(AtomicU64::new(bytes)), dropped: Arc::new(AtomicU64::new(0)) }
    }

    /// Takes up to `want` bytes from the budget; returns how many were granted.
    fn take(&self, want: usize) -> usize {
        let want = want as u64;
        let mut granted = 0;
        let _ = self.remaining.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
            granted = left.min(want);
            Some(left - granted)
        });
        self.dropped.fetch_add(want - granted, Ordering::Relaxed);
        granted as usize
    }

    /// Bytes dropped so far because the budget ran out.
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A `StdoutStream` for the WASI context that forwards guest output to the log.
#[derive(Debug, Clone)]
pub(crate) struct LogSink {
    plugin: Arc<str>,
    stream: Stream,
    budget: OutputBudget,
    /// Lines seen, for tests that capture the log (`None` in production).
    capture: Option<Arc<Mutex<Vec<String>>>>,
}

impl LogSink {
    pub(crate) fn new(plugin: Arc<str>, stream: Stream, budget: OutputBudget) -> Self {
        LogSink { plugin, stream, budget, capture: None }
    }

    /// Also keeps every forwarded line in `capture`.
    #[cfg(test)]
    pub(crate) fn capturing(mut self, capture: Arc<Mutex<Vec<String>>>) -> Self {
        self.capture = Some(capture);
        self
    }
}

impl IsTerminal for LogSink {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogSink {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(LineWriter { sink: self.clone(), pending: Vec::new() })
    }
}

/// Buffers a partial line until its newline (or `MAX_LINE`) arrives.
struct LineWriter {
    sink: LogSink,
    pending: Vec<u8>,
}

impl LineWriter {
    fn emit(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\r');
        tracing::info!(target: "plugin", plugin = %self.sink.plugin, stream = self.sink.stream.name(), "{text}");
        if let Some(capture) = &self.sink.capture
            && let Ok(mut lines) = capture.lock()
        {
            lines.push(text.to_owned());
        }
    }

    fn accept(&mut self, buf: &[u8]) {
        let granted = self.sink.budget.take(buf.len());
        let mut rest = &buf[..granted];
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            self.pending.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.pending);
            self.emit(&line);
            rest = &rest[pos + 1..];
        }
        self.pending.extend_from_slice(rest);
        while self.pending.len() >= MAX_LINE {
            let line: Vec<u8> = self.pending.drain(..MAX_LINE).collect();
            self.emit(&line);
        }
    }

    fn flush_pending(&mut self) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.emit(&line);
        }
    }
}

impl AsyncWrite for LineWriter {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        // Always accept everything: the guest must never see a full or broken stream.
        self.get_mut().accept(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().flush_pending();
        Poll::Ready(Ok(()))
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        self.flush_pending();
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn lines_go_to_the_log_and_output_past_the_budget_is_dropped() {
        let capture = Arc::new(Mutex::new(Vec::new()));
        let budget = OutputBudget::new(20);
        let sink = LogSink::new(Arc::from("p"), Stream::Stdout, budget.clone()).capturing(capture.clone());
        let mut writer = Pin::from(sink.async_stream());
        writer.write_all(b"first line\nsecond").await.expect("write");
        writer.write_all(b" line is long\nthird\n").await.expect("writes never fail");
        drop(writer);
        let lines = capture.lock().expect("lock").clone();
        assert_eq!(lines, vec!["first line".to_owned(), "second li".to_owned()]);
        assert_eq!(budget.dropped(), 37 - 20);
    }
}
