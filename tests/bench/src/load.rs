//! The load section: many clients of Paddock at once, mixing every transport, for a bounded
//! time, with every reply checked.
//!
//! One HTTP host (with `--memory-budget`) serves Streamable HTTP clients of both eras (2025-11-25
//! sessions answered as SSE; 2026-07-28 stateless requests answered as JSON), HTTP+SSE clients
//! (`/sse` and `/messages`) and WebSocket clients; a share of the clients are stdio clients, each
//! with a Paddock process of its own (stdio serves one client). The HTTP clients come from 200
//! loopback addresses, so the per-client shares apply as they would to real callers.
//!
//! Every client opens its session first; then all of them call `text_echo` back to back with a
//! text naming the client and the call, until the time is up, and each reply must carry the
//! call's id and its text. A call unanswered within `WAIT` is lost; a second reply to an id, or
//! a reply that belongs to another call or client, is a duplicate; on the stream transports a
//! final `ping` shows that nothing more was on its way. The host's RSS is sampled throughout.
//! The run fails on any lost or duplicated reply, on any error, or when the HTTP host's peak RSS
//! exceeds its memory budget; calls refused as busy (`-32000`, 503, 429) are counted apart.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::{SinkExt, StreamExt};
use http::StatusCode;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::http::{Connection, HttpServer, Reply, sse_messages};
use crate::measure::{cpu_ns, micros, percentile, rss_mb};
use crate::process::WAIT;

/// The transports of the mix, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Stdio,
    Sessions,
    Stateless,
    Sse,
    WebSocket,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::Stdio, Kind::Sessions, Kind::Stateless, Kind::Sse, Kind::WebSocket];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Sessions => "Streamable HTTP 2025-11-25",
            Kind::Stateless => "Streamable HTTP 2026-07-28",
            Kind::Sse => "HTTP+SSE 2024-11-05",
            Kind::WebSocket => "WebSocket",
        }
    }
}

/// The mix: one stdio client in twenty (each is a process), the rest shared evenly by the HTTP
/// transports.
pub fn kind_of(client: usize, clients: usize) -> Kind {
    let stdio = (clients / 20).max(1);
    if client < stdio {
        return Kind::Stdio;
    }
    [Kind::Sessions, Kind::Stateless, Kind::Sse, Kind::WebSocket][(client - stdio) % 4]
}

/// Loopback addresses the HTTP clients come from.
const ADDRESSES: usize = 200;

/// What one transport's clients did.
#[derive(Debug, Default)]
pub struct Tally {
    pub clients: usize,
    pub calls: u64,
    pub refused: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub latencies_us: Vec<f64>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.clients += other.clients;
        self.calls += other.calls;
        self.refused += other.refused;
        self.lost += other.lost;
        self.duplicated += other.duplicated;
        self.latencies_us.extend(other.latencies_us);
    }
}

/// The figures of the load section.
pub struct LoadFigures {
    pub tallies: Vec<(Kind, Tally)>,
    pub seconds: f64,
    pub budget_mib: usize,
    pub rss_before_mb: f64,
    pub rss_peak_mb: f64,
    pub stdio_rss_peak_mb: f64,
    pub open_seconds: f64,
    /// CPU seconds used while the clients called: the HTTP host, the stdio hosts together, and
    /// the harness itself (every client).
    pub cpu_http_s: f64,
    pub cpu_stdio_s: f64,
    pub cpu_harness_s: f64,
}

/// What the load needs to start its servers.
pub struct LoadSetup<'a> {
    pub paddock: &'a str,
    pub plugins: &'a str,
    pub clients: usize,
    pub seconds: f64,
    pub budget_mib: usize,
}

