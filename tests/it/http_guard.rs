//! What stands in front of every HTTP endpoint, on the real binary: Host and Origin checks
//! (DNS rebinding), bearer tokens, size and connection limits, and graceful shutdown.

use anyhow::{Context, Result};
use paddock_tests::http::{EventReader, HttpHost, modern_meta};
use paddock_tests::{PluginDir, WAIT, conformance_plugins, run_paddock};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn discover() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta(json!({}))}}).to_string()
}

async fn post_discover(host: &HttpHost, headers: &[(&str, &str)]) -> Result<reqwest::Response> {
    let mut request = reqwest::Client::new().post(host.url("/mcp")).header("mcp-protocol-version", "2026-07-28").header("mcp-method", "server/discover");
    for (key, value) in headers {
        request = request.header(*key, *value);
    }
    Ok(request.body(discover()).send().await?)
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_and_allowed_ones_served() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--allow-host", "mcp.example.test", "--allow-origin", "https://app.example.test"]).await?;
    let port = host.addr.port().to_string();
    for (headers, status) in [
        (vec![("host", "evil.example.com".to_owned()), ("origin", "http://evil.example.com".to_owned())], 403),
        (vec![("host", format!("evil.example.com:{port}"))], 403),
        (vec![("origin", "http://evil.example.com".to_owned())], 403),
        (vec![("origin", "null".to_owned())], 403),
        (vec![("host", format!("localhost:{port}")), ("origin", format!("http://localhost:{port}"))], 200),
        (vec![("host", "mcp.example.test".to_owned())], 200),
        (vec![("origin", "https://app.example.test".to_owned())], 200),
        // Normalised before comparing: one trailing dot, the scheme's default port.
        (vec![("host", "mcp.example.test.".to_owned())], 200),
        (vec![("host", "mcp.example.test..".to_owned())], 403),
        (vec![("origin", "https://app.example.test:443".to_owned())], 200),
        (vec![("origin", "https://app.example.test.".to_owned())], 200),
        (vec![("origin", "https://app.example.test:8443".to_owned())], 403),
        (vec![("origin", "http://app.example.test".to_owned())], 403),
        (vec![("origin", format!("http://localhost.:{port}"))], 200),
    ] {
        let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let response = post_discover(&host, &pairs).await?;
        assert_eq!(response.status(), status, "{headers:?}");
    }
    let ws = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
    let mut ws = ws;
    ws.headers_mut().insert("origin", "http://evil.example.com".parse()?);
    ws.headers_mut().insert("sec-websocket-protocol", "mcp".parse()?);
    let refused = tokio_tungstenite::connect_async(ws).await;
    assert!(matches!(refused, Err(tokio_tungstenite::tungstenite::Error::Http(ref r)) if r.status() == 403), "{refused:?}");
    let refusal = host.wait_for_log("its Origin is not allowed").await?;
    assert!(refusal.contains("evil.example.com"), "the refusal is recorded with what was refused: {refusal}");
    Ok(())
}

/// The status a raw request gets: `head` is its request line and headers, each ending in CRLF.
async fn raw_status(host: &HttpHost, head: &[u8]) -> Result<u16> {
    let mut socket = tokio::net::TcpStream::connect(host.addr).await?;
    socket.write_all(head).await?;
    socket.write_all(b"Connection: close\r\n\r\n").await?;
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, socket.read_to_end(&mut answer)).await??;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok());
    status.ok_or_else(|| anyhow::anyhow!("no status line in {answer:?}"))
}

