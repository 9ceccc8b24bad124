//! 2026-07-28 tasks kept in the shared store (`--store`), so that any replica answers for them.
//!
//! - A task is written to the store before the reply that announces it; a store that cannot
//!   take it turns the call into `-32603` naming the store (and its run is stopped).
//! - The replica running a round writes each change (`save`); `tasks/get`, `tasks/update` and
//!   `tasks/cancel` are answered from the store by whichever replica gets them (`serve`).
//! - A task that asks for input is parked in the store (`park`) with its questions and a
//!   continuation: the tool, its arguments, the request context, and the round (the questions
//!   and the plugin's state) sealed under the state key, bound to the plugin, the tool, the
//!   arguments and the caller, so a store that is written to by anyone else cannot change what
//!   the plugin is told. No sandbox and no task of the host waits meanwhile.
//! - The `tasks/update` whose answers complete the round claims the task (one script: exactly
//!   one replica does) and that replica runs the next round (`Claimed`), wherever the task
//!   started; the replica that started it may be gone.
//! - `tasks/cancel` marks the task cancelled in the store and the store tells the replica
//!   running it, which stops the run.
//! - A question not answered within the input timeout is found out by the next read and the
//!   task cancelled then.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::error::McpError;
use super::request::{Target, TaskRequest};
use super::scope::Scope;
use crate::input::seal::{Binding, Round};
use crate::input::{ClientInfo, InputRequest, InputRequired, InputResponse, RequestContext, TraceContext};
use crate::replica::IdKind;
use crate::revision::Revision;
use crate::store::{Answered, Cancelled, Created, MAX_STORED_PER_OWNER, Store, StoredTask};
use crate::tasks::{POLL_INTERVAL_MS, Task, TaskStatus};

/// Most answers one `tasks/update` may carry (a round asks at most this many questions).
const MAX_ANSWERS: usize = crate::input::MAX_INPUT_REQUESTS;

/// What answering a task's method took.
pub(super) enum Served {
    /// The reply.
    Reply(Value),
    /// This replica claimed the task's next round: run it, then answer `{}`.
    Claimed(Box<Continuation>),
}

/// What the next round of a claimed task needs.
pub(super) struct Continuation {
    pub(super) id: String,
    pub(super) plugin: String,
    pub(super) target: Target,
    pub(super) context: RequestContext,
    pub(super) created: SystemTime,
    pub(super) ttl: Duration,
}

