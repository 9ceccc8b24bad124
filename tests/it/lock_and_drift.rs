//! `paddock.lock` and drift control on the real binary: `--locked` refuses a file the lock does
//! not pin until it is accepted; `hold` keeps serving the old definitions until `paddock lock
//! --accept`; `block` refuses an update whatever the lock says; `warn` serves it; every drift is
//! logged with a readable diff (old and new description). A plugin's announced list change is held
//! to the same policy: `block` and `hold` keep the lists serving, `warn` serves the change.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use paddock_tests::http::{HttpHost, post_modern};
use paddock_tests::{PluginDir, first_text, fixture_wasm, run_paddock};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The `versioned` fixture as version `version`.
fn versioned(version: u32) -> Vec<u8> {
    let mut bytes = std::fs::read(fixture_wasm("versioned")).expect("the versioned fixture");
    let marker = b"paddock-versioned:v000001";
    let at = bytes.windows(marker.len()).position(|w| w == marker).expect("the marker");
    bytes[at..at + marker.len()].copy_from_slice(format!("paddock-versioned:v{version:06}").as_bytes());
    bytes
}

fn drop_in(dir: &Path, name: &str, bytes: &[u8]) {
    let part = dir.join(format!(".{name}.part"));
    std::fs::write(&part, bytes).expect("write");
    std::fs::rename(&part, dir.join(name)).expect("rename");
}

async fn readiness(host: &HttpHost) -> Result<Value> {
    let response = reqwest::Client::new().get(host.url("/readyz")).header("accept", "application/json").send().await?;
    Ok(serde_json::from_str(&response.text().await?)?)
}

/// Waits until `/readyz` satisfies `wanted`, the log growing with every look at the folder.
async fn ready_when(host: &HttpHost, what: &str, wanted: impl Fn(&Value) -> bool) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = readiness(host).await?;
        if wanted(&ready) {
            return Ok(ready);
        }
        anyhow::ensure!(Instant::now() < deadline, "{what} never happened: {ready}\nlog:\n{}", host.log_text());
        // Polled, as an operator or a probe sees it; bounded by the deadline.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn problem_says(ready: &Value, needle: &str) -> bool {
    ready["problems"].as_array().is_some_and(|p| p.iter().any(|p| p["reason"].as_str().is_some_and(|r| r.contains(needle))))
}

async fn version_answering(host: &HttpHost) -> Result<String> {
    let reply: Value = serde_json::from_str(&post_modern(host, "tools/call", json!({"name": "v_version", "arguments": {}}), &[]).await?.text().await?)?;
    Ok(first_text(&reply["result"]).to_owned())
}

async fn description(host: &HttpHost) -> Result<String> {
    let listed: Value = serde_json::from_str(&post_modern(host, "tools/list", json!({}), &[]).await?.text().await?)?;
    let tool = listed["result"]["tools"].as_array().context("tools")?.iter().find(|t| t["name"] == "v_version").cloned().context("v_version")?;
    Ok(tool["description"].as_str().unwrap_or_default().to_owned())
}

async fn paddock_lock(dir: &Path, accept: Option<&str>) -> Result<String> {
    let dir = dir.to_str().context("path")?;
    let mut args = vec!["lock", dir];
    if let Some(plugin) = accept {
        args.extend(["--accept", plugin]);
    }
    let (code, out, err) = run_paddock(&args).await?;
    anyhow::ensure!(code == 0, "paddock lock failed ({code}): {out}{err}");
    Ok(out)
}

#[tokio::test]
async fn served_locked_a_file_the_lock_does_not_pin_is_refused_until_it_is_accepted() -> Result<()> {
    let plugins = PluginDir::new();
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    let out = paddock_lock(plugins.path(), None).await?;
    assert!(out.contains("1 plugin(s) recorded"), "{out}");
    let lock = std::fs::read_to_string(plugins.path().join("paddock.lock"))?;
    assert!(lock.contains("[plugins.v]") && lock.contains("\"tool v_version\""), "{lock}");

    let host = HttpHost::start(plugins.path(), &["--locked"]).await?;
    assert_eq!(version_answering(&host).await?, "v000001");

    drop_in(plugins.path(), "v.wasm", &versioned(2));
    drop_in(plugins.path(), "w.wasm", &versioned(1));
    let ready =
        ready_when(&host, "the unpinned files refused", |r| problem_says(r, "not the one paddock.lock pins") && problem_says(r, "not in paddock.lock")).await?;
    assert_eq!(ready["generation"], 1, "{ready}");
    assert_eq!(version_answering(&host).await?, "v000001", "the locked version keeps serving");

    // Reviewed and accepted: the running server picks the lock up.
    std::fs::remove_file(plugins.path().join("w.wasm"))?;
    paddock_lock(plugins.path(), Some("v")).await?;
    ready_when(&host, "the accepted file served", |r| r["generation"].as_u64() >= Some(2) && r["problems"] == json!([])).await?;
    assert_eq!(version_answering(&host).await?, "v000002");
    Ok(())
}

#[tokio::test]
async fn drift_hold_serves_the_old_definitions_until_the_change_is_accepted_and_logs_the_diff() -> Result<()> {
    let plugins = PluginDir::new().write("paddock.toml", "[plugins.v]\ndrift = \"hold\"\n");
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    let host = HttpHost::start(plugins.path(), &[]).await?;
    drop_in(plugins.path(), "v.wasm", &versioned(2));
    let ready = ready_when(&host, "the update held", |r| problem_says(r, "update held")).await?;
    assert_eq!(ready["generation"], 1, "{ready}");
    assert_eq!(description(&host).await?, "Says which version of the plugin answers (v000001)");
    assert_eq!(version_answering(&host).await?, "v000001");
    let logged = host.wait_for_log("held until accepted").await?;
    assert!(logged.contains("description") && logged.contains("(v000001)") && logged.contains("(v000002)"), "the diff names old and new: {logged}");

    paddock_lock(plugins.path(), Some("v")).await?;
    ready_when(&host, "the accepted update served", |r| r["generation"].as_u64() >= Some(2) && r["problems"] == json!([])).await?;
    assert_eq!(description(&host).await?, "Says which version of the plugin answers (v000002)");
    assert_eq!(version_answering(&host).await?, "v000002");
    Ok(())
}

