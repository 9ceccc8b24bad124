//! The only module that knows wasmtime: engine, compiled-component cache, per-call sandboxes.
//!
//! - `Runtime`: one `Engine` per process (epoch interruption, pooling allocator with on-demand
//!   fallback), the epoch ticker, the compiled-component cache and the global concurrency gate.
//! - `WasmPlugin`: a loaded component (`InstancePre` + validated catalog + grant); every request
//!   runs in a fresh `Store` with a deadline, a memory cap summed over the instance, an output cap
//!   and a concurrency gate. It implements `plugin::Plugin`.
//! - `load_folder` / `inspect`: loading a plugins folder with its grants, reporting every bad
//!   file with its path and reason while the good ones load.

#[allow(unsafe_code)]
mod bindings;
// `TypedFunc::new_unchecked` after a first checked call, for the same export of the same component.
#[allow(unsafe_code)]
mod checked_func;
mod engine;
mod imports;
mod lift;
mod load;
mod load_error;
mod sandbox;
mod text;
mod wasm_plugin;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::Linker;

pub use engine::SlotReset;
pub use lift::catalog::{MAX_CATALOG_BYTES, MAX_ITEMS, MAX_META_BYTES, MAX_NAME, MAX_SCHEMA_BYTES, MAX_TEMPLATES_BYTES};
pub use lift::json::MAX_JSON_DEPTH;
pub use load::cache::{CacheOutcome, default_cache_dir};
pub use load::folder::{
    Candidate, Inspection, LoadProblem, LoadReport, LoadedPlugin, candidate, inspect, instances_for_folder, load_candidates, load_folder, plugin_files,
    plugin_id,
};
pub use load_error::LoadError;
pub use sandbox::egress::{FixedResolver, Resolve, SystemResolver};
pub use sandbox::prepared::SandboxError;
pub use sandbox::refusal_log::RefusalCounters;
pub use wasm_plugin::WasmPlugin;

/// The most instances a runtime keeps alive at once, across all plugins.
pub const MAX_INSTANCES: u32 = 1000;

/// How the runtime is built.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Where compiled plugins are cached; `None` uses `default_cache_dir()`.
    pub cache_dir: Option<PathBuf>,
    /// Compile without any on-disk cache.
    pub no_cache: bool,
    /// Use the pooling allocator (falls back to on-demand allocation if it cannot be set up).
    pub pooling: bool,
    /// Keep the first MiB of each pooled memory and table resident between calls, resetting
    /// only the pages a call dirtied; used where the kernel has `PAGEMAP_SCAN` (Linux 6.7+).
    pub keep_resident: bool,
    /// Most instances alive at once, across all plugins: the pool size and the global gate.
    /// `instances_for_folder` gives what a folder's plugins need; the pool's fixed set-up cost
    /// (fiber stacks, slot tables) grows with it.
    pub max_instances: u32,
    /// The largest memory limit any plugin may be granted, in bytes (sizes the pool's slots).
    pub max_memory: u64,
    /// How outgoing names are resolved; `None` uses the system resolver.
    pub resolver: Option<Arc<dyn Resolve>>,
    /// Host file descriptors all plugins together may hold; `None` (or anything larger) means
    /// the open-file limit less a reserve for the host.
    pub max_descriptors: Option<u64>,
    /// Descriptors the host keeps for itself, outside the plugins' pool: its files and logs,
    /// and (serving HTTP) every connection it may hold (`transport::http::host_descriptors`).
    pub host_descriptors: u64,
}

impl Default for RuntimeOptions {
    /// Default cache directory, pooling on, `MAX_INSTANCES` instances, 64 MiB memory cap.
    fn default() -> Self {
        RuntimeOptions {
            cache_dir: None,
            no_cache: false,
            pooling: true,
            keep_resident: true,
            max_instances: MAX_INSTANCES,
            max_memory: crate::policy::Limits::DEFAULT_MEMORY,
            resolver: None,
            max_descriptors: None,
            host_descriptors: sandbox::descriptors::HOST_RESERVE,
        }
    }
}

/// Why the runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
}

