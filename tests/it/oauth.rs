//! The HTTP listener as an OAuth 2.1 resource server, against a real issuer: `oauth2-mock-server`
//! (pinned in `tests/clients/ts/package.json`), started on a loopback port by
//! `tests/clients/ts/oauth_issuer.mjs`, which issues tokens with the claims a test asks for.
//! Each attack sits beside its permitted twin; the official clients send an issued token as a
//! header on every transport, and the plugin is told the token's principal.

use std::process::Stdio;

use anyhow::{Context, Result};
use base64::Engine as _;
use paddock_tests::http::{HttpHost, modern_meta};
use paddock_tests::{PluginDir, WAIT, fixture_wasm, run_client_script};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The canonical URI of `/mcp` the tests' servers state (as behind a TLS proxy).
const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

/// A running issuer.
struct Issuer {
    child: tokio::process::Child,
    url: String,
    http: reqwest::Client,
}

fn node() -> Option<String> {
    paddock_tests::installed_client("PADDOCK_TEST_NODE", "Node with oauth2-mock-server")
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Issuer {
    async fn start() -> Option<Issuer> {
        let node = node()?;
        let mut child = tokio::process::Command::new(node)
            .arg(paddock_tests::repo_root().join("tests/clients/ts/oauth_issuer.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the issuer");
        let stdout = child.stdout.take().expect("stdout");
        let line =
            tokio::time::timeout(WAIT, BufReader::new(stdout).lines().next_line()).await.expect("the issuer started in time").expect("read").expect("a line");
        let said: Value = serde_json::from_str(&line).expect("the issuer prints JSON");
        let url = said["issuer"].as_str().expect("issuer").to_owned();
        Some(Issuer { child, url, http: reqwest::Client::builder().timeout(WAIT).build().expect("client") })
    }

    fn jwks_url(&self) -> String {
        format!("{}/jwks", self.url)
    }

    /// A token from the issuer's own token endpoint (client credentials) for `aud` with `scope`,
    /// its payload patched with `claims` (null removes a claim) and its header's kid set to `kid`.
    async fn token_with(&self, aud: &str, scope: &str, claims: Value, kid: Option<&str>) -> String {
        let mut body = json!({"grant_type": "client_credentials", "client_id": "paddock-tests", "aud": aud, "scope": scope, "claims": claims.to_string()});
        if let Some(kid) = kid {
            body["kid"] = json!(kid);
        }
        let reply: Value = self.http.post(format!("{}/token", self.url)).json(&body).send().await.expect("token").json().await.expect("json");
        reply["access_token"].as_str().expect("an access token").to_owned()
    }

    async fn token(&self, claims: Value) -> String {
        self.token_with(RESOURCE, "mcp", claims, None).await
    }

    /// A token signed HS256 with the issuer's public key (its PEM) as the secret.
    async fn hs256(&self, claims: Value) -> String {
        let reply: Value = self
            .http
            .post(format!("{}/test/hs256", self.url))
            .json(&json!({"claims": claims.to_string()}))
            .send()
            .await
            .expect("hs256")
            .json()
            .await
            .expect("json");
        reply["access_token"].as_str().expect("a token").to_owned()
    }

    /// Adds a key to the JWKS; its kid.
    async fn rotate(&self) -> String {
        let reply: Value = self.http.post(format!("{}/test/rotate", self.url)).send().await.expect("rotate").json().await.expect("json");
        reply["kid"].as_str().expect("kid").to_owned()
    }

    async fn jwks_fetches(&self) -> u64 {
        let reply: Value = self.http.get(format!("{}/test/stats", self.url)).send().await.expect("stats").json().await.expect("json");
        reply["jwks"].as_u64().expect("a count")
    }

    async fn stop(mut self) {
        self.child.kill().await.expect("stop the issuer");
    }
}

fn plugins() -> PluginDir {
    PluginDir::new().add("fixture", &fixture_wasm("fixture"))
}

async fn serve(plugins: &PluginDir, jwks_url: &str, issuer: &str, extra: &[&str]) -> HttpHost {
    let mut args = vec!["--oauth-issuer", issuer, "--resource", RESOURCE, "--oauth-jwks-url", jwks_url, "--oauth-scope", "mcp"];
    args.extend_from_slice(extra);
    HttpHost::start(plugins.path(), &args).await.expect("serve")
}

/// What a 2026-07-28 `tools/call` of `fixture_context` got: the status, the challenge, and the
/// caller the plugin was told (when it ran).
struct Answer {
    status: u16,
    challenge: String,
    caller: Option<String>,
}

async fn call(host: &HttpHost, token: Option<&str>) -> Answer {
    call_at(host, "/mcp", token).await
}

async fn call_at(host: &HttpHost, path: &str, token: Option<&str>) -> Answer {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": modern_meta(json!({})), "name": "fixture_context", "arguments": {}}});
    let mut request = reqwest::Client::new()
        .post(host.url(path))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "fixture_context")
        .timeout(WAIT)
        .body(body.to_string());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.expect("answered");
    let status = response.status().as_u16();
    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().expect("ascii").to_owned()).unwrap_or_default();
    let reply: Value = response.json().await.unwrap_or(Value::Null);
    let caller = reply["result"]["content"][0]["text"]
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|seen| seen["caller"].as_str().map(str::to_owned));
    Answer { status, challenge, caller }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test]
