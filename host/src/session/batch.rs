//! JSON-RPC batches, which protocol revision 2025-03-26 (and only it) requires servers to
//! accept: the replies of a batch's requests go back together as one array, once all are in.

use std::sync::{Arc, Mutex};

use super::outbound::Outbound;

/// Where the reply of one request goes, and with it everything sent on the request's behalf.
#[derive(Clone)]
pub(super) struct Dest {
    /// The queue of the stream the request arrived on: the channel's own, or (over HTTP) the
    /// stream of the POST that carried it.
    pub(super) out: Outbound,
    /// The batch whose array the reply joins, if the request came in one.
    pub(super) batch: Option<Arc<Batch>>,
}

/// The replies of one batch being gathered. Whoever settles the last member gets the array to
/// send.
pub(super) struct Batch {
    state: Mutex<Gathering>,
}

struct Gathering {
    pending: usize,
    replies: Vec<String>,
}

impl Batch {
    /// A batch that expects `pending` replies (its requests and its invalid members).
    pub(super) fn new(pending: usize) -> Arc<Batch> {
        Arc::new(Batch { state: Mutex::new(Gathering { pending, replies: Vec::with_capacity(pending) }) })
    }

    /// Adds one reply; returns the whole array when it was the last one.
    #[must_use]
    pub(super) fn push(&self, line: String) -> Option<String> {
        self.settle(Some(line))
    }

    /// One expected reply will never come (its request was cancelled); returns the whole array
    /// when that completes the batch.
    #[must_use]
    pub(super) fn skip(&self) -> Option<String> {
        self.settle(None)
    }

    fn settle(&self, line: Option<String>) -> Option<String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.replies.extend(line);
        state.pending = state.pending.saturating_sub(1);
        if state.pending == 0 && !state.replies.is_empty() {
            let array = format!("[{}]", state.replies.join(","));
            state.replies.clear();
            return Some(array);
        }
        None
    }
}
