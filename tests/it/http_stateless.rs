//! Streamable HTTP at 2026-07-28 on the real binary: stateless requests, the header checks and
//! their status codes, progress as SSE, a listen stream hearing another request's change, a
//! client disconnect cancelling its request, and an input round completed by another replica
//! that shares the state key.

use anyhow::Result;
use paddock_tests::http::{EventReader, HttpHost, modern_meta, post_modern as post};
use paddock_tests::{PluginDir, conformance_plugins};
use serde_json::{Value, json};

async fn json_of(response: reqwest::Response) -> Result<Value> {
    Ok(serde_json::from_str(&response.text().await?)?)
}

#[tokio::test]
async fn stateless_requests_get_json_and_errors_get_their_http_status() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;

    let discover = post(&host, "server/discover", json!({}), &[]).await?;
    assert_eq!(discover.status(), 200);
    assert_eq!(discover.headers()["content-type"], "application/json");
    assert!(discover.headers().get("mcp-session-id").is_none(), "no sessions in 2026-07-28");
    let discover = json_of(discover).await?;
    assert_eq!(discover["result"]["supportedVersions"], json!(["2026-07-28"]));

    let call = json_of(post(&host, "tools/call", json!({"name": "test_simple_text", "arguments": {}}), &[]).await?).await?;
    assert_eq!(call["result"]["content"][0]["text"], "This is a simple text response for testing.");

    // _meta missing: 400 and −32602, even with the version header.
    let missing = reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}).to_string())
        .send()
        .await?;
    assert_eq!(missing.status(), 400);
    let missing = json_of(missing).await?;
    assert_eq!((missing["id"].clone(), missing["error"]["code"].clone()), (json!(3), json!(-32602)));

    for (method, extra, status, code) in [
        ("initialize", vec![], 404, -32601),
        ("ping", vec![], 404, -32601),
        ("unknown/method", vec![], 404, -32601),
        ("tools/list", vec![("mcp-method", "prompts/list")], 400, -32020),
        ("tools/list", vec![("mcp-protocol-version", "2025-11-25")], 400, -32020),
    ] {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("content-type", "application/json".parse()?);
        headers.insert("mcp-protocol-version", "2026-07-28".parse()?);
        headers.insert("mcp-method", method.parse()?);
        for (key, value) in &extra {
            headers.insert(reqwest::header::HeaderName::from_bytes(key.as_bytes())?, value.parse()?);
        }
        let request = reqwest::Client::new().post(host.url("/mcp")).headers(headers);
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"_meta": modern_meta(json!({}))}});
        let response = request.body(body.to_string()).send().await?;
        assert_eq!(response.status(), status, "{method} {extra:?}");
        let reply = json_of(response).await?;
        assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(5), json!(code)), "{method} {extra:?}: {reply}");
    }
    let wrong_name = post(&host, "tools/call", json!({"name": "test_simple_text", "arguments": {}}), &[("mcp-name", "other_tool")]).await?;
    assert_eq!(wrong_name.status(), 400);
    let region = json!({"name": "test_header_param", "arguments": {"region": "eu-west"}});
    assert_eq!(post(&host, "tools/call", region.clone(), &[]).await?.status(), 400, "the x-mcp-header parameter's header is missing");
    assert_eq!(post(&host, "tools/call", region, &[("mcp-param-region", "=?base64?ZXUtd2VzdA==?=")]).await?.status(), 200);
    let capability = post(&host, "tools/call", json!({"name": "test_missing_capability", "arguments": {}, "_meta": modern_meta(json!({}))}), &[]).await?;
    assert_eq!(capability.status(), 400);
    assert_eq!(json_of(capability).await?["error"]["code"], -32021);

    let notification = reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "notifications/cancelled")
        .body(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": modern_meta(json!({}))}}).to_string())
        .send()
        .await?;
    assert_eq!(notification.status(), 202);
    let get = reqwest::Client::new().get(host.url("/mcp")).header("accept", "text/event-stream").header("mcp-protocol-version", "2026-07-28").send().await?;
    assert_eq!(get.status(), 405);
    Ok(())
}

