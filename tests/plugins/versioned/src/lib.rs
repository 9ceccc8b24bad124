//! A plugin whose version lives in one marker in its data segment (`MARK`): a test writes a new
//! version of the file by replacing the marker's bytes (same length), which gives a valid
//! component with another digest, another tool description and another answer, without a build.
//!
//! Tools: `version` (answers the version), `slow` (reports progress 0 as it starts, sleeps
//! `ms`, then answers the version it started as). A resource `versioned://about` and a prompt `which` name the version too.

use std::time::Duration;

wit_bindgen::generate!({ world: "plugin", path: "../../../wit/paddock-plugin@0.2.0" });

use exports::paddock::plugin::{completion, metadata, prompts, resources, tools};
use paddock::plugin::context::RequestContext;
use paddock::plugin::types::{ContentBlock, Error, ResourceBody, ResourceContents, Role, TextContent};

/// The marker: `paddock-versioned:` then the version (`v` and six digits). Tests find and
/// rewrite these bytes; nothing else in the component may contain them.
static MARK: [u8; 25] = *b"paddock-versioned:v000001";

/// The version this component is, read through `black_box` so the bytes stay in the data.
fn version() -> String {
    let mark = std::hint::black_box(&MARK);
    String::from_utf8_lossy(&mark[18..]).into_owned()
}

struct Versioned;

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent { text: s.into(), annotations: None, meta: None })
}

fn answer(s: String) -> Result<tools::CallOutcome, Error> {
    Ok(tools::CallOutcome::Complete(tools::CallResult { content: vec![text(s)], structured_content: None, is_error: false, meta: None }))
}

impl metadata::Guest for Versioned {
    fn info() -> metadata::PluginInfo {
        metadata::PluginInfo {
            name: "versioned".to_owned(),
            version: version(),
            title: None,
            description: Some("A plugin tests make new versions of".to_owned()),
            instructions: None,
            website_url: None,
            icons: vec![],
            requests: metadata::RequestedCapabilities { files: vec![], network: vec![], env: vec![] },
        }
    }
}

impl tools::Guest for Versioned {
    fn list_tools() -> tools::ToolList {
        let tool = |name: &str, description: String, schema: &str| tools::Tool {
            name: name.to_owned(),
            title: None,
            description: Some(description),
            input_schema: schema.to_owned(),
            output_schema: None,
            annotations: None,
            icons: vec![],
            meta: None,
            task_support: tools::TaskSupport::Forbidden,
            required_client_capabilities: None,
        };
        let tools = vec![
            tool("version", format!("Says which version of the plugin answers ({})", version()), r#"{"type":"object"}"#),
            tool("slow", "Sleeps `ms` milliseconds, then says which version answers".to_owned(), r#"{"type":"object","properties":{"ms":{"type":"integer"}}}"#),
        ];
        tools::ToolList { tools, cache: None }
    }

    fn call_tool(_context: RequestContext, name: String, arguments: String) -> Result<tools::CallOutcome, Error> {
        match name.as_str() {
            "version" => answer(version()),
            "slow" => {
                let started_as = version();
                paddock::plugin::host::progress(0.0, None, Some("started"));
                let args: serde_json::Value = serde_json::from_str(&arguments).map_err(|e| Error::InvalidParams(e.to_string()))?;
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0)));
                answer(started_as)
            }
            other => Err(Error::NotFound(other.to_owned())),
        }
    }
}

impl resources::Guest for Versioned {
    fn list_resources() -> resources::ResourceList {
        let about = resources::Resource {
            uri: "versioned://about".to_owned(),
            name: "about".to_owned(),
            title: None,
            description: None,
            mime_type: Some("text/plain".to_owned()),
            size: None,
            icons: vec![],
            annotations: None,
            meta: None,
        };
        resources::ResourceList { resources: vec![about], cache: None }
    }

    fn list_resource_templates() -> resources::TemplateList {
        resources::TemplateList { templates: vec![], cache: None }
    }

    fn read_resource(_context: RequestContext, uri: String) -> Result<resources::ReadOutcome, Error> {
        if uri != "versioned://about" {
            return Err(Error::NotFound(uri));
        }
        let contents = vec![ResourceContents { uri, mime_type: Some("text/plain".to_owned()), body: ResourceBody::Text(version()), meta: None }];
        Ok(resources::ReadOutcome::Complete(resources::ReadResult { contents, cache: None, meta: None }))
    }
}

impl prompts::Guest for Versioned {
    fn list_prompts() -> prompts::PromptList {
        let which = prompts::Prompt { name: "which".to_owned(), title: None, description: None, arguments: vec![], icons: vec![], meta: None };
        prompts::PromptList { prompts: vec![which], cache: None }
    }

    fn get_prompt(_context: RequestContext, name: String, _arguments: Vec<(String, String)>) -> Result<prompts::PromptOutcome, Error> {
        if name != "which" {
            return Err(Error::NotFound(name));
        }
        Ok(prompts::PromptOutcome::Complete(prompts::PromptResult {
            description: None,
            messages: vec![prompts::PromptMessage { role: Role::User, content: text(format!("Which version is {}?", version())) }],
            meta: None,
        }))
    }
}

impl completion::Guest for Versioned {
    fn complete(_context: RequestContext, _request: completion::CompletionRequest) -> Result<completion::CompletionResult, Error> {
        Ok(completion::CompletionResult { values: vec![], total: None, has_more: false })
    }
}

export!(Versioned);
