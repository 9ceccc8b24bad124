//! `/ws`: MCP over WebSocket, with the semantics of stdio.
//!
//! Subprotocol `mcp` (a client that offers others but not `mcp` is refused); one JSON-RPC
//! message per text frame, each way; the connection is one session, in either era per message.
//! Frames and messages are capped at `HttpLimits::max_body`; a larger one closes the connection.
//! The server pings every `HttpLimits::keep_alive` and closes a connection that has sent nothing
//! (not even a pong) for three intervals. When the client goes away its requests are cancelled;
//! at shutdown the server stops reading, lets requests answer within the grace period, and
//! closes with 1001.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};

use super::Shared;
use super::guard::refusal;
use super::streamable::SESSION_QUEUE;
use crate::jsonrpc::{self, ErrorObject};
use crate::session::{Server, Session, outbound};

const SUBPROTOCOL: &str = "mcp";
/// How long the writer may take to flush and close once the session is done.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// GET /ws: the upgrade.
pub(super) async fn upgrade(State(shared): State<Arc<Shared>>, headers: HeaderMap, upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>) -> Response {
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let server = match shared.server() {
        Ok(server) => server,
        Err(response) => return response,
    };
    let offered: Vec<&str> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    if !offered.is_empty() && !offered.contains(&SUBPROTOCOL) {
        return refusal(StatusCode::BAD_REQUEST, "the WebSocket subprotocol must be `mcp`");
    }
    let max = shared.options.limits.max_body;
    upgrade
        .protocols([SUBPROTOCOL])
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| {
            let work = shared.work.clone();
            work.track_future(serve(shared, server, socket))
        })
}

async fn serve(shared: Arc<Shared>, server: Arc<Server>, socket: WebSocket) {
    let (mut sink, mut frames) = socket.split();
    let (out, mut queue) = outbound(SESSION_QUEUE);
    let session = Session::new(server, out);
    let keep_alive = shared.options.limits.keep_alive;
    let (close_tx, mut close_rx) = tokio::sync::oneshot::channel::<CloseFrame>();
    let writer = tokio::spawn(async move {
        let mut ping = tokio::time::interval(keep_alive);
        ping.tick().await;
        let close = loop {
            tokio::select! {
                // The close frame is chosen before the queue's end: the session is dropped
                // right after it is sent.
                biased;
                close = &mut close_rx => break close.ok(),
                frame = queue.recv() => match frame {
                    Some(frame) => {
                        if sink.send(Message::Text(frame.line.into())).await.is_err() {
                            return;
                        }
                    }
                    None => break None,
                },
                _ = ping.tick() => {
                    if sink.send(Message::Ping(Default::default())).await.is_err() {
                        return;
                    }
                }
            }
        };
        // Whatever is still queued goes out before the close frame: the queue ends once the
        // session and its request tasks are gone.
        while let Some(frame) = queue.recv().await {
            if sink.send(Message::Text(frame.line.into())).await.is_err() {
                return;
            }
        }
        let close = close.unwrap_or(CloseFrame { code: close_code::NORMAL, reason: "".into() });
        let _ = sink.send(Message::Close(Some(close))).await;
        let _ = sink.close().await;
    });
    let silence = keep_alive * 3;
    let shutting_down = loop {
        let next = tokio::select! {
            next = tokio::time::timeout(silence, frames.next()) => next,
            () = shared.shutdown.cancelled() => break true,
        };
        match next {
            Ok(Some(Ok(Message::Text(text)))) => session.handle_frame(text.as_str()).await,
            Ok(Some(Ok(Message::Binary(_)))) => {
                let error = ErrorObject::new(jsonrpc::PARSE_ERROR, "binary frames are not accepted: send each JSON-RPC message as a text frame");
                session.handle_rejection(jsonrpc::error_line(None, &error), error.code).await;
            }
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {}
            Ok(Some(Ok(Message::Close(_))) | None) => break false,
            Ok(Some(Err(err))) => {
                tracing::info!(error = %err, "a WebSocket connection failed (a frame or message over the size limit closes it)");
                break false;
            }
            Err(_) => {
                tracing::info!(silence = ?silence, "a WebSocket client sent nothing, not even a pong: closing");
                break false;
            }
        }
    };
    if shutting_down {
        session.end_of_input();
        session.drain(shared.options.shutdown_grace).await;
        let _ = close_tx.send(CloseFrame { code: close_code::AWAY, reason: "server shutting down".into() });
    } else {
        session.close();
        let _ = close_tx.send(CloseFrame { code: close_code::NORMAL, reason: "".into() });
    }
    drop(session);
    let mut writer = writer;
    if tokio::time::timeout(CLOSE_GRACE, &mut writer).await.is_err() {
        writer.abort();
    }
}
