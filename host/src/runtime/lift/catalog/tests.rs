//! Catalog validation tests: each way a declaration could break a later list is refused with the
//! item named, and the worst catalog that is accepted serializes as whole list pages.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::plugin::{BoxFuture, CallContext, Plugin};
use crate::protocol::{CallToolResult, Completion, CompletionRequest, GetPromptResult};
use crate::router::template::{MAX_TEMPLATE_BYTES, MAX_TEMPLATE_VARIABLES};
use crate::router::{Prefix, Router, RouterEntry};
use crate::runtime::lift::json::MAX_JSON_DEPTH;

fn info() -> wm::PluginInfo {
    wm::PluginInfo {
        name: "worst".into(),
        version: "1".into(),
        title: None,
        description: None,
        instructions: None,
        website_url: None,
        icons: vec![],
        requests: wm::RequestedCapabilities { files: vec![], network: vec![], env: vec![] },
    }
}

fn tool(name: &str, input_schema: String, output_schema: Option<String>, meta: Option<String>) -> wt::Tool {
    wt::Tool {
        name: name.into(),
        title: Some("A title with \u{2028} and \u{feff} and \"quotes\"".into()),
        description: Some("😀 \\ \n".into()),
        input_schema,
        output_schema,
        annotations: None,
        icons: vec![],
        meta,
        task_support: wt::TaskSupport::Forbidden,
        required_client_capabilities: None,
    }
}

fn template(uri_template: String) -> wr::ResourceTemplate {
    wr::ResourceTemplate { uri_template, name: "t".into(), title: None, description: None, mime_type: None, icons: vec![], annotations: None, meta: None }
}

fn declared(tools: Vec<wt::Tool>, templates: Vec<wr::ResourceTemplate>) -> Declared {
    Declared {
        info: info(),
        tools: wt::ToolList { tools, cache: None },
        resources: wr::ResourceList { resources: vec![], cache: None },
        templates: wr::TemplateList { templates, cache: None },
        prompts: wp::PromptList { prompts: vec![], cache: None },
    }
}

/// An object schema nested `depth` levels deep.
fn deep_object(depth: usize) -> String {
    format!("{}{{}}{}", "{\"properties\":".repeat(depth - 1), "}".repeat(depth - 1))
}

/// An object schema of exactly `bytes` bytes.
fn object_of(bytes: usize) -> String {
    let frame = r#"{"description":""}"#.len();
    format!(r#"{{"description":"{}"}}"#, "x".repeat(bytes - frame))
}

/// A template of exactly `bytes` bytes with `vars` variables, distinct per `tag`.
fn template_of(tag: usize, vars: usize, bytes: usize) -> String {
    let head = format!("t{tag:03}://{}", "{v}".repeat(vars));
    format!("{head}{}", "!".repeat(bytes - head.len()))
}

fn refused(d: Declared) -> String {
    build(d).expect_err("the catalog must be refused").to_string()
}

#[test]
fn json_that_could_break_a_list_is_refused_naming_the_tool_and_the_problem() {
    let deep = deep_object(2000);
    for (t, expected) in [
        (tool("deep", deep.clone(), None, None), "tool `deep`: input schema nests deeper than 64 levels"),
        (tool("deep_out", "{}".into(), Some(deep.clone()), None), "tool `deep_out`: output schema nests deeper than 64 levels"),
        (tool("deep_meta", "{}".into(), None, Some(deep)), "tool `deep_meta`: `_meta` nests deeper than 64 levels"),
        (tool("surrogate", r#"{"title":"\ud800"}"#.into(), None, None), "tool `surrogate`: input schema has a lone surrogate escape `\\ud800`"),
        (tool("number", "{}".into(), Some(r#"{"maximum":1e400}"#.into()), None), "tool `number`: output schema is not valid JSON: number out of range"),
        (tool("huge", object_of(MAX_SCHEMA_BYTES + 1), None, None), "tool `huge`: input schema is 262145 bytes; at most 262144 are allowed"),
        (tool("huge_meta", "{}".into(), None, Some(object_of(MAX_META_BYTES + 1))), "tool `huge_meta`: `_meta` is 65537 bytes; at most 65536 are allowed"),
        (tool("array", "[]".into(), None, None), "tool `array`: input schema must be a JSON object"),
    ] {
        let message = refused(declared(vec![t], vec![]));
        assert!(message.starts_with(expected), "{message}");
    }
}

#[test]
fn templates_over_the_caps_are_refused_naming_the_template() {
    let many = template_of(1, MAX_TEMPLATE_VARIABLES + 1, 200);
    let message = refused(declared(vec![], vec![template(many)]));
    assert!(message.starts_with("resource template `t001://{v}{v}") && message.contains("…` has 33 variables; at most 32 are allowed"), "{message}");
    let long = template_of(2, 1, MAX_TEMPLATE_BYTES + 1);
    let message = refused(declared(vec![], vec![template(long)]));
    assert!(message.ends_with("` is 1025 bytes long; at most 1024 are allowed"), "{message}");
    let over_total: Vec<_> = (0..65).map(|i| template(template_of(i, 1, MAX_TEMPLATE_BYTES))).collect();
    let message = refused(declared(vec![], over_total));
    assert_eq!(message, "resource templates add up to more than the 64 KiB allowed");
}

/// Serves a catalog and nothing else.
struct Fixed(Catalog);

impl Plugin for Fixed {
    fn id(&self) -> &str {
        "worst"
    }
    fn catalog(&self) -> &Catalog {
        &self.0
    }
    fn call_tool<'a>(&'a self, t: &'a str, _: &'a str, _: &'a CallContext) -> BoxFuture<'a, Result<crate::input::Outcome<CallToolResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(t.to_owned())) })
    }
    fn read_resource<'a>(
        &'a self,
        u: &'a str,
        _: &'a CallContext,
    ) -> BoxFuture<'a, Result<crate::input::Outcome<crate::protocol::ReadResourceResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(u.to_owned())) })
    }
    fn get_prompt<'a>(
        &'a self,
        p: &'a str,
        _: &'a [(String, String)],
        _: &'a CallContext,
    ) -> BoxFuture<'a, Result<crate::input::Outcome<GetPromptResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(p.to_owned())) })
    }
    fn complete<'a>(&'a self, _: &'a CompletionRequest, _: &'a CallContext) -> BoxFuture<'a, Result<Completion, PluginError>> {
        Box::pin(async move { Ok(Completion::default()) })
    }
}

