//! Telling clients about changes: a legacy session hears every list change and the updates of the
//! resources it subscribed to (`resources/subscribe`); a 2026-07-28 client hears what it asked
//! for on a `subscriptions/listen` request, acknowledged first and tagged with the request's id.
//!
//! Both follow the server's change feed without ever holding it up: notifications are queued
//! with `Outbound::notify` (shed and counted when the client reads too slowly), and a follower
//! that falls behind the feed is told that everything it follows may have changed.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::error::McpError;
use super::state::Change;
use crate::jsonrpc::{Id, notification_line};
use crate::plugin::ListKind;
use crate::router::Router;
use crate::router::template::MAX_URI_BYTES;

/// Resources one legacy session, or one listen request, may follow.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;
/// `subscriptions/listen` requests one channel may hold open at once.
pub const MAX_LISTENS: usize = 16;
/// `_meta` key tagging every notification of a listen request with the request's id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a follower wants to hear about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    lists: BTreeSet<ListKind>,
    resources: BTreeSet<String>,
    /// 2026-07-28 tasks whose changes are wanted (the tasks extension's `taskIds`).
    tasks: BTreeSet<String>,
}

impl Filter {
    /// A legacy session: every list change, and no resource until it subscribes.
    pub fn legacy() -> Filter {
        Filter { lists: ListKind::ALL.into_iter().collect(), ..Filter::default() }
    }

    /// The filter of a `subscriptions/listen` request. Resource URIs nothing serves are not
    /// honoured (and so left out of the acknowledgement); fields other than these are ignored.
    /// `taskIds` needs the tasks extension (`tasks_declared`); unknown task ids are honoured, as
    /// ids are unguessable and a task may be followed from its creation.
    pub fn listen(params: Option<&Map<String, Value>>, router: &Router, tasks_declared: bool) -> Result<Filter, McpError> {
        let Some(asked) = params.and_then(|p| p.get("notifications")).and_then(Value::as_object) else {
            return Err(McpError::InvalidParams("`notifications` must be an object saying what to listen for".to_owned()));
        };
        let mut filter = Filter::default();
        for (field, kind) in [("toolsListChanged", ListKind::Tools), ("resourcesListChanged", ListKind::Resources), ("promptsListChanged", ListKind::Prompts)] {
            match asked.get(field) {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => {
                    filter.lists.insert(kind);
                }
                Some(_) => return Err(McpError::InvalidParams(format!("`notifications.{field}` must be a boolean"))),
            }
        }
        match asked.get("resourceSubscriptions") {
            None => {}
            Some(Value::Array(uris)) => {
                if uris.len() > MAX_RESOURCE_SUBSCRIPTIONS {
                    return Err(McpError::InvalidParams(format!("at most {MAX_RESOURCE_SUBSCRIPTIONS} resource subscriptions per listen request")));
                }
                for uri in uris {
                    let Some(uri) = uri.as_str() else {
                        return Err(McpError::InvalidParams("`notifications.resourceSubscriptions` must be a list of URIs".to_owned()));
                    };
                    if router.resource_owner(uri).is_some() {
                        filter.resources.insert(uri.to_owned());
                    }
                }
            }
            Some(_) => return Err(McpError::InvalidParams("`notifications.resourceSubscriptions` must be a list of URIs".to_owned())),
        }
        match asked.get("taskIds") {
            None => {}
            Some(_) if !tasks_declared => return Err(super::task_calls::extension_missing()),
            Some(Value::Array(ids)) if ids.len() <= MAX_RESOURCE_SUBSCRIPTIONS && ids.iter().all(|id| id.as_str().is_some_and(|id| id.len() <= 128)) => {
                filter.tasks.extend(ids.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            Some(_) => {
                return Err(McpError::InvalidParams(format!("`notifications.taskIds` must be a list of at most {MAX_RESOURCE_SUBSCRIPTIONS} task ids")));
            }
        }
        Ok(filter)
    }

    /// Follows `uri` too (a legacy `resources/subscribe`).
    pub fn subscribe(&mut self, uri: &str, router: &Router) -> Result<(), McpError> {
        if uri.len() > MAX_URI_BYTES || router.resource_owner(uri).is_none() {
            return Err(McpError::UnknownResource { uri: uri.to_owned() });
        }
        if self.resources.len() >= MAX_RESOURCE_SUBSCRIPTIONS && !self.resources.contains(uri) {
            return Err(McpError::InvalidParams(format!("at most {MAX_RESOURCE_SUBSCRIPTIONS} resource subscriptions per session")));
        }
        self.resources.insert(uri.to_owned());
        Ok(())
    }

    /// Stops following `uri` (a legacy `resources/unsubscribe`; unknown URIs are fine).
    /// Keeps only the resources `keep` admits (what tool policy lets the listener see).
    pub fn retain_resources(&mut self, keep: impl Fn(&str) -> bool) {
        self.resources.retain(|uri| keep(uri));
    }

    pub fn unsubscribe(&mut self, uri: &str) {
        self.resources.remove(uri);
    }

    /// What the server agreed to, as the acknowledgement's `notifications`.
    pub fn honoured(&self) -> Value {
        let mut honoured = Map::new();
        for (field, kind) in [("toolsListChanged", ListKind::Tools), ("resourcesListChanged", ListKind::Resources), ("promptsListChanged", ListKind::Prompts)] {
            if self.lists.contains(&kind) {
                honoured.insert(field.into(), json!(true));
            }
        }
        if !self.resources.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(self.resources));
        }
        if !self.tasks.is_empty() {
            honoured.insert("taskIds".into(), json!(self.tasks));
        }
        Value::Object(honoured)
    }

