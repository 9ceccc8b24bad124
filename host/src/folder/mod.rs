//! The live plugins folder: each look at the folder loads only what changed, beside what is
//! serving, and makes the next generation of the router from it.
//!
//! - A file is loaded once it has settled (nothing wrote to it for `settle`) and only if this user
//!   or root alone could have written it and its folder; a file that changed while it was being
//!   loaded is dropped and looked at again. What is loaded is exactly the content that was hashed
//!   (`runtime`), so nothing half-written is ever served: a torn file fails to load.
//! - An unchanged plugin (same stamp, same grant) keeps its loaded version, its compiled code and
//!   the catalog it is routed by. A changed one is loaded beside it; an update that fails to
//!   load, or whose names would collide with another plugin's or are not exposable, is refused
//!   and the last good version keeps serving. A file whose grant is invalid keeps its last good
//!   grant, and a main configuration file that does not parse keeps the last good configuration.
//! - A removed file leaves the next generation; its running calls finish on the one they started
//!   with (`ServerState::swap`).
//! - A failure is reported once, with the path and the reason, and stays visible (`problems`)
//!   until the file changes; it is not tried again while it stays the same.
//!
//! - `paddock.lock` (`lock`) pins files (`--locked`: a file whose SHA-256 is not the locked one
//!   is not loaded) and definitions: an update whose exposed definitions differ from the lock's
//!   (or, without a lock entry, from the version serving) is drift, taken as the plugin's
//!   `drift` policy says: allowed, warned about with a readable diff, held until accepted into
//!   the lock, or blocked. Drift is never silent.
//!
//! `watch` decides when to look: file-system events, a polling fallback, SIGHUP.

mod files;
pub mod lock;
pub mod watch;

pub use files::Untrusted;
pub use lock::{LOCK_FILE, Lock, LockError, Locked};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config::Config;
use crate::mcp::{ServerState, ServingProblem};
use crate::plugin::Plugin;
use crate::policy::{DriftPolicy, DriftSource, Grant};
use crate::router::definitions::Definitions;
use crate::router::{Prefix, Router, RouterEntry, RouterError};
use crate::runtime::{Candidate, LoadProblem, LoadedPlugin, Runtime, WasmPlugin};
use files::Stamp;

/// How long nothing may write to a plugin file before it is read: a writer copying it in
/// chunks is done with it by then, or still changing it (which restarts the wait).
pub const SETTLE: Duration = Duration::from_millis(300);

/// A plugin version serving, and what it was loaded from.
#[derive(Debug, Clone)]
struct Version {
    path: PathBuf,
    stamp: Stamp,
    /// BLAKE3 of the file's content.
    digest: [u8; 32],
    /// The grant as configured (before any cut to fit the descriptor pool).
    grant: Grant,
    plugin: Arc<WasmPlugin>,
}

/// A file that failed as it is: tried again only once it (or its grant) changes.
#[derive(Debug, Clone)]
struct Failure {
    stamp: Stamp,
    grant: Grant,
    drift: DriftPolicy,
    reason: String,
    /// Refused for what other plugins or the lock hold (a collision, drift, a digest not
    /// locked): tried again when a plugin comes or goes or the lock changes.
    soft: bool,
}

/// What the folder held at the last look.
#[derive(Debug, Default)]
struct State {
    serving: BTreeMap<String, Version>,
    failed: BTreeMap<PathBuf, Failure>,
    /// The last configuration read without errors of its own: grants come from it while the
    /// main file is broken.
    config: Option<Config>,
    /// Problems already logged, so each is logged once.
    reported: BTreeSet<String>,
    /// The last good `paddock.lock`, and the stamp of the file it was read from.
    lock: Option<Lock>,
    lock_stamp: Option<Stamp>,
}

/// What one look at the folder found.
#[derive(Debug, Default)]
pub struct Look {
    /// The router to serve, when anything served changed (the first look always makes one).
    pub router: Option<Router>,
    /// Plugins left out by the router at the first look (collisions, unexposable names).
    pub router_errors: Vec<RouterError>,
    /// Files not served as they are on disk, and why.
    pub problems: Vec<LoadProblem>,
    /// What loaded, but not as configured (descriptor budgets cut to fit).
    pub warnings: Vec<String>,
    /// Files still being written: look again after this long.
    pub again_after: Option<Duration>,
    /// The configuration in use.
    pub config: Config,
    /// Plugins loaded by this look.
    pub loaded: Vec<LoadedPlugin>,
}

