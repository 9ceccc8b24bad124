//! Approvals: a tool whose policy says `ask` runs only after the person behind the client says
//! yes to a form naming the principal, the tool and a short summary of the arguments, asked
//! through the input model of the request's era before the plugin runs.
//!
//! - On a legacy session the session asks the client (`elicitation/create`) and waits, as for a
//!   plugin's own round; the answer is for this request only.
//! - On 2026-07-28 the call is answered `input_required` with the form and a sealed state bound
//!   to the principal, the plugin, the tool and the exact arguments (a binding of its own, so no
//!   plugin round opens as an approval and no approval as a plugin round). The retry that
//!   answers yes runs the plugin; the state expires after `APPROVAL_TTL` and is spent by its
//!   first answer (`Spent` remembers it until it expires), so an approval is used once.
//!   A later retry carrying the plugin's own round state (issued only after a yes, bound to the
//!   same call) continues that call without asking again.
//!
//! A "no", a dismissed form or an approval of `deny` is an error result that says so; nothing
//! runs. A client that cannot answer a form is refused before anything is asked.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::error::McpError;
use super::reply::{Reply, to_json};
use super::request::Target;
use super::rounds::missing_capability;
use super::scope::Scope;
use crate::input::seal::{Binding, Round};
use crate::input::{InputMethod, InputRequest, missing_capabilities};
use crate::jsonrpc::shortened;
use crate::protocol::CallToolResult;

/// The key of the approval form among a round's input requests.
pub const APPROVAL_KEY: &str = "paddock.approval";
/// How long a 2026-07-28 approval form may be answered.
pub const APPROVAL_TTL: Duration = Duration::from_secs(300);
/// The binding method of an approval round (never a plugin's).
const APPROVAL_METHOD: &str = "paddock/approval";
/// The longest summary of the arguments a form shows.
const SUMMARY: usize = 200;

/// What became of an approval step.
pub(super) enum Approved {
    /// Run the plugin, with the request as it came.
    Run,
    /// Run the plugin afresh: the request's state and answers were the approval, now spent.
    Granted,
    /// Answer this without running anything (the form, or the refusal).
    Answer(Reply),
}

/// A tool whose approval is `deny`: an error result, nothing runs.
pub(super) fn denied(target: &Target) -> Result<Reply, McpError> {
    tracing::info!(tool = %crate::escape::Escaped(&shortened(target.name())), "refused: the tool's approval is deny");
    counted("denied");
    refused(format!("the tool `{}` may not run: the server's policy never approves it", shortened(target.name())))
}

/// Whether the client can answer the form, refused with the reason when not.
fn can_ask(scope: &Scope, target: &Target) -> Result<(), McpError> {
    let form = form(scope, target);
    if let Value::Object(needs) = form.method.needs()
        && let Some(missing) = missing_capabilities(&scope.context().client_capabilities, &needs)
    {
        return Err(missing_capability(&format!("tool `{}` needs a person's approval, asked by a form, so it", shortened(target.name())), missing));
    }
    Ok(())
}

/// The form: yes or no, naming the principal, the tool and the arguments.
fn form(scope: &Scope, target: &Target) -> InputRequest {
    let arguments = match target {
        Target::Tool { arguments, .. } => arguments.as_str(),
        _ => "",
    };
    let summary: String = crate::escape::shorten(arguments).chars().take(SUMMARY).collect();
    let more = if arguments.chars().count() > SUMMARY { "…" } else { "" };
    let message = format!(
        "{} asks to run the tool `{}` with the arguments {summary}{more}. Run it?",
        scope.client.principal(),
        crate::escape::shorten(&shortened(target.name()))
    );
    let mut params = Map::new();
    params.insert("message".into(), json!(message));
    params.insert(
        "requestedSchema".into(),
        json!({
            "type": "object",
            "properties": {"approve": {"type": "boolean", "title": "Run it", "description": "Yes runs the tool once, with exactly these arguments"}},
            "required": ["approve"]
        }),
    );
    InputRequest { key: APPROVAL_KEY.to_owned(), method: InputMethod::ElicitForm, params }
}

/// Why an answer to the approval form is not a yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum NotApproved {
    #[error("the person answered no")]
    No,
    #[error("the person declined")]
    Declined,
    #[error("the person dismissed the form")]
    Dismissed,
    #[error("the answer to the approval form was not understood")]
    NotUnderstood,
}

/// Whether an elicitation answer says yes: `accept` with `approve: true`.
fn said_yes(answer: &Value) -> Result<(), NotApproved> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") if answer.pointer("/content/approve") == Some(&Value::Bool(true)) => Ok(()),
        Some("accept") => Err(NotApproved::No),
        Some("decline") => Err(NotApproved::Declined),
        Some("cancel") => Err(NotApproved::Dismissed),
        _ => Err(NotApproved::NotUnderstood),
    }
}

