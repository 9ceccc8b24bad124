//! What every hostile-client row shares: the host's memory and descriptors read from `/proc`,
//! and a bystander (another client, on another loopback address) whose `/healthz` and
//! `server/discover` must answer within a second during and after each attack.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{SinkExt, StreamExt};
use paddock_tests::http::{HttpHost, modern_meta};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;

/// How long a bystander's request may take while an attack goes on.
pub const PROMPT: Duration = Duration::from_secs(1);

/// The attacker's address; the bystander comes from another one, so per-client shares tell
/// them apart.
pub const ATTACKER: &str = "127.0.0.1";
pub const BYSTANDER: &str = "127.0.0.2";
/// A client whose session, questions, streams and tasks the attacker reaches for.
pub const VICTIM: &str = "127.0.0.3";

/// Rows run one at a time: each starts its own host and loads it hard.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub const MIB: u64 = 1 << 20;

/// A WebSocket to the host, on a connection of ours.
pub type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

/// Waits until a writer's count of what it sent stops growing for a whole `PROMPT` (the host
/// stopped reading it); the count then. Fails after `WAIT` of growth.
pub async fn stalled(written: &std::sync::atomic::AtomicUsize) -> Result<usize> {
    tokio::time::timeout(paddock_tests::WAIT, async {
        let mut last = usize::MAX;
        loop {
            let now = written.load(std::sync::atomic::Ordering::SeqCst);
            if now == last {
                return now;
            }
            last = now;
            tokio::time::sleep(PROMPT).await;
        }
    })
    .await
    .context("the writes never stalled")
}

/// The anonymous resident memory of a process, in bytes: what it allocated and touched. Pages
/// of its own (200 MB) binary that a code path reads in the first time it runs are file-backed
/// and left out: they are not memory a client made the host hold.
pub fn rss(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("read /proc status")?;
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("RssAnon:")).context("RssAnon")?.trim().trim_end_matches("kB").trim().parse()?;
    Ok(kib * 1024)
}

/// Descriptors a process holds.
pub fn descriptors(pid: u32) -> Result<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd")).context("read /proc fd")?.count())
}

/// What a row measures of the host before its attack, to hold it to afterwards.
pub struct Baseline {
    pub pid: u32,
    pub rss: u64,
    pub fds: usize,
}

impl Baseline {
    pub fn of(pid: u32) -> Result<Baseline> {
        Ok(Baseline { pid, rss: rss(pid)?, fds: descriptors(pid)? })
    }

    /// The host holds at most `extra_rss` bytes and `extra_fds` descriptors more than before.
    pub fn within(&self, what: &str, extra_rss: u64, extra_fds: usize) -> Result<()> {
        let (rss, fds) = (rss(self.pid)?, descriptors(self.pid)?);
        if rss > self.rss + extra_rss {
            bail!("{what}: RSS grew from {} to {} MiB (allowed +{} MiB)", self.rss >> 20, rss >> 20, extra_rss >> 20);
        }
        if fds > self.fds + extra_fds {
            bail!("{what}: descriptors grew from {} to {fds} (allowed +{extra_fds})", self.fds);
        }
        Ok(())
    }
}

/// A TCP connection from `from` (a loopback address) to the host.
pub async fn connect_from(from: &str, to: SocketAddr) -> Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.parse::<IpAddr>()?, 0))?;
    Ok(tokio::time::timeout(PROMPT * 5, socket.connect(to)).await.context("connect in time")??)
}

/// One HTTP/1.1 exchange on a fresh connection from `from`; the status and the body.
pub async fn exchange(from: &str, to: SocketAddr, request: &str) -> Result<(u16, String)> {
    let (status, _, body) = exchange_head(from, to, request).await?;
    Ok((status, body))
}

/// One HTTP/1.1 exchange on a fresh connection from `from`; the status, the head and the body
/// (a chunked body decoded). Without a `Content-Length` the answer runs to the end of the
/// connection (send `Connection: close`).
pub async fn exchange_head(from: &str, to: SocketAddr, request: &str) -> Result<(u16, String, String)> {
    let mut stream = connect_from(from, to).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)));
            if length.is_some_and(|length| body.len() >= length) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).with_context(|| format!("no status in {text:?}"))?;
    let (head, body) = text.split_once("\r\n\r\n").map_or((text.as_str(), ""), |(h, b)| (h, b));
    let chunked = head.lines().any(|l| l.to_ascii_lowercase().replace(' ', "") == "transfer-encoding:chunked");
    let body = if chunked { dechunk(body) } else { body.to_owned() };
    Ok((status, head.to_owned(), body))
}

/// A chunked body's data.
fn dechunk(mut body: &str) -> String {
    let mut data = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        data.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    data
}

/// A header of an answer's head (the first, case-insensitive).
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| l.split_once(':').filter(|(n, _)| n.trim().eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
}

/// The first 300 characters of a text, for a failure's message.
pub fn opening(text: &str) -> String {
    text.chars().take(300).collect()
}

/// The JSON-RPC messages of an SSE body, each with its event id.
pub fn sse_messages(body: &str) -> Vec<(Option<String>, Value)> {
    body.split("\n\n")
        .filter_map(|event| {
            let id = event.lines().find_map(|l| l.strip_prefix("id: ")).map(str::to_owned);
            let data: Vec<&str> = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            serde_json::from_str(&data.join("\n")).ok().map(|message| (id, message))
        })
        .collect()
}

