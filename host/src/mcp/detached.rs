//! The client of a task round no request is waiting on: a 2026-07-28 task another replica
//! handed over, run here for the principal it belongs to. It declared nothing of its own (the
//! round's context, restored from the store, says what the client declared), hears nothing
//! (a task's changes reach its listeners through the feed) and is asked nothing (a task asks
//! for input by parking itself).

use futures::future::BoxFuture;
use serde_json::Map;

use super::error::McpError;
use super::scope::{AskFailure, Client};
use crate::identity::{Principal, Transport};
use crate::input::{ClientInfo, InputRequest, InputResponse};
use crate::plugin::{CallContext, LogLevel};
use crate::router::Router;
use crate::tasks::QuotaKey;

/// A principal's task round with no request behind it.
pub(super) struct Detached {
    principal: Principal,
}

impl Detached {
    /// The principal whose id is `owner` (`issuer subject`).
    pub(super) fn of(owner: &str) -> Detached {
        let (issuer, subject) = owner.split_once(' ').unwrap_or((owner, ""));
        Detached { principal: Principal::new(issuer, subject, Vec::new()) }
    }
}

impl Client for Detached {
    fn session(&self) -> u64 {
        0
    }

    fn principal(&self) -> &Principal {
        &self.principal
    }

    fn transport(&self) -> Transport {
        Transport::StreamableHttp
    }

    fn quota(&self) -> QuotaKey {
        QuotaKey::Principal(std::sync::Arc::from(self.principal.id()))
    }

    fn declared(&self) -> (Map<String, serde_json::Value>, Option<ClientInfo>) {
        (Map::new(), None)
    }

    fn log_level(&self) -> LogLevel {
        LogLevel::Emergency
    }

    fn set_log_level(&self, _: LogLevel) {}

    fn follow(&self, _: &str, _: &Router) -> Result<(), McpError> {
        Err(McpError::internal())
    }

    fn unfollow(&self, _: &str) {}

    fn notify(&self, _: String) {}

    fn notify_related(&self, _: String) {}

    fn ask<'a>(&'a self, _: &'a [InputRequest], _: &'a CallContext, _: Option<&'a str>) -> BoxFuture<'a, Result<Vec<InputResponse>, AskFailure>> {
        Box::pin(async { Err(AskFailure::Gone) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detached_client_is_the_principal_the_task_belongs_to() {
        for principal in [Principal::token("alice", vec![]), Principal::anonymous(), Principal::new("https://issuer.example", "user 7", vec![])] {
            assert_eq!(Detached::of(principal.id()).principal().id(), principal.id());
        }
    }
}
