//! Fixtures that ask the client for input: elicitation (forms, defaults, every enum form),
//! sampling, roots, several requests in one round, several rounds, plugin state, and asking only
//! for what the client declared. One body serves both eras: on 2026-07-28 each question is an
//! `input_required` round trip, on older revisions the host asks on the session.

use paddock_sdk::{Elicited, Error, PromptMessage, Request, Sampling, prompt, sampled_text, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Prompt {
    /// What to ask the model.
    prompt: String,
}

/// Asks the client's model.
#[tool]
pub(crate) fn test_sampling(args: Prompt, cx: &Request) -> paddock_sdk::Result<String> {
    let reply = cx.sample("sample", Sampling::prompt(args.prompt, 100))?;
    Ok(format!("LLM response: {}", sampled_text(&reply)))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Message {
    /// What to tell the user.
    message: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub(crate) struct UserInfo {
    /// Your user name.
    username: String,
    /// Your email address.
    email: String,
}

/// Asks the user for their details.
#[tool]
pub(crate) fn test_elicitation(args: Message, cx: &Request) -> paddock_sdk::Result<String> {
    Ok(match cx.elicit::<UserInfo>("user_info", &args.message)? {
        Elicited::Accepted(info) => format!("User response: action=accept, content={}", json!(info)),
        Elicited::Declined => "User response: action=decline".into(),
        Elicited::Cancelled => "User response: action=cancel".into(),
    })
}

fn outcome(answer: Elicited<Value>) -> String {
    match answer {
        Elicited::Accepted(content) => format!("Elicitation completed: action=accept, content={content}"),
        Elicited::Declined => "Elicitation completed: action=decline".into(),
        Elicited::Cancelled => "Elicitation completed: action=cancel".into(),
    }
}

/// Asks for a form whose fields have defaults (SEP-1034).
#[tool]
pub(crate) fn test_elicitation_sep1034_defaults(cx: &Request) -> paddock_sdk::Result<String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    Ok(outcome(cx.elicit_with_schema("defaults", "Please review and update the form fields with defaults", schema)?))
}

/// Asks for a form with every enum form (SEP-1330).
#[tool]
pub(crate) fn test_elicitation_sep1330_enums(cx: &Request) -> paddock_sdk::Result<String> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        },
        "required": []
    });
    Ok(outcome(cx.elicit_with_schema("enums", "Please select options from the enum fields", schema)?))
}

/// Needs the client's sampling: a client without it is refused before the plugin runs.
#[tool(requires = "sampling")]
pub(crate) fn test_missing_capability() -> &'static str {
    "Success"
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Name {
    name: String,
}

/// Asks for the user's name, then greets them.
#[tool]
pub(crate) fn test_input_required_result_elicitation(cx: &Request) -> paddock_sdk::Result<String> {
    Ok(match cx.elicit::<Name>("user_name", "What is your name?")? {
        Elicited::Accepted(user) => format!("Hello, {}!", user.name),
        _ => "Hello, stranger!".into(),
    })
}

/// Asks the client's model a question.
#[tool]
pub(crate) fn test_input_required_result_sampling(cx: &Request) -> paddock_sdk::Result<String> {
    let reply = cx.sample("capital_question", Sampling::prompt("What is the capital of France?", 100))?;
    Ok(format!("Sampling result: {}", sampled_text(&reply)))
}

