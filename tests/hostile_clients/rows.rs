//! One test per attack, each with its permitted twin: what the attack tries, what the host does
//! instead, and what it holds meanwhile.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use futures::{SinkExt, StreamExt};
use paddock_tests::http::{HttpHost, modern_meta};
use paddock_tests::{PluginDir, WAIT, conformance_plugins, paddock_bin, sample_wasm, test_cache_dir};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{Frame, FrameHeader};

use crate::harness::{
    ATTACKER, BYSTANDER, Baseline, MIB, ONE_AT_A_TIME, PROMPT, bystander_is_served, bystander_is_served_with, connect_from, exchange, modern_post, stalled,
};

fn text_plugin() -> PluginDir {
    PluginDir::new().add("text", &sample_wasm("text"))
}

fn echo_line(id: usize, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "text_echo", "arguments": {"text": text}}}).to_string() + "\n"
}

/// Stdio: a client writes 20,000 calls with 16 KiB replies and reads nothing. The host stops
/// reading once its queue and its in-flight requests are full (the client's writes stall),
/// holds far less than the replies would take, and, once the client reads, answers every
/// request exactly once. Twin: the same calls read as they come are all answered.
#[tokio::test]
async fn replies_never_read_over_stdio_stop_the_reading_and_lose_nothing() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    const CALLS: usize = 20_000;
    let plugins = text_plugin();
    let mut child = tokio::process::Command::new(paddock_bin())
        .arg("serve")
        .arg(plugins.path())
        .env("PADDOCK_CACHE_DIR", test_cache_dir())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().context("pid")?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await?;
    let initialized: Value = serde_json::from_str(&tokio::time::timeout(WAIT, stdout.next_line()).await??.context("reply")?)?;
    ensure!(initialized["result"]["protocolVersion"] == "2025-11-25", "{initialized}");
    // Warm: one call read at once (the permitted twin, and the baseline after start-up).
    stdin.write_all(echo_line(0, "warm").as_bytes()).await?;
    let first: Value = serde_json::from_str(&tokio::time::timeout(WAIT, stdout.next_line()).await??.context("reply")?)?;
    ensure!(first["result"]["content"][0]["text"] == "warm", "{first}");
    let baseline = Baseline::of(pid)?;

    let text = "x".repeat(16 * 1024);
    let written = Arc::new(AtomicUsize::new(0));
    let writer = tokio::spawn({
        let written = Arc::clone(&written);
        async move {
            for id in 1..=CALLS {
                stdin.write_all(echo_line(id, &text).as_bytes()).await?;
                written.store(id, Ordering::SeqCst);
            }
            anyhow::Ok(stdin)
        }
    });
    // Wait until the writes stall: no progress for a whole second.
    let stalled_at = stalled(&written).await?;
    ensure!(stalled_at < CALLS, "the host read all {CALLS} calls while nothing was read: it does not stop reading");
    // Held: the queue (64 MiB at most), 256 replies waiting for room, the pipe; not 20,000 replies.
    baseline.within("stdio, nothing read", 160 * MIB, 8)?;

    // The client reads again: every call is answered once (a refusal is an answer).
    let mut answered: HashMap<u64, usize> = HashMap::new();
    let mut busy = 0;
    while answered.len() < CALLS {
        let line = tokio::time::timeout(WAIT, stdout.next_line()).await.context("a reply in time")??.context("stdout ended")?;
        let reply: Value = serde_json::from_str(&line)?;
        if reply["error"]["code"] == -32000 {
            busy += 1;
        } else {
            ensure!(reply["result"]["content"][0]["text"].as_str().is_some_and(|t| t.len() == text_len()), "{}", &line[..line.len().min(300)]);
        }
        *answered.entry(reply["id"].as_u64().context("id")?).or_default() += 1;
    }
    writer.await??;
    ensure!(answered.values().all(|n| *n == 1), "a call was answered twice");
    // Past 256 in flight a call is refused (an answer too); most are served.
    ensure!(busy < CALLS / 2, "{busy} of {CALLS} calls were refused as busy");
    eprintln!("stdio, nothing read: stalled after {stalled_at} calls; {busy} of {CALLS} refused as busy once the client read again");
    Ok(())
}

