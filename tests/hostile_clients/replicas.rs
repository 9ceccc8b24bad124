//! Rows against a replica with peers: a client floods it with session ids it made up (naming a
//! peer, naming the replica itself, moved from one replica to another) and with forwarding
//! headers of its own. No peer is ever dialled for them, every one is refused as it comes, the
//! refusals are logged at most once a second, and the host holds nothing for them. Twin: a real
//! session of the peer, through the same replica, is forwarded and served.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, ensure};
use paddock_tests::conformance_plugins;
use paddock_tests::http::HttpHost;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{ATTACKER, Baseline, MIB, ONE_AT_A_TIME, bystander_is_served, connect_from};

/// Reads one HTTP/1.1 answer with a `Content-Length` body from `stream`; its status.
async fn answer_status(stream: &mut tokio::net::TcpStream) -> Result<u16> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(paddock_tests::WAIT, stream.read(&mut byte)).await??;
        ensure!(n == 1, "the connection closed mid-answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length: usize = head.lines().find_map(|l| l.strip_prefix("content-length:")).map(str::trim).context("a content length")?.parse()?;
    let mut body = vec![0u8; length];
    tokio::time::timeout(paddock_tests::WAIT, stream.read_exact(&mut body)).await??;
    head.split(' ').nth(1).and_then(|s| s.parse().ok()).context("a status")
}

#[tokio::test]
async fn made_up_session_ids_and_forwarding_headers_never_reach_a_peer_and_hold_nothing() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let keys = tempfile::tempdir()?;
    let key = keys.path().join("state.key");
    std::fs::write(&key, [3u8; 48])?;
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let key = key.display().to_string();
    // `paddock-0` is a listener that counts who dials it; `paddock-2` is a real replica.
    let decoy = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let decoy_port = decoy.local_addr()?.port();
    let dialled = Arc::new(AtomicUsize::new(0));
    let counting = tokio::spawn({
        let dialled = Arc::clone(&dialled);
        async move {
            while let Ok((_socket, _)) = decoy.accept().await {
                dialled.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let plugins = conformance_plugins();
    let real = HttpHost::start(plugins.path(), &["--replica-id", "paddock-2", "--state-key-file", &key]).await?;
    let (decoy_peer, real_peer) = (format!("paddock-0=http://127.0.0.1:{decoy_port}"), format!("paddock-2=http://{}", real.addr));
    let host = HttpHost::start(plugins.path(), &["--replica-id", "paddock-1", "--state-key-file", &key, "--peer", &decoy_peer, "--peer", &real_peer]).await?;
    let baseline = Baseline::of(host.pid())?;

    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}}).to_string();
    let request = |session: &str, extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nContent-Type: application/json\r\nMcp-Session-Id: {session}\r\n{extra}Content-Length: {}\r\n\r\n{call}",
            call.len()
        )
    };
    let started = std::time::Instant::now();
    let mut stream = connect_from(ATTACKER, host.addr).await?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
    let (mut not_found, mut forbidden) = (0, 0);
    for n in 0..3000u32 {
        let random: String = format!("{n:043}");
        let (session, extra) = match n % 3 {
            0 => (format!("paddock-0.{random}"), String::new()),
            1 => (format!("paddock-1.{random}"), String::new()),
            _ => (
                format!("paddock-0.{random}"),
                format!("Paddock-Forwarded: v1 from=paddock-0 to=paddock-1 t={now} client=203.0.113.7 mac={}\r\n", "A".repeat(43)),
            ),
        };
        stream.write_all(request(&session, &extra).as_bytes()).await?;
        match answer_status(&mut stream).await? {
            404 => not_found += 1,
            403 => forbidden += 1,
            other => anyhow::bail!("answered {other} to a made-up id"),
        }
    }
    let elapsed = started.elapsed();
    eprintln!("3,000 made-up ids in {elapsed:?}: {not_found} answered 404, {forbidden} 403");
    ensure!(not_found == 2000 && forbidden == 1000, "{not_found} 404, {forbidden} 403");
    ensure!(dialled.load(Ordering::SeqCst) == 0, "a peer was dialled for an id that does not verify");
    let logged = host.log_text().matches("refused a session id").count();
    ensure!(logged as u64 <= elapsed.as_secs() + 2, "{logged} log lines in {elapsed:?}: refusals are logged at most once a second");
    bystander_is_served(&host, "after 3,000 made-up ids").await?;
    baseline.within("3,000 made-up ids", 16 * MIB, 8)?;

    // Twin: a session of the real peer, through the same replica, is forwarded and answered.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "twin", "version": "0"}}});
    let opened = reqwest::Client::new().post(real.url("/mcp")).header("accept", "application/json").body(init.to_string()).send().await?;
    let session = opened.headers()["mcp-session-id"].to_str()?.to_owned();
    let served =
        reqwest::Client::new().post(host.url("/mcp")).header("accept", "application/json").header("mcp-session-id", &session).body(call.clone()).send().await?;
    ensure!(served.status() == 200, "{}", served.status());
    ensure!(dialled.load(Ordering::SeqCst) == 0);
    counting.abort();
    Ok(())
}
