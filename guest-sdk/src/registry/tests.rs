//! The registry answering each export from what the macros registered.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;
use crate::bindings::exports::paddock::plugin::completion::CompletionRequest;
use crate::bindings::exports::paddock::plugin::tools::{CallResult, TaskSupport};
use crate::bindings::paddock::plugin::context::{Era, TraceContext};
use crate::bindings::paddock::plugin::input::{ElicitationAction, ElicitationResult, InputRequestKind, InputResponse, InputResponseKind};
use crate::bindings::paddock::plugin::types::{CacheScope, ContentBlock, Role};
use crate::defs::{PromptMeta, ResourceMeta, TaskMode, ToolHints, ToolMeta};
use crate::describe::{Audience, Theme};
use crate::{Annotations, Content, Elicited, Json, ToolResult, UriVars};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// What to say back.
    text: String,
}

#[derive(serde::Serialize, JsonSchema)]
struct Count {
    words: usize,
}

#[derive(Deserialize, JsonSchema)]
struct UserName {
    name: String,
}

fn echo(args: Echo) -> Result<String, String> {
    if args.text.is_empty() { Err("nothing to echo".into()) } else { Ok(args.text) }
}

fn count(args: Echo) -> Json<Count> {
    Json(Count { words: args.text.split_whitespace().count() })
}

fn ping() -> &'static str {
    "pong"
}

fn greet(cx: &Request) -> crate::Result<String> {
    let Elicited::Accepted(user) = cx.elicit::<UserName>("user_name", "What is your name?")? else {
        return Ok("Maybe next time.".into());
    };
    Ok(format!("Hello, {}!", user.name))
}

fn three(cx: &Request) -> crate::Result<String> {
    cx.keep_state(b"three".to_vec());
    let (name, roots, page) = (cx.elicit::<UserName>("name", "Name?"), cx.roots("roots"), cx.elicit_url("login", "Sign in", "https://example.com"));
    let (name, roots, page) = (name?, roots?, page?);
    let name = if let Elicited::Accepted(user) = name { user.name } else { String::new() };
    Ok(format!("{name}/{}/{page:?}", roots.len()))
}

fn meta(name: &'static str, read_only: bool, requires: Option<&'static str>) -> ToolMeta {
    ToolMeta {
        name,
        title: None,
        description: Some("a tool"),
        hints: ToolHints { read_only, ..ToolHints::default() },
        requires,
        task: TaskMode::Forbidden,
        icons: &[],
        meta: None,
    }
}

fn registry() -> Registry {
    let mut r = Registry::new("t", "1");
    r.tool(ToolDef::new::<Echo, _>(meta("echo", false, None), echo));
    r.tool(ToolDef::new::<Echo, _>(meta("count", true, None), count));
    r.tool(ToolDef::without_arguments(meta("ping", false, Some("sampling, elicitation.url")), ping));
    r.tool(ToolDef::request_only(meta("greet", false, None), greet));
    r.tool(ToolDef::request_only(meta("three", false, None), three));
    r.tool(ToolDef::request_only(ToolMeta { task: TaskMode::Required, ..meta("purge", false, None) }, purge));
    r.tool(ToolDef::new::<Echo, _>(meta("strict", false, None), strict));
    r
}

fn strict(args: Echo) -> crate::Result<String> {
    if args.text.contains('/') {
        return Err(crate::Error::invalid_params("no paths here"));
    }
    Ok(args.text)
}

fn purge(cx: &Request) -> crate::Result<String> {
    cx.ask_within_task();
    let _ = cx.elicit::<UserName>("confirm", "Purge?")?;
    Ok("purged".into())
}

fn context(responses: Vec<InputResponse>) -> RequestContext {
    RequestContext {
        protocol_version: "2026-07-28".into(),
        era: Era::Stateless,
        client_capabilities: r#"{"elicitation":{}}"#.into(),
        client_info: None,
        meta: "{}".into(),
        has_progress_token: false,
        trace: TraceContext { traceparent: None, tracestate: None, baggage: None },
        caller: None,
        input_responses: responses,
        state: None,
    }
}

