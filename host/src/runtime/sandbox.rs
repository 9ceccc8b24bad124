//! What one call's `Store` holds: the WASI context built from the grant, the wasi:http hook,
//! the memory limiter and the request context.
//!
//! Secure defaults live in `HostState::new`: no preopens, no environment, no arguments, stdin
//! closed, stdout/stderr forwarded to the log (bounded), no sockets, no DNS. Everything else
//! comes from the `policy::Grant`; the host's own stdio, environment and network are never passed through.
//!
//! Granted directories are pinned: `Sandbox::new` opens each one once, at load, and every call's
//! preopen is derived from that open handle (through `/proc/self/fd`), never looked up by path
//! again. Renaming a granted directory, or replacing it (or any directory above it) with a
//! symlink after load, changes nothing a plugin can reach.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::audit::DescriptorPaths;
use super::descriptors::{CallDescriptors, DescriptorPool, Exhausted, Unreserved};
use super::egress::{Egress, ResponseBudget};
use super::host::CallBudgets;
use super::http::{HttpPolicy, InjectedSecret, MAX_REQUESTS_IN_FLIGHT};
use super::output::{LogSink, OutputBudget, Stream};
use super::refusals::{Recorder, RefusalCounters};
use crate::plugin::CallContext;
use crate::policy::{FsMode, Grant, OutboundRules, RefusalKind, SecretGrant, SecretSource};

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
/// pollables, wasi:http fields and bodies). Each open file is also a host descriptor, so this
/// bounds the descriptors one call can hold; together with `HTTP_FIELDS_BYTES` it bounds the
/// header memory one call can hold (10,000 entries of 128 KiB each once reached 1.3 GB).
pub(crate) const MAX_RESOURCES: usize = 1024;
/// The most descriptors one call can hold, which a plugin's descriptor budget need not exceed.
pub(crate) const CALL_CEILING: super::descriptors::CallCeiling =
    super::descriptors::CallCeiling { resources: MAX_RESOURCES as u64, requests: MAX_REQUESTS_IN_FLIGHT as u64 };
/// In-memory bytes of one wasi:http `fields` resource (headers or trailers); wasi:http's own
/// default is 128 KiB.
const HTTP_FIELDS_BYTES: usize = 32 << 10;

/// Why a plugin's sandbox could not be prepared at load.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A granted directory could not be opened.
    #[error("cannot open the granted directory `{}`: {source} (fix: create it, or correct `files` in the grant)", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The opened directory cannot be handed to calls by handle.
    #[error("cannot pin the granted directory `{}`: {why} (fix: serve from Linux with /proc mounted)", path.display())]
    Pin { path: PathBuf, why: String },
    /// A secret's value cannot be read or is not a header value (the value is never shown).
    #[error("the secret `{header}` for {target} ({source_name}) {why}")]
    Secret { header: String, target: String, source_name: String, why: &'static str },
    /// No room is left in the process's descriptor pool for the plugin's budget.
    #[error(transparent)]
    Descriptors(#[from] Unreserved),
}

/// Longest secret file read.
const MAX_SECRET_BYTES: u64 = 16 << 10;

/// A granted directory opened once, at load. `handle` keeps the directory itself (not its
/// path) for the life of the plugin; `by_handle` names that open handle for the WASI builder.
#[derive(Debug)]
struct PinnedDir {
    /// Never read: holding it keeps the pinned directory open for `by_handle`.
    _handle: std::fs::File,
    by_handle: PathBuf,
    guest: String,
    perms: FsPerms,
}

/// A grant prepared once per plugin for building every call's store quickly.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(crate) plugin: Arc<str>,
    pub(crate) grant: Arc<Grant>,
    pub(crate) rules: Arc<OutboundRules>,
    pub(crate) refusals: Arc<RefusalCounters>,
    dirs: Arc<[PinnedDir]>,
    secrets: Arc<[InjectedSecret]>,
    services: HostServices,
    /// Descriptors all calls of this plugin may hold together, reserved out of the process's.
    descriptors: Arc<DescriptorPool>,
}