#[tokio::test]
async fn a_host_that_is_not_one_authority_is_a_bad_request_and_its_twin_is_served() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--allow-host", "mcp.example.test"]).await?;
    let port = host.addr.port();
    // `/readyz` asked for its detail: what a page could use, so the Host is checked.
    let rows: Vec<(Vec<u8>, u16)> = vec![
        // Nothing after `]` but a port.
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: [::1]evil.example.com\r\n".to_vec(), 400),
        (format!("GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: [::1]:{port}\r\n").into_bytes(), 200),
        // Two Host headers, whichever comes first.
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\r\nHost: evil.example.com\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: evil.example.com\r\nHost: localhost\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\r\n".to_vec(), 200),
        // None on HTTP/1.1; on HTTP/1.0 there must be something to check.
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.0\r\nAccept: application/json\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.0\r\nAccept: application/json\r\nHost: localhost\r\n".to_vec(), 200),
        (format!("GET http://localhost:{port}/readyz HTTP/1.0\r\nAccept: application/json\r\n").into_bytes(), 200),
        // Outside ASCII: refused, never replaced by the request target's authority.
        (format!("GET http://localhost:{port}/readyz HTTP/1.1\r\nAccept: application/json\r\nHost: l\u{43e}calhost\r\n").into_bytes(), 400),
        (format!("GET http://localhost:{port}/readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\r\n").into_bytes(), 200),
        // The request target's authority is checked as well.
        (b"GET http://evil.example.com/readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\r\n".to_vec(), 403),
        // Userinfo, a path, a port that is not one.
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: user@localhost\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost/mcp\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost:http\r\n".to_vec(), 400),
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost:80\r\n".to_vec(), 200),
        // A repeated Origin.
        (
            b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\r\nOrigin: http://localhost\r\nOrigin: http://evil.example.com\r\n".to_vec(),
            400,
        ),
        (b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\r\nOrigin: http://localhost\r\n".to_vec(), 200),
    ];
    for (head, status) in rows {
        assert_eq!(raw_status(&host, &head).await?, status, "{}", String::from_utf8_lossy(&head));
    }
    // A probe (`/healthz`, `/readyz` without its detail) says nothing a page could use: it is
    // answered whatever Host a kubelet (a pod address) or a load balancer's check (none, over
    // HTTP/1.0) names; the same Host asking for the detail is refused.
    for probe in [
        "GET /healthz HTTP/1.1\r\nHost: 10.1.2.3:8080\r\n",
        "GET /readyz HTTP/1.1\r\nHost: 10.1.2.3:8080\r\n",
        "GET /readyz HTTP/1.0\r\n",
        "GET /healthz HTTP/1.1\r\nHost: evil.example.com\r\n",
    ] {
        assert_eq!(raw_status(&host, probe.as_bytes()).await?, 200, "{probe}");
    }
    assert_eq!(raw_status(&host, b"GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: 10.1.2.3:8080\r\n").await?, 403);
    let refusal = host.wait_for_log("[::1]evil.example.com").await?;
    assert!(refusal.contains("its Host is not a host and an optional port") && refusal.contains("127.0.0.1:"), "the refusal names what and who: {refusal}");
    host.wait_for_log("it has more than one Host header").await?;
    host.wait_for_log("it has no Host header").await?;
    // A Host that would reorder the log line is written escaped.
    assert_eq!(raw_status(&host, "GET /readyz HTTP/1.1\r\nAccept: application/json\r\nHost: localhost\u{202e}moc.live\r\n".as_bytes()).await?, 400);
    // (The JSON log writes the escape's backslash as `\\`.)
    host.wait_for_log(r"localhost\\u{202e}moc.live").await?;
    Ok(())
}

