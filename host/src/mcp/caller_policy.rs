//! Caller policy where requests use things: tool policy (`policy::AccessRules`) decided for the
//! request's principal on every use and every list, and rate limits charged before a plugin runs.
//!
//! An item the principal may not use is answered with the very error an item that does not
//! exist gets (`Target::unknown`, the router's unknown-name errors), after the same lookups, and
//! is left out of lists, list-change notifications and resource updates.

use std::hash::{Hash, Hasher};

use super::error::McpError;
use super::request::Target;
use super::scope::Scope;
use crate::identity::Principal;
use crate::plugin::ListKind;
use crate::policy::{AccessDecision, AccessRules, Approval, ItemKind};
use crate::protocol::{CompletionTarget, Tool};
use crate::router::{ItemKind as RouteKind, RouteError, Router};

/// Whether a tool's annotations say it is destructive.
fn destructive(tool: &Tool) -> bool {
    tool.annotations.as_ref().and_then(|a| a.destructive_hint).unwrap_or(false)
}

/// What `target` needs before it runs for the scope's principal: the approval of a tool call.
///
/// # Errors
/// The target is hidden from the principal (the error of a missing target), or needs scopes
/// the principal's credential lacks.
pub(super) fn admit(scope: &Scope, target: &Target) -> Result<Approval, McpError> {
    let rules = &scope.state.callers.access;
    if rules.is_open() {
        return Ok(Approval::Auto);
    }
    let principal = scope.client.principal();
    let decision = match target {
        Target::Tool { name, .. } => {
            let destructive = scope.router.tool(name).is_some_and(|(tool, _)| destructive(tool));
            rules.decide(principal, ItemKind::Tool, name, destructive)
        }
        Target::Prompt { name, .. } => rules.decide(principal, ItemKind::Prompt, name, false),
        Target::Read { uri } => rules.decide(principal, ItemKind::Resource, uri, false),
    };
    settle(decision, || target.unknown(), principal, target.name())
}

/// Whether a `completion/complete` may be served for the scope's principal.
///
/// # Errors
/// As `admit`, with the router's error for an unknown prompt or template.
pub(super) fn admit_completion(scope: &Scope, target: &CompletionTarget) -> Result<(), McpError> {
    let rules = &scope.state.callers.access;
    if rules.is_open() {
        return Ok(());
    }
    let principal = scope.client.principal();
    let (decision, unknown) = match target {
        CompletionTarget::Prompt(name) => {
            (rules.decide(principal, ItemKind::Prompt, name, false), RouteError::UnknownName { kind: RouteKind::Prompt, name: name.clone() })
        }
        CompletionTarget::ResourceTemplate(uri) => {
            (rules.decide(principal, ItemKind::Resource, uri, false), RouteError::UnknownName { kind: RouteKind::ResourceTemplate, name: uri.clone() })
        }
    };
    let name = match target {
        CompletionTarget::Prompt(name) | CompletionTarget::ResourceTemplate(name) => name.as_str(),
    };
    settle(decision, || McpError::from(unknown), principal, name).map(|_| ())
}

/// Whether the scope's principal may follow the resource at `uri` (answered like an unknown
/// resource when not).
pub(super) fn admit_resource(scope: &Scope, uri: &str) -> Result<(), McpError> {
    let rules = &scope.state.callers.access;
    if rules.is_open() || sees(rules, scope.client.principal(), ItemKind::Resource, uri) {
        Ok(())
    } else {
        Err(McpError::UnknownResource { uri: uri.to_owned() })
    }
}

fn settle(decision: AccessDecision, unknown: impl FnOnce() -> McpError, principal: &Principal, name: &str) -> Result<Approval, McpError> {
    match decision {
        AccessDecision::Usable(approval) => Ok(approval),
        AccessDecision::Hidden => {
            tracing::info!(%principal, name = %crate::escape::Escaped(&crate::jsonrpc::shortened(name)), "refused by tool policy (answered as unknown)");
            Err(unknown())
        }
        AccessDecision::NeedsScopes(scopes) => {
            tracing::info!(%principal, name = %crate::escape::Escaped(&crate::jsonrpc::shortened(name)), ?scopes, "refused: the credential lacks a scope");
            Err(McpError::InsufficientScope { scopes })
        }
    }
}

/// Whether `principal` sees the item (lists and notifications).
pub fn sees(rules: &AccessRules, principal: &Principal, kind: ItemKind, name: &str) -> bool {
    rules.is_open() || rules.decide(principal, kind, name, false).visible()
}

