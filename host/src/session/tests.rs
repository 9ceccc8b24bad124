//! Session transcript tests against fake plugins (no wasm), in both protocol eras.

use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio::sync::Notify;

use super::{OutboundLimits, OutboundReceiver, ServerState, Session, outbound};
use crate::identity::Principal;
use crate::input::{InputMethod, InputRequest, InputRequired, Outcome, StateKey};
use crate::plugin::{BoxFuture, CallContext, CallEvent, Catalog, ListKind, LogLevel, Plugin, PluginError};
use crate::protocol::{
    CacheHint, CacheScope, CallToolResult, Completion, CompletionRequest, CompletionTarget, ContentBlock, GetPromptResult, Prompt, PromptArgument,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, Tool,
};
use crate::router::{Prefix, Router, RouterEntry};

const WAIT: Duration = Duration::from_secs(10);
const MODERN_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// A plugin with a few tools that exercise every outcome, a resource, a template and a prompt.
pub(crate) struct FakePlugin {
    catalog: Catalog,
    state: Arc<FakeState>,
}

/// What tests observe of, and control in, a `FakePlugin`.
#[derive(Default)]
pub(crate) struct FakeState {
    /// Releases every `gate` call (which ignores cancellation).
    release: Notify,
    released: AtomicBool,
    /// Signalled when an `obedient` call starts and when it stops after seeing the cancellation.
    started: Notify,
    stopped: Notify,
    saw_cancel: AtomicBool,
    /// Signalled when a `flood` call has emitted everything and returns.
    flooded: Notify,
    gates_entered: AtomicUsize,
    /// Runs of `ask_name`.
    runs: AtomicUsize,
    /// Tools the plugin declares when its lists are read again (`announce` makes that happen).
    extra_tools: std::sync::Mutex<Vec<String>>,
    /// Tools the plugin no longer declares when its lists are read again.
    withdrawn_tools: std::sync::Mutex<Vec<String>>,
    /// Prompts the plugin declares when its lists are read again.
    extra_prompts: std::sync::Mutex<Vec<String>>,
    /// The description `echo` has when the lists are read again, when set.
    echo_described: std::sync::Mutex<Option<String>>,
    /// Times the lists were read again.
    reloads: AtomicUsize,
    /// While set, reading the lists again waits for `reloads_released`.
    hold_reloads: AtomicBool,
    reloads_released: Notify,
    /// Makes reading the lists again fail.
    reload_fails: AtomicBool,
}

impl FakeState {
    fn open_gates(&self) {
        self.released.store(true, Ordering::SeqCst);
        self.release.notify_waiters();
    }
}

/// Client capabilities that declare every kind of input.
const ALL_CAPS: &str = r#"{"elicitation":{},"sampling":{},"roots":{}}"#;

fn tool(name: &str) -> Tool {
    let schema = serde_json::value::RawValue::from_string(r#"{"type":"object"}"#.into()).expect("schema");
    let tool = Tool::new(name, schema).with_description(format!("fake {name}"));
    let tool = match name {
        "background" | "confirm" | "task_error" => tool.with_task_support(crate::protocol::TaskSupport::Optional),
        "only_task" | "greet_task" => tool.with_task_support(crate::protocol::TaskSupport::Required),
        _ => tool,
    };
    if name == "needs_sampling" { tool.with_required_capabilities(json!({"sampling": {}}).as_object().cloned().expect("object")) } else { tool }
}

fn elicit(key: &str, message: &str) -> InputRequest {
    let params = json!({"message": message, "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
    InputRequest { key: key.into(), method: InputMethod::ElicitForm, params: params.as_object().cloned().expect("object") }
}

fn sample(key: &str) -> InputRequest {
    let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}], "maxTokens": 10});
    InputRequest { key: key.into(), method: InputMethod::Sample { tools: false, context: false }, params: params.as_object().cloned().expect("object") }
}

fn roots(key: &str) -> InputRequest {
    InputRequest { key: key.into(), method: InputMethod::ListRoots, params: serde_json::Map::new() }
}

/// The answer under `key` in the request's input responses.
fn answer<'a>(cx: &'a CallContext, key: &str) -> Option<&'a Value> {
    cx.request.input_responses.iter().find(|r| r.key == key).map(|r| &r.result)
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::text(text)
}

impl FakePlugin {
    pub(crate) fn new() -> Arc<FakePlugin> {
        let catalog = Catalog {
            tools: [
                "echo",
                "trap",
                "slow",
                "events",
                "missing",
                "gate",
                "obedient",
                "panic",
                "flood",
                "ask_name",
                "ask_three",
                "two_rounds",
                "needs_sampling",
                "ask_forever",
                "structured_array",
                "announce",
                "refuse",
                "fail",
                "background",
                "confirm",
                "task_error",
                "only_task",
                "greet_task",
            ]
            .into_iter()
            .map(tool)
            .collect(),
            resources: vec![Resource::new("fake://readme", "readme").with_mime_type("text/plain")],
            resource_templates: vec![ResourceTemplate::new("fake://items/{id}", "item")],
            prompts: vec![Prompt::new("greet").with_arguments(vec![PromptArgument::new("name", true)])],
            ..Catalog::default()
        };
        Arc::new(FakePlugin { catalog, state: Arc::default() })
    }
}

impl Plugin for FakePlugin {
    fn id(&self) -> &str {
        "fake"
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn reload_catalog(&self) -> BoxFuture<'_, Result<Catalog, PluginError>> {
        Box::pin(async move {
            let released = self.state.reloads_released.notified();
            if self.state.hold_reloads.load(Ordering::SeqCst) {
                released.await;
            }
            self.state.reloads.fetch_add(1, Ordering::SeqCst);
            if self.state.reload_fails.load(Ordering::SeqCst) {
                return Err(PluginError::Trap("wasm trap: unreachable".into()));
            }
            let mut catalog = self.catalog.clone();
            catalog.tools.extend(self.state.extra_tools.lock().unwrap().iter().map(|name| tool(name)));
            let withdrawn = self.state.withdrawn_tools.lock().unwrap().clone();
            catalog.tools.retain(|tool| !withdrawn.contains(&tool.name));
            catalog.prompts.extend(self.state.extra_prompts.lock().unwrap().iter().map(Prompt::new));
            if let Some(description) = self.state.echo_described.lock().unwrap().clone() {
                for echo in catalog.tools.iter_mut().filter(|t| t.name == "echo") {
                    *echo = echo.clone().with_description(description.clone());
                }
            }
            Ok(catalog)
        })
    }

