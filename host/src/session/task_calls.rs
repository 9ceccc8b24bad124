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
//! run gets `TASK_AFTER`: a call that ends by then is answered directly (`input_required`
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

use super::lifecycle::{META_RELATED_TASK, TASKS_EXTENSION};
use super::methods::{Notifier, call_result_json, required_str, route_error, to_json};
use super::rounds::{CallMode, Finished, Target};
use super::server::Change;
use super::{Era, SERVER_BUSY, Session};
use crate::input::{Outcome, RequestContext};
use crate::jsonrpc::{ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, notification_line};
use crate::plugin::{CallContext, EVENT_QUEUE, PluginError};
use crate::protocol::{CallToolResult, TaskSupport};
use crate::router::RouteError;
use crate::tasks::{Missing, QuotaKey, Task, TaskDesign, TaskError, TaskOwner, TaskStatus};

/// How long the first run of a call that may become a 2026-07-28 task runs before the call is
/// turned into a task.
pub const TASK_AFTER: Duration = Duration::from_millis(250);
/// Items per page of `tasks/list`.
const TASKS_PAGE: usize = 100;

/// Whether the client declared the tasks extension on this 2026-07-28 request.
pub(super) fn declares_extension(context: &RequestContext) -> bool {
    context.client_capabilities.get("extensions").and_then(|e| e.get(TASKS_EXTENSION)).is_some()
}

