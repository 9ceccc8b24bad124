//! The host seals only rounds it would open again: a round too large for `requestState` ends the
//! request with an error (a tool call with an error result) instead of a state no retry can use.

use super::*;
use crate::input::seal::MAX_SEALED_STATE;

/// More than `MAX_SEALED_STATE` once sealed.
const BIG: usize = MAX_SEALED_STATE + (1 << 20);

/// A plugin whose tool `big_round`, resource `big://round` and prompt `big` each ask one
/// question of `BIG` bytes; its tool `two_keys` asks two short ones.
struct BigRound {
    catalog: Catalog,
}

impl BigRound {
    fn new() -> Arc<BigRound> {
        let catalog = Catalog {
            tools: ["big_round", "two_keys"].into_iter().map(tool).collect(),
            resources: vec![Resource {
                uri: "big://round".into(),
                name: "round".into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                icons: vec![],
                annotations: None,
                meta: None,
            }],
            prompts: vec![Prompt { name: "big".into(), title: None, description: None, arguments: vec![], icons: vec![], meta: None }],
            ..Catalog::default()
        };
        Arc::new(BigRound { catalog })
    }
}

fn big_round<T>() -> Outcome<T> {
    Outcome::InputRequired(InputRequired { requests: vec![elicit("big", &"m".repeat(BIG))], state: Some(b"big".to_vec()), in_task: false })
}

impl Plugin for BigRound {
    fn id(&self) -> &str {
        "big"
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn call_tool<'a>(&'a self, tool: &'a str, _arguments: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>> {
        Box::pin(async move {
            Ok(match (tool, answer(cx, "a"), answer(cx, "b")) {
                ("big_round", _, _) => big_round(),
                (_, Some(_), Some(_)) => Outcome::Complete(text_result("both answered")),
                _ => Outcome::InputRequired(InputRequired { requests: vec![elicit("a", "A?"), elicit("b", "B?")], state: None, in_task: false }),
            })
        })
    }

    fn read_resource<'a>(&'a self, _uri: &'a str, _cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>> {
        Box::pin(async move { Ok(big_round()) })
    }

    fn get_prompt<'a>(
        &'a self,
        _prompt: &'a str,
        _arguments: &'a [(String, String)],
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>> {
        Box::pin(async move { Ok(big_round()) })
    }

    fn complete<'a>(&'a self, _request: &'a CompletionRequest, _cx: &'a CallContext) -> BoxFuture<'a, Result<Completion, PluginError>> {
        Box::pin(async move { Ok(Completion { values: vec![], total: None, has_more: false }) })
    }
}

fn harness() -> Harness {
    Harness::with_router(Router::new(vec![RouterEntry::new(BigRound::new(), Prefix::Default)]).0)
}

/// A 2026-07-28 request from a client that can answer forms.
fn asking(id: u32, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The reply to `frame`, which must be small: the oversized round never leaves the host.
async fn small_reply(h: &mut Harness, frame: &str) -> Value {
    h.send(frame).await;
    let line = tokio::time::timeout(WAIT, h.rx.recv()).await.expect("a reply in time").expect("session alive").line;
    assert!(line.len() < 4096, "a {}-byte reply", line.len());
    serde_json::from_str(&line).expect("JSON")
}

#[tokio::test(start_paused = true)]
async fn a_round_too_large_to_seal_ends_a_tool_call_with_an_error_result_and_other_requests_with_an_error() {
    let mut h = harness();
    let call = small_reply(&mut h, &asking(1, "tools/call", json!({"name": "big_big_round", "arguments": {}}))).await;
    assert_eq!(call["result"]["isError"], true, "{call}");
    let text = call["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("malformed output") && text.contains("too large to carry in `requestState`"), "{text}");
    assert!(call["result"].get("requestState").is_none(), "{call}");
    for (id, method, params) in [(2, "resources/read", json!({"uri": "big://round"})), (3, "prompts/get", json!({"name": "big_big"}))] {
        let reply = small_reply(&mut h, &asking(id, method, params)).await;
        assert_eq!(reply["error"]["code"], -32603, "{method}: {reply}");
        assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains("plugin `big` failed") && m.contains("too large")), "{method}: {reply}");
    }
}

#[tokio::test(start_paused = true)]
async fn answers_too_large_to_carry_into_the_next_round_are_the_client_s_to_fix() {
    let mut h = harness();
    let first = small_reply(&mut h, &asking(1, "tools/call", json!({"name": "big_two_keys", "arguments": {}}))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    // One answer of 9 MiB, the other left out: carrying it would need a state the host cannot open.
    let huge = json!({"action": "accept", "content": {"name": "n".repeat(BIG)}});
    let partial = asking(2, "tools/call", json!({"name": "big_two_keys", "arguments": {}, "inputResponses": {"a": huge}, "requestState": state}));
    let refused = small_reply(&mut h, &partial).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("answer every request of the round at once")), "{refused}");
    // Answering both at once needs no further round.
    let both = json!({"a": {"action": "accept", "content": {"name": "n".repeat(BIG)}}, "b": {"action": "decline"}});
    let done =
        small_reply(&mut h, &asking(3, "tools/call", json!({"name": "big_two_keys", "arguments": {}, "inputResponses": both, "requestState": state}))).await;
    assert_eq!(done["result"]["content"][0]["text"], "both answered", "{done}");
}
