//! The `echo` tool for hyper-mcp: `describe` lists it, `call` returns its `text` argument.

use extism_pdk::*;
use serde_json::{json, Value};

#[plugin_fn]
pub fn describe(_input: String) -> FnResult<Json<Value>> {
    Ok(Json(json!({"tools": [{"name": "echo", "description": "Echoes its text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]})))
}

#[plugin_fn]
pub fn call(Json(request): Json<Value>) -> FnResult<Json<Value>> {
    let text = request["params"]["arguments"]["text"].as_str().unwrap_or("").to_owned();
    Ok(Json(json!({"content": [{"type": "text", "text": text}]})))
}
