//! Operator configuration files (`paddock.toml`, `<plugin>.toml`) parsed and validated into grants.
//!
//! `paddock.toml` (in the plugins folder, or `--config FILE`) holds one `[plugins.<id>]` table per
//! plugin. A `<id>.toml` beside `<id>.wasm` holds the same keys at its top level. When both set
//! a key, the plugin's own file wins for that key (keys are not merged deeper: a `limits` table
//! in `<id>.toml` replaces the whole `limits` of `paddock.toml`). Relative host paths are resolved
//! against the directory of the file that names them. The name `paddock.toml` in the plugins
//! folder is always the main file, never the grant of a plugin called `paddock`.
//!
//! Keys of a plugin's table:
//! - `files = [{ host = "./data", guest = "/data", mode = "ro" | "rw" }]` (mode defaults to `ro`);
//! - `env = { NAME = "value" }`;
//! - `network = ["http://127.0.0.1:*", "https://*.example.com"]` (see `policy::EgressRules`);
//! - `secrets = [{ target = "https://api.example.com", header = "Authorization", from_env = "TOKEN", prefix = "Bearer " }]`
//!   (or `from_file`; see `secrets`);
//! - `limits = { memory = "64MiB", timeout = "10s", concurrency = 8, output = "1MiB" }`;
//! - `expose = { prefix = "name" }` (`""` for no prefix; default: the plugin id).
//!
//! Beside `[plugins]`, the main file holds the caller policy: `[access]` and `[rates]` (see
//! `callers`); `[auth]` makes the HTTP listener an OAuth 2.1 resource server (see `auth`).
//!
//! Validation never stops at the first mistake: every problem is collected as a `ConfigError`
//! with its file, key and a fix. This module reads files and checks that granted host
//! directories exist; it does not know wasmtime.

pub mod auth;
mod callers;
mod context;
mod secrets;
mod values;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::policy::{AccessRules, Grant, RateRules};

/// The name of the main configuration file in a plugins folder.
pub const MAIN_FILE: &str = "paddock.toml";

/// How serious a configuration problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The plugin it concerns is not loaded (or nothing is, for a broken main file).
    Error,
    /// Worth fixing, but nothing is refused.
    Warning,
}

/// One problem in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// The key as a dotted path, for example `plugins.weather.limits.memory`.
    pub key: String,
    pub message: String,
    /// What to do about it.
    pub fix: String,
    pub severity: Severity,
    /// The plugin whose grant it spoils, if any.
    pub plugin: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = if self.severity == Severity::Warning { "warning: " } else { "" };
        write!(f, "{}: {level}{}: {} (fix: {})", self.file.display(), self.key, self.message, self.fix)
    }
}

/// Validated configuration: one grant per configured plugin, plus every problem found.
#[derive(Debug, Clone, Default)]
pub struct Config {
    grants: BTreeMap<String, Grant>,
    /// How a change of each plugin's definitions is taken (`drift`).
    drift: crate::policy::DriftPolicies,
    access: AccessRules,
    rates: RateRules,
    problems: Vec<ConfigError>,
    files: Vec<PathBuf>,
    /// `[auth]` of the main file, as written (checked: its problems are among `problems`).
    auth: auth::AuthDraft,
}

impl Config {
    /// A configuration with no files: every plugin gets the default (empty) grant.
    pub fn empty() -> Config {
        Config::default()
    }

