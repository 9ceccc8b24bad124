//! `/ws`: MCP over WebSocket, with the semantics of stdio.
//!
//! Subprotocol `mcp` (a client that offers others but not `mcp` is refused); one JSON-RPC
//! message per text frame, each way; the connection is one session, in either era per message.
//! Frames and messages are capped at `HttpLimits::max_body`; a larger one closes the connection.
//! A message must arrive whole within `HttpLimits::body_timeout` of its first frame, whatever
//! pings and pongs come between its fragments (`ws_frames.rs` follows the frames under the
//! library), and the bytes of a message being received are charged to the memory budget; a
//! message over either closes the connection with 1008. The server pings every
//! `HttpLimits::keep_alive` and closes a connection that has sent nothing (not even a pong) for
//! three intervals. The upgraded connection keeps its slot of `--max-connections` (and its
//! client's share) until it closes. When the client goes away its requests are cancelled; at
//! shutdown the server stops reading, lets requests answer within the grace period, and closes
//! with 1001.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

use super::guard::refusal;
use super::streamable::SESSION_QUEUE;
use super::ws_frames::{MessageWatch, Watched};
use super::{ConnectionHeld, Shared};
use crate::identity::{Principal, Transport};
use crate::jsonrpc::{self, ErrorObject};
use crate::session::{OutboundReceiver, Outgoing, ServerState, Session, outbound_charged};

const SUBPROTOCOL: &str = "mcp";
/// How long the writer may take to flush and close once the session is done.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// GET /ws: the upgrade (RFC 6455 §4.2).
pub(super) async fn upgrade(State(shared): State<Arc<Shared>>, mut request: Request) -> Response {
    let headers = request.headers();
    if request.method() != Method::GET {
        return refusal(StatusCode::METHOD_NOT_ALLOWED, "a WebSocket opens with GET");
    }
    let token_in = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !token_in(header::CONNECTION, "upgrade") || !token_in(header::UPGRADE, "websocket") {
        return refusal(StatusCode::BAD_REQUEST, "`/ws` takes a WebSocket upgrade (Connection: upgrade, Upgrade: websocket)");
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).is_none_or(|v| v.as_bytes() != b"13") {
        return refusal(StatusCode::BAD_REQUEST, "Sec-WebSocket-Version must be 13");
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec()) else {
        return refusal(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key is missing");
    };
    let server = match shared.server() {
        Ok(server) => server,
        Err(response) => return response,
    };
    let offered: Vec<&str> =
        headers.get_all(header::SEC_WEBSOCKET_PROTOCOL).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(str::trim).collect();
    if !offered.is_empty() && !offered.contains(&SUBPROTOCOL) {
        return refusal(StatusCode::BAD_REQUEST, "the WebSocket subprotocol must be `mcp`");
    }
    let chose_mcp = !offered.is_empty();
    let Some(on_upgrade) = request.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return refusal(StatusCode::UPGRADE_REQUIRED, "this connection cannot be upgraded");
    };
    // The connection's slot and its client's share stay held while the socket is open.
    let held = request.extensions().get::<ConnectionHeld>().cloned();
    // Authenticated at connect: every message of the socket is served for this principal.
    let principal = request.extensions().get::<Principal>().cloned().unwrap_or_else(Principal::anonymous);
    let work = shared.work.clone();
    work.spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(upgraded) => upgraded,
            Err(err) => {
                tracing::debug!(error = %err, "a WebSocket upgrade failed");
                return;
            }
        };
        let max = shared.options.limits.max_body;
        let config = WebSocketConfig::default().max_message_size(Some(max)).max_frame_size(Some(max));
        let watch = Arc::new(MessageWatch::default());
        let io = Watched::new(TokioIo::new(upgraded), Arc::clone(&watch), Arc::clone(&shared.budget));
        let socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let _counted = crate::telemetry::metrics::held(|m| m.stream("websocket"));
        serve(shared, server, socket, watch, principal).await;
        drop(held);
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key)) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if chose_mcp {
        headers.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
    }
    response
}

/// Sends `first` and the replies queued behind it (`OutboundReceiver::fill_batch`) in one
/// flush. The replies stay charged to their session until they are written.
async fn send_batch<S>(sink: &mut S, queue: &mut OutboundReceiver, first: Outgoing, sent: &mut Vec<Outgoing>) -> Result<(), S::Error>
where
    S: futures::Sink<Message> + Unpin,
{
    queue.fill_batch(first, sent).await;
    for frame in sent.iter_mut() {
        sink.feed(Message::text(std::mem::take(&mut frame.line))).await?;
    }
    let flushed = sink.flush().await;
    sent.clear();
    flushed
}

/// How long the read loop waits for the next frame: until the client has been silent too long,
/// or until the message it is half-way through is due, whichever comes first.
fn next_wait(silence: Duration, message_deadline: Duration, watch: &MessageWatch) -> (Duration, bool) {
    match watch.started() {
        Some(started) => {
            let left = message_deadline.saturating_sub(started.elapsed());
            if left < silence { (left, true) } else { (silence, false) }
        }
        None => (silence, false),
    }
}

