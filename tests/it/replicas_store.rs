//! Three replicas sharing a real `redis-server` (`--store`): a 2026-07-28 task created through
//! one replica is polled, answered and cancelled through the others; the replica a task waiting
//! for input started on is killed and another finishes it; a resource update announced on one
//! replica reaches a listen stream on another; and the store stopped and started again mid-run,
//! missing at start, and optional.

use std::time::Duration;

use anyhow::{Context, Result};
use paddock_tests::http::{EventReader, HttpHost, modern_meta};
use paddock_tests::redis::RedisServer;
use paddock_tests::replicas::{Cluster, legacy_post};
use paddock_tests::{WAIT, conformance_plugins};
use serde_json::{Value, json};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// POSTs a 2026-07-28 request declaring the tasks extension, with the headers its method needs.
async fn modern(host: &HttpHost, method: &str, mut params: Value) -> Result<reqwest::Response> {
    params["_meta"] = modern_meta(json!({"elicitation": {}, "extensions": {TASKS: {}}}));
    let name = params.get("name").or_else(|| params.get("uri")).or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
    let mut request = reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    Ok(request.body(body.to_string()).send().await?)
}

async fn result_of(host: &HttpHost, method: &str, params: Value) -> Result<Value> {
    let response = modern(host, method, params).await?;
    let text = response.text().await?;
    let reply: Value = serde_json::from_str(&text).with_context(|| format!("{method}: {text}"))?;
    Ok(reply)
}

/// An empty result (`tasks/update`, `tasks/cancel`): no error, nothing but the result's own
/// `resultType` and `_meta`.
fn acknowledged(reply: &Value) {
    let result = reply["result"].as_object().unwrap_or_else(|| panic!("a result: {reply}"));
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    assert!(result.keys().all(|k| k == "resultType" || k == "_meta"), "{reply}");
}

/// Polls `tasks/get` through `host` until the task's status is `status`.
async fn poll_until(host: &HttpHost, id: &str, status: &str) -> Result<Value> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let reply = result_of(host, "tasks/get", json!({"taskId": id})).await?;
        if reply["result"]["status"] == status {
            return Ok(reply["result"].clone());
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "task {id} never became {status}: {reply}");
        // The client polls, as `pollIntervalMs` asks it to (shortened here).
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn start(redis: &RedisServer, count: usize) -> Result<Cluster> {
    let plugins = conformance_plugins();
    let url = redis.url();
    let cluster = Cluster::start(plugins.path(), count, &["--store", &url]).await?;
    // The folder must outlive the replicas serving it.
    std::mem::forget(plugins);
    Ok(cluster)
}

#[tokio::test]
async fn a_task_created_through_one_replica_is_polled_answered_and_cancelled_through_the_others() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let cluster = start(&redis, 3).await?;
    let (r0, r1, r2) = (cluster.replica(0), cluster.replica(1), cluster.replica(2));

    // A task that asks within itself: created on r0, seen waiting through r1.
    let created = result_of(r0, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}})).await?;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().context("a task id")?.to_owned();
    assert!(id.starts_with("paddock-0."), "{id}");
    let waiting = poll_until(r1, &id, "input_required").await?;
    let (key, _) = waiting["inputRequests"].as_object().and_then(|r| r.iter().next()).context("a question")?;
    // Answered through r2, which runs the next round; the result read through r0.
    let answer = json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"confirm": true}}}});
    acknowledged(&result_of(r2, "tasks/update", answer).await?);
    let done = poll_until(r0, &id, "completed").await?;
    assert_eq!(done["result"]["content"][0]["text"], "Deleted a.txt", "{done}");

    // A long task started on r1, cancelled through r2: r1 stops running it.
    let slow = result_of(r1, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 60.0, "label": "x"}})).await?;
    let slow_id = slow["result"]["taskId"].as_str().context("a task id")?.to_owned();
    assert!(slow_id.starts_with("paddock-1."), "{slow_id}");
    assert_eq!(poll_until(r0, &slow_id, "working").await?["status"], "working");
    acknowledged(&result_of(r2, "tasks/cancel", json!({"taskId": slow_id})).await?);
    let cancelled = poll_until(r0, &slow_id, "cancelled").await?;
    assert_eq!(cancelled["statusMessage"], "cancelled by the client");
    r1.wait_for_log("a task cancelled through another replica is stopped here").await?;
    // Cancelled once: again is a no-op; a finished task is left as it was.
    acknowledged(&result_of(r0, "tasks/cancel", json!({"taskId": slow_id})).await?);
    acknowledged(&result_of(r1, "tasks/cancel", json!({"taskId": id})).await?);
    assert_eq!(poll_until(r2, &id, "completed").await?["status"], "completed");

    // Ids no replica minted, or altered, are unknown everywhere.
    let mut altered = id.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    for bad in [String::from_utf8(altered)?, format!("paddock-0.{}", "A".repeat(43)), "not-a-task".to_owned()] {
        let refused = result_of(r1, "tasks/get", json!({"taskId": bad})).await?;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
    Ok(())
}

