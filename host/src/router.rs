//! Maps exposed names to plugins, merges their lists in a stable order, pages them, and routes
//! requests. Exposed tool and prompt names are `<prefix>_<name>` and always match
//! `^[a-zA-Z0-9_-]{1,64}$`; resources keep their URIs. A collision is an error naming both
//! plugins and the fix; the later plugin (by id) is left out, never silently shadowed.
//! Resource templates are compiled once, here, into linear-time matchers (`template`); a
//! template over the caps leaves its plugin out like a collision does.

pub mod definitions;
pub mod template;

use std::collections::HashMap;
use std::sync::Arc;

use template::{MAX_URI_BYTES, TemplateError, UriTemplate};

use crate::escape::shorten;
use crate::input::Outcome;
use crate::plugin::{CallContext, Catalog, Plugin, PluginError};
use crate::protocol::{
    CallToolResult, Completion, CompletionRequest, CompletionTarget, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};

/// Items per page of a list result.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// How a plugin's names are exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prefix {
    /// `<plugin id>_<name>`.
    Default,
    /// `<prefix>_<name>`.
    Custom(String),
    /// `<name>` as the plugin declares it.
    None,
}

impl Prefix {
    /// From a grant's `expose.prefix`: `None` is the default, `Some("")` is no prefix.
    pub fn from_grant(prefix: Option<&str>) -> Prefix {
        match prefix {
            None => Prefix::Default,
            Some("") => Prefix::None,
            Some(p) => Prefix::Custom(p.to_owned()),
        }
    }
}

/// A plugin, how to expose it, and the catalog it is routed by (the load-time one until the
/// plugin announces a change and its lists are read again).
#[derive(Clone)]
pub struct RouterEntry {
    pub plugin: Arc<dyn Plugin>,
    pub prefix: Prefix,
    pub catalog: Arc<Catalog>,
}

impl RouterEntry {
    /// `plugin` exposed with `prefix`, routed by its load-time catalog.
    pub fn new(plugin: Arc<dyn Plugin>, prefix: Prefix) -> RouterEntry {
        let catalog = Arc::new(plugin.catalog().clone());
        RouterEntry { plugin, prefix, catalog }
    }
}

/// Why a plugin was left out of the router.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouterError {
    #[error(
        "plugin `{plugin}`: {kind} `{name}` cannot be exposed as `{exposed}`: names must match ^[a-zA-Z0-9_-]{{1,64}}$ (fix: set a shorter `expose.prefix` in the plugin's grant, or rename it in the plugin)"
    )]
    InvalidName { plugin: String, kind: ItemKind, name: String, exposed: String },
    #[error("plugins `{first}` and `{second}` both expose {kind} `{name}`; `{second}` is not served (fix: set `expose.prefix` in the grant of one of them)")]
    Collision { first: String, second: String, kind: ItemKind, name: String },
    #[error("plugin `{plugin}`: resource template `{template}` {reason}; `{plugin}` is not served")]
    InvalidTemplate { plugin: String, template: String, reason: TemplateError },
}

/// Why the lists a plugin declared again were not taken: the router keeps serving the ones it had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogChangeError {
    #[error("plugin `{0}` is not served")]
    NotServed(String),
    #[error("plugin `{plugin}`: its new lists would leave {left_out} out: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Refused { plugin: String, left_out: String, problems: Vec<RouterError> },
}

/// What a router names: the kinds of item a plugin declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Tool,
    Prompt,
    Resource,
    ResourceTemplate,
}

impl ItemKind {
    /// Whether items of this kind are exposed under a name that must be a valid MCP name (tools
    /// and prompts); resources and templates are exposed by their URIs.
    fn is_named(self) -> bool {
        matches!(self, ItemKind::Tool | ItemKind::Prompt)
    }
}

impl std::fmt::Display for ItemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::Resource => "resource",
            ItemKind::ResourceTemplate => "resource template",
        })
    }
}

