//! Attacks the host already holds, each beside its permitted twin: spellings that would slip
//! past the Host, Origin and token checks, bodies too long or too deep, batches, ping floods,
//! answers, cancellations, resumptions and task reads aimed at another client's session, and
//! sealed input rounds altered or moved. Each row asserts the refusal exactly (status and
//! JSON-RPC code), so it fails if the protection breaks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, ensure};
use futures::{SinkExt, StreamExt};
use paddock_tests::http::{HttpHost, modern_meta};
use paddock_tests::{WAIT, conformance_plugins};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

use crate::harness::{
    ATTACKER, Baseline, MIB, ONE_AT_A_TIME, PROMPT, VICTIM, bystander_is_served, bystander_is_served_with, connect_from, exchange, exchange_head, legacy_post,
    legacy_session, legacy_websocket, modern_post, modern_post_named, modern_post_text, next_json, opening, reply_to, send_json, sse_messages, stalled,
    websocket_from,
};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
/// What a client accepts from a legacy session's POST: both, so a request gets its own stream.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A 2026-07-28 `server/discover` to `target` with exactly `lines` as its other headers (a Host
/// among them, or none).
fn discover_with(target: &str, lines: &[String]) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(json!({}))}}).to_string();
    let mut request = format!("POST {target} HTTP/1.1\r\n");
    for line in lines {
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str(&format!(
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    request
}

/// The JSON of an answer's body.
fn parsed(body: &str) -> Result<Value> {
    serde_json::from_str(body).with_context(|| format!("not JSON: {}", opening(body)))
}

/// Spellings meant to pass the DNS-rebinding and token checks, on a host that requires a token,
/// sent byte for byte: a Host with a name after `]`, userinfo, a port that is not one, twice,
/// outside ASCII, or missing is 400; a Host or request-target authority that only starts like a
/// loopback name is 403; an Origin under a foreign name, `null`, not parseable or of another
/// scheme is 403, and two Origins 400; a token in another case, cut short, extended, after two
/// spaces, under another scheme or header, in the query string, or a wrong token however
/// `bearer` is spelled, is 401 (also on `/sse` and `/ws`). Twins: the right spellings (the
/// host's port, `[::1]`, one trailing dot, a loopback Origin, `bearer` in lower case, spaces
/// around the value, which are not part of it) are served.
#[tokio::test]
async fn host_origin_and_token_bypass_spellings_are_refused_and_the_right_spellings_served() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start_with_env(plugins.path(), &[], &[("PADDOCK_HTTP_TOKEN", TOKEN)]).await?;
    let baseline = Baseline::of(host.pid())?;
    let port = host.addr.port();
    let local = || "Host: localhost".to_owned();
    let bearer = || format!("Authorization: Bearer {TOKEN}");
    let discover = |lines: Vec<String>| discover_with("/mcp", &lines);
    let rows: Vec<(&str, String, u16)> = vec![
        // Host: not one authority.
        ("a name after `]`", discover(vec!["Host: [::1]evil.example.com".into(), bearer()]), 400),
        ("userinfo before a loopback name", discover(vec!["Host: evil.example.com@localhost".into(), bearer()]), 400),
        ("userinfo after a loopback name", discover(vec!["Host: localhost@evil.example.com".into(), bearer()]), 400),
        ("a port that is not one", discover(vec!["Host: localhost:80@evil.example.com".into(), bearer()]), 400),
        ("two Hosts, the loopback one first", discover(vec![local(), "Host: evil.example.com".into(), bearer()]), 400),
        ("the same Host twice", discover(vec![local(), local(), bearer()]), 400),
        ("a Host outside ASCII", discover(vec!["Host: l\u{43e}calhost".into(), bearer()]), 400),
        ("no Host", discover(vec![bearer()]), 400),
        // Host: well formed, not loopback.
        ("a loopback name as a label", discover(vec!["Host: localhost.evil.example.com".into(), bearer()]), 403),
        ("a loopback address as labels", discover(vec!["Host: 127.0.0.1.evil.example.com".into(), bearer()]), 403),
        ("an escaped dot", discover(vec!["Host: localhost%2eevil.example.com".into(), bearer()]), 403),
        ("a foreign Host", discover(vec!["Host: evil.example.com".into(), bearer()]), 403),
        ("a foreign authority in the request target", discover_with("http://evil.example.com/mcp", &[local(), bearer()]), 403),
        // Origin.
        ("an Origin under a foreign name", discover(vec![local(), "Origin: http://localhost.evil.example.com".into(), bearer()]), 403),
        ("Origin null", discover(vec![local(), "Origin: null".into(), bearer()]), 403),
        ("an Origin with a name after `]`", discover(vec![local(), "Origin: http://[::1]evil.example.com".into(), bearer()]), 403),
        ("an Origin with userinfo", discover(vec![local(), "Origin: http://localhost@evil.example.com".into(), bearer()]), 403),
        ("a file Origin", discover(vec![local(), "Origin: file://localhost".into(), bearer()]), 403),
        ("two Origins", discover(vec![local(), "Origin: http://localhost".into(), "Origin: http://evil.example.com".into(), bearer()]), 400),
        // Token.
        ("no token", discover(vec![local()]), 401),
        ("the token in upper case", discover(vec![local(), format!("Authorization: Bearer {}", TOKEN.to_uppercase())]), 401),
        ("a prefix of the token", discover(vec![local(), format!("Authorization: Bearer {}", &TOKEN[..TOKEN.len() - 1])]), 401),
        ("the token and one more character", discover(vec![local(), format!("Authorization: Bearer {TOKEN}0")]), 401),
        ("the token, a space and more", discover(vec![local(), format!("Authorization: Bearer {TOKEN} x")]), 401),
        ("two spaces after Bearer", discover(vec![local(), format!("Authorization: Bearer  {TOKEN}")]), 401),
        ("`bearer` with a wrong token", discover(vec![local(), format!("Authorization: bearer {}", TOKEN.replace('0', "1"))]), 401),
        ("another scheme", discover(vec![local(), format!("Authorization: Basic {TOKEN}")]), 401),
        ("the token without a scheme", discover(vec![local(), format!("Authorization: {TOKEN}")]), 401),
        (
            "the token in other headers",
            discover(vec![local(), format!("X-Api-Key: {TOKEN}"), format!("Cookie: token={TOKEN}"), format!("Proxy-Authorization: Bearer {TOKEN}")]),
            401,
        ),
        ("a wrong token first, the right one second", discover(vec![local(), "Authorization: Bearer wrong-token-0123456789".into(), bearer()]), 401),
        ("the token in the query string", discover_with(&format!("/mcp?access_token={TOKEN}&token={TOKEN}"), &[local()]), 401),
        (
            "the token in the query string of /sse",
            format!("GET /sse?access_token={TOKEN} HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"),
            401,
        ),
        (
            "the token in the query string of /ws",
            format!(
                "GET /ws?access_token={TOKEN} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            ),
            401,
        ),
        // Twins.
        ("the right spelling", discover(vec![local(), bearer()]), 200),
        ("the host's own port", discover(vec![format!("Host: localhost:{port}"), bearer()]), 200),
        ("IPv6 loopback", discover(vec![format!("Host: [::1]:{port}"), bearer()]), 200),
        ("a loopback address", discover(vec![format!("Host: 127.0.0.1:{port}"), bearer()]), 200),
        ("one trailing dot", discover(vec!["Host: localhost.".into(), bearer()]), 200),
        ("a loopback Origin", discover(vec![local(), "Origin: http://localhost:5173".into(), bearer()]), 200),
        ("`bearer` in lower case", discover(vec![local(), format!("authorization: bearer {TOKEN}")]), 200),
        ("spaces around the value", discover(vec![local(), format!("Authorization:   Bearer {TOKEN} \t")]), 200),
        ("the loopback authority in the request target", discover_with(&format!("http://localhost:{port}/mcp"), &[local(), bearer()]), 200),
    ];
    for (n, (what, request, status)) in rows.iter().enumerate() {
        let (got, body) =
            tokio::time::timeout(PROMPT * 5, exchange(ATTACKER, host.addr, request)).await.with_context(|| format!("{what}: no answer in time"))??;
        ensure!(got == *status, "{what}: answered {got}, not {status}: {body}");
        ensure!((got == 200) == body.contains("\"resultType\""), "{what}: {body}");
        if n == rows.len() / 2 {
            bystander_is_served_with(&host, "between the bypass spellings", Some(TOKEN)).await?;
        }
    }
    baseline.within("bypass spellings", 32 * MIB, 8)?;
    bystander_is_served_with(&host, "after the bypass spellings", Some(TOKEN)).await?;
    Ok(())
}

/// Bodies too long or too deep. A chunked `POST /mcp` (no length announced) that grows past the
/// 16 MiB body cap is answered 413 as it crosses it, and the host holds none of it afterwards.
/// 100,000 nested arrays, 50,000 nested objects, and a call whose arguments nest 100,000 deep
/// are each a parse error (400, −32700) rather than a stack overflow; over a WebSocket the same
/// is −32700 (the recursion limit) and the socket goes on. Twins: a small chunked request is
/// served, and one whose params nest 64 deep is parsed and served.
#[tokio::test]
async fn chunked_bodies_past_the_cap_and_deeply_nested_json_are_refused_and_the_host_serves_on() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    let head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nTransfer-Encoding: chunked\r\n";

    // Twin: a small chunked request, in two chunks.
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(json!({}))}}).to_string();
    let (first, second) = discover.split_at(discover.len() / 2);
    let small = format!("{head}Connection: close\r\n\r\n{:x}\r\n{first}\r\n{:x}\r\n{second}\r\n0\r\n\r\n", first.len(), second.len());
    let (status, body) = exchange(ATTACKER, host.addr, &small).await?;
    ensure!(status == 200 && body.contains("\"resultType\""), "a small chunked request: {status} {body}");

    // Attack: 64 KiB chunks until 17 MiB, never announced; the answer is read meanwhile.
    let stream = connect_from(ATTACKER, host.addr).await?;
    let (mut reader, mut writer) = stream.into_split();
    writer.write_all(format!("{head}\r\n").as_bytes()).await?;
    let sending = tokio::spawn(async move {
        let chunk = [b' '; 64 * 1024];
        let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
        frame.extend_from_slice(&chunk);
        frame.extend_from_slice(b"\r\n");
        let mut sent = 0usize;
        while sent < 17 << 20 {
            if writer.write_all(&frame).await.is_err() {
                return sent;
            }
            sent += chunk.len();
        }
        let _ = writer.write_all(b"0\r\n\r\n").await;
        sent
    });
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, async {
        let mut buffer = [0u8; 4096];
        // The host may reset the connection once it has answered: what was read is the answer.
        while let Ok(n) = reader.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
        }
    })
    .await
    .context("the connection of the chunked body never ended")?;
    let sent = sending.await?;
    let answer = String::from_utf8_lossy(&answer);
    ensure!(answer.starts_with("HTTP/1.1 413"), "a chunked body past the cap (sent {} MiB): {}", sent >> 20, opening(&answer));
    bystander_is_served(&host, "after a chunked body past the cap").await?;
    // The host held at most the cap while reading, and gives it back (its allocator returns
    // freed memory once a second).
    baseline.within("a chunked body past the cap", 48 * MIB, 8)?;
    tokio::time::timeout(WAIT, async {
        while crate::harness::rss(host.pid())? > baseline.rss + 8 * MIB {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        anyhow::Ok(())
    })
    .await
    .context("the host kept the chunked body's memory")??;

    // Attack: nesting. Each is a parse error over HTTP.
    let arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let objects = format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
    let arguments = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"greet","arguments":{{"name":{arrays}}},"_meta":{}}}}}"#,
        modern_meta(json!({}))
    );
    for (what, text) in [("100,000 nested arrays", &arrays), ("50,000 nested objects", &objects), ("arguments nested 100,000 deep", &arguments)] {
        let request = modern_post_text("tools/call", text).replacen("Mcp-Method: tools/call\r\n", "Mcp-Method: tools/call\r\nMcp-Name: greet\r\n", 1);
        let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &request)).await??;
        ensure!(status == 400 && parsed(&body)?["error"]["code"] == -32700, "{what}: {status} {body}");
    }
    bystander_is_served(&host, "after deeply nested bodies").await?;
    // Over a WebSocket: the recursion limit, and the socket goes on.
    let mut socket = websocket_from(ATTACKER, &host).await?;
    for text in [&arrays, &objects, &arguments] {
        socket.send(Message::text(text.clone())).await?;
        let reply = next_json(&mut socket).await?;
        ensure!(reply["error"]["code"] == -32700 && reply["error"]["message"].as_str().is_some_and(|m| m.contains("recursion limit")), "{reply}");
    }
    send_json(&mut socket, &json!({"jsonrpc": "2.0", "id": "after", "method": "ping"})).await?;
    ensure!(reply_to(&mut socket, &json!("after")).await?["result"] == json!({}));

    // Twin: params nested 64 deep are parsed.
    let nested = format!("{}{}", "[".repeat(64), "]".repeat(64));
    let twin = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"nested":{nested},"_meta":{}}}}}"#, modern_meta(json!({})));
    let (status, body) = exchange(ATTACKER, host.addr, &modern_post_text("server/discover", &twin)).await?;
    ensure!(status == 200 && body.contains("\"resultType\""), "params nested 64 deep: {status} {body}");
    baseline.within("deeply nested bodies", 48 * MIB, 8)?;
    Ok(())
}

