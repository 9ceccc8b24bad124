//! The `replicas` section: Paddock beside itself, with and without what several replicas share,
//! in one round (these are the costs of the replica layer, on and off; there is no native
//! counterpart). Two replicas share a state key, a plugins folder and a `redis-server` started
//! on a free loopback port (no persistence); a third Paddock runs without a store.
//!
//! - The forward hop: sequential `tools/call text_echo` in a legacy session (JSON replies), sent
//!   to the replica that owns the session and through the other one, which forwards it; the p50
//!   of each, and what the hop adds.
//! - Plain calls with a store configured: sequential 2026-07-28 calls to the replica with
//!   `--store` and to the one without; p50 and the server's CPU per call. A plain call does not
//!   touch the store.
//! - Task creation: `TASK_CONNECTIONS` connections creating 2026-07-28 tasks back to back for the
//!   window (`slow_compute` of the conformance fixture for 0 s, with `--task-after 0s`, so each
//!   call becomes a task at once and ends at once), with the store and without; tasks per
//!   second, each written to the store before its reply (and its end after it).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use tokio::runtime::Runtime;

use crate::http::{Connection, HttpServer};
use crate::measure::{cpu_ns, micros, p50_p99};
use crate::process::{Process, WAIT};

/// Connections creating tasks at once.
pub const TASK_CONNECTIONS: usize = 16;

/// One round's figures.
#[derive(Debug, Clone, Default)]
pub struct ReplicaFigures {
    pub direct_p50_us: f64,
    pub forwarded_p50_us: f64,
    pub plain_store_p50_us: f64,
    pub plain_solo_p50_us: f64,
    pub plain_store_cpu_us: f64,
    pub plain_solo_cpu_us: f64,
    pub tasks_store_per_s: f64,
    pub tasks_solo_per_s: f64,
}

/// A plugins folder serving `text_echo` (the `text` sample) and the conformance fixture's tools.
pub fn plugin_folder(text_wasm: &Path, conformance_wasm: &Path) -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    std::fs::copy(text_wasm, dir.path().join("text.wasm")).context("copy text.wasm")?;
    std::fs::copy(conformance_wasm, dir.path().join("conformance.wasm")).with_context(|| format!("copy {}", conformance_wasm.display()))?;
    std::fs::write(dir.path().join("paddock.toml"), "[plugins.conformance]\nexpose = { prefix = \"\" }\n")?;
    let key = dir.path().join("state.key");
    std::fs::write(&key, [0x42u8; 48])?;
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(dir)
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A `redis-server` on a free loopback port.
fn redis(binary: &Path) -> Result<(Process, u16)> {
    let port = free_port()?;
    let command = [binary.display().to_string(), "--port".into(), port.to_string(), "--bind".into(), "127.0.0.1".into(), "--save".into(), String::new()];
    let process = Process::spawn(&command, false)?;
    let deadline = Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        ensure!(Instant::now() < deadline, "redis-server did not listen in time");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((process, port))
}

/// Sequential calls through `connection`: each reply's latency.
async fn sequential(connection: &mut Connection, headers: &[(&str, &str)], calls: usize, body: impl Fn(usize) -> String) -> Result<Vec<f64>> {
    let mut latencies = Vec::with_capacity(calls);
    for n in 0..calls {
        let sent = Instant::now();
        let reply = connection.post(headers, body(n)).await?;
        ensure!(reply.status == http::StatusCode::OK && reply.text().contains("\"result\""), "a call failed: {} {}", reply.status, reply.text());
        latencies.push(micros(sent.elapsed()));
    }
    Ok(latencies)
}

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"paddock-bench","version":"1"}}"#;

fn modern_echo(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"hello"}},{MODERN_META}}}}}"#)
}

fn modern_task(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow_compute","arguments":{{"seconds":0,"label":"t"}},{MODERN_META}}}}}"#)
}

/// Tasks created per second by `TASK_CONNECTIONS` connections to `addr` over `window`.
async fn task_rate(addr: SocketAddr, window: Duration) -> Result<f64> {
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "slow_compute")];
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..TASK_CONNECTIONS {
        clients.spawn(async move {
            let mut connection = Connection::open(addr).await?;
            let mut created = 0usize;
            while started.elapsed() < window {
                let reply = connection.post(&headers, modern_task(created)).await?;
                ensure!(reply.text().contains("\"resultType\":\"task\""), "not a task: {} {}", reply.status, reply.text());
                created += 1;
            }
            anyhow::Ok(created)
        });
    }
    let mut created = 0;
    while let Some(joined) = tokio::time::timeout(window + WAIT, clients.join_next()).await.context("a connection did not finish in time")? {
        created += joined??;
    }
    Ok(created as f64 / started.elapsed().as_secs_f64())
}

