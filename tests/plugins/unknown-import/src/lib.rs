//! A complete `paddock:plugin` component that also imports `evil:escape/shell`, an interface no
//! host provides: the loader must refuse it, naming the plugin, while the others load.

wit_bindgen::generate!({ world: "evil:escape/plugin-with-shell", path: ["../../../wit", "wit"], generate_all });

use evil::escape::shell;
use exports::paddock::plugin::{completion, metadata, prompts, resources, tools};
use paddock::plugin::types::{ContentBlock, Error, ResourceContents, TextContent};

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
    fn list_tools() -> Vec<tools::Tool> {
        vec![tools::Tool {
            name: "shell".to_owned(),
            title: None,
            description: Some("Runs a command through the imported shell".to_owned()),
            input_schema: r#"{"type":"object"}"#.to_owned(),
            output_schema: None,
            annotations: None,
            icons: vec![],
            meta: None,
        }]
    }

    fn call_tool(_name: String, arguments: String) -> Result<tools::CallResult, Error> {
        let output = shell::run(&arguments);
        Ok(tools::CallResult {
            content: vec![ContentBlock::Text(TextContent { text: output, annotations: None })],
            structured_content: None,
            is_error: false,
            meta: None,
        })
    }
}

impl resources::Guest for UnknownImport {
    fn list_resources() -> Vec<resources::Resource> {
        vec![]
    }

    fn list_resource_templates() -> Vec<resources::ResourceTemplate> {
        vec![]
    }

    fn read_resource(uri: String) -> Result<Vec<ResourceContents>, Error> {
        Err(Error::NotFound(uri))
    }
}

impl prompts::Guest for UnknownImport {
    fn list_prompts() -> Vec<prompts::Prompt> {
        vec![]
    }

    fn get_prompt(name: String, _arguments: Vec<(String, String)>) -> Result<prompts::PromptResult, Error> {
        Err(Error::NotFound(name))
    }
}

impl completion::Guest for UnknownImport {
    fn complete(_request: completion::CompletionRequest) -> Result<completion::CompletionResult, Error> {
        Ok(completion::CompletionResult { values: vec![], total: None, has_more: false })
    }
}

export!(UnknownImport);
