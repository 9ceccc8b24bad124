//! Plugin requests that may need input from the client (`tools/call`, `prompts/get`,
//! `resources/read`), run to their end in either era with one model for the plugin.
//!
//! A plugin call ends with a result or with `input-required` (keyed requests plus its own
//! state). On 2026-07-28 the session answers `resultType: "input_required"` with the requests
//! and a sealed `requestState`; the client's retry brings the answers, which are checked
//! against the sealed round (extra keys ignored, missing ones asked again without running the
//! plugin) before the plugin runs again with them. Answers sent without a round are used only
//! if they cover every key the plugin asks in that same request. On a legacy session the session asks the
//! client itself (`sampling/createMessage`, `elicitation/create`, `roots/list`), waits for
//! the answers under its own timeout (the plugin is not running meanwhile, so its deadline is
//! not spent), and runs the plugin again. In both eras a request needing a capability the
//! client did not declare is refused before anything is asked.

use std::sync::Arc;

use futures::future::join_all;
use serde_json::{Map, Value, json};

use super::lifecycle::{self, META_CLIENT_CAPABILITIES};
use super::methods::{call_result_json, required_str, route_error, to_json};
use super::{Era, Session};
use crate::input::seal::{Binding, Round};
use crate::input::{InputMethod, InputRequest, InputRequired, InputResponse, Outcome, RequestContext, missing_capabilities};
use crate::jsonrpc::{self, ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, shortened};
use crate::plugin::{CallContext, PluginError};
use crate::protocol::{CacheHint, CacheScope, CallToolResult};
use crate::revision::Revision;
use crate::router::RouteError;

/// MCP error: a client capability the request needs was not declared (2026-07-28 defines it;
/// legacy sessions get the same code and data, with a message that names the capability).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// Rounds of input one legacy request may go through before it is stopped.
pub const MAX_ROUNDS: usize = 8;
/// A resource read the plugin gave no cache hint for is not reusable.
const READ_DEFAULT_CACHE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Private };

/// A request that may need input, as the client sent it.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// `arguments` is the JSON text of an object: written once here, handed to the plugin as is.
    Tool {
        name: String,
        arguments: String,
    },
    Prompt {
        name: String,
        arguments: Vec<(String, String)>,
        raw: Value,
    },
    Read {
        uri: String,
    },
}

/// A finished request: its result and the cache hint it carries on 2026-07-28.
#[derive(Debug)]
pub(super) struct Finished {
    pub(super) result: Value,
    pub(super) cache: Option<CacheHint>,
}

impl Target {
    pub(super) fn parse(method: &str, params: Option<&Map<String, Value>>) -> Result<Target, ErrorObject> {
        match method {
            "tools/call" => {
                let name = required_str(params, "name")?.to_owned();
                let arguments = match params.and_then(|p| p.get("arguments")) {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(value @ Value::Object(_)) => value.to_string(),
                    Some(_) => return Err(ErrorObject::new(INVALID_PARAMS, "`arguments` must be an object")),
                };
                Ok(Target::Tool { name, arguments })
            }
            "prompts/get" => {
                let name = required_str(params, "name")?.to_owned();
                let mut arguments = Vec::new();
                let raw = match params.and_then(|p| p.get("arguments")) {
                    None | Some(Value::Null) => json!({}),
                    Some(Value::Object(args)) => {
                        for (key, value) in args {
                            let Value::String(value) = value else {
                                return Err(ErrorObject::new(INVALID_PARAMS, format!("prompt argument `{}` must be a string", shortened(key))));
                            };
                            arguments.push((key.clone(), value.clone()));
                        }
                        Value::Object(args.clone())
                    }
                    Some(_) => return Err(ErrorObject::new(INVALID_PARAMS, "`arguments` must be an object")),
                };
                Ok(Target::Prompt { name, arguments, raw })
            }
            _ => Ok(Target::Read { uri: required_str(params, "uri")?.to_owned() }),
        }
    }

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
    fn arguments(&self) -> Value {
        match self {
            // Bound as the plugin reads them: parsed from the very text it is given (which
            // serde_json wrote, so it parses; were it ever not to, the text itself is bound).
            Target::Tool { arguments, .. } => serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.clone())),
            Target::Prompt { raw, .. } => raw.clone(),
            Target::Read { .. } => Value::Null,
        }
    }
}

