//! Conversion of guest values (WIT) into `protocol` values, bounded and validated.
//!
//! Guest output is untrusted: every item is charged against the call's output budget, before it
//! is copied or encoded, at what it costs on the wire as the host sends it (compact JSON):
//! strings with their quotes and escapes (a control character costs six bytes), keys, brackets
//! and commas of every object and list, type tags, roles and numbers as written. Empty items
//! therefore cost what they really cost, and the budget spent is the size of the serialized
//! result (the JSON-RPC envelope around it aside): a result passes exactly when it fits. JSON text (structured content,
//! `_meta`, schemas) is size-checked, validated by `json::serialized_len` (depth, syntax, lone
//! surrogates, number range, objects where MCP wants objects), charged at the larger of its
//! length and its length as the host re-serializes it, and kept as the guest wrote it; a result
//! that would not serialize is refused as malformed output naming the field.
//!
//! The values arrive already lifted out of the guest's memory, under the store's hostcall fuel:
//! lifting a list costs wasmtime its length times the host size of an element. The fuel a
//! legal result can need is at most `LIFT_FUEL_PER_OUTPUT_BYTE` per byte of output (see
//! `runtime::plugin`, which sizes the fuel from the plugin's output limit).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::value::RawValue;

pub(crate) use super::json::JsonKind;
use super::json::serialized_len;
use crate::plugin::{Limit, PluginError};
use crate::protocol::{
    Annotations, CacheHint, CacheScope, CallToolResult, Completion, ContentBlock, GetPromptResult, Icon, Json, PromptMessage, ReadResourceResult,
    ResourceContents, ResourceLink, Role,
};
use crate::runtime::bindings::exports::paddock::plugin::{completion as wc, prompts as wp, resources as wr, tools as wt};
use crate::runtime::bindings::paddock::plugin::types as w;

/// Most values a completion may return (MCP's limit).
const MAX_COMPLETION_VALUES: usize = 100;

/// For every list a result can hold: the host size of one lifted element, and the fewest bytes
/// that element takes on the wire with its separator (checked against serde_json in the tests).
const LISTS: [(usize, usize); 6] = [
    // {"type":"text","text":""},
    (size_of::<w::ContentBlock>(), 26),
    // {"role":"user","content":{"type":"text","text":""}},
    (size_of::<wp::PromptMessage>(), 52),
    // {"uri":"","text":""},
    (size_of::<w::ResourceContents>(), 21),
    // {"src":""},
    (size_of::<w::Icon>(), 11),
    // "", (icon sizes, completion values)
    (size_of::<String>(), 3),
    // "user",
    (size_of::<w::Role>(), 7),
];

/// Hostcall fuel lifting a result can take per byte the result takes on the wire: a string
/// costs its bytes (and at least as many on the wire), a list its length times its element's
/// host size (and at least its length times the element's smallest wire form).
pub(crate) const LIFT_FUEL_PER_OUTPUT_BYTE: usize = {
    let mut most = 1;
    let mut i = 0;
    while i < LISTS.len() {
        let (host, wire) = LISTS[i];
        let ratio = host.div_ceil(wire);
        if ratio > most {
            most = ratio;
        }
        i += 1;
    }
    most
};

/// The bytes one result may still use on the wire, charged as the JSON is written: brackets,
/// a comma before every field or element but the first of its object or list, keys with their
/// quotes and colon, strings with their quotes and escapes, numbers as written.
#[derive(Debug)]
pub(crate) struct Budget {
    left: u64,
    spent: u64,
    /// Whether the object or list being written has no field or element yet.
    first: bool,
}

impl Budget {
    pub(crate) fn new(bytes: u64) -> Self {
        Budget { left: bytes, spent: 0, first: true }
    }

    /// Spends `n` bytes, or fails with the output limit.
    pub(crate) fn spend(&mut self, n: usize) -> Result<(), PluginError> {
        let n = n as u64;
        if n > self.left {
            self.left = 0;
            return Err(PluginError::Limit { limit: Limit::Output });
        }
        self.left -= n;
        self.spent += n;
        Ok(())
    }

    /// Gives back bytes spent ahead of knowing the exact cost.
    fn refund(&mut self, n: usize) {
        let n = (n as u64).min(self.spent);
        self.spent -= n;
        self.left += n;
    }

    /// The bytes spent so far.
    #[cfg(test)]
    pub(crate) fn spent(&self) -> u64 {
        self.spent
    }

    /// Starts an object or a list (`{` or `[`).
    fn open(&mut self) -> Result<(), PluginError> {
        self.first = true;
        self.spend(1)
    }

    /// Ends it (`}` or `]`); the object or list it was a value of goes on after its first field.
    fn close(&mut self) -> Result<(), PluginError> {
        self.first = false;
        self.spend(1)
    }