/// Why the folder cannot be served at all.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("plugins folder `{}` does not exist (fix: create it and put `.wasm` plugins in it, or pass another folder)", .0.display())]
    Missing(PathBuf),
    #[error("configuration file `{}` is not read: {reason}", path.display())]
    UntrustedConfig { path: PathBuf, reason: Untrusted },
}

/// A plugins folder served live.
#[derive(Debug)]
pub struct Folder {
    runtime: Runtime,
    dir: PathBuf,
    config_file: Option<PathBuf>,
    settle: Duration,
    /// Only files whose SHA-256 the lock pins are loaded.
    locked: bool,
    /// Whether `paddock.lock` is read at all (`paddock lock` itself ignores the old one).
    use_lock: bool,
    /// Whether the first look serves plugins from their recorded catalogs (see `from_records`).
    from_records: bool,
    state: tokio::sync::Mutex<State>,
}

impl Folder {
    /// The folder `dir`, with its configuration in `config_file` (default `dir/paddock.toml`).
    pub fn new(runtime: Runtime, dir: &Path, config_file: Option<&Path>) -> Folder {
        Folder {
            runtime,
            dir: dir.to_path_buf(),
            config_file: config_file.map(Path::to_path_buf),
            settle: SETTLE,
            locked: false,
            use_lock: true,
            from_records: false,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    /// Waits `settle` (after the first look) for a file to be left alone before reading it;
    /// `SETTLE` by default.
    pub fn with_settle(mut self, settle: Duration) -> Folder {
        self.settle = settle;
        self
    }

    /// Loads only files whose SHA-256 `paddock.lock` pins (`--locked`).
    pub fn locked(mut self) -> Folder {
        self.locked = true;
        self
    }

    /// At the first look, serves each plugin whose catalog an earlier load recorded in the cache
    /// from that record, and loads its component in the background: a server answers sooner,
    /// and a call to a plugin not yet loaded waits for it. Its server must then read those
    /// plugins' lists again (`ServerState::confirm_recorded_lists`).
    pub fn from_records(mut self) -> Folder {
        self.from_records = true;
        self
    }

    /// Does not read `paddock.lock` (for writing a new one).
    pub fn ignoring_lock(mut self) -> Folder {
        self.use_lock = false;
        self
    }

    /// The lock's path.
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }

    /// The runtime the folder's plugins run in.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The plugins folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The main configuration file: given, or `paddock.toml` in the folder.
    pub fn config_file(&self) -> PathBuf {
        self.config_file.clone().unwrap_or_else(|| self.dir.join(crate::config::MAIN_FILE))
    }

    /// The first look: loads every plugin there. The configuration's own problems are in
    /// `Look::config` (a server does not start on its errors; `check` lists them).
    ///
    /// # Errors
    /// The folder does not exist.
    pub async fn first(&self) -> Result<Look, FolderError> {
        if !self.dir.is_dir() {
            return Err(FolderError::Missing(self.dir.clone()));
        }
        let config = Config::load(&self.dir, self.config_file.as_deref());
        if let Some((path, reason)) = untrusted_config(&config).into_iter().next() {
            return Err(FolderError::UntrustedConfig { path, reason });
        }
        let mut state = self.state.lock().await;
        // What is there at start is loaded at once: a file still being written fails to load
        // (a torn component does not validate) or changes while it loads, and is looked at
        // again once it settles.
        let (mut look, updates) = self.load_changes(&mut state, config, Duration::ZERO, self.from_records).await;
        let (router, errors) = plan(&mut state, None, &updates, &mut look);
        look.router = router;
        look.router_errors = errors;
        // The first look reports a router's refusals as such, not as file problems.
        look.problems
            .retain(|p| !updates.iter().any(|u| u.loaded.path == p.path && look.router_errors.iter().any(|e| named(e).contains(&u.loaded.id.as_str()))));
        state.reported = look.problems.iter().map(ToString::to_string).collect();
        Ok(look)
    }

    /// Looks at the folder again and, when anything served changed, swaps the next generation
    /// into `server`; every problem is logged once and recorded for `/readyz`.
    pub async fn refresh(&self, server: &ServerState) -> Look {
        let mut state = self.state.lock().await;
        let config = Config::load(&self.dir, self.config_file.as_deref());
        let (mut look, updates) = self.load_changes(&mut state, config, self.settle, false).await;
        server.set_drift_policies(look.config.drift_policies().clone());
        server.swap(|current| {
            let (router, errors) = plan(&mut state, Some(current), &updates, &mut look);
            look.router_errors = errors;
            router
        });
        if !updates.is_empty() {
            // Replaced versions leave artifacts behind: the cache keeps what serves and the newest.
            let serving = state.serving.values().map(|v| v.digest).collect();
            self.runtime.collect_cache(serving).await;
        }
        let fresh: Vec<String> = look.problems.iter().map(ToString::to_string).filter(|p| !state.reported.contains(p)).collect();
        for problem in &fresh {
            tracing::error!("plugin not served as it is on disk: {}", crate::escape::Escaped(problem));
        }
        state.reported = look.problems.iter().map(ToString::to_string).collect();
        server.set_problems(look.problems.iter().map(|p| ServingProblem { path: p.path.display().to_string(), reason: p.reason.clone() }).collect());
        look
    }

    /// Reads the folder: the configuration (the last good one while it has errors of its own),
    /// every file's stamp, and loads each changed file that has settled.
    async fn load_changes(&self, state: &mut State, config: Config, settle: Duration, from_records: bool) -> (Look, Vec<Update>) {
        let mut look = Look::default();
        // A configuration file another user could have written grants nothing: the last good
        // configuration stands until it is fixed.
        let untrusted = untrusted_config(&config);
        for (path, reason) in &untrusted {
            look.problems.push(LoadProblem { path: path.clone(), reason: format!("not read: {reason}; the last good configuration stands") });
        }
        let config = if !untrusted.is_empty() {
            state.config.clone().unwrap_or_else(Config::empty)
        } else if config.global_errors().next().is_some() {
            match &state.config {
                Some(good) => {
                    let errors: Vec<String> = config.global_errors().map(ToString::to_string).collect();
                    let reason = format!("the configuration is invalid, so the last good one is kept: {}", errors.join("; "));
                    look.problems.push(LoadProblem { path: self.config_file(), reason });
                    good.clone()
                }
                None => config,
            }
        } else {
            state.config = Some(config.clone());
            config
        };
        if self.use_lock {
            self.read_lock(state, &mut look);
        }
        let folder_ok = match std::fs::metadata(&self.dir) {
            Ok(metadata) => files::trusted(&self.dir, &metadata).map_err(|e| format!("the plugins folder is not loaded from: {e}")),
            Err(err) => Err(format!("cannot read the plugins folder: {err}")),
        };
        let paths = match folder_ok.and_then(|()| crate::runtime::plugin_files(&self.dir).map_err(|e| format!("cannot read the plugins folder: {e}"))) {
            Ok(paths) => paths,
            Err(reason) => {
                // Nothing on disk can be believed: everything serving stays as it is.
                look.problems.push(LoadProblem { path: self.dir.clone(), reason });
                look.config = config;
                return (look, Vec::new());
            }
        };
        let now = SystemTime::now();
        let mut present = BTreeSet::new();
        let mut wanted: Vec<(Candidate, Stamp)> = Vec::new();
        for path in paths {
            present.insert(crate::runtime::plugin_id(&path));
            let metadata = match std::fs::metadata(&path) {
                Ok(metadata) => metadata,
                Err(err) => {
                    look.problems.push(LoadProblem { path, reason: format!("cannot be read: {err}") });
                    continue;
                }
            };
            if let Err(untrusted) = files::trusted(&path, &metadata) {
                look.problems.push(LoadProblem { path, reason: format!("not loaded: {untrusted}") });
                continue;
            }
            let stamp = Stamp::of(&metadata);
            let candidate = match crate::runtime::candidate(&config, path.clone()) {
                Ok(candidate) => candidate,
                Err(problem) => {
                    look.problems.push(problem);
                    continue;
                }
            };
            if state.serving.get(&candidate.id).is_some_and(|v| v.stamp == stamp && v.grant == candidate.grant) {
                continue;
            }
            let drift = config.drift(&candidate.id);
            if let Some(failure) = state.failed.get(&path).filter(|f| f.stamp == stamp && f.grant == candidate.grant && f.drift == drift) {
                look.problems.push(LoadProblem { path, reason: failure.reason.clone() });
                continue;
            }
            if let Some(wait) = files::unsettled(&metadata, now, settle) {
                look.again_after = Some(look.again_after.map_or(wait, |w| w.min(wait)));
                continue;
            }
            if self.locked
                && let Err(reason) = self.pinned(state, &candidate).map_err(|e| e.to_string())
            {
                state.failed.insert(path.clone(), Failure { stamp, grant: candidate.grant.clone(), drift, reason: reason.clone(), soft: true });
                look.problems.push(LoadProblem { path, reason });
                continue;
            }
            wanted.push((candidate, stamp));
        }
        // Files gone from the folder leave the next generation.
        state.failed.retain(|path, _| path.exists());
        for id in state.serving.keys().filter(|id| !present.contains(*id)).cloned().collect::<Vec<_>>() {
            if let Some(gone) = state.serving.remove(&id) {
                tracing::info!(plugin = %id, path = %gone.path.display(), "plugin file removed; its plugin leaves the next generation");
            }
        }
        if wanted.is_empty() {
            look.config = config;
            return (look, Vec::new());
        }
        let replaced: BTreeSet<&str> = wanted.iter().map(|(c, _)| c.id.as_str()).collect();
        let serving: Vec<(&str, &Grant)> =
            state.serving.iter().filter(|(id, _)| !replaced.contains(id.as_str())).map(|(id, v)| (id.as_str(), &v.grant)).collect();
        let stamps: BTreeMap<PathBuf, (Stamp, Grant)> = wanted.iter().map(|(c, s)| (c.path.clone(), (*s, c.grant.clone()))).collect();
        let candidates = wanted.into_iter().map(|(c, _)| c).collect();
        let report = crate::runtime::load_candidates(&self.runtime, &self.dir, &config, candidates, &serving, from_records).await;
        look.warnings = report.warnings;
        for problem in report.problems {
            let Some((stamp, grant)) = stamps.get(&problem.path) else {
                look.problems.push(problem);
                continue;
            };
            if still(&problem.path, stamp) {
                let drift = config.drift(&crate::runtime::plugin_id(&problem.path));
                state.failed.insert(problem.path.clone(), Failure { stamp: *stamp, grant: grant.clone(), drift, reason: problem.reason.clone(), soft: false });
                look.problems.push(problem);
            } else {
                // Written to while it was read: looked at again once it settles.
                look.again_after = Some(self.settle);
            }
        }
        let mut updates = Vec::new();
        for loaded in report.plugins {
            let Some((stamp, grant)) = stamps.get(&loaded.path) else { continue };
            if !still(&loaded.path, stamp) {
                look.again_after = Some(self.settle);
                continue;
            }
            state.failed.remove(&loaded.path);
            if let Some(serving) = state.serving.get_mut(&loaded.id)
                && serving.digest == loaded.digest
                && serving.grant == *grant
            {
                // Touched, or written again with the same content: nothing to serve anew.
                serving.stamp = *stamp;
                continue;
            }
            look.loaded.push(loaded.clone());
            let drift = config.drift(&loaded.id);
            updates.push(Update { loaded, stamp: *stamp, grant: grant.clone(), drift });
        }
        look.config = config;
        (look, updates)
    }
}

impl Folder {
    /// Reads `paddock.lock` again when its file changed; a lock that cannot be read, or that
    /// another user could have written, keeps the last good one. A changed lock lets refusals
    /// that depended on it be tried again.
    fn read_lock(&self, state: &mut State, look: &mut Look) {
        let path = self.lock_file();
        let metadata = std::fs::metadata(&path).ok();
        let stamp = metadata.as_ref().map(Stamp::of);
        if stamp == state.lock_stamp {
            return;
        }
        state.lock_stamp = stamp;
        state.failed.retain(|_, f| !f.soft);
        let read = match &metadata {
            Some(metadata) => files::trusted(&path, metadata).map_err(|e| format!("not read: {e}")).and_then(|()| Lock::read(&path).map_err(|e| e.to_string())),
            None => Ok(None),
        };
        match read {
            Ok(lock) => state.lock = lock,
            Err(reason) => {
                // Looked at again once it changes; until then the last good lock stands.
                look.problems.push(LoadProblem { path, reason: format!("{reason}; the last good lock stands") });
                state.lock_stamp = None;
            }
        }
    }

