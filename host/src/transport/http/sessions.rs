//! The legacy sessions held by the HTTP listener (Streamable HTTP and HTTP+SSE): unguessable
//! ids, a cap on how many exist, idle expiry, and each session's resumable streams.
//!
//! A session id names the replica that owns it and carries a seal under the shared key
//! (`replica::ids`: 128 random bits and the seal, after the replica's id). A session ends when its client deletes it, when
//! nobody has used it for `HttpLimits::session_idle` (no request, no connected stream, nothing
//! in flight), or at shutdown; its id is then unknown (404) and its running requests are
//! cancelled. A Streamable HTTP session keeps stream 0 (the GET stream, fed by the session's own
//! queue) and one stream per POST answered with SSE; at most `MAX_LIVE_STREAMS` of those are
//! open, and the `RETAINED_STREAMS` newest finished ones are kept for replay, unless the
//! process's memory budget is running low: then a finished stream is dropped at once, and before
//! a new stream opens or a body is refused for want of budget, the finished streams that ended
//! first are given up (`SessionTable::shed_finished`), whichever session kept them. Each session is one of its client's session shares
//! (`peers.rs`), given back when it ends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::peers::Share;
use super::sse::{ReplayLimits, ResumableStream};
use super::{HttpLimits, Shared};
use crate::budget::Budget;
use crate::identity::Principal;
use crate::replica::{IdKind, Replica};
use crate::session::Session;

/// POST streams of one session open at once.
pub(super) const MAX_LIVE_STREAMS: usize = 256;
/// Finished POST streams of one session kept for replay.
const RETAINED_STREAMS: usize = 16;

/// Which transport a session belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    /// Streamable HTTP (`/mcp` with `Mcp-Session-Id`).
    Streamable,
    /// HTTP+SSE (`/sse` and `/messages`).
    Sse,
}

/// One legacy session and its streams.
#[derive(Debug)]
pub(super) struct HttpSession {
    pub(super) id: String,
    pub(super) flavor: Flavor,
    pub(super) session: Arc<Session>,
    streams: Mutex<Streams>,
    last_used: Mutex<Instant>,
    /// Cancelled when the session ends: its open streams close.
    pub(super) ended: CancellationToken,
    /// Cancelled when the session ends or shutdown begins: streams that wait for news close.
    pub(super) idle_streams: CancellationToken,
    limits: ReplayLimits,
    budget: Arc<Budget>,
    /// The client's session share, given back when the session ends.
    share: Mutex<Option<Share>>,
    _counted: Option<crate::telemetry::metrics::Held>,
}

#[derive(Debug, Default)]
struct Streams {
    next: u64,
    live: HashMap<u64, Arc<ResumableStream>>,
    /// With the order in which they ended, process-wide (oldest first).
    finished: VecDeque<(u64, Arc<ResumableStream>)>,
}

/// A session cannot take another POST stream now.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("{MAX_LIVE_STREAMS} requests of this session are already streaming; retry once some have finished")]
pub(super) struct TooManyStreams;

