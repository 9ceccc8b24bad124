//! The HTTP listener: every network transport on one address.
//!
//! - `/mcp`: Streamable HTTP, both eras (`streamable.rs`): legacy sessions with resumable SSE,
//!   and stateless 2026-07-28 requests;
//! - `/sse` and `/messages`: the 2024-11-05 HTTP+SSE pair (`legacy_sse.rs`);
//! - `/ws`: WebSocket, subprotocol `mcp`, one JSON-RPC message per text frame (`websocket.rs`);
//! - `/healthz` (the process is up) and `/readyz` (plugins are loaded);
//! - `/.well-known/oauth-protected-resource[/mcp]`: RFC 9728 metadata, when OAuth is configured
//!   (`resource.rs`).
//!
//! Every request passes `guard.rs` first (Host and Origin against DNS rebinding, the bearer
//! token: a named static token, or an OAuth 2.1 access token verified by `identity::verifier`). Connections are accepted here with `TCP_NODELAY`, a cap on open connections (held
//! by an upgraded WebSocket until it closes), a per-client share of them (`peers.rs`), a bound
//! on header size and a deadline for reading them; bodies are read whole within
//! `HttpLimits::body_timeout` and capped by `HttpLimits::max_body` (`body.rs`). A few
//! connections beyond the cap are kept for health checks: when every other slot is taken, or a
//! client holds its whole share, a new connection is still accepted, answers `/healthz` and
//! `/readyz`, and gets 503 for anything else. On shutdown the listener stops accepting,
//! in-flight calls get `HttpOptions::shutdown_grace` to finish, and every stream is closed
//! cleanly.
// A refusal is an axum `Response`, returned once per refused request: boxing it would only
// add an allocation.
#![allow(clippy::result_large_err)]

mod body;
mod forward;
mod guard;
mod headers;
mod legacy_sse;
mod peers;
mod resource;
mod sessions;
mod sse;
mod streamable;
mod trace_context;
mod websocket;
mod ws_frames;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router as Routes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::session::ServerState;

pub use guard::{AccessError, AccessPolicy, BearerToken, TokenError};
pub use peers::PeerLimits;
use peers::{ClientKey, Kind, Peers, Share};
use sessions::SessionTable;

use crate::budget::Budget;

/// Connections kept beyond `HttpLimits::max_connections` for health checks.
pub const HEALTH_RESERVE: usize = 16;
/// Descriptors the host keeps for itself beside a listener's: its files, logs and cache.
const HOST_OWN_DESCRIPTORS: u64 = 256;

/// Descriptors a host serving HTTP keeps out of the plugins' pool: one per connection it may
/// hold (the cap and the health-check reserve; an upgraded WebSocket keeps its slot) and its
/// own. So the listener at its cap never takes a descriptor a plugin's call, or the host's own
/// files, need.
pub fn host_descriptors(max_connections: usize) -> u64 {
    (max_connections + HEALTH_RESERVE) as u64 + HOST_OWN_DESCRIPTORS
}

/// How long the replies of requests stopped at the end of a shutdown may take to be written.
const ANSWER_WRITE: Duration = Duration::from_secs(2);
/// How long a health-check connection may take to send its head.
const HEALTH_HEAD_TIMEOUT: Duration = Duration::from_secs(2);

/// Sizes and counts the listener holds to.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Largest request body, in bytes (a JSON-RPC message or batch).
    pub max_body: usize,
    /// Largest request head (request line and headers), in bytes.
    pub max_head: usize,
    /// Connections open at once; past it, new connections wait in the kernel's backlog.
    pub max_connections: usize,
    /// Legacy sessions (Streamable HTTP and HTTP+SSE) held at once.
    pub max_sessions: usize,
    /// A legacy session nobody has used for this long (no request, no open stream) ends.
    pub session_idle: Duration,
    /// Events one SSE stream keeps for `Last-Event-ID` replay.
    pub replay_events: usize,
    /// Bytes of events one SSE stream keeps for replay (its newest event is always kept).
    pub replay_bytes: usize,
    /// How long a client may take to send a request's head.
    pub head_timeout: Duration,
    /// Interval of SSE keep-alive comments and WebSocket pings.
    pub keep_alive: Duration,
    /// How long a request body may take to arrive in full once its head is read, and a
    /// WebSocket message once its first frame began.
    pub body_timeout: Duration,
    /// The longest a stream may stay open (a session's GET stream, an HTTP+SSE stream, a
    /// 2026-07-28 `subscriptions/listen`): then it ends and its client reconnects.
    pub max_stream_lifetime: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body: crate::transport::stdio::MAX_LINE,
            max_head: 64 * 1024,
            max_connections: 1024,
            max_sessions: 1024,
            session_idle: Duration::from_secs(30 * 60),
            replay_events: 256,
            replay_bytes: 4 << 20,
            head_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            max_stream_lifetime: Duration::from_secs(60 * 60),
        }
    }
}

