//! Conversion of guest values (WIT) into `protocol` values, bounded and validated.
//!
//! Guest output is untrusted: every string and byte list is counted against the call's output
//! budget before it is copied or encoded, and JSON text (structured content, `_meta`, schemas) is
//! size-checked and then validated by `json::validate` (depth, syntax, lone surrogates, number
//! range, objects where MCP wants objects) and kept as the guest wrote it, so anything passed on
//! serializes: a result that would not is refused as malformed output naming the field.
//! The values arrive already lifted out of the guest's memory, whose size the memory limit
//! bounds; this module bounds what the host keeps and sends on.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::value::RawValue;

use super::bindings::exports::paddock::plugin::{completion as wc, prompts as wp, tools as wt};
use super::bindings::paddock::plugin::types as w;
pub(crate) use super::json::JsonKind;
use super::json::validate;
use crate::plugin::PluginError;
use crate::protocol::{
    Annotations, CallToolResult, Completion, ContentBlock, GetPromptResult, Icon, Json, PromptMessage,
    ResourceContents, ResourceLink, Role,
};

/// Most values a completion may return (MCP's limit).
const MAX_COMPLETION_VALUES: usize = 100;

/// The bytes one result may still use.
#[derive(Debug)]
pub(crate) struct Budget {
    left: u64,
}

impl Budget {
    pub(crate) fn new(bytes: u64) -> Self {
        Budget { left: bytes }
    }

    /// Spends `n` bytes, or fails with the output limit.
    pub(crate) fn spend(&mut self, n: usize) -> Result<(), PluginError> {
        let n = n as u64;
        if n > self.left {
            self.left = 0;
            return Err(PluginError::Limit { limit: "output" });
        }
        self.left -= n;
        Ok(())
    }

    fn string(&mut self, s: String) -> Result<String, PluginError> {
        self.spend(s.len())?;
        Ok(s)
    }

    fn opt(&mut self, s: Option<String>) -> Result<Option<String>, PluginError> {
        s.map(|s| self.string(s)).transpose()
    }

    fn base64(&mut self, data: &[u8]) -> Result<String, PluginError> {
        self.spend(data.len().div_ceil(3) * 4)?;
        Ok(BASE64.encode(data))
    }
}

/// JSON in a result has no size cap of its own: the call's output budget, spent before the text
/// is validated, bounds it.
const RESULT_JSON_BYTES: usize = usize::MAX;

/// Validates JSON text from the guest: within budget and `max_bytes`, then `json::validate`.
/// The error names the field (`what`), for example "structured content nests deeper than 64 levels".
pub(crate) fn json(
    text: String,
    kind: JsonKind,
    what: &str,
    max_bytes: usize,
    budget: &mut Budget,
) -> Result<Json, PluginError> {
    budget.spend(text.len())?;
    validate(&text, kind, max_bytes).map_err(|e| PluginError::MalformedOutput(format!("{what} {e}")))?;
    RawValue::from_string(text).map_err(|e| PluginError::MalformedOutput(format!("{what} is not valid JSON: {e}")))
}

fn opt_json(
    text: Option<String>,
    kind: JsonKind,
    what: &str,
    budget: &mut Budget,
) -> Result<Option<Json>, PluginError> {
    text.map(|t| json(t, kind, what, RESULT_JSON_BYTES, budget)).transpose()
}

pub(crate) fn role(role: w::Role) -> Role {
    match role {
        w::Role::User => Role::User,
        w::Role::Assistant => Role::Assistant,
    }
}

pub(crate) fn icons(icons: Vec<w::Icon>, budget: &mut Budget) -> Result<Vec<Icon>, PluginError> {
    icons
        .into_iter()
        .map(|i| {
            Ok(Icon {
                src: budget.string(i.src)?,
                mime_type: budget.opt(i.mime_type)?,
                sizes: i.sizes.into_iter().map(|s| budget.string(s)).collect::<Result<_, _>>()?,
                theme: budget.opt(i.theme)?,
            })
        })
        .collect()
}

