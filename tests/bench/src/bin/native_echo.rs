//! The native baseline: a JSON-RPC echo server with no sandbox, answering the same methods the
//! benchmark sends Paddock (`initialize`, `tools/list`, `tools/call` of `text_echo`, `ping`). It
//! parses and serializes every message with serde_json as a real server would.
//!
//! By default it serves stdio on one thread, flushing only when no more input is waiting. With
//! `--http ADDR` it serves HTTP/1.1 instead (hyper, `TCP_NODELAY`, a multi-thread tokio runtime
//! with default workers) and logs `{"address": ...}` on stderr once bound:
//! - `POST /mcp`: in era 2026-07-28 (`MCP-Protocol-Version: 2026-07-28`) stateless, the headers
//!   checked against the body, answered as JSON; otherwise (2025-11-25) `initialize` opens a
//!   session (`Mcp-Session-Id`), notifications get 202, and requests in a known session are
//!   answered as `text/event-stream` with a priming event then one `data:` event, the shape
//!   Paddock uses.
//! - `GET /ws`: upgraded to a WebSocket (subprotocol `mcp` when asked), one message per text
//!   frame, replies flushed when no more frames are waiting.
//! - `GET /readyz`, `GET /healthz`: 200.

// The baseline reports its address and its failures on stderr, as Paddock logs do.
#![allow(clippy::print_stderr)]

use std::collections::HashSet;
use std::convert::Infallible;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Parser;
use futures::{FutureExt, SinkExt, StreamExt};
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

/// A native JSON-RPC echo server (stdio by default).
#[derive(Debug, Parser)]
struct Args {
    /// Serve HTTP and WebSocket on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
}

