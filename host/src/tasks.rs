//! Tasks: tool calls that run in the background while the client polls for them, in both task
//! designs (the experimental tasks of 2025-11-25 and the `io.modelcontextprotocol/tasks`
//! extension of 2026-07-28).
//!
//! The store holds each task's status, its outcome, the input it waits for, and who may see it:
//! the legacy session that created it, or the principal of a 2026-07-28 request (its id: on a
//! listener without tokens every caller is `anonymous`, and the unguessable id is what keeps a
//! task to whoever created it). Everything is bounded: `MAX_TASKS` held at
//! once (finished ones included, until their time to live runs out), `MAX_TASKS_PER_CLIENT`
//! per client and `MAX_UNFINISHED_PER_PLUGIN` unfinished per plugin, so neither a client nor a
//! plugin crowds out the others. The client a task counts against (its `QuotaKey`) is the legacy
//! session that created it, or for a 2026-07-28 request its authenticated principal, else what
//! the transport knows of the client (its address over HTTP). A finished task never keeps another client from creating one: when
//! the store is full, the oldest finished task of the client holding most is evicted, and its id
//! is remembered (the last `MAX_EVICTED_REMEMBERED`) so that asking for it says so. A client at
//! its own quota gives up its own oldest finished task, and is refused only when every task it
//! holds is still running. A finished task is otherwise kept until its time to live runs out,
//! then freed; an unfinished one is cancelled then.
//!
//! What a task holds for its client (its result or error, the questions it waits on and the
//! answers received) is charged to the process's memory budget. When less than a quarter of the
//! budget is left, creating a task first evicts finished tasks, the oldest of the client holding
//! most bytes first, until a quarter is free again or no finished task is left.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::budget::{Budget, Charge};
use crate::input::{InputRequest, InputResponse};
use crate::jsonrpc::ErrorObject;
use crate::replica::{IdKind, Replica};

/// Tasks held at once, finished ones included.
pub const MAX_TASKS: usize = 256;
/// Tasks one client may hold at once, finished ones included: a quarter of `MAX_TASKS`, so the
/// tasks of four busy clients fit without evicting each other's results.
pub const MAX_TASKS_PER_CLIENT: usize = 64;
/// Unfinished tasks one plugin may have at once.
pub const MAX_UNFINISHED_PER_PLUGIN: usize = 32;
/// How long a task is kept when the client names no time to live (the default `TtlBounds`).
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// The longest time to live granted; longer requests are cut to it (and the task says so).
pub const MAX_TTL: Duration = Duration::from_secs(3600);
/// Ids of tasks evicted to make room that are remembered, so that asking for one says it was
/// evicted rather than unknown; the oldest is forgotten first (about 100 KiB at most).
pub const MAX_EVICTED_REMEMBERED: usize = 1024;
/// The shortest time to live granted.
pub const MIN_TTL: Duration = Duration::from_secs(1);
/// How often clients are asked to poll, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 500;
/// Below this fraction of the memory budget left, creating a task evicts finished ones first.
pub const SHED_BELOW: f64 = 0.25;

/// Where a task is in its life. Terminal states never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// Which task design a task follows, on the wire and in its statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskDesign {
    /// 2025-11-25: nested `CreateTaskResult`, `ttl`/`pollInterval`, a tool error is `failed`.
    Experimental,
    /// 2026-07-28 extension: flat results, `ttlMs`/`pollIntervalMs`, detailed `tasks/get`, a
    /// tool error is `completed` (only a JSON-RPC error is `failed`).
    Extension,
}

/// Who may see and steer a task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskOwner {
    /// The legacy session that created it.
    Session(u64),
    /// The principal of a 2026-07-28 request, by its id.
    Caller(String),
}

/// The client a task counts against, for `MAX_TASKS_PER_CLIENT`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QuotaKey {
    /// A session that is one client (a legacy session, stdio).
    Session(u64),
    /// What the transport knows of the client of a request without a session (its address),
    /// when the request authenticated nobody.
    Client(Arc<str>),
    /// The authenticated principal of a request without a session (its id), wherever it calls from.
    Principal(Arc<str>),
}

/// Why a task was not created. All but `NoRandom` say the server is busy: the same call may
/// succeed later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("the server holds {MAX_TASKS} tasks and every one of them is still running; try again once some have finished")]
    Full,
    #[error("this client already has {MAX_TASKS_PER_CLIENT} tasks running, its quota; try again once some have finished, or cancel some")]
    ClientFull,
    #[error("plugin `{0}` already has {MAX_UNFINISHED_PER_PLUGIN} unfinished tasks; try again once some have finished")]
    PluginFull(String),
    #[error("no random source for a task id")]
    NoRandom,
}