    /// Whether the lock pins the candidate's file, by its SHA-256.
    fn pinned(&self, state: &State, candidate: &Candidate) -> Result<(), NotPinned> {
        let id = candidate.id.clone();
        let Some(locked) = state.lock.as_ref().and_then(|lock| lock.get(&id)) else {
            return Err(NotPinned::NotInLock { id });
        };
        let digest = lock::file_digest(&candidate.path).map_err(NotPinned::Read)?;
        if locked.pins_file(&digest) { Ok(()) } else { Err(NotPinned::OtherDigest { id, digest }) }
    }
}

/// Why a file is not loaded when the folder is served `--locked`.
#[derive(Debug, thiserror::Error)]
enum NotPinned {
    #[error("not loaded: `{id}` is not in {LOCK_FILE} and the folder is served --locked (fix: review it, then `paddock lock --accept {id}`)")]
    NotInLock { id: String },
    #[error(
        "not loaded: its SHA-256 is {digest}, not the one {LOCK_FILE} pins, and the folder is served --locked (fix: review it, then `paddock lock --accept {id}`)"
    )]
    OtherDigest { id: String, digest: String },
    #[error("cannot be read: {0}")]
    Read(std::io::Error),
}

/// A plugin loaded anew: a file added, written again or given another grant.
#[derive(Debug)]
struct Update {
    loaded: LoadedPlugin,
    stamp: Stamp,
    /// The grant as configured.
    grant: Grant,
    /// How a change of its definitions is taken.
    drift: DriftPolicy,
}

