//! Caller policy in both eras: tool policy per principal (hidden items answered exactly like
//! missing ones, left out of lists and change notifications), scopes, rate limits, approvals
//! and the audit trail.

use super::*;
use crate::audit::Audit;
use crate::mcp::CallerPolicy;
use crate::policy::{AccessRules, Approval, Effect, Pattern, Rate, RateRules, Rule, Who};
use crate::rate_limits::RateLimits;

/// A server with the fake plugin under `callers`, and the fake's state.
fn served(callers: CallerPolicy) -> (Arc<ServerState>, Arc<FakeState>) {
    let plugin = FakePlugin::new();
    let state = Arc::clone(&plugin.state);
    let router = Router::new(vec![RouterEntry::new(plugin, Prefix::Default)]).0;
    (ServerState::with_callers(Arc::new(router), StateKey::random().expect("a key"), crate::budget::Budget::unlimited(), callers), state)
}

fn policy(rules: Vec<Rule>) -> CallerPolicy {
    CallerPolicy { access: AccessRules { rules, ..AccessRules::default() }, ..CallerPolicy::default() }
}

fn rule(who: &str, tools: &[&str], resources: &[&str], prompts: &[&str], effect: Effect) -> Rule {
    let patterns = |p: &[&str]| p.iter().map(|p| Pattern::new(p)).collect();
    Rule {
        name: format!("{who} {effect:?}"),
        who: vec![Who::parse(who).expect("who")],
        tools: patterns(tools),
        resources: patterns(resources),
        prompts: patterns(prompts),
        effect,
        ..Rule::default()
    }
}

/// A legacy session of `principal`, initialized with every input capability (or none).
async fn legacy(server: &Arc<ServerState>, principal: Principal, caps: &str) -> Harness {
    let (tx, rx) = outbound(OutboundLimits::default());
    let mut h = Harness { session: Session::new(Arc::clone(server), tx, principal, crate::identity::Transport::Stdio), rx };
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    h.ask(&init).await;
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    h
}

/// A channel of 2026-07-28 requests for `principal`.
fn stateless_for(server: &Arc<ServerState>, principal: Principal) -> Harness {
    let (tx, rx) = outbound(OutboundLimits::default());
    Harness { session: Session::one_request(Arc::clone(server), tx, principal), rx }
}

