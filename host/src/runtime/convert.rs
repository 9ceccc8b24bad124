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

use super::bindings::exports::paddock::plugin::{completion as wc, prompts as wp, tools as wt};
use super::bindings::paddock::plugin::types as w;
pub(crate) use super::json::JsonKind;
use super::json::serialized_len;
use crate::plugin::PluginError;
use crate::protocol::{
    Annotations, CallToolResult, Completion, ContentBlock, GetPromptResult, Icon, Json, PromptMessage,
    ResourceContents, ResourceLink, Role,
};

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
            return Err(PluginError::Limit { limit: "output" });
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
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0x00..=0x1f => 5,
            _ => 0,
        })
        .sum()
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
pub(crate) fn json(
    text: String,
    kind: JsonKind,
    what: &str,
    max_bytes: usize,
    budget: &mut Budget,
) -> Result<Json, PluginError> {
    budget.spend(text.len())?;
    let sent = serialized_len(&text, kind, max_bytes).map_err(|e| PluginError::MalformedOutput(format!("{what} {e}")))?;
    if sent > text.len() {
        budget.spend(sent - text.len())?;
    } else {
        budget.refund(text.len() - sent);
    }
    RawValue::from_string(text).map_err(|e| PluginError::MalformedOutput(format!("{what} is not valid JSON: {e}")))
}

