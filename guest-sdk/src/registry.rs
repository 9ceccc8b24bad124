//! The plugin's registry: the definitions `#[tool]`, `#[resource]`, `#[resource_template]` and
//! `#[prompt]` register, and the ordinary code that answers each WIT export from them
//! (argument parsing, schemas, error results). `export_plugin!` builds one per instance.

use serde::de::DeserializeOwned;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::bindings::exports::paddock::plugin::completion::{CompletionRequest, CompletionResult, CompletionTarget};
use crate::bindings::exports::paddock::plugin::metadata::{FileRequest, PluginInfo, RequestedCapabilities};
use crate::bindings::exports::paddock::plugin::prompts::{self, PromptArgument, PromptOutcome, PromptResult};
use crate::bindings::exports::paddock::plugin::resources::{self, ReadOutcome, ReadResult};
use crate::bindings::exports::paddock::plugin::tools::{self, CallOutcome, CallResult, TaskSupport, ToolAnnotations};
use crate::bindings::paddock::plugin::context::RequestContext;
use crate::bindings::paddock::plugin::types::{Error as WitError, ResourceBody, ResourceContents};
use crate::content::{Content, IntoPromptMessages, IntoResourceBody, IntoToolResult, call_result};
use crate::request::{Error, Halt, Request};
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

/// What `#[tool]` says about a tool besides its function.
#[derive(Debug, Clone, Copy)]
pub struct ToolMeta {
    /// The tool's name.
    pub name: &'static str,
    /// Its display title.
    pub title: Option<&'static str>,
    /// What it does, for the model.
    pub description: Option<&'static str>,
    /// Its behaviour hints.
    pub hints: ToolHints,
    /// Client capabilities a call needs, as dotted paths separated by commas (`"sampling, elicitation.url"`).
    pub requires: Option<&'static str>,
    /// Whether a call may run as a task.
    pub task: TaskMode,
}

/// Whether a tool's calls may run as tasks (`#[tool(task = "...")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMode {
    /// Never (the default).
    Forbidden,
    /// When the client accepts a task; the host decides (a call still running after a moment
    /// becomes one).
    Optional,
    /// Only as a task; a client that cannot use tasks cannot call the tool.
    Required,
}

type ToolCall = Box<dyn Fn(&str, &Request) -> CallOutcome>;

/// A registered tool.
pub struct ToolDef {
    meta: ToolMeta,
    input_schema: fn() -> Value,
    output_schema: fn() -> Option<String>,
    call: ToolCall,
}

impl ToolDef {
    /// A tool whose argument object deserializes into `A`.
    pub fn new<A, R>(meta: ToolMeta, f: fn(A) -> R) -> ToolDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoToolResult + 'static,
    {
        ToolDef::with_request::<A, R>(meta, move |args, _| f(args))
    }

    /// A tool taking its arguments and the request.
    pub fn with_request<A, R>(meta: ToolMeta, f: impl Fn(A, &Request) -> R + 'static) -> ToolDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoToolResult + 'static,
    {
        let name = meta.name;
        ToolDef {
            meta,
            input_schema: schema::input_of::<A>,
            output_schema: R::output_schema,
            call: Box::new(move |arguments, request| match serde_json::from_str::<A>(arguments) {
                Ok(args) => f(args, request).into_outcome(request),
                Err(err) => CallOutcome::Complete(invalid_arguments(name, &err)),
            }),
        }
    }

    /// A tool that takes no arguments (any arguments sent are ignored).
    pub fn without_arguments<R: IntoToolResult + 'static>(meta: ToolMeta, f: fn() -> R) -> ToolDef {
        ToolDef::request_only(meta, move |_| f())
    }

    /// A tool that takes only the request.
    pub fn request_only<R: IntoToolResult + 'static>(meta: ToolMeta, f: impl Fn(&Request) -> R + 'static) -> ToolDef {
        ToolDef {
            meta,
            input_schema: schema::no_arguments,
            output_schema: R::output_schema,
            call: Box::new(move |_, request| f(request).into_outcome(request)),
        }
    }

    fn descriptor(&self) -> tools::Tool {
        let hints = self.meta.hints;
        let any_hint = hints.read_only || hints.destructive || hints.idempotent || hints.open_world;
        tools::Tool {
            name: self.meta.name.to_owned(),
            title: self.meta.title.map(str::to_owned),
            description: self.meta.description.map(str::to_owned),
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
            task_support: match self.meta.task {
                TaskMode::Forbidden => TaskSupport::Forbidden,
                TaskMode::Optional => TaskSupport::Optional,
                TaskMode::Required => TaskSupport::Required,
            },
            required_client_capabilities: self.meta.requires.map(|r| capabilities_object(r).to_string()),
        }
    }
}

