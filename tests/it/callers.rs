//! Caller policy on the real binary over HTTP: tool policy per token holder (a hidden tool is
//! answered like an unknown one, in content and in time), approvals answered by the official
//! Python client in both eras, rate limits as HTTP 429 with `Retry-After`, the audit file, and
//! `paddock check` naming rules that match nothing.

use std::time::{Duration, Instant};

use anyhow::Result;
use paddock_tests::http::{HttpHost, modern_meta};
use paddock_tests::{PluginDir, fixture_wasm, installed_client, run_client_script, run_paddock};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef01";

fn digest(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The conformance plugin without a prefix, `policy` in its `paddock.toml`, and a tokens file
/// naming alice and bob.
fn served_with(policy: &str) -> PluginDir {
    let tokens = format!("[[token]]\nname = \"alice\"\nsha256 = \"{}\"\n\n[[token]]\nname = \"bob\"\nsha256 = \"{}\"\n", digest(ALICE), digest(BOB));
    PluginDir::new()
        .add("conformance", &fixture_wasm("conformance"))
        .write("paddock.toml", format!("[plugins.conformance]\nexpose = {{ prefix = \"\" }}\n\n{policy}"))
        .write("tokens.toml.txt", tokens)
}

async fn start(plugins: &PluginDir, extra: &[&str]) -> Result<HttpHost> {
    let tokens = plugins.path().join("tokens.toml.txt");
    let mut args = vec!["--tokens", tokens.to_str().unwrap_or_default()];
    args.extend_from_slice(extra);
    HttpHost::start(plugins.path(), &args).await
}

/// A 2026-07-28 `tools/call` of `name` as `token`'s holder.
async fn call(host: &HttpHost, token: &str, name: &str) -> Result<reqwest::Response> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": modern_meta(json!({}))}});
    Ok(reqwest::Client::new()
        .post(host.url("/mcp"))
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await?)
}

