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
