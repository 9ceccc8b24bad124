//! `/sse` and `/messages`: the HTTP+SSE transport of protocol 2024-11-05, for old clients.
//!
//! `GET /sse` opens a session and its one stream: first an `endpoint` event naming
//! `/messages?session_id=<id>`, then every message of the session (replies included) as a
//! `message` event. The client POSTs each message there and gets 202. The session lives as long
//! as its stream: when the client closes it, the session ends and its requests are cancelled.
//! At shutdown the stream stays open until the session's requests have answered (within the
//! grace period), then closes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::guard::refusal;
use super::peers::{self, ClientKey, Kind, Share};
use super::sessions::Flavor;
use super::streamable::{Arrival, SESSION_QUEUE};
use super::{Accepts, Shared, parse_body, sse};
use crate::identity::{Principal, Transport};
use crate::replica::IdKind;
use crate::session::{OutboundReceiver, Session, outbound_charged};

/// GET /sse: a new session and its stream.
pub(super) async fn open(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientKey>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
) -> Response {
    let server = match shared.server() {
        Ok(server) => server,
        Err(response) => return response,
    };
    if !Accepts::of(&headers).sse {
        return refusal(StatusCode::NOT_ACCEPTABLE, "Accept must include text/event-stream");
    }
    // The session and its stream are each one of the client's shares.
    let session_share = match peers::open_session(&shared, client) {
        Ok(share) => share,
        Err(refused) => return refused,
    };
    let stream_share = match peers::take_or_refuse(&shared, client, Kind::Stream) {
        Ok(share) => share,
        Err(refused) => return refused,
    };
    let (out, queue) = outbound_charged(SESSION_QUEUE, server.budget());
    let http = match shared.sessions.create(Session::new(server, out, principal, Transport::Sse), Flavor::Sse, &shared.shutdown, session_share) {
        Ok(http) => http,
        Err(full) => return refusal(StatusCode::SERVICE_UNAVAILABLE, &full.to_string()),
    };
    // At shutdown: no more input, the session's requests get the grace period, then the stream
    // closes. Tracked, so shutdown waits for it.
    let close = CancellationToken::new();
    shared.work.spawn({
        let session = Arc::clone(&http.session);
        let (shutdown, ended, close) = (shared.shutdown.clone(), http.ended.clone(), close.clone());
        let grace = shared.options.shutdown_grace;
        async move {
            tokio::select! {
                () = shutdown.cancelled() => {
                    session.end_of_input();
                    session.drain(grace).await;
                    session.abandon_in_flight(super::SHUTDOWN_ANSWER).await;
                }
                () = ended.cancelled() => {}
            }
            close.cancel();
        }
    });
    let endpoint = sse::named_event("endpoint", &format!("/messages?session_id={}", http.id));
    let ended = EndOnDrop { shared: Arc::clone(&shared), id: http.id.clone(), _share: stream_share };
    let limits = &shared.options.limits;
    sse::response(channel_body(endpoint, queue, close, ended, limits.keep_alive, limits.max_stream_lifetime))
}

/// Ends the session when its stream's body is dropped (the client closed it).
struct EndOnDrop {
    shared: Arc<Shared>,
    id: String,
    _share: Share,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if self.shared.sessions.remove(&self.id) {
            tracing::debug!(session = %self.id, "an HTTP+SSE stream closed: its session ended");
        }
    }
}

fn channel_body(
    endpoint: Bytes,
    queue: OutboundReceiver,
    close: CancellationToken,
    ended: EndOnDrop,
    keep_alive: std::time::Duration,
    lifetime: std::time::Duration,
) -> Body {
    let first = futures::stream::iter([Ok::<Bytes, std::convert::Infallible>(endpoint)]);
    let expires = Box::pin(tokio::time::sleep(lifetime));
    let ended = (ended, crate::telemetry::metrics::held(|m| m.stream("http_sse")));
    let rest = futures::stream::unfold((queue, close, ended, expires), move |(mut queue, close, ended, mut expires)| async move {
        let ticker = tokio::time::sleep(keep_alive);
        tokio::pin!(ticker);
        let event = tokio::select! {
            frame = queue.recv() => sse::message_event(None, &frame?.line),
            () = &mut ticker => sse::KEEP_ALIVE,
            () = close.cancelled() => return None,
            () = expires.as_mut() => {
                tracing::debug!(session = %ended.0.id, "an HTTP+SSE stream reached the longest a stream may stay open: its session ends");
                return None;
            }
        };
        Some((Ok(event), (queue, close, ended, expires)))
    });
    Body::from_stream(first.chain(rest))
}

/// POST /messages?session_id=…: one message of an HTTP+SSE session; its answer goes on the stream.
pub(super) async fn message(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientKey>,
    Extension(principal): Extension<Principal>,
    arrival: Arrival,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(id) = query.get("session_id").or_else(|| query.get("sessionId")) else {
        return refusal(StatusCode::BAD_REQUEST, "missing session_id");
    };
    let Some(http) = shared.sessions.get(id, Flavor::Sse, &principal) else {
        // A session another replica owns: its stream is there, and so must its messages be.
        if let Some(answered) = arrival.elsewhere(&shared, IdKind::SseSession, id, &headers, body, client).await {
            return answered;
        }
        return refusal(StatusCode::NOT_FOUND, "session not found: its stream closed");
    };
    let value = match parse_body(&body) {
        Ok(value) => value,
        Err(response) => return response,
    };
    http.touch();
    http.session.handle_value(value).await;
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