/// The HTTP host's command.
fn http_command(setup: &LoadSetup<'_>) -> Vec<String> {
    let budget = format!("{}MiB", setup.budget_mib);
    [
        setup.paddock,
        "--log-format",
        "json",
        "serve",
        setup.plugins,
        "--http",
        "127.0.0.1:0",
        "--memory-budget",
        &budget,
        "--max-connections",
        "4096",
        "--max-sessions",
        "2048",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// Runs the load once.
pub fn run(setup: &LoadSetup<'_>, runtime: &tokio::runtime::Runtime) -> Result<LoadFigures> {
    let server = HttpServer::start(&http_command(setup), runtime).context("start paddock over HTTP")?;
    let outcome = runtime.block_on(drive(setup, server.addr, server.pid()));
    let tail = server.stderr_tail();
    server.stop()?;
    outcome.with_context(|| format!("the HTTP host's stderr ends:\n{tail}"))
}

/// The address client `n` comes from.
fn address_of(client: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 1, u8::try_from(1 + client % ADDRESSES).unwrap_or(1)))
}

async fn drive(setup: &LoadSetup<'_>, addr: SocketAddr, pid: u32) -> Result<LoadFigures> {
    let rss_before_mb = rss_mb(pid)?;
    let peak_kib = Arc::new(AtomicU64::new(0));
    let sampler = tokio::spawn({
        let peak_kib = Arc::clone(&peak_kib);
        async move {
            loop {
                if let Ok(mb) = rss_mb(pid) {
                    peak_kib.fetch_max((mb * 1024.0) as u64, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    // Open every client, a few dozen at a time, then let all of them call at once.
    let opened = Instant::now();
    let opening = Arc::new(tokio::sync::Semaphore::new(32));
    let mut opens = tokio::task::JoinSet::new();
    for n in 0..setup.clients {
        let (opening, paddock, plugins) = (Arc::clone(&opening), setup.paddock.to_owned(), setup.plugins.to_owned());
        let kind = kind_of(n, setup.clients);
        opens.spawn(async move {
            let _turn = opening.acquire_owned().await?;
            let client = Client::open(kind, n, addr, &paddock, &plugins).await.with_context(|| format!("open client {n} ({})", kind.label()))?;
            anyhow::Ok(client)
        });
    }
    let mut clients = Vec::with_capacity(setup.clients);
    while let Some(joined) = opens.join_next().await {
        clients.push(joined??);
    }
    let open_seconds = opened.elapsed().as_secs_f64();
    let window = Duration::from_secs_f64(setup.seconds);
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let stop = start + window;
    let stdio_pids: Vec<u32> = clients.iter().filter_map(|c| if let Channel::Stdio { child, .. } = &c.channel { child.id() } else { None }).collect();
    let cpu = |pids: &[u32]| pids.iter().map(|pid| cpu_ns(*pid).unwrap_or(0)).sum::<u64>();
    let harness = [std::process::id()];
    let cpu_before = [cpu(&[pid]), cpu(&stdio_pids), cpu(&harness)];
    let mut runs = tokio::task::JoinSet::new();
    for client in clients {
        runs.spawn(async move {
            tokio::time::sleep_until(start).await;
            let kind = client.kind;
            let n = client.n;
            client.run(stop.into_std()).await.with_context(|| format!("client {n} ({})", kind.label()))
        });
    }
    tokio::time::sleep_until(stop).await;
    let cpu_after = [cpu(&[pid]), cpu(&stdio_pids), cpu(&harness)];
    let [cpu_http_s, cpu_stdio_s, cpu_harness_s] = [0, 1, 2].map(|i| cpu_after[i].saturating_sub(cpu_before[i]) as f64 / 1e9);
    let mut tallies: Vec<(Kind, Tally)> = Kind::ALL.iter().map(|k| (*k, Tally::default())).collect();
    let mut stdio_rss_peak_mb: f64 = 0.0;
    while let Some(joined) = timeout(window + WAIT * 2, runs.join_next()).await.context("a client did not finish in time")? {
        let (kind, tally, stdio_peak) = joined??;
        stdio_rss_peak_mb = stdio_rss_peak_mb.max(stdio_peak);
        if let Some((_, total)) = tallies.iter_mut().find(|(k, _)| *k == kind) {
            total.add(tally);
        }
    }
    sampler.abort();
    let rss_peak_mb = (peak_kib.load(Ordering::Relaxed) as f64 / 1024.0).max(crate::measure::peak_rss_mb(pid).unwrap_or(0.0));
    let figures = LoadFigures {
        tallies,
        seconds: setup.seconds,
        budget_mib: setup.budget_mib,
        rss_before_mb,
        rss_peak_mb,
        stdio_rss_peak_mb,
        open_seconds,
        cpu_http_s,
        cpu_stdio_s,
        cpu_harness_s,
    };
    let (lost, duplicated): (u64, u64) = figures.tallies.iter().fold((0, 0), |(l, d), (_, t)| (l + t.lost, d + t.duplicated));
    if lost > 0 || duplicated > 0 {
        report(&figures);
        bail!("{lost} replies were lost and {duplicated} duplicated");
    }
    ensure!(
        figures.rss_peak_mb <= setup.budget_mib as f64,
        "the HTTP host's RSS reached {:.0} MiB, over its {} MiB budget",
        figures.rss_peak_mb,
        setup.budget_mib
    );
    Ok(figures)
}

/// One client, opened and ready to call.
struct Client {
    kind: Kind,
    n: usize,
    channel: Channel,
}

enum Channel {
    Stdio { child: tokio::process::Child, stdin: tokio::process::ChildStdin, lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>> },
    Sessions { connection: Connection, session: String },
    Stateless { connection: Connection },
    Sse { stream: SseReader, posts: Connection, endpoint: String },
    WebSocket { socket: tokio_tungstenite::WebSocketStream<TcpStream> },
}

const INITIALIZE_2025: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"paddock-bench-load","version":"1"}}}"#;
const INITIALIZE_2024: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"paddock-bench-load","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"paddock-bench-load","version":"1"}}"#;

/// The text of client `n`'s call `id`: names both, so a reply that reaches the wrong call or
/// client shows.
fn text_of(n: usize, id: u64) -> String {
    format!("client {n} call {id}")
}

fn call_line(n: usize, id: u64, modern: bool) -> String {
    let meta = if modern { format!(",{MODERN_META}") } else { String::new() };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"{}"}}{meta}}}}}"#, text_of(n, id))
}