/// Why a request could not be routed or served.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    /// No tool, prompt or completion target of that name.
    #[error("unknown {kind} `{}`", shorten(name))]
    UnknownName { kind: ItemKind, name: String },
    /// No resource with that URI, and no template matches it.
    #[error("resource not found: `{}`", shorten(uri))]
    UnknownResource { uri: String },
    /// A cursor this server did not hand out, or one from a list that has changed.
    #[error("invalid cursor: list again from the first page")]
    InvalidCursor,
    /// The plugin failed.
    #[error("plugin `{plugin}`: {error}")]
    Plugin { plugin: String, error: PluginError },
}

/// A page of a list.
#[derive(Debug)]
pub struct Page<'a, T> {
    pub items: &'a [T],
    pub next_cursor: Option<String>,
}

struct Routed {
    plugin: usize,
    own_name: String,
    /// The exposed name, shared with whoever labels by it (metrics).
    exposed: Arc<str>,
}

/// An argument of a tool that 2026-07-28 clients also send as a header, `Mcp-Param-<suffix>`
/// (`"x-mcp-header": "<suffix>"` on its property in the input schema). Found when the router is
/// built, so that checking a request's headers never parses a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The argument's property name.
    pub property: String,
    /// The header's suffix as the schema writes it.
    pub suffix: String,
    /// The whole header name, in lower case.
    pub header: String,
}

impl HeaderParam {
    /// The header parameters a tool's input schema declares, if any.
    pub fn declared_in(schema: &str) -> Option<Arc<[HeaderParam]>> {
        if !schema.contains("x-mcp-header") {
            return None;
        }
        let Ok(serde_json::Value::Object(schema)) = serde_json::from_str::<serde_json::Value>(schema) else { return None };
        let properties = schema.get("properties")?.as_object()?;
        let params: Vec<HeaderParam> = properties
            .iter()
            .filter_map(|(property, definition)| {
                let suffix = definition.get("x-mcp-header")?.as_str()?;
                Some(HeaderParam { property: property.clone(), suffix: suffix.to_owned(), header: format!("mcp-param-{}", suffix.to_ascii_lowercase()) })
            })
            .collect();
        (!params.is_empty()).then(|| params.into())
    }
}

/// Every plugin's tools, resources and prompts under their exposed names.
pub struct Router {
    /// Every entry the router was built from, in id order, served or not: a change of one
    /// plugin's lists plans them all again.
    entries: Vec<RouterEntry>,
    /// The entries served, in id order; routes index into this.
    served: Vec<RouterEntry>,
    tools: Vec<Tool>,
    tool_routes: HashMap<String, Routed>,
    /// The header parameters of the tools that declare some.
    tool_headers: HashMap<String, Arc<[HeaderParam]>>,
    prompts: Vec<Prompt>,
    prompt_routes: HashMap<String, Routed>,
    resources: Vec<Resource>,
    resource_routes: HashMap<String, usize>,
    templates: Vec<ResourceTemplate>,
    template_routes: Vec<(UriTemplate, usize)>,
    instructions: Option<String>,
    page_size: usize,
    /// Which router this is: 1 at start, one more at each swap (what clients and load balancers
    /// see in `_meta`, to tell which one answered).
    generation: u64,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").field("plugins", &self.served.len()).field("tools", &self.tools.len()).finish_non_exhaustive()
    }
}

impl Router {
    /// Builds the name tables. Entries are taken in plugin-id order; a plugin with an
    /// unexposable name or a collision with an earlier plugin is left out and reported.
    pub fn new(mut entries: Vec<RouterEntry>) -> (Router, Vec<RouterError>) {
        entries.sort_by(|a, b| a.plugin.id().cmp(b.plugin.id()));
        let mut router = Router {
            entries: entries.clone(),
            served: Vec::new(),
            tools: Vec::new(),
            tool_routes: HashMap::new(),
            tool_headers: HashMap::new(),
            prompts: Vec::new(),
            prompt_routes: HashMap::new(),
            resources: Vec::new(),
            resource_routes: HashMap::new(),
            templates: Vec::new(),
            template_routes: Vec::new(),
            instructions: None,
            page_size: DEFAULT_PAGE_SIZE,
            generation: 1,
        };
        let mut owners: HashMap<(ItemKind, String), String> = HashMap::new();
        let mut errors = Vec::new();
        for entry in entries {
            match router.plan(&entry, &owners) {
                Ok(plan) => {
                    for key in plan.claims() {
                        owners.insert(key, entry.plugin.id().to_owned());
                    }
                    router.admit(entry, plan);
                }
                Err(mut problems) => errors.append(&mut problems),
            }
        }
        router.tools.sort_by(|a, b| a.name.cmp(&b.name));
        router.tool_headers = router.tools.iter().filter_map(|t| Some((t.name.clone(), HeaderParam::declared_in(t.input_schema.get())?))).collect();
        router.prompts.sort_by(|a, b| a.name.cmp(&b.name));
        router.resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        let mut templates: Vec<(ResourceTemplate, (UriTemplate, usize))> = router.templates.drain(..).zip(router.template_routes.drain(..)).collect();
        templates.sort_by(|a, b| a.0.uri_template.cmp(&b.0.uri_template));
        (router.templates, router.template_routes) = templates.into_iter().unzip();
        router.instructions = merge_instructions(&router.served);
        (router, errors)
    }

