//! `tools/call`, `prompts/get` and `resources/read`: what the caller may use (tool policy, then
//! rate limits, `caller_policy`), what the client must have declared, a person's approval when
//! the tool's policy asks for one (`approvals`), and how the request is served: directly through
//! the input rounds of its era (`rounds`), or as a task (`task_calls`).

use super::Era;
use super::approvals::{self, Approved};
use super::caller_policy;
use super::error::McpError;
use super::reply::Reply;
use super::request::{Call, Target};
use super::rounds::{self, Opened, missing_capability};
use super::scope::Scope;
use super::task_calls::{self, CallMode};
use crate::input::missing_capabilities;
use crate::jsonrpc::shortened;
use crate::policy::Approval;

/// Serves a request that may need input, to its end.
pub(super) async fn serve(scope: &Scope, call: Call) -> Result<Reply, McpError> {
    let Call { target, task, mut responses, mut state } = call;
    let approval = caller_policy::admit(scope, &target)?;
    caller_policy::charge(scope, &target).await?;
    let router = &scope.router;
    let context = scope.context();
    if let Target::Tool { name, .. } = &target
        && let Some((tool, _)) = router.tool(name)
        && let Some(required) = &tool.required_capabilities
        && let Some(missing) = missing_capabilities(&context.client_capabilities, required)
    {
        return Err(missing_capability(&format!("tool `{name}`"), missing));
    }
    if let Target::Prompt { name, arguments, .. } = &target {
        let Some(prompt) = router.prompt(name) else {
            return Err(McpError::InvalidParams(format!("unknown prompt `{}`", shortened(name))));
        };
        if let Some(missing) = prompt.arguments.iter().find(|a| a.required && !arguments.iter().any(|(k, _)| *k == a.name)) {
            return Err(McpError::InvalidParams(format!("prompt `{name}` needs argument `{}`", missing.name)));
        }
    }
    let mode = match &target {
        Target::Tool { name, .. } => {
            let support = router.tool(name).and_then(|(tool, _)| tool.execution.as_ref().map(|e| e.task_support));
            task_calls::call_mode(scope, task.as_ref(), support)?
        }
        _ => CallMode::Direct,
    };
    match approval {
        Approval::Auto => {}
        Approval::Deny => return approvals::denied(&target),
        Approval::Ask => {
            let approved = match scope.era {
                Era::Legacy { .. } => approvals::ask_in_session(scope, &target).await?,
                Era::Modern { .. } => {
                    let plugin = target.owner(router).ok_or_else(|| target.unknown())?;
                    approvals::settle_stateless(scope, &target, &plugin, responses.as_ref(), state.as_ref()).await?
                }
            };
            match approved {
                Approved::Run => {}
                Approved::Granted => (responses, state) = (None, None),
                Approved::Answer(reply) => return Ok(reply),
            }
        }
    }
    match (scope.era, mode) {
        (Era::Legacy { .. }, CallMode::Experimental { ttl }) => task_calls::start_experimental_task(scope, target, ttl).await,
        (Era::Legacy { .. }, _) => rounds::serve_in_session(scope, &target, &scope.cx, None).await,
        (Era::Modern { .. }, mode) => {
            let (context, unsealed) = match rounds::open_round(scope, &target, responses, state)? {
                Opened::Ready(context, unsealed) => (context, unsealed),
                Opened::AskAgain(reply) => return Ok(reply),
            };
            match mode {
                CallMode::Extension { required } => {
                    let context = context.unwrap_or_else(|| scope.context().clone());
                    task_calls::call_as_extension_task(scope, target, context, required).await
                }
                _ => rounds::serve_stateless(scope, &target, context, unsealed).await,
            }
        }
    }
}
