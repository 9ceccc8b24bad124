//! What tools, resources and prompts return: content blocks, structured JSON, blobs, prompt
//! messages, and the traits that turn an author's return type into the WIT result.

use std::fmt::Display;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::bindings::exports::paddock::plugin::tools::{CallOutcome, CallResult};
use crate::bindings::paddock::plugin::types::{
    ContentBlock, EmbeddedResource, Error as WitError, MediaContent, ResourceBody, ResourceContents, ResourceLink, Role, TextContent,
};
use crate::describe::Annotations;
use crate::request::{Error, Halt, Request};
use crate::schema;

/// One content block of a tool result or prompt message.
#[derive(Debug, Clone)]
pub struct Content(pub(crate) ContentBlock);

impl Content {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Content {
        Content(ContentBlock::Text(TextContent { text: text.into(), annotations: None, meta: None }))
    }

    /// An image; the host sends `data` as base64.
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Content {
        Content(ContentBlock::Image(MediaContent { data: data.into(), mime_type: mime_type.into(), annotations: None, meta: None }))
    }

    /// An audio clip; the host sends `data` as base64.
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Content {
        Content(ContentBlock::Audio(MediaContent { data: data.into(), mime_type: mime_type.into(), annotations: None, meta: None }))
    }

    /// A link to a resource the client may read.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Content {
        Content(ContentBlock::ResourceLink(ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: Vec::new(),
            annotations: None,
            meta: None,
        }))
    }

    /// A text resource embedded in the result.
    pub fn embedded_text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Content {
        embedded(uri.into(), mime_type, ResourceBody::Text(text.into()))
    }

    /// A binary resource embedded in the result (sent as base64).
    pub fn embedded_blob(uri: impl Into<String>, mime_type: Option<&str>, data: impl Into<Vec<u8>>) -> Content {
        embedded(uri.into(), mime_type, ResourceBody::Blob(data.into()))
    }

    /// Adds hints for the client: who the block is for, how much it matters.
    pub fn annotate(mut self, annotations: Annotations) -> Content {
        let hints = Some(annotations.to_wit());
        match &mut self.0 {
            ContentBlock::Text(t) => t.annotations = hints,
            ContentBlock::Image(m) | ContentBlock::Audio(m) => m.annotations = hints,
            ContentBlock::ResourceLink(l) => l.annotations = hints,
            ContentBlock::Resource(r) => r.annotations = hints,
        }
        self
    }

    /// Sets the block's `_meta`. Anything but a JSON object is ignored.
    pub fn meta(mut self, meta: Value) -> Content {
        let meta = object_text(meta);
        match &mut self.0 {
            ContentBlock::Text(t) => t.meta = meta,
            ContentBlock::Image(m) | ContentBlock::Audio(m) => m.meta = meta,
            ContentBlock::ResourceLink(l) => l.meta = meta,
            ContentBlock::Resource(r) => r.meta = meta,
        }
        self
    }

    /// For a resource link: its title, description, MIME type and size, as the client lists them.
    /// Other blocks are returned unchanged.
    pub fn link_details(mut self, title: Option<&str>, description: Option<&str>, mime_type: Option<&str>, size: Option<u64>) -> Content {
        if let ContentBlock::ResourceLink(link) = &mut self.0 {
            link.title = title.map(str::to_owned);
            link.description = description.map(str::to_owned);
            link.mime_type = mime_type.map(str::to_owned);
            link.size = size;
        }
        self
    }
}

/// `meta` as JSON text when it is an object.
pub(crate) fn object_text(meta: Value) -> Option<String> {
    meta.is_object().then(|| meta.to_string())
}

/// A tool result spelled out: content, structured content, `_meta`, and whether it is an error.
/// Return it when [`String`], [`Content`] or [`Json`] do not say enough.
///
/// ```ignore
/// Ok(ToolResult::new(vec![Content::text("3 files")]).structured(json!({"count": 3})).meta(json!({"cost": 2})))
/// ```
#[derive(Debug, Clone)]
pub struct ToolResult {
    content: Vec<Content>,
    structured: Option<Value>,
    meta: Option<Value>,
    is_error: bool,
}

impl ToolResult {
    /// A successful result with these blocks.
    pub fn new(content: Vec<Content>) -> ToolResult {
        ToolResult { content, structured: None, meta: None, is_error: false }
    }

    /// A failed result the model can read.
    pub fn error(message: impl Into<String>) -> ToolResult {
        ToolResult { is_error: true, ..ToolResult::new(vec![Content::text(message)]) }
    }

    /// Structured content (any JSON value; legacy clients only see objects as structured
    /// content, the rest as text). The tool lists no output schema for it: use [`Json`] for that.
    pub fn structured(mut self, value: Value) -> ToolResult {
        self.structured = Some(value);
        self
    }

    /// The result's `_meta`. Anything but a JSON object is ignored.
    pub fn meta(mut self, meta: Value) -> ToolResult {
        self.meta = Some(meta);
        self
    }
}

impl IntoToolResult for ToolResult {
    fn into_call_result(self) -> CallResult {
        let mut result = call_result(self.content, self.structured.map(|v| v.to_string()), self.is_error);
        result.meta = self.meta.and_then(object_text);
        result
    }
}

fn embedded(uri: String, mime_type: Option<&str>, body: ResourceBody) -> Content {
    Content(ContentBlock::Resource(EmbeddedResource {
        resource: ResourceContents { uri, mime_type: mime_type.map(str::to_owned), body, meta: None },
        annotations: None,
        meta: None,
    }))
}

/// Structured output: the tool gets an output schema from `T`, and its result carries `T` as
/// structured content (plus the same JSON as text, for clients that only read text).
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

