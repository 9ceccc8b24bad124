//! The list methods: one page of tools, prompts, resources or resource templates from the
//! scope's router, and the cache hint a 2026-07-28 list result carries.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::caller_policy::sees;
use super::error::McpError;
use super::lifecycle::META_GENERATION;
use super::reply::{Reply, to_json};
use super::request::ListMethod;
use super::scope::Scope;
use super::shape;
use crate::plugin::ListCacheHints;
use crate::policy::ItemKind;
use crate::protocol::{CacheHint, CacheScope};
use crate::router::{Named, Router};

/// A list a plugin gave no cache hint for may not be reused: it can change at any time.
const LIST_DEFAULT_CACHE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Public };

/// One page of `list` as the scope's principal sees it, each item shaped for the scope's
/// revision, with its cache hint. When tool policy hides anything from anyone, a list differs
/// by principal: its cache hint is then `private`.
pub(super) fn serve(scope: &Scope, list: ListMethod, cursor: Option<&str>) -> Result<Reply, McpError> {
    let (router, revision) = (&*scope.router, scope.revision());
    let rules = &scope.state.callers.access;
    if !rules.is_open() {
        let principal = scope.client.principal();
        let seen = |kind: ItemKind, name: &str| sees(rules, principal, kind, name);
        let result = match list {
            ListMethod::Tools => page(router, &visible(router.tools(), |t| seen(ItemKind::Tool, &t.name)), cursor, "tools", |t| shape::tool(t, revision)),
            ListMethod::Prompts => {
                page(router, &visible(router.prompts(), |p| seen(ItemKind::Prompt, &p.name)), cursor, "prompts", |p| shape::prompt(p, revision))
            }
            ListMethod::Resources => {
                page(router, &visible(router.resources(), |r| seen(ItemKind::Resource, &r.uri)), cursor, "resources", |r| shape::resource(r, revision))
            }
            ListMethod::ResourceTemplates => {
                page(router, &visible(router.resource_templates(), |t| seen(ItemKind::Resource, &t.uri_template)), cursor, "resourceTemplates", |t| {
                    shape::template(t, revision)
                })
            }
        }?;
        let mut hint = cache(router, list);
        hint.scope = CacheScope::Private;
        return Ok(Reply::cached(with_generation(result, router, revision), hint));
    }
    let result = match list {
        ListMethod::Tools => page(router, router.tools(), cursor, "tools", |tool| shape::tool(tool, revision)),
        ListMethod::Prompts => page(router, router.prompts(), cursor, "prompts", |prompt| shape::prompt(prompt, revision)),
        ListMethod::Resources => page(router, router.resources(), cursor, "resources", |resource| shape::resource(resource, revision)),
        ListMethod::ResourceTemplates => page(router, router.resource_templates(), cursor, "resourceTemplates", |template| shape::template(template, revision)),
    }?;
    Ok(Reply::cached(with_generation(result, router, revision), cache(router, list)))
}

/// A 2026-07-28 list names the generation of the router that answered it in `_meta` (legacy
/// results carry no `_meta` of the server's own).
fn with_generation(mut result: Value, router: &Router, revision: crate::revision::Revision) -> Value {
    if revision.is_stateless()
        && let Value::Object(object) = &mut result
    {
        object.insert("_meta".into(), json!({META_GENERATION: router.generation()}));
    }
    result
}

/// The items a principal sees.
fn visible<T>(items: &[T], seen: impl Fn(&T) -> bool) -> Vec<&T> {
    items.iter().filter(|item| seen(item)).collect()
}

fn page<'a, T, S>(router: &Router, items: &'a [T], cursor: Option<&str>, field: &str, shaped: impl Fn(&'a T) -> S) -> Result<Value, McpError>
where
    T: Named,
    S: Serialize,
{
    let page = router.page(items, cursor)?;
    let mut result = Map::new();
    let items: Vec<S> = page.items.iter().map(shaped).collect();
    result.insert(field.into(), to_json(&items)?);
    if let Some(next) = page.next_cursor {
        result.insert("nextCursor".into(), json!(next));
    }
    Ok(Value::Object(result))
}

/// The cache hint of a list: what the plugins said (the shortest time, and `private` if any
/// plugin's list is), or not reusable when a plugin said nothing.
fn cache(router: &Router, list: ListMethod) -> CacheHint {
    let mut hint = CacheHint { ttl_ms: u64::MAX, scope: CacheScope::Public };
    for entry in router.served() {
        let own = said(list, &entry.catalog.cache).unwrap_or(LIST_DEFAULT_CACHE);
        hint.ttl_ms = hint.ttl_ms.min(own.ttl_ms);
        if own.scope == CacheScope::Private {
            hint.scope = CacheScope::Private;
        }
    }
    if hint.ttl_ms == u64::MAX {
        hint.ttl_ms = 0;
    }
    hint
}

/// What the plugin said of `list`.
fn said(list: ListMethod, hints: &ListCacheHints) -> Option<CacheHint> {
    match list {
        ListMethod::Tools => hints.tools,
        ListMethod::Prompts => hints.prompts,
        ListMethod::Resources => hints.resources,
        ListMethod::ResourceTemplates => hints.resource_templates,
    }
}
