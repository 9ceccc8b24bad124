//! Input requests and answers at the WIT boundary: what a plugin may ask, and answers checked.

use serde_json::json;

use super::*;

fn form(key: &str) -> wi::InputRequest {
    wi::InputRequest {
        key: key.into(),
        request: wi::InputRequestKind::ElicitForm(wi::FormElicitation {
            message: "Name?".into(),
            requested_schema: r#"{"type":"object","properties":{"name":{"type":"string"}}}"#.into(),
        }),
    }
}

fn text(t: &str) -> wi::SamplingContent {
    wi::SamplingContent::Text(w::TextContent { text: t.into(), annotations: None, meta: None })
}

#[test]
fn requests_become_mcp_params_and_cost_their_wire_size() {
    let sample = wi::InputRequest {
        key: "capital".into(),
        request: wi::InputRequestKind::Sample(wi::SamplingRequest {
            messages: vec![wi::SamplingMessage { role: w::Role::User, content: vec![text("Capital of France?")], meta: None }],
            system_prompt: Some("Be brief".into()),
            max_tokens: 10,
            temperature: Some(f64::NAN),
            stop_sequences: vec![],
            model_preferences: Some(wi::ModelPreferences {
                hints: vec![wi::ModelHint { name: Some("claude".into()) }],
                cost_priority: Some(2.0),
                speed_priority: None,
                intelligence_priority: None,
            }),
            include_context: Some(wi::IncludeContext::ThisServer),
            metadata: None,
            tools: Some(r#"[{"name":"t","inputSchema":{"type":"object"}}]"#.into()),
            tool_choice: Some(wi::ToolChoice::Auto),
        }),
    };
    let url = wi::InputRequest {
        key: "login".into(),
        request: wi::InputRequestKind::ElicitUrl(wi::UrlElicitation { message: "Sign in".into(), url: "https://example.com/login".into() }),
    };
    let roots = wi::InputRequest { key: "roots".into(), request: wi::InputRequestKind::ListRoots };
    let mut budget = Budget::new(1 << 20);
    let round = wi::InputRequired { requests: vec![form("name"), sample, url, roots], state: Some(vec![1, 2, 3]), in_task: false };
    let converted = input_required(round, &mut budget).expect("a valid round");
    assert_eq!(converted.state, Some(vec![1, 2, 3]));
    let [name, capital, login, roots] = converted.requests.as_slice() else { panic!("four requests") };
    assert_eq!(name.method, InputMethod::ElicitForm);
    assert_eq!(
        name.to_wire(),
        json!({"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
    );
    assert_eq!(capital.method, InputMethod::Sample { tools: true, context: true });
    let params = Value::Object(capital.params.clone());
    assert_eq!(params["messages"][0]["content"], json!({"type": "text", "text": "Capital of France?"}), "one block travels as itself");
    assert_eq!(params["modelPreferences"], json!({"hints": [{"name": "claude"}], "costPriority": 1.0}), "priorities are clamped");
    assert!(params.get("temperature").is_none(), "a NaN temperature is left out");
    assert_eq!(params["includeContext"], "thisServer");
    assert_eq!(params["toolChoice"], json!({"mode": "auto"}));
    assert_eq!(login.method, InputMethod::ElicitUrl);
    assert_eq!(login.params["mode"], "url");
    assert_eq!(roots.to_wire(), json!({"method": "roots/list", "params": {}}));

    let mut small = Budget::new(64);
    let round = wi::InputRequired { requests: vec![form("name")], state: None, in_task: false };
    assert_eq!(input_required(round, &mut small), Err(PluginError::Limit { limit: crate::plugin::Limit::Output }), "charged to the output budget");
}

#[test]
fn bad_rounds_are_malformed_output_naming_the_problem() {
    let refused = |round: wi::InputRequired| match input_required(round, &mut Budget::new(16 << 20)) {
        Err(PluginError::MalformedOutput(why)) => why,
        other => panic!("{other:?}"),
    };
    assert!(refused(wi::InputRequired { requests: vec![], state: None, in_task: false }).contains("no input request and no state"));
    assert!(refused(wi::InputRequired { requests: vec![form("a"), form("a")], state: None, in_task: false }).contains("`a` is used twice"));
    assert!(refused(wi::InputRequired { requests: vec![form("")], state: None, in_task: false }).contains("1 to 128 bytes"));
    assert!(refused(wi::InputRequired { requests: vec![form("a\nb")], state: None, in_task: false }).contains("control characters"));
    let many = (0..=MAX_INPUT_REQUESTS).map(|i| form(&format!("k{i}"))).collect();
    assert!(refused(wi::InputRequired { requests: many, state: None, in_task: false }).contains("at most 16"));
    assert!(refused(wi::InputRequired { requests: vec![], state: Some(vec![0; MAX_PLUGIN_STATE + 1]), in_task: false }).contains("65536"));
    let mut bad_schema = form("a");
    if let wi::InputRequestKind::ElicitForm(f) = &mut bad_schema.request {
        f.requested_schema = "[1,2".into();
    }
    assert!(refused(wi::InputRequired { requests: vec![bad_schema], state: None, in_task: false }).contains("input request `a`"));
    assert_eq!(
        input_required(wi::InputRequired { requests: vec![], state: Some(vec![]), in_task: false }, &mut Budget::new(64)).map(|r| r.state),
        Ok(Some(vec![])),
        "a state alone is a valid round"
    );
}

fn context_with(method: InputMethod, result: Value) -> RequestContext {
    let mut context = RequestContext::local(crate::revision::Revision::V2026_07_28);
    context.input_responses = vec![InputResponse { key: "k".into(), method, result }];
    context
}

#[test]
fn answers_are_checked_against_their_method_and_reach_the_plugin_typed() {
    let sampled = json!({"role": "assistant", "content": [{"type": "text", "text": "Paris"}, {"type": "tool_use", "id": "1", "name": "t", "input": {}}], "model": "m", "stopReason": "toolUse"});
    let wit = request_context(&context_with(InputMethod::Sample { tools: true, context: false }, sampled)).expect("valid");
    let [wi::InputResponse { key, response: wi::InputResponseKind::Sampling(s) }] = wit.input_responses.as_slice() else { panic!("one sampling answer") };
    assert_eq!(key, "k");
    assert_eq!((s.model.as_str(), s.stop_reason.as_deref(), s.content.len()), ("m", Some("toolUse"), 2));

    let roots = request_context(&context_with(InputMethod::ListRoots, json!({"roots": [{"uri": "file:///a", "name": "a"}]}))).expect("valid");
    assert!(matches!(&roots.input_responses[0].response, wi::InputResponseKind::Roots(r) if r[0].uri == "file:///a"));

    for (method, bad) in [
        (InputMethod::ElicitForm, json!({"action": "maybe"})),
        (InputMethod::ElicitForm, json!({"action": "accept", "content": [1]})),
        (InputMethod::Sample { tools: false, context: false }, json!({"role": "robot", "content": {"type": "text", "text": "x"}, "model": "m"})),
        (
            InputMethod::Sample { tools: false, context: false },
            json!({"role": "assistant", "content": {"type": "image", "data": "%%", "mimeType": "image/png"}, "model": "m"}),
        ),
        (InputMethod::ListRoots, json!({"roots": [{"name": "no uri"}]})),
        (InputMethod::ListRoots, json!("not an object")),
    ] {
        match request_context(&context_with(method, bad.clone())) {
            Err(PluginError::InvalidInputResponse(why)) => assert!(why.contains("input response `k`"), "{why}"),
            other => panic!("{bad} was accepted: {other:?}"),
        }
    }
}

fn url_request(url: &str) -> wi::InputRequired {
    let page =
        wi::InputRequest { key: "login".into(), request: wi::InputRequestKind::ElicitUrl(wi::UrlElicitation { message: "Sign in".into(), url: url.into() }) };
    wi::InputRequired { requests: vec![page], state: None, in_task: false }
}

#[test]
fn a_url_elicitation_sends_the_user_only_to_https_or_a_loopback_page() {
    for url in [
        "https://example.com/login",
        "HTTPS://Example.com:8443/login?next=%2F#top",
        "https://example.com",
        "https://[2001:db8::1]/",
        "https://93.184.216.34/x",
        "http://localhost:8080/callback",
        "http://LOCALHOST/",
        "http://127.0.0.1:3000/",
        "http://127.200.3.4/",
        "http://[::1]:8080/cb",
        "http://[::1]",
    ] {
        let converted = input_required(url_request(url), &mut Budget::new(1 << 20)).unwrap_or_else(|e| panic!("{url}: {e:?}"));
        assert_eq!(converted.requests[0].params["url"], url, "the page is passed on as the plugin wrote it");
    }
    for (url, why) in [
        ("javascript:alert(1)", "absolute"),
        ("javascript://example.com/%0Aalert(1)", "absolute"),
        ("file:///etc/passwd", "absolute"),
        ("data:text/html,<script>alert(1)</script>", "absolute"),
        ("ftp://example.com/", "absolute"),
        ("/login", "absolute"),
        ("example.com/login", "absolute"),
        ("//example.com/login", "absolute"),
        ("https:example.com", "absolute"),
        ("", "printable ASCII"),
        ("https://exa mple.com/", "printable ASCII"),
        ("https://example.com/\n", "printable ASCII"),
        ("https:\\\\example.com", "printable ASCII"),
        ("https://exämple.com/", "printable ASCII"),
        ("https://user:pass@example.com/", "credentials"),
        ("https://example.com@evil.example/", "credentials"),
        ("https:///login", "host"),
        ("https://:443/", "host"),
        ("https://example.com:99999/", "host"),
        ("https://example.com:443:1/", "host"),
        ("https://[::1/", "host"),
        ("https://[::1]x/", "host"),
        ("https://[not-an-address]/", "host"),
        ("https://exa<mple.com/", "host"),
        ("http://example.com/login", "loopback"),
        ("http://10.0.0.1/", "loopback"),
        ("http://localhost.evil.example/", "loopback"),
        ("http://127.0.0.1.evil.example/", "loopback"),
        ("http://[::2]/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
    ] {
        match input_required(url_request(url), &mut Budget::new(1 << 20)) {
            Err(PluginError::MalformedOutput(message)) => {
                assert!(message.starts_with("input request `login`: "), "{url}: {message}");
                assert!(message.contains(why), "{url}: {message}");
            }
            other => panic!("{url} was accepted: {other:?}"),
        }
    }
}
