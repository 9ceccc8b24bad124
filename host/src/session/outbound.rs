//! The bounded queue from a session to its transport's writer.
//!
//! Everything a session sends goes through one `Outbound`. It is bounded twice: in messages and
//! in bytes, so neither a flood of small notifications nor a few huge results can make the host
//! hold more than the budget while a client reads slowly (or not at all).
//! - Replies (and requests to the client) wait for space: every request still gets its one
//!   reply, at the client's pace.
//! - Notifications (logs, progress) never wait: under pressure they are shed and counted, so a
//!   plugin call never stalls because its client stopped reading.
//!
//! Each frame says whether it is the reply to a client's request (and its error code, if any),
//! so a transport that ends a stream with its reply (an HTTP POST) or maps errors to a status
//! needs no second parse of what the session wrote.
//!
//! A message larger than the whole byte budget is still sent: it takes the whole budget, alone.
//!
//! A queue made with `outbound_charged` also charges every queued message to the process's
//! memory budget (`crate::budget`): a notification that would go over it is shed, a reply is
//! always taken (its request was admitted, which the budget gates).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::budget::{Budget, Charge};

/// How much a session may have queued for its transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboundLimits {
    /// Messages queued at once.
    pub messages: usize,
    /// Bytes of queued messages at once.
    pub bytes: usize,
}

impl Default for OutboundLimits {
    /// 1024 messages and 64 MiB: several full-size results, and a deep backlog of small ones.
    fn default() -> Self {
        OutboundLimits { messages: 1024, bytes: 64 << 20 }
    }
}

/// The transport is gone; nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the transport has closed")]
pub struct TransportClosed;

/// What a queued message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutgoingKind {
    /// The reply to a request of the client (or the array answering a batch); `error` is the
    /// JSON-RPC error code when the reply is an error.
    Reply { error: Option<i64> },
    /// A request to the client, or a notification.
    Message,
}

/// One queued message; its share of the byte budget is released when the writer drops it.
#[derive(Debug)]
pub struct Outgoing {
    /// The message, one JSON text without a trailing newline.
    pub line: String,
    /// Whether it is a reply.
    pub kind: OutgoingKind,
    _bytes: OwnedSemaphorePermit,
    _charge: Option<Charge>,
}

/// The session's sending half.
#[derive(Debug, Clone)]
pub struct Outbound {
    tx: mpsc::Sender<Outgoing>,
    bytes: Arc<Semaphore>,
    max_bytes: usize,
    shed: Arc<AtomicU64>,
    budget: Option<Arc<Budget>>,
}

/// Room for one message in the queue, taken before the message is sent.
#[derive(Debug)]
pub struct Slot {
    place: mpsc::OwnedPermit<Outgoing>,
    bytes: OwnedSemaphorePermit,
    charge: Option<Charge>,
}

impl Slot {
    /// Queues `line` in the room this slot holds (never waits). A line longer than the slot
    /// was reserved for still goes: the queue's byte budget is a bound on what waits, and the
    /// slot's bytes are released with the frame.
    pub fn send(self, line: String, kind: OutgoingKind) {
        let mut charge = self.charge;
        if let Some(charge) = &mut charge
            && charge.bytes() != line.len()
        {
            // Shrinking always succeeds; growing past a spent budget keeps the reserved charge.
            let _ = charge.grow_to(line.len());
        }
        self.place.send(Outgoing { line, kind, _bytes: self.bytes, _charge: charge });
    }
}

/// The transport's receiving half.
#[derive(Debug)]
pub struct OutboundReceiver {
    rx: mpsc::Receiver<Outgoing>,
}

/// A bounded queue from a session to a transport writer.
pub fn outbound(limits: OutboundLimits) -> (Outbound, OutboundReceiver) {
    new_queue(limits, None)
}

/// A bounded queue whose messages are also charged to the process's memory budget.
pub fn outbound_charged(limits: OutboundLimits, budget: &Arc<Budget>) -> (Outbound, OutboundReceiver) {
    new_queue(limits, Some(Arc::clone(budget)))
}