/// A whole list page as the session sends it: items serialized with `serde_json::to_value`,
/// wrapped in the response, written as one line, and parsed back as a client would.
fn page_line<T: crate::router::Named + serde::Serialize>(router: &Router, items: &[T], field: &str) -> Value {
    let page = router.page(items, None).expect("first page");
    assert!(page.next_cursor.is_none(), "one page holds the whole list");
    let items = serde_json::to_value(page.items).expect("the page serializes");
    let line = json!({"jsonrpc": "2.0", "id": 1, "result": {field: items, "_meta": {"k": "v"}}}).to_string();
    serde_json::from_str(&line).expect("a client parses the page")
}

#[test]
fn the_worst_accepted_catalog_serializes_as_whole_pages() {
    let odd = r#"{"type":"object","title":"\ud83d\ude00 \u0000 \" \\ \/ \b\f\n\r\t \u2028","maximum":1.7976931348623157e308,"minimum":-1.7976931348623157e308,"multipleOf":5e-324,"default":18446744073709551616,"enum":[-0,0.0,1E+2,true,false,null],"k\u00e9y":{}}"#;
    let tools = vec![
        tool("deep", deep_object(MAX_JSON_DEPTH), Some(deep_object(MAX_JSON_DEPTH)), Some(deep_object(MAX_JSON_DEPTH))),
        tool("big", object_of(MAX_SCHEMA_BYTES), Some(object_of(MAX_SCHEMA_BYTES)), Some(object_of(MAX_META_BYTES))),
        tool("odd", odd.into(), Some(odd.into()), Some(odd.into())),
    ];
    // Every template at the length and variable caps, together exactly at the total cap.
    let count = MAX_TEMPLATES_BYTES / MAX_TEMPLATE_BYTES;
    let templates = (0..count).map(|i| template(template_of(i, MAX_TEMPLATE_VARIABLES, MAX_TEMPLATE_BYTES))).collect();
    let catalog = build(declared(tools, templates)).expect("the worst accepted catalog loads");
    let (router, errors) = Router::new(vec![RouterEntry::new(Arc::new(Fixed(catalog)), Prefix::Default)]);
    assert!(errors.is_empty(), "{errors:?}");

    let tools = page_line(&router, router.tools(), "tools");
    let tools = tools["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 3);
    let deep = tools.iter().find(|t| t["name"] == "worst_deep").expect("deep tool");
    let mut schema = &deep["inputSchema"];
    for _ in 1..MAX_JSON_DEPTH {
        schema = &schema["properties"];
    }
    assert_eq!(schema, &json!({}), "the schema arrives {MAX_JSON_DEPTH} levels deep");
    let odd = tools.iter().find(|t| t["name"] == "worst_odd").expect("odd tool");
    assert_eq!(odd["inputSchema"]["title"], "😀 \u{0} \" \\ / \u{8}\u{c}\n\r\t \u{2028}");
    assert_eq!(odd["_meta"]["maximum"], json!(f64::MAX));
    let big = tools.iter().find(|t| t["name"] == "worst_big").expect("big tool");
    assert_eq!(big["inputSchema"].to_string().len(), MAX_SCHEMA_BYTES);

    let templates = page_line(&router, router.resource_templates(), "resourceTemplates");
    assert_eq!(templates["result"]["resourceTemplates"].as_array().expect("templates").len(), count);
}