async fn connect_from(from: IpAddr, to: SocketAddr) -> Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    let stream = timeout(WAIT, socket.connect(to)).await.context("connect timed out")??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// What a reply said about a call.
enum Answer {
    /// The call's own result.
    Served,
    /// Refused as busy (the client may retry).
    Refused,
}

/// Checks one JSON-RPC reply against client `n`'s call `id`.
fn check(n: usize, id: u64, line: &str) -> Result<Answer> {
    let reply: Value = serde_json::from_str(line).with_context(|| format!("not JSON: {}", short(line)))?;
    ensure!(reply["id"].as_u64() == Some(id), "a reply for id {} came for call {id}: {}", reply["id"], short(line));
    if reply["error"]["code"] == -32000 {
        return Ok(Answer::Refused);
    }
    let text = reply["result"]["content"][0]["text"].as_str().with_context(|| format!("not a text result: {}", short(line)))?;
    ensure!(text == text_of(n, id), "call {id} of client {n} was answered with another call's text: {text}");
    Ok(Answer::Served)
}

fn short(text: &str) -> String {
    text.chars().take(300).collect()
}

/// Whether an HTTP status is a refusal for load (busy, spent budget, a client's share).
fn refused_status(status: StatusCode) -> bool {
    status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS
}

impl Client {
    async fn open(kind: Kind, n: usize, addr: SocketAddr, paddock: &str, plugins: &str) -> Result<Client> {
        let from = address_of(n);
        let authority = addr.to_string();
        let channel = match kind {
            Kind::Stdio => {
                let mut child = tokio::process::Command::new(paddock)
                    .args(["serve", plugins])
                    .env("RUST_LOG", "warn")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .kill_on_drop(true)
                    .spawn()
                    .context("start paddock on stdio")?;
                let mut stdin = child.stdin.take().context("stdin")?;
                let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
                stdin.write_all(format!("{INITIALIZE_2025}\n{INITIALIZED}\n").as_bytes()).await?;
                let reply = timeout(WAIT, lines.next_line()).await.context("initialize timed out")??.context("stdout ended")?;
                ensure!(reply.contains("\"protocolVersion\""), "initialize failed: {}", short(&reply));
                Channel::Stdio { child, stdin, lines }
            }
            Kind::Sessions => {
                let mut connection = Connection::over(connect_from(from, addr).await?, authority).await?;
                let reply = connection.post(&[], INITIALIZE_2025.to_owned()).await?;
                ensure!(reply.status == StatusCode::OK, "initialize: {} {}", reply.status, reply.text());
                let session = reply.headers.get("mcp-session-id").context("no Mcp-Session-Id")?.to_str()?.to_owned();
                let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
                let reply = connection.post(&headers, INITIALIZED.to_owned()).await?;
                ensure!(reply.status == StatusCode::ACCEPTED, "notifications/initialized: {} {}", reply.status, reply.text());
                Channel::Sessions { connection, session }
            }
            Kind::Stateless => Channel::Stateless { connection: Connection::over(connect_from(from, addr).await?, authority).await? },
            Kind::Sse => {
                let mut streaming = Connection::over(connect_from(from, addr).await?, authority.clone()).await?;
                let (status, body) = streaming.open_stream("/sse").await?;
                ensure!(status == StatusCode::OK, "GET /sse: {status}");
                let mut stream = SseReader { body, buffer: Vec::new(), _connection: streaming };
                let endpoint = stream.next_event().await?.context("the stream ended before its endpoint")?;
                ensure!(endpoint.starts_with("/messages"), "the first event is not the endpoint: {endpoint}");
                let mut posts = Connection::over(connect_from(from, addr).await?, authority).await?;
                let reply = posts.post_to(&endpoint, &[], INITIALIZE_2024.to_owned()).await?;
                ensure!(reply.status == StatusCode::ACCEPTED, "initialize: {} {}", reply.status, reply.text());
                let initialized = stream.next_message().await?;
                ensure!(initialized.contains("\"protocolVersion\""), "initialize failed: {}", short(&initialized));
                let reply = posts.post_to(&endpoint, &[], INITIALIZED.to_owned()).await?;
                ensure!(reply.status == StatusCode::ACCEPTED, "notifications/initialized: {} {}", reply.status, reply.text());
                Channel::Sse { stream, posts, endpoint }
            }
            Kind::WebSocket => {
                let stream = connect_from(from, addr).await?;
                let mut request = format!("ws://{addr}/ws").into_client_request()?;
                request.headers_mut().insert("sec-websocket-protocol", http::HeaderValue::from_static("mcp"));
                let (mut socket, _) = timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await.context("handshake timed out")??;
                socket.send(Message::text(INITIALIZE_2025)).await?;
                let reply = next_text(&mut socket).await?;
                ensure!(reply.contains("\"protocolVersion\""), "initialize failed: {}", short(&reply));
                socket.send(Message::text(INITIALIZED)).await?;
                Channel::WebSocket { socket }
            }
        };
        Ok(Client { kind, n, channel })
    }