/// Bodies that are small as text and huge as parsed values: 15.6 MiB of `{"a":1}` objects
/// (two million of them) would take over a gigabyte once parsed. Their cost is counted before
/// any parse: over HTTP the body is refused with 413 naming what it would take, over a
/// WebSocket the message gets −32600 and the socket goes on, and the host's memory does not
/// move. Under a 256 MiB budget a body that would take 40 MiB, within the 64 MiB any message
/// may take but past the client's eighth of the budget (32 MiB), is refused with 429. Twin:
/// the same request with 10,000 objects (6 MiB once parsed) is served.
#[tokio::test]
async fn bodies_that_would_parse_to_far_more_than_their_size_are_refused_unparsed() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--memory-budget", "256MiB"]).await?;
    let baseline = Baseline::of(host.pid())?;
    let meta = modern_meta(json!({})).to_string();
    let discover_with = |objects: usize| {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"_meta":{meta},"junk":[{}]}}}}"#, vec![r#"{"a":1}"#; objects].join(","))
    };
    // Twin.
    let (status, body) = exchange(ATTACKER, host.addr, &modern_post_text("server/discover", &discover_with(10_000))).await?;
    ensure!(status == 200 && body.contains("\"resultType\""), "10,000 small objects: {status} {body}");
    // Two million: refused before a parse, whatever the budget.
    let huge = discover_with(2_000_000);
    ensure!(huge.len() < 16 << 20, "within the body cap: {}", huge.len());
    let (status, body) = exchange(ATTACKER, host.addr, &modern_post_text("server/discover", &huge)).await?;
    ensure!(status == 413 && body.contains("MiB to parse"), "two million small objects: {status} {body}");
    baseline.within("a body that would parse to a gigabyte", 48 * MIB, 8)?;
    // Sixty thousand (about 40 MiB parsed): past this client's share of the budget.
    let (status, body) = exchange(ATTACKER, host.addr, &modern_post_text("server/discover", &discover_with(60_000))).await?;
    ensure!(status == 429, "sixty thousand small objects under a 256 MiB budget: {status} {body}");
    // The same over a WebSocket: an error reply, and the socket serves on.
    let mut socket = websocket_from(ATTACKER, &host).await?;
    socket.send(Message::text(huge)).await?;
    let refused = next_json(&mut socket).await?;
    ensure!(refused["error"]["code"] == -32600 && refused["error"]["message"].as_str().is_some_and(|m| m.contains("MiB to parse")), "{refused}");
    send_json(&mut socket, &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await?;
    ensure!(reply_to(&mut socket, &json!(2)).await?["result"] == json!({}));
    baseline.within("a WebSocket message that would parse to a gigabyte", 48 * MIB, 8)?;
    bystander_is_served(&host, "after bodies that would parse to a gigabyte").await?;
    Ok(())
}

