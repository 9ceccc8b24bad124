//! The native baseline: a JSON-RPC echo server over stdio with no sandbox, answering the same
//! methods the benchmark sends Paddock (`initialize`, `tools/list`, `tools/call` of `text_echo`,
//! `ping`). It parses and serializes every message as a real server would, on one thread, and
//! flushes only when no more input is waiting.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde_json::{Value, json};

fn answer(request: &Value) -> Option<Value> {
    let id = request.get("id")?.clone();
    let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "native-echo", "version": "1"}
        }),
        "tools/list" => json!({"tools": [{"name": "text_echo", "description": "Returns `text` exactly as given.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}),
        "tools/call" => {
            let text = request.pointer("/params/arguments/text").and_then(Value::as_str).unwrap_or_default();
            json!({"content": [{"type": "text", "text": text}]})
        }
        "ping" => json!({}),
        _ => return Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn main() -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut output = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let Ok(request) = serde_json::from_str::<Value>(line.trim()) else { continue };
        if let Some(reply) = answer(&request) {
            serde_json::to_writer(&mut output, &reply)?;
            output.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}
