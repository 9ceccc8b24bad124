//! Results shaped to the negotiated protocol revision, on the typed values before they are
//! written: a client never receives a field or a content block its revision does not define,
//! and what only a newer revision allows (a non-object structured result, an array output
//! schema) reaches an older client in a form it accepts.
//!
//! Plugins describe everything once, in the newest form; this is the one place that knows which
//! revision added what (the spec's schema for each revision is the reference). A listed item
//! that needs no change is not copied.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::protocol::{Annotations, CallToolResult, ContentBlock, GetPromptResult, Icon, Json, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool};
use crate::revision::Revision;

/// A listed tool as `revision` knows it.
pub(crate) fn tool(tool: &Tool, revision: Revision) -> Cow<'_, Tool> {
    let mut tool = Cow::Borrowed(tool);
    if revision < Revision::V2025_06_18 && (tool.title.is_some() || tool.meta.is_some()) {
        let owned = tool.to_mut();
        owned.title = None;
        owned.meta = None;
    }
    if revision < Revision::V2025_11_25 && !tool.icons.is_empty() {
        tool.to_mut().icons.clear();
    }
    // Tool annotations are 2025-03-26; `execution` exists in 2025-11-25 only.
    if revision < Revision::V2025_03_26 && tool.annotations.is_some() {
        tool.to_mut().annotations = None;
    }
    if revision != Revision::V2025_11_25 && tool.execution.is_some() {
        tool.to_mut().execution = None;
    }
    // Output schemas are 2025-06-18, and only object schemas before 2026-07-28.
    let keep_schema = match &tool.output_schema {
        Some(schema) => revision >= Revision::V2026_07_28 || (revision >= Revision::V2025_06_18 && is_object_schema(schema)),
        None => true,
    };
    if !keep_schema {
        tool.to_mut().output_schema = None;
    }
    tool
}

/// A listed prompt as `revision` knows it: argument titles are 2025-06-18.
pub(crate) fn prompt(prompt: &Prompt, revision: Revision) -> Cow<'_, Prompt> {
    let mut prompt = Cow::Borrowed(prompt);
    if revision < Revision::V2025_06_18 && (prompt.title.is_some() || prompt.meta.is_some() || prompt.arguments.iter().any(|a| a.title.is_some())) {
        let owned = prompt.to_mut();
        owned.title = None;
        owned.meta = None;
        for argument in &mut owned.arguments {
            argument.title = None;
        }
    }
    if revision < Revision::V2025_11_25 && !prompt.icons.is_empty() {
        prompt.to_mut().icons.clear();
    }
    prompt
}

/// A listed resource as `revision` knows it.
pub(crate) fn resource(resource: &Resource, revision: Revision) -> Cow<'_, Resource> {
    let mut resource = Cow::Borrowed(resource);
    if needs_describing(revision, &resource.title, &resource.meta, &resource.icons, resource.annotations.as_ref()) {
        let owned = resource.to_mut();
        described(revision, &mut owned.title, &mut owned.meta, &mut owned.icons, owned.annotations.as_mut());
    }
    resource
}

/// A listed resource template as `revision` knows it.
pub(crate) fn template(template: &ResourceTemplate, revision: Revision) -> Cow<'_, ResourceTemplate> {
    let mut template = Cow::Borrowed(template);
    if needs_describing(revision, &template.title, &template.meta, &template.icons, template.annotations.as_ref()) {
        let owned = template.to_mut();
        described(revision, &mut owned.title, &mut owned.meta, &mut owned.icons, owned.annotations.as_mut());
    }
    template
}

/// Whether `title`, `_meta` (2025-06-18), `icons` (2025-11-25) or `annotations.lastModified`
/// (2025-06-18) of a listed item are more than `revision` knows.
fn needs_describing(revision: Revision, title: &Option<String>, meta: &Option<Json>, icons: &[Icon], annotations: Option<&Annotations>) -> bool {
    (revision < Revision::V2025_06_18 && (title.is_some() || meta.is_some() || annotations.is_some_and(|a| a.last_modified.is_some())))
        || (revision < Revision::V2025_11_25 && !icons.is_empty())
}