impl Session {
    /// The context a plugin is given for a request of `era`.
    pub(super) fn request_context(&self, params: Option<&Map<String, Value>>, era: Era) -> RequestContext {
        let meta = lifecycle::meta(params).cloned().unwrap_or_default();
        let mut context = match era {
            Era::Modern { .. } => {
                let mut context = RequestContext::local(Revision::V2026_07_28);
                context.client_capabilities = meta.get(META_CLIENT_CAPABILITIES).and_then(Value::as_object).cloned().unwrap_or_default();
                context.client_info = RequestContext::client_info_from(meta.get(lifecycle::META_CLIENT_INFO));
                context
            }
            Era::Legacy { version } => {
                let legacy = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
                let mut context = RequestContext::local(version);
                context.client_capabilities = legacy.client_capabilities.clone();
                context.client_info = legacy.client_info.clone();
                context
            }
        };
        context.has_progress_token = meta.get("progressToken").is_some_and(|t| t.is_string() || t.is_i64() || t.is_u64());
        context.trace = RequestContext::trace_from(&meta);
        context.meta = meta;
        context
    }

    /// Serves a request that may need input, to its end.
    pub(super) async fn serve_with_input(
        self: &Arc<Self>,
        method: &str,
        params: Option<&Map<String, Value>>,
        era: Era,
        cx: &CallContext,
    ) -> Result<Finished, ErrorObject> {
        let target = Target::parse(method, params)?;
        let context = self.request_context(params, era);
        if let Target::Tool { name, .. } = &target
            && let Some((tool, _)) = self.server.router().tool(name)
            && let Some(required) = &tool.required_capabilities
            && let Some(missing) = missing_capabilities(&context.client_capabilities, required)
        {
            return Err(missing_capability(&format!("tool `{name}`"), missing));
        }
        if let Target::Prompt { name, arguments, .. } = &target {
            let router = self.server.router();
            let Some(prompt) = router.prompt(name) else {
                return Err(ErrorObject::new(INVALID_PARAMS, format!("unknown prompt `{}`", shortened(name))));
            };
            if let Some(missing) = prompt.arguments.iter().find(|a| a.required && !arguments.iter().any(|(k, _)| *k == a.name)) {
                return Err(ErrorObject::new(INVALID_PARAMS, format!("prompt `{name}` needs argument `{}`", missing.name)));
            }
        }
        let mode = match &target {
            Target::Tool { name, .. } => {
                let support = self.server.router().tool(name).and_then(|(tool, _)| tool.execution.as_ref().map(|e| e.task_support));
                self.call_mode(params, era, &context, support)?
            }
            _ => CallMode::Direct,
        };
        match (era, mode) {
            (Era::Legacy { .. }, CallMode::Experimental { ttl }) => self.start_experimental_task(target, params, context, era, cx, ttl).await,
            (Era::Legacy { .. }, _) => self.serve_in_session(&target, context, era, cx, None).await,
            (Era::Modern { .. }, mode) => {
                let (context, unsealed) = match self.open_round(&target, params, context, era)? {
                    Opened::Ready(context, unsealed) => (context, unsealed),
                    Opened::AskAgain(finished) => return Ok(finished),
                };
                match mode {
                    CallMode::Extension { required } => self.call_as_extension_task(target, context, era, cx, required).await,
                    _ => self.serve_stateless(&target, context, unsealed, era, cx).await,
                }
            }
        }
    }

