//! Every field and block a revision lacks, removed or rewritten for it.

use serde_json::json;

use super::*;

fn shaped(method: &str, version: &str, mut result: Value) -> Value {
    shape(&mut result, &Method::parse(method), version.parse().expect("a revision"));
    result
}

fn tools_list() -> Value {
    json!({"tools": [{
        "name": "t", "title": "T", "description": "d",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "array", "items": {"type": "string"}},
        "annotations": {"readOnlyHint": true},
        "icons": [{"src": "https://example.com/i.png"}],
        "_meta": {"k": 1},
        "execution": {"taskSupport": "optional"}
    }, {
        "name": "o", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}
    }]})
}

#[test]
fn tools_list_only_what_each_revision_defines() {
    let modern = shaped("tools/list", "2026-07-28", tools_list());
    assert_eq!(modern["tools"][0]["outputSchema"]["type"], "array", "any schema on 2026-07-28");
    assert!(modern["tools"][0].get("execution").is_none(), "execution was 2025-11-25 only");
    assert!(modern["tools"][0]["icons"].is_array());

    let latest = shaped("tools/list", "2025-11-25", tools_list());
    assert!(latest["tools"][0].get("outputSchema").is_none(), "legacy clients only see object schemas");
    assert_eq!(latest["tools"][1]["outputSchema"]["type"], "object");
    assert_eq!(latest["tools"][0]["execution"]["taskSupport"], "optional");
    assert!(latest["tools"][0]["icons"].is_array());

    let june = shaped("tools/list", "2025-06-18", tools_list());
    assert!(june["tools"][0].get("icons").is_none() && june["tools"][0].get("execution").is_none());
    assert_eq!(june["tools"][0]["title"], "T");

    let march = shaped("tools/list", "2025-03-26", tools_list());
    for gone in ["title", "_meta", "icons", "execution", "outputSchema"] {
        assert!(march["tools"][0].get(gone).is_none(), "{gone} on 2025-03-26");
    }
    assert!(march["tools"][1].get("outputSchema").is_none());
    assert_eq!(march["tools"][0]["annotations"]["readOnlyHint"], true);

    let first = shaped("tools/list", "2024-11-05", tools_list());
    assert!(first["tools"][0].get("annotations").is_none());
    assert_eq!(first["tools"][0]["description"], "d");
}

fn call_result(structured: Value) -> Value {
    json!({"content": [
        {"type": "text", "text": "hi", "_meta": {"k": 1}},
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a", "name": "a", "title": "A"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png", "annotations": {"audience": ["user"], "lastModified": "2025-01-01T00:00:00Z"}}
    ], "structuredContent": structured, "_meta": {"m": 1}})
}

#[test]
fn call_results_keep_every_answer_in_a_form_the_revision_accepts() {
    let modern = shaped("tools/call", "2026-07-28", call_result(json!([1, 2])));
    assert_eq!(modern["structuredContent"], json!([1, 2]), "any JSON value on 2026-07-28");
    assert_eq!(modern["content"].as_array().unwrap().len(), 4);

    let latest = shaped("tools/call", "2025-11-25", call_result(json!([1, 2])));
    assert!(latest.get("structuredContent").is_none(), "only objects before 2026-07-28");
    assert_eq!(latest["content"][4], json!({"type": "text", "text": "[1,2]"}), "delivered as text instead");
    let object = shaped("tools/call", "2025-11-25", call_result(json!({"n": 1})));
    assert_eq!(object["structuredContent"], json!({"n": 1}));
    assert_eq!(object["content"][2]["type"], "resource_link");

    let march = shaped("tools/call", "2025-03-26", call_result(json!({"n": 1})));
    assert!(march.get("structuredContent").is_none() && march.get("_meta").is_none());
    assert_eq!(march["content"][4], json!({"type": "text", "text": "{\"n\":1}"}));
    assert!(march["content"][0].get("_meta").is_none());
    assert_eq!(march["content"][1]["type"], "audio", "audio is 2025-03-26");
    assert_eq!(march["content"][2], json!({"type": "text", "text": "[resource a: file:///a]"}));
    assert!(march["content"][3]["annotations"].get("lastModified").is_none());
    assert_eq!(march["content"][3]["annotations"]["audience"], json!(["user"]));

    let first = shaped("tools/call", "2024-11-05", call_result(json!({"n": 1})));
    assert_eq!(first["content"][1]["type"], "text", "no audio on 2024-11-05");
    assert!(first["content"][1]["text"].as_str().unwrap().contains("audio/wav"));

    let already = json!({"content": [{"type": "text", "text": "[1]"}], "structuredContent": [1]});
    let once = shaped("tools/call", "2025-11-25", already);
    assert_eq!(once["content"].as_array().unwrap().len(), 1, "the same text is not added twice");
}

#[test]
fn prompts_and_resources_lose_what_older_revisions_lack() {
    let prompts = json!({"prompts": [{"name": "p", "title": "P", "icons": [], "_meta": {}, "arguments": [{"name": "a", "title": "A"}]}]});
    let march = shaped("prompts/list", "2025-03-26", prompts.clone());
    assert_eq!(march, json!({"prompts": [{"name": "p", "arguments": [{"name": "a"}]}]}));
    let june = shaped("prompts/list", "2025-06-18", prompts);
    assert_eq!(june["prompts"][0]["arguments"][0]["title"], "A");
    assert!(june["prompts"][0].get("icons").is_none());

    let got = json!({"messages": [{"role": "user", "content": {"type": "resource_link", "uri": "u", "name": "n"}}]});
    assert_eq!(shaped("prompts/get", "2025-03-26", got)["messages"][0]["content"]["type"], "text");

    let read = json!({"contents": [{"uri": "u", "text": "t", "_meta": {}}], "_meta": {}});
    assert_eq!(shaped("resources/read", "2025-03-26", read.clone()), json!({"contents": [{"uri": "u", "text": "t"}]}));
    assert_eq!(shaped("resources/read", "2025-06-18", read.clone()), read);

    let resources = json!({"resources": [{"uri": "u", "name": "n", "title": "T", "icons": [], "annotations": {"priority": 1.0, "lastModified": "x"}}]});
    let march = shaped("resources/list", "2025-03-26", resources);
    assert_eq!(march, json!({"resources": [{"uri": "u", "name": "n", "annotations": {"priority": 1.0}}]}));
}
