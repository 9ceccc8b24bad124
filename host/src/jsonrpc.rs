//! JSON-RPC 2.0 envelope: parsing one frame into a message with the right error for each
//! malformed shape (a frame whose parse would take more than `MAX_PARSED` is refused unparsed),
//! ids, error objects and the standard codes, `shortened` for quoting a client's strings in an
//! error, and the lines of responses, requests and notifications. Of MCP it knows one rule:
//! `params` must be an object (MCP defines no positional params), so an array is an invalid
//! request.

use serde_json::{Map, Value, json};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Most bytes of a client-supplied string an error message or error `data` quotes.
pub const MAX_QUOTED: usize = 256;

/// A request id: a JSON string or integer (never null), kept as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Id(IdRepr);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum IdRepr {
    Num(String),
    Str(String),
}

impl Id {
    /// The id as JSON, exactly as received.
    pub fn to_value(&self) -> Value {
        match &self.0 {
            IdRepr::Num(n) => serde_json::from_str(n).unwrap_or(Value::Null),
            IdRepr::Str(s) => Value::String(s.clone()),
        }
    }

    /// A string id.
    pub fn text(s: impl Into<String>) -> Id {
        Id(IdRepr::Str(s.into()))
    }

    /// Reads an id from JSON; `None` for anything but a string or an integer.
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::String(s) => Some(Id(IdRepr::Str(s.clone()))),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Id(IdRepr::Num(n.to_string()))),
            _ => None,
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            IdRepr::Num(n) => f.write_str(n),
            IdRepr::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The error as its JSON object.
    pub fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// A client-supplied string (a method, a name, a URI, a header value) as an error quotes it:
/// whole when it is at most `MAX_QUOTED` bytes, else its first bytes, cut on a character
/// boundary, and a marker with its full length (`…(12345 bytes)`). An error reply never grows
/// with what the client sent.
pub fn shortened(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_QUOTED {
        return text.into();
    }
    let end = (0..=MAX_QUOTED).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("{}…({} bytes)", &text[..end], text.len()).into()
}

/// One incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: it must get exactly one response.
    Request { id: Id, method: String, params: Option<Map<String, Value>> },
    /// A notification: it must get none.
    Notification { method: String, params: Option<Map<String, Value>> },
    /// A response to a request this side sent.
    Response { id: Option<Id>, outcome: Result<Value, ErrorObject> },
}

/// Why a frame is not a message, with the reply it deserves (`id` when it could be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub id: Option<Id>,
    pub error: ErrorObject,
}

impl Rejection {
    /// The error response line for this rejection.
    pub fn to_line(&self) -> String {
        error_line(self.id.as_ref(), &self.error)
    }
}

/// Parses one frame (a line of stdio, a WebSocket text frame, an HTTP body).
pub fn parse(frame: &str) -> Result<Message, Rejection> {
    from_value(parse_json(frame)?)
}

/// The most a message may take once parsed (`parsed_cost`): a text of small objects takes
/// tens of times its own size as `Value`s, so the bytes alone do not bound it.
pub const MAX_PARSED: usize = 64 << 20;

/// Bytes a parse of `text` into a `Value` may take, counted in one pass without parsing: the text
/// itself, plus what each object (a map node), array and member adds. An over-estimate for
/// ordinary messages; about right for the worst (a body of `{"a":1}` objects takes some 640
/// bytes for each 8 of text).
pub fn parsed_cost(text: &[u8]) -> usize {
    const OBJECT: usize = 640;
    const ARRAY: usize = 32;
    const MEMBER: usize = 64;
    let mut cost = text.len();
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'"' => {
                // To the quote that ends the string; an escape takes the byte after it.
                at += 1;
                loop {
                    let Some(rest) = text.get(at..) else { return cost };
                    match memchr::memchr2(b'"', b'\\', rest) {
                        Some(found) if rest[found] == b'\\' => at += found + 2,
                        Some(found) => {
                            at += found + 1;
                            break;
                        }
                        None => return cost,
                    }
                }
                continue;
            }
            b'{' => cost += OBJECT,
            b'[' => cost += ARRAY,
            b',' => cost += MEMBER,
            _ => {}
        }
        at += 1;
    }
    cost
}

/// A message whose parse would take more than `MAX_PARSED`.
pub fn too_costly(cost: usize) -> Rejection {
    let message = format!("the message would take {} MiB to parse, more than the {} MiB allowed; send fewer, larger values", cost >> 20, MAX_PARSED >> 20);
    Rejection { id: None, error: ErrorObject::new(INVALID_REQUEST, message) }
}