    /// The notification `change` becomes for this follower, if it wants it. `tag` is the listen
    /// request's id (none on a legacy session).
    pub fn line_for(&self, change: &Change, tag: Option<&Id>) -> Option<String> {
        let mut params = match change {
            Change::Task { id, detail, .. } if self.tasks.contains(id.as_ref()) => match detail.as_ref() {
                Value::Object(task) => task.clone(),
                _ => return None,
            },
            Change::List(kind) if self.lists.contains(kind) => Map::new(),
            Change::Resource(uri) if self.resources.iter().any(|followed| covers(followed, uri)) => {
                let mut params = Map::new();
                params.insert("uri".into(), json!(uri.as_ref()));
                params
            }
            _ => return None,
        };
        let method = match change {
            Change::List(kind) => kind.notification(),
            Change::Resource(_) => "notifications/resources/updated",
            Change::Task { .. } => "notifications/tasks",
            Change::Resync => return None,
        };
        if let Some(tag) = tag {
            params.insert("_meta".into(), json!({META_SUBSCRIPTION_ID: tag.to_value()}));
        }
        Some(notification_line(method, Value::Object(params)))
    }

    /// What a follower that fell behind the feed is told: everything it follows may have changed.
    pub fn catch_up(&self, tag: Option<&Id>) -> Vec<String> {
        let lists = self.lists.iter().map(|kind| Change::List(*kind));
        let resources = self.resources.iter().map(|uri| Change::Resource(Arc::from(uri.as_str())));
        lists.chain(resources).filter_map(|change| self.line_for(&change, tag)).collect()
    }
}

/// Whether following `followed` covers an update of `updated`: the same URI, or one below it.
fn covers(followed: &str, updated: &str) -> bool {
    match updated.strip_prefix(followed) {
        Some("") => true,
        Some(rest) => followed.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

/// The acknowledgement a listen request gets before anything else.
pub fn acknowledgement(filter: &Filter, tag: &Id) -> String {
    notification_line("notifications/subscriptions/acknowledged", json!({"_meta": {META_SUBSCRIPTION_ID: tag.to_value()}, "notifications": filter.honoured()}))
}

/// The result that ends a listen request the server tears down (at the end of input).
pub fn closing_result(tag: &Id) -> Value {
    json!({"_meta": {META_SUBSCRIPTION_ID: tag.to_value()}})
}

/// What one receive from the change feed gives a follower: lines to queue, or the end.
pub fn lines_from(received: Result<Change, RecvError>, filter: &Filter, tag: Option<&Id>) -> Option<Vec<String>> {
    match received {
        Ok(Change::Resync) => Some(filter.catch_up(tag)),
        Ok(change) => Some(filter.line_for(&change, tag).into_iter().collect()),
        Err(RecvError::Lagged(missed)) => {
            tracing::warn!(missed, "a client fell behind the change feed; it is told that everything it follows may have changed");
            Some(filter.catch_up(tag))
        }
        Err(RecvError::Closed) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_followed_uri_covers_itself_and_what_lies_below_it() {
        assert!(covers("file:///a", "file:///a"));
        assert!(covers("file:///a", "file:///a/b"));
        assert!(covers("file:///a/", "file:///a/b"));
        assert!(!covers("file:///a", "file:///ab"));
        assert!(!covers("file:///a/b", "file:///a"));
    }
}
