//! What an operator sees of a running host besides its log: Prometheus metrics (`metrics`) and
//! OpenTelemetry spans with the W3C trace context they carry (`trace`). Process-wide and off
//! unless installed, so a host that does not ask pays one load of an empty cell per place that
//! would record.

pub mod export;
pub mod metrics;
pub mod semconv;
pub mod trace;
