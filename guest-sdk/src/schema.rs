//! JSON Schemas for tool inputs, structured outputs and prompt arguments, from `schemars`.

use schemars::JsonSchema;
use serde_json::{Value, json};

/// The schema of a tool that takes no arguments.
pub(crate) fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// The JSON Schema of `T`, as `schemars` writes it: JSON Schema 2020-12 (MCP's default
/// dialect), named by `$schema`, with shared definitions under `$defs`. A type that needs
/// keywords a derive cannot express (`if`/`then`/`else`, `$anchor`) implements `JsonSchema`
/// by hand, and its schema is kept exactly as written.
pub(crate) fn of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({}))
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

/// A top-level property of an object schema.
pub(crate) struct Property {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// The top-level properties of an object schema, in the schema's order.
pub(crate) fn properties(schema: &Value) -> Vec<Property> {
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| {
                    let text = |key: &str| prop.get(key).and_then(Value::as_str).map(str::to_owned);
                    Property { name: name.clone(), title: text("title"), description: text("description"), required: required.contains(&name.as_str()) }
                })
                .collect()
        })
        .unwrap_or_default()
}