/// One round of the section.
pub fn round(paddock: &str, folder: &Path, redis_server: &Path, runtime: &Runtime, calls: usize, window: Duration) -> Result<ReplicaFigures> {
    let (_redis, redis_port) = redis(redis_server).context("start redis-server")?;
    let store = format!("redis://127.0.0.1:{redis_port}");
    let key = folder.join("state.key").display().to_string();
    let ports = [free_port()?, free_port()?];
    let replica = |index: usize| -> Vec<String> {
        let other = 1 - index;
        let mut command: Vec<String> =
            [paddock, "--log-format", "json", "serve", &folder.display().to_string(), "--http", &format!("127.0.0.1:{}", ports[index])]
                .map(str::to_owned)
                .to_vec();
        command.extend(
            [
                "--replica-id",
                &format!("bench-{index}"),
                "--state-key-file",
                &key,
                "--peer",
                &format!("bench-{other}=http://127.0.0.1:{}", ports[other]),
                "--store",
                &store,
                "--task-after",
                "0s",
            ]
            .map(str::to_owned),
        );
        command
    };
    let owner = HttpServer::start(&replica(0), runtime).context("start replica 0")?;
    let entry = HttpServer::start(&replica(1), runtime).context("start replica 1")?;
    let solo_command: Vec<String> =
        [paddock, "--log-format", "json", "serve", &folder.display().to_string(), "--http", "127.0.0.1:0", "--task-after", "0s"].map(str::to_owned).to_vec();
    let solo = HttpServer::start(&solo_command, runtime).context("start paddock without a store")?;

    let figures = runtime.block_on(async {
        // The forward hop, in one legacy session owned by replica 0.
        let mut to_owner = Connection::open(owner.addr).await?;
        let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"paddock-bench","version":"1"}}}"#;
        let opened = to_owner.post(&[], initialize.to_owned()).await?;
        let session = opened.headers.get("mcp-session-id").context("no session id")?.to_str()?.to_owned();
        let headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
        let legacy_echo = |id: usize| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"text_echo","arguments":{{"text":"hello"}}}}}}"#);
        let mut through_entry = Connection::open(entry.addr).await?;
        sequential(&mut to_owner, &headers, calls / 10, legacy_echo).await?;
        sequential(&mut through_entry, &headers, calls / 10, legacy_echo).await?;
        let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
        // Interleaved in halves, so drift hits both alike.
        for _ in 0..2 {
            direct.extend(sequential(&mut to_owner, &headers, calls / 2, legacy_echo).await?);
            forwarded.extend(sequential(&mut through_entry, &headers, calls / 2, legacy_echo).await?);
        }
        // Plain calls: with a store configured, and without.
        let modern_headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "text_echo")];
        let plain = |addr: SocketAddr, pid: u32| async move {
            let mut connection = Connection::open(addr).await?;
            sequential(&mut connection, &modern_headers, calls / 10, modern_echo).await?;
            let before = cpu_ns(pid)?;
            let mut latencies = sequential(&mut connection, &modern_headers, calls, modern_echo).await?;
            let cpu_us = (cpu_ns(pid)? - before) as f64 / 1000.0 / calls as f64;
            let (p50, _) = p50_p99(&mut latencies);
            anyhow::Ok((p50, cpu_us))
        };
        let (plain_store_p50_us, plain_store_cpu_us) = plain(owner.addr, owner.pid()).await?;
        let (plain_solo_p50_us, plain_solo_cpu_us) = plain(solo.addr, solo.pid()).await?;
        let tasks_store_per_s = task_rate(owner.addr, window).await?;
        let tasks_solo_per_s = task_rate(solo.addr, window).await?;
        let (direct_p50_us, _) = p50_p99(&mut direct);
        let (forwarded_p50_us, _) = p50_p99(&mut forwarded);
        anyhow::Ok(ReplicaFigures {
            direct_p50_us,
            forwarded_p50_us,
            plain_store_p50_us,
            plain_solo_p50_us,
            plain_store_cpu_us,
            plain_solo_cpu_us,
            tasks_store_per_s,
            tasks_solo_per_s,
        })
    })?;
    for server in [owner, entry, solo] {
        server.stop()?;
    }
    Ok(figures)
}

/// `redis-server` on `PATH`, else the Debian package's.
pub fn redis_server() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|dir| dir.join("redis-server")).find(|p| p.is_file()));
    found
        .or_else(|| Some(std::path::PathBuf::from("/usr/bin/redis-server")).filter(|p| p.is_file()))
        .filter(|p| Command::new(p).arg("--version").stdout(Stdio::null()).status().is_ok())
}