fn text_len() -> usize {
    16 * 1024
}

/// HTTP+SSE: a client opens `/sse`, never reads it, and posts 20,000 calls. The posts stall once
/// the session's queue and in-flight requests are full; the host holds a bounded amount, and a
/// bystander is served throughout. Twin: the bystander's own traffic.
#[tokio::test]
async fn replies_never_read_over_http_sse_stall_the_posts_and_hold_a_bounded_amount() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = text_plugin();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    let mut stream = connect_from(ATTACKER, host.addr).await?;
    stream.write_all(b"GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n").await?;
    let mut head = vec![0u8; 4096];
    let n = tokio::time::timeout(WAIT, stream.read(&mut head)).await??;
    let head = String::from_utf8_lossy(&head[..n]).into_owned();
    let endpoint = head.split("data: ").nth(1).and_then(|d| d.lines().next()).context("the endpoint event")?.trim().to_owned();
    // From here on, the stream is never read.
    let text = "y".repeat(16 * 1024);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}});
    let mut posts = connect_from(ATTACKER, host.addr).await?;
    let post =
        |body: String| format!("POST {endpoint} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let mut sent = 0usize;
    let mut stalled = false;
    let mut buffer = vec![0u8; 4096];
    for id in 0..20_000usize {
        let body = if id == 0 { init.to_string() } else { echo_line(id, &text).trim_end().to_owned() };
        posts.write_all(post(body).as_bytes()).await?;
        match tokio::time::timeout(PROMPT, posts.read(&mut buffer)).await {
            Ok(read) => {
                let n = read?;
                ensure!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 202"), "{}", String::from_utf8_lossy(&buffer[..n]));
                sent += 1;
            }
            Err(_) => {
                stalled = true;
                break;
            }
        }
        if id % 500 == 0 {
            bystander_is_served(&host, &format!("after {id} unread calls")).await?;
        }
    }
    ensure!(stalled, "all {sent} posts were taken while the stream was never read");
    ensure!(sent < 2_000, "{sent} posts were taken before the session stopped reading");
    baseline.within("HTTP+SSE, nothing read", 160 * MIB, 16)?;
    bystander_is_served(&host, "while the posts are stalled").await?;
    drop(posts);
    drop(stream);
    bystander_is_served(&host, "after the attacker left").await?;
    Ok(())
}