    /// The comma before every field or element but the first.
    fn separator(&mut self) -> Result<(), PluginError> {
        let first = std::mem::replace(&mut self.first, false);
        if first { Ok(()) } else { self.spend(1) }
    }

    /// One more element of a list.
    fn element(&mut self) -> Result<(), PluginError> {
        self.separator()
    }

    /// A field's key: `"key":`.
    fn key(&mut self, key: &str) -> Result<(), PluginError> {
        self.separator()?;
        self.spend(key.len() + 3)
    }

    /// A string value: its quotes and text, then whatever escaping adds.
    fn string(&mut self, s: String) -> Result<String, PluginError> {
        self.spend(s.len() + 2)?;
        self.spend(escapes(&s))?;
        Ok(s)
    }

    fn field(&mut self, key: &str, value: String) -> Result<String, PluginError> {
        self.key(key)?;
        self.string(value)
    }

    fn opt_field(&mut self, key: &str, value: Option<String>) -> Result<Option<String>, PluginError> {
        value.map(|v| self.field(key, v)).transpose()
    }

    /// A field whose value is `shown` as written (a number, `true`, a tag).
    fn literal_field(&mut self, key: &str, shown: usize) -> Result<(), PluginError> {
        self.key(key)?;
        self.spend(shown)
    }

    /// The `type` tag of a content block.
    fn tag(&mut self, tag: &str) -> Result<(), PluginError> {
        self.literal_field("type", tag.len() + 2)
    }

    fn base64_field(&mut self, key: &str, data: &[u8]) -> Result<String, PluginError> {
        self.literal_field(key, data.len().div_ceil(3) * 4 + 2)?;
        Ok(BASE64.encode(data))
    }
}

/// The bytes JSON escaping adds to `s`, as serde_json escapes: `"` `\` and the controls with a
/// short form (`\n`, `\t`, ...) take one more, every other control character five more
/// (`\u001b`).
fn escapes(s: &str) -> usize {
    // Counted in byte lanes, 255 bytes at a time so a lane cannot overflow: the loop vectorizes
    // (about 0.1 ms per MiB, against about 1 ms byte by byte), and it runs over every string of
    // every result.
    let mut total = 0;
    for chunk in s.as_bytes().chunks(usize::from(u8::MAX)) {
        let (mut escaped, mut long) = (0u8, 0u8);
        for &b in chunk {
            let control = b < 0x20;
            let short = matches!(b, b'\n' | b'\r' | b'\t' | 0x08 | 0x0c);
            escaped += u8::from(control | (b == b'"') | (b == b'\\'));
            long += u8::from(control & !short);
        }
        total += usize::from(escaped) + 4 * usize::from(long);
    }
    total
}

/// The digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// `true`.
const TRUE: usize = 4;

/// JSON in a result has no size cap of its own: the call's output budget, spent before the text
/// is validated, bounds it.
const RESULT_JSON_BYTES: usize = usize::MAX;

/// Validates JSON text from the guest: within budget and `max_bytes`, then the checks of
/// `json::serialized_len`. It is charged its length as the host will write it (whitespace
/// gone, a number perhaps longer), after its length as written has been spent to bound the work.
/// The error names the field (`what`), for example "structured content nests deeper than 64 levels".
pub(crate) fn json(text: String, kind: JsonKind, what: &str, max_bytes: usize, budget: &mut Budget) -> Result<Json, PluginError> {
    budget.spend(text.len())?;
    let sent = serialized_len(&text, kind, max_bytes).map_err(|e| PluginError::MalformedOutput(format!("{what} {e}")))?;
    if sent > text.len() {
        budget.spend(sent - text.len())?;
    } else {
        budget.refund(text.len() - sent);
    }
    RawValue::from_string(text).map_err(|e| PluginError::MalformedOutput(format!("{what} is not valid JSON: {e}")))
}

fn opt_json_field(key: &str, text: Option<String>, kind: JsonKind, what: &str, budget: &mut Budget) -> Result<Option<Json>, PluginError> {
    text.map(|t| {
        budget.key(key)?;
        json(t, kind, what, RESULT_JSON_BYTES, budget)
    })
    .transpose()
}

pub(crate) fn role(role: w::Role) -> Role {
    match role {
        w::Role::User => Role::User,
        w::Role::Assistant => Role::Assistant,
    }
}

/// The bytes of a role as a value: `"user"` or `"assistant"`.
fn role_len(role: w::Role) -> usize {
    match role {
        w::Role::User => "user".len() + 2,
        w::Role::Assistant => "assistant".len() + 2,
    }
}

