//! The audit record of a request that reaches policy: what it named (read from its params before
//! they are parsed), who asked, and how it ended, handed to the server's `audit::Audit` once the
//! request is answered. Requests that reach no policy (lists, ping, lifecycle) are not recorded.

use std::time::Instant;

use serde_json::{Map, Value};

use super::error::McpError;
use super::reply::Reply;
use super::request::Method;
use super::scope::Scope;
use crate::audit::{Digest, Outcome, Record};
use crate::policy::ItemKind;

/// Whether requests of `method` are recorded.
pub(super) fn recorded(method: &Method) -> bool {
    matches!(
        method,
        Method::CallTool
            | Method::GetPrompt
            | Method::ReadResource
            | Method::Complete
            | Method::Subscribe
            | Method::TasksGet
            | Method::TasksList
            | Method::TasksCancel
            | Method::TasksUpdate
            | Method::TasksResult
    )
}

/// What a request named, read before it is served.
pub(super) struct Named {
    started: Instant,
    name: Option<String>,
    arguments: Option<Digest>,
}

impl Named {
    pub(super) fn of(method: &Method, params: Option<&Map<String, Value>>) -> Named {
        let field = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str).map(|s| crate::jsonrpc::shortened(s).into_owned());
        let name = match method {
            Method::CallTool | Method::GetPrompt => field("name"),
            Method::ReadResource | Method::Subscribe => field("uri"),
            Method::Complete => {
                params.and_then(|p| p.get("ref")).and_then(|r| r.get("name").or_else(|| r.get("uri"))).and_then(Value::as_str).map(str::to_owned)
            }
            _ => field("taskId"),
        };
        let arguments = match method {
            Method::CallTool | Method::GetPrompt => {
                let empty = Value::Object(Map::new());
                Some(Digest::of_json(params.and_then(|p| p.get("arguments")).unwrap_or(&empty)))
            }
            Method::Complete => params.and_then(|p| p.get("argument")).map(Digest::of_json),
            _ => None,
        };
        Named { started: Instant::now(), name: name.map(|n| n.chars().take(256).collect()), arguments }
    }

    /// The record of the request, once `result` is its answer.
    pub(super) fn record(self, scope: &Scope, method: &Method, result: &Result<Reply, McpError>) -> Record {
        let outcome = match result {
            _ if scope.cx.is_cancelled() => Outcome::Cancelled,
            Ok(reply) if reply.approval_refused => Outcome::ApprovalRefused,
            Ok(reply) if reply.result.get("isError") == Some(&Value::Bool(true)) => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(McpError::RateLimited { .. }) => Outcome::RateLimited,
            Err(McpError::InsufficientScope { .. }) => Outcome::Denied,
            Err(_) if self.hidden(scope, method) => Outcome::Denied,
            Err(_) => Outcome::ProtocolError,
        };
        let plugin = self.name.as_deref().and_then(|name| match method {
            Method::CallTool => scope.router.tool(name).map(|(_, plugin)| plugin.to_owned()),
            Method::GetPrompt => scope.router.prompt_owner(name).map(str::to_owned),
            Method::ReadResource | Method::Subscribe => scope.router.resource_owner(name).map(str::to_owned),
            _ => None,
        });
        Record {
            time: Record::now(),
            principal: scope.client.principal().id().to_owned(),
            transport: scope.client.transport().as_str(),
            revision: scope.revision().as_str(),
            method: method.name().to_owned(),
            name: self.name,
            plugin,
            arguments_sha256: self.arguments,
            outcome,
            duration_us: u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            refusals: Some(scope.cx.refusals()).filter(|n| *n > 0),
        }
    }

    /// Whether tool policy hides what the request named from its principal.
    fn hidden(&self, scope: &Scope, method: &Method) -> bool {
        let kind = match method {
            Method::CallTool => ItemKind::Tool,
            Method::GetPrompt => ItemKind::Prompt,
            Method::ReadResource | Method::Subscribe => ItemKind::Resource,
            _ => return false,
        };
        self.name.as_deref().is_some_and(|name| !super::caller_policy::sees(&scope.state.callers.access, scope.client.principal(), kind, name))
    }
}
