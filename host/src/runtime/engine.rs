//! The process-wide `Engine`: epoch interruption, the pooling allocator sized explicitly (with an
//! on-demand fallback when the address space is short) and tuned for a fresh instance per call,
//! built on a thread of its own beside the start; and the epoch ticker thread.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeOptions;
use super::imports::linker::host_linker;
use super::load_error::LoadError;
use super::sandbox::store_state::HostState;

/// How often the epoch advances: the granularity of deadlines and of yielding to tokio.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Guard region after each linear memory (the reservation itself equals the memory cap).
const MEMORY_GUARD: u64 = 2 << 20;
/// Bytes of each pooled linear memory and table kept resident between instances when the
/// kernel can say which pages an instance dirtied (`PAGEMAP_SCAN`): only those pages are reset,
/// by copying, so the next call on the slot takes no page faults and the drop no `madvise`.
/// A call of a small Rust guest dirties well under this.
const KEEP_RESIDENT: usize = 1 << 20;

/// How pooled slots are reset between instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotReset {
    /// `PAGEMAP_SCAN` finds the pages the instance dirtied; up to `KEEP_RESIDENT` bytes of them
    /// are reset in place and stay resident.
    DirtyPages,
    /// Every slot is decommitted with `madvise` (kernels before 6.7, or `keep_resident` off):
    /// without the scan, keeping memory resident would mean clearing all of it on every drop,
    /// which costs as much as the page faults it saves.
    Decommit,
    /// The on-demand allocator: no pool.
    OnDemand,
}

/// The engine without an instance pool: what compiled code is checked against (the pooled
/// engine compiles the same way) and the fallback when the pool cannot be set up. Built at once:
/// a configuration wasmtime refuses is an error of the start.
pub(crate) fn on_demand(options: &RuntimeOptions) -> Result<Engine, wasmtime::Error> {
    Engine::new(&base_config(options))
}

/// The engine that runs plugins, with the host linker for it.
pub(crate) struct Built {
    pub(crate) engine: Engine,
    pub(crate) slot_reset: SlotReset,
    /// The host linker, or why the host interfaces could not be linked.
    pub(crate) linker: Result<Arc<Linker<HostState>>, String>,
}

/// The engine that runs plugins, being built. Setting up the instance pool costs a guard page per
/// fiber stack (an `mprotect` each: milliseconds for a pool of hundreds of stacks), which a start
/// that serves its plugins from recorded catalogs need not wait for. A thread of its own builds
/// it from `start`; the first use that needs it before then waits for that build (or builds it
/// itself, if the thread could not be started).
pub(crate) struct PendingEngine {
    built: OnceLock<Built>,
    options: RuntimeOptions,
    on_demand: Engine,
}

impl PendingEngine {
    /// Starts building the engine of `options`; `on_demand` is the fallback.
    pub(crate) fn start(options: RuntimeOptions, on_demand: Engine) -> Arc<PendingEngine> {
        let pending = Arc::new(PendingEngine { built: OnceLock::new(), options, on_demand });
        let building = Arc::clone(&pending);
        if let Err(err) = std::thread::Builder::new().name("paddock-engine".to_owned()).spawn(move || {
            building.get();
        }) {
            tracing::debug!(error = %err, "the engine is built by its first use");
        }
        pending
    }

    /// The engine, once built.
    pub(crate) fn get(&self) -> &Built {
        self.built.get_or_init(|| self.build())
    }

    /// The engine, if it is built already.
    pub(crate) fn ready(&self) -> Option<&Built> {
        self.built.get()
    }

    fn build(&self) -> Built {
        let (engine, slot_reset) = pooled(&self.options).unwrap_or_else(|| (self.on_demand.clone(), SlotReset::OnDemand));
        tracing::debug!(?slot_reset, "instance slots");
        let linker = host_linker(&engine).map(Arc::new).map_err(|err| match err {
            LoadError::Link(why) => why,
            other => other.to_string(),
        });
        start_ticker(&engine);
        Built { engine, slot_reset, linker }
    }
}

/// The engine with its instance pool, unless the pool is off or cannot be set up.
fn pooled(options: &RuntimeOptions) -> Option<(Engine, SlotReset)> {
    if !options.pooling {
        return None;
    }
    let reset = if options.keep_resident && PoolingAllocationConfig::is_pagemap_scan_available() { SlotReset::DirtyPages } else { SlotReset::Decommit };
    let mut config = base_config(options);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(options, reset)));
    match Engine::new(&config) {
        Ok(engine) => Some((engine, reset)),
        Err(err) => {
            tracing::warn!(error = %err, "pooling allocator unavailable, falling back to on-demand instance allocation");
            None
        }
    }
}

fn base_config(options: &RuntimeOptions) -> Config {
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        // Plugins target WASI p2 with synchronous WIT functions: no component-model async.
        .concurrency_support(false)
        .parallel_compilation(true)
        // A memory never needs more address space than the largest grant allows.
        .memory_reservation(options.max_memory)
        .memory_guard_size(MEMORY_GUARD)
        .memory_reservation_for_growth(0);
    config
}

fn pooling_config(options: &RuntimeOptions, reset: SlotReset) -> PoolingAllocationConfig {
    let instances = options.max_instances.max(1);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        // A Rust wasm32-wasip2 component holds a few core instances (the program and shims).
        .total_core_instances(instances.saturating_mul(4))
        .total_memories(instances.saturating_mul(2))
        .total_tables(instances.saturating_mul(4))
        .total_stacks(instances)
        .max_memory_size(usize::try_from(options.max_memory).unwrap_or(usize::MAX));
    if reset == SlotReset::DirtyPages {
        pool.pagemap_scan(wasmtime::Enabled::Yes).linear_memory_keep_resident(KEEP_RESIDENT).table_keep_resident(KEEP_RESIDENT);
    }
    pool
}

/// Starts the thread that advances the epoch; it stops by itself once the engine is dropped.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new().name("paddock-epoch".to_owned()).spawn(move || {
        while let Some(engine) = weak.upgrade() {
            engine.increment_epoch();
            drop(engine);
            std::thread::sleep(EPOCH_TICK);
        }
    });
    if let Err(err) = spawned {
        tracing::error!(error = %err, "cannot start the epoch thread: plugin deadlines will not fire");
    }
}