#[tokio::test]
async fn the_replica_a_waiting_task_started_on_is_killed_and_another_finishes_it() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let mut cluster = start(&redis, 3).await?;
    let created = result_of(cluster.replica(0), "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "b.txt"}})).await?;
    let id = created["result"]["taskId"].as_str().context("a task id")?.to_owned();
    let waiting = poll_until(cluster.replica(1), &id, "input_required").await?;
    let key = waiting["inputRequests"].as_object().and_then(|r| r.keys().next().cloned()).context("a question")?;
    cluster.kill(0).await?;
    let answer = json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"confirm": false}}}});
    acknowledged(&result_of(cluster.replica(1), "tasks/update", answer).await?);
    let done = poll_until(cluster.replica(2), &id, "completed").await?;
    assert_eq!(done["result"]["content"][0]["text"], "Kept b.txt", "{done}");
    Ok(())
}

#[tokio::test]
async fn changes_announced_on_one_replica_reach_listen_and_legacy_streams_on_the_others() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let cluster = start(&redis, 3).await?;
    // A legacy session's GET stream on r1.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}
    }});
    let opened = legacy_post(cluster.replica(1), None, "application/json", &init).await?;
    let session = opened.headers()["mcp-session-id"].to_str()?.to_owned();
    let get =
        reqwest::Client::new().get(cluster.replica(1).url("/mcp")).header("accept", "text/event-stream").header("mcp-session-id", &session).send().await?;
    assert_eq!(get.status(), 200);
    let mut legacy = EventReader::new(get);
    // A listen request on r2.
    let listen = modern(
        cluster.replica(2),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://watched-resource"]}}),
    )
    .await?;
    assert_eq!(listen.status(), 200);
    let mut events = EventReader::new(listen);
    let acknowledged = events.next_message().await?;
    assert_eq!(acknowledged["method"], "notifications/subscriptions/acknowledged", "{acknowledged}");
    // The feed may still be subscribing: announced until heard, each within the wait.
    let heard = tokio::time::timeout(WAIT, async {
        loop {
            let triggered = result_of(cluster.replica(0), "tools/call", json!({"name": "test_trigger_resource_update", "arguments": {}})).await?;
            anyhow::ensure!(triggered["result"]["content"][0]["text"] == "Update announced", "{triggered}");
            if let Ok(Ok(message)) = tokio::time::timeout(Duration::from_millis(500), events.next_message()).await {
                return Ok(message);
            }
        }
    })
    .await??;
    assert_eq!(heard["method"], "notifications/resources/updated", "{heard}");
    assert_eq!(heard["params"]["uri"], "test://watched-resource");
    // A tool list change announced by r0's plugin: every replica reads its lists again, and
    // its listeners hear of it.
    let triggered = result_of(cluster.replica(0), "tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}})).await?;
    assert_eq!(triggered["result"]["content"][0]["text"], "Mutation triggered", "{triggered}");
    let changed = loop {
        let message = events.next_message().await?;
        if message["method"] != "notifications/resources/updated" {
            break message;
        }
    };
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    let changed = legacy.next_message().await?;
    assert_eq!(changed["method"], "notifications/tools/list_changed", "the legacy GET stream on r1 hears it: {changed}");
    for index in [1, 2] {
        cluster.replica(index).wait_for_log("plugin lists read again after a change").await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_task_whose_question_is_not_answered_in_time_is_cancelled_on_the_next_read() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let plugins = conformance_plugins();
    let url = redis.url();
    let cluster = Cluster::start(plugins.path(), 2, &["--store", &url, "--input-timeout", "1s"]).await?;
    let created = result_of(cluster.replica(0), "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "g.txt"}})).await?;
    let id = created["result"]["taskId"].as_str().context("a task id")?.to_owned();
    poll_until(cluster.replica(1), &id, "input_required").await?;
    // Nothing waits for the answer on any replica: the next read past the deadline cancels it.
    let cancelled = poll_until(cluster.replica(1), &id, "cancelled").await?;
    assert_eq!(cancelled["statusMessage"], "the client did not answer in time", "{cancelled}");
    let late = json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    acknowledged(&result_of(cluster.replica(0), "tasks/update", late).await?);
    assert_eq!(poll_until(cluster.replica(0), &id, "cancelled").await?["status"], "cancelled", "a late answer changes nothing");
    Ok(())
}

#[tokio::test]
async fn the_store_stopped_mid_run_fails_task_methods_naming_it_while_plain_calls_go_on_and_it_is_used_again_when_back() -> Result<()> {
    let Some(mut redis) = RedisServer::start().await? else { return Ok(()) };
    // A rate limit and an approval, which the store shares while it is there.
    let policy = "[rates]\ntools = { test_simple_text = { rate = \"100/minute\", burst = 100 } }\n\n[[access.rule]]\nname = \"ask first\"\nwho = [\"*\"]\ntools = [\"test_image_content\"]\napproval = \"ask\"\n";
    let plugins = paddock_tests::PluginDir::new()
        .add("conformance", &paddock_tests::fixture_wasm("conformance"))
        .write("paddock.toml", format!("[plugins.conformance]\nexpose = {{ prefix = \"\" }}\n{policy}"));
    let url = redis.url();
    let cluster = Cluster::start(plugins.path(), 2, &["--store", &url]).await?;
    let (r0, r1) = (cluster.replica(0), cluster.replica(1));
    let created = result_of(r0, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "c.txt"}})).await?;
    let id = created["result"]["taskId"].as_str().context("a task id")?.to_owned();
    poll_until(r1, &id, "input_required").await?;
    // A listener on r1, and an approval asked before the store goes.
    let listen = modern(r1, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})).await?;
    let mut listener = EventReader::new(listen);
    assert_eq!(listener.next_message().await?["method"], "notifications/subscriptions/acknowledged");
    let asked = result_of(r0, "tools/call", json!({"name": "test_image_content", "arguments": {}})).await?;
    let approval = json!({
        "name": "test_image_content", "arguments": {},
        "inputResponses": {"paddock.approval": {"action": "accept", "content": {"approve": true}}},
        "requestState": asked["result"]["requestState"],
    });

    redis.stop().await?;
    let started = std::time::Instant::now();
    let failed = modern(r1, "tasks/get", json!({"taskId": id})).await?;
    assert_eq!(failed.status(), 500);
    let failed: Value = failed.json().await?;
    assert_eq!(failed["error"]["code"], -32603);
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("shared store") && message.contains(&redis.url()), "the error names the store: {message}");
    assert!(started.elapsed() < Duration::from_secs(5), "no wait on a store that is gone: {:?}", started.elapsed());
    // A call that would become a task is refused the same way; a plain call is served.
    let refused = result_of(r0, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "d.txt"}})).await?;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let plain = result_of(r0, "tools/call", json!({"name": "test_simple_text", "arguments": {}})).await?;
    assert!(plain["result"]["content"][0]["text"].is_string(), "rate-limited calls go on, on this replica's own buckets: {plain}");
    // An approval is refused rather than risk a second use.
    let refused = result_of(r1, "tools/call", approval.clone()).await?;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let ready: Value = reqwest::Client::new().get(r0.url("/readyz")).header("accept", "application/json").send().await?.json().await?;
    assert_eq!(ready["store"]["ok"], false, "{ready}");

    // Back (empty: nothing was persisted): new tasks work through every replica again.
    redis.restart().await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    let id = loop {
        let created = result_of(r1, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "e.txt"}})).await?;
        if let Some(id) = created["result"]["taskId"].as_str() {
            break id.to_owned();
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "the store was not used again: {created}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(poll_until(r0, &id, "input_required").await?["status"], "input_required");
    // The listener on r1 may have missed changes meanwhile: it is told everything it follows
    // may have changed.
    let resync = listener.next_message().await?;
    assert_eq!(resync["method"], "notifications/tools/list_changed", "{resync}");
    // The approval asked before, answered now: spent once, in the store again.
    let approved = result_of(r1, "tools/call", approval.clone()).await?;
    assert_eq!(approved["result"]["content"][0]["type"], "image", "{approved}");
    assert_eq!(result_of(r0, "tools/call", approval).await?["error"]["code"], -32602);
    Ok(())
}

