//! Drives `paddock serve` with the official TypeScript SDK client (`@modelcontextprotocol/sdk`
//! 1.32.2 on Node 22), which speaks the session-based revisions only.

use paddock_tests::{conformance_plugins, paddock_bin, run_client_script};

/// The Node binary with the pinned packages of `tests/clients/ts` next to it.
fn node() -> Option<String> {
    paddock_tests::installed_client("PADDOCK_TEST_NODE", "the Node clients")
}

#[tokio::test]
async fn typescript_client_answers_legacy_sampling_and_elicitation() {
    let Some(node) = node() else { return };
    let plugins = conformance_plugins();
    let binary = paddock_bin();
    let summary = run_client_script(&node, "ts/e2e_legacy_input.mjs", &[binary.as_os_str(), plugins.path().as_os_str()], String::new).await;
    assert_eq!(summary["server"], "paddock");
    assert_eq!(summary["sampling"], "LLM response: Paris, of course.");
    assert_eq!(summary["elicitation"], r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#);
    assert_eq!(summary["form_message"], "Who are you?");
    let enums = summary["enums"].as_str().expect("text");
    assert!(enums.starts_with("Elicitation completed: action=accept") && enums.contains(r#""titledMulti":["value1"]"#), "{enums}");
}
