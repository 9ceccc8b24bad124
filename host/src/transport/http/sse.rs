//! Server-sent events: the wire format, and the streams of a legacy session that a client can
//! resume with `Last-Event-ID`.
//!
//! A `ResumableStream` is fed by a pump task that owns the session's queue for that stream, so
//! what the session sends is logged whether or not a client is connected; a client that drops
//! the connection and comes back with the id of the last event it saw gets everything after it
//! from the log, then the live events. The log is bounded in events and bytes (the newest event
//! is always kept), and its events are charged to the process's memory budget: when that is
//! spent, a log gives up its oldest events first; an event pushed out of it cannot be replayed.
//!
//! Event ids are `<stream>-<seq>`: unique across the streams of a session, and naming the
//! stream they belong to.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::peers::Share;
use crate::budget::{Budget, Charge};
use crate::session::{OutboundReceiver, Outgoing, OutgoingKind};

/// Replay events given up, process-wide, because the memory budget was spent.
pub(super) static REPLAY_EVICTED: AtomicU64 = AtomicU64::new(0);

/// Events waiting for a slow client on one connection; the pump waits for room beyond that.
const LIVE_QUEUE: usize = 32;
/// How long a client waits before it reconnects a stream the server closed, in milliseconds.
pub(super) const RETRY_MS: u64 = 1000;
/// A comment line that keeps intermediaries from closing an idle stream.
pub(super) const KEEP_ALIVE: Bytes = Bytes::from_static(b": keep-alive\n\n");

/// One `message` event carrying a JSON-RPC message.
pub(super) fn message_event(id: Option<&str>, data: &str) -> Bytes {
    let mut event = String::with_capacity(data.len() + 48);
    if let Some(id) = id {
        event.push_str("id: ");
        event.push_str(id);
        event.push('\n');
    }
    event.push_str("event: message\n");
    push_data(&mut event, data);
    Bytes::from(event)
}

/// An event of another name (the HTTP+SSE `endpoint` event).
pub(super) fn named_event(name: &str, data: &str) -> Bytes {
    let mut event = format!("event: {name}\n");
    push_data(&mut event, data);
    Bytes::from(event)
}

fn push_data(event: &mut String, data: &str) {
    // Messages are compact JSON (no raw line breaks); split anyway so no input can forge a field.
    for line in data.split('\n') {
        event.push_str("data: ");
        event.push_str(line.trim_end_matches('\r'));
        event.push('\n');
    }
    event.push('\n');
}

/// The first event of a stream (2025-11-25): an id to resume from and the reconnection delay,
/// with empty data.
fn priming_event(id: &str) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {RETRY_MS}\ndata: \n\n"))
}

/// An SSE response around `body`.
pub(super) fn response(body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// A body of `replay` then the `live` events, with keep-alive comments while it is idle. It ends
/// when `live` ends, when `stop` is cancelled, or when `lifetime` (how long it may stay open,
/// and the client share it holds meanwhile) runs out; a client resumes it with `Last-Event-ID`.
pub(super) fn body(
    replay: Vec<Bytes>,
    live: Option<mpsc::Receiver<Bytes>>,
    keep_alive: Duration,
    stop: Option<CancellationToken>,
    lifetime: Option<(Duration, Share)>,
) -> Body {
    let replay = futures::stream::iter(replay.into_iter().map(Ok::<Bytes, std::convert::Infallible>));
    let (expires, share) = match lifetime {
        Some((lifetime, share)) => (Some(Box::pin(tokio::time::sleep(lifetime))), Some(share)),
        None => (None, None),
    };
    let counted = crate::telemetry::metrics::held(|m| m.stream("sse"));
    let live = futures::stream::unfold((live, stop, expires, (share, counted)), move |(live, stop, mut expires, share)| async move {
        let mut live = live?;
        let ticker = tokio::time::sleep(keep_alive);
        tokio::pin!(ticker);
        let next = tokio::select! {
            next = live.recv() => next?,
            () = &mut ticker => KEEP_ALIVE,
            () = cancelled(stop.as_ref()) => return None,
            () = expired(expires.as_mut()) => {
                tracing::debug!("an SSE stream reached the longest a stream may stay open: it ends, and its client may resume it");
                return None;
            }
        };
        Some((Ok(next), (Some(live), stop, expires, share)))
    });
    Body::from_stream(replay.chain(live))
}

/// Counts an event a replay log gave up.
fn replay_evicted() {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.replay_evicted(1);
    }
}

