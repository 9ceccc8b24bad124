//! Requests a legacy session sends to its client (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) and the answers it waits for.
//!
//! Each request gets a session-unique id (`paddock-<n>`); the client's response is routed back
//! at once by `answer`, whatever else is in flight. At most `MAX_PENDING` requests wait at a
//! time per session; one more fails at once. A request that is abandoned (the call was
//! cancelled, or the wait timed out) leaves the table.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::jsonrpc::{ErrorObject, Id};

/// Requests to the client one session may have waiting at once.
pub const MAX_PENDING: usize = 64;

/// The client's answer: its result, or the error it sent.
pub type Answer = Result<Value, ErrorObject>;

/// The table of requests waiting for the client.
#[derive(Debug, Default)]
pub struct ClientRequests {
    next: AtomicU64,
    pending: Mutex<HashMap<Id, oneshot::Sender<Answer>>>,
}

/// One request waiting for its answer; dropping it abandons the request.
#[derive(Debug)]
pub struct Waiting<'a> {
    table: &'a ClientRequests,
    pub id: Id,
    pub answer: oneshot::Receiver<Answer>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.table.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl ClientRequests {
    /// Registers a new request, or `None` when `MAX_PENDING` are already waiting.
    pub fn register(&self) -> Option<Waiting<'_>> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() >= MAX_PENDING {
            return None;
        }
        let id = Id::text(format!("paddock-{}", self.next.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = oneshot::channel();
        pending.insert(id.clone(), tx);
        Some(Waiting { table: self, id, answer: rx })
    }

    /// Routes the client's response to its request; false when no request waits for that id.
    pub fn answer(&self, id: &Id, answer: Answer) -> bool {
        let waiting = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        match waiting {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// Requests waiting now.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