#[tokio::test]
async fn a_token_is_required_everywhere_but_health_and_compared_exactly() -> Result<()> {
    let token = "s3cr3t-token-0123456789abcdef";
    let files = PluginDir::new().write("token", format!("{token}\n"));
    let token_file = files.path().join("token");
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--token-file", token_file.to_str().unwrap_or_default()]).await?;
    let missing = post_discover(&host, &[]).await?;
    assert_eq!(missing.status(), 401);
    assert_eq!(missing.headers()["www-authenticate"], r#"Bearer realm="paddock""#);
    let wrong = post_discover(&host, &[("authorization", "Bearer s3cr3t-token-0123456789abcdeF")]).await?;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers()["www-authenticate"].to_str()?.contains("invalid_token"));
    let right = format!("Bearer {token}");
    assert_eq!(post_discover(&host, &[("authorization", &right)]).await?.status(), 200);
    let lowercase = format!("bearer {token}");
    assert_eq!(post_discover(&host, &[("authorization", &lowercase)]).await?.status(), 200);
    assert_eq!(reqwest::get(host.url("/healthz")).await?.status(), 200, "health needs no token");
    assert_eq!(reqwest::get(host.url("/sse")).await?.status(), 401);
    let mut ws = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
    ws.headers_mut().insert("sec-websocket-protocol", "mcp".parse()?);
    let refused = tokio_tungstenite::connect_async(ws.clone()).await;
    assert!(matches!(refused, Err(tokio_tungstenite::tungstenite::Error::Http(ref r)) if r.status() == 401), "{refused:?}");
    ws.headers_mut().insert("authorization", right.parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await?;
    socket.close(None).await?;

    let env_host = HttpHost::start_with_env(plugins.path(), &[], &[("PADDOCK_HTTP_TOKEN", token)]).await?;
    assert_eq!(post_discover(&env_host, &[]).await?.status(), 401);
    assert_eq!(post_discover(&env_host, &[("authorization", &right)]).await?.status(), 200);
    Ok(())
}

#[tokio::test]
async fn a_public_address_without_a_token_does_not_start() -> Result<()> {
    let plugins = conformance_plugins();
    let (code, _, stderr) = run_paddock(&["serve", plugins.path().to_str().unwrap_or_default(), "--http", "0.0.0.0:0"]).await?;
    assert_eq!(code, 2);
    assert!(stderr.contains("needs a bearer token") && stderr.contains("--token-file"), "{stderr}");
    let short = PluginDir::new().write("token", "short\n");
    let (code, _, stderr) = run_paddock(&[
        "serve",
        plugins.path().to_str().unwrap_or_default(),
        "--http",
        "127.0.0.1:0",
        "--token-file",
        short.path().join("token").to_str().unwrap_or_default(),
    ])
    .await?;
    assert_eq!(code, 2);
    assert!(stderr.contains("shorter than"), "{stderr}");
    // Random bytes are not a token: said once, with a recipe that makes one.
    let binary = PluginDir::new().write("token", [0x9f, 0x92, 0x96, 0x00, 0xff, 0x10, 0x80, 0x81, 0xc3, 0x28, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06]);
    let (code, _, stderr) = run_paddock(&[
        "serve",
        plugins.path().to_str().unwrap_or_default(),
        "--http",
        "127.0.0.1:0",
        "--token-file",
        binary.path().join("token").to_str().unwrap_or_default(),
    ])
    .await?;
    assert_eq!(code, 2);
    assert_eq!(stderr.matches("valid UTF-8").count(), 1, "{stderr}");
    assert!(stderr.contains("openssl rand -hex 32"), "{stderr}");
    let (code, _, stderr) =
        run_paddock(&["serve", plugins.path().to_str().unwrap_or_default(), "--http", "127.0.0.1:0", "--allow-host", "[::1]evil.example.com"]).await?;
    assert_eq!(code, 2);
    assert!(stderr.contains("--allow-host `[::1]evil.example.com` is not a host"), "{stderr}");
    Ok(())
}

#[tokio::test]
async fn oversized_bodies_and_heads_are_refused_and_connections_are_capped() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--max-connections", "1"]).await?;
    // A body over the 16 MiB limit is refused from its announced length, before it is read.
    let mut raw = tokio::net::TcpStream::connect(host.addr).await?;
    raw.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 20000000\r\n\r\n{").await?;
    let mut buffer = [0u8; 64];
    let n = tokio::time::timeout(WAIT, raw.read(&mut buffer)).await??;
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 413"), "{}", String::from_utf8_lossy(&buffer[..n]));
    drop(raw);

    let mut raw = tokio::net::TcpStream::connect(host.addr).await?;
    let head = format!("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: {}\r\n\r\n", "y".repeat(200 * 1024));
    raw.write_all(head.as_bytes()).await?;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(WAIT, raw.read_to_end(&mut answer)).await?;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "an oversized head is refused: {answer}");
    drop(raw);

    // One connection at a time: while the first holds the only slot, a second is still
    // accepted for health checks (kept back for them), and anything else is refused at once.
    // The earlier connections' slots come back once the server has seen them close: until
    // then a new connection is a health-check one, which answers an MCP request with 503.
    let post = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    let mut first = tokio::time::timeout(WAIT, async {
        loop {
            let mut stream = tokio::net::TcpStream::connect(host.addr).await?;
            stream.write_all(post).await?;
            let mut buffer = [0u8; 1024];
            let n = stream.read(&mut buffer).await?;
            if String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 400") {
                return anyhow::Ok(stream);
            }
            tokio::task::yield_now().await;
        }
    })
    .await??;
    let health = tokio::time::timeout(WAIT, reqwest::get(host.url("/healthz"))).await??;
    assert_eq!(health.status(), 200, "health checks answer while every slot is taken");
    let ready = tokio::time::timeout(WAIT, reqwest::get(host.url("/readyz"))).await??;
    assert_eq!(ready.status(), 200);
    let refused =
        tokio::time::timeout(WAIT, reqwest::Client::new().post(host.url("/mcp")).header("accept", "application/json, text/event-stream").body("{}").send())
            .await??;
    assert_eq!(refused.status(), 503, "an MCP request on a health-check connection is refused at once");
    first.shutdown().await?;
    let _ = tokio::time::timeout(WAIT, first.read_to_end(&mut Vec::new())).await?;
    let served = tokio::time::timeout(WAIT, async {
        loop {
            // The first connection's slot comes back once the server has seen it close.
            let response = reqwest::Client::new().post(host.url("/mcp")).header("accept", "application/json, text/event-stream").body("{}").send().await?;
            if response.status() != 503 {
                return anyhow::Ok(response.status());
            }
            tokio::task::yield_now().await;
        }
    })
    .await??;
    let status = served;
    assert_eq!(status, 400, "a full slot serves MCP again (this body is not a request)");
    Ok(())
}