/// Everything the listener needs besides the session core.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Which Host and Origin values are accepted, and the bearer token.
    pub access: AccessPolicy,
    /// Sizes and counts.
    pub limits: HttpLimits,
    /// How long in-flight calls may run on after a shutdown signal.
    pub shutdown_grace: Duration,
    /// How much of the listener one client may hold.
    pub peers: PeerLimits,
    /// The process's memory budget for what clients make the host hold (the one the
    /// sessions' `ServerState` charges too).
    pub budget: Arc<Budget>,
    /// This replica: what its session ids are minted under, and where its peers are.
    pub replica: Arc<crate::replica::Replica>,
}

impl HttpOptions {
    /// Options with the default limits and fair shares, and the given access policy and budget.
    pub fn new(access: AccessPolicy, budget: Arc<Budget>) -> HttpOptions {
        let limits = HttpLimits::default();
        let mut peers = PeerLimits::for_totals(limits.max_connections, limits.max_sessions);
        peers.body_bytes = (budget.limit() / 8).max(limits.max_body);
        HttpOptions { access, limits, shutdown_grace: Duration::from_secs(10), peers, budget, replica: Arc::new(crate::replica::Replica::solo()) }
    }
}

/// What every handler shares.
struct Shared {
    /// Set once the plugins are loaded; `/mcp`, `/sse` and `/ws` answer 503 before that.
    server: OnceLock<Arc<ServerState>>,
    sessions: SessionTable,
    options: HttpOptions,
    /// Cancelled when shutdown begins: streams end, new requests are refused.
    shutdown: CancellationToken,
    /// Cancelled when the shutdown grace ends: what still waits is answered.
    grace_over: CancellationToken,
    /// Every request still being answered (WebSocket and HTTP+SSE channels included).
    work: TaskTracker,
    /// What each client holds.
    peers: Arc<Peers>,
    /// The process's memory budget for clients.
    budget: Arc<Budget>,
    /// The channel sessions (WebSocket, HTTP+SSE) and 2026-07-28 requests being served: at the
    /// end of the shutdown grace, what they still run is answered with an error.
    channels: std::sync::Mutex<Vec<std::sync::Weak<crate::session::Session>>>,
}

/// What a request still running when the shutdown grace ends is told.
const SHUTDOWN_ANSWER: &str = "the server is shutting down: this request was stopped before it finished; retry on another server or later";

impl Shared {
    /// Follows `session` until it is dropped, to answer its requests at the end of a shutdown.
    fn track(&self, session: &Arc<crate::session::Session>) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if channels.len() >= 64 && channels.len().is_power_of_two() {
            channels.retain(|weak| weak.strong_count() > 0);
        }
        channels.push(Arc::downgrade(session));
    }

    /// Every request still running is answered with `SHUTDOWN_ANSWER` and stopped.
    async fn abandon_all(&self) {
        let tracked: Vec<Arc<crate::session::Session>> =
            self.channels.lock().unwrap_or_else(|e| e.into_inner()).drain(..).filter_map(|weak| weak.upgrade()).collect();
        for session in tracked.iter().chain(self.sessions.all().iter().map(|http| &http.session)) {
            session.abandon_in_flight(SHUTDOWN_ANSWER).await;
        }
    }
}

impl Shared {
    fn server(&self) -> Result<Arc<ServerState>, axum::response::Response> {
        if self.shutdown.is_cancelled() {
            return Err(plain(StatusCode::SERVICE_UNAVAILABLE, "shutting down"));
        }
        self.server.get().cloned().ok_or_else(|| plain(StatusCode::SERVICE_UNAVAILABLE, "plugins are still loading"))
    }
}

