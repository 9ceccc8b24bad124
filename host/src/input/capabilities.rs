//! Client capabilities a request needs, checked against what the client declared.
//!
//! Both sides are MCP `ClientCapabilities` objects. A requirement is met when every key it names
//! is declared, recursively for nested objects; an empty `elicitation` object declares form mode
//! (the spec's reading of `"elicitation": {}`).

use serde_json::{Map, Value};

/// A `ClientCapabilities` object a tool or an input request needs, such as `{"sampling":{}}`.
pub type RequiredCapabilities = Map<String, Value>;

/// The part of `required` that `declared` lacks, or `None` when every requirement is met.
pub fn missing_capabilities(declared: &Map<String, Value>, required: &RequiredCapabilities) -> Option<RequiredCapabilities> {
    let missing = missing_in(declared, required, true);
    (!missing.is_empty()).then_some(missing)
}

fn missing_in(declared: &Map<String, Value>, required: &Map<String, Value>, top: bool) -> Map<String, Value> {
    let mut missing = Map::new();
    for (key, needed) in required {
        let Some(have) = declared.get(key) else {
            missing.insert(key.clone(), needed.clone());
            continue;
        };
        let (Value::Object(needed_inner), Value::Object(have_inner)) = (needed, have) else { continue };
        let implied;
        let have_inner = if top && key == "elicitation" && have_inner.is_empty() {
            implied = Map::from_iter([("form".to_owned(), Value::Object(Map::new()))]);
            &implied
        } else {
            have_inner
        };
        let inner = missing_in(have_inner, needed_inner, false);
        if !inner.is_empty() {
            missing.insert(key.clone(), Value::Object(inner));
        }
    }
    missing
}

/// Merges `more` into `into` (a union of requirements).
pub fn merge(into: &mut RequiredCapabilities, more: &RequiredCapabilities) {
    for (key, value) in more {
        match (into.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(added)) => merge(existing, added),
            (Some(_), _) => {}
            (None, _) => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn declared_capabilities_meet_requirements_recursively() {
        let declared = object(json!({"sampling": {"tools": {}}, "roots": {"listChanged": true}}));
        assert_eq!(missing_capabilities(&declared, &object(json!({"sampling": {}}))), None);
        assert_eq!(missing_capabilities(&declared, &object(json!({"sampling": {"tools": {}}, "roots": {}}))), None);
        assert_eq!(
            missing_capabilities(&declared, &object(json!({"sampling": {"context": {}}, "elicitation": {}}))),
            Some(object(json!({"sampling": {"context": {}}, "elicitation": {}})))
        );
    }

    #[test]
    fn an_empty_elicitation_object_declares_form_mode_only() {
        let declared = object(json!({"elicitation": {}}));
        assert_eq!(missing_capabilities(&declared, &object(json!({"elicitation": {"form": {}}}))), None);
        assert_eq!(missing_capabilities(&declared, &object(json!({"elicitation": {"url": {}}}))), Some(object(json!({"elicitation": {"url": {}}}))));
        let both = object(json!({"elicitation": {"url": {}}}));
        assert_eq!(missing_capabilities(&both, &object(json!({"elicitation": {"url": {}}}))), None);
        assert!(missing_capabilities(&both, &object(json!({"elicitation": {"form": {}}}))).is_some(), "url only is not form");
    }

    #[test]
    fn merging_requirements_keeps_every_key() {
        let mut all = object(json!({"sampling": {}}));
        merge(&mut all, &object(json!({"sampling": {"tools": {}}, "roots": {}})));
        assert_eq!(Value::Object(all), json!({"sampling": {"tools": {}}, "roots": {}}));
    }
}
