//! Loading a plugins folder: every `*.wasm` (sorted), each with its grant from the config, or
//! some of its files beside plugins already serving (`load_candidates`, for a live folder).
//! A file that is not a component, targets another world, fails to compile or has a bad grant is
//! reported with its path and reason while the others load. Plugins load concurrently; their
//! files are compiled through `compile::Compiles` (each distinct content once, a few at a time).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::Component;

use super::cache::{CacheOutcome, FileIdentity};
use super::compile::Compiles;
use crate::config::{Config, valid_id};
use crate::plugin::{Catalog, Plugin};
use crate::policy::{self, Grant, GrantRef, Limits, Protected};
use crate::runtime::load_error::{CONTRACT_VERSION, LoadError};
use crate::runtime::sandbox::prepared::Sandbox;
use crate::runtime::wasm_plugin::CatalogRecord;
use crate::runtime::{MAX_INSTANCES, Runtime, WasmPlugin};

/// The interfaces every plugin must export.
const REQUIRED_EXPORTS: [&str; 5] = [
    "paddock:plugin/metadata@0.2.0",
    "paddock:plugin/tools@0.2.0",
    "paddock:plugin/resources@0.2.0",
    "paddock:plugin/prompts@0.2.0",
    "paddock:plugin/completion@0.2.0",
];

/// A plugin that loaded, with the grant it runs under.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    /// The file stem, unique in the folder.
    pub id: String,
    pub path: PathBuf,
    pub plugin: Arc<WasmPlugin>,
    /// The grant (`grant.expose_prefix` is the router's naming choice).
    pub grant: Grant,
    pub cache: CacheOutcome,
    /// The BLAKE3 digest of the content that was compiled.
    pub digest: [u8; 32],
}

/// A plugin file to load, with the grant it is configured with.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: String,
    pub path: PathBuf,
    pub grant: Grant,
}

/// A file that did not load, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    pub path: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// The outcome of loading a folder.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Loaded plugins, sorted by id.
    pub plugins: Vec<LoadedPlugin>,
    pub problems: Vec<LoadProblem>,
    /// What loaded, but not as configured (descriptor budgets cut to fit the host's pool).
    pub warnings: Vec<String>,
    /// Distinct components compiled or read from the cache: files with the same content share one.
    pub components: usize,
}

/// What a plugin file exports and requests.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub path: PathBuf,
    /// Tools, resources, templates, prompts and the plugin's info (with its requested capabilities).
    pub catalog: Catalog,
    /// The interfaces the component imports (WASI and `paddock:plugin/host`).
    pub imports: Vec<String>,
    /// The interfaces the component exports.
    pub exports: Vec<String>,
}

/// The `*.wasm` files of a plugins folder, sorted by name.
pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "wasm")).collect();
    files.sort();
    Ok(files)
}

/// The plugin id a file is loaded as: its name without `.wasm`.
pub fn plugin_id(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// How many instances the plugins of `dir` can have alive at once, which is what the runtime's
/// pool and global gate are sized to: each plugin's granted concurrency, plus one for reading
/// its catalog at load. At least 1, at most `MAX_INSTANCES`. A file that will not load (a bad
/// id or grant) counts the default concurrency, so the figure never falls short.
pub fn instances_for_folder(dir: &Path, config: &Config) -> u32 {
    let files = plugin_files(dir).unwrap_or_default();
    let wanted = files.iter().fold(0u64, |sum, path| {
        let concurrency = config.grant(&plugin_id(path)).map_or(Limits::DEFAULT_CONCURRENCY, |g| g.limits.concurrency.max(1));
        sum + u64::from(concurrency) + 1
    });
    u32::try_from(wanted.clamp(1, u64::from(MAX_INSTANCES))).unwrap_or(MAX_INSTANCES)
}

/// Loads every `*.wasm` in `dir` with its grant from `config`.
pub async fn load_folder(runtime: &Runtime, dir: &Path, config: &Config) -> LoadReport {
    let files = match plugin_files(dir) {
        Ok(files) => files,
        Err(err) => {
            let mut report = LoadReport::default();
            report.problems.push(LoadProblem { path: dir.to_path_buf(), reason: format!("cannot read the plugins folder: {err}") });
            return report;
        }
    };
    let mut problems = Vec::new();
    let mut candidates = Vec::new();
    for path in files {
        match candidate(config, path) {
            Ok(candidate) => candidates.push(candidate),
            Err(problem) => problems.push(problem),
        }
    }
    let mut report = load_candidates(runtime, dir, config, candidates, &[], false).await;
    problems.append(&mut report.problems);
    report.problems = problems;
    report
}

/// The file `path` as a plugin to load: its id and its grant from `config`, or why it cannot be.
pub fn candidate(config: &Config, path: PathBuf) -> Result<Candidate, LoadProblem> {
    let id = plugin_id(&path);
    if !valid_id(&id) {
        return Err(LoadProblem { path, reason: format!("`{id}` is not a valid plugin id: rename the file to match ^[a-zA-Z0-9_-]{{1,64}}$") });
    }
    match config.grant(&id) {
        Ok(grant) => Ok(Candidate { id, path, grant }),
        Err(errors) => {
            let file = errors.first().map(|e| e.file.clone()).unwrap_or_else(|| path.clone());
            let keys: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.key, e.message)).collect();
            Err(LoadProblem { path: file, reason: format!("plugin `{id}` not loaded, its grant is invalid: {}", keys.join("; ")) })
        }
    }
}

