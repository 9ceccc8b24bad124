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
    fn call_tool<'a>(&'a self, t: &'a str, a: &'a str, cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>> {
        self.0.call_tool(t, a, cx)
    }
    fn read_resource<'a>(&'a self, u: &'a str, cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>> {
        self.0.read_resource(u, cx)
    }
    fn get_prompt<'a>(
        &'a self,
        p: &'a str,
        a: &'a [(String, String)],
        cx: &'a CallContext,
    ) -> crate::plugin::BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>> {
        self.0.get_prompt(p, a, cx)
    }
    fn complete<'a>(&'a self, r: &'a CompletionRequest, cx: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Completion, PluginError>> {
        self.0.complete(r, cx)
    }
}

fn entry(id: &'static str, prefix: Prefix) -> RouterEntry {
    RouterEntry::new(Arc::new(Renamed(FakePlugin::new(), id)), prefix)
}

fn tool_names(router: &Router) -> Vec<&str> {
    router.tools().iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn names_get_the_plugin_prefix_by_default_or_the_configured_one() {
    let (router, errors) = Router::new(vec![entry("alpha", Prefix::Default)]);
    assert!(errors.is_empty());
    assert!(tool_names(&router).contains(&"alpha_echo"), "{:?}", tool_names(&router));
    let (router, _) = Router::new(vec![entry("alpha", Prefix::Custom("web".into()))]);
    assert!(tool_names(&router).contains(&"web_echo"));
    let (router, _) = Router::new(vec![entry("alpha", Prefix::None)]);
    assert!(tool_names(&router).contains(&"echo"));
    assert_eq!(Prefix::from_grant(Some("")), Prefix::None);
    assert_eq!(Prefix::from_grant(None), Prefix::Default);
}

#[test]
fn a_collision_names_both_plugins_and_leaves_the_second_out() {
    let (router, errors) = Router::new(vec![entry("zeta", Prefix::None), entry("alpha", Prefix::None)]);
    assert!(!errors.is_empty());
    let message = errors[0].to_string();
    assert!(message.contains("`alpha`") && message.contains("`zeta`") && message.contains("expose.prefix"), "{message}");
    assert_eq!(router.served().len(), 1);
    assert_eq!(router.served()[0].plugin.id(), "alpha", "plugins are admitted in id order");
    // The shared resource URI collides too, even with distinct prefixes.
    let (_, errors) = Router::new(vec![entry("a", Prefix::Default), entry("b", Prefix::Default)]);
    assert!(errors.iter().any(|e| matches!(e, RouterError::Collision { kind: ItemKind::Resource, .. })), "{errors:?}");
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

/// A plugin declaring the given resource templates; every read it receives succeeds with a
/// text naming the plugin, and is counted.
struct Templated {
    id: &'static str,
    catalog: crate::plugin::Catalog,
    reads: std::sync::atomic::AtomicUsize,
}

impl Templated {
    fn entry(id: &'static str, templates: &[&str]) -> (RouterEntry, Arc<Templated>) {
        let resource_templates = templates
            .iter()
            .map(|t| ResourceTemplate {
                uri_template: (*t).to_owned(),
                name: "t".into(),
                title: None,
                description: None,
                mime_type: None,
                icons: vec![],
                annotations: None,
                meta: None,
            })
            .collect();
        let catalog = crate::plugin::Catalog { resource_templates, ..Default::default() };
        let plugin = Arc::new(Templated { id, catalog, reads: Default::default() });
        (RouterEntry::new(plugin.clone(), Prefix::Default), plugin)
    }
}

impl Plugin for Templated {
    fn id(&self) -> &str {
        self.id
    }
    fn catalog(&self) -> &crate::plugin::Catalog {
        &self.catalog
    }
    fn call_tool<'a>(&'a self, t: &'a str, _: &'a str, _: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(t.to_owned())) })
    }
    fn read_resource<'a>(&'a self, u: &'a str, _: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let contents = crate::protocol::ResourceContents { uri: u.to_owned(), mime_type: None, text: Some(self.id.to_owned()), blob: None, meta: None };
        Box::pin(async move { Ok(Outcome::Complete(ReadResourceResult { contents: vec![contents], meta: None, cache: None })) })
    }
    fn get_prompt<'a>(
        &'a self,
        p: &'a str,
        _: &'a [(String, String)],
        _: &'a CallContext,
    ) -> crate::plugin::BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>> {
        Box::pin(async move { Err(PluginError::NotFound(p.to_owned())) })
    }
    fn complete<'a>(&'a self, _: &'a CompletionRequest, _: &'a CallContext) -> crate::plugin::BoxFuture<'a, Result<Completion, PluginError>> {
        Box::pin(async move { Ok(Completion::default()) })
    }
}

/// Reads `uri` and returns the id of the plugin that served it.
async fn served_by(router: &Router, uri: &str) -> Result<String, RouteError> {
    let (_, outcome) = router.read_resource(uri, &CallContext::detached("test")).await?;
    let Outcome::Complete(result) = outcome else { panic!("a fake read completes") };
    Ok(result.contents[0].text.clone().unwrap_or_default())
}

#[tokio::test]
async fn reads_go_to_a_listed_uri_first_then_the_first_matching_template_in_order() {
    let (segment, _) = Templated::entry("segment", &["x://{a}"]);
    let (reserved, _) = Templated::entry("reserved", &["x://{+a}"]);
    let (router, errors) = Router::new(vec![segment, reserved, entry("fake", Prefix::Default)]);
    assert!(errors.is_empty(), "{errors:?}");
    // `x://{+a}` sorts before `x://{a}`, so it wins where both match.
    assert_eq!(served_by(&router, "x://k").await.expect("read"), "reserved");
    assert_eq!(served_by(&router, "x://k/l").await.expect("read"), "reserved");
    assert_eq!(served_by(&router, "fake://items/7").await.expect("template of the fake"), "contents of fake://items/7");
    assert_eq!(served_by(&router, "fake://readme").await.expect("listed"), "contents of fake://readme");
    assert_eq!(served_by(&router, "y://k").await.expect_err("no template"), RouteError::UnknownResource { uri: "y://k".into() });
}

