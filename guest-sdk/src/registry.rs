//! The plugin's registry: the definitions `#[tool]`, `#[resource]`, `#[resource_template]` and
//! `#[prompt]` register, and the ordinary code that answers each WIT export from them
//! (argument parsing, schemas, error results). `export_plugin!` builds one per instance.

use serde::de::DeserializeOwned;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::bindings::exports::paddock::plugin::completion::{CompletionRequest, CompletionResult, CompletionTarget};
use crate::bindings::exports::paddock::plugin::metadata::{FileRequest, PluginInfo, RequestedCapabilities};
use crate::bindings::exports::paddock::plugin::prompts::{self, PromptArgument, PromptResult};
use crate::bindings::exports::paddock::plugin::resources;
use crate::bindings::exports::paddock::plugin::tools::{self, CallResult, ToolAnnotations};
use crate::bindings::paddock::plugin::types::{Error, ResourceBody, ResourceContents};
use crate::content::{Content, IntoPromptMessages, IntoResourceBody, IntoToolResult, call_result};
use crate::schema;
use crate::uri::{UriVars, match_template};

/// Behaviour hints of a tool (`#[tool(read_only, ...)]`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolHints {
    /// The tool does not change anything.
    pub read_only: bool,
    /// The tool may destroy data.
    pub destructive: bool,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool talks to the world outside the plugin.
    pub open_world: bool,
}

/// A registered tool.
pub struct ToolDef {
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    hints: ToolHints,
    input_schema: fn() -> Value,
    output_schema: fn() -> Option<String>,
    call: Box<dyn Fn(&str) -> CallResult>,
}

impl ToolDef {
    /// A tool whose argument object deserializes into `A`.
    pub fn new<A, R>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, hints: ToolHints, f: fn(A) -> R) -> ToolDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoToolResult + 'static,
    {
        ToolDef {
            name,
            title,
            description,
            hints,
            input_schema: schema::input_of::<A>,
            output_schema: R::output_schema,
            call: Box::new(move |arguments| match serde_json::from_str::<A>(arguments) {
                Ok(args) => f(args).into_call_result(),
                Err(err) => invalid_arguments(name, &err),
            }),
        }
    }

    /// A tool that takes no arguments (any arguments sent are ignored).
    pub fn without_arguments<R>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, hints: ToolHints, f: fn() -> R) -> ToolDef
    where
        R: IntoToolResult + 'static,
    {
        ToolDef { name, title, description, hints, input_schema: schema::no_arguments, output_schema: R::output_schema, call: Box::new(move |_| f().into_call_result()) }
    }

    fn descriptor(&self) -> tools::Tool {
        let hints = self.hints;
        let any_hint = hints.read_only || hints.destructive || hints.idempotent || hints.open_world;
        tools::Tool {
            name: self.name.to_owned(),
            title: self.title.map(str::to_owned),
            description: self.description.map(str::to_owned),
            input_schema: (self.input_schema)().to_string(),
            output_schema: (self.output_schema)(),
            // Only what the author stated: an unstated hint keeps MCP's default.
            annotations: any_hint.then(|| ToolAnnotations {
                title: None,
                read_only_hint: hints.read_only.then_some(true),
                destructive_hint: hints.destructive.then_some(true),
                idempotent_hint: hints.idempotent.then_some(true),
                open_world_hint: hints.open_world.then_some(true),
            }),
            icons: Vec::new(),
            meta: None,
        }
    }
}

/// Input validation errors are tool errors the model can read and fix (MCP SEP-1303).
fn invalid_arguments(tool: &str, err: &serde_json::Error) -> CallResult {
    call_result(vec![Content::text(format!("invalid arguments for `{tool}`: {err}"))], None, true)
}

/// A registered resource with a fixed URI.
pub struct ResourceDef {
    uri: &'static str,
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    mime_type: Option<&'static str>,
    read: Box<dyn Fn() -> Result<ResourceBody, Error>>,
}

impl ResourceDef {
    /// A resource read by `f`.
    pub fn new<R: IntoResourceBody + 'static>(
        uri: &'static str,
        name: &'static str,
        title: Option<&'static str>,
        description: Option<&'static str>,
        mime_type: Option<&'static str>,
        f: fn() -> R,
    ) -> ResourceDef {
        ResourceDef { uri, name, title, description, mime_type, read: Box::new(move || f().into_body()) }
    }
}