/// The router serving the kept versions and the updates, planned from `current` (whose entries
/// keep the catalogs they are routed by): an update the router would leave out, or that would
/// push a serving plugin out, is refused and its last good version kept. `None` when nothing
/// served changed (never at the first look).
fn plan(state: &mut State, current: Option<&Arc<Router>>, updates: &[Update], look: &mut Look) -> (Option<Router>, Vec<RouterError>) {
    let entry_of = |version: &Version| -> RouterEntry {
        current
            .and_then(|r| r.entries().iter().find(|e| std::ptr::addr_eq(Arc::as_ptr(&e.plugin), Arc::as_ptr(&version.plugin))).cloned())
            .unwrap_or_else(|| RouterEntry::new(Arc::clone(&version.plugin) as Arc<dyn Plugin>, Prefix::from_grant(version.grant.expose_prefix.as_deref())))
    };
    let mut accepted: BTreeMap<&str, &Update> = updates.iter().map(|u| (u.loaded.id.as_str(), u)).collect();
    let mut refused: Vec<(&Update, String)> = Vec::new();
    let mut errors_out = Vec::new();
    let router = loop {
        let mut entries: Vec<RouterEntry> = state.serving.iter().filter(|(id, _)| !accepted.contains_key(id.as_str())).map(|(_, v)| entry_of(v)).collect();
        entries.extend(
            accepted
                .values()
                .map(|u| RouterEntry::new(Arc::clone(&u.loaded.plugin) as Arc<dyn Plugin>, Prefix::from_grant(u.loaded.grant.expose_prefix.as_deref()))),
        );
        let (router, errors) = Router::new(entries);
        let blamed: Vec<(&str, RouterError)> = errors.into_iter().filter_map(|e| blame(&e, &accepted).map(|id| (id, e))).collect();
        let mut held = Vec::new();
        if blamed.is_empty() {
            for (id, update) in &accepted {
                let lines = drifted(state.lock.as_ref(), current.map(|r| &**r), &router, id, update.drift);
                if !lines.is_empty() && !update.drift.serves() {
                    held.push((*id, take_drift(id, update.drift, &lines).unwrap_or_default()));
                }
            }
            if held.is_empty() {
                for (id, update) in &accepted {
                    let lines = drifted(state.lock.as_ref(), current.map(|r| &**r), &router, id, update.drift);
                    if !lines.is_empty() {
                        take_drift(id, update.drift, &lines);
                    }
                }
                break router;
            }
        }
        for (id, error) in blamed {
            if let Some(update) = accepted.remove(id) {
                refused.push((update, error.to_string()));
                errors_out.push(error);
            }
        }
        for (id, reason) in held {
            if let Some(update) = accepted.remove(id) {
                refused.push((update, reason));
            }
        }
    };
    let identities = |router: &Router| -> Vec<(String, *const ())> {
        router.entries().iter().map(|e| (e.plugin.id().to_owned(), Arc::as_ptr(&e.plugin).cast::<()>())).collect()
    };
    let changed = current.is_none_or(|current| identities(current) != identities(&router));
    for update in accepted.values() {
        let loaded = &update.loaded;
        let version =
            Version { path: loaded.path.clone(), stamp: update.stamp, digest: loaded.digest, grant: update.grant.clone(), plugin: Arc::clone(&loaded.plugin) };
        state.serving.insert(loaded.id.clone(), version);
    }
    if changed {
        // Whom an earlier refused update collided with may have gone: it is tried again.
        state.failed.retain(|_, f| !f.soft);
    }
    for (update, reason) in refused {
        look.problems.push(LoadProblem { path: update.loaded.path.clone(), reason: reason.clone() });
        let failure = Failure { stamp: update.stamp, grant: update.grant.clone(), drift: update.drift, reason, soft: true };
        state.failed.insert(update.loaded.path.clone(), failure);
    }
    (changed.then_some(router), errors_out)
}

