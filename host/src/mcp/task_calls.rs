//! Tool calls that run as tasks, and the `tasks/*` methods, in both task designs.
//!
//! 2025-11-25 (experimental tasks): the client asks for a task with `task` on `tools/call`; the
//! session creates it at once, answers `CreateTaskResult`, runs the call in the background
//! (asking the client for input itself, as for any legacy call, with the task `input_required`
//! meanwhile) and tells the session `notifications/tasks/status` on each change. `tasks/get`,
//! `tasks/result` (which waits for the end), `tasks/list` and `tasks/cancel` see only the
//! session's own tasks.
//!
//! 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): a client that declares the
//! extension on a call of a tool that supports tasks lets the server decide. The plugin's first
//! run gets `ServerLimits::task_after` (`TASK_AFTER` unless set): a call that ends by then is answered directly (`input_required`
//! rounds included, unless the plugin asks within a task); one still running becomes a task,
//! answered `resultType: "task"`, polled with `tasks/get`, answered with `tasks/update`,
//! cancelled with `tasks/cancel`; `notifications/tasks` reach listen requests that name it.
//! A tool that requires a task always gets one.
//!
//! A task's plugin runs are ordinary calls: same sandbox, deadline and limits per run, in a fresh
//! instance each. The task itself is bounded by the store (per client, per plugin and in total;
//! a refusal is `SERVER_BUSY`) and stopped when its time to live runs out or it is cancelled.
//!
//! How a run's end becomes a status: a result is `completed`, the tool's own error result
//! (`isError`) included on 2026-07-28, `failed` on 2025-11-25 (each design's rule); a run that
//! failed in the host's hands (the plugin trapped, hit its deadline or a limit, returned
//! malformed output or reported a failure) is `failed` on both: on 2026-07-28 with that fault as
//! the task's JSON-RPC error (SEP-2663 keeps `failed` for these), on 2025-11-25 with the
//! `isError` result the call would have answered directly (`tasks/result` answers exactly that).
//! A plugin's `invalid-params` is `failed` with `-32602`, a cancelled run `cancelled`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::error::McpError;
use super::lifecycle::{META_RELATED_TASK, TASKS_EXTENSION};
use super::notifier::{self, Notifier};
use super::reply::{Reply, call_result_json, to_json};
use super::request::{Method, Target, TaskRequest};
use super::rounds;
use super::scope::Scope;
use super::shared_tasks;
use super::state::ServerState;
use super::{Era, MAX_ROUNDS};
use crate::input::{Outcome, RequestContext};
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use crate::plugin::{CallContext, EVENT_QUEUE, PluginError};
use crate::protocol::{CallToolResult, TaskSupport};
use crate::router::{RouteError, Router};
use crate::tasks::{Missing, Task, TaskDesign, TaskError, TaskOwner, TaskStatus};

/// Items per page of `tasks/list`.
const TASKS_PAGE: usize = 100;

/// How a `tools/call` is served: directly, or as a task of one design.
pub(super) enum CallMode {
    Direct,
    /// 2025-11-25, with the time to live the client asked for.
    Experimental {
        ttl: Option<std::time::Duration>,
    },
    /// 2026-07-28 with the extension declared; `required` when the tool only runs as a task.
    Extension {
        required: bool,
    },
}

/// Whether the client declared the tasks extension on this 2026-07-28 request.
pub fn declares_extension(context: &RequestContext) -> bool {
    context.client_capabilities.get("extensions").and_then(|e| e.get(TASKS_EXTENSION)).is_some()
}

/// -32021 naming the tasks extension as the capability missing.
pub(super) fn extension_missing() -> McpError {
    let mut required = Map::new();
    required.insert("extensions".into(), json!({TASKS_EXTENSION: {}}));
    McpError::MissingCapability { message: format!("this needs the client capability `extensions.{TASKS_EXTENSION}`"), required }
}

/// The task design a `tasks/*` method belongs to in this scope, or the error for a method this
/// revision (or this client) does not have. Checked before the method's params are read.
pub(super) fn design(method: &Method, scope: &Scope) -> Result<TaskDesign, McpError> {
    let not_found = || McpError::no_method(method.name());
    match scope.era {
        Era::Legacy { version } if version.has_experimental_tasks() && *method != Method::TasksUpdate => Ok(TaskDesign::Experimental),
        Era::Legacy { .. } => Err(not_found()),
        Era::Modern { .. } if matches!(method, Method::TasksResult | Method::TasksList) => Err(not_found()),
        Era::Modern { .. } if !declares_extension(scope.context()) => Err(extension_missing()),
        Era::Modern { .. } => Ok(TaskDesign::Extension),
    }
}

