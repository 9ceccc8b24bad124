//! The `paddock:plugin/host` imports: what a plugin may call during a request.
//!
//! Logging and progress go to the request's `CallContext` (and the host log); cancellation reads
//! its flag. Sampling, elicitation and roots need the client session and answer `unsupported`
//! for now: the three bodies are here, together, so they can be wired to the session in one place.
//! Every string a guest passes is bounded before it is kept.

use super::bindings::paddock::plugin::host::{
    ClientError, ElicitationRequest, ElicitationResult, Host, ListKind, LogLevel as WitLogLevel, Root, SamplingRequest,
    SamplingResult,
};
use super::bindings::paddock::plugin::types;
use super::sandbox::HostState;
use crate::plugin::{CallEvent, LogLevel};

/// Longest log message kept (longer ones are cut, with a marker).
const MAX_LOG_BYTES: usize = 16 << 10;
/// Longest logger name or progress message kept.
const MAX_LABEL_BYTES: usize = 256;

impl types::Host for HostState {}

impl Host for HostState {
    async fn log(&mut self, level: WitLogLevel, logger: Option<String>, data: String) {
        let level = log_level(level);
        let logger = logger.map(|l| truncate(l, MAX_LABEL_BYTES));
        let data = truncate(data, MAX_LOG_BYTES);
        tracing::debug!(target: "plugin", plugin = %self.plugin, level = level.as_str(), logger = logger.as_deref().unwrap_or(""), "{data}");
        self.cx.emit(CallEvent::Log { level, logger, data });
    }

    async fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let message = message.map(|m| truncate(m, MAX_LABEL_BYTES));
        self.cx.emit(CallEvent::Progress { progress, total, message });
    }

    async fn is_cancelled(&mut self) -> bool {
        self.cx.is_cancelled()
    }

    async fn sample(&mut self, _request: SamplingRequest) -> Result<SamplingResult, ClientError> {
        Err(ClientError::Unsupported("sampling is not available on this connection".to_owned()))
    }

    async fn elicit(&mut self, _request: ElicitationRequest) -> Result<ElicitationResult, ClientError> {
        Err(ClientError::Unsupported("elicitation is not available on this connection".to_owned()))
    }

    async fn list_roots(&mut self) -> Result<Vec<Root>, ClientError> {
        Err(ClientError::Unsupported("roots are not available on this connection".to_owned()))
    }

    async fn notify_list_changed(&mut self, kind: ListKind) {
        tracing::info!(target: "plugin", plugin = %self.plugin, ?kind, "plugin announced a list change");
    }

    async fn notify_resource_updated(&mut self, uri: String) {
        let uri = truncate(uri, MAX_LABEL_BYTES * 8);
        tracing::info!(target: "plugin", plugin = %self.plugin, %uri, "plugin announced a resource update");
    }
}

fn log_level(level: WitLogLevel) -> LogLevel {
    match level {
        WitLogLevel::Debug => LogLevel::Debug,
        WitLogLevel::Info => LogLevel::Info,
        WitLogLevel::Notice => LogLevel::Notice,
        WitLogLevel::Warning => LogLevel::Warning,
        WitLogLevel::Error => LogLevel::Error,
        WitLogLevel::Critical => LogLevel::Critical,
        WitLogLevel::Alert => LogLevel::Alert,
        WitLogLevel::Emergency => LogLevel::Emergency,
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary, marking the cut.
pub(crate) fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
