//! The plugin's registry: everything the macros and `export_plugin!` registered, and the code
//! that answers each WIT export from it (lookups, URI templates, completion, input outcomes).
//! `export_plugin!` builds one per instance.

use crate::bindings::exports::paddock::plugin::completion::{CompletionRequest, CompletionResult, CompletionTarget};
use crate::bindings::exports::paddock::plugin::metadata::{FileRequest, PluginInfo, RequestedCapabilities};
use crate::bindings::exports::paddock::plugin::prompts::{self, PromptOutcome};
use crate::bindings::exports::paddock::plugin::resources::{self, ReadOutcome, ReadResult};
use crate::bindings::exports::paddock::plugin::tools::{self, CallOutcome};
use crate::bindings::paddock::plugin::context::RequestContext;
use crate::bindings::paddock::plugin::types::{Error as WitError, ResourceBody, ResourceContents};
use crate::defs::{PromptDef, PromptFailure, ResourceDef, ToolDef};
use crate::describe::{self, CacheHint, Icon};
use crate::request::{Error, Request};
use crate::uri::match_template;

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

/// Completes an argument: what is being completed to suggestions (at most 100 are sent).
pub type CompletionFn = fn(&Completing<'_>) -> Vec<String>;

/// What is being completed, and what the user already chose.
///
/// ```ignore
/// fn complete(c: &Completing) -> Vec<String> {
///     match (c.target, c.argument) {
///         ("weather", "city") => cities_in(c.chosen("country").unwrap_or("")).filter(|x| x.starts_with(c.value)).collect(),
///         _ => Vec::new(),
///     }
/// }
/// ```
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
    /// The request: who asks, with which capabilities.
    pub request: &'a Request,
    chosen: &'a [(String, String)],
}

impl Completing<'_> {
    /// The value already chosen for another argument of the same prompt or template.
    pub fn chosen(&self, argument: &str) -> Option<&str> {
        self.chosen.iter().find(|(name, _)| name == argument).map(|(_, value)| value.as_str())
    }
}

/// Everything a plugin registered.
#[doc(hidden)]
pub struct Registry {
    info: PluginInfo,
    tools: Vec<ToolDef>,
    resources: Vec<ResourceDef>,
    templates: Vec<ResourceDef>,
    prompts: Vec<PromptDef>,
    completion: Option<CompletionFn>,
    list_cache: Option<CacheHint>,
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
            list_cache: None,
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
    pub fn website_url(&mut self, url: &str) {
        self.info.website_url = Some(url.to_owned());
    }
    pub fn icons(&mut self, icons: &[Icon]) {
        self.info.icons = describe::icons(icons);
    }
    pub fn list_cache(&mut self, hint: CacheHint) {
        self.list_cache = Some(hint);
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
    pub fn template(&mut self, def: ResourceDef) {
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

    fn cache(&self) -> Option<crate::bindings::paddock::plugin::types::CacheHint> {
        self.list_cache.map(CacheHint::to_wit)
    }

    pub fn list_tools(&self) -> tools::ToolList {
        tools::ToolList { tools: self.tools.iter().map(ToolDef::descriptor).collect(), cache: self.cache() }
    }

    pub fn call_tool(&self, context: RequestContext, name: &str, arguments: &str) -> Result<CallOutcome, WitError> {
        let tool = self.tools.iter().find(|t| t.meta.name == name).ok_or_else(|| WitError::NotFound(format!("tool `{name}`")))?;
        tool.call(arguments, &Request::new(context))
    }

    pub fn list_resources(&self) -> resources::ResourceList {
        resources::ResourceList { resources: self.resources.iter().map(ResourceDef::resource).collect(), cache: self.cache() }
    }

    pub fn list_resource_templates(&self) -> resources::TemplateList {
        resources::TemplateList { templates: self.templates.iter().map(ResourceDef::template_descriptor).collect(), cache: self.cache() }
    }

    pub fn read_resource(&self, context: RequestContext, uri: &str) -> Result<ReadOutcome, WitError> {
        let request = Request::new(context);
        let (def, vars) = match self.resources.iter().find(|r| r.meta.uri == uri) {
            Some(def) => (def, None),
            None => self
                .templates
                .iter()
                .find_map(|t| match_template(t.meta.uri, uri).map(|vars| (t, Some(vars))))
                .ok_or_else(|| WitError::NotFound(format!("resource `{uri}`")))?,
        };
        match def.read(vars, &request) {
            Ok(body) => Ok(ReadOutcome::Complete(read_result(uri, def, body))),
            Err(Error(halt)) => match halt.into_wit() {
                Some(error) => Err(error),
                None => Ok(ReadOutcome::InputRequired(request.input_required())),
            },
        }
    }

    pub fn list_prompts(&self) -> prompts::PromptList {
        prompts::PromptList { prompts: self.prompts.iter().map(PromptDef::descriptor).collect(), cache: self.cache() }
    }

    pub fn get_prompt(&self, context: RequestContext, name: &str, arguments: &[(String, String)]) -> Result<PromptOutcome, WitError> {
        let prompt = self.prompts.iter().find(|p| p.meta.name == name).ok_or_else(|| WitError::NotFound(format!("prompt `{name}`")))?;
        let request = Request::new(context);
        match prompt.get(arguments, &request) {
            Ok(result) => Ok(PromptOutcome::Complete(result)),
            Err(PromptFailure::InvalidArguments(why)) => Err(WitError::InvalidParams(why)),
            Err(PromptFailure::Halted(Error(halt))) => match halt.into_wit() {
                Some(error) => Err(error),
                None => Ok(PromptOutcome::InputRequired(request.input_required())),
            },
        }
    }

    pub fn complete(&self, context: RequestContext, request: &CompletionRequest) -> Result<CompletionResult, WitError> {
        let Some(complete) = self.completion else {
            return Ok(CompletionResult { values: Vec::new(), total: Some(0), has_more: false });
        };
        let (target, is_prompt) = match &request.target {
            CompletionTarget::Prompt(name) => (name.as_str(), true),
            CompletionTarget::ResourceTemplate(template) => (template.as_str(), false),
        };
        let cx = Request::new(context);
        let completing =
            Completing { target, is_prompt, argument: &request.argument_name, value: &request.argument_value, request: &cx, chosen: &request.context };
        let mut values = complete(&completing);
        let total = u32::try_from(values.len()).ok();
        let has_more = values.len() > 100;
        values.truncate(100);
        Ok(CompletionResult { values, total, has_more })
    }
}

/// A read's result: one item with the URI that was read, cached only as the author said.
fn read_result(uri: &str, def: &ResourceDef, body: ResourceBody) -> ReadResult {
    ReadResult {
        contents: vec![ResourceContents { uri: uri.to_owned(), mime_type: def.meta.mime_type.map(str::to_owned), body, meta: None }],
        cache: def.meta.cache.map(CacheHint::to_wit),
        meta: None,
    }
}

#[cfg(test)]
mod tests;