async fn each_attack_on_the_token_is_refused_beside_its_permitted_twin() {
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    let alice = format!("{} alice", issuer.url);

    // No token: 401 pointing at the metadata and naming the scope, without `error`.
    let none = call(&host, None).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.challenge, format!(r#"Bearer resource_metadata="{METADATA}", scope="mcp""#));

    let good = issuer.token(json!({})).await;
    let answer = call(&host, Some(&good)).await;
    assert_eq!((answer.status, answer.caller.as_deref()), (200, Some(alice.as_str())), "a token from the issuer serves its subject");

    let t = now();
    let mut presented = Vec::new();
    for (what, refused, permitted) in [
        ("expired past the leeway", json!({"exp": t - 120}), json!({"exp": t - 30})),
        ("not valid yet past the leeway", json!({"nbf": t + 120}), json!({"nbf": t + 30})),
        ("from another issuer", json!({"iss": "http://127.0.0.1:1"}), json!({"iss": issuer.url})),
        ("with a trailing slash on the issuer", json!({"iss": format!("{}/", issuer.url)}), json!({})),
        ("for another audience", json!({"aud": "paddock-tests"}), json!({"aud": ["paddock-tests", RESOURCE]})),
        ("for the resource with a trailing slash", json!({"aud": format!("{RESOURCE}/")}), json!({"aud": RESOURCE})),
        ("without exp", json!({"exp": null}), json!({})),
        ("without sub", json!({"sub": null}), json!({"sub": "alice"})),
    ] {
        let bad = issuer.token(refused.clone()).await;
        let answer = call(&host, Some(&bad)).await;
        assert_eq!(answer.status, 401, "{what}: {refused}");
        assert_eq!(answer.challenge, format!(r#"Bearer resource_metadata="{METADATA}", error="invalid_token", scope="mcp""#), "{what}");
        let twin = issuer.token(permitted.clone()).await;
        let answer = call(&host, Some(&twin)).await;
        assert_eq!((answer.status, answer.caller.as_deref()), (200, Some(alice.as_str())), "the twin of {what}: {permitted}");
        presented.push(bad);
    }
    let log = host.wait_for_log("the audience must be one of").await.expect("the refusal is logged");
    assert!(
        log.contains(&format!(r#"the audience must be one of [\"{RESOURCE}\"], not [\"paddock-tests\"]"#)),
        "a wrong audience says which was expected: {log}"
    );

    // `alg: none`, the issuer's payload unsigned.
    let payload = good.split('.').nth(1).expect("payload");
    for header in [json!({"alg": "none", "typ": "JWT"}), json!({"alg": "none", "kid": "paddock-test-key"}), json!({"alg": "None"})] {
        let unsigned = format!("{}.{payload}.", b64(header.to_string().as_bytes()));
        assert_eq!(call(&host, Some(&unsigned)).await.status, 401, "{header}");
        presented.push(unsigned);
    }
    // Algorithm confusion: HS256 keyed with the public key.
    let confused = issuer.hs256(json!({"aud": RESOURCE, "scope": "mcp"})).await;
    assert_eq!(call(&host, Some(&confused)).await.status, 401, "HS256 with the public key as secret");
    presented.push(confused);
    // Tampering: the signature, or the payload under the original signature.
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    let flipped: String = parts[2].chars().rev().collect();
    let tampered_signature = format!("{}.{}.{flipped}", parts[0], parts[1]);
    let mut claims: Value = serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&parts[1]).expect("b64")).expect("json");
    claims["sub"] = json!("mallory");
    parts[1] = b64(claims.to_string().as_bytes());
    let tampered_payload = parts.join(".");
    for tampered in [tampered_signature, tampered_payload] {
        assert_eq!(call(&host, Some(&tampered)).await.status, 401);
        presented.push(tampered);
    }
    assert_eq!(call(&host, Some(&good)).await.status, 200, "the original still serves");

    // In the query string, never.
    let in_query = call_at(&host, &format!("/mcp?access_token={good}"), None).await;
    assert_eq!(in_query.status, 401, "a token in the query string is not read");

    // A valid token without the required scope: 403 insufficient_scope (step-up).
    let narrow = issuer.token_with(RESOURCE, "read", json!({}), None).await;
    let answer = call(&host, Some(&narrow)).await;
    assert_eq!(answer.status, 403);
    assert_eq!(answer.challenge, format!(r#"Bearer error="insufficient_scope", scope="mcp", resource_metadata="{METADATA}""#));
    let wide = issuer.token_with(RESOURCE, "read mcp", json!({}), None).await;
    assert_eq!(call(&host, Some(&wide)).await.status, 200, "with the scope too");
    let scp = issuer.token_with(RESOURCE, "", json!({"scope": null, "scp": ["mcp"]}), None).await;
    assert_eq!(call(&host, Some(&scp)).await.status, 200, "scopes from `scp`");

    let log = host.log_text();
    for token in presented.iter().chain([&good, &narrow]) {
        let signature = token.rsplit('.').next().unwrap_or_default();
        let secret_part = if signature.is_empty() { token.as_str() } else { signature };
        assert!(!log.contains(secret_part), "the log never holds a token");
    }
    for reason in [
        "expired",
        "not valid yet",
        "the issuer must be `",
        "no `exp`",
        "no `sub`",
        "algorithm `none` is not accepted",
        "algorithm `None` is not accepted",
        "algorithm `HS256` is not accepted",
        "bad signature",
    ] {
        assert!(log.contains(&format!("invalid OAuth token: {reason}")), "each refusal is logged with its reason: {reason}\n{log}");
    }
    issuer.stop().await;
}

#[tokio::test]
async fn the_protected_resource_metadata_names_the_resource_exactly_and_only_with_oauth() {
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &["--oauth-scope", "tools"]).await;
    let http = reqwest::Client::builder().timeout(WAIT).build().expect("client");
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let response = http.get(host.url(path)).send().await.expect("answered");
        assert_eq!(response.status(), 200, "{path}: no token needed");
        let body: Value = response.json().await.expect("json");
        assert_eq!(
            body,
            json!({"resource": RESOURCE, "authorization_servers": [issuer.url], "scopes_supported": ["mcp", "tools"], "bearer_methods_supported": ["header"]}),
            "{path}"
        );
        let foreign = http.get(host.url(path)).header("host", "evil.example.com").send().await.expect("answered");
        assert_eq!(foreign.status(), 403, "{path}: the Host check still applies");
    }
    let other = http.get(host.url("/.well-known/oauth-protected-resource/sse")).send().await.expect("answered");
    assert_eq!(other.status(), 401, "only the two metadata paths are open");

    // Without OAuth there is no metadata.
    let plain = HttpHost::start(plugins.path(), &[]).await.expect("serve");
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        assert_eq!(http.get(plain.url(path)).send().await.expect("answered").status(), 404, "{path}");
    }
    issuer.stop().await;
}

#[tokio::test]
async fn oauth_and_named_static_tokens_serve_side_by_side() {
    let Some(issuer) = Issuer::start().await else { return };
    let token = "bob-static-token-0123456789";
    let digest: String = {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    // OAuth from `[auth]` of paddock.toml this time, the static tokens from --tokens.
    let config = format!("[auth]\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\njwks_url = \"{}\"\nscopes = [\"mcp\"]\n", issuer.url, issuer.jwks_url());
    let plugins = plugins().write("tokens.toml", format!("[[token]]\nname = \"bob\"\nsha256 = \"{digest}\"\n")).write("paddock.toml", config);
    let tokens = plugins.path().join("tokens.toml");
    let host = HttpHost::start(plugins.path(), &["--tokens", tokens.to_str().expect("utf-8")]).await.expect("serve");
    let jwt = issuer.token(json!({})).await;
    assert_eq!(call(&host, Some(&jwt)).await.caller, Some(format!("{} alice", issuer.url)));
    assert_eq!(call(&host, Some(token)).await.caller.as_deref(), Some("token bob"));
    let wrong = call(&host, Some("not-a-token-of-anyone-0123")).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.challenge.contains("resource_metadata=") && wrong.challenge.contains(r#"error="invalid_token""#), "{}", wrong.challenge);
    issuer.stop().await;
}

#[tokio::test]
async fn an_unknown_kid_refetches_the_keys_at_most_once_per_interval() {
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    assert_eq!(call(&host, Some(&issuer.token(json!({})).await)).await.status, 200);
    assert_eq!(issuer.jwks_fetches().await, 1, "the keys are fetched once at start");

    // A key rotated in after the start: its first token makes Paddock fetch the set again.
    let kid = issuer.rotate().await;
    let mut rotated = String::new();
    for _ in 0..2 {
        // The mock hands keys out in turn: ask until the new key signs.
        rotated = issuer.token(json!({"sub": "alice"})).await;
        if jsonwebtoken_kid(&rotated) == kid {
            break;
        }
    }
    assert_eq!(jsonwebtoken_kid(&rotated), kid);
    assert_eq!(call(&host, Some(&rotated)).await.status, 200, "a rotated key is found");
    assert_eq!(issuer.jwks_fetches().await, 2);

    // Random kids within the interval: refused, and the issuer is not asked again.
    for i in 0..5 {
        let forged = issuer.token_with(RESOURCE, "mcp", json!({}), Some(&format!("random-kid-{i}"))).await;
        assert_eq!(call(&host, Some(&forged)).await.status, 401);
    }
    assert_eq!(issuer.jwks_fetches().await, 2, "at most one refetch per interval");
    issuer.stop().await;
}

/// The `kid` of a token's header.
fn jsonwebtoken_kid(token: &str) -> String {
    let header = token.split('.').next().unwrap_or_default();
    let header: Value = serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).expect("b64")).expect("json");
    header["kid"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn keys_unreachable_from_the_start_fail_closed() {
    let Some(issuer) = Issuer::start().await else { return };
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let plugins = plugins();
    let token = issuer.token(json!({})).await;
    let down = serve(&plugins, &format!("http://127.0.0.1:{closed}/jwks"), &issuer.url, &[]).await;
    down.wait_for_log("every OAuth token is refused until they load").await.expect("the failed load is logged");
    assert_eq!(call(&down, Some(&token)).await.status, 401, "no keys yet: refused");
    let up = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    assert_eq!(call(&up, Some(&token)).await.status, 200, "the twin with the issuer reachable");
    issuer.stop().await;
}

#[tokio::test]
async fn keys_unreachable_after_a_good_fetch_keep_serving_the_last_good_set() {
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    assert_eq!(call(&host, Some(&issuer.token(json!({})).await)).await.status, 200);
    let later = issuer.token(json!({"sub": "bob"})).await;
    let unknown = issuer.token_with(RESOURCE, "mcp", json!({}), Some("not-in-the-set")).await;
    let url = issuer.url.clone();
    issuer.stop().await;
    assert_eq!(call(&host, Some(&unknown)).await.status, 401, "an unknown kid with the issuer down");
    host.wait_for_log("the last good set stays in use").await.expect("the failed refetch is logged");
    let answer = call(&host, Some(&later)).await;
    assert_eq!((answer.status, answer.caller), (200, Some(format!("{url} bob"))), "a token never seen before, verified with the last good set");
}

/// Whom `fixture_context` was told it serves, as an official client reports it.
async fn client_caller(interpreter: &str, script: &str, args: &[&str], host: &HttpHost) -> Value {
    let args: Vec<std::ffi::OsString> = args.iter().map(std::ffi::OsString::from).collect();
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsString::as_os_str).collect();
    run_client_script(interpreter, script, &args, || host.log_text()).await
}

#[tokio::test]
async fn the_python_client_sends_the_token_in_both_eras_and_over_sse() {
    let Some(python) = paddock_tests::installed_client("PADDOCK_TEST_PYTHON", "the Python client") else { return };
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    let token = issuer.token(json!({})).await;
    let base = host.url("");
    for (mode, transport, version) in [("legacy", "http", "2025-11-25"), ("2026-07-28", "http", "2026-07-28"), ("legacy", "sse", "2024-11-05")] {
        let summary = client_caller(&python, "py/e2e_oauth.py", &[&base, &token, mode, transport], &host).await;
        assert_eq!(summary["caller"], format!("{} alice", issuer.url), "{mode} {transport}: {summary}");
        if transport == "http" {
            assert_eq!(summary["protocol_version"], version, "{summary}");
        }
    }
    issuer.stop().await;
}

#[tokio::test]
async fn the_typescript_client_sends_the_token_over_streamable_http_and_sse() {
    let Some(node) = node() else { return };
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    let token = issuer.token(json!({})).await;
    let base = host.url("");
    for transport in ["http", "sse"] {
        let summary = client_caller(&node, "ts/e2e_oauth.mjs", &[&base, &token, transport], &host).await;
        assert_eq!(summary["caller"], format!("{} alice", issuer.url), "{transport}: {summary}");
    }
    issuer.stop().await;
}

#[tokio::test]
async fn the_rmcp_client_sends_the_token_in_both_eras() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ProtocolVersion};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let Some(issuer) = Issuer::start().await else { return };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    let token = issuer.token(json!({})).await;
    for modern in [false, true] {
        let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(host.url("/mcp")).auth_header(token.clone()));
        let client = if modern {
            let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
            tokio::time::timeout(WAIT, ().serve_with_lifecycle(transport, lifecycle)).await.expect("in time").expect("discover")
        } else {
            tokio::time::timeout(WAIT, ().serve(transport)).await.expect("in time").expect("initialize")
        };
        let expected = if modern { ProtocolVersion::V_2026_07_28 } else { ProtocolVersion::V_2025_11_25 };
        assert_eq!(client.peer_info().expect("server info").protocol_version, expected);
        let result = tokio::time::timeout(WAIT, client.call_tool(CallToolRequestParams::new("fixture_context"))).await.expect("in time").expect("tools/call");
        let seen: Value = serde_json::from_str(&result.content[0].as_text().expect("text").text).expect("json");
        assert_eq!(seen["caller"], format!("{} alice", issuer.url), "modern {modern}: {seen}");
        client.cancel().await.expect("close");
    }
    issuer.stop().await;
}

