//! The input model and the request context through a real component: a plugin ends a call with
//! keyed questions and its state, gets both back with the answers, and sees who is asking.

use paddock::input::{InputMethod, InputResponse, Outcome, RequestContext};
use paddock::plugin::{CallContext, Plugin, PluginError};
use paddock::policy::Grant;
use paddock::revision::Revision;
use serde_json::{Value, json};

use super::*;

#[tokio::test]
async fn a_plugin_asks_by_key_and_gets_the_answer_and_its_state_back_in_a_fresh_instance() {
    let runtime = runtime();
    let plugin = load(&runtime, "fixture", Grant::default()).await;
    let tool = plugin.catalog().tools.iter().find(|t| t.name == "ask_name").expect("listed");
    assert_eq!(tool.required_capabilities.as_ref().map(|c| Value::Object(c.clone())), Some(json!({"elicitation": {}})));

    let asked = outcome_with(&plugin, "ask_name", json!({}), &CallContext::detached("first")).await.expect("runs");
    let Outcome::InputRequired(required) = asked else { panic!("must ask: {asked:?}") };
    assert_eq!(required.state.as_deref(), Some(&b"asked by the fixture"[..]));
    let [request] = required.requests.as_slice() else { panic!("one question") };
    assert_eq!((request.key.as_str(), request.method), ("user_name", InputMethod::ElicitForm));
    assert_eq!(request.params["message"], "What is your name?");
    assert_eq!(request.params["requestedSchema"]["required"], json!(["name"]));

    let mut context = RequestContext::local(Revision::V2025_11_25);
    context.input_responses =
        vec![InputResponse { key: "user_name".into(), method: InputMethod::ElicitForm, result: json!({"action": "accept", "content": {"name": "Ada"}}) }];
    context.state = required.state.clone();
    let retry = CallContext::detached("retry").with_request(context.clone());
    assert_eq!(ok_text(call_with(&plugin, "ask_name", json!({}), &retry).await), "Hello, Ada (asked by the fixture)");

    context.input_responses[0].result = json!({"action": "accept", "content": "Ada"});
    let malformed = CallContext::detached("malformed").with_request(context);
    match outcome_with(&plugin, "ask_name", json!({}), &malformed).await {
        Err(PluginError::InvalidInputResponse(why)) => assert!(why.contains("user_name"), "{why}"),
        other => panic!("a malformed answer reached the plugin: {other:?}"),
    }
}

#[tokio::test]
async fn the_plugin_sees_the_protocol_the_client_and_the_request_meta() {
    let runtime = runtime();
    let plugin = load(&runtime, "fixture", Grant::default()).await;
    let mut context = RequestContext::local(Revision::V2026_07_28);
    context.client_capabilities = json!({"sampling": {"tools": {}}}).as_object().cloned().expect("object");
    context.client_info = RequestContext::client_info_from(Some(&json!({"name": "inspector", "version": "2.12"})));
    context.meta = json!({"progressToken": 7, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}).as_object().cloned().expect("object");
    context.has_progress_token = true;
    context.trace = RequestContext::trace_from(&context.meta);
    let cx = CallContext::detached("context").with_request(context);
    let seen: Value = serde_json::from_str(&ok_text(call_with(&plugin, "context", json!({}), &cx).await)).expect("json");
    assert_eq!(seen["protocolVersion"], "2026-07-28");
    assert_eq!(seen["stateless"], true);
    assert_eq!(seen["clientCapabilities"], json!({"sampling": {"tools": {}}}));
    assert_eq!(seen["clientName"], "inspector");
    assert_eq!(seen["meta"]["progressToken"], 7);
    assert_eq!(seen["progress"], true);
    assert_eq!(seen["traceparent"], "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    assert_eq!(seen["caller"], Value::Null, "no caller until a transport authenticates one");

    let plain: Value = serde_json::from_str(&ok_text(call(&plugin, "context", json!({})).await)).expect("json");
    assert_eq!((plain["stateless"].clone(), plain["clientCapabilities"].clone()), (json!(false), json!({})));
}