/// Loads `candidates` beside the plugins already serving (`serving`: their ids and grants).
/// A candidate whose file grants conflict with another's, a serving plugin's or the host's own
/// files is refused; serving plugins are never refused here.
///
/// With `from_record`, plugins whose catalogs an earlier load recorded are served from those
/// records while their components load in the background (`load_one`).
pub async fn load_candidates(
    runtime: &Runtime,
    dir: &Path,
    config: &Config,
    candidates: Vec<Candidate>,
    serving: &[(&str, &Grant)],
    from_record: bool,
) -> LoadReport {
    let mut report = LoadReport::default();
    let mut admitted = Vec::new();
    for Candidate { id, path, grant } in candidates {
        if let Err(err) = check_grant(runtime, &grant) {
            report.problems.push(LoadProblem { path, reason: err.to_string() });
            continue;
        }
        admitted.push((id, path, grant));
    }
    // File grants are checked against each other and against the host's own files, then every
    // granted directory is opened (pinned) before any plugin code runs, so no plugin can race
    // another plugin's grant between the check and the open.
    let refused = file_grant_conflicts(runtime, dir, config, &admitted, serving);
    admitted.retain(|(id, path, _)| {
        let conflicts: Vec<&str> = refused.iter().filter(|c| &c.plugin == id).map(|c| c.message.as_str()).collect();
        if !conflicts.is_empty() {
            report.problems.push(LoadProblem { path: path.clone(), reason: format!("plugin `{id}` not loaded: {}", conflicts.join("; ")) });
        }
        conflicts.is_empty()
    });
    // Every plugin's descriptor budget is reserved out of the process's pool when its sandbox
    // is made; budgets that do not fit together are cut in proportion first, not first come.
    let pool = &runtime.services.descriptors;
    if let Some(warning) = crate::runtime::sandbox::descriptors::fit(
        admitted.iter_mut().map(|(id, _, grant)| (id.as_str(), grant)),
        pool.free(),
        pool.limit(),
        crate::runtime::sandbox::prepared::CALL_CEILING,
    ) {
        tracing::warn!("{warning}");
        report.warnings.push(warning);
    }
    let compiles = Compiles::new();
    let mut tasks = Vec::new();
    for (id, path, grant) in admitted {
        let sandbox = match Sandbox::new(&id, grant.clone(), runtime.services.clone()) {
            Ok(sandbox) => sandbox,
            Err(err) => {
                report.problems.push(LoadProblem { path, reason: format!("plugin `{id}` not loaded: {err}") });
                continue;
            }
        };
        let runtime = runtime.clone();
        let compiles = compiles.clone();
        tasks.push(tokio::spawn(async move {
            let outcome = load_one(&runtime, &compiles, &path, sandbox, from_record).await;
            (id, path, grant, outcome)
        }));
    }
    let joined = compiles.showing_progress(futures::future::join_all(tasks)).await;
    compiles.start_deferred();
    report.components = compiles.built();
    for task in joined {
        match task {
            Ok((id, path, grant, Ok((plugin, cache, digest)))) => {
                tracing::info!(plugin = %id, tools = plugin.catalog().tools.len(), ?cache, "plugin loaded");
                report.plugins.push(LoadedPlugin { id, path, plugin: Arc::new(plugin), grant, cache, digest });
            }
            Ok((_, path, _, Err(err))) => report.problems.push(LoadProblem { path, reason: err.to_string() }),
            Err(err) => report.problems.push(LoadProblem { path: dir.to_path_buf(), reason: format!("loading a plugin failed: {err}") }),
        }
    }
    report.plugins.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(metrics) = crate::telemetry::metrics::get() {
        for plugin in &report.plugins {
            metrics.plugin_load("loaded");
            match plugin.cache {
                CacheOutcome::Hit | CacheOutcome::Recorded => metrics.cache_hit(),
                CacheOutcome::Compiled | CacheOutcome::Recompiled | CacheOutcome::Uncached => metrics.compiled(),
            }
        }
        for _ in &report.problems {
            metrics.plugin_load("failed");
        }
    }
    report
}

