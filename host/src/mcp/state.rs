//! `ServerState`: what every session of one `paddock` process shares: the router (swapped whole
//! when a plugin's lists change), the feed of changes every session listens to, the key that
//! seals 2026-07-28 request states, the tasks, the memory budget, and the time limits of
//! requests that wait (`ServerLimits`).
//!
//! A new router also comes from outside (a live plugins folder): `swap` plans it from the one
//! serving, under the same lock, and clients hear of each list whose exposed definitions changed.
//!
//! A plugin announces a list change from inside one of its calls. The server then reads that
//! plugin's lists again in a fresh instance, under the load-time validation, plans every plugin's
//! names again, and swaps the router in one step; requests already running finish on the router
//! they started with. Announcements are coalesced per plugin (one reload running and one pending
//! at most, whatever a plugin sends), reloads of different plugins do not wait for each other,
//! and a change that would leave any plugin out is refused with the plugin named.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::broadcast;

use crate::escape::Escaped;
use crate::input::StateKey;
use crate::plugin::ListKind;
use crate::policy::{DriftPolicy, DriftSource};
use crate::router::Router;
use crate::router::definitions::Definitions;

/// How long a legacy session waits for its client to answer one round of input requests
/// (a person may be filling in a form). The plugin's own deadline does not run meanwhile.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the first run of a call that may become a 2026-07-28 task runs before the call is
/// turned into a task (the default of `ServerLimits::task_after`).
pub const TASK_AFTER: Duration = Duration::from_millis(250);

/// Changes the feed holds for its slowest session. A session that falls further behind is told
/// that everything it follows may have changed (see `Change` consumers), never blocks the feed.
const CHANGE_FEED: usize = 256;

/// Something clients may hear about, once the server has taken it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A list changed; the router already serves the new one.
    List(ListKind),
    /// A resource's contents changed (announced by the plugin serving it).
    Resource(Arc<str>),
    /// A 2026-07-28 task changed; `detail` is the task as `tasks/get` shows it; `owner` the id of
    /// the principal it belongs to (only that principal hears of it).
    Task { id: Arc<str>, owner: Arc<str>, detail: Arc<serde_json::Value> },
    /// Changes published by other replicas may have been missed (the store's feed was cut off):
    /// every follower is told that everything it follows may have changed.
    Resync,
}

/// Reloads of one plugin: the kinds announced since the last reload started, and whether a
/// reload task is running for it.
#[derive(Debug, Default)]
struct Reload {
    kinds: BTreeSet<ListKind>,
    running: bool,
}

/// The time limits of requests that wait on a client or on a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// How long a legacy session waits for its client to answer one round of input requests, and
    /// a 2026-07-28 task for `tasks/update`.
    pub input_timeout: Duration,
    /// How long a sealed 2026-07-28 request state may be answered.
    pub state_ttl: Duration,
    /// How long the first run of a call that may become a 2026-07-28 task runs before the call
    /// becomes a task.
    pub task_after: Duration,
    /// The times to live a task may be given.
    pub task_ttl: crate::tasks::TtlBounds,
}

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits {
            input_timeout: DEFAULT_INPUT_TIMEOUT,
            state_ttl: crate::input::seal::STATE_TTL,
            task_after: TASK_AFTER,
            task_ttl: crate::tasks::TtlBounds::default(),
        }
    }
}

/// What the server holds about its callers: who may use what, how often, and the audit trail.
#[derive(Debug)]
pub struct CallerPolicy {
    pub access: crate::policy::AccessRules,
    pub rates: crate::rate_limits::RateLimits,
    pub audit: crate::audit::Audit,
}

impl Default for CallerPolicy {
    /// Everything allowed to everyone, no limits, no audit trail.
    fn default() -> CallerPolicy {
        CallerPolicy { access: crate::policy::AccessRules::open(), rates: crate::rate_limits::RateLimits::none(), audit: crate::audit::Audit::off() }
    }
}