/// How a `tools/call` of `tool_support` is served, or the error that refuses it.
pub(super) fn call_mode(scope: &Scope, task: Option<&Value>, support: Option<TaskSupport>) -> Result<CallMode, McpError> {
    let support = support.unwrap_or(TaskSupport::Forbidden);
    match scope.era {
        Era::Legacy { version } if version.has_experimental_tasks() => match (task, support) {
            (None, TaskSupport::Required) => Err(McpError::MethodNotFound("this tool runs only as a task: call it with `task`".to_owned())),
            (None, _) => Ok(CallMode::Direct),
            (Some(_), TaskSupport::Forbidden) => Err(McpError::MethodNotFound("this tool does not run as a task".to_owned())),
            (Some(Value::Object(task)), _) => {
                let ttl = task.get("ttl").and_then(Value::as_u64).map(Duration::from_millis);
                Ok(CallMode::Experimental { ttl })
            }
            (Some(_), _) => Err(McpError::InvalidParams("`task` must be an object".to_owned())),
        },
        Era::Legacy { .. } => Ok(CallMode::Direct),
        Era::Modern { .. } => match (declares_extension(scope.context()), support) {
            (false, TaskSupport::Required) => Err(extension_missing()),
            (false, _) | (true, TaskSupport::Forbidden) => Ok(CallMode::Direct),
            (true, support) => Ok(CallMode::Extension { required: support == TaskSupport::Required }),
        },
    }
}

/// The owner of tasks created in this scope.
fn task_owner(scope: &Scope) -> TaskOwner {
    match scope.era {
        Era::Legacy { .. } => TaskOwner::Session(scope.client.session()),
        Era::Modern { .. } => TaskOwner::Caller(scope.context().caller.clone().unwrap_or_default()),
    }
}

/// The task `id` of `owner`, or the error that says why there is none.
fn owned_task(scope: &Scope, id: &str, owner: &TaskOwner) -> Result<Arc<Task>, McpError> {
    scope.state.tasks.get(id, owner).map_err(|missing| match missing {
        Missing::Unknown => McpError::InvalidParams(format!("unknown task `{}`", shown(id))),
        Missing::Evicted => McpError::TaskEvicted { id: id.to_owned() },
    })
}

/// A context for a task's runs: its own events (pumped to the server and, on a legacy
/// session, to the client) and its own cancellation.
fn task_context(scope: &Scope, context: RequestContext) -> CallContext {
    let (events_tx, mut events) = mpsc::channel(EVENT_QUEUE);
    let run = CallContext::new(scope.cx.request_id.clone(), Some(events_tx)).with_request(context);
    let notifier = match scope.era {
        // Progress and logs of a 2026-07-28 task have nowhere to go: only changes count.
        Era::Modern { .. } => Notifier::new(None, Era::Modern { log_level: None }, scope.client.log_level()),
        Era::Legacy { .. } => Notifier::new(Some(&scope.context().meta), scope.era, scope.client.log_level()),
    };
    let (state, client) = (Arc::clone(&scope.state), Arc::clone(&scope.client));
    let pumped = run.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            notifier::forward(&state, client.as_ref(), &notifier, &pumped, event);
        }
    });
    run
}

/// Serves a legacy `tools/call` with `task`: the task is created and answered at once, and
/// the call runs in the background.
pub(super) async fn start_experimental_task(scope: &Scope, target: Target, ttl: Option<Duration>) -> Result<Reply, McpError> {
    let plugin = target.owner(&scope.router).ok_or_else(|| McpError::InvalidParams(format!("unknown tool `{}`", target.name())))?;
    let task = scope.state.tasks.create(&plugin, task_owner(scope), scope.client.quota(), TaskDesign::Experimental, ttl).map_err(refused)?;
    let run = task_context(scope, scope.context().clone());
    let scope = scope.clone();
    let running = Arc::clone(&task);
    tokio::spawn(async move {
        let work = rounds::serve_in_session(&scope, &target, &run, Some(&running));
        let outcome = tokio::select! {
            outcome = work => Some(outcome),
            () = running.stop.cancelled() => None,
            () = tokio::time::sleep_until(running.expires().into()) => None,
        };
        run.cancel();
        match outcome {
            Some(outcome) => {
                running.finish(outcome.map(|reply| reply.result).map_err(|error| error.to_wire(Some(scope.revision()))));
            }
            None => {
                running.cancel("the task was cancelled or its time to live ran out");
            }
        }
        scope.task_changed(&running);
    });
    tracing::info!(%plugin, task = %task.id, "tool call runs as a task");
    Ok(Reply::new(json!({"task": task.to_wire(false)})))
}

