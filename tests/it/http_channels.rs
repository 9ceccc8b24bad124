//! The connection-shaped transports on the real binary: WebSocket (`/ws`: subprotocol, text
//! frames, size limits, pings, close) and HTTP+SSE (`/sse` and `/messages`).

use anyhow::{Context, Result};
use futures::{SinkExt, StreamExt};
use paddock_tests::http::{EventReader, HttpHost};
use paddock_tests::{WAIT, conformance_plugins};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(host: &HttpHost, protocol: Option<&str>) -> Result<(Socket, Option<String>)> {
    let mut request = host.ws_url("/ws").into_client_request()?;
    if let Some(protocol) = protocol {
        request.headers_mut().insert("sec-websocket-protocol", protocol.parse()?);
    }
    let (socket, response) = tokio_tungstenite::connect_async(request).await?;
    let chosen = response.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()).map(str::to_owned);
    Ok((socket, chosen))
}

/// The next text frame as JSON (pings answered by the library).
async fn next_json(socket: &mut Socket) -> Result<Value> {
    loop {
        let frame = tokio::time::timeout(WAIT, socket.next()).await.context("no frame in time")?.context("closed")??;
        if let Message::Text(text) = frame {
            return Ok(serde_json::from_str(text.as_str())?);
        }
    }
}

#[tokio::test]
async fn websocket_speaks_mcp_one_message_per_text_frame() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let (mut socket, chosen) = connect(&host, Some("mcp")).await?;
    assert_eq!(chosen.as_deref(), Some("mcp"));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "0"}}});
    socket.send(Message::text(init.to_string())).await?;
    assert_eq!(next_json(&mut socket).await?["result"]["protocolVersion"], "2025-11-25");
    socket.send(Message::text(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)).await?;

    // A question from the plugin goes out on the socket and its answer comes back on it.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {"message": "Who?"}}});
    socket.send(Message::text(call.to_string())).await?;
    let question = next_json(&mut socket).await?;
    assert_eq!(question["method"], "elicitation/create");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"username": "ada", "email": "a@example.com"}}});
    socket.send(Message::text(answer.to_string())).await?;
    let reply = next_json(&mut socket).await?;
    assert_eq!(reply["id"], 2);
    assert!(reply["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("a@example.com")), "{reply}");

    // Binary frames and bad JSON are answered, and the connection goes on.
    socket.send(Message::binary(b"{}".to_vec())).await?;
    assert_eq!(next_json(&mut socket).await?["error"]["code"], -32700);
    socket.send(Message::text("{not json")).await?;
    assert_eq!(next_json(&mut socket).await?["error"]["code"], -32700);
    socket.send(Message::text(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string())).await?;
    assert_eq!(next_json(&mut socket).await?, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));

    // A 2026-07-28 request on the same socket is served statelessly.
    let modern = json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {"_meta": paddock_tests::http::modern_meta(json!({}))}});
    socket.send(Message::text(modern.to_string())).await?;
    assert_eq!(next_json(&mut socket).await?["result"]["resultType"], "complete");
    socket.close(None).await?;

    // Another subprotocol is refused; none at all is accepted.
    let refused = connect(&host, Some("graphql-ws")).await;
    assert!(matches!(refused, Err(ref e) if e.to_string().contains("400")), "{refused:?}");
    let (mut plain, chosen) = connect(&host, None).await?;
    assert_eq!(chosen, None);
    plain.send(Message::text(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())).await?;
    assert_eq!(next_json(&mut plain).await?["id"], 1);
    Ok(())
}

#[tokio::test]
async fn an_oversized_websocket_message_closes_only_its_connection() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let (mut big, _) = connect(&host, Some("mcp")).await?;
    let (mut other, _) = connect(&host, Some("mcp")).await?;
    let pad = "x".repeat(17 << 20);
    let _ = big.send(Message::text(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{pad}"}}}}"#))).await;
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match big.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the connection that sent too much is closed");
    other.send(Message::text(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string())).await?;
    assert_eq!(next_json(&mut other).await?["id"], 9, "the other connection is untouched");
    host.wait_for_log("a WebSocket connection failed").await?;
    Ok(())
}

#[tokio::test]
async fn http_sse_names_its_endpoint_and_answers_on_the_stream() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let client = reqwest::Client::new();
    let stream = client.get(host.url("/sse")).header("accept", "text/event-stream").send().await?;
    assert_eq!(stream.status(), 200);
    let mut events = EventReader::new(stream);
    let endpoint = events.next().await?.context("endpoint event")?;
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?session_id="), "{endpoint:?}");
    let post_url = host.url(&endpoint.data);

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let accepted = client.post(&post_url).header("content-type", "application/json").body(init.to_string()).send().await?;
    assert_eq!(accepted.status(), 202);
    let reply = events.next().await?.context("reply")?;
    assert_eq!(reply.event.as_deref(), Some("message"));
    assert_eq!(reply.json()?["result"]["protocolVersion"], "2024-11-05");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}});
    assert_eq!(client.post(&post_url).body(call.to_string()).send().await?.status(), 202);
    assert_eq!(events.next_message().await?["result"]["content"][0]["text"], "This is a simple text response for testing.");

    assert_eq!(client.post(host.url("/messages?session_id=unknown")).body("{}").send().await?.status(), 404);
    assert_eq!(client.post(&post_url).body("{nope").send().await?.status(), 400);

    // Closing the stream ends the session.
    drop(events);
    let session = endpoint.data.trim_start_matches("/messages?session_id=").to_owned();
    host.wait_for_log(&format!("\"session\":\"{session}\"")).await?;
    assert_eq!(client.post(&post_url).body(call.to_string()).send().await?.status(), 404);
    Ok(())
}

#[tokio::test]
async fn the_server_pings_and_closes_a_websocket_client_that_never_answers() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--keep-alive", "200ms"]).await?;
    // A client that reads sees pings (and answers them, which keeps it connected).
    let (mut alive, _) = connect(&host, Some("mcp")).await?;
    let ping = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(Ok(Message::Ping(_))) = alive.next().await {
                return;
            }
        }
    })
    .await;
    assert!(ping.is_ok(), "the server pings");
    // A client that never reads never answers a ping: it is closed after three intervals.
    let (silent, _) = connect(&host, Some("mcp")).await?;
    let closed = host.wait_for_log("sent nothing, not even a pong");
    tokio::pin!(closed);
    loop {
        tokio::select! {
            line = &mut closed => { line?; break }
            frame = alive.next() => { frame.context("the reading client stays connected")??; }
        }
    }
    drop(silent);
    alive.send(Message::text(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())).await?;
    assert_eq!(next_json(&mut alive).await?["id"], 1, "the client that answers its pings is still served");
    Ok(())
}

#[tokio::test]
async fn idle_sse_streams_carry_keep_alive_comments() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--keep-alive", "100ms"]).await?;
    let response = reqwest::Client::new().get(host.url("/sse")).header("accept", "text/event-stream").send().await?;
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains(": keep-alive") {
        let chunk = tokio::time::timeout(WAIT, body.next()).await?.context("the stream stays open")??;
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.starts_with("event: endpoint\n"), "{seen}");
    Ok(())
}
