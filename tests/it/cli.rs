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

/// `paddock check DIR` with the open-file limit (soft and hard) lowered to `limit` first.
async fn check_under_open_file_limit(dir: &std::path::Path, limit: u64) -> (i32, String, String) {
    let script = format!("ulimit -n {limit} && exec \"$0\" check \"$1\"");
    let child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .arg(paddock_tests::paddock_bin())
        .arg(dir)
        .env("PADDOCK_CACHE_DIR", paddock_tests::test_cache_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output()).await.expect("in time").expect("output");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn check_warns_when_the_descriptor_budgets_exceed_what_the_open_file_limit_leaves() {
    let data = tempfile::tempdir().expect("dir");
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"ro\" }}]\n", data.path());
    let plugins =
        PluginDir::new().add("files", &sample_wasm("files")).write("files.toml", &grant).add("copy", &sample_wasm("files")).write("copy.toml", &grant);
    // 1536 open files leave 512 for plugins: the two default budgets of 4096 do not fit.
    let (code, stdout, stderr) = check_under_open_file_limit(plugins.path(), 1536).await;
    assert_eq!(code, 0, "a warning is not a problem: {stdout}\n{stderr}");
    let warning = stdout.lines().find(|l| l.starts_with("warning: the descriptor budgets")).unwrap_or_else(|| panic!("no warning in:\n{stdout}\n{stderr}"));
    for expected in ["`copy` 4096", "`files` 4096", "add up to 8192", "512 left of the host's 512", "fix: lower `limits.descriptors`", "ulimit -n"] {
        assert!(warning.contains(expected), "`{expected}` missing from: {warning}");
    }
    assert!(stdout.contains("2 plugin(s) ready"), "both still load, each with its share: {stdout}");

    // Where the limit leaves room for both, nothing is said.
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum.unwrap_or(u64::MAX);
    if hard >= 1024 + 8192 {
        let (code, stdout, _) = check_under_open_file_limit(plugins.path(), 1024 + 8192).await;
        assert_eq!(code, 0);
        assert!(!stdout.contains("warning:"), "{stdout}");
    }
}
