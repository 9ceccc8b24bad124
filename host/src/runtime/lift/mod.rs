//! Lifting guest values: what a plugin declares or returns (WIT values) bounded and validated
//! into `protocol` and `input` values, and the request context lowered into WIT values.

pub(crate) mod catalog;
pub(crate) mod convert;
pub(crate) mod json;
pub(crate) mod outcome;
pub(crate) mod wit_input;
