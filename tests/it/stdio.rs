//! The stdio transport of the real binary: only protocol on stdout, framing errors, clean EOF.

use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, sample_wasm};
use serde_json::json;

#[tokio::test]
async fn guest_println_never_reaches_stdout() {
    let plugins = PluginDir::new().add("fixture", &fixture_wasm("fixture"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let result = host.call_tool("fixture_print", json!({"lines": 500})).await.expect("call");
    assert_ne!(result["isError"], true, "{result}");
    // Every line on stdout so far parsed as JSON-RPC (recv fails otherwise); the next reply
    // must be the ping's, with no guest output in between.
    let ping = host.request("ping", json!({})).await.expect("ping after printing");
    assert_eq!(ping["result"], json!({}));
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn malformed_line_gets_parse_error_and_stream_goes_on() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.send_line("{not json").await.expect("send");
    let reply = host.recv().await.expect("parse error reply");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], serde_json::Value::Null);
    host.initialize("2025-06-18").await.expect("initialize after a parse error");
    let result = host.call_tool("text_echo", json!({"text": "still here"})).await.expect("call");
    assert_eq!(first_text(&result), "still here");
    assert_eq!(host.close().await.expect("exit"), 0);
}

#[tokio::test]
async fn eof_on_stdin_exits_cleanly_with_code_zero() {
    let plugins = PluginDir::new().add("text", &sample_wasm("text"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    let reply = host.initialize("2024-11-05").await.expect("initialize");
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(host.close().await.expect("exit"), 0);
}
