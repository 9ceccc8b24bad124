//! The `paddock:plugin/host` imports: what a plugin may call during a request.
//!
//! Logging, progress and change notices go to the request's `CallContext` (and the host log);
//! the session passes change notices on to the server. Cancellation reads its flag. Input from the client (sampling, elicitation, roots) is not a host call: a plugin
//! ends its call with `input-required` and is called again with the answers.
//!
//! Every host call is bounded: each string a guest passes is cut to a cap before it is kept, and
//! each call has budgets of log records and bytes, progress notifications and change notices
//! (`CallBudgets`). The excess is dropped, counted, and recorded once per call. Plugin text that
//! reaches the operator's log is escaped.

use crate::escape::Escaped;
use crate::plugin::{CallEvent, LogLevel};
use crate::policy::RefusalKind;
use crate::runtime::bindings::paddock::plugin::host::{Host, ListKind, LogLevel as WitLogLevel};
use crate::runtime::bindings::paddock::plugin::{context, input, types};
use crate::runtime::sandbox::store_state::HostState;
use crate::runtime::text::truncate;

/// Longest log message kept (longer ones are cut, with a marker).
const MAX_LOG_BYTES: usize = 16 << 10;
/// Longest logger name or progress message kept.
const MAX_LABEL_BYTES: usize = 256;
/// Takes one unit from `left`; false when it is spent.
fn take(left: &mut u32) -> bool {
    if *left == 0 {
        return false;
    }
    *left -= 1;
    true
}

impl types::Host for HostState {}
impl input::Host for HostState {}
impl context::Host for HostState {}

impl Host for HostState {
    async fn log(&mut self, level: WitLogLevel, logger: Option<String>, data: String) {
        let cost = data.len().min(MAX_LOG_BYTES);
        if !take(&mut self.budgets.log_records) || self.budgets.log_bytes < cost {
            self.budgets.log_records = 0;
            return self.recorder.refuse(RefusalKind::Log, "log records");
        }
        self.budgets.log_bytes -= cost;
        let level = log_level(level);
        let logger = logger.map(|l| truncate(l, MAX_LABEL_BYTES));
        let data = truncate(data, MAX_LOG_BYTES);
        tracing::debug!(
            target: "plugin",
            plugin = %self.plugin,
            level = level.as_str(),
            logger = %Escaped(logger.as_deref().unwrap_or("")),
            "{}",
            Escaped(&data)
        );
        self.cx.emit(CallEvent::Log { level, logger, data });
    }

    async fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        if !take(&mut self.budgets.progress) {
            return self.recorder.refuse(RefusalKind::Progress, "progress notifications");
        }
        let message = message.map(|m| truncate(m, MAX_LABEL_BYTES));
        self.cx.emit(CallEvent::Progress { progress, total, message });
    }

    async fn is_cancelled(&mut self) -> bool {
        self.cx.is_cancelled()
    }

    async fn notify_list_changed(&mut self, kind: ListKind) {
        if !take(&mut self.budgets.notices) {
            return self.recorder.refuse(RefusalKind::Notices, "list-changed notices");
        }
        let kind = match kind {
            ListKind::Tools => crate::plugin::ListKind::Tools,
            ListKind::Resources => crate::plugin::ListKind::Resources,
            ListKind::Prompts => crate::plugin::ListKind::Prompts,
        };
        tracing::debug!(target: "plugin", plugin = %self.plugin, ?kind, "plugin announced a list change");
        self.cx.emit(CallEvent::ListChanged { plugin: self.plugin.clone(), kind });
    }

    async fn notify_resource_updated(&mut self, uri: String) {
        if !take(&mut self.budgets.notices) {
            return self.recorder.refuse(RefusalKind::Notices, "resource-updated notices");
        }
        let uri = truncate(uri, MAX_LABEL_BYTES * 8);
        tracing::debug!(target: "plugin", plugin = %self.plugin, uri = %Escaped(&uri), "plugin announced a resource update");
        self.cx.emit(CallEvent::ResourceUpdated { plugin: self.plugin.clone(), uri });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_run_out_and_stay_out() {
        let mut left = 2;
        assert!(take(&mut left));
        assert!(take(&mut left));
        assert!(!take(&mut left));
        assert!(!take(&mut left));
        assert_eq!(left, 0);
    }
}