#[tokio::test]
async fn a_store_that_does_not_answer_at_start_stops_the_start_unless_it_is_optional() -> Result<()> {
    let plugins = conformance_plugins();
    let keys = tempfile::tempdir()?;
    let key = keys.path().join("state.key");
    std::fs::write(&key, [7u8; 32])?;
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let url = format!("redis://127.0.0.1:{}", paddock_tests::free_port());
    let key_arg = key.display().to_string();
    let refused = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(paddock_tests::paddock_bin())
            .args(["serve", &plugins.path().display().to_string(), "--http", "127.0.0.1:0", "--state-key-file", &key_arg, "--store", &url])
            .env("PADDOCK_CACHE_DIR", paddock_tests::test_cache_dir())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await??;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "it must not serve without its store: {said}");
    assert!(said.contains(&url) && said.contains("--store-optional"), "the refusal names the store and the way out: {said}");
    let optional = HttpHost::start(plugins.path(), &["--state-key-file", &key_arg, "--store", &url, "--store-optional"]).await?;
    let plain = result_of(&optional, "tools/call", json!({"name": "test_simple_text", "arguments": {}})).await?;
    assert!(plain["result"]["content"][0]["text"].is_string(), "{plain}");
    let task = result_of(&optional, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "f.txt"}})).await?;
    assert_eq!(task["error"]["code"], -32603, "{task}");
    Ok(())
}

