//! `/mcp`: Streamable HTTP, both eras on one endpoint.
//!
//! Each POST is routed by what it carries:
//! - 2026-07-28 `_meta`, or (without a session) an `MCP-Protocol-Version` that is not a legacy
//!   revision: a stateless request. Its headers are checked against its body (`headers.rs`), it
//!   is served by a session of its own, and it is answered with JSON when the reply is the first
//!   thing it produces (errors mapped to 400, or 404 for an unknown method) or with SSE when
//!   progress or log messages come first. Closing the connection cancels it.
//! - `Mcp-Session-Id`: a request of that legacy session (404 once it has ended), answered with a
//!   resumable SSE stream (or JSON for a client that accepts only JSON). A reply ready within
//!   `FIRST_EVENT_WAIT` is written with the headers, from a stream that has already ended.
//!   Notifications and the client's answers to the server's questions get 202.
//! - `initialize` without a session: a new legacy session; its id comes back in
//!   `Mcp-Session-Id`.
//!
//! GET opens the session's stream for messages unrelated to a request (list changes, resource
//! updates, questions of task runs) or, with `Last-Event-ID`, resumes any stream of the session
//! after that event. DELETE ends the session.

use std::sync::{Arc, Weak};

use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::forward::{self, Elsewhere, Hopped};
use super::guard::refusal;
use super::headers::{self, PROTOCOL_VERSION};
use super::peers::{self, ClientKey, Kind, Share};
use super::sessions::{Flavor, HttpSession};
use super::{Accepts, Shared, json_reply, parse_body, sse};
use crate::escape::Escaped;
use crate::identity::{Principal, Transport};
use crate::jsonrpc;
use crate::mcp::{INSUFFICIENT_SCOPE, RATE_LIMITED};
use crate::replica::IdKind;
use crate::revision::Revision;
use crate::session::{OutboundLimits, OutboundReceiver, Outgoing, OutgoingKind, SERVER_BUSY, ServerState, Session, is_modern, outbound_charged};

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
/// How long a legacy POST waits for what its request sends first before its SSE stream starts:
/// a reply within it goes out with the headers, from a stream that has ended, with no task to
/// feed it. A request still running then gets its stream, primed, and the events as they come.
const FIRST_EVENT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
/// What one POST's stream may hold for a slow client.
const POST_QUEUE: OutboundLimits = OutboundLimits { messages: 256, bytes: 8 << 20 };
/// What a session's own stream (the GET stream) may hold.
pub(super) const SESSION_QUEUE: OutboundLimits = OutboundLimits { messages: 1024, bytes: 16 << 20 };

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// How a request arrived, for forwarding it to the replica that owns its session.
pub(super) struct Arrival {
    method: Method,
    uri: Uri,
    hopped: bool,
    peer: Option<std::net::SocketAddr>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Arrival {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Arrival, Self::Rejection> {
        Ok(Arrival::of(parts))
    }
}

impl Arrival {
    fn of(parts: &axum::http::request::Parts) -> Arrival {
        Arrival {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            hopped: parts.extensions.get::<Hopped>().is_some(),
            peer: parts.extensions.get::<super::guard::Peer>().map(|p| p.0),
        }
    }