/// Batches. Only a 2025-03-26 session takes them (that revision requires it); a 2026-07-28
/// request or a 2025-11-25 session's POST that is a batch of 20,000 is one invalid request,
/// −32600, answered at once (400 and 200). In a 2025-03-26 session a batch of 20,000 pings,
/// bounded by the body cap, is answered with one array in which every ping is answered once,
/// the host's memory stays within a bound, and a bystander is served meanwhile. Twin: a small
/// batch (a ping, a call, a notification) is answered with an array of its two replies.
#[tokio::test]
async fn a_batch_of_twenty_thousand_is_refused_outside_2025_03_26_and_answered_once_each_within_it() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    const PINGS: usize = 20_000;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let session = legacy_session(ATTACKER, &host, "2025-03-26").await?;
    let baseline = Baseline::of(host.pid())?;

    // Twin: a small batch.
    let small = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "batch"}}},
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
    ]);
    let (status, body) = exchange(ATTACKER, host.addr, &legacy_post(Some(&session), "application/json", &small)).await?;
    let replies = parsed(&body)?;
    ensure!(status == 200 && replies.as_array().is_some_and(|r| r.len() == 2), "a small batch: {status} {body}");
    let by_id = |id: u64| replies.as_array().and_then(|r| r.iter().find(|m| m["id"] == id)).cloned().unwrap_or_default();
    ensure!(by_id(1)["result"] == json!({}) && by_id(2)["result"]["content"][0]["text"] == "Hello, batch!", "{replies}");

    let batch = Value::Array((0..PINGS).map(|n| json!({"jsonrpc": "2.0", "id": n, "method": "ping"})).collect());
    // Refused where batches are not part of the revision, whatever their length.
    let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &modern_post("ping", &batch))).await??;
    let refusal = parsed(&body)?;
    ensure!(
        status == 400 && refusal["error"]["code"] == -32600 && refusal["error"]["message"].as_str().is_some_and(|m| m.contains("2025-03-26")),
        "a 2026-07-28 batch: {status} {body}"
    );
    let newer = legacy_session(ATTACKER, &host, "2025-11-25").await?;
    let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &legacy_post(Some(&newer), "application/json", &batch))).await??;
    ensure!(status == 200 && parsed(&body)?["error"]["code"] == -32600, "a 2025-11-25 batch: {status} {body}");

    // Attack: 20,000 pings in one 2025-03-26 batch, a bystander served meanwhile.
    let request = legacy_post(Some(&session), "application/json", &batch);
    let started = tokio::time::Instant::now();
    let answer = tokio::spawn({
        let addr = host.addr;
        async move { tokio::time::timeout(WAIT, exchange(ATTACKER, addr, &request)).await }
    });
    bystander_is_served(&host, "while a batch of 20,000 is answered").await?;
    let (status, body) = answer.await???;
    let took = started.elapsed();
    ensure!(status == 200, "the batch: {status} {}", opening(&body));
    let replies = parsed(&body)?;
    let replies = replies.as_array().context("one array for the batch")?;
    ensure!(replies.len() == PINGS, "{} replies to {PINGS} pings", replies.len());
    let ids: HashSet<u64> = replies.iter().filter(|r| r["result"] == json!({})).filter_map(|r| r["id"].as_u64()).collect();
    ensure!(ids.len() == PINGS, "{} distinct pings answered, of {PINGS}", ids.len());
    baseline.within("a batch of 20,000", 64 * MIB, 8)?;
    bystander_is_served(&host, "after a batch of 20,000").await?;
    eprintln!("a batch of {PINGS} pings ({} KiB) answered in {took:?}", batch.to_string().len() >> 10);
    Ok(())
}

