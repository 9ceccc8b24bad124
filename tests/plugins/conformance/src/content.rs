//! Fixtures that answer at once: content of every kind, errors, progress, logging, list-change
//! triggers, the JSON Schema 2020-12 tool, resources, the template and the plain prompts.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use paddock_sdk::host::{self, ListKind};
use paddock_sdk::{Blob, Content, PromptMessage, Request, UriVars, prompt, resource, resource_template, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV clip.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn png() -> Vec<u8> {
    STANDARD.decode(PNG).expect("a valid constant")
}

/// Returns a simple text response.
#[tool]
pub(crate) fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns an image.
#[tool]
pub(crate) fn test_image_content() -> Content {
    Content::image(png(), "image/png")
}

/// Returns an audio clip.
#[tool]
pub(crate) fn test_audio_content() -> Content {
    Content::audio(STANDARD.decode(WAV).expect("a valid constant"), "audio/wav")
}

/// Returns an embedded resource.
#[tool]
pub(crate) fn test_embedded_resource() -> Content {
    Content::embedded_text("test://embedded-resource", Some("text/plain"), "This is an embedded resource content.")
}

/// Returns text, an image and an embedded resource.
#[tool]
pub(crate) fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image(png(), "image/png"),
        Content::embedded_text("test://mixed-content-resource", Some("application/json"), r#"{"test":"data","value":123}"#),
    ]
}

/// Always fails, as a result the model reads.
#[tool]
pub(crate) fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".into())
}

/// Reports progress three times, then answers.
#[tool]
pub(crate) fn test_tool_with_progress(cx: &Request) -> String {
    for step in [0.0, 50.0, 100.0] {
        host::progress(step, Some(100.0), Some(&format!("Completed step {step} of 100")));
        std::thread::sleep(Duration::from_millis(50));
    }
    match cx.meta().get("progressToken") {
        Some(Value::String(token)) => token.clone(),
        Some(token) => token.to_string(),
        None => "no progress token".into(),
    }
}

/// Logs three messages, then answers.
#[tool]
pub(crate) fn test_tool_with_logging() -> &'static str {
    for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
        host::info(message);
        std::thread::sleep(Duration::from_millis(50));
    }
    "Tool with logging executed successfully"
}

/// Answers at once (the stream needs no reconnection).
#[tool]
pub(crate) fn test_reconnection() -> &'static str {
    "Reconnection test completed successfully."
}

/// Reports progress once while it works, without asking the client anything on the stream.
#[tool]
pub(crate) fn test_streaming_elicitation() -> &'static str {
    host::progress(1.0, Some(2.0), Some("halfway"));
    "Streaming complete"
}

/// Logs one message: clients that did not ask for logs must not get it.
#[tool]
pub(crate) fn test_logging_tool() -> &'static str {
    host::info("Logging evaluated");
    "Logging evaluated"
}

/// Announces that the tool list changed.
#[tool]
pub(crate) fn test_trigger_tool_change() -> &'static str {
    host::notify_list_changed(ListKind::Tools);
    "Mutation triggered"
}

/// Announces that the prompt list changed.
#[tool]
pub(crate) fn test_trigger_prompt_change() -> &'static str {
    host::notify_list_changed(ListKind::Prompts);
    "Mutation triggered"
}

/// A region that the client also sends as the `Mcp-Param-Region` header (SEP-2243).
#[derive(Deserialize)]
pub(crate) struct Region {
    region: String,
}

impl JsonSchema for Region {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Region".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {"region": {"type": "string", "description": "Where to run.", "x-mcp-header": "Region"}},
            "required": ["region"]
        })
    }
}

/// Echoes a parameter that travels in a header too.
#[tool]
pub(crate) fn test_header_param(args: Region) -> String {
    format!("Region: {}", args.region)
}

/// Announces that `test://watched-resource` changed, for the clients subscribed to it.
#[tool]
pub(crate) fn test_trigger_resource_update() -> &'static str {
    host::notify_resource_updated("test://watched-resource");
    "Update announced"
}

/// Contact details, in JSON Schema 2020-12 keywords no derive writes.
#[derive(Deserialize)]
#[serde(transparent)]
pub(crate) struct Contact(Value);

impl JsonSchema for Contact {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Contact".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })
    }
}

/// Tool with JSON Schema 2020-12 features
#[tool]
pub(crate) fn json_schema_2020_12_tool(contact: Contact) -> String {
    format!("Received: {}", contact.0)
}

/// A static text resource for testing.
#[resource(uri = "test://static-text", name = "static-text", title = "Static Text Resource", mime_type = "text/plain", cache_ttl_ms = 300_000)]
pub(crate) fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// A static binary resource (an image) for testing.
#[resource(uri = "test://static-binary", name = "static-binary", title = "Static Binary Resource", mime_type = "image/png", cache_ttl_ms = 300_000)]
pub(crate) fn static_binary() -> Blob {
    Blob(png())
}

/// A resource clients may subscribe to.
#[resource(uri = "test://watched-resource", name = "watched-resource", title = "Watched Resource", mime_type = "text/plain")]
pub(crate) fn watched_resource() -> &'static str {
    "Watched resource content"
}

/// A static text resource for stateless clients.
#[resource(uri = "test://stateless-static-text", name = "stateless-static-text", mime_type = "text/plain", cache_ttl_ms = 300_000)]
pub(crate) fn stateless_static_text() -> &'static str {
    "This is the content of the stateless static text resource."
}

/// Data for any id.
#[resource_template(uri_template = "test://template/{id}/data", name = "template", title = "Template Resource", mime_type = "application/json")]
pub(crate) fn template_data(vars: UriVars) -> String {
    let id = vars.get("id").unwrap_or_default();
    serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()
}

/// A simple prompt without arguments.
#[prompt]
pub(crate) fn test_simple_prompt() -> String {
    "This is a simple prompt for testing.".into()
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct TwoArguments {
    /// The first argument.
    arg1: String,
    /// The second argument.
    arg2: String,
}

/// A prompt with two required arguments.
#[prompt]
pub(crate) fn test_prompt_with_arguments(args: TwoArguments) -> String {
    format!("Prompt with arguments: arg1='{}', arg2='{}'", args.arg1, args.arg2)
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ResourceArgument {
    /// The URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

/// A prompt that embeds a resource.
#[prompt]
pub(crate) fn test_prompt_with_embedded_resource(args: ResourceArgument) -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::embedded_text(args.resource_uri, Some("text/plain"), "Embedded resource content for testing.")),
        PromptMessage::user("Please process the embedded resource above."),
    ]
}

/// A prompt with an image.
#[prompt]
pub(crate) fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![PromptMessage::user(Content::image(png(), "image/png")), PromptMessage::user("Please analyze the image above.")]
}
