//! Hostile catalogs and results with a real component (`tests/plugins/bad-catalog`): each bad
//! variant of its catalog is refused at load naming the plugin and the item, its permitted twin
//! (the same component without the variable) loads, and results that could not be serialized
//! become `MalformedOutput` naming the problem.

use paddock::plugin::{CallContext, Plugin, PluginError};
use paddock::policy::Grant;
use paddock::router::{Prefix, Router, RouterEntry};
use serde_json::{Value, json};

use super::*;

/// Each variant of `BAD_CATALOG` and what the refusal must say.
const VARIANTS: [(&str, &str); 7] = [
    ("deep-schema", "tool `deep_schema`: input schema nests deeper than 64 levels"),
    ("surrogate", "tool `surrogate`: input schema has a lone surrogate escape `\\ud800`"),
    ("huge-schema", "tool `huge_schema`: input schema is 262145 bytes; at most 262144 are allowed"),
    ("deep-meta", "tool `deep_meta`: `_meta` nests deeper than 64 levels"),
    ("big-number", "tool `big_number`: output schema is not valid JSON: number out of range"),
    ("bad-template", "resource template `long://{+path}!!!"),
    ("many-vars", "resource template `a://{v}{v}"),
];

fn granted(variant: Option<&str>) -> Grant {
    let mut grant = Grant::default();
    if let Some(variant) = variant {
        grant.env.insert("BAD_CATALOG".into(), variant.into());
    }
    grant
}

async fn load_bad_catalog(rt: &Runtime, variant: Option<&str>) -> Result<Arc<WasmPlugin>, String> {
    let wasm = fixture_wasm("bad_catalog");
    let load = rt.load_plugin("badcat", &wasm, granted(variant));
    let loaded = tokio::time::timeout(WAIT, load).await.expect("load in time");
    loaded.map(|(plugin, _)| Arc::new(plugin)).map_err(|e| e.to_string())
}

#[tokio::test]
async fn each_bad_catalog_is_refused_at_load_naming_the_plugin_and_the_item() {
    let rt = runtime();
    for (variant, expected) in VARIANTS {
        let reason = load_bad_catalog(&rt, Some(variant)).await.expect_err(variant);
        assert!(reason.starts_with("plugin `badcat` not loaded, its catalog is refused: "), "{variant}: {reason}");
        assert!(reason.contains(expected), "{variant}: {reason}");
    }
    let long = load_bad_catalog(&rt, Some("bad-template")).await.expect_err("bad-template");
    assert!(long.ends_with("is 1025 bytes long; at most 1024 are allowed"), "{long}");
    let many = load_bad_catalog(&rt, Some("many-vars")).await.expect_err("many-vars");
    assert!(many.ends_with("has 33 variables; at most 32 are allowed"), "{many}");
}

#[tokio::test]
async fn the_permitted_twin_loads_with_every_item_at_the_caps_and_lists() {
    let rt = runtime();
    let plugin = load_bad_catalog(&rt, None).await.expect("the twin without BAD_CATALOG loads");
    let catalog = plugin.catalog();
    assert_eq!(catalog.tools.len(), 7);
    assert_eq!(catalog.resource_templates.len(), 3);
    let (router, errors) = Router::new(vec![RouterEntry::new(plugin.clone(), Prefix::Default)]);
    assert!(errors.is_empty(), "{errors:?}");
    // The page as the session serializes it, then written and parsed back as a client would.
    let page = router.page(router.tools(), None).expect("page");
    let line = json!({"result": {"tools": serde_json::to_value(page.items).expect("serializes")}}).to_string();
    let listed: Value = serde_json::from_str(&line).expect("parses");
    let surrogate = listed["result"]["tools"].as_array().expect("tools").iter().find(|t| t["name"] == "badcat_surrogate");
    assert_eq!(surrogate.expect("listed")["inputSchema"]["title"], "😀");
    let templates = router.page(router.resource_templates(), None).expect("page");
    serde_json::to_value(templates.items).expect("templates serialize");
}

#[tokio::test]
async fn unserializable_results_are_malformed_output_naming_the_problem() {
    let rt = runtime();
    let plugin = load_bad_catalog(&rt, None).await.expect("loads");
    for (kind, expected) in [
        ("deep", "structured content nests deeper than 64 levels"),
        ("surrogate", "structured content has a lone surrogate escape `\\ud800`"),
        ("deep-meta", "result `_meta` nests deeper than 64 levels"),
        ("number", "structured content is not valid JSON: number out of range"),
    ] {
        match call_bad_result(&plugin, kind).await {
            Err(PluginError::MalformedOutput(message)) => assert!(message.starts_with(expected), "{kind}: {message}"),
            other => panic!("{kind}: expected malformed output, got {other:?}"),
        }
    }
    let edge = call_bad_result(&plugin, "edge").await.expect("JSON at the caps is accepted");
    serde_json::to_value(&edge).expect("and serializes");
    assert_eq!(ok_text(call(&plugin, "echo", json!({"text": "still fine"})).await), "still fine");
}

async fn call_bad_result(plugin: &WasmPlugin, kind: &str) -> Result<paddock::protocol::CallToolResult, PluginError> {
    let args = json!({"kind": kind}).to_string();
    let cx = CallContext::detached("bad");
    let outcome = tokio::time::timeout(WAIT, plugin.call_tool("bad_result", &args, &cx)).await.expect("call finished in time")?;
    Ok(outcome.into_complete().expect("a complete result"))
}