    /// The router once `plugin` declares `catalog`: every entry is planned again, in id order.
    /// The change is refused, and this router stays as it is, when the new lists would leave any
    /// served plugin out (the changed one or another): one plugin's lists never take down
    /// another's.
    pub fn with_catalog(&self, plugin: &str, catalog: Catalog) -> Result<Router, CatalogChangeError> {
        let mut entries = self.entries.clone();
        let entry = entries.iter_mut().find(|e| e.plugin.id() == plugin).ok_or_else(|| CatalogChangeError::NotServed(plugin.to_owned()))?;
        if !self.served.iter().any(|e| e.plugin.id() == plugin) {
            return Err(CatalogChangeError::NotServed(plugin.to_owned()));
        }
        entry.catalog = Arc::new(catalog);
        let (mut router, problems) = Router::new(entries);
        router.generation = self.generation + 1;
        let router = router.with_page_size(self.page_size);
        let left_out: Vec<&str> = self.served.iter().map(|e| e.plugin.id()).filter(|id| !router.served.iter().any(|e| e.plugin.id() == *id)).collect();
        if left_out.is_empty() {
            return Ok(router);
        }
        Err(CatalogChangeError::Refused {
            plugin: plugin.to_owned(),
            left_out: left_out.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", "),
            problems,
        })
    }

    /// This router as the one after `previous`: the next generation, with the same page size.
    pub fn succeeding(mut self, previous: &Router) -> Router {
        self.generation = previous.generation + 1;
        self.page_size = previous.page_size;
        self
    }

    /// The entries this router was built from, served or not, in id order.
    pub fn entries(&self) -> &[RouterEntry] {
        &self.entries
    }

    /// Which router this is: 1 at start, one more at each swap.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Sets the page size of list results (at least 1).
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// The plugins served, in id order, with the catalogs they are routed by.
    pub fn served(&self) -> &[RouterEntry] {
        &self.served
    }

    /// The catalog `plugin` is routed by, when it is served.
    pub fn catalog_of(&self, plugin: &str) -> Option<&Arc<Catalog>> {
        self.served.iter().find(|e| e.plugin.id() == plugin).map(|e| &e.catalog)
    }

    /// The server instructions: every plugin's instructions under its id.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// All tools, sorted by exposed name.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// All prompts, sorted by exposed name.
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompts
    }

    /// All direct resources, sorted by URI.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// All resource templates, sorted by URI template.
    pub fn resource_templates(&self) -> &[ResourceTemplate] {
        &self.templates
    }

    /// One page of `items`, starting at `cursor` (absent or empty: the first page).
    pub fn page<'a, T: Named>(&self, items: &'a [T], cursor: Option<&str>) -> Result<Page<'a, T>, RouteError> {
        let fingerprint = fingerprint(items);
        let start = match cursor {
            None | Some("") => 0,
            Some(cursor) => decode_cursor(cursor, fingerprint).filter(|&s| s <= items.len()).ok_or(RouteError::InvalidCursor)?,
        };
        let end = (start + self.page_size).min(items.len());
        let next_cursor = (end < items.len()).then(|| encode_cursor(end, fingerprint));
        Ok(Page { items: &items[start..end], next_cursor })
    }

    /// The tool with this exposed name, and the id of the plugin serving it.
    pub fn tool(&self, name: &str) -> Option<(&Tool, &str)> {
        let route = self.tool_routes.get(name)?;
        let tool = self.tools.binary_search_by(|t| t.name.as_str().cmp(name)).ok().map(|i| &self.tools[i])?;
        Some((tool, self.served[route.plugin].plugin.id()))
    }

    /// The exposed name of tool `name`, when this router serves one: a label that only names
    /// what is served, whatever a client asks for.
    pub fn tool_label(&self, name: &str) -> Option<&Arc<str>> {
        self.tool_routes.get(name).map(|route| &route.exposed)
    }

    /// The arguments of tool `name` that 2026-07-28 clients also send as headers.
    pub fn header_params(&self, name: &str) -> Option<Arc<[HeaderParam]>> {
        self.tool_headers.get(name).cloned()
    }

    /// Calls a tool by its exposed name; the outcome comes with the id of the plugin that served it.
    pub async fn call_tool(&self, name: &str, arguments: &str, cx: &CallContext) -> Result<(&str, Outcome<CallToolResult>), RouteError> {
        let route = self.tool_routes.get(name).ok_or_else(|| RouteError::UnknownName { kind: ItemKind::Tool, name: name.to_owned() })?;
        let plugin = &self.served[route.plugin].plugin;
        let outcome = plugin.call_tool(&route.own_name, arguments, cx).await.map_err(|error| plugin_error(plugin.as_ref(), error))?;
        Ok((plugin.id(), outcome))
    }

    /// Renders a prompt by its exposed name.
    pub async fn get_prompt(&self, name: &str, arguments: &[(String, String)], cx: &CallContext) -> Result<(&str, Outcome<GetPromptResult>), RouteError> {
        let route = self.prompt_routes.get(name).ok_or_else(|| RouteError::UnknownName { kind: ItemKind::Prompt, name: name.to_owned() })?;
        let plugin = &self.served[route.plugin].plugin;
        let outcome = plugin.get_prompt(&route.own_name, arguments, cx).await.map_err(|error| plugin_error(plugin.as_ref(), error))?;
        Ok((plugin.id(), outcome))
    }

    /// The id of the plugin serving the prompt with this exposed name.
    pub fn prompt_owner(&self, name: &str) -> Option<&str> {
        self.prompt_routes.get(name).map(|route| self.served[route.plugin].plugin.id())
    }

    /// The id of the plugin serving the resource template `uri_template`.
    pub fn template_owner(&self, uri_template: &str) -> Option<&str> {
        let position = self.templates.iter().position(|t| t.uri_template == uri_template)?;
        Some(self.served[self.template_routes[position].1].plugin.id())
    }

    /// The id of the plugin a `resources/read` of `uri` goes to.
    pub fn resource_owner(&self, uri: &str) -> Option<&str> {
        if uri.len() > MAX_URI_BYTES {
            return None;
        }
        let index = match self.resource_routes.get(uri) {
            Some(&index) => index,
            None => self.template_routes.iter().find(|(template, _)| template.matches(uri)).map(|(_, index)| *index)?,
        };
        Some(self.served[index].plugin.id())
    }

    /// The prompt with this exposed name.
    pub fn prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompts.binary_search_by(|p| p.name.as_str().cmp(name)).ok().map(|i| &self.prompts[i])
    }

    /// Reads a resource: a listed URI first, else the first template (in order) that matches.
    /// A URI longer than `MAX_URI_BYTES` is unknown without being looked at: no listed URI is
    /// that long, and matching it against every template is work a client should not command.
    pub async fn read_resource(&self, uri: &str, cx: &CallContext) -> Result<(&str, Outcome<ReadResourceResult>), RouteError> {
        if uri.len() > MAX_URI_BYTES {
            return Err(RouteError::UnknownResource { uri: uri.to_owned() });
        }
        let index = match self.resource_routes.get(uri) {
            Some(&index) => index,
            None => self
                .template_routes
                .iter()
                .find(|(template, _)| template.matches(uri))
                .map(|(_, index)| *index)
                .ok_or_else(|| RouteError::UnknownResource { uri: uri.to_owned() })?,
        };
        let plugin = &self.served[index].plugin;
        match plugin.read_resource(uri, cx).await {
            Ok(Outcome::Complete(result)) if result.contents.is_empty() => Err(RouteError::UnknownResource { uri: uri.to_owned() }),
            Ok(outcome) => Ok((plugin.id(), outcome)),
            Err(PluginError::NotFound(_)) => Err(RouteError::UnknownResource { uri: uri.to_owned() }),
            Err(error) => Err(plugin_error(plugin.as_ref(), error)),
        }
    }

    /// Completes an argument of a prompt (by exposed name) or a resource template (by URI template).
    pub async fn complete(
        &self,
        target: &CompletionTarget,
        argument: (&str, &str),
        context: Vec<(String, String)>,
        cx: &CallContext,
    ) -> Result<Completion, RouteError> {
        let (index, own_target) = match target {
            CompletionTarget::Prompt(name) => {
                let route = self.prompt_routes.get(name).ok_or_else(|| RouteError::UnknownName { kind: ItemKind::Prompt, name: name.clone() })?;
                (route.plugin, CompletionTarget::Prompt(route.own_name.clone()))
            }
            CompletionTarget::ResourceTemplate(uri) => {
                let position = self
                    .templates
                    .iter()
                    .position(|t| &t.uri_template == uri)
                    .ok_or_else(|| RouteError::UnknownName { kind: ItemKind::ResourceTemplate, name: uri.clone() })?;
                (self.template_routes[position].1, target.clone())
            }
        };
        let request = CompletionRequest { target: own_target, argument_name: argument.0.to_owned(), argument_value: argument.1.to_owned(), context };
        let plugin = &self.served[index].plugin;
        let mut completion = plugin.complete(&request, cx).await.map_err(|error| plugin_error(plugin.as_ref(), error))?;
        if completion.values.len() > 100 {
            completion.values.truncate(100);
            completion.has_more = true;
        }
        Ok(completion)
    }

    fn plan(&self, entry: &RouterEntry, owners: &HashMap<(ItemKind, String), String>) -> Result<Plan, Vec<RouterError>> {
        let id = entry.plugin.id();
        let catalog = &entry.catalog;
        let prefix = match &entry.prefix {
            Prefix::Default => Some(id.to_owned()),
            Prefix::Custom(p) => Some(p.clone()),
            Prefix::None => None,
        };
        let expose = |name: &str| match &prefix {
            Some(prefix) => format!("{prefix}_{name}"),
            None => name.to_owned(),
        };
        let mut errors = Vec::new();
        let mut plan = Plan::default();
        let check = |kind: ItemKind, name: &str, exposed: String, errors: &mut Vec<RouterError>| {
            if kind.is_named() && !valid_name(&exposed) {
                errors.push(RouterError::InvalidName { plugin: id.to_owned(), kind, name: name.to_owned(), exposed: exposed.clone() });
            } else if let Some(first) = owners.get(&(kind, exposed.clone())) {
                errors.push(RouterError::Collision { first: first.clone(), second: id.to_owned(), kind, name: exposed.clone() });
            }
            exposed
        };
        for tool in &catalog.tools {
            let exposed = check(ItemKind::Tool, &tool.name, expose(&tool.name), &mut errors);
            plan.tools.push((exposed, tool.name.clone()));
        }
        for prompt in &catalog.prompts {
            let exposed = check(ItemKind::Prompt, &prompt.name, expose(&prompt.name), &mut errors);
            plan.prompts.push((exposed, prompt.name.clone()));
        }
        for resource in &catalog.resources {
            plan.resources.push(check(ItemKind::Resource, &resource.uri, resource.uri.clone(), &mut errors));
        }
        for template in &catalog.resource_templates {
            match UriTemplate::compile(&template.uri_template) {
                Ok(compiled) => plan.compiled.push(compiled),
                Err(reason) => errors.push(RouterError::InvalidTemplate { plugin: id.to_owned(), template: shorten(&template.uri_template), reason }),
            }
            plan.templates.push(check(ItemKind::ResourceTemplate, &template.uri_template, template.uri_template.clone(), &mut errors));
        }
        if errors.is_empty() { Ok(plan) } else { Err(errors) }
    }

    fn admit(&mut self, entry: RouterEntry, plan: Plan) {
        let index = self.served.len();
        let catalog = Arc::clone(&entry.catalog);
        for (tool, (exposed, own)) in catalog.tools.iter().zip(plan.tools) {
            self.tools.push(Tool { name: exposed.clone(), ..tool.clone() });
            self.tool_routes.insert(exposed.clone(), Routed { plugin: index, own_name: own, exposed: Arc::from(exposed) });
        }
        for (prompt, (exposed, own)) in catalog.prompts.iter().zip(plan.prompts) {
            self.prompts.push(Prompt { name: exposed.clone(), ..prompt.clone() });
            self.prompt_routes.insert(exposed.clone(), Routed { plugin: index, own_name: own, exposed: Arc::from(exposed) });
        }
        for resource in &catalog.resources {
            self.resources.push(resource.clone());
            self.resource_routes.insert(resource.uri.clone(), index);
        }
        for (template, compiled) in catalog.resource_templates.iter().zip(plan.compiled) {
            self.templates.push(template.clone());
            self.template_routes.push((compiled, index));
        }
        self.served.push(entry);
    }
}