/// Streamable HTTP, both eras: a client pipelines 20,000 calls with 16 KiB replies on one
/// keep-alive connection and reads none of the answers. The host answers one request of a
/// connection at a time, so once the unread answers fill the socket it stops reading the
/// connection (the client's writes stall); it holds a bounded amount, and a bystander is served
/// during and after. Twin: the bystander's own requests.
#[tokio::test]
async fn replies_never_read_over_streamable_http_stall_the_connection_in_both_eras() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    const CALLS: usize = 20_000;
    let plugins = text_plugin();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    // A 2025-11-25 session to pipeline into.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}}).to_string();
    let mut opening = connect_from(ATTACKER, host.addr).await?;
    opening.write_all(format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{init}", init.len()).as_bytes()).await?;
    let mut head = vec![0u8; 4096];
    let n = tokio::time::timeout(WAIT, opening.read(&mut head)).await??;
    let head = String::from_utf8_lossy(&head[..n]).into_owned();
    let session = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| l[15..].trim().to_owned()))
        .with_context(|| format!("no session in {head}"))?;
    let text = "h".repeat(16 * 1024);
    for era in ["2025-11-25", "2026-07-28"] {
        let baseline = Baseline::of(host.pid())?;
        let mut stream = connect_from(ATTACKER, host.addr).await?;
        let written = Arc::new(AtomicUsize::new(0));
        let (session, text) = (session.clone(), text.clone());
        let writer = tokio::spawn({
            let written = Arc::clone(&written);
            async move {
                for id in 1..=CALLS {
                    let request = if era == "2025-11-25" {
                        let body = echo_line(id, &text);
                        format!(
                            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                    } else {
                        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "text_echo", "arguments": {"text": text}, "_meta": modern_meta(json!({}))}});
                        modern_post("tools/call", &body).replace("Connection: close\r\n", "").replacen(
                            "Mcp-Method: tools/call\r\n",
                            "Mcp-Method: tools/call\r\nMcp-Name: text_echo\r\n",
                            1,
                        )
                    };
                    stream.write_all(request.as_bytes()).await?;
                    written.store(id, Ordering::SeqCst);
                }
                anyhow::Ok(stream)
            }
        });
        let stalled_at = stalled(&written).await?;
        ensure!(stalled_at < CALLS, "{era}: the host read all {CALLS} calls while no answer was read");
        baseline.within(&format!("Streamable HTTP {era}, nothing read"), 64 * MIB, 8)?;
        bystander_is_served(&host, &format!("while a {era} client reads nothing")).await?;
        writer.abort();
        let _ = writer.await;
        bystander_is_served(&host, &format!("after the {era} client left")).await?;
        eprintln!("Streamable HTTP {era}, nothing read: the connection stalled after {stalled_at} calls");
    }
    drop(opening);
    Ok(())
}

/// WebSocket: a client sends 20,000 calls with 16 KiB replies and reads nothing. The host's
/// writer stalls on the socket, the session's queue and in-flight places fill, and the host
/// stops reading the socket (the client's sends stall); it holds a bounded amount, a bystander
/// is served, and once the client reads, every call is answered exactly once.
#[tokio::test]
async fn replies_never_read_over_websocket_stop_the_reading_and_lose_nothing() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    const CALLS: usize = 20_000;
    let plugins = text_plugin();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let stream = connect_from(ATTACKER, host.addr).await?;
    let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
    let (socket, _) = tokio::time::timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await??;
    let (mut sink, mut frames) = socket.split();
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}});
    sink.send(Message::text(init.to_string())).await?;
    let reply = tokio::time::timeout(WAIT, frames.next()).await?.context("closed")??;
    ensure!(reply.to_text()?.contains("protocolVersion"), "{reply:?}");
    let baseline = Baseline::of(host.pid())?;
    let text = "w".repeat(16 * 1024);
    let written = Arc::new(AtomicUsize::new(0));
    let writer = tokio::spawn({
        let written = Arc::clone(&written);
        async move {
            for id in 1..=CALLS {
                sink.send(Message::text(echo_line(id, &text).trim_end().to_owned())).await?;
                written.store(id, Ordering::SeqCst);
            }
            anyhow::Ok(sink)
        }
    });
    let stalled_at = stalled(&written).await?;
    ensure!(stalled_at < CALLS, "the host read all {CALLS} calls while nothing was read");
    baseline.within("WebSocket, nothing read", 160 * MIB, 8)?;
    bystander_is_served(&host, "while the WebSocket client reads nothing").await?;
    let mut answered: HashMap<u64, usize> = HashMap::new();
    while answered.len() < CALLS {
        let frame = tokio::time::timeout(WAIT, frames.next()).await.context("a reply in time")?.context("closed")??;
        let Message::Text(line) = frame else { continue };
        let reply: Value = serde_json::from_str(line.as_str())?;
        *answered.entry(reply["id"].as_u64().context("id")?).or_default() += 1;
    }
    let _sink = writer.await??;
    ensure!(answered.values().all(|n| *n == 1), "a call was answered twice");
    eprintln!("WebSocket, nothing read: stalled after {stalled_at} calls");
    Ok(())
}

