//! Protocol versions and eras: legacy `initialize` negotiation (2024-11-05 … 2025-11-25) and
//! the per-request `_meta` of 2026-07-28, with `server/discover` and its validation errors, and
//! the results that describe the server (`initialize`, `server/discover`).

use serde_json::{Map, Value, json};

use super::error::McpError;
use crate::revision::Revision;
use crate::router::Router;

/// `_meta` key carrying the protocol version of a modern request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the client capabilities of a modern request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key carrying the client info of a modern request (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key carrying the log level a modern request opts in to.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key carrying server info on modern results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The tasks extension's name (2026-07-28), in capabilities and `requiredCapabilities`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key relating a message to a task (2025-11-25).
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The revision a legacy `initialize` settles on: the client's when served, else the latest.
pub fn negotiate(requested: Option<&str>) -> Revision {
    requested.and_then(Revision::session).unwrap_or(Revision::LATEST_SESSION)
}

/// The names of `revisions`, for a reply that lists them.
pub fn names(revisions: &[Revision]) -> Vec<&'static str> {
    revisions.iter().map(|r| r.as_str()).collect()
}

/// Whether a request is modern-shaped: it carries the 2026-07-28 `_meta` protocol version.
pub fn is_modern(params: Option<&Map<String, Value>>) -> bool {
    meta(params).is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
}

/// The request's `_meta` object, if any.
pub fn meta(params: Option<&Map<String, Value>>) -> Option<&Map<String, Value>> {
    params.and_then(|p| p.get("_meta")).and_then(Value::as_object)
}

/// Validates a modern request's `_meta`: protocol version present and supported, client
/// capabilities present and an object. `clientInfo` is optional.
pub fn validate_modern(params: Option<&Map<String, Value>>) -> Result<Revision, McpError> {
    let meta =
        meta(params).ok_or_else(|| McpError::InvalidParams(format!("missing `_meta` with `{META_PROTOCOL_VERSION}` and `{META_CLIENT_CAPABILITIES}`")))?;
    let requested = match meta.get(META_PROTOCOL_VERSION) {
        Some(Value::String(v)) => v.as_str(),
        Some(_) => return Err(McpError::InvalidParams(format!("`_meta.{META_PROTOCOL_VERSION}` must be a string"))),
        None => return Err(McpError::InvalidParams(format!("missing `_meta.{META_PROTOCOL_VERSION}`"))),
    };
    let version = Revision::stateless(requested).ok_or_else(|| McpError::UnsupportedVersion { requested: requested.to_owned() })?;
    match meta.get(META_CLIENT_CAPABILITIES) {
        Some(Value::Object(_)) => Ok(version),
        Some(_) => Err(McpError::InvalidParams(format!("`_meta.{META_CLIENT_CAPABILITIES}` must be an object"))),
        None => Err(McpError::InvalidParams(format!("missing `_meta.{META_CLIENT_CAPABILITIES}`"))),
    }
}

/// The server's name and version.
#[derive(Debug, serde::Serialize)]
pub(super) struct ServerInfo {
    name: &'static str,
    title: &'static str,
    version: &'static str,
}

/// This server's.
pub(super) const SERVER_INFO: ServerInfo = ServerInfo { name: "paddock", title: "Paddock", version: env!("CARGO_PKG_VERSION") };

/// The server's name and version, as JSON.
pub(super) fn server_info() -> Value {
    json!(SERVER_INFO)
}

/// The result of a legacy `initialize` settled on `version`.
pub(super) fn initialize_result(router: &Router, version: Revision) -> Value {
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(router, Some(version)),
        "serverInfo": server_info(),
    });
    if let Some(instructions) = router.instructions() {
        result["instructions"] = json!(instructions);
    }
    result
}

/// The result of `server/discover`.
/// The `_meta` key of `server/discover` and list results that names the generation of the
/// router that answered.
pub const META_GENERATION: &str = "dev.paddock/generation";

pub(super) fn discover_result(router: &Router) -> Value {
    let mut result = json!({
        "supportedVersions": names(&Revision::STATELESS),
        "capabilities": capabilities(router, None),
        "_meta": {META_GENERATION: router.generation()},
    });
    if let Some(instructions) = router.instructions() {
        result["instructions"] = json!(instructions);
    }
    result
}

/// The capabilities of what is being served, in either era. Tools, resources and prompts are
/// always declared: their list methods always answer, and a plugin may announce a list change at
/// any time, which every session hears (`listChanged`), as it hears the updates of resources it
/// subscribes to (`subscribe`). Completions are declared when something can be completed.
/// Tasks: the experimental tasks of a 2025-11-25 session (`legacy_version`), or the tasks
/// extension on 2026-07-28 (`None`).
pub fn capabilities(router: &Router, legacy_version: Option<Revision>) -> Value {
    let mut capabilities = json!({
        "logging": {},
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
    });
    if !router.prompts().is_empty() || !router.resource_templates().is_empty() {
        capabilities["completions"] = json!({});
    }
    match legacy_version {
        Some(version) if version.has_experimental_tasks() => capabilities["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        Some(_) => {}
        None => capabilities["extensions"] = json!({TASKS_EXTENSION: {}}),
    }
    capabilities
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_supported_versions_and_offers_the_latest_otherwise() {
        for v in Revision::SESSIONS {
            assert_eq!(negotiate(Some(v.as_str())), v);
        }
        assert_eq!(negotiate(Some("1999-01-01")).as_str(), "2025-11-25");
        assert_eq!(negotiate(Some("2026-07-28")).as_str(), "2025-11-25");
        assert_eq!(negotiate(None).as_str(), "2025-11-25");
    }
}