    /// 2026-07-28: opens the sealed round a retry carries, merging its answers into the context;
    /// asks again (without running the plugin) for what is still missing.
    fn open_round(&self, target: &Target, params: Option<&Map<String, Value>>, mut context: RequestContext, era: Era) -> Result<Opened, ErrorObject> {
        let key = &self.server.state_key;
        let caller = context.caller.clone();
        let responses = match params.and_then(|p| p.get("inputResponses")) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(responses)) => responses.clone(),
            Some(_) => return Err(ErrorObject::new(INVALID_PARAMS, "`inputResponses` must be an object")),
        };
        let round = match params.and_then(|p| p.get("requestState")) {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => {
                // The state names the plugin that issued it; it must still serve this request.
                let plugin = self.owner(target).ok_or_else(|| unknown(target, era))?;
                let arguments = target.arguments();
                let binding = binding(&plugin, target, &arguments, caller.as_deref());
                Some(key.open(&binding, token).map_err(|e| ErrorObject::new(INVALID_PARAMS, e.to_string()))?)
            }
            Some(_) => return Err(ErrorObject::new(INVALID_PARAMS, "`requestState` must be a string")),
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
                let plugin = self.owner(target).ok_or_else(|| unknown(target, era))?;
                round.requests = missing;
                let arguments = target.arguments();
                // What grew since the round was sealed is the client's answers: too many to carry
                // is the client's to fix (answer every request at once).
                let sealed = key.seal_for(&binding(&plugin, target, &arguments, caller.as_deref()), &round, self.server.state_ttl).map_err(|too_large| {
                    ErrorObject::new(
                        INVALID_PARAMS,
                        format!("the answers given so far cannot be carried: {too_large}; answer every request of the round at once"),
                    )
                })?;
                return Ok(Opened::AskAgain(input_required_result(&round.requests, sealed)));
            }
            context.input_responses = round.answered;
            context.state = round.plugin_state;
            return Ok(Opened::Ready(context, Map::new()));
        }
        Ok(Opened::Ready(context, responses))
    }

    /// 2026-07-28: one run per request; input goes back to the client in a sealed round.
    ///
    /// A request that brought answers without a round (`unsealed`) may still use them: when
    /// the plugin asks, and the answers cover every key it asked, it runs once more with the
    /// answers to exactly those keys (under the methods it named, checked like any answer);
    /// other keys are dropped. Otherwise the answers are ignored and the question goes back.
    async fn serve_stateless(
        &self,
        target: &Target,
        context: RequestContext,
        unsealed: Map<String, Value>,
        era: Era,
        cx: &CallContext,
    ) -> Result<Finished, ErrorObject> {
        let run = cx.clone().with_request(context.clone());
        let (plugin, outcome) = self.run_once(target, era, &run).await?;
        let required = match outcome {
            Outcome::Complete(finished) => return Ok(finished),
            Outcome::InputRequired(required) => required,
        };
        let covered = !unsealed.is_empty() && !required.requests.is_empty() && required.requests.iter().all(|r| unsealed.contains_key(&r.key));
        if !covered {
            return self.answer_input_required(target, &plugin, &context, required);
        }
        refuse_undeclared(&required, &context.client_capabilities, &plugin)?;
        let mut answered = context.clone();
        answered.input_responses =
            required.requests.iter().map(|r| InputResponse { key: r.key.clone(), method: r.method, result: unsealed[&r.key].clone() }).collect();
        answered.state = required.state;
        let run = cx.clone().with_request(answered);
        let (plugin, outcome) = self.run_once(target, era, &run).await?;
        match outcome {
            Outcome::Complete(finished) => Ok(finished),
            Outcome::InputRequired(required) => self.answer_input_required(target, &plugin, &context, required),
        }
    }

    /// The sealed `input_required` answer to a 2026-07-28 run that needs input. A round too
    /// large to seal (it would not open again) is the plugin's malformed output: a tool call
    /// ends with an error result, other methods with an error.
    pub(super) fn answer_input_required(
        &self,
        target: &Target,
        plugin: &str,
        context: &RequestContext,
        required: InputRequired,
    ) -> Result<Finished, ErrorObject> {
        refuse_undeclared(&required, &context.client_capabilities, plugin)?;
        let round = Round { requests: required.requests, answered: Vec::new(), plugin_state: required.state };
        let arguments = target.arguments();
        match self.server.state_key.seal_for(&binding(plugin, target, &arguments, context.caller.as_deref()), &round, self.server.state_ttl) {
            Ok(sealed) => Ok(input_required_result(&round.requests, sealed)),
            Err(too_large) => {
                let error = PluginError::MalformedOutput(too_large.to_string());
                tracing::warn!(%plugin, request = %crate::escape::Escaped(&shortened(target.name())), error = %error, "a plugin's input round was refused");
                match target {
                    Target::Tool { .. } => Ok(Finished { result: to_json(&CallToolResult::error(error.to_string()))?, cache: None }),
                    _ => Err(ErrorObject::new(INTERNAL_ERROR, format!("plugin `{plugin}` failed: {error}"))),
                }
            }
        }
    }

    /// A legacy session: the session asks the client and runs the plugin again, up to `MAX_ROUNDS`.
    /// When the request runs as a `task`, the task waits in `input_required` while the client is
    /// asked, and the questions name it.
    pub(super) async fn serve_in_session(
        &self,
        target: &Target,
        mut context: RequestContext,
        era: Era,
        cx: &CallContext,
        task: Option<&crate::tasks::Task>,
    ) -> Result<Finished, ErrorObject> {
        for _ in 0..MAX_ROUNDS {
            let client_capabilities = context.client_capabilities.clone();
            let run = cx.clone().with_request(context.clone());
            let (plugin, outcome) = self.run_once(target, era, &run).await?;
            let required = match outcome {
                Outcome::Complete(finished) => return Ok(finished),
                Outcome::InputRequired(required) => required,
            };
            refuse_undeclared(&required, &client_capabilities, &plugin)?;
            if let Some(task) = task {
                task.park(required.requests.clone(), "waiting for the client's answers");
                self.task_changed(task);
            }
            let asked = self.ask_client(&required, cx, task.map(|t| t.id.as_str())).await;
            if let Some(task) = task {
                task.resume();
                self.task_changed(task);
            }
            let answers = match asked {
                Ok(answers) => answers,
                Err(failure) => return self.input_failed(target, &plugin, failure),
            };
            context.input_responses = answers;
            context.state = required.state;
        }
        let why = format!("the plugin asked for input more than {MAX_ROUNDS} times");
        self.input_failed(target, "", AskFailure::Plugin(why))
    }

    /// Sends one round of requests to the client and waits for every answer.
    async fn ask_client(&self, required: &InputRequired, cx: &CallContext, task: Option<&str>) -> Result<Vec<InputResponse>, AskFailure> {
        let mut waiting = Vec::with_capacity(required.requests.len());
        for request in &required.requests {
            let slot = self.client_requests.register().ok_or(AskFailure::Busy)?;
            let mut params = legacy_params(request);
            if let Some(task) = task {
                params["_meta"] = json!({super::lifecycle::META_RELATED_TASK: {"taskId": task}});
            }
            if self.related_out().send(jsonrpc::request_line(&slot.id, request.method.method(), &params)).await.is_err() {
                return Err(AskFailure::Gone);
            }
            waiting.push((request, slot));
        }
        let answers = join_all(waiting.iter_mut().map(|(_, slot)| &mut slot.answer));
        let answers = tokio::select! {
            answers = answers => answers,
            () = tokio::time::sleep(self.server.input_timeout) => {
                self.withdraw(waiting.iter().map(|(_, slot)| &slot.id)).await;
                return Err(AskFailure::Timeout);
            }
            () = cx.cancelled() => {
                self.withdraw(waiting.iter().map(|(_, slot)| &slot.id)).await;
                return Err(AskFailure::Gone);
            }
        };
        let mut responses = Vec::with_capacity(answers.len());
        for ((request, _), answer) in waiting.iter().zip(answers) {
            match answer {
                Ok(Ok(result)) => responses.push(InputResponse { key: request.key.clone(), method: request.method, result }),
                Ok(Err(error)) => return Err(AskFailure::Refused { key: request.key.clone(), error }),
                Err(_) => return Err(AskFailure::Gone),
            }
        }
        Ok(responses)
    }

    /// Tells the client that requests it has not answered are no longer needed.
    async fn withdraw<'a>(&self, ids: impl Iterator<Item = &'a jsonrpc::Id>) {
        let stream = self.related_out();
        for id in ids {
            stream.notify(jsonrpc::notification_line("notifications/cancelled", json!({"requestId": id.to_value(), "reason": "no longer needed"})));
        }
    }

    fn input_failed(&self, target: &Target, plugin: &str, failure: AskFailure) -> Result<Finished, ErrorObject> {
        let message = failure.to_string();
        if !plugin.is_empty() {
            tracing::info!(%plugin, request = %crate::escape::Escaped(target.name()), why = %crate::escape::Escaped(&message), "input round ended");
        }
        match target {
            Target::Tool { .. } => Ok(Finished { result: to_json(&CallToolResult::error(message))?, cache: None }),
            _ => Err(ErrorObject::new(INTERNAL_ERROR, message)),
        }
    }

    /// The plugin serving `target` now.
    pub(super) fn owner(&self, target: &Target) -> Option<String> {
        let router = self.server.router();
        match target {
            Target::Tool { name, .. } => router.tool(name).map(|(_, plugin)| plugin.to_owned()),
            Target::Prompt { name, .. } => router.prompt_owner(name).map(str::to_owned),
            Target::Read { uri } => router.resource_owner(uri).map(str::to_owned),
        }
    }

    /// Runs the plugin once; errors are mapped as each method maps them.
    pub(super) async fn run_once(&self, target: &Target, era: Era, cx: &CallContext) -> Result<(String, Outcome<Finished>), ErrorObject> {
        let router = self.server.router();
        match target {
            Target::Tool { name, arguments } => match router.call_tool(name, arguments, cx).await {
                Ok((plugin, outcome)) => {
                    let outcome = match outcome {
                        Outcome::Complete(result) => Outcome::Complete(Finished { result: call_result_json(result)?, cache: None }),
                        Outcome::InputRequired(required) => Outcome::InputRequired(required),
                    };
                    Ok((plugin.to_owned(), outcome))
                }
                Err(RouteError::Plugin { plugin, error }) => match error {
                    PluginError::NotFound(_) => Err(ErrorObject::new(INVALID_PARAMS, format!("unknown tool `{}`", shortened(name)))),
                    PluginError::InvalidInputResponse(why) => Err(ErrorObject::new(INVALID_PARAMS, why)),
                    // The plugin refused the request itself; every other failure is a result the model reads.
                    PluginError::InvalidParams(why) => Err(ErrorObject::new(INVALID_PARAMS, format!("invalid params: {why}"))),
                    other => {
                        tracing::warn!(%plugin, tool = %crate::escape::Escaped(name), error = %crate::escape::Escaped(&other.to_string()), "tool call failed");
                        Ok((plugin, Outcome::Complete(Finished { result: to_json(&CallToolResult::error(other.to_string()))?, cache: None })))
                    }
                },
                Err(other) => Err(route_error(other, era)),
            },
            Target::Prompt { name, arguments, .. } => {
                let (plugin, outcome) = router.get_prompt(name, arguments, cx).await.map_err(|e| route_error(e, era))?;
                let outcome = match outcome {
                    Outcome::Complete(result) => Outcome::Complete(Finished { result: to_json(&result)?, cache: None }),
                    Outcome::InputRequired(required) => Outcome::InputRequired(required),
                };
                Ok((plugin.to_owned(), outcome))
            }
            Target::Read { uri } => {
                let (plugin, outcome) = router.read_resource(uri, cx).await.map_err(|e| route_error(e, era))?;
                let outcome = match outcome {
                    Outcome::Complete(result) => {
                        let cache = Some(result.cache.unwrap_or(READ_DEFAULT_CACHE));
                        Outcome::Complete(Finished { result: to_json(&result)?, cache })
                    }
                    Outcome::InputRequired(required) => Outcome::InputRequired(required),
                };
                Ok((plugin.to_owned(), outcome))
            }
        }
    }
}

