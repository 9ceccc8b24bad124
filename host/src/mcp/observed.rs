//! One request as telemetry sees it: its server span, named and described as the OpenTelemetry
//! MCP conventions say (`{mcp.method.name} {target}`, with the method, protocol version,
//! session and request ids, and for a tool call the tool: `gen_ai.tool.name`,
//! `gen_ai.operation.name`), continuing the context the client sent in `_meta` (or, over HTTP,
//! in its headers); and, once it is answered, its count and duration in the Prometheus families
//! and the OTLP duration metric.

use serde_json::{Map, Value};

use super::Era;
use super::request::Method;
use super::scope::Scope;
use crate::telemetry::trace::{Attribute, Kind, Span};

/// The request's server span, when spans are made. `tool` is the exposed name of the tool a
/// `tools/call` names, when the router serves one.
pub(super) fn server_span(scope: &Scope, method: &Method, params: Option<&Map<String, Value>>, tool: Option<&str>) -> Span {
    if !crate::telemetry::trace::on() {
        return Span::default();
    }
    let prompt = match method {
        Method::GetPrompt => params.and_then(|p| p.get("name")).and_then(Value::as_str).filter(|name| scope.router.prompt(name).is_some()),
        _ => None,
    };
    let name = match tool.or(prompt) {
        Some(target) => format!("{} {target}", method.label()),
        None => method.label().to_owned(),
    };
    let context = scope.context();
    let mut attributes = vec![
        Attribute::new("mcp.method.name", method.label()),
        Attribute::new("mcp.protocol.version", scope.revision().as_str()),
        Attribute::new("jsonrpc.request.id", bounded(&scope.cx.request_id)),
        Attribute::new("network.transport", network_transport(scope)),
        Attribute::new("paddock.transport", scope.client.transport().as_str()),
    ];
    if let (Era::Legacy { .. }, Some(session)) = (scope.era, scope.client.wire_session()) {
        attributes.push(Attribute::new("mcp.session.id", session));
    }
    if let Some(tool) = tool {
        attributes.push(Attribute::new("gen_ai.tool.name", tool.to_owned()));
        attributes.push(Attribute::new("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(prompt) = prompt {
        attributes.push(Attribute::new("gen_ai.prompt.name", prompt.to_owned()));
    }
    if *method == Method::ReadResource
        && let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str)
    {
        attributes.push(Attribute::new("mcp.resource.uri", bounded(uri)));
    }
    Span::start(name, Kind::Server, &context.trace.carried().context(), attributes)
}

/// Client text as an attribute: at most `MAX_ATTRIBUTE` bytes of it (cut at a character).
fn bounded(text: &str) -> String {
    let mut end = text.len().min(MAX_ATTRIBUTE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The longest attribute value taken from what a client sent.
const MAX_ATTRIBUTE: usize = 512;

/// Records an answered request: its count by outcome and its duration, where metrics are on.
pub(super) fn record(scope: &Scope, method: &Method, tool: Option<&std::sync::Arc<str>>, outcome: &'static str, took: std::time::Duration) {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        let era = match scope.era {
            Era::Legacy { .. } => "session",
            Era::Modern { .. } => "stateless",
        };
        let labels = crate::telemetry::metrics::RequestLabels { method: method.label(), transport: scope.client.transport().as_str(), era, outcome };
        metrics.request(labels, tool, took);
    }
    if let Some(semconv) = crate::telemetry::semconv::get() {
        let operation = crate::telemetry::semconv::Operation {
            method: method.label(),
            protocol_version: scope.revision().as_str(),
            transport: network_transport(scope),
            tool: tool.map(|t| &**t),
            error_type: (outcome != "ok").then_some(outcome),
        };
        semconv.operation(operation, took.as_secs_f64());
    }
}

/// The conventions' `network.transport` of the request's channel.
fn network_transport(scope: &Scope) -> &'static str {
    if scope.client.transport() == crate::identity::Transport::Stdio { "pipe" } else { "tcp" }
}