/// Serves a 2026-07-28 `tools/call` that may become a task.
pub(super) async fn call_as_extension_task(scope: &Scope, target: Target, context: RequestContext, required: bool) -> Result<Reply, McpError> {
    let plugin = target.owner(&scope.router).ok_or_else(|| McpError::InvalidParams(format!("unknown tool `{}`", target.name())))?;
    let owner = task_owner(scope);
    let run = task_context(scope, context.clone());
    let mut first = {
        let (router, target, run) = (Arc::clone(&scope.router), target.clone(), run.clone());
        tokio::spawn(async move { run_task_once(&router, &target, &run).await })
    };
    // A zero threshold makes every such call a task, however soon its run ends.
    let task_after = scope.state.limits.task_after;
    let early = tokio::select! {
        biased;
        () = std::future::ready(()), if task_after.is_zero() => None,
        joined = &mut first => Some(joined),
        () = tokio::time::sleep(scope.state.limits.task_after) => None,
        () = scope.cx.cancelled() => {
            run.cancel();
            return Err(McpError::cancelled());
        }
    };
    let create = || scope.state.tasks.create(&plugin, owner.clone(), scope.client.quota(), TaskDesign::Extension, None).map_err(refused);
    let (task, pending) = match early {
        None => match create() {
            Ok(task) => (task, Pending::Running(first)),
            Err(busy) => {
                // No task to run in: the run stops as a cancelled request would.
                run.cancel();
                return Err(busy);
            }
        },
        Some(joined) => {
            let (_, ran) = joined.map_err(|_| McpError::internal())??;
            match ran {
                Ran::Outcome(Outcome::Complete(finished)) if !required => return Ok(finished),
                Ran::Outcome(Outcome::InputRequired(asked)) if !asked.in_task => {
                    return rounds::answer_input_required(scope, &target, &plugin, &context, asked);
                }
                // Answered directly, a failed run is the `isError` result of any direct call.
                Ran::Fault { error, .. } if !required => return Ok(Reply::new(to_json(&CallToolResult::error(error.to_string()))?)),
                ran => (create()?, Pending::Ended(ran)),
            }
        }
    };
    // Shared: in the store before the reply that announces it.
    if let Some(store) = shared_tasks::store(scope)
        && let Err(error) = shared_tasks::created(store, scope, &task, &owner_id(&owner)).await
    {
        run.cancel();
        if let Pending::Running(handle) = &pending {
            handle.abort();
        }
        scope.state.tasks.forget(&task.id);
        return Err(error);
    }
    let running = Arc::clone(&task);
    let scope_of_task = scope.clone();
    scope.state.runs.spawn(async move { run_extension_task(scope_of_task, running, target, context, run, pending).await });
    tracing::info!(%plugin, task = %task.id, "tool call runs as a task");
    let mut result = task.to_wire(false);
    result["resultType"] = json!("task");
    Ok(Reply::new(result))
}