/// Waits for `sleep`, or forever without one.
pub(super) async fn expired(sleep: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>) {
    match sleep {
        Some(sleep) => sleep.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Waits for `token`, or forever without one.
pub(super) async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// A `Last-Event-ID` that names no event this session can replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ReplayError {
    /// Not of the form `<stream>-<seq>`.
    #[error("`Last-Event-ID` is not an event id of this server")]
    Malformed,
    /// The stream is unknown or gone.
    #[error("the stream of that event is gone; start again without `Last-Event-ID`")]
    UnknownStream,
}

/// Splits an event id into its stream and sequence number.
pub(super) fn parse_event_id(id: &str) -> Result<(u64, u64), ReplayError> {
    let (stream, seq) = id.trim().split_once('-').ok_or(ReplayError::Malformed)?;
    Ok((stream.parse().map_err(|_| ReplayError::Malformed)?, seq.parse().map_err(|_| ReplayError::Malformed)?))
}

/// How much one stream keeps for replay.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReplayLimits {
    pub(super) events: usize,
    pub(super) bytes: usize,
}

/// One stream of a legacy session: its replay log and the client connected to it, if any.
#[derive(Debug)]
pub(super) struct ResumableStream {
    id: u64,
    limits: ReplayLimits,
    budget: Arc<Budget>,
    state: Mutex<Log>,
}

#[derive(Debug, Default)]
struct Log {
    events: VecDeque<(u64, Bytes, Charge)>,
    bytes: usize,
    next_seq: u64,
    /// The newest event handed to a connected client.
    delivered: Option<u64>,
    listener: Option<mpsc::Sender<Bytes>>,
    ended: bool,
}

impl ResumableStream {
    pub(super) fn new(id: u64, limits: ReplayLimits, budget: &Arc<Budget>) -> Arc<ResumableStream> {
        Arc::new(ResumableStream { id, limits, budget: Arc::clone(budget), state: Mutex::new(Log::default()) })
    }

