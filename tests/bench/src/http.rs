//! The HTTP section: `tools/call text_echo {"text":"hello"}` POSTed to `/mcp` over keep-alive
//! HTTP/1.1 connections, in both protocol eras, with 16 and with 64 connections each sending
//! requests back to back.
//!
//! The load comes from `wrk` (`wrk.rs`) bound to a core of its own, with the servers bound to
//! another: a second of warm-up, then the window. Era 2025-11-25 sends each request in one of
//! the sessions the harness opened first (one per connection), and the replies are SSE bodies;
//! era 2026-07-28 sends stateless requests with the `Mcp-*` headers and `_meta`, answered as
//! JSON. Every response must be 2xx, and a call the harness makes itself before and after must
//! succeed. Beside requests per second and latency: the server's CPU per request and the
//! client's share of its core, and the CPU other processes used meanwhile (`machine.rs`).
//!
//! Also the harness's own HTTP client (for sessions, checks, and the other sections), the HTTP
//! server processes (Paddock's `serve --http` and `native-echo --http`), which report their
//! bound address as a JSON record on stderr, and the readiness wait on `/readyz`.

use std::net::SocketAddr;
use std::path::Path;
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

use crate::machine::{self, Cores, Others};
use crate::measure::cpu_ns;
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
    /// Server CPU per request (every thread, over the measured run), in µs.
    pub server_cpu_us: f64,
    /// The load client's CPU over the run, in CPUs.
    pub client_cpu: f64,
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
                let body = SESSION_CALL.replace("{id}", &id.to_string());
                let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
                self.connection.post(&headers, body).await?
            }
            _ => {
                let body = STATELESS_CALL.replace("{id}", &id.to_string());
                let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "text_echo")];
                self.connection.post(&headers, body).await?
            }
        };
        ensure!(is_success(&reply), "a call failed ({}): {} {}", self.era.label(), reply.status, reply.text());
        Ok(())
    }
}

/// The Lua script `wrk` sends: `tools/call text_echo {"text":"hello"}` in `era`; in era
/// 2025-11-25 each request names one of `sessions` in turn and has an id of its own.
fn script(era: Era, sessions: &[String]) -> String {
    let mut script = String::from(
        "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Accept\"] = \"application/json, text/event-stream\"\n",
    );
    match era {
        Era::Stateless => {
            script.push_str("wrk.headers[\"MCP-Protocol-Version\"] = \"2026-07-28\"\nwrk.headers[\"Mcp-Method\"] = \"tools/call\"\nwrk.headers[\"Mcp-Name\"] = \"text_echo\"\n");
            script.push_str(&format!("wrk.body = '{}'\n", STATELESS_CALL.replace("{id}", "1")));
        }
        Era::Sessions => {
            script.push_str("wrk.headers[\"MCP-Protocol-Version\"] = \"2025-11-25\"\nlocal sessions = {");
            for session in sessions {
                script.push_str(&format!("\"{session}\","));
            }
            script.push_str("}\nlocal n = 0\nrequest = function()\n  n = n + 1\n  local session = sessions[(n % #sessions) + 1]\n");
            script.push_str(&format!(
                "  return wrk.format(nil, nil, {{[\"Mcp-Session-Id\"] = session}}, string.format('{}', n))\nend\n",
                SESSION_CALL.replace("{id}", "%d")
            ));
        }
    }
    script
}

/// The 2025-11-25 call, with `{id}` for its id.
const SESSION_CALL: &str = r#"{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{"name":"text_echo","arguments":{"text":"hello"}}}"#;
/// The 2026-07-28 call, with `{id}` for its id.
const STATELESS_CALL: &str = r#"{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{"name":"text_echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"paddock-bench","version":"1"}}}}"#;

/// What an HTTP load needs besides the server: `wrk`, the cores, the window.
pub struct LoadSetup<'a> {
    pub wrk: &'a Path,
    pub cores: Cores,
    pub window: Duration,
}

/// Requests per second, latency and CPU per request with `connections` connections of `era`
/// sending requests back to back from `wrk` for the window (after a second of warm-up). In
/// era 2025-11-25 the harness opens one session per connection first. A call made by the
/// harness before and after checks the replies are right; `wrk` fails the run on any response
/// that is not 2xx.
pub fn load(setup: &LoadSetup<'_>, server: &HttpServer, name: &str, era: Era, connections: usize, runtime: &Runtime) -> Result<LoadFigures> {
    let sessions = runtime.block_on(async {
        let mut sessions = Vec::new();
        if era == Era::Sessions {
            for _ in 0..connections {
                let client = Client::open(server.addr, era).await?;
                sessions.push(client.session.clone().context("a session")?);
            }
        }
        Client::open(server.addr, era).await?.echo().await?;
        anyhow::Ok(sessions)
    })?;
    let script = script(era, &sessions);
    let url = format!("http://{}/mcp", server.addr);
    crate::wrk::run(setup.wrk, &url, &script, connections, 1, setup.cores.client).context("warm-up")?;
    let others = Others::start(&[server.pid()]);
    let cpu_before = cpu_ns(server.pid())?;
    let run = crate::wrk::run(setup.wrk, &url, &script, connections, setup.window.as_secs().max(1), setup.cores.client)?;
    let cpu_after = cpu_ns(server.pid())?;
    machine::record(format!("HTTP, {name}, {}, {connections} connections", era.label()), others.finish());
    runtime.block_on(async { Client::open(server.addr, era).await?.echo().await })?;
    Ok(LoadFigures {
        requests_per_s: run.requests_per_s,
        p50_us: run.p50_us,
        p99_us: run.p99_us,
        server_cpu_us: (cpu_after - cpu_before) as f64 / 1e3 / run.requests as f64,
        client_cpu: run.client_cpu,
    })
}

/// One HTTP round: both servers running on the server core, each case measured on Paddock then
/// on native, with `wrk` on the client core.
pub fn round(paddock: &[String], native: &[String], runtime: &Runtime, setup: &LoadSetup<'_>) -> Result<[HttpFigures; 2]> {
    let servers = machine::on_core(setup.cores.server, || {
        Ok([
            HttpServer::start(paddock, runtime).context("start paddock over HTTP")?,
            HttpServer::start(native, runtime).context("start native-echo over HTTP")?,
        ])
    })?;
    let mut figures: [HttpFigures; 2] = Default::default();
    for (era, connections) in CASES {
        for ((server, figures), name) in servers.iter().zip(figures.iter_mut()).zip(["paddock", "native"]) {
            let measured = load(setup, server, name, era, connections, runtime)
                .with_context(|| format!("{name}, {}, {connections} connections; the server's stderr ends:\n{}", era.label(), server.stderr_tail()))?;
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
