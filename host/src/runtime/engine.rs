//! The process-wide `Engine`: epoch interruption, the pooling allocator sized explicitly (with an
//! on-demand fallback when the address space is short) and tuned for a fresh instance per call,
//! and the epoch ticker thread.

use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeOptions;

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

/// Builds the engine; returns it and how its instance slots are reset.
pub(crate) fn build(options: &RuntimeOptions) -> Result<(Engine, SlotReset), wasmtime::Error> {
    if options.pooling {
        let reset = if options.keep_resident && PoolingAllocationConfig::is_pagemap_scan_available() { SlotReset::DirtyPages } else { SlotReset::Decommit };
        let mut config = base_config(options);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(options, reset)));
        match Engine::new(&config) {
            Ok(engine) => return Ok((engine, reset)),
            Err(err) => {
                tracing::warn!(error = %err, "pooling allocator unavailable, falling back to on-demand instance allocation");
            }
        }
    }
    Ok((Engine::new(&base_config(options))?, SlotReset::OnDemand))
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
pub(crate) fn start_ticker(engine: &Engine) {
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
