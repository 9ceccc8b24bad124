//! The 2026-07-28 request headers, checked against the body they travel with.
//!
//! `MCP-Protocol-Version` must equal `_meta`'s protocol version, `Mcp-Method` the method,
//! `Mcp-Name` the name, URI or task id the method addresses, and each `Mcp-Param-<Name>` the
//! argument whose schema property carries `"x-mcp-header": "<Name>"`. A value may be written as
//! `=?base64?<UTF-8 in base64>?=`. Names are case-insensitive, values exact after surrounding
//! whitespace. Any mismatch, a header sent twice, or a header missing where the body has its
//! value, is −32020.
//!
//! A request whose `_meta` lacks the protocol version or the client capabilities is left to the
//! session, which refuses it with −32602 first.

use axum::http::HeaderMap;
use base64::Engine;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorObject, shortened};
use crate::mcp::Method;
use crate::session::{HeaderParam, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, ServerState};

/// MCP error: a request header does not match its body (HTTP 400).
pub(super) const HEADER_MISMATCH: i64 = -32020;

pub(super) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";

/// Checks the headers of one 2026-07-28 request (`message` is its JSON-RPC object).
pub(super) fn check(headers: &HeaderMap, message: &Map<String, Value>, server: &ServerState) -> Result<(), ErrorObject> {
    let Some(method) = message.get("method").and_then(Value::as_str) else { return Ok(()) };
    let params = message.get("params").and_then(Value::as_object);
    let Some(meta) = params.and_then(|p| p.get("_meta")).and_then(Value::as_object) else { return Ok(()) };
    let (Some(version), true) = (meta.get(META_PROTOCOL_VERSION).and_then(Value::as_str), meta.contains_key(META_CLIENT_CAPABILITIES)) else {
        return Ok(());
    };
    match header(headers, PROTOCOL_VERSION)? {
        Some(sent) if sent == version => {}
        Some(sent) => return Err(mismatch(format!("`MCP-Protocol-Version` is `{}` but `_meta` says `{}`", shortened(&sent), shortened(version)))),
        None => return Err(mismatch("the `MCP-Protocol-Version` header is missing")),
    }
    match header(headers, METHOD)? {
        Some(sent) if sent == method => {}
        Some(sent) => return Err(mismatch(format!("`Mcp-Method` is `{}` but the body's method is `{}`", shortened(&sent), shortened(method)))),
        None => return Err(mismatch("the `Mcp-Method` header is missing")),
    }
    let method = Method::parse(method);
    let named = match method {
        Method::CallTool | Method::GetPrompt => Some("name"),
        Method::ReadResource => Some("uri"),
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
        _ => None,
    };
    if let Some(field) = named
        && let Some(expected) = params.and_then(|p| p.get(field)).and_then(Value::as_str)
    {
        match header(headers, NAME)? {
            Some(sent) if sent == expected => {}
            Some(_) => return Err(mismatch(format!("`Mcp-Name` does not match the body's `{field}`"))),
            None => return Err(mismatch("the `Mcp-Name` header is missing")),
        }
    }
    if method == Method::CallTool
        && let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str)
        && let Some(declared) = server.header_params(name)
    {
        let arguments = params.and_then(|p| p.get("arguments")).and_then(Value::as_object);
        check_params(headers, &declared, arguments)?;
    }
    Ok(())
}

/// Every argument the tool declares as a header (`x-mcp-header`) against its header.
fn check_params(headers: &HeaderMap, declared: &[HeaderParam], arguments: Option<&Map<String, Value>>) -> Result<(), ErrorObject> {
    for HeaderParam { property, suffix, header: name } in declared {
        let value = arguments.and_then(|a| a.get(property)).filter(|v| !v.is_null());
        let sent = header(headers, name)?;
        match (value, sent) {
            (None, None) => {}
            (Some(_), None) => return Err(mismatch(format!("the `Mcp-Param-{suffix}` header is missing"))),
            (None, Some(_)) => return Err(mismatch(format!("`Mcp-Param-{suffix}` is sent but the argument `{property}` is not"))),
            (Some(value), Some(sent)) => {
                let same = match value {
                    Value::String(text) => *text == sent,
                    Value::Bool(flag) => sent == if *flag { "true" } else { "false" },
                    Value::Number(number) => number.as_i64().is_some_and(|n| sent.parse::<i64>() == Ok(n)),
                    _ => false,
                };
                if !same {
                    return Err(mismatch(format!("`Mcp-Param-{suffix}` does not match the argument `{property}`")));
                }
            }
        }
    }
    Ok(())
}