#[derive(Debug)]
struct TaskState {
    status: TaskStatus,
    message: Option<String>,
    updated: SystemTime,
    /// When it last changed, in the order of the process's task changes (a finished task's is
    /// when it finished: the oldest finished is evicted first).
    changed_at: u64,
    outcome: Option<Result<Value, ErrorObject>>,
    /// Input requests not answered yet (2026-07-28 tasks park on these).
    outstanding: Vec<InputRequest>,
    /// Answers received for the current round.
    answered: Vec<InputResponse>,
    /// The budget charge for the outcome, the outstanding requests and the answers.
    charge: Charge,
}

impl TaskState {
    /// Charges what the task holds now (whatever is left: it is the product of admitted work,
    /// and the store sheds finished tasks when the budget runs low).
    fn recharge(&mut self, budget: &Arc<Budget>) {
        let outcome = match &self.outcome {
            Some(Ok(result)) => json_bytes(result),
            Some(Err(error)) => error.message.len() + error.data.as_ref().map_or(0, json_bytes),
            None => 0,
        };
        let outstanding: usize = self.outstanding.iter().map(|r| r.key.len() + json_bytes_of_map(&r.params)).sum();
        let answered: usize = self.answered.iter().map(|r| r.key.len() + json_bytes(&r.result)).sum();
        self.charge = budget.force(outcome + outstanding + answered);
    }
}

