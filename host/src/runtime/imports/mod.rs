//! What a plugin imports from the host: the `paddock:plugin/host` interface and the one linker
//! that provides it with WASI and wasi:http.

pub(crate) mod host_interface;
pub(crate) mod linker;
