//! The per-call sandbox: a plugin's grant prepared at load, and what each call's `Store` holds
//! (WASI context, outgoing HTTP, descriptor and output budgets, memory limiter), with every
//! refusal recorded.

pub(crate) mod descriptors;
pub(crate) mod egress;
pub(crate) mod egress_http;
pub(crate) mod guest_output;
pub(crate) mod prepared;
pub(crate) mod refusal_log;
pub(crate) mod store_state;
pub(crate) mod wasi_audit;