fn store_error(error: crate::store::StoreError) -> McpError {
    McpError::Internal(error.to_string())
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn rfc3339(at: SystemTime) -> String {
    time::OffsetDateTime::from(at).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// The store of a scope whose tasks are shared.
pub(super) fn store(scope: &Scope) -> Option<&std::sync::Arc<Store>> {
    scope.state.store.as_ref()
}

/// Writes a new task to the store, before its creation is answered.
///
/// # Errors
/// The store cannot take it (`-32603` naming the store).
pub(super) async fn created(store: &Store, scope: &Scope, task: &Task, owner: &str) -> Result<(), McpError> {
    let wire = task.to_wire(false);
    let text = |key: &str| wire.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let ttl_ms = u64::try_from(task.ttl().as_millis()).unwrap_or(u64::MAX);
    let fields = [
        ("owner", owner.to_owned()),
        ("plugin", task.plugin.clone()),
        ("status", TaskStatus::Working.as_str().to_owned()),
        ("created", text("createdAt")),
        ("updated", text("lastUpdatedAt")),
        ("ttl_ms", ttl_ms.to_string()),
        ("runner", scope.state.replica.id().as_str().to_owned()),
    ];
    match store.create_task(&task.id, owner, now_ms().saturating_add(ttl_ms), &fields).await.map_err(store_error)? {
        Created::Yes => Ok(()),
        Created::Exists => Err(McpError::internal()),
        Created::Full => Err(McpError::Busy(format!(
            "this caller holds {MAX_STORED_PER_OWNER} tasks in the shared store and none has finished; try again once some have finished, or cancel some"
        ))),
    }
}

/// Writes the task's status (and its outcome, once over), as the replica running it:
/// `Some(false)` when the store refused it (the task was cancelled meanwhile), `None` when the
/// store is out of reach (then it is logged).
pub(super) async fn save(store: &Store, scope: &Scope, task: &Task) -> Option<bool> {
    let wire = task.to_wire(true);
    let mut fields = vec![
        ("status".to_owned(), task.status().as_str().to_owned()),
        ("message".to_owned(), wire.get("statusMessage").and_then(Value::as_str).unwrap_or_default().to_owned()),
        ("updated".to_owned(), wire.get("lastUpdatedAt").and_then(Value::as_str).unwrap_or_default().to_owned()),
    ];
    if let Some(result) = wire.get("result") {
        fields.push(("outcome".to_owned(), json!({"result": result}).to_string()));
    } else if let Some(error) = wire.get("error") {
        fields.push(("outcome".to_owned(), json!({"error": error}).to_string()));
    }
    let me = scope.state.replica.id().as_str();
    match store.write_task(&task.id, me, true, &fields).await {
        Ok(written) => Some(written),
        Err(error) => {
            tracing::warn!(task = %task.id, error = %error, "a task's change could not be written to the shared store");
            None
        }
    }
}

/// Ends a task this replica claimed but cannot run, as failed with `why`, and tells its
/// listeners.
pub(super) async fn fail(store: &Store, scope: &Scope, id: &str, owner: &str, why: &str) {
    let failed = [
        ("status".to_owned(), TaskStatus::Failed.as_str().to_owned()),
        ("message".to_owned(), why.to_owned()),
        ("updated".to_owned(), rfc3339(SystemTime::now())),
        ("outcome".to_owned(), json!({"error": {"code": crate::jsonrpc::INTERNAL_ERROR, "message": why}}).to_string()),
    ];
    if let Err(error) = store.write_task(id, scope.state.replica.id().as_str(), true, &failed).await {
        tracing::warn!(task = %id, error = %error, "a failed task could not be written to the shared store");
    }
    announce(store, scope, id, owner).await;
}

/// What the next run of `task`'s tool needs, for whichever replica runs it: the tool, its
/// arguments, the request context, and `round` sealed under the state key for the rest of the
/// task's life, bound to the plugin, the tool, the arguments and the caller. `None` when the
/// round is too large to seal (or the target is not a tool).
fn continuation(scope: &Scope, task: &Task, target: &Target, context: &RequestContext, round: &Round) -> Option<String> {
    let Target::Tool { name, arguments } = target else { return None };
    let arguments_value: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let binding = Binding { plugin: &task.plugin, method: "tools/call", target: name, arguments: &arguments_value, caller: context.caller.as_deref() };
    let remaining = task.expires().saturating_duration_since(std::time::Instant::now());
    let sealed = scope.state.state_key.seal_for(&binding, round, remaining).ok()?;
    let wire = task.to_wire(false);
    let continuation = json!({
        "plugin": task.plugin,
        "tool": name,
        "arguments": arguments,
        "context": context_json(context),
        "round": sealed,
        "created": wire.get("createdAt"),
        "ttl_ms": u64::try_from(task.ttl().as_millis()).unwrap_or(u64::MAX),
    });
    Some(continuation.to_string())
}

/// Parks the task in the store until its questions are answered: no run of this replica waits
/// for them. False when the store refused it (then it is logged).
pub(super) async fn park(store: &Store, scope: &Scope, task: &Task, target: &Target, context: &RequestContext, asked: &InputRequired) -> bool {
    let round = Round { requests: asked.requests.clone(), answered: Vec::new(), plugin_state: asked.state.clone() };
    let Some(continuation) = continuation(scope, task, target, context, &round) else {
        tracing::warn!(task = %task.id, "a task's round is too large to park in the shared store");
        return false;
    };
    let wire = task.to_wire(false);
    let deadline = now_ms().saturating_add(u64::try_from(scope.state.limits.input_timeout.as_millis()).unwrap_or(u64::MAX));
    let mut fields = vec![
        ("status".to_owned(), TaskStatus::InputRequired.as_str().to_owned()),
        ("message".to_owned(), wire.get("statusMessage").and_then(Value::as_str).unwrap_or_default().to_owned()),
        ("updated".to_owned(), wire.get("lastUpdatedAt").and_then(Value::as_str).unwrap_or_default().to_owned()),
        ("deadline".to_owned(), deadline.to_string()),
        ("continuation".to_owned(), continuation),
    ];
    fields.extend(asked.requests.iter().map(|r| (format!("request:{}", r.key), r.to_wire().to_string())));
    // Last: from here on no run of this replica writes it (`runner` is empty).
    fields.push(("runner".to_owned(), String::new()));
    match store.write_task(&task.id, scope.state.replica.id().as_str(), true, &fields).await {
        Ok(written) => written,
        Err(error) => {
            tracing::warn!(task = %task.id, error = %error, "a task waiting for input could not be parked in the shared store");
            false
        }
    }
}

/// Hands a task this replica runs over to the others (the shutdown grace ended): its round, as
/// it started (its answers and the plugin's state), is kept sealed in the store, and whichever
/// replica claims it runs the round again from its start. False when the store did not take it
/// (then the task ends `failed`, saying so).
pub(super) async fn hand_over(store: &Store, scope: &Scope, task: &Task, target: &Target, context: &RequestContext) -> bool {
    let round = Round { requests: Vec::new(), answered: context.input_responses.clone(), plugin_state: context.state.clone() };
    let remaining = task.expires().saturating_duration_since(std::time::Instant::now());
    let handed = match continuation(scope, task, target, context, &round) {
        Some(continuation) => {
            let expires_at = now_ms().saturating_add(u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX));
            store.hand_over_task(&task.id, scope.state.replica.id().as_str(), &continuation, &rfc3339(SystemTime::now()), expires_at).await
        }
        None => Ok(false),
    };
    match handed {
        Ok(true) => {
            tracing::info!(task = %task.id, "a task still running at shutdown was handed over to the other replicas");
            true
        }
        other => {
            if let Err(error) = other {
                tracing::warn!(task = %task.id, error = %error, "a task still running at shutdown could not be handed over");
            }
            let owner = match &task.owner {
                crate::tasks::TaskOwner::Caller(id) => id.clone(),
                crate::tasks::TaskOwner::Session(_) => String::new(),
            };
            fail(store, scope, &task.id, &owner, "the replica running the task stopped before it finished").await;
            false
        }
    }
}

/// The principal a claimed orphan's continuation belongs to (its caller).
pub(super) fn owner_of(continuation: &str) -> Option<String> {
    let continuation: Value = serde_json::from_str(continuation).ok()?;
    continuation.pointer("/context/caller").and_then(Value::as_str).map(str::to_owned)
}

/// `tasks/get`, `tasks/update` and `tasks/cancel` of a 2026-07-28 task, from the store.
///
/// # Errors
/// The task is not the caller's, or does not exist (`-32602`, as for an unknown one), or the
/// store is out of reach (`-32603` naming it).
pub(super) async fn serve(store: &Store, scope: &Scope, owner: &str, request: TaskRequest) -> Result<Served, McpError> {
    let unknown = |id: &str| McpError::InvalidParams(format!("unknown task `{}`", id.chars().take(64).collect::<String>()));
    let id = match &request {
        TaskRequest::Get { id } | TaskRequest::Cancel { id } | TaskRequest::Update { id, .. } => id.clone(),
        TaskRequest::List { .. } | TaskRequest::Result { .. } => return Err(McpError::internal()),
    };
    // An id no replica of this cluster minted is not looked up.
    if scope.state.replica.owner(IdKind::Task, &id).is_err() {
        return Err(unknown(&id));
    }
    match request {
        TaskRequest::Get { .. } => {
            let stored = read(store, scope, &id, owner).await?.ok_or_else(|| unknown(&id))?;
            Ok(Served::Reply(wire(&id, &stored)))
        }
        TaskRequest::Cancel { .. } => match store.cancel_task(&id, owner, "cancelled by the client", &rfc3339(SystemTime::now())).await.map_err(store_error)? {
            Cancelled::Unknown => Err(unknown(&id)),
            Cancelled::Now => {
                announce(store, scope, &id, owner).await;
                Ok(Served::Reply(json!({})))
            }
            Cancelled::AlreadyOver => Ok(Served::Reply(json!({}))),
        },
        TaskRequest::Update { responses, .. } => {
            let Some(Value::Object(responses)) = responses else {
                return Err(McpError::InvalidParams("`inputResponses` must be an object".to_owned()));
            };
            if responses.len() > MAX_ANSWERS {
                return Err(McpError::InvalidParams(format!("`inputResponses` holds more than {MAX_ANSWERS} answers")));
            }
            let answers: Vec<(String, String)> = responses.iter().map(|(key, value)| (key.clone(), value.to_string())).collect();
            let me = scope.state.replica.id().as_str();
            match store.answer_task(&id, owner, me, now_ms(), &rfc3339(SystemTime::now()), &answers).await.map_err(store_error)? {
                Answered::Unknown => Err(unknown(&id)),
                Answered::NotWaiting | Answered::Waiting => Ok(Served::Reply(json!({}))),
                Answered::Late => {
                    expire(store, scope, &id, owner).await?;
                    Ok(Served::Reply(json!({})))
                }
                Answered::Claimed { continuation, answers } => match resume(scope, &id, &continuation, &answers) {
                    Some(next) => Ok(Served::Claimed(Box::new(next))),
                    None => {
                        tracing::warn!(task = %id, "a task's continuation does not open here: the task fails");
                        fail(store, scope, &id, owner, "the task's state could not be restored").await;
                        Ok(Served::Reply(json!({})))
                    }
                },
            }
        }
        TaskRequest::List { .. } | TaskRequest::Result { .. } => Err(McpError::internal()),
    }
}

/// The task `id` of `owner` as the store holds it, a question past its deadline cancelling it
/// first.
async fn read(store: &Store, scope: &Scope, id: &str, owner: &str) -> Result<Option<StoredTask>, McpError> {
    let Some(stored) = store.task(id).await.map_err(store_error)? else { return Ok(None) };
    if stored.get("owner") != Some(owner) {
        return Ok(None);
    }
    let late = stored.get("status") == Some(TaskStatus::InputRequired.as_str())
        && stored.get("deadline").and_then(|d| d.parse::<u64>().ok()).is_some_and(|d| d < now_ms());
    if !late {
        return Ok(Some(stored));
    }
    expire(store, scope, id, owner).await?;
    store.task(id).await.map_err(store_error)
}

/// Cancels a task whose client did not answer in time, and tells its listeners.
async fn expire(store: &Store, scope: &Scope, id: &str, owner: &str) -> Result<(), McpError> {
    if store.cancel_task(id, owner, "the client did not answer in time", &rfc3339(SystemTime::now())).await.map_err(store_error)? == Cancelled::Now {
        announce(store, scope, id, owner).await;
    }
    Ok(())
}

/// Tells the task's listeners, here and on every replica, what it is now.
async fn announce(store: &Store, scope: &Scope, id: &str, owner: &str) {
    if let Ok(Some(stored)) = store.task(id).await {
        scope.announce_task(id, owner, wire(id, &stored));
    }
}

/// The task as the 2026-07-28 `tasks/get` shows it.
pub(super) fn wire(id: &str, stored: &StoredTask) -> Value {
    let status = stored.get("status").unwrap_or("working");
    let ttl: u64 = stored.get("ttl_ms").and_then(|t| t.parse().ok()).unwrap_or(0);
    let mut task = json!({
        "taskId": id,
        "status": status,
        "createdAt": stored.get("created").unwrap_or_default(),
        "lastUpdatedAt": stored.get("updated").unwrap_or_default(),
        "ttlMs": ttl,
        "pollIntervalMs": POLL_INTERVAL_MS,
    });
    if let Some(message) = stored.get("message") {
        task["statusMessage"] = json!(message);
    }
    let outcome: Option<Value> = stored.get("outcome").and_then(|o| serde_json::from_str(o).ok());
    match status {
        "input_required" => {
            let requests: Map<String, Value> = stored.requests().filter_map(|(key, text)| Some((key.to_owned(), serde_json::from_str(text).ok()?))).collect();
            task["inputRequests"] = Value::Object(requests);
        }
        "completed" => {
            if let Some(result) = outcome.as_ref().and_then(|o| o.get("result")) {
                task["result"] = result.clone();
            }
        }
        "failed" => {
            if let Some(error) = outcome.as_ref().and_then(|o| o.get("error")) {
                task["error"] = error.clone();
            }
        }
        _ => {}
    }
    task
}

/// The next round of a task this replica claimed: its continuation opened and the answers
/// matched to the questions they answer. `None` when the continuation does not open here.
pub(super) fn resume(scope: &Scope, id: &str, continuation: &str, answers: &[(String, String)]) -> Option<Continuation> {
    let continuation: Value = serde_json::from_str(continuation).ok()?;
    let text = |key: &str| continuation.get(key).and_then(Value::as_str);
    let (plugin, tool, arguments) = (text("plugin")?.to_owned(), text("tool")?.to_owned(), text("arguments")?.to_owned());
    let mut context = context_from(continuation.get("context")?)?;
    let arguments_value: Value = serde_json::from_str(&arguments).ok()?;
    let binding = Binding { plugin: &plugin, method: "tools/call", target: &tool, arguments: &arguments_value, caller: context.caller.as_deref() };
    let round = scope.state.state_key.open(&binding, text("round")?).ok()?;
    // A round handed over mid-run carries its own answers; a parked one gets them now.
    context.input_responses = if answers.is_empty() { round.answered } else { answered(&round.requests, answers) };
    context.state = round.plugin_state;
    let created = time::OffsetDateTime::parse(text("created")?, &time::format_description::well_known::Rfc3339).ok().map(SystemTime::from)?;
    let ttl = Duration::from_millis(continuation.get("ttl_ms").and_then(Value::as_u64)?);
    Some(Continuation { id: id.to_owned(), plugin, target: Target::Tool { name: tool, arguments }, context, created, ttl })
}

/// The answers to `requests`, in their order (answers to nothing asked are left out).
fn answered(requests: &[InputRequest], answers: &[(String, String)]) -> Vec<InputResponse> {
    requests
        .iter()
        .filter_map(|request| {
            let (_, text) = answers.iter().find(|(key, _)| *key == request.key)?;
            Some(InputResponse { key: request.key.clone(), method: request.method, result: serde_json::from_str(text).ok()? })
        })
        .collect()
}

/// The request context a continuation carries (what the plugin is told on every round).
fn context_json(context: &RequestContext) -> Value {
    json!({
        "protocolVersion": context.protocol_version.to_string(),
        "clientCapabilities": context.client_capabilities,
        "clientInfo": context.client_info.as_ref().map(|info| json!({"name": info.name, "version": info.version, "title": info.title})),
        "meta": context.meta,
        "hasProgressToken": context.has_progress_token,
        "trace": {"traceparent": context.trace.traceparent, "tracestate": context.trace.tracestate, "baggage": context.trace.baggage},
        "caller": context.caller,
    })
}

fn context_from(value: &Value) -> Option<RequestContext> {
    let revision: Revision = value.get("protocolVersion")?.as_str()?.parse().ok()?;
    let mut context = RequestContext::local(revision);
    context.client_capabilities = value.get("clientCapabilities")?.as_object()?.clone();
    context.client_info = value.get("clientInfo").filter(|v| !v.is_null()).and_then(|info| {
        Some(ClientInfo {
            name: info.get("name")?.as_str()?.to_owned(),
            version: info.get("version").and_then(Value::as_str).unwrap_or_default().to_owned(),
            title: info.get("title").and_then(Value::as_str).map(str::to_owned),
        })
    });
    context.meta = value.get("meta")?.as_object()?.clone();
    context.has_progress_token = value.get("hasProgressToken").and_then(Value::as_bool).unwrap_or(false);
    let trace = value.get("trace");
    let text = |key: &str| trace.and_then(|t| t.get(key)).and_then(Value::as_str).map(str::to_owned);
    context.trace = TraceContext { traceparent: text("traceparent"), tracestate: text("tracestate"), baggage: text("baggage") };
    context.caller = value.get("caller").and_then(Value::as_str).map(str::to_owned);
    Some(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_context_survives_the_continuation() {
        let mut context = RequestContext::local(Revision::V2026_07_28);
        context.client_capabilities = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}).as_object().cloned().unwrap_or_default();
        context.client_info = Some(ClientInfo { name: "c".to_owned(), version: "1".to_owned(), title: Some("T".to_owned()) });
        context.meta = json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}).as_object().cloned().unwrap_or_default();
        context.has_progress_token = true;
        context.trace.traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned());
        context.caller = Some("token alice".to_owned());
        let back = context_from(&context_json(&context)).expect("it opens");
        assert_eq!(back.protocol_version, context.protocol_version);
        assert_eq!(back.client_capabilities, context.client_capabilities);
        assert_eq!(back.client_info, context.client_info);
        assert_eq!(back.meta, context.meta);
        assert!(back.has_progress_token);
        assert_eq!(back.trace, context.trace);
        assert_eq!(back.caller, context.caller);
    }
}
