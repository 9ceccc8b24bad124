//! What `#[tool]`, `#[resource]`, `#[resource_template]` and `#[prompt]` register: each item's
//! description (what clients list) and the handler behind it, wrapped so that arguments are
//! parsed and results converted in ordinary SDK code rather than in generated code.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::bindings::exports::paddock::plugin::prompts::{self, PromptArgument, PromptResult};
use crate::bindings::exports::paddock::plugin::resources;
use crate::bindings::exports::paddock::plugin::tools::{self, CallOutcome, CallResult, TaskSupport, ToolAnnotations};
use crate::bindings::paddock::plugin::types::{self as wit, ResourceBody};
use crate::content::{Content, IntoPromptMessages, IntoResourceBody, IntoToolResult, call_result};
use crate::describe::{self, Audience, CacheHint, Icon};
use crate::request::{Error, Request};
use crate::schema;
use crate::uri::UriVars;

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
    /// Its icons.
    pub icons: &'static [Icon],
    /// Its `_meta`, JSON object text (checked by the macro).
    pub meta: Option<&'static str>,
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

type ToolCall = Box<dyn Fn(&str, &Request) -> Result<CallOutcome, wit::Error>>;

/// A registered tool.
pub struct ToolDef {
    pub(crate) meta: ToolMeta,
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
                Err(err) => Ok(CallOutcome::Complete(invalid_arguments(name, &err))),
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

    pub(crate) fn call(&self, arguments: &str, request: &Request) -> Result<CallOutcome, wit::Error> {
        (self.call)(arguments, request)
    }

    pub(crate) fn descriptor(&self) -> tools::Tool {
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
            icons: describe::icons(self.meta.icons),
            meta: self.meta.meta.map(str::to_owned),
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

/// What `#[resource]` and `#[resource_template]` say about a resource or a template.
#[derive(Debug, Clone, Copy)]
pub struct ResourceMeta {
    /// The URI, or the URI template.
    pub uri: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Its display title.
    pub title: Option<&'static str>,
    /// What it holds.
    pub description: Option<&'static str>,
    /// The MIME type of its contents.
    pub mime_type: Option<&'static str>,
    /// Its size in bytes, when known before reading (fixed URIs only).
    pub size: Option<u64>,
    /// Its icons.
    pub icons: &'static [Icon],
    /// Who it is for.
    pub audience: Option<Audience>,
    /// How much it matters, from 0.0 to 1.0.
    pub priority: Option<f64>,
    /// Its `_meta`, JSON object text (checked by the macro).
    pub meta: Option<&'static str>,
    /// How long a read may be reused; none means never.
    pub cache: Option<CacheHint>,
}

impl ResourceMeta {
    fn annotations(&self) -> Option<wit::Annotations> {
        (self.audience.is_some() || self.priority.is_some()).then(|| wit::Annotations {
            audience: describe::audience(self.audience),
            priority: self.priority,
            last_modified: None,
        })
    }
}

type Read = Box<dyn Fn(Option<UriVars>, &Request) -> Result<ResourceBody, Error>>;

/// A registered resource with a fixed URI, or a template of URIs.
pub struct ResourceDef {
    pub(crate) meta: ResourceMeta,
    read: Read,
}

impl ResourceDef {
    /// A resource read by `f`.
    pub fn new<R: IntoResourceBody + 'static>(meta: ResourceMeta, f: fn() -> R) -> ResourceDef {
        ResourceDef::with_request(meta, move |_| f())
    }

    /// A resource read by `f`, which sees the request.
    pub fn with_request<R: IntoResourceBody + 'static>(meta: ResourceMeta, f: impl Fn(&Request) -> R + 'static) -> ResourceDef {
        ResourceDef { meta, read: Box::new(move |_, request| f(request).into_body()) }
    }