/// Replay logs: one client opens 24 Streamable HTTP sessions and in each makes 16 calls with
/// 1 MiB replies, reading them all. Every finished stream is kept for replay (16 per session:
/// 384 MiB in all) only while the memory budget (128 MiB) allows: with less than a quarter left,
/// finished streams are given up first. RSS stays within the budget, a resume of an early
/// stream says it is gone (400), and the bystander is served. Twin: before the pressure, a
/// resume of a finished stream replays its reply.
#[tokio::test]
async fn replay_logs_of_many_sessions_stay_within_the_memory_budget() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = text_plugin().write("paddock.toml", "[plugins.text]\nlimits = { output = \"4MiB\" }\n");
    let host = HttpHost::start(plugins.path(), &["--memory-budget", "128MiB"]).await?;
    let client = reqwest::Client::builder().local_address(ATTACKER.parse::<std::net::IpAddr>()?).build()?;
    let baseline = Baseline::of(host.pid())?;
    let text = "r".repeat(1 << 20);
    let mut first_stream = None;
    for n in 0..24 {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}});
        let opened = client.post(host.url("/mcp")).header("accept", "application/json, text/event-stream").json(&init).send().await?;
        ensure!(opened.status() == 200, "session {n}: {}", opened.status());
        let session = opened.headers().get("mcp-session-id").context("a session id")?.to_str()?.to_owned();
        opened.bytes().await?;
        for id in 1..=16 {
            let reply = tokio::time::timeout(
                WAIT,
                client
                    .post(host.url("/mcp"))
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-session-id", &session)
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(echo_line(id, &text))
                    .send(),
            )
            .await??;
            ensure!(reply.status() == 200, "session {n} call {id}: {}", reply.status());
            let body = tokio::time::timeout(WAIT, reply.text()).await??;
            ensure!(body.len() > text.len(), "session {n} call {id} was not answered in full: {}", &body[..body.len().min(400)]);
            let priming = body.lines().find_map(|l| l.strip_prefix("id:")).context("an event id")?.trim().to_owned();
            if first_stream.is_none() {
                // Twin: with room to spare, the finished stream replays its reply.
                let resumed = client
                    .get(host.url("/mcp"))
                    .header("accept", "text/event-stream")
                    .header("mcp-session-id", &session)
                    .header("mcp-protocol-version", "2025-11-25")
                    .header("last-event-id", &priming)
                    .send()
                    .await?;
                ensure!(resumed.status() == 200, "resume: {}", resumed.status());
                let replayed = tokio::time::timeout(WAIT, resumed.text()).await??;
                ensure!(replayed.contains(&text), "the resumed stream replays the reply");
                first_stream = Some((session.clone(), priming));
            }
        }
        if n % 8 == 7 {
            bystander_is_served(&host, &format!("after {} sessions of 1 MiB replies", n + 1)).await?;
        }
    }
    baseline.within("24 sessions of 16 replies of 1 MiB, all kept for replay were they allowed", 128 * MIB + 64 * MIB, 16)?;
    let (session, priming) = first_stream.context("a first stream")?;
    let resumed = client
        .get(host.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &priming)
        .send()
        .await?;
    ensure!(resumed.status() == 400, "the early stream was given up under pressure: {}", resumed.status());
    let said = resumed.text().await?;
    ensure!(said.contains("gone"), "{said}");
    bystander_is_served(&host, "after the replay logs filled the budget").await?;
    Ok(())
}