/// How a `tools/call` is served: directly, or as a task of one design.
pub(super) enum CallMode {
    Direct,
    /// 2025-11-25, with the time to live the client asked for.
    Experimental {
        ttl: Option<std::time::Duration>,
    },
    /// 2026-07-28 with the extension declared; `required` when the tool only runs as a task.
    Extension {
        required: bool,
    },
}

/// A 2026-07-28 request after its sealed round is opened.
#[allow(clippy::large_enum_variant, reason = "`Ready` is what nearly every request gets, once: a box would cost it an allocation")]
enum Opened {
    /// Ready to run, with the answers and state of the round; or, for a request that carries
    /// answers but no round, those answers, kept aside until the plugin asks.
    Ready(RequestContext, Map<String, Value>),
    /// Answers are still missing: this asks for them again.
    AskAgain(Finished),
}

/// Why a legacy round did not bring every answer.
#[derive(Debug, thiserror::Error)]
enum AskFailure {
    #[error("the client answered the `{key}` request with an error: {}", shortened(&.error.message))]
    Refused { key: String, error: ErrorObject },
    #[error("the client did not answer within the time allowed")]
    Timeout,
    #[error("the request was abandoned")]
    Gone,
    #[error("too many requests to the client are waiting; try again later")]
    Busy,
    #[error("{0}")]
    Plugin(String),
}