impl HttpSession {
    /// Marks the session as used now.
    pub(super) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }

    fn streams(&self) -> std::sync::MutexGuard<'_, Streams> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The GET stream (stream 0), created with the session.
    pub(super) fn standalone(&self) -> Option<Arc<ResumableStream>> {
        self.streams().live.get(&0).cloned()
    }

    /// A new stream for one POST.
    pub(super) fn open_stream(&self) -> Result<Arc<ResumableStream>, TooManyStreams> {
        let mut streams = self.streams();
        if streams.live.len() > MAX_LIVE_STREAMS {
            return Err(TooManyStreams);
        }
        streams.next += 1;
        let stream = ResumableStream::new(streams.next, self.limits, &self.budget);
        streams.live.insert(stream.id(), Arc::clone(&stream));
        Ok(stream)
    }

    /// A POST stream has ended: it moves to the finished ones kept for replay.
    pub(super) fn stream_ended(&self, stream: &Arc<ResumableStream>) {
        let mut streams = self.streams();
        if streams.live.remove(&stream.id()).is_some() {
            streams.finished.push_back((ENDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed), Arc::clone(stream)));
            // With less than a quarter of the budget left, finished streams are the first thing
            // given up: a client that comes back for one is told it is gone.
            let keep = if self.budget.is_low(0.25) { 0 } else { RETAINED_STREAMS };
            while streams.finished.len() > keep {
                streams.finished.pop_front();
                if keep == 0 {
                    FINISHED_DROPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    }

    /// When the oldest finished stream kept for replay ended, in the process's order.
    fn oldest_finished(&self) -> Option<u64> {
        self.streams().finished.front().map(|(ended, _)| *ended)
    }

    /// Gives up the oldest finished stream; false when none is kept.
    fn drop_oldest_finished(&self) -> bool {
        let dropped = self.streams().finished.pop_front();
        if dropped.is_some() {
            FINISHED_DROPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        dropped.is_some()
    }

    /// The stream with this id, live or kept for replay.
    pub(super) fn stream(&self, id: u64) -> Option<Arc<ResumableStream>> {
        let streams = self.streams();
        streams.live.get(&id).cloned().or_else(|| streams.finished.iter().find(|(_, s)| s.id() == id).map(|(_, s)| Arc::clone(s)))
    }

    /// Whether anything keeps the session busy: a request in flight or a connected stream.
    fn busy(&self) -> bool {
        self.session.requests_in_flight() > 0 || self.streams().live.values().any(|s| s.has_listener())
    }

    fn end(&self) {
        self.share.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.ended.cancel();
        self.idle_streams.cancel();
        self.session.close();
        let streams = std::mem::take(&mut *self.streams());
        for stream in streams.live.values() {
            stream.end();
        }
    }
}

/// The table of live sessions.
#[derive(Debug)]
pub(super) struct SessionTable {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    limits: ReplayLimits,
    budget: Arc<Budget>,
    replica: Arc<Replica>,
}

/// The order in which POST streams end, process-wide.
static ENDED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Finished streams dropped, process-wide, because the memory budget ran low.
pub(super) static FINISHED_DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The cap on sessions is reached.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the server holds as many sessions as it allows; retry later")]
pub(super) struct SessionsFull;

impl SessionTable {
    pub(super) fn new(limits: &HttpLimits, budget: &Arc<Budget>, replica: &Arc<Replica>) -> SessionTable {
        SessionTable {
            sessions: Mutex::new(HashMap::new()),
            max: limits.max_sessions,
            idle: limits.session_idle,
            limits: ReplayLimits { events: limits.replay_events, bytes: limits.replay_bytes },
            budget: Arc::clone(budget),
            replica: Arc::clone(replica),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new session around `session`, with its GET stream for Streamable HTTP; it
    /// holds `share` (its client's) until it ends. `shutdown` closes its idle streams.
    pub(super) fn create(&self, session: Arc<Session>, flavor: Flavor, shutdown: &CancellationToken, share: Share) -> Result<Arc<HttpSession>, SessionsFull> {
        let id = self.replica.mint(match flavor {
            Flavor::Streamable => IdKind::Session,
            Flavor::Sse => IdKind::SseSession,
        });
        session.set_wire_id(&id);
        let mut streams = Streams::default();
        if flavor == Flavor::Streamable {
            streams.live.insert(0, ResumableStream::new(0, self.limits, &self.budget));
        }
        let http = Arc::new(HttpSession {
            id: id.clone(),
            flavor,
            session,
            streams: Mutex::new(streams),
            last_used: Mutex::new(Instant::now()),
            ended: CancellationToken::new(),
            idle_streams: shutdown.child_token(),
            limits: self.limits,
            budget: Arc::clone(&self.budget),
            share: Mutex::new(Some(share)),
            _counted: crate::telemetry::metrics::held(|m| {
                m.session(match flavor {
                    Flavor::Streamable => "streamable-http",
                    Flavor::Sse => "sse",
                })
            }),
        });
        let mut sessions = self.lock();
        if sessions.len() >= self.max {
            tracing::warn!(max = self.max, "a new session was refused: the session cap is reached");
            return Err(SessionsFull);
        }
        sessions.insert(id, Arc::clone(&http));
        Ok(http)
    }

    /// While less than a quarter of the budget is left, the finished stream that ended first is
    /// given up, whichever session kept it: replay kept for clients that may never come back is
    /// let go before anyone's new work is refused. Returns how many were given up.
    pub(super) fn shed_finished(&self) -> usize {
        let mut dropped = 0;
        while self.budget.is_low(0.25) {
            let oldest = self.all().into_iter().filter_map(|s| s.oldest_finished().map(|ended| (ended, s))).min_by_key(|(ended, _)| *ended);
            match oldest.map(|(_, s)| s) {
                Some(session) if session.drop_oldest_finished() => dropped += 1,
                _ => break,
            }
        }
        if dropped > 0 {
            tracing::info!(
                dropped,
                used = self.budget.used(),
                limit = self.budget.limit(),
                "the memory budget is low: finished streams kept for replay were let go"
            );
        }
        dropped
    }

    /// Whether the table holds as many sessions as it allows.
    pub(super) fn is_full(&self) -> bool {
        self.lock().len() >= self.max
    }

    /// The session with this id, if it is live, of this flavor and `principal`'s: another
    /// principal's session is as unknown to a request as one that never was.
    pub(super) fn get(&self, id: &str, flavor: Flavor, principal: &Principal) -> Option<Arc<HttpSession>> {
        self.lock().get(id).filter(|s| s.flavor == flavor && s.session.principal() == principal).cloned()
    }

    /// Ends a session: its id is unknown from now on and its requests are cancelled.
    pub(super) fn remove(&self, id: &str) -> bool {
        let removed = self.lock().remove(id);
        match removed {
            Some(session) => {
                session.end();
                true
            }
            None => false,
        }
    }

    /// Every live session.
    pub(super) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.lock().values().cloned().collect()
    }

    /// Ends every session (shutdown).
    pub(super) fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.lock().drain().map(|(_, s)| s).collect();
        for session in all {
            session.end();
        }
    }

    /// Ends the sessions idle for longer than the limit; returns how many.
    fn expire(&self) -> usize {
        let expired: Vec<Arc<HttpSession>> = {
            let mut sessions = self.lock();
            let ids: Vec<String> = sessions.values().filter(|s| s.idle_for() >= self.idle && !s.busy()).map(|s| s.id.clone()).collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in &expired {
            tracing::info!(session = %session.id, "session expired after being idle");
            session.end();
        }
        expired.len()
    }
}

/// Ends idle sessions, checking often enough that none outlives its limit by more than a quarter.
pub(super) async fn reap(shared: Arc<Shared>) {
    let period = (shared.options.limits.session_idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        shared.sessions.expire();
        shared.peers.forget_idle();
    }
}