#[tokio::test]
async fn sigterm_lets_running_calls_answer_closes_streams_and_exits() -> Result<()> {
    let plugins = conformance_plugins();
    let mut host = HttpHost::start(plugins.path(), &["--shutdown-grace", "20s"]).await?;
    let listen = reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": true}, "_meta": modern_meta(json!({}))}}).to_string())
        .send()
        .await?;
    let mut listen = EventReader::new(listen);
    assert_eq!(listen.next_message().await?["method"], "notifications/subscriptions/acknowledged");
    let call = tokio::spawn({
        let url = host.url("/mcp");
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": 1.5, "label": "in-flight"}, "_meta": modern_meta(json!({}))}});
            let response = reqwest::Client::new()
                .post(url)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "slow_compute")
                .body(body.to_string())
                .send()
                .await?;
            anyhow::Ok(serde_json::from_str::<Value>(&response.text().await?)?)
        }
    });
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let opened = reqwest::Client::new().post(host.url("/mcp")).header("accept", "application/json").body(init.to_string()).send().await?;
    let session = opened.headers()["mcp-session-id"].to_str()?.to_owned();
    let get = reqwest::Client::new().get(host.url("/mcp")).header("accept", "text/event-stream").header("mcp-session-id", &session).send().await?;
    assert_eq!(get.status(), 200);
    let mut standalone = EventReader::new(get);
    let mut ws = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
    ws.headers_mut().insert("sec-websocket-protocol", "mcp".parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await?;

    host.wait_for_log("request admitted").await?;
    host.terminate()?;
    host.wait_for_log("shutting down").await?;

    let closing = listen.next_message().await?;
    assert_eq!(closing["id"], 2, "the listen request ends with its closing result: {closing}");
    assert!(listen.next().await?.is_none(), "and its stream ends");
    assert!(standalone.next().await?.is_none(), "a session's GET stream ends");
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            match futures::StreamExt::next(&mut socket).await {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                _ => return None,
            }
        }
    })
    .await?;
    assert_eq!(closed, Some(1001), "a WebSocket is closed as going away");
    let answered = tokio::time::timeout(WAIT, call).await???;
    assert_eq!(answered["result"]["content"][0]["text"], "in-flight: computed in 1.5 s", "{answered}");
    assert_eq!(host.exit_code(WAIT).await?, 0);
    assert!(tokio::net::TcpStream::connect(host.addr).await.is_err(), "nothing listens any more");
    Ok(())
}