#[tokio::test]
async fn a_rate_limit_holds_across_replicas_and_an_approval_is_spent_once_on_any_of_them() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let policy = r#"
[rates]
tools = { test_simple_text = { rate = "1/hour", burst = 2 } }

[[access.rule]]
name = "ask first"
who = ["*"]
tools = ["test_image_content"]
approval = "ask"
"#;
    let plugins = paddock_tests::PluginDir::new()
        .add("conformance", &paddock_tests::fixture_wasm("conformance"))
        .write("paddock.toml", format!("[plugins.conformance]\nexpose = {{ prefix = \"\" }}\n{policy}"));
    let url = redis.url();
    let cluster = Cluster::start(plugins.path(), 3, &["--store", &url]).await?;
    let call = |index: usize| result_of(cluster.replica(index), "tools/call", json!({"name": "test_simple_text", "arguments": {}}));
    // Two uses of the burst, through two replicas; the third is refused on a third replica.
    assert!(call(0).await?["result"]["content"].is_array());
    assert!(call(1).await?["result"]["content"].is_array());
    let limited = modern(cluster.replica(2), "tools/call", json!({"name": "test_simple_text", "arguments": {}})).await?;
    assert_eq!(limited.status(), 429, "one bucket for the cluster");
    let retry: u64 = limited.headers()["retry-after"].to_str()?.parse()?;
    assert!((1..=3600).contains(&retry), "{retry}");

    // An approval asked through r0, answered through r1, replayed through r2: spent once.
    let asked = result_of(cluster.replica(0), "tools/call", json!({"name": "test_image_content", "arguments": {}})).await?;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let answer = json!({
        "name": "test_image_content", "arguments": {},
        "inputResponses": {"paddock.approval": {"action": "accept", "content": {"approve": true}}},
        "requestState": state,
    });
    let approved = result_of(cluster.replica(1), "tools/call", answer.clone()).await?;
    assert_eq!(approved["result"]["content"][0]["type"], "image", "{approved}");
    let replayed = result_of(cluster.replica(2), "tools/call", answer).await?;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert!(replayed["error"]["message"].as_str().unwrap_or_default().contains("already answered"), "{replayed}");
    Ok(())
}