    /// Calls back to back until `stop`, then makes sure nothing more is on its way. Returns the
    /// tally and, for a stdio client, its host's peak RSS in MiB.
    async fn run(mut self, stop: Instant) -> Result<(Kind, Tally, f64)> {
        let mut tally = Tally { clients: 1, ..Tally::default() };
        let mut id = 0u64;
        while Instant::now() < stop {
            id += 1;
            let sent = Instant::now();
            match timeout(WAIT, self.call(id)).await {
                Err(_) => {
                    tally.lost += 1;
                    break;
                }
                Ok(answer) => {
                    match answer? {
                        Answer::Served => tally.calls += 1,
                        Answer::Refused => tally.refused += 1,
                    }
                    tally.latencies_us.push(micros(sent.elapsed()));
                }
            }
        }
        if tally.lost == 0 {
            tally.duplicated += self.nothing_more(id + 1).await?;
        }
        let stdio_peak = match &self.channel {
            Channel::Stdio { child, .. } => child.id().and_then(|pid| crate::measure::peak_rss_mb(pid).ok()).unwrap_or(0.0),
            _ => 0.0,
        };
        let kind = self.kind;
        self.close().await?;
        Ok((kind, tally, stdio_peak))
    }

    /// One call and its answer.
    async fn call(&mut self, id: u64) -> Result<Answer> {
        let n = self.n;
        match &mut self.channel {
            Channel::Stdio { stdin, lines, .. } => {
                stdin.write_all(format!("{}\n", call_line(n, id, false)).as_bytes()).await?;
                let line = lines.next_line().await?.context("stdout ended")?;
                check(n, id, &line)
            }
            Channel::Sessions { connection, session } => {
                let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
                let reply = connection.post(&headers, call_line(n, id, false)).await?;
                one_reply(n, id, &reply)
            }
            Channel::Stateless { connection } => {
                let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "text_echo")];
                let reply = connection.post(&headers, call_line(n, id, true)).await?;
                one_reply(n, id, &reply)
            }
            Channel::Sse { stream, posts, endpoint } => {
                let reply = posts.post_to(endpoint, &[], call_line(n, id, false)).await?;
                if refused_status(reply.status) {
                    return Ok(Answer::Refused);
                }
                ensure!(reply.status == StatusCode::ACCEPTED, "POST {endpoint}: {} {}", reply.status, reply.text());
                let line = stream.next_message().await?;
                check(n, id, &line)
            }
            Channel::WebSocket { socket } => {
                socket.send(Message::text(call_line(n, id, false))).await?;
                let line = next_text(socket).await?;
                check(n, id, &line)
            }
        }
    }

    /// On a stream transport, sends a `ping` with id `last` and reads up to its reply: every
    /// message before it is a duplicate of an answered call. The count of those.
    async fn nothing_more(&mut self, last: u64) -> Result<u64> {
        let ping = format!(r#"{{"jsonrpc":"2.0","id":{last},"method":"ping"}}"#);
        let mut extra = 0;
        let mut sent = false;
        loop {
            let line = match &mut self.channel {
                Channel::Stdio { stdin, lines, .. } => {
                    if !sent {
                        stdin.write_all(format!("{ping}\n").as_bytes()).await?;
                    }
                    timeout(WAIT, lines.next_line()).await.context("no reply to the last ping")??.context("stdout ended")?
                }
                Channel::Sse { stream, posts, endpoint } => {
                    if !sent {
                        let reply = posts.post_to(endpoint, &[], ping.clone()).await?;
                        ensure!(reply.status == StatusCode::ACCEPTED, "the last ping: {}", reply.status);
                    }
                    timeout(WAIT, stream.next_message()).await.context("no reply to the last ping")??
                }
                Channel::WebSocket { socket } => {
                    if !sent {
                        socket.send(Message::text(ping.clone())).await?;
                    }
                    next_text(socket).await?
                }
                Channel::Sessions { .. } | Channel::Stateless { .. } => return Ok(0),
            };
            sent = true;
            let reply: Value = serde_json::from_str(&line)?;
            if reply["id"].as_u64() == Some(last) {
                return Ok(extra);
            }
            extra += 1;
        }
    }

    async fn close(self) -> Result<()> {
        match self.channel {
            Channel::Stdio { mut child, stdin, lines } => {
                drop(stdin);
                drop(lines);
                let status = timeout(WAIT, child.wait()).await.context("a stdio host did not exit once its input ended")??;
                ensure!(status.success(), "a stdio host exited with {status}");
            }
            Channel::WebSocket { mut socket } => {
                let _ = socket.close(None).await;
            }
            Channel::Sessions { .. } | Channel::Stateless { .. } | Channel::Sse { .. } => {}
        }
        Ok(())
    }
}