/// WebSocket: one client sends 50,000 pings as fast as it can and reads nothing (ids of 1 KiB,
/// so the replies cannot all wait in the sockets' buffers). The host's writer stalls, the
/// session's queue fills, and the host stops reading the socket: the client's sends stall,
/// the host holds a bounded amount, and the bystander is served. Once the client reads, every
/// ping is answered exactly once. Twin: a ping read at once is answered.
#[tokio::test]
async fn a_ping_flood_never_read_stops_the_reading_and_every_ping_is_answered_once() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    const PINGS: usize = 50_000;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut socket = legacy_websocket(ATTACKER, &host, "2025-11-25", json!({})).await?;
    send_json(&mut socket, &json!({"jsonrpc": "2.0", "id": "twin", "method": "ping"})).await?;
    ensure!(reply_to(&mut socket, &json!("twin")).await?["result"] == json!({}));
    let baseline = Baseline::of(host.pid())?;
    let (mut sink, mut frames) = socket.split();
    let written = Arc::new(AtomicUsize::new(0));
    let writer = tokio::spawn({
        let written = Arc::clone(&written);
        async move {
            let pad = "p".repeat(1024);
            for n in 0..PINGS {
                sink.send(Message::text(json!({"jsonrpc": "2.0", "id": format!("{n}-{pad}"), "method": "ping"}).to_string())).await?;
                written.store(n + 1, Ordering::SeqCst);
            }
            anyhow::Ok(sink)
        }
    });
    let stalled_at = stalled(&written).await?;
    ensure!(stalled_at < PINGS, "the host read all {PINGS} pings while nothing was read");
    baseline.within("pings never read", 64 * MIB, 8)?;
    bystander_is_served(&host, "while the pings are not read").await?;
    let mut answered: HashMap<usize, usize> = HashMap::new();
    while answered.len() < PINGS {
        let frame = tokio::time::timeout(WAIT, frames.next()).await.context("a reply in time")?.context("closed")??;
        let Message::Text(text) = frame else { continue };
        let reply: Value = serde_json::from_str(text.as_str())?;
        ensure!(reply["result"] == json!({}), "{}", opening(text.as_str()));
        let n = reply["id"].as_str().and_then(|id| id.split_once('-')).and_then(|(n, _)| n.parse().ok()).context("the ping's id")?;
        *answered.entry(n).or_default() += 1;
    }
    let _sink = writer.await??;
    ensure!(answered.values().all(|n| *n == 1), "a ping was answered twice");
    bystander_is_served(&host, "after the ping flood").await?;
    eprintln!("ping flood: the host stopped reading after {stalled_at} of {PINGS} pings");
    Ok(())
}