/// A bound listener, serving once `run` is called.
pub struct HttpListener {
    listener: TcpListener,
    shared: Arc<Shared>,
}

/// Ready to take the plugins once they are loaded.
#[derive(Clone)]
pub struct Readiness {
    shared: Arc<Shared>,
}

impl Readiness {
    /// From now on `/readyz` answers 200 and requests are served by `server`.
    pub fn serve(&self, server: Arc<ServerState>) {
        let _ = self.shared.server.set(server);
    }
}

impl HttpListener {
    /// Binds `addr`. Health endpoints answer at once; MCP endpoints once `Readiness::serve`.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(addr: SocketAddr, options: HttpOptions) -> std::io::Result<HttpListener> {
        let listener = TcpListener::bind(addr).await?;
        let sessions = SessionTable::new(&options.limits, &options.budget, &options.replica);
        let peers = Peers::new(options.peers.clone());
        let budget = Arc::clone(&options.budget);
        let shared = Arc::new(Shared {
            server: OnceLock::new(),
            sessions,
            options,
            shutdown: CancellationToken::new(),
            grace_over: CancellationToken::new(),
            work: TaskTracker::new(),
            peers,
            budget,
            channels: std::sync::Mutex::new(Vec::new()),
        });
        Ok(HttpListener { listener, shared })
    }

    /// The address actually bound (the port, when 0 was asked for).
    ///
    /// # Errors
    /// The socket cannot report it.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The handle that makes the listener ready.
    pub fn readiness(&self) -> Readiness {
        Readiness { shared: Arc::clone(&self.shared) }
    }

    /// Serves until `stop` is cancelled, then shuts down: no new connections, in-flight calls
    /// get the grace period, streams are closed, and every connection is told to close.
    pub async fn run(self, stop: CancellationToken) {
        let HttpListener { listener, shared } = self;
        let entry = Entry::new(Arc::clone(&shared));
        let health_routes = health_routes(Arc::clone(&shared));
        let reaper = tokio::spawn(sessions::reap(Arc::clone(&shared)));
        let slots = Arc::new(Semaphore::new(shared.options.limits.max_connections.max(1)));
        let health = Arc::new(Semaphore::new(HEALTH_RESERVE));
        let connections = Connections { tracker: TaskTracker::new(), close: CancellationToken::new() };
        loop {
            // A slot first (past every slot, connections wait in the kernel's backlog): one of
            // the cap, or else one kept for health checks.
            let slot = tokio::select! {
                biased;
                permit = Arc::clone(&slots).acquire_owned() => match permit { Ok(permit) => Slot::Full(permit), Err(_) => break },
                permit = Arc::clone(&health).acquire_owned() => match permit { Ok(permit) => Slot::Health(permit), Err(_) => break },
                () = stop.cancelled() => break,
            };
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = stop.cancelled() => break,
            };
            let (socket, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of descriptors or a connection reset before it was taken: keep serving.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if let Err(err) = socket.set_nodelay(true) {
                tracing::debug!(error = %err, "cannot set TCP_NODELAY");
            }
            // A client holding its whole share is served as a health check only; so is any
            // connection beyond the cap.
            let held = match slot {
                Slot::Full(permit) if shared.peers.is_trusted_proxy(peer.ip()) => Ok(Held::new(permit, None)),
                Slot::Full(permit) => match shared.peers.take(ClientKey::of(peer.ip()), Kind::Connection) {
                    Ok(share) => Ok(Held::new(permit, Some(share))),
                    Err(over) => {
                        drop(permit);
                        refused_connection(&peer, &over.to_string());
                        Err(Arc::clone(&health).try_acquire_owned().ok())
                    }
                },
                Slot::Health(permit) => {
                    refused_connection(&peer, "every connection slot is taken");
                    Err(Some(permit))
                }
            };
            let held = match held {
                Ok(held) => held,
                Err(Some(permit)) => {
                    // A health check: a short deadline for its head, one request, then closed.
                    let mut http = hyper::server::conn::http1::Builder::new();
                    http.max_buf_size(8192).max_headers(32).keep_alive(false).header_read_timeout(HEALTH_HEAD_TIMEOUT);
                    let service = hyper_util::service::TowerToHyperService::new(health_routes.clone().layer(axum::Extension(guard::Peer(peer))));
                    connections.serve(socket, peer, service, http, permit, "a health-check connection");
                    continue;
                }
                Err(None) => continue,
            };
            // An upgraded WebSocket holds a clone of this until it closes.
            let held = ConnectionHeld(Arc::new(held));
            let mut http = hyper::server::conn::http1::Builder::new();
            http.max_buf_size(shared.options.limits.max_head.max(8192)).max_headers(100).header_read_timeout(shared.options.limits.head_timeout);
            connections.serve(socket, peer, entry.connection(peer, held.clone()), http, held, "connection");
        }
        drop(listener);
        tracing::info!("shutting down: no new connections; in-flight calls may finish");
        // Idle streams end now; connections close once their current request is answered.
        shared.shutdown.cancel();
        connections.close.cancel();
        shared.work.close();
        connections.tracker.close();
        let grace = shared.options.shutdown_grace;
        let server = shared.server.get().cloned();
        let finished = tokio::time::timeout(grace, async {
            shared.work.wait().await;
            connections.tracker.wait().await;
            // Shared tasks running here get the grace too.
            if let Some(server) = &server {
                server.finish_shared_runs().await;
            }
        })
        .await;
        shared.grace_over.cancel();
        // Shared tasks still running are handed to the other replicas through the store.
        if let Some(server) = &server {
            server.hand_over_tasks(ANSWER_WRITE).await;
        }
        if finished.is_err() {
            tracing::warn!(grace = ?grace, "calls still running after the grace period are answered with an error and cancelled");
            shared.abandon_all().await;
            // Their replies go out before the connections close.
            let _ = tokio::time::timeout(ANSWER_WRITE, async {
                shared.work.wait().await;
                connections.tracker.wait().await;
            })
            .await;
        }
        shared.sessions.close_all();
        reaper.abort();
    }
}