/// A 2026-07-28 task's life: each run's outcome either ends the task or parks it until the
/// client answers through `tasks/update`, then the plugin runs again with the answers.
async fn run_extension_task(scope: Scope, task: Arc<Task>, target: Target, mut context: RequestContext, run: CallContext, mut pending: Pending) {
    scope.task_changed(&task);
    let revision = Some(scope.revision());
    let expires = tokio::time::Instant::from_std(task.expires());
    for _ in 0..MAX_ROUNDS {
        let outcome = match pending {
            Pending::Ended(ran) => Ok(ran),
            Pending::Running(handle) => {
                let abort = handle.abort_handle();
                tokio::select! {
                    joined = handle => match joined {
                        Ok(Ok((_, outcome))) => Ok(outcome),
                        Ok(Err(error)) => Err(error),
                        Err(_) => Err(McpError::internal()),
                    },
                    () = task.stop.cancelled() => { run.cancel(); abort.abort(); return settle(&scope, &task).await }
                    // Shutting down: the round is handed to another replica, through the store.
                    () = scope.state.handing_over.cancelled(), if shared_tasks::store(&scope).is_some() => {
                        run.cancel();
                        abort.abort();
                        if let Some(store) = shared_tasks::store(&scope) && shared_tasks::hand_over(store, &scope, &task, &target, &context).await {
                            scope.state.tasks.forget(&task.id);
                        }
                        return;
                    }
                    () = tokio::time::sleep_until(expires) => { run.cancel(); abort.abort(); task.cancel("the task's time to live ran out"); return settle(&scope, &task).await }
                }
            }
        };
        let asked = match outcome {
            Ok(Ran::Outcome(Outcome::Complete(finished))) => {
                task.finish(Ok(finished.result));
                return settle(&scope, &task).await;
            }
            Ok(Ran::Fault { error: PluginError::Cancelled, .. }) => {
                task.cancel("the task's run was cancelled");
                return settle(&scope, &task).await;
            }
            Ok(Ran::Fault { plugin, error }) => {
                task.finish(Err(ErrorObject::new(INTERNAL_ERROR, format!("plugin `{plugin}` failed: {error}"))));
                return settle(&scope, &task).await;
            }
            Err(error) => {
                task.finish(Err(error.to_wire(revision)));
                return settle(&scope, &task).await;
            }
            Ok(Ran::Outcome(Outcome::InputRequired(asked))) => asked,
        };
        if let Err(error) = rounds::refuse_undeclared(&asked, &context.client_capabilities, &task.plugin) {
            task.finish(Err(error.to_wire(revision)));
            return settle(&scope, &task).await;
        }
        task.park(asked.requests.clone(), "waiting for the client's answers");
        // Shared: parked in the store, where any replica's `tasks/update` picks it up; nothing
        // here waits for the answers.
        if let Some(store) = shared_tasks::store(&scope) {
            run.cancel();
            if shared_tasks::park(store, &scope, &task, &target, &context, &asked).await {
                scope.state.tasks.forget(&task.id);
                return scope.task_changed(&task);
            }
            task.finish(Err(ErrorObject::new(INTERNAL_ERROR, "the task could not be kept in the shared store while it waits for input")));
            return settle(&scope, &task).await;
        }
        scope.task_changed(&task);
        let answers = tokio::select! {
            answers = task.answers() => answers,
            () = tokio::time::sleep(scope.state.limits.input_timeout) => None,
            () = tokio::time::sleep_until(expires) => None,
        };
        let Some(answers) = answers else {
            task.cancel("the client did not answer in time");
            return settle(&scope, &task).await;
        };
        task.resume();
        scope.task_changed(&task);
        context.input_responses = answers;
        context.state = asked.state;
        let (router, target, again) = (Arc::clone(&scope.router), target.clone(), run.clone().with_request(context.clone()));
        pending = Pending::Running(tokio::spawn(async move { run_task_once(&router, &target, &again).await }));
    }
    task.finish(Err(ErrorObject::new(INTERNAL_ERROR, format!("the plugin asked for input more than {MAX_ROUNDS} times"))));
    settle(&scope, &task).await;
}

/// A 2026-07-28 task changed status for good (or this replica let it go): shared, the store
/// is told first, then the task's listeners, unless the store refused the change (the task
/// was cancelled through another replica, which told them).
async fn settle(scope: &Scope, task: &Task) {
    if let Some(store) = shared_tasks::store(scope) {
        let saved = shared_tasks::save(store, scope, task).await;
        scope.state.tasks.forget(&task.id);
        if saved == Some(false) {
            return;
        }
    }
    scope.task_changed(task);
}

/// The id of the principal a 2026-07-28 task belongs to.
fn owner_id(owner: &TaskOwner) -> String {
    match owner {
        TaskOwner::Caller(id) => id.clone(),
        TaskOwner::Session(_) => String::new(),
    }
}