/// WebSocket: with `--max-connections 64`, one client opens sockets until refused. Each upgraded
/// socket keeps its slot and its client's share (8 of the 64), so the attacker holds at most 8
/// and the bystander is served; the host's descriptors grow by the sockets it holds, no more.
#[tokio::test]
async fn upgraded_websockets_keep_their_slots_and_one_client_holds_only_its_share() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--max-connections", "64"]).await?;
    let baseline = Baseline::of(host.pid())?;
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..40 {
        let stream = connect_from(ATTACKER, host.addr).await?;
        let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
        match tokio::time::timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await? {
            Ok((socket, _)) => held.push(socket),
            Err(_) => refused += 1,
        }
    }
    ensure!(held.len() == 8, "one client holds {} sockets; its share is 8", held.len());
    ensure!(refused == 32);
    // The sockets held work.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    held[0].send(Message::text(ping.to_string())).await?;
    let reply = tokio::time::timeout(WAIT, held[0].next()).await?.context("closed")??;
    ensure!(reply.to_text()?.contains("\"id\":1"), "{reply:?}");
    bystander_is_served(&host, "while one client holds its whole share of sockets").await?;
    baseline.within("8 sockets held", 64 * MIB, 8 + 4)?;
    drop(held);
    bystander_is_served(&host, "after the sockets closed").await?;
    Ok(())
}

/// Every slot taken, by many clients: `/healthz` and `/readyz` still answer (a reserve of
/// connections kept for them), and an MCP request on such a connection is refused at once.
#[tokio::test]
async fn health_checks_answer_when_every_connection_slot_is_taken() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--max-connections", "16", "--max-connections-per-client", "8"]).await?;
    let mut held = Vec::new();
    for from in ["127.0.0.3", "127.0.0.4"] {
        for _ in 0..8 {
            let stream = connect_from(from, host.addr).await?;
            let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
            let (socket, _) = tokio::time::timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await??;
            held.push(socket);
        }
    }
    let (status, _) =
        tokio::time::timeout(PROMPT, exchange(BYSTANDER, host.addr, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")).await??;
    ensure!(status == 200, "/healthz answered {status}");
    let (status, _) =
        tokio::time::timeout(PROMPT, exchange(BYSTANDER, host.addr, "GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")).await??;
    ensure!(status == 200, "/readyz answered {status}");
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(json!({}))}});
    let (status, body) = tokio::time::timeout(PROMPT, exchange(BYSTANDER, host.addr, &modern_post("server/discover", &discover))).await??;
    ensure!(status == 503, "an MCP request beyond every slot is refused at once: {status} {body}");
    drop(held);
    Ok(())
}

/// Unfinished bodies: connections announce 16 MiB and stop one byte short. Under a 256 MiB
/// budget one client may have an eighth of it (32 MiB) being read: two bodies; the rest are
/// refused at once (429) before a byte of them is read; at the body deadline the unfinished
/// ones get 408 and are closed, and the memory comes back. Twin: a whole body.
/// (The deadline is 5 s so that every body is open before the first is due.)
#[tokio::test]
async fn unfinished_bodies_are_dropped_at_their_deadline_and_their_memory_comes_back() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--memory-budget", "256MiB", "--body-timeout", "5s"]).await?;
    let baseline = Baseline::of(host.pid())?;
    let announced = 16 << 20;
    let chunk = vec![b' '; 1 << 20];
    let mut open = Vec::new();
    let mut refused_at_once = 0;
    for _ in 0..24 {
        let mut stream = connect_from(ATTACKER, host.addr).await?;
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {announced}\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await?;
        // A refusal comes at once, before the body; otherwise send all but the last byte.
        let mut first = [0u8; 12];
        match tokio::time::timeout(Duration::from_millis(100), stream.read(&mut first)).await {
            Ok(Ok(n)) if n > 0 => {
                ensure!(first[..n].starts_with(b"HTTP/1.1 429"), "{}", String::from_utf8_lossy(&first[..n]));
                refused_at_once += 1;
                continue;
            }
            _ => {}
        }
        for _ in 0..15 {
            stream.write_all(&chunk).await?;
        }
        stream.write_all(&chunk[..(1 << 20) - 1]).await?;
        open.push(stream);
    }
    ensure!(open.len() == 2 && refused_at_once == 22, "{} bodies read at once, {refused_at_once} refused", open.len());
    bystander_is_served(&host, "while unfinished bodies are held").await?;
    baseline.within("unfinished bodies", 2 * 16 * MIB + 48 * MIB, 24 + 8)?;
    let peak = crate::harness::rss(host.pid())?;
    // At the deadline: 408, closed.
    for stream in &mut open {
        let mut answer = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut answer)).await??;
        ensure!(answer.starts_with(b"HTTP/1.1 408"), "{}", String::from_utf8_lossy(&answer[..answer.len().min(100)]));
    }
    drop(open);
    // The memory comes back a few seconds later: within 8 MiB of what the host held before the
    // burst, half of one body.
    let back = tokio::time::timeout(WAIT, async {
        loop {
            let rss = crate::harness::rss(host.pid())?;
            if rss <= baseline.rss + 8 * MIB {
                return anyhow::Ok(rss);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .with_context(|| format!("RSS stayed above {} MiB (before: {} MiB, peak {} MiB)", (baseline.rss + 8 * MIB) >> 20, baseline.rss >> 20, peak >> 20))??;
    eprintln!("unfinished bodies: RSS {} MiB before, {} MiB at the peak, {} MiB after", baseline.rss >> 20, peak >> 20, back >> 20);
    // Twin: a whole body is served.
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(json!({}))}});
    let (status, _) = exchange(BYSTANDER, host.addr, &modern_post("server/discover", &discover)).await?;
    ensure!(status == 200);
    Ok(())
}