/// Answers to questions the host never asked the sender. The host asks the victim (its own
/// WebSocket session) for input (`elicitation/create`); the attacker, on its own session, sends
/// a response with the same id, an error for it, and 10,000 responses with ids it was never
/// asked, and posts the same response over HTTP (a 2026-07-28 message, and in a legacy session
/// of its own). Each is ignored: no reply on the socket, 202 over HTTP; a response is routed
/// only within the session that asked, so the victim's question still waits and the victim's
/// own answer is the one its call gets. Sessions are reached only by their unguessable ids: a
/// made-up id, or the victim's with one digit changed, is 404 for POST, GET and DELETE. Twins:
/// the victim's own answer completes its call, and its own session id is served.
#[tokio::test]
async fn answers_to_another_sessions_questions_and_made_up_session_ids_reach_nothing() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    let mut victim = legacy_websocket(VICTIM, &host, "2025-11-25", json!({"elicitation": {}})).await?;
    send_json(
        &mut victim,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {"message": "Who are you?"}}}),
    )
    .await?;
    let question = next_json(&mut victim).await?;
    ensure!(question["method"] == "elicitation/create", "{question}");
    let asked = question["id"].clone();

    let mut attacker = legacy_websocket(ATTACKER, &host, "2025-11-25", json!({"elicitation": {}})).await?;
    let forged = |id: Value| json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"username": "mallory", "email": "mallory@evil.example.com"}}});
    send_json(&mut attacker, &forged(asked.clone())).await?;
    send_json(&mut attacker, &json!({"jsonrpc": "2.0", "id": asked, "error": {"code": -1, "message": "declined"}})).await?;
    for n in 0..5_000u64 {
        send_json(&mut attacker, &forged(json!(format!("paddock-{n}")))).await?;
        send_json(&mut attacker, &forged(json!(n))).await?;
    }
    // The attacker's frames are handled in order: its ping's reply comes after all of them, and
    // nothing else comes before it.
    send_json(&mut attacker, &json!({"jsonrpc": "2.0", "id": "after", "method": "ping"})).await?;
    ensure!(reply_to(&mut attacker, &json!("after")).await?["result"] == json!({}));
    let (status, body) = exchange(ATTACKER, host.addr, &modern_post("notifications/message", &forged(asked.clone()))).await?;
    ensure!(status == 202, "a 2026-07-28 response to no question: {status} {body}");
    let own = legacy_session(ATTACKER, &host, "2025-11-25").await?;
    let (status, body) = exchange(ATTACKER, host.addr, &legacy_post(Some(&own), ACCEPT_BOTH, &forged(asked.clone()))).await?;
    ensure!(status == 202, "a legacy session's response to no question: {status} {body}");
    bystander_is_served(&host, "after 10,000 answers to no question").await?;

    // Twin: the victim's own answer is the one its call gets.
    send_json(&mut victim, &json!({"jsonrpc": "2.0", "id": asked, "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}}))
        .await?;
    let reply = reply_to(&mut victim, &json!(1)).await?;
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    ensure!(text.contains("ada@example.com") && !text.contains("mallory"), "{reply}");

    // Sessions: only their own ids reach them.
    let session = legacy_session(VICTIM, &host, "2025-11-25").await?;
    let last = session.chars().last().context("an id")?;
    let altered = format!("{}{}", &session[..session.len() - 1], if last == '0' { '1' } else { '0' });
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    for id in ["0123456789abcdef0123456789abcdef", altered.as_str(), session.to_uppercase().as_str()] {
        let (status, body) = exchange(ATTACKER, host.addr, &legacy_post(Some(id), "application/json", &ping)).await?;
        ensure!(status == 404, "POST with session {id}: {status} {body}");
        let get = format!("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\nConnection: close\r\n\r\n");
        let (status, body) = exchange(ATTACKER, host.addr, &get).await?;
        ensure!(status == 404, "GET with session {id}: {status} {body}");
        let (status, body) = exchange(ATTACKER, host.addr, &get.replacen("GET", "DELETE", 1)).await?;
        ensure!(status == 404, "DELETE with session {id}: {status} {body}");
    }
    let (status, body) = exchange(VICTIM, host.addr, &legacy_post(Some(&session), "application/json", &ping)).await?;
    ensure!(status == 200 && parsed(&body)?["result"] == json!({}), "the victim's own session: {status} {body}");
    baseline.within("10,000 answers to no question", 32 * MIB, 16)?;
    bystander_is_served(&host, "after the made-up session ids").await?;
    Ok(())
}

/// Cancellations of requests the sender never made. The victim (its own WebSocket session) has
/// two calls running, ids 42 and 43; the attacker, on its own session, sends
/// `notifications/cancelled` for 42 and 43 and for 20,000 ids it never used, as fast as it can,
/// and posts the same cancellations over HTTP (a 2026-07-28 message, and in a legacy session of
/// its own). A cancellation reaches only its own session's requests: each is ignored (no reply,
/// 202), the host's memory stays within a bound, and both of the victim's calls finish with
/// their results. Twin: the victim's own cancellation of its call 44 stops it, with no reply.
#[tokio::test]
async fn cancellations_of_another_sessions_requests_change_nothing_and_a_flood_of_them_is_bounded() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    let mut victim = legacy_websocket(VICTIM, &host, "2025-11-25", json!({})).await?;
    let call = |id: u64, seconds: f64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": seconds, "label": format!("call {id}")}}});
    send_json(&mut victim, &call(42, 1.0)).await?;
    send_json(&mut victim, &call(43, 1.0)).await?;
    host.wait_for_logs("request admitted", 2).await?;

    let cancel = |id: Value| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "not yours"}});
    let mut attacker = legacy_websocket(ATTACKER, &host, "2025-11-25", json!({})).await?;
    send_json(&mut attacker, &cancel(json!(42))).await?;
    send_json(&mut attacker, &cancel(json!(43))).await?;
    for n in 0..10_000u64 {
        send_json(&mut attacker, &cancel(json!(1_000 + n))).await?;
        send_json(&mut attacker, &cancel(json!(format!("never-{n}")))).await?;
    }
    send_json(&mut attacker, &json!({"jsonrpc": "2.0", "id": "after", "method": "ping"})).await?;
    ensure!(reply_to(&mut attacker, &json!("after")).await?["result"] == json!({}), "the attacker's cancellations got replies");
    let mut modern = cancel(json!(42));
    modern["params"]["_meta"] = modern_meta(json!({}));
    let (status, body) = exchange(ATTACKER, host.addr, &modern_post("notifications/cancelled", &modern)).await?;
    ensure!(status == 202, "a 2026-07-28 cancellation: {status} {body}");
    let own = legacy_session(ATTACKER, &host, "2025-11-25").await?;
    let (status, body) = exchange(ATTACKER, host.addr, &legacy_post(Some(&own), ACCEPT_BOTH, &cancel(json!(43)))).await?;
    ensure!(status == 202, "a legacy session's cancellation: {status} {body}");
    bystander_is_served(&host, "after 20,000 foreign cancellations").await?;
    baseline.within("20,000 foreign cancellations", 32 * MIB, 16)?;

    // Both calls finish: nothing the attacker sent cancelled them.
    let mut finished = HashSet::new();
    while finished.len() < 2 {
        let reply = next_json(&mut victim).await?;
        let id = reply["id"].as_u64().with_context(|| format!("a reply: {reply}"))?;
        ensure!(reply["result"]["content"][0]["text"] == format!("call {id}: computed in 1 s"), "{reply}");
        finished.insert(id);
    }
    ensure!(finished == HashSet::from([42, 43]), "{finished:?}");
    // Twin: the victim's own cancellation stops its call, which is not answered.
    send_json(&mut victim, &call(44, 30.0)).await?;
    host.wait_for_logs("request admitted", 3).await?;
    send_json(&mut victim, &cancel(json!(44))).await?;
    host.wait_for_log("a cancelled request has stopped").await?;
    send_json(&mut victim, &json!({"jsonrpc": "2.0", "id": "after", "method": "ping"})).await?;
    ensure!(reply_to(&mut victim, &json!("after")).await?["result"] == json!({}), "the cancelled call was answered");
    Ok(())
}

