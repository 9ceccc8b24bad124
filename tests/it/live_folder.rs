//! The live plugins folder on the real binary: a plugin dropped in is announced and callable
//! within 2 s; a replaced one finishes its running call on the old version; a removed one is
//! gone; a broken or half-copied file never replaces the last good version; a grant change
//! applies from the next call; a burst of writes is a bounded number of reloads; SIGHUP looks
//! again when watching is off. New versions come from the `versioned` fixture with its marker
//! rewritten: a valid component with another digest, description and answer.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use paddock_tests::http::{EventReader, HttpHost, post_modern};
use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, run_paddock, sample_wasm};
use serde_json::{Value, json};

/// The `versioned` fixture as version `version` (the marker's six digits rewritten).
fn versioned(version: u32) -> Vec<u8> {
    let mut bytes = std::fs::read(fixture_wasm("versioned")).expect("the versioned fixture");
    let marker = b"paddock-versioned:v000001";
    let at = bytes.windows(marker.len()).position(|w| w == marker).expect("the marker is in the component");
    let new = format!("paddock-versioned:v{version:06}");
    bytes[at..at + marker.len()].copy_from_slice(new.as_bytes());
    bytes
}

/// Puts `bytes` into `dir` as `name` the way a careful operator does: written beside it under a
/// name the folder ignores, then renamed into place in one step.
fn drop_in(dir: &Path, name: &str, bytes: &[u8]) {
    let part = dir.join(format!(".{name}.part"));
    std::fs::write(&part, bytes).expect("write the new file");
    std::fs::rename(&part, dir.join(name)).expect("rename it into the folder");
}

/// Compiles each version once into the shared test cache, so the timings below measure the
/// folder, not the compiler (`paddock-bench` measures a first compile).
async fn warm_cache(versions: &[u32]) -> Result<()> {
    for version in versions {
        let dir = PluginDir::new();
        std::fs::write(dir.path().join("v.wasm"), versioned(*version))?;
        let (code, out, err) = run_paddock(&["check", dir.path().to_str().context("path")?]).await?;
        anyhow::ensure!(code == 0, "check failed: {out}{err}");
    }
    Ok(())
}

/// Reads stdio messages until one satisfies `wanted`, keeping the others.
async fn until(host: &mut StdioHost, seen: &mut Vec<Value>, wanted: impl Fn(&Value) -> bool) -> Result<Value> {
    if let Some(at) = seen.iter().position(&wanted) {
        return Ok(seen.remove(at));
    }
    loop {
        let message = host.recv().await?;
        if wanted(&message) {
            return Ok(message);
        }
        seen.push(message);
    }
}

fn is(method: &'static str) -> impl Fn(&Value) -> bool {
    move |m: &Value| m["method"] == method
}

