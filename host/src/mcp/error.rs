//! `McpError`: why an MCP request failed, as the handlers say it, and the one table that turns
//! it into a JSON-RPC error for the request's revision.
//!
//! Handlers never pick codes: they return what went wrong, and `to_wire` decides how each
//! revision says it (an unknown resource is `-32002` on a session, `-32602` on 2026-07-28).
//! Every message that carries client input carries it shortened.

use serde_json::{Map, Value, json};

use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, shortened};
use crate::plugin::PluginError;
use crate::revision::Revision;
use crate::router::RouteError;

/// Legacy error code for an unknown resource (2025-11-25 and earlier).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP error: a client capability the request needs was not declared (2026-07-28 defines it;
/// legacy sessions get the same code and data, with a message that names the capability).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// Unsupported protocol version (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// JSON-RPC error code (implementation-defined server error, after HTTP 403) for a use the
/// credential lacks a scope for.
pub const INSUFFICIENT_SCOPE: i64 = -32003;
/// JSON-RPC error code (implementation-defined server error, after HTTP 429) for a use refused by
/// a rate limit; the data's `retryAfter` says in how many seconds to try again.
pub const RATE_LIMITED: i64 = -32029;
/// JSON-RPC error code (implementation-defined server error) for a request refused because the
/// server is busy: a channel's requests in flight, the memory budget, the task store.
pub const SERVER_BUSY: i64 = -32000;

/// Why a request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// The params are not what the method takes (or name something that does not exist).
    #[error("{0}")]
    InvalidParams(String),
    /// The method does not exist here (in this revision, or for this client).
    #[error("{0}")]
    MethodNotFound(String),
    /// The request breaks the lifecycle (not initialized, initialized twice, an id in use).
    #[error("{0}")]
    InvalidRequest(String),
    /// No plugin serves this URI.
    #[error("resource not found: `{}`", shortened(.uri))]
    UnknownResource { uri: String },
    /// A client capability the request needs was not declared.
    #[error("{message}")]
    MissingCapability { message: String, required: Map<String, Value> },
    /// A 2026-07-28 request asked for a revision this server does not serve.
    #[error("unsupported protocol version `{}`", shortened(.requested))]
    UnsupportedVersion { requested: String },
    /// A task that had ended and whose result was evicted.
    #[error("task `{}` had finished and its result was evicted to make room for other tasks; run the call again", shown_task(.id))]
    TaskEvicted { id: String },
    /// The principal's credential lacks scopes using this takes.
    #[error("this needs a token with the scope{} {}; ask the authorization server for a token that grants {}", if .scopes.len() == 1 { "" } else { "s" }, quoted(.scopes), if .scopes.len() == 1 { "it" } else { "them" })]
    InsufficientScope { scopes: Vec<String> },
    /// A rate limit refused the use.
    #[error("{}", rate_limited(*.limit, *.retry_after))]
    RateLimited { limit: crate::rate_limits::Limit, retry_after: std::time::Duration },
    /// The server has no room for this now; the client may retry.
    #[error("{0}")]
    Busy(String),
    /// The request could not be served (a plugin failed, the request was cancelled, a bug).
    #[error("{0}")]
    Internal(String),
    /// The error a task ended with, already in wire form, with the data relating it to the task.
    #[error("{}", .0.message)]
    Ended(ErrorObject),
}

impl McpError {
    /// The error as a request of `revision` is answered with it. `None`: the revision is not
    /// known yet (the request was refused before it was settled); no error that differs by
    /// revision arises then.
    pub fn to_wire(&self, revision: Option<Revision>) -> ErrorObject {
        let message = self.to_string();
        match self {
            McpError::InvalidParams(_) => ErrorObject::new(INVALID_PARAMS, message),
            McpError::MethodNotFound(_) => ErrorObject::new(METHOD_NOT_FOUND, message),
            McpError::InvalidRequest(_) => ErrorObject::new(INVALID_REQUEST, message),
            McpError::UnknownResource { uri } => {
                let code = if revision.is_some_and(Revision::is_stateless) { INVALID_PARAMS } else { RESOURCE_NOT_FOUND };
                ErrorObject::new(code, message).with_data(json!({"uri": shortened(uri)}))
            }
            McpError::MissingCapability { required, .. } => {
                ErrorObject::new(MISSING_REQUIRED_CLIENT_CAPABILITY, message).with_data(json!({"requiredCapabilities": required}))
            }
            McpError::UnsupportedVersion { requested } => ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, message)
                .with_data(json!({"supported": Revision::STATELESS.map(Revision::as_str), "requested": shortened(requested)})),
            McpError::TaskEvicted { id } => ErrorObject::new(INVALID_PARAMS, message).with_data(json!({"taskId": shown_task(id), "evicted": true})),
            McpError::InsufficientScope { scopes } => ErrorObject::new(INSUFFICIENT_SCOPE, message).with_data(json!({"requiredScopes": scopes})),
            McpError::RateLimited { limit, retry_after } => {
                ErrorObject::new(RATE_LIMITED, message).with_data(json!({"retryAfter": retry_after.as_secs(), "limit": limit_name(*limit)}))
            }
            McpError::Busy(_) => ErrorObject::new(SERVER_BUSY, message),
            McpError::Internal(_) => ErrorObject::new(INTERNAL_ERROR, message),
            McpError::Ended(error) => error.clone(),
        }
    }

    /// The kind of error, as one fixed word: what metrics and spans record (`error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::InvalidParams(_) => "invalid_params",
            McpError::MethodNotFound(_) => "method_not_found",
            McpError::InvalidRequest(_) => "invalid_request",
            McpError::UnknownResource { .. } => "resource_not_found",
            McpError::MissingCapability { .. } => "missing_capability",
            McpError::UnsupportedVersion { .. } => "unsupported_version",
            McpError::TaskEvicted { .. } => "task_evicted",
            McpError::InsufficientScope { .. } => "insufficient_scope",
            McpError::RateLimited { .. } => "rate_limited",
            McpError::Busy(_) => "busy",
            McpError::Internal(_) => "internal_error",
            McpError::Ended(_) => "task_failed",
        }
    }

    /// What a request that failed inside the host is answered with: nothing of the cause.
    pub fn internal() -> McpError {
        McpError::Internal("internal error".to_owned())
    }

    /// A request the client cancelled, where an answer is still owed.
    pub fn cancelled() -> McpError {
        McpError::Internal("the request was cancelled".to_owned())
    }

    /// An unknown method, named (shortened).
    pub fn no_method(method: &str) -> McpError {
        McpError::MethodNotFound(format!("method `{}` not found", shortened(method)))
    }

    /// A missing or mistyped string parameter.
    pub fn missing_str(key: &str) -> McpError {
        McpError::InvalidParams(format!("missing string parameter `{key}`"))
    }
}