/// Runs the next round of a 2026-07-28 task this replica claimed in the shared store.
async fn run_claimed(scope: &Scope, store: &crate::store::Store, next: shared_tasks::Continuation) {
    let shared_tasks::Continuation { id, plugin, target, context, created, ttl } = next;
    let task = match scope.state.tasks.adopt(&id, &plugin, task_owner(scope), scope.client.quota(), created, ttl) {
        Ok(task) => task,
        Err(busy) => {
            tracing::warn!(task = %id, error = %busy, "a claimed task's round cannot run here: it fails");
            shared_tasks::fail(store, scope, &id, &owner_id(&task_owner(scope)), &busy.to_string()).await;
            return;
        }
    };
    let run = task_context(scope, context.clone());
    let (router, first, again) = (Arc::clone(&scope.router), target.clone(), run.clone());
    let pending = Pending::Running(tokio::spawn(async move { run_task_once(&router, &first, &again).await }));
    scope.state.runs.spawn(run_extension_task(scope.clone(), task, target, context, run, pending));
}

/// Claims, for as long as the process serves, the tasks other replicas handed over when they
/// shut down (and any left when no replica was there to take them), and runs each one's round
/// again here. Only with a shared store; stops when this replica starts handing over its own.
pub async fn claim_orphans(state: Arc<ServerState>) {
    let Some(store) = state.store.clone() else { return };
    loop {
        let notified = state.orphaned.notified();
        if state.handing_over.is_cancelled() {
            return;
        }
        if let Ok(ids) = store.orphans(16).await {
            for id in ids {
                if state.replica.owner(crate::replica::IdKind::Task, &id).is_err() {
                    continue;
                }
                let now = time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
                let Ok(Some(continuation)) = store.claim_orphan(&id, state.replica.id().as_str(), &now).await else { continue };
                let owner = shared_tasks::owner_of(&continuation).unwrap_or_default();
                let client: Arc<dyn super::scope::Client> = Arc::new(super::detached::Detached::of(&owner));
                let scope = Scope::new(&state, client, Era::Modern { log_level: None }, None, CallContext::new(id.clone(), None));
                match shared_tasks::resume(&scope, &id, &continuation, &[]) {
                    Some(next) => {
                        tracing::info!(task = %id, "a task another replica handed over runs here");
                        run_claimed(&scope, &store, next).await;
                    }
                    None => shared_tasks::fail(&store, &scope, &id, &owner, "the task's state could not be restored").await,
                }
            }
        }
        tokio::select! {
            () = notified => {}
            () = state.handing_over.cancelled() => return,
        }
    }
}

/// Runs a 2026-07-28 task's tool once. Unlike `rounds::run_once`, which turns a run that failed
/// in the host's hands into the `isError` result a direct call answers, this keeps the failure,
/// so that the task can end `failed` with it; the tool's own results pass as they are.
async fn run_task_once(router: &Router, target: &Target, cx: &CallContext) -> Result<(String, Ran), McpError> {
    let Target::Tool { name, arguments } = target else {
        let (plugin, outcome) = rounds::run_once(router, target, cx).await?;
        return Ok((plugin, Ran::Outcome(outcome)));
    };
    match router.call_tool(name, arguments, cx).await {
        Ok((plugin, Outcome::Complete(result))) => {
            Ok((plugin.to_owned(), Ran::Outcome(Outcome::Complete(Reply::new(call_result_json(result, cx.request.protocol_version)?)))))
        }
        Ok((plugin, Outcome::InputRequired(required))) => Ok((plugin.to_owned(), Ran::Outcome(Outcome::InputRequired(required)))),
        Err(RouteError::Plugin { plugin, error }) => match error {
            PluginError::NotFound(_) => Err(McpError::InvalidParams(format!("unknown tool `{name}`"))),
            PluginError::InvalidInputResponse(why) => Err(McpError::InvalidParams(why)),
            PluginError::InvalidParams(why) => Err(McpError::InvalidParams(format!("invalid params: {why}"))),
            error => {
                tracing::warn!(%plugin, tool = %crate::escape::Escaped(name), error = %crate::escape::Escaped(&error.to_string()), "tool call failed");
                Ok((plugin.clone(), Ran::Fault { plugin, error }))
            }
        },
        Err(other) => Err(other.into()),
    }
}