#[tokio::test]
async fn health_answers_at_once_and_readiness_waits_for_the_plugins() -> Result<()> {
    let plugins = conformance_plugins();
    let cold = tempfile::tempdir()?;
    // A cold cache: the plugin is compiled after the listener is up.
    let host = HttpHost::spawn(plugins.path(), "127.0.0.1:0", &[], &[("PADDOCK_CACHE_DIR", cold.path().to_str().unwrap_or_default())]).await?;
    assert_eq!(reqwest::get(host.url("/healthz")).await?.status(), 200);
    assert_eq!(reqwest::get(host.url("/readyz")).await?.status(), 503, "still compiling");
    assert_eq!(post_discover(&host, &[]).await?.status(), 503, "MCP waits for the plugins");
    host.wait_ready().await?;
    assert_eq!(post_discover(&host, &[]).await?.status(), 200);
    Ok(())
}

#[tokio::test]
async fn a_call_still_running_when_the_grace_ends_is_answered_before_its_connection_closes() -> Result<()> {
    let plugins = conformance_plugins();
    let mut host = HttpHost::start(plugins.path(), &["--shutdown-grace", "500ms"]).await?;
    let call = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": 30, "label": "late"}, "_meta": modern_meta(json!({}))}});
    let stateless = tokio::spawn({
        let url = host.url("/mcp");
        let body = call(3).to_string();
        async move {
            let response = reqwest::Client::new()
                .post(url)
                .header("accept", "application/json")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "slow_compute")
                .body(body)
                .send()
                .await?;
            let status = response.status();
            anyhow::Ok((status, serde_json::from_str::<Value>(&response.text().await?)?))
        }
    });
    let mut ws = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(host.ws_url("/ws"))?;
    ws.headers_mut().insert("sec-websocket-protocol", "mcp".parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await?;
    futures::SinkExt::send(&mut socket, tokio_tungstenite::tungstenite::Message::text(call(4).to_string())).await?;
    // Both calls are running before the signal.
    host.wait_for_logs("request admitted", 2).await?;
    host.terminate()?;

    let (status, reply) = tokio::time::timeout(WAIT, stateless).await???;
    assert_eq!(status, 503, "{reply}");
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["error"]["code"], -32000, "{reply}");
    assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains("shutting down")), "{reply}");
    let (answer, close) = tokio::time::timeout(WAIT, async {
        let mut answer = None;
        loop {
            match futures::StreamExt::next(&mut socket).await {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Text(text))) => answer = Some(serde_json::from_str::<Value>(text.as_str())?),
                Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame))) => return anyhow::Ok((answer, frame.map(|f| u16::from(f.code)))),
                Some(Ok(_)) => {}
                _ => return anyhow::Ok((answer, None)),
            }
        }
    })
    .await??;
    let answer = answer.context("the WebSocket call got no reply before the close")?;
    assert_eq!(answer["id"], 4);
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(close, Some(1001));
    assert_eq!(host.exit_code(WAIT).await?, 0);
    Ok(())
}