/// A registered resource template.
pub struct TemplateDef {
    template: &'static str,
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    mime_type: Option<&'static str>,
    read: Box<dyn Fn(UriVars) -> Result<ResourceBody, Error>>,
}

impl TemplateDef {
    /// A template whose URIs are read by `f`.
    pub fn new<R: IntoResourceBody + 'static>(
        template: &'static str,
        name: &'static str,
        title: Option<&'static str>,
        description: Option<&'static str>,
        mime_type: Option<&'static str>,
        f: fn(UriVars) -> R,
    ) -> TemplateDef {
        TemplateDef { template, name, title, description, mime_type, read: Box::new(move |vars| f(vars).into_body()) }
    }
}

/// A registered prompt.
pub struct PromptDef {
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    arguments: fn() -> Vec<PromptArgument>,
    get: Box<dyn Fn(&[(String, String)]) -> Result<PromptResult, Error>>,
}

impl PromptDef {
    /// A prompt whose arguments deserialize into `A` (a struct of string fields).
    pub fn new<A, R>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, f: fn(A) -> R) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoPromptMessages + 'static,
    {
        let get = move |arguments: &[(String, String)]| {
            let object: Map<String, Value> = arguments.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            let args = serde_json::from_value::<A>(Value::Object(object)).map_err(|e| Error::InvalidParams(format!("invalid arguments for prompt `{name}`: {e}")))?;
            render(description, f(args))
        };
        PromptDef { name, title, description, arguments: prompt_arguments::<A>, get: Box::new(get) }
    }

    /// A prompt without arguments.
    pub fn without_arguments<R: IntoPromptMessages + 'static>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, f: fn() -> R) -> PromptDef {
        PromptDef { name, title, description, arguments: Vec::new, get: Box::new(move |_| render(description, f())) }
    }
}

fn render<R: IntoPromptMessages>(description: Option<&str>, output: R) -> Result<PromptResult, Error> {
    let messages = output.into_messages()?;
    Ok(PromptResult {
        description: description.map(str::to_owned),
        messages: messages.into_iter().map(|m| prompts::PromptMessage { role: m.role, content: m.content.0 }).collect(),
    })
}

fn prompt_arguments<A: JsonSchema>() -> Vec<PromptArgument> {
    schema::properties(&schema::of::<A>())
        .into_iter()
        .map(|(name, description, required)| PromptArgument { name, title: None, description, required })
        .collect()
}

/// The capabilities a plugin asks its operator for; shown by `paddock inspect`.
#[derive(Debug, Clone, Default)]
pub struct Requests {
    files: Vec<FileRequest>,
    network: Vec<String>,
    env: Vec<String>,
}

impl Requests {
    /// Asks for nothing.
    pub fn new() -> Requests {
        Requests::default()
    }

    /// Asks for a directory at `guest_path` inside the sandbox, writable or not, and says why.
    pub fn file(mut self, guest_path: &str, writable: bool, reason: &str) -> Requests {
        self.files.push(FileRequest { guest_path: guest_path.to_owned(), writable, reason: Some(reason.to_owned()) });
        self
    }

    /// Asks for outgoing HTTP to a `scheme://host[:port]` pattern.
    pub fn network(mut self, target: &str) -> Requests {
        self.network.push(target.to_owned());
        self
    }

    /// Asks for an environment variable.
    pub fn env(mut self, name: &str) -> Requests {
        self.env.push(name.to_owned());
        self
    }
}

/// Completes an argument: `(target, argument name, value typed so far)` to suggestions.
pub type CompletionFn = fn(&Completing<'_>) -> Vec<String>;

/// What is being completed.
#[derive(Debug)]
pub struct Completing<'a> {
    /// The prompt's name, or the resource template's URI template.
    pub target: &'a str,
    /// Whether `target` is a prompt (else a resource template).
    pub is_prompt: bool,
    /// The argument being completed.
    pub argument: &'a str,
    /// What the user has typed so far.
    pub value: &'a str,
}

