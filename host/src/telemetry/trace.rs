//! Traces: spans made through the OpenTelemetry SDK when an OTLP exporter is installed, and the
//! W3C trace context (`traceparent`, `tracestate`) that crosses the host's layers as text.
//!
//! A request's server span is continued from the context the client sent; the plugin's run,
//! its input rounds and each of its outgoing HTTP requests are children of it, and the outgoing
//! requests carry the context on, so the upstream service joins the same trace. Without an
//! exporter no span is made (`Span` is empty and costs nothing), but a client's valid context is
//! still passed on to the plugin's outgoing requests, as a proxy that does not trace would.
//!
//! Context from a client is untrusted: it is parsed by the W3C propagator (a malformed
//! `traceparent` is no context at all) and written out again by it, never copied through.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracer;

pub use opentelemetry::trace::SpanKind as Kind;
pub use opentelemetry::{KeyValue as Attribute, Value as AttributeValue};

/// The longest `tracestate` carried on (the W3C limit is 32 members of at most 256 bytes; a
/// longer one is dropped whole, as the specification allows).
const MAX_TRACESTATE: usize = 512;

static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Makes `tracer` the process's: from now on spans are made and exported.
pub fn install(tracer: SdkTracer) {
    let _ = TRACER.set(tracer);
}

/// Whether spans are made.
#[inline]
pub fn on() -> bool {
    TRACER.get().is_some()
}

/// W3C trace context as text: what a request carries in `_meta` or headers, what a plugin is
/// told, and what its outgoing requests send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Carried {
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

impl Carried {
    /// The context `traceparent` and `tracestate` name, when `traceparent` is valid.
    pub fn context(&self) -> Context {
        let Some(traceparent) = self.traceparent.as_deref() else { return Context::new() };
        let mut fields = HashMap::with_capacity(2);
        fields.insert("traceparent".to_owned(), traceparent.to_owned());
        if let Some(state) = self.tracestate.as_deref().filter(|s| s.len() <= MAX_TRACESTATE) {
            fields.insert("tracestate".to_owned(), state.to_owned());
        }
        TraceContextPropagator::new().extract(&fields)
    }

    /// The context as the W3C propagator writes it: nothing when it holds no valid span.
    pub fn of(context: &Context) -> Carried {
        let mut fields: HashMap<String, String> = HashMap::with_capacity(2);
        TraceContextPropagator::new().inject_context(context, &mut fields);
        Carried { traceparent: fields.remove("traceparent"), tracestate: fields.remove("tracestate").filter(|s| !s.is_empty()) }
    }

    /// This context checked and written again: what may be passed on to another service.
    pub fn validated(&self) -> Carried {
        Carried::of(&self.context())
    }
}

/// A span in progress, ended when dropped; empty (and free) when no exporter is installed.
#[derive(Debug, Default)]
pub struct Span {
    context: Option<Context>,
}

impl Span {
    /// Starts a span `name` of `kind` as a child of `parent` (a root span when `parent` holds
    /// none), when spans are made.
    pub fn start(name: impl Into<Cow<'static, str>>, kind: SpanKind, parent: &Context, attributes: Vec<KeyValue>) -> Span {
        let Some(tracer) = TRACER.get() else { return Span::default() };
        let span = tracer.span_builder(name).with_kind(kind).with_attributes(attributes).start_with_context(tracer, parent);
        Span { context: Some(parent.with_span(span)) }
    }

    /// A child of the span `carried` names.
    pub fn child_of(carried: &Carried, name: impl Into<Cow<'static, str>>, kind: SpanKind, attributes: Vec<KeyValue>) -> Span {
        if !on() {
            return Span::default();
        }
        Span::start(name, kind, &carried.context(), attributes)
    }

    /// Whether this span is being recorded.
    pub fn is_recording(&self) -> bool {
        self.context.is_some()
    }

    /// The context of this span (for children), or none.
    pub fn context(&self) -> Context {
        self.context.clone().unwrap_or_default()
    }

    /// This span's context as W3C text, for a child across a boundary.
    pub fn carried(&self) -> Option<Carried> {
        self.context.as_ref().map(Carried::of)
    }

    /// Sets an attribute.
    pub fn set(&self, attribute: KeyValue) {
        if let Some(context) = &self.context {
            context.span().set_attribute(attribute);
        }
    }

    /// Marks the span failed with `error_type` (`error.type`).
    pub fn fail(&self, error_type: &'static str) {
        if let Some(context) = &self.context {
            let span = context.span();
            span.set_attribute(KeyValue::new("error.type", error_type));
            span.set_status(Status::error(error_type));
        }
    }

    /// The trace id and span id as hex, for log records.
    pub fn ids(&self) -> Option<(String, String)> {
        let context = self.context.as_ref()?;
        let span = context.span();
        let ids = span.span_context();
        Some((ids.trace_id().to_string(), ids.span_id().to_string()))
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(context) = self.context.take() {
            context.span().end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_context_is_written_again_and_a_malformed_one_is_none() {
        let good = Carried { traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()), tracestate: Some("vendor=x".into()) };
        assert_eq!(good.validated(), good);
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx-injected: 1",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "garbage",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            let carried = Carried { traceparent: Some(bad.into()), tracestate: Some("a=b".into()) };
            assert_eq!(carried.validated(), Carried::default(), "{bad:?} is no context");
        }
        let long = Carried { traceparent: good.traceparent.clone(), tracestate: Some("k=".to_owned() + &"v".repeat(MAX_TRACESTATE)) };
        assert_eq!(long.validated().tracestate, None, "an overlong tracestate is dropped whole");
    }

    #[test]
    fn without_an_exporter_no_span_is_made() {
        let span = Span::start("x", SpanKind::Server, &Context::new(), vec![]);
        assert!(!span.is_recording());
        assert_eq!(span.carried(), None);
    }
}