#[derive(Default)]
struct Plan {
    tools: Vec<(String, String)>,
    prompts: Vec<(String, String)>,
    resources: Vec<String>,
    templates: Vec<String>,
    /// The matcher of each template, in catalog order.
    compiled: Vec<UriTemplate>,
}

impl Plan {
    fn claims(&self) -> Vec<(ItemKind, String)> {
        let mut keys = Vec::new();
        keys.extend(self.tools.iter().map(|(e, _)| (ItemKind::Tool, e.clone())));
        keys.extend(self.prompts.iter().map(|(e, _)| (ItemKind::Prompt, e.clone())));
        keys.extend(self.resources.iter().map(|u| (ItemKind::Resource, u.clone())));
        keys.extend(self.templates.iter().map(|u| (ItemKind::ResourceTemplate, u.clone())));
        keys
    }
}

/// Something with a stable name, for cursor fingerprints.
pub trait Named {
    fn key(&self) -> &str;
}

impl<T: Named> Named for &T {
    fn key(&self) -> &str {
        (*self).key()
    }
}

impl Named for Tool {
    fn key(&self) -> &str {
        &self.name
    }
}
impl Named for Prompt {
    fn key(&self) -> &str {
        &self.name
    }
}
impl Named for Resource {
    fn key(&self) -> &str {
        &self.uri
    }
}
impl Named for ResourceTemplate {
    fn key(&self) -> &str {
        &self.uri_template
    }
}