/// Which kind of slot a connection is accepted into.
enum Slot {
    Full(tokio::sync::OwnedSemaphorePermit),
    Health(tokio::sync::OwnedSemaphorePermit),
}

/// What a served connection holds: its slot of the cap and its client's share.
struct Held {
    _slot: tokio::sync::OwnedSemaphorePermit,
    _share: Option<Share>,
    _counted: Option<crate::telemetry::metrics::Held>,
}

impl Held {
    fn new(slot: tokio::sync::OwnedSemaphorePermit, share: Option<Share>) -> Held {
        Held { _slot: slot, _share: share, _counted: crate::telemetry::metrics::held(|m| m.connection("http")) }
    }
}

/// The connection a request came on: a WebSocket keeps it (and so its slot) after the upgrade.
#[derive(Clone)]
pub(super) struct ConnectionHeld(#[allow(dead_code)] Arc<Held>);

/// Logs a connection served as a health check only; at most one line a second.
fn refused_connection(peer: &SocketAddr, why: &str) {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.http_refused("connection");
    }
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let refused = REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if LAST.swap(now, std::sync::atomic::Ordering::Relaxed) != now {
        tracing::warn!(%peer, refused, "a connection is served for health checks only: {why}");
    }
}

/// The connections being served, and the signal that tells them to close once their current
/// request is answered.
struct Connections {
    tracker: TaskTracker,
    close: CancellationToken,
}

impl Connections {
    /// Serves one accepted connection with `service` under `http`, keeping `held` (its slot,
    /// and its client's share) until it ends; `what` names it in the log.
    fn serve<S>(
        &self,
        socket: tokio::net::TcpStream,
        peer: SocketAddr,
        service: S,
        mut http: hyper::server::conn::http1::Builder,
        held: impl Send + 'static,
        what: &'static str,
    ) where
        S: hyper::service::Service<hyper::Request<hyper::body::Incoming>, Response = axum::response::Response, Error = std::convert::Infallible>
            + Send
            + 'static,
        S::Future: Send + 'static,
    {
        http.timer(hyper_util::rt::TokioTimer::new());
        let close = self.close.clone();
        self.tracker.spawn(async move {
            let _held = held;
            let connection = http.serve_connection(TokioIo::new(socket), service).with_upgrades();
            tokio::pin!(connection);
            let outcome = tokio::select! {
                outcome = connection.as_mut() => outcome,
                () = close.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = outcome {
                tracing::debug!(%peer, error = %err, "{what} ended with an error");
            }
        });
    }
}

/// The routes of a connection served for health checks only.
fn health_routes(shared: Arc<Shared>) -> Routes {
    Routes::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .fallback(|| async {
            guard::refusal(StatusCode::SERVICE_UNAVAILABLE, "the server holds as many connections as it allows (from you, or in all); retry later")
        })
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&shared), guard::check))
        .with_state(shared)
}

