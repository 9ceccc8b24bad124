//! MCP methods of a session: lists with pagination, calls routed to plugins, the shape of each
//! result per era, and the mapping from routing and plugin errors to JSON-RPC errors.

use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::Era;
use super::lifecycle::{self, META_SERVER_INFO};
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, notification_line, shortened};
use crate::plugin::{CallContext, CallEvent, LogLevel, PluginError};
use crate::protocol::{CacheHint, CacheScope, CallToolResult, CompletionTarget};
use crate::revision::Revision;
use crate::router::{Named, RouteError, Router};

/// Legacy error code for an unknown resource (2025-11-25 and earlier).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A list a plugin gave no cache hint for may not be reused: it can change at any time.
const LIST_DEFAULT_CACHE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Public };
/// `server/discover` describes what is served; it changes when the plugins' lists do.
const DISCOVER_CACHE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Public };

/// Whether a method reaches a plugin (and so runs as its own task).
pub(super) fn runs_in_plugin(method: &str) -> bool {
    needs_input_model(method) || matches!(method, "completion/complete" | "tasks/result")
}

/// Whether a method's plugin call may end with `input-required`.
pub(super) fn needs_input_model(method: &str) -> bool {
    matches!(method, "tools/call" | "resources/read" | "prompts/get")
}

/// The server's name and version.
fn server_info() -> Value {
    json!({"name": "paddock", "title": "Paddock", "version": env!("CARGO_PKG_VERSION")})
}

pub(super) fn initialize_result(router: &Router, version: Revision) -> Value {
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": lifecycle::capabilities(router, Some(version)),
        "serverInfo": server_info(),
    });
    if let Some(instructions) = router.instructions() {
        result["instructions"] = json!(instructions);
    }
    result
}

pub(super) fn discover_result(router: &Router) -> Value {
    let mut result = json!({"supportedVersions": lifecycle::names(&Revision::STATELESS), "capabilities": lifecycle::capabilities(router, None)});
    if let Some(instructions) = router.instructions() {
        result["instructions"] = json!(instructions);
    }
    result
}

/// Adds what every result of the request's era carries: for 2026-07-28, `resultType` (unless the
/// result has its own), server info in `_meta`, and the cache hint of a cacheable result.
pub(super) fn decorate(mut result: Value, era: Era, cache: Option<CacheHint>) -> Value {
    if let (Era::Modern { .. }, Value::Object(object)) = (era, &mut result) {
        object.entry("resultType").or_insert_with(|| json!("complete"));
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(META_SERVER_INFO.into(), server_info());
        }
        if let Some(cache) = cache {
            object.insert("ttlMs".into(), json!(cache.ttl_ms));
            object.insert("cacheScope".into(), json!(cache.scope));
        }
    }
    result
}

/// The cache hint of a list or discovery result: what the plugins said (the shortest time, and
/// `private` if any plugin's list is), or not reusable when a plugin said nothing.
pub(super) fn list_cache(router: &Router, method: &str) -> Option<CacheHint> {
    use crate::plugin::ListCacheHints;
    let pick: fn(&ListCacheHints) -> Option<CacheHint> = match method {
        "tools/list" => |c| c.tools,
        "prompts/list" => |c| c.prompts,
        "resources/list" => |c| c.resources,
        "resources/templates/list" => |c| c.resource_templates,
        "server/discover" => return Some(DISCOVER_CACHE),
        _ => return None,
    };
    let mut hint = CacheHint { ttl_ms: u64::MAX, scope: CacheScope::Public };
    for entry in router.served() {
        let own = pick(&entry.catalog.cache).unwrap_or(LIST_DEFAULT_CACHE);
        hint.ttl_ms = hint.ttl_ms.min(own.ttl_ms);
        if own.scope == CacheScope::Private {
            hint.scope = CacheScope::Private;
        }
    }
    if hint.ttl_ms == u64::MAX {
        hint.ttl_ms = 0;
    }
    Some(hint)
}

pub(super) fn serve_list(router: &Router, method: &str, params: Option<&Map<String, Value>>, era: Era) -> Result<Value, ErrorObject> {
    let cursor = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => None,
        Some(Value::String(cursor)) => Some(cursor.as_str()),
        Some(_) => return Err(ErrorObject::new(INVALID_PARAMS, "`cursor` must be a string")),
    };
    match method {
        "tools/list" => page(router, router.tools(), cursor, "tools", era),
        "prompts/list" => page(router, router.prompts(), cursor, "prompts", era),
        "resources/list" => page(router, router.resources(), cursor, "resources", era),
        "resources/templates/list" => page(router, router.resource_templates(), cursor, "resourceTemplates", era),
        _ => Err(ErrorObject::new(METHOD_NOT_FOUND, format!("method `{}` not found", shortened(method)))),
    }
}

fn page<T: Named + Serialize>(router: &Router, items: &[T], cursor: Option<&str>, field: &str, era: Era) -> Result<Value, ErrorObject> {
    let page = router.page(items, cursor).map_err(|e| route_error(e, era))?;
    let mut result = Map::new();
    result.insert(field.into(), to_json(page.items)?);
    if let Some(next) = page.next_cursor {
        result.insert("nextCursor".into(), json!(next));
    }
    Ok(Value::Object(result))
}

