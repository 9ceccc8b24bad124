//! Checks across every file grant of every plugin, decided on canonical paths before anything
//! is opened: grants that would let one plugin reshape what another grant (its own or another
//! plugin's) points at, and read-write grants over the host's own files.
//!
//! Why: a read-write grant that contains another grant lets its plugin rename the inner
//! directory away and put a symlink in its place; a read-write grant over the plugins folder or
//! a grant file lets a plugin grant itself more at the next start; any grant over the
//! compiled-code cache exposes (or replaces) native code the host runs.

use std::path::{Path, PathBuf};

use super::{FsGrant, FsMode};

/// One granted directory, with the plugin it belongs to.
#[derive(Debug, Clone, Copy)]
pub struct GrantRef<'a> {
    pub plugin: &'a str,
    pub grant: &'a FsGrant,
}

/// A path the host itself depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protected {
    /// The plugins folder (its `.wasm` and `.toml` files decide what runs and with what).
    PluginsFolder(PathBuf),
    /// An operator config or grant file.
    ConfigFile(PathBuf),
    /// The compiled-plugin cache (native code and the key that vouches for it).
    Cache(PathBuf),
    /// A file a secret is read from: no plugin may read it, even through a read-only grant.
    SecretFile(PathBuf),
}

impl Protected {
    fn path(&self) -> &Path {
        match self {
            Protected::PluginsFolder(p) | Protected::ConfigFile(p) | Protected::Cache(p) | Protected::SecretFile(p) => p,
        }
    }

    fn describe(&self) -> String {
        match self {
            Protected::PluginsFolder(p) => format!("the plugins folder {}", p.display()),
            Protected::ConfigFile(p) => format!("the config file {}", p.display()),
            Protected::Cache(p) => format!("the compiled-plugin cache {}", p.display()),
            Protected::SecretFile(p) => format!("the secret file {}", p.display()),
        }
    }
}

/// Why a grant is refused; `plugin` is the plugin left unloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantConflict {
    pub plugin: String,
    pub message: String,
}

/// Every conflict among `grants` and with `protected` paths. A plugin appears once per
/// conflict it is part of (both plugins of an overlapping pair are refused: either could be
/// the one the operator did not mean).
pub fn check_file_grants(grants: &[GrantRef<'_>], protected: &[Protected]) -> Vec<GrantConflict> {
    let mut conflicts = Vec::new();
    for (i, a) in grants.iter().enumerate() {
        for b in &grants[i + 1..] {
            let writable = a.grant.mode == FsMode::ReadWrite || b.grant.mode == FsMode::ReadWrite;
            if !writable || !overlaps(&a.grant.host, &b.grant.host) {
                continue;
            }
            let message = format!(
                "grant {} overlaps grant {} and one of them is read-write: a plugin could replace what the other grant points at (fix: grant separate directories, or make both read-only)",
                describe(a),
                describe(b)
            );
            conflicts.push(GrantConflict { plugin: a.plugin.to_owned(), message: message.clone() });
            if b.plugin != a.plugin {
                conflicts.push(GrantConflict { plugin: b.plugin.to_owned(), message });
            }
        }
        for p in protected {
            let refused = match p {
                Protected::Cache(path) | Protected::SecretFile(path) => overlaps(&a.grant.host, path),
                _ => a.grant.mode == FsMode::ReadWrite && p.path().starts_with(&a.grant.host),
            };
            if refused {
                let fix = match p {
                    Protected::Cache(_) => "grant a directory outside the cache, or move the cache (PADDOCK_CACHE_DIR or --cache-dir)",
                    Protected::SecretFile(_) => "keep secret files outside every granted directory",
                    _ => "grant a narrower directory, or make it read-only",
                };
                conflicts.push(GrantConflict { plugin: a.plugin.to_owned(), message: format!("grant {} covers {} (fix: {fix})", describe(a), p.describe()) });
            }
        }
    }
    conflicts
}

fn describe(r: &GrantRef<'_>) -> String {
    let mode = if r.grant.mode == FsMode::ReadWrite { "rw" } else { "ro" };
    format!("`{}` → `{}` ({mode}) of plugin `{}`", r.grant.host.display(), r.grant.guest, r.plugin)
}

/// Whether one path is the other or inside it (component-wise, so `/a/bc` is not inside `/a/b`).
fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(host: &str, guest: &str, mode: FsMode) -> FsGrant {
        FsGrant { host: PathBuf::from(host), guest: guest.to_owned(), mode }
    }

    #[test]
    fn a_read_write_grant_containing_another_grant_refuses_both_plugins() {
        let outer = grant("/srv/ws", "/data", FsMode::ReadWrite);
        let inner = grant("/srv/ws/pub", "/pub", FsMode::ReadOnly);
        let grants = [GrantRef { plugin: "a", grant: &outer }, GrantRef { plugin: "b", grant: &inner }];
        let conflicts = check_file_grants(&grants, &[]);
        let plugins: Vec<&str> = conflicts.iter().map(|c| c.plugin.as_str()).collect();
        assert_eq!(plugins, ["a", "b"]);
        assert!(conflicts[0].message.contains("/srv/ws") && conflicts[0].message.contains("/srv/ws/pub"), "{}", conflicts[0].message);
        assert!(conflicts[0].message.contains("fix:"));
    }

    #[test]
    fn nesting_within_one_plugin_is_refused_once() {
        let outer = grant("/srv/ws", "/data", FsMode::ReadWrite);
        let inner = grant("/srv/ws/pub", "/pub", FsMode::ReadOnly);
        let grants = [GrantRef { plugin: "a", grant: &outer }, GrantRef { plugin: "a", grant: &inner }];
        assert_eq!(check_file_grants(&grants, &[]).len(), 1);
    }

    #[test]
    fn read_only_overlaps_and_sibling_prefixes_are_allowed() {
        let a = grant("/srv/ws", "/a", FsMode::ReadOnly);
        let b = grant("/srv/ws/pub", "/b", FsMode::ReadOnly);
        let c = grant("/srv/wsx", "/c", FsMode::ReadWrite);
        let grants = [GrantRef { plugin: "a", grant: &a }, GrantRef { plugin: "b", grant: &b }, GrantRef { plugin: "c", grant: &c }];
        assert!(check_file_grants(&grants, &[]).is_empty(), "`/srv/wsx` is not inside `/srv/ws`");
    }

    #[test]
    fn read_write_grants_over_host_files_are_refused_and_any_grant_over_the_cache() {
        let root = grant("/srv", "/srv", FsMode::ReadWrite);
        let ro_root = grant("/srv", "/srv", FsMode::ReadOnly);
        let protected = [
            Protected::PluginsFolder(PathBuf::from("/srv/plugins")),
            Protected::ConfigFile(PathBuf::from("/etc/paddock.toml")),
            Protected::Cache(PathBuf::from("/srv/cache")),
        ];
        let conflicts = check_file_grants(&[GrantRef { plugin: "rw", grant: &root }], &protected);
        assert_eq!(conflicts.len(), 2, "{conflicts:?}");
        assert!(conflicts[0].message.contains("plugins folder"));
        assert!(conflicts[1].message.contains("cache"));
        let conflicts = check_file_grants(&[GrantRef { plugin: "ro", grant: &ro_root }], &protected);
        assert_eq!(conflicts.len(), 1, "a read-only grant may cover the plugins folder but not the cache: {conflicts:?}");
        let inside = grant("/srv/cache/x", "/x", FsMode::ReadOnly);
        assert_eq!(check_file_grants(&[GrantRef { plugin: "in", grant: &inside }], &protected).len(), 1);
    }
}