#[tokio::test]
async fn a_rolling_restart_answers_every_call_it_cannot_finish_and_hands_running_tasks_to_another_replica() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let plugins = conformance_plugins();
    let url = redis.url();
    let mut cluster = Cluster::start(plugins.path(), 2, &["--store", &url, "--shutdown-grace", "1s"]).await?;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "paddock-tests", "version": "0"}
    }});
    let opened = legacy_post(cluster.replica(0), None, "application/json", &init).await?;
    let session = opened.headers()["mcp-session-id"].to_str()?.to_owned();
    let slow = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow_compute", "arguments": {"seconds": 30.0, "label": "late"}}});
    // A call of r0's session through r1 (forwarded), taking JSON only; one on r0 itself over SSE.
    let forwarded = tokio::spawn({
        let url = cluster.replica(1).url("/mcp");
        let (session, body) = (session.clone(), slow(1).to_string());
        async move {
            let response = reqwest::Client::new()
                .post(url)
                .header("accept", "application/json")
                .header("content-type", "application/json")
                .header("mcp-session-id", session)
                .body(body)
                .send()
                .await?;
            anyhow::Ok((response.status(), response.text().await?))
        }
    });
    let direct = legacy_post(cluster.replica(0), Some(&session), "application/json, text/event-stream", &slow(2)).await?;
    let mut direct = EventReader::new(direct);
    // A task running on r0: it becomes a task, then r0 is told to stop.
    let task = result_of(cluster.replica(0), "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 3.0, "label": "handed"}})).await?;
    let id = task["result"]["taskId"].as_str().context("a task")?.to_owned();
    cluster.replica(0).wait_for_logs("request admitted", 3).await?;
    cluster.replica(0).terminate()?;

    // Nothing is dropped without a reply: each call gets its JSON-RPC error.
    let (status, text) = tokio::time::timeout(WAIT, forwarded).await???;
    let reply: Value = serde_json::from_str(&text).with_context(|| format!("{status}: {text}"))?;
    assert_eq!(reply["id"], 1, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap_or_default().contains("shutting down"), "{reply}");
    let reply = direct.next_message().await?;
    assert_eq!(reply["id"], 2, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap_or_default().contains("shutting down"), "{reply}");
    assert_eq!(cluster.replica_mut(0).exit_code(WAIT).await?, 0);
    // The task was handed over: r1 runs its round again and finishes it.
    let done = poll_until(cluster.replica(1), &id, "completed").await?;
    assert_eq!(done["result"]["content"][0]["text"], "handed: computed in 3 s", "{done}");
    cluster.replica(1).wait_for_log("a task another replica handed over runs here").await?;
    Ok(())
}