/// Shared by every session of the process.
#[derive(Debug)]
pub struct ServerState {
    router: RwLock<Arc<Router>>,
    /// Held while a new router is planned and swapped in, so two reloads never lose each other's change.
    swapping: Mutex<()>,
    reloads: Mutex<HashMap<String, Reload>>,
    changes: broadcast::Sender<Change>,
    pub(crate) tasks: crate::tasks::TaskStore,
    pub(crate) state_key: StateKey,
    pub(crate) limits: ServerLimits,
    /// The process's memory budget for what clients make the host hold.
    pub(crate) budget: Arc<crate::budget::Budget>,
    pub(crate) callers: CallerPolicy,
    /// This replica: its task ids name it, and it runs the task rounds it claims.
    pub(crate) replica: Arc<crate::replica::Replica>,
    /// The store replicas share (`--store`), if any: 2026-07-28 tasks, the feed of changes,
    /// rate limits and approvals.
    pub(crate) store: Option<Arc<crate::store::Store>>,
    /// Told when a replica shutting down handed a task over, or the feed was cut off (one may
    /// have been missed): the orphan claimer looks for tasks to take.
    pub(crate) orphaned: tokio::sync::Notify,
    /// Cancelled when the shutdown grace ends: shared tasks still running are handed over.
    pub(crate) handing_over: tokio_util::sync::CancellationToken,
    /// The runs of 2026-07-28 tasks this replica runs (hand-over waits for them).
    pub(crate) runs: tokio_util::task::TaskTracker,
    /// 2026-07-28 approvals already answered.
    pub(crate) approvals: super::spent::Spent,
    /// Files of the plugins folder that are not served as they are on disk, and why.
    problems: RwLock<Arc<[ServingProblem]>>,
    /// How a change of each plugin's definitions is taken, announced lists included.
    drift: RwLock<Arc<crate::policy::DriftPolicies>>,
}

/// A file the server does not serve as it is on disk (it failed to load, or its update was held
/// or refused), and why; what it served before keeps serving.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServingProblem {
    pub path: String,
    pub reason: String,
}

impl ServerState {
    /// The process's memory budget for what clients make the host hold.
    pub fn budget(&self) -> &Arc<crate::budget::Budget> {
        &self.budget
    }

    /// The task store (what metrics read of it).
    pub fn tasks(&self) -> &crate::tasks::TaskStore {
        &self.tasks
    }

    /// The state of a server for `router`, sealing request states with `state_key`.
    pub fn new(router: Arc<Router>, state_key: StateKey) -> Arc<ServerState> {
        ServerState::with_limits(router, state_key, ServerLimits::default())
    }

    /// With its own time limits.
    pub fn with_limits(router: Arc<Router>, state_key: StateKey, limits: ServerLimits) -> Arc<ServerState> {
        ServerState::build(router, state_key, limits, crate::budget::Budget::unlimited(), CallerPolicy::default())
    }

    /// A server whose sessions charge what they hold for clients to `budget`.
    pub fn with_budget(router: Arc<Router>, state_key: StateKey, budget: Arc<crate::budget::Budget>) -> Arc<ServerState> {
        ServerState::build(router, state_key, ServerLimits::default(), budget, CallerPolicy::default())
    }

    /// A server whose sessions charge `budget` and whose requests are served under `callers`.
    pub fn with_callers(router: Arc<Router>, state_key: StateKey, budget: Arc<crate::budget::Budget>, callers: CallerPolicy) -> Arc<ServerState> {
        ServerState::build(router, state_key, ServerLimits::default(), budget, callers)
    }

    /// With its own time limits, charging `budget`, serving requests under `callers`.
    pub fn configured(
        router: Arc<Router>,
        state_key: StateKey,
        limits: ServerLimits,
        budget: Arc<crate::budget::Budget>,
        callers: CallerPolicy,
    ) -> Arc<ServerState> {
        ServerState::build(router, state_key, limits, budget, callers)
    }

    /// The store replicas share, if there is one.
    pub fn store(&self) -> Option<&Arc<crate::store::Store>> {
        self.store.as_ref()
    }

    /// The policy requests are served under.
    pub fn callers(&self) -> &CallerPolicy {
        &self.callers
    }

    fn build(router: Arc<Router>, state_key: StateKey, limits: ServerLimits, budget: Arc<crate::budget::Budget>, callers: CallerPolicy) -> Arc<ServerState> {
        ServerState::for_replica(router, state_key, limits, budget, callers, Arc::new(crate::replica::Replica::solo()), None)
    }

