//! Paddock: a WebAssembly plugin host for sandboxed MCP servers.
//!
//! See `ARCHITECTURE.md` at the repository root for the map of these modules and their invariants.

// Calls glibc's `mallopt` and `malloc_trim`, which take no pointers.
#[allow(unsafe_code)]
pub mod allocator;
pub mod audit;
pub mod budget;
pub mod cli;
pub mod config;
pub mod escape;
pub mod folder;
pub mod identity;
pub mod input;
pub mod inspect_report;
pub mod jsonrpc;
pub mod mcp;
pub mod plugin;
pub mod policy;
pub mod protocol;
pub mod rate_limits;
pub mod replica;
pub mod revision;
pub mod router;
pub mod runtime;
pub mod session;
pub mod store;
pub mod tasks;
pub mod telemetry;
pub mod transport;
