//! JSON validator tests: the caps and the hostile inputs by name, then property tests that the
//! validator never panics and accepts exactly the text serde_json parses within the depth cap,
//! and that whatever it accepts serializes as the host later serializes it.

use proptest::prelude::*;
use serde_json::value::RawValue;

use super::*;

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn nested_object(depth: usize) -> String {
    format!("{}{}", "{\"a\":".repeat(depth.saturating_sub(1)) + "{", "}".repeat(depth))
}

/// The nesting depth of a parsed value, without recursion.
fn depth_of(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
        deepest = deepest.max(match value {
            Value::Array(_) | Value::Object(_) => depth + 1,
            _ => depth,
        });
    }
    deepest
}

/// What the validator must accept (for `JsonKind::Any`): text serde_json parses, nesting
/// within the cap.
fn oracle(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| depth_of(&v) <= MAX_JSON_DEPTH)
}

/// What the host does with accepted text later: keeps it raw, turns it into a `Value` for the
/// response, writes that out, and a client parses it back.
fn serializes_like_the_host(text: &str) -> bool {
    let Ok(raw) = RawValue::from_string(text.to_owned()) else { return false };
    let Ok(value) = serde_json::to_value(&raw) else { return false };
    let Ok(line) = serde_json::to_string(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"items": [value]}})) else {
        return false;
    };
    serde_json::from_str::<Value>(&line).is_ok()
}

