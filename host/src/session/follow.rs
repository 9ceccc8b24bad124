//! What a channel hears of the server's changes: a legacy session follows every list change and
//! the resources it subscribed to, from `initialize` until its input ends; a 2026-07-28
//! `subscriptions/listen` request is a stream of its own, acknowledged first, tagged with the
//! request's id, until the client cancels it or its input ends. Neither ever holds up the
//! change feed: notifications are shed when the client reads too slowly.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{MAX_LISTENS, Running, Session};
use crate::mcp::{self, Filter, McpError, Reply, Watcher};
use crate::policy::ItemKind;

impl Session {
    /// A legacy session hears every list change and the updates of what it subscribed to, from
    /// `initialize` until its input ends. The feed holds the session weakly.
    pub(super) fn follow_changes(self: &Arc<Self>) {
        let mut changes = self.server.changes();
        let mut watcher = Watcher::new(&self.server, self.principal.clone());
        let session = Arc::downgrade(self);
        let ended = self.input_ended.clone();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    received = changes.recv() => received,
                    () = ended.cancelled() => return,
                };
                let Some(session) = session.upgrade() else { return };
                if let Ok(change) = &received
                    && !watcher.admits(&session.server, change)
                {
                    continue;
                }
                let filter = session.legacy.lock().unwrap_or_else(|e| e.into_inner()).followed.clone();
                let Some(lines) = mcp::lines_from(received, &filter, None) else { return };
                for line in lines {
                    session.out.notify(line);
                }
            }
        });
    }

    /// Serves a 2026-07-28 `subscriptions/listen`: the acknowledgement first, then each change
    /// the client asked for, tagged with the request's id, until the client cancels the request
    /// (no reply) or its input ends (the closing result).
    pub(super) async fn listen(self: Arc<Self>, running: Running, params: Option<Map<String, Value>>) {
        let Running { id, generation, scope, permit, .. } = running;
        let opened = match Arc::clone(&self.listens).try_acquire_owned() {
            Ok(listening) => {
                let tasks_declared = mcp::declares_extension(scope.context());
                Filter::listen(params.as_ref(), &scope.router, tasks_declared).map(|mut filter| {
                    let rules = &self.server.callers().access;
                    filter.retain_resources(|uri| mcp::sees(rules, &self.principal, ItemKind::Resource, uri));
                    (filter, listening)
                })
            }
            Err(_) => Err(McpError::Busy(format!("at most {MAX_LISTENS} listen requests per connection are open at once"))),
        };
        let _counted = crate::telemetry::metrics::held(|m| m.stream("listen"));
        let (filter, _listening) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                if let Some(entry) = self.finish(&id, generation) {
                    self.reply(&entry.dest, &id, scope.era, Err(error), Some(permit)).await;
                }
                return;
            }
        };
        // Following starts before the acknowledgement, so nothing after it is missed.
        let mut changes = self.server.changes();
        let mut watcher = Watcher::new(&self.server, self.principal.clone());
        let stream = self.related_out();
        let _ = stream.send(mcp::acknowledgement(&filter, &id)).await;
        loop {
            let received = tokio::select! {
                received = changes.recv() => received,
                () = scope.cx.cancelled() => return,
                () = self.input_ended.cancelled() => break,
            };
            if let Ok(change) = &received
                && !watcher.admits(&self.server, change)
            {
                continue;
            }
            let Some(lines) = mcp::lines_from(received, &filter, Some(&id)) else { break };
            for line in lines {
                stream.notify(line);
            }
        }
        if let Some(entry) = self.finish(&id, generation) {
            self.reply(&entry.dest, &id, scope.era, Ok(Reply::new(mcp::closing_result(&id))), Some(permit)).await;
        }
    }
}
