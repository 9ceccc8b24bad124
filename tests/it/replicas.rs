//! Several replicas of the real binary on loopback, sharing a state key and a plugins folder:
//! a legacy session is served by the replica that owns it whichever replica a request reaches
//! (forwarded, streams and resumption included), ids that do not verify and clients posing as a
//! replica are refused, and a session whose owner is gone is answered 404 so its client starts
//! a new one.

use std::time::Duration;

use anyhow::{Context, Result};
use paddock_tests::conformance_plugins;
use paddock_tests::http::{EventReader, HttpHost};
use paddock_tests::replicas::{Cluster, legacy_post};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}
    }})
}

/// Opens a legacy session on `host`; its id.
async fn open_session(host: &HttpHost) -> Result<String> {
    let response = legacy_post(host, None, ACCEPT_BOTH, &initialize(0)).await?;
    anyhow::ensure!(response.status() == 200, "initialize: {}", response.status());
    let id = response.headers()["mcp-session-id"].to_str()?.to_owned();
    let reply = EventReader::new(response).next_message().await?;
    anyhow::ensure!(reply["result"]["protocolVersion"] == "2025-11-25", "{reply}");
    Ok(id)
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

#[tokio::test]
async fn a_legacy_session_is_served_by_its_owner_whichever_replica_a_request_reaches() -> Result<()> {
    let plugins = conformance_plugins();
    let cluster = Cluster::start(plugins.path(), 3, &[]).await?;
    let (r0, r1, r2) = (cluster.replica(0), cluster.replica(1), cluster.replica(2));
    let session = open_session(r0).await?;
    assert!(session.starts_with("paddock-0."), "the id names its owner: {session}");

    let initialized = legacy_post(r1, Some(&session), ACCEPT_BOTH, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    assert_eq!(initialized.status(), 202, "a notification through another replica");

    // Through r2, answered as SSE: the priming event's id, then the reply, streamed back.
    let response = legacy_post(r2, Some(&session), ACCEPT_BOTH, &call(1, "test_simple_text")).await?;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventReader::new(response);
    let priming = events.next().await?.context("a priming event")?;
    let primed = priming.id.clone().context("the priming event has an id")?;
    let reply = events.next_message().await?;
    assert_eq!(reply["id"], 1);
    assert!(reply["result"]["content"][0]["text"].as_str().is_some(), "{reply}");

    // Through r1, a client that takes only JSON gets JSON.
    let response = legacy_post(r1, Some(&session), "application/json", &call(2, "test_simple_text")).await?;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let reply: Value = response.json().await?;
    assert_eq!(reply["id"], 2, "{reply}");

    // The stream of the first call resumed through r1 after its priming event: the reply again.
    let resumed = reqwest::Client::new()
        .get(r1.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("last-event-id", &primed)
        .send()
        .await?;
    assert_eq!(resumed.status(), 200);
    let replayed = EventReader::new(resumed).next_message().await?;
    assert_eq!(replayed["id"], 1, "Last-Event-ID kept across the hop: {replayed}");

    // The session's own GET stream opens through r2 (the owner holds it).
    let stream = reqwest::Client::new().get(r2.url("/mcp")).header("accept", "text/event-stream").header("mcp-session-id", &session).send().await?;
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    drop(stream);

    // DELETE through r2 ends it at the owner: from then on every replica answers 404.
    let deleted = reqwest::Client::new().delete(r2.url("/mcp")).header("mcp-session-id", &session).send().await?;
    assert_eq!(deleted.status(), 200);
    for host in [r0, r1, r2] {
        assert_eq!(legacy_post(host, Some(&session), ACCEPT_BOTH, &call(3, "test_simple_text")).await?.status(), 404);
    }
    assert!(!cluster.logs().contains("panicked"), "{}", cluster.logs());
    Ok(())
}

#[tokio::test]
async fn an_http_sse_sessions_messages_reach_its_stream_through_another_replica() -> Result<()> {
    let plugins = conformance_plugins();
    let cluster = Cluster::start(plugins.path(), 2, &[]).await?;
    let stream = reqwest::Client::new().get(cluster.replica(0).url("/sse")).header("accept", "text/event-stream").send().await?;
    assert_eq!(stream.status(), 200);
    let mut events = EventReader::new(stream);
    let endpoint = events.next().await?.context("the endpoint event")?;
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?session_id=paddock-0."), "{endpoint:?}");
    let post = |body: Value| {
        let url = cluster.replica(1).url(&endpoint.data);
        async move { reqwest::Client::new().post(url).header("content-type", "application/json").body(body.to_string()).send().await }
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}
    }});
    assert_eq!(post(init).await?.status(), 202, "accepted through r1:\n{}", cluster.logs());
    let reply = events.next_message().await?;
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05", "the reply comes on r0's stream: {reply}");
    assert_eq!(post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?.status(), 202);
    assert_eq!(post(call(1, "test_simple_text")).await?.status(), 202);
    let reply = events.next_message().await?;
    assert_eq!(reply["id"], 1, "{reply}");
    Ok(())
}

