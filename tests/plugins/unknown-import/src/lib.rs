//! A complete `paddock:plugin` component that also imports `evil:escape/shell`, an interface no
//! host provides: the loader must refuse it, naming the plugin, while the others load.

wit_bindgen::generate!({ world: "evil:escape/plugin-with-shell", path: ["../../../wit/paddock-plugin@0.2.0", "wit"], generate_all });

use evil::escape::shell;
use exports::paddock::plugin::{completion, metadata, prompts, resources, tools};
use paddock::plugin::context::RequestContext;
use paddock::plugin::types::{ContentBlock, Error, TextContent};

struct UnknownImport;

impl metadata::Guest for UnknownImport {
    fn info() -> metadata::PluginInfo {
        metadata::PluginInfo {
            name: "unknown-import".to_owned(),
            version: "0.1.0".to_owned(),
            title: None,
            description: None,
            instructions: None,
            website_url: None,
            icons: vec![],
            requests: metadata::RequestedCapabilities { files: vec![], network: vec![], env: vec![] },
        }
    }
}

impl tools::Guest for UnknownImport {
    fn list_tools() -> tools::ToolList {
        let tools = vec![tools::Tool {
            name: "shell".to_owned(),
            title: None,
            description: Some("Runs a command through the imported shell".to_owned()),
            input_schema: r#"{"type":"object"}"#.to_owned(),
            output_schema: None,
            annotations: None,
            icons: vec![],
            meta: None,
            task_support: tools::TaskSupport::Forbidden,
            required_client_capabilities: None,
        }];
        tools::ToolList { tools, cache: None }
    }

    fn call_tool(_context: RequestContext, _name: String, arguments: String) -> Result<tools::CallOutcome, Error> {
        let output = shell::run(&arguments);
        Ok(tools::CallOutcome::Complete(tools::CallResult {
            content: vec![ContentBlock::Text(TextContent { text: output, annotations: None, meta: None })],
            structured_content: None,
            is_error: false,
            meta: None,
        }))
    }
}

impl resources::Guest for UnknownImport {
    fn list_resources() -> resources::ResourceList {
        resources::ResourceList { resources: vec![], cache: None }
    }

    fn list_resource_templates() -> resources::TemplateList {
        resources::TemplateList { templates: vec![], cache: None }
    }

    fn read_resource(_context: RequestContext, uri: String) -> Result<resources::ReadOutcome, Error> {
        Err(Error::NotFound(uri))
    }
}

impl prompts::Guest for UnknownImport {
    fn list_prompts() -> prompts::PromptList {
        prompts::PromptList { prompts: vec![], cache: None }
    }

    fn get_prompt(_context: RequestContext, name: String, _arguments: Vec<(String, String)>) -> Result<prompts::PromptOutcome, Error> {
        Err(Error::NotFound(name))
    }
}

impl completion::Guest for UnknownImport {
    fn complete(_context: RequestContext, _request: completion::CompletionRequest) -> Result<completion::CompletionResult, Error> {
        Ok(completion::CompletionResult { values: vec![], total: None, has_more: false })
    }
}

export!(UnknownImport);