/// A POST of `body` to `/mcp` with the 2026-07-28 headers.
pub fn modern_post(method: &str, body: &Value) -> String {
    modern_post_text(method, &body.to_string())
}

/// As `modern_post`, with the body as it is sent (not necessarily JSON).
pub fn modern_post_text(method: &str, text: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    )
}

/// As `modern_post`, for a method that names its target (`Mcp-Name`: a tool, a task id).
pub fn modern_post_named(method: &str, name: &str, body: &Value) -> String {
    modern_post(method, body).replacen(&format!("Mcp-Method: {method}\r\n"), &format!("Mcp-Method: {method}\r\nMcp-Name: {name}\r\n"), 1)
}

/// A POST of `body` to `/mcp` in a legacy session (`session`; none for `initialize`),
/// accepting `accept` (`application/json` for a JSON answer with a length).
pub fn legacy_post(session: Option<&str>, accept: &str, body: &Value) -> String {
    let text = body.to_string();
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: {accept}\r\nContent-Type: application/json\r\n{session}Connection: close\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    )
}

/// Opens a legacy Streamable HTTP session from `from` at `version` (answered as JSON); its id.
pub async fn legacy_session(from: &str, host: &HttpHost, version: &str) -> Result<String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}});
    let (status, head, body) = exchange_head(from, host.addr, &legacy_post(None, "application/json", &init)).await?;
    if status != 200 || !body.contains(version) {
        bail!("initialize answered {status}: {body}");
    }
    Ok(header(&head, "mcp-session-id").context("no Mcp-Session-Id")?.to_owned())
}

/// A WebSocket to `/ws` from `from`.
pub async fn websocket_from(from: &str, host: &HttpHost) -> Result<Socket> {
    let stream = connect_from(from, host.addr).await?;
    let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
    Ok(tokio::time::timeout(paddock_tests::WAIT, tokio_tungstenite::client_async(request, stream)).await.context("the upgrade in time")??.0)
}

/// A WebSocket from `from` whose legacy session is initialized at `version`, declaring
/// `capabilities`.
pub async fn legacy_websocket(from: &str, host: &HttpHost, version: &str, capabilities: Value) -> Result<Socket> {
    let mut socket = websocket_from(from, host).await?;
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "hostile", "version": "0"}}});
    send_json(&mut socket, &init).await?;
    let reply = reply_to(&mut socket, &json!("init")).await?;
    if reply["result"]["protocolVersion"] != version {
        bail!("initialize answered {reply}");
    }
    send_json(&mut socket, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    Ok(socket)
}

/// Sends one message as a text frame.
pub async fn send_json(socket: &mut Socket, message: &Value) -> Result<()> {
    Ok(socket.send(Message::text(message.to_string())).await?)
}

/// The next JSON message on a socket, within `WAIT` (pings are answered by the library).
pub async fn next_json(socket: &mut Socket) -> Result<Value> {
    loop {
        let frame = tokio::time::timeout(paddock_tests::WAIT, socket.next()).await.context("no frame in time")?.context("the socket closed")??;
        if let Message::Text(text) = frame {
            return Ok(serde_json::from_str(text.as_str())?);
        }
    }
}

/// The reply to request `id`, skipping notifications; a request from the server first is an
/// error (the caller expected none).
pub async fn reply_to(socket: &mut Socket, id: &Value) -> Result<Value> {
    loop {
        let message = next_json(socket).await?;
        match (message.get("method"), message.get("id")) {
            (None, Some(got)) if got == id => return Ok(message),
            (Some(_), None) => {}
            _ => bail!("waiting for the reply to {id}, got {message}"),
        }
    }
}

/// The bystander's checks: `/healthz` and a 2026-07-28 `server/discover`, each answered within
/// `PROMPT`, from its own address.
pub async fn bystander_is_served(host: &HttpHost, when: &str) -> Result<()> {
    bystander_is_served_with(host, when, None).await
}

/// As `bystander_is_served`, with a bearer token on the MCP request.
pub async fn bystander_is_served_with(host: &HttpHost, when: &str, token: Option<&str>) -> Result<()> {
    let started = Instant::now();
    let (status, _) = tokio::time::timeout(PROMPT, exchange(BYSTANDER, host.addr, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"))
        .await
        .with_context(|| format!("{when}: /healthz did not answer within {PROMPT:?}"))??;
    if status != 200 {
        bail!("{when}: /healthz answered {status}");
    }
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(json!({}))}});
    let mut request = modern_post("server/discover", &discover);
    if let Some(token) = token {
        request = request.replacen("Host: localhost\r\n", &format!("Host: localhost\r\nAuthorization: Bearer {token}\r\n"), 1);
    }
    let (status, body) = tokio::time::timeout(PROMPT, exchange(BYSTANDER, host.addr, &request))
        .await
        .with_context(|| format!("{when}: server/discover did not answer within {PROMPT:?}"))??;
    if status != 200 || !body.contains("\"resultType\"") {
        bail!("{when}: server/discover answered {status}: {body}");
    }
    tracing_note(when, started.elapsed());
    Ok(())
}

fn tracing_note(when: &str, took: Duration) {
    eprintln!("bystander served {when} in {took:?}");
}
