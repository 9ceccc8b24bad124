//! What an operator sees of a running host besides its log: Prometheus metrics (`metrics`).
//! Process-wide and off unless installed, so a host that does not ask pays one load of an empty
//! cell per place that would record.

pub mod metrics;
