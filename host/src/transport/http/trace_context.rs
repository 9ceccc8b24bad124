//! W3C trace context from HTTP headers: a request whose `params._meta` carries no
//! `traceparent` continues the one in its HTTP headers (`traceparent`, `tracestate`,
//! `baggage`), so a client or gateway that traces at the HTTP layer joins the same trace. The
//! context in `_meta` wins when both are sent; what is carried is checked where it is read.

use axum::http::HeaderMap;
use serde_json::{Map, Value};

/// The trace headers, in the order they are carried.
const TRACE_HEADERS: [&str; 3] = ["traceparent", "tracestate", "baggage"];
/// The longest header value carried into `_meta` (the W3C limits are 55, 512 and 8192 bytes).
const MAX_VALUE: usize = 8192;

/// Copies the request's trace headers into `params._meta` of `message` (a request, or each
/// request of a batch) where `_meta` has no `traceparent`.
pub(super) fn carry(headers: &HeaderMap, message: &mut Value) {
    let Some(traceparent) = headers.get(TRACE_HEADERS[0]) else { return };
    if traceparent.len() > MAX_VALUE {
        return;
    }
    let carried: Vec<(&str, String)> = TRACE_HEADERS
        .iter()
        .filter_map(|name| {
            let value = headers.get(*name)?;
            (value.len() <= MAX_VALUE).then(|| value.to_str().ok().map(|v| (*name, v.trim().to_owned())))?
        })
        .collect();
    match message {
        Value::Array(batch) => batch.iter_mut().for_each(|member| into_meta(member, &carried)),
        member => into_meta(member, &carried),
    }
}

fn into_meta(message: &mut Value, carried: &[(&str, String)]) {
    let Some(message) = message.as_object_mut() else { return };
    if !message.contains_key("method") || !message.contains_key("id") {
        return;
    }
    let params = message.entry("params").or_insert_with(|| Value::Object(Map::new()));
    let Some(params) = params.as_object_mut() else { return };
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else { return };
    if meta.contains_key("traceparent") {
        return;
    }
    for (name, value) in carried {
        meta.insert((*name).to_owned(), Value::String(value.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().expect("header"));
        }
        map
    }

    #[test]
    fn headers_fill_a_meta_without_a_traceparent_and_never_override_one() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let sent = headers(&[("traceparent", parent), ("tracestate", "a=b")]);
        let mut bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}});
        carry(&sent, &mut bare);
        assert_eq!(bare["params"]["_meta"], json!({"traceparent": parent, "tracestate": "a=b"}));
        let mut own = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"traceparent": "mine"}}});
        carry(&sent, &mut own);
        assert_eq!(own["params"]["_meta"], json!({"traceparent": "mine"}), "_meta's own context wins");
        let mut notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        carry(&sent, &mut notification);
        assert!(notification.get("params").is_none(), "only requests are given a context");
        let mut untouched = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
        carry(&HeaderMap::new(), &mut untouched);
        assert!(untouched.get("params").is_none());
    }
}
