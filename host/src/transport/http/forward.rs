//! Owner routing: a request for a legacy session another replica owns is forwarded to that
//! replica, and its answer (SSE included) streamed back as it comes.
//!
//! - The owner is read from the session id only once the id's seal verifies (`replica::ids`); a
//!   made-up or altered id is answered 404 like an unknown one, and the refusal is logged with
//!   the client.
//! - Only configured peers are dialled (`replica::Peers`), with the connect and answer deadlines
//!   below; a forwarded request carries `Paddock-Forwarded`, a MAC under the shared key over
//!   the request, both replicas and the client (`replica::forwarding`), and is never forwarded
//!   again: a replica that gets a forwarded request for a session it does not hold answers 404.
//! - A `Paddock-Forwarded` header that does not verify is refused (403) before anything else
//!   reads the request, and logged with the peer: a client cannot pose as a replica.
//! - An owner that cannot be reached is gone: the request gets 404, which the spec tells
//!   clients to answer with a new `initialize`, and the loss is logged.
//!
//! The client's own headers go along (its token is checked again by the owner); hop-by-hop
//! headers and `X-Forwarded-For` do not: the forwarded header carries the client's address.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::Shared;
use super::guard::{Peer, refusal};
use crate::escape::Escaped;
use crate::replica::{FORWARDED_HEADER, Forwarded, Hop, IdKind, Owner};

/// How long dialling a peer may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a peer may take to start its answer: a request answered over SSE starts within
/// about 100 ms, but a client that takes only JSON waits for the whole call, which may wait on
/// its own answers to the server's questions (`DEFAULT_INPUT_TIMEOUT`).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(11 * 60);
/// Idle connections kept to each peer.
const IDLE_PER_PEER: usize = 32;

/// The header of a Streamable HTTP session's id.
const SESSION_HEADER: &str = "mcp-session-id";

/// Headers that belong to one connection, not to the request, and those the hop replaces.
const NOT_FORWARDED: &[&str] =
    &["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "x-forwarded-for", FORWARDED_HEADER];

/// A request another replica forwarded, as its verified header says.
#[derive(Debug, Clone)]
pub(super) struct Hopped(pub(super) Forwarded);

/// Where a request for a session id is served.
pub(super) enum Route {
    /// This replica owns the id (it may still have ended: the caller looks it up).
    Here,
    /// Replica `tag`, at `base`.
    Peer { tag: String, base: String },
    /// Nowhere: answer this.
    Refused(Response),
}

/// Checks a `Paddock-Forwarded` header before anything else reads the request: one that
/// verifies is kept as a `Hopped` extension, one that does not is refused 403.
pub(super) fn check_hop(shared: &Shared, request: &mut Request) -> Result<(), Response> {
    let Some(value) = request.headers().get(FORWARDED_HEADER) else { return Ok(()) };
    let session = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    let hop = Hop { method: request.method().as_str(), path, session };
    let verified = value.to_str().map_err(|_| crate::replica::ForwardedError::Malformed).and_then(|value| shared.options.replica.verify_hop(value, &hop));
    match verified {
        Ok(forwarded) => {
            request.extensions_mut().insert(Hopped(forwarded));
            Ok(())
        }
        Err(why) => {
            let peer = request.extensions().get::<Peer>().map(|p| p.0);
            tracing::warn!(peer = ?peer, path = %Escaped(&crate::jsonrpc::shortened(path)), error = %why, "refused a request posing as another replica's forward");
            Err(refusal(StatusCode::FORBIDDEN, "the Paddock-Forwarded header does not verify: only a replica of this server may send it"))
        }
    }
}

/// Where a request naming session `id` (of `kind`) is served. `hopped` says it was forwarded
/// here already: it is not sent on again.
pub(super) fn route(shared: &Shared, kind: IdKind, id: &str, hopped: bool, peer: Option<std::net::SocketAddr>) -> Route {
    let replica = &shared.options.replica;
    match replica.owner(kind, id) {
        Ok(Owner::Here) => Route::Here,
        Err(forged) => {
            refused_id(peer, id, &forged.to_string());
            Route::Refused(session_gone())
        }
        Ok(Owner::Peer(_)) if hopped => {
            tracing::warn!(peer = ?peer, session = %Escaped(id), "a forwarded request names a session of a third replica: not forwarded again");
            Route::Refused(session_gone())
        }
        Ok(Owner::Peer(tag)) => match replica.peers().address(tag) {
            Some(base) => Route::Peer { tag: tag.to_owned(), base },
            None => {
                tracing::warn!(peer = ?peer, replica = tag, "a request names a session of replica `{tag}`, which is not a configured peer (--peer): answered as ended");
                Route::Refused(session_gone())
            }
        },
    }
}

/// The answer to a session this replica cannot serve: 404, which tells a client to start a new
/// session.
fn session_gone() -> Response {
    refusal(StatusCode::NOT_FOUND, "session not found: it ended or expired (start a new one with `initialize`)")
}

/// Logs an id that does not verify; at most one line a second.
fn refused_id(peer: Option<std::net::SocketAddr>, id: &str, why: &str) {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let refused = REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if LAST.swap(now, std::sync::atomic::Ordering::Relaxed) != now {
        tracing::warn!(peer = ?peer, session = %Escaped(&crate::jsonrpc::shortened(id)), refused, "refused a session id: {why}");
    }
}

/// The one client every forward goes through.
fn client() -> &'static Client<HttpConnector, Full<Bytes>> {
    static CLIENT: OnceLock<Client<HttpConnector, Full<Bytes>>> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        connector.enforce_http(true);
        Client::builder(TokioExecutor::new()).pool_max_idle_per_host(IDLE_PER_PEER).pool_idle_timeout(Duration::from_secs(30)).build(connector)
    })
}

