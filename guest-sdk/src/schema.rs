//! JSON Schemas for tool inputs, structured outputs and prompt arguments, from `schemars`.

use schemars::JsonSchema;
use serde_json::{Value, json};

/// The schema of a tool that takes no arguments.
pub(crate) fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// The JSON Schema of `T`, without the `$schema` dialect marker (2020-12 is MCP's default).
pub(crate) fn of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({}));
    if let Value::Object(object) = &mut schema {
        object.remove("$schema");
    }
    schema
}

/// An input schema: an object schema, as MCP requires.
pub(crate) fn input_of<T: JsonSchema>() -> Value {
    let mut schema = of::<T>();
    if let Value::Object(object) = &mut schema
        && !object.contains_key("type")
    {
        object.insert("type".into(), json!("object"));
    }
    schema
}

/// `(name, description, required)` of each top-level property of an object schema.
pub(crate) fn properties(schema: &Value) -> Vec<(String, Option<String>, bool)> {
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| {
                    let description = prop.get("description").and_then(Value::as_str).map(str::to_owned);
                    (name.clone(), description, required.contains(&name.as_str()))
                })
                .collect()
        })
        .unwrap_or_default()
}