fn new_queue(limits: OutboundLimits, budget: Option<Arc<Budget>>) -> (Outbound, OutboundReceiver) {
    let (tx, rx) = mpsc::channel(limits.messages.max(1));
    let max_bytes = limits.bytes.clamp(1, Semaphore::MAX_PERMITS).min(u32::MAX as usize);
    let sender = Outbound { tx, bytes: Arc::new(Semaphore::new(max_bytes)), max_bytes, shed: Arc::new(AtomicU64::new(0)), budget };
    (sender, OutboundReceiver { rx })
}

impl Outbound {
    /// Queues the reply to a client's request, waiting for space.
    ///
    /// # Errors
    /// `TransportClosed` once the receiver is gone.
    pub async fn reply(&self, line: String, error: Option<i64>) -> Result<(), TransportClosed> {
        self.send_kind(line, OutgoingKind::Reply { error }).await
    }

    /// Queues a message that must not be shed (a request to the client, a listen
    /// acknowledgement), waiting for space.
    ///
    /// # Errors
    /// `TransportClosed` once the receiver is gone.
    pub async fn send(&self, line: String) -> Result<(), TransportClosed> {
        self.send_kind(line, OutgoingKind::Message).await
    }

    async fn send_kind(&self, line: String, kind: OutgoingKind) -> Result<(), TransportClosed> {
        self.reserve(line.len()).await?.send(line, kind);
        Ok(())
    }

    /// Waits for room for one message of `len` bytes and holds it: what is sent through the
    /// slot is queued at once. A request holds its in-flight permit until this returns, so a
    /// client that does not read stops having its requests admitted.
    ///
    /// # Errors
    /// `TransportClosed` once the receiver is gone.
    pub async fn reserve(&self, len: usize) -> Result<Slot, TransportClosed> {
        let cost = len.clamp(1, self.max_bytes) as u32;
        let bytes = self.bytes.clone().acquire_many_owned(cost).await.map_err(|_| TransportClosed)?;
        let place = self.tx.clone().reserve_owned().await.map_err(|_| TransportClosed)?;
        let charge = self.budget.as_ref().map(|budget| budget.force(len));
        Ok(Slot { place, bytes, charge })
    }

    /// Queues a notification if there is room right now; otherwise drops it and counts it.
    /// Returns whether it was queued.
    pub fn notify(&self, line: String) -> bool {
        let Ok(permit) = self.bytes.clone().try_acquire_many_owned(self.cost(&line)) else {
            self.count_shed();
            return false;
        };
        let charge = match self.budget.as_ref().map(|budget| budget.charge(line.len())).transpose() {
            Ok(charge) => charge,
            Err(_) => {
                self.count_shed();
                return false;
            }
        };
        match self.tx.try_send(Outgoing { line, kind: OutgoingKind::Message, _bytes: permit, _charge: charge }) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.count_shed();
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Notifications dropped so far because the queue was full.
    pub fn shed_count(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    fn cost(&self, line: &str) -> u32 {
        // Bounded by `max_bytes`, which fits in u32 (see `outbound`).
        line.len().clamp(1, self.max_bytes) as u32
    }

    fn count_shed(&self) {
        if let Some(metrics) = crate::telemetry::metrics::get() {
            metrics.notification_shed();
        }
        if self.shed.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!("the client reads too slowly: notifications are being dropped (the count is reported when the session ends)");
        }
    }
}

impl OutboundReceiver {
    /// The next message; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Outgoing> {
        self.rx.recv().await
    }

    /// The next message, blocking the current (non-async) thread.
    pub fn blocking_recv(&mut self) -> Option<Outgoing> {
        self.rx.blocking_recv()
    }

    /// A message that is already queued, if any.
    pub fn try_recv(&mut self) -> Option<Outgoing> {
        self.rx.try_recv().ok()
    }

