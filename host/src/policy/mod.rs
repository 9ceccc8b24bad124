//! Operator grants and caller policy as plain data, decided by pure functions; no IO, no tokio,
//! no wasmtime.
//!
//! Caller policy (`access`, `rates`): which tools, resources and prompts each principal may see
//! and use, what using them takes (scopes, a person's approval), and how often.
//!
//! A `Grant` is what one plugin may use: preopened directories, environment variables,
//! outgoing HTTP targets and resource limits. `Grant::default()` grants nothing: a plugin with
//! the default grant can compute, log and call the host, and nothing else. The config module
//! builds grants from operator files; the runtime installs them into WASI and wasmtime.

mod access;
mod address;
mod drift;
mod files;
mod network;
mod rates;
mod refusal;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use access::{AccessDecision, AccessRules, Approval, Effect, ItemKind, Pattern, Rule, Who};
pub use address::{SpecialUse, canonical as canonical_ip, special_use};
pub use drift::{DriftPolicies, DriftPolicy, DriftPolicyError, DriftSource};
pub use files::{GrantConflict, GrantRef, Protected, check_file_grants};
pub use network::{EgressRules, PatternProblem, Target, parse_exact_target};
pub use rates::{Rate, RateError, RateRules};
pub use refusal::RefusalKind;

/// Everything one plugin is allowed to use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grant {
    /// Host directories visible inside the sandbox.
    pub files: Vec<FsGrant>,
    /// Environment variables the plugin sees (and nothing else of the host's environment).
    pub env: BTreeMap<String, String>,
    /// Outgoing HTTP targets (wasi:http).
    pub network: EgressRules,
    /// Credentials the host adds to requests for one target; the plugin never sees them.
    pub secrets: Vec<SecretGrant>,
    /// Resource limits of each call.
    pub limits: Limits,
    /// The prefix of the plugin's exposed names: `None` means the default (the plugin id),
    /// `Some("")` means no prefix at all.
    pub expose_prefix: Option<String>,
}

/// A host directory preopened at a path inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrant {
    /// The host directory: absolute and canonical (the config module resolves it).
    pub host: PathBuf,
    /// The absolute path the plugin sees, for example `/data`.
    pub guest: String,
    pub mode: FsMode,
}

/// A header the host adds to a plugin's outgoing requests for exactly one target. The grant
/// holds where the value comes from, never the value: it is read when the plugin is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretGrant {
    /// The scheme, host and port the header is sent to (and nothing else, redirects included).
    pub target: Target,
    /// The header name, lowercase (for example `authorization`).
    pub header: String,
    /// Where the value is read from.
    pub source: SecretSource,
    /// Text put before the value (for example `Bearer `).
    pub prefix: String,
}

/// Where a secret's value is read from, in the host's environment or file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable of the host process.
    Env(String),
    /// A file (one trailing newline is dropped).
    File(PathBuf),
}

impl std::fmt::Display for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Env(name) => write!(f, "env {name}"),
            SecretSource::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

/// Whether a preopened directory may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsMode {
    ReadOnly,
    ReadWrite,
}

/// Per-call resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Total bytes of linear memory across all memories of one instance.
    pub memory: u64,
    /// Wall-clock deadline of one call.
    pub timeout: Duration,
    /// How many calls of this plugin may run at once (more wait their turn).
    pub concurrency: u32,
    /// Bytes one call's result may take on the wire, as JSON (all of it: text, data, keys and
    /// punctuation), at most `Limits::MAX_OUTPUT`.
    pub output: u64,
    /// Host file descriptors (files, directories, connections) all calls of this plugin may
    /// hold together.
    pub descriptors: u64,
}

impl Limits {
    /// 64 MiB of memory.
    pub const DEFAULT_MEMORY: u64 = 64 << 20;
    /// 30 seconds per call.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// 16 concurrent calls per plugin.
    pub const DEFAULT_CONCURRENCY: u32 = 16;
    /// 1 MiB of output per call.
    pub const DEFAULT_OUTPUT: u64 = 1 << 20;
    /// 4096 descriptors across the plugin's calls.
    pub const DEFAULT_DESCRIPTORS: u64 = 4096;
    /// The largest output limit: 16 MiB. The host lifts a result out of the guest under a
    /// host-call data cap sized from the output limit (several times it, since a lifted list
    /// takes more host memory than its JSON), so this also bounds what one call can make the
    /// host allocate. A larger grant is refused by the config and capped by the runtime.
    pub const MAX_OUTPUT: u64 = 16 << 20;
}

impl Default for Limits {
    /// 64 MiB memory, 30 s timeout, 16 concurrent calls, 1 MiB output, 4096 descriptors.
    fn default() -> Self {
        Limits {
            memory: Limits::DEFAULT_MEMORY,
            timeout: Limits::DEFAULT_TIMEOUT,
            concurrency: Limits::DEFAULT_CONCURRENCY,
            output: Limits::DEFAULT_OUTPUT,
            descriptors: Limits::DEFAULT_DESCRIPTORS,
        }
    }
}

/// The outcome of a policy check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    /// True for `Allow`.
    pub fn is_allowed(self) -> bool {
        self == Decision::Allow
    }
}

/// A pattern that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}`: {message}")]
pub struct PolicyError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub message: PatternProblem,
}

#[cfg(test)]
mod tests;