    /// Serves a request for session `id` of `kind`, which this replica does not hold (see
    /// `forward::elsewhere`).
    pub(super) async fn elsewhere(
        &self,
        shared: &Arc<Shared>,
        kind: IdKind,
        id: &str,
        headers: &HeaderMap,
        body: Bytes,
        client: ClientKey,
    ) -> Option<Response> {
        let request = Elsewhere { method: &self.method, uri: &self.uri, headers, body, client, hopped: self.hopped, peer: self.peer };
        forward::elsewhere(shared, kind, id, request).await
    }
}

/// POST /mcp.
pub(super) async fn post(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientKey>,
    Extension(principal): Extension<Principal>,
    request: axum::extract::Request,
) -> Response {
    // Taken apart rather than extracted: the headers are moved out, not copied.
    let (mut parts, body) = request.into_parts();
    let arrival = Arrival::of(&parts);
    let headers = std::mem::take(&mut parts.headers);
    // `admit` has read the body whole, under the limit.
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return refusal(StatusCode::BAD_REQUEST, "the body could not be read");
    };
    let server = match shared.server() {
        Ok(server) => server,
        Err(response) => return response,
    };
    let accepts = Accepts::of(&headers);
    if !accepts.json && !accepts.sse {
        return refusal(StatusCode::NOT_ACCEPTABLE, "Accept must include application/json and text/event-stream");
    }
    if let Some(kind) = header_str(&headers, header::CONTENT_TYPE.as_str())
        && !kind.to_ascii_lowercase().starts_with("application/json")
    {
        return refusal(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
    }
    let mut value = match parse_body(&body) {
        Ok(value) => value,
        Err(response) => return response,
    };
    super::trace_context::carry(&headers, &mut value);
    let session_id = header_str(&headers, SESSION_ID);
    let version = header_str(&headers, PROTOCOL_VERSION);
    let modern_message = value.as_object().and_then(|m| m.get("params")).and_then(Value::as_object).is_some_and(|p| is_modern(Some(p)));
    if modern_message || (session_id.is_none() && version.is_some_and(|v| Revision::session(v).is_none())) {
        return stateless(&shared, server, &headers, value, accepts, client, principal).await;
    }
    if let Some(id) = session_id {
        let Some(http) = shared.sessions.get(id, Flavor::Streamable, &principal) else {
            // A session another replica owns: its request goes there, as it came.
            if let Some(answered) = arrival.elsewhere(&shared, IdKind::Session, id, &headers, body, client).await {
                return answered;
            }
            return refusal(StatusCode::NOT_FOUND, "session not found: it ended or expired (start a new one with `initialize`)");
        };
        if let Some(version) = version
            && Revision::session(version).is_none()
        {
            return refusal(StatusCode::BAD_REQUEST, "unsupported MCP-Protocol-Version for this session");
        }
        http.touch();
        return session_post(&shared, &http, value, accepts, false).await;
    }
    if value.get("method").and_then(Value::as_str) == Some("initialize") && value.get("id").is_some() {
        let share = match peers::open_session(&shared, client) {
            Ok(share) => share,
            Err(refused) => return refused,
        };
        let (out, queue) = outbound_charged(SESSION_QUEUE, server.budget());
        let http = match shared.sessions.create(Session::new(server, out, principal, Transport::StreamableHttp), Flavor::Streamable, &shared.shutdown, share) {
            Ok(http) => http,
            Err(full) => return refusal(StatusCode::SERVICE_UNAVAILABLE, &full.to_string()),
        };
        if let Some(standalone) = http.standalone() {
            tokio::spawn(sse::pump(standalone, None, queue, false));
        }
        return session_post(&shared, &http, value, accepts, true).await;
    }
    refusal(
        StatusCode::BAD_REQUEST,
        "missing Mcp-Session-Id: send `initialize` first, or use protocol 2026-07-28 (`_meta` and `MCP-Protocol-Version` on every request)",
    )
}

/// Whether a body holds a request (and so needs an answer other than 202).
fn holds_request(value: &Value) -> bool {
    let is_request = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    match value {
        Value::Array(members) => members.iter().any(is_request),
        other => is_request(other),
    }
}

/// A POST of a legacy session.
async fn session_post(shared: &Arc<Shared>, http: &Arc<HttpSession>, value: Value, accepts: Accepts, initialize: bool) -> Response {
    let has_request = holds_request(&value);
    let (out, mut queue) = outbound_charged(POST_QUEUE, &shared.budget);
    http.session.handle_value_on(value, out).await;
    if !has_request {
        return StatusCode::ACCEPTED.into_response();
    }
    let mut response = if accepts.sse {
        // What the request sends first, if it comes soon: a reply then goes out with the
        // headers, from a stream that has already ended.
        let first = tokio::time::timeout(FIRST_EVENT_WAIT, queue.recv()).await;
        shared.sessions.shed_finished();
        let stream = match http.open_stream() {
            Ok(stream) => stream,
            Err(busy) => return refusal(StatusCode::SERVICE_UNAVAILABLE, &busy.to_string()),
        };
        if http.session.negotiated_version().is_some_and(Revision::primes_streams) && !initialize {
            stream.prime();
        }
        let first = first.unwrap_or_else(|_still_running| None);
        let (replay, live) = if first.as_ref().is_some_and(|frame| matches!(frame.kind, OutgoingKind::Reply { .. })) {
            // Logged (so still resumable) and ended before the client attaches: no task.
            sse::pump(Arc::clone(&stream), first, queue, true).await;
            http.stream_ended(&stream);
            stream.attach(None)
        } else {
            let attached = stream.attach(None);
            let owner = Arc::clone(http);
            tokio::spawn(async move {
                sse::pump(Arc::clone(&stream), first, queue, true).await;
                owner.stream_ended(&stream);
            });
            attached
        };
        sse::response(sse::body(replay, live, shared.options.limits.keep_alive, None, None))
    } else {
        match reply_only(&mut queue).await {
            Some(frame) => json_reply(StatusCode::OK, frame.line),
            None => StatusCode::ACCEPTED.into_response(),
        }
    };
    if initialize && let Ok(id) = HeaderValue::from_str(&http.id) {
        response.headers_mut().insert(SESSION_ID, id);
    }
    response
}

/// Waits for the reply, dropping what comes before it (a client that takes only JSON).
async fn reply_only(queue: &mut OutboundReceiver) -> Option<Outgoing> {
    while let Some(frame) = queue.recv().await {
        if matches!(frame.kind, OutgoingKind::Reply { .. }) {
            return Some(frame);
        }
    }
    None
}

/// A stateless 2026-07-28 request.
/// `client` is who sent it: its tasks count against that client's quota, and a listen
/// request holds one of its stream shares.
async fn stateless(
    shared: &Arc<Shared>,
    server: Arc<ServerState>,
    headers: &HeaderMap,
    value: Value,
    accepts: Accepts,
    client: ClientKey,
    principal: Principal,
) -> Response {
    if let Some(message) = value.as_object()
        && let Err(error) = headers::check(headers, message, &server)
    {
        let id = message.get("id").and_then(jsonrpc::Id::from_value);
        return json_reply(StatusCode::BAD_REQUEST, jsonrpc::error_line(id.as_ref(), &error));
    }
    // A listen request is a stream that stays open: one of its client's stream shares.
    let stream_share = if value.get("method").and_then(Value::as_str) == Some("subscriptions/listen") {
        match peers::take_or_refuse(shared, client, Kind::Stream) {
            Ok(share) => Some(share),
            Err(refused) => return refused,
        }
    } else {
        None
    };
    let has_request = holds_request(&value);
    let (out, mut queue) = outbound_charged(POST_QUEUE, server.budget());
    let session = Session::one_request_from(server, out.clone(), client, principal);
    shared.track(&session);
    session.handle_value_on(value, out).await;
    if !has_request {
        return StatusCode::ACCEPTED.into_response();
    }
    // Dropping this (the client went away before its answer) cancels the request.
    let mut guard = CancelOnDrop(Arc::downgrade(&session));
    drop(session);
    let Some(first) = queue.recv().await else {
        guard.disarm();
        return refusal(StatusCode::INTERNAL_SERVER_ERROR, "the request ended without a reply");
    };
    if let OutgoingKind::Reply { error } = first.kind
        && accepts.json
    {
        guard.disarm();
        return modern_error_reply(shared, error, first.line);
    }
    if !accepts.sse {
        let reply = reply_only(&mut queue).await;
        guard.disarm();
        return match reply {
            Some(frame) => json_reply(StatusCode::OK, frame.line),
            None => refusal(StatusCode::INTERNAL_SERVER_ERROR, "the request ended without a reply"),
        };
    }
    sse::response(ephemeral_body(first, queue, guard, shared, stream_share))
}

/// The SSE body of a stateless request: its messages, then its reply; no ids (2026-07-28 has no
/// resumption). At shutdown a listen request is told to close (its closing result ends it).
fn ephemeral_body(first: Outgoing, queue: OutboundReceiver, guard: CancelOnDrop, shared: &Arc<Shared>, share: Option<Share>) -> Body {
    struct State {
        first: Option<Outgoing>,
        queue: OutboundReceiver,
        guard: CancelOnDrop,
        stop: tokio_util::sync::CancellationToken,
        stopping: bool,
        done: bool,
        /// When the stream has been open as long as a stream may be: a listen request is told
        /// to close then, as at shutdown.
        expires: std::pin::Pin<Box<tokio::time::Sleep>>,
        _share: Option<Share>,
        _counted: Option<crate::telemetry::metrics::Held>,
    }
    let keep_alive = shared.options.limits.keep_alive;
    let expires = Box::pin(tokio::time::sleep(shared.options.limits.max_stream_lifetime));
    let state = State {
        first: Some(first),
        queue,
        guard,
        stop: shared.shutdown.clone(),
        stopping: false,
        done: false,
        expires,
        _share: share,
        _counted: crate::telemetry::metrics::held(|m| m.stream("stateless_sse")),
    };
    Body::from_stream(futures::stream::unfold(state, move |mut state| async move {
        if state.done {
            state.guard.disarm();
            return None;
        }
        let frame = match state.first.take() {
            Some(frame) => frame,
            None => loop {
                let ticker = tokio::time::sleep(keep_alive);
                tokio::pin!(ticker);
                tokio::select! {
                    frame = state.queue.recv() => match frame {
                        Some(frame) => break frame,
                        None => {
                            state.guard.disarm();
                            return None;
                        }
                    },
                    () = &mut ticker => return Some((Ok::<Bytes, std::convert::Infallible>(sse::KEEP_ALIVE), state)),
                    () = state.stop.cancelled(), if !state.stopping => {
                        state.stopping = true;
                        if let Some(session) = state.guard.0.upgrade() {
                            session.end_of_input();
                        }
                    }
                    () = &mut state.expires, if !state.stopping => {
                        state.stopping = true;
                        tracing::debug!("a streamed 2026-07-28 reply reached the longest a stream may stay open: it is told to close");
                        if let Some(session) = state.guard.0.upgrade() {
                            session.end_of_input();
                        }
                    }
                }
            },
        };
        state.done = matches!(frame.kind, OutgoingKind::Reply { .. });
        Some((Ok(sse::message_event(None, &frame.line)), state))
    }))
}

/// Cancels a stateless request when its client goes away before the reply.
struct CancelOnDrop(Weak<Session>);

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.0 = Weak::new();
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(session) = self.0.upgrade() {
            tracing::debug!("the client closed a request's stream before its reply: the request is cancelled");
            session.close();
        }
    }
}