/// A request for a session this replica does not hold, as it arrived.
pub(super) struct Elsewhere<'a> {
    pub(super) method: &'a Method,
    pub(super) uri: &'a Uri,
    pub(super) headers: &'a HeaderMap,
    pub(super) body: Bytes,
    pub(super) client: super::peers::ClientKey,
    /// Another replica forwarded it here.
    pub(super) hopped: bool,
    pub(super) peer: Option<std::net::SocketAddr>,
}

/// Serves a request naming session `id` of `kind`, which this replica does not hold: forwarded
/// to its owner, or refused. `None` when this replica owns the id (it has ended: the caller
/// answers as for any session that ended).
pub(super) async fn elsewhere(shared: &Arc<Shared>, kind: IdKind, id: &str, request: Elsewhere<'_>) -> Option<Response> {
    match route(shared, kind, id, request.hopped, request.peer) {
        Route::Here => None,
        Route::Refused(response) => Some(response),
        Route::Peer { tag, base } => {
            let outgoing =
                Outgoing { method: request.method, uri: request.uri, headers: request.headers, body: request.body, client: request.client.ip(), session: id };
            Some(forward(shared, &tag, &base, outgoing).await)
        }
    }
}

/// What a forward sends on.
pub(super) struct Outgoing<'a> {
    pub(super) method: &'a Method,
    pub(super) uri: &'a Uri,
    pub(super) headers: &'a HeaderMap,
    pub(super) body: Bytes,
    /// The client, as this replica saw it.
    pub(super) client: IpAddr,
    /// The session id the request names.
    pub(super) session: &'a str,
}

/// Forwards a request to replica `tag` at `base` and streams its answer back.
pub(super) async fn forward(shared: &Arc<Shared>, tag: &str, base: &str, outgoing: Outgoing<'_>) -> Response {
    let path = outgoing.uri.path_and_query().map_or("/", |p| p.as_str());
    let Ok(target) = format!("{base}{path}").parse::<Uri>() else {
        tracing::warn!(replica = tag, "the peer's address makes no URL: answered as ended");
        return session_gone();
    };
    // The MAC binds the `Mcp-Session-Id` header (an HTTP+SSE session's id is in the path).
    let session = outgoing.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let hop = Hop { method: outgoing.method.as_str(), path, session };
    let signed = shared.options.replica.sign_hop(tag, &hop, outgoing.client);
    let mut request = hyper::Request::builder().method(outgoing.method.clone()).uri(target);
    let Some(headers) = request.headers_mut() else { return session_gone() };
    for (name, value) in outgoing.headers {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            headers.append(name, value.clone());
        }
    }
    match HeaderValue::from_str(&signed) {
        Ok(value) => headers.insert(FORWARDED_HEADER, value),
        Err(_) => return session_gone(),
    };
    let request_id = serde_json::from_slice::<serde_json::Value>(&outgoing.body).ok().and_then(|v| v.get("id").and_then(crate::jsonrpc::Id::from_value));
    let Ok(request) = request.body(Full::new(outgoing.body)) else { return session_gone() };
    let answered = tokio::select! {
        answered = tokio::time::timeout(ANSWER_TIMEOUT, client().request(request)) => answered,
        // This replica is shutting down and its grace is over: the request is answered here.
        () = shared.grace_over.cancelled() => return shutting_down(&request_id),
    };
    let response = match answered {
        Ok(Ok(response)) => response,
        Ok(Err(error)) if error.is_connect() => {
            tracing::warn!(replica = tag, session = %Escaped(outgoing.session), error = %error, "the replica owning a session cannot be reached: the session is lost, and its client is told to start a new one");
            count("owner_gone");
            return session_gone();
        }
        Ok(Err(error)) => {
            tracing::warn!(replica = tag, session = %Escaped(outgoing.session), error = %error, "forwarding a request to the replica owning its session failed");
            count("failed");
            return refusal(StatusCode::BAD_GATEWAY, "the replica that owns this session did not answer; retry");
        }
        Err(_) => {
            tracing::warn!(replica = tag, session = %Escaped(outgoing.session), "the replica owning a session did not start its answer in time");
            count("timeout");
            return refusal(StatusCode::GATEWAY_TIMEOUT, "the replica that owns this session did not answer in time; retry");
        }
    };
    count("forwarded");
    tracing::debug!(replica = tag, status = response.status().as_u16(), "a request was forwarded to the replica that owns its session");
    let (mut parts, incoming) = response.into_parts();
    for name in NOT_FORWARDED {
        parts.headers.remove(*name);
    }
    Response::from_parts(parts, Body::new(incoming))
}

/// The answer to a forwarded request still waiting for its owner when this replica's shutdown
/// grace ends: the request's own JSON-RPC error, as any request stopped by a shutdown gets.
fn shutting_down(id: &Option<crate::jsonrpc::Id>) -> Response {
    count("shutdown");
    let error = crate::jsonrpc::ErrorObject::new(crate::session::SERVER_BUSY, super::SHUTDOWN_ANSWER);
    let mut response = super::json_reply(StatusCode::SERVICE_UNAVAILABLE, crate::jsonrpc::error_line(id.as_ref(), &error));
    response.headers_mut().insert(axum::http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn count(outcome: &'static str) {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.forwarded(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_headers_and_client_supplied_addresses_are_not_forwarded() {
        for name in ["connection", "transfer-encoding", "content-length", "x-forwarded-for", "paddock-forwarded", "upgrade"] {
            assert!(NOT_FORWARDED.contains(&name), "{name}");
        }
        for name in ["authorization", "mcp-session-id", "last-event-id", "accept", "content-type", "host", "origin", "mcp-protocol-version"] {
            assert!(!NOT_FORWARDED.contains(&name), "{name} goes along");
        }
    }
}