    fn call_tool<'a>(&'a self, tool: &'a str, arguments: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>> {
        Box::pin(async move {
            match tool {
                "ask_name" => {
                    self.state.runs.fetch_add(1, Ordering::SeqCst);
                    return Ok(match answer(cx, "user_name") {
                        Some(reply) => Outcome::Complete(text_result(format!(
                            "Hello, {} (state {:?}, protocol {})",
                            reply["content"]["name"].as_str().unwrap_or("?"),
                            cx.request.state.as_deref().map(String::from_utf8_lossy),
                            cx.request.protocol_version
                        ))),
                        None => Outcome::InputRequired(InputRequired {
                            requests: vec![elicit("user_name", "What is your name?")],
                            state: Some(b"asked".to_vec()),
                            in_task: false,
                        }),
                    });
                }
                "ask_three" => {
                    return Ok(match (answer(cx, "name"), answer(cx, "capital"), answer(cx, "roots")) {
                        (Some(name), Some(capital), Some(roots)) => Outcome::Complete(text_result(format!(
                            "{} / {} / {}",
                            name["action"].as_str().unwrap_or("?"),
                            capital["content"]["text"].as_str().unwrap_or("?"),
                            roots["roots"].as_array().map_or(0, Vec::len)
                        ))),
                        _ => Outcome::InputRequired(InputRequired {
                            requests: vec![elicit("name", "Name?"), sample("capital"), roots("roots")],
                            state: None,
                            in_task: false,
                        }),
                    });
                }
                "two_rounds" => {
                    return Ok(match (cx.request.state.as_deref(), answer(cx, "first"), answer(cx, "second")) {
                        (None, _, _) => Outcome::InputRequired(InputRequired {
                            requests: vec![elicit("first", "First?")],
                            state: Some(b"round-1".to_vec()),
                            in_task: false,
                        }),
                        (Some(b"round-1"), Some(first), _) => Outcome::InputRequired(InputRequired {
                            requests: vec![elicit("second", "Second?")],
                            state: Some(format!("round-2:{}", first["content"]["name"].as_str().unwrap_or("?")).into_bytes()),
                            in_task: false,
                        }),
                        (Some(state), _, Some(second)) => Outcome::Complete(text_result(format!(
                            "{} then {}",
                            String::from_utf8_lossy(state),
                            second["content"]["name"].as_str().unwrap_or("?")
                        ))),
                        (Some(state), _, _) => Outcome::Complete(text_result(format!("unexpected state {}", String::from_utf8_lossy(state)))),
                    });
                }
                "needs_sampling" => return Ok(Outcome::Complete(text_result("sampled"))),
                "background" => {
                    // Runs for `ms` milliseconds (or until cancelled).
                    let args: Value = serde_json::from_str(arguments).map_err(|e| PluginError::InvalidParams(e.to_string()))?;
                    let until = tokio::time::Instant::now() + Duration::from_millis(args["ms"].as_u64().unwrap_or(60_000));
                    while tokio::time::Instant::now() < until {
                        if cx.is_cancelled() {
                            return Err(PluginError::Cancelled);
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    return Ok(Outcome::Complete(text_result("background work done")));
                }
                "confirm" => {
                    return Ok(match answer(cx, "confirm") {
                        Some(reply) => Outcome::Complete(text_result(format!("confirmed: {}", reply["action"].as_str().unwrap_or("?")))),
                        None => Outcome::InputRequired(InputRequired { requests: vec![elicit("confirm", "Go ahead?")], state: None, in_task: true }),
                    });
                }
                "task_error" => {
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    return Err(PluginError::InvalidParams("the job cannot run".into()));
                }
                "only_task" => return Ok(Outcome::Complete(text_result("only as a task"))),
                "greet_task" => {
                    return Ok(match answer(cx, "user_name") {
                        Some(reply) => Outcome::Complete(text_result(format!("Hello, {}!", reply["content"]["name"].as_str().unwrap_or("?")))),
                        None => Outcome::InputRequired(InputRequired { requests: vec![elicit("user_name", "Name?")], state: None, in_task: false }),
                    });
                }
                "announce" => {
                    // {"lists": ["tools", …], "updated": ["uri", …], "times": n}
                    let args: Value = serde_json::from_str(arguments).map_err(|e| PluginError::InvalidParams(e.to_string()))?;
                    let plugin: Arc<str> = Arc::from("fake");
                    for _ in 0..args["times"].as_u64().unwrap_or(1) {
                        for kind in args["lists"].as_array().into_iter().flatten() {
                            let kind = match kind.as_str() {
                                Some("tools") => ListKind::Tools,
                                Some("prompts") => ListKind::Prompts,
                                _ => ListKind::Resources,
                            };
                            cx.emit(CallEvent::ListChanged { plugin: plugin.clone(), kind });
                        }
                        for uri in args["updated"].as_array().into_iter().flatten() {
                            cx.emit(CallEvent::ResourceUpdated { plugin: plugin.clone(), uri: uri.as_str().unwrap_or_default().to_owned() });
                        }
                    }
                    return Ok(Outcome::Complete(text_result("announced")));
                }
                name if self.state.extra_tools.lock().unwrap().iter().any(|t| t == name) => {
                    return Ok(Outcome::Complete(text_result(format!("{name} is new"))));
                }
                "structured_array" => {
                    let structured = serde_json::value::RawValue::from_string("[1,2]".into()).expect("json");
                    return Ok(Outcome::Complete(CallToolResult::structured(structured)));
                }
                "ask_forever" => return Ok(Outcome::InputRequired(InputRequired { requests: vec![roots("again")], state: None, in_task: false })),
                _ => {}
            }
            let result = match tool {
                "echo" => {
                    let args: Value = serde_json::from_str(arguments).map_err(|e| PluginError::InvalidParams(e.to_string()))?;
                    Ok(CallToolResult::text(args["text"].as_str().unwrap_or_default()))
                }
                "trap" => Err(PluginError::Trap("wasm trap: unreachable".into())),
                "refuse" => Err(PluginError::InvalidParams("no paths here".into())),
                "fail" => Err(PluginError::Failed("the disk is full".into())),
                "slow" => {
                    // Runs until cancelled (or far longer than any test waits).
                    for _ in 0..1000 {
                        if cx.is_cancelled() {
                            return Ok(Outcome::Complete(CallToolResult::error("cancelled")));
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Ok(CallToolResult::error("never cancelled"))
                }
                "events" => {
                    cx.emit(CallEvent::Log { level: LogLevel::Debug, logger: None, data: "debug detail".into() });
                    cx.emit(CallEvent::Log { level: LogLevel::Warning, logger: Some("fake".into()), data: r#"{"k":1}"#.into() });
                    cx.emit(CallEvent::Progress { progress: 1.0, total: Some(2.0), message: Some("half".into()) });
                    cx.emit(CallEvent::Progress { progress: 0.5, total: Some(2.0), message: None });
                    cx.emit(CallEvent::Progress { progress: 2.0, total: Some(2.0), message: None });
                    Ok(CallToolResult::text("done"))
                }
                "gate" => {
                    // Waits for the test to open the gates, whatever the client says.
                    let opened = self.state.release.notified();
                    self.state.gates_entered.fetch_add(1, Ordering::SeqCst);
                    if !self.state.released.load(Ordering::SeqCst) {
                        opened.await;
                    }
                    Ok(CallToolResult::text("released"))
                }
                "obedient" => {
                    self.state.started.notify_one();
                    cx.cancelled().await;
                    self.state.saw_cancel.store(true, Ordering::SeqCst);
                    self.state.stopped.notify_one();
                    Ok(CallToolResult::error("stopped after the cancellation"))
                }
                "panic" => panic!("the fake plugin panics on purpose"),
                "flood" => {
                    for i in 0..10_000 {
                        cx.emit(CallEvent::Log { level: LogLevel::Error, logger: None, data: format!("flood {i}") });
                    }
                    self.state.flooded.notify_one();
                    Ok(CallToolResult::text("flooded"))
                }
                _ => Err(PluginError::NotFound(tool.to_owned())),
            };
            result.map(Outcome::Complete)
        })
    }

    fn read_resource<'a>(&'a self, uri: &'a str, _cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>> {
        Box::pin(async move {
            if uri == "fake://readme" || uri == "fake://items/7" {
                let contents = vec![ResourceContents::text(uri, format!("contents of {uri}")).with_mime_type("text/plain")];
                let cache = (uri == "fake://readme").then_some(CacheHint { ttl_ms: 5000, scope: CacheScope::Public });
                Ok(Outcome::Complete(ReadResourceResult { contents, meta: None, cache }))
            } else {
                Err(PluginError::NotFound(uri.into()))
            }
        })
    }

    fn get_prompt<'a>(
        &'a self,
        _prompt: &'a str,
        arguments: &'a [(String, String)],
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>> {
        Box::pin(async move {
            let mut name = arguments.iter().find(|(k, _)| k == "name").map(|(_, v)| v.clone()).unwrap_or_default();
            if name == "?" {
                match answer(cx, "who") {
                    Some(reply) => name = reply["content"]["name"].as_str().unwrap_or("?").to_owned(),
                    None => return Ok(Outcome::InputRequired(InputRequired { requests: vec![elicit("who", "Whom to greet?")], state: None, in_task: false })),
                }
            }
            let messages = vec![PromptMessage { role: Role::User, content: ContentBlock::text(format!("Say hello to {name}")) }];
            Ok(Outcome::Complete(GetPromptResult::new(messages)))
        })
    }

    fn complete<'a>(&'a self, request: &'a CompletionRequest, _cx: &'a CallContext) -> BoxFuture<'a, Result<Completion, PluginError>> {
        Box::pin(async move {
            let own = matches!(&request.target, CompletionTarget::Prompt(p) if p == "greet");
            let values = if own { vec![format!("{}lice", request.argument_value)] } else { vec![] };
            Ok(Completion { values, total: None, has_more: false })
        })
    }
}

struct Harness {
    session: Arc<Session>,
    rx: OutboundReceiver,
}

impl Harness {
    fn new() -> Harness {
        Harness::with_router(Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0)
    }

    fn with_router(router: Router) -> Harness {
        Harness::with_limits(router, OutboundLimits::default())
    }

    fn with_limits(router: Router, limits: OutboundLimits) -> Harness {
        Harness::with_server(router, limits, WAIT, crate::input::seal::STATE_TTL)
    }

    fn with_server(router: Router, limits: OutboundLimits, input_timeout: Duration, state_ttl: Duration) -> Harness {
        let limits_of_server = super::ServerLimits { input_timeout, state_ttl, ..super::ServerLimits::default() };
        let server = ServerState::with_limits(Arc::new(router), StateKey::random().expect("a key"), limits_of_server);
        let (tx, rx) = outbound(limits);
        Harness { session: Session::new(server, tx, Principal::local("tester"), crate::identity::Transport::Stdio), rx }
    }

    /// Another channel of `server`.
    fn on(server: Arc<ServerState>) -> Harness {
        let (tx, rx) = outbound(OutboundLimits::default());
        Harness { session: Session::new(server, tx, Principal::local("tester"), crate::identity::Transport::Stdio), rx }
    }

    async fn send(&mut self, frame: &str) {
        self.session.handle_frame(frame).await;
    }

    async fn recv(&mut self) -> Value {
        let frame = tokio::time::timeout(WAIT, self.rx.recv()).await.expect("a reply in time").expect("session alive");
        let line = frame.line;
        assert!(!line.contains('\n'), "one message per line: {line}");
        serde_json::from_str(&line).expect("every line is JSON")
    }

    /// Sends a request and returns the next line, which must be its reply.
    async fn ask(&mut self, frame: &str) -> Value {
        self.send(frame).await;
        self.recv().await
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let reply = self.ask(&format!(r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#)).await;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        reply
    }

    /// Asserts nothing more is queued once every running request has finished.
    async fn assert_quiet(&mut self) {
        self.session.drain(WAIT).await;
        assert!(self.rx.try_recv().is_none(), "unexpected extra message");
    }
}

fn modern(id: u32, method: &str, params: &str) -> String {
    let params = if params.is_empty() { format!(r#"{{"_meta":{MODERN_META}}}"#) } else { format!(r#"{{"_meta":{MODERN_META},{params}}}"#) };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

#[tokio::test(start_paused = true)]
async fn initialize_echoes_each_legacy_version() {
    for version in crate::revision::Revision::SESSIONS.map(crate::revision::Revision::as_str) {
        let mut h = Harness::new();
        let reply = h.initialize(version).await;
        assert_eq!(reply["id"], 0);
        assert_eq!(reply["result"]["protocolVersion"], version);
        assert_eq!(reply["result"]["serverInfo"]["name"], "paddock");
        assert!(reply["result"]["capabilities"]["tools"].is_object());
        assert!(reply["result"]["capabilities"]["resources"].is_object());
        assert!(reply["result"]["capabilities"]["prompts"].is_object());
        assert!(reply["result"].get("resultType").is_none(), "legacy results carry no resultType");
        h.assert_quiet().await;
    }
}

#[tokio::test(start_paused = true)]
async fn capabilities_declare_what_every_session_gets() {
    let mut h = Harness::with_router(Router::new(vec![]).0);
    let caps = h.initialize("2025-11-25").await["result"]["capabilities"].clone();
    let lists = json!({
        "logging": {},
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
    });
    assert_eq!(caps, lists, "lists always answer and may change; tool calls may run as tasks; nothing can be completed");
    let listed = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    assert_eq!(listed["result"], json!({"tools": []}));
    let mut h = Harness::new();
    let caps = h.ask(&modern(1, "server/discover", "")).await["result"]["capabilities"].clone();
    assert_eq!(caps["completions"], json!({}));
    assert_eq!(caps["resources"], json!({"subscribe": true, "listChanged": true}));
}

#[tokio::test(start_paused = true)]
async fn initialize_offers_the_latest_version_for_an_unknown_one() {
    let mut h = Harness::new();
    assert_eq!(h.initialize("1999-01-01").await["result"]["protocolVersion"], "2025-11-25");
}

#[tokio::test(start_paused = true)]
async fn requests_before_initialize_are_refused_but_ping_works() {
    let mut h = Harness::new();
    let reply = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    assert_eq!(reply["error"]["code"], -32600);
    assert_eq!(reply["id"], 1);
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#).await, json!({"jsonrpc":"2.0","id":"p","result":{}}));
}

#[tokio::test(start_paused = true)]
async fn a_second_initialize_is_refused() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    assert_eq!(h.initialize("2025-06-18").await["error"]["code"], -32600);
}

#[tokio::test(start_paused = true)]
async fn set_level_accepts_known_levels_only() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}}"#).await["result"], json!({}));
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}"#).await["error"]["code"], -32602);
}

#[tokio::test(start_paused = true)]
async fn server_discover_describes_the_modern_server() {
    let mut h = Harness::new();
    let reply = h.ask(&modern(1, "server/discover", "")).await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "paddock");
    assert!(result["ttlMs"].is_u64());
    assert_eq!(result["cacheScope"], "public");
}

#[tokio::test(start_paused = true)]
async fn modern_requests_validate_their_meta() {
    let mut h = Harness::new();
    let no_caps = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    assert_eq!(h.ask(no_caps).await["error"]["code"], -32602);
    let discover_no_meta = r#"{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{}}"#;
    assert_eq!(h.ask(discover_no_meta).await["error"]["code"], -32602);
    let future = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let reply = h.ask(future).await;
    assert_eq!(reply["error"]["code"], -32022);
    assert_eq!(reply["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}));
    assert_eq!(reply["id"], 3);
}

#[tokio::test(start_paused = true)]
async fn modern_requests_for_removed_methods_are_unknown() {
    let mut h = Harness::new();
    for (id, method) in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "no/such"].into_iter().enumerate() {
        let reply = h.ask(&modern(id as u32, method, "")).await;
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
    }
}

#[tokio::test(start_paused = true)]
async fn modern_results_carry_result_type_cache_hints_and_server_info() {
    let mut h = Harness::new();
    for method in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let result = h.ask(&modern(1, method, "")).await["result"].clone();
        assert_eq!(result["resultType"], "complete", "{method}");
        assert_eq!(result["cacheScope"], "public", "{method}");
        assert!(result["ttlMs"].is_u64(), "{method}");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "paddock", "{method}");
    }
    let read = h.ask(&modern(2, "resources/read", r#""uri":"fake://readme""#)).await["result"].clone();
    assert_eq!(read["resultType"], "complete");
    assert!(read["ttlMs"].is_u64());
    let call = h.ask(&modern(3, "tools/call", r#""name":"fake_echo","arguments":{"text":"hi"}"#)).await["result"].clone();
    assert_eq!(call["resultType"], "complete");
    assert_eq!(call["content"][0]["text"], "hi");
    assert!(call.get("ttlMs").is_none(), "tool results are not cacheable");
}

#[tokio::test(start_paused = true)]
async fn legacy_results_carry_no_modern_fields() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let result = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await["result"].clone();
    assert!(result.get("resultType").is_none() && result.get("ttlMs").is_none() && result.get("_meta").is_none(), "{result}");
}

#[tokio::test(start_paused = true)]
async fn lists_are_sorted_and_paged_with_cursors() {
    let router = Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0.with_page_size(2);
    let mut h = Harness::with_router(router);
    h.initialize("2025-11-25").await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1..20 {
        let params = cursor.as_ref().map(|c| format!(r#","params":{{"cursor":"{c}"}}"#)).unwrap_or_default();
        let reply = h.ask(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"{params}}}"#)).await;
        let page = reply["result"]["tools"].as_array().expect("tools").clone();
        assert!(page.len() <= 2);
        names.extend(page.iter().map(|t| t["name"].as_str().expect("name").to_owned()));
        match reply["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        names,
        [
            "fake_announce",
            "fake_ask_forever",
            "fake_ask_name",
            "fake_ask_three",
            "fake_background",
            "fake_confirm",
            "fake_echo",
            "fake_events",
            "fake_fail",
            "fake_flood",
            "fake_gate",
            "fake_greet_task",
            "fake_missing",
            "fake_needs_sampling",
            "fake_obedient",
            "fake_only_task",
            "fake_panic",
            "fake_refuse",
            "fake_slow",
            "fake_structured_array",
            "fake_task_error",
            "fake_trap",
            "fake_two_rounds"
        ]
    );
    let bad = h.ask(r#"{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{"cursor":"not-a-cursor"}}"#).await;
    assert_eq!(bad["error"]["code"], -32602);
    let empty = h.ask(&modern(21, "tools/list", r#""cursor":"""#)).await;
    assert_eq!(empty["result"]["tools"][0]["name"], "fake_announce", "an empty cursor is the first page");
}

#[tokio::test(start_paused = true)]
async fn tool_calls_map_every_outcome() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let ok = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake_echo","arguments":{"text":"hello"}}}"#).await;
    assert_eq!(ok, json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}));
    let trap = h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake_trap"}}"#).await;
    assert_eq!(trap["result"]["isError"], true);
    assert_eq!(trap["result"]["content"][0]["text"], "plugin crashed: wasm trap: unreachable");
    let unknown = h.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope_x"}}"#).await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "unknown tool `nope_x`");
    let vanished = h.ask(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fake_missing"}}"#).await;
    assert_eq!(vanished["error"]["code"], -32602);
    let bad_args = h.ask(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fake_echo","arguments":[1]}}"#).await;
    assert_eq!(bad_args["error"]["code"], -32602);
    let no_name = h.ask(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#).await;
    assert_eq!(no_name["error"]["code"], -32602);
    let failed = h.ask(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_fail"}}"#).await;
    assert_eq!(
        (&failed["result"]["isError"], &failed["result"]["content"][0]["text"]),
        (&json!(true), &json!("the disk is full")),
        "a failure is for the model: {failed}"
    );
    let refused = h.ask(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fake_refuse"}}"#).await;
    assert_eq!(refused["error"], json!({"code": -32602, "message": "invalid params: no paths here"}), "a refusal is for the client: {refused}");
    let mut stateless = Harness::new();
    let refused = stateless.ask(&modern(9, "tools/call", r#""name":"fake_refuse""#)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test(start_paused = true)]
async fn resources_are_read_directly_and_through_templates() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let direct = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"fake://readme"}}"#).await;
    assert_eq!(direct["result"]["contents"][0]["text"], "contents of fake://readme");
    let templated = h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"fake://items/7"}}"#).await;
    assert_eq!(templated["result"]["contents"][0]["uri"], "fake://items/7");
}

#[tokio::test(start_paused = true)]
async fn unknown_resources_use_each_era_s_error() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let legacy = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"fake://items/8"}}"#).await;
    assert_eq!(legacy["error"]["code"], -32002);
    assert_eq!(legacy["error"]["data"]["uri"], "fake://items/8");
    let unmatched = h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"other://x"}}"#).await;
    assert_eq!(unmatched["error"]["code"], -32002);
    let modern = h.ask(&modern(3, "resources/read", r#""uri":"fake://nope""#)).await;
    assert_eq!(modern["error"]["code"], -32602);
    assert_eq!(modern["error"]["data"]["uri"], "fake://nope");
    let long = format!("other://{}", "a".repeat(100_000));
    let reply = h.ask(&format!(r#"{{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{{"uri":"{long}"}}}}"#)).await;
    let quoted = reply["error"]["data"]["uri"].as_str().expect("data.uri");
    assert!(quoted.starts_with("other://aaa") && quoted.ends_with("…(100008 bytes)") && quoted.len() < 300, "data names the URI, shortened: {quoted}");
    assert!(reply["error"]["message"].as_str().expect("message").len() < 400, "the message quotes a bounded prefix");
}

#[tokio::test(start_paused = true)]
async fn prompts_need_their_required_arguments() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let ok = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"fake_greet","arguments":{"name":"Ada"}}}"#).await;
    assert_eq!(ok["result"]["messages"][0], json!({"role":"user","content":{"type":"text","text":"Say hello to Ada"}}));
    let missing = h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"fake_greet"}}"#).await;
    assert_eq!(missing["error"]["code"], -32602);
    let unknown = h.ask(r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"nope"}}"#).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let listed = h.ask(r#"{"jsonrpc":"2.0","id":4,"method":"prompts/list"}"#).await;
    assert_eq!(listed["result"]["prompts"][0]["arguments"][0], json!({"name":"name","required":true}));
}

#[tokio::test(start_paused = true)]
async fn completion_routes_to_the_prompt_s_plugin() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let reply = h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"fake_greet"},"argument":{"name":"name","value":"A"}}}"#).await;
    assert_eq!(reply["result"]["completion"]["values"], json!(["Alice"]));
    let unknown = h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"n","value":""}}}"#).await;
    assert_eq!(unknown["error"]["code"], -32602);
}