fn refused(why: String) -> Result<Reply, McpError> {
    let mut reply = Reply::new(to_json(&CallToolResult::error(why))?);
    reply.approval_refused = true;
    Ok(reply)
}

/// Counts an approval's outcome.
fn counted(outcome: &'static str) {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.approval(outcome);
    }
}

fn not_approved(scope: &Scope, target: &Target, why: &str) -> Result<Reply, McpError> {
    counted("declined");
    tracing::info!(principal = %scope.client.principal(), tool = %crate::escape::Escaped(&shortened(target.name())), why, "the call was not approved");
    refused(format!("the call to `{}` was not approved ({why}); nothing ran", shortened(target.name())))
}

/// A legacy session: asks the client and waits for the answer.
pub(super) async fn ask_in_session(scope: &Scope, target: &Target) -> Result<Approved, McpError> {
    can_ask(scope, target)?;
    let request = form(scope, target);
    match scope.client.ask(std::slice::from_ref(&request), &scope.cx, None).await {
        Ok(answers) => match answers.iter().find(|a| a.key == APPROVAL_KEY).map(|a| said_yes(&a.result)) {
            Some(Ok(())) => {
                counted("approved");
                Ok(Approved::Run)
            }
            Some(Err(why)) => not_approved(scope, target, &why.to_string()).map(Approved::Answer),
            None => not_approved(scope, target, "no answer").map(Approved::Answer),
        },
        Err(failure) => not_approved(scope, target, &failure.to_string()).map(Approved::Answer),
    }
}

/// 2026-07-28: the approval step of a call. With no state, the form goes back; with an approval
/// state, its answer decides (once); with any other state (a plugin's round of an approved
/// call) the call goes on.
pub(super) async fn settle_stateless(
    scope: &Scope,
    target: &Target,
    plugin: &str,
    responses: Option<&Value>,
    state: Option<&Value>,
) -> Result<Approved, McpError> {
    let key = &scope.state.state_key;
    let arguments = target.arguments();
    let caller = scope.context().caller.clone();
    let binding = Binding { plugin, method: APPROVAL_METHOD, target: target.name(), arguments: &arguments, caller: caller.as_deref() };
    let Some(state) = state else {
        can_ask(scope, target)?;
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(|_| McpError::internal())?;
        let round = Round { requests: vec![form(scope, target)], answered: Vec::new(), plugin_state: Some(nonce.to_vec()) };
        let sealed = key.seal_for(&binding, &round, APPROVAL_TTL.min(scope.state.limits.state_ttl)).map_err(|_| McpError::internal())?;
        let requests: Map<String, Value> = round.requests.iter().map(|r| (r.key.clone(), r.to_wire())).collect();
        counted("asked");
        return Ok(Approved::Answer(Reply::new(json!({"resultType": "input_required", "inputRequests": requests, "requestState": sealed}))));
    };
    let Some(token) = state.as_str() else {
        return Err(McpError::InvalidParams("`requestState` must be a string".to_owned()));
    };
    let round = match key.open(&binding, token) {
        Ok(round) => round,
        Err(crate::input::seal::SealError::Expired) => {
            return Err(McpError::InvalidParams("the approval form expired before it was answered; call the tool again to ask anew".to_owned()));
        }
        // Not an approval of this exact call: a plugin's round, which `rounds` opens (or refuses).
        Err(crate::input::seal::SealError::Invalid) => return Ok(Approved::Run),
    };
    let nonce: [u8; 16] = round.plugin_state.as_deref().and_then(|n| n.try_into().ok()).ok_or_else(McpError::internal)?;
    let Some(answer) = responses.and_then(|r| r.get(APPROVAL_KEY)) else {
        return Err(McpError::InvalidParams(format!("the retry must answer `{APPROVAL_KEY}`, the approval form")));
    };
    // Spent once: in the store every replica shares, when there is one.
    let first = match scope.state.store() {
        Some(store) => {
            let until = std::time::SystemTime::now() + APPROVAL_TTL;
            let until_ms = until.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
            store.spend(&nonce, until_ms).await.map_err(|error| McpError::Internal(error.to_string()))?
        }
        None => scope.state.approvals.spend(nonce, Instant::now() + APPROVAL_TTL)?,
    };
    if !first {
        return Err(McpError::InvalidParams("this approval was already answered; call the tool again to ask anew".to_owned()));
    }
    match said_yes(answer) {
        Ok(()) => {
            counted("approved");
            Ok(Approved::Granted)
        }
        Err(why) => not_approved(scope, target, &why.to_string()).map(Approved::Answer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_accepted_yes_approves() {
        assert!(said_yes(&json!({"action": "accept", "content": {"approve": true}})).is_ok());
        for no in [
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "accept", "content": {"approve": "true"}}),
            json!({"action": "accept"}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"approve": true}),
            json!(null),
        ] {
            assert!(said_yes(&no).is_err(), "{no}");
        }
    }
}
