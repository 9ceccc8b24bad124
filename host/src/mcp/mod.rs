//! The typed MCP layer: a request's method read once (`Method`), its params parsed once for its
//! era (`Request`), served in one `Scope` fixed at admission, by one dispatcher whose handlers
//! (one module per family of methods) return `Result<Reply, McpError>`. `McpError::to_wire` is
//! the one table from errors to JSON-RPC per revision; `Reply::into_line` the one place a result
//! is finished for its revision.
//!
//! This layer knows no channel: it reaches the client through the scope's `Client` handle,
//! which the session implements (sessions, batches, admission and the reply queue are the
//! session's). Below it: the router, the task store, the input model.

mod approvals;
mod audited;
mod caller_policy;
mod calls;
mod cluster;
mod detached;
mod error;
mod lifecycle;
mod lists;
mod notifier;
mod observed;
mod reply;
mod request;
mod rounds;
mod scope;
mod shape;
mod shared_tasks;
mod spent;
mod state;
mod subscriptions;
mod task_calls;

use serde_json::{Map, Value, json};

pub use caller_policy::{Watcher, sees, view_of};
pub use error::{
    INSUFFICIENT_SCOPE, MISSING_REQUIRED_CLIENT_CAPABILITY, McpError, RATE_LIMITED, RESOURCE_NOT_FOUND, SERVER_BUSY, UNSUPPORTED_PROTOCOL_VERSION,
};
pub use lifecycle::{
    META_CLIENT_CAPABILITIES, META_GENERATION, META_LOG_LEVEL, META_PROTOCOL_VERSION, META_RELATED_TASK, TASKS_EXTENSION, is_modern, meta, negotiate,
    validate_modern,
};
pub use notifier::{Notifier, forward};
pub use reply::Reply;
pub use request::{ListMethod, Method, Request};
pub use rounds::legacy_params;
pub use scope::AskFailure;
pub use scope::{Client, Scope};
pub use state::{CallerPolicy, Change, DEFAULT_INPUT_TIMEOUT, ServerLimits, ServerState, ServingProblem, TASK_AFTER};
pub use subscriptions::{Filter, MAX_LISTENS, MAX_RESOURCE_SUBSCRIPTIONS, META_SUBSCRIPTION_ID, acknowledgement, closing_result, lines_from};
pub use task_calls::{claim_orphans, declares_extension};

#[cfg(test)]
pub(crate) use reply::call_result_json;

use crate::plugin::LogLevel;
use crate::protocol::{CacheHint, CacheScope};
use crate::revision::Revision;

/// Rounds of input one request may go through before it is stopped.
pub const MAX_ROUNDS: usize = 8;
/// `server/discover` describes what is served; it changes when the plugins' lists do.
const DISCOVER_CACHE: CacheHint = CacheHint { ttl_ms: 0, scope: CacheScope::Public };

/// The protocol era and settings a request is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// A legacy session at the negotiated version.
    Legacy { version: Revision },
    /// A stateless 2026-07-28 request, with the log level it opted in to.
    Modern { log_level: Option<LogLevel> },
}

impl Era {
    /// The revision a request of this era is served under.
    pub fn revision(self) -> Revision {
        match self {
            Era::Legacy { version } => version,
            Era::Modern { .. } => Revision::V2026_07_28,
        }
    }
}