/// The length of `value` as JSON, without writing it anywhere.
fn json_bytes(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

fn json_bytes_of_map(map: &Map<String, Value>) -> usize {
    map.iter().map(|(k, v)| k.len() + 4 + json_bytes(v)).sum::<usize>() + 2
}

/// One task.
#[derive(Debug)]
pub struct Task {
    pub id: String,
    pub plugin: String,
    pub owner: TaskOwner,
    /// The client it counts against.
    quota: QuotaKey,
    pub design: TaskDesign,
    created: SystemTime,
    ttl: Duration,
    expires: Instant,
    /// Cancelled when the task is cancelled or expires: its plugin run sees it.
    pub stop: CancellationToken,
    state: Mutex<TaskState>,
    changed: watch::Sender<u64>,
    budget: Arc<Budget>,
}

impl Task {
    fn state(&self) -> std::sync::MutexGuard<'_, TaskState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The status now.
    pub fn status(&self) -> TaskStatus {
        self.state().status
    }

    /// How long the task is kept, from its creation.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// When the task's time to live runs out.
    pub fn expires(&self) -> Instant {
        self.expires
    }

    fn update(&self, change: impl FnOnce(&mut TaskState)) -> bool {
        {
            let mut state = self.state();
            if state.status.is_terminal() {
                return false;
            }
            change(&mut state);
            state.recharge(&self.budget);
            state.updated = SystemTime::now();
            state.changed_at = next_change();
        }
        self.changed.send_modify(|n| *n += 1);
        true
    }

    /// Back to work (after its input arrived). False once the task is over.
    pub fn resume(&self) -> bool {
        self.update(|s| {
            s.status = TaskStatus::Working;
            s.message = None;
            s.outstanding.clear();
        })
    }

    /// Waits for the client: `requests` are outstanding. False once the task is over.
    pub fn park(&self, requests: Vec<InputRequest>, message: &str) -> bool {
        self.update(|s| {
            s.status = TaskStatus::InputRequired;
            s.message = Some(message.to_owned());
            s.outstanding = requests;
            s.answered.clear();
        })
    }

    /// Ends the task with its outcome: `failed` for an error (its message is the status
    /// message), and in the experimental design also for a tool result with `isError`;
    /// `completed` otherwise.
    pub fn finish(&self, outcome: Result<Value, ErrorObject>) -> bool {
        let failed = match &outcome {
            Err(_) => true,
            Ok(result) => self.design == TaskDesign::Experimental && result.get("isError") == Some(&Value::Bool(true)),
        };
        let message = outcome.as_ref().err().map(|e| e.message.clone());
        self.update(|s| {
            s.status = if failed { TaskStatus::Failed } else { TaskStatus::Completed };
            s.message = message;
            s.outstanding.clear();
            s.outcome = Some(outcome);
        })
    }

    /// Cancels the task; false when it was already over (it then stays as it was).
    pub fn cancel(&self, message: &str) -> bool {
        let cancelled = self.update(|s| {
            s.status = TaskStatus::Cancelled;
            s.message = Some(message.to_owned());
            s.outstanding.clear();
        });
        self.stop.cancel();
        cancelled
    }

    /// Takes answers for outstanding requests; others are ignored. Returns how many requests are
    /// still outstanding (0 wakes the task).
    pub fn answer(&self, responses: &Map<String, Value>) -> usize {
        let left = {
            let mut state = self.state();
            if state.status != TaskStatus::InputRequired {
                return state.outstanding.len();
            }
            let outstanding = std::mem::take(&mut state.outstanding);
            let mut left = Vec::new();
            for request in outstanding {
                match responses.get(&request.key) {
                    Some(result) => state.answered.push(InputResponse { key: request.key, method: request.method, result: result.clone() }),
                    None => left.push(request),
                }
            }
            state.outstanding = left;
            state.recharge(&self.budget);
            state.updated = SystemTime::now();
            state.outstanding.len()
        };
        self.changed.send_modify(|n| *n += 1);
        left
    }

    /// Waits until every outstanding request is answered, then hands the answers over; `None`
    /// when the task ends (cancelled or expired) first.
    pub async fn answers(&self) -> Option<Vec<InputResponse>> {
        let mut changed = self.changed.subscribe();
        loop {
            {
                let mut state = self.state();
                if state.status.is_terminal() {
                    return None;
                }
                if state.status == TaskStatus::InputRequired && state.outstanding.is_empty() {
                    let answers = std::mem::take(&mut state.answered);
                    state.recharge(&self.budget);
                    return Some(answers);
                }
            }
            if changed.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Waits until the task is over.
    pub async fn finished(&self) {
        let mut changed = self.changed.subscribe();
        while !self.status().is_terminal() {
            if changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// Bytes of the memory budget the task holds now.
    pub fn charged(&self) -> usize {
        self.state().charge.bytes()
    }

    /// What the task ended with: its result or error; `None` while it runs or when cancelled.
    pub fn outcome(&self) -> Option<Result<Value, ErrorObject>> {
        self.state().outcome.clone()
    }

    /// The task as its design puts it on the wire: `detailed` adds what the 2026-07-28
    /// `tasks/get` carries (the outstanding input requests, the result or the error).
    pub fn to_wire(&self, detailed: bool) -> Value {
        let state = self.state();
        let mut task = json!({
            "taskId": self.id,
            "status": state.status.as_str(),
            "createdAt": rfc3339(self.created),
            "lastUpdatedAt": rfc3339(state.updated),
        });
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        match self.design {
            TaskDesign::Experimental => {
                task["ttl"] = json!(ttl);
                task["pollInterval"] = json!(POLL_INTERVAL_MS);
            }
            TaskDesign::Extension => {
                task["ttlMs"] = json!(ttl);
                task["pollIntervalMs"] = json!(POLL_INTERVAL_MS);
            }
        }
        if let Some(message) = &state.message {
            task["statusMessage"] = json!(message);
        }
        if detailed {
            match (state.status, &state.outcome) {
                (TaskStatus::InputRequired, _) => {
                    let requests: Map<String, Value> = state.outstanding.iter().map(|r| (r.key.clone(), r.to_wire())).collect();
                    task["inputRequests"] = Value::Object(requests);
                }
                (TaskStatus::Completed, Some(Ok(result))) => task["result"] = result.clone(),
                (TaskStatus::Failed, Some(Err(error))) => task["error"] = error.to_value(),
                _ => {}
            }
        }
        task
    }
}

/// The next number in the order of task changes.
fn next_change() -> u64 {
    static CHANGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    CHANGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn rfc3339(at: SystemTime) -> String {
    time::OffsetDateTime::from(at).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// Why a task id leads to no task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Never created, expired, another owner's, or evicted too long ago to be remembered.
    Unknown,
    /// The task had finished and was evicted to make room for others.
    Evicted,
}

/// The times to live a task may be given: `default` when the client names none, and any other
/// cut to `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlBounds {
    pub min: Duration,
    pub default: Duration,
    pub max: Duration,
}

impl Default for TtlBounds {
    fn default() -> TtlBounds {
        TtlBounds { min: MIN_TTL, default: DEFAULT_TTL, max: MAX_TTL }
    }
}

/// Every task of the process.
#[derive(Debug)]
pub struct TaskStore {
    held: Mutex<Held>,
    budget: Arc<Budget>,
    ttl: TtlBounds,
    /// Mints the task ids: each names this replica and carries its seal.
    replica: Arc<Replica>,
}

impl Default for TaskStore {
    fn default() -> Self {
        TaskStore::with_budget(Budget::unlimited())
    }
}

#[derive(Debug, Default)]
struct Held {
    tasks: HashMap<String, Arc<Task>>,
    /// Ids (with their owners) of the last `MAX_EVICTED_REMEMBERED` tasks evicted, oldest first.
    evicted: VecDeque<(String, TaskOwner)>,
}

impl TaskStore {
    /// A store whose tasks charge what they hold to `budget`.
    pub fn with_budget(budget: Arc<Budget>) -> TaskStore {
        TaskStore::with_limits(budget, TtlBounds::default())
    }

    /// A store whose tasks charge what they hold to `budget` and live within `ttl`.
    pub fn with_limits(budget: Arc<Budget>, ttl: TtlBounds) -> TaskStore {
        TaskStore::on_replica(budget, ttl, Arc::new(Replica::solo()))
    }

    /// A store of `replica`, whose ids it mints.
    pub fn on_replica(budget: Arc<Budget>, ttl: TtlBounds, replica: Arc<Replica>) -> TaskStore {
        TaskStore { held: Mutex::default(), budget, ttl, replica }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A task of `plugin` for `owner`, counted against `quota`, kept for `ttl` (cut to the
    /// allowed range). Expired tasks are freed first, and unfinished ones among them cancelled;
    /// then finished tasks are evicted as the limits need (see the module's description).
    pub fn create(&self, plugin: &str, owner: TaskOwner, quota: QuotaKey, design: TaskDesign, ttl: Option<Duration>) -> Result<Arc<Task>, TaskError> {
        let ttl = ttl.unwrap_or(self.ttl.default).clamp(self.ttl.min, self.ttl.max);
        let id = self.replica.mint(IdKind::Task);
        self.insert(id, plugin, owner, quota, design, SystemTime::now(), ttl)
    }

    /// Takes in a 2026-07-28 task another replica created, whose next round this replica runs
    /// (it claimed it in the shared store): `working`, created at `created`, kept for `ttl`
    /// from then. Held to the same bounds as a task created here.
    pub fn adopt(&self, id: &str, plugin: &str, owner: TaskOwner, quota: QuotaKey, created: SystemTime, ttl: Duration) -> Result<Arc<Task>, TaskError> {
        self.insert(id.to_owned(), plugin, owner, quota, TaskDesign::Extension, created, ttl)
    }

    #[allow(clippy::too_many_arguments, reason = "one constructor behind `create` and `adopt`")]
    fn insert(
        &self,
        id: String,
        plugin: &str,
        owner: TaskOwner,
        quota: QuotaKey,
        design: TaskDesign,
        created: SystemTime,
        ttl: Duration,
    ) -> Result<Arc<Task>, TaskError> {
        let mut held = self.held();
        sweep(&mut held.tasks);
        let unfinished = held.tasks.values().filter(|t| t.plugin == plugin && !t.status().is_terminal()).count();
        if unfinished >= MAX_UNFINISHED_PER_PLUGIN {
            return Err(TaskError::PluginFull(plugin.to_owned()));
        }
        held.shed(&self.budget);
        held.make_room(&quota)?;
        let now = SystemTime::now();
        let left = (created + ttl).duration_since(now).unwrap_or_default();
        let task = Arc::new(Task {
            id: id.clone(),
            plugin: plugin.to_owned(),
            owner,
            quota,
            design,
            created,
            ttl,
            expires: Instant::now() + left,
            stop: CancellationToken::new(),
            state: Mutex::new(TaskState {
                status: TaskStatus::Working,
                message: None,
                updated: now,
                changed_at: next_change(),
                outcome: None,
                outstanding: Vec::new(),
                answered: Vec::new(),
                charge: self.budget.force(0),
            }),
            changed: watch::channel(0).0,
            budget: Arc::clone(&self.budget),
        });
        held.tasks.insert(id, Arc::clone(&task));
        Ok(task)
    }

    /// The task with this id, if `owner` may see it and it has not expired; or whether it was
    /// evicted.
    pub fn get(&self, id: &str, owner: &TaskOwner) -> Result<Arc<Task>, Missing> {
        let mut held = self.held();
        sweep(&mut held.tasks);
        if let Some(task) = held.tasks.get(id).filter(|t| &t.owner == owner) {
            return Ok(Arc::clone(task));
        }
        if held.evicted.iter().any(|(evicted, of)| evicted == id && of == owner) {
            return Err(Missing::Evicted);
        }
        Err(Missing::Unknown)
    }

    /// The task with this id, whoever owns it (a cancellation another replica received).
    pub fn find(&self, id: &str) -> Option<Arc<Task>> {
        self.held().tasks.get(id).cloned()
    }

    /// Forgets task `id` (the shared store holds it from now on).
    pub fn forget(&self, id: &str) {
        self.held().tasks.remove(id);
    }

    /// Every task `owner` may see, oldest first.
    pub fn list(&self, owner: &TaskOwner) -> Vec<Arc<Task>> {
        let mut held = self.held();
        sweep(&mut held.tasks);
        let mut owned: Vec<Arc<Task>> = held.tasks.values().filter(|t| &t.owner == owner).cloned().collect();
        owned.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        owned
    }

    /// Cancels and forgets every task of `owner` (a legacy session that ended).
    pub fn drop_owner(&self, owner: &TaskOwner) {
        let mut held = self.held();
        held.tasks.retain(|_, task| {
            if &task.owner != owner {
                return true;
            }
            task.cancel("the session that created the task ended");
            false
        });
        held.evicted.retain(|(_, of)| of != owner);
    }

    /// Tasks held now, by status.
    pub fn by_status(&self) -> [(TaskStatus, usize); 5] {
        let mut counts = [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled].map(|s| (s, 0));
        for task in self.held().tasks.values() {
            let status = task.status();
            if let Some(count) = counts.iter_mut().find(|(s, _)| *s == status) {
                count.1 += 1;
            }
        }
        counts
    }

    /// Tasks held now.
    pub fn len(&self) -> usize {
        self.held().tasks.len()
    }

    /// Whether no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Held {
    /// While less than `SHED_BELOW` of `budget` is left, evicts the oldest finished task of the
    /// client whose tasks hold the most bytes.
    fn shed(&mut self, budget: &Budget) {
        while budget.is_low(SHED_BELOW) {
            let mut bytes: HashMap<&QuotaKey, usize> = HashMap::new();
            for task in self.tasks.values() {
                *bytes.entry(&task.quota).or_default() += task.charged();
            }
            let mut clients: Vec<(&QuotaKey, usize)> = bytes.into_iter().collect();
            clients.sort_by_key(|(_, held)| std::cmp::Reverse(*held));
            let oldest = clients.iter().find_map(|(client, _)| oldest_finished(self.tasks.values().filter(|t| &t.quota == *client)));
            let Some(oldest) = oldest else { return };
            tracing::warn!(used = budget.used(), limit = budget.limit(), "the memory budget is low: a finished task's result is let go");
            self.evict(&oldest);
        }
    }

    /// Room for one more task of `quota`: a client at its quota gives up its own oldest
    /// finished task, and a full store the oldest finished task of the client holding most.
    fn make_room(&mut self, quota: &QuotaKey) -> Result<(), TaskError> {
        let own = self.tasks.values().filter(|t| &t.quota == quota).count();
        if own >= MAX_TASKS_PER_CLIENT {
            let oldest = oldest_finished(self.tasks.values().filter(|t| &t.quota == quota)).ok_or(TaskError::ClientFull)?;
            self.evict(&oldest);
        }
        if self.tasks.len() >= MAX_TASKS {
            let mut counts: HashMap<&QuotaKey, usize> = HashMap::new();
            for task in self.tasks.values() {
                *counts.entry(&task.quota).or_default() += 1;
            }
            let mut clients: Vec<(&QuotaKey, usize)> = counts.into_iter().collect();
            clients.sort_by_key(|(_, held)| std::cmp::Reverse(*held));
            // The heaviest client with a finished task gives one up.
            let oldest = clients.iter().find_map(|(client, _)| oldest_finished(self.tasks.values().filter(|t| &t.quota == *client))).ok_or(TaskError::Full)?;
            self.evict(&oldest);
        }
        Ok(())
    }

    fn evict(&mut self, id: &str) {
        let Some(task) = self.tasks.remove(id) else { return };
        tracing::info!(plugin = %task.plugin, task = %task.id, "a finished task was evicted to make room for another");
        if self.evicted.len() >= MAX_EVICTED_REMEMBERED {
            self.evicted.pop_front();
        }
        self.evicted.push_back((task.id.clone(), task.owner.clone()));
    }
}

/// The id of the task among `tasks` that finished first, if any did.
fn oldest_finished<'a>(tasks: impl Iterator<Item = &'a Arc<Task>>) -> Option<String> {
    tasks
        .filter_map(|t| {
            let state = t.state();
            state.status.is_terminal().then(|| (state.changed_at, t.id.clone()))
        })
        .min()
        .map(|(_, id)| id)
}

/// Frees expired tasks, cancelling the unfinished ones.
fn sweep(tasks: &mut HashMap<String, Arc<Task>>) {
    let now = Instant::now();
    tasks.retain(|_, task| {
        if task.expires > now {
            return true;
        }
        task.cancel("the task's time to live ran out");
        false
    });
}

#[cfg(test)]
mod tests;
