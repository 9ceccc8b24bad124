//! A plugin written with the SDK alone: `#[data]` for its types, no `serde` or `schemars` named.

use paddock_sdk::{Json, Request, data, export_plugin, tool};

/// What to greet.
#[data]
struct Greet {
    /// Who to greet.
    name: String,
}

/// A greeting, as structured output.
#[data]
#[serde(rename_all = "camelCase")]
struct Greeting {
    /// The words said.
    said_text: String,
}

/// Greets someone by name.
#[tool]
fn greet(args: Greet) -> Json<Greeting> {
    Json(Greeting { said_text: format!("Hello, {}!", args.name) })
}

/// The caller's answer to a form.
#[data]
struct Name {
    name: String,
}

/// Asks for a name first.
#[tool]
fn ask(cx: &Request) -> paddock_sdk::Result<String> {
    match cx.elicit::<Name>("name", "What is your name?")? {
        paddock_sdk::Elicited::Accepted(answer) => Ok(answer.name),
        _ => Ok("nobody".into()),
    }
}

export_plugin! {
    name: "sdk-only",
    version: "0.1.0",
    tools: [greet, ask],
}

fn main() {}