/// Bytes returned by a resource (sent as base64), with an optional MIME type.
#[derive(Debug, Clone)]
pub struct Blob(pub Vec<u8>);

/// A message of a rendered prompt.
#[derive(Debug, Clone)]
pub struct PromptMessage {
    pub(crate) role: Role,
    pub(crate) content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: impl Into<Content>) -> PromptMessage {
        PromptMessage { role: Role::User, content: content.into() }
    }

    /// A message from the assistant.
    pub fn assistant(content: impl Into<Content>) -> PromptMessage {
        PromptMessage { role: Role::Assistant, content: content.into() }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::text(text)
    }
}

/// A type a `#[tool]` function may return.
pub trait IntoToolResult {
    /// The JSON Schema of the structured content, if the type has any.
    fn output_schema() -> Option<String> {
        None
    }

    /// The WIT result.
    fn into_call_result(self) -> CallResult;

    /// The WIT outcome: the result, or (for an [`Error`] that needs input) the questions, or
    /// (for [`Error::invalid_params`]) a refusal of the request.
    fn into_outcome(self, _request: &Request) -> Result<CallOutcome, WitError>
    where
        Self: Sized,
    {
        Ok(CallOutcome::Complete(self.into_call_result()))
    }
}

pub(crate) fn call_result(content: Vec<Content>, structured: Option<String>, is_error: bool) -> CallResult {
    CallResult { content: content.into_iter().map(|c| c.0).collect(), structured_content: structured, is_error, meta: None }
}

impl IntoToolResult for String {
    fn into_call_result(self) -> CallResult {
        call_result(vec![Content::text(self)], None, false)
    }
}

impl IntoToolResult for &'static str {
    fn into_call_result(self) -> CallResult {
        call_result(vec![Content::text(self)], None, false)
    }
}

impl IntoToolResult for Content {
    fn into_call_result(self) -> CallResult {
        call_result(vec![self], None, false)
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_call_result(self) -> CallResult {
        call_result(self, None, false)
    }
}

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn output_schema() -> Option<String> {
        Some(schema::of::<T>().to_string())
    }

    fn into_call_result(self) -> CallResult {
        match serde_json::to_string(&self.0) {
            Ok(json) => call_result(vec![Content::text(json.clone())], Some(json), false),
            Err(err) => call_result(vec![Content::text(format!("cannot serialize the result: {err}"))], None, true),
        }
    }
}

impl<R: IntoToolResult, E: Display> IntoToolResult for std::result::Result<R, E> {
    fn output_schema() -> Option<String> {
        R::output_schema()
    }

    fn into_call_result(self) -> CallResult {
        match self {
            Ok(value) => value.into_call_result(),
            Err(err) => call_result(vec![Content::text(err.to_string())], None, true),
        }
    }
}

impl<R: IntoToolResult> IntoToolResult for std::result::Result<R, Error> {
    fn output_schema() -> Option<String> {
        R::output_schema()
    }

    fn into_call_result(self) -> CallResult {
        match self {
            Ok(value) => value.into_call_result(),
            Err(Error(Halt::Failed(message) | Halt::InvalidParams(message))) => call_result(vec![Content::text(message)], None, true),
            Err(Error(Halt::NeedsInput)) => call_result(vec![Content::text("this tool needs input the client was not asked for")], None, true),
        }
    }

    fn into_outcome(self, request: &Request) -> Result<CallOutcome, WitError> {
        match self {
            Err(Error(Halt::NeedsInput)) => Ok(CallOutcome::InputRequired(request.input_required())),
            Err(Error(Halt::InvalidParams(message))) => Err(WitError::InvalidParams(message)),
            other => Ok(CallOutcome::Complete(other.into_call_result())),
        }
    }
}

/// A type a `#[resource]` or `#[resource_template]` function may return.
pub trait IntoResourceBody {
    /// The body, or why it could not be read (or the input it needs first).
    fn into_body(self) -> Result<ResourceBody, Error>;
}

impl IntoResourceBody for String {
    fn into_body(self) -> Result<ResourceBody, Error> {
        Ok(ResourceBody::Text(self))
    }
}

impl IntoResourceBody for &'static str {
    fn into_body(self) -> Result<ResourceBody, Error> {
        Ok(ResourceBody::Text(self.to_owned()))
    }
}

impl IntoResourceBody for Blob {
    fn into_body(self) -> Result<ResourceBody, Error> {
        Ok(ResourceBody::Blob(self.0))
    }
}

impl<R: IntoResourceBody, E: Display> IntoResourceBody for std::result::Result<R, E> {
    fn into_body(self) -> Result<ResourceBody, Error> {
        self.map_err(|e| Error::failed(e.to_string())).and_then(IntoResourceBody::into_body)
    }
}

impl<R: IntoResourceBody> IntoResourceBody for std::result::Result<R, Error> {
    fn into_body(self) -> Result<ResourceBody, Error> {
        self.and_then(IntoResourceBody::into_body)
    }
}

/// A type a `#[prompt]` function may return.
pub trait IntoPromptMessages {
    /// The messages, or why the prompt could not be rendered (or the input it needs first).
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error>;
}

impl IntoPromptMessages for String {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        Ok(vec![PromptMessage::user(self)])
    }
}

impl IntoPromptMessages for Vec<PromptMessage> {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        Ok(self)
    }
}

impl<R: IntoPromptMessages, E: Display> IntoPromptMessages for std::result::Result<R, E> {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        self.map_err(|e| Error::failed(e.to_string())).and_then(IntoPromptMessages::into_messages)
    }
}

impl<R: IntoPromptMessages> IntoPromptMessages for std::result::Result<R, Error> {
    fn into_messages(self) -> Result<Vec<PromptMessage>, Error> {
        self.and_then(IntoPromptMessages::into_messages)
    }
}
