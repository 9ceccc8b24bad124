//! The command line: `inspect`, `call`, and one-line errors with exit codes.

use paddock_tests::{PluginDir, run_paddock, sample_wasm};

#[tokio::test]
async fn inspect_shows_exports_requests_and_the_grant() {
    let plugins = PluginDir::new().add("files", &sample_wasm("files"));
    let file = plugins.path().join("files.wasm");
    let (code, stdout, stderr) = run_paddock(&["inspect", file.to_str().expect("utf-8")]).await.expect("run");
    assert_eq!(code, 0, "{stderr}");
    for expected in ["read_file", "write_file", "list_dir", "requested capabilities:", "/data (rw)", "nothing (deny by default)", "requested but not granted"] {
        assert!(stdout.contains(expected), "`{expected}` missing from:\n{stdout}");
    }
}

#[tokio::test]
async fn inspect_shows_a_granted_directory() {
    let data = tempfile::tempdir().expect("dir");
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"ro\" }}]\n", data.path());
    let plugins = PluginDir::new().add("files", &sample_wasm("files")).write("files.toml", grant);
    let file = plugins.path().join("files.wasm");
    let (code, stdout, _) = run_paddock(&["inspect", file.to_str().expect("utf-8")]).await.expect("run");
    assert_eq!(code, 0);
    assert!(stdout.contains("/data (ro) <-"), "{stdout}");
    assert!(!stdout.contains("nothing (deny by default)"), "{stdout}");
}

#[tokio::test]
async fn call_runs_one_tool_and_prints_its_result() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let dir = plugins.path().to_str().expect("utf-8");
    let (code, stdout, stderr) = run_paddock(&["call", dir, "text_upper", "--args", r#"{"text":"shout"}"#]).await.expect("run");
    assert_eq!(code, 0, "{stderr}");
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("JSON result on stdout");
    assert_eq!(result["content"][0]["text"], "SHOUT");
    let (code, stdout, _) = run_paddock(&["call", dir, "text_base64_decode", "--args", r#"{"data":"***"}"#]).await.expect("run");
    assert_eq!(code, 1, "a tool error exits with 1");
    assert!(stdout.contains("\"isError\": true"), "{stdout}");
}

#[tokio::test]
async fn usage_errors_are_one_line_with_the_fix_and_exit_2() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let dir = plugins.path().to_str().expect("utf-8");
    let (code, _, stderr) = run_paddock(&["call", dir, "text_upper", "--args", "not json"]).await.expect("run");
    assert_eq!(code, 2);
    assert!(stderr.trim().lines().count() == 1 && stderr.contains("fix:"), "{stderr}");
    let (code, _, stderr) = run_paddock(&["serve", "/definitely/not/a/folder"]).await.expect("run");
    assert_eq!(code, 2);
    assert!(stderr.contains("does not exist") && stderr.contains("fix:"), "{stderr}");
    let (code, _, stderr) = run_paddock(&["call", dir, "no_such_tool"]).await.expect("run");
    assert_eq!(code, 2);
    assert!(stderr.contains("text_upper"), "lists the tools that exist: {stderr}");
}
