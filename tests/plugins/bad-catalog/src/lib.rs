//! A hostile test component: its catalog turns bad in one chosen way, as the environment
//! variable `BAD_CATALOG` says when the host lists it, and is good (every item exactly at the
//! host's caps) when the variable is unset. The operator grants the variable in the plugin's
//! grant file (`env = { BAD_CATALOG = "deep-schema" }`), so one component covers every variant.
//!
//! Variants: `deep-schema`, `surrogate`, `huge-schema`, `deep-meta`, `big-number` (tools),
//! `bad-template`, `many-vars` (resource templates). Any other value traps, so a misspelt
//! variant fails loudly instead of loading the good catalog.
//!
//! Whatever the variant, tool `bad_result` returns JSON that cannot be serialized (or, with
//! `kind` `edge`, JSON exactly at the caps), and the templates `cal://{year}-{month}-{day}` and
//! `a://{v}…{v}!` (32 variables) are the ones backtracking matchers take minutes on.
//!
//! It is written directly against `wit/paddock-plugin@0.2.0/plugin.wit` with wit-bindgen, not with the guest SDK.

use serde_json::Value;

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/paddock-plugin@0.2.0" });

use exports::paddock::plugin::{completion, metadata, prompts, resources, tools};
use paddock::plugin::context::RequestContext;
use paddock::plugin::types::{ContentBlock, Error, ResourceBody, ResourceContents, TextContent};

struct BadCatalog;

/// The host's caps: every good item sits exactly on them, every bad one just past them.
const DEPTH: usize = 64;
const SCHEMA_BYTES: usize = 256 << 10;
const TEMPLATE_BYTES: usize = 1024;
const TEMPLATE_VARIABLES: usize = 32;

/// Nesting far past the cap, as the attack used.
const HOSTILE_DEPTH: usize = 2000;

const VARIANTS: &[&str] = &["deep-schema", "surrogate", "huge-schema", "deep-meta", "big-number", "bad-template", "many-vars"];

/// The variant granted to this instance, if any.
fn variant() -> Option<String> {
    let chosen = std::env::var("BAD_CATALOG").ok()?;
    assert!(VARIANTS.contains(&chosen.as_str()), "unknown BAD_CATALOG variant `{chosen}`");
    Some(chosen)
}

fn is(variant: &Option<String>, name: &str) -> bool {
    variant.as_deref() == Some(name)
}

/// An object nested `depth` levels deep.
fn nested(depth: usize) -> String {
    format!("{}{{}}{}", "{\"properties\":".repeat(depth - 1), "}".repeat(depth - 1))
}

/// An object schema of exactly `bytes` bytes.
fn sized(bytes: usize) -> String {
    let frame = r#"{"type":"object","description":""}"#.len();
    format!(r#"{{"type":"object","description":"{}"}}"#, "x".repeat(bytes - frame))
}

fn tool(name: &str, input_schema: String, output_schema: Option<String>, meta: Option<String>) -> tools::Tool {
    tools::Tool {
        name: name.to_owned(),
        title: None,
        description: Some(format!("bad-catalog tool {name}")),
        input_schema,
        output_schema,
        annotations: None,
        icons: vec![],
        meta,
        task_support: tools::TaskSupport::Forbidden,
        required_client_capabilities: None,
    }
}

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent { text: s.into(), annotations: None, meta: None })
}

impl metadata::Guest for BadCatalog {
    fn info() -> metadata::PluginInfo {
        metadata::PluginInfo {
            name: "bad-catalog".to_owned(),
            version: "0.1.0".to_owned(),
            title: None,
            description: Some("A catalog that breaks as BAD_CATALOG says".to_owned()),
            instructions: None,
            website_url: None,
            icons: vec![],
            requests: metadata::RequestedCapabilities { files: vec![], network: vec![], env: vec!["BAD_CATALOG".to_owned()] },
        }
    }
}