/// The `icons` field (absent when empty).
pub(crate) fn icons(icons: Vec<w::Icon>, budget: &mut Budget) -> Result<Vec<Icon>, PluginError> {
    if icons.is_empty() {
        return Ok(Vec::new());
    }
    budget.key("icons")?;
    budget.open()?;
    let icons = icons
        .into_iter()
        .map(|i| {
            budget.element()?;
            budget.open()?;
            let src = budget.field("src", i.src)?;
            let mime_type = budget.opt_field("mimeType", i.mime_type)?;
            let sizes = if i.sizes.is_empty() {
                Vec::new()
            } else {
                budget.key("sizes")?;
                budget.open()?;
                let sizes = i
                    .sizes
                    .into_iter()
                    .map(|s| {
                        budget.element()?;
                        budget.string(s)
                    })
                    .collect::<Result<_, _>>()?;
                budget.close()?;
                sizes
            };
            let theme = budget.opt_field("theme", i.theme)?;
            budget.close()?;
            Ok(Icon { src, mime_type, sizes, theme })
        })
        .collect::<Result<_, PluginError>>()?;
    budget.close()?;
    Ok(icons)
}

/// The `annotations` field (absent when `None`).
pub(crate) fn annotations(a: Option<w::Annotations>, budget: &mut Budget) -> Result<Option<Annotations>, PluginError> {
    let Some(a) = a else { return Ok(None) };
    budget.key("annotations")?;
    budget.open()?;
    if !a.audience.is_empty() {
        budget.key("audience")?;
        budget.open()?;
        for role in &a.audience {
            budget.element()?;
            budget.spend(role_len(*role))?;
        }
        budget.close()?;
    }
    let priority = a.priority.filter(|p| p.is_finite()).map(|p| p.clamp(0.0, 1.0));
    if let Some(p) = priority {
        let shown = serde_json::to_string(&p).map_err(|e| PluginError::MalformedOutput(format!("priority: {e}")))?;
        budget.literal_field("priority", shown.len())?;
    }
    let last_modified = budget.opt_field("lastModified", a.last_modified)?;
    budget.close()?;
    Ok(Some(Annotations { audience: a.audience.into_iter().map(role).collect(), priority, last_modified }))
}

/// One resource's contents, as an object.
pub(crate) fn resource_contents(c: w::ResourceContents, budget: &mut Budget) -> Result<ResourceContents, PluginError> {
    budget.open()?;
    let (text, blob) = match c.body {
        w::ResourceBody::Text(t) => (Some(budget.field("text", t)?), None),
        w::ResourceBody::Blob(b) => (None, Some(budget.base64_field("blob", &b)?)),
    };
    let contents = ResourceContents {
        uri: budget.field("uri", c.uri)?,
        mime_type: budget.opt_field("mimeType", c.mime_type)?,
        text,
        blob,
        meta: opt_json_field("_meta", c.meta, JsonKind::Object, "resource `_meta`", budget)?,
    };
    budget.close()?;
    Ok(contents)
}

/// The contents a `resources/read` returns, as a list.
pub(crate) fn resource_list(list: Vec<w::ResourceContents>, budget: &mut Budget) -> Result<Vec<ResourceContents>, PluginError> {
    budget.open()?;
    let list = list
        .into_iter()
        .map(|c| {
            budget.element()?;
            resource_contents(c, budget)
        })
        .collect::<Result<_, PluginError>>()?;
    budget.close()?;
    Ok(list)
}

pub(crate) fn content_block(block: w::ContentBlock, budget: &mut Budget) -> Result<ContentBlock, PluginError> {
    budget.open()?;
    let block = match block {
        w::ContentBlock::Text(t) => {
            budget.tag("text")?;
            ContentBlock::Text { text: budget.field("text", t.text)?, annotations: annotations(t.annotations, budget)?, meta: block_meta(t.meta, budget)? }
        }
        w::ContentBlock::Image(m) => {
            budget.tag("image")?;
            ContentBlock::Image {
                data: budget.base64_field("data", &m.data)?,
                mime_type: budget.field("mimeType", m.mime_type)?,
                annotations: annotations(m.annotations, budget)?,
                meta: block_meta(m.meta, budget)?,
            }
        }
        w::ContentBlock::Audio(m) => {
            budget.tag("audio")?;
            ContentBlock::Audio {
                data: budget.base64_field("data", &m.data)?,
                mime_type: budget.field("mimeType", m.mime_type)?,
                annotations: annotations(m.annotations, budget)?,
                meta: block_meta(m.meta, budget)?,
            }
        }
        w::ContentBlock::ResourceLink(l) => {
            budget.tag("resource_link")?;
            if let Some(size) = l.size {
                budget.literal_field("size", digits(size))?;
            }
            ContentBlock::ResourceLink(ResourceLink {
                uri: budget.field("uri", l.uri)?,
                name: budget.field("name", l.name)?,
                title: budget.opt_field("title", l.title)?,
                description: budget.opt_field("description", l.description)?,
                mime_type: budget.opt_field("mimeType", l.mime_type)?,
                size: l.size,
                icons: icons(l.icons, budget)?,
                annotations: annotations(l.annotations, budget)?,
                meta: block_meta(l.meta, budget)?,
            })
        }
        w::ContentBlock::Resource(r) => {
            budget.tag("resource")?;
            budget.key("resource")?;
            ContentBlock::Resource {
                resource: resource_contents(r.resource, budget)?,
                annotations: annotations(r.annotations, budget)?,
                meta: block_meta(r.meta, budget)?,
            }
        }
    };
    budget.close()?;
    Ok(block)
}

