//! The `files` sample asking its user before it replaces or deletes a file: through the session
//! on legacy revisions, as an `input_required` round trip on 2026-07-28, and by an explicit
//! argument for a client that cannot ask its user.

use paddock_tests::{PluginDir, StdioHost, first_text, sample_wasm};
use serde_json::{Value, json};

struct Setup {
    _plugins: PluginDir,
    data: tempfile::TempDir,
    host: StdioHost,
}

async fn files_with_data() -> Setup {
    let data = tempfile::tempdir().expect("data dir");
    std::fs::write(data.path().join("notes.txt"), "keep me").expect("seed");
    let grant = format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"rw\" }}]\n", data.path());
    let plugins = PluginDir::new().add("files", &sample_wasm("files")).write("files.toml", grant);
    let host = StdioHost::start(plugins.path(), &[]).expect("start");
    Setup { _plugins: plugins, data, host }
}

fn contents(s: &Setup, name: &str) -> Option<String> {
    std::fs::read_to_string(s.data.path().join(name)).ok()
}

/// A 2026-07-28 `tools/call` with this client's capabilities and, on a retry, its answers.
async fn call_2026(host: &mut StdioHost, tool: &str, arguments: Value, capabilities: Value, retry: Option<(Value, &str)>) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
    });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses;
        params["requestState"] = json!(state);
    }
    let reply = host.request("tools/call", params).await.expect("tools/call");
    reply.get("result").cloned().unwrap_or_else(|| panic!("{tool} failed: {reply}"))
}

#[tokio::test]
async fn a_legacy_client_is_asked_before_a_file_is_replaced_or_deleted() {
    let mut s = files_with_data().await;
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "0"}});
    s.host.request("initialize", init).await.expect("initialize");
    s.host.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await.expect("initialized");

    // A new file is written without a question.
    let fresh = s.host.call_tool("files_write_file", json!({"path": "/data/new.txt", "content": "fresh"})).await.expect("call");
    assert_eq!(first_text(&fresh), "wrote 5 bytes to /data/new.txt");

    // Replacing one asks the user on the session; "yes" replaces it.
    let call = json!({"jsonrpc": "2.0", "id": "replace", "method": "tools/call", "params": {"name": "files_write_file", "arguments": {"path": "/data/notes.txt", "content": "new notes"}}});
    s.host.send_line(&call.to_string()).await.expect("send");
    let asked = s.host.recv().await.expect("a question");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "`/data/notes.txt` exists (7 bytes). Replace it?");
    assert_eq!(asked["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean", "{asked}");
    assert_eq!(contents(&s, "notes.txt").as_deref(), Some("keep me"), "nothing is replaced while the user decides");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": true}}});
    s.host.send_line(&answer.to_string()).await.expect("answer");
    let done = s.host.recv().await.expect("the result");
    assert_eq!(done["id"], "replace");
    assert_eq!(first_text(&done["result"]), "wrote 9 bytes to /data/notes.txt", "{done}");
    assert_eq!(contents(&s, "notes.txt").as_deref(), Some("new notes"));

    // Deleting asks too; "no" keeps the file, and the model reads why.
    let call = json!({"jsonrpc": "2.0", "id": "delete", "method": "tools/call", "params": {"name": "files_delete_file", "arguments": {"path": "/data/new.txt", "confirm": true}}});
    s.host.send_line(&call.to_string()).await.expect("send");
    let asked = s.host.recv().await.expect("a question");
    assert_eq!(asked["params"]["message"], "Delete `/data/new.txt` (5 bytes)?", "the argument does not overrule a user who can be asked: {asked}");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}});
    s.host.send_line(&answer.to_string()).await.expect("answer");
    let kept = s.host.recv().await.expect("the result");
    assert_eq!(kept["result"]["isError"], true, "{kept}");
    assert_eq!(first_text(&kept["result"]), "`/data/new.txt` was not deleted: the user said no");
    assert_eq!(contents(&s, "new.txt").as_deref(), Some("fresh"));
}

#[tokio::test]
async fn a_2026_client_confirms_through_an_input_required_round_trip() {
    let mut s = files_with_data().await;
    let can_ask = json!({"elicitation": {}});
    let first = call_2026(&mut s.host, "files_delete_file", json!({"path": "/data/notes.txt"}), can_ask.clone(), None).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(first["inputRequests"]["confirm_delete"]["method"], "elicitation/create", "{first}");
    assert_eq!(contents(&s, "notes.txt").as_deref(), Some("keep me"));
    let state = first["requestState"].as_str().expect("a sealed state").to_owned();
    let yes = json!({"confirm_delete": {"action": "accept", "content": {"confirm": true}}});
    let done = call_2026(&mut s.host, "files_delete_file", json!({"path": "/data/notes.txt"}), can_ask, Some((yes, &state))).await;
    assert_eq!(first_text(&done), "deleted /data/notes.txt", "{done}");
    assert_eq!(contents(&s, "notes.txt"), None);
}

#[tokio::test]
async fn a_client_that_cannot_ask_its_user_must_say_so_in_the_call() {
    let mut s = files_with_data().await;
    let cannot_ask = json!({});
    let refused = call_2026(&mut s.host, "files_write_file", json!({"path": "/data/notes.txt", "content": "x"}), cannot_ask.clone(), None).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(first_text(&refused).contains("call again with `overwrite: true`"), "{refused}");
    assert_eq!(contents(&s, "notes.txt").as_deref(), Some("keep me"));

    let forced =
        call_2026(&mut s.host, "files_write_file", json!({"path": "/data/notes.txt", "content": "x", "overwrite": true}), cannot_ask.clone(), None).await;
    assert_eq!(first_text(&forced), "wrote 1 bytes to /data/notes.txt", "{forced}");
    let deleted = call_2026(&mut s.host, "files_delete_file", json!({"path": "/data/notes.txt", "confirm": true}), cannot_ask, None).await;
    assert_eq!(first_text(&deleted), "deleted /data/notes.txt", "{deleted}");
    assert_eq!(contents(&s, "notes.txt"), None);
}
