//! Drives `paddock serve` with the official TypeScript SDK client (`@modelcontextprotocol/sdk`
//! 1.32.2 on Node 22), which speaks the session-based revisions only.

use std::process::Stdio;

use paddock_tests::{WAIT, conformance_plugins, paddock_bin, repo_root, test_cache_dir};

/// The Node binary with the pinned packages of `tests/clients/ts` next to it.
fn node() -> Option<String> {
    paddock_tests::installed_client("PADDOCK_TEST_NODE", "the Node clients")
}

#[tokio::test]
async fn typescript_client_answers_legacy_sampling_and_elicitation() {
    let Some(node) = node() else { return };
    let plugins = conformance_plugins();
    let child = tokio::process::Command::new(node)
        .arg(repo_root().join("tests/clients/ts/e2e_legacy_input.mjs"))
        .arg(paddock_bin())
        .arg(plugins.path())
        .env("PADDOCK_CACHE_DIR", test_cache_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node");
    let out = tokio::time::timeout(WAIT, child.wait_with_output()).await.expect("node client finished in time").expect("node client ran");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node client failed:\nstdout: {stdout}\nstderr: {stderr}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or_default()).expect("a JSON summary");
    assert_eq!(summary["server"], "paddock");
    assert_eq!(summary["sampling"], "LLM response: Paris, of course.");
    assert_eq!(summary["elicitation"], r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#);
    assert_eq!(summary["form_message"], "Who are you?");
    let enums = summary["enums"].as_str().expect("text");
    assert!(enums.starts_with("Elicitation completed: action=accept") && enums.contains(r#""titledMulti":["value1"]"#), "{enums}");
}
