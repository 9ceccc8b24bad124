//! What one call's `Store` holds: the WASI context built from the prepared sandbox, the
//! wasi:http hook, the memory limiter, the call's host-interface budgets, the guest paths of its
//! open descriptors and the request context.
//!
//! Secure defaults live in `HostState::new`: no preopens, no environment, no arguments, stdin
//! closed, stdout/stderr forwarded to the log (bounded), no sockets, no DNS. Everything else
//! comes from the `policy::Grant`; the host's own stdio, environment and network are never passed through.

use crate::telemetry::trace::Carried;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::ResourceLimiter;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::filesystem::types as fs;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::descriptors::{CallDescriptors, Exhausted};
use super::egress::ResponseBudget;
use super::egress_http::{HttpPolicy, MAX_REQUESTS_IN_FLIGHT};
use super::guest_output::{LogSink, OutputBudget, Stream};
use super::prepared::{MAX_RESOURCES, Sandbox};
use super::refusal_log::Recorder;
use crate::plugin::CallContext;
use crate::policy::RefusalKind;

/// Bytes of guest stdout+stderr forwarded to the log per call; the rest is dropped and recorded.
pub(crate) const GUEST_OUTPUT_BUDGET: u64 = 64 << 10;
/// Records (lines) of guest stdout+stderr forwarded to the log per call: a guest writing bare
/// newlines must not turn the byte budget into tens of thousands of log records.
pub(crate) const GUEST_OUTPUT_RECORDS: u64 = 256;
/// Elements across one instance's tables (function pointers); bounds table-growth attacks.
const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Core and component instances one store may hold (a component has several core instances).
const MAX_INSTANCES: usize = 64;
/// Memories and tables one store may hold.
const MAX_MEMORIES: usize = 16;
const MAX_TABLES: usize = 64;
/// Entries in the WASI resource table of one call (open files and directories, streams,
/// In-memory bytes of one wasi:http `fields` resource (headers or trailers); wasi:http's own
/// default is 128 KiB.
const HTTP_FIELDS_BYTES: usize = 32 << 10;

/// Log records one call may emit. Without a cap, a plugin logging in a loop floods the client
/// (and the host's memory while the client reads slowly).
const LOG_RECORDS_PER_CALL: u32 = 1000;
/// Bytes of log messages one call may emit (after each message is cut to `MAX_LOG_BYTES`).
const LOG_BYTES_PER_CALL: usize = 1 << 20;
/// Progress notifications one call may emit.
const PROGRESS_PER_CALL: u32 = 1000;
/// List-change and resource-update notices one call may emit, together.
const NOTICES_PER_CALL: u32 = 64;

/// What one call may still emit through the host interface.
#[derive(Debug)]
pub(crate) struct CallBudgets {
    pub(crate) log_records: u32,
    pub(crate) log_bytes: usize,
    pub(crate) progress: u32,
    pub(crate) notices: u32,
}

impl Default for CallBudgets {
    fn default() -> Self {
        CallBudgets { log_records: LOG_RECORDS_PER_CALL, log_bytes: LOG_BYTES_PER_CALL, progress: PROGRESS_PER_CALL, notices: NOTICES_PER_CALL }
    }
}

/// Longest guest path kept per descriptor, and longest path or name shown in a refusal.
pub(crate) const MAX_SHOWN: usize = 1024;

/// The guest-visible path of every descriptor a call has opened, by resource handle: the
/// preopens by their guest path, and each descriptor opened from one by the joined path. A
/// handle is reused only by a new descriptor, which replaces the entry, so the map stays within
/// the call's resource-table capacity.
#[derive(Debug, Default)]
pub(crate) struct DescriptorPaths {
    by_handle: HashMap<u32, Arc<str>>,
}

impl DescriptorPaths {
    pub(crate) fn path_of(&self, fd: &Resource<fs::Descriptor>) -> Option<Arc<str>> {
        self.by_handle.get(&fd.rep()).cloned()
    }

    pub(crate) fn insert(&mut self, fd: &Resource<fs::Descriptor>, path: &str) {
        self.by_handle.insert(fd.rep(), Arc::from(shown(path)));
    }
}

/// `path` cut to `MAX_SHOWN` bytes (with a marker).
pub(crate) fn shown(path: &str) -> String {
    crate::runtime::text::truncate(path.to_owned(), MAX_SHOWN)
}

/// Why a call stopped early, as seen by the epoch callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Deadline,
    Cancelled,
}

/// Why a call's sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PrepareError {
    /// The plugin's or the process's descriptor budget has no room for the call's preopens.
    #[error("no room for {0}")]
    Descriptors(Exhausted),
    /// A pinned directory could not be re-opened.
    #[error("{0}")]
    Io(#[from] std::io::Error),
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
    pub(crate) budgets: CallBudgets,
    pub(crate) recorder: Recorder,
    /// The descriptor budget this call holds, and how many preopens it has.
    descriptors: CallDescriptors,
    preopens: u64,
    /// Set by the epoch callback when it stops the guest.
    pub(crate) stop: Option<Stop>,
    /// Guest paths of the call's open descriptors, for file refusal records.
    pub(crate) descriptor_paths: DescriptorPaths,
}