/// `"sampling, elicitation.url"` as a `ClientCapabilities` object: `{"sampling":{},"elicitation":{"url":{}}}`.
pub(crate) fn capabilities_object(paths: &str) -> Value {
    let mut root = Map::new();
    for path in paths.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut node = &mut root;
        for part in path.split('.') {
            node = node.entry(part.to_owned()).or_insert_with(|| Value::Object(Map::new())).as_object_mut().expect("built as objects");
        }
    }
    Value::Object(root)
}

/// Input validation errors are tool errors the model can read and fix (MCP SEP-1303).
fn invalid_arguments(tool: &str, err: &serde_json::Error) -> CallResult {
    call_result(vec![Content::text(format!("invalid arguments for `{tool}`: {err}"))], None, true)
}

type Read = Box<dyn Fn(&Request) -> Result<ResourceBody, Error>>;

/// A registered resource with a fixed URI.
pub struct ResourceDef {
    uri: &'static str,
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    mime_type: Option<&'static str>,
    read: Read,
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
        ResourceDef::with_request(uri, name, title, description, mime_type, move |_| f())
    }

    /// A resource read by `f`, which sees the request.
    pub fn with_request<R: IntoResourceBody + 'static>(
        uri: &'static str,
        name: &'static str,
        title: Option<&'static str>,
        description: Option<&'static str>,
        mime_type: Option<&'static str>,
        f: impl Fn(&Request) -> R + 'static,
    ) -> ResourceDef {
        ResourceDef { uri, name, title, description, mime_type, read: Box::new(move |request| f(request).into_body()) }
    }
}

type TemplateRead = Box<dyn Fn(UriVars, &Request) -> Result<ResourceBody, Error>>;

/// A registered resource template.
pub struct TemplateDef {
    template: &'static str,
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    mime_type: Option<&'static str>,
    read: TemplateRead,
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
        TemplateDef::with_request(template, name, title, description, mime_type, move |vars, _| f(vars))
    }

    /// A template whose URIs are read by `f`, which sees the request.
    pub fn with_request<R: IntoResourceBody + 'static>(
        template: &'static str,
        name: &'static str,
        title: Option<&'static str>,
        description: Option<&'static str>,
        mime_type: Option<&'static str>,
        f: impl Fn(UriVars, &Request) -> R + 'static,
    ) -> TemplateDef {
        TemplateDef { template, name, title, description, mime_type, read: Box::new(move |vars, request| f(vars, request).into_body()) }
    }
}

type PromptGet = Box<dyn Fn(&[(String, String)], &Request) -> Result<PromptResult, PromptFailure>>;

/// Why a prompt did not render.
enum PromptFailure {
    InvalidArguments(String),
    Halted(Error),
}

/// A registered prompt.
pub struct PromptDef {
    name: &'static str,
    title: Option<&'static str>,
    description: Option<&'static str>,
    arguments: fn() -> Vec<PromptArgument>,
    get: PromptGet,
}

impl PromptDef {
    /// A prompt whose arguments deserialize into `A` (a struct of string fields).
    pub fn new<A, R>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, f: fn(A) -> R) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoPromptMessages + 'static,
    {
        PromptDef::with_request::<A, R>(name, title, description, move |args, _| f(args))
    }

    /// A prompt taking its arguments and the request.
    pub fn with_request<A, R>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, f: impl Fn(A, &Request) -> R + 'static) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoPromptMessages + 'static,
    {
        let get = move |arguments: &[(String, String)], request: &Request| {
            let object: Map<String, Value> = arguments.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            let args = serde_json::from_value::<A>(Value::Object(object))
                .map_err(|e| PromptFailure::InvalidArguments(format!("invalid arguments for prompt `{name}`: {e}")))?;
            render(description, f(args, request)).map_err(PromptFailure::Halted)
        };
        PromptDef { name, title, description, arguments: prompt_arguments::<A>, get: Box::new(get) }
    }

    /// A prompt without arguments.
    pub fn without_arguments<R: IntoPromptMessages + 'static>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, f: fn() -> R) -> PromptDef {
        PromptDef::request_only(name, title, description, move |_| f())
    }

    /// A prompt without arguments that sees the request.
    pub fn request_only<R: IntoPromptMessages + 'static>(name: &'static str, title: Option<&'static str>, description: Option<&'static str>, f: impl Fn(&Request) -> R + 'static) -> PromptDef {
        PromptDef { name, title, description, arguments: Vec::new, get: Box::new(move |_, request| render(description, f(request)).map_err(PromptFailure::Halted)) }
    }
}