/// What changed in the definitions of the update of `id` that `router` serves, one readable
/// line each (empty when nothing did). Drift is measured against the lock's entry for it, or
/// without one against the version serving; `block` always measures against the version
/// serving. The lines come from the version serving when it shows the change (old and new
/// values), else from the lock (which keeps digests only).
fn drifted(lock: Option<&Lock>, current: Option<&Router>, router: &Router, id: &str, policy: DriftPolicy) -> Vec<String> {
    let now = Definitions::of(router, id);
    let serving = current.filter(|r| r.catalog_of(id).is_some()).map(|r| Definitions::of(r, id));
    let readable = |old: &Definitions| old.drift(&now).iter().map(ToString::to_string).collect::<Vec<_>>();
    match (policy, lock.and_then(|l| l.get(id)), &serving) {
        (DriftPolicy::Block, _, Some(old)) => readable(old),
        (_, Some(locked), _) => {
            let against_lock = locked.drift_from(&now);
            match &serving {
                Some(old) if !against_lock.is_empty() && !readable(old).is_empty() => readable(old),
                _ => against_lock,
            }
        }
        (_, None, Some(old)) => readable(old),
        (_, None, None) => Vec::new(),
    }
}

/// Logs a change of plugin `id`'s definitions as `policy` takes it; for a held or refused
/// update, the problem `/readyz` reports.
fn take_drift(id: &str, policy: DriftPolicy, lines: &[String]) -> Option<String> {
    policy.log(id, DriftSource::Update, lines);
    match policy {
        DriftPolicy::Allow | DriftPolicy::Warn => None,
        DriftPolicy::Hold => Some(format!(
            "update held: its definitions changed ({}); what served before keeps serving until the change is accepted (fix: review it, then `paddock lock --accept {id}`)",
            lines.join("; ")
        )),
        DriftPolicy::Block => Some(format!("update refused (drift = block): its definitions changed ({}); what served before keeps serving", lines.join("; "))),
    }
}

