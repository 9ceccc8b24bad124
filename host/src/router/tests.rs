//! Router tests: exposed names, collisions, order, cursors, template routing.

use std::sync::Arc;

use super::*;
use crate::session::tests::FakePlugin;

/// The same fake catalog under another id.
struct Renamed(Arc<FakePlugin>, &'static str);

impl Plugin for Renamed {
    fn id(&self) -> &str {
        self.1
    }
    fn catalog(&self) -> &crate::plugin::Catalog {
        self.0.catalog()
    }
    fn call_tool<'a>(&'a self, t: &'a str, a: &'a str, cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<CallToolResult, PluginError>> {
        self.0.call_tool(t, a, cx)
    }
    fn read_resource<'a>(&'a self, u: &'a str, cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Vec<ResourceContents>, PluginError>> {
        self.0.read_resource(u, cx)
    }
    fn get_prompt<'a>(&'a self, p: &'a str, a: &'a [(String, String)], cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<GetPromptResult, PluginError>> {
        self.0.get_prompt(p, a, cx)
    }
    fn complete<'a>(&'a self, r: &'a CompletionRequest, cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Completion, PluginError>> {
        self.0.complete(r, cx)
    }
}

fn entry(id: &'static str, prefix: Prefix) -> RouterEntry {
    RouterEntry { plugin: Arc::new(Renamed(FakePlugin::new(), id)), prefix }
}

fn tool_names(router: &Router) -> Vec<&str> {
    router.tools().iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn names_get_the_plugin_prefix_by_default_or_the_configured_one() {
    let (router, errors) = Router::new(vec![entry("alpha", Prefix::Default)]);
    assert!(errors.is_empty());
    assert_eq!(tool_names(&router)[0], "alpha_echo");
    let (router, _) = Router::new(vec![entry("alpha", Prefix::Custom("web".into()))]);
    assert_eq!(tool_names(&router)[0], "web_echo");
    let (router, _) = Router::new(vec![entry("alpha", Prefix::None)]);
    assert_eq!(tool_names(&router)[0], "echo");
    assert_eq!(Prefix::from_grant(Some("")), Prefix::None);
    assert_eq!(Prefix::from_grant(None), Prefix::Default);
}

#[test]
fn a_collision_names_both_plugins_and_leaves_the_second_out() {
    let (router, errors) = Router::new(vec![entry("zeta", Prefix::None), entry("alpha", Prefix::None)]);
    assert!(!errors.is_empty());
    let message = errors[0].to_string();
    assert!(message.contains("`alpha`") && message.contains("`zeta`") && message.contains("expose.prefix"), "{message}");
    assert_eq!(router.plugins().len(), 1);
    assert_eq!(router.plugins()[0].id(), "alpha", "plugins are admitted in id order");
    // The shared resource URI collides too, even with distinct prefixes.
    let (_, errors) = Router::new(vec![entry("a", Prefix::Default), entry("b", Prefix::Default)]);
    assert!(errors.iter().any(|e| matches!(e, RouterError::Collision { kind: "resource", .. })), "{errors:?}");
}

#[test]
fn names_that_cannot_be_exposed_are_refused() {
    let long = "p".repeat(62);
    let leaked: &'static str = Box::leak(long.into_boxed_str());
    let (router, errors) = Router::new(vec![entry(leaked, Prefix::Default)]);
    assert!(matches!(&errors[0], RouterError::InvalidName { .. }), "{errors:?}");
    assert!(router.tools().is_empty());
    assert!(valid_name("a-b_C9") && !valid_name("a.b") && !valid_name("") && !valid_name(&"x".repeat(65)));
}

#[test]
fn cursors_round_trip_and_reject_foreign_or_stale_ones() {
    let (router, _) = Router::new(vec![entry("alpha", Prefix::Default)]);
    let router = router.with_page_size(2);
    let tools = router.tools();
    let first = router.page(tools, None).expect("first page");
    let next = first.next_cursor.clone().expect("more pages");
    let second = router.page(tools, Some(&next)).expect("second page");
    assert_eq!(second.items[0].name, tools[2].name);
    assert_eq!(router.page(tools, Some("garbage")).unwrap_err(), RouteError::InvalidCursor);
    // A cursor of another list does not fit this one.
    assert_eq!(router.page(router.prompts(), Some(&next)).unwrap_err(), RouteError::InvalidCursor);
}

#[test]
fn uri_templates_match_single_segments_unless_reserved_expansion() {
    let simple = UriTemplate::parse("text://words/{word}");
    assert!(simple.matches("text://words/hello"));
    assert!(!simple.matches("text://words/"));
    assert!(!simple.matches("text://words/a/b"));
    let two = UriTemplate::parse("db://{table}/rows/{id}");
    assert!(two.matches("db://users/rows/42"));
    assert!(!two.matches("db://users/cols/42"));
    let reserved = UriTemplate::parse("file://{+path}");
    assert!(reserved.matches("file:///etc/hosts"));
}