fn binding<'a>(plugin: &'a str, target: &'a Target, arguments: &'a Value, caller: Option<&'a str>) -> Binding<'a> {
    Binding { plugin, method: target.method(), target: target.name(), arguments, caller }
}

fn unknown(target: &Target, era: Era) -> ErrorObject {
    match target {
        Target::Read { uri } => route_error(RouteError::UnknownResource { uri: uri.clone() }, era),
        Target::Tool { name, .. } => ErrorObject::new(INVALID_PARAMS, format!("unknown tool `{}`", shortened(name))),
        Target::Prompt { name, .. } => ErrorObject::new(INVALID_PARAMS, format!("unknown prompt `{}`", shortened(name))),
    }
}

/// The `input_required` result of 2026-07-28.
fn input_required_result(requests: &[InputRequest], state: String) -> Finished {
    let input_requests: Map<String, Value> = requests.iter().map(|r| (r.key.clone(), r.to_wire())).collect();
    let mut result = json!({"resultType": "input_required", "requestState": state});
    if !input_requests.is_empty() {
        result["inputRequests"] = Value::Object(input_requests);
    }
    Finished { result, cache: None }
}

/// Refuses a round that asks for something the client did not declare, naming it.
pub(super) fn refuse_undeclared(required: &InputRequired, declared: &Map<String, Value>, plugin: &str) -> Result<(), ErrorObject> {
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

fn missing_capability(who: &str, missing: Map<String, Value>) -> ErrorObject {
    let names: Vec<&str> = missing.keys().map(String::as_str).collect();
    ErrorObject::new(MISSING_REQUIRED_CLIENT_CAPABILITY, format!("{who} needs the client capabilities {}, which this client did not declare", names.join(", ")))
        .with_data(json!({"requiredCapabilities": missing}))
}

/// A request's params as a legacy client receives them: URL elicitations carry an
/// `elicitationId` (2025-11-25).
fn legacy_params(request: &InputRequest) -> Value {
    let mut params = request.params.clone();
    if request.method == InputMethod::ElicitUrl {
        let mut id = [0u8; 16];
        if getrandom::fill(&mut id).is_ok() {
            let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            params.insert("elicitationId".into(), Value::String(id));
        }
    }
    Value::Object(params)
}