#[tokio::test]
async fn ids_that_do_not_verify_and_clients_posing_as_a_replica_are_refused() -> Result<()> {
    let plugins = conformance_plugins();
    let cluster = Cluster::start(plugins.path(), 2, &[]).await?;
    let (r0, r1) = (cluster.replica(0), cluster.replica(1));
    let session = open_session(r0).await?;
    let (_, sealed) = session.split_once('.').context("a tagged id")?;

    let made_up = format!("paddock-0.{}", "A".repeat(43));
    let mut altered = session.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered)?;
    let moved = format!("paddock-1.{sealed}");
    for (what, id) in [("made up", &made_up), ("altered", &altered), ("moved to another replica", &moved)] {
        for host in [r0, r1] {
            let refused = legacy_post(host, Some(id), ACCEPT_BOTH, &call(1, "test_simple_text")).await?;
            assert_eq!(refused.status(), 404, "{what} through {}", host.addr);
        }
    }
    r1.wait_for_log("refused a session id").await?;

    // A made-up forwarding header: refused before anything reads the request, and logged.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
    let posing = format!("v1 from=paddock-1 to=paddock-0 t={now} client=203.0.113.9 mac={}", "A".repeat(43));
    let refused = reqwest::Client::new()
        .post(r0.url("/mcp"))
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .header("paddock-forwarded", posing)
        .body(call(1, "test_simple_text").to_string())
        .send()
        .await?;
    assert_eq!(refused.status(), 403);
    r0.wait_for_log("posing as another replica").await?;
    // The session itself is untouched.
    assert_eq!(legacy_post(r1, Some(&session), "application/json", &call(2, "test_simple_text")).await?.status(), 200);
    Ok(())
}

