//! Recording refusals: every time the host refuses a plugin something (a file, a target, a
//! budget), one structured log record names the plugin, the request and what was refused, and
//! the plugin's counter for that kind goes up.
//!
//! Refusals can come in floods (a plugin logging, or probing paths, in a loop), so each call
//! logs the first `LOGGED_PER_KIND` refusals of each kind and counts the rest: the counter stays
//! exact and the operator's log stays bounded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::escape::Escaped;
use crate::policy::RefusalKind;

/// Refusals of one kind logged per call; later ones are only counted.
const LOGGED_PER_KIND: u32 = 8;

/// Per-plugin refusal counters, shared by every call of the plugin.
#[derive(Debug, Default)]
pub struct RefusalCounters {
    counts: [AtomicU64; RefusalKind::ALL.len()],
}

impl RefusalCounters {
    /// How many refusals of `kind` this plugin has had.
    pub fn count(&self, kind: RefusalKind) -> u64 {
        self.counts[kind.index()].load(Ordering::Relaxed)
    }

    /// Every kind with a non-zero count.
    pub fn snapshot(&self) -> Vec<(RefusalKind, u64)> {
        RefusalKind::ALL.iter().map(|k| (*k, self.count(*k))).filter(|(_, n)| *n > 0).collect()
    }

    fn bump(&self, kind: RefusalKind) {
        self.counts[kind.index()].fetch_add(1, Ordering::Relaxed);
    }
}

/// The recorder of one call: who is asking, for which request, and which kinds it has already
/// logged. Cheap to clone; every clone records into the same call.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    inner: Arc<CallRecord>,
}

#[derive(Debug)]
struct CallRecord {
    plugin: Arc<str>,
    request: String,
    operation: Option<Arc<str>>,
    counters: Arc<RefusalCounters>,
    /// The request's own count (what its audit record carries).
    request_count: Arc<AtomicU64>,
    logged: [AtomicU32; RefusalKind::ALL.len()],
}

impl Recorder {
    pub(crate) fn new(
        plugin: Arc<str>,
        request: String,
        operation: Option<Arc<str>>,
        counters: Arc<RefusalCounters>,
        request_count: Arc<AtomicU64>,
    ) -> Recorder {
        let logged = std::array::from_fn(|_| AtomicU32::new(0));
        Recorder { inner: Arc::new(CallRecord { plugin, request, operation, counters, request_count, logged }) }
    }

    /// Records one refusal: always counted; logged (with plugin, operation, request, kind and
    /// the target as `attempt`, all escaped) for the first `LOGGED_PER_KIND` of its kind in this
    /// call. The field is not called `target`: that name is the record's own (its module) in
    /// JSON logs, and a second `target` key would hide one of the two.
    pub(crate) fn refuse(&self, kind: RefusalKind, target: &str) {
        let call = &self.inner;
        call.counters.bump(kind);
        if let Some(metrics) = crate::telemetry::metrics::get() {
            metrics.plugin_refusal(&call.plugin, kind.as_str());
        }
        call.request_count.fetch_add(1, Ordering::Relaxed);
        let seen = call.logged[kind.index()].fetch_add(1, Ordering::Relaxed);
        if seen >= LOGGED_PER_KIND {
            return;
        }
        let note = if seen + 1 == LOGGED_PER_KIND { " (further refusals of this kind in this call are counted, not logged)" } else { "" };
        tracing::warn!(
            plugin = %call.plugin,
            operation = call.operation.as_deref().map(Escaped).map(tracing::field::display),
            request = %Escaped(&call.request),
            kind = kind.as_str(),
            attempt = %Escaped(target),
            "refused{note}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_counted_per_kind() {
        let counters = Arc::new(RefusalCounters::default());
        let request_count = Arc::new(AtomicU64::new(0));
        let recorder = Recorder::new(Arc::from("p"), "1".into(), None, counters.clone(), request_count.clone());
        for _ in 0..5 {
            recorder.refuse(RefusalKind::Log, "log records");
        }
        recorder.refuse(RefusalKind::Network, "http://10.0.0.1:80");
        assert_eq!(counters.count(RefusalKind::Log), 5);
        assert_eq!(counters.count(RefusalKind::Network), 1);
        assert_eq!(counters.count(RefusalKind::File), 0);
        assert_eq!(request_count.load(Ordering::Relaxed), 6, "the request's own count, for its audit record");
        assert_eq!(counters.snapshot(), vec![(RefusalKind::Network, 1), (RefusalKind::Log, 5)]);
    }
}