#[tokio::test]
async fn over_stdio_a_dropped_plugin_answers_within_two_seconds_a_replaced_one_finishes_its_call_and_a_removed_one_is_gone() -> Result<()> {
    warm_cache(&[1, 2]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let mut host = StdioHost::start(plugins.path(), &[])?;
    host.initialize("2025-11-25").await?;
    let mut seen = Vec::new();

    // Dropped in: announced, then callable, within 2 s of the rename.
    let dropped = Instant::now();
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    for kind in ["tools", "resources", "prompts"] {
        let method = format!("notifications/{kind}/list_changed");
        until(&mut host, &mut seen, |m| m["method"] == method.as_str()).await?;
    }
    let answer = host.call_tool("v_version", json!({})).await?;
    let took = dropped.elapsed();
    assert_eq!(first_text(&answer), "v000001");
    assert!(took < Duration::from_secs(2), "the dropped plugin answered after {took:?}");

    // Replaced while a long call of it runs: that call ends on the old version, the next call
    // runs the new one, and the changed description is announced.
    let slow = json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": {"name": "v_slow", "arguments": {"ms": 3000}, "_meta": {"progressToken": "p"}}});
    host.send_line(&slow.to_string()).await?;
    // Its first progress says the old version is running it.
    until(&mut host, &mut seen, is("notifications/progress")).await?;
    drop_in(plugins.path(), "v.wasm", &versioned(2));
    until(&mut host, &mut seen, is("notifications/tools/list_changed")).await?;
    // Asked by hand: the slow call's reply may come in between.
    host.send_line(&json!({"jsonrpc": "2.0", "id": "next", "method": "tools/call", "params": {"name": "v_version", "arguments": {}}}).to_string()).await?;
    let next = until(&mut host, &mut seen, |m| m["id"] == "next").await?;
    assert_eq!(first_text(&next["result"]), "v000002", "the next call runs the new version: {next}");
    host.send_line(&json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}}).to_string()).await?;
    let listed = until(&mut host, &mut seen, |m| m["id"] == "list").await?;
    let description =
        listed["result"]["tools"].as_array().context("tools")?.iter().find(|t| t["name"] == "v_version").context("v_version")?["description"].clone();
    assert_eq!(description, "Says which version of the plugin answers (v000002)");
    let slow = until(&mut host, &mut seen, |m| m["id"] == "slow").await?;
    assert_eq!(first_text(&slow["result"]), "v000001", "the running call finished on the version it started on: {slow}");

    // Removed: its tools vanish and a call is an unknown tool.
    std::fs::remove_file(plugins.path().join("v.wasm"))?;
    until(&mut host, &mut seen, is("notifications/tools/list_changed")).await?;
    let listed = host.request("tools/list", json!({})).await?;
    let names: Vec<&str> = listed["result"]["tools"].as_array().context("tools")?.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.iter().any(|n| n.starts_with("v_")) && names.contains(&"text_echo"), "{names:?}");
    let unknown = host.request("tools/call", json!({"name": "v_version", "arguments": {}})).await?;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(host.close().await?, 0);
    Ok(())
}

/// `/readyz` asked for JSON.
async fn readiness(host: &HttpHost) -> Result<Value> {
    let response = reqwest::Client::new().get(host.url("/readyz")).header("accept", "application/json").send().await?;
    anyhow::ensure!(response.status() == 200, "readyz: {}", response.status());
    Ok(serde_json::from_str(&response.text().await?)?)
}

/// Calls `name` at 2026-07-28 and returns the whole reply.
async fn call(host: &HttpHost, name: &str, arguments: Value) -> Result<Value> {
    let response = post_modern(host, "tools/call", json!({"name": name, "arguments": arguments}), &[]).await?;
    Ok(serde_json::from_str(&response.text().await?)?)
}

/// Waits until the generation serving is at least `generation`.
async fn generation_reaches(host: &HttpHost, generation: u64) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = readiness(host).await?;
        if ready["generation"].as_u64() >= Some(generation) {
            return Ok(ready);
        }
        anyhow::ensure!(Instant::now() < deadline, "generation {generation} never came: {ready}; log:\n{}", host.log_text());
        // The log grows with every look at the folder: wait on it rather than on a clock.
        let _ = tokio::time::timeout(Duration::from_millis(100), host.wait_for_logs("serving a new generation", generation as usize - 1)).await;
    }
}

