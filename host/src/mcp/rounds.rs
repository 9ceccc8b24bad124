//! Plugin requests that may need input from the client (`tools/call`, `prompts/get`,
//! `resources/read`), run to their end in either era with one model for the plugin. Every step
//! of a request (its capability check, each run, each round) uses the router of its scope.
//!
//! A plugin call ends with a result or with `input-required` (keyed requests plus its own
//! state). On 2026-07-28 the session answers `resultType: "input_required"` with the requests
//! and a sealed `requestState`; the client's retry brings the answers, which are checked
//! against the sealed round (extra keys ignored, missing ones asked again without running the
//! plugin) before the plugin runs again with them. Answers sent without a round are used only
//! if they cover every key the plugin asks in that same request. On a legacy session the session asks the
//! client itself (through the scope's client handle) (`sampling/createMessage`, `elicitation/create`, `roots/list`), waits for
//! the answers under its own timeout (the plugin is not running meanwhile, so its deadline is
//! not spent), and runs the plugin again. In both eras a request needing a capability the
//! client did not declare is refused before anything is asked.

use serde_json::{Map, Value, json};

use super::MAX_ROUNDS;
use super::error::McpError;
use super::lifecycle::META_RELATED_TASK;
use super::reply::{Reply, call_result_json, to_json};
use super::request::Target;
use super::scope::{AskFailure, Scope};
use super::shape;
use crate::input::seal::{Binding, Round};
use crate::input::{InputMethod, InputRequest, InputRequired, InputResponse, Outcome, RequestContext, missing_capabilities};
use crate::jsonrpc::shortened;
use crate::plugin::{CallContext, PluginError};
use crate::protocol::{CacheHint, CacheScope, CallToolResult};
use crate::router::{RouteError, Router};

/// A resource read the plugin gave no cache hint for is not reusable.
const READ_DEFAULT_CACHE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Private };

impl Target {
    fn method(&self) -> &'static str {
        match self {
            Target::Tool { .. } => "tools/call",
            Target::Prompt { .. } => "prompts/get",
            Target::Read { .. } => "resources/read",
        }
    }

    pub(super) fn name(&self) -> &str {
        match self {
            Target::Tool { name, .. } | Target::Prompt { name, .. } => name,
            Target::Read { uri } => uri,
        }
    }

    /// The arguments as a sealed round binds them.
    pub(super) fn arguments(&self) -> Value {
        match self {
            // Bound as the plugin reads them: parsed from the very text it is given (which
            // serde_json wrote, so it parses; were it ever not to, the text itself is bound).
            Target::Tool { arguments, .. } => serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.clone())),
            Target::Prompt { raw, .. } => raw.clone(),
            Target::Read { .. } => Value::Null,
        }
    }

    /// The plugin serving this target in `router`.
    pub(super) fn owner(&self, router: &Router) -> Option<String> {
        match self {
            Target::Tool { name, .. } => router.tool(name).map(|(_, plugin)| plugin.to_owned()),
            Target::Prompt { name, .. } => router.prompt_owner(name).map(str::to_owned),
            Target::Read { uri } => router.resource_owner(uri).map(str::to_owned),
        }
    }

    /// The error for a target nothing serves.
    pub(super) fn unknown(&self) -> McpError {
        match self {
            Target::Read { uri } => McpError::UnknownResource { uri: uri.clone() },
            Target::Tool { name, .. } => McpError::InvalidParams(format!("unknown tool `{}`", shortened(name))),
            Target::Prompt { name, .. } => McpError::InvalidParams(format!("unknown prompt `{}`", shortened(name))),
        }
    }
}

