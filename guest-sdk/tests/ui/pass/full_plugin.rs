//! Every kind of registration, as a plugin author writes it.

use paddock_sdk::{Content, Json, PromptMessage, Requests, UriVars, export_plugin, prompt, resource, resource_template, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The text.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Out {
    len: usize,
}

/// Echoes.
#[tool(read_only, idempotent)]
fn echo(args: Args) -> String {
    args.text
}

/// Measures.
#[tool(name = "measure", title = "Measure")]
fn length(args: Args) -> Result<Json<Out>, String> {
    Ok(Json(Out { len: args.text.len() }))
}

#[tool]
fn picture() -> Vec<Content> {
    vec![Content::text("a pixel"), Content::image(vec![0u8; 4], "image/png")]
}

#[resource(uri = "demo://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "about"
}

#[resource_template(uri_template = "demo://items/{id}")]
fn item(vars: UriVars) -> Result<String, String> {
    vars.get("id").map(str::to_owned).ok_or_else(|| "no id".to_owned())
}

#[prompt]
fn review(args: Args) -> Vec<PromptMessage> {
    vec![PromptMessage::user(args.text)]
}

export_plugin! {
    name: "demo",
    version: "1.0.0",
    description: "All registrations",
    requests: Requests::new().env("HOME"),
    tools: [echo, length, picture],
    resources: [about],
    resource_templates: [item],
    prompts: [review],
}

fn main() {}
