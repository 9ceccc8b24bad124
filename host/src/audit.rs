//! The audit trail: one JSON record per request that reaches policy (a tool call, a resource
//! read, a prompt get, a completion, a task method), naming the principal, never the argument
//! values (a SHA-256 digest of the arguments stands in for them).
//!
//! Records go to `--audit FILE` (JSON lines, appended by a writer thread) or to the log (target
//! `audit`). The writer's queue is bounded: when it is full the request waits for room, up to
//! `STALL_BOUND`, and each wait is counted (`stalls`). A record that still finds no room is not
//! dropped silently: it is written to the log at error level with everything it holds, and
//! counted (`overflowed`). Write errors are logged and counted the same way.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::mpsc;

/// Records the writer's queue holds.
pub const QUEUE: usize = 4096;
/// How long a request waits for room in a full queue.
pub const STALL_BOUND: Duration = Duration::from_secs(5);
/// How long the writer gathers records before it writes them.
pub const BATCH_WINDOW: Duration = Duration::from_millis(20);

/// How a request ended, as the audit trail says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    /// The tool answered with `isError`.
    ToolError,
    /// A JSON-RPC error (unknown names included).
    ProtocolError,
    /// Refused by tool policy (answered like a missing item) or for a missing scope.
    Denied,
    RateLimited,
    /// A person said no, dismissed the form, or the tool's approval is `deny`.
    ApprovalRefused,
    Cancelled,
}

/// One audit record.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// Seconds since the Unix epoch, with microseconds.
    pub time: f64,
    /// The principal's id (`issuer subject`).
    pub principal: String,
    pub transport: &'static str,
    /// The protocol revision the request was served under.
    pub revision: &'static str,
    pub method: String,
    /// The exposed name (tool, prompt), URI (resource) or task id the request named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The plugin that served it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// SHA-256 of the arguments' JSON text (written as hex).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<Digest>,
    pub outcome: Outcome,
    pub duration_us: u64,
    /// What the plugin was refused while serving it (files, network, ...), when anything was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusals: Option<u64>,
}

impl Record {
    /// The time now, as records carry it.
    pub fn now() -> f64 {
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default()
    }

    /// The digest records carry for `arguments`, as the record writes it (hex).
    pub fn digest(arguments: &[u8]) -> String {
        use sha2::Digest as _;
        Digest(sha2::Sha256::digest(arguments).into()).to_string()
    }
}