/// Resumption of another session's stream. An event id (`<stream>-<seq>`) is looked up only in
/// the session the request names. The victim's session has streams 1 to 3 (its `initialize`
/// and two calls whose replies carry its secret), the attacker's streams 1 and 2 (its own
/// call). The attacker's GET with its own session and `Last-Event-ID: 2-0` replays its own
/// stream 2, never the victim's; `3-0` (a stream only the victim has) and forged ids (`99-0`,
/// `x-1`, `2`, an overflowing number, nothing) are 400; a made-up session id is 404. Twin: the
/// victim resumes `3-0` and gets its own reply.
#[tokio::test]
async fn last_event_ids_replay_only_the_requesting_sessions_own_streams() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    // A session whose POSTs are answered on streams of their own: stream 1 is `initialize`'s,
    // stream 1 + n the nth greeting's.
    let open = |from: &'static str, names: &'static [&'static str]| {
        let addr = host.addr;
        async move {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": from, "version": "0"}}});
            let (status, head, _) = exchange_head(from, addr, &legacy_post(None, ACCEPT_BOTH, &init)).await?;
            ensure!(status == 200, "initialize: {status}");
            let session = crate::harness::header(&head, "mcp-session-id").context("a session id")?.to_owned();
            let (status, _) =
                exchange(from, addr, &legacy_post(Some(&session), ACCEPT_BOTH, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))).await?;
            ensure!(status == 202);
            for (n, name) in names.iter().enumerate() {
                let call = json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": name}}});
                let (status, body) = exchange(from, addr, &legacy_post(Some(&session), ACCEPT_BOTH, &call)).await?;
                let events = sse_messages(&body);
                let stream = n + 2;
                ensure!(
                    status == 200
                        && events
                            .iter()
                            .any(|(id, m)| id.as_deref() == Some(&format!("{stream}-1")) && m["result"]["content"][0]["text"] == format!("Hello, {name}!")),
                    "the greeting of {name} on stream {stream}: {status} {body}"
                );
            }
            anyhow::Ok(session)
        }
    };
    let victim = open(VICTIM, &["victim-secret-one", "victim-secret-two"]).await?;
    let attacker = open(ATTACKER, &["attacker-own"]).await?;
    let resume = |session: &str, last: &str| {
        format!(
            "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\nLast-Event-ID: {last}\r\nConnection: close\r\n\r\n"
        )
    };

    let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &resume(&attacker, "2-0"))).await??;
    let replayed = sse_messages(&body);
    ensure!(status == 200 && !body.contains("victim"), "the attacker's own stream 2: {status} {body}");
    ensure!(replayed.len() == 1 && replayed[0].1["result"]["content"][0]["text"] == "Hello, attacker-own!", "{body}");
    for last in ["3-0", "99-0", "x-1", "2", "18446744073709551616-0", "-", ""] {
        let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &resume(&attacker, last))).await??;
        ensure!(status == 400 && !body.contains("victim"), "Last-Event-ID {last:?}: {status} {body}");
    }
    for session in ["0123456789abcdef0123456789abcdef", victim.to_uppercase().as_str()] {
        let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &resume(session, "3-0"))).await??;
        ensure!(status == 404 && !body.contains("victim"), "session {session}: {status} {body}");
    }
    bystander_is_served(&host, "after forged event ids").await?;
    // Twin: the victim's own resumption.
    let (status, body) = tokio::time::timeout(WAIT, exchange(VICTIM, host.addr, &resume(&victim, "3-0"))).await??;
    ensure!(status == 200 && body.contains("Hello, victim-secret-two!"), "the victim's own stream 3: {status} {body}");
    baseline.within("forged event ids", 32 * MIB, 8)?;
    Ok(())
}

