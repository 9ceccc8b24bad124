//! Results shaped to the negotiated protocol revision: a client never receives a field or a
//! content block its revision does not define, and what only a newer revision allows (a
//! non-object structured result, an array output schema) reaches an older client in a form it
//! accepts.
//!
//! Plugins describe everything once, in the newest form; this is the one place that knows which
//! revision added what (the spec's schema for each revision is the reference).

use serde_json::{Map, Value, json};

use super::request::{ListMethod, Method};
use crate::revision::Revision;

/// Shapes the result of `method` for `revision`, in place.
pub(crate) fn shape(result: &mut Value, method: &Method, revision: Revision) {
    if revision == Revision::V2026_07_28 && *method != Method::List(ListMethod::Tools) {
        return;
    }
    let Value::Object(result) = result else { return };
    match method {
        Method::List(ListMethod::Tools) => each(result, "tools", |tool| shape_tool(tool, revision)),
        Method::List(ListMethod::Prompts) => each(result, "prompts", |prompt| {
            described(prompt, revision);
            if revision < Revision::V2025_06_18
                && let Some(Value::Array(arguments)) = prompt.get_mut("arguments")
            {
                for argument in arguments.iter_mut().filter_map(Value::as_object_mut) {
                    argument.remove("title");
                }
            }
        }),
        Method::List(ListMethod::Resources) => each(result, "resources", |resource| {
            described(resource, revision);
            annotations(resource, revision);
        }),
        Method::List(ListMethod::ResourceTemplates) => each(result, "resourceTemplates", |template| {
            described(template, revision);
            annotations(template, revision);
        }),
        Method::CallTool => shape_call_result(result, revision),
        Method::GetPrompt => each(result, "messages", |message| {
            if let Some(content) = message.get_mut("content") {
                *content = shape_block(std::mem::take(content), revision);
            }
        }),
        Method::ReadResource if revision < Revision::V2025_06_18 => {
            result.remove("_meta");
            each(result, "contents", |contents| {
                contents.remove("_meta");
            });
        }
        _ => {}
    }
}

/// Applies `f` to every object in `result[field]`.
fn each(result: &mut Map<String, Value>, field: &str, mut f: impl FnMut(&mut Map<String, Value>)) {
    if let Some(Value::Array(items)) = result.get_mut(field) {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            f(item);
        }
    }
}

/// `title` and `_meta` (2025-06-18) and `icons` (2025-11-25) of a listed item.
fn described(item: &mut Map<String, Value>, revision: Revision) {
    if revision < Revision::V2025_06_18 {
        item.remove("title");
        item.remove("_meta");
    }
    if revision < Revision::V2025_11_25 {
        item.remove("icons");
    }
}

/// `annotations.lastModified` is 2025-06-18.
fn annotations(item: &mut Map<String, Value>, revision: Revision) {
    if revision < Revision::V2025_06_18
        && let Some(Value::Object(annotations)) = item.get_mut("annotations")
    {
        annotations.remove("lastModified");
    }
}

fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

fn shape_tool(tool: &mut Map<String, Value>, revision: Revision) {
    described(tool, revision);
    // Tool annotations are 2025-03-26; `execution` exists in 2025-11-25 only.
    if revision < Revision::V2025_03_26 {
        tool.remove("annotations");
    }
    if revision != Revision::V2025_11_25 {
        tool.remove("execution");
    }
    // Output schemas are 2025-06-18, and only object schemas before 2026-07-28.
    let keep_schema = match tool.get("outputSchema") {
        Some(schema) => revision >= Revision::V2026_07_28 || (revision >= Revision::V2025_06_18 && is_object_schema(schema)),
        None => true,
    };
    if !keep_schema {
        tool.remove("outputSchema");
    }
}

fn shape_call_result(result: &mut Map<String, Value>, revision: Revision) {
    if let Some(Value::Array(content)) = result.get_mut("content") {
        let blocks = std::mem::take(content);
        *content = blocks.into_iter().map(|block| shape_block(block, revision)).collect();
    }
    if revision < Revision::V2025_06_18 {
        result.remove("_meta");
    }
    // Structured content is 2025-06-18, and an object before 2026-07-28. What a client cannot
    // take as structured content still reaches it, as text, unless a text block already says it.
    let keep = match result.get("structuredContent") {
        Some(structured) => revision >= Revision::V2025_06_18 && structured.is_object(),
        None => return,
    };
    if keep {
        return;
    }
    let Some(structured) = result.remove("structuredContent") else { return };
    let text = structured.to_string();
    let content = result.entry("content").or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(blocks) = content
        && !blocks.iter().any(|b| b.get("type") == Some(&json!("text")) && b.get("text").and_then(Value::as_str) == Some(text.as_str()))
    {
        blocks.push(json!({"type": "text", "text": text}));
    }
}

/// A content block as `revision` knows it: `audio` (2025-03-26) and `resource_link`
/// (2025-06-18) become text an older client can show; `_meta` and `lastModified` go before
/// 2025-06-18.
fn shape_block(block: Value, revision: Revision) -> Value {
    let Value::Object(mut block) = block else { return block };
    let kind = block.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    let replacement = match kind.as_str() {
        "audio" if revision < Revision::V2025_03_26 => {
            let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("audio");
            Some(format!("[an audio clip ({mime}) that this client's protocol version cannot carry]"))
        }
        "resource_link" if revision < Revision::V2025_06_18 => {
            let uri = block.get("uri").and_then(Value::as_str).unwrap_or_default();
            let name = block.get("name").and_then(Value::as_str).unwrap_or_default();
            Some(format!("[resource {name}: {uri}]"))
        }
        _ => None,
    };
    if let Some(text) = replacement {
        let mut shaped = Map::new();
        shaped.insert("type".into(), json!("text"));
        shaped.insert("text".into(), json!(text));
        if let Some(annotations) = block.remove("annotations") {
            shaped.insert("annotations".into(), annotations);
        }
        block = shaped;
    }
    if revision < Revision::V2025_06_18 {
        block.remove("_meta");
        if let Some(Value::Object(resource)) = block.get_mut("resource") {
            resource.remove("_meta");
        }
    }
    annotations(&mut block, revision);
    if revision < Revision::V2025_11_25 {
        block.remove("icons");
    }
    if revision < Revision::V2025_06_18 {
        block.remove("title");
    }
    Value::Object(block)
}

#[cfg(test)]
mod tests;
