//! The seam between the router and whatever serves a plugin: the `Plugin` trait, the
//! catalog a plugin declares at load time, the per-request `CallContext`, and `PluginError`.
//!
//! `runtime::WasmPlugin` implements `Plugin` with wasmtime; session and router tests use
//! fakes with no wasm at all. Names here are the plugin's own names: the router adds and
//! strips the exposed prefix.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::input::{Outcome, RequestContext};
use crate::protocol::{
    CacheHint, CallToolResult, Completion, CompletionRequest, GetPromptResult, Icon, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};

/// A boxed future, for object-safe async trait methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a plugin asks its operator for (from its `metadata.info` export). Informational only:
/// the grant decides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestedCapabilities {
    /// `(guest path, writable, reason)`.
    pub files: Vec<FileRequest>,
    /// `scheme://host[:port]` patterns.
    pub network: Vec<String>,
    /// Environment variable names.
    pub env: Vec<String>,
}

/// A directory a plugin would like to see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRequest {
    pub guest_path: String,
    pub writable: bool,
    pub reason: Option<String>,
}

/// What a plugin says about itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub instructions: Option<String>,
    pub website_url: Option<String>,
    pub icons: Vec<Icon>,
    pub requests: RequestedCapabilities,
}

/// Everything a plugin declares once, at load time, already validated. Names are the plugin's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Catalog {
    pub info: PluginInfo,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    /// The plugin's cache hints for each list, when it gave them.
    pub cache: ListCacheHints,
}

/// Cache hints a plugin gave for its lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCacheHints {
    pub tools: Option<CacheHint>,
    pub resources: Option<CacheHint>,
    pub resource_templates: Option<CacheHint>,
    pub prompts: Option<CacheHint>,
}

/// Levels of RFC 5424, lowest first, as MCP's `logging` uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    /// All levels, lowest first.
    pub const ALL: [LogLevel; 8] =
        [LogLevel::Debug, LogLevel::Info, LogLevel::Notice, LogLevel::Warning, LogLevel::Error, LogLevel::Critical, LogLevel::Alert, LogLevel::Emergency];

    /// The MCP wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// Parses an MCP wire name.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|level| level.as_str() == name)
    }
}

/// Something a plugin reported while serving a request; the session decides whether the client
/// hears about it (progress only with a progress token, logs only at or above the client's level).
///
/// `ListChanged` and `ResourceUpdated` are about the plugin, not the request: the session hands
/// them to the server, which re-reads the plugin's lists or tells subscribed clients. `plugin` is
/// filled in by the host side of the seam (the runtime knows whose instance is speaking), never
/// by the guest.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    Log { level: LogLevel, logger: Option<String>, data: String },
    Progress { progress: f64, total: Option<f64>, message: Option<String> },
    ListChanged { plugin: Arc<str>, kind: ListKind },
    ResourceUpdated { plugin: Arc<str>, uri: String },
}

/// Which of a plugin's lists changed. Resource templates count as resources, as in MCP's
/// `notifications/resources/list_changed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl ListKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Resources, ListKind::Prompts];

    /// The MCP notification announcing a change of this list.
    pub fn notification(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Resources => "notifications/resources/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
        }
    }
}

/// Events one request may have queued for its session at once; further events are dropped
/// (and counted) until the session catches up. The runtime's per-call event budgets keep a
/// plugin far below this in normal use; this bounds what a stalled session can be made to hold.
pub const EVENT_QUEUE: usize = 256;

/// Per-request context handed to a plugin call: the request id for logs, what the plugin is
/// told about the request (`RequestContext`), the cancellation token the client controls, and
/// the bounded queue of events (logs, progress) for the session.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The JSON-RPC id of the request, as text, for logs.
    pub request_id: String,
    /// The protocol, client and answers the plugin sees.
    pub request: Arc<RequestContext>,
    cancel: CancellationToken,
    events: Option<mpsc::Sender<CallEvent>>,
    dropped: Arc<AtomicU64>,
    /// What the host refused the plugin while serving this request (every run and round).
    refused: Arc<AtomicU64>,
}