/// The routes of a connection, without layers: what every request passes first is `Entry`'s.
fn routes(shared: Arc<Shared>) -> Routes {
    Routes::new()
        .route("/mcp", post(streamable::post).get(streamable::get).delete(streamable::delete))
        .route("/sse", get(legacy_sse::open))
        .route("/messages", post(legacy_sse::message))
        .route("/ws", any(websocket::upgrade))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route(resource::METADATA_PATH, get(resource::metadata))
        .route(&format!("{}/mcp", resource::METADATA_PATH), get(resource::metadata))
        .with_state(shared)
}

/// How a connection's requests reach the routes: each request is told its connection (the
/// peer, what the connection holds) and passes `admit`, then the routes, under the body limit.
/// A plain function of the request, not layers on the router: a layer on a `Router` wraps every
/// route in a boxed service of its own, cloned (allocated) on every request.
#[derive(Clone)]
struct Entry {
    shared: Arc<Shared>,
    routes: <DefaultBodyLimit as tower::Layer<Routes>>::Service,
}

impl Entry {
    fn new(shared: Arc<Shared>) -> Entry {
        let routes = tower::Layer::layer(&DefaultBodyLimit::max(shared.options.limits.max_body), routes(Arc::clone(&shared)));
        Entry { shared, routes }
    }

    /// The service of one connection from `peer`, which holds `held`.
    fn connection(
        &self,
        peer: SocketAddr,
        held: ConnectionHeld,
    ) -> impl hyper::service::Service<
        hyper::Request<hyper::body::Incoming>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future = impl std::future::Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send + 'static,
    > + Send
    + 'static {
        let entry = self.clone();
        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(guard::Peer(peer));
            request.extensions_mut().insert(held.clone());
            let entry = entry.clone();
            async move { Ok(admit(&entry.shared, request, entry.routes).await) }
        })
    }
}

/// What every request passes before its handler, in one step: its client is named
/// (`peers.rs`), the guard lets it through (`guard.rs`), and its body is read whole
/// (`body.rs`); then `routes` answer it.
async fn admit<S>(shared: &Shared, mut request: axum::extract::Request, routes: S) -> axum::response::Response
where
    S: tower::Service<axum::extract::Request, Response = axum::response::Response, Error = std::convert::Infallible>,
{
    if let Err(refusal) = forward::check_hop(shared, &mut request) {
        return refusal;
    }
    peers::identify(shared, &mut request);
    match guard::admit(shared, &mut request).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
        }
        Err(refusal) => return refusal,
    }
    match body::read_whole(shared, request).await {
        Ok((request, held)) => {
            // The body's charge lasts until the handler has answered: its parse is paid for.
            let path = request.uri().path().to_owned();
            let response = guarded(&path, async move {
                match tower::ServiceExt::oneshot(routes, request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            })
            .await;
            drop(held);
            response
        }
        Err(refusal) => refusal,
    }
}

/// Runs a handler; a panic in it is answered 500 with a JSON-RPC `-32603` (nothing of the
/// panic) and logged, instead of dropping the connection unanswered.
async fn guarded(path: &str, handler: impl std::future::Future<Output = axum::response::Response>) -> axum::response::Response {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(handler).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let what = panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            tracing::error!(path = %crate::escape::Escaped(&crate::jsonrpc::shortened(path)), panic = %crate::escape::Escaped(&crate::jsonrpc::shortened(&what)), "an HTTP handler panicked");
            let error = crate::jsonrpc::ErrorObject::new(crate::jsonrpc::INTERNAL_ERROR, "internal error");
            json_reply(StatusCode::INTERNAL_SERVER_ERROR, crate::jsonrpc::error_line(None, &error))
        }
    }
}