/// WebSocket: a client starts a message and keeps the connection alive with a pong every 300 ms
/// without ever finishing it. The message deadline (`--body-timeout 1s`) closes the connection
/// with 1008 whatever the pongs. Twin: a message finished within the deadline, pongs between
/// its fragments, is answered.
#[tokio::test]
async fn a_websocket_message_must_finish_in_time_whatever_the_pongs() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--body-timeout", "1s"]).await?;
    let open = || async {
        let stream = connect_from(ATTACKER, host.addr).await?;
        let request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
        anyhow::Ok(tokio::time::timeout(WAIT, tokio_tungstenite::client_async(request, stream)).await??.0)
    };
    let fragment = |opcode: OpCode, fin: bool, payload: &str| {
        let header = FrameHeader { is_final: fin, opcode, ..FrameHeader::default() };
        Message::Frame(Frame::from_payload(header, payload.as_bytes().to_vec().into()))
    };
    // Twin: fragments with pongs between them, finished in time.
    let mut socket = open().await?;
    socket.send(fragment(OpCode::Data(Data::Text), false, r#"{"jsonrpc":"2.0","id":7,"#)).await?;
    socket.send(Message::Pong(Default::default())).await?;
    socket.send(fragment(OpCode::Data(Data::Continue), true, r#""method":"ping"}"#)).await?;
    let reply = tokio::time::timeout(WAIT, socket.next()).await?.context("closed")??;
    ensure!(reply.to_text()?.contains("\"id\":7"), "{reply:?}");

    // Attack: never finished, pongs every 300 ms.
    let mut socket = open().await?;
    socket.send(fragment(OpCode::Data(Data::Text), false, r#"{"jsonrpc":"2.0","id":8,"#)).await?;
    let started = tokio::time::Instant::now();
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            tokio::select! {
                message = socket.next() => match message {
                    Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return None,
                },
                () = tokio::time::sleep(Duration::from_millis(300)) => {
                    if socket.send(Message::Pong(Default::default())).await.is_err() {
                        return None;
                    }
                }
            }
        }
    })
    .await?;
    let took = started.elapsed();
    ensure!(closed == Some(1008), "closed with {closed:?}");
    ensure!(took < Duration::from_secs(5), "the unfinished message was held {took:?}");
    bystander_is_served(&host, "after the unfinished message").await?;
    Ok(())
}

/// Streams: one client opens 80 long-lived streams, `subscriptions/listen` and HTTP+SSE `/sse`
/// in turn, and never reads them. It holds its share (64, of both kinds together); the rest
/// are refused at once with 429; the bystander's listen, `/sse` and other requests are served.
#[tokio::test]
async fn one_client_holds_only_its_share_of_streams() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"_meta": modern_meta(json!({})), "notifications": {"toolsListChanged": true}}});
    let listen = modern_post("subscriptions/listen", &listen).replace("Connection: close\r\n", "");
    let sse = "GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n".to_owned();
    let mut held = Vec::new();
    let mut refused = 0;
    for n in 0..80 {
        let request = if n % 2 == 0 { &listen } else { &sse };
        let mut stream = connect_from(ATTACKER, host.addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut buffer = [0u8; 512];
        let n = tokio::time::timeout(WAIT, stream.read(&mut buffer)).await??;
        let answer = String::from_utf8_lossy(&buffer[..n]);
        if answer.starts_with("HTTP/1.1 429") {
            refused += 1;
        } else {
            ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            held.push(stream);
        }
    }
    ensure!(held.len() == 64 && refused == 16, "held {}, refused {refused}", held.len());
    bystander_is_served(&host, "while one client holds its share of streams").await?;
    for request in [&listen, &sse] {
        let mut bystander = connect_from(BYSTANDER, host.addr).await?;
        bystander.write_all(request.as_bytes()).await?;
        let mut buffer = [0u8; 512];
        let n = tokio::time::timeout(PROMPT, bystander.read(&mut buffer)).await??;
        ensure!(buffer[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buffer[..n]));
    }
    drop(held);
    Ok(())
}