/// Tasks of another client. A 2025-11-25 task belongs to the session that created it: the
/// attacker's session asking `tasks/get`, `tasks/result` or `tasks/cancel` for the victim's task
/// id gets −32602 "unknown task", and its `tasks/list` is empty; a 2026-07-28 request for it
/// (another owner) is 400 −32602 as well. On 2026-07-28 a made-up task id is "unknown task"
/// (400 −32602), and there is no `tasks/list` or `tasks/result` to enumerate or wait on (404
/// −32601). Twin: the victim's own `tasks/result` gets its result, and its task completed,
/// not cancelled. (A task made by a 2026-07-28 request is owned by its caller, which HTTP does
/// not authenticate: there its id is the only thing that guards it, and is not checked here.)
#[tokio::test]
async fn another_sessions_tasks_and_made_up_task_ids_are_unknown() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    let mut victim = legacy_websocket(VICTIM, &host, "2025-11-25", json!({})).await?;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "victim-secret"}, "task": {"ttl": 60_000}}});
    send_json(&mut victim, &call).await?;
    let created = reply_to(&mut victim, &json!(1)).await?;
    let task = created["result"]["task"]["taskId"].as_str().with_context(|| format!("a task: {created}"))?.to_owned();

    let mut attacker = legacy_websocket(ATTACKER, &host, "2025-11-25", json!({})).await?;
    for (id, method) in [(1, "tasks/get"), (2, "tasks/result"), (3, "tasks/cancel")] {
        send_json(&mut attacker, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"taskId": task}})).await?;
        let reply = reply_to(&mut attacker, &json!(id)).await?;
        ensure!(
            reply["error"]["code"] == -32602 && reply["error"]["message"].as_str().is_some_and(|m| m.starts_with("unknown task")),
            "{method} of the victim's task: {reply}"
        );
        ensure!(!reply.to_string().contains("victim-secret"), "{reply}");
    }
    send_json(&mut attacker, &json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/list", "params": {}})).await?;
    let listed = reply_to(&mut attacker, &json!(4)).await?;
    ensure!(listed["result"]["tasks"] == json!([]), "the attacker's tasks/list: {listed}");

    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let modern = |method: &str, task: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"taskId": task, "_meta": modern_meta(capabilities.clone())}});
        if matches!(method, "tasks/get" | "tasks/cancel") { modern_post_named(method, task, &body) } else { modern_post(method, &body) }
    };
    let made_up = "0123456789abcdef0123456789abcdef";
    for (method, id, status, code) in [
        ("tasks/get", task.as_str(), 400, -32602),
        ("tasks/cancel", task.as_str(), 400, -32602),
        ("tasks/get", made_up, 400, -32602),
        ("tasks/result", made_up, 404, -32601),
        ("tasks/list", made_up, 404, -32601),
    ] {
        let (got, body) = exchange(ATTACKER, host.addr, &modern(method, id)).await?;
        let reply = parsed(&body)?;
        ensure!(got == status && reply["error"]["code"] == code && !body.contains("victim-secret"), "2026-07-28 {method} of {id}: {got} {body}");
    }
    bystander_is_served(&host, "after reads of another's tasks").await?;

    // Twin: the victim's own task.
    send_json(&mut victim, &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task}})).await?;
    let result = reply_to(&mut victim, &json!(2)).await?;
    ensure!(result["result"]["content"][0]["text"] == "victim-secret: computed in 0.5 s", "{result}");
    send_json(&mut victim, &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"taskId": task}})).await?;
    let status = reply_to(&mut victim, &json!(3)).await?;
    ensure!(status["result"]["status"] == "completed", "{status}");
    baseline.within("reads of another's tasks", 32 * MIB, 8)?;
    Ok(())
}

