//! What every hostile-client row shares: the host's memory and descriptors read from `/proc`,
//! and a bystander (another client, on another loopback address) whose `/healthz` and
//! `server/discover` must answer within a second during and after each attack.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_tests::http::{HttpHost, modern_meta};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// How long a bystander's request may take while an attack goes on.
pub const PROMPT: Duration = Duration::from_secs(1);

/// The attacker's address; the bystander comes from another one, so per-client shares tell
/// them apart.
pub const ATTACKER: &str = "127.0.0.1";
pub const BYSTANDER: &str = "127.0.0.2";

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

/// The resident memory of a process, in bytes.
pub fn rss(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("read /proc status")?;
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).context("VmRSS")?.trim().trim_end_matches("kB").trim().parse()?;
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
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Ok((status, body))
}

/// A POST of `body` to `/mcp` with the 2026-07-28 headers.
pub fn modern_post(method: &str, body: &Value) -> String {
    let text = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    )
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