/// Sessions: one client sends 1,024 `initialize`s as fast as it can. It opens its burst (64)
/// and is then refused (429) until its rate allows more; the bystander opens a session at once.
#[tokio::test]
async fn an_initialize_flood_locks_out_only_its_sender() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{init}",
        init.len()
    );
    let mut stream = connect_from(ATTACKER, host.addr).await?;
    let (mut opened, mut limited) = (0, 0);
    let mut buffer = vec![0u8; 8192];
    for _ in 0..1024 {
        stream.write_all(request.as_bytes()).await?;
        let n = tokio::time::timeout(WAIT, stream.read(&mut buffer)).await??;
        let answer = String::from_utf8_lossy(&buffer[..n]);
        if answer.starts_with("HTTP/1.1 429") {
            limited += 1;
        } else {
            ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            opened += 1;
            // An SSE answer may come in several reads: start the next request on a new connection.
            stream = connect_from(ATTACKER, host.addr).await?;
        }
    }
    ensure!(opened <= 128 && limited >= 1024 - 128, "opened {opened}, limited {limited}");
    let bystander = connect_from(BYSTANDER, host.addr).await?;
    let mut bystander = bystander;
    bystander.write_all(request.as_bytes()).await?;
    let n = tokio::time::timeout(PROMPT, bystander.read(&mut buffer)).await??;
    let answer = String::from_utf8_lossy(&buffer[..n]);
    ensure!(answer.starts_with("HTTP/1.1 200") && answer.to_ascii_lowercase().contains("mcp-session-id"), "{answer}");
    Ok(())
}

/// Slow heads: one client opens 200 connections and sends each head one byte at a time. It is
/// held to its share of connections (128 at the defaults); the bystander is served throughout,
/// also when a token is required (heads are read before the token is checked).
#[tokio::test]
async fn slow_heads_hold_only_their_senders_share() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let token = "0123456789abcdef0123456789abcdef";
    let host = HttpHost::start_with_env(plugins.path(), &[], &[("PADDOCK_HTTP_TOKEN", token)]).await?;
    let baseline = Baseline::of(host.pid())?;
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut stream = connect_from(ATTACKER, host.addr).await?;
        stream.write_all(b"P").await?;
        slow.push(stream);
    }
    bystander_is_served_with(&host, "while 200 slow heads are open", Some(token)).await?;
    baseline.within("200 slow heads", 64 * MIB, 200 + 8)?;
    drop(slow);
    Ok(())
}