/// Accepts one connection, reads its request head, answers 503 and returns the head.
async fn capture_one(listener: tokio::net::TcpListener) -> Result<String> {
    let (mut socket, _) = listener.accept().await?;
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = socket.read(&mut buffer).await?;
        anyhow::ensure!(n > 0, "the connection closed before its head");
        head.extend_from_slice(&buffer[..n]);
    }
    socket.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await?;
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[tokio::test]
async fn a_forwarding_header_seen_once_opens_nothing_but_the_request_it_was_made_for() -> Result<()> {
    let plugins = conformance_plugins();
    // The real owner r1, and r0, which believes r1 lives at a port the test listens on.
    let cluster = Cluster::start(plugins.path(), 2, &[]).await?;
    let owner = cluster.replica(1);
    let capture = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let capture_port = capture.local_addr()?.port();
    let key = cluster.key_file().display().to_string();
    let peer = format!("paddock-1=http://127.0.0.1:{capture_port}");
    let entry = HttpHost::start(plugins.path(), &["--replica-id", "paddock-0", "--state-key-file", &key, "--peer", &peer]).await?;
    let session = open_session(owner).await?;
    let captured = tokio::spawn(capture_one(capture));
    let forwarded = legacy_post(&entry, Some(&session), "application/json", &call(1, "test_simple_text")).await?;
    assert_eq!(forwarded.status(), 503, "what the capture answered comes back");
    let head = tokio::time::timeout(paddock_tests::WAIT, captured).await???;
    let header =
        head.lines().find_map(|line| line.strip_prefix("paddock-forwarded: ")).with_context(|| format!("the forward carries its header:\n{head}"))?.to_owned();
    assert!(header.starts_with("v1 from=paddock-0 to=paddock-1 "), "{header}");
    assert!(!head.to_ascii_lowercase().contains("x-forwarded-for"), "{head}");

    let send = |session: String, path: &'static str| {
        let (url, header) = (owner.url(path), header.clone());
        async move {
            reqwest::Client::new()
                .post(url)
                .header("accept", "application/json")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", session)
                .header("paddock-forwarded", header)
                .body(call(1, "test_simple_text").to_string())
                .send()
                .await
        }
    };
    // For the request it was made for, it is that request again (the owner still checks the
    // client's token); for another session or path, it opens nothing.
    assert_eq!(send(session.clone(), "/mcp").await?.status(), 200);
    let other = open_session(owner).await?;
    assert_eq!(send(other, "/mcp").await?.status(), 403);
    assert_eq!(send(session.clone(), "/mcp?x=1").await?.status(), 403);
    // Sent to another replica, it is not for that one.
    let third = reqwest::Client::new()
        .post(entry.url("/mcp"))
        .header("accept", "application/json")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .header("paddock-forwarded", &header)
        .body(call(1, "test_simple_text").to_string())
        .send()
        .await?;
    assert_eq!(third.status(), 403);
    Ok(())
}

#[tokio::test]
async fn when_the_owner_is_gone_the_session_is_answered_404_and_a_new_one_starts_anywhere() -> Result<()> {
    let plugins = conformance_plugins();
    let mut cluster = Cluster::start(plugins.path(), 2, &[]).await?;
    let session = open_session(cluster.replica(0)).await?;
    assert_eq!(legacy_post(cluster.replica(1), Some(&session), "application/json", &call(1, "test_simple_text")).await?.status(), 200);
    cluster.kill(0).await?;
    let started = std::time::Instant::now();
    let gone = legacy_post(cluster.replica(1), Some(&session), "application/json", &call(2, "test_simple_text")).await?;
    assert_eq!(gone.status(), 404, "the spec's \"session ended\": the client initializes again");
    assert!(started.elapsed() < Duration::from_secs(5), "a dead owner is found out quickly: {:?}", started.elapsed());
    cluster.replica(1).wait_for_log("cannot be reached").await?;
    let again = open_session(cluster.replica(1)).await?;
    assert!(again.starts_with("paddock-1."), "{again}");
    Ok(())
}

#[tokio::test]
async fn the_replica_a_request_reaches_checks_its_token_before_forwarding_and_the_owner_checks_it_again() -> Result<()> {
    let plugins = conformance_plugins();
    let tokens = tempfile::tempdir()?;
    let token_file = tokens.path().join("token");
    std::fs::write(&token_file, "s3cret-token-for-replicas\n")?;
    let token_arg = token_file.display().to_string();
    let cluster = Cluster::start(plugins.path(), 2, &["--token-file", &token_arg]).await?;
    let (r0, r1) = (cluster.replica(0), cluster.replica(1));
    let authorized = |host: &HttpHost, token: Option<&str>, body: Value, session: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(host.url("/mcp"))
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.body(body.to_string()).send()
    };
    let opened = authorized(r0, Some("s3cret-token-for-replicas"), initialize(0), None).await?;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str()?.to_owned();
    assert_eq!(authorized(r1, None, call(1, "test_simple_text"), Some(session.clone())).await?.status(), 401, "refused at the entry");
    assert_eq!(authorized(r1, Some("wrong"), call(1, "test_simple_text"), Some(session.clone())).await?.status(), 401);
    let served = authorized(r1, Some("s3cret-token-for-replicas"), call(1, "test_simple_text"), Some(session)).await?;
    assert_eq!(served.status(), 200);
    Ok(())
}