/// The reply to `request`; `None` for a notification.
fn answer(request: &Value) -> Option<Value> {
    let id = request.get("id")?.clone();
    let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "native-echo", "version": "1"}
        }),
        "tools/list" => {
            json!({"tools": [{"name": "text_echo", "description": "Returns `text` exactly as given.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]})
        }
        "tools/call" => {
            let text = request.pointer("/params/arguments/text").and_then(Value::as_str).unwrap_or_default();
            json!({"content": [{"type": "text", "text": text}]})
        }
        "ping" => json!({}),
        _ => return Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn serve_stdio() -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut output = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let Ok(request) = serde_json::from_str::<Value>(line.trim()) else { continue };
        if let Some(reply) = answer(&request) {
            serde_json::to_writer(&mut output, &reply)?;
            output.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}

/// Legacy sessions: the ids handed out, and a counter for ids of streams and sessions.
#[derive(Default)]
struct Sessions {
    open: Mutex<HashSet<String>>,
    counter: AtomicU64,
}

impl Sessions {
    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }
}

fn reply(status: StatusCode, content_type: Option<&'static str>, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    }
    response
}

fn json_reply(status: StatusCode, message: &Value) -> Response<Full<Bytes>> {
    reply(status, Some("application/json"), serde_json::to_vec(message).unwrap_or_default())
}

fn error(status: StatusCode, id: Value, code: i64, message: &str) -> Response<Full<Bytes>> {
    json_reply(status, &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// The reply as an SSE body: a priming event (id, retry, empty data), then the message.
fn sse_reply(stream: u64, message: &Value) -> Response<Full<Bytes>> {
    let mut body = format!("id: {stream}-0\nretry: 1000\ndata: \n\nid: {stream}-1\nevent: message\ndata: ").into_bytes();
    serde_json::to_writer(&mut body, message).unwrap_or_default();
    body.extend_from_slice(b"\n\n");
    let mut response = reply(StatusCode::OK, Some("text/event-stream"), body);
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    response
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `POST /mcp` in either era.
fn mcp(headers: &HeaderMap, body: &[u8], sessions: &Sessions) -> Response<Full<Bytes>> {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return error(StatusCode::BAD_REQUEST, Value::Null, -32700, "parse error");
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
    if header_str(headers, "mcp-protocol-version") == Some("2026-07-28") {
        if header_str(headers, "mcp-method") != Some(method) {
            return error(StatusCode::BAD_REQUEST, id, -32020, "Mcp-Method does not match the body");
        }
        if message.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion").and_then(Value::as_str) != Some("2026-07-28") {
            return error(StatusCode::BAD_REQUEST, id, -32602, "_meta must carry the protocol version");
        }
        let Some(mut answered) = answer(&message) else {
            return reply(StatusCode::ACCEPTED, None, Bytes::new());
        };
        if let Some(result) = answered.get_mut("result").and_then(Value::as_object_mut) {
            result.insert("resultType".into(), json!("complete"));
            result.insert("_meta".into(), json!({"io.modelcontextprotocol/serverInfo": {"name": "native-echo", "version": "1"}}));
        }
        return json_reply(StatusCode::OK, &answered);
    }
    if method == "initialize" {
        let Some(answered) = answer(&message) else {
            return error(StatusCode::BAD_REQUEST, id, -32600, "initialize must be a request");
        };
        let session = format!("{:032x}", 0x5eed_0000_0000_0000_u64 ^ sessions.next());
        sessions.open.lock().expect("sessions").insert(session.clone());
        let mut response = sse_reply(sessions.next(), &answered);
        response.headers_mut().insert("mcp-session-id", header::HeaderValue::from_str(&session).expect("hex is a header value"));
        return response;
    }
    let Some(session) = header_str(headers, "mcp-session-id") else {
        return error(StatusCode::BAD_REQUEST, id, -32600, "Mcp-Session-Id is missing");
    };
    if !sessions.open.lock().expect("sessions").contains(session) {
        return error(StatusCode::NOT_FOUND, id, -32001, "session not found");
    }
    match answer(&message) {
        Some(answered) => sse_reply(sessions.next(), &answered),
        None => reply(StatusCode::ACCEPTED, None, Bytes::new()),
    }
}

/// Answers each text frame until the client closes; replies are flushed when no frame waits.
async fn serve_websocket(mut socket: WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>) -> Result<()> {
    let mut waiting = None;
    loop {
        let frame = match waiting.take() {
            Some(frame) => frame,
            None => socket.next().await,
        };
        let Some(frame) = frame else { return Ok(()) };
        if let Message::Text(text) = frame? {
            let reply = match serde_json::from_str::<Value>(text.as_str()) {
                Ok(request) => answer(&request),
                Err(_) => Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}})),
            };
            if let Some(reply) = reply {
                socket.feed(Message::text(serde_json::to_string(&reply)?)).await?;
            }
        }
        match socket.next().now_or_never() {
            Some(frame) => waiting = Some(frame),
            None => socket.flush().await?,
        }
    }
}

/// `GET /ws`: the 101 answer, and the WebSocket served once the connection is upgraded.
fn upgrade(mut request: Request<Incoming>) -> Response<Full<Bytes>> {
    let Some(key) = request.headers().get("sec-websocket-key").map(|key| tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes())) else {
        return reply(StatusCode::BAD_REQUEST, None, "not a WebSocket request");
    };
    let wants_mcp = header_str(request.headers(), "sec-websocket-protocol").is_some_and(|p| p.split(',').any(|p| p.trim() == "mcp"));
    let upgraded = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = upgraded.await else { return };
        let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        if let Err(err) = serve_websocket(socket).await {
            eprintln!("native-echo: a WebSocket failed: {err}");
        }
    });
    let mut response = reply(StatusCode::SWITCHING_PROTOCOLS, None, Bytes::new());
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, header::HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, header::HeaderValue::from_static("websocket"));
    headers.insert("sec-websocket-accept", header::HeaderValue::from_str(&key).expect("base64 is a header value"));
    if wants_mcp {
        headers.insert("sec-websocket-protocol", header::HeaderValue::from_static("mcp"));
    }
    response
}

async fn route(request: Request<Incoming>, sessions: Arc<Sessions>) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = match (request.method(), request.uri().path()) {
        (&Method::POST, "/mcp") => {
            let (parts, body) = request.into_parts();
            match body.collect().await {
                Ok(body) => mcp(&parts.headers, &body.to_bytes(), &sessions),
                Err(_) => reply(StatusCode::BAD_REQUEST, None, "unreadable body"),
            }
        }
        (&Method::GET, "/ws") => upgrade(request),
        (&Method::GET, "/readyz" | "/healthz") => reply(StatusCode::OK, Some("text/plain"), "ok"),
        _ => reply(StatusCode::NOT_FOUND, None, Bytes::new()),
    };
    Ok(response)
}

async fn serve_http(addr: SocketAddr) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("bind {addr}"))?;
    eprintln!("{}", json!({"message": "listening", "address": listener.local_addr()?.to_string()}));
    let sessions = Arc::new(Sessions::default());
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let sessions = Arc::clone(&sessions);
        tokio::spawn(async move {
            let service = service_fn(move |request| route(request, Arc::clone(&sessions)));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).with_upgrades().await;
        });
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    match args.http {
        None => Ok(serve_stdio()?),
        Some(addr) => tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(serve_http(addr)),
    }
}
