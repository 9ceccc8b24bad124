//! What one call's `Store` holds: the WASI context built from the grant, the wasi:http hook,
//! the memory limiter and the request context.
//!
//! Secure defaults live in `HostState::new`: no preopens, no environment, no arguments, stdin
//! closed, stdout/stderr forwarded to the log (bounded), no sockets, no DNS. Everything else
//! comes from the `policy::Grant`; the host's own stdio, environment and network are never passed through.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::http::HttpPolicy;
use super::output::{LogSink, OutputBudget, Stream};
use crate::plugin::CallContext;
use crate::policy::{FsMode, Grant, OutboundRules};

/// Bytes of guest stdout+stderr forwarded to the log per call; the rest is dropped silently.
pub(crate) const GUEST_OUTPUT_BUDGET: u64 = 64 << 10;
/// Elements across one instance's tables (function pointers); bounds table-growth attacks.
const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Core and component instances one store may hold (a component has several core instances).
const MAX_INSTANCES: usize = 64;
/// Memories and tables one store may hold.
const MAX_MEMORIES: usize = 16;
const MAX_TABLES: usize = 64;
/// Entries in the WASI resource table (open files, streams, pollables).
const MAX_RESOURCES: usize = 10_000;

/// A grant prepared once per plugin for building every call's store quickly.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(crate) plugin: Arc<str>,
    pub(crate) grant: Arc<Grant>,
    pub(crate) rules: Arc<OutboundRules>,
}

impl Sandbox {
    pub(crate) fn new(plugin: &str, grant: Grant) -> Sandbox {
        let rules = Arc::new(grant.network.clone());
        Sandbox { plugin: Arc::from(plugin), grant: Arc::new(grant), rules }
    }
}

/// The data of one call's `Store`.
pub(crate) struct HostState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    hooks: HttpPolicy,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) cx: CallContext,
    pub(crate) plugin: Arc<str>,
    /// Set by the epoch callback when it stops the guest.
    pub(crate) stop: Option<super::plugin::Stop>,
}

impl HostState {
    /// Builds the call's WASI context from the grant.
    ///
    /// # Errors
    /// A granted directory that can no longer be opened.
    pub(crate) fn new(sandbox: &Sandbox, cx: CallContext) -> std::io::Result<HostState> {
        let grant = &sandbox.grant;
        let budget = OutputBudget::new(GUEST_OUTPUT_BUDGET);
        let mut b = WasiCtxBuilder::new();
        // Stdin stays closed (the builder's default). Output goes to the log, never to fd 1.
        b.stdout(LogSink::new(sandbox.plugin.clone(), Stream::Stdout, budget.clone()));
        b.stderr(LogSink::new(sandbox.plugin.clone(), Stream::Stderr, budget));
        for (name, value) in &grant.env {
            b.env(name, value);
        }
        for dir in &grant.files {
            let perms = match dir.mode {
                FsMode::ReadOnly => FsPerms::ReadOnly,
                FsMode::ReadWrite => FsPerms::ReadWrite,
            };
            b.preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", dir.host.display())))?;
        }
        // Raw sockets are never granted here: outgoing HTTP goes through wasi:http and its hook.
        b.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        Ok(HostState {
            wasi: b.build(),
            http: WasiHttpCtx::new(),
            table,
            hooks: HttpPolicy {
                plugin: sandbox.plugin.clone(),
                request_id: cx.request_id.clone(),
                rules: sandbox.rules.clone(),
            },
            limiter: MemoryLimiter::new(grant.limits.memory),
            cx,
            plugin: sandbox.plugin.clone(),
            stop: None,
        })
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.hooks }
    }
}

/// Limits memory in total across all memories of an instance (wasmtime's `StoreLimits` limits
/// each memory on its own), plus table elements and instance counts. A refused growth makes
/// `memory.grow` return -1, so the guest sees an allocation failure rather than a trap.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: usize,
    used: usize,
    table_elements: usize,
    /// Set when a growth was refused; a trap after that is reported as the memory limit.
    pub(crate) hit: Arc<AtomicBool>,
}

impl MemoryLimiter {
    fn new(limit: u64) -> Self {
        MemoryLimiter {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            used: 0,
            table_elements: 0,
            hit: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        if maximum.is_some_and(|max| desired > max) || self.used.saturating_add(growth) > self.limit {
            self.hit.store(true, Ordering::Release);
            return Ok(false);
        }
        self.used += growth;
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        if maximum.is_some_and(|max| desired > max) || self.table_elements.saturating_add(growth) > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.table_elements += growth;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_limited_in_total_across_memories() {
        let mut limiter = MemoryLimiter::new(10 << 20);
        assert!(limiter.memory_growing(0, 6 << 20, None).expect("ok"));
        assert!(limiter.memory_growing(0, 3 << 20, None).expect("ok"), "a second memory shares the budget");
        assert!(!limiter.memory_growing(6 << 20, 8 << 20, None).expect("ok"), "6+3+2 MiB is over 10 MiB");
        assert!(limiter.hit.load(Ordering::Acquire));
        assert!(limiter.memory_growing(3 << 20, 4 << 20, None).expect("ok"));
    }

    #[test]
    fn table_elements_are_limited() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.table_growing(0, 1000, None).expect("ok"));
        assert!(!limiter.table_growing(1000, MAX_TABLE_ELEMENTS + 1, None).expect("ok"));
    }
}