#[tokio::test]
async fn progress_streams_as_sse_and_a_listen_stream_hears_another_requests_change() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut meta = modern_meta(json!({}));
    meta["progressToken"] = json!("p-1");
    let response = post(&host, "tools/call", json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": meta}), &[]).await?;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventReader::new(response);
    for step in [0.0, 50.0, 100.0] {
        let progress = events.next_message().await?;
        assert_eq!((progress["method"].clone(), progress["params"]["progress"].as_f64()), (json!("notifications/progress"), Some(step)));
    }
    let reply = events.next_message().await?;
    assert_eq!((reply["result"]["content"][0]["text"].clone(), reply["result"]["resultType"].clone()), (json!("p-1"), json!("complete")));
    assert!(events.next().await?.is_none());

    let listen = post(&host, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}), &[]).await?;
    let mut listen = EventReader::new(listen);
    let ack = listen.next_message().await?;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    let trigger = json_of(post(&host, "tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}}), &[]).await?).await?;
    assert!(trigger["result"].is_object(), "{trigger}");
    let change = listen.next_message().await?;
    assert_eq!(change["method"], "notifications/tools/list_changed");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7, "tagged with the listen request's id");
    Ok(())
}

#[tokio::test]
async fn closing_the_connection_cancels_the_request() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut meta = modern_meta(json!({}));
    meta["progressToken"] = json!("slow");
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": "long"}, "_meta": meta});
    let request = tokio::spawn({
        let url = host.url("/mcp");
        async move {
            reqwest::Client::new()
                .post(url)
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "slow_compute")
                .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).to_string())
                .send()
                .await
        }
    });
    host.wait_for_log("request admitted").await?;
    request.abort();
    let aborted = std::time::Instant::now();
    host.wait_for_log("the client closed a request's stream before its reply").await?;
    host.wait_for_log("a cancelled request has stopped").await?;
    assert!(aborted.elapsed() < std::time::Duration::from_secs(10), "the plugin was stopped long before its 30 s: {:?}", aborted.elapsed());
    Ok(())
}

#[tokio::test]
async fn an_input_round_started_on_one_replica_completes_on_another_sharing_the_key() -> Result<()> {
    let keys = PluginDir::new().write("state.key", [7u8; 32]).write("other.key", [9u8; 32]);
    let key = keys.path().join("state.key");
    let other = keys.path().join("other.key");
    let plugins = conformance_plugins();
    let first = HttpHost::start(plugins.path(), &["--state-key-file", key.to_str().unwrap_or_default()]).await?;
    let second = HttpHost::start(plugins.path(), &["--state-key-file", key.to_str().unwrap_or_default()]).await?;
    let stranger = HttpHost::start(plugins.path(), &["--state-key-file", other.to_str().unwrap_or_default()]).await?;

    let round = json_of(post(&first, "tools/call", json!({"name": "test_input_required_result_request_state", "arguments": {}}), &[]).await?).await?;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let (key_name, _) = round["result"]["inputRequests"].as_object().and_then(|r| r.iter().next()).expect("one question");
    let state = round["result"]["requestState"].clone();
    let retry = json!({
        "name": "test_input_required_result_request_state",
        "arguments": {},
        "inputResponses": {key_name: {"action": "accept", "content": {"ok": true}}},
        "requestState": state,
    });
    let done = json_of(post(&second, "tools/call", retry.clone(), &[]).await?).await?;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().is_some_and(|t| t.starts_with("state-ok")), "{done}");

    let refused = post(&stranger, "tools/call", retry, &[]).await?;
    let refused = json_of(refused).await?;
    assert_eq!(refused["error"]["code"], -32602, "a replica with another key cannot open the state: {refused}");
    Ok(())
}

#[tokio::test]
async fn an_event_stream_starts_with_its_first_event_in_the_same_write_as_the_headers() -> Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    // The reply is the stream's first event, and it exists only after half a second of work: a
    // server that sent the headers ahead of it would be read here on their own.
    let params = json!({"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "late"}, "_meta": modern_meta(json!({}))});
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\ncontent-type: application/json\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: slow_compute\r\ncontent-length: {}\r\n\r\n{body}",
        host.addr,
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(host.addr).await?;
    socket.write_all(request.as_bytes()).await?;
    let mut first = vec![0u8; 64 << 10];
    let n = tokio::time::timeout(std::time::Duration::from_secs(10), socket.read(&mut first)).await??;
    let first = String::from_utf8_lossy(&first[..n]);
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
    assert!(first.to_ascii_lowercase().contains("content-type: text/event-stream"), "{first}");
    assert!(first.contains("event: message\ndata: ") && first.contains("late: computed in 0.5 s"), "the headers came without the first event: {first}");
    Ok(())
}
