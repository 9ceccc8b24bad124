//! `Scope`: everything one request is served with, fixed when it is admitted and kept for its
//! whole life (every round of input and every run of a task included): the router it started
//! with, its era, the context its plugin sees, its call context, the server's shared state, and
//! a handle on the client behind its channel.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::Era;
use super::error::McpError;
use super::lifecycle::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO};
use super::state::{Change, ServerState};
use crate::identity::{Principal, Transport};
use crate::input::{ClientInfo, InputRequest, InputResponse, RequestContext};
use crate::jsonrpc::{ErrorObject, notification_line, shortened};
use crate::plugin::{CallContext, LogLevel};
use crate::revision::Revision;
use crate::router::Router;
use crate::tasks::{QuotaKey, Task, TaskDesign};

/// The client behind a request's channel, as the MCP layer reaches it: what it declared, where
/// its notifications go, the legacy session's own settings, and asking it for input.
pub trait Client: Send + Sync {
    /// The channel's id, unique in the process: the owner of the legacy tasks it creates.
    fn session(&self) -> u64;
    /// Who the channel's requests are served for.
    fn principal(&self) -> &Principal;
    /// The transport the channel is.
    fn transport(&self) -> Transport;
    /// The session id the client sends (`Mcp-Session-Id`, or HTTP+SSE's `session_id`), when the
    /// channel is a legacy HTTP session.
    fn wire_session(&self) -> Option<std::sync::Arc<str>> {
        None
    }
    /// Whose quota the tasks created here count against.
    fn quota(&self) -> QuotaKey;
    /// What a legacy client declared at `initialize`: its capabilities and its info.
    fn declared(&self) -> (Map<String, Value>, Option<ClientInfo>);
    /// The legacy session's log level.
    fn log_level(&self) -> LogLevel;
    fn set_log_level(&self, level: LogLevel);
    /// Follows the updates of `uri` (legacy `resources/subscribe`), if `router` serves it.
    fn follow(&self, uri: &str, router: &Router) -> Result<(), McpError>;
    fn unfollow(&self, uri: &str);
    /// Queues a notification on the channel's own queue.
    fn notify(&self, line: String);
    /// Queues a notification about the request being served (on its own stream, when it has one).
    fn notify_related(&self, line: String);
    /// Asks the client one round of requests and waits for every answer (legacy sessions), under
    /// the server's input timeout; `task` names the task the questions are for.
    fn ask<'a>(&'a self, requests: &'a [InputRequest], cx: &'a CallContext, task: Option<&'a str>) -> BoxFuture<'a, Result<Vec<InputResponse>, AskFailure>>;
}

/// Why a legacy round did not bring every answer.
#[derive(Debug, thiserror::Error)]
pub enum AskFailure {
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

impl AskFailure {
    /// The round's outcome, as one fixed word (what metrics record).
    pub fn kind(&self) -> &'static str {
        match self {
            AskFailure::Refused { .. } => "refused",
            AskFailure::Timeout => "timeout",
            AskFailure::Gone => "gone",
            AskFailure::Busy => "busy",
            AskFailure::Plugin(_) => "too_many_rounds",
        }
    }
}

/// One request's scope.
#[derive(Clone)]
pub struct Scope {
    /// The router the request started with: every step of it uses this one.
    pub router: Arc<Router>,
    pub era: Era,
    /// The request's cancellation and event channel, told the request's context.
    pub cx: CallContext,
    pub client: Arc<dyn Client>,
    pub state: Arc<ServerState>,
}

impl Scope {
    /// The scope of a request of `era` whose params carried `meta` (their `_meta`, taken out of
    /// them: the scope keeps it, the plugin is told it), served now.
    pub fn new(state: &Arc<ServerState>, client: Arc<dyn Client>, era: Era, meta: Option<Value>, cx: CallContext) -> Scope {
        let cx = cx.with_request(request_context(client.as_ref(), meta, era));
        Scope { router: state.router(), era, cx, client, state: Arc::clone(state) }
    }

    /// What the request's plugin is told (protocol, client, `_meta`, caller).
    pub fn context(&self) -> &RequestContext {
        &self.cx.request
    }

    /// This scope with the request's trace context replaced by `carried` (its server span): what
    /// its plugin is told, and what its outgoing requests continue.
    pub(super) fn with_trace(&self, carried: crate::telemetry::trace::Carried) -> Scope {
        let mut context = (*self.cx.request).clone();
        context.trace.traceparent = carried.traceparent;
        context.trace.tracestate = carried.tracestate;
        Scope { cx: self.cx.clone().with_request(context), ..self.clone() }
    }

    /// The revision the request is served under.
    pub fn revision(&self) -> Revision {
        self.era.revision()
    }

    /// Tells whoever follows `task` that it changed: its legacy session, or the listen requests
    /// that name it.
    pub(super) fn task_changed(&self, task: &Task) {
        match task.design {
            TaskDesign::Experimental => self.client.notify(notification_line("notifications/tasks/status", task.to_wire(false))),
            TaskDesign::Extension => {
                let owner = match &task.owner {
                    crate::tasks::TaskOwner::Caller(id) => id.as_str(),
                    crate::tasks::TaskOwner::Session(_) => "",
                };
                self.announce_task(&task.id, owner, task.to_wire(true));
            }
        }
    }

    /// Tells the listeners of 2026-07-28 task `id` of `owner` what it is now (`detail`, as
    /// `tasks/get` shows it), here and, through the shared store, on every other replica.
    pub(super) fn announce_task(&self, id: &str, owner: &str, detail: Value) {
        super::cluster::publish_task(self.state.store.as_ref(), self.state.replica.id().as_str(), id, owner, &detail);
        self.state.announce(Change::Task { id: Arc::from(id), owner: Arc::from(owner), detail: Arc::new(detail) });
    }
}

/// The context a plugin is given for a request of `era` with `_meta` `meta` (only an object
/// counts).
fn request_context(client: &dyn Client, meta: Option<Value>, era: Era) -> RequestContext {
    let meta = match meta {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    let mut context = RequestContext::local(era.revision());
    match era {
        Era::Modern { .. } => {
            context.client_capabilities = meta.get(META_CLIENT_CAPABILITIES).and_then(Value::as_object).cloned().unwrap_or_default();
            context.client_info = RequestContext::client_info_from(meta.get(META_CLIENT_INFO));
        }
        Era::Legacy { .. } => (context.client_capabilities, context.client_info) = client.declared(),
    }
    context.has_progress_token = meta.get("progressToken").is_some_and(|t| t.is_string() || t.is_i64() || t.is_u64());
    context.caller = Some(client.principal().id().to_owned());
    context.trace = RequestContext::trace_from(&meta);
    context.meta = meta;
    context
}