    /// Puts `first` in `batch`, then, once the tasks that are ready to run have had their turn
    /// (under load they are finishing more replies), the messages queued behind it, in order: at
    /// most `BATCH_MESSAGES`, and none more once `BATCH_BYTES` are in. A writer that sends a batch
    /// in one write makes one system call for many replies; a message alone goes out at once.
    pub async fn fill_batch(&mut self, first: Outgoing, batch: &mut Vec<Outgoing>) {
        let mut bytes = first.line.len();
        batch.push(first);
        tokio::task::yield_now().await;
        while batch.len() < BATCH_MESSAGES && bytes < BATCH_BYTES {
            let Some(message) = self.try_recv() else { break };
            bytes += message.line.len();
            batch.push(message);
        }
    }
}

/// The most messages a writer's batch holds (`OutboundReceiver::fill_batch`).
pub const BATCH_MESSAGES: usize = 64;
/// The bytes after which a writer's batch takes no more messages.
pub(crate) const BATCH_BYTES: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn notifications_are_shed_and_counted_when_the_queue_is_full() {
        let (out, mut rx) = outbound(OutboundLimits { messages: 2, bytes: 1 << 20 });
        assert!(out.notify("a".into()));
        assert!(out.notify("b".into()));
        assert!(!out.notify("c".into()), "a third message does not fit in two slots");
        assert_eq!(out.shed_count(), 1);
        assert_eq!(rx.recv().await.expect("queued").line, "a");
        assert!(out.notify("d".into()), "a slot is free again");
    }

    #[tokio::test]
    async fn the_byte_budget_sheds_notifications_and_holds_responses_until_space_frees() {
        let (out, mut rx) = outbound(OutboundLimits { messages: 100, bytes: 10 });
        assert!(out.notify("12345678".into()));
        assert!(!out.notify("abc".into()), "8 + 3 bytes is over the 10-byte budget");
        let waiting = tokio::spawn({
            let out = out.clone();
            async move { out.reply("xyz".into(), None).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "a response waits for space instead of being dropped");
        let first = rx.recv().await.expect("queued");
        assert_eq!(first.line, "12345678");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("admitted once space frees").expect("task").expect("sent");
        assert_eq!(rx.recv().await.expect("queued").line, "xyz");
    }

    #[tokio::test]
    async fn a_message_larger_than_the_budget_still_goes_alone() {
        let (out, mut rx) = outbound(OutboundLimits { messages: 10, bytes: 4 });
        out.reply("much longer than four bytes".into(), None).await.expect("sent");
        assert!(!out.notify("x".into()), "the big message holds the whole budget");
        drop(rx.recv().await.expect("queued"));
        assert!(out.notify("x".into()));
    }

    #[tokio::test]
    async fn a_charged_queue_sheds_notifications_over_the_process_budget_and_always_takes_replies() {
        let budget = Budget::new(crate::budget::MIN_BUDGET);
        let (out, mut rx) = outbound_charged(OutboundLimits { messages: 100, bytes: usize::MAX }, &budget);
        let big = "x".repeat(crate::budget::MIN_BUDGET / 2 + 1);
        assert!(out.notify(big.clone()), "half the budget fits");
        assert_eq!(budget.used(), big.len());
        assert!(!out.notify(big.clone()), "the second half does not");
        assert_eq!(out.shed_count(), 1);
        out.reply(big.clone(), None).await.expect("a reply is always taken");
        assert!(budget.used() > budget.limit());
        drop(rx.recv().await.expect("queued"));
        drop(rx.recv().await.expect("queued"));
        assert_eq!(budget.used(), 0, "every byte is given back when the writer drops the frames");
    }

    #[tokio::test]
    async fn sending_after_the_receiver_is_gone_fails_without_waiting() {
        let (out, rx) = outbound(OutboundLimits::default());
        drop(rx);
        assert_eq!(out.reply("x".into(), None).await, Err(TransportClosed));
        assert!(!out.notify("x".into()));
        assert_eq!(out.shed_count(), 0, "a closed transport is not a slow client");
    }
}