/// The update a router error is about, if any: the plugin the router leaves out, unless that one
/// was serving already, in which case the update that pushed it out.
fn blame<'a>(error: &RouterError, updates: &BTreeMap<&'a str, &Update>) -> Option<&'a str> {
    let pick = |id: &str| updates.get_key_value(id).map(|(k, _)| *k);
    match error {
        RouterError::Collision { first, second, .. } => pick(second).or_else(|| pick(first)),
        RouterError::InvalidName { plugin, .. } | RouterError::InvalidTemplate { plugin, .. } => pick(plugin),
    }
}

/// Every plugin a router error names.
fn named(error: &RouterError) -> Vec<&str> {
    match error {
        RouterError::Collision { first, second, .. } => vec![first, second],
        RouterError::InvalidName { plugin, .. } | RouterError::InvalidTemplate { plugin, .. } => vec![plugin],
    }
}

/// The configuration files read for `config` that another user could have written.
fn untrusted_config(config: &Config) -> Vec<(PathBuf, Untrusted)> {
    config
        .files()
        .iter()
        .filter_map(|path| {
            let metadata = std::fs::metadata(path).ok()?;
            files::trusted(path, &metadata).err().map(|reason| (path.clone(), reason))
        })
        .collect()
}

/// Whether the file at `path` still has `stamp` (it was not written to while it was loaded).
fn still(path: &Path, stamp: &Stamp) -> bool {
    std::fs::metadata(path).is_ok_and(|m| Stamp::of(&m) == *stamp)
}
