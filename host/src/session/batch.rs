//! JSON-RPC batches, which protocol revision 2025-03-26 (and only it) requires servers to
//! accept: the replies of a batch's requests go back together as one array, once all are in.
//!
//! A reply gathered into its batch is not queued yet, so its request keeps its in-flight permit
//! and the reply's bytes are charged to the memory budget until the array is: a batch holds at
//! most `MAX_IN_FLIGHT` replies of admitted work (the members past it are refused as busy), and
//! everything it holds is counted.

use std::sync::{Arc, Mutex};

use super::Permit;
use super::outbound::Outbound;
use crate::budget::{Budget, Charge};

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
    budget: Arc<Budget>,
    state: Mutex<Gathering>,
}

struct Gathering {
    pending: usize,
    replies: Vec<String>,
    held: Vec<Held>,
}

/// What a gathered reply holds until its array is queued: its request's permit and its bytes.
pub(super) struct Held {
    _admitted: Option<Permit>,
    _bytes: Charge,
}

/// A batch's whole array, with everything its replies held until it is queued.
pub(super) struct Array {
    pub(super) line: String,
    pub(super) held: Vec<Held>,
}

impl Batch {
    /// A batch that expects `pending` replies (its requests and its invalid members).
    pub(super) fn new(pending: usize, budget: Arc<Budget>) -> Arc<Batch> {
        Arc::new(Batch { budget, state: Mutex::new(Gathering { pending, replies: Vec::new(), held: Vec::new() }) })
    }

    /// Adds one reply, which keeps `admitted` and is charged (whatever is left: admission
    /// bounds it) until its array is queued; returns the whole array when it was the last one.
    #[must_use]
    pub(super) fn push(&self, line: String, admitted: Option<Permit>) -> Option<Array> {
        let held = Held { _admitted: admitted, _bytes: self.budget.force(line.len()) };
        self.settle(Some((line, held)))
    }

    /// One expected reply will never come (its request was cancelled); returns the whole array
    /// when that completes the batch.
    #[must_use]
    pub(super) fn skip(&self) -> Option<Array> {
        self.settle(None)
    }

    fn settle(&self, reply: Option<(String, Held)>) -> Option<Array> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((line, held)) = reply {
            state.replies.push(line);
            state.held.push(held);
        }
        state.pending = state.pending.saturating_sub(1);
        if state.pending == 0 && !state.replies.is_empty() {
            let line = format!("[{}]", state.replies.join(","));
            state.replies.clear();
            return Some(Array { line, held: std::mem::take(&mut state.held) });
        }
        None
    }
}