#[tokio::test(start_paused = true)]
async fn framing_errors_get_their_codes_and_the_stream_goes_on() {
    let mut h = Harness::new();
    let parse = h.ask("{broken").await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(h.ask(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).await["error"]["code"], -32600);
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":2}"#).await["error"]["code"], -32600);
    h.initialize("2025-03-26").await;
    let unknown = h.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/destroy"}"#).await;
    assert_eq!(unknown["error"]["code"], -32601);
    assert_eq!(unknown["id"], 3);
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).await["result"], json!({}));
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_2025_03_26_session_answers_a_batch_with_one_array() {
    let mut h = Harness::new();
    h.initialize("2025-03-26").await;
    h.send(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake_echo","arguments":{"text":"in a batch"}}},{"jsonrpc":"2.0","method":"notifications/whatever"},{"jsonrpc":"1.0","id":3,"method":"ping"}]"#).await;
    let reply = h.recv().await;
    let replies = reply.as_array().expect("one array for the whole batch");
    assert_eq!(replies.len(), 3, "{reply}");
    let by_id = |id: i64| replies.iter().find(|r| r["id"] == id).cloned().unwrap_or_default();
    assert_eq!(by_id(1)["result"], json!({}));
    assert_eq!(by_id(2)["result"]["content"][0]["text"], "in a batch");
    assert_eq!(by_id(3)["error"]["code"], -32600);
    h.send(r#"[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","method":"notifications/b"}]"#).await;
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).await["id"], 9, "a batch of notifications gets no reply");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_batch_member_leaves_the_others_to_answer() {
    let mut h = Harness::new();
    h.initialize("2025-03-26").await;
    h.send(r#"[{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"fake_slow"}},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#).await;
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}"#).await;
    assert_eq!(h.recv().await, json!([{"jsonrpc":"2.0","id":2,"result":{}}]));
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_batch_holds_its_gathered_replies_charged_and_admits_no_more_than_its_permits() {
    // A batch of 400: a call that waits, then 399 echoes of 10 KiB. The echoes answer at once,
    // but their replies wait in the batch for the first: each keeps its permit, so only 255 of
    // them are admitted (the rest are refused as busy) and their bytes are charged meanwhile.
    let plugin = FakePlugin::new();
    let mut h = Harness::with_router(router_of(&plugin));
    h.initialize("2025-03-26").await;
    let budget = std::sync::Arc::clone(h.session.server.budget());
    let text = "b".repeat(10 * 1024);
    let mut members = vec![r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"fake_gate"}}"#.to_owned()];
    members.extend(
        (1..400).map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"fake_echo","arguments":{{"text":"{text}"}}}}}}"#)),
    );
    h.send(&format!("[{}]", members.join(","))).await;
    let gathered = tokio::time::timeout(WAIT, async {
        loop {
            if h.session.requests_in_flight() == super::MAX_IN_FLIGHT && budget.used() >= 255 * text.len() {
                return budget.used();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the gathered replies keep their permits and are charged");
    assert!(h.rx.try_recv().is_none(), "nothing is sent before the batch is whole");
    plugin.state.open_gates();
    let reply = h.recv().await;
    let replies = reply.as_array().expect("one array");
    assert_eq!(replies.len(), 400);
    let served = replies.iter().filter(|r| r["result"]["content"][0]["text"].as_str().is_some_and(|t| t.len() == text.len())).count();
    let busy = replies.iter().filter(|r| r["error"]["code"] == -32000).count();
    assert_eq!((served, busy), (255, 144), "the echoes past the permits are refused as busy");
    assert_eq!(h.session.requests_in_flight(), 0, "the permits go once the array is queued");
    drop(reply);
    assert!(budget.used() < gathered / 4, "the charges go with them: {} of {gathered} bytes still charged", budget.used());
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn batches_are_refused_outside_2025_03_26() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let reply = h.ask(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).await;
    assert_eq!(reply["error"]["code"], -32600);
    let mut h = Harness::new();
    h.initialize("2025-03-26").await;
    assert_eq!(h.ask("[]").await["error"]["code"], -32600, "an empty batch is invalid");
}

#[tokio::test(start_paused = true)]
async fn notifications_get_no_reply() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#).await;
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}"#).await;
    h.send(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#).await;
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await["id"], 1);
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_does_not_block_ping_and_a_cancelled_call_gets_no_reply() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    h.send(r#"{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"fake_slow"}}"#).await;
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).await["id"], 1, "ping answered while the call runs");
    h.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}"#).await;
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await["id"], 2);
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_local_method_that_panics_is_answered_with_an_internal_error_and_the_session_serves_on() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let reply = h.ask(r#"{"jsonrpc":"2.0","id":5,"method":"test/panic"}"#).await;
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["message"], "internal error", "nothing of the panic reaches the client");
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#).await["id"], 6);
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_reused_id_of_a_running_request_is_refused_and_both_get_one_reply() {
    let plugin = FakePlugin::new();
    let mut h = Harness::with_router(router_of(&plugin));
    h.initialize("2025-11-25").await;
    h.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_gate"}}"#).await;
    let duplicate = h.ask(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_echo","arguments":{"text":"x"}}}"#).await;
    assert_eq!(duplicate["id"], 7);
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    plugin.state.open_gates();
    let original = h.recv().await;
    assert_eq!(original["id"], 7);
    assert_eq!(original["result"]["content"][0]["text"], "released", "{original}");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_read_stops_being_read_and_loses_no_reply() {
    // A queue of 4 messages: the fifth reply waits for room, holding its request's permit.
    let plugin = FakePlugin::new();
    let mut h = Harness::with_limits(router_of(&plugin), OutboundLimits { messages: 4, bytes: 1 << 20 });
    h.initialize("2025-11-25").await;
    let mut sent = 0u64;
    // Requests are handed over until one is not taken within a second: the session stopped
    // reading. Every earlier request is either queued or holds a permit while it waits.
    let stalled = loop {
        let frame = call(1000 + sent, "echo");
        let session = Arc::clone(&h.session);
        let mut handing = tokio::spawn(async move { session.handle_frame(&frame).await });
        match tokio::time::timeout(Duration::from_secs(1), &mut handing).await {
            Ok(done) => {
                done.expect("handled");
                sent += 1;
                assert!(sent < 2000, "the session kept reading while nothing was read: {sent} requests taken");
            }
            Err(_) => break handing,
        }
    };
    let waiting = h.session.requests_in_flight();
    assert_eq!(waiting, super::MAX_IN_FLIGHT, "every admitted request still holds its permit while its reply waits");
    assert!(sent <= super::MAX_IN_FLIGHT as u64 + 8, "{sent} requests taken with 4 slots and {} permits", super::MAX_IN_FLIGHT);
    // The client reads again: every request taken is answered once, the stalled one included.
    let mut answered = std::collections::HashMap::new();
    let mut busy = 0;
    for _ in 0..=sent {
        let reply = h.recv().await;
        if reply["error"]["code"] == super::SERVER_BUSY {
            busy += 1;
        }
        *answered.entry(reply["id"].as_u64().expect("numeric id")).or_insert(0) += 1;
    }
    tokio::time::timeout(WAIT, stalled).await.expect("the stalled hand-over completes once the client reads").expect("handled");
    assert_eq!(answered.len() as u64, sent + 1, "one reply per request: {answered:?}");
    assert!(answered.values().all(|n| *n == 1), "a request was answered twice");
    assert!(busy >= 1, "the request that found every permit taken was refused");
    h.assert_quiet().await;
}

fn router_of(plugin: &Arc<FakePlugin>) -> Router {
    Router::new(vec![RouterEntry::new(plugin.clone(), Prefix::Default)]).0
}

fn call(id: impl std::fmt::Display, tool: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"fake_{tool}"}}}}"#)
}