#[tokio::test]
async fn over_http_a_broken_file_keeps_the_last_good_version_serving_and_readyz_names_it() -> Result<()> {
    warm_cache(&[1]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let listen = post_modern(&host, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}), &[]).await?;
    let mut listen = EventReader::new(listen);
    assert_eq!(listen.next_message().await?["method"], "notifications/subscriptions/acknowledged");
    let ready = readiness(&host).await?;
    assert_eq!((ready["generation"].clone(), ready["plugins"].clone(), ready["problems"].clone()), (json!(1), json!(["text", "v"]), json!([])));

    // A truncated copy over the good file, and a file that is not wasm at all.
    let whole = versioned(1);
    drop_in(plugins.path(), "v.wasm", &whole[..whole.len() / 2]);
    drop_in(plugins.path(), "junk.wasm", b"#!/bin/sh\necho not a plugin\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    let ready = loop {
        let ready = readiness(&host).await?;
        if ready["problems"].as_array().is_some_and(|p| p.len() == 2) {
            break ready;
        }
        anyhow::ensure!(Instant::now() < deadline, "the broken files were never reported: {ready}");
        let _ = tokio::time::timeout(Duration::from_millis(100), host.wait_for_log("junk.wasm")).await;
    };
    let problems = ready["problems"].as_array().context("problems")?;
    let named = |file: &str| problems.iter().find(|p| p["path"].as_str().is_some_and(|path| path.ends_with(file))).cloned();
    assert!(named("v.wasm").is_some_and(|p| !p["reason"].as_str().unwrap_or("").is_empty()), "{ready}");
    assert!(named("junk.wasm").is_some_and(|p| p["reason"].as_str().unwrap_or("").contains("not a WebAssembly")), "{ready}");
    assert_eq!(ready["generation"], 1, "nothing served changed: {ready}");
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000001", "the last good version answers");
    host.wait_for_log("junk.wasm").await?;

    // Without a token the detail is open on loopback; the plain probe stays plain.
    let plain = reqwest::get(host.url("/readyz")).await?.text().await?;
    assert_eq!(plain, "ready");

    // Fixed: served as the next generation, and the listen stream hears of it.
    drop_in(plugins.path(), "v.wasm", &versioned(2));
    std::fs::remove_file(plugins.path().join("junk.wasm"))?;
    let ready = generation_reaches(&host, 2).await?;
    assert_eq!(ready["problems"], json!([]), "{ready}");
    let heard = listen.next_message().await?;
    assert_eq!(heard["method"], "notifications/tools/list_changed", "{heard}");
    let listed: Value = serde_json::from_str(&post_modern(&host, "tools/list", json!({}), &[]).await?.text().await?)?;
    assert_eq!(listed["result"]["_meta"]["dev.paddock/generation"], 2, "{listed}");
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000002");
    Ok(())
}

#[tokio::test]
async fn a_grant_edited_to_revoke_a_directory_refuses_the_next_call() -> Result<()> {
    let data = tempfile::tempdir()?;
    std::fs::write(data.path().join("note.txt"), "granted")?;
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"ro\" }}]\n", data.path().display().to_string());
    let plugins = PluginDir::new().add("fx", &fixture_wasm("fixture")).write("fx.toml", &grant);
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let read = call(&host, "fx_read", json!({"path": "/data/note.txt"})).await?;
    assert_eq!(first_text(&read["result"]), "granted", "{read}");

    // An invalid grant file keeps the last good grant.
    std::fs::write(plugins.path().join("fx.toml"), "files = \"everything\"\n")?;
    host.wait_for_log("fx.toml").await?;
    assert_eq!(readiness(&host).await?["generation"], 1);
    assert_eq!(first_text(&call(&host, "fx_read", json!({"path": "/data/note.txt"})).await?["result"]), "granted");

    // Revoked: the next call is refused.
    std::fs::write(plugins.path().join("fx.toml"), "")?;
    generation_reaches(&host, 2).await?;
    let refused = call(&host, "fx_read", json!({"path": "/data/note.txt"})).await?;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(first_text(&refused["result"]).starts_with("read:"), "{refused}");
    Ok(())
}