/// The first `count` records of the audit file, once it has them (the writer gathers records
/// for a moment before it writes them).
async fn audit_records(path: &std::path::Path, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let records: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if records.len() >= count {
            return records;
        }
        assert!(Instant::now() < deadline, "audit records: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const HIDE_FROM_BOB: &str = r#"
[[access.rule]]
name = "no error tools for bob"
who = ["principal:token bob"]
tools = ["test_error_handling"]
effect = "deny"
"#;

#[tokio::test]
async fn a_hidden_tool_is_answered_like_an_unknown_one_in_content_status_and_time() -> Result<()> {
    let plugins = served_with(HIDE_FROM_BOB);
    let host = start(&plugins, &[]).await?;
    let as_alice = call(&host, ALICE, "test_error_handling").await?;
    assert_eq!(as_alice.status(), 200);
    let served: Value = as_alice.json().await?;
    assert!(served.get("result").is_some(), "alice may use it: {served}");

    let hidden = call(&host, BOB, "test_error_handling").await?;
    let unknown = call(&host, BOB, "test_no_such_tool").await?;
    assert_eq!(hidden.status(), unknown.status());
    let (hidden, unknown): (Value, Value) = (hidden.json().await?, unknown.json().await?);
    assert_eq!(
        hidden["error"].to_string().replace("test_error_handling", "X"),
        unknown["error"].to_string().replace("test_no_such_tool", "X"),
        "the same answer but for the name"
    );

    // And in time: the medians of many calls of each, interleaved, differ by less than the noise
    // of one HTTP request (what a client could measure is not a difference).
    let (mut hidden_times, mut unknown_times) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        for (name, times) in [("test_error_handling", &mut hidden_times), ("test_no_such_tool", &mut unknown_times)] {
            let started = Instant::now();
            let response = call(&host, BOB, name).await?;
            let _ = response.bytes().await?;
            times.push(started.elapsed());
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (hidden, unknown) = (median(&mut hidden_times), median(&mut unknown_times));
    let gap = hidden.abs_diff(unknown);
    assert!(gap < Duration::from_micros(150) || gap < unknown / 5, "hidden {hidden:?} vs unknown {unknown:?}");
    Ok(())
}

#[tokio::test]
async fn over_a_rate_limit_a_stateless_request_is_429_with_retry_after_and_is_logged_once_per_burst() -> Result<()> {
    let plugins = served_with("[rates]\ntools = { test_simple_text = { rate = \"1/hour\", burst = 2 } }\n");
    let host = start(&plugins, &[]).await?;
    for _ in 0..2 {
        assert_eq!(call(&host, ALICE, "test_simple_text").await?.status(), 200);
    }
    for _ in 0..5 {
        let limited = call(&host, ALICE, "test_simple_text").await?;
        assert_eq!(limited.status(), 429);
        let retry_after: u64 = limited.headers()["retry-after"].to_str()?.parse()?;
        assert!((1..=3600).contains(&retry_after), "{retry_after}");
        let body: Value = limited.json().await?;
        assert_eq!(body["error"]["code"], -32029, "{body}");
        assert_eq!(body["error"]["data"]["retryAfter"], retry_after);
    }
    assert_eq!(call(&host, BOB, "test_simple_text").await?.status(), 200, "bob has his own bucket");
    host.wait_for_log("rate limit reached").await?;
    assert_eq!(host.log_text().matches("rate limit reached").count(), 1, "one log line for the burst:\n{}", host.log_text());
    Ok(())
}

#[tokio::test]
async fn the_audit_file_records_who_called_what_over_http() -> Result<()> {
    let plugins = served_with(HIDE_FROM_BOB);
    let audit = plugins.path().join("audit.jsonl");
    let host = start(&plugins, &["--audit", audit.to_str().unwrap_or_default()]).await?;
    assert_eq!(call(&host, ALICE, "test_simple_text").await?.status(), 200);
    let _ = call(&host, BOB, "test_error_handling").await?;
    let records = audit_records(&audit, 2).await;
    assert_eq!(records[0]["principal"], "token alice");
    assert_eq!(records[0]["transport"], "streamable-http");
    assert_eq!(records[0]["revision"], "2026-07-28");
    assert_eq!(records[0]["name"], "test_simple_text");
    assert_eq!(records[0]["plugin"], "conformance");
    assert_eq!(records[0]["outcome"], "ok");
    assert_eq!(records[1]["principal"], "token bob");
    assert_eq!(records[1]["outcome"], "denied");
    Ok(())
}

#[tokio::test]
async fn check_names_each_rule_that_matches_nothing_and_refuses_a_broken_policy() -> Result<()> {
    let plugins = served_with(
        r#"
[[access.rule]]
name = "stale"
who = ["*"]
tools = ["test_simple_text", "gone_*"]
"#,
    );
    let (code, stdout, stderr) = run_paddock(&["check", plugins.path().to_str().unwrap_or_default()]).await?;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("access rule `stale`: the tools pattern `gone_*` matches nothing served"), "{stdout}");
    assert!(!stdout.contains("`test_simple_text` matches nothing"), "{stdout}");

    let broken = served_with("[access]\ndefault = \"maybe\"\n");
    let (code, stdout, stderr) = run_paddock(&["check", broken.path().to_str().unwrap_or_default()]).await?;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("access.default") && stderr.contains("\"allow\" or \"deny\""), "{stderr}");
    Ok(())
}

const ASK_BEFORE_TEXT: &str = r#"
[[access.rule]]
name = "ask first"
who = ["*"]
tools = ["test_simple_text"]
approval = "ask"
"#;

#[tokio::test]
async fn the_python_client_answers_approvals_and_meets_hidden_tools_in_both_eras() -> Result<()> {
    let Some(python) = installed_client("PADDOCK_TEST_PYTHON", "the Python client (mcp 2.3.0)") else { return Ok(()) };
    let plugins = served_with(&format!("{ASK_BEFORE_TEXT}{HIDE_FROM_BOB}"));
    let host = start(&plugins, &[]).await?;
    let url = host.url("");
    for mode in ["legacy", "2026-07-28"] {
        for (answer, runs) in [("yes", true), ("no", false), ("dismiss", false)] {
            let args: Vec<&std::ffi::OsStr> = [url.as_str(), mode, BOB, answer].into_iter().map(std::ffi::OsStr::new).collect();
            let summary = run_client_script(&python, "py/e2e_policy.py", &args, || format!("server log:\n{}", host.log_text())).await;
            assert_eq!(summary["protocol_version"], if mode == "legacy" { "2025-11-25" } else { "2026-07-28" }, "{summary}");
            assert_eq!(summary["hidden_listed"], false, "{summary}");
            let (hidden, unknown) = (summary["hidden_error"].as_str().unwrap_or(""), summary["unknown_error"].as_str().unwrap_or(""));
            assert_eq!(hidden.replace("test_error_handling", "X"), unknown.replace("test_no_such_tool", "X"), "{summary}");
            let forms = summary["forms"].as_array().expect("forms");
            assert_eq!(forms.len(), 1, "asked once: {summary}");
            let form = forms[0].as_str().unwrap_or("");
            assert!(form.contains("token bob") && form.contains("test_simple_text"), "{form}");
            assert_eq!(summary["is_error"], !runs, "{mode} {answer}: {summary}");
            if runs {
                assert_eq!(summary["text"], "This is a simple text response for testing.", "{summary}");
            } else {
                assert!(summary["text"].as_str().unwrap_or("").contains("not approved"), "{summary}");
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_missing_scope_is_403_with_the_challenge_naming_it() -> Result<()> {
    let scoped = r#"
[[access.rule]]
name = "text needs a scope"
who = ["*"]
tools = ["test_simple_text"]
scopes = ["text.read"]
"#;
    let tokens = format!(
        "[[token]]\nname = \"alice\"\nsha256 = \"{}\"\nscopes = [\"text.read\"]\n\n[[token]]\nname = \"bob\"\nsha256 = \"{}\"\n",
        digest(ALICE),
        digest(BOB)
    );
    let plugins = served_with(scoped).write("tokens.toml.txt", tokens);
    let host = start(&plugins, &[]).await?;
    assert_eq!(call(&host, ALICE, "test_simple_text").await?.status(), 200, "alice's token grants the scope");
    let refused = call(&host, BOB, "test_simple_text").await?;
    assert_eq!(refused.status(), 403);
    assert_eq!(refused.headers()["www-authenticate"].to_str()?, r#"Bearer error="insufficient_scope", scope="text.read""#);
    let body: Value = refused.json().await?;
    assert_eq!(body["error"]["code"], -32003, "{body}");
    assert_eq!(body["error"]["data"]["requiredScopes"], json!(["text.read"]));
    Ok(())
}

#[tokio::test]
async fn an_audit_record_counts_what_the_plugin_was_refused_on_stdio() -> Result<()> {
    let plugins = PluginDir::new()
        .add("fixture", &fixture_wasm("fixture"))
        .write("paddock.toml", "[plugins.fixture]\nfiles = [{ host = \"./data\", guest = \"/data\", mode = \"ro\" }]\n");
    std::fs::create_dir(plugins.path().join("data"))?;
    let audit = plugins.path().join("audit.jsonl");
    let mut host = paddock_tests::StdioHost::start(plugins.path(), &["--audit", audit.to_str().unwrap_or_default(), "--principal", "ada"])?;
    host.initialize("2025-11-25").await?;
    let written = host.call_tool("fixture_write", json!({"path": "/data/x", "content": "no"})).await?;
    assert!(written.to_string().contains("error") || written["result"]["isError"] == true, "a read-only grant refuses the write: {written}");
    host.call_tool("fixture_echo", json!({"text": "fine"})).await?;
    let records = audit_records(&audit, 2).await;
    assert_eq!(records[0]["principal"], "local ada");
    assert_eq!(records[0]["transport"], "stdio");
    assert!(records[0]["refusals"].as_u64().is_some_and(|n| n >= 1), "{:?}", records[0]);
    assert!(records[1].get("refusals").is_none(), "a call refused nothing carries no count: {:?}", records[1]);
    host.close().await?;
    Ok(())
}

#[tokio::test]
async fn a_stopping_server_writes_every_audit_record_before_it_exits() -> Result<()> {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let audit = plugins.path().join("audit.jsonl");
    let mut host = paddock_tests::StdioHost::start(plugins.path(), &["--audit", audit.to_str().unwrap_or_default()])?;
    host.initialize("2025-11-25").await?;
    for n in 0..50 {
        host.call_tool("fixture_echo", json!({"text": format!("call {n}")})).await?;
    }
    assert_eq!(host.close().await?, 0);
    let text = std::fs::read_to_string(&audit)?;
    assert_eq!(text.lines().count(), 50, "every record is in the file when the process has exited");
    Ok(())
}