impl tools::Guest for BadCatalog {
    fn list_tools() -> tools::ToolList {
        let v = variant();
        let depth = |bad: bool| if bad { HOSTILE_DEPTH } else { DEPTH };
        let title = if is(&v, "surrogate") { r"\ud800" } else { r"\ud83d\ude00" };
        let maximum = if is(&v, "big-number") { "1e400" } else { "1.7976931348623157e308" };
        let schema_bytes = if is(&v, "huge-schema") { SCHEMA_BYTES + 1 } else { SCHEMA_BYTES };
        let tools = vec![
            tool("echo", r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned(), None, None),
            tool("bad_result", r#"{"type":"object","properties":{"kind":{"type":"string"}}}"#.to_owned(), None, None),
            tool("deep_schema", nested(depth(is(&v, "deep-schema"))), None, None),
            tool("surrogate", format!(r#"{{"type":"object","title":"{title}"}}"#), None, None),
            tool("huge_schema", sized(schema_bytes), None, None),
            tool("deep_meta", r#"{"type":"object"}"#.to_owned(), None, Some(nested(depth(is(&v, "deep-meta"))))),
            tool(
                "big_number",
                r#"{"type":"object"}"#.to_owned(),
                Some(format!(r#"{{"type":"object","properties":{{"n":{{"type":"number","maximum":{maximum}}}}}}}"#)),
                None,
            ),
        ];
        tools::ToolList { tools, cache: None }
    }

    fn call_tool(_context: RequestContext, name: String, arguments: String) -> Result<tools::CallOutcome, Error> {
        call(name, arguments).map(tools::CallOutcome::Complete)
    }
}

fn call(name: String, arguments: String) -> Result<tools::CallResult, Error> {
    {
        let args: Value = serde_json::from_str(&arguments).map_err(|e| Error::InvalidParams(e.to_string()))?;
        let arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let result = |structured: Option<String>, meta: Option<String>| tools::CallResult {
            content: vec![text("returned")],
            structured_content: structured,
            is_error: false,
            meta,
        };
        match name.as_str() {
            "echo" => Ok(tools::CallResult { content: vec![text(arg("text"))], structured_content: None, is_error: false, meta: None }),
            "bad_result" => match arg("kind").as_str() {
                "deep" => Ok(result(Some(nested(HOSTILE_DEPTH)), None)),
                "surrogate" => Ok(result(Some(r#"{"s":"\ud800"}"#.to_owned()), None)),
                "deep-meta" => Ok(result(None, Some(nested(HOSTILE_DEPTH)))),
                "number" => Ok(result(Some(r#"{"n":1e400}"#.to_owned()), None)),
                "edge" => Ok(result(Some(nested(DEPTH)), Some(r#"{"s":"\ud83d\ude00"}"#.to_owned()))),
                other => Err(Error::InvalidParams(format!("unknown kind `{other}`"))),
            },
            other => Err(Error::NotFound(other.to_owned())),
        }
    }
}

/// `long://{+path}` padded to `bytes` bytes.
fn long_template(bytes: usize) -> String {
    let head = "long://{+path}";
    format!("{head}{}", "!".repeat(bytes - head.len()))
}

impl resources::Guest for BadCatalog {
    fn list_resources() -> resources::ResourceList {
        resources::ResourceList { resources: vec![], cache: None }
    }

    fn list_resource_templates() -> resources::TemplateList {
        let v = variant();
        let vars = if is(&v, "many-vars") { TEMPLATE_VARIABLES + 1 } else { TEMPLATE_VARIABLES };
        let long = if is(&v, "bad-template") { TEMPLATE_BYTES + 1 } else { TEMPLATE_BYTES };
        let templates = [format!("a://{}!", "{v}".repeat(vars)), "cal://{year}-{month}-{day}".to_owned(), long_template(long)]
            .into_iter()
            .map(|uri_template| resources::ResourceTemplate {
                uri_template,
                name: "template".to_owned(),
                title: None,
                description: None,
                mime_type: Some("text/plain".to_owned()),
                icons: vec![],
                annotations: None,
                meta: None,
            })
            .collect();
        resources::TemplateList { templates, cache: None }
    }

    fn read_resource(_context: RequestContext, uri: String) -> Result<resources::ReadOutcome, Error> {
        let body = ResourceBody::Text(format!("read {} bytes", uri.len()));
        let contents = vec![ResourceContents { uri, mime_type: Some("text/plain".to_owned()), body, meta: None }];
        Ok(resources::ReadOutcome::Complete(resources::ReadResult { contents, cache: None, meta: None }))
    }
}

impl prompts::Guest for BadCatalog {
    fn list_prompts() -> prompts::PromptList {
        prompts::PromptList { prompts: vec![], cache: None }
    }

    fn get_prompt(_context: RequestContext, name: String, _arguments: Vec<(String, String)>) -> Result<prompts::PromptOutcome, Error> {
        Err(Error::NotFound(name))
    }
}

impl completion::Guest for BadCatalog {
    fn complete(_context: RequestContext, _request: completion::CompletionRequest) -> Result<completion::CompletionResult, Error> {
        Ok(completion::CompletionResult { values: vec![], total: None, has_more: false })
    }
}

export!(BadCatalog);