impl HostState {
    /// Builds the call's WASI context from the grant; `operation` names what is being served
    /// (a tool, a prompt, a resource) for refusal records.
    ///
    /// # Errors
    /// No descriptor budget left for the call's preopens (recorded), or a pinned directory
    /// that can no longer be re-opened.
    pub(crate) fn new(sandbox: &Sandbox, cx: CallContext, operation: Option<Arc<str>>, trace: Carried) -> Result<HostState, PrepareError> {
        let grant = &sandbox.grant;
        let recorder = Recorder::new(sandbox.plugin.clone(), cx.request_id.clone(), operation, sandbox.refusals.clone(), cx.refusal_counter());
        let preopens = sandbox.dirs.len() as u64;
        let mut descriptors = CallDescriptors::new(sandbox.descriptors.clone());
        if let Err(exhausted) = descriptors.hold(preopens) {
            recorder.refuse(RefusalKind::Resources, &exhausted.to_string());
            return Err(PrepareError::Descriptors(exhausted));
        }
        let budget = OutputBudget::new(GUEST_OUTPUT_BUDGET, GUEST_OUTPUT_RECORDS);
        let mut b = WasiCtxBuilder::new();
        // Stdin stays closed (the builder's default). Output goes to the log, never to fd 1.
        b.stdout(LogSink::new(sandbox.plugin.clone(), Stream::Stdout, budget.clone(), recorder.clone()));
        b.stderr(LogSink::new(sandbox.plugin.clone(), Stream::Stderr, budget, recorder.clone()));
        for (name, value) in &grant.env {
            b.env(name, value);
        }
        for dir in sandbox.dirs.iter() {
            // Re-opens the handle pinned at load (a magic link to the open directory), so the
            // preopen is the directory the operator named, wherever its path now leads.
            b.preopened_dir(&dir.by_handle, &dir.guest, dir.perms).map_err(|e| std::io::Error::other(format!("{}: {e}", dir.guest)))?;
        }
        // Raw sockets are never granted here: outgoing HTTP goes through wasi:http and its hook.
        b.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        Ok(HostState {
            wasi: b.build(),
            http: {
                let mut http = WasiHttpCtx::new();
                http.set_field_size_limit(HTTP_FIELDS_BYTES);
                http
            },
            table,
            hooks: HttpPolicy {
                recorder: recorder.clone(),
                rules: sandbox.rules.clone(),
                secrets: sandbox.secrets.clone(),
                egress: sandbox.services.egress.clone(),
                descriptors: sandbox.descriptors.clone(),
                in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_REQUESTS_IN_FLIGHT)),
                budget: Arc::new(ResponseBudget::new(grant.limits.memory)),
                trace,
            },
            limiter: MemoryLimiter::new(grant.limits.memory, recorder.clone()),
            cx,
            plugin: sandbox.plugin.clone(),
            budgets: CallBudgets::default(),
            recorder,
            descriptors,
            preopens,
            stop: None,
            descriptor_paths: DescriptorPaths::default(),
        })
    }

    /// Charges the call, before it opens one more descriptor, for every entry of its resource
    /// table (each may hold one), its preopens and the new one. A refusal is recorded.
    pub(crate) fn charge_descriptor(&mut self) -> Result<(), Exhausted> {
        let entries = self.table.iter_mut().count() as u64;
        let result = self.descriptors.hold(entries + self.preopens + 1);
        if let Err(exhausted) = result {
            self.recorder.refuse(RefusalKind::Resources, &exhausted.to_string());
        }
        result
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
    recorder: Recorder,
}

impl MemoryLimiter {
    fn new(limit: u64, recorder: Recorder) -> Self {
        MemoryLimiter { limit: usize::try_from(limit).unwrap_or(usize::MAX), used: 0, table_elements: 0, hit: Arc::new(AtomicBool::new(false)), recorder }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        if maximum.is_some_and(|max| desired > max) || self.used.saturating_add(growth) > self.limit {
            self.hit.store(true, Ordering::Release);
            self.recorder.refuse(RefusalKind::Memory, "linear memory");
            return Ok(false);
        }
        self.used += growth;
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        if maximum.is_some_and(|max| desired > max) || self.table_elements.saturating_add(growth) > MAX_TABLE_ELEMENTS {
            self.recorder.refuse(RefusalKind::Resources, "table elements");
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

    fn recorder() -> Recorder {
        Recorder::new(Arc::from("p"), "1".into(), None, Arc::default(), Arc::default())
    }

    #[test]
    fn memory_is_limited_in_total_across_memories() {
        let mut limiter = MemoryLimiter::new(10 << 20, recorder());
        assert!(limiter.memory_growing(0, 6 << 20, None).expect("ok"));
        assert!(limiter.memory_growing(0, 3 << 20, None).expect("ok"), "a second memory shares the budget");
        assert!(!limiter.memory_growing(6 << 20, 8 << 20, None).expect("ok"), "6+3+2 MiB is over 10 MiB");
        assert!(limiter.hit.load(Ordering::Acquire));
        assert!(limiter.memory_growing(3 << 20, 4 << 20, None).expect("ok"));
    }

    #[test]
    fn table_elements_are_limited() {
        let mut limiter = MemoryLimiter::new(1 << 20, recorder());
        assert!(limiter.table_growing(0, 1000, None).expect("ok"));
        assert!(!limiter.table_growing(1000, MAX_TABLE_ELEMENTS + 1, None).expect("ok"));
    }
}