async fn serve<T>(shared: Arc<Shared>, server: Arc<ServerState>, socket: WebSocketStream<T>, watch: Arc<MessageWatch>, principal: Principal)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut frames) = socket.split();
    let (out, mut queue) = outbound_charged(SESSION_QUEUE, server.budget());
    let session = Session::new(server, out, principal, Transport::WebSocket);
    shared.track(&session);
    let keep_alive = shared.options.limits.keep_alive;
    let (close_tx, mut close_rx) = tokio::sync::oneshot::channel::<CloseFrame>();
    let writer = tokio::spawn(async move {
        let mut sent = Vec::new();
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
                        if send_batch(&mut sink, &mut queue, frame, &mut sent).await.is_err() {
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
            if sink.send(Message::text(frame.line)).await.is_err() {
                return;
            }
        }
        let close = close.unwrap_or(CloseFrame { code: CloseCode::Normal, reason: "".into() });
        let _ = sink.send(Message::Close(Some(close))).await;
        let _ = sink.close().await;
    });
    let silence = keep_alive * 3;
    let message_deadline = shared.options.limits.body_timeout;
    let mut policy_close = None;
    let shutting_down = loop {
        let (wait, message_due) = next_wait(silence, message_deadline, &watch);
        let next = tokio::select! {
            next = tokio::time::timeout(wait, frames.next()) => next,
            () = shared.shutdown.cancelled() => break true,
        };
        match next {
            Ok(Some(Ok(Message::Text(text)))) => {
                // What parsing the message may take is charged until it is handed over.
                let cost = jsonrpc::parsed_cost(text.as_bytes());
                let charged = if cost > jsonrpc::MAX_PARSED {
                    Err(jsonrpc::too_costly(cost).error)
                } else {
                    shared.budget.charge(cost).map_err(|full| ErrorObject::new(crate::session::SERVER_BUSY, full.to_string()))
                };
                match charged {
                    Ok(_parse) => session.handle_frame(text.as_str()).await,
                    Err(error) => session.handle_rejection(jsonrpc::error_line(None, &error), error.code).await,
                }
            }
            Ok(Some(Ok(Message::Binary(_)))) => {
                let error = ErrorObject::new(jsonrpc::PARSE_ERROR, "binary frames are not accepted: send each JSON-RPC message as a text frame");
                session.handle_rejection(jsonrpc::error_line(None, &error), error.code).await;
            }
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)))) => {}
            Ok(Some(Ok(Message::Close(_))) | None) => break false,
            Ok(Some(Err(err))) => {
                tracing::info!(error = %err, "a WebSocket connection failed (a frame or message over the size limit, or over the memory budget, closes it)");
                policy_close = Some("message too large for the server");
                break false;
            }
            Err(_) if message_due => {
                tracing::warn!(deadline = ?message_deadline, "a WebSocket client did not finish a message within the deadline: closing");
                policy_close = Some("message not completed in time");
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
        session.abandon_in_flight(super::SHUTDOWN_ANSWER).await;
        let _ = close_tx.send(CloseFrame { code: CloseCode::Away, reason: "server shutting down".into() });
    } else {
        session.close();
        let close = match policy_close {
            Some(reason) => CloseFrame { code: CloseCode::Policy, reason: reason.into() },
            None => CloseFrame { code: CloseCode::Normal, reason: "".into() },
        };
        let _ = close_tx.send(close);
    }
    drop(session);
    let mut writer = writer;
    if tokio::time::timeout(CLOSE_GRACE, &mut writer).await.is_err() {
        writer.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::*;
    use crate::session::{BATCH_MESSAGES, OutboundLimits, outbound};

    /// A sink that records each message and each flush (the messages each write carried).
    #[derive(Default)]
    struct Writes {
        pending: Vec<String>,
        flushed: Vec<Vec<String>>,
    }

    impl futures::Sink<Message> for Writes {
        type Error = std::convert::Infallible;
        fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn start_send(mut self: Pin<&mut Self>, message: Message) -> Result<(), Self::Error> {
            self.pending.push(message.into_text().expect("text").as_str().to_owned());
            Ok(())
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            let batch = std::mem::take(&mut self.pending);
            self.flushed.push(batch);
            Poll::Ready(Ok(()))
        }
        fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn replies_finished_while_the_writer_waits_for_its_turn_share_one_write_in_order() {
        let (out, mut queue) = outbound(OutboundLimits { messages: 256, bytes: 1 << 20 });
        let mut sink = Writes::default();
        let mut sent = Vec::new();

        // Alone: one reply, one write.
        assert!(out.notify("alone".into()));
        let first = queue.recv().await.expect("queued");
        send_batch(&mut sink, &mut queue, first, &mut sent).await.expect("sent");
        assert_eq!(sink.flushed, vec![vec!["alone".to_owned()]]);

        // Three tasks finish their replies while the writer has yielded its turn.
        for i in 0..3 {
            let out = out.clone();
            tokio::spawn(async move { assert!(out.notify(format!("reply {i}"))) });
        }
        assert!(out.notify("first".into()));
        let first = queue.recv().await.expect("queued");
        send_batch(&mut sink, &mut queue, first, &mut sent).await.expect("sent");
        assert_eq!(sink.flushed[1], ["first", "reply 0", "reply 1", "reply 2"], "one write carries them, in order");
        assert!(sent.is_empty(), "nothing stays held once written");

        // No write carries more than BATCH_MESSAGES replies; the rest go in the next.
        for i in 0..BATCH_MESSAGES + 5 {
            assert!(out.notify(format!("{i}")));
        }
        let first = queue.recv().await.expect("queued");
        send_batch(&mut sink, &mut queue, first, &mut sent).await.expect("sent");
        assert_eq!(sink.flushed[2].len(), BATCH_MESSAGES);
        let first = queue.recv().await.expect("queued");
        send_batch(&mut sink, &mut queue, first, &mut sent).await.expect("sent");
        assert_eq!(sink.flushed[3].len(), 5);
    }
}