fn complete(outcome: CallOutcome) -> CallResult {
    match outcome {
        CallOutcome::Complete(result) => result,
        CallOutcome::InputRequired(r) => panic!("asked for input: {r:?}"),
    }
}

fn call(r: &Registry, name: &str, arguments: &str) -> CallResult {
    complete(r.call_tool(context(vec![]), name, arguments).expect("known tool"))
}

fn text_of(result: &CallResult) -> String {
    match &result.content[0] {
        crate::bindings::paddock::plugin::types::ContentBlock::Text(t) => t.text.clone(),
        _ => String::new(),
    }
}

#[test]
fn arguments_are_parsed_and_errors_become_error_results() {
    let r = registry();
    let ok = call(&r, "echo", r#"{"text":"hi"}"#);
    assert!(!ok.is_error);
    assert_eq!(text_of(&ok), "hi");
    let failed = call(&r, "echo", r#"{"text":""}"#);
    assert!(failed.is_error);
    assert_eq!(text_of(&failed), "nothing to echo");
    let invalid = call(&r, "echo", r#"{"txt":"hi"}"#);
    assert!(invalid.is_error);
    assert!(text_of(&invalid).contains("missing field `text`"), "{}", text_of(&invalid));
    assert!(matches!(r.call_tool(context(vec![]), "nope", "{}"), Err(WitError::NotFound(_))));
    let refused = r.call_tool(context(vec![]), "strict", r#"{"text":"a/b"}"#);
    assert!(matches!(refused, Err(WitError::InvalidParams(ref why)) if why == "no paths here"), "a refusal is a protocol error: {refused:?}");
    assert_eq!(text_of(&call(&r, "strict", r#"{"text":"ab"}"#)), "ab");
}

#[test]
fn schemas_describe_inputs_and_structured_outputs() {
    let tools = registry().list_tools().tools;
    let echo: Value = serde_json::from_str(&tools[0].input_schema).expect("json");
    assert_eq!(echo["type"], "object");
    assert_eq!(echo["properties"]["text"]["description"], "What to say back.");
    assert_eq!(echo["$schema"], "https://json-schema.org/draft/2020-12/schema", "the dialect is named");
    assert!(tools[0].output_schema.is_none());
    let output: Value = serde_json::from_str(tools[1].output_schema.as_deref().expect("output schema")).expect("json");
    assert_eq!(output["properties"]["words"]["type"], "integer");
    let ping: Value = serde_json::from_str(&tools[2].input_schema).expect("json");
    assert_eq!(ping, serde_json::json!({"type":"object","properties":{},"additionalProperties":false}));
    assert_eq!(tools[1].annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    let required: Value = serde_json::from_str(tools[2].required_client_capabilities.as_deref().expect("declared")).expect("json");
    assert_eq!(required, serde_json::json!({"sampling": {}, "elicitation": {"url": {}}}));
    assert!(tools[0].required_client_capabilities.is_none());
}

#[test]
fn structured_results_carry_the_json_twice() {
    let result = call(&registry(), "count", r#"{"text":"a b c"}"#);
    assert_eq!(result.structured_content.as_deref(), Some(r#"{"words":3}"#));
    assert_eq!(text_of(&result), r#"{"words":3}"#);
}

#[test]
fn a_missing_answer_ends_the_call_with_the_question_and_the_answer_completes_it() {
    let r = registry();
    let CallOutcome::InputRequired(asked) = r.call_tool(context(vec![]), "greet", "{}").expect("known") else { panic!("must ask") };
    assert_eq!(asked.requests.len(), 1);
    assert_eq!(asked.requests[0].key, "user_name");
    let InputRequestKind::ElicitForm(form) = &asked.requests[0].request else { panic!("a form") };
    assert_eq!(form.message, "What is your name?");
    let schema: Value = serde_json::from_str(&form.requested_schema).expect("json");
    assert_eq!(schema["properties"]["name"]["type"], "string");

    let answer = |action, content: Option<&str>| InputResponse {
        key: "user_name".into(),
        response: InputResponseKind::Elicitation(ElicitationResult { action, content: content.map(str::to_owned) }),
    };
    let done = complete(r.call_tool(context(vec![answer(ElicitationAction::Accept, Some(r#"{"name":"Ada"}"#))]), "greet", "{}").expect("known"));
    assert_eq!(text_of(&done), "Hello, Ada!");
    let declined = complete(r.call_tool(context(vec![answer(ElicitationAction::Decline, None)]), "greet", "{}").expect("known"));
    assert_eq!(text_of(&declined), "Maybe next time.");
    let wrong = complete(r.call_tool(context(vec![answer(ElicitationAction::Accept, Some(r#"{"nom":1}"#))]), "greet", "{}").expect("known"));
    assert!(wrong.is_error && text_of(&wrong).contains("does not fit its form"), "{}", text_of(&wrong));
}

#[test]
fn questions_asked_before_any_question_mark_go_out_in_one_round_with_the_state() {
    let CallOutcome::InputRequired(asked) = registry().call_tool(context(vec![]), "three", "{}").expect("known") else { panic!("must ask") };
    let keys: Vec<&str> = asked.requests.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["name", "roots", "login"]);
    assert_eq!(asked.state.as_deref(), Some(&b"three"[..]));
    assert!(!asked.in_task, "asked as an ordinary round");
}

#[test]
fn a_task_tool_declares_its_support_and_asks_within_the_task() {
    let r = registry();
    let tools = r.list_tools().tools;
    assert!(tools.iter().filter(|t| t.name != "purge").all(|t| t.task_support == TaskSupport::Forbidden));
    assert_eq!(tools.iter().find(|t| t.name == "purge").map(|t| t.task_support), Some(TaskSupport::Required));
    let CallOutcome::InputRequired(asked) = r.call_tool(context(vec![]), "purge", "{}").expect("known") else { panic!("must ask") };
    assert!(asked.in_task);
    assert_eq!(asked.requests[0].key, "confirm");
}

#[test]
fn declared_capabilities_are_read_by_dotted_path() {
    let request = Request::new(context(vec![]));
    assert!(request.client_supports("elicitation"));
    assert!(request.client_supports("elicitation.form"), "an empty elicitation object declares forms");
    assert!(!request.client_supports("elicitation.url"));
    assert!(!request.client_supports("sampling"));
    assert!(request.is_stateless());
}

const GEAR: Icon = Icon::new("https://example.com/gear").mime_type("image/avif").theme(Theme::Dark);

/// A contact, in JSON Schema keywords no derive writes.
struct Contact;

impl JsonSchema for Contact {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Contact".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object"}},
            "properties": {"phone": {"type": "string"}, "email": {"type": "string"}},
            "if": {"required": ["phone"]}, "then": {"required": ["phone"]}, "else": {"required": ["email"]},
            "additionalProperties": false
        })
    }
}

impl<'de> Deserialize<'de> for Contact {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Contact, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Contact)
    }
}

#[derive(Deserialize, JsonSchema)]
struct Review {
    /// # Language
    /// The language of the code, such as `rust`.
    language: String,
    /// How strict to be.
    strictness: Option<String>,
    #[schemars(title = "Focus area")]
    focus: String,
}

fn contact(_: Contact) -> ToolResult {
    ToolResult::new(vec![Content::text("noted").annotate(Annotations::for_audience(Audience::User).priority(0.3)).meta(json!({"k": 1}))])
        .structured(json!([1, 2]))
        .meta(json!({"cost": 2}))
}

fn review(args: Review) -> String {
    format!("{} {:?} {}", args.language, args.strictness, args.focus)
}

fn status() -> &'static str {
    "ok"
}

fn page(vars: UriVars) -> String {
    vars.get("n").unwrap_or("").to_owned()
}

fn complete_city(c: &Completing<'_>) -> Vec<String> {
    let country = c.chosen("country").unwrap_or("none");
    vec![format!("{country}/{}/{}", c.value, c.request.protocol_version())]
}

fn described() -> Registry {
    let mut r = Registry::new("d", "1");
    r.icons(&[Icon::new("https://example.com/d.png")]);
    r.website_url("https://example.com/d");
    r.list_cache(CacheHint::public(300_000));
    r.tool(ToolDef::new::<Contact, _>(ToolMeta { icons: &[GEAR], meta: Some(r#"{"ui":"compact"}"#), ..meta("contact", false, None) }, contact));
    let resource = ResourceMeta {
        uri: "test://status",
        name: "status",
        title: None,
        description: None,
        mime_type: Some("text/plain"),
        size: Some(2),
        icons: &[GEAR],
        audience: Some(Audience::Assistant),
        priority: Some(0.5),
        meta: Some(r#"{"live":true}"#),
        cache: Some(CacheHint::private(1_000)),
    };
    r.resource(ResourceDef::new(resource, status));
    r.template(ResourceDef::template(
        ResourceMeta { uri: "test://page/{n}", name: "page", size: None, cache: None, audience: None, priority: None, ..resource },
        page,
    ));
    let prompt = PromptMeta { name: "review", title: Some("Review"), description: Some("Reviews code"), icons: &[GEAR], meta: Some(r#"{"p":1}"#) };
    r.prompt(PromptDef::new::<Review, _>(prompt, review));
    r.completion(complete_city);
    r
}

#[test]
fn a_hand_written_schema_is_listed_as_written_with_its_dialect() {
    let tools = described().list_tools().tools;
    let schema: Value = serde_json::from_str(&tools[0].input_schema).expect("json");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["else"], json!({"required": ["email"]}));
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn icons_meta_annotations_and_cache_hints_reach_every_listing() {
    let r = described();
    let tools = r.list_tools();
    assert_eq!(tools.cache.map(|c| (c.ttl_ms, c.scope)), Some((300_000, CacheScope::Public)));
    let tool = &tools.tools[0];
    assert_eq!(tool.icons.len(), 1);
    assert_eq!((tool.icons[0].mime_type.as_deref(), tool.icons[0].theme.as_deref()), (Some("image/avif"), Some("dark")));
    assert_eq!(tool.meta.as_deref(), Some(r#"{"ui":"compact"}"#));

    let resources = r.list_resources();
    let status = &resources.resources[0];
    assert_eq!((status.size, status.meta.as_deref()), (Some(2), Some(r#"{"live":true}"#)));
    let annotations = status.annotations.as_ref().expect("annotated");
    assert_eq!((annotations.audience.as_slice(), annotations.priority), (&[Role::Assistant][..], Some(0.5)));
    let templates = r.list_resource_templates().templates;
    assert!(templates[0].annotations.is_none() && templates[0].icons.len() == 1);

    let prompts = r.list_prompts().prompts;
    assert_eq!(prompts[0].icons.len(), 1);
    let args: Vec<(&str, Option<&str>, Option<&str>, bool)> =
        prompts[0].arguments.iter().map(|a| (a.name.as_str(), a.title.as_deref(), a.description.as_deref(), a.required)).collect();
    assert_eq!(
        args,
        [
            ("language", Some("Language"), Some("The language of the code, such as `rust`."), true),
            ("strictness", None, Some("How strict to be."), false),
            ("focus", Some("Focus area"), None, true),
        ],
        "in field order, with titles"
    );

    let info = described().info();
    assert_eq!(info.icons[0].mime_type.as_deref(), Some("image/png"));
    assert_eq!(info.website_url.as_deref(), Some("https://example.com/d"));
}

#[test]
fn a_read_is_cached_only_as_its_author_said() {
    let r = described();
    let ReadOutcome::Complete(read) = r.read_resource(context(vec![]), "test://status").expect("served") else { panic!("complete") };
    assert_eq!(read.cache.map(|c| (c.ttl_ms, c.scope)), Some((1_000, CacheScope::Private)));
    let ReadOutcome::Complete(page) = r.read_resource(context(vec![]), "test://page/7").expect("served") else { panic!("complete") };
    assert!(page.cache.is_none(), "no hint: not reusable");
    assert!(matches!(&page.contents[0].body, ResourceBody::Text(t) if t == "7"));
}

#[test]
fn a_spelled_out_result_keeps_its_meta_annotations_and_structured_value() {
    let result = call(&described(), "contact", "{}");
    assert_eq!(result.meta.as_deref(), Some(r#"{"cost":2}"#));
    assert_eq!(result.structured_content.as_deref(), Some("[1,2]"));
    let ContentBlock::Text(text) = &result.content[0] else { panic!("text") };
    assert_eq!(text.meta.as_deref(), Some(r#"{"k":1}"#));
    let annotations = text.annotations.as_ref().expect("annotated");
    assert_eq!((annotations.audience.as_slice(), annotations.priority), (&[Role::User][..], Some(0.3)));
}

#[test]
fn completion_sees_the_arguments_already_chosen_and_the_request() {
    let request = CompletionRequest {
        target: CompletionTarget::Prompt("review".into()),
        argument_name: "city".into(),
        argument_value: "Par".into(),
        context: vec![("country".into(), "fr".into())],
    };
    let result = described().complete(context(vec![]), &request).expect("completes");
    assert_eq!(result.values, ["fr/Par/2026-07-28"]);
}

#[test]
fn a_hand_written_form_goes_out_as_written_and_its_answer_is_read() {
    let schema = json!({"type": "object", "properties": {"pick": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}}});
    let cx = Request::new(context(vec![]));
    assert!(cx.elicit_with_schema::<Value>("pick", "Pick", schema.clone()).is_err());
    let asked = cx.input_required();
    let InputRequestKind::ElicitForm(form) = &asked.requests[0].request else { panic!("a form") };
    assert_eq!(serde_json::from_str::<Value>(&form.requested_schema).expect("json"), schema);

    let answer = InputResponse {
        key: "pick".into(),
        response: InputResponseKind::Elicitation(ElicitationResult { action: ElicitationAction::Accept, content: Some(r#"{"pick":["a"]}"#.into()) }),
    };
    let cx = Request::new(context(vec![answer]));
    let picked = cx.elicit_with_schema::<Value>("pick", "Pick", schema).expect("answered");
    assert_eq!(picked, Elicited::Accepted(json!({"pick": ["a"]})));
}

fn all_vars(vars: UriVars) -> String {
    ["a", "b", "c", "d", "section"].iter().filter_map(|name| vars.get(name).map(|v| format!("{name}={v}"))).collect::<Vec<_>>().join(" ")
}

#[test]
fn a_read_the_host_routes_to_a_template_is_served_by_it() {
    // Both were routed to the plugin by the host and then not found by the SDK.
    let mut r = Registry::new("t", "1");
    let meta = |uri| ResourceMeta {
        uri,
        name: "t",
        title: None,
        description: None,
        mime_type: None,
        size: None,
        icons: &[],
        audience: None,
        priority: None,
        meta: None,
        cache: None,
    };
    r.template(ResourceDef::template(meta("t://{a*}{b*}{c*}{d*}!"), all_vars));
    r.template(ResourceDef::template(meta("f://doc{#section}"), all_vars));
    let read = |uri: &str| match r.read_resource(context(vec![]), uri) {
        Ok(ReadOutcome::Complete(result)) => match &result.contents[0].body {
            ResourceBody::Text(text) => Ok(text.clone()),
            other => panic!("{other:?}"),
        },
        Ok(_) => panic!("complete"),
        Err(error) => Err(error),
    };
    assert_eq!(read("t://ab/cd!").expect("served"), "a=ab b=/ c=c d=d");
    assert_eq!(read("f://doc#intro").expect("served"), "section=#intro");
    // An 8 KiB read that matches no template is not found at once.
    let long = format!("t://{}", "x/".repeat(4094));
    assert!(matches!(read(&long), Err(WitError::NotFound(_))));
}