/// Runs `openssl` with `args` in `dir`.
async fn openssl(openssl: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> Result<()> {
    let out = tokio::process::Command::new(openssl).args(args).current_dir(dir).output().await?;
    anyhow::ensure!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Ok(())
}

#[tokio::test]
async fn a_store_over_tls_is_used_only_when_its_certificate_verifies() -> Result<()> {
    let Some(openssl_bin) = paddock_tests::installed_tool("openssl", "openssl") else { return Ok(()) };
    let Some(redis_bin) = paddock_tests::installed_tool("redis-server", "redis-server") else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    // A CA, and a certificate for localhost it signs.
    let days = "2";
    openssl(
        &openssl_bin,
        dir.path(),
        &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", days, "-subj", "/CN=paddock test CA"],
    )
    .await?;
    openssl(&openssl_bin, dir.path(), &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"])
        .await?;
    std::fs::write(dir.path().join("san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n")?;
    openssl(
        &openssl_bin,
        dir.path(),
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            days,
            "-extfile",
            "san.ext",
        ],
    )
    .await?;
    let port = paddock_tests::free_port();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let _redis = tokio::process::Command::new(redis_bin)
        .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--tls-auth-clients", "no"])
        .args(["--tls-cert-file", &path("server.pem"), "--tls-key-file", &path("server.key"), "--tls-ca-cert-file", &path("ca.pem")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "redis-server did not listen in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let plugins = conformance_plugins();
    let key = dir.path().join("state.key");
    std::fs::write(&key, [9u8; 32])?;
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let url = format!("rediss://localhost:{port}");
    let args = ["--state-key-file", &path("state.key"), "--store", &url];
    // Trusting the CA (the system's roots, as SSL_CERT_FILE names them): served, tasks shared.
    let host = HttpHost::start_with_env(plugins.path(), &args, &[("SSL_CERT_FILE", &path("ca.pem"))]).await?;
    let created = result_of(&host, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "t.txt"}})).await?;
    let id = created["result"]["taskId"].as_str().context("a task over TLS")?.to_owned();
    assert_eq!(poll_until(&host, &id, "input_required").await?["status"], "input_required");
    // Not trusting it: the start is refused, naming the certificate.
    let refused = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(paddock_tests::paddock_bin())
            .args(["serve", &plugins.path().display().to_string(), "--http", "127.0.0.1:0"])
            .args(args)
            .env("PADDOCK_CACHE_DIR", paddock_tests::test_cache_dir())
            .env("SSL_CERT_FILE", path("server.csr"))
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await??;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("certificate"), "{said}");
    Ok(())
}

#[tokio::test]
async fn another_principals_task_is_unknown_on_every_replica() -> Result<()> {
    let Some(redis) = RedisServer::start().await? else { return Ok(()) };
    let digest = |token: &str| -> String {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    let (alice, bob) = ("alice-token-0123456789abcdef", "bob-token-0123456789abcdef01");
    let list = format!("[[token]]\nname = \"alice\"\nsha256 = \"{}\"\n\n[[token]]\nname = \"bob\"\nsha256 = \"{}\"\n", digest(alice), digest(bob));
    let files = paddock_tests::PluginDir::new().write("tokens.toml", list);
    let tokens = files.path().join("tokens.toml").display().to_string();
    let plugins = conformance_plugins();
    let url = redis.url();
    let cluster = Cluster::start(plugins.path(), 2, &["--store", &url, "--tokens", &tokens]).await?;
    let as_holder = |host: &HttpHost, token: &str, method: &str, mut params: Value| {
        params["_meta"] = modern_meta(json!({"elicitation": {}, "extensions": {TASKS: {}}}));
        let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned).unwrap_or_default();
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        reqwest::Client::new()
            .post(host.url("/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(body.to_string())
            .send()
    };
    let created: Value =
        as_holder(cluster.replica(0), alice, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "h.txt"}})).await?.json().await?;
    let id = created["result"]["taskId"].as_str().context("alice's task")?.to_owned();
    for index in [0, 1] {
        let host = cluster.replica(index);
        let answer = json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
        for (method, params) in [("tasks/get", json!({"taskId": id})), ("tasks/cancel", json!({"taskId": id})), ("tasks/update", answer)] {
            let refused: Value = as_holder(host, bob, method, params).await?.json().await?;
            assert_eq!(refused["error"]["code"], -32602, "bob's {method} through replica {index}: {refused}");
            assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("unknown task"), "{refused}");
        }
    }
    // Alice's task is untouched by all that.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen: Value = as_holder(cluster.replica(1), alice, "tasks/get", json!({"taskId": id})).await?.json().await?;
        if seen["result"]["status"] == "input_required" {
            break;
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "{seen}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
