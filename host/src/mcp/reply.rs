//! `Reply`: a request's result on its way to the wire, and the one place it is finished for the
//! request's revision (shaped to what the revision defines, then given what every result of
//! that revision carries).

use serde::Serialize;
use serde_json::{Map, Value};

use super::Era;
use super::lifecycle::{META_SERVER_INFO, SERVER_INFO};
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
        match (era, &self.result) {
            // Written where it lies, with the envelope's fields added on the way out.
            (Era::Modern { .. }, Value::Object(object)) => jsonrpc::result_line(id, &Modern { object, cache: self.cache }),
            _ => jsonrpc::result_line(id, &self.result),
        }
    }
}

/// A 2026-07-28 result object with the envelope every result of that revision carries:
/// `resultType` (unless it has its own), the server's info in `_meta` (unless `_meta` is not an
/// object), and its cache hint. Keys come out in the order of the object's own.
struct Modern<'a> {
    object: &'a Map<String, Value>,
    cache: Option<CacheHint>,
}

/// One member of a `Modern` result.
enum Member<'a> {
    Own(&'a Value),
    Meta(Option<&'a Map<String, Value>>),
    Text(&'static str),
    Number(u64),
    Scope(crate::protocol::CacheScope),
}

impl Serialize for Modern<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let cached = |key: &str| self.cache.is_some() && (key == "ttlMs" || key == "cacheScope");
        let mut members: Vec<(&str, Member<'_>)> = Vec::with_capacity(self.object.len() + 4);
        for (key, value) in self.object {
            match (key.as_str(), value) {
                ("_meta", Value::Object(meta)) => members.push(("_meta", Member::Meta(Some(meta)))),
                (key, _) if cached(key) => {}
                (key, value) => members.push((key, Member::Own(value))),
            }
        }
        if !self.object.contains_key("_meta") {
            members.push(("_meta", Member::Meta(None)));
        }
        if !self.object.contains_key("resultType") {
            members.push(("resultType", Member::Text("complete")));
        }
        if let Some(cache) = self.cache {
            members.push(("ttlMs", Member::Number(cache.ttl_ms)));
            members.push(("cacheScope", Member::Scope(cache.scope)));
        }
        members.sort_by(|a, b| a.0.cmp(b.0));
        let mut map = serializer.serialize_map(Some(members.len()))?;
        for (key, member) in &members {
            match member {
                Member::Own(value) => map.serialize_entry(key, value)?,
                Member::Meta(own) => map.serialize_entry(key, &WithServerInfo(*own))?,
                Member::Text(text) => map.serialize_entry(key, text)?,
                Member::Number(number) => map.serialize_entry(key, number)?,
                Member::Scope(scope) => map.serialize_entry(key, scope)?,
            }
        }
        map.end()
    }
}

/// A result's `_meta` with the server's info added (replacing any the result carried).
struct WithServerInfo<'a>(Option<&'a Map<String, Value>>);

impl Serialize for WithServerInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let own = self.0.into_iter().flatten().filter(|(key, _)| key.as_str() != META_SERVER_INFO);
        let mut members: Vec<(&str, Option<&Value>)> = own.map(|(key, value)| (key.as_str(), Some(value))).collect();
        members.push((META_SERVER_INFO, None));
        members.sort_by(|a, b| a.0.cmp(b.0));
        let mut map = serializer.serialize_map(Some(members.len()))?;
        for (key, value) in members {
            match value {
                Some(value) => map.serialize_entry(key, value)?,
                None => map.serialize_entry(key, &SERVER_INFO)?,
            }
        }
        map.end()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CacheScope;
    use serde_json::json;

    /// The envelope as a `Value` is given it: the reference the in-place writing must match byte
    /// for byte.
    fn reference(id: &Id, mut result: Value, cache: Option<CacheHint>) -> String {
        if let Value::Object(object) = &mut result {
            object.entry("resultType").or_insert_with(|| json!("complete"));
            if let Value::Object(meta) = object.entry("_meta").or_insert_with(|| json!({})) {
                meta.insert(META_SERVER_INFO.into(), json!(SERVER_INFO));
            }
            if let Some(cache) = cache {
                object.insert("ttlMs".into(), json!(cache.ttl_ms));
                object.insert("cacheScope".into(), json!(cache.scope));
            }
        }
        jsonrpc::result_line(id, &result)
    }

    #[test]
    fn a_modern_result_is_written_with_its_envelope_exactly_as_the_value_would_be() {
        let id = Id::from_value(&json!(7)).expect("id");
        let era = Era::Modern { log_level: None };
        let hint = Some(CacheHint { ttl_ms: 5, scope: CacheScope::Private });
        let cases = [
            (json!({"content": [{"type": "text", "text": "hi"}]}), None),
            (json!({"content": [], "_meta": {"a": 1, "z": {"b": 2}}, "isError": true}), None),
            (json!({"content": [], "_meta": "not an object"}), None),
            (json!({"resultType": "incomplete", "_meta": {META_SERVER_INFO: "theirs"}, "Upper": 1}), None),
            (json!({"tools": [], "ttlMs": 1, "cacheScope": "public"}), hint),
            (json!({"tools": []}), hint),
        ];
        for (result, cache) in cases {
            let expected = reference(&id, result.clone(), cache);
            let reply = Reply { result, cache, approval_refused: false };
            assert_eq!(reply.into_line(&id, era), expected);
        }
        let legacy = Reply::new(json!({"content": []})).into_line(&id, Era::Legacy { version: Revision::V2025_11_25 });
        assert_eq!(legacy, r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#, "a legacy result gets no envelope");
    }
}
