//! The per-channel MCP engine: JSON-RPC dispatch, protocol era per message, lifecycle,
//! concurrency, cancellation, and the progress and log notifications of each request.
//!
//! One `Session` serves one channel: the stdio stream, a WebSocket, a legacy HTTP session, or
//! (`Session::stateless`) one 2026-07-28 HTTP request. A request carrying the 2026-07-28
//! `_meta` is served statelessly; anything else follows the legacy `initialize` lifecycle of
//! the channel. A transport whose requests arrive on streams of their own (an HTTP POST) hands
//! each frame in with that stream's queue (`handle_frame_on`): the reply, and the progress,
//! log messages and questions of that request, go there; everything else goes to the
//! channel's own queue. Every request gets exactly one
//! reply, except one the client cancelled; notifications get none. Requests that reach a
//! plugin run concurrently, so a slow tool never holds up `ping` or other calls.
//!
//! The session never waits on a slow party. Reading a frame never waits for plugin capacity
//! (beyond `MAX_IN_FLIGHT` a request is refused at once), so `ping` and cancellations are
//! handled as they arrive. A cancelled request's plugin sees `is-cancelled`, gets its grace
//! period, and is then stopped; no reply is sent. A panic while serving a request becomes an
//! error reply.
//!
//! Finished lines go to a bounded `Outbound` queue (responses wait for room, notifications are
//! shed and counted); the transport owns the actual writer. The session knows no wasm and no
//! sockets.

mod batch;
mod client_requests;
mod lifecycle;
mod methods;
mod outbound;
mod rounds;
mod server;
mod shape;
mod subscriptions;
mod task_calls;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

pub use crate::router::HeaderParam;
pub use lifecycle::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, is_modern};
pub use lifecycle::{META_RELATED_TASK, TASKS_EXTENSION};
pub use outbound::{Frame, FrameKind, Outbound, OutboundLimits, OutboundReceiver, Slot, TransportClosed, outbound, outbound_charged};
pub use rounds::{MAX_ROUNDS, MISSING_REQUIRED_CLIENT_CAPABILITY};
pub use server::{DEFAULT_INPUT_TIMEOUT, Server};
pub use subscriptions::{MAX_LISTENS, MAX_RESOURCE_SUBSCRIPTIONS, META_SUBSCRIPTION_ID};
pub use task_calls::TASK_AFTER;

use batch::{Batch, Dest};

use crate::input::ClientInfo;
use crate::jsonrpc::{self, ErrorObject, Id, Message};
use crate::plugin::{CallContext, EVENT_QUEUE, LogLevel};
use crate::revision::Revision;
use client_requests::ClientRequests;
use subscriptions::Filter;

/// Requests of one channel admitted at once (running, or waiting for their plugin's
/// concurrency gate). One more is answered with `SERVER_BUSY` at once: reading never waits for
/// plugin capacity, so `ping`, cancellations and other plugins' calls are never stuck behind it.
pub const MAX_IN_FLIGHT: usize = 256;
/// JSON-RPC error code (implementation-defined server error) for a request refused because
/// `MAX_IN_FLIGHT` requests of the channel are already in flight.
pub const SERVER_BUSY: i64 = -32000;
/// How long a cancelled request may take to wind down before the session drops its work. The
/// runtime stops a plugin sooner (its own grace period); this holds for any `Plugin`.
const CANCEL_BACKSTOP: Duration = Duration::from_secs(1);
/// How long `abandon_in_flight` waits for room for each reply.
const ABANDON_WAIT: Duration = Duration::from_millis(200);
/// What an admitted request reserves of the process's memory budget until its reply is queued.
const ADMISSION_RESERVE: usize = 64 << 10;

tokio::task_local! {
    /// The stream of the request this task serves: where its progress, log messages and
    /// questions to the client go. Unset outside a request's own task (a task run, the change
    /// feed): those use the channel's queue.
    static REQUEST_STREAM: Outbound;
}