/// `completion/complete`, the plugin method that never needs input.
pub(super) async fn serve_completion(
    router: &Router,
    method: &str,
    params: Option<&Map<String, Value>>,
    era: Era,
    cx: &CallContext,
) -> Result<Value, ErrorObject> {
    match method {
        "completion/complete" => {
            let reference = params.and_then(|p| p.get("ref")).and_then(Value::as_object).ok_or_else(|| ErrorObject::new(INVALID_PARAMS, "missing `ref`"))?;
            let target = match reference.get("type").and_then(Value::as_str) {
                Some("ref/prompt") => CompletionTarget::Prompt(required_str(Some(reference), "name")?.to_owned()),
                Some("ref/resource") => CompletionTarget::ResourceTemplate(required_str(Some(reference), "uri")?.to_owned()),
                _ => return Err(ErrorObject::new(INVALID_PARAMS, "`ref.type` must be `ref/prompt` or `ref/resource`")),
            };
            let argument =
                params.and_then(|p| p.get("argument")).and_then(Value::as_object).ok_or_else(|| ErrorObject::new(INVALID_PARAMS, "missing `argument`"))?;
            let arg_name = required_str(Some(argument), "name")?;
            let arg_value = argument.get("value").and_then(Value::as_str).unwrap_or_default();
            let context = params
                .and_then(|p| p.get("context"))
                .and_then(|c| c.get("arguments"))
                .and_then(Value::as_object)
                .map(|args| args.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
                .unwrap_or_default();
            let completion = router.complete(&target, (arg_name, arg_value), context, cx).await.map_err(|e| route_error(e, era))?;
            Ok(json!({"completion": to_json(&completion)?}))
        }
        _ => Err(ErrorObject::new(METHOD_NOT_FOUND, format!("method `{}` not found", shortened(method)))),
    }
}

pub(super) fn required_str<'a>(params: Option<&'a Map<String, Value>>, key: &str) -> Result<&'a str, ErrorObject> {
    params.and_then(|p| p.get(key)).and_then(Value::as_str).ok_or_else(|| ErrorObject::new(INVALID_PARAMS, format!("missing string parameter `{key}`")))
}

pub(super) fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|err| {
        tracing::error!(error = %err, "cannot serialize a result");
        ErrorObject::new(INTERNAL_ERROR, "internal error")
    })
}

/// A tool's result as JSON. The text and data of its blocks move into the value instead of
/// being copied: they are nearly all of a large result.
pub(super) fn call_result_json(mut result: CallToolResult) -> Result<Value, ErrorObject> {
    let bodies: Vec<Option<(&'static str, String)>> =
        result.content.iter_mut().map(|block| block.body_mut().map(|(field, body)| (field, std::mem::take(body)))).collect();
    let mut value = to_json(&result)?;
    if let Some(Value::Array(blocks)) = value.get_mut("content") {
        for (block, body) in blocks.iter_mut().zip(bodies) {
            if let (Value::Object(block), Some((field, body))) = (block, body) {
                block.insert(field.to_owned(), Value::String(body));
            }
        }
    }
    Ok(value)
}

pub(super) fn route_error(error: RouteError, era: Era) -> ErrorObject {
    match error {
        RouteError::UnknownName { kind, name } => ErrorObject::new(INVALID_PARAMS, format!("unknown {kind} `{}`", shortened(&name))),
        RouteError::UnknownResource { uri } => {
            let code = if matches!(era, Era::Modern { .. }) { INVALID_PARAMS } else { RESOURCE_NOT_FOUND };
            ErrorObject::new(code, format!("resource not found: `{}`", shortened(&uri))).with_data(json!({"uri": shortened(&uri)}))
        }
        RouteError::InvalidCursor => ErrorObject::new(INVALID_PARAMS, "invalid cursor: list again from the first page"),
        RouteError::Plugin { plugin, error } => match error {
            PluginError::NotFound(what) => ErrorObject::new(INVALID_PARAMS, format!("not found: {}", shortened(&what))),
            PluginError::InvalidParams(why) => ErrorObject::new(INVALID_PARAMS, format!("invalid params: {why}")),
            PluginError::InvalidInputResponse(why) => ErrorObject::new(INVALID_PARAMS, why),
            other => {
                tracing::warn!(%plugin, error = %crate::escape::Escaped(&other.to_string()), "plugin request failed");
                ErrorObject::new(INTERNAL_ERROR, format!("plugin `{plugin}` failed: {other}"))
            }
        },
    }
}

/// Turns a request's `CallEvent`s into the notifications its client asked for: progress only
/// with a progress token and only increasing; logs only at or above the requested level.
pub(super) struct Notifier {
    progress_token: Option<Value>,
    last_progress: Mutex<Option<f64>>,
    log_level: Option<LogLevel>,
}

impl Notifier {
    pub(super) fn new(params: Option<&Map<String, Value>>, era: Era, legacy_level: LogLevel) -> Notifier {
        let progress_token = lifecycle::meta(params).and_then(|m| m.get("progressToken")).filter(|t| t.is_string() || t.is_i64() || t.is_u64()).cloned();
        let log_level = match era {
            Era::Legacy { .. } => Some(legacy_level),
            Era::Modern { log_level } => log_level,
        };
        Notifier { progress_token, last_progress: Mutex::new(None), log_level }
    }

    pub(super) fn line_for(&self, event: CallEvent) -> Option<String> {
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