/// Whether `name` is a valid exposed name: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn plugin_error(plugin: &dyn Plugin, error: PluginError) -> RouteError {
    RouteError::Plugin { plugin: plugin.id().to_owned(), error }
}

fn merge_instructions(served: &[RouterEntry]) -> Option<String> {
    let sections: Vec<String> = served
        .iter()
        .filter_map(|e| e.catalog.info.instructions.as_deref().filter(|i| !i.trim().is_empty()).map(|i| format!("## {}\n\n{}", e.plugin.id(), i.trim())))
        .collect();
    (!sections.is_empty()).then(|| sections.join("\n\n"))
}

fn fingerprint<T: Named>(items: &[T]) -> u32 {
    // FNV-1a: stable across processes, so a restarted server rejects or accepts cursors the same way.
    let mut hash: u32 = 0x811c_9dc5;
    for item in items {
        for byte in item.key().bytes().chain(std::iter::once(0)) {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    hash
}

fn encode_cursor(offset: usize, fingerprint: u32) -> String {
    format!("p{offset:x}-{fingerprint:08x}")
}

fn decode_cursor(cursor: &str, expected: u32) -> Option<usize> {
    let (offset, fp) = cursor.strip_prefix('p')?.split_once('-')?;
    (u32::from_str_radix(fp, 16).ok()? == expected).then_some(())?;
    usize::from_str_radix(offset, 16).ok()
}

#[cfg(test)]
mod tests;
