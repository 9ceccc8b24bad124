//! The per-channel JSON-RPC engine: framing and batches, the protocol era of each message and
//! the legacy lifecycle, admission and the in-flight map, cancellation, the reply queue, and the
//! client's side of input rounds. What a request means is the MCP layer's (`crate::mcp`): the
//! session fixes each request's `Scope` when it admits it and hands it to `mcp::dispatch`.
//!
//! One `Session` serves one channel: the stdio stream, a WebSocket, a legacy HTTP session, or
//! (`Session::one_request`) one 2026-07-28 HTTP request. A request carrying the 2026-07-28
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
mod client;
mod client_requests;
mod follow;
mod outbound;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

pub use crate::mcp::{
    DEFAULT_INPUT_TIMEOUT, MAX_LISTENS, MAX_RESOURCE_SUBSCRIPTIONS, MAX_ROUNDS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_RELATED_TASK,
    META_SUBSCRIPTION_ID, MISSING_REQUIRED_CLIENT_CAPABILITY, SERVER_BUSY, ServerLimits, ServerState, TASK_AFTER, TASKS_EXTENSION, is_modern,
};
pub use crate::router::HeaderParam;
pub use outbound::{BATCH_MESSAGES, Outbound, OutboundLimits, OutboundReceiver, Outgoing, OutgoingKind, Slot, TransportClosed, outbound, outbound_charged};

use batch::{Batch, Dest};

use crate::identity::{ClientKey, Principal, Transport};
use crate::input::ClientInfo;
use crate::jsonrpc::{self, Id, Message};
use crate::mcp::{self, Era, Filter, McpError, Method, Reply, Scope};
use crate::plugin::{CallContext, EVENT_QUEUE, LogLevel};
use crate::revision::Revision;
use client_requests::ClientRequests;

/// Requests of one channel admitted at once (running, or waiting for their plugin's
/// concurrency gate). One more is answered with `SERVER_BUSY` at once: reading never waits for
/// plugin capacity, so `ping`, cancellations and other plugins' calls are never stuck behind it.
pub const MAX_IN_FLIGHT: usize = 256;
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

/// An admitted request, with the scope it is served in.
struct Running {
    id: Id,
    method: Method,
    generation: u64,
    scope: Scope,
    permit: Permit,
}

/// One channel's session.
pub struct Session {
    /// Unique in the process: the owner of the legacy tasks this session creates.
    id: u64,
    server: Arc<ServerState>,
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
    client: Option<ClientKey>,
    /// Who every request of this channel is served for, fixed when the channel opened.
    principal: Principal,
    transport: Transport,
    /// The id its client knows it by, for a legacy HTTP session (set once, by the transport).
    wire_id: std::sync::OnceLock<Arc<str>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("legacy", &self.legacy).finish_non_exhaustive()
    }
}

impl Session {
    /// A session of `server` for `principal`, whose outgoing messages go to `out`.
    pub fn new(server: Arc<ServerState>, out: Outbound, principal: Principal, transport: Transport) -> Arc<Session> {
        Session::build(server, out, false, None, principal, transport)
    }

    /// A session that serves only 2026-07-28 requests (one HTTP request without a session):
    /// `initialize` and everything else without that revision's `_meta` is refused.
    pub fn one_request(server: Arc<ServerState>, out: Outbound, principal: Principal) -> Arc<Session> {
        Session::build(server, out, true, None, principal, Transport::StreamableHttp)
    }

    /// `one_request`, for a request from `client` (its address): its tasks count against it.
    pub fn one_request_from(server: Arc<ServerState>, out: Outbound, client: ClientKey, principal: Principal) -> Arc<Session> {
        Session::build(server, out, true, Some(client), principal, Transport::StreamableHttp)
    }

