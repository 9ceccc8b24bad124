//! Validation of what a plugin declares at load time (`metadata.info`, `list-*`) into a
//! `plugin::Catalog`. Everything is bounded: counts, name lengths, schema sizes, total bytes.
//! A plugin whose declarations break a bound does not load; the reason names the item.
//!
//! The catalog is served to every client in list pages shared with every other plugin, so
//! nothing in it may fail to serialize later: JSON text (input and output schemas, tool `_meta`)
//! passes the checks of `json::serialized_len` (size, nesting within `MAX_JSON_DEPTH`, syntax,
//! lone surrogates, number range), and resource templates compile into the router's
//! linear-time matcher within its caps. Every other field is a Rust string, number or flag,
//! which always serializes.

use std::collections::HashSet;

use super::convert::{self, Budget, JsonKind};
use crate::escape::shorten;
use crate::plugin::{Catalog, FileRequest, ListCacheHints, PluginError, PluginInfo, RequestedCapabilities};
use crate::protocol::{Prompt, PromptArgument, Resource, ResourceTemplate, TaskSupport, Tool, ToolAnnotations, ToolExecution};
use crate::runtime::bindings::exports::paddock::plugin::{metadata as wm, prompts as wp, resources as wr, tools as wt};
use paddock_uri_template::{MAX_URI_BYTES, UriTemplate};

/// Most tools, resources, templates or prompts one plugin may declare (each).
pub const MAX_ITEMS: usize = 1000;
/// Longest name of a tool, prompt, argument or resource.
pub const MAX_NAME: usize = 128;
/// Largest input or output schema.
pub const MAX_SCHEMA_BYTES: usize = 256 << 10;
/// Largest tool `_meta`: it travels in every `tools/list` page, and real ones are a few keys.
pub const MAX_META_BYTES: usize = 64 << 10;
/// Most resource-template text one plugin may declare, all templates together. Reading a URI
/// that no listed resource has runs it past the templates in order, each costing time in
/// proportion to its length, so this bounds what one plugin's templates cost every such read
/// (about 1,000 short templates, or 64 at the longest `router::template` accepts).
pub const MAX_TEMPLATES_BYTES: usize = 64 << 10;
/// Largest catalog, all text together.
pub const MAX_CATALOG_BYTES: u64 = 8 << 20;
/// Most capability requests of each kind.
const MAX_REQUESTS: usize = 256;

/// The raw declarations of a plugin, as its exports returned them.
pub(crate) struct Declared {
    pub(crate) info: wm::PluginInfo,
    pub(crate) tools: wt::ToolList,
    pub(crate) resources: wr::ResourceList,
    pub(crate) templates: wr::TemplateList,
    pub(crate) prompts: wp::PromptList,
}

/// Why a plugin's declarations were refused: the item and the bound it broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CatalogError(String);

impl From<String> for CatalogError {
    fn from(why: String) -> Self {
        CatalogError(why)
    }
}

