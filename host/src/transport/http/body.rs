//! Request bodies read whole, under a size limit and a deadline, before any handler sees them.
//!
//! A body that announces 16 MiB and stops one byte short would otherwise hold its buffer (and
//! its connection) for as long as the client likes. Here the whole body must arrive within
//! `HttpLimits::body_timeout` from the end of the head; a body still unfinished then is refused
//! with 408 and its connection closed, and what was read is freed at once. The bytes being read
//! are charged to the client's share of bodies (`peers.rs`; 429 past it) and to the process's
//! memory budget (503 past it) as they arrive, so one client's bodies never spend what the
//! others need, and all bodies together never more than the budget. A whole body is then
//! charged for what parsing it may take (`jsonrpc::parsed_cost`: small objects take tens of
//! times their text), refused with 413 past `jsonrpc::MAX_PARSED`, and the charge is held until
//! the handler has answered (`Held`), so the parse and what it makes are paid for too.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::BytesMut;
use http_body_util::BodyExt;

use super::Shared;
use super::guard::refusal;
use crate::escape::Escaped;

/// What a body holds of its client's share and of the budget while its handler runs.
pub(super) struct Held {
    _charge: crate::budget::Charge,
    _share: Option<super::peers::BodyShare>,
}

/// Reads the body of a request that has one; the request with the bytes in place of the
/// stream, and what it holds until it is answered; or the refusal.
pub(super) async fn read_whole(shared: &Shared, request: Request) -> Result<(Request, Option<Held>), Response> {
    let announced = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = request.headers().contains_key(header::TRANSFER_ENCODING);
    if announced.unwrap_or(0) == 0 && !chunked {
        return Ok((request, None));
    }
    let limits = &shared.options.limits;
    let (parts, body) = request.into_parts();
    let peer = parts.extensions.get::<super::guard::Peer>().map(|p| p.0);
    let client = parts.extensions.get::<super::peers::ClientKey>().copied();
    // What the body announced is reserved up front, from the client's share and from the
    // process's budget; a chunked body is charged as it grows.
    let reserved = announced.unwrap_or(0).min(limits.max_body);
    let mut share = match client.map(|client| shared.peers.take_body(client, reserved)).transpose() {
        Ok(share) => share,
        Err(over) => {
            tracing::warn!(peer = ?peer, bytes = announced, "refused a request body: {over}");
            return Err(super::peers::too_many(&over.to_string()));
        }
    };
    // Replay kept for finished streams is let go before a body is refused.
    let charged = shared.budget.charge(reserved).or_else(|_| {
        shared.sessions.shed_finished();
        shared.budget.charge(reserved)
    });
    let mut charge = match charged {
        Ok(charge) => charge,
        Err(full) => {
            tracing::warn!(peer = ?peer, bytes = announced, "refused a request body: {full}");
            return Err(busy(&full.to_string()));
        }
    };
    let read = async {
        let mut body = body;
        let mut bytes = BytesMut::with_capacity(announced.unwrap_or(0).min(limits.max_body));
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| Refused::Broken)?;
            let Ok(data) = frame.into_data() else { continue };
            if bytes.len() + data.len() > limits.max_body {
                return Err(Refused::TooLarge);
            }
            if let Some(share) = &mut share {
                share.grow_to(bytes.len() + data.len()).map_err(Refused::Share)?;
            }
            charge.grow_to(bytes.len() + data.len()).map_err(Refused::Budget)?;
            bytes.extend_from_slice(&data);
        }
        Ok(bytes.freeze())
    };
    let bytes: Bytes = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(Refused::TooLarge)) => {
            tracing::warn!(peer = ?peer, "refused a request: its body is larger than the limit");
            return Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, "the body is larger than the server accepts"));
        }
        Ok(Err(Refused::Budget(full))) => {
            tracing::warn!(peer = ?peer, "refused a request body: {full}");
            return Err(busy(&full.to_string()));
        }
        Ok(Err(Refused::Share(over))) => {
            tracing::warn!(peer = ?peer, "refused a request body: {over}");
            return Err(super::peers::too_many(&over.to_string()));
        }
        Ok(Err(Refused::Broken)) => {
            tracing::debug!(peer = ?peer, "a request body ended before it was complete");
            return Err(refusal(StatusCode::BAD_REQUEST, "the body ended before it was complete"));
        }
        Err(_) => {
            tracing::warn!(peer = ?peer, path = %Escaped(parts.uri.path()), deadline = ?limits.body_timeout, "refused a request: its body did not arrive within the deadline");
            let mut response = refusal(StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time");
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(response);
        }
    };
    // Parsing may take many times the text: charged (to the client's share and the budget)
    // before any parse, and held until the handler has answered.
    let cost = crate::jsonrpc::parsed_cost(&bytes);
    if cost > crate::jsonrpc::MAX_PARSED {
        tracing::warn!(peer = ?peer, bytes = bytes.len(), cost, "refused a request body: parsing it would take more than allowed");
        return Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, &crate::jsonrpc::too_costly(cost).error.message));
    }
    if let Some(share) = &mut share
        && let Err(over) = share.grow_to(cost)
    {
        tracing::warn!(peer = ?peer, bytes = bytes.len(), cost, "refused a request body: {over}");
        return Err(super::peers::too_many(&over.to_string()));
    }
    if let Err(full) = charge.grow_to(cost) {
        tracing::warn!(peer = ?peer, bytes = bytes.len(), cost, "refused a request body: {full}");
        return Err(busy(&full.to_string()));
    }
    Ok((Request::from_parts(parts, Body::from(bytes)), Some(Held { _charge: charge, _share: share })))
}

enum Refused {
    TooLarge,
    Broken,
    Budget(crate::budget::OverBudget),
    Share(super::peers::OverShare),
}

/// 503 with the reason and a hint when to retry.
fn busy(reason: &str) -> Response {
    let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, reason);
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}