    /// A template whose URIs are read by `f`.
    pub fn template<R: IntoResourceBody + 'static>(meta: ResourceMeta, f: fn(UriVars) -> R) -> ResourceDef {
        ResourceDef::template_with_request(meta, move |vars, _| f(vars))
    }

    /// A template whose URIs are read by `f`, which sees the request.
    pub fn template_with_request<R: IntoResourceBody + 'static>(meta: ResourceMeta, f: impl Fn(UriVars, &Request) -> R + 'static) -> ResourceDef {
        ResourceDef { meta, read: Box::new(move |vars, request| f(vars.unwrap_or_default(), request).into_body()) }
    }

    pub(crate) fn read(&self, vars: Option<UriVars>, request: &Request) -> Result<ResourceBody, Error> {
        (self.read)(vars, request)
    }

    pub(crate) fn resource(&self) -> resources::Resource {
        let m = &self.meta;
        resources::Resource {
            uri: m.uri.to_owned(),
            name: m.name.to_owned(),
            title: m.title.map(str::to_owned),
            description: m.description.map(str::to_owned),
            mime_type: m.mime_type.map(str::to_owned),
            size: m.size,
            icons: describe::icons(m.icons),
            annotations: m.annotations(),
            meta: m.meta.map(str::to_owned),
        }
    }

    pub(crate) fn template_descriptor(&self) -> resources::ResourceTemplate {
        let m = &self.meta;
        resources::ResourceTemplate {
            uri_template: m.uri.to_owned(),
            name: m.name.to_owned(),
            title: m.title.map(str::to_owned),
            description: m.description.map(str::to_owned),
            mime_type: m.mime_type.map(str::to_owned),
            icons: describe::icons(m.icons),
            annotations: m.annotations(),
            meta: m.meta.map(str::to_owned),
        }
    }
}

/// What `#[prompt]` says about a prompt besides its function.
#[derive(Debug, Clone, Copy)]
pub struct PromptMeta {
    /// The prompt's name.
    pub name: &'static str,
    /// Its display title.
    pub title: Option<&'static str>,
    /// What it is for.
    pub description: Option<&'static str>,
    /// Its icons.
    pub icons: &'static [Icon],
    /// Its `_meta`, JSON object text (checked by the macro).
    pub meta: Option<&'static str>,
}

type PromptGet = Box<dyn Fn(&[(String, String)], &Request) -> Result<PromptResult, PromptFailure>>;

/// Why a prompt did not render.
pub(crate) enum PromptFailure {
    InvalidArguments(String),
    Halted(Error),
}

/// A registered prompt.
pub struct PromptDef {
    pub(crate) meta: PromptMeta,
    arguments: fn() -> Vec<PromptArgument>,
    get: PromptGet,
}

impl PromptDef {
    /// A prompt whose arguments deserialize into `A` (a struct of string fields).
    pub fn new<A, R>(meta: PromptMeta, f: fn(A) -> R) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoPromptMessages + 'static,
    {
        PromptDef::with_request::<A, R>(meta, move |args, _| f(args))
    }

    /// A prompt taking its arguments and the request.
    pub fn with_request<A, R>(meta: PromptMeta, f: impl Fn(A, &Request) -> R + 'static) -> PromptDef
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: IntoPromptMessages + 'static,
    {
        let (name, description) = (meta.name, meta.description);
        let get = move |arguments: &[(String, String)], request: &Request| {
            let object: Map<String, Value> = arguments.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            let args = serde_json::from_value::<A>(Value::Object(object))
                .map_err(|e| PromptFailure::InvalidArguments(format!("invalid arguments for prompt `{name}`: {e}")))?;
            render(description, f(args, request)).map_err(PromptFailure::Halted)
        };
        PromptDef { meta, arguments: prompt_arguments::<A>, get: Box::new(get) }
    }

    /// A prompt without arguments.
    pub fn without_arguments<R: IntoPromptMessages + 'static>(meta: PromptMeta, f: fn() -> R) -> PromptDef {
        PromptDef::request_only(meta, move |_| f())
    }

    /// A prompt without arguments that sees the request.
    pub fn request_only<R: IntoPromptMessages + 'static>(meta: PromptMeta, f: impl Fn(&Request) -> R + 'static) -> PromptDef {
        let description = meta.description;
        PromptDef { meta, arguments: Vec::new, get: Box::new(move |_, request| render(description, f(request)).map_err(PromptFailure::Halted)) }
    }

    pub(crate) fn get(&self, arguments: &[(String, String)], request: &Request) -> Result<PromptResult, PromptFailure> {
        (self.get)(arguments, request)
    }

    pub(crate) fn descriptor(&self) -> prompts::Prompt {
        prompts::Prompt {
            name: self.meta.name.to_owned(),
            title: self.meta.title.map(str::to_owned),
            description: self.meta.description.map(str::to_owned),
            arguments: (self.arguments)(),
            icons: describe::icons(self.meta.icons),
            meta: self.meta.meta.map(str::to_owned),
        }
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

/// Each field of `A` as an argument: its `title` and `description` from the schema (a doc
/// comment, or `#[schemars(title = "...")]`), required unless it is an `Option`.
fn prompt_arguments<A: JsonSchema>() -> Vec<PromptArgument> {
    schema::properties(&schema::of::<A>())
        .into_iter()
        .map(|p| PromptArgument { name: p.name, title: p.title, description: p.description, required: p.required })
        .collect()
}
