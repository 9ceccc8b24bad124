//! A plugin's grant prepared once, at load, for building every call's store quickly: pinned
//! directories, secrets read, the descriptor budget reserved.
//!
//! Granted directories are pinned: `Sandbox::new` opens each one once, at load, and every call's
//! preopen is derived from that open handle (through `/proc/self/fd`), never looked up by path
//! again. Renaming a granted directory, or replacing it (or any directory above it) with a
//! symlink after load, changes nothing a plugin can reach.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;

use wasmtime_wasi::FsPerms;

use super::descriptors::{CallCeiling, DescriptorPool, Unreserved};
use super::egress::Egress;
use super::egress_http::{InjectedSecret, MAX_REQUESTS_IN_FLIGHT};
use super::refusal_log::RefusalCounters;
use crate::policy::{EgressRules, FsMode, Grant, SecretGrant, SecretSource};

/// pollables, wasi:http fields and bodies). Each open file is also a host descriptor, so this
/// bounds the descriptors one call can hold; together with `HTTP_FIELDS_BYTES` it bounds the
/// header memory one call can hold (10,000 entries of 128 KiB each once reached 1.3 GB).
pub(crate) const MAX_RESOURCES: usize = 1024;
/// The most descriptors one call can hold, which a plugin's descriptor budget need not exceed.
pub(crate) const CALL_CEILING: CallCeiling = CallCeiling { resources: MAX_RESOURCES as u64, requests: MAX_REQUESTS_IN_FLIGHT as u64 };

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
pub(crate) struct PinnedDir {
    /// Never read: holding it keeps the pinned directory open for `by_handle`.
    _handle: std::fs::File,
    pub(crate) by_handle: PathBuf,
    pub(crate) guest: String,
    pub(crate) perms: FsPerms,
}

/// A grant prepared once per plugin for building every call's store quickly.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(crate) plugin: Arc<str>,
    pub(crate) grant: Arc<Grant>,
    pub(crate) rules: Arc<EgressRules>,
    pub(crate) refusals: Arc<RefusalCounters>,
    pub(crate) dirs: Arc<[PinnedDir]>,
    pub(crate) secrets: Arc<[InjectedSecret]>,
    pub(crate) services: HostServices,
    /// Descriptors all calls of this plugin may hold together, reserved out of the process's.
    pub(crate) descriptors: Arc<DescriptorPool>,
}

/// What the runtime shares with every plugin's sandbox: the outgoing connector and the
/// process's descriptor pool (which plugins reserve their budgets from).
#[derive(Debug, Clone)]
pub(crate) struct HostServices {
    pub(crate) egress: Egress,
    pub(crate) descriptors: Arc<DescriptorPool>,
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