/// Everything a plugin registered.
#[doc(hidden)]
pub struct Registry {
    info: PluginInfo,
    tools: Vec<ToolDef>,
    resources: Vec<ResourceDef>,
    templates: Vec<TemplateDef>,
    prompts: Vec<PromptDef>,
    completion: Option<CompletionFn>,
}

impl Registry {
    pub fn new(name: &str, version: &str) -> Registry {
        Registry {
            info: PluginInfo {
                name: name.to_owned(),
                version: version.to_owned(),
                title: None,
                description: None,
                instructions: None,
                website_url: None,
                icons: Vec::new(),
                requests: RequestedCapabilities { files: Vec::new(), network: Vec::new(), env: Vec::new() },
            },
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            completion: None,
        }
    }

    pub fn title(&mut self, title: &str) {
        self.info.title = Some(title.to_owned());
    }
    pub fn description(&mut self, description: &str) {
        self.info.description = Some(description.to_owned());
    }
    pub fn instructions(&mut self, instructions: &str) {
        self.info.instructions = Some(instructions.to_owned());
    }
    pub fn requests(&mut self, requests: Requests) {
        self.info.requests = RequestedCapabilities { files: requests.files, network: requests.network, env: requests.env };
    }
    pub fn tool(&mut self, def: ToolDef) {
        self.tools.push(def);
    }
    pub fn resource(&mut self, def: ResourceDef) {
        self.resources.push(def);
    }
    pub fn template(&mut self, def: TemplateDef) {
        self.templates.push(def);
    }
    pub fn prompt(&mut self, def: PromptDef) {
        self.prompts.push(def);
    }
    pub fn completion(&mut self, f: CompletionFn) {
        self.completion = Some(f);
    }

    pub fn info(self) -> PluginInfo {
        self.info
    }

    pub fn list_tools(&self) -> Vec<tools::Tool> {
        self.tools.iter().map(ToolDef::descriptor).collect()
    }

    pub fn call_tool(&self, name: &str, arguments: &str) -> Result<CallResult, Error> {
        let tool = self.tools.iter().find(|t| t.name == name).ok_or_else(|| Error::NotFound(format!("tool `{name}`")))?;
        Ok((tool.call)(arguments))
    }

    pub fn list_resources(&self) -> Vec<resources::Resource> {
        self.resources
            .iter()
            .map(|r| resources::Resource {
                uri: r.uri.to_owned(),
                name: r.name.to_owned(),
                title: r.title.map(str::to_owned),
                description: r.description.map(str::to_owned),
                mime_type: r.mime_type.map(str::to_owned),
                size: None,
                icons: Vec::new(),
                annotations: None,
            })
            .collect()
    }

    pub fn list_resource_templates(&self) -> Vec<resources::ResourceTemplate> {
        self.templates
            .iter()
            .map(|t| resources::ResourceTemplate {
                uri_template: t.template.to_owned(),
                name: t.name.to_owned(),
                title: t.title.map(str::to_owned),
                description: t.description.map(str::to_owned),
                mime_type: t.mime_type.map(str::to_owned),
                icons: Vec::new(),
                annotations: None,
            })
            .collect()
    }

    pub fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, Error> {
        let contents = |body, mime_type: Option<&str>| vec![ResourceContents { uri: uri.to_owned(), mime_type: mime_type.map(str::to_owned), body, meta: None }];
        if let Some(resource) = self.resources.iter().find(|r| r.uri == uri) {
            return Ok(contents((resource.read)()?, resource.mime_type));
        }
        for template in &self.templates {
            if let Some(vars) = match_template(template.template, uri) {
                return Ok(contents((template.read)(vars)?, template.mime_type));
            }
        }
        Err(Error::NotFound(format!("resource `{uri}`")))
    }

    pub fn list_prompts(&self) -> Vec<prompts::Prompt> {
        self.prompts
            .iter()
            .map(|p| prompts::Prompt {
                name: p.name.to_owned(),
                title: p.title.map(str::to_owned),
                description: p.description.map(str::to_owned),
                arguments: (p.arguments)(),
                icons: Vec::new(),
            })
            .collect()
    }