/// 2026-07-28: opens the sealed round a retry carries, merging its answers into the context;
/// asks again (without running the plugin) for what is still missing.
pub(super) fn open_round(scope: &Scope, target: &Target, responses: Option<Value>, state: Option<Value>) -> Result<Opened, McpError> {
    let key = &scope.state.state_key;
    let caller = scope.context().caller.clone();
    let responses = match responses {
        None => Map::new(),
        Some(Value::Object(responses)) => responses,
        Some(_) => return Err(McpError::InvalidParams("`inputResponses` must be an object".to_owned())),
    };
    let round = match state {
        None => None,
        Some(Value::String(token)) => {
            // The state names the plugin that issued it; it must still serve this request.
            let plugin = target.owner(&scope.router).ok_or_else(|| target.unknown())?;
            let arguments = target.arguments();
            let binding = binding(&plugin, target, &arguments, caller.as_deref());
            Some(key.open(&binding, &token).map_err(|e| McpError::InvalidParams(e.to_string()))?)
        }
        Some(_) => return Err(McpError::InvalidParams("`requestState` must be a string".to_owned())),
    };
    if let Some(mut round) = round {
        let mut missing = Vec::new();
        for request in std::mem::take(&mut round.requests) {
            match responses.get(&request.key) {
                Some(result) => round.answered.push(InputResponse { key: request.key, method: request.method, result: result.clone() }),
                None => missing.push(request),
            }
        }
        if !missing.is_empty() {
            // Ask again for what is missing only, carrying what was answered.
            let plugin = target.owner(&scope.router).ok_or_else(|| target.unknown())?;
            round.requests = missing;
            let arguments = target.arguments();
            // What grew since the round was sealed is the client's answers: too many to carry
            // is the client's to fix (answer every request at once).
            let sealed = key.seal_for(&binding(&plugin, target, &arguments, caller.as_deref()), &round, scope.state.limits.state_ttl).map_err(|too_large| {
                McpError::InvalidParams(format!("the answers given so far cannot be carried: {too_large}; answer every request of the round at once"))
            })?;
            return Ok(Opened::AskAgain(input_required_result(&round.requests, sealed)));
        }
        let mut context = scope.context().clone();
        context.input_responses = round.answered;
        context.state = round.plugin_state;
        return Ok(Opened::Ready(Some(context), Map::new()));
    }
    Ok(Opened::Ready(None, responses))
}

/// 2026-07-28: one run per request; input goes back to the client in a sealed round.
///
/// A request that brought answers without a round (`unsealed`) may still use them: when
/// the plugin asks, and the answers cover every key it asked, it runs once more with the
/// answers to exactly those keys (under the methods it named, checked like any answer);
/// other keys are dropped. Otherwise the answers are ignored and the question goes back.
pub(super) async fn serve_stateless(scope: &Scope, target: &Target, opened: Option<RequestContext>, unsealed: Map<String, Value>) -> Result<Reply, McpError> {
    let opened = opened.map(|context| scope.cx.clone().with_request(context));
    let run = opened.as_ref().unwrap_or(&scope.cx);
    let context = &*run.request;
    let (plugin, outcome) = run_once(&scope.router, target, run).await?;
    let required = match outcome {
        Outcome::Complete(finished) => return Ok(finished),
        Outcome::InputRequired(required) => required,
    };
    let covered = !unsealed.is_empty() && !required.requests.is_empty() && required.requests.iter().all(|r| unsealed.contains_key(&r.key));
    if !covered {
        return answer_input_required(scope, target, &plugin, context, required);
    }
    refuse_undeclared(&required, &context.client_capabilities, &plugin)?;
    let mut answered = context.clone();
    answered.input_responses =
        required.requests.iter().map(|r| InputResponse { key: r.key.clone(), method: r.method, result: unsealed[&r.key].clone() }).collect();
    answered.state = required.state;
    let run = scope.cx.clone().with_request(answered);
    let (plugin, outcome) = run_once(&scope.router, target, &run).await?;
    match outcome {
        Outcome::Complete(finished) => Ok(finished),
        Outcome::InputRequired(required) => answer_input_required(scope, target, &plugin, context, required),
    }
}

/// The sealed `input_required` answer to a 2026-07-28 run that needs input. A round too
/// large to seal (it would not open again) is the plugin's malformed output: a tool call
/// ends with an error result, other methods with an error.
pub(super) fn answer_input_required(
    scope: &Scope,
    target: &Target,
    plugin: &str,
    context: &RequestContext,
    required: InputRequired,
) -> Result<Reply, McpError> {
    refuse_undeclared(&required, &context.client_capabilities, plugin)?;
    let round = Round { requests: required.requests, answered: Vec::new(), plugin_state: required.state };
    let arguments = target.arguments();
    match scope.state.state_key.seal_for(&binding(plugin, target, &arguments, context.caller.as_deref()), &round, scope.state.limits.state_ttl) {
        Ok(sealed) => {
            if let Some(metrics) = crate::telemetry::metrics::get() {
                metrics.input_round("asked");
            }
            Ok(input_required_result(&round.requests, sealed))
        }
        Err(too_large) => {
            let error = PluginError::MalformedOutput(too_large.to_string());
            tracing::warn!(%plugin, request = %crate::escape::Escaped(&shortened(target.name())), error = %error, "a plugin's input round was refused");
            match target {
                Target::Tool { .. } => Ok(Reply::new(to_json(&CallToolResult::error(error.to_string()))?)),
                _ => Err(McpError::Internal(format!("plugin `{plugin}` failed: {error}"))),
            }
        }
    }
}

