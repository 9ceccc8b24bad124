//! The MCP semantic conventions' server metric over OTLP: `mcp.server.operation.duration`, a
//! histogram in seconds with the conventions' attributes (`mcp.method.name`,
//! `mcp.protocol.version`, `network.transport`, `gen_ai.tool.name` for a served tool,
//! `error.type` when the request failed, `tool_error` for an `isError` result). Made through
//! the OpenTelemetry SDK, whose periodic reader exports it from a thread of its own; off unless
//! an OTLP endpoint is configured. Attribute values are bounded as the Prometheus labels are.

use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

/// The conventions' recommended bucket boundaries, with finer ones below 10 ms for warm calls.
const BOUNDARIES: [f64; 18] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// The instruments, once an OTLP meter is installed.
#[derive(Debug)]
pub struct Instruments {
    operation_duration: Histogram<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Makes the instruments from `meter`: from now on requests are recorded.
pub fn install(meter: &Meter) {
    let operation_duration = meter
        .f64_histogram("mcp.server.operation.duration")
        .with_unit("s")
        .with_description("How long MCP requests took to answer")
        .with_boundaries(BOUNDARIES.to_vec())
        .build();
    let _ = INSTRUMENTS.set(Instruments { operation_duration });
}

/// The instruments, when an OTLP meter is installed.
#[inline]
pub fn get() -> Option<&'static Instruments> {
    INSTRUMENTS.get()
}

/// One answered request, as the conventions describe it.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    pub method: &'static str,
    pub protocol_version: &'static str,
    pub transport: &'static str,
    /// The exposed tool of a `tools/call`, when the router serves it.
    pub tool: Option<&'a str>,
    /// `None` when the request ended ok.
    pub error_type: Option<&'static str>,
}

impl Instruments {
    /// Records one request's duration.
    pub fn operation(&self, operation: Operation<'_>, seconds: f64) {
        let mut attributes = Vec::with_capacity(5);
        attributes.push(KeyValue::new("mcp.method.name", operation.method));
        attributes.push(KeyValue::new("mcp.protocol.version", operation.protocol_version));
        attributes.push(KeyValue::new("network.transport", operation.transport));
        if let Some(tool) = operation.tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
        }
        if let Some(error) = operation.error_type {
            attributes.push(KeyValue::new("error.type", error));
        }
        self.operation_duration.record(seconds, &attributes);
    }
}