/// Validates the declarations; the error says which item broke which bound.
pub(crate) fn build(d: Declared) -> Result<Catalog, CatalogError> {
    let mut budget = Budget::new(MAX_CATALOG_BYTES);
    let b = &mut budget;
    let over = |e: PluginError| match e {
        PluginError::Limit { .. } => format!("the catalog is larger than {} MiB", MAX_CATALOG_BYTES >> 20),
        PluginError::MalformedOutput(why) => why,
        other => other.to_string(),
    };
    for (what, n) in [
        ("tools", d.tools.tools.len()),
        ("resources", d.resources.resources.len()),
        ("resource templates", d.templates.templates.len()),
        ("prompts", d.prompts.prompts.len()),
    ] {
        if n > MAX_ITEMS {
            return Err(format!("declares {n} {what}; at most {MAX_ITEMS} are allowed").into());
        }
    }
    let cache = ListCacheHints {
        tools: d.tools.cache.map(convert::cache_hint),
        resources: d.resources.cache.map(convert::cache_hint),
        resource_templates: d.templates.cache.map(convert::cache_hint),
        prompts: d.prompts.cache.map(convert::cache_hint),
    };
    let info = info(d.info, b).map_err(|e| format!("metadata: {}", over(e)))?;
    let mut seen = HashSet::new();
    let mut tools = Vec::with_capacity(d.tools.tools.len());
    for t in d.tools.tools {
        check_name("tool", &t.name)?;
        if !seen.insert(t.name.clone()) {
            return Err(format!("tool `{}` is declared twice", t.name).into());
        }
        let name = t.name.clone();
        tools.push(tool(t, b).map_err(|e| format!("tool `{name}`: {}", over(e)))?);
    }
    let mut seen = HashSet::new();
    let mut resources = Vec::with_capacity(d.resources.resources.len());
    for r in d.resources.resources {
        check_text("resource uri", &r.uri, MAX_URI_BYTES)?;
        if !seen.insert(r.uri.clone()) {
            return Err(format!("resource `{}` is declared twice", shorten(&r.uri)).into());
        }
        let uri = shorten(&r.uri);
        resources.push(resource(r, b).map_err(|e| format!("resource `{uri}`: {}", over(e)))?);
    }
    let mut seen = HashSet::new();
    let mut templates = Vec::with_capacity(d.templates.templates.len());
    let mut template_bytes = 0;
    for r in d.templates.templates {
        check_text("resource template", &r.uri_template, MAX_URI_BYTES)?;
        let uri = shorten(&r.uri_template);
        if !seen.insert(r.uri_template.clone()) {
            return Err(format!("resource template `{uri}` is declared twice").into());
        }
        UriTemplate::compile(&r.uri_template).map_err(|e| format!("resource template `{uri}` {e}"))?;
        template_bytes += r.uri_template.len();
        if template_bytes > MAX_TEMPLATES_BYTES {
            return Err(format!("resource templates add up to more than the {} KiB allowed", MAX_TEMPLATES_BYTES >> 10).into());
        }
        templates.push(template(r, b).map_err(|e| format!("resource template `{uri}`: {}", over(e)))?);
    }
    let mut seen = HashSet::new();
    let mut prompts = Vec::with_capacity(d.prompts.prompts.len());
    for p in d.prompts.prompts {
        check_name("prompt", &p.name)?;
        if !seen.insert(p.name.clone()) {
            return Err(format!("prompt `{}` is declared twice", p.name).into());
        }
        for a in &p.arguments {
            check_name(&format!("argument of prompt `{}`", p.name), &a.name)?;
        }
        let name = p.name.clone();
        prompts.push(prompt(p, b).map_err(|e| format!("prompt `{name}`: {}", over(e)))?);
    }
    Ok(Catalog { info, tools, resources, resource_templates: templates, prompts, cache })
}

fn check_text(what: &str, s: &str, max: usize) -> Result<(), CatalogError> {
    if s.is_empty() || s.len() > max || s.chars().any(char::is_control) {
        let shown: String = s.chars().take(64).collect();
        return Err(format!("{what} `{shown}` must be 1 to {max} bytes without control characters").into());
    }
    Ok(())
}

fn check_name(what: &str, name: &str) -> Result<(), CatalogError> {
    check_text(&format!("{what} name"), name, MAX_NAME)?;
    if name.chars().any(char::is_whitespace) {
        return Err(format!("{what} name `{name}` must not contain spaces").into());
    }
    Ok(())
}

fn schema(text: String, what: &str, budget: &mut Budget) -> Result<crate::protocol::Json, PluginError> {
    convert::json(text, JsonKind::Object, what, MAX_SCHEMA_BYTES, budget)
}

fn string(s: String, budget: &mut Budget) -> Result<String, PluginError> {
    budget.spend(s.len())?;
    Ok(s)
}

fn opt(s: Option<String>, budget: &mut Budget) -> Result<Option<String>, PluginError> {
    s.map(|s| string(s, budget)).transpose()
}