fn request(id: u32, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn modern_request(id: u32, method: &str, mut params: Value) -> String {
    params["_meta"] =
        serde_json::from_str(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#)
            .expect("meta");
    request(id, method, params)
}

fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list["result"][field].as_array().expect("a list").iter().map(|item| item[key].as_str().expect("a name").to_owned()).collect()
}

async fn listed(h: &mut Harness, id: u32, method: &str) -> Value {
    h.ask(&request(id, method, json!({}))).await
}

/// An error with `name` written as `X`, to compare the answers for two names.
fn without(reply: &Value, name: &str) -> String {
    reply["error"].to_string().replace(name, "X")
}

fn bob() -> Principal {
    Principal::token("bob", Vec::new())
}

fn alice() -> Principal {
    Principal::token("alice", Vec::new())
}

#[tokio::test(start_paused = true)]
async fn a_hidden_item_is_left_out_of_lists_and_answered_exactly_like_a_missing_one() {
    let hidden = rule("principal:token bob", &["fake_echo"], &["fake://readme", "fake://items/*"], &["fake_greet"], Effect::Deny);
    let (server, _) = served(policy(vec![hidden]));
    let mut bob_session = legacy(&server, bob(), "{}").await;
    let mut alice_session = legacy(&server, alice(), "{}").await;
    let mut bob_modern = stateless_for(&server, bob());

    let bobs = listed(&mut bob_session, 1, "tools/list").await;
    assert!(!names(&bobs, "tools", "name").contains(&"fake_echo".to_owned()), "{bobs}");
    assert!(names(&bobs, "tools", "name").contains(&"fake_trap".to_owned()), "only what a rule hides is left out");
    let alices = listed(&mut alice_session, 2, "tools/list").await;
    assert!(names(&alices, "tools", "name").contains(&"fake_echo".to_owned()), "the rule is bob's only");
    assert_eq!(names(&listed(&mut bob_session, 3, "resources/list").await, "resources", "uri"), Vec::<String>::new());
    assert_eq!(names(&listed(&mut bob_session, 4, "resources/templates/list").await, "resourceTemplates", "uriTemplate"), Vec::<String>::new());
    assert_eq!(names(&listed(&mut bob_session, 5, "prompts/list").await, "prompts", "name"), Vec::<String>::new());
    let modern_list = bob_modern.ask(&modern_request(6, "tools/list", json!({}))).await;
    assert!(!names(&modern_list, "tools", "name").contains(&"fake_echo".to_owned()));
    assert_eq!(modern_list["result"]["cacheScope"], "private", "a list that differs by principal is never shared: {modern_list}");

    // Used directly by name, each is answered exactly like a name nothing serves.
    for (method, hidden, missing, era_modern) in [
        ("tools/call", json!({"name": "fake_echo", "arguments": {"text": "hi"}}), json!({"name": "fake_nope", "arguments": {"text": "hi"}}), false),
        ("tools/call", json!({"name": "fake_echo", "arguments": {"text": "hi"}}), json!({"name": "fake_nope", "arguments": {"text": "hi"}}), true),
        ("resources/read", json!({"uri": "fake://readme"}), json!({"uri": "fake://nope"}), false),
        ("resources/read", json!({"uri": "fake://items/7"}), json!({"uri": "fake://nope"}), true),
        ("prompts/get", json!({"name": "fake_greet", "arguments": {"name": "a"}}), json!({"name": "fake_nope", "arguments": {"name": "a"}}), false),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "fake_greet"}, "argument": {"name": "name", "value": "a"}}),
            json!({"ref": {"type": "ref/prompt", "name": "fake_nope"}, "argument": {"name": "name", "value": "a"}}),
            false,
        ),
        ("resources/subscribe", json!({"uri": "fake://readme"}), json!({"uri": "fake://nope"}), false),
    ] {
        let (hidden_name, missing_name) = match method {
            "resources/read" | "resources/subscribe" => (hidden["uri"].as_str().unwrap().to_owned(), missing["uri"].as_str().unwrap().to_owned()),
            "completion/complete" => ("fake_greet".to_owned(), "fake_nope".to_owned()),
            _ => (hidden["name"].as_str().unwrap().to_owned(), missing["name"].as_str().unwrap().to_owned()),
        };
        let (denied, unknown) = if era_modern {
            (bob_modern.ask(&modern_request(10, method, hidden.clone())).await, bob_modern.ask(&modern_request(10, method, missing.clone())).await)
        } else {
            (bob_session.ask(&request(10, method, hidden.clone())).await, bob_session.ask(&request(10, method, missing.clone())).await)
        };
        assert!(denied.get("error").is_some(), "{method}: {denied}");
        assert_eq!(without(&denied, &hidden_name), without(&unknown, &missing_name), "{method} (modern: {era_modern})");
        // The same call is served for alice.
        if !era_modern && method != "resources/subscribe" {
            let served = alice_session.ask(&request(11, method, hidden)).await;
            assert!(served.get("result").is_some(), "{method}: {served}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_closed_default_serves_only_what_a_rule_allows_by_group_or_scope() {
    let mut callers = policy(vec![rule("group:readers", &["fake_echo"], &[], &[], Effect::Allow), rule("scope:admin", &["*"], &["*"], &["*"], Effect::Allow)]);
    callers.access.default = Effect::Deny;
    let (server, _) = served(callers);
    let reader = Principal::token("rita", Vec::new()).with_groups(vec!["readers".into()]);
    let admin = Principal::token("adam", vec!["admin".into()]);
    let mut rita = legacy(&server, reader, "{}").await;
    let mut adam = legacy(&server, admin, "{}").await;
    let mut nobody = legacy(&server, Principal::token("nobody", Vec::new()), "{}").await;
    assert_eq!(names(&rita.ask(&request(1, "tools/list", json!({}))).await, "tools", "name"), vec!["fake_echo".to_owned()]);
    assert!(names(&adam.ask(&request(1, "tools/list", json!({}))).await, "tools", "name").len() > 10);
    assert!(names(&nobody.ask(&request(1, "tools/list", json!({}))).await, "tools", "name").is_empty());
    let called = rita.ask(&request(2, "tools/call", json!({"name": "fake_echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(called["result"]["content"][0]["text"], "hi", "{called}");
    let refused = rita.ask(&request(3, "tools/call", json!({"name": "fake_trap", "arguments": {}}))).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test(start_paused = true)]
async fn a_use_that_needs_a_scope_the_token_lacks_names_the_scope() {
    let mut scoped = rule("*", &["fake_echo"], &[], &[], Effect::Allow);
    scoped.scopes = vec!["echo.write".into()];
    let (server, _) = served(policy(vec![scoped]));
    let mut without_scope = legacy(&server, bob(), "{}").await;
    let refused = without_scope.ask(&request(1, "tools/call", json!({"name": "fake_echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(refused["error"]["code"], crate::mcp::INSUFFICIENT_SCOPE, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredScopes"], json!(["echo.write"]));
    assert!(refused["error"]["message"].as_str().unwrap().contains("`echo.write`"), "{refused}");
    assert!(
        names(&without_scope.ask(&request(2, "tools/list", json!({}))).await, "tools", "name").contains(&"fake_echo".to_owned()),
        "still listed: a token with the scope may use it"
    );
    let mut with_scope = legacy(&server, Principal::token("carol", vec!["echo.write".into()]), "{}").await;
    let served = with_scope.ask(&request(1, "tools/call", json!({"name": "fake_echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(served["result"]["content"][0]["text"], "hi", "{served}");
}

#[tokio::test(start_paused = true)]
async fn over_a_rate_limit_the_error_says_when_to_retry_and_lists_are_not_charged() {
    let rates = RateRules { tool: Some(Rate::parse("1/hour", Some(2)).expect("rate")), ..RateRules::default() };
    let callers = CallerPolicy { rates: RateLimits::new(rates), ..CallerPolicy::default() };
    let (server, _) = served(callers);
    let mut h = legacy(&server, bob(), "{}").await;
    for id in 1..=5 {
        let listed = h.ask(&request(id, "tools/list", json!({}))).await;
        assert!(listed.get("result").is_some(), "lists are not charged");
    }
    let call = |id: u32, tool: &str| request(id, "tools/call", json!({"name": tool, "arguments": {"text": "hi"}}));
    assert!(h.ask(&call(10, "fake_echo")).await.get("result").is_some());
    assert!(h.ask(&call(11, "fake_echo")).await.get("result").is_some());
    let limited = h.ask(&call(12, "fake_echo")).await;
    assert_eq!(limited["error"]["code"], crate::mcp::RATE_LIMITED, "{limited}");
    let retry_after = limited["error"]["data"]["retryAfter"].as_u64().expect("seconds");
    assert!((1..=3600).contains(&retry_after), "{limited}");
    let message = limited["error"]["message"].as_str().unwrap();
    assert!(message.contains("your calls to this tool") && message.contains(&format!("wait {retry_after} second")), "{message}");
    // Another tool has its own bucket, another principal too.
    assert!(h.ask(&call(13, "fake_structured_array")).await.get("result").is_some());
    let mut other = legacy(&server, alice(), "{}").await;
    assert!(other.ask(&call(1, "fake_echo")).await.get("result").is_some());
    assert_eq!(server.callers().rates.refused(), 1);
}

fn ask_policy(tool: &str, approval: Approval) -> CallerPolicy {
    let mut asked = rule("*", &[tool], &[], &[], Effect::Allow);
    asked.approval = Some(approval);
    policy(vec![asked])
}

#[tokio::test(start_paused = true)]
async fn a_legacy_approval_asks_the_person_first_and_nothing_runs_without_a_yes() {
    let (server, state) = served(ask_policy("fake_ask_name", Approval::Ask));
    for (answer, runs) in [
        (json!({"action": "accept", "content": {"approve": false}}), 0),
        (json!({"action": "decline"}), 0),
        (json!({"action": "cancel"}), 0),
        // The plugin runs twice: it asks a name, then answers with it.
        (json!({"action": "accept", "content": {"approve": true}}), 2),
    ] {
        state.runs.store(0, Ordering::SeqCst);
        let mut h = legacy(&server, bob(), ALL_CAPS).await;
        h.send(&request(1, "tools/call", json!({"name": "fake_ask_name", "arguments": {"who": "everyone"}}))).await;
        let form = h.recv().await;
        assert_eq!(form["method"], "elicitation/create", "{form}");
        let message = form["params"]["message"].as_str().unwrap();
        assert!(message.contains("token bob") && message.contains("fake_ask_name") && message.contains("everyone"), "{message}");
        assert_eq!(form["params"]["requestedSchema"]["properties"]["approve"]["type"], "boolean");
        h.send(&json!({"jsonrpc": "2.0", "id": form["id"], "result": answer}).to_string()).await;
        let reply = if runs > 0 {
            let question = h.recv().await;
            assert_eq!(question["params"]["message"], "What is your name?", "the plugin runs after the yes: {question}");
            h.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}).to_string()).await;
            h.recv().await
        } else {
            h.recv().await
        };
        assert_eq!(reply["id"], 1);
        assert_eq!(state.runs.load(Ordering::SeqCst), runs, "{answer}: {reply}");
        if runs == 0 {
            assert_eq!(reply["result"]["isError"], true, "{reply}");
            assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("not approved"), "{reply}");
        } else {
            assert!(reply["result"]["content"][0]["text"].as_str().unwrap().starts_with("Hello, Ada"), "{reply}");
        }
    }
    // A client that cannot answer a form is refused before anything is asked.
    let mut h = legacy(&server, bob(), "{}").await;
    let refused = h.ask(&request(1, "tools/call", json!({"name": "fake_ask_name", "arguments": {}}))).await;
    assert_eq!(refused["error"]["code"], crate::mcp::MISSING_REQUIRED_CLIENT_CAPABILITY, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("approval"), "{refused}");
    assert_eq!(state.runs.load(Ordering::SeqCst), 2, "nothing more ran");
}

#[tokio::test(start_paused = true)]
async fn a_stateless_approval_is_bound_to_the_exact_arguments_and_used_once() {
    let (server, _) = served(ask_policy("fake_echo", Approval::Ask));
    let mut h = stateless_for(&server, bob());
    let call = |id: u32, text: &str, extra: Value| {
        let mut params = json!({"name": "fake_echo", "arguments": {"text": text}});
        if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
            params.extend(extra);
        }
        modern_request(id, "tools/call", params)
    };
    let asked = h.ask(&call(1, "hi", json!({}))).await["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["paddock.approval"];
    assert_eq!(form["method"], "elicitation/create");
    assert!(form["params"]["message"].as_str().unwrap().contains("token bob"), "{form}");
    let state = asked["requestState"].clone();
    let yes = json!({"paddock.approval": {"action": "accept", "content": {"approve": true}}});

    // Other arguments with the same approval: refused, nothing runs.
    let other = h.ask(&call(2, "rm -rf /", json!({"inputResponses": yes, "requestState": state}))).await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    // Another principal with the same approval: refused.
    let mut alice_channel = stateless_for(&server, alice());
    let stolen = alice_channel.ask(&call(3, "hi", json!({"inputResponses": yes, "requestState": state}))).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    // The exact call with a yes runs, once.
    let ran = h.ask(&call(4, "hi", json!({"inputResponses": yes, "requestState": state}))).await;
    assert_eq!(ran["result"]["content"][0]["text"], "hi", "{ran}");
    let replayed = h.ask(&call(5, "hi", json!({"inputResponses": yes, "requestState": state}))).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert!(replayed["error"]["message"].as_str().unwrap().contains("already answered"), "{replayed}");

    // A no is an error result that says so.
    let asked = h.ask(&call(6, "hi", json!({}))).await["result"].clone();
    let no = json!({"paddock.approval": {"action": "decline"}});
    let declined = h.ask(&call(7, "hi", json!({"inputResponses": no, "requestState": asked["requestState"]}))).await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert!(declined["result"]["content"][0]["text"].as_str().unwrap().contains("declined"), "{declined}");

    // A client that cannot answer a form is refused.
    let (tx, rx) = outbound(OutboundLimits::default());
    let mut bare = Harness { session: Session::one_request(Arc::clone(&server), tx, bob()), rx };
    let refused = bare.ask(&modern(8, "tools/call", r#""name":"fake_echo","arguments":{"text":"hi"}"#)).await;
    assert_eq!(refused["error"]["code"], crate::mcp::MISSING_REQUIRED_CLIENT_CAPABILITY, "{refused}");
}

#[tokio::test(start_paused = true)]
async fn an_approval_of_deny_never_runs_and_destructive_tools_take_the_default() {
    let (server, state) = served(ask_policy("fake_ask_name", Approval::Deny));
    let mut h = legacy(&server, bob(), ALL_CAPS).await;
    let refused = h.ask(&request(1, "tools/call", json!({"name": "fake_ask_name", "arguments": {}}))).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().contains("never approves"), "{refused}");
    assert_eq!(state.runs.load(Ordering::SeqCst), 0);

    // A tool annotated destructive, with `destructive = "ask"` and no rule naming it.
    let plugin = FakePlugin::new();
    let mut catalog = plugin.catalog.clone();
    for tool in &mut catalog.tools {
        if tool.name == "echo" {
            tool.annotations = Some(crate::protocol::ToolAnnotations { destructive_hint: Some(true), ..Default::default() });
        }
    }
    let plugin = Arc::new(FakePlugin { catalog, state: Arc::default() });
    let router = Router::new(vec![RouterEntry::new(plugin, Prefix::Default)]).0;
    let callers = CallerPolicy { access: AccessRules { destructive: Approval::Ask, ..AccessRules::default() }, ..CallerPolicy::default() };
    let server = ServerState::with_callers(Arc::new(router), StateKey::random().expect("a key"), crate::budget::Budget::unlimited(), callers);
    let mut h = legacy(&server, bob(), ALL_CAPS).await;
    h.send(&request(1, "tools/call", json!({"name": "fake_echo", "arguments": {"text": "hi"}}))).await;
    let form = h.recv().await;
    assert_eq!(form["method"], "elicitation/create", "a destructive tool asks first: {form}");
    h.send(&json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "accept", "content": {"approve": true}}}).to_string()).await;
    assert_eq!(h.recv().await["result"]["content"][0]["text"], "hi");
    let plain = h.ask(&request(2, "tools/call", json!({"name": "fake_fail", "arguments": {}}))).await;
    assert_eq!(plain["id"], 2, "a tool that is not destructive runs without asking: {plain}");
    assert!(plain.get("result").is_some(), "{plain}");
}

#[tokio::test(start_paused = true)]
async fn every_request_that_reaches_policy_is_audited_with_its_outcome_and_never_its_argument_values() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("audit.jsonl");
    let audit = Audit::to_file(&path).expect("audit file");
    let mut hidden = rule("principal:token bob", &["fake_trap"], &[], &[], Effect::Deny);
    hidden.name = "no traps for bob".into();
    let mut asked = rule("*", &["fake_ask_name"], &[], &[], Effect::Allow);
    asked.approval = Some(Approval::Ask);
    let callers = CallerPolicy {
        access: AccessRules { rules: vec![hidden, asked], ..AccessRules::default() },
        rates: RateLimits::new(RateRules {
            tools: [("fake_structured_array".to_owned(), Rate::parse("1/hour", Some(1)).expect("rate"))].into(),
            ..RateRules::default()
        }),
        audit: audit.clone(),
    };
    let (server, _) = served(callers);
    let mut h = legacy(&server, bob(), ALL_CAPS).await;
    let call = |id: u32, tool: &str, arguments: Value| request(id, "tools/call", json!({"name": tool, "arguments": arguments}));
    h.ask(&call(1, "fake_echo", json!({"text": "the secret is hunter2"}))).await;
    h.ask(&call(2, "fake_trap", json!({}))).await;
    h.ask(&call(3, "fake_fail", json!({}))).await;
    h.ask(&call(4, "fake_structured_array", json!({}))).await;
    h.ask(&call(5, "fake_structured_array", json!({}))).await;
    h.ask(&call(6, "fake_nope", json!({}))).await;
    h.send(&call(7, "fake_ask_name", json!({}))).await;
    let form = h.recv().await;
    h.send(&json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "decline"}}).to_string()).await;
    h.recv().await;
    h.ask(&request(8, "tools/list", json!({}))).await;

    let deadline = std::time::Instant::now() + WAIT;
    while audit.counts().written < 7 {
        assert!(std::time::Instant::now() < deadline, "{:?}", audit.counts());
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(1));
    }
    let text = std::fs::read_to_string(&path).expect("audit file");
    assert!(!text.contains("hunter2"), "argument values never reach the audit trail");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let outcomes: Vec<(&str, &str)> = records.iter().map(|r| (r["name"].as_str().unwrap_or(""), r["outcome"].as_str().unwrap_or(""))).collect();
    assert_eq!(
        outcomes,
        vec![
            ("fake_echo", "ok"),
            ("fake_trap", "denied"),
            ("fake_fail", "tool_error"),
            ("fake_structured_array", "ok"),
            ("fake_structured_array", "rate_limited"),
            ("fake_nope", "protocol_error"),
            ("fake_ask_name", "approval_refused"),
        ],
        "lists are not audited: {text}"
    );
    let first = &records[0];
    assert_eq!(first["principal"], "token bob");
    assert_eq!(first["transport"], "stdio");
    assert_eq!(first["revision"], "2025-11-25");
    assert_eq!(first["method"], "tools/call");
    assert_eq!(first["plugin"], "fake");
    assert_eq!(first["arguments_sha256"], crate::audit::Record::digest(json!({"text": "the secret is hunter2"}).to_string().as_bytes()));
    assert!(first["duration_us"].is_u64());
}

#[tokio::test(start_paused = true)]
async fn a_change_to_what_a_principal_may_not_see_is_not_announced_to_it() {
    let hidden = rule("principal:token bob", &["fake_secret*"], &[], &[], Effect::Deny);
    let (server, state) = served(policy(vec![hidden]));
    let mut bob_session = legacy(&server, bob(), "{}").await;
    let mut alice_session = legacy(&server, alice(), "{}").await;
    state.extra_tools.lock().unwrap().push("secret_admin".into());
    alice_session.send(&request(1, "tools/call", json!({"name": "fake_announce", "arguments": {"lists": ["tools"]}}))).await;
    let mut heard = false;
    for _ in 0..3 {
        if alice_session.recv().await["method"] == "notifications/tools/list_changed" {
            heard = true;
            break;
        }
    }
    assert!(heard, "alice sees the new tool, and is told");
    assert!(tokio::time::timeout(Duration::from_millis(200), bob_session.rx.recv()).await.is_err(), "bob's list did not change: he hears nothing");
    // A change bob sees reaches him.
    state.extra_tools.lock().unwrap().push("public".into());
    alice_session.send(&request(2, "tools/call", json!({"name": "fake_announce", "arguments": {"lists": ["tools"]}}))).await;
    let frame = bob_session.recv().await;
    assert_eq!(frame["method"], "notifications/tools/list_changed", "{frame}");
}

#[tokio::test(start_paused = true)]
async fn an_approval_form_answered_after_it_expired_runs_nothing() {
    let router = Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0;
    let limits = super::super::ServerLimits { state_ttl: Duration::ZERO, ..super::super::ServerLimits::default() };
    let server = ServerState::configured(
        Arc::new(router),
        StateKey::random().expect("a key"),
        limits,
        crate::budget::Budget::unlimited(),
        ask_policy("fake_echo", Approval::Ask),
    );
    let mut h = stateless_for(&server, bob());
    let call = |id: u32, extra: Value| {
        let mut params = json!({"name": "fake_echo", "arguments": {"text": "hi"}});
        if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
            params.extend(extra);
        }
        modern_request(id, "tools/call", params)
    };
    let asked = h.ask(&call(1, json!({}))).await["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let yes = json!({"paddock.approval": {"action": "accept", "content": {"approve": true}}});
    let late = h.ask(&call(2, json!({"inputResponses": yes, "requestState": asked["requestState"]}))).await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert!(late["error"]["message"].as_str().unwrap().contains("expired"), "{late}");
}
