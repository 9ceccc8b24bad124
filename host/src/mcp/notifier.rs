//! What a running request tells its client: its `CallEvent`s become progress and log
//! notifications as the client asked for them, and the plugin's change announcements go to the
//! server (they are about the plugin, not the request).

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use super::Era;
use super::scope::Client;
use super::state::ServerState;
use crate::jsonrpc::notification_line;
use crate::plugin::{CallContext, CallEvent, LogLevel};

/// Hands one event of a request to where it goes: a change to the server (even when the request
/// was cancelled), a progress or log notification to the request's client (unless cancelled).
pub fn forward(state: &Arc<ServerState>, client: &dyn Client, notifier: &Notifier, cx: &CallContext, event: CallEvent) {
    match event {
        CallEvent::ListChanged { plugin, kind } => return state.list_changed(&plugin, kind),
        CallEvent::ResourceUpdated { plugin, uri } => return state.resource_updated(&plugin, &uri),
        _ => {}
    }
    if cx.is_cancelled() {
        return;
    }
    if let Some(line) = notifier.line_for(event) {
        client.notify_related(line);
    }
}

/// Turns a request's `CallEvent`s into the notifications its client asked for: progress only
/// with a progress token and only increasing; logs only at or above the requested level.
pub struct Notifier {
    progress_token: Option<Value>,
    last_progress: Mutex<Option<f64>>,
    log_level: Option<LogLevel>,
}

impl Notifier {
    /// `meta` is the request's `_meta`.
    pub fn new(meta: Option<&Map<String, Value>>, era: Era, legacy_level: LogLevel) -> Notifier {
        let progress_token = meta.and_then(|m| m.get("progressToken")).filter(|t| t.is_string() || t.is_i64() || t.is_u64()).cloned();
        let log_level = match era {
            Era::Legacy { .. } => Some(legacy_level),
            Era::Modern { log_level } => log_level,
        };
        Notifier { progress_token, last_progress: Mutex::new(None), log_level }
    }

    pub fn line_for(&self, event: CallEvent) -> Option<String> {
        match event {
            CallEvent::Progress { progress, total, message } => {
                let token = self.progress_token.as_ref()?;
                let mut last = self.last_progress.lock().unwrap_or_else(|e| e.into_inner());
                if !progress.is_finite() || last.is_some_and(|l| progress <= l) {
                    return None;
                }
                *last = Some(progress);
                let mut params = json!({"progressToken": token, "progress": progress});
                if let Some(total) = total.filter(|t| t.is_finite()) {
                    params["total"] = json!(total);
                }
                if let Some(message) = message {
                    params["message"] = json!(message);
                }
                Some(notification_line("notifications/progress", params))
            }
            CallEvent::Log { level, logger, data } => {
                if level < self.log_level? {
                    return None;
                }
                let data = serde_json::from_str::<Value>(&data).unwrap_or(Value::String(data));
                let mut params = json!({"level": level.as_str(), "data": data});
                if let Some(logger) = logger {
                    params["logger"] = json!(logger);
                }
                Some(notification_line("notifications/message", params))
            }
            // Changes go to the server, not to the request's client.
            CallEvent::ListChanged { .. } | CallEvent::ResourceUpdated { .. } => None,
        }
    }
}