pub(crate) fn annotations(a: Option<w::Annotations>, budget: &mut Budget) -> Result<Option<Annotations>, PluginError> {
    let Some(a) = a else { return Ok(None) };
    budget.spend(a.audience.len())?;
    Ok(Some(Annotations {
        audience: a.audience.into_iter().map(role).collect(),
        priority: a.priority.filter(|p| p.is_finite()).map(|p| p.clamp(0.0, 1.0)),
        last_modified: budget.opt(a.last_modified)?,
    }))
}

pub(crate) fn resource_contents(c: w::ResourceContents, budget: &mut Budget) -> Result<ResourceContents, PluginError> {
    let (text, blob) = match c.body {
        w::ResourceBody::Text(t) => (Some(budget.string(t)?), None),
        w::ResourceBody::Blob(b) => (None, Some(budget.base64(&b)?)),
    };
    Ok(ResourceContents {
        uri: budget.string(c.uri)?,
        mime_type: budget.opt(c.mime_type)?,
        text,
        blob,
        meta: opt_json(c.meta, JsonKind::Object, "resource `_meta`", budget)?,
    })
}

pub(crate) fn content_block(block: w::ContentBlock, budget: &mut Budget) -> Result<ContentBlock, PluginError> {
    Ok(match block {
        w::ContentBlock::Text(t) => {
            ContentBlock::Text { text: budget.string(t.text)?, annotations: annotations(t.annotations, budget)? }
        }
        w::ContentBlock::Image(m) => ContentBlock::Image {
            data: budget.base64(&m.data)?,
            mime_type: budget.string(m.mime_type)?,
            annotations: annotations(m.annotations, budget)?,
        },
        w::ContentBlock::Audio(m) => ContentBlock::Audio {
            data: budget.base64(&m.data)?,
            mime_type: budget.string(m.mime_type)?,
            annotations: annotations(m.annotations, budget)?,
        },
        w::ContentBlock::ResourceLink(l) => ContentBlock::ResourceLink(ResourceLink {
            uri: budget.string(l.uri)?,
            name: budget.string(l.name)?,
            title: budget.opt(l.title)?,
            description: budget.opt(l.description)?,
            mime_type: budget.opt(l.mime_type)?,
            size: l.size,
            icons: icons(l.icons, budget)?,
            annotations: annotations(l.annotations, budget)?,
        }),
        w::ContentBlock::Resource(r) => ContentBlock::Resource {
            resource: resource_contents(r.resource, budget)?,
            annotations: annotations(r.annotations, budget)?,
        },
    })
}

pub(crate) fn call_result(r: wt::CallResult, budget: &mut Budget) -> Result<CallToolResult, PluginError> {
    Ok(CallToolResult {
        content: r.content.into_iter().map(|b| content_block(b, budget)).collect::<Result<_, _>>()?,
        structured_content: opt_json(r.structured_content, JsonKind::Object, "structured content", budget)?,
        is_error: r.is_error,
        meta: opt_json(r.meta, JsonKind::Object, "result `_meta`", budget)?,
    })
}

pub(crate) fn prompt_result(r: wp::PromptResult, budget: &mut Budget) -> Result<GetPromptResult, PluginError> {
    Ok(GetPromptResult {
        description: budget.opt(r.description)?,
        messages: r
            .messages
            .into_iter()
            .map(|m| Ok(PromptMessage { role: role(m.role), content: content_block(m.content, budget)? }))
            .collect::<Result<_, PluginError>>()?,
    })
}

pub(crate) fn completion(r: wc::CompletionResult, budget: &mut Budget) -> Result<Completion, PluginError> {
    let has_more = r.has_more || r.values.len() > MAX_COMPLETION_VALUES;
    let values =
        r.values.into_iter().take(MAX_COMPLETION_VALUES).map(|v| budget.string(v)).collect::<Result<_, _>>()?;
    Ok(Completion { values, total: r.total, has_more })
}