/// Serves one request in its scope: what this era or client lacks is refused before its params
/// are read, then the params are parsed once and the request goes to its handler. A request
/// that reaches policy is recorded in the audit trail once it is answered (when one is kept).
///
/// When metrics or traces are on, the request is measured and, with traces, served inside its
/// server span (`observed::server_span`), which its plugin sees as its parent.
pub async fn dispatch(scope: &Scope, method: &Method, params: Option<Map<String, Value>>) -> Result<Reply, McpError> {
    if crate::telemetry::metrics::get().is_none() && crate::telemetry::semconv::get().is_none() && !crate::telemetry::trace::on() {
        return audited(scope, method, params).await;
    }
    let started = std::time::Instant::now();
    let tool = match method {
        Method::CallTool => params.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str).and_then(|name| scope.router.tool_label(name)).cloned(),
        _ => None,
    };
    let span = observed::server_span(scope, method, params.as_ref(), tool.as_deref());
    let result = match span.carried() {
        Some(carried) => {
            let traced = scope.with_trace(carried);
            let (trace_id, span_id) = span.ids().unwrap_or_default();
            // Log records made while serving carry the trace and span they belong to.
            let logged = tracing::info_span!("request", trace_id = %trace_id, span_id = %span_id);
            tracing::Instrument::instrument(audited(&traced, method, params), logged).await
        }
        None => audited(scope, method, params).await,
    };
    let outcome = outcome(&result);
    if outcome != "ok" {
        span.fail(outcome);
    }
    observed::record(scope, method, tool.as_ref(), outcome, started.elapsed());
    result
}

/// How a request ended, as one word: `ok`, `tool_error` for a result that says `isError` (a
/// successful response, but a failed tool), or the kind of error.
pub fn outcome(result: &Result<Reply, McpError>) -> &'static str {
    match result {
        Ok(reply) if reply.result.get("isError").and_then(Value::as_bool) == Some(true) => "tool_error",
        Ok(_) => "ok",
        Err(error) => error.kind(),
    }
}

/// `serve`, recorded in the audit trail when the request reaches policy (and a trail is kept).
async fn audited(scope: &Scope, method: &Method, params: Option<Map<String, Value>>) -> Result<Reply, McpError> {
    let audit = &scope.state.callers.audit;
    if !audit.is_on() || !audited::recorded(method) {
        return serve(scope, method, params).await;
    }
    let named = audited::Named::of(method, params.as_ref());
    let result = serve(scope, method, params).await;
    audit.record(named.record(scope, method, &result)).await;
    result
}

async fn serve(scope: &Scope, method: &Method, params: Option<Map<String, Value>>) -> Result<Reply, McpError> {
    let design = match method {
        Method::TasksGet | Method::TasksList | Method::TasksCancel | Method::TasksUpdate | Method::TasksResult => Some(task_calls::design(method, scope)?),
        _ => None,
    };
    match Request::parse(method.clone(), params, scope.era)? {
        Request::Initialize => Ok(Reply::new(lifecycle::initialize_result(&scope.router, scope.revision()))),
        Request::Ping => Ok(Reply::new(json!({}))),
        Request::Discover => Ok(Reply::cached(lifecycle::discover_result(&scope.router), DISCOVER_CACHE)),
        Request::List { list, cursor } => lists::serve(scope, list, cursor.as_deref()),
        Request::Call(call) => calls::serve(scope, call).await,
        Request::Complete { target, argument, context } => {
            caller_policy::admit_completion(scope, &target)?;
            let plugin = match &target {
                crate::protocol::CompletionTarget::Prompt(name) => scope.router.prompt_owner(name),
                crate::protocol::CompletionTarget::ResourceTemplate(uri) => scope.router.template_owner(uri),
            };
            caller_policy::charge_plugin(scope, plugin).await?;
            let completion = scope.router.complete(&target, (&argument.0, &argument.1), context, &scope.cx).await?;
            Ok(Reply::new(json!({"completion": reply::to_json(&completion)?})))
        }
        Request::Subscribe { uri } => {
            caller_policy::admit_resource(scope, &uri)?;
            scope.client.follow(&uri, &scope.router)?;
            Ok(Reply::new(json!({})))
        }
        Request::Unsubscribe { uri } => {
            scope.client.unfollow(&uri);
            Ok(Reply::new(json!({})))
        }
        Request::SetLogLevel(level) => {
            scope.client.set_log_level(level);
            Ok(Reply::new(json!({})))
        }
        Request::Task(request) => match design {
            Some(design) => task_calls::serve(scope, design, request).await,
            None => Err(McpError::internal()),
        },
        // What the panic guard of every request is tested with.
        #[cfg(test)]
        Request::Unknown(Method::Other(name)) if name == "test/panic" => panic!("a test asked this request to panic"),
        Request::Unknown(method) => Err(McpError::no_method(method.name())),
    }
}
