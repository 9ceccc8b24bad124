//! Transports frame JSON-RPC messages and hand them to a session; they never look at `method`.

pub mod stdio;