#[tokio::test]
async fn a_plugin_copied_in_slowly_is_never_loaded_half_written() -> Result<()> {
    warm_cache(&[1]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let bytes = versioned(1);
    // Written in place in 16 chunks, 60 ms apart (about a second).
    {
        use std::io::Write;
        let mut file = std::fs::File::create(plugins.path().join("v.wasm"))?;
        for chunk in bytes.chunks(bytes.len().div_ceil(16)) {
            file.write_all(chunk)?;
            file.flush()?;
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
    }
    generation_reaches(&host, 2).await?;
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000001");
    let log = host.log_text();
    assert!(!log.contains("not served as it is on disk"), "a partial file was read:\n{log}");
    assert_eq!(log.lines().filter(|l| l.contains("plugin loaded") && l.contains("\"plugin\":\"v\"")).count(), 1, "loaded once, whole:\n{log}");
    Ok(())
}

#[tokio::test]
async fn a_thousand_writes_in_a_second_are_a_bounded_number_of_reloads() -> Result<()> {
    warm_cache(&[1, 2]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    let host = HttpHost::start(plugins.path(), &[]).await?;
    let (one, two) = (versioned(1), versioned(2));
    let began = Instant::now();
    for i in 0..1000 {
        std::fs::write(plugins.path().join("v.wasm"), if i % 2 == 0 { &two } else { &one })?;
        if i % 100 == 99 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let wrote_for = began.elapsed();
    // The last write left version 1: the folder settles on it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = readiness(&host).await?;
        let answer = call(&host, "v_version", json!({})).await?;
        if first_text(&answer["result"]) == "v000001"
            && host.log_text().lines().filter(|l| l.contains("\"plugin\":\"v\"")).count() >= 1
            && Instant::now() > began + wrote_for + Duration::from_secs(1)
        {
            let generation = ready["generation"].as_u64().context("generation")?;
            let loads = host.log_text().lines().filter(|l| l.contains("plugin loaded") && l.contains("\"plugin\":\"v\"")).count();
            assert!(generation <= 4, "{generation} generations for 1000 writes in {wrote_for:?}");
            assert!(loads <= 4, "{loads} loads for 1000 writes in {wrote_for:?}");
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "never settled: {ready}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

#[tokio::test]
async fn with_watching_off_only_sighup_looks_again() -> Result<()> {
    warm_cache(&[1]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let host = HttpHost::start(plugins.path(), &["--no-watch"]).await?;
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    // Long past the settle time and a poll interval: still the first generation.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(readiness(&host).await?["generation"], 1);
    let pid = rustix::process::Pid::from_raw(i32::try_from(host.pid())?).context("pid")?;
    rustix::process::kill_process(pid, rustix::process::Signal::HUP)?;
    generation_reaches(&host, 2).await?;
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000001");
    Ok(())
}

/// The resident memory (KiB) and open descriptors of process `pid`.
fn footprint(pid: u32) -> Result<(u64, usize)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).context("VmRSS")?;
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count();
    Ok((rss, descriptors))
}

#[tokio::test]
async fn five_hundred_reloads_keep_memory_descriptors_and_instance_slots_flat() -> Result<()> {
    warm_cache(&[1, 2]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    // Looks on SIGHUP only, reading a file as soon as it is there: one reload per signal.
    let host = HttpHost::start(plugins.path(), &["--no-watch", "--watch-settle", "0ms"]).await?;
    let pid = rustix::process::Pid::from_raw(i32::try_from(host.pid())?).context("pid")?;
    let mut settled = None;
    for reload in 1..=500u64 {
        let version = if reload % 2 == 0 { 1 } else { 2 };
        drop_in(plugins.path(), "v.wasm", &versioned(version));
        rustix::process::kill_process(pid, rustix::process::Signal::HUP)?;
        generation_reaches(&host, reload + 1).await?;
        // Every replaced version's catalog read took an instance slot, and the pool holds 128:
        // 500 reloads with calls between them fail if a replaced version keeps one.
        if reload % 25 == 0 {
            let answer = call(&host, "v_version", json!({})).await?;
            assert_eq!(first_text(&answer["result"]), format!("v{version:06}"), "after reload {reload}: {answer}");
        }
        if reload == 100 {
            settled = Some(footprint(host.pid())?);
        }
    }
    let (rss_then, fds_then) = settled.context("measured at reload 100")?;
    let (rss_now, fds_now) = footprint(host.pid())?;
    eprintln!("after 100 reloads: {rss_then} KiB, {fds_then} descriptors; after 500: {rss_now} KiB, {fds_now} descriptors");
    assert!(fds_now <= fds_then + 2, "descriptors grew from {fds_then} to {fds_now} over 400 reloads");
    assert!(rss_now <= rss_then + 16 * 1024, "resident memory grew from {rss_then} KiB to {rss_now} KiB over 400 reloads");
    Ok(())
}

/// The Python client's summary of `py/e2e_live.py` against `target`, or `None` when the client
/// is not installed (outside CI).
async fn python_live(target: &std::ffi::OsStr, plugins: &PluginDir, mode: &str) -> Option<Value> {
    let python = paddock_tests::installed_client("PADDOCK_TEST_PYTHON", "the Python client")?;
    let new = plugins.path().parent().context("temp").ok()?.join(format!("new-{}.wasm", std::process::id()));
    std::fs::write(&new, versioned(1)).ok()?;
    let args = [target, plugins.path().as_os_str(), std::ffi::OsStr::new(mode), new.as_os_str()];
    let summary = paddock_tests::run_client_script(&python, "py/e2e_live.py", &args, String::new).await;
    let _ = std::fs::remove_file(&new);
    Some(summary)
}

fn assert_live_summary(summary: &Value, mode: &str) {
    assert_eq!(summary["answer"], "v000001", "{mode}: {summary}");
    assert_eq!((summary["listed"].clone(), summary["listed_after_removal"].clone()), (json!(true), json!(false)), "{mode}: {summary}");
    assert_eq!(summary["heard"], json!(["tools_list_changed", "tools_list_changed"]), "{mode}: heard on drop and on removal: {summary}");
    assert!(summary["gone_error"].as_str().is_some_and(|e| e.contains("unknown tool")), "{mode}: {summary}");
    assert!(summary["seconds"].as_f64().is_some_and(|s| s < 2.0), "{mode}: {summary}");
}

#[tokio::test]
async fn the_python_client_hears_a_plugin_dropped_and_removed_over_stdio_and_http_in_both_eras() -> Result<()> {
    warm_cache(&[1]).await?;
    for mode in ["legacy", "2026-07-28"] {
        let plugins = PluginDir::new().add("text", &sample_wasm("text"));
        let target = std::ffi::OsString::from(format!("stdio:{}", paddock_tests::paddock_bin().display()));
        let Some(summary) = python_live(&target, &plugins, mode).await else { return Ok(()) };
        assert_live_summary(&summary, &format!("stdio {mode}"));

        let plugins = PluginDir::new().add("text", &sample_wasm("text"));
        let host = HttpHost::start(plugins.path(), &[]).await?;
        let target = std::ffi::OsString::from(format!("http:{}", host.url("")));
        let summary = python_live(&target, &plugins, mode).await.context("the client ran once")?;
        assert_live_summary(&summary, &format!("http {mode}"));
    }
    Ok(())
}

#[tokio::test]
async fn replaced_versions_do_not_grow_the_compiled_cache_past_its_bound() -> Result<()> {
    let cache = tempfile::tempdir()?;
    let cache_dir = cache.path().join("cache");
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    drop_in(plugins.path(), "v.wasm", &versioned(1000));
    let cache_arg = cache_dir.to_str().context("path")?;
    let host = HttpHost::start(plugins.path(), &["--no-watch", "--watch-settle", "0ms", "--cache-dir", cache_arg]).await?;
    let pid = rustix::process::Pid::from_raw(i32::try_from(host.pid())?).context("pid")?;
    // 70 distinct versions, each compiled once: 72 artifacts written in all, text's included.
    for reload in 1..=70u64 {
        drop_in(plugins.path(), "v.wasm", &versioned(1000 + reload as u32));
        rustix::process::kill_process(pid, rustix::process::Signal::HUP)?;
        generation_reaches(&host, reload + 1).await?;
    }
    // The cache is collected after each swap, and the last collection may still be running when
    // the generation is reached. Reloads 65 to 70 each take the cache past its bound (the two
    // serving and the newest 64 others), so each of their collections removes an artifact and
    // says so: the sixth such record means the last one has run.
    host.wait_for_logs("old compiled plugins removed from the cache", 70 - 64).await?;
    let artifacts = std::fs::read_dir(&cache_dir)?.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".cwasm")).count();
    assert!(artifacts <= 64 + 2, "{artifacts} artifacts kept: the newest 64 and the two serving at most");
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v001070");
    assert_eq!(first_text(&call(&host, "text_echo", json!({"text": "still here"})).await?["result"]), "still here", "the oldest artifact, serving, stayed");
    Ok(())
}

#[tokio::test]
async fn a_plugin_file_or_folder_other_users_could_write_is_refused_with_the_fix() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    warm_cache(&[1, 2]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    let host = HttpHost::start(plugins.path(), &[]).await?;

    // A new version that anyone may write: not loaded, the last good one serves, the fix named.
    drop_in(plugins.path(), "v.wasm", &versioned(2));
    std::fs::set_permissions(plugins.path().join("v.wasm"), std::fs::Permissions::from_mode(0o666))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let ready = loop {
        let ready = readiness(&host).await?;
        if ready["problems"].as_array().is_some_and(|p| !p.is_empty()) {
            break ready;
        }
        anyhow::ensure!(Instant::now() < deadline, "never refused: {ready}");
        let _ = tokio::time::timeout(Duration::from_millis(100), host.wait_for_log("writable by other users")).await;
    };
    let reason = ready["problems"][0]["reason"].as_str().unwrap_or_default().to_owned();
    assert!(reason.contains("writable by other users") && reason.contains("chmod go-w"), "{reason}");
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000001");

    // Fixed: loaded.
    std::fs::set_permissions(plugins.path().join("v.wasm"), std::fs::Permissions::from_mode(0o644))?;
    generation_reaches(&host, 2).await?;
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000002");

    // The folder itself opened to others: nothing on disk is believed, everything serving stays.
    std::fs::set_permissions(plugins.path(), std::fs::Permissions::from_mode(0o777))?;
    std::fs::remove_file(plugins.path().join("v.wasm"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ready = readiness(&host).await?;
        if ready["problems"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["reason"].as_str().is_some_and(|r| r.contains("the plugins folder is not loaded from"))))
        {
            assert_eq!(ready["plugins"], json!(["text", "v"]), "a removal seen through an open folder is not believed: {ready}");
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the open folder was never refused: {ready}");
        let _ = tokio::time::timeout(Duration::from_millis(100), host.wait_for_log("the plugins folder is not loaded from")).await;
    }
    std::fs::set_permissions(plugins.path(), std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

#[tokio::test]
async fn polling_finds_a_dropped_plugin_where_events_are_not_used() -> Result<()> {
    warm_cache(&[1]).await?;
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let host = HttpHost::start(plugins.path(), &["--watch=poll"]).await?;
    let dropped = Instant::now();
    drop_in(plugins.path(), "v.wasm", &versioned(1));
    generation_reaches(&host, 2).await?;
    let took = dropped.elapsed();
    assert_eq!(first_text(&call(&host, "v_version", json!({})).await?["result"]), "v000001");
    // One poll interval (2 s) to see it, at most another for it to have settled.
    assert!(took < Duration::from_millis(4500), "found after {took:?}");
    Ok(())
}

#[tokio::test]
async fn a_grant_file_other_users_could_write_grants_nothing() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir()?;
    std::fs::write(data.path().join("note.txt"), "granted")?;
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"ro\" }}]\n", data.path().display().to_string());
    let plugins = PluginDir::new().add("fx", &fixture_wasm("fixture")).write("fx.toml", &grant);
    std::fs::set_permissions(plugins.path().join("fx.toml"), std::fs::Permissions::from_mode(0o666))?;
    let dir = plugins.path().to_str().context("path")?;
    let (code, _, err) = run_paddock(&["check", dir]).await?;
    assert!(code == 2 && err.contains("fx.toml") && err.contains("chmod go-w"), "refused at start with the fix: {err}");

    // Trusted at start; opened to others while serving: the last good grant stands.
    std::fs::set_permissions(plugins.path().join("fx.toml"), std::fs::Permissions::from_mode(0o644))?;
    let host = HttpHost::start(plugins.path(), &[]).await?;
    std::fs::set_permissions(plugins.path().join("fx.toml"), std::fs::Permissions::from_mode(0o666))?;
    std::fs::write(plugins.path().join("fx.toml"), "")?;
    host.wait_for_log("writable by other users").await?;
    assert_eq!(readiness(&host).await?["generation"], 1, "the revocation from an untrusted file is not taken");
    assert_eq!(first_text(&call(&host, "fx_read", json!({"path": "/data/note.txt"})).await?["result"]), "granted");
    Ok(())
}