/// The process-wide WebAssembly runtime.
#[derive(Clone)]
pub struct Runtime {
    /// The engine with its instance pool, and the host interfaces linked once for every plugin:
    /// built beside the start, waited for by the first load that needs them.
    engine: Arc<engine::PendingEngine>,
    cache: Option<load::cache::Cache>,
    global: Arc<Semaphore>,
    max_instances: usize,
    max_memory: u64,
    services: sandbox::prepared::HostServices,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("slot_reset", &self.engine.ready().map(|built| built.slot_reset))
            .field("cache", &self.cache_dir())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts building the engine (on a thread of its own: the instance pool takes a while to
    /// set up) and opens the cache. The epoch ticker starts with the engine. A cache folder that
    /// cannot be created, or that another user could have written, is logged with the fix and
    /// the runtime compiles without a cache.
    pub fn new(options: RuntimeOptions) -> Result<Runtime, RuntimeError> {
        let options = RuntimeOptions { max_memory: options.max_memory.max(1 << 20), ..options };
        let resolver = options.resolver.clone().unwrap_or_else(|| Arc::new(SystemResolver));
        let services = sandbox::prepared::HostServices {
            egress: sandbox::egress::Egress::new(resolver),
            descriptors: Arc::new(sandbox::descriptors::DescriptorPool::for_process(options.max_descriptors, options.host_descriptors)),
        };
        // Compiled code is filed under this engine's fingerprint, the pooled engine's too.
        let on_demand = engine::on_demand(&options).map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let cache = if options.no_cache {
            None
        } else {
            match options.cache_dir.clone().or_else(default_cache_dir) {
                Some(dir) => match load::cache::Cache::open(&dir, &on_demand) {
                    Ok(cache) => Some(cache),
                    Err(err) => {
                        tracing::warn!(dir = %dir.display(), error = %err, "cannot use the compiled-plugin cache; compiling every start");
                        None
                    }
                },
                None => {
                    tracing::warn!("no cache directory (set PADDOCK_CACHE_DIR or HOME); compiling every start");
                    None
                }
            }
        };
        let global = Arc::new(Semaphore::new(options.max_instances.max(1) as usize));
        let max_instances = options.max_instances.max(1) as usize;
        let max_memory = options.max_memory;
        let engine = engine::PendingEngine::start(options, on_demand);
        Ok(Runtime { engine, cache, global, max_instances, max_memory, services })
    }

    /// Plugin instances running now, and how many may run at once.
    pub fn instances(&self) -> (usize, usize) {
        (self.max_instances.saturating_sub(self.global.available_permits()), self.max_instances)
    }

    /// The compiled-plugin cache directory in use, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(load::cache::Cache::dir)
    }

    /// The cache file the component `wasm` is (or would be) stored in.
    pub fn cache_path_for(&self, wasm: &[u8]) -> Option<PathBuf> {
        self.cache.as_ref().map(|c| c.path_for(wasm))
    }

    /// Whether the pooling allocator is in use (false after the on-demand fallback). Waits for
    /// the engine.
    pub fn is_pooling(&self) -> bool {
        self.slot_reset() != SlotReset::OnDemand
    }

    /// How instance slots are reset between calls. Waits for the engine.
    pub fn slot_reset(&self) -> SlotReset {
        self.engine.get().slot_reset
    }

    /// The engine that runs plugins. Waits for it: call it off the async workers (it is ready
    /// once anything was compiled or loaded with it).
    fn engine(&self) -> &Engine {
        &self.engine.get().engine
    }

    /// The host interfaces, linked for the engine.
    fn linker(&self) -> Result<&Linker<sandbox::store_state::HostState>, LoadError> {
        self.engine.get().linker.as_deref().map_err(|why| LoadError::Link(why.clone()))
    }

    /// Host file descriptors all plugins together may hold (the open-file limit less a
    /// reserve for the host).
    pub fn descriptor_budget(&self) -> u64 {
        self.services.descriptors.limit()
    }

    /// The largest memory limit a grant may ask for.
    pub fn max_memory(&self) -> u64 {
        self.max_memory
    }

    /// Removes from the compiled-plugin cache what nothing needs: every artifact but those of
    /// the plugins serving (by their content digests, `LoadedPlugin::digest`) and the newest
    /// others, and the oldest records. Runs on the blocking pool; returns how many files went.
    pub async fn collect_cache(&self, serving: Vec<[u8; 32]>) -> usize {
        let Some(cache) = self.cache.clone() else { return 0 };
        let collected = tokio::task::spawn_blocking(move || cache.collect(&serving)).await.unwrap_or_default();
        if collected.artifacts + collected.records > 0 {
            tracing::info!(artifacts = collected.artifacts, records = collected.records, "old compiled plugins removed from the cache");
        }
        collected.artifacts + collected.records
    }

    /// Loads one plugin file with its grant: compile (or load from the cache), link, read the
    /// catalog. The error is one line saying why, without the path.
    pub async fn load_plugin(&self, id: &str, path: &Path, grant: crate::policy::Grant) -> Result<(WasmPlugin, CacheOutcome), LoadError> {
        let sandbox = sandbox::prepared::Sandbox::new(id, grant, self.services.clone())?;
        let (plugin, cache, _) = load::folder::load_one(self, &load::compile::Compiles::new(), path, sandbox, false).await?;
        Ok((plugin, cache))
    }
}
