//! Every kind of registration, as a plugin author writes it.

use paddock_sdk::{
    Annotations, Audience, CacheHint, Completing, Content, Elicited, Icon, Json, PromptMessage, Request, Requests, Sampling, Theme,
    ToolResult, UriVars, export_plugin, prompt, resource, resource_template, sampled_text, tool,
};
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

const GEAR: Icon = Icon::new("https://example.com/gear.svg").sizes(&["any"]).theme(Theme::Light);

/// Echoes.
#[tool(read_only, idempotent, icon = GEAR, icon = "data:image/png;base64,iVBORw0KGgo=", meta = r#"{"example.com/kind": "echo"}"#)]
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
    vec![Content::text("a pixel").annotate(Annotations::for_audience(Audience::User)), Content::image(vec![0u8; 4], "image/png")]
}

/// Spells its result out.
#[tool]
fn spelled() -> ToolResult {
    ToolResult::new(vec![Content::text("done").meta(serde_json::json!({"k": 1}))]).meta(serde_json::json!({"cost": 1}))
}

#[derive(Deserialize, JsonSchema)]
struct UserName {
    name: String,
}

/// Greets the user, asking for the name.
#[tool]
fn greet(cx: &Request) -> paddock_sdk::Result<String> {
    let Elicited::Accepted(user) = cx.elicit::<UserName>("user_name", "What is your name?")? else {
        return Ok("Maybe next time.".into());
    };
    Ok(format!("Hello, {}!", user.name))
}

/// Summarizes the text with the client's model.
#[tool(requires = "sampling")]
fn summarize(args: Args, cx: &Request) -> paddock_sdk::Result<String> {
    let reply = cx.sample("summary", Sampling::prompt(format!("Summarize: {}", args.text), 100))?;
    Ok(sampled_text(&reply))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    confirm: bool,
}

/// Deletes after a confirmation, asked while the call runs as a task.
#[tool(task = "required", destructive)]
fn purge(cx: &Request) -> paddock_sdk::Result<String> {
    cx.ask_within_task();
    match cx.elicit::<Confirm>("confirm", "Purge everything?")? {
        Elicited::Accepted(Confirm { confirm: true }) => Ok("purged".into()),
        _ => Ok("kept".into()),
    }
}

/// Takes a while; may run as a task.
#[tool(task = "optional")]
fn crunch(args: Args) -> String {
    args.text.repeat(2)
}

#[resource(uri = "demo://whoami")]
fn whoami(cx: &Request) -> String {
    cx.client_name().unwrap_or("unknown").to_owned()
}

#[resource_template(uri_template = "demo://roots/{n}")]
fn root(vars: UriVars, cx: &Request) -> paddock_sdk::Result<String> {
    let roots = cx.roots("roots")?;
    Ok(format!("{} of {}", vars.get("n").unwrap_or("?"), roots.len()))
}

#[prompt]
fn welcome(cx: &Request) -> paddock_sdk::Result<Vec<PromptMessage>> {
    let Elicited::Accepted(user) = cx.elicit::<UserName>("who", "Whom to welcome?")? else {
        return Err(paddock_sdk::Error::failed("nobody to welcome"));
    };
    Ok(vec![PromptMessage::user(format!("Welcome {}", user.name))])
}

#[resource(uri = "demo://about", mime_type = "text/plain", size = 5, audience = "user, assistant", priority = 0.9, cache_ttl_ms = 60_000, cache_scope = "public", icon = GEAR)]
fn about() -> &'static str {
    "about"
}

#[resource_template(uri_template = "demo://items/{id}", audience = "assistant", cache_ttl_ms = 1000, meta = "{}")]
fn item(vars: UriVars) -> Result<String, String> {
    vars.get("id").map(str::to_owned).ok_or_else(|| "no id".to_owned())
}

#[prompt(title = "Review", icon = GEAR, meta = r#"{"p": true}"#)]
fn review(args: Args) -> Vec<PromptMessage> {
    vec![PromptMessage::user(args.text)]
}

fn complete(c: &Completing) -> Vec<String> {
    match c.chosen("text") {
        Some(text) => vec![format!("{text}{}", c.value)],
        None => Vec::new(),
    }
}

export_plugin! {
    name: "demo",
    version: "1.0.0",
    description: "All registrations",
    website_url: "https://example.com/demo",
    icons: [GEAR, Icon::new("https://example.com/demo.png")],
    requests: Requests::new().env("HOME"),
    list_cache: CacheHint::public(300_000),
    tools: [echo, length, picture, spelled, greet, summarize, purge, crunch],
    resources: [about, whoami],
    resource_templates: [item, root],
    prompts: [review, welcome],
    completion: complete,
}

fn main() {}