    pub fn get_prompt(&self, name: &str, arguments: &[(String, String)]) -> Result<PromptResult, Error> {
        let prompt = self.prompts.iter().find(|p| p.name == name).ok_or_else(|| Error::NotFound(format!("prompt `{name}`")))?;
        (prompt.get)(arguments)
    }

    pub fn complete(&self, request: &CompletionRequest) -> Result<CompletionResult, Error> {
        let Some(complete) = self.completion else {
            return Ok(CompletionResult { values: Vec::new(), total: None, has_more: false });
        };
        let (target, is_prompt) = match &request.target {
            CompletionTarget::Prompt(name) => (name.as_str(), true),
            CompletionTarget::ResourceTemplate(template) => (template.as_str(), false),
        };
        let mut values = complete(&Completing { target, is_prompt, argument: &request.argument_name, value: &request.argument_value });
        let total = u32::try_from(values.len()).ok();
        let has_more = values.len() > 100;
        values.truncate(100);
        Ok(CompletionResult { values, total, has_more })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::Json;

    #[derive(Deserialize, JsonSchema)]
    struct Echo {
        /// What to say back.
        text: String,
    }

    #[derive(serde::Serialize, JsonSchema)]
    struct Count {
        words: usize,
    }

    fn echo(args: Echo) -> Result<String, String> {
        if args.text.is_empty() { Err("nothing to echo".into()) } else { Ok(args.text) }
    }

    fn count(args: Echo) -> Json<Count> {
        Json(Count { words: args.text.split_whitespace().count() })
    }

    fn ping() -> &'static str {
        "pong"
    }

    fn registry() -> Registry {
        let mut r = Registry::new("t", "1");
        r.tool(ToolDef::new::<Echo, _>("echo", None, Some("Echoes"), ToolHints::default(), echo));
        r.tool(ToolDef::new::<Echo, _>("count", None, None, ToolHints { read_only: true, ..ToolHints::default() }, count));
        r.tool(ToolDef::without_arguments("ping", None, None, ToolHints::default(), ping));
        r
    }

    fn text_of(result: &CallResult) -> String {
        match &result.content[0] {
            crate::bindings::paddock::plugin::types::ContentBlock::Text(t) => t.text.clone(),
            _ => String::new(),
        }
    }

    #[test]
    fn arguments_are_parsed_and_errors_become_error_results() {
        let r = registry();
        let ok = r.call_tool("echo", r#"{"text":"hi"}"#).expect("known tool");
        assert!(!ok.is_error);
        assert_eq!(text_of(&ok), "hi");
        let failed = r.call_tool("echo", r#"{"text":""}"#).expect("known tool");
        assert!(failed.is_error);
        assert_eq!(text_of(&failed), "nothing to echo");
        let invalid = r.call_tool("echo", r#"{"txt":"hi"}"#).expect("known tool");
        assert!(invalid.is_error);
        assert!(text_of(&invalid).contains("missing field `text`"), "{}", text_of(&invalid));
        assert!(matches!(r.call_tool("nope", "{}"), Err(Error::NotFound(_))));
    }

    #[test]
    fn schemas_describe_inputs_and_structured_outputs() {
        let tools = registry().list_tools();
        let echo: Value = serde_json::from_str(&tools[0].input_schema).expect("json");
        assert_eq!(echo["type"], "object");
        assert_eq!(echo["properties"]["text"]["description"], "What to say back.");
        assert!(echo.get("$schema").is_none());
        assert!(tools[0].output_schema.is_none());
        let output: Value = serde_json::from_str(tools[1].output_schema.as_deref().expect("output schema")).expect("json");
        assert_eq!(output["properties"]["words"]["type"], "integer");
        let ping: Value = serde_json::from_str(&tools[2].input_schema).expect("json");
        assert_eq!(ping, serde_json::json!({"type":"object","properties":{},"additionalProperties":false}));
        assert_eq!(tools[1].annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    }

    #[test]
    fn structured_results_carry_the_json_twice() {
        let result = registry().call_tool("count", r#"{"text":"a b c"}"#).expect("known tool");
        assert_eq!(result.structured_content.as_deref(), Some(r#"{"words":3}"#));
        assert_eq!(text_of(&result), r#"{"words":3}"#);
    }
}
