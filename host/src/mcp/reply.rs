//! `Reply`: a request's result on its way to the wire, and the one place it is finished for the
//! request's revision (shaped to what the revision defines, then given what every result of
//! that revision carries).

use serde::Serialize;
use serde_json::{Value, json};

use super::Era;
use super::lifecycle::{META_SERVER_INFO, server_info};
use super::shape;
use crate::jsonrpc::{self, Id};
use crate::protocol::{CacheHint, CallToolResult};
use crate::revision::Revision;

/// A request's result, before it is finished for its revision.
#[derive(Debug)]
pub struct Reply {
    pub(crate) result: Value,
    /// The cache hint a 2026-07-28 result carries (`ttlMs`, `cacheScope`).
    pub(crate) cache: Option<CacheHint>,
    /// The call did not run because its approval was refused (what the audit trail records).
    pub(crate) approval_refused: bool,
}

impl Reply {
    /// A result that carries no cache hint.
    pub fn new(result: Value) -> Reply {
        Reply { result, cache: None, approval_refused: false }
    }

    /// A result that may be reused as `cache` says.
    pub fn cached(result: Value, cache: CacheHint) -> Reply {
        Reply { result, cache: Some(cache), approval_refused: false }
    }

    /// The response line answering `id`. The result was shaped for its revision when it was
    /// written (`shape`); a 2026-07-28 result is given here the envelope every result of that
    /// revision carries: `resultType` (unless it has its own), server info in `_meta`, and its
    /// cache hint.
    pub fn into_line(self, id: &Id, era: Era) -> String {
        let Reply { mut result, cache, .. } = self;
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
        jsonrpc::result_line(id, &result)
    }
}

pub(super) fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Value, super::McpError> {
    serde_json::to_value(value).map_err(|err| {
        tracing::error!(error = %err, "cannot serialize a result");
        super::McpError::internal()
    })
}

/// A tool's result as JSON for `revision`. The text and data of its blocks move into the value
/// instead of being copied: they are nearly all of a large result.
pub(crate) fn call_result_json(result: CallToolResult, revision: Revision) -> Result<Value, super::McpError> {
    let mut result = shape::call_result(result, revision);
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