#[tokio::test]
async fn drift_block_refuses_the_update_whatever_the_lock_says_and_warn_serves_it_with_a_diff() -> Result<()> {
    let plugins = PluginDir::new().write("paddock.toml", "drift = \"block\"\n");
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    let host = HttpHost::start(plugins.path(), &[]).await?;
    drop_in(plugins.path(), "v.wasm", &versioned(2));
    ready_when(&host, "the update refused", |r| problem_says(r, "drift = block")).await?;
    assert!(host.wait_for_log("update refused").await?.contains("(v000002)"));
    // Accepting it into the lock does not move a blocked plugin while it serves.
    paddock_lock(plugins.path(), Some("v")).await?;
    ready_when(&host, "the lock read again", |r| problem_says(r, "drift = block") && r["generation"] == 1).await?;
    assert_eq!(version_answering(&host).await?, "v000001");

    // The operator drops the lock and lets updates of it through with a warning: served, the
    // diff against the version serving logged.
    std::fs::remove_file(plugins.path().join("paddock.lock"))?;
    std::fs::write(plugins.path().join("paddock.toml"), "drift = \"block\"\n[plugins.v]\ndrift = \"warn\"\n")?;
    ready_when(&host, "the update served", |r| r["generation"].as_u64() >= Some(2) && r["problems"] == json!([])).await?;
    assert_eq!(version_answering(&host).await?, "v000002");
    let warned = host.wait_for_log("changed its definitions (served)").await?;
    assert!(warned.contains("(v000001)") && warned.contains("(v000002)"), "{warned}");
    Ok(())
}

async fn tool_names(host: &HttpHost) -> Result<Vec<String>> {
    let listed: Value = serde_json::from_str(&post_modern(host, "tools/list", json!({}), &[]).await?.text().await?)?;
    Ok(listed["result"]["tools"].as_array().context("tools")?.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
}

/// The fixture announces that its tool list changed (from inside one of its calls).
async fn announce(host: &HttpHost) -> Result<()> {
    let reply: Value =
        serde_json::from_str(&post_modern(host, "tools/call", json!({"name": "fx_notice_flood", "arguments": {"count": 1}}), &[]).await?.text().await?)?;
    anyhow::ensure!(first_text(&reply["result"]) == "announced", "{reply}");
    Ok(())
}

#[tokio::test]
async fn an_announced_list_change_is_held_to_the_drift_policy_block_keeps_the_lists_and_warn_serves_it() -> Result<()> {
    // The fixture lists `extra` while /data/extra-tool exists: a catalog that changes at run time.
    let data = TempDir::new()?;
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"ro\" }}]\n", data.path());
    let plugins = PluginDir::new().add("fx", &fixture_wasm("fixture")).write("fx.toml", &grant).write("paddock.toml", "drift = \"block\"\n");
    let host = HttpHost::start(plugins.path(), &["--metrics", "127.0.0.1:0"]).await?;
    let line = host.wait_for_log("metrics_address").await?;
    let record: Value = serde_json::from_str(&line)?;
    let metrics = record.pointer("/fields/metrics_address").or_else(|| record.get("metrics_address")).and_then(Value::as_str).context("metrics_address")?;
    let metrics = format!("http://{metrics}/metrics");
    assert!(!tool_names(&host).await?.contains(&"fx_extra".to_owned()));

    std::fs::write(data.path().join("extra-tool"), b"")?;
    announce(&host).await?;
    let refused = host.wait_for_log("refused a list change").await?;
    assert!(
        refused.contains("fx") && refused.contains("drift = block") && refused.contains("fx_extra"),
        "the refusal names the plugin and the change: {refused}"
    );
    assert!(!tool_names(&host).await?.contains(&"fx_extra".to_owned()), "the lists serving stay");
    let called: Value = serde_json::from_str(&post_modern(&host, "tools/call", json!({"name": "fx_extra", "arguments": {}}), &[]).await?.text().await?)?;
    assert!(called["error"].is_object(), "a tool the policy refused is not callable: {called}");
    let scraped = reqwest::get(&metrics).await?.text().await?;
    let counted =
        scraped.lines().find_map(|l| l.strip_prefix("paddock_plugin_refusals_total{plugin=\"fx\",kind=\"drift\"} ")).and_then(|v| v.parse::<f64>().ok());
    assert!(counted.is_some_and(|n| n >= 1.0), "the refusal is counted: {scraped}");

    // The operator lets this plugin's changes through with a warning: the next announcement
    // (once the folder has read the configuration again) is served, the diff logged.
    std::fs::write(plugins.path().join("paddock.toml"), "drift = \"block\"\n[plugins.fx]\ndrift = \"warn\"\n")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tool_names(&host).await?.contains(&"fx_extra".to_owned()) {
        anyhow::ensure!(Instant::now() < deadline, "the change was never served under warn; log:\n{}", host.log_text());
        announce(&host).await?;
        // Polled, as a client would list again; bounded by the deadline.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let warned = host.wait_for_log("announced changed definitions (served)").await?;
    assert!(warned.contains("fx_extra"), "{warned}");
    Ok(())
}