impl From<RouteError> for McpError {
    /// A routing failure: unknown names and invalid params are the client's; a plugin's own
    /// failure is logged with the plugin named and answered as an internal error.
    fn from(error: RouteError) -> McpError {
        match error {
            RouteError::UnknownName { kind, name } => McpError::InvalidParams(format!("unknown {kind} `{}`", shortened(&name))),
            RouteError::UnknownResource { uri } => McpError::UnknownResource { uri },
            RouteError::InvalidCursor => McpError::InvalidParams("invalid cursor: list again from the first page".to_owned()),
            RouteError::Plugin { plugin, error } => match error {
                PluginError::NotFound(what) => McpError::InvalidParams(format!("not found: {}", shortened(&what))),
                PluginError::InvalidParams(why) => McpError::InvalidParams(format!("invalid params: {why}")),
                PluginError::InvalidInputResponse(why) => McpError::InvalidParams(why),
                other => {
                    tracing::warn!(%plugin, error = %crate::escape::Escaped(&other.to_string()), "plugin request failed");
                    McpError::Internal(format!("plugin `{plugin}` failed: {other}"))
                }
            },
        }
    }
}

fn quoted(scopes: &[String]) -> String {
    scopes.iter().map(|s| format!("`{}`", shortened(s))).collect::<Vec<_>>().join(", ")
}

fn limit_name(limit: crate::rate_limits::Limit) -> &'static str {
    match limit {
        crate::rate_limits::Limit::Tool => "tool",
        crate::rate_limits::Limit::Principal => "principal",
        crate::rate_limits::Limit::Plugin => "plugin",
    }
}

/// Words a model can act on: which limit, and when to try again.
fn rate_limited(limit: crate::rate_limits::Limit, retry_after: std::time::Duration) -> String {
    let whose = match limit {
        crate::rate_limits::Limit::Tool => "your calls to this tool",
        crate::rate_limits::Limit::Principal => "your requests",
        crate::rate_limits::Limit::Plugin => "this plugin (shared by every caller)",
    };
    let seconds = retry_after.as_secs();
    format!("rate limit reached for {whose}; wait {seconds} second{} before trying again", if seconds == 1 { "" } else { "s" })
}

/// A task id as errors show it.
fn shown_task(id: &str) -> String {
    id.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unknown_resource_differs_by_revision() {
        let unknown = McpError::UnknownResource { uri: "file:///x".into() };
        assert_eq!(unknown.to_wire(Some(Revision::V2025_11_25)).code, RESOURCE_NOT_FOUND);
        assert_eq!(unknown.to_wire(Some(Revision::V2026_07_28)).code, INVALID_PARAMS);
        assert_eq!(unknown.to_wire(Some(Revision::V2026_07_28)).data, Some(json!({"uri": "file:///x"})));
        for revision in Revision::SESSIONS.into_iter().chain(Revision::STATELESS) {
            assert_eq!(McpError::InvalidParams("x".into()).to_wire(Some(revision)).code, INVALID_PARAMS);
            assert_eq!(McpError::Busy("x".into()).to_wire(Some(revision)).code, SERVER_BUSY);
        }
    }

    #[test]
    fn client_text_in_a_message_is_shortened() {
        let long = "x".repeat(10_000);
        let wire = McpError::UnsupportedVersion { requested: long.clone() }.to_wire(None);
        assert!(wire.message.len() < 400, "{}", wire.message.len());
        assert_eq!(wire.code, UNSUPPORTED_PROTOCOL_VERSION);
        let wire = McpError::from(RouteError::UnknownResource { uri: long }).to_wire(None);
        assert!(wire.message.len() < 400);
    }
}
