//! The conformance plugin under the suite's own names: every fixture the MCP conformance suite
//! names for `--requirements 2025-11-25` and `--requirements 2026-07-28` is listed, with the
//! schemas the suite checks word for word.

use paddock_tests::{StdioHost, conformance_plugins, first_text};
use serde_json::{Value, json};

const TOOLS: &[&str] = &[
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_progress",
    "test_tool_with_logging",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_reconnection",
    "json_schema_2020_12_tool",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
    "test_header_param",
];
const PROMPTS: &[&str] =
    &["test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_input_required_result_prompt"];
const RESOURCES: &[&str] = &["test://static-text", "test://static-binary", "test://watched-resource"];

fn names<'a>(list: &'a Value, key: &str, field: &str) -> Vec<&'a str> {
    list[key].as_array().expect("a list").iter().map(|item| item[field].as_str().expect("a name")).collect()
}

#[tokio::test]
async fn every_fixture_the_suite_names_is_served_under_its_own_name() {
    let plugins = conformance_plugins();
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");

    let tools = host.request("tools/list", json!({})).await.expect("tools/list")["result"].clone();
    let listed = names(&tools, "tools", "name");
    let missing: Vec<_> = TOOLS.iter().filter(|t| !listed.contains(t)).collect();
    assert!(missing.is_empty(), "missing tools: {missing:?}");
    for tool in tools["tools"].as_array().expect("tools") {
        assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()), "every tool is described: {tool}");
    }
    let tool = |name: &str| tools["tools"].as_array().expect("tools").iter().find(|t| t["name"] == name).cloned().expect("listed");

    let schema = &tool("json_schema_2020_12_tool")["inputSchema"];
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["allOf"][0]["anyOf"], json!([{"required": ["phone"]}, {"required": ["email"]}]));
    assert_eq!((&schema["then"], &schema["else"]), (&json!({"required": ["phone"]}), &json!({"required": ["email"]})));
    assert_eq!(tool("test_header_param")["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region");
    assert_eq!(tool("failing_job")["execution"]["taskSupport"], "required", "{}", tool("failing_job"));
    assert_eq!(tool("slow_compute")["execution"]["taskSupport"], "optional");

    let prompts = host.request("prompts/list", json!({})).await.expect("prompts/list")["result"].clone();
    let listed = names(&prompts, "prompts", "name");
    assert!(PROMPTS.iter().all(|p| listed.contains(p)), "{listed:?}");
    let resources = host.request("resources/list", json!({})).await.expect("resources/list")["result"].clone();
    let listed = names(&resources, "resources", "uri");
    assert!(RESOURCES.iter().all(|r| listed.contains(r)), "{listed:?}");
    let templates = host.request("resources/templates/list", json!({})).await.expect("templates")["result"].clone();
    assert_eq!(names(&templates, "resourceTemplates", "uriTemplate"), ["test://template/{id}/data"]);

    let read = host.request("resources/read", json!({"uri": "test://template/123/data"})).await.expect("read")["result"].clone();
    assert!(read["contents"][0]["text"].as_str().is_some_and(|t| t.contains("\"123\"")), "{read}");
    let call = host.call_tool("test_header_param", json!({"region": "eu-west"})).await.expect("call");
    assert_eq!(first_text(&call), "Region: eu-west");
    let error = host.call_tool("test_error_handling", json!({})).await.expect("call");
    assert_eq!(error["isError"], true, "a result, not a JSON-RPC error: {error}");
}