/// Reads a plugin file (with the default grant) to show what it exports and requests.
pub async fn inspect(runtime: &Runtime, path: &Path) -> Result<Inspection, LoadProblem> {
    let problem = |err: LoadError| LoadProblem { path: path.to_path_buf(), reason: err.to_string() };
    let id = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "plugin".to_owned());
    let (component, _, _) = Compiles::new().component(runtime, path).await.map_err(problem)?;
    let ty = component.component_type();
    let engine = component.engine();
    let imports = ty.imports(engine).map(|(name, _)| name.to_owned()).collect();
    let exports = ty.exports(engine).map(|(name, _)| name.to_owned()).collect();
    check_world(&component).map_err(problem)?;
    let sandbox = Sandbox::new(&id, Grant::default(), runtime.services.clone()).map_err(|e| problem(e.into()))?;
    let pre = WasmPlugin::link(runtime.linker().map_err(problem)?, &component).map_err(problem)?;
    let plugin = WasmPlugin::new(pre, sandbox, runtime.global.clone(), None).await.map_err(problem)?;
    Ok(Inspection { path: path.to_path_buf(), catalog: plugin.catalog().clone(), imports, exports })
}

/// Loads one plugin file under `sandbox`, recording its catalog when there is a cache. With
/// `from_record`, a plugin whose catalog an earlier load recorded is served from that record at
/// once, and its component loads in the background (`WasmPlugin::deferred`).
pub(crate) async fn load_one(
    runtime: &Runtime,
    compiles: &Arc<Compiles>,
    path: &Path,
    sandbox: Sandbox,
    from_record: bool,
) -> Result<(WasmPlugin, CacheOutcome, [u8; 32]), LoadError> {
    let grant = format!("{:?}", sandbox.grant);
    let (digest, identity, recorded) = {
        let grant = grant.clone();
        compiles
            .identify_then(runtime, path, move |cache, digest| cache.filter(|_| from_record).and_then(|cache| cache.recorded_catalog(digest, &grant)))
            .await?
    };
    let record = runtime.cache.clone().map(|cache| -> CatalogRecord {
        Box::new(move |catalog: &Catalog| {
            let (cache, grant, catalog) = (cache.clone(), grant.clone(), catalog.clone());
            Box::pin(async move {
                let _ = tokio::task::spawn_blocking(move || cache.record_catalog(&digest, &grant, &catalog)).await;
            })
        })
    });
    match (record, recorded) {
        (Some(record), Some(catalog)) => {
            let global = runtime.global.clone();
            let (runtime, compiles, path) = (runtime.clone(), Arc::clone(compiles), path.to_path_buf());
            let wanted = Arc::new(tokio::sync::Notify::new());
            let waiting = Arc::clone(&wanted);
            let loading = async move {
                // Once the plugins of this load are served (until then the cores are theirs), or
                // at once when a call waits for it.
                let _turn = compiles.after_start(&waiting).await;
                let (component, _, _) = compiles.component_with_digest(&runtime, &path, digest, identity).await?;
                check_world(&component)?;
                WasmPlugin::link(runtime.linker()?, &component)
            };
            Ok((WasmPlugin::deferred(catalog, sandbox, global, record, wanted, loading), CacheOutcome::Recorded, digest))
        }
        (record, _) => load_linked(runtime, compiles, path, sandbox, (digest, identity), record).await,
    }
}

