//! The WebSocket section: one connection to `/ws` (subprotocol `mcp`, `TCP_NODELAY`),
//! `initialize` first, then `tools/call text_echo` as text frames: sequential latency (p50, p99),
//! then calls per second with 64 requests kept in flight from the lean client of `ws_load` on the
//! client core (refilled as the stdio figure's client refills its pipe, so the two can be set side
//! by side), with the server's CPU per call and the client's share of its core.

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
use crate::measure::{cpu_ns, micros, p50_p99};
use crate::process::WAIT;
use crate::stdio::{INITIALIZE, INITIALIZED, WARM_UP_CALLS, echo_call};
use crate::ws_load;

/// Requests kept in flight for the throughput figure.
pub const IN_FLIGHT: usize = 64;

/// The figures of one WebSocket round of one server.
#[derive(Debug, Clone, Default)]
pub struct WebSocketFigures {
    pub calls_per_s: f64,
    /// The server's CPU per call with `IN_FLIGHT` in flight (every thread), in µs.
    pub server_cpu_us: f64,
    /// The load client's share of its core over that run.
    pub client_cpu: f64,
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

/// Sequential latency on a running server.
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

    let _ = timeout(Duration::from_secs(5), socket.close(None)).await;
    Ok(WebSocketFigures { seq_p50_us, seq_p99_us, ..WebSocketFigures::default() })
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
        machine::record(format!("WebSocket, {name}, sequential"), others.finish());
        *figures = measured.with_context(|| format!("{name} over WebSocket; its stderr ends:\n{}", server.stderr_tail()))?;
        let others = Others::start(&[server.pid()]);
        let cpu_before = cpu_ns(server.pid())?;
        let total = (calls * 5).max(IN_FLIGHT * 4);
        let load = machine::on_core(cores.client, || ws_load::pipelined(server.addr, IN_FLIGHT, WARM_UP_CALLS, total));
        let cpu_after = cpu_ns(server.pid())?;
        machine::record(format!("WebSocket, {name}, {IN_FLIGHT} in flight"), others.finish());
        let load = load.with_context(|| format!("{name} over WebSocket, {IN_FLIGHT} in flight; its stderr ends:\n{}", server.stderr_tail()))?;
        figures.calls_per_s = load.calls_per_s;
        figures.client_cpu = load.client_cpu;
        // The warm-up's calls are inside the server's CPU window too.
        figures.server_cpu_us = (cpu_after - cpu_before) as f64 / 1e3 / (total + WARM_UP_CALLS) as f64;
        server.stop()?;
    }
    Ok(figures)
}