/// A SHA-256 digest, written as 64 hex digits (when the record is written, off the request's path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// The digest of `value` as compact JSON text, hashed as it is written (no copy of the text).
    pub fn of_json(value: &serde_json::Value) -> Digest {
        use sha2::Digest as _;
        struct Hashing(sha2::Sha256);
        impl Write for Hashing {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.update(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut hashing = Hashing(sha2::Sha256::new());
        let _ = serde_json::to_writer(&mut hashing, value);
        Digest(hashing.0.finalize().into())
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Why the audit file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot open the audit file `{path}`: {error} (fix: a writable path in an existing folder)")]
    Open { path: String, error: std::io::Error },
}

/// Where records go.
#[derive(Debug, Clone)]
pub struct Audit {
    sink: Sink,
    counters: Arc<Counters>,
}

#[derive(Debug, Clone)]
enum Sink {
    Off,
    Log,
    File(mpsc::Sender<Record>),
}

#[derive(Debug, Default)]
struct Counters {
    /// Records handed to the writer.
    queued: AtomicU64,
    written: AtomicU64,
    stalls: AtomicU64,
    overflowed: AtomicU64,
    failed: AtomicU64,
}

/// What the audit trail has done since start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditCounts {
    /// Records written to the file or the log.
    pub written: u64,
    /// Requests that waited for room in the writer's queue.
    pub stalls: u64,
    /// Records that found no room within `STALL_BOUND` and went to the error log instead.
    pub overflowed: u64,
    /// Records the file refused (written to the error log instead).
    pub failed: u64,
}

impl Audit {
    /// No audit trail.
    pub fn off() -> Audit {
        Audit { sink: Sink::Off, counters: Arc::default() }
    }

    /// Records in the log, target `audit`.
    pub fn to_log() -> Audit {
        Audit { sink: Sink::Log, counters: Arc::default() }
    }

    /// Records appended to `path` as JSON lines, by a writer thread.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn to_file(path: &Path) -> Result<Audit, AuditError> {
        Audit::to_writer(open(path)?, QUEUE)
    }

    /// Records written to `out` through a queue of `queue` records.
    pub fn to_writer(out: impl Write + Send + 'static, queue: usize) -> Result<Audit, AuditError> {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let counters: Arc<Counters> = Arc::default();
        let written = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("paddock-audit".into())
            .spawn(move || write_all(rx, out, &written))
            .map_err(|error| AuditError::Open { path: "(writer thread)".into(), error })?;
        Ok(Audit { sink: Sink::File(tx), counters })
    }

    pub fn is_on(&self) -> bool {
        !matches!(self.sink, Sink::Off)
    }

    pub fn counts(&self) -> AuditCounts {
        let c = &self.counters;
        AuditCounts {
            written: c.written.load(Ordering::Relaxed),
            stalls: c.stalls.load(Ordering::Relaxed),
            overflowed: c.overflowed.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        }
    }

    /// Waits, up to `limit`, until every record handed to the writer is written (or reported
    /// lost): what a server does before it exits. Whether they all were.
    pub async fn drain(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let c = &self.counters;
            if c.written.load(Ordering::Relaxed) + c.failed.load(Ordering::Relaxed) >= c.queued.load(Ordering::Relaxed) {
                let counts = self.counts();
                if self.is_on() {
                    tracing::info!(
                        target: "audit",
                        written = counts.written,
                        stalls = counts.stalls,
                        overflowed = counts.overflowed,
                        failed = counts.failed,
                        "audit trail closed"
                    );
                }
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::error!(target: "audit", "audit records were still being written when the server stopped");
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Records `record`, waiting for room in the writer's queue up to `STALL_BOUND`.
    pub async fn record(&self, record: Record) {
        match &self.sink {
            Sink::Off => {}
            Sink::Log => {
                log_record(&record, false);
                self.counters.written.fetch_add(1, Ordering::Relaxed);
            }
            Sink::File(tx) => match tx.try_send(record) {
                Ok(()) => {
                    self.counters.queued.fetch_add(1, Ordering::Relaxed);
                }
                Err(mpsc::error::TrySendError::Full(record)) => {
                    self.counters.stalls.fetch_add(1, Ordering::Relaxed);
                    match tx.send_timeout(record, STALL_BOUND).await {
                        Ok(()) => {
                            self.counters.queued.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(error) => {
                            let record = match error {
                                mpsc::error::SendTimeoutError::Timeout(r) | mpsc::error::SendTimeoutError::Closed(r) => r,
                            };
                            self.counters.overflowed.fetch_add(1, Ordering::Relaxed);
                            log_record(&record, true);
                        }
                    }
                }
                Err(mpsc::error::TrySendError::Closed(record)) => {
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    log_record(&record, true);
                }
            },
        }
    }
}

fn open(path: &Path) -> Result<std::fs::File, AuditError> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(|error| AuditError::Open { path: path.display().to_string(), error })
}

/// A record in the log: at info level on target `audit`, or at error level when it could not be
/// written where it should have been.
fn log_record(record: &Record, lost: bool) {
    let line = serde_json::to_string(record).unwrap_or_default();
    if lost {
        tracing::error!(target: "audit", record = %crate::escape::Escaped(&line), "audit record could not be written to the audit file; it is kept here");
    } else {
        tracing::info!(target: "audit", record = %crate::escape::Escaped(&line));
    }
}

/// The writer thread: woken by the first record of a batch, it lets `BATCH_WINDOW` pass, then
/// writes every queued record, one line each, and flushes; a record counts as written once it is
/// flushed. Requests never wake it per record, so a busy server pays one wake-up and one write
/// per window, not per request.
fn write_all(mut rx: mpsc::Receiver<Record>, out: impl Write, counters: &Counters) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    while let Some(first) = rx.blocking_recv() {
        std::thread::sleep(BATCH_WINDOW);
        let mut batch = 0u64;
        let mut next = Some(first);
        while let Some(record) = next.take() {
            let mut line = serde_json::to_vec(&record).unwrap_or_default();
            line.push(b'\n');
            match out.write_all(&line) {
                Ok(()) => batch += 1,
                Err(_) => {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                    log_record(&record, true);
                }
            }
            next = rx.try_recv().ok();
        }
        match out.flush() {
            Ok(()) => {
                counters.written.fetch_add(batch, Ordering::Relaxed);
            }
            Err(_) => {
                counters.failed.fetch_add(batch, Ordering::Relaxed);
                tracing::error!(target: "audit", records = batch, "the audit file could not be flushed; these records may be lost");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn record(n: u64) -> Record {
        Record {
            time: Record::now(),
            principal: "token alice".into(),
            transport: "stdio",
            revision: "2025-11-25",
            method: "tools/call".into(),
            name: Some("echo".into()),
            plugin: Some("sample".into()),
            arguments_sha256: Some(Digest([7; 32])),
            outcome: Outcome::Ok,
            duration_us: n,
            refusals: None,
        }
    }

    /// A writer that holds its lines and can be made to block.
    #[derive(Clone, Default)]
    struct Held {
        lines: Arc<Mutex<Vec<u8>>>,
        /// While true, writes wait.
        closed: Arc<(Mutex<bool>, std::sync::Condvar)>,
    }

    impl Held {
        fn set_closed(&self, closed: bool) {
            *self.closed.0.lock().unwrap_or_else(|e| e.into_inner()) = closed;
            self.closed.1.notify_all();
        }
    }

    impl Write for Held {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (lock, opened) = &*self.closed;
            let mut closed = lock.lock().unwrap_or_else(|e| e.into_inner());
            while *closed {
                closed = opened.wait(closed).unwrap_or_else(|e| e.into_inner());
            }
            self.lines.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn every_record_is_one_line_naming_the_principal_and_never_the_argument_values() {
        let held = Held::default();
        let audit = Audit::to_writer(held.clone(), 8).expect("audit");
        for n in 0..100 {
            audit.record(record(n)).await;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while audit.counts().written < 100 {
            assert!(std::time::Instant::now() < deadline, "{:?}", audit.counts());
            tokio::task::yield_now().await;
        }
        let text = String::from_utf8(held.lines.lock().expect("lines").clone()).expect("utf-8");
        assert_eq!(text.lines().count(), 100);
        for (n, line) in text.lines().enumerate() {
            let value: serde_json::Value = serde_json::from_str(line).expect("json");
            assert_eq!(value["principal"], "token alice");
            assert_eq!(value["duration_us"], n as u64);
            assert_eq!(value["outcome"], "ok");
        }
        assert!(!text.contains("hunter2"));
        // 100 records through a queue of 8: some requests waited, none was lost.
        assert_eq!(audit.counts().overflowed, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_writer_that_cannot_keep_up_makes_requests_wait_and_then_keeps_the_record_in_the_log() {
        let held = Held::default();
        held.set_closed(true);
        let audit = Audit::to_writer(held.clone(), 1).expect("audit");
        // The writer takes a record and blocks writing it; the next one fills the queue, and the
        // one after waits for room (paused time runs the bound out) and then goes to the error
        // log, counted.
        for n in 0..1000 {
            audit.record(record(n)).await;
            if audit.counts().overflowed > 0 {
                break;
            }
        }
        let counts = audit.counts();
        assert!(counts.overflowed >= 1, "{counts:?}");
        assert!(counts.stalls >= counts.overflowed, "every overflow waited first: {counts:?}");
        assert_eq!(counts.written, 0, "the writer is still blocked: {counts:?}");
        held.set_closed(false);
    }
}