    pub(super) fn id(&self) -> u64 {
        self.id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs the priming event (an id and the retry delay, no data).
    pub(super) fn prime(&self) {
        let mut log = self.lock();
        let seq = log.next_seq;
        log.next_seq += 1;
        let event = priming_event(&format!("{}-{seq}", self.id));
        self.push(&mut log, seq, event);
    }

    fn push(&self, log: &mut Log, seq: u64, event: Bytes) {
        // Over the process's budget, this log gives up its oldest events for the new one; the
        // newest event is always kept (its request was admitted).
        let charge = loop {
            match self.budget.charge(event.len()) {
                Ok(charge) => break charge,
                Err(_) if !log.events.is_empty() => {
                    if let Some((_, old, _)) = log.events.pop_front() {
                        log.bytes -= old.len();
                        REPLAY_EVICTED.fetch_add(1, Ordering::Relaxed);
                        replay_evicted();
                    }
                }
                Err(_) => break self.budget.force(event.len()),
            }
        };
        log.bytes += event.len();
        log.events.push_back((seq, event, charge));
        while log.events.len() > 1 && (log.events.len() > self.limits.events || log.bytes > self.limits.bytes) {
            if let Some((_, old, _)) = log.events.pop_front() {
                log.bytes -= old.len();
                replay_evicted();
            }
        }
    }

    /// Logs one message and hands it to the connected client, waiting for room on its
    /// connection; a client that has gone is forgotten (the event stays in the log).
    async fn append(&self, line: &str) {
        let (seq, event, listener) = {
            let mut log = self.lock();
            let seq = log.next_seq;
            log.next_seq += 1;
            let event = message_event(Some(&format!("{}-{seq}", self.id)), line);
            self.push(&mut log, seq, event.clone());
            (seq, event, log.listener.clone())
        };
        let Some(listener) = listener else { return };
        let sent = listener.send(event).await.is_ok();
        let mut log = self.lock();
        if sent {
            log.delivered = Some(log.delivered.map_or(seq, |d| d.max(seq)));
        } else if log.listener.as_ref().is_some_and(|current| current.same_channel(&listener)) {
            log.listener = None;
        }
    }

    /// No more events: a connected client's body ends after what it was sent.
    pub(super) fn end(&self) {
        let mut log = self.lock();
        log.ended = true;
        log.listener = None;
    }

    /// Whether a client is connected now.
    pub(super) fn has_listener(&self) -> bool {
        self.lock().listener.as_ref().is_some_and(|l| !l.is_closed())
    }

    /// Connects a client, replacing any other one: the events after `after` (or, without it,
    /// those no client was handed yet) to replay, and the live events unless the stream ended.
    pub(super) fn attach(&self, after: Option<u64>) -> (Vec<Bytes>, Option<mpsc::Receiver<Bytes>>) {
        let mut log = self.lock();
        let from = after.or(log.delivered);
        let replay: Vec<Bytes> = log.events.iter().filter(|(seq, _, _)| from.is_none_or(|from| *seq > from)).map(|(_, e, _)| e.clone()).collect();
        if let Some((last, _, _)) = log.events.back() {
            log.delivered = Some(*last);
        }
        if log.ended {
            return (replay, None);
        }
        let (tx, rx) = mpsc::channel(LIVE_QUEUE);
        log.listener = Some(tx);
        (replay, Some(rx))
    }
}

/// Moves what the session sends on one stream into its log and to its client: `first` (a
/// frame already taken), then the queue, until the reply when `until_reply`, else until the
/// queue ends.
pub(super) async fn pump(stream: Arc<ResumableStream>, first: Option<Outgoing>, mut queue: OutboundReceiver, until_reply: bool) {
    let mut next = first;
    loop {
        let frame = match next.take() {
            Some(frame) => frame,
            None => match queue.recv().await {
                Some(frame) => frame,
                None => break,
            },
        };
        stream.append(&frame.line).await;
        if until_reply && matches!(frame.kind, OutgoingKind::Reply { .. }) {
            break;
        }
    }
    stream.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ReplayLimits {
        ReplayLimits { events: 3, bytes: 1 << 20 }
    }

    async fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(event) = rx.try_recv() {
            seen.push(String::from_utf8(event.to_vec()).expect("utf-8"));
        }
        seen
    }

    #[test]
    fn events_carry_their_stream_and_sequence_and_data_cannot_forge_fields() {
        assert_eq!(message_event(Some("4-2"), "{}"), Bytes::from("id: 4-2\nevent: message\ndata: {}\n\n"));
        assert_eq!(message_event(None, "a\nid: 9"), Bytes::from("event: message\ndata: a\ndata: id: 9\n\n"));
        assert_eq!(parse_event_id(" 4-2 "), Ok((4, 2)));
        assert_eq!(parse_event_id("4"), Err(ReplayError::Malformed));
        assert_eq!(parse_event_id("x-1"), Err(ReplayError::Malformed));
    }