fn render<R: IntoPromptMessages>(description: Option<&str>, output: R) -> Result<PromptResult, Error> {
    let messages = output.into_messages()?;
    Ok(PromptResult {
        description: description.map(str::to_owned),
        messages: messages.into_iter().map(|m| prompts::PromptMessage { role: m.role, content: m.content.0 }).collect(),
        meta: None,
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

    pub fn list_tools(&self) -> tools::ToolList {
        tools::ToolList { tools: self.tools.iter().map(ToolDef::descriptor).collect(), cache: None }
    }

    pub fn call_tool(&self, context: RequestContext, name: &str, arguments: &str) -> Result<CallOutcome, WitError> {
        let tool = self.tools.iter().find(|t| t.meta.name == name).ok_or_else(|| WitError::NotFound(format!("tool `{name}`")))?;
        Ok((tool.call)(arguments, &Request::new(context)))
    }

    pub fn list_resources(&self) -> resources::ResourceList {
        let resources = self
            .resources
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
                meta: None,
            })
            .collect();
        resources::ResourceList { resources, cache: None }
    }

    pub fn list_resource_templates(&self) -> resources::TemplateList {
        let templates = self
            .templates
            .iter()
            .map(|t| resources::ResourceTemplate {
                uri_template: t.template.to_owned(),
                name: t.name.to_owned(),
                title: t.title.map(str::to_owned),
                description: t.description.map(str::to_owned),
                mime_type: t.mime_type.map(str::to_owned),
                icons: Vec::new(),
                annotations: None,
                meta: None,
            })
            .collect();
        resources::TemplateList { templates, cache: None }
    }

    pub fn read_resource(&self, context: RequestContext, uri: &str) -> Result<ReadOutcome, WitError> {
        let request = Request::new(context);
        let read = |body: Result<ResourceBody, Error>, mime_type: Option<&str>| match body {
            Ok(body) => Ok(ReadOutcome::Complete(ReadResult {
                contents: vec![ResourceContents { uri: uri.to_owned(), mime_type: mime_type.map(str::to_owned), body, meta: None }],
                cache: None,
                meta: None,
            })),
            Err(Error(Halt::Failed(message))) => Err(WitError::Failed(message)),
            Err(Error(Halt::NeedsInput)) => Ok(ReadOutcome::InputRequired(request.input_required())),
        };
        if let Some(resource) = self.resources.iter().find(|r| r.uri == uri) {
            return read((resource.read)(&request), resource.mime_type);
        }
        for template in &self.templates {
            if let Some(vars) = match_template(template.template, uri) {
                return read((template.read)(vars, &request), template.mime_type);
            }
        }
        Err(WitError::NotFound(format!("resource `{uri}`")))
    }

    pub fn list_prompts(&self) -> prompts::PromptList {
        let prompts = self
            .prompts
            .iter()
            .map(|p| prompts::Prompt {
                name: p.name.to_owned(),
                title: p.title.map(str::to_owned),
                description: p.description.map(str::to_owned),
                arguments: (p.arguments)(),
                icons: Vec::new(),
                meta: None,
            })
            .collect();
        prompts::PromptList { prompts, cache: None }
    }

    pub fn get_prompt(&self, context: RequestContext, name: &str, arguments: &[(String, String)]) -> Result<PromptOutcome, WitError> {
        let prompt = self.prompts.iter().find(|p| p.name == name).ok_or_else(|| WitError::NotFound(format!("prompt `{name}`")))?;
        let request = Request::new(context);
        match (prompt.get)(arguments, &request) {
            Ok(result) => Ok(PromptOutcome::Complete(result)),
            Err(PromptFailure::InvalidArguments(why)) => Err(WitError::InvalidParams(why)),
            Err(PromptFailure::Halted(Error(Halt::Failed(message)))) => Err(WitError::Failed(message)),
            Err(PromptFailure::Halted(Error(Halt::NeedsInput))) => Ok(PromptOutcome::InputRequired(request.input_required())),
        }
    }

    pub fn complete(&self, _context: RequestContext, request: &CompletionRequest) -> Result<CompletionResult, WitError> {
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
    use crate::bindings::paddock::plugin::context::{Era, TraceContext};
    use crate::bindings::paddock::plugin::input::{ElicitationAction, ElicitationResult, InputRequestKind, InputResponse, InputResponseKind};
    use crate::{Elicited, Json};

    #[derive(Deserialize, JsonSchema)]
    struct Echo {
        /// What to say back.
        text: String,
    }

    #[derive(serde::Serialize, JsonSchema)]
    struct Count {
        words: usize,
    }

    #[derive(Deserialize, JsonSchema)]
    struct UserName {
        name: String,
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

    fn greet(cx: &Request) -> crate::Result<String> {
        let Elicited::Accepted(user) = cx.elicit::<UserName>("user_name", "What is your name?")? else {
            return Ok("Maybe next time.".into());
        };
        Ok(format!("Hello, {}!", user.name))
    }

    fn three(cx: &Request) -> crate::Result<String> {
        cx.keep_state(b"three".to_vec());
        let (name, roots, page) = (cx.elicit::<UserName>("name", "Name?"), cx.roots("roots"), cx.elicit_url("login", "Sign in", "https://example.com"));
        let (name, roots, page) = (name?, roots?, page?);
        let name = if let Elicited::Accepted(user) = name { user.name } else { String::new() };
        Ok(format!("{name}/{}/{page:?}", roots.len()))
    }

    fn meta(name: &'static str, read_only: bool, requires: Option<&'static str>) -> ToolMeta {
        ToolMeta { name, title: None, description: Some("a tool"), hints: ToolHints { read_only, ..ToolHints::default() }, requires, task: TaskMode::Forbidden }
    }

    fn registry() -> Registry {
        let mut r = Registry::new("t", "1");
        r.tool(ToolDef::new::<Echo, _>(meta("echo", false, None), echo));
        r.tool(ToolDef::new::<Echo, _>(meta("count", true, None), count));
        r.tool(ToolDef::without_arguments(meta("ping", false, Some("sampling, elicitation.url")), ping));
        r.tool(ToolDef::request_only(meta("greet", false, None), greet));
        r.tool(ToolDef::request_only(meta("three", false, None), three));
        r.tool(ToolDef::request_only(ToolMeta { task: TaskMode::Required, ..meta("purge", false, None) }, purge));
        r
    }

    fn purge(cx: &Request) -> crate::Result<String> {
        cx.ask_within_task();
        let _ = cx.elicit::<UserName>("confirm", "Purge?")?;
        Ok("purged".into())
    }

    fn context(responses: Vec<InputResponse>) -> RequestContext {
        RequestContext {
            protocol_version: "2026-07-28".into(),
            era: Era::Stateless,
            client_capabilities: r#"{"elicitation":{}}"#.into(),
            client_info: None,
            meta: "{}".into(),
            has_progress_token: false,
            trace: TraceContext { traceparent: None, tracestate: None, baggage: None },
            caller: None,
            input_responses: responses,
            state: None,
        }
    }

    fn complete(outcome: CallOutcome) -> CallResult {
        match outcome {
            CallOutcome::Complete(result) => result,
            CallOutcome::InputRequired(r) => panic!("asked for input: {r:?}"),
        }
    }

    fn call(r: &Registry, name: &str, arguments: &str) -> CallResult {
        complete(r.call_tool(context(vec![]), name, arguments).expect("known tool"))
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
        let ok = call(&r, "echo", r#"{"text":"hi"}"#);
        assert!(!ok.is_error);
        assert_eq!(text_of(&ok), "hi");
        let failed = call(&r, "echo", r#"{"text":""}"#);
        assert!(failed.is_error);
        assert_eq!(text_of(&failed), "nothing to echo");
        let invalid = call(&r, "echo", r#"{"txt":"hi"}"#);
        assert!(invalid.is_error);
        assert!(text_of(&invalid).contains("missing field `text`"), "{}", text_of(&invalid));
        assert!(matches!(r.call_tool(context(vec![]), "nope", "{}"), Err(WitError::NotFound(_))));
    }

    #[test]
    fn schemas_describe_inputs_and_structured_outputs() {
        let tools = registry().list_tools().tools;
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
        let required: Value = serde_json::from_str(tools[2].required_client_capabilities.as_deref().expect("declared")).expect("json");
        assert_eq!(required, serde_json::json!({"sampling": {}, "elicitation": {"url": {}}}));
        assert!(tools[0].required_client_capabilities.is_none());
    }

    #[test]
    fn structured_results_carry_the_json_twice() {
        let result = call(&registry(), "count", r#"{"text":"a b c"}"#);
        assert_eq!(result.structured_content.as_deref(), Some(r#"{"words":3}"#));
        assert_eq!(text_of(&result), r#"{"words":3}"#);
    }

    #[test]
    fn a_missing_answer_ends_the_call_with_the_question_and_the_answer_completes_it() {
        let r = registry();
        let CallOutcome::InputRequired(asked) = r.call_tool(context(vec![]), "greet", "{}").expect("known") else { panic!("must ask") };
        assert_eq!(asked.requests.len(), 1);
        assert_eq!(asked.requests[0].key, "user_name");
        let InputRequestKind::ElicitForm(form) = &asked.requests[0].request else { panic!("a form") };
        assert_eq!(form.message, "What is your name?");
        let schema: Value = serde_json::from_str(&form.requested_schema).expect("json");
        assert_eq!(schema["properties"]["name"]["type"], "string");

        let answer = |action, content: Option<&str>| InputResponse {
            key: "user_name".into(),
            response: InputResponseKind::Elicitation(ElicitationResult { action, content: content.map(str::to_owned) }),
        };
        let done = complete(r.call_tool(context(vec![answer(ElicitationAction::Accept, Some(r#"{"name":"Ada"}"#))]), "greet", "{}").expect("known"));
        assert_eq!(text_of(&done), "Hello, Ada!");
        let declined = complete(r.call_tool(context(vec![answer(ElicitationAction::Decline, None)]), "greet", "{}").expect("known"));
        assert_eq!(text_of(&declined), "Maybe next time.");
        let wrong = complete(r.call_tool(context(vec![answer(ElicitationAction::Accept, Some(r#"{"nom":1}"#))]), "greet", "{}").expect("known"));
        assert!(wrong.is_error && text_of(&wrong).contains("does not fit its form"), "{}", text_of(&wrong));
    }

    #[test]
    fn questions_asked_before_any_question_mark_go_out_in_one_round_with_the_state() {
        let CallOutcome::InputRequired(asked) = registry().call_tool(context(vec![]), "three", "{}").expect("known") else { panic!("must ask") };
        let keys: Vec<&str> = asked.requests.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["name", "roots", "login"]);
        assert_eq!(asked.state.as_deref(), Some(&b"three"[..]));
        assert!(!asked.in_task, "asked as an ordinary round");
    }

    #[test]
    fn a_task_tool_declares_its_support_and_asks_within_the_task() {
        let r = registry();
        let tools = r.list_tools().tools;
        assert!(tools.iter().filter(|t| t.name != "purge").all(|t| t.task_support == TaskSupport::Forbidden));
        assert_eq!(tools.iter().find(|t| t.name == "purge").map(|t| t.task_support), Some(TaskSupport::Required));
        let CallOutcome::InputRequired(asked) = r.call_tool(context(vec![]), "purge", "{}").expect("known") else { panic!("must ask") };
        assert!(asked.in_task);
        assert_eq!(asked.requests[0].key, "confirm");
    }

    #[test]
    fn declared_capabilities_are_read_by_dotted_path() {
        let request = Request::new(context(vec![]));
        assert!(request.client_supports("elicitation"));
        assert!(request.client_supports("elicitation.form"), "an empty elicitation object declares forms");
        assert!(!request.client_supports("elicitation.url"));
        assert!(!request.client_supports("sampling"));
        assert!(request.is_stateless());
    }
}
