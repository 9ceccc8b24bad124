//! The HTTP section: `tools/call text_echo {"text":"hello"}` POSTed to `/mcp` over keep-alive
//! HTTP/1.1 connections (hyper 1.x client connections, `TCP_NODELAY`), in both protocol eras,
//! with 16 and with 64 connections each issuing requests back to back.
//!
//! Every connection first runs for a warm-up of a quarter of the window, then for the window
//! (a fixed duration); requests per second count the requests sent inside the window and divide
//! by the time from its start to the last of their replies; p50 and p99 are over every one of
//! those requests. Era 2025-11-25 opens one session per connection (initialize, then
//! `notifications/initialized`) and reads each reply as an SSE body to its end; era 2026-07-28
//! sends stateless requests with the `Mcp-*` headers and `_meta`, answered as JSON. Every reply
//! must be a success, or the run fails.
//!
//! Also the HTTP server processes (Paddock's `serve --http` and `native-echo --http`), which
//! report their bound address as a JSON record on stderr, and the readiness wait on `/readyz`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::time::timeout;

use crate::measure::{micros, p50_p99};
use crate::process::{Process, WAIT};

/// The `Accept` header of every POST: the client takes both reply shapes.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The protocol era of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: a session opened by `initialize`, replies as SSE.
    Sessions,
    /// 2026-07-28: stateless requests, replies as JSON.
    Stateless,
}

impl Era {
    /// The era as the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Era::Sessions => "2025-11-25 (sessions)",
            Era::Stateless => "2026-07-28 (stateless)",
        }
    }
}

/// The measured cases, in report order: era and connections.
pub const CASES: [(Era, usize); 4] = [(Era::Sessions, 16), (Era::Sessions, 64), (Era::Stateless, 16), (Era::Stateless, 64)];

/// The figures of one load: requests per second and latency.
#[derive(Debug, Clone, Default)]
pub struct LoadFigures {
    pub requests_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// The figures of one HTTP round of one server: one [`LoadFigures`] per entry of [`CASES`].
#[derive(Debug, Clone, Default)]
pub struct HttpFigures {
    pub loads: Vec<LoadFigures>,
}

/// A running HTTP server.
pub struct HttpServer {
    process: Process,
    pub addr: SocketAddr,
}

impl HttpServer {
    /// Spawns `command` (which must listen on a loopback port and log `{"address": ...}` on
    /// stderr) and waits until `/readyz` answers 200.
    pub fn start(command: &[String], runtime: &Runtime) -> Result<HttpServer> {
        let process = Process::spawn(command, false)?;
        let addr: SocketAddr = process
            .stderr
            .wait_for(WAIT, |line| serde_json::from_str::<serde_json::Value>(line).ok()?.get("address")?.as_str()?.parse().ok())
            .with_context(|| format!("{} did not report its address", command.join(" ")))?;
        ensure!(addr.ip().is_loopback(), "{} listens on {addr}, not on loopback", command.join(" "));
        let server = HttpServer { process, addr };
        runtime.block_on(server.wait_ready())?;
        Ok(server)
    }

    async fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(mut connection) = Connection::open(self.addr).await
                && let Ok(reply) = connection.get("/readyz").await
                && reply.status == StatusCode::OK
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server at {} was not ready within {WAIT:?}; its stderr ends:\n{}", self.addr, self.process.stderr.tail());
            }
            // Readiness is polled: the server has no other way to say it finished loading.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The last lines of its stderr, for an error message.
    pub fn stderr_tail(&self) -> String {
        self.process.stderr.tail()
    }

    /// Stops the server (SIGTERM, then SIGKILL after a few seconds).
    pub fn stop(self) -> Result<()> {
        self.process.terminate(Duration::from_secs(5))
    }
}

/// A reply read to its end.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The start of the body, for an error message.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).chars().take(500).collect()
    }
}

/// One keep-alive HTTP/1.1 connection.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
}

