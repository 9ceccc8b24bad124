//! The on-disk cache of compiled components (`.cwasm`).
//!
//! Key: sha256 of the wasm bytes, the wasmtime version and a hash of the engine's compilation
//! settings (`Engine::precompile_compatibility_hash`), so an engine never loads code compiled
//! for another configuration. Files are written atomically (temporary file, then rename) into a
//! directory created with mode 0700. A file that fails to load is deleted and recompiled.
//!
//! # Security
//! Loading a `.cwasm` runs native code without validation, so only files this cache wrote are
//! loaded, from a directory only the host user can write and that no plugin grant may cover
//! (the loader refuses such grants).

use std::hash::{BuildHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The wasmtime release this host is built with (pinned in Cargo.toml).
const WASMTIME_VERSION: &str = "48.0.8";

/// Where a component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from an existing artifact.
    Hit,
    /// Compiled and stored.
    Compiled,
    /// The stored artifact was unusable: deleted, recompiled and stored again.
    Recompiled,
    /// Compiled without a cache (none configured, or it could not be written).
    Uncached,
}

#[derive(Debug, Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
    engine_key: String,
}

impl Cache {
    /// Opens (creating with mode 0700) the cache directory.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> std::io::Result<Cache> {
        create_private_dir(dir)?;
        let mut hasher = std::hash::DefaultHasher::new();
        WASMTIME_VERSION.hash(&mut hasher);
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = format!("{:016x}", hasher.finish());
        Ok(Cache { dir: dir.to_path_buf(), engine_key })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The artifact path for these wasm bytes.
    pub(crate) fn path_for(&self, wasm: &[u8]) -> PathBuf {
        let digest = Sha256::digest(wasm);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}-{}.cwasm", self.engine_key))
    }

    /// Loads the compiled component for `wasm`, compiling and storing it when needed.
    /// Blocking: call it from `spawn_blocking`.
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
    ) -> Result<(Component, CacheOutcome), wasmtime::Error> {
        let path = self.path_for(wasm);
        let mut outcome = CacheOutcome::Compiled;
        if path.exists() {
            match load_artifact(engine, &path) {
                Ok(component) => return Ok((component, CacheOutcome::Hit)),
                Err(err) => {
                    tracing::warn!(path = %path.display(), error = %err, "cached compiled plugin is unusable; recompiling");
                    let _ = std::fs::remove_file(&path);
                    outcome = CacheOutcome::Recompiled;
                }
            }
        }
        let compiled = engine.precompile_component(wasm)?;
        match write_atomically(&path, &compiled) {
            Ok(()) => Ok((load_artifact(engine, &path)?, outcome)),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "cannot store the compiled plugin; continuing without the cache");
                Ok((Component::new(engine, wasm)?, CacheOutcome::Uncached))
            }
        }
    }
}

/// Maps a cached artifact into memory as a component.
fn load_artifact(engine: &Engine, path: &Path) -> Result<Component, wasmtime::Error> {
    // SAFETY: `path` is an artifact this cache wrote itself (atomically, from
    // `Engine::precompile_component`, under a key that includes the engine configuration), inside
    // a 0700 directory that no plugin grant may cover, so it is trusted code compiled for this
    // engine. wasmtime still checks its header and its compatibility with the engine.
    unsafe { Component::deserialize_file(engine, path) }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let meta = std::fs::metadata(dir)?;
        if meta.permissions().mode() & 0o022 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}-{:x}", std::process::id(), rand_suffix()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn rand_suffix() -> u64 {
    let mut hasher = std::hash::RandomState::new().build_hasher();
    std::time::SystemTime::now().hash(&mut hasher);
    hasher.finish()
}

/// The default cache directory: `$PADDOCK_CACHE_DIR`, else `$XDG_CACHE_HOME/paddock`, else
/// `~/.cache/paddock`; `None` when none of them is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    from_env("PADDOCK_CACHE_DIR")
        .or_else(|| from_env("XDG_CACHE_HOME").map(|d| d.join("paddock")))
        .or_else(|| from_env("HOME").map(|d| d.join(".cache").join("paddock")))
}