/// Streams have a lifetime: with `--max-stream-lifetime 1s` a `subscriptions/listen` stream
/// nobody ends is told to close (its closing result, then the end of the stream), so a client
/// cannot hold a stream, and its share, for ever. Twin: the closing result is a normal one.
#[tokio::test]
async fn a_stream_ends_at_its_lifetime_with_its_closing_result() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--max-stream-lifetime", "1s"]).await?;
    let listen = json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": {"_meta": modern_meta(json!({})), "notifications": {"toolsListChanged": true}}});
    let mut stream = connect_from(ATTACKER, host.addr).await?;
    stream.write_all(modern_post("subscriptions/listen", &listen).as_bytes()).await?;
    let started = tokio::time::Instant::now();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut answer)).await??;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&answer);
    ensure!(text.contains("notifications/subscriptions/acknowledged"), "{text}");
    let closing = text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str::<Value>(d).ok()).find(|m| m["id"] == 5);
    ensure!(closing.is_some_and(|c| c.get("result").is_some()), "the stream ended with its closing result: {text}");
    ensure!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "the stream lived {took:?}");
    Ok(())
}

/// Tasks: one client makes 300 calls that become tasks and finish at once, more than the whole
/// store holds (256). It holds at most its quota (64; its own oldest finished tasks make room
/// for its next ones), so the bystander's call still becomes a task; the attacker's first task,
/// evicted, says so when read.
#[tokio::test]
async fn one_clients_finished_tasks_never_stop_another_from_creating_one() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let call = |id: usize| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "t"}, "_meta": modern_meta(capabilities.clone())}});
        modern_post("tools/call", &body).replacen("Mcp-Method: tools/call\r\n", "Mcp-Method: tools/call\r\nMcp-Name: slow_compute\r\n", 1)
    };
    let mut first_task = None;
    let mut calls = tokio::task::JoinSet::new();
    for id in 0..300usize {
        let (addr, request) = (host.addr, call(id));
        calls.spawn(async move { (id, exchange(ATTACKER, addr, &request).await) });
        if calls.len() >= 8 {
            let (id, answer) = calls.join_next().await.context("a call")??;
            let (status, body) = answer?;
            ensure!(status == 200, "call {id}: {status} {body}");
            let reply: Value = serde_json::from_str(&body)?;
            ensure!(reply["result"]["resultType"] == "task" || reply["result"]["resultType"] == "complete", "call {id}: {reply}");
            if id == 0 {
                first_task = reply["result"]["taskId"].as_str().map(str::to_owned);
            }
        }
    }
    while let Some(joined) = calls.join_next().await {
        let (id, answer) = joined?;
        let (status, body) = answer?;
        ensure!(status == 200, "call {id}: {status} {body}");
    }
    let (status, body) = tokio::time::timeout(WAIT, exchange(BYSTANDER, host.addr, &call(1000))).await??;
    let reply: Value = serde_json::from_str(&body)?;
    ensure!(status == 200 && reply["result"]["resultType"] == "task", "the bystander's call did not become a task: {status} {reply}");
    if let Some(task) = first_task {
        let get = json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"taskId": task, "_meta": modern_meta(capabilities.clone())}});
        let request = modern_post("tasks/get", &get).replacen("Mcp-Method: tasks/get\r\n", &format!("Mcp-Method: tasks/get\r\nMcp-Name: {task}\r\n"), 1);
        let (_, body) = exchange(ATTACKER, host.addr, &request).await?;
        let reply: Value = serde_json::from_str(&body)?;
        ensure!(reply["error"]["data"]["evicted"] == true, "the attacker's first task was evicted to make room, and says so: {reply}");
    }
    Ok(())
}
