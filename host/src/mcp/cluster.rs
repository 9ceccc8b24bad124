//! The messages replicas exchange through the store's feed: a list change or resource update one
//! replica's plugin announced, and a 2026-07-28 task's change, each tagged with the replica that
//! published it (a replica ignores its own).
//!
//! Publishing never holds the request that caused it: it is handed to a task of its own, and a
//! store that is down only costs the other replicas' listeners the message (they are told to
//! resync once the feed is back). A task's detail larger than `MAX_TASK_DETAIL` is published
//! without its result, error or questions (its listeners fetch them with `tasks/get`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::plugin::ListKind;
use crate::store::Store;

/// The largest task detail published whole.
const MAX_TASK_DETAIL: usize = 256 << 10;

/// What a replica heard another publish.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Heard {
    /// `plugin` announced that its `kind` list changed.
    List { plugin: String, kind: ListKind },
    /// The resource at this URI changed.
    Resource(String),
    /// A task of `owner` changed; its detail as `tasks/get` shows it.
    Task { id: String, owner: String, detail: Value },
}

fn kind_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Resources => "resources",
        ListKind::Prompts => "prompts",
    }
}

fn publish(store: Option<&Arc<Store>>, message: Value) {
    let Some(store) = store else { return };
    let (store, payload) = (Arc::clone(store), message.to_string());
    tokio::spawn(async move {
        if let Err(error) = store.publish(&payload).await {
            tracing::debug!(error = %error, "a change was not published to the other replicas");
        }
    });
}

/// Tells the other replicas that `plugin` announced a change of its `kind` list.
pub(super) fn publish_list(store: Option<&Arc<Store>>, from: &str, plugin: &str, kind: ListKind) {
    publish(store, json!({"from": from, "list": {"plugin": plugin, "kind": kind_name(kind)}}));
}

/// Tells the other replicas that the resource at `uri` changed.
pub(super) fn publish_resource(store: Option<&Arc<Store>>, from: &str, uri: &str) {
    publish(store, json!({"from": from, "resource": uri}));
}

/// Tells the other replicas that a task changed.
pub(super) fn publish_task(store: Option<&Arc<Store>>, from: &str, id: &str, owner: &str, detail: &Value) {
    if store.is_none() {
        return;
    }
    let mut detail = detail.clone();
    if detail.to_string().len() > MAX_TASK_DETAIL
        && let Value::Object(fields) = &mut detail
    {
        for large in ["result", "error", "inputRequests"] {
            fields.remove(large);
        }
    }
    publish(store, json!({"from": from, "task": {"id": id, "owner": owner, "detail": detail}}));
}

/// What `payload` says, unless this replica (`me`) published it or it is not a message.
pub(super) fn heard(payload: &str, me: &str) -> Option<Heard> {
    let message: Value = serde_json::from_str(payload).ok()?;
    if message.get("from").and_then(Value::as_str)? == me {
        return None;
    }
    if let Some(list) = message.get("list") {
        let plugin = list.get("plugin")?.as_str()?.to_owned();
        let kind = ListKind::ALL.into_iter().find(|k| Some(kind_name(*k)) == list.get("kind").and_then(Value::as_str))?;
        return Some(Heard::List { plugin, kind });
    }
    if let Some(uri) = message.get("resource") {
        return Some(Heard::Resource(uri.as_str()?.to_owned()));
    }
    let task = message.get("task")?;
    Some(Heard::Task { id: task.get("id")?.as_str()?.to_owned(), owner: task.get("owner")?.as_str()?.to_owned(), detail: task.get("detail")?.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_hears_the_others_and_not_itself() {
        let list = json!({"from": "r0", "list": {"plugin": "weather", "kind": "tools"}}).to_string();
        assert_eq!(heard(&list, "r1"), Some(Heard::List { plugin: "weather".to_owned(), kind: ListKind::Tools }));
        assert_eq!(heard(&list, "r0"), None, "its own");
        let resource = json!({"from": "r0", "resource": "file:///a"}).to_string();
        assert_eq!(heard(&resource, "r2"), Some(Heard::Resource("file:///a".to_owned())));
        let task = json!({"from": "r0", "task": {"id": "r0.x", "owner": "alice", "detail": {"status": "working"}}}).to_string();
        assert_eq!(heard(&task, "r1"), Some(Heard::Task { id: "r0.x".to_owned(), owner: "alice".to_owned(), detail: json!({"status": "working"}) }));
        for junk in ["", "{}", "[]", "{\"from\": \"r0\", \"list\": {\"plugin\": \"p\", \"kind\": \"files\"}}", "{\"list\": {}}"] {
            assert_eq!(heard(junk, "r1"), None, "{junk}");
        }
    }
}