/// The one reply of an HTTP POST (JSON, or an SSE body with one message).
fn one_reply(n: usize, id: u64, reply: &Reply) -> Result<Answer> {
    if refused_status(reply.status) {
        return Ok(Answer::Refused);
    }
    ensure!(reply.status == StatusCode::OK, "call {id}: {} {}", reply.status, reply.text());
    let event_stream = reply.headers.get(http::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if event_stream {
        let messages: Vec<&str> = sse_messages(&reply.body).collect();
        ensure!(messages.len() == 1, "call {id} was answered {} times in its stream: {}", messages.len(), reply.text());
        check(n, id, messages[0])
    } else {
        check(n, id, std::str::from_utf8(&reply.body)?)
    }
}

/// The next text frame of a WebSocket (pings and pongs skipped).
async fn next_text(socket: &mut tokio_tungstenite::WebSocketStream<TcpStream>) -> Result<String> {
    loop {
        match socket.next().await.context("the server closed the WebSocket")?? {
            Message::Text(text) => return Ok(text.as_str().to_owned()),
            Message::Close(frame) => bail!("the server closed the WebSocket: {frame:?}"),
            _ => {}
        }
    }
}

/// An HTTP+SSE stream read event by event.
struct SseReader {
    body: hyper::body::Incoming,
    buffer: Vec<u8>,
    _connection: Connection,
}

impl SseReader {
    /// The data of the next event that has some (comments and keep-alives skipped); `None` when
    /// the stream ends.
    async fn next_event(&mut self) -> Result<Option<String>> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(event)?;
                let data: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                if !data.is_empty() {
                    return Ok(Some(data.join("\n")));
                }
                continue;
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next JSON-RPC message on the stream.
    async fn next_message(&mut self) -> Result<String> {
        self.next_event().await?.context("the SSE stream ended")
    }
}

/// The report: per transport and in all, with the RSS figures.
pub fn report(figures: &LoadFigures) {
    let clients: usize = figures.tallies.iter().map(|(_, t)| t.clients).sum();
    println!(
        "\n## Load: {clients} clients at once for {:.0} s (opened in {:.1} s)\n\nEach client calls `text_echo` back to back; the HTTP host has `--memory-budget {}MiB`.\n",
        figures.seconds, figures.open_seconds, figures.budget_mib
    );
    println!("| transport | clients | calls answered | refused as busy | lost | duplicated | calls/s | p50 (ms) | p99 (ms) | max (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut all = Tally::default();
    for (kind, tally) in &figures.tallies {
        let mut latencies = tally.latencies_us.clone();
        print_row(kind.label(), tally, &mut latencies, figures.seconds);
        all.add(Tally { latencies_us: latencies, ..*tally });
    }
    let mut latencies = std::mem::take(&mut all.latencies_us);
    print_row("all", &all, &mut latencies, figures.seconds);
    println!(
        "\nThe HTTP host's RSS: {:.0} MiB before the clients opened, {:.0} MiB at the peak (budget {} MiB). Each stdio client's own host: at most {:.0} MiB.",
        figures.rss_before_mb, figures.rss_peak_mb, figures.budget_mib, figures.stdio_rss_peak_mb
    );
    println!(
        "CPU while the clients called ({:.0} s of {:.0} cores): the HTTP host {:.1} s, the stdio hosts together {:.1} s, the harness (every client) {:.1} s.",
        figures.seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        figures.cpu_http_s,
        figures.cpu_stdio_s,
        figures.cpu_harness_s
    );
}

fn print_row(label: &str, tally: &Tally, latencies: &mut [f64], seconds: f64) {
    latencies.sort_by(f64::total_cmp);
    let at = |p: f64| percentile(latencies, p) / 1000.0;
    let max = latencies.last().copied().unwrap_or(0.0) / 1000.0;
    println!(
        "| {label} | {} | {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {max:.1} |",
        tally.clients,
        tally.calls,
        tally.refused,
        tally.lost,
        tally.duplicated,
        (tally.calls + tally.refused) as f64 / seconds,
        at(0.50),
        at(0.99)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_has_every_transport_and_a_twentieth_on_stdio() {
        let kinds: Vec<Kind> = (0..1000).map(|n| kind_of(n, 1000)).collect();
        assert_eq!(kinds.iter().filter(|k| **k == Kind::Stdio).count(), 50);
        for kind in [Kind::Sessions, Kind::Stateless, Kind::Sse, Kind::WebSocket] {
            assert_eq!(kinds.iter().filter(|k| **k == kind).count(), 237 + usize::from(kind == Kind::Sessions || kind == Kind::Stateless), "{kind:?}");
        }
    }

    #[test]
    fn a_reply_with_another_calls_text_or_id_is_caught() {
        assert!(matches!(check(3, 7, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"client 3 call 7"}]}}"#), Ok(Answer::Served)));
        assert!(check(3, 7, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"client 4 call 7"}]}}"#).is_err());
        assert!(check(3, 7, r#"{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"client 3 call 6"}]}}"#).is_err());
        assert!(matches!(check(3, 7, r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"busy"}}"#), Ok(Answer::Refused)));
    }
}