/// The protocol era and settings a request is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// A legacy session at the negotiated version.
    Legacy { version: Revision },
    /// A stateless 2026-07-28 request, with the log level it opted in to.
    Modern { log_level: Option<LogLevel> },
}

#[derive(Debug)]
struct LegacyState {
    version: Option<Revision>,
    log_level: LogLevel,
    /// What the client declared at `initialize`.
    client_capabilities: Map<String, Value>,
    client_info: Option<ClientInfo>,
    /// The list changes and resources this session hears about.
    followed: Filter,
}

/// A request admitted to run. The entry leaves the map when the request is answered or
/// cancelled; `generation` tells a finishing request whether the entry is still its own, since
/// a client may reuse the id of a request it cancelled.
struct InFlight {
    generation: u64,
    cx: CallContext,
    dest: Dest,
}

/// A request's place among those in flight: its channel's permit, and its reserve of the
/// process's memory budget (room for its reply, refused at once when the budget is spent).
struct Permit {
    _slot: OwnedSemaphorePermit,
    _reserve: crate::budget::Charge,
}

/// What admitting a request gives its task.
struct Admitted {
    permit: Permit,
    cx: CallContext,
    generation: u64,
    events: mpsc::Receiver<crate::plugin::CallEvent>,
}

/// One channel's session.
pub struct Session {
    /// Unique in the process: the owner of the legacy tasks this session creates.
    id: u64,
    server: Arc<Server>,
    out: Outbound,
    client_requests: ClientRequests,
    legacy: Mutex<LegacyState>,
    in_flight: Mutex<HashMap<Id, InFlight>>,
    admitted: Arc<Semaphore>,
    /// Every request task, until its reply is queued (what `drain` waits for).
    requests: tokio_util::task::TaskTracker,
    listens: Arc<Semaphore>,
    generation: AtomicU64,
    /// Cancelled when the client's input ends: listen requests and the change feed stop.
    input_ended: CancellationToken,
    /// Serves 2026-07-28 requests only: a request without the `_meta` of that revision is
    /// refused instead of being taken for a legacy session's.
    stateless: bool,
    /// What the transport knows of the client (its address), when a session is not one client:
    /// the tasks it creates count against this client's quota.
    client: Option<Arc<str>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("legacy", &self.legacy).finish_non_exhaustive()
    }
}

impl Session {
    /// A session of `server` whose outgoing messages go to `out`.
    pub fn new(server: Arc<Server>, out: Outbound) -> Arc<Session> {
        Session::build(server, out, false, None)
    }

    /// A session that serves only 2026-07-28 requests (one HTTP request without a session):
    /// `initialize` and everything else without that revision's `_meta` is refused.
    pub fn stateless(server: Arc<Server>, out: Outbound) -> Arc<Session> {
        Session::build(server, out, true, None)
    }

    /// `stateless`, for a request from `client` (its address): its tasks count against it.
    pub fn stateless_from(server: Arc<Server>, out: Outbound, client: &str) -> Arc<Session> {
        Session::build(server, out, true, Some(Arc::from(client)))
    }

    fn build(server: Arc<Server>, out: Outbound, stateless: bool, client: Option<Arc<str>>) -> Arc<Session> {
        static SESSIONS: AtomicU64 = AtomicU64::new(0);
        Arc::new(Session {
            id: SESSIONS.fetch_add(1, Ordering::Relaxed),
            server,
            out,
            client_requests: ClientRequests::default(),
            legacy: Mutex::new(LegacyState {
                version: None,
                log_level: LogLevel::Info,
                client_capabilities: Map::new(),
                client_info: None,
                followed: Filter::legacy(),
            }),
            in_flight: Mutex::new(HashMap::new()),
            admitted: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            requests: tokio_util::task::TaskTracker::new(),
            listens: Arc::new(Semaphore::new(MAX_LISTENS)),
            generation: AtomicU64::new(0),
            input_ended: CancellationToken::new(),
            stateless,
            client,
        })
    }