/// A header's value, trimmed and decoded from the base64 form; `None` when absent.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<std::borrow::Cow<'h, str>>, ErrorObject> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(mismatch(format!("the `{name}` header is sent more than once")));
    }
    let text = std::str::from_utf8(value.as_bytes()).map_err(|_| mismatch(format!("the `{name}` header is not UTF-8")))?.trim();
    match text.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| mismatch(format!("the `{name}` header is not valid base64")))?;
            String::from_utf8(bytes).map(|text| Some(text.into())).map_err(|_| mismatch(format!("the `{name}` header does not decode to UTF-8")))
        }
        None => Ok(Some(text.into())),
    }
}

fn mismatch(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(HEADER_MISMATCH, message)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(axum::http::HeaderName::from_bytes(name.as_bytes()).expect("name"), HeaderValue::from_str(value).expect("value"));
        }
        map
    }

    fn request(method: &str, params: Value) -> Map<String, Value> {
        let mut params = params;
        params["_meta"] = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).as_object().cloned().expect("object")
    }

    fn code(result: Result<(), ErrorObject>) -> Option<i64> {
        result.err().map(|e| e.code)
    }

    fn server() -> std::sync::Arc<ServerState> {
        ServerState::new(std::sync::Arc::new(crate::router::Router::new(Vec::new()).0), crate::input::StateKey::random().expect("a key"))
    }

    #[test]
    fn method_and_name_must_match_the_body_and_names_are_case_insensitive() {
        let router = server();
        let call = request("tools/call", json!({"name": "echo", "arguments": {}}));
        let good = headers(&[("MCP-Protocol-Version", "2026-07-28"), ("MCP-METHOD", "tools/call"), ("mcp-name", "  echo  ")]);
        assert_eq!(code(check(&good, &call, &router)), None);
        for bad in [
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "TOOLS/CALL"), ("mcp-name", "echo")]),
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-name", "echo")]),
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "other")]),
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")]),
            headers(&[("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]),
            headers(&[("mcp-method", "tools/call"), ("mcp-name", "echo")]),
        ] {
            assert_eq!(code(check(&bad, &call, &router)), Some(HEADER_MISMATCH), "{bad:?}");
        }
        let encoded = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?ZWNobw==?=")]);
        assert_eq!(code(check(&encoded, &call, &router)), None);
        let mut twice = good.clone();
        twice.append("mcp-method", HeaderValue::from_static("tools/call"));
        assert_eq!(code(check(&twice, &call, &router)), Some(HEADER_MISMATCH), "a repeated header is ambiguous");
    }

    #[test]
    fn a_request_without_the_meta_fields_is_left_to_the_session() {
        let router = server();
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).as_object().cloned().expect("object");
        assert_eq!(code(check(&HeaderMap::new(), &bare, &router)), None);
    }

    #[test]
    fn param_headers_decode_and_compare_by_type() {
        let schema = r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"}}}"#;
        let schema = &HeaderParam::declared_in(schema).expect("two header parameters");
        let args = json!({"region": "Hello", "count": 3});
        let args = args.as_object();
        let ok = |pairs: &[(&str, &str)]| check_params(&headers(pairs), schema, args);
        assert!(ok(&[("mcp-param-region", "=?base64?SGVsbG8=?="), ("mcp-param-count", "3")]).is_ok());
        assert!(ok(&[("mcp-param-region", "Hello"), ("mcp-param-count", " 3 ")]).is_ok());
        for bad in [
            vec![("mcp-param-region", "=?base64?SGVsbG8?="), ("mcp-param-count", "3")],
            vec![("mcp-param-region", "=?base64?SGVs!!!bG8=?="), ("mcp-param-count", "3")],
            vec![("mcp-param-count", "3")],
            vec![("mcp-param-region", "Hello"), ("mcp-param-count", "4")],
        ] {
            assert_eq!(code(ok(&bad)), Some(HEADER_MISMATCH), "{bad:?}");
        }
        let literal = json!({"region": "=?base64?SGVsbG8="});
        assert!(
            check_params(&headers(&[("mcp-param-region", "=?base64?SGVsbG8=")]), schema, literal.as_object()).is_ok(),
            "not the sentinel form: taken literally"
        );
    }
}
