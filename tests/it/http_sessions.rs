//! Streamable HTTP, legacy sessions, on the real binary: session ids, status codes, the GET
//! stream, questions answered by POST, resumption after a dropped stream, DELETE, expiry and
//! the cap on sessions.

use anyhow::Result;
use paddock_tests::http::{EventReader, HttpHost};
use paddock_tests::{WAIT, conformance_plugins};
use serde_json::{Value, json};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A legacy session opened over HTTP.
struct LegacySession {
    client: reqwest::Client,
    url: String,
    id: String,
    next_id: i64,
}

impl LegacySession {
    async fn open(host: &HttpHost) -> Result<LegacySession> {
        let client = reqwest::Client::new();
        let url = host.url("/mcp");
        let response = client
            .post(&url)
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "paddock-tests", "version": "0"}
                }})
                .to_string(),
            )
            .send()
            .await?;
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"].to_str()?.to_owned();
        let mut events = EventReader::new(response);
        let reply = events.next_message().await?;
        assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
        let session = LegacySession { client, url, id, next_id: 1 };
        let initialized = session.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        assert_eq!(initialized.status(), 202);
        Ok(session)
    }

    async fn post(&self, body: Value) -> Result<reqwest::Response> {
        Ok(self
            .client
            .post(&self.url)
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await?)
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
    }
}

#[tokio::test]
async fn a_session_is_opened_used_and_deleted_with_the_statuses_the_spec_names() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut session = LegacySession::open(&host).await?;
    // The replica's id (the host name made into a DNS label), then 128 random bits and a seal.
    let (replica, sealed) = session.id.split_once('.').expect("an owner-tagged id");
    assert!(!replica.is_empty() && replica.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{}", session.id);
    assert_eq!(sealed.len(), 43, "32 bytes in base64url: {}", session.id);
    assert!(session.id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII: {}", session.id);

    // Answered as SSE: a priming event with an id and a retry, then the reply.
    let list = session.request("tools/list", json!({}));
    let response = session.post(list).await?;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventReader::new(response);
    let priming = events.next().await?.expect("priming event");
    assert!(priming.id.is_some() && priming.data.is_empty(), "{priming:?}");
    let reply = events.next_message().await?;
    assert!(reply["result"]["tools"].as_array().is_some_and(|t| t.len() > 10), "{reply}");
    assert!(events.next().await?.is_none(), "the stream ends after the reply");

    // A client that takes only JSON gets JSON.
    let ping = session.request("ping", json!({}));
    let response =
        session.client.post(&session.url).header("accept", "application/json").header("mcp-session-id", &session.id).body(ping.to_string()).send().await?;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let reply: Value = serde_json::from_str(&response.text().await?)?;
    assert_eq!(reply["result"], json!({}));

    // Requests without a session, with an unknown one, or with a bad version header.
    let no_session = session.client.post(&session.url).header("accept", ACCEPT_BOTH).body(session.request("tools/list", json!({})).to_string()).send().await?;
    assert_eq!(no_session.status(), 400);
    let unknown = session
        .client
        .post(&session.url)
        .header("accept", ACCEPT_BOTH)
        .header("mcp-session-id", "0".repeat(32))
        .body(session.request("tools/list", json!({})).to_string())
        .send()
        .await?;
    assert_eq!(unknown.status(), 404);
    let bad_version = session
        .client
        .post(&session.url)
        .header("accept", ACCEPT_BOTH)
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "1999-01-01")
        .body(session.request("tools/list", json!({})).to_string())
        .send()
        .await?;
    assert_eq!(bad_version.status(), 400);
    let not_json = session.client.post(&session.url).header("accept", ACCEPT_BOTH).header("mcp-session-id", &session.id).body("{nope").send().await?;
    assert_eq!(not_json.status(), 400);
    let parse_error: Value = serde_json::from_str(&not_json.text().await?)?;
    assert_eq!(parse_error["error"]["code"], -32700);
    let html_only = session
        .client
        .post(&session.url)
        .header("accept", "text/html")
        .header("mcp-session-id", &session.id)
        .body(session.request("ping", json!({})).to_string())
        .send()
        .await?;
    assert_eq!(html_only.status(), 406);
    let wrong_type = session
        .client
        .post(&session.url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "text/plain")
        .header("mcp-session-id", &session.id)
        .body(session.request("ping", json!({})).to_string())
        .send()
        .await?;
    assert_eq!(wrong_type.status(), 415);
    let get_without = session.client.get(&session.url).header("accept", "text/event-stream").send().await?;
    assert_eq!(get_without.status(), 400);
    let put = session.client.put(&session.url).send().await?;
    assert_eq!(put.status(), 405);

    // DELETE ends it: the id is unknown from then on.
    let deleted = session.client.delete(&session.url).header("mcp-session-id", &session.id).send().await?;
    assert_eq!(deleted.status(), 200);
    let list = session.request("tools/list", json!({}));
    let after = session.post(list).await?;
    assert_eq!(after.status(), 404);
    let again = session.client.delete(&session.url).header("mcp-session-id", &session.id).send().await?;
    assert_eq!(again.status(), 404);
    Ok(())
}