fn cancel(id: impl std::fmt::Display) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#)
}

#[tokio::test(start_paused = true)]
async fn reading_never_waits_for_plugin_capacity_and_the_overflow_is_refused_at_once() {
    let plugin = FakePlugin::new();
    let mut h = Harness::with_router(router_of(&plugin));
    h.initialize("2025-11-25").await;
    for id in 0..super::MAX_IN_FLIGHT {
        h.send(&call(id + 100, "gate")).await;
    }
    let busy = h.ask(&call(1, "echo")).await;
    assert_eq!(busy["id"], 1);
    assert_eq!(busy["error"]["code"], super::SERVER_BUSY, "{busy}");
    assert_eq!(h.ask(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await["id"], 2, "ping is answered at once");
    h.send(&cancel(100)).await;
    assert_eq!(h.session.requests_in_flight(), super::MAX_IN_FLIGHT, "the cancelled call winds down in the background");
    plugin.state.open_gates();
    let mut answered = std::collections::HashSet::new();
    for _ in 1..super::MAX_IN_FLIGHT {
        let reply = h.recv().await;
        assert_eq!(reply["result"]["content"][0]["text"], "released", "{reply}");
        answered.insert(reply["id"].as_u64().expect("numeric id"));
    }
    assert_eq!(answered.len(), super::MAX_IN_FLIGHT - 1);
    assert!(!answered.contains(&100), "the cancelled call got a reply");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_plugin_sees_the_cancellation_and_its_reply_is_suppressed() {
    let plugin = FakePlugin::new();
    let mut h = Harness::with_router(router_of(&plugin));
    h.initialize("2025-11-25").await;
    let started = plugin.state.started.notified();
    h.send(&call(5, "obedient")).await;
    tokio::time::timeout(WAIT, started).await.expect("the call started");
    let stopped = plugin.state.stopped.notified();
    h.send(&cancel(5)).await;
    tokio::time::timeout(WAIT, stopped).await.expect("the plugin saw the cancellation");
    assert!(plugin.state.saw_cancel.load(Ordering::SeqCst));
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_plugin_that_ignores_its_cancellation_is_dropped_after_the_grace_period() {
    let plugin = FakePlugin::new();
    let mut h = Harness::with_router(router_of(&plugin));
    h.initialize("2025-11-25").await;
    h.send(&call(5, "gate")).await;
    h.send(&cancel(5)).await;
    let started = std::time::Instant::now();
    h.session.drain(WAIT).await;
    assert_eq!(h.session.requests_in_flight(), 0);
    assert!(started.elapsed() < super::CANCEL_BACKSTOP * 3, "took {:?}", started.elapsed());
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn an_id_reused_after_a_cancel_keeps_the_new_request_s_reply() {
    let plugin = FakePlugin::new();
    let mut h = Harness::with_router(router_of(&plugin));
    h.initialize("2025-11-25").await;
    let started = plugin.state.started.notified();
    h.send(&call(7, "obedient")).await;
    tokio::time::timeout(WAIT, started).await.expect("the call started");
    h.send(&cancel(7)).await;
    h.send(&call(7, "gate")).await;
    // The first request 7 finishes (it saw its cancellation) while the second one runs.
    tokio::time::timeout(WAIT, async {
        while h.session.requests_in_flight() > 1 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the cancelled request finished");
    plugin.state.open_gates();
    let reply = h.recv().await;
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["content"][0]["text"], "released", "{reply}");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_request_gets_an_error_reply_and_the_session_goes_on() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    let reply = h.ask(&call(3, "panic")).await;
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let echo = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fake_echo","arguments":{"text":"still here"}}}"#;
    assert_eq!(h.ask(echo).await["result"]["content"][0]["text"], "still here");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_read_never_stalls_a_plugin_call() {
    let plugin = FakePlugin::new();
    let limits = OutboundLimits { messages: 8, bytes: 64 << 10 };
    let mut h = Harness::with_limits(router_of(&plugin), limits);
    h.initialize("2025-11-25").await;
    let flooded = plugin.state.flooded.notified();
    h.send(&call(9, "flood")).await;
    // Nothing has been read yet: the call still runs to its end.
    tokio::time::timeout(WAIT, flooded).await.expect("the plugin was never blocked by the unread queue");
    let mut notifications = 0;
    loop {
        let line = h.recv().await;
        if line.get("id").is_some() {
            assert_eq!(line["result"]["content"][0]["text"], "flooded");
            break;
        }
        notifications += 1;
    }
    assert!(notifications <= limits.messages, "{notifications} notifications were queued past the limit");
    assert!(h.session.notifications_shed() > 0, "the excess was shed and counted");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn progress_and_logs_precede_the_response_as_the_client_asked() {
    let mut h = Harness::new();
    h.initialize("2025-11-25").await;
    h.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fake_events","_meta":{"progressToken":"tok"}}}"#).await;
    let mut lines = Vec::new();
    loop {
        let line = h.recv().await;
        let done = line.get("id").is_some();
        lines.push(line);
        if done {
            break;
        }
    }
    // Default level is info: the debug line is dropped; the decreasing progress is dropped.
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(lines[0], json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"fake","data":{"k":1}}}));
    assert_eq!(lines[1]["params"], json!({"progressToken":"tok","progress":1.0,"total":2.0,"message":"half"}));
    assert_eq!(lines[2]["params"]["progress"], 2.0);
    assert_eq!(lines[3]["result"]["content"][0]["text"], "done");
}

#[tokio::test(start_paused = true)]
async fn without_a_progress_token_or_log_level_a_modern_request_gets_only_its_result() {
    let mut h = Harness::new();
    let reply = h.ask(&modern(1, "tools/call", r#""name":"fake_events""#)).await;
    assert_eq!(reply["result"]["content"][0]["text"], "done");
    h.assert_quiet().await;
}

#[tokio::test(start_paused = true)]
async fn a_modern_request_with_a_log_level_gets_logs_at_or_above_it() {
    let mut h = Harness::new();
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}"#;
    h.send(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"fake_events","_meta":{meta}}}}}"#)).await;
    assert_eq!(h.recv().await["params"]["data"], "debug detail");
    assert_eq!(h.recv().await["params"]["level"], "warning");
    assert_eq!(h.recv().await["result"]["resultType"], "complete");
}

#[tokio::test(start_paused = true)]
async fn stdio_serves_until_eof_and_returns_ok() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let router = Arc::new(Router::new(vec![RouterEntry::new(FakePlugin::new(), Prefix::Default)]).0);
    let (mut client, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let serve = tokio::spawn(crate::transport::stdio::serve(
        ServerState::new(router, StateKey::random().expect("a key")),
        server_in,
        server_out,
        Principal::local("tester"),
    ));
    client.write_all(b"\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n").await.expect("write");
    client.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n").await.expect("write");
    drop(client);
    let result = tokio::time::timeout(WAIT, serve).await.expect("serve ends at EOF").expect("task");
    assert!(result.is_ok());
    let mut lines = tokio::io::BufReader::new(client_out).lines();
    let first: Value = serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(first, json!({"jsonrpc":"2.0","id":1,"result":{}}));
    let second: Value = serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(second["result"]["protocolVersion"], "2025-06-18");
    assert!(lines.next_line().await.expect("read").is_none());
}

#[tokio::test(start_paused = true)]
async fn stdio_skips_an_over_long_line_and_goes_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let router = Arc::new(Router::new(vec![]).0);
    let (mut client, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let serve = tokio::spawn(crate::transport::stdio::serve(
        ServerState::new(router, StateKey::random().expect("a key")),
        server_in,
        server_out,
        Principal::local("tester"),
    ));
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..17 {
            client.write_all(&chunk).await.expect("write");
        }
        client.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n").await.expect("write");
    });
    let mut lines = tokio::io::BufReader::new(client_out).lines();
    let first: Value =
        serde_json::from_str(&tokio::time::timeout(WAIT, lines.next_line()).await.expect("in time").expect("read").expect("line")).expect("json");
    assert_eq!(first["error"]["code"], -32600);
    let second: Value = serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(second["id"], 9);
    writer.await.expect("writer");
    drop(serve);
}

