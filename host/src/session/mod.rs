//! The per-channel MCP engine: JSON-RPC dispatch, protocol era per message, lifecycle,
//! concurrency, cancellation, and the progress and log notifications of each request.
//!
//! One `Session` serves one channel (the stdio stream, later a WebSocket or a legacy HTTP
//! session). A request carrying the 2026-07-28 `_meta` is served statelessly; anything else
//! follows the legacy `initialize` lifecycle of the channel. Every request gets exactly one
//! reply, except one the client cancelled; notifications get none. Requests that reach a
//! plugin run concurrently, so a slow tool never holds up `ping` or other calls.
//!
//! The session writes finished lines (responses and notifications) to an outgoing channel; the
//! transport owns the actual writer. It knows no wasm and no sockets.

mod batch;
mod lifecycle;
mod methods;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, mpsc};

pub use lifecycle::{LEGACY_VERSIONS, MODERN_VERSIONS};

use batch::{Batch, Dest};

use crate::jsonrpc::{self, ErrorObject, Id, Message};
use crate::plugin::{CallContext, LogLevel};
use crate::router::Router;

/// Requests of one channel that may run at once; beyond this the channel stops reading
/// (back-pressure) until one finishes.
pub const MAX_IN_FLIGHT: usize = 64;

/// The protocol era and settings a request is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// A legacy session at the negotiated version.
    Legacy { version: &'static str },
    /// A stateless 2026-07-28 request, with the log level it opted in to.
    Modern { log_level: Option<LogLevel> },
}

#[derive(Debug)]
struct LegacyState {
    version: Option<&'static str>,
    log_level: LogLevel,
}

struct InFlight {
    cx: CallContext,
    task: Option<tokio::task::AbortHandle>,
    dest: Dest,
}

/// One channel's session.
pub struct Session {
    router: Arc<Router>,
    out: mpsc::UnboundedSender<String>,
    legacy: Mutex<LegacyState>,
    in_flight: Mutex<HashMap<Id, InFlight>>,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("legacy", &self.legacy).finish_non_exhaustive()
    }
}

impl Session {
    /// A session whose outgoing lines go to `out`.
    pub fn new(router: Arc<Router>, out: mpsc::UnboundedSender<String>) -> Arc<Session> {
        Arc::new(Session {
            router,
            out,
            legacy: Mutex::new(LegacyState { version: None, log_level: LogLevel::Info }),
            in_flight: Mutex::new(HashMap::new()),
            permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        })
    }

    /// Handles one incoming frame. Returns once the message is answered or its work is
    /// started; waits first when `MAX_IN_FLIGHT` requests are already running.
    pub async fn handle_frame(self: &Arc<Self>, frame: &str) {
        let value = match jsonrpc::parse_json(frame) {
            Ok(value) => value,
            Err(rejection) => return self.send(rejection.to_line()),
        };
        if let serde_json::Value::Array(members) = &value
            && !members.is_empty()
            && self.accepts_batches()
        {
            let serde_json::Value::Array(members) = value else { return };
            return self.handle_batch(members).await;
        }
        match jsonrpc::from_value(value) {
            Ok(message) => self.handle_message(message, Dest::Direct).await,
            Err(rejection) => self.send(rejection.to_line()),
        }
    }

