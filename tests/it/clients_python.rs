//! Drives `paddock serve` with the official MCP Python SDK client in both protocol eras.

use paddock_tests::{PluginDir, conformance_plugins, fixture_wasm, paddock_bin, run_client_script, sample_wasm};

/// The venv interpreter with `mcp` installed.
fn python() -> Option<String> {
    paddock_tests::installed_client("PADDOCK_TEST_PYTHON", "the Python client")
}

async fn run_python_client(mode: &str) -> serde_json::Value {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    run_python_script("e2e_stdio.py", &plugins, mode).await
}

async fn run_python_script(script: &str, plugins: &PluginDir, mode: &str) -> serde_json::Value {
    let Some(python) = python() else { return serde_json::Value::Null };
    let (binary, mode) = (paddock_bin(), std::ffi::OsString::from(mode));
    run_client_script(&python, &format!("py/{script}"), &[binary.as_os_str(), plugins.path().as_os_str(), &mode], String::new).await
}

#[tokio::test]
async fn python_client_legacy_lists_calls_reads_and_gets_prompts() {
    let summary = run_python_client("legacy").await;
    if summary.is_null() {
        return;
    }
    assert_eq!(summary["protocol_version"], "2025-11-25");
    assert_eq!(summary["echo"], "hello from python");
}

#[tokio::test]
async fn python_client_2026_07_28_lists_calls_reads_and_gets_prompts() {
    let summary = run_python_client("2026-07-28").await;
    if summary.is_null() {
        return;
    }
    assert_eq!(summary["protocol_version"], "2026-07-28");
    assert_eq!(summary["echo"], "hello from python");
}

#[tokio::test]
async fn python_client_answers_an_input_request_in_both_eras() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    for mode in ["legacy", "2026-07-28"] {
        let summary = run_python_script("e2e_input.py", &plugins, mode).await;
        if summary.is_null() {
            return;
        }
        assert_eq!(summary["greeting"], "Hello, Ada (asked by the fixture)", "{mode}");
        let expected_version = if mode == "legacy" { "2025-11-25" } else { "2026-07-28" };
        assert_eq!(summary["context"]["protocolVersion"], expected_version, "{summary}");
        assert_eq!(summary["context"]["stateless"], mode != "legacy", "{summary}");
    }
}

#[tokio::test]
async fn python_client_answers_sampling_elicitation_and_roots_and_hears_changes_in_both_eras() {
    let plugins = conformance_plugins();
    for mode in ["legacy", "2026-07-28"] {
        let summary = run_python_script("e2e_conformance.py", &plugins, mode).await;
        if summary.is_null() {
            return;
        }
        assert_eq!(summary["sampled"], "LLM response: Hello there!", "{mode}");
        assert_eq!(summary["everything"], "Name: Ada; Greeting: Hello there!; Roots: 1", "{mode}: three questions in one round");
        let expected_changes = if mode == "legacy" {
            serde_json::json!(["notifications/resources/updated", "notifications/tools/list_changed"])
        } else {
            serde_json::json!(["resource_updated", "tools_list_changed"])
        };
        assert_eq!(summary["changes"], expected_changes, "{mode}");
    }
}
