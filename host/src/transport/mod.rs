//! Transports frame JSON-RPC messages and hand them to a session.
//!
//! - `stdio`: newline-delimited JSON on stdin and stdout, one session.
//! - `http`: one listener for Streamable HTTP (both eras), the HTTP+SSE pair and WebSocket.
//! - `metrics`: the Prometheus scrape listener, apart from every MCP transport.

pub mod http;
pub mod metrics;
pub mod stdio;