    /// Batches are part of protocol 2025-03-26 only.
    fn accepts_batches(&self) -> bool {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).version == Some("2025-03-26")
    }

    async fn handle_batch(self: &Arc<Self>, members: Vec<Value>) {
        let messages: Vec<Result<Message, jsonrpc::Rejection>> = members.into_iter().map(jsonrpc::from_value).collect();
        let pending = messages.iter().filter(|m| matches!(m, Ok(Message::Request { .. }) | Err(_))).count();
        let batch = Batch::new(self.out.clone(), pending);
        for message in messages {
            match message {
                Ok(message) => self.handle_message(message, Dest::Batch(Arc::clone(&batch))).await,
                Err(rejection) => batch.push(rejection.to_line()),
            }
        }
    }

    /// Answers a frame the transport could not even hand over (too large, not UTF-8).
    pub fn handle_rejection(&self, line: String) {
        self.send(line);
    }

    /// Waits until no request is running, or `timeout` passes.
    pub async fn drain(&self, timeout: Duration) {
        let all = u32::try_from(MAX_IN_FLIGHT).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(timeout, self.permits.acquire_many(all)).await;
    }

    async fn handle_message(self: &Arc<Self>, message: Message, dest: Dest) {
        match message {
            Message::Request { id, method, params } => self.handle_request(id, method, params, dest).await,
            Message::Notification { method, params } => self.handle_notification(&method, params.as_ref()),
            Message::Response { id, .. } => {
                // Paddock sends no requests to clients yet, so no response is awaited.
                tracing::debug!(id = ?id.map(|i| i.to_string()), "ignoring a response to no pending request");
            }
        }
    }

    fn handle_notification(&self, method: &str, params: Option<&Map<String, Value>>) {
        match method {
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let Some(id) = params.and_then(|p| p.get("requestId")).and_then(Id::from_value) else { return };
                if let Some(entry) = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&id) {
                    tracing::debug!(request = %id, "request cancelled by the client");
                    entry.cx.cancel();
                    if let Some(task) = entry.task {
                        task.abort();
                    }
                    if let Dest::Batch(batch) = entry.dest {
                        batch.skip();
                    }
                }
            }
            other => tracing::debug!(method = other, "ignoring notification"),
        }
    }

    async fn handle_request(self: &Arc<Self>, id: Id, method: String, params: Option<Map<String, Value>>, dest: Dest) {
        let era = match self.era_for(&method, params.as_ref()) {
            Ok(era) => era,
            Err(error) => return self.deliver(&dest, jsonrpc::error_line(Some(&id), &error)),
        };
        if methods::runs_in_plugin(&method) {
            let permit = match self.permits.clone().acquire_owned().await {
                Ok(permit) => permit,
                Err(_) => return,
            };
            let cx = CallContext::detached(id.to_string());
            {
                let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                if in_flight.contains_key(&id) {
                    drop(in_flight);
                    let error = ErrorObject::new(jsonrpc::INVALID_REQUEST, format!("request id {id} is already in use by a running request"));
                    return self.deliver(&dest, jsonrpc::error_line(Some(&id), &error));
                }
                in_flight.insert(id.clone(), InFlight { cx: cx.clone(), task: None, dest });
            }
            let session = Arc::clone(self);
            let task_id = id.clone();
            let task = tokio::spawn(async move {
                let _permit = permit;
                session.run_plugin_request(task_id, method, params, era).await;
            });
            if let Some(entry) = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&id) {
                entry.task = Some(task.abort_handle());
            }
        } else {
            let outcome = self.serve_local(&method, params.as_ref(), era);
            self.reply(&dest, &id, &method, era, outcome);
        }
    }

    /// Picks the era of a request and applies lifecycle rules that need no plugin.
    fn era_for(&self, method: &str, params: Option<&Map<String, Value>>) -> Result<Era, ErrorObject> {
        if lifecycle::is_modern(params) || method == "server/discover" {
            lifecycle::validate_modern(params)?;
            if lifecycle::removed_in_modern(method) {
                return Err(ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, format!("method `{method}` does not exist in protocol 2026-07-28")));
            }
            let log_level = lifecycle::meta(params)
                .and_then(|m| m.get(lifecycle::META_LOG_LEVEL))
                .and_then(Value::as_str)
                .and_then(LogLevel::parse);
            return Ok(Era::Modern { log_level });
        }
        let mut legacy = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        match (method, legacy.version) {
            ("initialize", Some(_)) => Err(ErrorObject::new(jsonrpc::INVALID_REQUEST, "the session is already initialized")),
            ("initialize", None) => {
                let requested = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str);
                let version = lifecycle::negotiate(requested);
                legacy.version = Some(version);
                Ok(Era::Legacy { version })
            }
            ("ping", version) => Ok(Era::Legacy { version: version.unwrap_or(LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1]) }),
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
                    Era::Modern { .. } => LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1],
                };
                Ok(methods::initialize_result(&self.router, version))
            }
            "ping" => Ok(json!({})),
            "server/discover" => Ok(methods::discover_result(&self.router)),
            "logging/setLevel" => {
                let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
                let level = level.and_then(LogLevel::parse).ok_or_else(|| {
                    ErrorObject::new(jsonrpc::INVALID_PARAMS, "`level` must be one of debug, info, notice, warning, error, critical, alert, emergency")
                })?;
                self.legacy.lock().unwrap_or_else(|e| e.into_inner()).log_level = level;
                Ok(json!({}))
            }
            _ => methods::serve_list(&self.router, method, params, era),
        }
    }

    async fn run_plugin_request(self: Arc<Self>, id: Id, method: String, params: Option<Map<String, Value>>, era: Era) {
        let (events_tx, mut events_rx) = mpsc::unbounded_channel();
        let cx = match self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
            Some(entry) => entry.cx.with_events(events_tx),
            None => return, // Cancelled before it started.
        };
        let notifier = methods::Notifier::new(params.as_ref(), era, self.legacy_log_level());
        let work = methods::serve_plugin(&self.router, &method, params.as_ref(), era, &cx);
        tokio::pin!(work);
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                Some(event) = events_rx.recv() => {
                    if let Some(line) = notifier.line_for(event) { self.send(line) }
                }
            }
        };
        while let Ok(event) = events_rx.try_recv() {
            if let Some(line) = notifier.line_for(event) {
                self.send(line);
            }
        }
        let entry = self.in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        if let Some(entry) = entry
            && !cx.is_cancelled()
        {
            self.reply(&entry.dest, &id, &method, era, outcome);
        }
    }

    fn legacy_log_level(&self) -> LogLevel {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).log_level
    }

    fn reply(&self, dest: &Dest, id: &Id, method: &str, era: Era, outcome: Result<Value, ErrorObject>) {
        let line = match outcome {
            Ok(result) => jsonrpc::result_line(id, &methods::decorate(result, method, era)),
            Err(error) => jsonrpc::error_line(Some(id), &error),
        };
        self.deliver(dest, line);
    }

    fn deliver(&self, dest: &Dest, line: String) {
        match dest {
            Dest::Direct => self.send(line),
            Dest::Batch(batch) => batch.push(line),
        }
    }

    fn send(&self, line: String) {
        // The transport has gone away when this fails; nothing is left to tell.
        let _ = self.out.send(line);
    }
}

#[cfg(test)]
pub(crate) mod tests;