    #[tokio::test]
    async fn a_client_that_comes_back_gets_what_it_missed_then_the_live_events() {
        let stream = ResumableStream::new(7, limits(), &Budget::unlimited());
        let (_, first) = stream.attach(None);
        let mut first = first.expect("live");
        stream.append("a").await;
        assert_eq!(drain(&mut first).await, vec!["id: 7-0\nevent: message\ndata: a\n\n"]);
        drop(first);
        stream.append("b").await;
        stream.append("c").await;
        let (replay, live) = stream.attach(Some(0));
        let replay: Vec<String> = replay.into_iter().map(|e| String::from_utf8(e.to_vec()).expect("utf-8")).collect();
        assert_eq!(replay, vec!["id: 7-1\nevent: message\ndata: b\n\n", "id: 7-2\nevent: message\ndata: c\n\n"]);
        let mut live = live.expect("still open");
        stream.append("d").await;
        assert_eq!(drain(&mut live).await, vec!["id: 7-3\nevent: message\ndata: d\n\n"]);
    }

    #[tokio::test]
    async fn without_an_event_id_a_client_gets_what_no_client_was_given() {
        let stream = ResumableStream::new(0, limits(), &Budget::unlimited());
        stream.append("queued while nobody listened").await;
        let (replay, _live) = stream.attach(None);
        assert_eq!(replay.len(), 1);
        let (replay, _live) = stream.attach(None);
        assert!(replay.is_empty(), "already handed to the first client");
    }

    #[tokio::test]
    async fn the_log_is_bounded_and_keeps_the_newest_events() {
        let stream = ResumableStream::new(1, limits(), &Budget::unlimited());
        for n in 0..10 {
            stream.append(&n.to_string()).await;
        }
        let (replay, _) = stream.attach(Some(0));
        let replay: Vec<String> = replay.into_iter().map(|e| String::from_utf8(e.to_vec()).expect("utf-8")).collect();
        assert_eq!(replay.len(), 3, "{replay:?}");
        assert!(replay[2].contains("data: 9"));
        let big = ResumableStream::new(2, ReplayLimits { events: 100, bytes: 10 }, &Budget::unlimited());
        big.append("much more than ten bytes").await;
        big.append("and another one").await;
        let (replay, _) = big.attach(None);
        assert_eq!(replay.len(), 1, "over the byte budget only the newest stays");
    }

    #[tokio::test]
    async fn over_the_process_budget_a_log_gives_up_its_oldest_events_and_keeps_the_newest() {
        let budget = Budget::new(crate::budget::MIN_BUDGET);
        let stream = ResumableStream::new(5, ReplayLimits { events: 100, bytes: usize::MAX }, &budget);
        let quarter = "q".repeat(crate::budget::MIN_BUDGET / 4);
        for _ in 0..3 {
            stream.append(&quarter).await;
        }
        let before = REPLAY_EVICTED.load(Ordering::Relaxed);
        let other = budget.charge(crate::budget::MIN_BUDGET / 4 - 1024).expect("the last quarter");
        stream.append(&quarter).await;
        assert!(REPLAY_EVICTED.load(Ordering::Relaxed) > before, "the oldest event made room");
        assert!(budget.used() <= budget.limit(), "the log stayed within the budget: {} of {}", budget.used(), budget.limit());
        drop(other);
        let (replay, _) = stream.attach(None);
        assert_eq!(replay.len(), 3, "event 0 was given up for event 3");
        assert!(replay[0].starts_with(b"id: 5-1\n"), "{:?}", &replay[0][..10]);
        drop(stream);
        assert_eq!(budget.used(), 0, "a dropped log gives back all it held");
    }

    #[tokio::test]
    async fn an_ended_stream_replays_and_closes() {
        let stream = ResumableStream::new(3, limits(), &Budget::unlimited());
        stream.prime();
        stream.append("reply").await;
        stream.end();
        let (replay, live) = stream.attach(Some(0));
        assert!(live.is_none());
        assert_eq!(replay.len(), 1);
        let (replay, _) = stream.attach(None);
        assert_eq!(replay.len(), 0);
        let fresh = ResumableStream::new(4, limits(), &Budget::unlimited());
        fresh.prime();
        let (replay, _) = fresh.attach(None);
        assert_eq!(replay, vec![Bytes::from(format!("id: 4-0\nretry: {RETRY_MS}\ndata: \n\n"))]);
    }
}
