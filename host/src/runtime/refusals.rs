//! Recording refusals: every time the host refuses a plugin something (a file, a target, a
//! budget), one structured log record names the plugin, the request and what was refused, and
//! the plugin's counter for that kind goes up.
//!
//! Budget refusals happen in floods (a plugin logging in a loop), so each call records the
//! first refusal of each kind and counts the rest silently: the counter stays exact, the log
//! stays readable.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::escape::Escaped;
use crate::policy::RefusalKind;

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
    logged: [AtomicBool; RefusalKind::ALL.len()],
}

impl Recorder {
    pub(crate) fn new(plugin: Arc<str>, request: String, operation: Option<Arc<str>>, counters: Arc<RefusalCounters>) -> Recorder {
        let logged = std::array::from_fn(|_| AtomicBool::new(false));
        Recorder { inner: Arc::new(CallRecord { plugin, request, operation, counters, logged }) }
    }

    /// Records one refusal: always counted; logged the first time per kind in this call for
    /// budget refusals (which come in floods), and every time for access refusals.
    pub(crate) fn refuse(&self, kind: RefusalKind, target: &str) {
        let call = &self.inner;
        call.counters.bump(kind);
        let budget = matches!(
            kind,
            RefusalKind::Log | RefusalKind::Progress | RefusalKind::Notices | RefusalKind::GuestOutput | RefusalKind::Resources
        );
        let seen = call.logged[kind.index()].swap(true, Ordering::Relaxed);
        if budget && seen {
            return;
        }
        tracing::warn!(
            plugin = %call.plugin,
            operation = call.operation.as_deref().map(Escaped).map(tracing::field::display),
            request = %Escaped(&call.request),
            kind = kind.as_str(),
            target = %Escaped(target),
            "{}",
            if budget { "plugin over its budget; the excess of this call is dropped" } else { "refused" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_counted_per_kind() {
        let counters = Arc::new(RefusalCounters::default());
        let recorder = Recorder::new(Arc::from("p"), "1".into(), None, counters.clone());
        for _ in 0..5 {
            recorder.refuse(RefusalKind::Log, "log records");
        }
        recorder.refuse(RefusalKind::Network, "http://10.0.0.1:80");
        assert_eq!(counters.count(RefusalKind::Log), 5);
        assert_eq!(counters.count(RefusalKind::Network), 1);
        assert_eq!(counters.count(RefusalKind::File), 0);
        assert_eq!(counters.snapshot(), vec![(RefusalKind::Network, 1), (RefusalKind::Log, 5)]);
    }
}