impl Connection {
    /// Connects to `addr` with `TCP_NODELAY`.
    pub async fn open(addr: SocketAddr) -> Result<Connection> {
        let stream = timeout(WAIT, TcpStream::connect(addr)).await.context("connect timed out")??;
        stream.set_nodelay(true)?;
        let (sender, connection) = timeout(WAIT, hyper::client::conn::http1::handshake(TokioIo::new(stream))).await.context("handshake timed out")??;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection { sender, authority: addr.to_string() })
    }

    /// An HTTP/1.1 connection over `stream`, naming `authority` in its `Host`.
    pub async fn over(stream: TcpStream, authority: String) -> Result<Connection> {
        let (sender, connection) = timeout(WAIT, hyper::client::conn::http1::handshake(TokioIo::new(stream))).await.context("handshake timed out")??;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection { sender, authority })
    }

    /// `GET path`, answered with a body that is read as it comes (an event stream).
    pub async fn open_stream(&mut self, path: &str) -> Result<(StatusCode, hyper::body::Incoming)> {
        let request =
            Request::get(path).header(http::header::HOST, &self.authority).header(http::header::ACCEPT, "text/event-stream").body(Full::new(Bytes::new()))?;
        timeout(WAIT, async {
            self.sender.ready().await?;
            let response = self.sender.send_request(request).await?;
            Ok((response.status(), response.into_body()))
        })
        .await
        .context("no answer in time")?
    }

    /// `GET path`.
    pub async fn get(&mut self, path: &str) -> Result<Reply> {
        let request = Request::get(path).header(http::header::HOST, &self.authority).body(Full::new(Bytes::new()))?;
        self.send(request).await
    }

    /// `POST /mcp` with `headers` and `body`.
    pub async fn post(&mut self, headers: &[(&str, &str)], body: String) -> Result<Reply> {
        self.post_to("/mcp", headers, body).await
    }

    /// `POST path` with `headers` and `body`.
    pub async fn post_to(&mut self, path: &str, headers: &[(&str, &str)], body: String) -> Result<Reply> {
        let mut request = Request::post(path)
            .header(http::header::HOST, &self.authority)
            .header(http::header::ACCEPT, ACCEPT_BOTH)
            .header(http::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Full::new(Bytes::from(body)))?).await
    }

    async fn send(&mut self, request: Request<Full<Bytes>>) -> Result<Reply> {
        timeout(WAIT, async {
            self.sender.ready().await?;
            let response = self.sender.send_request(request).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok(Reply { status: parts.status, headers: parts.headers, body })
        })
        .await
        .context("no reply in time")?
    }
}

/// The JSON-RPC message of an SSE body: the `data:` field that is not empty (a priming event's
/// is).
fn sse_message(body: &[u8]) -> Option<&str> {
    sse_messages(body).next()
}

/// Every JSON-RPC message of an SSE body: the `data:` fields that are not empty.
pub fn sse_messages(body: &[u8]) -> impl Iterator<Item = &str> {
    std::str::from_utf8(body).unwrap_or_default().lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start).filter(|data| !data.is_empty())
}