impl CallContext {
    /// A context whose events go to `events` (when given).
    pub fn new(request_id: impl Into<String>, events: Option<mpsc::Sender<CallEvent>>) -> Self {
        CallContext {
            request_id: request_id.into(),
            request: Arc::new(RequestContext::local(crate::revision::Revision::LATEST_SESSION)),
            cancel: CancellationToken::new(),
            events,
            dropped: Arc::new(AtomicU64::new(0)),
            refused: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The same request, told `request` (a retry carries the answers of the previous round).
    pub fn with_request(mut self, request: RequestContext) -> Self {
        self.request = Arc::new(request);
        self
    }

    /// A context nobody listens to (for `paddock call` and tests).
    pub fn detached(request_id: impl Into<String>) -> Self {
        CallContext::new(request_id, None)
    }

    /// Marks the request cancelled; the plugin sees it through `is-cancelled`, and the runtime
    /// stops it after a grace period.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Whether the client cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes once the request is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Reports an event without ever waiting: when nobody listens, or the queue is full, the
    /// event is dropped (and counted) and `false` is returned.
    pub fn emit(&self, event: CallEvent) -> bool {
        let Some(events) = &self.events else { return false };
        if events.try_send(event).is_ok() {
            return true;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// What the host refused the plugin while serving this request, so far.
    pub fn refusals(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The counter the runtime's refusal recorder adds this request's refusals to.
    pub(crate) fn refusal_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.refused)
    }

    /// Events dropped because the session's queue for this request was full.
    pub fn events_dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Why a plugin request failed. The router and session map each variant to the wire:
/// for `tools/call`, `Trap`/`Timeout`/`Limit`/`Failed` become `isError` results.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PluginError {
    /// The plugin has no tool, resource or prompt by that name or URI.
    #[error("not found: {0}")]
    NotFound(String),
    /// The plugin rejected the arguments.
    #[error("invalid params: {0}")]
    InvalidParams(String),
    /// The plugin reported a failure.
    #[error("{0}")]
    Failed(String),
    /// The client's answer to an input request does not have its method's shape.
    #[error("{0}")]
    InvalidInputResponse(String),
    /// The guest trapped (panic, abort, stack overflow, unreachable).
    #[error("plugin crashed: {0}")]
    Trap(String),
    /// The client cancelled the request and the plugin was stopped (or returned) after its grace period.
    #[error("the request was cancelled")]
    Cancelled,
    /// The call ran past its deadline and was stopped.
    #[error("plugin timed out after {ms} ms")]
    Timeout { ms: u64 },
    /// A resource limit was hit (memory, output size, instances).
    #[error("plugin exceeded its {limit} limit")]
    Limit { limit: Limit },
    /// The plugin returned something the host refuses to pass on.
    #[error("plugin returned malformed output: {0}")]
    MalformedOutput(String),
    /// The host could not run the plugin at all.
    #[error("plugin unavailable: {0}")]
    Unavailable(String),
}

impl PluginError {
    /// The kind of failure, as one fixed word: what metrics and spans record.
    pub fn kind(&self) -> &'static str {
        match self {
            PluginError::NotFound(_) => "not_found",
            PluginError::InvalidParams(_) => "invalid_params",
            PluginError::Failed(_) => "failed",
            PluginError::InvalidInputResponse(_) => "invalid_input_response",
            PluginError::Trap(_) => "trap",
            PluginError::Cancelled => "cancelled",
            PluginError::Timeout { .. } => "deadline",
            PluginError::Limit { limit: Limit::Concurrency } => "concurrency_limit",
            PluginError::Limit { limit: Limit::Resources } => "resources_limit",
            PluginError::Limit { limit: Limit::Output } => "output_limit",
            PluginError::Limit { limit: Limit::Memory } => "memory_limit",
            PluginError::MalformedOutput(_) => "malformed_output",
            PluginError::Unavailable(_) => "unavailable",
        }
    }
}

/// Which of a plugin's limits a call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `limits.concurrency`: no slot freed before the deadline.
    Concurrency,
    /// Descriptors or other host resources of the plugin's budget.
    Resources,
    /// `limits.output`: the result's bytes.
    Output,
    /// `limits.memory`.
    Memory,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::Concurrency => "concurrency",
            Limit::Resources => "resources",
            Limit::Output => "output",
            Limit::Memory => "memory",
        })
    }
}

/// A loaded plugin, as the router sees it.
pub trait Plugin: Send + Sync {
    /// The plugin's id: its file stem, unique in the folder.
    fn id(&self) -> &str;

    /// What the plugin declared at load time.
    fn catalog(&self) -> &Catalog;

    /// Host file descriptors the plugin's running calls hold now.
    fn descriptors_in_use(&self) -> u64 {
        0
    }

    /// Whether the catalog served is the one recorded by an earlier load, not yet read from the
    /// plugin itself: its server reads it again (`reload_catalog`) once the plugin can run.
    fn served_from_record(&self) -> bool {
        false
    }

    /// Reads the plugin's lists again, in a fresh instance and under the load-time validation,
    /// after the plugin announced a change. A plugin whose lists never change keeps its
    /// load-time catalog.
    fn reload_catalog(&self) -> BoxFuture<'_, Result<Catalog, PluginError>> {
        Box::pin(async move { Ok(self.catalog().clone()) })
    }

    /// Runs a tool by the plugin's own name; `arguments` is JSON object text.
    fn call_tool<'a>(&'a self, tool: &'a str, arguments: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>>;

    /// Reads a resource by URI.
    fn read_resource<'a>(&'a self, uri: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>>;

    /// Renders a prompt by the plugin's own name.
    fn get_prompt<'a>(
        &'a self,
        prompt: &'a str,
        arguments: &'a [(String, String)],
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>>;

    /// Completes an argument of a prompt or resource template.
    fn complete<'a>(&'a self, request: &'a CompletionRequest, cx: &'a CallContext) -> BoxFuture<'a, Result<Completion, PluginError>>;
}