#[test]
fn nesting_is_capped_at_the_limit_and_counted_outside_strings_only() {
    assert_eq!(validate(&nested(MAX_JSON_DEPTH), JsonKind::Any, usize::MAX), Ok(()));
    assert_eq!(validate(&nested(MAX_JSON_DEPTH + 1), JsonKind::Any, usize::MAX), Err(JsonError::TooDeep { max: 64 }));
    assert_eq!(validate(&nested_object(MAX_JSON_DEPTH), JsonKind::Object, usize::MAX), Ok(()));
    assert_eq!(validate(&nested(2000), JsonKind::Any, usize::MAX), Err(JsonError::TooDeep { max: 64 }));
    // Unbalanced and enormous: refused by the scan, never handed to the parser.
    assert_eq!(validate(&"[".repeat(1 << 20), JsonKind::Any, usize::MAX), Err(JsonError::TooDeep { max: 64 }));
    // Brackets inside strings, escaped quotes included, do not count.
    let in_strings = format!(r#"{{"a":"{}","b":"\"{}"}}"#, "[".repeat(500), "{".repeat(500));
    assert_eq!(validate(&in_strings, JsonKind::Object, usize::MAX), Ok(()));
    assert_eq!(JsonError::TooDeep { max: 64 }.to_string(), "nests deeper than 64 levels");
}

#[test]
fn text_that_would_break_serialization_is_refused_with_the_reason() {
    for (text, unit) in [
        (r#"{"s":"\ud800"}"#, 0xd800),
        (r#"{"s":"\udc00"}"#, 0xdc00),
        (r#"{"s":"x\ud800y"}"#, 0xd800),
        (r#"{"s":"\uDBFF\u0041"}"#, 0xdbff),
        (r#"{"s":"\ud800\ud800"}"#, 0xd800),
        (r#"{"\udfff":1}"#, 0xdfff),
    ] {
        assert_eq!(validate(text, JsonKind::Object, usize::MAX), Err(JsonError::LoneSurrogate { unit }), "{text}");
        assert!(!serializes_like_the_host(text), "{text} serializes");
    }
    assert_eq!(JsonError::LoneSurrogate { unit: 0xd800 }.to_string(), "has a lone surrogate escape `\\ud800`; strings must hold whole Unicode characters");
    for (text, reason) in [
        (r#"{"n":1e400}"#, "number out of range"),
        (r#"{"n":-1e400}"#, "number out of range"),
        ("{\"a\":1", "EOF"),
        ("{\"a\":1}}", "trailing characters"),
        ("{\"a\":\"\u{1}\"}", "control character"),
    ] {
        match validate(text, JsonKind::Object, usize::MAX) {
            Err(JsonError::Invalid(message)) => assert!(message.contains(reason), "{text}: {message}"),
            other => panic!("{text}: {other:?}"),
        }
        // Stored as it is, each of these would fail later, when the host serializes it.
        assert!(!serializes_like_the_host(text), "{text} serializes");
    }
    // Their permitted twins.
    for text in
        [r#"{"s":"\ud83d\ude00"}"#, r#"{"s":"\uD83D\uDE00\\ud800"}"#, r#"{"n":1.7976931348623157e308}"#, r#"{"n":18446744073709551616}"#, r#"{"s":"\u0000"}"#]
    {
        assert_eq!(validate(text, JsonKind::Object, usize::MAX), Ok(()), "{text}");
        assert!(serializes_like_the_host(text), "{text}");
    }
}

#[test]
fn size_and_kind_are_checked() {
    assert_eq!(validate("{}", JsonKind::Object, 2), Ok(()));
    assert_eq!(validate("{ }", JsonKind::Object, 2), Err(JsonError::TooLarge { len: 3, max: 2 }));
    assert_eq!(validate("[1]", JsonKind::Object, 10), Err(JsonError::NotObject));
    assert_eq!(validate("[1]", JsonKind::Any, 10), Ok(()));
    assert_eq!(validate(" {} ", JsonKind::Object, 10), Ok(()));
}

/// Text close to JSON: brackets, strings with escapes (lone and paired surrogates), numbers at
/// and past the edges of `f64`, and noise.
fn jsonish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\"k\":".to_owned()),
        Just("\"\\ud800\"".to_owned()),
        Just("\"\\udc00\"".to_owned()),
        Just("\"\\ud83d\\ude00\"".to_owned()),
        Just("\"\\\"[{\"".to_owned()),
        Just("\"\\\\\"".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("1e400".to_owned()),
        Just("-1.5e308".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("0".to_owned()),
        Just("true".to_owned()),
        Just("null".to_owned()),
        Just(" ".to_owned()),
        "[a-z\\[\\]{}\",:0-9\\\\ .eE+-]{1,4}",
    ];
    prop::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

/// Valid JSON values nested up to a little past the cap.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(72, 256, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(Value::Array),
            prop::collection::vec(("[a-z\\\\\"]{0,3}", inner), 1..3).prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// A chain of single-element arrays around a value, so depths on both sides of the cap are common.
fn deep_value() -> impl Strategy<Value = String> {
    (0..80usize, value()).prop_map(|(wrap, value)| format!("{}{}{}", "[".repeat(wrap), value, "]".repeat(wrap)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Near-JSON noise: no panic, and accepted exactly when serde_json parses it within the cap;
    /// whatever is accepted serializes the way the host later serializes it.
    #[test]
    fn the_validator_accepts_exactly_what_serde_json_parses_within_the_cap(text in jsonish()) {
        let accepted = validate(&text, JsonKind::Any, usize::MAX).is_ok();
        prop_assert_eq!(accepted, oracle(&text), "{}", text);
        if accepted {
            prop_assert!(serializes_like_the_host(&text), "{}", text);
        }
    }

    /// Valid JSON of every depth around the cap: accepted exactly within the cap, and then it
    /// serializes.
    #[test]
    fn valid_json_is_accepted_exactly_within_the_depth_cap(text in deep_value()) {
        let accepted = validate(&text, JsonKind::Any, usize::MAX).is_ok();
        prop_assert_eq!(accepted, oracle(&text), "{}", text);
        if accepted {
            prop_assert!(serializes_like_the_host(&text), "{}", text);
        }
    }

    /// Arbitrary strings: no panic, and the same answer as the oracle.
    #[test]
    fn the_validator_never_panics_on_arbitrary_text(text in "\\PC{0,64}") {
        prop_assert_eq!(validate(&text, JsonKind::Any, usize::MAX).is_ok(), oracle(&text));
    }
}
