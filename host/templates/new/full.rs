//! {{name}}: a Paddock plugin. Every function below is served as MCP by the attribute on it.
//!
//! Build: `cargo build --release --target wasm32-wasip2`, then serve the folder holding the
//! `.wasm`; or run `paddock dev .` to rebuild, check and serve on every save.

use paddock_sdk::{Elicited, Json, PromptMessage, Request, UriVars, data, export_plugin, prompt, resource_template, tool};

/// What to greet.
#[data]
struct Greet {
    /// Who to greet.
    name: String,
    /// How many times (1 by default).
    times: Option<u32>,
}

/// A greeting, as structured output.
#[data]
struct Greeting {
    /// The greeting itself.
    text: String,
    /// How many words it has.
    words: usize,
}

/// Greets someone by name.
#[tool(read_only, idempotent)]
fn greet(args: Greet) -> Json<Greeting> {
    let text = vec![format!("Hello, {}!", args.name); args.times.unwrap_or(1).clamp(1, 10) as usize].join(" ");
    let words = text.split_whitespace().count();
    Json(Greeting { text, words })
}

/// The user's answer to the form `introduce` asks.
#[data]
struct Introduction {
    /// Your name.
    name: String,
}

/// Asks the user for their name (a form their client shows), then greets them.
#[tool]
fn introduce(cx: &Request) -> paddock_sdk::Result<String> {
    Ok(match cx.elicit::<Introduction>("introduction", "What is your name?")? {
        Elicited::Accepted(answer) => format!("Nice to meet you, {}.", answer.name),
        Elicited::Declined | Elicited::Cancelled => "Maybe next time.".to_owned(),
    })
}

/// A greeting for anyone, by URI: `{{scheme}}://greetings/{who}`.
#[resource_template(uri_template = "{{scheme}}://greetings/{who}", name = "greeting", mime_type = "text/plain")]
fn greeting(vars: UriVars) -> Result<String, String> {
    let who = vars.get("who").ok_or("no name in the URI")?;
    Ok(format!("Hello, {who}!"))
}

/// What the prompt is about.
#[data]
struct Topic {
    /// The topic to write a welcome note about.
    topic: String,
}

/// Asks the model for a short welcome note on a topic.
#[prompt]
fn welcome(args: Topic) -> Vec<PromptMessage> {
    vec![PromptMessage::user(format!("Write a two-sentence welcome note about {}.", args.topic))]
}

export_plugin! {
    name: "{{name}}",
    version: env!("CARGO_PKG_VERSION"),
    description: "A plugin made with `paddock new`",
    tools: [greet, introduce],
    resource_templates: [greeting],
    prompts: [welcome],
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_sdk::testing::TestRequest;

    #[test]
    fn greet_says_hello_as_often_as_asked() {
        let Json(greeting) = greet(Greet { name: "Ada".into(), times: Some(2) });
        assert_eq!(greeting.text, "Hello, Ada! Hello, Ada!");
        assert_eq!(greeting.words, 4);
    }

    #[test]
    fn introduce_asks_first_then_uses_the_answer() {
        let first = TestRequest::new().capabilities(paddock_sdk::serde_json::json!({"elicitation": {}})).build();
        assert!(introduce(&first).is_err(), "the first call waits for the answer");
        assert_eq!(first.questions(), ["introduction"]);
        let answered = TestRequest::new().accepted("introduction", paddock_sdk::serde_json::json!({"name": "Ada"})).build();
        assert_eq!(introduce(&answered).ok().as_deref(), Some("Nice to meet you, Ada."));
    }
}
