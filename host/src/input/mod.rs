//! The input model, one for both protocol eras: what a plugin asks the client for (elicitation,
//! sampling, roots) when a call ends with `input-required`, which client capabilities that
//! needs, and the sealed request state that carries a 2026-07-28 round trip.
//!
//! Requests are kept in their wire shape (`method` and `params`, as 2026-07-28 lists them under
//! `inputRequests` and as a legacy session sends them to the client); answers are the client's
//! raw results, checked by the runtime when it hands them to the plugin.

pub mod capabilities;
pub mod seal;

use serde_json::{Map, Value};

use crate::revision::Revision;

pub use capabilities::{RequiredCapabilities, missing_capabilities};
pub use seal::{SealError, StateKey, StateKeyError, key_material};

/// Most input requests one round may carry.
pub const MAX_INPUT_REQUESTS: usize = 16;
/// Longest input key.
pub const MAX_INPUT_KEY: usize = 128;
/// Largest plugin state carried through a round trip.
pub const MAX_PLUGIN_STATE: usize = 64 << 10;

/// The MCP method an input request is answered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMethod {
    /// `elicitation/create` in form mode.
    ElicitForm,
    /// `elicitation/create` in URL mode.
    ElicitUrl,
    /// `sampling/createMessage`; the flags say which parts of the sampling capability it uses.
    Sample { tools: bool, context: bool },
    /// `roots/list`.
    ListRoots,
}

impl InputMethod {
    /// The JSON-RPC method name.
    pub fn method(self) -> &'static str {
        match self {
            InputMethod::ElicitForm | InputMethod::ElicitUrl => "elicitation/create",
            InputMethod::Sample { .. } => "sampling/createMessage",
            InputMethod::ListRoots => "roots/list",
        }
    }

    /// The client capabilities answering this needs, as a `ClientCapabilities` object.
    pub fn needs(self) -> Value {
        match self {
            InputMethod::ElicitForm => serde_json::json!({"elicitation": {"form": {}}}),
            InputMethod::ElicitUrl => serde_json::json!({"elicitation": {"url": {}}}),
            InputMethod::Sample { tools, context } => {
                let mut sampling = Map::new();
                if tools {
                    sampling.insert("tools".into(), Value::Object(Map::new()));
                }
                if context {
                    sampling.insert("context".into(), Value::Object(Map::new()));
                }
                serde_json::json!({"sampling": sampling})
            }
            InputMethod::ListRoots => serde_json::json!({"roots": {}}),
        }
    }
}

/// One thing a plugin asks the client for, under the plugin's own key.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    pub key: String,
    pub method: InputMethod,
    /// The request's `params`, in MCP's wire shape.
    pub params: Map<String, Value>,
}

impl InputRequest {
    /// The request as 2026-07-28 lists it under `inputRequests`: `{method, params}`.
    pub fn to_wire(&self) -> Value {
        serde_json::json!({"method": self.method.method(), "params": self.params})
    }
}

/// How a call ended when it needs input first.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    pub requests: Vec<InputRequest>,
    /// The plugin's own state, handed back with the answers.
    pub state: Option<Vec<u8>>,
    /// Ask as part of a task, when the call can become one (see `wit/paddock-plugin@0.2.0/plugin.wit`).
    pub in_task: bool,
}

/// The client's answer to one input request: the bare result of its method, as received.
#[derive(Debug, Clone, PartialEq)]
pub struct InputResponse {
    pub key: String,
    pub method: InputMethod,
    pub result: Value,
}

/// What a tool call, prompt get or resource read produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    Complete(T),
    InputRequired(InputRequired),
}

impl<T> Outcome<T> {
    /// The complete value, or the input the call needs.
    pub fn into_complete(self) -> Result<T, InputRequired> {
        match self {
            Outcome::Complete(value) => Ok(value),
            Outcome::InputRequired(required) => Err(required),
        }
    }

    /// Maps the complete value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Complete(value) => Outcome::Complete(f(value)),
            Outcome::InputRequired(required) => Outcome::InputRequired(required),
        }
    }
}

/// The protocol era a request is served in, as a plugin sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestEra {
    /// A session opened by `initialize` (2024-11-05 to 2025-11-25).
    Session,
    /// A stateless 2026-07-28 request.
    Stateless,
}

/// The client software, as it describes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
}

/// W3C trace context of the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
}

impl TraceContext {
    /// The `traceparent` and `tracestate`, as the trace layer reads them.
    pub fn carried(&self) -> crate::telemetry::trace::Carried {
        crate::telemetry::trace::Carried { traceparent: self.traceparent.clone(), tracestate: self.tracestate.clone() }
    }
}

/// Who asked, under which protocol, and with which answers: handed to every call into a plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestContext {
    /// The revision the request is served under; its era follows (`era`).
    pub protocol_version: Revision,
    /// The client's `ClientCapabilities` object (empty when it declared none).
    pub client_capabilities: Map<String, Value>,
    pub client_info: Option<ClientInfo>,
    /// The request's `_meta` (empty when it had none).
    pub meta: Map<String, Value>,
    pub has_progress_token: bool,
    pub trace: TraceContext,
    /// The authenticated caller, when the transport authenticates one.
    pub caller: Option<String>,
    /// On a retry: the answers to the previous round's requests, in the order they were asked.
    pub input_responses: Vec<InputResponse>,
    /// On a retry: the state the plugin returned with its requests.
    pub state: Option<Vec<u8>>,
}

impl RequestContext {
    /// A context for a request with no client behind it (`paddock call`, load-time calls, tests).
    pub fn local(protocol_version: Revision) -> RequestContext {
        RequestContext {
            protocol_version,
            client_capabilities: Map::new(),
            client_info: None,
            meta: Map::new(),
            has_progress_token: false,
            trace: TraceContext::default(),
            caller: None,
            input_responses: Vec::new(),
            state: None,
        }
    }

    /// The era of the request's revision, as the plugin is told it.
    pub fn era(&self) -> RequestEra {
        if self.protocol_version.is_stateless() { RequestEra::Stateless } else { RequestEra::Session }
    }

    /// Reads client info from an MCP `Implementation` object, bounded to short strings.
    pub fn client_info_from(value: Option<&Value>) -> Option<ClientInfo> {
        let object = value?.as_object()?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(|s| bounded(s, 256));
        Some(ClientInfo { name: text("name")?, version: text("version").unwrap_or_default(), title: text("title") })
    }

    /// Reads the W3C trace context from a request's `_meta`.
    pub fn trace_from(meta: &Map<String, Value>) -> TraceContext {
        let text = |key: &str| meta.get(key).and_then(Value::as_str).map(|s| bounded(s, 512));
        TraceContext { traceparent: text("traceparent"), tracestate: text("tracestate"), baggage: text("baggage") }
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
fn bounded(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}