/// Maps the WIT `error` of a plugin request to the seam's error.
pub(crate) fn error(e: w::Error) -> PluginError {
    let bounded = |s: String| super::host::truncate(s, 4096);
    match e {
        w::Error::NotFound(s) => PluginError::NotFound(bounded(s)),
        w::Error::InvalidParams(s) => PluginError::InvalidParams(bounded(s)),
        w::Error::Failed(s) => PluginError::Failed(bounded(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_over_budget_is_a_limit() {
        let mut budget = Budget::new(10);
        let block = w::ContentBlock::Text(w::TextContent { text: "x".repeat(11), annotations: None });
        assert_eq!(content_block(block, &mut budget).expect_err("too big"), PluginError::Limit { limit: "output" });
    }

    #[test]
    fn media_is_base64_and_json_is_checked() {
        let mut budget = Budget::new(1 << 20);
        let block = w::ContentBlock::Image(w::MediaContent {
            data: vec![0, 1, 2, 255],
            mime_type: "image/png".into(),
            annotations: None,
        });
        let ContentBlock::Image { data, .. } = content_block(block, &mut budget).expect("ok") else {
            panic!("not an image")
        };
        assert_eq!(data, "AAEC/w==");
        let max = usize::MAX;
        assert!(json("{\"a\":1}".into(), JsonKind::Object, "x", max, &mut budget).is_ok());
        assert!(matches!(json("[1]".into(), JsonKind::Object, "x", max, &mut budget), Err(PluginError::MalformedOutput(_))));
        assert!(matches!(
            json("{nope".into(), JsonKind::Object, "x", max, &mut budget),
            Err(PluginError::MalformedOutput(_))
        ));
        assert!(json("[1]".into(), JsonKind::Any, "x", max, &mut budget).is_ok());
    }

    fn result(structured: Option<String>, meta: Option<String>) -> wt::CallResult {
        wt::CallResult { content: vec![], structured_content: structured, is_error: false, meta }
    }

    #[test]
    fn an_unserializable_call_result_is_malformed_output_naming_the_field() {
        let deep = format!("{}{}", "{\"a\":".repeat(2000), "}".repeat(2000));
        for (r, expected) in [
            (result(Some(deep.clone()), None), "structured content nests deeper than 64 levels"),
            (result(Some(r#"{"s":"\ud800"}"#.into()), None), "structured content has a lone surrogate escape `\\ud800`"),
            (result(None, Some(deep)), "result `_meta` nests deeper than 64 levels"),
            (result(None, Some(r#"{"n":1e400}"#.into())), "result `_meta` is not valid JSON: number out of range"),
        ] {
            match call_result(r, &mut Budget::new(1 << 20)) {
                Err(PluginError::MalformedOutput(message)) => assert!(message.starts_with(expected), "{message}"),
                other => panic!("expected malformed output, got {other:?}"),
            }
        }
        let fine = call_result(result(Some(r#"{"s":"\ud83d\ude00"}"#.into()), None), &mut Budget::new(1 << 20)).expect("valid");
        let line = serde_json::to_value(&fine).expect("serializes").to_string();
        assert!(line.contains("😀"), "{line}");
    }

    #[test]
    fn an_unserializable_resource_meta_is_malformed_output() {
        let contents = w::ResourceContents {
            uri: "x://y".into(),
            mime_type: None,
            body: w::ResourceBody::Text("t".into()),
            meta: Some(r#"{"s":"\udfff"}"#.into()),
        };
        let Err(PluginError::MalformedOutput(message)) = resource_contents(contents, &mut Budget::new(1 << 20)) else {
            panic!("a lone surrogate in `_meta` was accepted")
        };
        assert!(message.starts_with("resource `_meta` has a lone surrogate escape `\\udfff`"), "{message}");
    }
}