/// A legacy session: the client is asked through the scope's client handle and the plugin runs
/// again, up to `MAX_ROUNDS`. When the request runs as a `task`, the task waits in
/// `input_required` while the client is asked, and the questions name it.
pub(super) async fn serve_in_session(scope: &Scope, target: &Target, cx: &CallContext, task: Option<&crate::tasks::Task>) -> Result<Reply, McpError> {
    // The first round runs with `cx` as it is; each later one with the answers of the round before.
    let mut answered: Option<CallContext> = None;
    for _ in 0..MAX_ROUNDS {
        let run = answered.as_ref().unwrap_or(cx);
        let (plugin, outcome) = run_once(&scope.router, target, run).await?;
        let required = match outcome {
            Outcome::Complete(finished) => return Ok(finished),
            Outcome::InputRequired(required) => required,
        };
        refuse_undeclared(&required, &run.request.client_capabilities, &plugin)?;
        let mut context = (*run.request).clone();
        if let Some(task) = task {
            task.park(required.requests.clone(), "waiting for the client's answers");
            scope.task_changed(task);
        }
        let round = crate::telemetry::trace::Span::child_of(
            &run.request.trace.carried(),
            "input round",
            crate::telemetry::trace::Kind::Internal,
            vec![crate::telemetry::trace::Attribute::new("paddock.input.requests", required.requests.len() as i64)],
        );
        let asked = scope.client.ask(&required.requests, cx, task.map(|t| t.id.as_str())).await;
        if let Err(failure) = &asked {
            round.fail(failure.kind());
        }
        drop(round);
        if let Some(task) = task {
            task.resume();
            scope.task_changed(task);
        }
        if let Some(metrics) = crate::telemetry::metrics::get() {
            metrics.input_round(asked.as_ref().map_or_else(AskFailure::kind, |_| "answered"));
        }
        let answers = match asked {
            Ok(answers) => answers,
            Err(failure) => return input_failed(target, &plugin, failure),
        };
        context.input_responses = answers;
        context.state = required.state;
        answered = Some(cx.clone().with_request(context));
    }
    let why = format!("the plugin asked for input more than {MAX_ROUNDS} times");
    input_failed(target, "", AskFailure::Plugin(why))
}

fn input_failed(target: &Target, plugin: &str, failure: AskFailure) -> Result<Reply, McpError> {
    let message = failure.to_string();
    if !plugin.is_empty() {
        tracing::info!(%plugin, request = %crate::escape::Escaped(target.name()), why = %crate::escape::Escaped(&message), "input round ended");
    }
    match target {
        Target::Tool { .. } => Ok(Reply::new(to_json(&CallToolResult::error(message))?)),
        _ => Err(McpError::Internal(message)),
    }
}

