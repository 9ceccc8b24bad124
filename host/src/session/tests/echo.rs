//! Errors never echo unbounded client input: whatever a client sends (a method, a URI, a name, a
//! protocol version, an error answer), an error quotes at most `jsonrpc::MAX_QUOTED` bytes of it.

use super::*;

/// A mebibyte of client-supplied text after `prefix`.
fn mebibyte(prefix: &str) -> String {
    format!("{prefix}{}", "x".repeat(1 << 20))
}

/// Sends `frame` and returns its reply, which must be an error of `code` in under 1 KiB whose
/// message shows how long the quoted text was.
async fn small_error(h: &mut Harness, frame: &str, code: i64) -> Value {
    h.send(frame).await;
    let line = tokio::time::timeout(WAIT, h.rx.recv()).await.expect("a reply in time").expect("session alive").line;
    assert!(line.len() < 1024, "a {}-byte reply to a {}-byte request: {}…", line.len(), frame.len(), &line[..200]);
    let reply: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(reply["error"]["code"], code, "{reply}");
    assert!(reply["error"]["message"].as_str().expect("message").contains(" bytes)"), "{reply}");
    reply
}

fn legacy(id: u32, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn modern_with(id: u32, method: &str, mut params: Value) -> String {
    params["_meta"] = serde_json::from_str(MODERN_META).expect("meta");
    legacy(id, method, params)
}

#[tokio::test(start_paused = true)]
async fn an_unknown_method_of_a_mebibyte_is_answered_in_under_a_kibibyte() {
    let method = mebibyte("zz/");
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let reply = small_error(&mut h, &legacy(1, &method, json!({})), -32601).await;
    let message = reply["error"]["message"].as_str().expect("message");
    assert!(message.starts_with("method `zz/xxx") && message.contains(&format!("…({} bytes)", method.len())), "{message}");
    small_error(&mut h, &modern_with(2, &method, json!({})), -32601).await;
    let mut fresh = Harness::new();
    small_error(&mut fresh, &modern_with(3, &method, json!({})), -32601).await;
}

#[tokio::test(start_paused = true)]
async fn a_read_of_an_unknown_mebibyte_uri_is_answered_in_under_a_kibibyte() {
    let uri = mebibyte("other://");
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let reply = small_error(&mut h, &legacy(1, "resources/read", json!({"uri": uri})), -32002).await;
    let quoted = reply["error"]["data"]["uri"].as_str().expect("data keeps the URI, shortened");
    assert!(quoted.starts_with("other://xxx") && quoted.ends_with(&format!("…({} bytes)", uri.len())), "{quoted}");
    let reply = small_error(&mut h, &modern_with(2, "resources/read", json!({"uri": uri})), -32602).await;
    assert!(reply["error"]["data"]["uri"].as_str().is_some_and(|u| u.len() < 300), "{reply}");
    // The same URI under a template's scheme, and a legacy subscription to it.
    small_error(&mut h, &legacy(3, "resources/read", json!({"uri": mebibyte("fake://nothing/")})), -32002).await;
    let reply = small_error(&mut h, &legacy(4, "resources/subscribe", json!({"uri": uri})), -32002).await;
    assert!(reply["error"]["data"]["uri"].as_str().is_some_and(|u| u.len() < 300), "{reply}");
    // A state presented for a URI nobody serves names it shortened as well.
    small_error(&mut h, &modern_with(5, "resources/read", json!({"uri": uri, "requestState": "x"})), -32602).await;
}

#[tokio::test(start_paused = true)]
async fn unknown_tools_prompts_arguments_and_versions_of_a_mebibyte_are_quoted_shortened() {
    let name = mebibyte("fake_");
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    small_error(&mut h, &legacy(1, "tools/call", json!({"name": name, "arguments": {}})), -32602).await;
    small_error(&mut h, &legacy(2, "prompts/get", json!({"name": name})), -32602).await;
    small_error(&mut h, &legacy(3, "prompts/get", json!({"name": "fake_greet", "arguments": {name.clone(): 1}})), -32602).await;
    small_error(&mut h, &modern_with(4, "tools/call", json!({"name": name, "arguments": {}})), -32602).await;
    small_error(&mut h, &modern_with(5, "tools/call", json!({"name": name, "arguments": {}, "requestState": "x"})), -32602).await;
    small_error(&mut h, &modern_with(6, "prompts/get", json!({"name": name, "requestState": "x"})), -32602).await;
    let version = mebibyte("2026-");
    let mut meta: Value = serde_json::from_str(MODERN_META).expect("meta");
    meta["io.modelcontextprotocol/protocolVersion"] = json!(version);
    let reply = small_error(&mut h, &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}}).to_string(), -32022).await;
    assert!(reply["error"]["data"]["requested"].as_str().is_some_and(|v| v.len() < 300), "{reply}");
}

#[tokio::test(start_paused = true)]
async fn a_client_s_long_error_answer_reaches_the_result_shortened() {
    let mut h = Harness::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;
    h.ask(init).await;
    h.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_ask_name","arguments":{}}}"#).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "elicitation/create");
    h.send(&json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": mebibyte("no: ")}}).to_string()).await;
    let line = tokio::time::timeout(WAIT, h.rx.recv()).await.expect("a reply in time").expect("session alive").line;
    assert!(line.len() < 1024, "{} bytes", line.len());
    let reply: Value = serde_json::from_str(&line).expect("JSON");
    let text = reply["result"]["content"][0]["text"].as_str().expect("text");
    assert!(reply["result"]["isError"] == true && text.contains("no: xxx") && text.contains(" bytes)"), "{reply}");
}
