//! `paddock.lock`: per plugin, the SHA-256 of its wasm file and of each definition it exposes
//! (as `router::definitions` digests them). Written by `paddock lock`; read at every look at
//! the folder. With `--locked` a file whose digest is not the locked one is not loaded; with or
//! without it, the lock is what drift is measured against (`drift` in the configuration).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::router::Router;
use crate::router::definitions::{DefinitionKind, Definitions};

/// The lock's file name, in the plugins folder.
pub const LOCK_FILE: &str = "paddock.lock";
/// The format written, and the only one read.
const VERSION: u32 = 1;
/// The largest lock file read.
const MAX_LOCK_BYTES: u64 = 16 << 20;

/// What the lock pins of one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// `sha256:` and the hex SHA-256 of the wasm file.
    pub wasm: String,
    /// Each exposed definition (`tool NAME`, `prompt NAME`, `resource URI`, `resource template
    /// URI-TEMPLATE`) and the hex SHA-256 of its canonical JSON.
    #[serde(default)]
    pub definitions: BTreeMap<String, String>,
}

/// The whole lock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    version: u32,
    #[serde(default)]
    pub plugins: BTreeMap<String, Locked>,
}

/// Why the lock cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: std::path::PathBuf, source: std::io::Error },
    #[error("{} is larger than {} MiB", path.display(), MAX_LOCK_BYTES >> 20)]
    TooLarge { path: std::path::PathBuf },
    #[error("{} is not a lock file paddock can read: {reason} (fix: write it again with `paddock lock`)", path.display())]
    Invalid { path: std::path::PathBuf, reason: String },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: std::path::PathBuf, source: std::io::Error },
}

impl Lock {
    /// An empty lock.
    pub fn new() -> Lock {
        Lock { version: VERSION, plugins: BTreeMap::new() }
    }

    /// The lock at `path`, `None` when there is none.
    ///
    /// # Errors
    /// It cannot be read, is too large, or is not a lock of this format.
    pub fn read(path: &Path) -> Result<Option<Lock>, LockError> {
        use std::io::Read as _;
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(LockError::Read { path: path.to_path_buf(), source }),
        };
        let mut text = String::new();
        file.take(MAX_LOCK_BYTES + 1).read_to_string(&mut text).map_err(|source| LockError::Read { path: path.to_path_buf(), source })?;
        if text.len() as u64 > MAX_LOCK_BYTES {
            return Err(LockError::TooLarge { path: path.to_path_buf() });
        }
        let invalid = |reason: String| LockError::Invalid { path: path.to_path_buf(), reason };
        let lock: Lock = toml::from_str(&text).map_err(|e| invalid(e.message().to_owned()))?;
        if lock.version != VERSION {
            return Err(invalid(format!("format version {} (this paddock reads {VERSION})", lock.version)));
        }
        Ok(Some(lock))
    }

    /// Writes the lock to `path` whole: a temporary file beside it, then renamed over it, so a
    /// server watching the folder never reads half a lock.
    ///
    /// # Errors
    /// The file cannot be written or renamed.
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let failed = |source| LockError::Write { path: path.to_path_buf(), source };
        let body = toml::to_string_pretty(self).map_err(|e| failed(std::io::Error::other(e.to_string())))?;
        let text = format!(
            "# Written by `paddock lock`: the digest of each plugin file and of each definition it exposes.\n\
             # A file or a definition that differs is drift (see `drift` and `--locked` in the README).\n{body}"
        );
        let temporary = path.with_extension("lock.part");
        std::fs::write(&temporary, text).map_err(failed)?;
        std::fs::rename(&temporary, path).map_err(failed)
    }

    /// What the lock pins of `plugin`.
    pub fn get(&self, plugin: &str) -> Option<&Locked> {
        self.plugins.get(plugin)
    }
}

impl Locked {
    /// `plugin` as `router` exposes it, from a file with SHA-256 `wasm` (hex).
    pub fn of(router: &Router, plugin: &str, wasm: &str) -> Locked {
        let definitions = Definitions::of(router, plugin).digests().into_iter().map(|(kind, name, digest)| (key(kind, name), digest)).collect();
        Locked { wasm: format!("sha256:{wasm}"), definitions }
    }

    /// Whether a file with SHA-256 `wasm` (hex) is the one pinned.
    pub fn pins_file(&self, wasm: &str) -> bool {
        self.wasm.strip_prefix("sha256:") == Some(wasm)
    }

    /// What differs between these definitions and `definitions`, one readable line each, in
    /// name order (empty when they are the same).
    pub fn drift_from(&self, definitions: &Definitions) -> Vec<String> {
        let now: BTreeMap<String, String> = definitions.digests().into_iter().map(|(kind, name, digest)| (key(kind, name), digest)).collect();
        let mut lines = Vec::new();
        for (name, digest) in &now {
            match self.definitions.get(name) {
                None => lines.push(format!("{}: added (not in {LOCK_FILE})", crate::escape::shorten(name))),
                Some(locked) if locked != digest => lines.push(format!("{}: differs from {LOCK_FILE}", crate::escape::shorten(name))),
                Some(_) => {}
            }
        }
        for name in self.definitions.keys().filter(|name| !now.contains_key(*name)) {
            lines.push(format!("{}: removed (in {LOCK_FILE})", crate::escape::shorten(name)));
        }
        lines
    }
}

/// A definition's key in the lock: its kind, a space, its exposed name.
fn key(kind: DefinitionKind, name: &str) -> String {
    format!("{} {name}", kind.as_str())
}

/// The hex SHA-256 of the file at `path`.
///
/// # Errors
/// It cannot be read.
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    use sha2::Digest as _;
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => hasher.update(&chunk[..n]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_written_whole_and_read_back_and_a_foreign_one_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join(LOCK_FILE);
        assert!(Lock::read(&path).expect("no lock is fine").is_none());
        let mut lock = Lock::new();
        let definitions = BTreeMap::from([("tool text_echo".to_owned(), "ab".repeat(32))]);
        lock.plugins.insert("text".to_owned(), Locked { wasm: format!("sha256:{}", "cd".repeat(32)), definitions });
        lock.write(&path).expect("write");
        assert_eq!(Lock::read(&path).expect("read"), Some(lock.clone()));
        assert!(lock.get("text").expect("text").pins_file(&"cd".repeat(32)));
        assert!(!lock.get("text").expect("text").pins_file(&"ce".repeat(32)));

        std::fs::write(&path, "version = 2\n").expect("write");
        assert!(matches!(Lock::read(&path), Err(LockError::Invalid { .. })));
        std::fs::write(&path, "version = 1\n[plugins.text]\nwasm = \"x\"\nextra = 1\n").expect("write");
        assert!(matches!(Lock::read(&path), Err(LockError::Invalid { .. })), "unknown keys are refused");
    }
}
