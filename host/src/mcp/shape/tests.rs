//! Every field and block a revision lacks, removed or rewritten for it.

use serde::Serialize;
use serde_json::json;

use super::*;
use crate::protocol::{PromptArgument, PromptMessage, ResourceContents, ResourceLink, Role, TaskSupport, ToolAnnotations, ToolExecution};

fn raw(value: Value) -> Json {
    RawValue::from_string(value.to_string()).expect("json")
}

fn revision(version: &str) -> Revision {
    version.parse().expect("a revision")
}

fn to_value(value: impl Serialize) -> Value {
    serde_json::to_value(value).expect("serializes")
}

fn icon() -> Icon {
    Icon { src: "https://example.com/i.png".into(), mime_type: None, sizes: Vec::new(), theme: None }
}

fn tools_list() -> Vec<Tool> {
    let full = Tool {
        title: Some("T".into()),
        output_schema: Some(raw(json!({"type": "array", "items": {"type": "string"}}))),
        annotations: Some(ToolAnnotations { read_only_hint: Some(true), ..ToolAnnotations::default() }),
        icons: vec![icon()],
        meta: Some(raw(json!({"k": 1}))),
        execution: Some(ToolExecution { task_support: TaskSupport::Optional }),
        ..Tool::new("t", raw(json!({"type": "object"}))).with_description("d")
    };
    let object = Tool { output_schema: Some(raw(json!({"type": "object"}))), ..Tool::new("o", raw(json!({"type": "object"}))) };
    vec![full, object]
}

fn shaped_tools(version: &str) -> Value {
    let tools = tools_list();
    let shaped: Vec<_> = tools.iter().map(|t| tool(t, revision(version))).collect();
    json!({"tools": to_value(shaped)})
}

#[test]
fn tools_list_only_what_each_revision_defines() {
    let modern = shaped_tools("2026-07-28");
    assert_eq!(modern["tools"][0]["outputSchema"]["type"], "array", "any schema on 2026-07-28");
    assert!(modern["tools"][0].get("execution").is_none(), "execution was 2025-11-25 only");
    assert!(modern["tools"][0]["icons"].is_array());

    let latest = shaped_tools("2025-11-25");
    assert!(latest["tools"][0].get("outputSchema").is_none(), "legacy clients only see object schemas");
    assert_eq!(latest["tools"][1]["outputSchema"]["type"], "object");
    assert_eq!(latest["tools"][0]["execution"]["taskSupport"], "optional");
    assert!(latest["tools"][0]["icons"].is_array());

    let june = shaped_tools("2025-06-18");
    assert!(june["tools"][0].get("icons").is_none() && june["tools"][0].get("execution").is_none());
    assert_eq!(june["tools"][0]["title"], "T");

    let march = shaped_tools("2025-03-26");
    for gone in ["title", "_meta", "icons", "execution", "outputSchema"] {
        assert!(march["tools"][0].get(gone).is_none(), "{gone} on 2025-03-26");
    }
    assert!(march["tools"][1].get("outputSchema").is_none());
    assert_eq!(march["tools"][0]["annotations"]["readOnlyHint"], true);

    let first = shaped_tools("2024-11-05");
    assert!(first["tools"][0].get("annotations").is_none());
    assert_eq!(first["tools"][0]["description"], "d");
}

#[test]
fn a_listed_item_that_needs_no_change_is_not_copied() {
    let tools = tools_list();
    assert!(matches!(tool(&tools[1], revision("2025-11-25")), Cow::Borrowed(_)));
    assert!(matches!(tool(&tools[0], revision("2025-11-25")), Cow::Owned(_)), "its array schema goes");
    assert!(matches!(prompt(&Prompt::new("p"), revision("2024-11-05")), Cow::Borrowed(_)));
}

fn call_result(structured: Value) -> CallToolResult {
    let link = ResourceLink { title: Some("A".into()), ..ResourceLink::new("file:///a", "a") };
    let dated = Annotations { audience: vec![Role::User], priority: None, last_modified: Some("2025-01-01T00:00:00Z".into()) };
    CallToolResult {
        content: vec![
            ContentBlock::Text { text: "hi".into(), annotations: None, meta: Some(raw(json!({"k": 1}))) },
            ContentBlock::Audio { data: "AAAA".into(), mime_type: "audio/wav".into(), annotations: None, meta: None },
            ContentBlock::ResourceLink(link),
            ContentBlock::Image { data: "AAAA".into(), mime_type: "image/png".into(), annotations: Some(dated), meta: None },
        ],
        structured_content: Some(raw(structured)),
        is_error: false,
        meta: Some(raw(json!({"m": 1}))),
    }
}