    /// A server of `replica` (its task ids name it), charging `budget`, serving requests under
    /// `callers`, sharing what replicas share through `store` when there is one.
    #[allow(clippy::too_many_arguments, reason = "the one constructor the command line uses: every part is its own")]
    pub fn for_replica(
        router: Arc<Router>,
        state_key: StateKey,
        limits: ServerLimits,
        budget: Arc<crate::budget::Budget>,
        callers: CallerPolicy,
        replica: Arc<crate::replica::Replica>,
        store: Option<Arc<crate::store::Store>>,
    ) -> Arc<ServerState> {
        Arc::new(ServerState {
            router: RwLock::new(router),
            swapping: Mutex::new(()),
            reloads: Mutex::new(HashMap::new()),
            changes: broadcast::channel(CHANGE_FEED).0,
            tasks: crate::tasks::TaskStore::on_replica(Arc::clone(&budget), limits.task_ttl, Arc::clone(&replica)),
            state_key,
            limits,
            budget,
            callers,
            replica,
            store,
            orphaned: tokio::sync::Notify::new(),
            handing_over: tokio_util::sync::CancellationToken::new(),
            runs: tokio_util::task::TaskTracker::new(),
            approvals: super::spent::Spent::default(),
            problems: RwLock::new(Arc::from(Vec::new())),
            drift: RwLock::new(Arc::default()),
        })
    }

    /// Swaps in the router `plan` makes from the one serving, as the next generation, and tells
    /// clients of every list whose exposed definitions changed. `plan` runs under the swap lock,
    /// so a change made meanwhile (a plugin's announced lists) is never lost; `None` keeps the
    /// router as it is. Requests already running finish on the router they started with.
    /// Returns the generation now serving.
    pub fn swap(&self, plan: impl FnOnce(&Arc<Router>) -> Option<Router>) -> u64 {
        let (changed, generation) = {
            let _swapping = self.swapping.lock().unwrap_or_else(|e| e.into_inner());
            let current = self.router();
            let Some(next) = plan(&current) else { return current.generation() };
            let next = next.succeeding(&current);
            let changed: Vec<ListKind> = ListKind::ALL.into_iter().filter(|kind| differs(&current, &next, *kind)).collect();
            let generation = next.generation();
            *self.router.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
            (changed, generation)
        };
        tracing::info!(generation, lists = ?changed, "serving a new generation of the plugins");
        for kind in changed {
            let _ = self.changes.send(Change::List(kind));
        }
        generation
    }

    /// Records the files not served as they are on disk (`/readyz` shows them).
    pub fn set_problems(&self, problems: Vec<ServingProblem>) {
        *self.problems.write().unwrap_or_else(|e| e.into_inner()) = Arc::from(problems);
    }

    /// Sets how a change of each plugin's definitions is taken (the configuration's `drift`):
    /// the policy a plugin's announced list change is held to.
    pub fn set_drift_policies(&self, policies: crate::policy::DriftPolicies) {
        let mut drift = self.drift.write().unwrap_or_else(|e| e.into_inner());
        if **drift != policies {
            *drift = Arc::new(policies);
        }
    }

    /// How a change of plugin `id`'s definitions is taken.
    fn drift_policy(&self, id: &str) -> DriftPolicy {
        self.drift.read().unwrap_or_else(|e| e.into_inner()).of(id)
    }

