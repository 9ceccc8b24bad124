//! `Server`: what every session of one `paddock` process shares: the router, the key that seals
//! 2026-07-28 request states, and how long a legacy session waits for its client's answers.

use std::sync::Arc;
use std::time::Duration;

use crate::input::StateKey;
use crate::router::Router;

/// How long a legacy session waits for its client to answer one round of input requests
/// (a person may be filling in a form). The plugin's own deadline does not run meanwhile.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(600);

/// Shared by every session of the process.
#[derive(Debug)]
pub struct Server {
    pub(crate) router: Arc<Router>,
    pub(crate) state_key: StateKey,
    pub(crate) input_timeout: Duration,
    pub(crate) state_ttl: Duration,
}

impl Server {
    /// A server for `router`, sealing request states with `state_key`.
    pub fn new(router: Arc<Router>, state_key: StateKey) -> Arc<Server> {
        Arc::new(Server { router, state_key, input_timeout: DEFAULT_INPUT_TIMEOUT, state_ttl: crate::input::seal::STATE_TTL })
    }

    /// A server with its own limits on waiting for a legacy client's answers and on how long a
    /// sealed request state may be answered.
    pub fn with_limits(router: Arc<Router>, state_key: StateKey, input_timeout: Duration, state_ttl: Duration) -> Arc<Server> {
        Arc::new(Server { router, state_key, input_timeout, state_ttl })
    }

    /// The router in use.
    pub fn router(&self) -> &Arc<Router> {
        &self.router
    }
}