/// Parses a frame as JSON, before looking at its shape (a message or a batch). A frame whose
/// parse would take more than `MAX_PARSED` is refused unparsed.
pub fn parse_json(frame: &str) -> Result<Value, Rejection> {
    let cost = parsed_cost(frame.as_bytes());
    if cost > MAX_PARSED {
        return Err(too_costly(cost));
    }
    serde_json::from_str(frame).map_err(|err| Rejection { id: None, error: ErrorObject::new(PARSE_ERROR, format!("parse error: {err}")) })
}

/// Interprets a parsed JSON value as a message.
pub fn from_value(value: Value) -> Result<Message, Rejection> {
    let invalid = |id: Option<Id>, message: &str| Rejection { id, error: ErrorObject::new(INVALID_REQUEST, message) };
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(invalid(None, "invalid request: batches are only accepted in protocol 2025-03-26 sessions; send one message per frame"));
        }
        _ => return Err(invalid(None, "invalid request: a message must be a JSON object")),
    };
    let id = match object.get("id") {
        None => None,
        Some(raw) => match Id::from_value(raw) {
            Some(id) => Some(id),
            None => return Err(invalid(None, "invalid request: `id` must be a string or an integer")),
        },
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "invalid request: `jsonrpc` must be \"2.0\""));
    }
    let params = match object.remove("params") {
        None => None,
        Some(Value::Object(params)) => Some(params),
        // Positional params are valid JSON-RPC, but MCP defines none.
        Some(Value::Array(_)) => return Err(invalid(id, "invalid request: MCP params must be an object")),
        Some(_) => return Err(invalid(id, "invalid request: `params` must be an object")),
    };
    match object.remove("method") {
        Some(Value::String(method)) => match id {
            Some(id) => Ok(Message::Request { id, method, params }),
            None if object.contains_key("id") => Err(invalid(None, "invalid request: `id` must not be null")),
            None => Ok(Message::Notification { method, params }),
        },
        Some(_) => Err(invalid(id, "invalid request: `method` must be a string")),
        None => {
            if let Some(result) = object.remove("result") {
                Ok(Message::Response { id, outcome: Ok(result) })
            } else if let Some(error) = object.remove("error") {
                let code = error.get("code").and_then(Value::as_i64).unwrap_or(INTERNAL_ERROR);
                let message = error.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
                let data = error.get("data").cloned();
                Ok(Message::Response { id, outcome: Err(ErrorObject { code, message, data }) })
            } else {
                Err(invalid(id, "invalid request: no `method`, `result` or `error`"))
            }
        }
    }
}

/// A success response line.
pub fn result_line<T: serde::Serialize + ?Sized>(id: &Id, result: &T) -> String {
    /// The response written from borrowed parts: the result is never copied on its way out.
    #[derive(serde::Serialize)]
    struct Response<'a, T: ?Sized> {
        jsonrpc: &'static str,
        id: Value,
        result: &'a T,
    }
    let response = Response { jsonrpc: "2.0", id: id.to_value(), result };
    serde_json::to_string(&response).expect("JSON values always serialize")
}

/// An error response line; `id` is null when it could not be read.
pub fn error_line(id: Option<&Id>, error: &ErrorObject) -> String {
    json!({"jsonrpc": "2.0", "id": id.map(Id::to_value).unwrap_or(Value::Null), "error": error.to_value()}).to_string()
}

/// A request line (from the server to its client).
pub fn request_line(id: &Id, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params}).to_string()
}