/// Whether `reply` carries a successful JSON-RPC result, in JSON or as SSE.
fn is_success(reply: &Reply) -> bool {
    if reply.status != StatusCode::OK {
        return false;
    }
    let event_stream = reply.headers.get(http::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let message = if event_stream { sse_message(&reply.body) } else { std::str::from_utf8(&reply.body).ok() };
    message.is_some_and(|m| m.contains("\"result\""))
}

/// A client on one connection, in one era.
pub struct Client {
    connection: Connection,
    era: Era,
    session: Option<String>,
    next_id: u64,
}

impl Client {
    /// Connects, and in era 2025-11-25 opens a session.
    pub async fn open(addr: SocketAddr, era: Era) -> Result<Client> {
        let mut client = Client { connection: Connection::open(addr).await?, era, session: None, next_id: 1 };
        if era == Era::Sessions {
            let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"paddock-bench","version":"1"}}}"#;
            let reply = client.connection.post(&[], initialize.to_owned()).await?;
            ensure!(is_success(&reply), "initialize failed: {} {}", reply.status, reply.text());
            let session = reply.headers.get("mcp-session-id").context("initialize returned no Mcp-Session-Id")?.to_str()?.to_owned();
            let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
            let initialized = client.connection.post(&headers, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()).await?;
            ensure!(initialized.status == StatusCode::ACCEPTED, "notifications/initialized: {} {}", initialized.status, initialized.text());
            client.session = Some(session);
        }
        Ok(client)
    }

    /// One `tools/call text_echo {"text":"hello"}`, which must succeed.
    pub async fn echo(&mut self) -> Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let reply = match (self.era, &self.session) {
            (Era::Sessions, Some(session)) => {
                let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"hello"}}}}}}"#);
                let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
                self.connection.post(&headers, body).await?
            }
            _ => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"hello"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"paddock-bench","version":"1"}}}}}}}}"#
                );
                let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "text_echo")];
                self.connection.post(&headers, body).await?
            }
        };
        ensure!(is_success(&reply), "a call failed ({}): {} {}", self.era.label(), reply.status, reply.text());
        Ok(())
    }
}

/// Requests per second and latency with `connections` clients of `era` issuing requests back
/// to back for `window` (after a warm-up of a quarter of it).
pub async fn load(addr: SocketAddr, era: Era, connections: usize, window: Duration) -> Result<LoadFigures> {
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(Client::open(addr, era).await?);
    }
    let measure_from = Instant::now() + window / 4;
    let stop_at = measure_from + window;
    let mut tasks = tokio::task::JoinSet::new();
    for mut client in clients {
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut last_reply = measure_from;
            loop {
                let sent = Instant::now();
                if sent >= stop_at {
                    break;
                }
                client.echo().await?;
                let replied = Instant::now();
                if sent >= measure_from {
                    latencies.push(micros(replied - sent));
                    last_reply = replied;
                }
            }
            anyhow::Ok((latencies, last_reply))
        });
    }
    let mut latencies = Vec::new();
    let mut last_reply = measure_from;
    while let Some(joined) = timeout(window + WAIT, tasks.join_next()).await.context("a connection did not finish in time")? {
        let (more, last) = joined??;
        latencies.extend(more);
        last_reply = last_reply.max(last);
    }
    let elapsed = (last_reply - measure_from).as_secs_f64();
    ensure!(!latencies.is_empty() && elapsed > 0.0, "no request completed inside the window");
    let requests_per_s = latencies.len() as f64 / elapsed;
    let (p50_us, p99_us) = p50_p99(&mut latencies);
    Ok(LoadFigures { requests_per_s, p50_us, p99_us })
}

/// One HTTP round: both servers running, each case measured on Paddock then on native.
pub fn round(paddock: &[String], native: &[String], runtime: &Runtime, window: Duration) -> Result<[HttpFigures; 2]> {
    let servers =
        [HttpServer::start(paddock, runtime).context("start paddock over HTTP")?, HttpServer::start(native, runtime).context("start native-echo over HTTP")?];
    let mut figures: [HttpFigures; 2] = Default::default();
    for (era, connections) in CASES {
        for (server, figures) in servers.iter().zip(figures.iter_mut()) {
            let measured = runtime
                .block_on(load(server.addr, era, connections, window))
                .with_context(|| format!("{}, {connections} connections; the server's stderr ends:\n{}", era.label(), server.stderr_tail()))?;
            figures.loads.push(measured);
        }
    }
    for server in servers {
        server.stop()?;
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_of_an_sse_body_is_the_first_data_that_is_not_empty() {
        let body = b"id: 2-0\nretry: 1000\ndata: \n\nid: 2-1\nevent: message\ndata: {\"id\":1,\"result\":{}}\n\n";
        assert_eq!(sse_message(body), Some("{\"id\":1,\"result\":{}}"));
        assert_eq!(sse_message(b": keep-alive\n\n"), None);
    }
}