/// `ready` once the plugins are loaded; asked for JSON (`Accept: application/json`), the detail:
/// the generation serving, the plugins served, every file not served as it is on disk with the
/// reason, whether metrics are on, how the span exporter is doing (`null` when traces are off),
/// this replica's id and how the shared store is doing (`null` without one); behind the bearer
/// token when the listener has one.
async fn readyz(State(shared): State<Arc<Shared>>, headers: axum::http::HeaderMap) -> axum::response::Response {
    let server = match shared.server() {
        Ok(server) => server,
        Err(_) if wants_detail(&headers) => {
            let status = if shared.shutdown.is_cancelled() { "shutting down" } else { "loading" };
            return json_reply(StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({ "status": status }).to_string());
        }
        Err(response) => return response,
    };
    if !wants_detail(&headers) {
        return plain(StatusCode::OK, "ready");
    }
    let router = server.router();
    let plugins: Vec<&str> = router.served().iter().map(|e| e.plugin.id()).collect();
    let detail = serde_json::json!({
        "status": "ready",
        "generation": router.generation(),
        "plugins": plugins,
        "problems": &*server.problems(),
        "metrics": crate::telemetry::metrics::get().is_some(),
        "exporter": crate::telemetry::export::health().map(crate::telemetry::export::ExportHealth::report),
        "replica": shared.options.replica.id().as_str(),
        "store": server.store().map(|store| store.health()),
    });
    json_reply(StatusCode::OK, detail.to_string())
}

/// Whether a request asks for JSON (the detail of `/readyz`).
pub(crate) fn wants_detail(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|accept| accept.split(',').any(|t| t.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json")))
}

/// The media types a client accepts (no `Accept` header takes either).
#[derive(Debug, Clone, Copy)]
struct Accepts {
    json: bool,
    sse: bool,
}

impl Accepts {
    fn of(headers: &axum::http::HeaderMap) -> Accepts {
        let Some(accept) = headers.get(axum::http::header::ACCEPT).and_then(|a| a.to_str().ok()) else {
            return Accepts { json: true, sse: true };
        };
        let mut accepts = Accepts { json: false, sse: false };
        for media in accept.split(',').map(|t| t.split(';').next().unwrap_or("").trim()) {
            let is = |name: &str| media.eq_ignore_ascii_case(name);
            accepts.json |= is("*/*") || is("application/json") || is("application/*");
            accepts.sse |= is("*/*") || is("text/event-stream") || is("text/*");
        }
        accepts
    }
}

/// A request body as one JSON text; anything else is answered 400 with −32700.
fn parse_body(body: &[u8]) -> Result<serde_json::Value, axum::response::Response> {
    let text = std::str::from_utf8(body).map_err(|_| {
        let error = crate::jsonrpc::ErrorObject::new(crate::jsonrpc::PARSE_ERROR, "parse error: the body is not UTF-8");
        json_reply(StatusCode::BAD_REQUEST, crate::jsonrpc::error_line(None, &error))
    })?;
    crate::jsonrpc::parse_json(text).map_err(|rejection| json_reply(StatusCode::BAD_REQUEST, rejection.to_line()))
}

/// A JSON-RPC message as the whole answer.
fn json_reply(status: StatusCode, line: String) -> axum::response::Response {
    let mut response = axum::response::Response::new(axum::body::Body::from(line));
    *response.status_mut() = status;
    // A static value: nothing copied for it.
    response.headers_mut().insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
    response
}

/// A short text answer.
fn plain(status: StatusCode, text: &'static str) -> axum::response::Response {
    (status, [(axum::http::header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_handler_that_panics_is_answered_500_with_an_internal_error() {
        let handler = async {
            if "a test".len() < 10 {
                panic!("a handler panicked on purpose");
            }
            axum::response::Response::default()
        };
        let response = super::guarded("/mcp", handler).await;
        assert_eq!(response.status(), axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 4096).await.expect("a body");
        let reply: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(reply["error"]["code"], -32603);
        assert!(!reply.to_string().contains("on purpose"), "nothing of the panic reaches the client: {reply}");
    }
}
