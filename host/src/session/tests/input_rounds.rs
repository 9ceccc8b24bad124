//! Input rounds in both eras: sealed `requestState` round trips on 2026-07-28, the session
//! asking a legacy client itself, capability refusals, and every way a round can end.

use super::*;

/// A 2026-07-28 request whose client declares `caps`.
fn stateless(id: u32, method: &str, caps: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{caps}}},{params}}}}}"#
    )
}

fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

/// The retry of a `tools/call` with answers and the state, as a 2026-07-28 client sends it.
fn retry(id: u32, tool: &str, arguments: &str, responses: Value, state: &Value) -> String {
    stateless(id, "tools/call", ALL_CAPS, &format!(r#""name":"{tool}","arguments":{arguments},"inputResponses":{responses},"requestState":{state}"#))
}

#[tokio::test(start_paused = true)]
async fn a_stateless_round_trip_asks_by_key_and_resumes_with_the_answer_and_the_plugin_state() {
    let mut h = Harness::new();
    let first = h.ask(&stateless(1, "tools/call", ALL_CAPS, r#""name":"fake_ask_name","arguments":{}"#)).await["result"].clone();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first["inputRequests"]["user_name"]["method"], "elicitation/create");
    assert_eq!(first["inputRequests"]["user_name"]["params"]["message"], "What is your name?");
    assert!(first.get("ttlMs").is_none() && first.get("cacheScope").is_none(), "input_required is never cacheable: {first}");
    let state = first["requestState"].clone();
    assert!(state.is_string());
    assert!(!state.as_str().unwrap().contains("asked"), "the plugin's state travels sealed");

    let done = h.ask(&retry(2, "fake_ask_name", "{}", json!({"user_name": accept("Ada"), "extra": {"ignored": true}}), &state)).await;
    let result = &done["result"];
    assert_eq!(result["resultType"], "complete", "{done}");
    assert_eq!(result["content"][0]["text"], r#"Hello, Ada (state Some("asked"), protocol 2026-07-28)"#);
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn answers_sent_without_a_round_are_used_only_when_they_cover_what_the_plugin_asks() {
    let mut h = Harness::new();
    let unsealed =
        |id: u32, responses: Value| stateless(id, "tools/call", ALL_CAPS, &format!(r#""name":"fake_ask_name","arguments":{{}},"inputResponses":{responses}"#));
    let done = h.ask(&unsealed(1, json!({"user_name": accept("Ada"), "unknown_extra_key": accept("Eve")}))).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], r#"Hello, Ada (state Some("asked"), protocol 2026-07-28)"#, "the plugin's own state from its first run");
    let asked = h.ask(&unsealed(2, json!({"wrong_key": accept("Eve")}))).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "a key the plugin did not ask answers nothing: {asked}");
    // (An answer of the wrong shape is refused by the runtime like any answer: the conformance
    // suite's `input-required-result-validate-input` shows it on the real plugin.)
    let none = h.ask(&unsealed(4, Value::Null)).await;
    assert_eq!(none["result"]["resultType"], "input_required");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_tampered_replayed_or_expired_state_is_invalid_params() {
    let mut h = Harness::new();
    let first = h.ask(&stateless(1, "tools/call", ALL_CAPS, r#""name":"fake_ask_name","arguments":{"a":1}"#)).await["result"].clone();
    let state = first["requestState"].as_str().expect("a state").to_owned();

    let mut tampered = state.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = Value::String(String::from_utf8(tampered).expect("ascii"));
    let reply = h.ask(&retry(2, "fake_ask_name", r#"{"a":1}"#, json!({"user_name": accept("Eve")}), &tampered)).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("requestState"), "{reply}");

    let reply = h.ask(&retry(3, "fake_ask_name", r#"{"a":2}"#, json!({"user_name": accept("Eve")}), &Value::String(state.clone()))).await;
    assert_eq!(reply["error"]["code"], -32602, "a state is bound to its arguments: {reply}");
    let reply = h.ask(&retry(4, "fake_two_rounds", r#"{"a":1}"#, json!({"first": accept("Eve")}), &Value::String(state))).await;
    assert_eq!(reply["error"]["code"], -32602, "and to its tool: {reply}");

    let mut expiring =
        Harness::with_server(Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0, OutboundLimits::default(), WAIT, Duration::ZERO);
    let first = expiring.ask(&stateless(1, "tools/call", ALL_CAPS, r#""name":"fake_ask_name","arguments":{}"#)).await["result"].clone();
    let reply = expiring.ask(&retry(2, "fake_ask_name", "{}", json!({"user_name": accept("Ada")}), &first["requestState"])).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("expired"), "{reply}");
}

#[tokio::test(start_paused = true)]
async fn missing_answers_are_asked_again_without_running_the_plugin_and_earlier_ones_are_kept() {
    let mut h = Harness::new();
    let first = h.ask(&stateless(1, "tools/call", ALL_CAPS, r#""name":"fake_ask_three","arguments":{}"#)).await["result"].clone();
    let keys: Vec<&String> = first["inputRequests"].as_object().expect("requests").keys().collect();
    assert_eq!(keys.len(), 3, "elicitation, sampling and roots in one round: {first}");
    assert_eq!(first["inputRequests"]["capital"]["method"], "sampling/createMessage");
    assert_eq!(first["inputRequests"]["roots"]["method"], "roots/list");

    let partial = h.ask(&retry(2, "fake_ask_three", "{}", json!({"name": {"action": "decline"}}), &first["requestState"])).await["result"].clone();
    assert_eq!(partial["resultType"], "input_required", "{partial}");
    let mut asked: Vec<&String> = partial["inputRequests"].as_object().expect("requests").keys().collect();
    asked.sort();
    assert_eq!(asked, ["capital", "roots"], "only what is still missing");

    let capital = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"});
    let roots = json!({"roots": [{"uri": "file:///work", "name": "work"}]});
    let done = h.ask(&retry(3, "fake_ask_three", "{}", json!({"capital": capital, "roots": roots}), &partial["requestState"])).await;
    assert_eq!(done["result"]["content"][0]["text"], "decline / Paris / 1", "{done}");
}

#[tokio::test(start_paused = true)]
async fn several_rounds_carry_a_new_state_each_time() {
    let mut h = Harness::new();
    let one = h.ask(&stateless(1, "tools/call", ALL_CAPS, r#""name":"fake_two_rounds","arguments":{}"#)).await["result"].clone();
    assert!(one["inputRequests"]["first"].is_object(), "{one}");
    let two = h.ask(&retry(2, "fake_two_rounds", "{}", json!({"first": accept("A")}), &one["requestState"])).await["result"].clone();
    assert!(two["inputRequests"]["second"].is_object(), "{two}");
    assert_ne!(one["requestState"], two["requestState"]);
    let done = h.ask(&retry(3, "fake_two_rounds", "{}", json!({"second": accept("B")}), &two["requestState"])).await;
    assert_eq!(done["result"]["content"][0]["text"], "round-2:A then B", "{done}");
}

#[tokio::test(start_paused = true)]
async fn prompts_ask_for_input_too() {
    let mut h = Harness::new();
    let first = h.ask(&stateless(1, "prompts/get", ALL_CAPS, r#""name":"fake_greet","arguments":{"name":"?"}"#)).await["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let retry = stateless(
        2,
        "prompts/get",
        ALL_CAPS,
        &format!(r#""name":"fake_greet","arguments":{{"name":"?"}},"inputResponses":{{"who":{}}},"requestState":{}"#, accept("Bob"), first["requestState"]),
    );
    let done = h.ask(&retry).await;
    assert_eq!(done["result"]["messages"][0]["content"]["text"], "Say hello to Bob", "{done}");
}

#[tokio::test(start_paused = true)]
async fn a_missing_capability_is_refused_with_the_capabilities_named() {
    let mut h = Harness::new();
    let reply = h.ask(&stateless(1, "tools/call", "{}", r#""name":"fake_needs_sampling","arguments":{}"#)).await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
    let ok = h.ask(&stateless(2, "tools/call", r#"{"sampling":{}}"#, r#""name":"fake_needs_sampling","arguments":{}"#)).await;
    assert_eq!(ok["result"]["content"][0]["text"], "sampled", "{ok}");

    let reply = h.ask(&stateless(3, "tools/call", r#"{"sampling":{}}"#, r#""name":"fake_ask_name","arguments":{}"#)).await;
    assert_eq!(reply["error"]["code"], -32021, "a plugin asking for what the client lacks: {reply}");
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({"elicitation": {"form": {}}}));

    let mut legacy = Harness::new();
    legacy.initialize("2025-11-25").await;
    let reply = legacy.ask(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fake_needs_sampling","arguments":{}}}"#).await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("sampling"), "{reply}");
}

/// A legacy session whose client declared every input capability.
async fn legacy_with_all_capabilities(h: &mut Harness) {
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{ALL_CAPS},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    h.ask(&init).await;
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_session_asks_its_client_and_runs_the_plugin_again_with_the_answers() {
    let mut h = Harness::new();
    legacy_with_all_capabilities(&mut h).await;
    h.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_ask_three","arguments":{}}}"#).await;
    let mut answered = 0;
    while answered < 3 {
        let request = h.recv().await;
        let id = request["id"].clone();
        let result = match request["method"].as_str().expect("a request to the client") {
            "elicitation/create" => json!({"action": "accept", "content": {"name": "Ada"}}),
            "sampling/createMessage" => {
                assert_eq!(request["params"]["maxTokens"], 10);
                json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"})
            }
            "roots/list" => json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
            other => panic!("unexpected {other}: {request}"),
        };
        h.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()).await;
        answered += 1;
    }
    let reply = h.recv().await;
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["content"][0]["text"], "accept / Paris / 2", "{reply}");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_client_error_ends_the_call_with_an_error_the_model_can_read() {
    let mut h = Harness::new();
    legacy_with_all_capabilities(&mut h).await;
    h.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_ask_name","arguments":{}}}"#).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "elicitation/create");
    h.send(&json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "user rejected"}}).to_string()).await;
    let reply = h.recv().await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("user_name") && text.contains("user rejected"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_withdraws_its_requests_to_the_client_and_is_not_answered() {
    let mut h = Harness::new();
    legacy_with_all_capabilities(&mut h).await;
    h.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_ask_name","arguments":{}}}"#).await;
    let request = h.recv().await;
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#).await;
    let withdrawn = h.recv().await;
    assert_eq!(withdrawn["method"], "notifications/cancelled", "{withdrawn}");
    assert_eq!(withdrawn["params"]["requestId"], request["id"]);
    h.session.drain(WAIT).await;
    assert_eq!(h.session.client_requests.pending(), 0, "nothing is left waiting");
    // A late answer is ignored, and nothing answers the cancelled call.
    h.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": accept("late")}).to_string()).await;
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_answers_times_out_and_a_plugin_that_never_stops_asking_is_stopped() {
    let router = || Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0;
    let mut h = Harness::with_server(router(), OutboundLimits::default(), Duration::from_millis(200), crate::input::seal::STATE_TTL);
    legacy_with_all_capabilities(&mut h).await;
    h.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_ask_name","arguments":{}}}"#).await;
    let request = h.recv().await;
    assert_eq!(request["method"], "elicitation/create");
    let withdrawn = h.recv().await;
    assert_eq!(withdrawn["method"], "notifications/cancelled");
    let reply = h.recv().await;
    assert_eq!(reply["result"]["isError"], true);
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("did not answer"), "{reply}");

    let mut h = Harness::with_server(router(), OutboundLimits::default(), WAIT, crate::input::seal::STATE_TTL);
    legacy_with_all_capabilities(&mut h).await;
    h.send(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fake_ask_forever","arguments":{}}}"#).await;
    for round in 0..crate::session::MAX_ROUNDS {
        let request = h.recv().await;
        assert_eq!(request["method"], "roots/list", "round {round}: {request}");
        h.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}}).to_string()).await;
    }
    let reply = h.recv().await;
    assert_eq!(reply["id"], 8);
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("more than 8 times"), "{reply}");
}

#[tokio::test(start_paused = true)]
async fn cache_hints_come_from_the_plugin_and_default_to_not_reusable() {
    let mut h = Harness::new();
    let hinted = h.ask(&stateless(1, "resources/read", "{}", r#""uri":"fake://readme""#)).await["result"].clone();
    assert_eq!((hinted["ttlMs"].clone(), hinted["cacheScope"].clone()), (json!(5000), json!("public")), "{hinted}");
    let unhinted = h.ask(&stateless(2, "resources/read", "{}", r#""uri":"fake://items/7""#)).await["result"].clone();
    assert_eq!((unhinted["ttlMs"].clone(), unhinted["cacheScope"].clone()), (json!(0), json!("private")), "{unhinted}");
    for (id, method) in [(3, "tools/list"), (4, "prompts/list"), (5, "resources/list"), (6, "resources/templates/list")] {
        let list = h.ask(&stateless(id, method, "{}", r#""cursor":"""#)).await["result"].clone();
        assert_eq!((list["ttlMs"].clone(), list["cacheScope"].clone()), (json!(0), json!("public")), "{method}: {list}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_state_opens_only_for_the_principal_it_was_sealed_for() {
    let server = ServerState::new(Arc::new(Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0), StateKey::random().expect("a key"));
    let channel = |principal: Principal| {
        let (tx, rx) = outbound(OutboundLimits::default());
        Harness { session: Session::one_request(Arc::clone(&server), tx, principal), rx }
    };
    let mut alice = channel(Principal::token("alice", Vec::new()));
    let mut bob = channel(Principal::token("bob", Vec::new()));
    let first = alice.ask(&stateless(1, "tools/call", ALL_CAPS, r#""name":"fake_ask_name","arguments":{}"#)).await["result"].clone();
    let state = &first["requestState"];
    let stolen = bob.ask(&retry(2, "fake_ask_name", "{}", json!({"user_name": accept("Mallory")}), state)).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let own = alice.ask(&retry(3, "fake_ask_name", "{}", json!({"user_name": accept("Ada")}), state)).await;
    assert!(own["result"]["content"][0]["text"].as_str().is_some_and(|t| t.starts_with("Hello, Ada")), "{own}");
}
