//! Loading a plugin folder: broken, wrong-world and badly granted plugins are reported with
//! their path and reason while the good ones serve.

use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, run_paddock, sample_wasm};
use serde_json::json;

/// A folder with one good plugin and one of each kind of bad one.
fn mixed_folder() -> PluginDir {
    PluginDir::new()
        .add("text", &sample_wasm("text"))
        .write("broken.wasm", b"this is not webassembly at all")
        .write("core.wasm", b"\0asm\x01\0\0\0")
        .add("otherworld", &fixture_wasm("other-world"))
        .add("granted", &fixture_wasm("fixture"))
        .write("granted.toml", "files = [{ host = \"/definitely/not/here\", guest = \"data\", mode = \"rx\" }]\nnetwork = [\"ftp://\"]\nbogus = 1\n")
}

#[tokio::test]
async fn check_reports_every_bad_plugin_with_path_and_reason() {
    let plugins = mixed_folder();
    let dir = plugins.path().to_str().expect("utf-8 path");
    let (code, stdout, stderr) = run_paddock(&["check", dir]).await.expect("run check");
    let report = format!("{stdout}\n{stderr}");
    assert_ne!(code, 0, "check must fail when something is wrong:\n{report}");
    for name in ["broken.wasm", "core.wasm", "otherworld.wasm", "granted.toml"] {
        assert!(report.contains(name), "{name} not reported:\n{report}");
    }
    assert!(report.contains("core module"), "a core module is named as such:\n{report}");
    assert!(report.contains("paddock:plugin"), "the wrong world names the expected one:\n{report}");
    // Every problem in the grant file is reported, not just the first.
    for key in ["mode", "guest", "network", "bogus"] {
        assert!(report.contains(key), "grant problem `{key}` not reported:\n{report}");
    }
}

#[tokio::test]
async fn serve_keeps_serving_good_plugins_next_to_bad_ones() {
    let plugins = mixed_folder();
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let tools = host.request("tools/list", json!({})).await.expect("tools/list");
    let names: Vec<_> = tools["result"]["tools"].as_array().expect("tools").iter().map(|t| t["name"].as_str().unwrap_or_default().to_owned()).collect();
    assert!(names.contains(&"text_echo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("granted_") || n.starts_with("otherworld_")), "bad plugins must not serve: {names:?}");
    let result = host.call_tool("text_echo", json!({"text": "fine"})).await.expect("call");
    assert_eq!(first_text(&result), "fine");
    assert_eq!(host.close().await.expect("exit"), 0);
}

/// `wasm` with a custom section appended: the same component, another content hash.
fn distinct_copy(wasm: &[u8], tag: u32) -> Vec<u8> {
    let name = b"paddock-test";
    let payload = tag.to_le_bytes();
    let size = 1 + name.len() + payload.len();
    assert!(size < 128, "one-byte LEB128 sizes");
    let mut out = wasm.to_vec();
    out.extend_from_slice(&[0, size as u8, name.len() as u8]);
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

#[tokio::test]
async fn a_long_cold_compile_shows_progress_and_compiles_each_content_once() {
    let fixture = std::fs::read(fixture_wasm("fixture")).expect("fixture");
    let mut plugins = PluginDir::new();
    let mut config = String::new();
    for i in 0..16u32 {
        plugins = plugins.write(&format!("p{i}.wasm"), distinct_copy(&fixture, i));
        config.push_str(&format!("[plugins.p{i}]\nexpose = {{ prefix = \"p{i}\" }}\n"));
    }
    // Two more files with the content of the first: no more compiling.
    plugins = plugins.write("q0.wasm", distinct_copy(&fixture, 0)).write("q1.wasm", distinct_copy(&fixture, 0));
    config.push_str("[plugins.q0]\nexpose = { prefix = \"q0\" }\n[plugins.q1]\nexpose = { prefix = \"q1\" }\n");
    plugins = plugins.write("paddock.toml", config);
    let cache = tempfile::tempdir().expect("cache");
    let child = tokio::process::Command::new(paddock_tests::paddock_bin())
        .arg("check")
        .arg(plugins.path())
        .arg("--cache-dir")
        .arg(cache.path())
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), child.wait_with_output()).await.expect("in time").expect("output");
    // `check` exits non-zero here: the copies share resource URIs, which a prefix does not rename.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("plugin loaded").count(), 18, "{stderr}");
    // 16 distinct components take well over a second to compile on any machine this runs on.
    assert!(stderr.contains("compiling plugins: "), "no progress on stderr:\n{stderr}");
    assert!(stderr.contains("plugins compiled") && stderr.contains("components=16") && stderr.contains("plugins=18"), "{stderr}");
    let artifacts =
        std::fs::read_dir(cache.path()).expect("cache").filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))).count();
    assert_eq!(artifacts, 16);
}