/// Asks for the client's roots.
#[tool]
pub(crate) fn test_input_required_result_list_roots(cx: &Request) -> paddock_sdk::Result<String> {
    let roots = cx.roots("client_roots")?;
    Ok(format!("Found {} root(s)", roots.len()))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Confirm {
    ok: bool,
}

const STATE: &[u8] = b"state-ok";

/// Asks for a confirmation and keeps state across the round trip.
#[tool]
pub(crate) fn test_input_required_result_request_state(cx: &Request) -> paddock_sdk::Result<String> {
    confirm_with_state(cx)
}

/// Like the request-state fixture: a tampered state must never reach it.
#[tool]
pub(crate) fn test_input_required_result_tampered_state(cx: &Request) -> paddock_sdk::Result<String> {
    confirm_with_state(cx)
}

fn confirm_with_state(cx: &Request) -> paddock_sdk::Result<String> {
    cx.keep_state(STATE.to_vec());
    let answer = cx.elicit::<Confirm>("confirm", "Please confirm")?;
    if cx.state() != Some(STATE) {
        return Err(Error::failed("the answer came back without this call's state"));
    }
    Ok(match answer {
        Elicited::Accepted(Confirm { ok: true }) => "state-ok: requestState validated".into(),
        _ => "state-ok: not confirmed".into(),
    })
}

/// Asks for a name, a greeting from the model and the roots, all in one round.
#[tool]
pub(crate) fn test_input_required_result_multiple_inputs(cx: &Request) -> paddock_sdk::Result<String> {
    cx.keep_state(b"multiple".to_vec());
    let (name, greeting, roots) =
        (cx.elicit::<Name>("user_name", "What is your name?"), cx.sample("greeting", Sampling::prompt("Generate a greeting", 50)), cx.roots("client_roots"));
    let (name, greeting, roots) = (name?, greeting?, roots?);
    let name = match name {
        Elicited::Accepted(user) => user.name,
        _ => "nobody".into(),
    };
    Ok(format!("Name: {name}; Greeting: {}; Roots: {}", sampled_text(&greeting), roots.len()))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Color {
    color: String,
}

/// Asks for a name, then (in a second round, with the name kept in state) for a color.
#[tool]
pub(crate) fn test_input_required_result_multi_round(cx: &Request) -> paddock_sdk::Result<String> {
    let kept = cx.state().and_then(|s| s.strip_prefix(b"name:")).map(|n| String::from_utf8_lossy(n).into_owned());
    let name = match kept {
        Some(name) => name,
        None => {
            cx.keep_state(b"step1".to_vec());
            match cx.elicit::<Name>("step1", "Step 1: What is your name?")? {
                Elicited::Accepted(user) => user.name,
                _ => return Ok("Multi-round stopped at step 1".into()),
            }
        }
    };
    cx.keep_state(format!("name:{name}").into_bytes());
    match cx.elicit::<Color>("step2", "Step 2: What is your favorite color?")? {
        Elicited::Accepted(choice) => Ok(format!("Multi-round complete for {name} who likes {}", choice.color)),
        _ => Ok(format!("Multi-round stopped at step 2 for {name}")),
    }
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Value1 {
    value: String,
}

/// Asks only for what the client declared: sampling, and a form when it has elicitation.
#[tool]
pub(crate) fn test_input_required_result_capabilities(cx: &Request) -> paddock_sdk::Result<String> {
    cx.keep_state(b"capabilities".to_vec());
    let sample = cx.client_supports("sampling").then(|| cx.sample("sample_input", Sampling::prompt("Sample request", 50)));
    let form = cx.client_supports("elicitation").then(|| cx.elicit::<Value1>("elicit_input", "Elicitation input"));
    if sample.is_none() && form.is_none() {
        return Err(Error::failed("the client can neither sample nor elicit"));
    }
    let sampled = sample.transpose()?.map(|reply| sampled_text(&reply));
    let elicited = form.transpose()?.map(|answer| match answer {
        Elicited::Accepted(given) => given.value,
        _ => "nothing".into(),
    });
    Ok(format!("Capabilities respected: sampled={sampled:?}, elicited={elicited:?}"))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Context {
    context: String,
}

/// A prompt that asks the user for context first.
#[prompt]
pub(crate) fn test_input_required_result_prompt(cx: &Request) -> paddock_sdk::Result<Vec<PromptMessage>> {
    let context = match cx.elicit::<Context>("user_context", "What context should the prompt use?")? {
        Elicited::Accepted(answer) => answer.context,
        _ => "none".into(),
    };
    Ok(vec![PromptMessage::user(format!("Prompt with context: {context}"))])
}