/// A notification line.
pub fn notification_line(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// `value` as canonical JSON text: object keys sorted at every depth, no whitespace, so equal
/// values written in another order read the same (what digests and bindings are taken over).
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cost_of_a_parse_is_counted_outside_strings_and_bounds_what_a_parse_takes() {
        assert_eq!(parsed_cost(br#""{[,""#), 5, "structure inside a string costs nothing");
        assert_eq!(parsed_cost(br#""a\"{""#), 6, "an escaped quote does not end the string");
        assert_eq!(parsed_cost(br#"{"a":[1,2]}"#), 11 + 640 + 32 + 64);
        assert_eq!(parsed_cost(br#""unterminated"#), 13);
        // Two million small objects in 16 MiB would take over a gigabyte: refused unparsed.
        let objects = format!("[{}]", vec![r#"{"a":1}"#; 2_000_000].join(","));
        let cost = parsed_cost(objects.as_bytes());
        assert!(cost > 1 << 30, "{cost}");
        let refused = parse_json(&objects).expect_err("too costly");
        assert_eq!(refused.error.code, INVALID_REQUEST);
        assert!(refused.error.message.contains("MiB to parse"), "{}", refused.error.message);
        // A large string is about its own size.
        let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(8 << 20));
        assert!(parsed_cost(text.as_bytes()) < (8 << 20) + 1024);
        assert!(parse_json(&text).is_ok());
    }

    use super::*;

    fn rejected(frame: &str) -> Rejection {
        parse(frame).expect_err(frame)
    }

    #[test]
    fn invalid_json_is_a_parse_error_with_null_id() {
        let r = rejected("{oops");
        assert_eq!(r.error.code, PARSE_ERROR);
        assert!(r.to_line().contains(r#""id":null"#));
    }

    #[test]
    fn malformed_shapes_are_invalid_requests() {
        for frame in [
            "[]",
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            "42",
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert_eq!(rejected(frame).error.code, INVALID_REQUEST, "{frame}");
        }
    }

    #[test]
    fn readable_ids_are_echoed_in_rejections() {
        let r = rejected(r#"{"jsonrpc":"1.0","id":"abc","method":"ping"}"#);
        assert_eq!(r.id, Id::from_value(&json!("abc")));
    }

    #[test]
    fn ids_round_trip_exactly() {
        for id in [json!(0), json!(-5), json!(u64::MAX), json!("x"), json!("")] {
            assert_eq!(Id::from_value(&id).expect("valid id").to_value(), id);
        }
    }

    #[test]
    fn quoted_client_strings_are_bounded_and_cut_on_a_character_boundary() {
        let short = "x".repeat(MAX_QUOTED);
        assert_eq!(shortened(&short), short, "a string within the bound is quoted whole");
        let long = "x".repeat(1 << 20);
        assert_eq!(shortened(&long), format!("{}…(1048576 bytes)", "x".repeat(MAX_QUOTED)));
        // A two-byte character straddling the bound is left out whole, never split.
        let straddling = format!("{}é{}", "x".repeat(MAX_QUOTED - 1), "y".repeat(10));
        assert_eq!(shortened(&straddling), format!("{}…({} bytes)", "x".repeat(MAX_QUOTED - 1), MAX_QUOTED + 11));
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Ok(Message::Request { .. })));
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Ok(Message::Notification { .. })));
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Ok(Message::Response { outcome: Ok(_), .. })));
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#), Ok(Message::Response { outcome: Err(_), .. })));
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                ".{0,8}".prop_map(Value::String),
                Just(Value::String("2.0".into())),
                Just(Value::String("tools/call".into())),
            ];
            leaf.prop_recursive(3, 24, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    proptest::collection::btree_map(
                        prop_oneof![
                            Just("jsonrpc".to_owned()),
                            Just("id".to_owned()),
                            Just("method".to_owned()),
                            Just("params".to_owned()),
                            Just("result".to_owned()),
                            Just("error".to_owned()),
                            "[a-z]{1,4}"
                        ],
                        inner,
                        0..6
                    )
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// Any text is a message or a rejection whose reply line is valid JSON-RPC; never a
            /// panic.
            #[test]
            fn any_text_is_a_message_or_a_well_formed_rejection(frame in ".{0,64}") {
                if let Err(rejection) = parse(&frame) {
                    let reply: Value = serde_json::from_str(&rejection.to_line()).expect("the reply is JSON");
                    prop_assert_eq!(&reply["jsonrpc"], "2.0");
                    prop_assert!(reply["error"]["code"].is_i64());
                }
            }

            /// Any JSON value is classified by the rules of JSON-RPC: a request keeps its id and
            /// method, a notification has no id, and a rejection answers with the id only when
            /// the id itself was valid.
            #[test]
            fn any_json_value_is_classified_by_the_rules(value in json()) {
                let id = value.get("id").and_then(Id::from_value);
                match from_value(value.clone()) {
                    Ok(Message::Request { id: got, method, .. }) => {
                        prop_assert_eq!(Some(got), id);
                        prop_assert_eq!(Some(method.as_str()), value["method"].as_str());
                        prop_assert_eq!(&value["jsonrpc"], "2.0");
                    }
                    Ok(Message::Notification { .. }) => {
                        prop_assert!(value.get("id").is_none());
                        prop_assert!(value["method"].is_string());
                    }
                    Ok(Message::Response { id: got, .. }) => {
                        prop_assert_eq!(got, id);
                        prop_assert!(value.get("method").is_none());
                    }
                    Err(rejection) => {
                        prop_assert!(rejection.id.is_none() || rejection.id == id);
                        prop_assert!(rejection.error.code == INVALID_REQUEST);
                    }
                }
            }
        }
    }
}
