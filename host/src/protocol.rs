//! MCP data types the host sends to clients: tools, resources, prompts, content and results.
//!
//! These are the wire shapes (camelCase JSON) shared by every protocol revision; what differs
//! between revisions (`resultType`, cache hints, `_meta` server info) is added by the session.
//! Plugins never produce these directly: the runtime converts the WIT values into them after
//! bounding and validating what the guest returned.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A JSON value that has already been validated, kept as text so it is not re-parsed.
pub type Json = Box<RawValue>;

/// An icon for a tool, resource, prompt or implementation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    pub src: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

/// Who a message or content block is for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// Hints about a content block or resource.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// One item of a resource's contents; `blob` is base64.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl ResourceContents {
    /// Text contents of `uri`, without a MIME type.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents { uri: uri.into(), mime_type: None, text: Some(text.into()), blob: None, meta: None }
    }

    /// The same contents with `mime_type`.
    #[must_use]
    pub fn with_mime_type(self, mime_type: impl Into<String>) -> Self {
        ResourceContents { mime_type: Some(mime_type.into()), ..self }
    }
}

/// A content block of any kind MCP defines.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Json>,
    },
    Image {
        /// Base64.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Json>,
    },
    Audio {
        /// Base64.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Json>,
    },
    ResourceLink(ResourceLink),
    Resource {
        resource: ResourceContents,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Json>,
    },
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into(), annotations: None, meta: None }
    }

    /// The block's bulk, text or base64 data, with the name of its field.
    pub fn body_mut(&mut self) -> Option<(&'static str, &mut String)> {
        match self {
            ContentBlock::Text { text, .. } => Some(("text", text)),
            ContentBlock::Image { data, .. } | ContentBlock::Audio { data, .. } => Some(("data", data)),
            ContentBlock::ResourceLink(_) | ContentBlock::Resource { .. } => None,
        }
    }
}

/// A link to a resource, as a content block.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl ResourceLink {
    /// A link to `uri` named `name`, and nothing else.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: Vec::new(),
            annotations: None,
            meta: None,
        }
    }
}

/// Hints about a tool's behaviour.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool as listed to clients. `name` is the exposed name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Json,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
    /// Sent only when the tool may run as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Client capabilities a call needs (never listed; checked before the plugin runs).
    #[serde(skip)]
    pub required_capabilities: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Tool {
    /// A tool with its name and input schema, and nothing else.
    pub fn new(name: impl Into<String>, input_schema: Json) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            icons: Vec::new(),
            meta: None,
            execution: None,
            required_capabilities: None,
        }
    }

    /// The same tool with `description`.
    #[must_use]
    pub fn with_description(self, description: impl Into<String>) -> Self {
        Tool { description: Some(description.into()), ..self }
    }

    /// The same tool, which may (or must) run as a task.
    #[must_use]
    pub fn with_task_support(self, task_support: TaskSupport) -> Self {
        Tool { execution: Some(ToolExecution { task_support }), ..self }
    }

    /// The same tool, whose calls need these client capabilities.
    #[must_use]
    pub fn with_required_capabilities(self, capabilities: serde_json::Map<String, serde_json::Value>) -> Self {
        Tool { required_capabilities: Some(capabilities), ..self }
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Json>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![ContentBlock::text(text)], structured_content: None, is_error: false, meta: None }
    }

    /// A successful result with structured content and no blocks.
    pub fn structured(structured_content: Json) -> Self {
        CallToolResult { content: Vec::new(), structured_content: Some(structured_content), is_error: false, meta: None }
    }

    /// An `isError` result with one text block: how failures reach the model.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult { content: vec![ContentBlock::text(message)], structured_content: None, is_error: true, meta: None }
    }
}

/// A resource with a fixed URI.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl Resource {
    /// A resource with its URI and name, and nothing else.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: Vec::new(),
            annotations: None,
            meta: None,
        }
    }

    /// The same resource with `mime_type`.
    #[must_use]
    pub fn with_mime_type(self, mime_type: impl Into<String>) -> Self {
        Resource { mime_type: Some(mime_type.into()), ..self }
    }
}

/// A family of resources described by a URI template.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    pub uri_template: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl ResourceTemplate {
    /// A template with its URI template and name, and nothing else.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            icons: Vec::new(),
            annotations: None,
            meta: None,
        }
    }
}

/// An argument of a prompt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

impl PromptArgument {
    /// An argument with its name, required or not, and nothing else.
    pub fn new(name: impl Into<String>, required: bool) -> Self {
        PromptArgument { name: name.into(), title: None, description: None, required }
    }
}

/// A prompt as listed to clients. `name` is the exposed name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl Prompt {
    /// A prompt with its name, and nothing else.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt { name: name.into(), title: None, description: None, arguments: Vec::new(), icons: Vec::new(), meta: None }
    }

    /// The same prompt with `arguments`.
    #[must_use]
    pub fn with_arguments(self, arguments: Vec<PromptArgument>) -> Self {
        Prompt { arguments, ..self }
    }
}

/// A message of a rendered prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptMessage {
    pub role: Role,
    pub content: ContentBlock,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, Serialize)]
pub struct GetPromptResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
}

impl GetPromptResult {
    /// A rendered prompt of `messages`, without a description.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult { description: None, messages, meta: None }
    }
}

/// The result of `resources/read`, with the plugin's cache hint (sent on 2026-07-28 only).
#[derive(Debug, Clone, Serialize)]
pub struct ReadResourceResult {
    pub contents: Vec<ResourceContents>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Json>,
    #[serde(skip)]
    pub cache: Option<CacheHint>,
}

/// Who may reuse a cached result.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    Public,
    Private,
}

/// How long a client may reuse a list or read result (2026-07-28 `ttlMs` and `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheHint {
    pub ttl_ms: u64,
    pub scope: CacheScope,
}

/// Whether a tool may run as a task.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

/// A tool's `execution` object (2025-11-25).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    pub task_support: TaskSupport,
}

/// The `completion` object of a `completion/complete` result.
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub values: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_more: bool,
}

/// What `completion/complete` is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionTarget {
    /// A prompt, by the plugin's own name.
    Prompt(String),
    /// A resource template, by its URI template.
    ResourceTemplate(String),
}

/// A `completion/complete` request, in the plugin's own names.
#[derive(Debug, Clone)]
pub struct CompletionRequest {
    pub target: CompletionTarget,
    pub argument_name: String,
    pub argument_value: String,
    pub context: Vec<(String, String)>,
}

/// The name and version the server reports, plus its instructions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}