#[test]
fn a_template_over_the_caps_leaves_its_plugin_out_naming_plugin_and_template() {
    let many = format!("a://{}!", "{v}".repeat(33));
    let (bad, _) = Templated::entry("greedy", &["ok://{a}", many.as_str()]);
    let (good, _) = Templated::entry("good", &["good://{a}"]);
    let (router, errors) = Router::new(vec![bad, good]);
    assert_eq!(router.served().len(), 1);
    assert_eq!(router.served()[0].plugin.id(), "good");
    let [RouterError::InvalidTemplate { plugin, template, reason }] = errors.as_slice() else { panic!("{errors:?}") };
    assert_eq!((plugin.as_str(), reason), ("greedy", &template::TemplateError::TooManyVariables { count: 33, max: 32 }));
    assert!(template.starts_with("a://{v}{v}") && template.ends_with('…') && template.chars().count() == 65, "{template}");
    let message = errors[0].to_string();
    assert!(message.contains("plugin `greedy`") && message.contains("33 variables; at most 32"), "{message}");
}

#[tokio::test]
async fn a_uri_over_the_cap_is_unknown_without_reaching_a_plugin() {
    let (entry, plugin) = Templated::entry("big", &["big://{+rest}"]);
    let (router, _) = Router::new(vec![entry]);
    let longest = format!("big://{}", "x".repeat(template::MAX_URI_BYTES - 6));
    assert_eq!(served_by(&router, &longest).await.expect("at the cap"), "big");
    let over = format!("{longest}x");
    assert!(matches!(served_by(&router, &over).await, Err(RouteError::UnknownResource { .. })));
    assert_eq!(plugin.reads.load(std::sync::atomic::Ordering::SeqCst), 1, "only the read within the cap reached the plugin");
}

#[tokio::test]
async fn adversarial_templates_route_long_uris_in_milliseconds() {
    let vars = format!("a://{}!", "{v}".repeat(32));
    let (entry, plugin) = Templated::entry("evil", &[vars.as_str(), "calendar://{year}-{month}-{day}"]);
    let (router, errors) = Router::new(vec![entry]);
    assert!(errors.is_empty(), "{errors:?}");
    let uris = [format!("a://{}", "x".repeat(8188)), format!("calendar://{}/", "1-".repeat(4090))];
    for uri in uris {
        let started = std::time::Instant::now();
        assert!(matches!(served_by(&router, &uri).await, Err(RouteError::UnknownResource { .. })));
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_millis(100), "{} bytes took {took:?}", uri.len());
    }
    assert_eq!(plugin.reads.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_costliest_templates_a_plugin_may_declare_cost_milliseconds_per_read() {
    // As much template text as a plugin may declare (64 KiB), all of it at the length cap and
    // all of it still live after every character of an 8 KiB URI that none of it matches.
    let head = format!("a://{}", "{+v}".repeat(32));
    let templates: Vec<String> = (0..64)
        .map(|i| {
            let tail = format!("{i:02}");
            format!("{head}{}{tail}", "a".repeat(template::MAX_TEMPLATE_BYTES - head.len() - tail.len()))
        })
        .collect();
    let refs: Vec<&str> = templates.iter().map(String::as_str).collect();
    let (entry, _) = Templated::entry("costly", &refs);
    let (router, errors) = Router::new(vec![entry]);
    assert!(errors.is_empty(), "{errors:?}");
    let uri = format!("a://{}b", "a".repeat(template::MAX_URI_BYTES - 5));
    let started = std::time::Instant::now();
    assert!(matches!(served_by(&router, &uri).await, Err(RouteError::UnknownResource { .. })));
    let took = started.elapsed();
    // About 200 ms in an unoptimized build sharing two cores with the rest of the suite: the
    // bound is there to catch a matcher whose cost explodes, not a busy machine.
    assert!(took < std::time::Duration::from_secs(1), "one read took {took:?}");
}

#[test]
fn a_plugins_definitions_are_what_the_router_exposes_of_it_and_only_that() {
    use super::definitions::{DefinitionKind, Definitions};
    // `b` declares the same resource URIs as `a`, so the router leaves it out: it exposes nothing.
    let (router, errors) = Router::new(vec![entry("a", Prefix::Default), entry("b", Prefix::Default)]);
    assert_eq!(errors.len(), 2, "{errors:?}");
    let a = Definitions::of(&router, "a");
    let digests = a.digests();
    let tools: Vec<&str> = digests.iter().filter(|(k, ..)| *k == DefinitionKind::Tool).map(|(_, n, _)| *n).collect();
    assert!(!tools.is_empty() && tools.iter().all(|n| n.starts_with("a_")), "{tools:?}");
    assert!(digests.iter().any(|(k, n, _)| *k == DefinitionKind::Prompt && *n == "a_greet"));
    assert!(digests.iter().any(|(k, n, _)| *k == DefinitionKind::Resource && *n == "fake://readme"));
    assert!(digests.iter().any(|(k, n, _)| *k == DefinitionKind::ResourceTemplate && *n == "fake://items/{id}"));
    // A plugin left out has no definitions; the same plugin read twice has no drift.
    assert!(Definitions::of(&router, "b").digests().is_empty());
    assert!(a.drift(&Definitions::of(&router, "a")).is_empty());
    assert_eq!(a.drift(&Definitions::default()).len(), digests.len(), "every definition is gone when the plugin is");
}