    fn build(server: Arc<ServerState>, out: Outbound, stateless: bool, client: Option<ClientKey>, principal: Principal, transport: Transport) -> Arc<Session> {
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
                // A stateless session follows nothing (and allocates nothing for it).
                followed: if stateless { Filter::default() } else { Filter::legacy() },
            }),
            in_flight: Mutex::new(HashMap::new()),
            admitted: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            requests: tokio_util::task::TaskTracker::new(),
            listens: Arc::new(Semaphore::new(MAX_LISTENS)),
            generation: AtomicU64::new(0),
            input_ended: CancellationToken::new(),
            stateless,
            client,
            principal,
            transport,
            wire_id: std::sync::OnceLock::new(),
        })
    }

    /// Records the id the client knows this session by (a legacy HTTP session's).
    pub fn set_wire_id(&self, id: &str) {
        let _ = self.wire_id.set(Arc::from(id));
    }

    /// Who this channel's requests are served for.
    pub fn principal(&self) -> &Principal {
        &self.principal
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
            let error = McpError::Busy(why.to_owned()).to_wire(None);
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
        let method = Method::parse(&method);
        let era = match self.era_for(&method, params.as_ref()) {
            Ok(era) => era,
            Err(error) => {
                refused(error.kind());
                return self.deliver_error(&dest, &id, &error).await;
            }
        };
        let client: Arc<dyn mcp::Client> = Arc::clone(self) as Arc<dyn mcp::Client>;
        // The request's `_meta` moves into its scope (read there, never again from the params).
        let mut params = params;
        let meta = params.as_mut().and_then(|p| p.remove("_meta"));
        if !method.waits(era) {
            let scope = Scope::new(&self.server, client, era, meta, CallContext::detached(String::new()));
            let outcome = AssertUnwindSafe(mcp::dispatch(&scope, &method, params)).catch_unwind().await;
            let outcome = outcome.unwrap_or_else(|panic| Err(panicked(&id, method.name(), panic.as_ref())));
            if method == Method::Initialize && outcome.is_ok() {
                self.follow_changes();
            }
            return self.reply(&dest, &id, era, outcome, None).await;
        }
        let Some(admitted) = self.admit(&id, &dest).await else { return };
        tracing::debug!(request = %id, method = %crate::escape::Escaped(method.name()), "request admitted");
        let Admitted { permit, cx, generation, events } = admitted;
        // The scope is fixed here, at admission: the request keeps this router to its end.
        let scope = Scope::new(&self.server, client, era, meta, cx);
        let running = Running { id, method, generation, scope, permit };
        let session = Arc::clone(self);
        // Boxed: the task then holds a pointer, and the request's large future is written once
        // rather than moved into the task and through its stages.
        self.requests.spawn(Box::pin(REQUEST_STREAM.scope(dest.out, async move {
            if running.method == Method::Listen {
                let (id, generation, method) = (running.id.clone(), running.generation, running.method.clone());
                // A panic is answered like any request's; the permit went with the unwinding.
                let listened = AssertUnwindSafe(Arc::clone(&session).listen(running, params)).catch_unwind().await;
                if let Err(panic) = listened
                    && let Some(entry) = session.finish(&id, generation)
                {
                    session.deliver_error(&entry.dest, &id, &panicked(&id, method.name(), panic.as_ref())).await;
                }
            } else {
                session.run_request(running, params, events).await;
            }
        })));
    }

    /// Admits a request that runs as its own task: a permit of the channel, and an entry the
    /// client can cancel. A refusal is answered here.
    async fn admit(&self, id: &Id, dest: &Dest) -> Option<Admitted> {
        let Ok(permit) = Arc::clone(&self.admitted).try_acquire_owned() else {
            refused("in_flight");
            let error =
                McpError::Busy(format!("server busy: {MAX_IN_FLIGHT} requests of this connection are already in flight; retry once some have finished"));
            self.deliver_error(dest, id, &error).await;
            return None;
        };
        let reserve = match self.server.budget.charge(ADMISSION_RESERVE) {
            Ok(reserve) => reserve,
            Err(over) => {
                refused("memory_budget");
                self.deliver_error(dest, id, &McpError::Busy(format!("server busy: {over}"))).await;
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
            refused("duplicate_id");
            let error = McpError::InvalidRequest(format!("request id {} is already in use by a running request", jsonrpc::shortened(&id.to_string())));
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

    /// Picks the era of a request and applies lifecycle rules that need no plugin.
    fn era_for(&self, method: &Method, params: Option<&Map<String, Value>>) -> Result<Era, McpError> {
        if self.stateless || mcp::is_modern(params) || *method == Method::Discover {
            mcp::validate_modern(params)?;
            if method.removed_in_stateless() {
                return Err(McpError::MethodNotFound(format!("method `{}` does not exist in protocol 2026-07-28", method.name())));
            }
            let log_level = mcp::meta(params).and_then(|m| m.get(mcp::META_LOG_LEVEL)).and_then(Value::as_str).and_then(LogLevel::parse);
            return Ok(Era::Modern { log_level });
        }
        let mut legacy = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        match (method, legacy.version) {
            (Method::Initialize, Some(_)) => Err(McpError::InvalidRequest("the session is already initialized".to_owned())),
            (Method::Initialize, None) => {
                let requested = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
                let version = mcp::negotiate(requested);
                legacy.version = Some(version);
                legacy.client_capabilities = params.and_then(|p| p.get("capabilities")).and_then(Value::as_object).cloned().unwrap_or_default();
                legacy.client_info = crate::input::RequestContext::client_info_from(params.and_then(|p| p.get("clientInfo")));
                Ok(Era::Legacy { version })
            }
            (Method::Ping, version) => Ok(Era::Legacy { version: version.unwrap_or(Revision::LATEST_SESSION) }),
            (_, Some(version)) => Ok(Era::Legacy { version }),
            (_, None) => Err(McpError::InvalidRequest(
                "the session is not initialized: send `initialize` first, or use protocol 2026-07-28 with `_meta` on every request".to_owned(),
            )),
        }
    }

    /// Serves an admitted request that may wait, with its progress and log messages forwarded
    /// while it runs, and answers it unless it was cancelled.
    async fn run_request(self: Arc<Self>, running: Running, params: Option<Map<String, Value>>, mut events: mpsc::Receiver<crate::plugin::CallEvent>) {
        let Running { id, method, generation, scope, permit } = running;
        let cx = scope.cx.clone();
        let era = scope.era;
        let notifier = mcp::Notifier::new(Some(&scope.context().meta), era, self.legacy_log_level());
        // A panic anywhere below becomes an error reply, never a request left unanswered.
        let work = AssertUnwindSafe(mcp::dispatch(&scope, &method, params)).catch_unwind();
        tokio::pin!(work);
        let backstop = async {
            cx.cancelled().await;
            tokio::time::sleep(CANCEL_BACKSTOP).await;
        };
        tokio::pin!(backstop);
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break Some(outcome),
                Some(event) = events.recv() => mcp::forward(&self.server, self.as_ref(), &notifier, &cx, event),
                () = &mut backstop => break None,
            }
        };
        while let Ok(event) = events.try_recv() {
            mcp::forward(&self.server, self.as_ref(), &notifier, &cx, event);
        }
        let dropped = cx.events_dropped();
        if dropped > 0 {
            tracing::warn!(request = %id, dropped, "events of a request were dropped because its session fell behind");
            if let Some(metrics) = crate::telemetry::metrics::get() {
                metrics.events_dropped(dropped);
            }
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
            Some(Err(panic)) => Err(panicked(&id, method.name(), panic.as_ref())),
            None => return,
        };
        // The request counts as in flight until its reply has room in the queue (a client that
        // does not read stops having requests admitted), and stops counting before the reply can
        // reach the client (a client that keeps exactly `MAX_IN_FLIGHT` going is never refused).
        self.reply(&entry.dest, &id, era, outcome, Some(permit)).await;
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
    async fn reply(&self, dest: &Dest, id: &Id, era: Era, outcome: Result<Reply, McpError>, admitted: Option<Permit>) {
        match outcome {
            Ok(reply) => self.deliver(dest, reply.into_line(id, era), None, admitted).await,
            Err(error) => {
                let error = error.to_wire(Some(era.revision()));
                self.deliver(dest, jsonrpc::error_line(Some(id), &error), Some(error.code), admitted).await;
            }
        }
    }

    /// Answers a request refused before it runs: its era is not settled yet, or it is not admitted
    /// (no such refusal reads differently in any revision).
    async fn deliver_error(&self, dest: &Dest, id: &Id, error: &McpError) {
        let error = error.to_wire(None);
        self.deliver(dest, jsonrpc::error_line(Some(id), &error), Some(error.code), None).await;
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
            slot.send(line, OutgoingKind::Reply { error });
        }
    }
}

/// What a request that panicked is answered with (`-32603`, nothing of the panic), after the
/// panic is logged with the request and the method, escaped. Every request, local or served by a
/// plugin or a listen stream, is answered through this when it panics.
/// Counts a request refused before it was served.
fn refused(reason: &'static str) {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.request_refused(reason);
    }
}

fn panicked(id: &Id, method: &str, panic: &(dyn std::any::Any + Send)) -> McpError {
    let what = panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
    tracing::error!(request = %crate::escape::Escaped(&jsonrpc::shortened(&id.to_string())), method = %crate::escape::Escaped(&jsonrpc::shortened(method)), panic = %crate::escape::Escaped(&jsonrpc::shortened(&what)), "a request panicked");
    McpError::internal()
}

#[cfg(test)]
pub(crate) mod tests;