/// A 2026-07-28 reply as an HTTP response: an error gets its status, a rate-limited request its
/// `Retry-After`, a use the token lacks a scope for its `WWW-Authenticate` challenge.
fn modern_error_reply(shared: &Shared, error: Option<i64>, line: String) -> Response {
    let Some(code) = error else { return json_reply(StatusCode::OK, line) };
    let data = || serde_json::from_str::<Value>(&line).ok().and_then(|v| v.pointer("/error/data").cloned());
    let mut response = json_reply(modern_status(code), line.clone());
    match code {
        RATE_LIMITED => {
            let seconds = data().and_then(|d| d.get("retryAfter").and_then(Value::as_u64)).unwrap_or(1);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        INSUFFICIENT_SCOPE => {
            let scopes: Vec<String> = data().and_then(|d| d.get("requiredScopes").cloned()).and_then(|s| serde_json::from_value(s).ok()).unwrap_or_default();
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, super::resource::insufficient_scope_challenge(shared, &scopes));
        }
        _ => {}
    }
    response
}

/// The HTTP status of a 2026-07-28 error reply.
fn modern_status(code: i64) -> StatusCode {
    match code {
        jsonrpc::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        jsonrpc::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
        SERVER_BUSY => StatusCode::SERVICE_UNAVAILABLE,
        RATE_LIMITED => StatusCode::TOO_MANY_REQUESTS,
        INSUFFICIENT_SCOPE => StatusCode::FORBIDDEN,
        code if (-32768..=-32000).contains(&code) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// GET /mcp: the session's own stream, or any of its streams resumed after `Last-Event-ID`.
pub(super) async fn get(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientKey>,
    Extension(principal): Extension<Principal>,
    arrival: Arrival,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = shared.server() {
        return response;
    }
    if !Accepts::of(&headers).sse {
        return refusal(StatusCode::NOT_ACCEPTABLE, "Accept must include text/event-stream");
    }
    let Some(id) = header_str(&headers, SESSION_ID) else {
        if header_str(&headers, PROTOCOL_VERSION).is_some_and(|v| Revision::session(v).is_none()) {
            return refusal(StatusCode::METHOD_NOT_ALLOWED, "protocol 2026-07-28 has no GET stream: use `subscriptions/listen`");
        }
        return refusal(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
    };
    let Some(http) = shared.sessions.get(id, Flavor::Streamable, &principal) else {
        if let Some(answered) = arrival.elsewhere(&shared, IdKind::Session, id, &headers, Bytes::new(), client).await {
            return answered;
        }
        return refusal(StatusCode::NOT_FOUND, "session not found: it ended or expired (start a new one with `initialize`)");
    };
    http.touch();
    let keep_alive = shared.options.limits.keep_alive;
    let (stream, after) = match header_str(&headers, LAST_EVENT_ID) {
        Some(last) => match sse::parse_event_id(last) {
            Ok((stream, seq)) => match http.stream(stream) {
                Some(found) => (found, Some(seq)),
                None => return refusal(StatusCode::BAD_REQUEST, &sse::ReplayError::UnknownStream.to_string()),
            },
            Err(error) => return refusal(StatusCode::BAD_REQUEST, &error.to_string()),
        },
        None => match http.standalone() {
            Some(stream) => (stream, None),
            None => return refusal(StatusCode::NOT_FOUND, "session not found"),
        },
    };
    let share = match peers::take_or_refuse(&shared, client, Kind::Stream) {
        Ok(share) => share,
        Err(refused) => return refused,
    };
    // The session's own stream closes at shutdown; a request's stream ends with its reply.
    let stop = if stream.id() == 0 { http.idle_streams.clone() } else { http.ended.clone() };
    let (replay, live) = stream.attach(after);
    sse::response(sse::body(replay, live, keep_alive, Some(stop), Some((shared.options.limits.max_stream_lifetime, share))))
}

/// DELETE /mcp: ends the session.
pub(super) async fn delete(
    State(shared): State<Arc<Shared>>,
    Extension(client): Extension<ClientKey>,
    Extension(principal): Extension<Principal>,
    arrival: Arrival,
    headers: HeaderMap,
) -> Response {
    let Some(id) = header_str(&headers, SESSION_ID) else {
        return refusal(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
    };
    if shared.sessions.get(id, Flavor::Streamable, &principal).is_some() {
        if shared.sessions.remove(id) {
            tracing::debug!(session = %Escaped(id), "session deleted by its client");
            return StatusCode::OK.into_response();
        }
    } else if let Some(answered) = arrival.elsewhere(&shared, IdKind::Session, id, &headers, Bytes::new(), client).await {
        return answered;
    }
    refusal(StatusCode::NOT_FOUND, "session not found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_errors_map_to_statuses() {
        assert_eq!(modern_status(jsonrpc::METHOD_NOT_FOUND), StatusCode::NOT_FOUND);
        assert_eq!(modern_status(jsonrpc::INVALID_PARAMS), StatusCode::BAD_REQUEST);
        assert_eq!(modern_status(headers::HEADER_MISMATCH), StatusCode::BAD_REQUEST);
        assert_eq!(modern_status(-32021), StatusCode::BAD_REQUEST);
        assert_eq!(modern_status(-32022), StatusCode::BAD_REQUEST);
        assert_eq!(modern_status(jsonrpc::INTERNAL_ERROR), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(modern_status(SERVER_BUSY), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(modern_status(RATE_LIMITED), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(modern_status(INSUFFICIENT_SCOPE), StatusCode::FORBIDDEN);
        assert_eq!(modern_status(42), StatusCode::OK, "an application error is still an answer");
    }

    #[test]
    fn accept_headers_are_read_by_media_type() {
        let accepts = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(value).expect("value"));
            let a = Accepts::of(&headers);
            (a.json, a.sse)
        };
        assert_eq!(accepts("application/json, text/event-stream"), (true, true));
        assert_eq!(accepts("text/event-stream;q=0.9"), (false, true));
        assert_eq!(accepts("application/json"), (true, false));
        assert_eq!(accepts("*/*"), (true, true));
        assert_eq!(accepts("text/html"), (false, false));
        let a = Accepts::of(&HeaderMap::new());
        assert!(a.json && a.sse, "no Accept takes either");
    }
}