#[tokio::test]
async fn a_websocket_is_authenticated_at_connect_with_the_token() -> Result<()> {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let Some(issuer) = Issuer::start().await else { return Ok(()) };
    let plugins = plugins();
    let host = serve(&plugins, &issuer.jwks_url(), &issuer.url, &[]).await;
    let token = issuer.token(json!({})).await;

    let request = |token: Option<&str>| -> Result<_> {
        let mut request = host.ws_url("/ws").into_client_request()?;
        request.headers_mut().insert("sec-websocket-protocol", "mcp".parse()?);
        if let Some(token) = token {
            request.headers_mut().insert("authorization", format!("Bearer {token}").parse()?);
        }
        Ok(request)
    };
    let refused = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request(None)?)).await.context("in time")?;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), 401),
        other => panic!("a WebSocket without a token is refused at connect: {other:?}"),
    }
    let (mut socket, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request(Some(&token))?)).await.context("in time")??;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ws", "version": "0"}}});
    socket.send(Message::text(init.to_string())).await?;
    let reply = tokio::time::timeout(WAIT, next_message(&mut socket)).await?.context("initialize answered")?;
    assert_eq!(reply["id"], 1, "{reply}");
    socket.send(Message::text(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())).await?;
    socket
        .send(Message::text(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fixture_context", "arguments": {}}}).to_string()))
        .await?;
    let reply = tokio::time::timeout(WAIT, next_message(&mut socket)).await?.context("tools/call answered")?;
    let seen: Value = serde_json::from_str(reply["result"]["content"][0]["text"].as_str().context("text")?)?;
    assert_eq!(seen["caller"], format!("{} alice", issuer.url));
    socket.close(None).await?;
    issuer.stop().await;
    Ok(())
}

/// The next text message of a WebSocket, as JSON.
async fn next_message<S: futures::Stream<Item = Result<tokio_tungstenite::tungstenite::Message, tokio_tungstenite::tungstenite::Error>> + Unpin>(
    socket: &mut S,
) -> Option<Value> {
    use futures::StreamExt;
    loop {
        match socket.next().await {
            Some(Ok(tokio_tungstenite::tungstenite::Message::Text(text))) => return serde_json::from_str::<Value>(&text).ok(),
            Some(Ok(_)) => {}
            _ => return None,
        }
    }
}

#[tokio::test]
async fn bad_oauth_settings_stop_the_start_with_the_fix() {
    let plugins = plugins();
    let dir = plugins.path().to_str().expect("utf-8").to_owned();
    for (args, expected) in [
        (vec!["--oauth-issuer", "https://auth.example.com", "--oauth-jwks-url", "https://auth.example.com/jwks"], "--resource"),
        (vec!["--oauth-issuer", "https://auth.example.com", "--resource", RESOURCE, "--oauth-jwks-url", "http://auth.example.com/jwks"], "loopback"),
        (
            vec![
                "--oauth-issuer",
                "https://auth.example.com",
                "--resource",
                RESOURCE,
                "--oauth-jwks-url",
                "https://a.example/jwks",
                "--oauth-algorithms",
                "RS256,HS256",
            ],
            "never accepted",
        ),
    ] {
        let mut full = vec!["serve", &dir, "--http", "127.0.0.1:0"];
        full.extend(args.iter().copied());
        let (code, _, stderr) = tokio::time::timeout(WAIT, paddock_tests::run_paddock(&full)).await.expect("in time").expect("ran");
        assert_ne!(code, 0, "{args:?}");
        assert!(stderr.contains(expected) && stderr.contains("fix:"), "{args:?}: {stderr}");
    }
    let config = "[auth]\nissuer = \"https://auth.example.com\"\nresource = \"https://mcp.example.com/mcp\"\njwks_url = \"https://auth.example.com/jwks\"\nalgorithms = [\"none\"]\n";
    let with_file = PluginDir::new().write("paddock.toml", config);
    let (code, stdout, stderr) =
        tokio::time::timeout(WAIT, paddock_tests::run_paddock(&["check", with_file.path().to_str().expect("utf-8")])).await.expect("in time").expect("ran");
    assert_ne!(code, 0);
    assert!(format!("{stdout}{stderr}").contains("auth.algorithms"), "{stdout}{stderr}");
}

#[tokio::test]
async fn tool_policy_matches_a_tokens_groups_and_scopes_and_a_tools_scope_is_a_step_up_challenge() {
    let Some(issuer) = Issuer::start().await else { return };
    let config = format!(
        r#"[auth]
issuer = "{}"
resource = "{RESOURCE}"
jwks_url = "{}"
scopes = ["mcp"]

[access]
default = "deny"

[[access.rule]]
name = "readers see the context"
who = ["group:readers"]
tools = ["fixture_context"]

[[access.rule]]
name = "echo needs a scope"
who = ["*"]
tools = ["fixture_echo"]
scopes = ["echo.use"]
"#,
        issuer.url,
        issuer.jwks_url()
    );
    let plugins = plugins().write("paddock.toml", config);
    let host = HttpHost::start(plugins.path(), &[]).await.expect("serve");
    let reader = issuer.token(json!({"groups": ["readers"]})).await;
    let outsider = issuer.token(json!({"groups": ["visitors"]})).await;
    assert_eq!(call(&host, Some(&reader)).await.caller, Some(format!("{} alice", issuer.url)), "the group claim opens the tool");
    let hidden = call(&host, Some(&outsider)).await;
    assert_eq!((hidden.status, hidden.caller), (400, None), "hidden from another group, answered like an unknown tool");

    let echo = |token: String| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": modern_meta(json!({})), "name": "fixture_echo", "arguments": {"text": "hi"}}});
        reqwest::Client::new()
            .post(host.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "fixture_echo")
            .header("authorization", format!("Bearer {token}"))
            .timeout(WAIT)
            .body(body.to_string())
            .send()
    };
    let refused = echo(reader.clone()).await.expect("answered");
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers()["www-authenticate"].to_str().expect("ascii").to_owned();
    assert_eq!(challenge, format!(r#"Bearer error="insufficient_scope", scope="echo.use", resource_metadata="{METADATA}""#));
    let stepped_up = issuer.token_with(RESOURCE, "mcp echo.use", json!({}), None).await;
    assert_eq!(echo(stepped_up).await.expect("answered").status(), 200, "a token with the scope is served");
    issuer.stop().await;
}
