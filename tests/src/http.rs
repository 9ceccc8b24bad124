//! `paddock serve --http` for end-to-end tests: starts the binary on a free loopback port,
//! learns the address from its log, waits for `/readyz`, keeps its stderr (for assertions on
//! what it logged), and reads SSE bodies event by event.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use crate::{WAIT, paddock_bin, test_cache_dir};

/// The 2026-07-28 `_meta` every stateless request carries.
pub fn modern_meta(capabilities: Value) -> Value {
    serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "paddock-tests", "version": "0"},
    })
}

/// POSTs one 2026-07-28 request (id 7) to `/mcp` with matching headers, plus `extra` headers;
/// `params._meta` is filled in when missing.
pub async fn post_modern(host: &HttpHost, method: &str, mut params: Value, extra: &[(&str, &str)]) -> Result<reqwest::Response> {
    if params.get("_meta").is_none() {
        params["_meta"] = modern_meta(serde_json::json!({"elicitation": {}, "sampling": {}}));
    }
    let name = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(str::to_owned);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("accept", "application/json, text/event-stream".parse()?);
    headers.insert("content-type", "application/json".parse()?);
    headers.insert("mcp-protocol-version", "2026-07-28".parse()?);
    headers.insert("mcp-method", method.parse()?);
    if let Some(name) = name {
        headers.insert("mcp-name", name.parse()?);
    }
    for (key, value) in extra {
        headers.insert(reqwest::header::HeaderName::from_bytes(key.as_bytes())?, value.parse()?);
    }
    let request = reqwest::Client::new().post(host.url("/mcp")).headers(headers);
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    Ok(request.body(body.to_string()).send().await?)
}

/// A running `paddock serve DIR --http 127.0.0.1:0`.
#[derive(Debug)]
pub struct HttpHost {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
    log: Arc<Log>,
}

#[derive(Debug, Default)]
struct Log {
    lines: Mutex<Vec<String>>,
    grew: Notify,
}

impl HttpHost {
    /// Starts the host on a free port with extra arguments and waits until it is ready.
    pub async fn start(dir: &Path, extra: &[&str]) -> Result<HttpHost> {
        HttpHost::start_with_env(dir, extra, &[]).await
    }

    /// As `start`, with extra environment variables.
    pub async fn start_with_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Result<HttpHost> {
        let host = HttpHost::spawn(dir, "127.0.0.1:0", extra, env).await?;
        host.wait_ready().await?;
        Ok(host)
    }

    /// Starts the host and returns once it listens, without waiting for its plugins.
    pub async fn spawn(dir: &Path, addr: &str, extra: &[&str], env: &[(&str, &str)]) -> Result<HttpHost> {
        let mut command = Command::new(paddock_bin());
        command
            .arg("--log-format")
            .arg("json")
            .arg("serve")
            .arg(dir)
            .arg("--http")
            .arg(addr)
            .args(extra)
            .env("PADDOCK_CACHE_DIR", test_cache_dir())
            .env("RUST_LOG", "warn,paddock=debug,plugin=info")
            .env_remove("PADDOCK_HTTP_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().context("spawn paddock serve --http")?;
        let stderr = child.stderr.take().context("stderr")?;
        let log = Arc::new(Log::default());
        let (addr_tx, mut addr_rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn({
            let log = Arc::clone(&log);
            async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(record) = serde_json::from_str::<Value>(&line)
                        && let Some(addr) = record.get("address").and_then(Value::as_str)
                    {
                        let _ = addr_tx.try_send(addr.to_owned());
                    }
                    log.lines.lock().expect("log").push(line);
                    log.grew.notify_waiters();
                }
            }
        });
        let addr = tokio::time::timeout(WAIT, addr_rx.recv()).await.ok().flatten().context("paddock did not report its address")?;
        Ok(HttpHost { child, addr: addr.parse().context("address")?, log })
    }

    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&self) -> Result<()> {
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Ok(response) = client.get(self.url("/readyz")).send().await
                && response.status() == 200
            {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("paddock was not ready in time; log:\n{}", self.log_text());
            }
            // Readiness is polled: the host has no other way to say it finished loading.
            self.wait_log_change(Duration::from_millis(50)).await;
        }
    }

    /// The host's process id (to read its memory and descriptors from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// `http://ADDR` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `ws://ADDR` + `path`.
    pub fn ws_url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    /// Everything logged so far, one record per line.
    pub fn log_text(&self) -> String {
        self.log.lines.lock().expect("log").join("\n")
    }

    async fn wait_log_change(&self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.log.grew.notified()).await;
    }

    /// Waits until a log record contains `needle`.
    pub async fn wait_for_log(&self, needle: &str) -> Result<String> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.log.grew.notified();
            if let Some(line) = self.log.lines.lock().expect("log").iter().find(|l| l.contains(needle)) {
                return Ok(line.clone());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                bail!("no log record contains {needle:?}; log:\n{}", self.log_text());
            }
        }
    }

    /// Waits until `count` log records contain `needle`.
    pub async fn wait_for_logs(&self, needle: &str, count: usize) -> Result<()> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let notified = self.log.grew.notified();
            if self.log.lines.lock().expect("log").iter().filter(|l| l.contains(needle)).count() >= count {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                bail!("fewer than {count} log records contain {needle:?}; log:\n{}", self.log_text());
            }
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) -> Result<()> {
        let pid = self.child.id().context("already exited")?;
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid)?).context("pid")?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).context("kill")?;
        Ok(())
    }

    /// Kills the process at once (SIGKILL) and waits for it.
    pub async fn kill(&mut self) -> Result<()> {
        self.child.kill().await.context("kill")
    }

    /// Waits for the process to exit; its exit code.
    pub async fn exit_code(&mut self, limit: Duration) -> Result<i32> {
        let status = tokio::time::timeout(limit, self.child.wait()).await.context("paddock did not exit in time")??;
        Ok(status.code().unwrap_or(-1))
    }
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    /// The event's data as JSON.
    pub fn json(&self) -> Result<Value> {
        serde_json::from_str(&self.data).with_context(|| format!("event data is not JSON: {:?}", self.data))
    }
}

/// Reads an SSE body event by event.
pub struct EventReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl EventReader {
    /// Reads `response`'s body.
    pub fn new(response: reqwest::Response) -> EventReader {
        EventReader { body: response.bytes_stream().boxed(), buffer: String::new() }
    }

    /// The next event (comments and keep-alives skipped); `None` when the body ends.
    pub async fn next(&mut self) -> Result<Option<Event>> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event::default();
                let mut saw_field = false;
                let mut data: Vec<&str> = Vec::new();
                for line in block.lines() {
                    if line.starts_with(':') || line.is_empty() {
                        continue;
                    }
                    let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
                    saw_field = true;
                    match field {
                        "id" => event.id = Some(value.to_owned()),
                        "event" => event.event = Some(value.to_owned()),
                        "data" => data.push(value),
                        _ => {}
                    }
                }
                event.data = data.join("\n");
                if saw_field {
                    return Ok(Some(event));
                }
                continue;
            }
            let chunk = tokio::time::timeout(WAIT, self.body.next()).await.context("no SSE data in time")?;
            match chunk {
                Some(chunk) => self.buffer.push_str(std::str::from_utf8(chunk?.as_ref()).context("SSE is UTF-8")?),
                None => return Ok(None),
            }
        }
    }

    /// The next event that carries a JSON-RPC message (priming events skipped).
    pub async fn next_message(&mut self) -> Result<Value> {
        loop {
            let event = self.next().await?.context("the stream ended")?;
            if !event.data.is_empty() {
                return event.json();
            }
        }
    }
}