    /// The legacy protocol version this session negotiated, once `initialize` was answered.
    pub fn negotiated_version(&self) -> Option<Revision> {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).version
    }

    /// The client is gone: every request in flight is cancelled (its plugin is told, given
    /// its grace period, then stopped; no reply is sent) and input ends.
    pub fn close(&self) {
        let entries: Vec<InFlight> = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).drain().map(|(_, entry)| entry).collect();
        if !entries.is_empty() {
            tracing::debug!(requests = entries.len(), "the client went away: its requests are cancelled");
        }
        for entry in entries {
            entry.cx.cancel();
        }
        self.end_of_input();
    }

    /// Answers every request still in flight with a `SERVER_BUSY` error saying `why`, and stops
    /// it: for a shutdown whose grace period has ended, so that no client is left without a
    /// reply. Each reply waits at most `ABANDON_WAIT` for room (a client that does not read
    /// loses it).
    pub async fn abandon_in_flight(&self, why: &str) {
        let entries: Vec<(Id, InFlight)> = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).drain().collect();
        if !entries.is_empty() {
            tracing::warn!(requests = entries.len(), "requests still running at the end of the grace period are answered with an error and stopped");
        }
        for (id, entry) in entries {
            entry.cx.cancel();
            let error = ErrorObject::new(SERVER_BUSY, why);
            let line = jsonrpc::error_line(Some(&id), &error);
            let _ = tokio::time::timeout(ABANDON_WAIT, self.deliver(&entry.dest, line, Some(error.code), None)).await;
        }
    }

    /// The client will send nothing more: listen requests end (with their closing result) and
    /// the session stops following changes. Requests already running still finish.
    pub fn end_of_input(&self) {
        self.input_ended.cancel();
        // Nobody can poll this session's tasks any more.
        self.server.tasks.drop_owner(&crate::tasks::TaskOwner::Session(self.id));
    }

    /// Handles one incoming frame. Returns once the message is answered or its work is
    /// started; it never waits for a plugin, only (for replies it sends itself) for room in
    /// the outgoing queue.
    pub async fn handle_frame(self: &Arc<Self>, frame: &str) {
        self.handle_frame_on(frame, self.out.clone()).await;
    }

    /// Handles one frame that arrived on a stream of its own: its replies, and what its
    /// requests send on their behalf, go to `stream`.
    pub async fn handle_frame_on(self: &Arc<Self>, frame: &str, stream: Outbound) {
        match jsonrpc::parse_json(frame) {
            Ok(value) => self.handle_value_on(value, stream).await,
            Err(rejection) => Self::reject(&stream, &rejection).await,
        }
    }

    /// Handles one frame the transport has already parsed as JSON (to route it).
    pub async fn handle_value(self: &Arc<Self>, value: Value) {
        self.handle_value_on(value, self.out.clone()).await;
    }

    /// Handles one frame the transport has already parsed as JSON (to route it), as
    /// `handle_frame_on` does.
    pub async fn handle_value_on(self: &Arc<Self>, value: Value, stream: Outbound) {
        if let serde_json::Value::Array(members) = &value
            && !members.is_empty()
            && self.accepts_batches()
        {
            let serde_json::Value::Array(members) = value else { return };
            return self.handle_batch(members, stream).await;
        }
        match jsonrpc::from_value(value) {
            Ok(message) => self.handle_message(message, Dest { out: stream, batch: None }).await,
            Err(rejection) => Self::reject(&stream, &rejection).await,
        }
    }

    async fn reject(stream: &Outbound, rejection: &jsonrpc::Rejection) {
        // The transport has gone away when this fails; nothing is left to tell.
        let _ = stream.reply(rejection.to_line(), Some(rejection.error.code)).await;
    }

    /// Batches are part of protocol 2025-03-26 only.
    fn accepts_batches(&self) -> bool {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).version.is_some_and(Revision::accepts_batches)
    }

    async fn handle_batch(self: &Arc<Self>, members: Vec<Value>, stream: Outbound) {
        let messages: Vec<Result<Message, jsonrpc::Rejection>> = members.into_iter().map(jsonrpc::from_value).collect();
        let pending = messages.iter().filter(|m| matches!(m, Ok(Message::Request { .. }) | Err(_))).count();
        let dest = Dest { out: stream, batch: Some(Batch::new(pending, Arc::clone(self.server.budget()))) };
        for message in messages {
            match message {
                Ok(message) => self.handle_message(message, dest.clone()).await,
                Err(rejection) => self.deliver(&dest, rejection.to_line(), Some(rejection.error.code), None).await,
            }
        }
    }

    /// Answers a frame the transport could not even hand over (too large, not UTF-8).
    pub async fn handle_rejection(&self, line: String, code: i64) {
        let _ = self.out.reply(line, Some(code)).await;
    }

    /// Waits until no request is in flight, or `timeout` passes.
    pub async fn drain(&self, timeout: Duration) {
        self.requests.close();
        let _ = tokio::time::timeout(timeout, self.requests.wait()).await;
    }

    /// Requests in flight now (running or waiting for their plugin).
    pub fn requests_in_flight(&self) -> usize {
        MAX_IN_FLIGHT - self.admitted.available_permits()
    }

    /// Notifications dropped so far because the client read too slowly.
    pub fn notifications_shed(&self) -> u64 {
        self.out.shed_count()
    }

    async fn handle_message(self: &Arc<Self>, message: Message, dest: Dest) {
        match message {
            Message::Request { id, method, params } => self.handle_request(id, method, params, dest).await,
            Message::Notification { method, params } => self.handle_notification(&method, params.as_ref()).await,
            Message::Response { id, outcome } => {
                // Routed at once: a plugin request waiting for this answer resumes.
                let routed = id.as_ref().is_some_and(|id| self.client_requests.answer(id, outcome));
                if !routed {
                    tracing::debug!(id = ?id.map(|i| i.to_string()), "ignoring a response to no pending request");
                }
            }
        }
    }

    async fn handle_notification(&self, method: &str, params: Option<&Map<String, Value>>) {
        match method {
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let Some(id) = params.and_then(|p| p.get("requestId")).and_then(Id::from_value) else { return };
                let entry = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                if let Some(entry) = entry {
                    tracing::debug!(request = %id, "request cancelled by the client");
                    // The request's task sees the token: the plugin is told, given its grace
                    // period, then stopped; no reply is sent. The id is free for reuse at once.
                    entry.cx.cancel();
                    if let Some(batch) = &entry.dest.batch
                        && let Some(array) = batch.skip()
                    {
                        let _ = entry.dest.out.reply(array.line, None).await;
                    }
                }
            }
            other => tracing::debug!(method = other, "ignoring notification"),
        }
    }

    async fn handle_request(self: &Arc<Self>, id: Id, method: String, params: Option<Map<String, Value>>, dest: Dest) {
        let era = match self.era_for(&method, params.as_ref()) {
            Ok(era) => era,
            Err(error) => return self.deliver_error(&dest, &id, &error).await,
        };
        let listen = method == "subscriptions/listen" && matches!(era, Era::Modern { .. });
        if !listen && !methods::runs_in_plugin(&method) {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| self.serve_local(&method, params.as_ref(), era)))
                .unwrap_or_else(|panic| Err(panicked(&id, &method, panic.as_ref())));
            if method == "initialize" && outcome.is_ok() {
                self.follow_changes();
            }
            let cache = methods::list_cache(&self.server.router(), &method);
            return self.reply(&dest, &id, &method, era, outcome.map(|result| rounds::Finished { result, cache }), None).await;
        }
        let Some(admitted) = self.admit(&id, &dest).await else { return };
        tracing::debug!(request = %id, method = %crate::escape::Escaped(&method), "request admitted");
        let session = Arc::clone(self);
        self.requests.spawn(REQUEST_STREAM.scope(dest.out, async move {
            let Admitted { permit, cx, generation, events } = admitted;
            if listen {
                // A panic is answered like any request's; the permit went with the unwinding.
                let listened = AssertUnwindSafe(Arc::clone(&session).listen(id.clone(), generation, params, era, cx, permit)).catch_unwind().await;
                if let Err(panic) = listened
                    && let Some(entry) = session.finish(&id, generation)
                {
                    session.deliver_error(&entry.dest, &id, &panicked(&id, &method, panic.as_ref())).await;
                }
            } else {
                session.run_plugin_request(id, generation, method, params, era, cx, events, permit).await;
            }
        }));
    }

    /// Admits a request that runs as its own task: a permit of the channel, and an entry the
    /// client can cancel. A refusal is answered here.
    async fn admit(&self, id: &Id, dest: &Dest) -> Option<Admitted> {
        let Ok(permit) = Arc::clone(&self.admitted).try_acquire_owned() else {
            let error = ErrorObject::new(
                SERVER_BUSY,
                format!("server busy: {MAX_IN_FLIGHT} requests of this connection are already in flight; retry once some have finished"),
            );
            self.deliver_error(dest, id, &error).await;
            return None;
        };
        let reserve = match self.server.budget.charge(ADMISSION_RESERVE) {
            Ok(reserve) => reserve,
            Err(over) => {
                let error = ErrorObject::new(SERVER_BUSY, format!("server busy: {over}"));
                self.deliver_error(dest, id, &error).await;
                return None;
            }
        };
        let permit = Permit { _slot: permit, _reserve: reserve };
        let (events_tx, events) = mpsc::channel(EVENT_QUEUE);
        let cx = CallContext::new(id.to_string(), Some(events_tx));
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let duplicate = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            let duplicate = in_flight.contains_key(id);
            if !duplicate {
                in_flight.insert(id.clone(), InFlight { generation, cx: cx.clone(), dest: dest.clone() });
            }
            duplicate
        };
        if duplicate {
            let error = ErrorObject::new(
                jsonrpc::INVALID_REQUEST,
                format!("request id {} is already in use by a running request", jsonrpc::shortened(&id.to_string())),
            );
            self.deliver_error(dest, id, &error).await;
            return None;
        }
        Some(Admitted { permit, cx, generation, events })
    }

    /// Takes the request's entry out of the in-flight map, unless it was cancelled (or its id
    /// reused) meanwhile: only the request that still owns its entry replies.
    fn finish(&self, id: &Id, generation: u64) -> Option<InFlight> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        match in_flight.get(id) {
            Some(entry) if entry.generation == generation => in_flight.remove(id),
            _ => None,
        }
    }

    /// A legacy session hears every list change and the updates of what it subscribed to, from
    /// `initialize` until its input ends. The feed holds the session weakly.
    fn follow_changes(self: &Arc<Self>) {
        let mut changes = self.server.changes();
        let session = Arc::downgrade(self);
        let ended = self.input_ended.clone();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    received = changes.recv() => received,
                    () = ended.cancelled() => return,
                };
                let Some(session) = session.upgrade() else { return };
                let filter = session.legacy.lock().unwrap_or_else(|e| e.into_inner()).followed.clone();
                let Some(lines) = subscriptions::lines_from(received, &filter, None) else { return };
                for line in lines {
                    session.out.notify(line);
                }
            }
        });
    }

    /// Serves a 2026-07-28 `subscriptions/listen`: the acknowledgement first, then each change
    /// the client asked for, tagged with the request's id, until the client cancels the request
    /// (no reply) or its input ends (the closing result).
    async fn listen(self: Arc<Self>, id: Id, generation: u64, params: Option<Map<String, Value>>, era: Era, cx: CallContext, permit: Permit) {
        let opened = match Arc::clone(&self.listens).try_acquire_owned() {
            Ok(listening) => {
                let tasks_declared = task_calls::declares_extension(&self.request_context(params.as_ref(), era));
                Filter::listen(params.as_ref(), &self.server.router(), tasks_declared).map(|filter| (filter, listening))
            }
            Err(_) => Err(ErrorObject::new(SERVER_BUSY, format!("at most {MAX_LISTENS} listen requests per connection are open at once"))),
        };
        let (filter, _listening) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                if let Some(entry) = self.finish(&id, generation) {
                    self.deliver(&entry.dest, jsonrpc::error_line(Some(&id), &error), Some(error.code), Some(permit)).await;
                }
                return;
            }
        };
        // Following starts before the acknowledgement, so nothing after it is missed.
        let mut changes = self.server.changes();
        let stream = self.related_out();
        let _ = stream.send(subscriptions::acknowledgement(&filter, &id)).await;
        loop {
            let received = tokio::select! {
                received = changes.recv() => received,
                () = cx.cancelled() => return,
                () = self.input_ended.cancelled() => break,
            };
            let Some(lines) = subscriptions::lines_from(received, &filter, Some(&id)) else { break };
            for line in lines {
                stream.notify(line);
            }
        }
        if let Some(entry) = self.finish(&id, generation) {
            let closing = rounds::Finished { result: subscriptions::closing_result(&id), cache: None };
            self.reply(&entry.dest, &id, "subscriptions/listen", era, Ok(closing), Some(permit)).await;
        }
    }

    /// Picks the era of a request and applies lifecycle rules that need no plugin.
    fn era_for(&self, method: &str, params: Option<&Map<String, Value>>) -> Result<Era, ErrorObject> {
        if self.stateless || lifecycle::is_modern(params) || method == "server/discover" {
            lifecycle::validate_modern(params)?;
            if lifecycle::removed_in_modern(method) {
                return Err(ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, format!("method `{method}` does not exist in protocol 2026-07-28")));
            }
            let log_level = lifecycle::meta(params).and_then(|m| m.get(lifecycle::META_LOG_LEVEL)).and_then(Value::as_str).and_then(LogLevel::parse);
            return Ok(Era::Modern { log_level });
        }
        let mut legacy = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        match (method, legacy.version) {
            ("initialize", Some(_)) => Err(ErrorObject::new(jsonrpc::INVALID_REQUEST, "the session is already initialized")),
            ("initialize", None) => {
                let requested = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
                let version = lifecycle::negotiate(requested);
                legacy.version = Some(version);
                legacy.client_capabilities = params.and_then(|p| p.get("capabilities")).and_then(Value::as_object).cloned().unwrap_or_default();
                legacy.client_info = crate::input::RequestContext::client_info_from(params.and_then(|p| p.get("clientInfo")));
                Ok(Era::Legacy { version })
            }
            ("ping", version) => Ok(Era::Legacy { version: version.unwrap_or(Revision::LATEST_SESSION) }),
            (_, Some(version)) => Ok(Era::Legacy { version }),
            (_, None) => Err(ErrorObject::new(
                jsonrpc::INVALID_REQUEST,
                "the session is not initialized: send `initialize` first, or use protocol 2026-07-28 with `_meta` on every request",
            )),
        }
    }

    fn serve_local(&self, method: &str, params: Option<&Map<String, Value>>, era: Era) -> Result<Value, ErrorObject> {
        match method {
            "initialize" => {
                let version = match era {
                    Era::Legacy { version } => version,
                    Era::Modern { .. } => Revision::LATEST_SESSION,
                };
                Ok(methods::initialize_result(&self.server.router(), version))
            }
            "ping" => Ok(json!({})),
            "server/discover" => Ok(methods::discover_result(&self.server.router())),
            "tasks/get" | "tasks/list" | "tasks/cancel" | "tasks/update" => self.serve_task_method(method, params, era),
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = methods::required_str(params, "uri")?;
                let mut legacy = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
                if method == "resources/subscribe" {
                    legacy.followed.subscribe(uri, &self.server.router())?;
                } else {
                    legacy.followed.unsubscribe(uri);
                }
                Ok(json!({}))
            }
            "logging/setLevel" => {
                let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
                let level = level.and_then(LogLevel::parse).ok_or_else(|| {
                    ErrorObject::new(jsonrpc::INVALID_PARAMS, "`level` must be one of debug, info, notice, warning, error, critical, alert, emergency")
                })?;
                self.legacy.lock().unwrap_or_else(|e| e.into_inner()).log_level = level;
                Ok(json!({}))
            }
            // What the panic guard of local methods is tested with.
            #[cfg(test)]
            "test/panic" => panic!("a test asked this request to panic"),
            _ => methods::serve_list(&self.server.router(), method, params, era),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_plugin_request(
        self: Arc<Self>,
        id: Id,
        generation: u64,
        method: String,
        params: Option<Map<String, Value>>,
        era: Era,
        cx: CallContext,
        mut events: mpsc::Receiver<crate::plugin::CallEvent>,
        permit: Permit,
    ) {
        let notifier = methods::Notifier::new(params.as_ref(), era, self.legacy_log_level());
        // A panic anywhere below becomes an error reply, never a request left unanswered.
        let work = AssertUnwindSafe(self.serve_plugin(&method, params.as_ref(), era, &cx)).catch_unwind();
        tokio::pin!(work);
        let backstop = async {
            cx.cancelled().await;
            tokio::time::sleep(CANCEL_BACKSTOP).await;
        };
        tokio::pin!(backstop);
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break Some(outcome),
                Some(event) = events.recv() => self.forward(&notifier, &cx, event),
                () = &mut backstop => break None,
            }
        };
        while let Ok(event) = events.try_recv() {
            self.forward(&notifier, &cx, event);
        }
        let dropped = cx.events_dropped();
        if dropped > 0 {
            tracing::warn!(request = %id, dropped, "events of a request were dropped because its session fell behind");
        }
        if cx.is_cancelled() {
            if outcome.is_none() {
                tracing::warn!(request = %id, "a cancelled request did not stop within its grace period; its work was dropped");
            } else {
                tracing::debug!(request = %id, "a cancelled request has stopped");
            }
            return; // Cancelled: the entry is gone and no reply is sent.
        }
        let Some(entry) = self.finish(&id, generation) else { return };
        let outcome = match outcome {
            Some(Ok(outcome)) => outcome,
            Some(Err(panic)) => Err(panicked(&id, &method, panic.as_ref())),
            None => return,
        };
        // The request counts as in flight until its reply has room in the queue (a client that
        // does not read stops having requests admitted), and stops counting before the reply can
        // reach the client (a client that keeps exactly `MAX_IN_FLIGHT` going is never refused).
        self.reply(&entry.dest, &id, &method, era, outcome, Some(permit)).await;
    }

    /// Runs a plugin method: completion once, the others through the input model.
    async fn serve_plugin(
        self: &Arc<Self>,
        method: &str,
        params: Option<&Map<String, Value>>,
        era: Era,
        cx: &CallContext,
    ) -> Result<rounds::Finished, ErrorObject> {
        if methods::needs_input_model(method) {
            return self.serve_with_input(method, params, era, cx).await;
        }
        if method == "tasks/result" {
            return self.task_result(params, era, cx).await;
        }
        let cx = cx.clone().with_request(self.request_context(params, era));
        let result = methods::serve_completion(&self.server.router(), method, params, era, &cx).await?;
        Ok(rounds::Finished { result, cache: None })
    }

    fn forward(&self, notifier: &methods::Notifier, cx: &CallContext, event: crate::plugin::CallEvent) {
        // A change is about the plugin, not the request: it counts even if the request was cancelled.
        match event {
            crate::plugin::CallEvent::ListChanged { plugin, kind } => return self.server.list_changed(&plugin, kind),
            crate::plugin::CallEvent::ResourceUpdated { plugin, uri } => return self.server.resource_updated(&plugin, &uri),
            _ => {}
        }
        if cx.is_cancelled() {
            return;
        }
        if let Some(line) = notifier.line_for(event) {
            self.related_out().notify(line);
        }
    }

    /// Where this task's messages to the client go: its request's stream, or (outside a
    /// request's task) the channel's queue.
    fn related_out(&self) -> Outbound {
        REQUEST_STREAM.try_with(Outbound::clone).unwrap_or_else(|_| self.out.clone())
    }

    fn legacy_log_level(&self) -> LogLevel {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).log_level
    }

    /// Answers a request; `admitted` (its in-flight permit) is released once the reply has room.
    async fn reply(&self, dest: &Dest, id: &Id, method: &str, era: Era, outcome: Result<rounds::Finished, ErrorObject>, admitted: Option<Permit>) {
        match outcome {
            Ok(mut finished) => {
                let revision = match era {
                    Era::Legacy { version } => version,
                    Era::Modern { .. } => Revision::V2026_07_28,
                };
                shape::shape(&mut finished.result, method, revision);
                let line = jsonrpc::result_line(id, &methods::decorate(finished.result, era, finished.cache));
                self.deliver(dest, line, None, admitted).await;
            }
            Err(error) => self.deliver(dest, jsonrpc::error_line(Some(id), &error), Some(error.code), admitted).await,
        }
    }

    async fn deliver_error(&self, dest: &Dest, id: &Id, error: &ErrorObject) {
        self.deliver(dest, jsonrpc::error_line(Some(id), error), Some(error.code), None).await;
    }

    /// Queues a reply (or, for a batch member, adds it to its batch's array). `admitted`, the
    /// request's in-flight permit, is released only once the reply has its room in the queue:
    /// while a client does not read, its replies wait with their permits held, so at most
    /// `MAX_IN_FLIGHT` of them wait and the next request is refused (its refusal waits for room
    /// in turn, which stops the transport reading). The transport has gone away when a reply
    /// cannot be queued; nothing is left to tell.
    async fn deliver(&self, dest: &Dest, line: String, error: Option<i64>, admitted: Option<Permit>) {
        // A batch's replies keep their permits (and their charges) in the batch until its array
        // has room.
        let (line, error, admitted, held) = match &dest.batch {
            None => (line, error, admitted, Vec::new()),
            Some(batch) => match batch.push(line, admitted) {
                Some(array) => (array.line, None, None, array.held),
                None => return,
            },
        };
        let slot = dest.out.reserve(line.len()).await;
        drop(admitted);
        drop(held);
        if let Ok(slot) = slot {
            slot.send(line, FrameKind::Reply { error });
        }
    }
}

/// What a request that panicked is answered with (`-32603`, nothing of the panic), after the
/// panic is logged with the request and the method, escaped. Every request, local or served by a
/// plugin or a listen stream, is answered through this when it panics.
fn panicked(id: &Id, method: &str, panic: &(dyn std::any::Any + Send)) -> ErrorObject {
    let what = panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
    tracing::error!(request = %crate::escape::Escaped(&jsonrpc::shortened(&id.to_string())), method = %crate::escape::Escaped(&jsonrpc::shortened(method)), panic = %crate::escape::Escaped(&jsonrpc::shortened(&what)), "a request panicked");
    ErrorObject::new(jsonrpc::INTERNAL_ERROR, "internal error")
}

#[cfg(test)]
pub(crate) mod tests;