fn shaped_call(version: &str, result: CallToolResult) -> Value {
    to_value(super::call_result(result, revision(version)))
}

#[test]
fn call_results_keep_every_answer_in_a_form_the_revision_accepts() {
    let modern = shaped_call("2026-07-28", call_result(json!([1, 2])));
    assert_eq!(modern["structuredContent"], json!([1, 2]), "any JSON value on 2026-07-28");
    assert_eq!(modern["content"].as_array().unwrap().len(), 4);

    let latest = shaped_call("2025-11-25", call_result(json!([1, 2])));
    assert!(latest.get("structuredContent").is_none(), "only objects before 2026-07-28");
    assert_eq!(latest["content"][4], json!({"type": "text", "text": "[1,2]"}), "delivered as text instead");
    let object = shaped_call("2025-11-25", call_result(json!({"n": 1})));
    assert_eq!(object["structuredContent"], json!({"n": 1}));
    assert_eq!(object["content"][2]["type"], "resource_link");

    let march = shaped_call("2025-03-26", call_result(json!({"n": 1})));
    assert!(march.get("structuredContent").is_none() && march.get("_meta").is_none());
    assert_eq!(march["content"][4], json!({"type": "text", "text": "{\"n\":1}"}));
    assert!(march["content"][0].get("_meta").is_none());
    assert_eq!(march["content"][1]["type"], "audio", "audio is 2025-03-26");
    assert_eq!(march["content"][2], json!({"type": "text", "text": "[resource a: file:///a]"}));
    assert!(march["content"][3]["annotations"].get("lastModified").is_none());
    assert_eq!(march["content"][3]["annotations"]["audience"], json!(["user"]));

    let first = shaped_call("2024-11-05", call_result(json!({"n": 1})));
    assert_eq!(first["content"][1]["type"], "text", "no audio on 2024-11-05");
    assert!(first["content"][1]["text"].as_str().unwrap().contains("audio/wav"));

    let already = CallToolResult { content: vec![ContentBlock::text("[1]")], ..CallToolResult::structured(raw(json!([1]))) };
    let once = shaped_call("2025-11-25", already);
    assert_eq!(once["content"].as_array().unwrap().len(), 1, "the same text is not added twice");
}

#[test]
fn prompts_and_resources_lose_what_older_revisions_lack() {
    let listed = Prompt {
        title: Some("P".into()),
        meta: Some(raw(json!({}))),
        arguments: vec![PromptArgument { title: Some("A".into()), ..PromptArgument::new("a", false) }],
        ..Prompt::new("p")
    };
    let march = json!({"prompts": [to_value(prompt(&listed, revision("2025-03-26")))]});
    assert_eq!(march, json!({"prompts": [{"name": "p", "arguments": [{"name": "a"}]}]}));
    let june = json!({"prompts": [to_value(prompt(&listed, revision("2025-06-18")))]});
    assert_eq!(june["prompts"][0]["arguments"][0]["title"], "A");
    assert!(june["prompts"][0].get("icons").is_none());

    let got = GetPromptResult::new(vec![PromptMessage { role: Role::User, content: ContentBlock::ResourceLink(ResourceLink::new("u", "n")) }]);
    assert_eq!(to_value(prompt_result(got, revision("2025-03-26")))["messages"][0]["content"]["type"], "text");

    let read = || ReadResourceResult {
        contents: vec![ResourceContents { meta: Some(raw(json!({}))), ..ResourceContents::text("u", "t") }],
        meta: Some(raw(json!({}))),
        cache: None,
    };
    assert_eq!(to_value(read_result(read(), revision("2025-03-26"))), json!({"contents": [{"uri": "u", "text": "t"}]}));
    assert_eq!(to_value(read_result(read(), revision("2025-06-18"))), to_value(read()));

    let listed = Resource {
        title: Some("T".into()),
        annotations: Some(Annotations { priority: Some(1.0), last_modified: Some("x".into()), ..Annotations::default() }),
        ..Resource::new("u", "n")
    };
    let march = json!({"resources": [to_value(resource(&listed, revision("2025-03-26")))]});
    assert_eq!(march, json!({"resources": [{"uri": "u", "name": "n", "annotations": {"priority": 1.0}}]}));
}