fn described(revision: Revision, title: &mut Option<String>, meta: &mut Option<Json>, icons: &mut Vec<Icon>, annotations: Option<&mut Annotations>) {
    if revision < Revision::V2025_06_18 {
        *title = None;
        *meta = None;
    }
    if revision < Revision::V2025_11_25 {
        icons.clear();
    }
    dated(revision, annotations);
}

/// `annotations.lastModified` is 2025-06-18.
fn dated(revision: Revision, annotations: Option<&mut Annotations>) {
    if revision < Revision::V2025_06_18
        && let Some(annotations) = annotations
    {
        annotations.last_modified = None;
    }
}

fn is_object_schema(schema: &RawValue) -> bool {
    serde_json::from_str::<Map<String, Value>>(schema.get()).is_ok_and(|schema| schema.get("type").and_then(Value::as_str) == Some("object"))
}

/// A tool's result as `revision` knows it.
pub(crate) fn call_result(mut result: CallToolResult, revision: Revision) -> CallToolResult {
    if revision >= Revision::V2026_07_28 {
        return result;
    }
    result.content = std::mem::take(&mut result.content).into_iter().map(|block| self::block(block, revision)).collect();
    if revision < Revision::V2025_06_18 {
        result.meta = None;
    }
    // Structured content is 2025-06-18, and an object before 2026-07-28. What a client cannot
    // take as structured content still reaches it, as text, unless a text block already says it.
    let keep = match &result.structured_content {
        Some(structured) => revision >= Revision::V2025_06_18 && structured.get().trim_start().starts_with('{'),
        None => return result,
    };
    if keep {
        return result;
    }
    let Some(structured) = result.structured_content.take() else { return result };
    let text = serde_json::from_str::<Value>(structured.get()).map_or_else(|_| structured.get().to_owned(), |value| value.to_string());
    if !result.content.iter().any(|block| matches!(block, ContentBlock::Text { text: said, .. } if *said == text)) {
        result.content.push(ContentBlock::text(text));
    }
    result
}

/// A prompt's messages as `revision` knows them.
pub(crate) fn prompt_result(mut result: GetPromptResult, revision: Revision) -> GetPromptResult {
    if revision >= Revision::V2026_07_28 {
        return result;
    }
    for message in &mut result.messages {
        let content = std::mem::replace(&mut message.content, ContentBlock::text(String::new()));
        message.content = block(content, revision);
    }
    result
}

/// A read's contents as `revision` knows them: `_meta` is 2025-06-18.
pub(crate) fn read_result(mut result: ReadResourceResult, revision: Revision) -> ReadResourceResult {
    if revision < Revision::V2025_06_18 {
        result.meta = None;
        for contents in &mut result.contents {
            contents.meta = None;
        }
    }
    result
}

/// A content block as `revision` knows it: `audio` (2025-03-26) and `resource_link`
/// (2025-06-18) become text an older client can show; `_meta` and `lastModified` go before
/// 2025-06-18, a link's `title` too, and its `icons` before 2025-11-25.
fn block(block: ContentBlock, revision: Revision) -> ContentBlock {
    let mut block = match block {
        ContentBlock::Audio { mime_type, annotations, .. } if revision < Revision::V2025_03_26 => {
            ContentBlock::Text { text: format!("[an audio clip ({mime_type}) that this client's protocol version cannot carry]"), annotations, meta: None }
        }
        ContentBlock::ResourceLink(link) if revision < Revision::V2025_06_18 => {
            ContentBlock::Text { text: format!("[resource {}: {}]", link.name, link.uri), annotations: link.annotations, meta: None }
        }
        other => other,
    };
    match &mut block {
        ContentBlock::Text { annotations, meta, .. } | ContentBlock::Image { annotations, meta, .. } | ContentBlock::Audio { annotations, meta, .. } => {
            if revision < Revision::V2025_06_18 {
                *meta = None;
            }
            dated(revision, annotations.as_mut());
        }
        ContentBlock::Resource { resource, annotations, meta } => {
            if revision < Revision::V2025_06_18 {
                *meta = None;
                resource.meta = None;
            }
            dated(revision, annotations.as_mut());
        }
        ContentBlock::ResourceLink(link) => {
            if revision < Revision::V2025_06_18 {
                link.meta = None;
                link.title = None;
            }
            if revision < Revision::V2025_11_25 {
                link.icons.clear();
            }
            dated(revision, link.annotations.as_mut());
        }
    }
    block
}

#[cfg(test)]
mod tests;