fn block_meta(meta: Option<String>, budget: &mut Budget) -> Result<Option<Json>, PluginError> {
    opt_json_field("_meta", meta, JsonKind::Object, "content `_meta`", budget)
}

pub(crate) fn cache_hint(h: w::CacheHint) -> CacheHint {
    CacheHint {
        ttl_ms: h.ttl_ms,
        scope: match h.scope {
            w::CacheScope::Public => CacheScope::Public,
            w::CacheScope::Private => CacheScope::Private,
        },
    }
}

/// A resource read's result.
pub(crate) fn read_result(r: wr::ReadResult, budget: &mut Budget) -> Result<ReadResourceResult, PluginError> {
    budget.open()?;
    budget.key("contents")?;
    let contents = resource_list(r.contents, budget)?;
    let meta = opt_json_field("_meta", r.meta, JsonKind::Object, "result `_meta`", budget)?;
    budget.close()?;
    Ok(ReadResourceResult { contents, meta, cache: r.cache.map(cache_hint) })
}

pub(crate) fn call_result(r: wt::CallResult, budget: &mut Budget) -> Result<CallToolResult, PluginError> {
    budget.open()?;
    if r.is_error {
        budget.literal_field("isError", TRUE)?;
    }
    budget.key("content")?;
    budget.open()?;
    let content = r
        .content
        .into_iter()
        .map(|b| {
            budget.element()?;
            content_block(b, budget)
        })
        .collect::<Result<_, PluginError>>()?;
    budget.close()?;
    let result = CallToolResult {
        content,
        // Any JSON value (2026-07-28); the session turns a non-object into text for older clients.
        structured_content: opt_json_field("structuredContent", r.structured_content, JsonKind::Any, "structured content", budget)?,
        is_error: r.is_error,
        meta: opt_json_field("_meta", r.meta, JsonKind::Object, "result `_meta`", budget)?,
    };
    budget.close()?;
    Ok(result)
}

pub(crate) fn prompt_result(r: wp::PromptResult, budget: &mut Budget) -> Result<GetPromptResult, PluginError> {
    budget.open()?;
    let description = budget.opt_field("description", r.description)?;
    budget.key("messages")?;
    budget.open()?;
    let messages = r
        .messages
        .into_iter()
        .map(|m| {
            budget.element()?;
            budget.open()?;
            budget.literal_field("role", role_len(m.role))?;
            budget.key("content")?;
            let message = PromptMessage { role: role(m.role), content: content_block(m.content, budget)? };
            budget.close()?;
            Ok(message)
        })
        .collect::<Result<_, PluginError>>()?;
    budget.close()?;
    let meta = opt_json_field("_meta", r.meta, JsonKind::Object, "result `_meta`", budget)?;
    budget.close()?;
    Ok(GetPromptResult { description, messages, meta })
}

pub(crate) fn completion(r: wc::CompletionResult, budget: &mut Budget) -> Result<Completion, PluginError> {
    let has_more = r.has_more || r.values.len() > MAX_COMPLETION_VALUES;
    budget.open()?;
    if let Some(total) = r.total {
        budget.literal_field("total", digits(total.into()))?;
    }
    if has_more {
        budget.literal_field("hasMore", TRUE)?;
    }
    budget.key("values")?;
    budget.open()?;
    let values = r
        .values
        .into_iter()
        .take(MAX_COMPLETION_VALUES)
        .map(|v| {
            budget.element()?;
            budget.string(v)
        })
        .collect::<Result<_, _>>()?;
    budget.close()?;
    budget.close()?;
    Ok(Completion { values, total: r.total, has_more })
}

/// Maps the WIT `error` of a plugin request to the seam's error.
pub(crate) fn error(e: w::Error) -> PluginError {
    let bounded = |s: String| crate::runtime::text::truncate(s, 4096);
    match e {
        w::Error::NotFound(s) => PluginError::NotFound(bounded(s)),
        w::Error::InvalidParams(s) => PluginError::InvalidParams(bounded(s)),
        w::Error::Failed(s) => PluginError::Failed(bounded(s)),
    }
}

#[cfg(test)]
mod tests;
