//! Loading plugins: a folder's files turned into components (compiled, or read from the
//! on-disk cache once it proved it wrote them) and served as `WasmPlugin`s with their grants.

// Maps compiled code it has verified; each `unsafe` block there states why it holds.
#[allow(unsafe_code)]
pub(crate) mod cache;
pub(crate) mod compile;
pub(crate) mod folder;
