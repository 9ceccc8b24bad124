//! The test harness plugin authors use in their own unit tests: a handler called with a built
//! `Request` asks its questions, then, called again with the answers, uses them.

use paddock_sdk::testing::TestRequest;
use paddock_sdk::{Elicited, Request, Root, Sampling, data, sampled_text};
use serde_json::json;

#[data]
struct Name {
    name: String,
}

fn greet(cx: &Request) -> paddock_sdk::Result<String> {
    Ok(match cx.elicit::<Name>("user_name", "What is your name?")? {
        Elicited::Accepted(answer) => format!("Hello, {}!", answer.name),
        Elicited::Declined => "declined".to_owned(),
        Elicited::Cancelled => "cancelled".to_owned(),
    })
}

fn summarize(cx: &Request) -> paddock_sdk::Result<String> {
    let (summary, roots) = (cx.sample("summary", Sampling::prompt("Summarize", 50)), cx.roots("roots"));
    let (summary, roots) = (summary?, roots?);
    Ok(format!("{} over {} root(s)", sampled_text(&summary), roots.len()))
}

#[test]
fn a_handler_asks_first_and_uses_the_answer_when_called_again() {
    let first = TestRequest::new().capabilities(json!({"elicitation": {}})).build();
    assert!(greet(&first).is_err(), "no answer yet: the call ends with the question");
    assert_eq!(first.questions(), ["user_name"]);

    let retry = TestRequest::new().accepted("user_name", json!({"name": "Ada"})).build();
    assert_eq!(greet(&retry).expect("answered"), "Hello, Ada!");
    assert!(retry.questions().is_empty());
    assert_eq!(greet(&TestRequest::new().declined("user_name").build()).expect("declined"), "declined");
    assert_eq!(greet(&TestRequest::new().cancelled("user_name").build()).expect("cancelled"), "cancelled");
}

#[test]
fn several_questions_go_out_in_one_round_and_every_kind_of_answer_can_be_given() {
    let first = TestRequest::new().stateless().build();
    assert!(summarize(&first).is_err());
    assert_eq!(first.questions(), ["summary", "roots"]);
    let root = Root { uri: "file:///work".to_owned(), name: Some("work".to_owned()), meta: None };
    let answered = TestRequest::new().stateless().sampled("summary", "A short text").roots("roots", vec![root]).build();
    assert_eq!(summarize(&answered).expect("answered"), "A short text over 1 root(s)");
}

#[test]
fn the_context_is_what_the_test_says() {
    let cx = TestRequest::new()
        .stateless()
        .capabilities(json!({"sampling": {"tools": {}}}))
        .client("inspector", "1.0")
        .caller("https://issuer.example alice")
        .meta(json!({"example.com/k": 1}))
        .with_progress()
        .state(b"kept".to_vec())
        .build();
    assert_eq!((cx.protocol_version(), cx.is_stateless()), ("2026-07-28", true));
    assert!(cx.client_supports("sampling.tools") && !cx.client_supports("elicitation"));
    assert_eq!((cx.client_name(), cx.caller()), (Some("inspector"), Some("https://issuer.example alice")));
    assert_eq!(cx.meta()["example.com/k"], 1);
    assert!(cx.wants_progress());
    assert_eq!(cx.state(), Some(&b"kept"[..]));
    let legacy = TestRequest::new().build();
    assert_eq!((legacy.protocol_version(), legacy.is_stateless(), legacy.caller()), ("2025-11-25", false, None));
}