    /// Reads `config_file` (or `<plugins_dir>/paddock.toml` when it exists) and every
    /// `<id>.toml` in `plugins_dir`. Never fails: problems are collected in `problems()`.
    pub fn load(plugins_dir: &Path, config_file: Option<&Path>) -> Config {
        let mut loader = Loader::default();
        let main = config_file.map(Path::to_path_buf).unwrap_or_else(|| plugins_dir.join(MAIN_FILE));
        if config_file.is_some() || main.exists() {
            loader.read_main(&main, plugins_dir);
        }
        let mut side_files: Vec<PathBuf> = std::fs::read_dir(plugins_dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
            .filter(|p| p.file_name().is_some_and(|n| n != MAIN_FILE) && !same_file(p, &main))
            .collect();
        side_files.sort();
        for file in side_files {
            loader.read_side(&file, plugins_dir);
        }
        loader.finish()
    }

    /// The grant of plugin `id`: the default grant when nothing configures it, or every problem
    /// of its configuration when it is invalid.
    pub fn grant(&self, id: &str) -> Result<Grant, Vec<ConfigError>> {
        let errors: Vec<ConfigError> = self.problems.iter().filter(|p| p.severity == Severity::Error && p.plugin.as_deref() == Some(id)).cloned().collect();
        if errors.is_empty() { Ok(self.grants.get(id).cloned().unwrap_or_default()) } else { Err(errors) }
    }

    /// How an update of plugin `id` that changes its definitions is taken: its `drift`, else the
    /// main file's, else `warn`.
    pub fn drift(&self, id: &str) -> crate::policy::DriftPolicy {
        self.drift.of(id)
    }

    /// Every plugin's `drift` policy.
    pub fn drift_policies(&self) -> &crate::policy::DriftPolicies {
        &self.drift
    }

    /// Who may see and use which tools, resources and prompts (`[access]`).
    pub fn access(&self) -> &AccessRules {
        &self.access
    }

    /// The rate limits (`[rates]`).
    pub fn rates(&self) -> &RateRules {
        &self.rates
    }

    /// Every configuration file that was read (the main file and each `<id>.toml`): files that
    /// no plugin grant may make writable.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Every problem, errors and warnings, in file order.
    pub fn problems(&self) -> &[ConfigError] {
        &self.problems
    }

    /// Problems that concern no single plugin (an unreadable or malformed main file, unknown
    /// top-level keys): a server should refuse to start on these.
    pub fn global_errors(&self) -> impl Iterator<Item = &ConfigError> {
        self.problems.iter().filter(|p| p.severity == Severity::Error && p.plugin.is_none())
    }

    /// The largest memory limit of any grant (at least the default): what the runtime's
    /// `RuntimeOptions::max_memory` should be so every grant can be honoured.
    pub fn largest_memory_limit(&self) -> u64 {
        self.grants.values().map(|g| g.limits.memory).fold(crate::policy::Limits::DEFAULT_MEMORY, u64::max)
    }

    /// `[auth]` as written (empty when absent). On its own it is complete or reported among
    /// `problems`; `serve` flags may still override its keys.
    pub fn auth(&self) -> &auth::AuthDraft {
        &self.auth
    }

    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }
}

/// A key's value and the file it came from.
type Sourced = (PathBuf, toml::Value);

#[derive(Default)]
struct Loader {
    /// Per plugin, per key: where the value came from and the value.
    tables: BTreeMap<String, BTreeMap<String, Sourced>>,
    access: AccessRules,
    rates: RateRules,
    /// Per plugin: the key prefix used in messages, per file.
    problems: Vec<ConfigError>,
    /// Every file read.
    files: Vec<PathBuf>,
    /// `[auth]`, and the file it came from.
    auth: Option<(PathBuf, toml::Value)>,
    /// Top-level `drift`.
    default_drift: crate::policy::DriftPolicy,
}

impl Loader {
    fn read_main(&mut self, file: &Path, plugins_dir: &Path) {
        let Some(table) = self.read_table(file, None) else { return };
        for (key, value) in table {
            match key.as_str() {
                "plugins" => {}
                "auth" => {
                    self.auth = Some((file.to_path_buf(), value));
                    continue;
                }
                "access" => {
                    self.access = callers::access(file, value, &mut self.problems);
                    continue;
                }
                "rates" => {
                    self.rates = callers::rates(file, value, &mut self.problems);
                    continue;
                }
                "drift" => {
                    match drift_policy(&value) {
                        Ok(policy) => self.default_drift = policy,
                        Err(problem) => self.problems.push(error(file, "drift", None, &problem.to_string(), DRIFT_FIX)),
                    }
                    continue;
                }
                _ => {
                    self.problems.push(error(
                        file,
                        &key,
                        None,
                        "unknown top-level key",
                        "put plugin settings under `[plugins.<id>]`, OAuth settings under `[auth]`, caller policy under `[access]` and `[rates]`, and the default `drift` at the top",
                    ));
                    continue;
                }
            }
            let toml::Value::Table(plugins) = value else {
                self.problems.push(error(file, "plugins", None, "must be a table", "write `[plugins.<id>]` sections"));
                continue;
            };
            for (id, settings) in plugins {
                let key = format!("plugins.{id}");
                if !valid_id(&id) {
                    self.problems.push(error(file, &key, None, "is not a valid plugin id", "plugin ids are file stems matching ^[a-zA-Z0-9_-]{1,64}$"));
                    continue;
                }
                if !plugins_dir.join(format!("{id}.wasm")).exists() {
                    let mut w = error(file, &key, None, &format!("there is no {id}.wasm in {}", plugins_dir.display()), "remove the section or add the plugin");
                    w.severity = Severity::Warning;
                    self.problems.push(w);
                }
                let toml::Value::Table(settings) = settings else {
                    self.problems.push(error(file, &key, Some(&id), "must be a table", "write `[plugins.<id>]` with keys below it"));
                    continue;
                };
                let entry = self.tables.entry(id).or_default();
                for (k, v) in settings {
                    entry.entry(k).or_insert((file.to_path_buf(), v));
                }
            }
        }
    }