/// Loads, links and reads the catalog of the file with this digest.
async fn load_linked(
    runtime: &Runtime,
    compiles: &Compiles,
    path: &Path,
    sandbox: Sandbox,
    (digest, identity): ([u8; 32], Option<FileIdentity>),
    record: Option<CatalogRecord>,
) -> Result<(WasmPlugin, CacheOutcome, [u8; 32]), LoadError> {
    let (component, cache, digest) = compiles.component_with_digest(runtime, path, digest, identity).await?;
    check_world(&component)?;
    let pre = WasmPlugin::link(runtime.linker()?, &component)?;
    let plugin = WasmPlugin::new(pre, sandbox, runtime.global.clone(), record).await?;
    Ok((plugin, cache, digest))
}

/// Every file-grant conflict among the plugins about to load: overlapping grants where one is
/// read-write, read-write grants over the plugins folder or a config file, any grant over the
/// cache.
fn file_grant_conflicts(
    runtime: &Runtime,
    dir: &Path,
    config: &Config,
    admitted: &[(String, PathBuf, Grant)],
    serving: &[(&str, &Grant)],
) -> Vec<policy::GrantConflict> {
    let mut protected = Vec::new();
    if let Ok(folder) = dir.canonicalize() {
        protected.push(Protected::PluginsFolder(folder));
    }
    for file in config.files() {
        if let Ok(file) = file.canonicalize() {
            protected.push(Protected::ConfigFile(file));
        }
    }
    if let Some(cache) = runtime.cache_dir().and_then(|d| d.canonicalize().ok()) {
        protected.push(Protected::Cache(cache));
    }
    for grant in admitted.iter().map(|(_, _, grant)| grant).chain(serving.iter().map(|(_, grant)| *grant)) {
        for secret in &grant.secrets {
            if let policy::SecretSource::File(file) = &secret.source
                && let Ok(file) = file.canonicalize()
            {
                protected.push(Protected::SecretFile(file));
            }
        }
    }
    let grants: Vec<GrantRef<'_>> = admitted
        .iter()
        .map(|(id, _, grant)| (id.as_str(), grant))
        .chain(serving.iter().copied())
        .flat_map(|(id, grant)| grant.files.iter().map(move |g| GrantRef { plugin: id, grant: g }))
        .collect();
    // Serving plugins were accepted when they loaded: only a candidate is refused here.
    policy::check_file_grants(&grants, &protected).into_iter().filter(|c| admitted.iter().any(|(id, _, _)| *id == c.plugin)).collect()
}

/// Refuses grants the runtime cannot honour safely.
fn check_grant(runtime: &Runtime, grant: &Grant) -> Result<(), LoadError> {
    if grant.limits.memory > runtime.max_memory() {
        return Err(LoadError::MemoryAboveHost { asked_mib: grant.limits.memory >> 20, max_mib: runtime.max_memory() >> 20 });
    }
    Ok(())
}

/// Checks that the component exports the `paddock:plugin@0.2.0` interfaces.
fn check_world(component: &Component) -> Result<(), LoadError> {
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(component.engine()).map(|(name, _)| name.to_owned()).collect();
    let missing: Vec<&str> = REQUIRED_EXPORTS.iter().copied().filter(|r| !exports.iter().any(|e| e == r)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    // `paddock:plugin/tools@0.1.0`: our interfaces at another version.
    let other_version = exports.iter().find_map(|e| e.strip_prefix("paddock:plugin/tools@")).filter(|v| *v != CONTRACT_VERSION);
    if let Some(version) = other_version {
        return Err(LoadError::OtherContract { version: version.chars().take(32).collect() });
    }
    let found = if exports.is_empty() { "nothing".to_owned() } else { exports.join(", ") };
    Err(LoadError::OtherWorld { missing: missing.join(", "), found })
}
