//! Drives `paddock serve` with the official Rust SDK client (`rmcp` 3.9) in both protocol eras.

use paddock_tests::{PluginDir, WAIT, paddock_bin, sample_wasm, test_cache_dir};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ProtocolVersion, ReadResourceRequestParams};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

fn transport(plugins: &PluginDir) -> TokioChildProcess {
    let mut command = tokio::process::Command::new(paddock_bin());
    command.arg("serve").arg(plugins.path()).env("PADDOCK_CACHE_DIR", test_cache_dir());
    TokioChildProcess::new(command).expect("spawn paddock")
}

async fn exercise<S: rmcp::service::Service<rmcp::RoleClient>>(client: &rmcp::service::RunningService<rmcp::RoleClient, S>) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<_> = tools.iter().map(|tool| tool.name.to_string()).collect();
    assert!(names.contains(&"text_echo".to_owned()), "{names:?}");

    let args = json!({"text": "hello from rmcp"}).as_object().cloned().expect("object");
    let result = client.call_tool(CallToolRequestParams::new("text_echo").with_arguments(args)).await.expect("tools/call");
    assert_ne!(result.is_error, Some(true));
    assert_eq!(result.content[0].as_text().expect("text block").text, "hello from rmcp");

    let about = client.read_resource(ReadResourceRequestParams::new("text://about")).await.expect("resources/read");
    assert!(!about.contents.is_empty());

    let params: GetPromptRequestParams =
        serde_json::from_value(json!({"name": "text_summarize", "arguments": {"text": "Paddock runs plugins."}})).expect("params");
    let prompt = client.get_prompt(params).await.expect("prompts/get");
    let rendered = serde_json::to_string(&prompt.messages).expect("serialize");
    assert!(rendered.contains("Paddock runs plugins."), "{rendered}");
}

#[tokio::test]
async fn rmcp_client_legacy_session() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let client = tokio::time::timeout(WAIT, ().serve(transport(&plugins))).await.expect("in time").expect("initialize");
    assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2025_11_25);
    tokio::time::timeout(WAIT, exercise(&client)).await.expect("in time");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn rmcp_client_2026_07_28_stateless() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client =
        tokio::time::timeout(WAIT, ().serve_with_lifecycle(transport(&plugins), lifecycle)).await.expect("in time").expect("discover");
    assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2026_07_28);
    tokio::time::timeout(WAIT, exercise(&client)).await.expect("in time");
    client.cancel().await.expect("close");
}