fn info(i: wm::PluginInfo, b: &mut Budget) -> Result<PluginInfo, PluginError> {
    let r = i.requests;
    if r.files.len() > MAX_REQUESTS || r.network.len() > MAX_REQUESTS || r.env.len() > MAX_REQUESTS {
        return Err(PluginError::MalformedOutput(format!("at most {MAX_REQUESTS} capability requests of each kind are allowed")));
    }
    Ok(PluginInfo {
        name: string(i.name, b)?,
        version: string(i.version, b)?,
        title: opt(i.title, b)?,
        description: opt(i.description, b)?,
        instructions: opt(i.instructions, b)?,
        website_url: opt(i.website_url, b)?,
        icons: convert::icons(i.icons, b)?,
        requests: RequestedCapabilities {
            files: r
                .files
                .into_iter()
                .map(|f| Ok(FileRequest { guest_path: string(f.guest_path, b)?, writable: f.writable, reason: opt(f.reason, b)? }))
                .collect::<Result<_, PluginError>>()?,
            network: r.network.into_iter().map(|n| string(n, b)).collect::<Result<_, _>>()?,
            env: r.env.into_iter().map(|n| string(n, b)).collect::<Result<_, _>>()?,
        },
    })
}

fn tool(t: wt::Tool, b: &mut Budget) -> Result<Tool, PluginError> {
    Ok(Tool {
        name: string(t.name, b)?,
        title: opt(t.title, b)?,
        description: opt(t.description, b)?,
        input_schema: schema(t.input_schema, "input schema", b)?,
        output_schema: t.output_schema.map(|s| schema(s, "output schema", b)).transpose()?,
        annotations: t
            .annotations
            .map(|a| {
                Ok::<_, PluginError>(ToolAnnotations {
                    title: opt(a.title, b)?,
                    read_only_hint: a.read_only_hint,
                    destructive_hint: a.destructive_hint,
                    idempotent_hint: a.idempotent_hint,
                    open_world_hint: a.open_world_hint,
                })
            })
            .transpose()?,
        icons: convert::icons(t.icons, b)?,
        meta: t.meta.map(|m| convert::json(m, JsonKind::Object, "`_meta`", MAX_META_BYTES, b)).transpose()?,
        execution: match t.task_support {
            wt::TaskSupport::Forbidden => None,
            wt::TaskSupport::Optional => Some(ToolExecution { task_support: TaskSupport::Optional }),
            wt::TaskSupport::Required => Some(ToolExecution { task_support: TaskSupport::Required }),
        },
        required_capabilities: t
            .required_client_capabilities
            .map(|c| {
                let c = convert::json(c, JsonKind::Object, "required client capabilities", MAX_META_BYTES, b)?;
                serde_json::from_str(c.get()).map_err(|e| PluginError::MalformedOutput(format!("required client capabilities: {e}")))
            })
            .transpose()?,
    })
}

fn resource(r: wr::Resource, b: &mut Budget) -> Result<Resource, PluginError> {
    Ok(Resource {
        uri: string(r.uri, b)?,
        name: string(r.name, b)?,
        title: opt(r.title, b)?,
        description: opt(r.description, b)?,
        mime_type: opt(r.mime_type, b)?,
        size: r.size,
        icons: convert::icons(r.icons, b)?,
        annotations: convert::annotations(r.annotations, b)?,
        meta: item_meta(r.meta, b)?,
    })
}

fn template(r: wr::ResourceTemplate, b: &mut Budget) -> Result<ResourceTemplate, PluginError> {
    Ok(ResourceTemplate {
        uri_template: string(r.uri_template, b)?,
        name: string(r.name, b)?,
        title: opt(r.title, b)?,
        description: opt(r.description, b)?,
        mime_type: opt(r.mime_type, b)?,
        icons: convert::icons(r.icons, b)?,
        annotations: convert::annotations(r.annotations, b)?,
        meta: item_meta(r.meta, b)?,
    })
}

fn prompt(p: wp::Prompt, b: &mut Budget) -> Result<Prompt, PluginError> {
    Ok(Prompt {
        name: string(p.name, b)?,
        title: opt(p.title, b)?,
        description: opt(p.description, b)?,
        arguments: p
            .arguments
            .into_iter()
            .map(|a| Ok(PromptArgument { name: string(a.name, b)?, title: opt(a.title, b)?, description: opt(a.description, b)?, required: a.required }))
            .collect::<Result<_, PluginError>>()?,
        icons: convert::icons(p.icons, b)?,
        meta: item_meta(p.meta, b)?,
    })
}

fn item_meta(meta: Option<String>, b: &mut Budget) -> Result<Option<crate::protocol::Json>, PluginError> {
    meta.map(|m| convert::json(m, JsonKind::Object, "`_meta`", MAX_META_BYTES, b)).transpose()
}

#[cfg(test)]
mod tests;