/// `tasks/get`, `tasks/list`, `tasks/cancel`, `tasks/update` and `tasks/result`, in `design`.
pub(super) async fn serve(scope: &Scope, design: TaskDesign, request: TaskRequest) -> Result<Reply, McpError> {
    let owner = task_owner(scope);
    if design == TaskDesign::Extension
        && let Some(store) = shared_tasks::store(scope)
    {
        return match shared_tasks::serve(store, scope, &owner_id(&owner), request).await? {
            shared_tasks::Served::Reply(result) => Ok(Reply::new(result)),
            shared_tasks::Served::Claimed(next) => {
                run_claimed(scope, store, *next).await;
                Ok(Reply::new(json!({})))
            }
        };
    }
    let id = match &request {
        TaskRequest::List { cursor } => return list_tasks(scope, cursor.as_deref(), &owner).map(Reply::new),
        TaskRequest::Result { id } => return task_result(scope, id, &owner).await,
        TaskRequest::Get { id } | TaskRequest::Cancel { id } | TaskRequest::Update { id, .. } => id,
    };
    let task = owned_task(scope, id, &owner)?;
    let result = match (request, design) {
        (TaskRequest::Get { .. }, TaskDesign::Experimental) => task.to_wire(false),
        (TaskRequest::Get { .. }, TaskDesign::Extension) => task.to_wire(true),
        (TaskRequest::Cancel { id }, TaskDesign::Experimental) => {
            if !task.cancel("cancelled by the client") {
                return Err(McpError::InvalidParams(format!("task `{id}` has already ended ({})", task.status().as_str())));
            }
            scope.task_changed(&task);
            task.to_wire(false)
        }
        (TaskRequest::Cancel { .. }, TaskDesign::Extension) => {
            if task.cancel("cancelled by the client") {
                scope.task_changed(&task);
            }
            json!({})
        }
        (TaskRequest::Update { responses, .. }, _) => {
            let Some(Value::Object(responses)) = responses else {
                return Err(McpError::InvalidParams("`inputResponses` must be an object".to_owned()));
            };
            if task.status() == TaskStatus::InputRequired {
                task.answer(&responses);
            }
            json!({})
        }
        (TaskRequest::List { .. } | TaskRequest::Result { .. }, _) => return Err(McpError::internal()),
    };
    Ok(Reply::new(result))
}

/// `tasks/result` (2025-11-25): waits until the task ends, then answers what the call would
/// have, related to the task.
async fn task_result(scope: &Scope, id: &str, owner: &TaskOwner) -> Result<Reply, McpError> {
    let task = owned_task(scope, id, owner)?;
    tokio::select! {
        () = task.finished() => {}
        () = scope.cx.cancelled() => return Err(McpError::cancelled()),
    }
    let related = json!({META_RELATED_TASK: {"taskId": task.id}});
    match task.outcome() {
        Some(Ok(mut result)) => {
            if let Value::Object(object) = &mut result {
                object.insert("_meta".into(), related);
            }
            Ok(Reply::new(result))
        }
        Some(Err(error)) => Err(McpError::Ended(error.with_data(related))),
        None => Err(McpError::Ended(ErrorObject::new(INTERNAL_ERROR, format!("task `{id}` was cancelled")).with_data(related))),
    }
}

fn list_tasks(scope: &Scope, cursor: Option<&str>, owner: &TaskOwner) -> Result<Value, McpError> {
    let tasks = scope.state.tasks.list(owner);
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix("tasks-")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= tasks.len())
            .ok_or_else(|| McpError::InvalidParams("invalid cursor: list again from the first page".to_owned()))?,
    };
    let end = (start + TASKS_PAGE).min(tasks.len());
    let mut result = json!({"tasks": tasks[start..end].iter().map(|t| t.to_wire(false)).collect::<Vec<_>>()});
    if end < tasks.len() {
        result["nextCursor"] = json!(format!("tasks-{end}"));
    }
    Ok(result)
}

/// What one run of a 2026-07-28 task's tool ended with.
enum Ran {
    /// The plugin's own outcome: a result (its own error results included) or its questions.
    Outcome(Outcome<Reply>),
    /// The run failed in the host's hands: the plugin trapped, hit its deadline or a limit,
    /// returned malformed output, reported a failure, could not run or was cancelled.
    Fault { plugin: String, error: PluginError },
}

/// A task's plugin run: still running, or already ended.
enum Pending {
    Running(tokio::task::JoinHandle<Result<(String, Ran), McpError>>),
    Ended(Ran),
}

/// The error for a task the store would not create: the server is busy (the quota or limit it
/// reached is named), unless no task id could be drawn.
fn refused(error: TaskError) -> McpError {
    match error {
        TaskError::NoRandom => McpError::Internal(error.to_string()),
        busy => McpError::Busy(busy.to_string()),
    }
}

fn shown(id: &str) -> String {
    id.chars().take(64).collect()
}