    /// The files not served as they are on disk, and why.
    pub fn problems(&self) -> Arc<[ServingProblem]> {
        Arc::clone(&self.problems.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The router in use now. A request keeps the one it started with.
    pub fn router(&self) -> Arc<Router> {
        Arc::clone(&self.router.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The arguments of tool `name` that 2026-07-28 clients also send as headers (what a
    /// transport checks a request's `Mcp-Param-*` headers against).
    pub fn header_params(&self, name: &str) -> Option<Arc<[crate::router::HeaderParam]>> {
        self.router.read().unwrap_or_else(|e| e.into_inner()).header_params(name)
    }

    /// Follows the changes taken in from now on.
    pub(crate) fn changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Follows the store's feed, when there is a store: what other replicas publish reaches this
    /// replica's followers (a list change is read again from the plugin here first), a task
    /// cancelled elsewhere stops its run here, and a feed that was cut off tells every follower
    /// that everything it follows may have changed.
    pub fn follow_store(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let store = self.store.as_ref()?;
        let server = Arc::downgrade(self);
        Some(store.follow(move |event| {
            let Some(server) = server.upgrade() else { return };
            match event {
                crate::store::FeedEvent::Change(payload) => match super::cluster::heard(&payload, server.replica.id().as_str()) {
                    Some(super::cluster::Heard::List { plugin, kind }) => server.list_changed_here(&plugin, kind),
                    Some(super::cluster::Heard::Resource(uri)) => server.announce(Change::Resource(Arc::from(uri))),
                    Some(super::cluster::Heard::Task { id, owner, detail }) => {
                        server.announce(Change::Task { id: Arc::from(id), owner: Arc::from(owner), detail: Arc::new(detail) });
                    }
                    None => {}
                },
                crate::store::FeedEvent::Cancel(id) => {
                    if let Some(task) = server.tasks.find(&id)
                        && task.cancel("cancelled by the client")
                    {
                        tracing::info!(task = %crate::escape::Escaped(&id), "a task cancelled through another replica is stopped here");
                    }
                }
                crate::store::FeedEvent::Resync => {
                    server.announce(Change::Resync);
                    server.orphaned.notify_one();
                }
                crate::store::FeedEvent::Orphan(_) => server.orphaned.notify_one(),
            }
        }))
    }

    /// Waits until the shared 2026-07-28 tasks running here have ended or parked (shutdown: they
    /// get the grace period); at once without a store.
    pub async fn finish_shared_runs(&self) {
        if self.store.is_none() {
            return;
        }
        self.runs.close();
        self.runs.wait().await;
    }

    /// At the end of the shutdown grace: every shared 2026-07-28 task still running here is
    /// handed over to the other replicas through the store (its round runs again there), within
    /// `within`. Without a store, nothing is done: a task lives and ends with its process.
    pub async fn hand_over_tasks(&self, within: Duration) {
        if self.store.is_none() {
            return;
        }
        self.handing_over.cancel();
        self.runs.close();
        if tokio::time::timeout(within, self.runs.wait()).await.is_err() {
            tracing::warn!("tasks still running were not all handed over in time");
        }
    }

    /// Puts a change on the feed (nobody following is fine).
    pub(crate) fn announce(&self, change: Change) {
        let _ = self.changes.send(change);
    }

    /// `plugin` announced that its `kind` list changed: its lists are read again in the
    /// background and, once served, announced to clients; other replicas are told to do the same.
    pub(crate) fn list_changed(self: &Arc<Self>, plugin: &str, kind: ListKind) {
        if self.router().catalog_of(plugin).is_none() {
            return;
        }
        super::cluster::publish_list(self.store.as_ref(), self.replica.id().as_str(), plugin, kind);
        self.list_changed_here(plugin, kind);
    }

    /// Reads `plugin`'s lists again here, as if it had announced that `kind` changed.
    pub(crate) fn list_changed_here(self: &Arc<Self>, plugin: &str, kind: ListKind) {
        if self.router().catalog_of(plugin).is_none() {
            return;
        }
        let start = {
            let mut reloads = self.reloads.lock().unwrap_or_else(|e| e.into_inner());
            let reload = reloads.entry(plugin.to_owned()).or_default();
            reload.kinds.insert(kind);
            !std::mem::replace(&mut reload.running, true)
        };
        if start {
            let server = Arc::clone(self);
            let plugin = plugin.to_owned();
            tokio::spawn(async move { server.reload_while_announced(plugin).await });
        }
    }

    /// `plugin` announced that the resource at `uri` changed. Only the plugin serving a URI may
    /// announce it: anything else is refused and recorded with the plugin named.
    pub(crate) fn resource_updated(&self, plugin: &str, uri: &str) {
        let router = self.router();
        if router.resource_owner(uri) != Some(plugin) {
            tracing::warn!(
                plugin,
                refusal = "notices",
                uri = %Escaped(uri),
                "refused: a resource-updated notice for a URI the plugin does not serve"
            );
            return;
        }
        super::cluster::publish_resource(self.store.as_ref(), self.replica.id().as_str(), uri);
        // No receiver is fine: nobody follows changes right now.
        let _ = self.changes.send(Change::Resource(Arc::from(uri)));
    }

    async fn reload_while_announced(self: Arc<Self>, plugin: String) {
        loop {
            let kinds = {
                let mut reloads = self.reloads.lock().unwrap_or_else(|e| e.into_inner());
                let Some(reload) = reloads.get_mut(&plugin) else { return };
                if reload.kinds.is_empty() {
                    reloads.remove(&plugin);
                    return;
                }
                std::mem::take(&mut reload.kinds)
            };
            self.reload(&plugin, kinds, Reread::Announced).await;
        }
    }

    /// Reads again, once each plugin can run, the lists of every plugin served from the catalog
    /// an earlier load recorded (`Folder::from_records`): lists that differ from the record are
    /// swapped in and announced, as when a plugin announces a change.
    pub fn confirm_recorded_lists(self: &Arc<Self>) {
        for entry in self.router().served().iter().filter(|e| e.plugin.served_from_record()) {
            let (server, plugin) = (Arc::clone(self), entry.plugin.id().to_owned());
            tokio::spawn(async move { server.reload(&plugin, BTreeSet::new(), Reread::Confirm).await });
        }
    }

    /// Reads `plugin`'s lists again and swaps in the router that serves them, then announces the
    /// kinds the plugin named (it may know of changes its lists do not show, such as what it
    /// serves to whom) and any other kind whose exposed list differs. A plugin replaced
    /// meanwhile (a live folder) is left alone: its lists are the new version's.
    ///
    /// Confirming a recorded catalog (`Reread::Confirm`) changes nothing when the plugin declares
    /// what its record said: the router, and so the generation, stay as they are.
    async fn reload(&self, plugin: &str, kinds: BTreeSet<ListKind>, why: Reread) {
        let Some(entry) = self.router().served().iter().find(|e| e.plugin.id() == plugin).cloned() else { return };
        let catalog = match entry.plugin.reload_catalog().await {
            Ok(catalog) => catalog,
            Err(error) => {
                tracing::warn!(
                    plugin,
                    refusal = "lists",
                    error = %Escaped(&error.to_string()),
                    "refused a list change: reading the plugin's lists again failed; the previous lists stay served"
                );
                count_refusal(plugin, "lists");
                return;
            }
        };
        let announced = {
            let _swapping = self.swapping.lock().unwrap_or_else(|e| e.into_inner());
            let current = self.router();
            if !current.served().iter().any(|e| e.plugin.id() == plugin && Arc::ptr_eq(&e.plugin, &entry.plugin)) {
                tracing::debug!(plugin, "lists read again for a version no longer served; ignored");
                return;
            }
            if why == Reread::Confirm && current.catalog_of(plugin).is_some_and(|served| format!("{served:?}") == format!("{catalog:?}")) {
                tracing::debug!(plugin, "plugin lists read again: as recorded");
                return;
            }
            let next = match current.with_catalog(plugin, catalog) {
                Ok(next) => next,
                Err(error) => {
                    tracing::warn!(plugin, refusal = "lists", error = %Escaped(&error.to_string()), "refused a list change; the previous lists stay served");
                    count_refusal(plugin, "lists");
                    return;
                }
            };
            if !self.drift_allows(plugin, &current, &next) {
                return;
            }
            let mut announced = kinds;
            announced.extend(ListKind::ALL.into_iter().filter(|kind| differs(&current, &next, *kind)));
            *self.router.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
            announced
        };
        tracing::info!(plugin, kinds = ?announced, "plugin lists read again after a change");
        for kind in announced {
            let _ = self.changes.send(Change::List(kind));
        }
    }
}

impl ServerState {
    /// Whether `plugin`'s definitions in `next` may replace those `current` serves, as its drift
    /// policy says: `allow` and `warn` take any change and log it with a readable diff; `hold`
    /// and `block` keep the lists serving when any definition changed, and log the refusal.
    /// (Accepting a held change is loading the plugin's file again, which the folder checks.)
    fn drift_allows(&self, plugin: &str, current: &Router, next: &Router) -> bool {
        let drift = Definitions::of(current, plugin).drift(&Definitions::of(next, plugin));
        if drift.is_empty() {
            return true;
        }
        let policy = self.drift_policy(plugin);
        policy.log(plugin, DriftSource::Announcement, &drift.iter().map(ToString::to_string).collect::<Vec<_>>());
        if !policy.serves() {
            count_refusal(plugin, "drift");
        }
        policy.serves()
    }
}

/// Counts a refused list change of `plugin` (`paddock_plugin_refusals_total`).
fn count_refusal(plugin: &str, kind: &'static str) {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.plugin_refusal(&Arc::from(plugin), kind);
    }
}

/// Why a plugin's lists are read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reread {
    /// The plugin announced a change.
    Announced,
    /// The lists served came from the plugin's recorded catalog.
    Confirm,
}

/// Whether the exposed `kind` list differs between two routers.
fn differs(before: &Router, after: &Router, kind: ListKind) -> bool {
    fn json<T: serde::Serialize>(items: &[T]) -> String {
        serde_json::to_string(items).unwrap_or_default()
    }
    match kind {
        ListKind::Tools => json(before.tools()) != json(after.tools()),
        ListKind::Prompts => json(before.prompts()) != json(after.prompts()),
        ListKind::Resources => json(before.resources()) != json(after.resources()) || json(before.resource_templates()) != json(after.resource_templates()),
    }
}