fn opt_json_field(
    key: &str,
    text: Option<String>,
    kind: JsonKind,
    what: &str,
    budget: &mut Budget,
) -> Result<Option<Json>, PluginError> {
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
pub(crate) fn resource_list(
    list: Vec<w::ResourceContents>,
    budget: &mut Budget,
) -> Result<Vec<ResourceContents>, PluginError> {
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
            ContentBlock::Text { text: budget.field("text", t.text)?, annotations: annotations(t.annotations, budget)? }
        }
        w::ContentBlock::Image(m) => {
            budget.tag("image")?;
            ContentBlock::Image {
                data: budget.base64_field("data", &m.data)?,
                mime_type: budget.field("mimeType", m.mime_type)?,
                annotations: annotations(m.annotations, budget)?,
            }
        }
        w::ContentBlock::Audio(m) => {
            budget.tag("audio")?;
            ContentBlock::Audio {
                data: budget.base64_field("data", &m.data)?,
                mime_type: budget.field("mimeType", m.mime_type)?,
                annotations: annotations(m.annotations, budget)?,
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
            })
        }
        w::ContentBlock::Resource(r) => {
            budget.tag("resource")?;
            budget.key("resource")?;
            ContentBlock::Resource {
                resource: resource_contents(r.resource, budget)?,
                annotations: annotations(r.annotations, budget)?,
            }
        }
    };
    budget.close()?;
    Ok(block)
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
        structured_content: opt_json_field(
            "structuredContent",
            r.structured_content,
            JsonKind::Object,
            "structured content",
            budget,
        )?,
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
    budget.close()?;
    Ok(GetPromptResult { description, messages })
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

    /// The bytes `value` takes in a message, as the session writes it (`to_value`, then compact
    /// text).
    fn wire_len<T: serde::Serialize>(value: &T) -> u64 {
        serde_json::to_value(value).expect("serializes").to_string().len() as u64
    }

    /// Text that costs far more on the wire than its length: controls without a short escape,
    /// quotes, backslashes, newlines, and a character outside ASCII.
    fn costly(repeat: usize) -> String {
        "\u{0}\u{1b}\"\\\n\u{7f}é".repeat(repeat)
    }

    fn full_annotations() -> Option<w::Annotations> {
        Some(w::Annotations {
            audience: vec![w::Role::User, w::Role::Assistant, w::Role::User],
            priority: Some(0.1 + 0.2),
            last_modified: Some(costly(2)),
        })
    }

    fn icon() -> w::Icon {
        w::Icon { src: costly(1), mime_type: Some("image/png".into()), sizes: vec![String::new(), costly(1)], theme: None }
    }

    fn contents(blob: bool) -> w::ResourceContents {
        w::ResourceContents {
            uri: costly(1),
            mime_type: Some(costly(1)),
            body: if blob { w::ResourceBody::Blob(vec![1, 2, 3, 4]) } else { w::ResourceBody::Text(costly(3)) },
            // Numbers re-serialize longer than the guest wrote them.
            meta: Some(r#"{ "n": [1e15, 1E2, -0, 0.5e1], "s": "\u00e9\/" }"#.into()),
        }
    }

    /// One of every kind of block, bare and full.
    fn every_block() -> Vec<w::ContentBlock> {
        let text = |text: String, annotations| w::ContentBlock::Text(w::TextContent { text, annotations });
        let media = |data: Vec<u8>, annotations| w::MediaContent { data, mime_type: costly(1), annotations };
        vec![
            text(String::new(), None),
            text(costly(5), full_annotations()),
            text(String::new(), Some(w::Annotations { audience: vec![], priority: Some(f64::NAN), last_modified: None })),
            w::ContentBlock::Image(media(vec![], None)),
            w::ContentBlock::Audio(media(vec![0, 255, 7, 9, 11], full_annotations())),
            w::ContentBlock::ResourceLink(w::ResourceLink {
                uri: String::new(),
                name: String::new(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                icons: vec![],
                annotations: None,
            }),
            w::ContentBlock::ResourceLink(w::ResourceLink {
                uri: costly(1),
                name: costly(1),
                title: Some(costly(1)),
                description: Some(String::new()),
                mime_type: Some("text/plain".into()),
                size: Some(u64::MAX),
                icons: vec![icon(), w::Icon { src: String::new(), mime_type: None, sizes: vec![], theme: Some("dark".into()) }],
                annotations: full_annotations(),
            }),
            w::ContentBlock::Resource(w::EmbeddedResource { resource: contents(false), annotations: None }),
            w::ContentBlock::Resource(w::EmbeddedResource { resource: contents(true), annotations: full_annotations() }),
        ]
    }

    fn call(content: Vec<w::ContentBlock>) -> wt::CallResult {
        wt::CallResult {
            content,
            structured_content: Some(r#"{"big": 1e15, "text": "\n"}"#.into()),
            is_error: true,
            meta: Some("{}".into()),
        }
    }

    #[test]
    fn output_over_budget_is_a_limit() {
        let mut budget = Budget::new(10);
        let block = w::ContentBlock::Text(w::TextContent { text: "x".repeat(11), annotations: None });
        assert_eq!(content_block(block, &mut budget).expect_err("too big"), PluginError::Limit { limit: "output" });
    }

    #[test]
    fn every_item_is_charged_exactly_what_it_takes_on_the_wire() {
        let mut budget = Budget::new(u64::MAX);
        let result = call_result(call(every_block()), &mut budget).expect("converts");
        assert_eq!(wire_len(&result), budget.spent(), "bytes sent and bytes charged");

        let mut budget = Budget::new(u64::MAX);
        let messages = every_block()
            .into_iter()
            .enumerate()
            .map(|(i, content)| wp::PromptMessage { role: if i % 2 == 0 { w::Role::User } else { w::Role::Assistant }, content })
            .collect();
        let prompt = prompt_result(wp::PromptResult { description: Some(costly(2)), messages }, &mut budget).expect("converts");
        assert_eq!(wire_len(&prompt), budget.spent(), "bytes sent and bytes charged");

        let mut budget = Budget::new(u64::MAX);
        let list = resource_list(vec![contents(false), contents(true)], &mut budget).expect("converts");
        assert_eq!(wire_len(&list), budget.spent(), "bytes sent and bytes charged");

        let mut budget = Budget::new(u64::MAX);
        let values = (0..150).map(|i| if i % 2 == 0 { String::new() } else { costly(1) }).collect();
        let done = completion(wc::CompletionResult { values, total: Some(u32::MAX), has_more: false }, &mut budget).expect("converts");
        assert!(done.has_more);
        assert_eq!(wire_len(&done), budget.spent(), "bytes sent and bytes charged");
    }

    #[test]
    fn empty_blocks_and_escapes_cost_what_they_cost_on_the_wire() {
        let limit = 1 << 20;
        // A million empty text blocks are 26 MB on the wire, whatever their text.
        let empty = || w::ContentBlock::Text(w::TextContent { text: String::new(), annotations: None });
        let many = call(std::iter::repeat_with(empty).take(1_000_000).collect());
        assert_eq!(call_result(many, &mut Budget::new(limit)).expect_err("refused"), PluginError::Limit { limit: "output" });
        // A MiB of control characters is 6 MiB of escapes.
        let controls = w::ContentBlock::Text(w::TextContent { text: "\u{1}".repeat(1 << 20), annotations: None });
        assert_eq!(call_result(call(vec![controls]), &mut Budget::new(limit)).expect_err("refused"), PluginError::Limit { limit: "output" });
        // Audience roles cost their names.
        let roles = w::Annotations { audience: vec![w::Role::Assistant; 200_000], priority: None, last_modified: None };
        let block = w::ContentBlock::Text(w::TextContent { text: String::new(), annotations: Some(roles) });
        assert_eq!(call_result(call(vec![block]), &mut Budget::new(limit)).expect_err("refused"), PluginError::Limit { limit: "output" });
    }

    #[test]
    fn a_result_passes_exactly_when_it_fits_the_limit() {
        let empty = || w::ContentBlock::Text(w::TextContent { text: String::new(), annotations: None });
        for blocks in [0, 1, 2, 10, 1000, 40_000, 41_000] {
            let content: Vec<_> = std::iter::repeat_with(empty).take(blocks).chain(every_block()).collect();
            let sent = wire_len(&call_result(call(content.clone()), &mut Budget::new(u64::MAX)).expect("converts"));
            for limit in [sent - sent / 10, sent - 1, sent, sent + 64, 1 << 20] {
                if let Ok(result) = call_result(call(content.clone()), &mut Budget::new(limit)) {
                    assert!(wire_len(&result) <= limit, "{blocks} blocks: {} bytes passed a limit of {limit}", wire_len(&result));
                }
            }
            let refused = call_result(call(content.clone()), &mut Budget::new(sent - 1));
            assert_eq!(refused.expect_err("one byte short"), PluginError::Limit { limit: "output" });
            call_result(call(content), &mut Budget::new(sent)).expect("a result exactly at the limit passes");
        }
    }

    mod shapes {
        //! Random results, with text drawn from every character (controls included).
        use proptest::prelude::*;

        use super::*;

        fn text() -> impl Strategy<Value = String> {
            prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter)
        }

        fn json_text() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "{}",
                r#"{ "a" : [1e15, 1E2, -0, 0.5e1, 12345678901234567890123] }"#,
                r#"{"s":"\u00e9\/\u001f","t":true,"n":null,"a":{"a":{}}}"#,
                r#"{"k":1,"k":22}"#,
            ])
            .prop_map(str::to_owned)
        }

        fn role() -> impl Strategy<Value = w::Role> {
            prop_oneof![Just(w::Role::User), Just(w::Role::Assistant)]
        }

        fn annotations() -> impl Strategy<Value = Option<w::Annotations>> {
            prop::option::of((prop::collection::vec(role(), 0..3), prop::option::of(any::<f64>()), prop::option::of(text())))
                .prop_map(|a| a.map(|(audience, priority, last_modified)| w::Annotations { audience, priority, last_modified }))
        }

        fn icon() -> impl Strategy<Value = w::Icon> {
            (text(), prop::option::of(text()), prop::collection::vec(text(), 0..3), prop::option::of(text()))
                .prop_map(|(src, mime_type, sizes, theme)| w::Icon { src, mime_type, sizes, theme })
        }

        fn contents() -> impl Strategy<Value = w::ResourceContents> {
            let body = prop_oneof![
                text().prop_map(w::ResourceBody::Text),
                prop::collection::vec(any::<u8>(), 0..8).prop_map(w::ResourceBody::Blob)
            ];
            (text(), prop::option::of(text()), body, prop::option::of(json_text()))
                .prop_map(|(uri, mime_type, body, meta)| w::ResourceContents { uri, mime_type, body, meta })
        }

        fn block() -> impl Strategy<Value = w::ContentBlock> {
            let media = || {
                (prop::collection::vec(any::<u8>(), 0..8), text(), annotations())
                    .prop_map(|(data, mime_type, annotations)| w::MediaContent { data, mime_type, annotations })
            };
            let link = (
                (text(), text(), prop::option::of(text()), prop::option::of(text()), prop::option::of(text())),
                (prop::option::of(any::<u64>()), prop::collection::vec(icon(), 0..3), annotations()),
            )
                .prop_map(|((uri, name, title, description, mime_type), (size, icons, annotations))| w::ResourceLink {
                    uri,
                    name,
                    title,
                    description,
                    mime_type,
                    size,
                    icons,
                    annotations,
                });
            prop_oneof![
                (text(), annotations()).prop_map(|(text, annotations)| w::ContentBlock::Text(w::TextContent { text, annotations })),
                media().prop_map(w::ContentBlock::Image),
                media().prop_map(w::ContentBlock::Audio),
                link.prop_map(w::ContentBlock::ResourceLink),
                (contents(), annotations())
                    .prop_map(|(resource, annotations)| w::ContentBlock::Resource(w::EmbeddedResource { resource, annotations })),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn a_call_result_is_charged_exactly_its_wire_size(
                content in prop::collection::vec(block(), 0..5),
                structured in prop::option::of(json_text()),
                is_error in any::<bool>(),
                meta in prop::option::of(json_text()),
            ) {
                let mut budget = Budget::new(u64::MAX);
                let result = call_result(wt::CallResult { content, structured_content: structured, is_error, meta }, &mut budget)
                    .expect("converts");
                prop_assert_eq!(wire_len(&result), budget.spent());
            }

            #[test]
            fn a_prompt_and_a_completion_are_charged_exactly_their_wire_size(
                description in prop::option::of(text()),
                messages in prop::collection::vec((role(), block()), 0..4),
                values in prop::collection::vec(text(), 0..120),
                total in prop::option::of(any::<u32>()),
                has_more in any::<bool>(),
            ) {
                let messages = messages.into_iter().map(|(role, content)| wp::PromptMessage { role, content }).collect();
                let mut budget = Budget::new(u64::MAX);
                let prompt = prompt_result(wp::PromptResult { description, messages }, &mut budget).expect("converts");
                prop_assert_eq!(wire_len(&prompt), budget.spent());
                let mut budget = Budget::new(u64::MAX);
                let done = completion(wc::CompletionResult { values, total, has_more }, &mut budget).expect("converts");
                prop_assert_eq!(wire_len(&done), budget.spent());
            }
        }
    }

    #[test]
    fn the_lift_fuel_table_names_the_smallest_wire_form_of_each_list_element() {
        let separator = 1;
        let contents = |text: Option<&str>, blob: Option<&str>| ResourceContents {
            uri: String::new(),
            mime_type: None,
            text: text.map(str::to_owned),
            blob: blob.map(str::to_owned),
            meta: None,
        };
        let smallest = [
            wire_len(&ContentBlock::text("")),
            wire_len(&PromptMessage { role: Role::User, content: ContentBlock::text("") }),
            wire_len(&contents(Some(""), None)).min(wire_len(&contents(None, Some("")))),
            wire_len(&Icon { src: String::new(), mime_type: None, sizes: vec![], theme: None }),
            wire_len(&String::new()),
            wire_len(&Role::User),
        ];
        for ((_, table), smallest) in LISTS.iter().zip(smallest) {
            assert_eq!(*table as u64, smallest + separator);
        }
        // Lifting a result never needs more fuel per byte than this; a small number keeps the
        // fuel of the largest output limit within reason.
        assert!((1..=16).contains(&LIFT_FUEL_PER_OUTPUT_BYTE), "{LIFT_FUEL_PER_OUTPUT_BYTE}");
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
