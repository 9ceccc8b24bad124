//! Guest stdout and stderr: forwarded line by line to `tracing` (target `plugin`), escaped,
//! bounded per call in bytes and in records, never written to the host's stdout. Past the
//! budget the guest's writes still succeed (so it never sees a broken stream) but are dropped,
//! counted, and recorded once per call.
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

use super::refusal_log::Recorder;
use crate::escape::Escaped;
use crate::policy::RefusalKind;

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

/// The per-call budget shared by a guest's stdout and stderr: bytes, and records (a guest that
/// writes only newlines would otherwise turn a byte budget into as many log records).
#[derive(Debug, Clone)]
pub(crate) struct OutputBudget {
    remaining: Arc<AtomicU64>,
    records: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl OutputBudget {
    pub(crate) fn new(bytes: u64, records: u64) -> Self {
        OutputBudget { remaining: Arc::new(AtomicU64::new(bytes)), records: Arc::new(AtomicU64::new(records)), dropped: Arc::new(AtomicU64::new(0)) }
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

    /// Takes one record; false once the records are spent.
    fn take_record(&self) -> bool {
        self.records.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(1)).is_ok()
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
    recorder: Recorder,
    /// Lines seen, for tests that capture the log (`None` in production).
    capture: Option<Arc<Mutex<Vec<String>>>>,
}

impl LogSink {
    pub(crate) fn new(plugin: Arc<str>, stream: Stream, budget: OutputBudget, recorder: Recorder) -> Self {
        LogSink { plugin, stream, budget, recorder, capture: None }
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
        if !self.sink.budget.take_record() {
            return self.sink.recorder.refuse(RefusalKind::GuestOutput, self.sink.stream.name());
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\r');
        tracing::info!(target: "plugin", plugin = %self.sink.plugin, stream = self.sink.stream.name(), "{}", Escaped(text));
        if let Some(capture) = &self.sink.capture
            && let Ok(mut lines) = capture.lock()
        {
            lines.push(Escaped(text).to_string());
        }
    }

    fn accept(&mut self, buf: &[u8]) {
        let granted = self.sink.budget.take(buf.len());
        if granted < buf.len() {
            self.sink.recorder.refuse(RefusalKind::GuestOutput, self.sink.stream.name());
        }
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
        let budget = OutputBudget::new(20, 100);
        let sink = LogSink::new(Arc::from("p"), Stream::Stdout, budget.clone(), recorder()).capturing(capture.clone());
        let mut writer = Pin::from(sink.async_stream());
        writer.write_all(b"first line\nsecond").await.expect("write");
        writer.write_all(b" line is long\nthird\n").await.expect("writes never fail");
        drop(writer);
        let lines = capture.lock().expect("lock").clone();
        assert_eq!(lines, vec!["first line".to_owned(), "second li".to_owned()]);
        assert_eq!(budget.dropped(), 37 - 20);
    }

    fn recorder() -> Recorder {
        Recorder::new(Arc::from("p"), "1".into(), None, Arc::default(), Arc::default())
    }

    #[tokio::test]
    async fn newlines_count_as_records_and_lines_are_escaped() {
        let capture = Arc::new(Mutex::new(Vec::new()));
        let counters = Arc::new(crate::runtime::sandbox::refusal_log::RefusalCounters::default());
        let recorder = Recorder::new(Arc::from("p"), "1".into(), None, counters.clone(), Arc::default());
        let sink = LogSink::new(Arc::from("p"), Stream::Stderr, OutputBudget::new(1 << 20, 3), recorder).capturing(capture.clone());
        let mut writer = Pin::from(sink.async_stream());
        writer.write_all(b"a\x1b[31m\n\n\n\n\n\n\n\n").await.expect("writes never fail");
        drop(writer);
        let lines = capture.lock().expect("lock").clone();
        assert_eq!(lines, vec!["a\\u{1b}[31m".to_owned(), String::new(), String::new()], "three records, then nothing");
        assert_eq!(counters.count(RefusalKind::GuestOutput), 5);
    }
}