/// What the runtime shares with every plugin's sandbox: the outgoing connector and the
/// process's descriptor pool (which plugins reserve their budgets from).
#[derive(Debug, Clone)]
pub(crate) struct HostServices {
    pub(crate) egress: Egress,
    pub(crate) descriptors: Arc<DescriptorPool>,
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

impl Sandbox {
    /// Opens every granted directory and keeps the handles; reads every secret's value;
    /// reserves the plugin's descriptor budget (cut to what is left, with a warning).
    ///
    /// # Errors
    /// A directory that cannot be opened (or is a symlink), a system where an open handle
    /// cannot be re-opened through `/proc/self/fd`, a secret that cannot be read, or no room
    /// left for the descriptor budget.
    pub(crate) fn new(plugin: &str, mut grant: Grant, services: HostServices) -> Result<Sandbox, SandboxError> {
        let dirs = grant.files.iter().map(|dir| pin(&dir.host, &dir.guest, dir.mode)).collect::<Result<Vec<_>, _>>()?;
        let secrets = grant.secrets.iter().map(read_secret).collect::<Result<Vec<_>, _>>()?;
        let rules = Arc::new(grant.network.clone());
        let wanted = super::descriptors::wanted(&grant, CALL_CEILING);
        let descriptors = DescriptorPool::reserve(&services.descriptors, wanted)?;
        if descriptors.limit() < wanted {
            tracing::warn!(
                %plugin,
                budget = wanted,
                reserved = descriptors.limit(),
                pool = services.descriptors.limit(),
                "the plugin's descriptor budget is cut to what the plugins loaded before it left (fix: lower `limits.descriptors` in their grants, or raise the open-file limit)"
            );
            grant.limits.descriptors = descriptors.limit();
        }
        Ok(Sandbox {
            plugin: Arc::from(plugin),
            grant: Arc::new(grant),
            rules,
            refusals: Arc::new(RefusalCounters::default()),
            dirs: dirs.into(),
            secrets: secrets.into(),
            descriptors: Arc::new(descriptors),
            services,
        })
    }
}

impl Sandbox {
    /// Descriptors the plugin's running calls hold from its pool.
    pub(crate) fn descriptors_in_use(&self) -> u64 {
        self.descriptors.used()
    }
}

/// Reads a secret's value from the host's environment or a file, as a sensitive header value.
fn read_secret(secret: &SecretGrant) -> Result<InjectedSecret, SandboxError> {
    let fail = |why| SandboxError::Secret { header: secret.header.clone(), target: secret.target.to_string(), source_name: secret.source.to_string(), why };
    let value = match &secret.source {
        SecretSource::Env(name) => std::env::var(name).map_err(|_| fail("is not set (or not UTF-8) in the host's environment"))?,
        SecretSource::File(path) => {
            use std::io::Read;
            let file = std::fs::File::open(path).map_err(|_| fail("cannot be read"))?;
            let mut text = String::new();
            file.take(MAX_SECRET_BYTES + 1).read_to_string(&mut text).map_err(|_| fail("is not UTF-8 text"))?;
            if text.len() as u64 > MAX_SECRET_BYTES {
                return Err(fail("is longer than 16 KiB"));
            }
            let trimmed = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text);
            trimmed.to_owned()
        }
    };
    if value.is_empty() {
        return Err(fail("is empty"));
    }
    let mut value =
        http::HeaderValue::from_str(&format!("{}{value}", secret.prefix)).map_err(|_| fail("is not a valid header value (printable ASCII only)"))?;
    value.set_sensitive(true);
    let header = http::HeaderName::from_bytes(secret.header.as_bytes()).map_err(|_| fail("has an invalid header name"))?;
    Ok(InjectedSecret { target: secret.target.clone(), header, value })
}

fn pin(host: &std::path::Path, guest: &str, mode: FsMode) -> Result<PinnedDir, SandboxError> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(host, flags, Mode::empty()).map_err(|e| SandboxError::Open { path: host.to_path_buf(), source: e.into() })?;
    let handle = std::fs::File::from(fd);
    let by_handle = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    let pinned = handle.metadata().map_err(|e| SandboxError::Open { path: host.to_path_buf(), source: e })?;
    match std::fs::metadata(&by_handle) {
        Ok(seen) if seen.dev() == pinned.dev() && seen.ino() == pinned.ino() => {}
        Ok(_) => return Err(SandboxError::Pin { path: host.to_path_buf(), why: "/proc/self/fd names another file".to_owned() }),
        Err(e) => return Err(SandboxError::Pin { path: host.to_path_buf(), why: e.to_string() }),
    }
    let perms = match mode {
        FsMode::ReadOnly => FsPerms::ReadOnly,
        FsMode::ReadWrite => FsPerms::ReadWrite,
    };
    Ok(PinnedDir { _handle: handle, by_handle, guest: guest.to_owned(), perms })
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
    pub(crate) stop: Option<super::plugin::Stop>,
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
    pub(crate) fn new(sandbox: &Sandbox, cx: CallContext, operation: Option<Arc<str>>) -> Result<HostState, PrepareError> {
        let grant = &sandbox.grant;
        let recorder = Recorder::new(sandbox.plugin.clone(), cx.request_id.clone(), operation, sandbox.refusals.clone());
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
        Recorder::new(Arc::from("p"), "1".into(), None, Arc::default())
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