/// Runs the plugin once in `router`; errors are mapped as each method maps them, and results
/// are shaped for the revision the request is served under.
pub(super) async fn run_once(router: &Router, target: &Target, cx: &CallContext) -> Result<(String, Outcome<Reply>), McpError> {
    let revision = cx.request.protocol_version;
    match target {
        Target::Tool { name, arguments } => match router.call_tool(name, arguments, cx).await {
            Ok((plugin, outcome)) => {
                let outcome = match outcome {
                    Outcome::Complete(result) => Outcome::Complete(Reply::new(call_result_json(result, revision)?)),
                    Outcome::InputRequired(required) => Outcome::InputRequired(required),
                };
                Ok((plugin.to_owned(), outcome))
            }
            Err(RouteError::Plugin { plugin, error }) => match error {
                PluginError::NotFound(_) => Err(McpError::InvalidParams(format!("unknown tool `{}`", shortened(name)))),
                PluginError::InvalidInputResponse(why) => Err(McpError::InvalidParams(why)),
                // The plugin refused the request itself; every other failure is a result the model reads.
                PluginError::InvalidParams(why) => Err(McpError::InvalidParams(format!("invalid params: {why}"))),
                other => {
                    tracing::warn!(%plugin, tool = %crate::escape::Escaped(name), error = %crate::escape::Escaped(&other.to_string()), "tool call failed");
                    Ok((plugin, Outcome::Complete(Reply::new(to_json(&CallToolResult::error(other.to_string()))?))))
                }
            },
            Err(other) => Err(other.into()),
        },
        Target::Prompt { name, arguments, .. } => {
            let (plugin, outcome) = router.get_prompt(name, arguments, cx).await?;
            let outcome = match outcome {
                Outcome::Complete(result) => Outcome::Complete(Reply::new(to_json(&shape::prompt_result(result, revision))?)),
                Outcome::InputRequired(required) => Outcome::InputRequired(required),
            };
            Ok((plugin.to_owned(), outcome))
        }
        Target::Read { uri } => {
            let (plugin, outcome) = router.read_resource(uri, cx).await?;
            let outcome = match outcome {
                Outcome::Complete(result) => {
                    let cache = result.cache.unwrap_or(READ_DEFAULT_CACHE);
                    Outcome::Complete(Reply::cached(to_json(&shape::read_result(result, revision))?, cache))
                }
                Outcome::InputRequired(required) => Outcome::InputRequired(required),
            };
            Ok((plugin.to_owned(), outcome))
        }
    }
}

/// A 2026-07-28 request after its sealed round is opened.
#[allow(clippy::large_enum_variant, reason = "`Ready` is what nearly every request gets, once: a box would cost it an allocation")]
pub(super) enum Opened {
    /// Ready to run: with the context the opened round gives (its answers and state), or with
    /// the scope's when there was no round; and, for a request that carries answers but no
    /// round, those answers, kept aside until the plugin asks.
    Ready(Option<RequestContext>, Map<String, Value>),
    /// Answers are still missing: this asks for them again.
    AskAgain(Reply),
}

fn binding<'a>(plugin: &'a str, target: &'a Target, arguments: &'a Value, caller: Option<&'a str>) -> Binding<'a> {
    Binding { plugin, method: target.method(), target: target.name(), arguments, caller }
}

/// The `input_required` result of 2026-07-28.
fn input_required_result(requests: &[InputRequest], state: String) -> Reply {
    let input_requests: Map<String, Value> = requests.iter().map(|r| (r.key.clone(), r.to_wire())).collect();
    let mut result = json!({"resultType": "input_required", "requestState": state});
    if !input_requests.is_empty() {
        result["inputRequests"] = Value::Object(input_requests);
    }
    Reply::new(result)
}

/// Refuses a round that asks for something the client did not declare, naming it.
pub(super) fn refuse_undeclared(required: &InputRequired, declared: &Map<String, Value>, plugin: &str) -> Result<(), McpError> {
    let mut all = Map::new();
    for request in &required.requests {
        if let Value::Object(needs) = request.method.needs() {
            crate::input::capabilities::merge(&mut all, &needs);
        }
    }
    match missing_capabilities(declared, &all) {
        None => Ok(()),
        Some(missing) => {
            let shown = Value::Object(missing.clone()).to_string();
            tracing::info!(%plugin, missing = %shown, "a plugin asked for input the client cannot give");
            Err(missing_capability(&format!("plugin `{plugin}`"), missing))
        }
    }
}

pub(super) fn missing_capability(who: &str, missing: Map<String, Value>) -> McpError {
    let names: Vec<&str> = missing.keys().map(String::as_str).collect();
    let message = format!("{who} needs the client capabilities {}, which this client did not declare", names.join(", "));
    McpError::MissingCapability { message, required: missing }
}

/// A request's params as a legacy client receives them: URL elicitations carry an
/// `elicitationId` (2025-11-25); a task's questions name the task.
pub fn legacy_params(request: &InputRequest, task: Option<&str>) -> Value {
    let mut params = request.params.clone();
    if let Some(task) = task {
        params.insert("_meta".into(), json!({META_RELATED_TASK: {"taskId": task}}));
    }
    if request.method == InputMethod::ElicitUrl {
        let mut id = [0u8; 16];
        if getrandom::fill(&mut id).is_ok() {
            let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            params.insert("elicitationId".into(), Value::String(id));
        }
    }
    Value::Object(params)
}