/// Sealed `requestState`s altered or moved. A 2026-07-28 input round's state is sealed to its
/// tool and arguments: the same state with one character changed, cut short, lengthened,
/// empty, or a megabyte of filler, or sent with other arguments or to another tool (one that
/// asks the same question), is refused with 400 −32602 saying it is not one this server issued
/// for this request; a state that is not a string is 400 −32602 too. Twin: the untouched state
/// with the answer completes the round. (Expiry, ten minutes and fixed, cannot be reached from
/// here; `input::seal`'s tests hold it.)
#[tokio::test]
async fn an_input_rounds_state_altered_or_moved_is_refused_and_the_untouched_one_completes() -> Result<()> {
    let _one = ONE_AT_A_TIME.lock().await;
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let baseline = Baseline::of(host.pid())?;
    let call = |name: &str, arguments: Value, retry: Option<(&Value, Value)>| {
        let mut params = json!({"name": name, "arguments": arguments, "_meta": modern_meta(json!({"elicitation": {}}))});
        if let Some((responses, state)) = retry {
            params["inputResponses"] = responses.clone();
            params["requestState"] = state;
        }
        modern_post_named("tools/call", name, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
    };
    let asked = json!({"message": "Who are you?"});
    let (status, body) = exchange(ATTACKER, host.addr, &call("test_elicitation", asked.clone(), None)).await?;
    let round = parsed(&body)?;
    ensure!(status == 200 && round["result"]["resultType"] == "input_required", "{status} {body}");
    let state = round["result"]["requestState"].as_str().context("a sealed state")?.to_owned();
    let key = round["result"]["inputRequests"].as_object().and_then(|r| r.keys().next()).context("a question")?.clone();
    let responses = json!({key.clone(): {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});

    let middle = state.len() / 2;
    let swapped = if state.as_bytes()[middle] == b'A' { "B" } else { "A" };
    let altered = format!("{}{swapped}{}", &state[..middle], &state[middle + 1..]);
    let refused = "is not one this server issued for this request, or it was altered";
    let attempts: Vec<(&str, &str, Value, Value, &str)> = vec![
        ("one character changed", "test_elicitation", asked.clone(), json!(altered), refused),
        ("cut short", "test_elicitation", asked.clone(), json!(&state[..state.len() - 4]), refused),
        ("lengthened", "test_elicitation", asked.clone(), json!(format!("{state}AAAA")), refused),
        ("empty", "test_elicitation", asked.clone(), json!(""), refused),
        ("a megabyte of filler", "test_elicitation", asked.clone(), json!("A".repeat(1 << 20)), refused),
        ("other arguments", "test_elicitation", json!({"message": "Who else?"}), json!(state), refused),
        ("another tool", "test_input_required_result_elicitation", json!({}), json!(state), refused),
        ("not a string", "test_elicitation", asked.clone(), json!(7), "`requestState` must be a string"),
    ];
    for (what, tool, arguments, sent, message) in attempts {
        let (status, body) = tokio::time::timeout(WAIT, exchange(ATTACKER, host.addr, &call(tool, arguments, Some((&responses, sent))))).await??;
        let reply = parsed(&body)?;
        ensure!(
            status == 400 && reply["error"]["code"] == -32602 && reply["error"]["message"].as_str().is_some_and(|m| m.contains(message)),
            "{what}: {status} {body}"
        );
    }
    bystander_is_served(&host, "after altered states").await?;
    // Twin: the untouched state completes the round.
    let (status, body) = exchange(ATTACKER, host.addr, &call("test_elicitation", asked, Some((&responses, json!(state))))).await?;
    let done = parsed(&body)?;
    ensure!(status == 200 && done["result"]["resultType"] == "complete", "{status} {body}");
    ensure!(done["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("ada@example.com")), "{done}");
    baseline.within("altered states", 32 * MIB, 8)?;
    Ok(())
}