/// -32021 naming the tasks extension as the capability missing.
pub(super) fn extension_missing() -> ErrorObject {
    ErrorObject::new(super::rounds::MISSING_REQUIRED_CLIENT_CAPABILITY, format!("this needs the client capability `extensions.{TASKS_EXTENSION}`"))
        .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

impl Session {
    /// How a `tools/call` of `tool_support` is served, or the error that refuses it.
    pub(super) fn call_mode(
        &self,
        params: Option<&Map<String, Value>>,
        era: Era,
        context: &RequestContext,
        support: Option<TaskSupport>,
    ) -> Result<CallMode, ErrorObject> {
        let support = support.unwrap_or(TaskSupport::Forbidden);
        match era {
            Era::Legacy { version } if version.has_experimental_tasks() => {
                let task = params.and_then(|p| p.get("task"));
                match (task, support) {
                    (None | Some(Value::Null), TaskSupport::Required) => {
                        Err(ErrorObject::new(METHOD_NOT_FOUND, "this tool runs only as a task: call it with `task`"))
                    }
                    (None | Some(Value::Null), _) => Ok(CallMode::Direct),
                    (Some(_), TaskSupport::Forbidden) => Err(ErrorObject::new(METHOD_NOT_FOUND, "this tool does not run as a task")),
                    (Some(Value::Object(task)), _) => {
                        let ttl = task.get("ttl").and_then(Value::as_u64).map(Duration::from_millis);
                        Ok(CallMode::Experimental { ttl })
                    }
                    (Some(_), _) => Err(ErrorObject::new(INVALID_PARAMS, "`task` must be an object")),
                }
            }
            Era::Legacy { .. } => Ok(CallMode::Direct),
            Era::Modern { .. } => match (declares_extension(context), support) {
                (false, TaskSupport::Required) => Err(extension_missing()),
                (false, _) | (true, TaskSupport::Forbidden) => Ok(CallMode::Direct),
                (true, support) => Ok(CallMode::Extension { required: support == TaskSupport::Required }),
            },
        }
    }

    /// The owner of tasks created by a request of `era`.
    fn task_owner(&self, era: Era, context: &RequestContext) -> TaskOwner {
        match era {
            Era::Legacy { .. } => TaskOwner::Session(self.id),
            Era::Modern { .. } => TaskOwner::Caller(context.caller.clone().unwrap_or_default()),
        }
    }

    /// The client the tasks created here count against: what the transport knows of it, or
    /// this session (a legacy session or stdio is one client).
    fn task_quota(&self) -> QuotaKey {
        self.client.clone().map_or(QuotaKey::Session(self.id), QuotaKey::Client)
    }

    /// The task `id` of `owner`, or the error that says why there is none.
    fn owned_task(&self, id: &str, owner: &TaskOwner) -> Result<Arc<Task>, ErrorObject> {
        self.server.tasks.get(id, owner).map_err(|missing| match missing {
            Missing::Unknown => ErrorObject::new(INVALID_PARAMS, format!("unknown task `{}`", shown(id))),
            Missing::Evicted => ErrorObject::new(
                INVALID_PARAMS,
                format!("task `{}` had finished and its result was evicted to make room for other tasks; run the call again", shown(id)),
            )
            .with_data(json!({"taskId": shown(id), "evicted": true})),
        })
    }

    /// A context for a task's runs: its own events (pumped to the server and, on a legacy
    /// session, to the client) and its own cancellation.
    fn task_context(self: &Arc<Self>, cx: &CallContext, context: RequestContext, params: Option<&Map<String, Value>>, era: Era) -> CallContext {
        let (events_tx, mut events) = mpsc::channel(EVENT_QUEUE);
        let run = CallContext::new(cx.request_id.clone(), Some(events_tx)).with_request(context);
        let notifier = match era {
            // Progress and logs of a 2026-07-28 task have nowhere to go: only changes count.
            Era::Modern { .. } => Notifier::new(None, Era::Modern { log_level: None }, self.legacy_log_level()),
            Era::Legacy { .. } => Notifier::new(params, era, self.legacy_log_level()),
        };
        let session = Arc::clone(self);
        let pumped = run.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                session.forward(&notifier, &pumped, event);
            }
        });
        run
    }

    /// Serves a legacy `tools/call` with `task`: the task is created and answered at once, and
    /// the call runs in the background.
    pub(super) async fn start_experimental_task(
        self: &Arc<Self>,
        target: Target,
        params: Option<&Map<String, Value>>,
        context: RequestContext,
        era: Era,
        cx: &CallContext,
        ttl: Option<Duration>,
    ) -> Result<Finished, ErrorObject> {
        let plugin = self.owner(&target).ok_or_else(|| ErrorObject::new(INVALID_PARAMS, format!("unknown tool `{}`", target.name())))?;
        let owner = self.task_owner(era, &context);
        let task = self.server.tasks.create(&plugin, owner, self.task_quota(), TaskDesign::Experimental, ttl).map_err(refused)?;
        let run = self.task_context(cx, context.clone(), params, era);
        let session = Arc::clone(self);
        let running = Arc::clone(&task);
        tokio::spawn(async move {
            let work = session.serve_in_session(&target, context, era, &run, Some(&running));
            let outcome = tokio::select! {
                outcome = work => Some(outcome),
                () = running.stop.cancelled() => None,
                () = tokio::time::sleep_until(running.expires().into()) => None,
            };
            run.cancel();
            match outcome {
                Some(outcome) => {
                    running.finish(outcome.map(|f| f.result));
                }
                None => {
                    running.cancel("the task was cancelled or its time to live ran out");
                }
            }
            session.task_changed(&running);
        });
        tracing::info!(%plugin, task = %task.id, "tool call runs as a task");
        Ok(Finished { result: json!({"task": task.to_wire(false)}), cache: None })
    }

    /// Serves a 2026-07-28 `tools/call` that may become a task.
    pub(super) async fn call_as_extension_task(
        self: &Arc<Self>,
        target: Target,
        context: RequestContext,
        era: Era,
        cx: &CallContext,
        required: bool,
    ) -> Result<Finished, ErrorObject> {
        let plugin = self.owner(&target).ok_or_else(|| ErrorObject::new(INVALID_PARAMS, format!("unknown tool `{}`", target.name())))?;
        let owner = self.task_owner(era, &context);
        let run = self.task_context(cx, context.clone(), None, era);
        let mut first = {
            let (session, target, run) = (Arc::clone(self), target.clone(), run.clone());
            tokio::spawn(async move { session.run_task_once(&target, era, &run).await })
        };
        let early = tokio::select! {
            joined = &mut first => Some(joined),
            () = tokio::time::sleep(TASK_AFTER) => None,
            () = cx.cancelled() => {
                run.cancel();
                return Err(ErrorObject::new(INTERNAL_ERROR, "the request was cancelled"));
            }
        };
        let create = || self.server.tasks.create(&plugin, owner.clone(), self.task_quota(), TaskDesign::Extension, None).map_err(refused);
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
                let (_, ran) = joined.map_err(|_| ErrorObject::new(INTERNAL_ERROR, "internal error"))??;
                match ran {
                    Ran::Outcome(Outcome::Complete(finished)) if !required => return Ok(finished),
                    Ran::Outcome(Outcome::InputRequired(asked)) if !asked.in_task => {
                        return self.answer_input_required(&target, &plugin, &context, asked);
                    }
                    // Answered directly, a failed run is the `isError` result of any direct call.
                    Ran::Fault { error, .. } if !required => return Ok(Finished { result: to_json(&CallToolResult::error(error.to_string()))?, cache: None }),
                    ran => (create()?, Pending::Ended(ran)),
                }
            }
        };
        let session = Arc::clone(self);
        let running = Arc::clone(&task);
        tokio::spawn(async move { session.run_extension_task(running, target, context, era, run, pending).await });
        tracing::info!(%plugin, task = %task.id, "tool call runs as a task");
        let mut result = task.to_wire(false);
        result["resultType"] = json!("task");
        Ok(Finished { result, cache: None })
    }

    /// A 2026-07-28 task's life: each run's outcome either ends the task or parks it until the
    /// client answers through `tasks/update`, then the plugin runs again with the answers.
    async fn run_extension_task(
        self: Arc<Self>,
        task: Arc<Task>,
        target: Target,
        mut context: RequestContext,
        era: Era,
        run: CallContext,
        mut pending: Pending,
    ) {
        self.task_changed(&task);
        let expires = tokio::time::Instant::from_std(task.expires());
        for _ in 0..super::MAX_ROUNDS {
            let outcome = match pending {
                Pending::Ended(ran) => Ok(ran),
                Pending::Running(handle) => {
                    let abort = handle.abort_handle();
                    tokio::select! {
                        joined = handle => match joined {
                            Ok(Ok((_, outcome))) => Ok(outcome),
                            Ok(Err(error)) => Err(error),
                            Err(_) => Err(ErrorObject::new(INTERNAL_ERROR, "internal error")),
                        },
                        () = task.stop.cancelled() => { run.cancel(); abort.abort(); return self.task_changed(&task) }
                        () = tokio::time::sleep_until(expires) => { run.cancel(); abort.abort(); task.cancel("the task's time to live ran out"); return self.task_changed(&task) }
                    }
                }
            };
            let asked = match outcome {
                Ok(Ran::Outcome(Outcome::Complete(finished))) => {
                    task.finish(Ok(finished.result));
                    return self.task_changed(&task);
                }
                Ok(Ran::Fault { error: PluginError::Cancelled, .. }) => {
                    task.cancel("the task's run was cancelled");
                    return self.task_changed(&task);
                }
                Ok(Ran::Fault { plugin, error }) => {
                    task.finish(Err(ErrorObject::new(INTERNAL_ERROR, format!("plugin `{plugin}` failed: {error}"))));
                    return self.task_changed(&task);
                }
                Err(error) => {
                    task.finish(Err(error));
                    return self.task_changed(&task);
                }
                Ok(Ran::Outcome(Outcome::InputRequired(asked))) => asked,
            };
            if let Err(error) = super::rounds::refuse_undeclared(&asked, &context.client_capabilities, &task.plugin) {
                task.finish(Err(error));
                return self.task_changed(&task);
            }
            task.park(asked.requests, "waiting for the client's answers");
            self.task_changed(&task);
            let answers = tokio::select! {
                answers = task.answers() => answers,
                () = tokio::time::sleep(self.server.input_timeout) => None,
                () = tokio::time::sleep_until(expires) => None,
            };
            let Some(answers) = answers else {
                task.cancel("the client did not answer in time");
                return self.task_changed(&task);
            };
            task.resume();
            self.task_changed(&task);
            context.input_responses = answers;
            context.state = asked.state;
            let (session, target, again) = (Arc::clone(&self), target.clone(), run.clone().with_request(context.clone()));
            pending = Pending::Running(tokio::spawn(async move { session.run_task_once(&target, era, &again).await }));
        }
        task.finish(Err(ErrorObject::new(INTERNAL_ERROR, format!("the plugin asked for input more than {} times", super::MAX_ROUNDS))));
        self.task_changed(&task);
    }

    /// Runs a 2026-07-28 task's tool once. Unlike `run_once`, which turns a run that failed in
    /// the host's hands into the `isError` result a direct call answers, this keeps the failure,
    /// so that the task can end `failed` with it; the tool's own results pass as they are.
    async fn run_task_once(&self, target: &Target, era: Era, cx: &CallContext) -> Result<(String, Ran), ErrorObject> {
        let Target::Tool { name, arguments } = target else {
            let (plugin, outcome) = self.run_once(target, era, cx).await?;
            return Ok((plugin, Ran::Outcome(outcome)));
        };
        let router = self.server.router();
        match router.call_tool(name, arguments, cx).await {
            Ok((plugin, Outcome::Complete(result))) => {
                Ok((plugin.to_owned(), Ran::Outcome(Outcome::Complete(Finished { result: call_result_json(result)?, cache: None }))))
            }
            Ok((plugin, Outcome::InputRequired(required))) => Ok((plugin.to_owned(), Ran::Outcome(Outcome::InputRequired(required)))),
            Err(RouteError::Plugin { plugin, error }) => match error {
                PluginError::NotFound(_) => Err(ErrorObject::new(INVALID_PARAMS, format!("unknown tool `{name}`"))),
                PluginError::InvalidInputResponse(why) => Err(ErrorObject::new(INVALID_PARAMS, why)),
                PluginError::InvalidParams(why) => Err(ErrorObject::new(INVALID_PARAMS, format!("invalid params: {why}"))),
                error => {
                    tracing::warn!(%plugin, tool = %crate::escape::Escaped(name), error = %crate::escape::Escaped(&error.to_string()), "tool call failed");
                    Ok((plugin.clone(), Ran::Fault { plugin, error }))
                }
            },
            Err(other) => Err(route_error(other, era)),
        }
    }

    /// Tells whoever follows `task` that it changed: its legacy session, or the listen requests
    /// that name it.
    pub(super) fn task_changed(&self, task: &Task) {
        match task.design {
            TaskDesign::Experimental => {
                self.out.notify(notification_line("notifications/tasks/status", task.to_wire(false)));
            }
            TaskDesign::Extension => self.server.announce(Change::Task { id: Arc::from(task.id.as_str()), detail: Arc::new(task.to_wire(true)) }),
        }
    }

    /// `tasks/get`, `tasks/list`, `tasks/cancel` and `tasks/update`: answered at once.
    pub(super) fn serve_task_method(&self, method: &str, params: Option<&Map<String, Value>>, era: Era) -> Result<Value, ErrorObject> {
        let context = self.request_context(params, era);
        let design = self.task_design(method, era, &context)?;
        let owner = self.task_owner(era, &context);
        if method == "tasks/list" {
            return self.list_tasks(params, &owner);
        }
        let id = required_str(params, "taskId")?;
        let task = self.owned_task(id, &owner)?;
        match (method, design) {
            ("tasks/get", TaskDesign::Experimental) => Ok(task.to_wire(false)),
            ("tasks/get", TaskDesign::Extension) => Ok(task.to_wire(true)),
            ("tasks/cancel", TaskDesign::Experimental) => {
                if !task.cancel("cancelled by the client") {
                    return Err(ErrorObject::new(INVALID_PARAMS, format!("task `{id}` has already ended ({})", task.status().as_str())));
                }
                self.task_changed(&task);
                Ok(task.to_wire(false))
            }
            ("tasks/cancel", TaskDesign::Extension) => {
                if task.cancel("cancelled by the client") {
                    self.task_changed(&task);
                }
                Ok(json!({}))
            }
            ("tasks/update", _) => {
                let responses = match params.and_then(|p| p.get("inputResponses")) {
                    Some(Value::Object(responses)) => responses,
                    _ => return Err(ErrorObject::new(INVALID_PARAMS, "`inputResponses` must be an object")),
                };
                if task.status() == TaskStatus::InputRequired {
                    task.answer(responses);
                }
                Ok(json!({}))
            }
            _ => Err(ErrorObject::new(METHOD_NOT_FOUND, format!("method `{method}` not found"))),
        }
    }

    /// `tasks/result` (2025-11-25): waits until the task ends, then answers what the call would
    /// have, related to the task.
    pub(super) async fn task_result(&self, params: Option<&Map<String, Value>>, era: Era, cx: &CallContext) -> Result<Finished, ErrorObject> {
        let context = self.request_context(params, era);
        self.task_design("tasks/result", era, &context)?;
        let id = required_str(params, "taskId")?;
        let task = self.owned_task(id, &self.task_owner(era, &context))?;
        tokio::select! {
            () = task.finished() => {}
            () = cx.cancelled() => return Err(ErrorObject::new(INTERNAL_ERROR, "the request was cancelled")),
        }
        let related = json!({META_RELATED_TASK: {"taskId": task.id}});
        match task.outcome() {
            Some(Ok(mut result)) => {
                if let Value::Object(object) = &mut result {
                    object.insert("_meta".into(), related);
                }
                Ok(Finished { result, cache: None })
            }
            Some(Err(error)) => Err(error.with_data(related)),
            None => Err(ErrorObject::new(INTERNAL_ERROR, format!("task `{id}` was cancelled")).with_data(related)),
        }
    }

    /// The task design a `tasks/*` method belongs to here, or the error for a method this
    /// revision (or this client) does not have.
    fn task_design(&self, method: &str, era: Era, context: &RequestContext) -> Result<TaskDesign, ErrorObject> {
        let not_found = || ErrorObject::new(METHOD_NOT_FOUND, format!("method `{method}` not found"));
        match era {
            Era::Legacy { version } if version.has_experimental_tasks() && method != "tasks/update" => Ok(TaskDesign::Experimental),
            Era::Legacy { .. } => Err(not_found()),
            Era::Modern { .. } if matches!(method, "tasks/result" | "tasks/list") => Err(not_found()),
            Era::Modern { .. } if !declares_extension(context) => Err(extension_missing()),
            Era::Modern { .. } => Ok(TaskDesign::Extension),
        }
    }

    fn list_tasks(&self, params: Option<&Map<String, Value>>, owner: &TaskOwner) -> Result<Value, ErrorObject> {
        let tasks = self.server.tasks.list(owner);
        let start = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .strip_prefix("tasks-")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= tasks.len())
                .ok_or_else(|| ErrorObject::new(INVALID_PARAMS, "invalid cursor: list again from the first page"))?,
            Some(_) => return Err(ErrorObject::new(INVALID_PARAMS, "`cursor` must be a string")),
        };
        let end = (start + TASKS_PAGE).min(tasks.len());
        let mut result = json!({"tasks": tasks[start..end].iter().map(|t| t.to_wire(false)).collect::<Vec<_>>()});
        if end < tasks.len() {
            result["nextCursor"] = json!(format!("tasks-{end}"));
        }
        Ok(result)
    }
}

/// What one run of a 2026-07-28 task's tool ended with.
enum Ran {
    /// The plugin's own outcome: a result (its own error results included) or its questions.
    Outcome(Outcome<Finished>),
    /// The run failed in the host's hands: the plugin trapped, hit its deadline or a limit,
    /// returned malformed output, reported a failure, could not run or was cancelled.
    Fault { plugin: String, error: PluginError },
}

/// A task's plugin run: still running, or already ended.
enum Pending {
    Running(tokio::task::JoinHandle<Result<(String, Ran), ErrorObject>>),
    Ended(Ran),
}

/// The error for a task the store would not create: the server is busy (the quota or limit it
/// reached is named), unless no task id could be drawn.
fn refused(error: TaskError) -> ErrorObject {
    match error {
        TaskError::NoRandom => ErrorObject::new(INTERNAL_ERROR, error.to_string()),
        busy => ErrorObject::new(SERVER_BUSY, busy.to_string()),
    }
}

fn shown(id: &str) -> String {
    id.chars().take(64).collect()
}
