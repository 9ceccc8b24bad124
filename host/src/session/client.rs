//! The session as the MCP layer's `Client`: what a legacy client declared and chose (its log
//! level, the resources it follows), where notifications go, and asking the client for input:
//! each question goes out with a session-unique id, and the answers are awaited under the
//! server's input timeout; unanswered questions are withdrawn when the wait ends early.

use std::sync::Arc;

use futures::future::{BoxFuture, join_all};
use serde_json::{Map, Value, json};

use super::Session;
use crate::identity::Principal;
use crate::input::{ClientInfo, InputRequest, InputResponse};
use crate::jsonrpc;
use crate::mcp::{self, AskFailure, McpError};
use crate::plugin::{CallContext, LogLevel};
use crate::router::Router;
use crate::tasks::QuotaKey;

impl mcp::Client for Session {
    fn session(&self) -> u64 {
        self.id
    }

    fn principal(&self) -> &Principal {
        &self.principal
    }

    fn transport(&self) -> crate::identity::Transport {
        self.transport
    }

    fn wire_session(&self) -> Option<Arc<str>> {
        self.wire_id.get().cloned()
    }

    fn quota(&self) -> QuotaKey {
        // A request without a session counts against its principal when it authenticated one,
        // else against what the transport knows of the client; a legacy session or stdio is
        // one client.
        match &self.client {
            None => QuotaKey::Session(self.id),
            Some(_) if self.principal.issuer() != crate::identity::ANONYMOUS_ISSUER => QuotaKey::Principal(Arc::from(self.principal.id())),
            // Written out only here, when a task is counted.
            Some(address) => QuotaKey::Client(Arc::from(address.to_string())),
        }
    }

    fn declared(&self) -> (Map<String, Value>, Option<ClientInfo>) {
        let legacy = self.legacy.lock().unwrap_or_else(|e| e.into_inner());
        (legacy.client_capabilities.clone(), legacy.client_info.clone())
    }

    fn log_level(&self) -> LogLevel {
        self.legacy_log_level()
    }

    fn set_log_level(&self, level: LogLevel) {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).log_level = level;
    }

    fn follow(&self, uri: &str, router: &Router) -> Result<(), McpError> {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).followed.subscribe(uri, router)
    }

    fn unfollow(&self, uri: &str) {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner()).followed.unsubscribe(uri);
    }

    fn notify(&self, line: String) {
        self.out.notify(line);
    }

    fn notify_related(&self, line: String) {
        self.related_out().notify(line);
    }

    fn ask<'a>(&'a self, requests: &'a [InputRequest], cx: &'a CallContext, task: Option<&'a str>) -> BoxFuture<'a, Result<Vec<InputResponse>, AskFailure>> {
        Box::pin(self.ask_client(requests, cx, task))
    }
}

impl Session {
    /// Sends one round of requests to the client and waits for every answer.
    async fn ask_client(&self, requests: &[InputRequest], cx: &CallContext, task: Option<&str>) -> Result<Vec<InputResponse>, AskFailure> {
        let mut waiting = Vec::with_capacity(requests.len());
        for request in requests {
            let slot = self.client_requests.register().ok_or(AskFailure::Busy)?;
            let params = mcp::legacy_params(request, task);
            if self.related_out().send(jsonrpc::request_line(&slot.id, request.method.method(), &params)).await.is_err() {
                return Err(AskFailure::Gone);
            }
            waiting.push((request, slot));
        }
        let answers = join_all(waiting.iter_mut().map(|(_, slot)| &mut slot.answer));
        let answers = tokio::select! {
            answers = answers => answers,
            () = tokio::time::sleep(self.server.limits.input_timeout) => {
                self.withdraw(waiting.iter().map(|(_, slot)| &slot.id));
                return Err(AskFailure::Timeout);
            }
            () = cx.cancelled() => {
                self.withdraw(waiting.iter().map(|(_, slot)| &slot.id));
                return Err(AskFailure::Gone);
            }
        };
        let mut responses = Vec::with_capacity(answers.len());
        for ((request, _), answer) in waiting.iter().zip(answers) {
            match answer {
                Ok(Ok(result)) => responses.push(InputResponse { key: request.key.clone(), method: request.method, result }),
                Ok(Err(error)) => return Err(AskFailure::Refused { key: request.key.clone(), error }),
                Err(_) => return Err(AskFailure::Gone),
            }
        }
        Ok(responses)
    }

    /// Tells the client that requests it has not answered are no longer needed.
    fn withdraw<'a>(&self, ids: impl Iterator<Item = &'a jsonrpc::Id>) {
        let stream = self.related_out();
        for id in ids {
            stream.notify(jsonrpc::notification_line("notifications/cancelled", json!({"requestId": id.to_value(), "reason": "no longer needed"})));
        }
    }
}
