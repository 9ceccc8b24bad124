//! The WebSocket section: one connection to `/ws` (subprotocol `mcp`, `TCP_NODELAY`),
//! `initialize` first, then `tools/call text_echo` as text frames: sequential latency (p50, p99),
//! then calls per second with 64 requests kept in flight, counted exactly like the stdio
//! pipelined figure so the two can be set side by side.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::time::timeout;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::http::HttpServer;
use crate::machine::{self, Cores, Others, ProcessOnCore};
use crate::measure::{micros, p50_p99};
use crate::process::WAIT;
use crate::stdio::{INITIALIZE, INITIALIZED, echo_call};

/// Requests kept in flight for the throughput figure.
pub const IN_FLIGHT: usize = 64;

/// The figures of one WebSocket round of one server.
#[derive(Debug, Clone, Default)]
pub struct WebSocketFigures {
    pub calls_per_s: f64,
    pub seq_p50_us: f64,
    pub seq_p99_us: f64,
}

type Socket = WebSocketStream<TcpStream>;

/// Opens `/ws` with the `mcp` subprotocol and initializes.
async fn connect(addr: SocketAddr) -> Result<Socket> {
    let stream = timeout(WAIT, TcpStream::connect(addr)).await.context("connect timed out")??;
    stream.set_nodelay(true)?;
    let mut request = format!("ws://{addr}/ws").into_client_request()?;
    request.headers_mut().insert("sec-websocket-protocol", http::HeaderValue::from_static("mcp"));
    let (mut socket, response) = timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await.context("WebSocket handshake timed out")??;
    let chosen = response.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok());
    ensure!(chosen == Some("mcp"), "the server chose subprotocol {chosen:?}, not mcp");
    send(&mut socket, INITIALIZE.to_owned()).await?;
    let reply = next_text(&mut socket).await?;
    ensure!(reply.contains("\"result\""), "initialize failed: {reply}");
    send(&mut socket, INITIALIZED.to_owned()).await?;
    Ok(socket)
}

async fn send(socket: &mut Socket, text: String) -> Result<()> {
    timeout(WAIT, socket.send(Message::text(text))).await.context("send timed out")??;
    Ok(())
}

/// The next text frame (pings and pongs skipped).
async fn next_text(socket: &mut Socket) -> Result<String> {
    loop {
        let frame = timeout(WAIT, socket.next()).await.context("no frame in time")?.context("the server closed the WebSocket")??;
        match frame {
            Message::Text(text) => return Ok(text.as_str().to_owned()),
            Message::Close(frame) => bail!("the server closed the WebSocket: {frame:?}"),
            _ => {}
        }
    }
}

/// One WebSocket measurement on a running server.
async fn measure(addr: SocketAddr, calls: usize) -> Result<WebSocketFigures> {
    let mut socket = connect(addr).await?;
    let mut next_id = 1;
    for _ in 0..crate::stdio::WARM_UP_CALLS {
        next_id += 1;
        send(&mut socket, echo_call(next_id)).await?;
        let reply = next_text(&mut socket).await?;
        ensure!(reply.contains("\"result\""), "a call failed: {reply}");
    }
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        next_id += 1;
        send(&mut socket, echo_call(next_id)).await?;
        let reply = next_text(&mut socket).await?;
        latencies.push(micros(started.elapsed()));
        ensure!(reply.contains("\"result\""), "a call failed: {reply}");
    }
    let (seq_p50_us, seq_p99_us) = p50_p99(&mut latencies);

    let total = (calls * 2).max(IN_FLIGHT * 4);
    let started = Instant::now();
    let (mut sent, mut received) = (0, 0);
    while received < total {
        while sent < total && sent - received < IN_FLIGHT {
            next_id += 1;
            timeout(WAIT, socket.feed(Message::text(echo_call(next_id)))).await.context("send timed out")??;
            sent += 1;
        }
        timeout(WAIT, socket.flush()).await.context("flush timed out")??;
        let reply = next_text(&mut socket).await?;
        ensure!(reply.contains("\"result\""), "a call failed: {reply}");
        received += 1;
    }
    let calls_per_s = total as f64 / started.elapsed().as_secs_f64();
    let _ = timeout(Duration::from_secs(5), socket.close(None)).await;
    Ok(WebSocketFigures { calls_per_s, seq_p50_us, seq_p99_us })
}

/// One WebSocket round: Paddock, then native, each on a fresh HTTP server bound to the server
/// core, with the harness (the client) bound to the client core while it measures.
pub fn round(paddock: &[String], native: &[String], runtime: &Runtime, calls: usize, cores: Cores) -> Result<[WebSocketFigures; 2]> {
    let mut figures: [WebSocketFigures; 2] = Default::default();
    for ((name, command), figures) in [("paddock", paddock), ("native-echo", native)].into_iter().zip(figures.iter_mut()) {
        let server = machine::on_core(cores.server, || HttpServer::start(command, runtime).with_context(|| format!("start {name} over HTTP")))?;
        let others = Others::start(&[server.pid()]);
        let bound = ProcessOnCore::bind(cores.client)?;
        let measured = runtime.block_on(measure(server.addr, calls));
        drop(bound);
        machine::record(format!("WebSocket, {name}"), others.finish());
        *figures = measured.with_context(|| format!("{name} over WebSocket; its stderr ends:\n{}", server.stderr_tail()))?;
        server.stop()?;
    }
    Ok(figures)
}
