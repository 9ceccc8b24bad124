//! Drives `paddock serve` with the official Rust SDK client (`rmcp` 3.9) in both protocol eras.

use std::sync::{Arc, Mutex};

use paddock_tests::{PluginDir, WAIT, conformance_plugins, paddock_bin, sample_wasm, test_cache_dir};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, GetPromptRequestParams,
    Implementation, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
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
    let client = tokio::time::timeout(WAIT, ().serve_with_lifecycle(transport(&plugins), lifecycle)).await.expect("in time").expect("discover");
    assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2026_07_28);
    tokio::time::timeout(WAIT, exercise(&client)).await.expect("in time");
    client.cancel().await.expect("close");
}

/// A client that answers every form with `content` (the name Ada unless told otherwise), and
/// remembers what it was asked.
#[derive(Clone)]
pub(crate) struct AnswersForms {
    asked: Arc<Mutex<Vec<String>>>,
    content: serde_json::Value,
}

impl Default for AnswersForms {
    fn default() -> Self {
        AnswersForms { asked: Arc::default(), content: json!({"name": "Ada"}) }
    }
}

impl ClientHandler for AnswersForms {
    async fn create_elicitation(&self, request: ElicitRequestParams, _: RequestContext<RoleClient>) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().expect("lock").push(message);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(self.content.clone()))
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::builder().enable_elicitation().build(), Implementation::new("paddock-e2e-rmcp", "1.0.0"))
    }
}

#[tokio::test]
async fn rmcp_client_completes_an_input_required_round_trip_in_2026_07_28() {
    let plugins = conformance_plugins();
    let handler = AnswersForms::default();
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = tokio::time::timeout(WAIT, handler.clone().serve_with_lifecycle(transport(&plugins), lifecycle)).await.expect("in time").expect("discover");
    assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2026_07_28);

    // One round by hand: the server answers `input_required` with the plugin's own key and a sealed state.
    let params = CallToolRequestParams::new("test_input_required_result_elicitation");
    let first = tokio::time::timeout(WAIT, client.call_tool_once(params.clone())).await.expect("in time").expect("tools/call");
    let CallToolResponse::InputRequired(round) = first else { panic!("the first call asks for input: {first:?}") };
    let requests = round.input_requests.as_ref().expect("input requests");
    assert!(requests.contains_key("user_name"), "{requests:?}");
    assert!(round.request_state.as_deref().is_some_and(|s| !s.is_empty()), "a sealed state: {round:?}");

    // The client's own driver answers it through the handler and retries.
    let done = tokio::time::timeout(WAIT, client.call_tool(params)).await.expect("in time").expect("tools/call with the answer");
    assert_eq!(done.content[0].as_text().expect("text").text, "Hello, Ada!");
    assert_eq!(*handler.asked.lock().expect("lock"), ["What is your name?"]);
    client.cancel().await.expect("close");
}

/// Lists, calls, reads and gets a prompt from the conformance plugin.
pub(crate) async fn exercise_conformance<S: rmcp::service::Service<RoleClient>>(client: &rmcp::service::RunningService<RoleClient, S>) {
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|tool| tool.name == "test_simple_text"));
    let result = client.call_tool(CallToolRequestParams::new("test_simple_text")).await.expect("tools/call");
    assert_eq!(result.content[0].as_text().expect("text").text, "This is a simple text response for testing.");
    let read = client.read_resource(ReadResourceRequestParams::new("test://static-text")).await.expect("resources/read");
    let read = serde_json::to_value(&read.contents).expect("serialize");
    assert_eq!(read[0]["text"], "This is the content of the static text resource.");
    let prompt = client.get_prompt(GetPromptRequestParams::new("test_simple_prompt")).await.expect("prompts/get");
    assert!(serde_json::to_string(&prompt.messages).expect("serialize").contains("This is a simple prompt for testing."));
}

fn http_transport(host: &paddock_tests::http::HttpHost) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    rmcp::transport::StreamableHttpClientTransport::from_uri(host.url("/mcp"))
}

#[tokio::test]
async fn rmcp_client_over_streamable_http_in_a_legacy_session_answers_a_question() {
    let plugins = conformance_plugins();
    let host = paddock_tests::http::HttpHost::start(plugins.path(), &[]).await.expect("serve");
    let handler = AnswersForms { content: json!({"username": "ada", "email": "ada@example.com"}), ..AnswersForms::default() };
    let client = tokio::time::timeout(WAIT, handler.clone().serve(http_transport(&host))).await.expect("in time").expect("initialize");
    assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2025_11_25);
    tokio::time::timeout(WAIT, exercise_conformance(&client)).await.expect("in time");
    let args = json!({"message": "Who are you?"}).as_object().cloned().expect("object");
    let asked = CallToolRequestParams::new("test_elicitation").with_arguments(args);
    let done = tokio::time::timeout(WAIT, client.call_tool(asked)).await.expect("in time").expect("tools/call");
    let text = &done.content[0].as_text().expect("text").text;
    assert!(text.starts_with("User response: action=accept") && text.contains("ada@example.com"), "{text}");
    assert_eq!(*handler.asked.lock().expect("lock"), ["Who are you?"]);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn rmcp_client_over_streamable_http_in_2026_07_28_completes_an_input_round() {
    let plugins = conformance_plugins();
    let host = paddock_tests::http::HttpHost::start(plugins.path(), &[]).await.expect("serve");
    let handler = AnswersForms::default();
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = tokio::time::timeout(WAIT, handler.clone().serve_with_lifecycle(http_transport(&host), lifecycle)).await.expect("in time").expect("discover");
    assert_eq!(client.peer_info().expect("server info").protocol_version, ProtocolVersion::V_2026_07_28);
    tokio::time::timeout(WAIT, exercise_conformance(&client)).await.expect("in time");
    let done = tokio::time::timeout(WAIT, client.call_tool(CallToolRequestParams::new("test_input_required_result_elicitation")))
        .await
        .expect("in time")
        .expect("tools/call with the answer");
    assert_eq!(done.content[0].as_text().expect("text").text, "Hello, Ada!");
    client.cancel().await.expect("close");
}