#[tokio::test]
async fn questions_go_out_on_the_request_stream_and_changes_on_the_get_stream() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut session = LegacySession::open(&host).await?;
    let get = session.client.get(&session.url).header("accept", "text/event-stream").header("mcp-session-id", &session.id).send().await?;
    assert_eq!(get.status(), 200);
    let mut standalone = EventReader::new(get);

    // The plugin's question arrives on the POST's stream; the answer is POSTed back (202).
    let call = session.request("tools/call", json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"}}));
    let mut stream = EventReader::new(session.post(call).await?);
    let question = stream.next_message().await?;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});
    assert_eq!(session.post(answer).await?.status(), 202);
    let reply = stream.next_message().await?;
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("User response: ") && text.contains("ada@example.com"), "{reply}");

    // A change another request causes reaches the session's GET stream.
    let trigger = session.request("tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}}));
    let mut triggered = EventReader::new(session.post(trigger).await?);
    assert!(triggered.next_message().await?["result"].is_object());
    let change = tokio::time::timeout(WAIT, standalone.next_message()).await??;
    assert_eq!(change["method"], "notifications/tools/list_changed", "{change}");
    Ok(())
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_after_its_last_event_without_loss_or_repeats() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut session = LegacySession::open(&host).await?;
    let mut call = session.request("tools/call", json!({"name": "test_tool_with_progress", "arguments": {}}));
    call["params"]["_meta"] = json!({"progressToken": "resume-1"});
    let mut first = EventReader::new(session.post(call).await?);
    let priming = first.next().await?.expect("priming");
    let progress = first.next().await?.expect("first progress");
    assert_eq!(progress.json()?["method"], "notifications/progress");
    let last_seen = progress.id.clone().expect("events carry ids");
    assert!(last_seen.split_once('-').is_some_and(|(stream, _)| priming.id.as_deref().is_some_and(|p| p.starts_with(&format!("{stream}-")))));
    drop(first); // the connection drops mid-call

    let resumed = session
        .client
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("last-event-id", &last_seen)
        .send()
        .await?;
    assert_eq!(resumed.status(), 200);
    let mut resumed = EventReader::new(resumed);
    let mut progress_seen = vec![progress.json()?["params"]["progress"].as_f64().unwrap_or(-1.0)];
    let mut ids = vec![last_seen.clone()];
    let reply = loop {
        let event = resumed.next().await?.expect("the resumed stream carries on until the reply");
        ids.push(event.id.clone().expect("id"));
        let message = event.json()?;
        if message.get("id").is_some() {
            break message;
        }
        progress_seen.push(message["params"]["progress"].as_f64().unwrap_or(-1.0));
    };
    assert_eq!(reply["result"]["content"][0]["text"], "resume-1", "{reply}");
    assert_eq!(progress_seen, vec![0.0, 50.0, 100.0], "every progress event exactly once, in order");
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique, ids);
    assert!(resumed.next().await?.is_none(), "the resumed stream ends with the reply");

    let unknown = session
        .client
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("last-event-id", "999-0")
        .send()
        .await?;
    assert_eq!(unknown.status(), 400);
    Ok(())
}

#[tokio::test]
async fn idle_sessions_expire_and_the_number_of_sessions_is_capped() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &["--session-idle", "300ms", "--max-sessions", "2"]).await?;
    let first = LegacySession::open(&host).await?;
    let _second = LegacySession::open(&host).await?;
    let refused = first
        .client
        .post(&first.url)
        .header("accept", ACCEPT_BOTH)
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string())
        .send()
        .await?;
    assert_eq!(refused.status(), 503, "a third session is over the cap");

    let line = host.wait_for_log(&format!("\"session\":\"{}\"", first.id)).await?;
    assert!(line.contains("session expired after being idle"), "{line}");
    let expired = first.post(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"})).await?;
    assert_eq!(expired.status(), 404);
    let room_again = LegacySession::open(&host).await;
    assert!(room_again.is_ok(), "expired sessions free their places");
    Ok(())
}

/// Sends one session POST over a raw connection and returns what the first read brings, and how
/// long it took.
async fn first_read_of_post(host: &HttpHost, session: &LegacySession, body: &Value) -> Result<(String, std::time::Duration)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\naccept: {ACCEPT_BOTH}\r\ncontent-type: application/json\r\nmcp-session-id: {}\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
        host.addr,
        session.id,
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(host.addr).await?;
    let sent = std::time::Instant::now();
    socket.write_all(request.as_bytes()).await?;
    let mut first = vec![0u8; 64 << 10];
    let n = tokio::time::timeout(WAIT, socket.read(&mut first)).await??;
    Ok((String::from_utf8_lossy(&first[..n]).into_owned(), sent.elapsed()))
}

#[tokio::test]
async fn a_reply_ready_at_once_goes_out_with_the_headers_and_a_long_call_is_primed_before_it_ends() -> Result<()> {
    let plugins = conformance_plugins();
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let mut session = LegacySession::open(&host).await?;
    // A quick call: headers, the priming event and the reply in the first read.
    let greet = session.request("tools/call", json!({"name": "greet", "arguments": {"name": "Ada"}}));
    let (first, _) = first_read_of_post(&host, &session, &greet).await?;
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n") && first.to_ascii_lowercase().contains("content-type: text/event-stream"), "{first}");
    assert!(first.contains("retry: "), "the stream is primed: {first}");
    assert!(first.contains("Hello, Ada!"), "the headers came without the reply: {first}");
    // A call still running: its stream starts, primed, long before the reply.
    let slow = session.request("tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 2.0, "label": "late"}}));
    let (first, took) = first_read_of_post(&host, &session, &slow).await?;
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n") && first.contains("retry: "), "{first}");
    assert!(!first.contains("late: computed"), "the first read waited for the reply: {first}");
    assert!(took < std::time::Duration::from_secs(1), "the stream started only after {took:?}");
    Ok(())
}