#[tokio::test]
async fn named_tokens_serve_each_holder_and_a_session_answers_only_the_principal_that_opened_it() -> Result<()> {
    let digest = |token: &str| -> String {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    let (alice, bob) = ("alice-token-0123456789abcdef", "bob-token-0123456789abcdef01");
    let list = format!("[[token]]\nname = \"alice\"\nsha256 = \"{}\"\n\n[[token]]\nname = \"bob\"\nsha256 = \"{}\"\n", digest(alice), digest(bob));
    let files = PluginDir::new().write("tokens.toml", list);
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--tokens", files.path().join("tokens.toml").to_str().unwrap_or_default()]).await?;
    let (as_alice, as_bob) = (format!("Bearer {alice}"), format!("Bearer {bob}"));
    assert_eq!(post_discover(&host, &[("authorization", &as_alice)]).await?.status(), 200);
    assert_eq!(post_discover(&host, &[("authorization", &as_bob)]).await?.status(), 200);
    assert_eq!(post_discover(&host, &[("authorization", "Bearer carol-token-0123456789abcdef")]).await?.status(), 401);
    assert_eq!(post_discover(&host, &[]).await?.status(), 401);
    // A token is read from the `Authorization` header only, never from the query string.
    for query in [format!("access_token={alice}"), format!("token={alice}")] {
        let in_query = reqwest::Client::new()
            .post(host.url(&format!("/mcp?{query}")))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .body(discover())
            .send()
            .await?;
        assert_eq!(in_query.status(), 401, "{query}");
    }

    // Alice opens a legacy session; to Bob its id is an unknown session, on every method.
    let client = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}
    }});
    let opened = client
        .post(host.url("/mcp"))
        .header("authorization", &as_alice)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .send()
        .await?;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str()?.to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let post_as = |who: &str| {
        client
            .post(host.url("/mcp"))
            .header("authorization", who)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &session)
            .body(ping.clone())
            .send()
    };
    let theirs = post_as(&as_bob).await?;
    assert_eq!(theirs.status(), 404, "another principal's session is unknown");
    let stream =
        client.get(host.url("/mcp")).header("authorization", &as_bob).header("accept", "text/event-stream").header("mcp-session-id", &session).send().await?;
    assert_eq!(stream.status(), 404);
    let deleted = client.delete(host.url("/mcp")).header("authorization", &as_bob).header("mcp-session-id", &session).send().await?;
    assert_eq!(deleted.status(), 404, "and cannot be ended by them");
    let own = post_as(&as_alice).await?;
    assert_eq!(own.status(), 200, "the owner's session is still there");

    // An HTTP+SSE session belongs to whoever opened its stream.
    let opened = client.get(host.url("/sse")).header("authorization", &as_bob).header("accept", "text/event-stream").send().await?;
    assert_eq!(opened.status(), 200);
    let mut events = EventReader::new(opened);
    let endpoint = events.next().await?.context("endpoint event")?;
    let message =
        |who: &str| client.post(host.url(&endpoint.data)).header("authorization", who).header("content-type", "application/json").body(ping.clone()).send();
    assert_eq!(message(&as_alice).await?.status(), 404, "another principal's HTTP+SSE session is unknown");
    assert_eq!(message(&as_bob).await?.status(), 202);
    Ok(())
}

#[tokio::test]
async fn a_plugin_is_told_which_token_holder_it_serves() -> Result<()> {
    let token = "alice-token-0123456789abcdef";
    let digest: String = {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    let plugins = PluginDir::new()
        .add("fixture", &paddock_tests::fixture_wasm("fixture"))
        .write("tokens.toml", format!("[[token]]\nname = \"alice\"\nsha256 = \"{digest}\"\n"));
    let tokens = plugins.path().join("tokens.toml");
    let host = HttpHost::start(plugins.path(), &["--tokens", tokens.to_str().unwrap_or_default()]).await?;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": modern_meta(json!({})), "name": "fixture_context", "arguments": {}
    }});
    let response = reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "fixture_context")
        .body(call.to_string())
        .send()
        .await?;
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await?;
    let text = reply["result"]["content"][0]["text"].as_str().context("a text block")?;
    let seen: Value = serde_json::from_str(text)?;
    assert_eq!(seen["caller"], "token alice", "{seen}");
    Ok(())
}