    fn read_side(&mut self, file: &Path, plugins_dir: &Path) {
        let id = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if !plugins_dir.join(format!("{id}.wasm")).exists() {
            let mut w = error(file, "(file)", None, &format!("there is no {id}.wasm beside it"), "rename it after its plugin or remove it");
            w.severity = Severity::Warning;
            self.problems.push(w);
            return;
        }
        let Some(table) = self.read_table(file, Some(&id)) else { return };
        let entry = self.tables.entry(id).or_default();
        for (k, v) in table {
            // The plugin's own file wins over `paddock.toml`, key by key.
            entry.insert(k, (file.to_path_buf(), v));
        }
    }

    fn read_table(&mut self, file: &Path, plugin: Option<&str>) -> Option<toml::Table> {
        self.files.push(file.to_path_buf());
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(err) => {
                self.problems.push(error(file, "(file)", plugin, &format!("cannot be read: {err}"), "check the path and its permissions"));
                return None;
            }
        };
        match text.parse::<toml::Table>() {
            Ok(table) => Some(table),
            Err(err) => {
                let message = err.message().to_owned();
                let key = match err.span() {
                    Some(span) => format!("line {}", text[..span.start.min(text.len())].lines().count().max(1)),
                    None => "(syntax)".to_owned(),
                };
                self.problems.push(error(file, &key, plugin, &format!("invalid TOML: {message}"), "fix the TOML syntax"));
                None
            }
        }
    }

    fn finish(mut self) -> Config {
        let mut grants = BTreeMap::new();
        let mut drifts = BTreeMap::new();
        for (id, keys) in std::mem::take(&mut self.tables) {
            let mut grant = Grant::default();
            for (key, (file, value)) in keys {
                let prefix =
                    if file.file_name().is_some_and(|n| n == MAIN_FILE) || !is_side_file(&file, &id) { format!("plugins.{id}.{key}") } else { key.clone() };
                if key == "drift" {
                    match drift_policy(&value) {
                        Ok(policy) => {
                            drifts.insert(id.clone(), policy);
                        }
                        Err(problem) => self.problems.push(error(&file, &prefix, Some(&id), &problem.to_string(), DRIFT_FIX)),
                    }
                    continue;
                }
                let mut ctx = context::Ctx { file: &file, plugin: &id, problems: &mut self.problems };
                values::apply(&mut ctx, &mut grant, &key, &prefix, value);
            }
            grants.insert(id, grant);
        }
        let mut draft = auth::AuthDraft::default();
        if let Some((file, value)) = self.auth.take() {
            let mut found = Vec::new();
            draft = auth::parse(&file, value, &mut found);
            if found.is_empty()
                && let Err(problems) = draft.clone().build()
            {
                found = problems;
            }
            for problem in found {
                let key = if problem.key == "auth" { "auth".to_owned() } else { format!("auth.{}", problem.key) };
                self.problems.push(error(&file, &key, None, &problem.message, &problem.fix));
            }
        }
        Config {
            grants,
            drift: crate::policy::DriftPolicies { default: self.default_drift, plugins: drifts },
            access: self.access,
            rates: self.rates,
            problems: self.problems,
            files: self.files,
            auth: draft,
        }
    }
}

/// How to write a `drift` value.
const DRIFT_FIX: &str = "write `drift = \"allow\"`, `\"warn\"`, `\"hold\"` or `\"block\"`";

/// A `drift` value, or the problem with it.
fn drift_policy(value: &toml::Value) -> Result<crate::policy::DriftPolicy, crate::policy::DriftPolicyError> {
    match value {
        toml::Value::String(text) => text.parse(),
        _ => Err(crate::policy::DriftPolicyError::NotAString),
    }
}

fn is_side_file(file: &Path, id: &str) -> bool {
    file.file_stem().is_some_and(|s| s == id)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether `id` is a valid plugin id: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn error(file: &Path, key: &str, plugin: Option<&str>, message: &str, fix: &str) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        key: key.to_owned(),
        message: message.to_owned(),
        fix: fix.to_owned(),
        severity: Severity::Error,
        plugin: plugin.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests;