/// Charges one use of `target` to the rate limits.
///
/// # Errors
/// A limit refused it; the error says when to retry.
pub(super) async fn charge(scope: &Scope, target: &Target) -> Result<(), McpError> {
    let rates = &scope.state.callers.rates;
    if !rates.is_active() {
        return Ok(());
    }
    let Some(plugin) = target.owner(&scope.router) else { return Ok(()) };
    let tool = match target {
        Target::Tool { name, .. } => Some(name.as_str()),
        _ => None,
    };
    charge_use(scope, tool, &plugin).await
}

/// Charges one completion of a prompt or template served by `plugin`.
pub(super) async fn charge_plugin(scope: &Scope, plugin: Option<&str>) -> Result<(), McpError> {
    match plugin {
        Some(plugin) if scope.state.callers.rates.is_active() => charge_use(scope, None, plugin).await,
        _ => Ok(()),
    }
}

/// Charges one use: to the buckets every replica shares when there is a store, else (or while
/// the store is out of reach) to this replica's own.
async fn charge_use(scope: &Scope, tool: Option<&str>, plugin: &str) -> Result<(), McpError> {
    let rates = &scope.state.callers.rates;
    let principal = scope.client.principal();
    let result = match scope.state.store() {
        Some(store) => {
            let buckets = rates.buckets(principal, tool, plugin);
            let shared: Vec<crate::store::Bucket> = buckets.iter().map(|(_, bucket)| bucket.clone()).collect();
            match store.charge(&shared).await {
                Ok(crate::store::Charged::Admitted) => rates.settle(principal, tool, plugin, Ok(())),
                Ok(crate::store::Charged::Refused { index, retry_after }) => {
                    let limit = buckets.get(index).map_or(crate::rate_limits::Limit::Principal, |(limit, _)| *limit);
                    let retry_after = std::time::Duration::from_secs(retry_after.as_secs_f64().ceil().max(1.0) as u64);
                    rates.settle(principal, tool, plugin, Err(crate::rate_limits::Limited { limit, retry_after }))
                }
                // The store is out of reach (logged as it went): this replica's own buckets hold.
                Err(_) => rates.charge(principal, tool, plugin),
            }
        }
        None => rates.charge(principal, tool, plugin),
    };
    result.map_err(|limited| McpError::RateLimited { limit: limited.limit, retry_after: limited.retry_after })
}

/// What `principal` sees of the `kind` list in `router`, as one number: equal before and after
/// a change exactly when nothing the principal sees changed (with high probability). `None`
/// when the policy hides nothing, so every change is seen.
pub fn view_of(rules: &AccessRules, principal: &Principal, router: &Router, kind: ListKind) -> Option<u64> {
    if rules.is_open() {
        return None;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut add = |kind: ItemKind, name: &str, item: &dyn erased::Json| {
        if sees(rules, principal, kind, name) {
            name.hash(&mut hasher);
            item.json().hash(&mut hasher);
        }
    };
    match kind {
        ListKind::Tools => router.tools().iter().for_each(|t| add(ItemKind::Tool, &t.name, t)),
        ListKind::Prompts => router.prompts().iter().for_each(|p| add(ItemKind::Prompt, &p.name, p)),
        ListKind::Resources => {
            router.resources().iter().for_each(|r| add(ItemKind::Resource, &r.uri, r));
            router.resource_templates().iter().for_each(|t| add(ItemKind::Resource, &t.uri_template, t));
        }
    }
    Some(hasher.finish())
}

mod erased {
    /// An item's definition as JSON text, whatever its type.
    pub(super) trait Json {
        fn json(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}

/// What of the server's change feed reaches one principal's channel: a task's changes only its
/// owner; a resource update only a principal who sees the resource; a list change only when the
/// list as the principal sees it changed (so a change to what it may not see says nothing).
#[derive(Debug)]
pub struct Watcher {
    principal: Principal,
    views: [Option<u64>; 3],
}

impl Watcher {
    /// A watcher of `principal`, who sees now what `state`'s router serves.
    pub fn new(state: &super::ServerState, principal: Principal) -> Watcher {
        let router = state.router();
        let rules = &state.callers.access;
        let views = ListKind::ALL.map(|kind| view_of(rules, &principal, &router, kind));
        Watcher { principal, views }
    }

    /// Whether `change` reaches the principal (a list change updates what it has seen).
    pub fn admits(&mut self, state: &super::ServerState, change: &super::Change) -> bool {
        let rules = &state.callers.access;
        match change {
            super::Change::Task { owner, .. } => owner.as_ref() == self.principal.id(),
            super::Change::Resync => true,
            super::Change::Resource(uri) => sees(rules, &self.principal, ItemKind::Resource, uri),
            super::Change::List(kind) => {
                if rules.is_open() {
                    return true;
                }
                let index = ListKind::ALL.iter().position(|k| k == kind).unwrap_or(0);
                let now = view_of(rules, &self.principal, &state.router(), *kind);
                std::mem::replace(&mut self.views[index], now) != now
            }
        }
    }
}