mod callers;
mod changes;
mod echo;
mod input_rounds;
mod sealing;
mod tasks;

#[tokio::test(start_paused = true)]
async fn results_are_shaped_to_the_negotiated_revision() {
    let mut modern = Harness::new();
    let result = modern.ask(&modern_call(1, "fake_structured_array")).await["result"].clone();
    assert_eq!(result["structuredContent"], json!([1, 2]), "any JSON value on 2026-07-28: {result}");

    let mut legacy = Harness::new();
    legacy.initialize("2025-11-25").await;
    let reply = legacy.ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake_structured_array","arguments":{}}}"#).await;
    assert!(reply["result"].get("structuredContent").is_none(), "{reply}");
    assert_eq!(reply["result"]["content"], json!([{"type": "text", "text": "[1,2]"}]), "delivered as text: {reply}");
}

fn modern_call(id: u32, tool: &str) -> String {
    modern(id, "tools/call", &format!(r#""name":"{tool}","arguments":{{}}"#))
}

#[test]
fn a_tool_result_moved_into_json_is_the_json_it_serializes_to() {
    use crate::protocol::{Annotations, ResourceLink};
    let raw = |text: &str| Some(serde_json::value::RawValue::from_string(text.to_owned()).expect("valid JSON"));
    let annotations = || Some(Annotations { audience: vec![Role::User], priority: Some(0.5), last_modified: None });
    let contents = ResourceContents::text("a://x", "inner");
    let link = ResourceLink {
        uri: "a://y".into(),
        name: "y".into(),
        title: None,
        description: None,
        mime_type: None,
        size: Some(3),
        icons: Vec::new(),
        annotations: None,
        meta: None,
    };
    let result = CallToolResult {
        content: vec![
            ContentBlock::Text { text: "first \"quoted\"\n".into(), annotations: annotations(), meta: raw(r#"{"k":1}"#) },
            ContentBlock::ResourceLink(link),
            ContentBlock::Image { data: "aW1n".into(), mime_type: "image/png".into(), annotations: None, meta: None },
            ContentBlock::Resource { resource: contents, annotations: None, meta: None },
            ContentBlock::Audio { data: "YXVk".into(), mime_type: "audio/wav".into(), annotations: annotations(), meta: None },
            ContentBlock::text(""),
            ContentBlock::text("x".repeat(1 << 16)),
        ],
        structured_content: raw(r#"{"n":[1,2]}"#),
        is_error: true,
        meta: raw(r#"{"m":"v"}"#),
    };
    let expected = serde_json::to_value(&result).expect("serializes");
    assert_eq!(crate::mcp::call_result_json(result, crate::revision::Revision::V2026_07_28).expect("converts"), expected);
}
