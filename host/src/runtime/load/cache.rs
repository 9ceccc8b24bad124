//! The on-disk cache of compiled components (`.cwasm`), which runs only what it compiled.
//!
//! Loading a compiled component runs native code without validation, so the cache trusts nothing
//! it finds on disk until a keyed MAC proves that this user's Paddock wrote it for these exact
//! wasm bytes and this engine:
//!
//! - The folder must belong to the effective user, must not be writable by anyone else and must
//!   not be a symbolic link. One that is wrong is refused, never repaired, and the runtime then
//!   compiles without a cache. A new folder is created with mode 0700. Every file is opened
//!   relative to the folder's open handle, without following symbolic links.
//! - A per-user secret key (`key`, 32 random bytes, mode 0600) lives in the folder. A key that is
//!   a symbolic link, not owned by the user, or readable or writable by anyone else refuses the
//!   whole cache.
//! - Each artifact is one file, `<BLAKE3 of the wasm>-<engine fingerprint>-<format>.cwasm`: the
//!   bytes from `Engine::precompile_component`, then a 32-byte keyed-BLAKE3 tag, then a 16-byte
//!   magic (`MAGIC`). The tag covers a domain label, the BLAKE3 digest of the wasm, the engine
//!   fingerprint (wasmtime version and `Engine::precompile_compatibility_hash`) and the compiled
//!   bytes, so an artifact copied over another plugin's, or altered in any byte, fails. The
//!   compiled bytes come first so that wasmtime can map the file itself: its code and memory
//!   images are then pages shared with the page cache (and every other Paddock), not a private
//!   copy.
//! - Loading opens the file without following links and checks its owner and mode on the open
//!   handle. It then hashes the bytes through a private read-only mapping (no copy), verifies
//!   the tag in constant time, and only then has wasmtime map that same open file (through
//!   `/proc/self/fd`); the path is never opened again. Artifacts are never written in place
//!   (see below), and the only party that could change this user's file between the check and
//!   the map is this user, who can read the key and forge a tag anyway. Anything wrong is logged
//!   with the file and the reason, and the plugin is recompiled and stored afresh.
//! - An artifact that passed in full is recorded by its file's identity (`known_files`): while
//!   the file keeps that identity, a later load checks its trailer against the record instead of
//!   hashing the compiled bytes again. Any change to the file through the file system gives it a
//!   new identity, and so a full check.
//! - Artifacts are written to a temporary file (created exclusively, mode 0600) and renamed into
//!   place, so a reader sees a whole file or none; a torn file would fail the MAC anyway.

mod catalogs;
mod collect;
mod known_files;
mod later;

use known_files::Fact;
pub(crate) use known_files::FileIdentity;

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::Component;

/// The wasmtime release this host is built with (pinned in Cargo.toml).
const WASMTIME_VERSION: &str = "48.0.8";

/// The name of the secret key file inside the cache folder.
const KEY_FILE: &str = "key";
/// Key length: the key size of BLAKE3's keyed mode.
const KEY_LEN: usize = 32;
/// The artifact format, in every file name: a cache written by another format is never read.
const FORMAT: u32 = 3;
/// The last bytes of every artifact this cache writes.
const MAGIC: &[u8; 16] = b"paddock-cwasm-3\n";
/// Length of the keyed BLAKE3 tag before the magic.
const TAG_LEN: usize = 32;
/// What follows the compiled bytes: the tag, then the magic.
const TRAILER_LEN: usize = TAG_LEN + MAGIC.len();
/// Separates this MAC's input from any other use of the same key.
const MAC_DOMAIN: &[u8] = b"paddock compiled component, format 1\0";
/// The largest artifact read back into memory or stored. The folder is private, so this only
/// bounds what a stray or planted file there can make the host allocate before the MAC rejects
/// it; compiled code for the largest accepted plugin (256 MiB of wasm) stays well below it.
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

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
    /// Served from the catalog an earlier load recorded; the component loads in the background.
    Recorded,
}

/// What the cache holds for one wasm digest.
pub(crate) enum Lookup {
    /// A verified artifact, mapped.
    Hit(Component),
    /// Nothing stored.
    Missing,
    /// A stored artifact was unusable; it was logged and removed.
    Discarded,
}

/// Why the cache folder cannot be used. The runtime logs it and compiles without a cache.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheError {
    #[error(
        "`{}` is a symbolic link, which the compiled-plugin cache does not follow: point PADDOCK_CACHE_DIR / --cache-dir at a real folder of your own",
        path.display()
    )]
    SymlinkFolder { path: PathBuf },
    #[error(
        "`{}` is not a folder: remove it or point PADDOCK_CACHE_DIR / --cache-dir at a folder of your own",
        path.display()
    )]
    NotAFolder { path: PathBuf },
    #[error(
        "`{}` is owned by uid {owner}, not by this user (uid {euid}): remove it or point PADDOCK_CACHE_DIR / --cache-dir at a folder of your own",
        path.display()
    )]
    ForeignFolder { path: PathBuf, owner: u32, euid: u32 },
    #[error(
        "`{}` is writable by other users (mode {mode:04o}): remove it, run `chmod go-w` on it, or point PADDOCK_CACHE_DIR / --cache-dir at a folder of your own",
        path.display()
    )]
    SharedFolder { path: PathBuf, mode: u32 },
    #[error(
        "the compiled-plugin cache key `{}` {problem}: remove it (a new key is made and plugins are compiled again once)",
        path.display()
    )]
    BadKey { path: PathBuf, problem: String },
    // The reason is in the message, not a `source`: chained, it would print twice.
    #[error("cannot {action} `{}`: {error}", path.display())]
    Io { action: &'static str, path: PathBuf, error: std::io::Error },
    #[cfg(not(unix))]
    #[error("the compiled-plugin cache is only supported on Unix hosts")]
    Unsupported,
}

/// How an artifact was found to be what this cache stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verified {
    /// Every byte was hashed and the tag matched.
    Hashed,
    /// This very file, unchanged since, matched its tag before (`known_files`).
    Recalled,
}

/// Why one stored artifact was not loaded. It is then recompiled and stored afresh.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("it is a symbolic link")]
    Symlink,
    #[error("it is not a regular file")]
    NotAFile,
    #[error("it is owned by uid {owner}, not by this user (uid {euid})")]
    ForeignOwner { owner: u32, euid: u32 },
    #[error("it is writable by other users (mode {mode:04o})")]
    Shared { mode: u32 },
    #[error("it is larger than {MAX_ARTIFACT_BYTES} bytes")]
    TooLarge,
    #[error("it does not end with a Paddock artifact trailer")]
    NoTrailer,
    #[error("its MAC does not match these wasm bytes and this engine (altered, or copied from another plugin)")]
    BadMac,
    #[error("wasmtime rejected it: {0}")]
    Rejected(wasmtime::Error),
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
}

/// What kind of file system object a handle refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Regular,
    Directory,
    Other,
}

/// The owner, mode and size of an open file or folder, read from its handle (not its path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Info {
    kind: Kind,
    owner: u32,
    /// Permission bits (`st_mode & 0o7777`).
    mode: u32,
    len: u64,
    /// What identifies its content while its ctime is settled (`known_files`).
    identity: Option<FileIdentity>,
}

/// What is being checked, which decides the kind it must be and the bits it must not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Folder,
    Key,
    Artifact,
}

impl Role {
    /// Permission bits that would let another user change it or, for the key, also read it: a
    /// reader of the key can forge artifacts for any writer of the folder.
    fn forbidden_bits(self) -> u32 {
        match self {
            Role::Folder | Role::Artifact => 0o022,
            Role::Key => 0o077,
        }
    }

    fn kind(self) -> Kind {
        match self {
            Role::Folder => Kind::Directory,
            Role::Key | Role::Artifact => Kind::Regular,
        }
    }
}

/// How another user could have put or changed the object (or read the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exposure {
    WrongKind,
    ForeignOwner { owner: u32 },
    OpenMode { mode: u32 },
}

/// The pure trust decision: `None` when `info` is of the right kind, owned by `euid` and free of
/// the bits `role` forbids.
fn exposure(role: Role, info: &Info, euid: u32) -> Option<Exposure> {
    if info.kind != role.kind() {
        Some(Exposure::WrongKind)
    } else if info.owner != euid {
        Some(Exposure::ForeignOwner { owner: info.owner })
    } else if info.mode & role.forbidden_bits() != 0 {
        Some(Exposure::OpenMode { mode: info.mode })
    } else {
        None
    }
}

/// What opening a name in the cache folder found.
enum Opened {
    Missing,
    Symlink,
    Found(std::fs::File, Info),
}

#[derive(Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
    handle: Arc<os::Dir>,
    /// BLAKE3 keyed with the user's cache key, cloned for every tag.
    mac: blake3::Hasher,
    /// BLAKE3 of the wasmtime version and the engine's compilation settings.
    engine_digest: [u8; 32],
}

impl std::fmt::Debug for Cache {
    /// Shows the folder only: the keyed MAC state is as secret as the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl Cache {
    /// Opens the cache folder (creating it with mode 0700 when missing) and its key (creating it
    /// when missing). A folder or key another user could have written, or the key read, is
    /// refused with the fix in the error.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> Result<Cache, CacheError> {
        let (handle, info) = os::Dir::open(dir)?;
        let euid = handle.euid();
        match exposure(Role::Folder, &info, euid) {
            None => {}
            Some(Exposure::WrongKind) => return Err(CacheError::NotAFolder { path: dir.to_path_buf() }),
            Some(Exposure::ForeignOwner { owner }) => {
                return Err(CacheError::ForeignFolder { path: dir.to_path_buf(), owner, euid });
            }
            Some(Exposure::OpenMode { mode }) => {
                return Err(CacheError::SharedFolder { path: dir.to_path_buf(), mode });
            }
        }
        let key = load_or_create_key(&handle, dir)?;
        let mac = blake3::Hasher::new_keyed(&key);
        Ok(Cache { dir: dir.to_path_buf(), handle: Arc::new(handle), mac, engine_digest: engine_digest(engine) })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The artifact path for these wasm bytes.
    pub(crate) fn path_for(&self, wasm: &[u8]) -> PathBuf {
        self.dir.join(self.file_name(blake3::hash(wasm).as_bytes()))
    }

    fn file_name(&self, wasm_digest: &[u8; 32]) -> String {
        format!("{}-{}-{FORMAT}.cwasm", hex(wasm_digest), hex(&self.engine_digest[..8]))
    }

    /// Looks for a usable stored artifact for the wasm whose BLAKE3 digest is `wasm_digest`. One
    /// that is unusable is logged and removed. Blocking: call it from `spawn_blocking`.
    pub(crate) fn lookup(&self, engine: &Engine, wasm_digest: &[u8; 32]) -> Lookup {
        let name = self.file_name(wasm_digest);
        match self.load(engine, wasm_digest, &name) {
            Ok(Some(component)) => Lookup::Hit(component),
            Ok(None) => Lookup::Missing,
            Err(why) => {
                self.discard(&name, &why);
                Lookup::Discarded
            }
        }
    }

    /// Compiles `wasm` (whose BLAKE3 digest is `wasm_digest`), stores it and loads it back;
    /// `outcome` is what to report when that works (`Compiled` or `Recompiled`). Blocking: call
    /// it from `spawn_blocking`.
    pub(crate) fn compile_and_store(
        &self,
        engine: &Engine,
        wasm: &[u8],
        wasm_digest: &[u8; 32],
        outcome: CacheOutcome,
    ) -> Result<(Component, CacheOutcome), wasmtime::Error> {
        let name = self.file_name(wasm_digest);
        let code = engine.precompile_component(wasm)?;
        let trailer = self.trailer(wasm_digest, &code);
        if let Err(err) = self.store(&name, &code, &trailer) {
            tracing::warn!(path = %self.dir.join(&name).display(), error = %err, "cannot store the compiled plugin; continuing without the cache");
            // SAFETY: `code` was compiled by this engine, in this process, from these wasm bytes
            // a moment ago; nothing outside the process has had a chance to touch it.
            let component = unsafe { Component::deserialize(engine, &code) }?;
            return Ok((component, CacheOutcome::Uncached));
        }
        drop(code);
        let written = std::time::SystemTime::now();
        // The fresh artifact is loaded through the same verification and mapping as a stored
        // one, so one audited path is the only way native code gets loaded, and a fresh start
        // holds its code in the same shared file pages as a warm one.
        match self.load(engine, wasm_digest, &name) {
            Ok(Some(component)) => {
                // Too fresh for its check to be recorded now: checked again once settled, so the
                // next start reads a record instead of the whole artifact.
                let (cache, digest) = (self.clone(), *wasm_digest);
                later::once_settled(written + known_files::SETTLED, move || cache.check_settled(&name, &digest));
                Ok((component, outcome))
            }
            Ok(None) => Err(wasmtime::Error::msg("the compiled plugin vanished from the cache as it was stored")),
            Err(why) => Err(wasmtime::Error::new(why)),
        }
    }

    /// Checks the stored artifact `name` in full once more, which records the check when the
    /// file has settled. One that fails now was changed after it was written: it is removed, so
    /// the next start compiles again.
    fn check_settled(&self, name: &str, wasm_digest: &[u8; 32]) {
        let checked = match self.open_artifact(name) {
            Ok(Some((file, info))) => self.verify(&file, &info, wasm_digest).map(|_| ()),
            Ok(None) => return,
            Err(why) => Err(why),
        };
        if let Err(why) = checked {
            self.discard(name, &why);
        }
    }

    /// Opens the stored artifact `name` if it is one this user may trust the kind, owner, mode
    /// and size of: `Ok(None)` when there is none.
    fn open_artifact(&self, name: &str) -> Result<Option<(std::fs::File, Info)>, Unusable> {
        let (file, info) = match self.handle.open_file(name).map_err(Unusable::Io)? {
            Opened::Missing => return Ok(None),
            Opened::Symlink => return Err(Unusable::Symlink),
            Opened::Found(file, info) => (file, info),
        };
        match exposure(Role::Artifact, &info, self.handle.euid()) {
            None => {}
            Some(Exposure::WrongKind) => return Err(Unusable::NotAFile),
            Some(Exposure::ForeignOwner { owner }) => return Err(Unusable::ForeignOwner { owner, euid: self.handle.euid() }),
            Some(Exposure::OpenMode { mode }) => return Err(Unusable::Shared { mode }),
        }
        if info.len > MAX_ARTIFACT_BYTES {
            return Err(Unusable::TooLarge);
        }
        Ok(Some((file, info)))
    }

    /// Logs why the stored artifact `name` is unusable and removes it.
    fn discard(&self, name: &str, why: &Unusable) {
        tracing::warn!(path = %self.dir.join(name).display(), reason = %why, "cached compiled plugin not loaded; recompiling");
        // Unlinking the name removes a symbolic link itself, never its target.
        let _ = self.handle.remove(name);
    }

    /// Verifies the stored artifact `name` and maps it: `Ok(None)` when there is none.
    fn load(&self, engine: &Engine, wasm_digest: &[u8; 32], name: &str) -> Result<Option<Component>, Unusable> {
        let Some((file, info)) = self.open_artifact(name)? else { return Ok(None) };
        self.verify(&file, &info, wasm_digest)?;
        // SAFETY: the open file holds native code compiled by this engine for these wasm bytes.
        // `verify` checked it: either it streamed every byte of it through keyed BLAKE3 over the
        // wasm's digest and the engine fingerprint, under a key that only this user can read (a
        // file of this user's that nobody else can read or write, in a folder of this user's
        // that nobody else can write; the cache refuses anything else), and checked the tag in
        // constant time; or a record under the same key says this very file (same device,
        // inode, size, mtime and a ctime settled before that full check began) passed that check,
        // and any change to the file since would have given it another ctime. Only a Paddock run
        // by this user that compiled the code could have made the tag or the record. wasmtime
        // maps this same open file, never the path. Artifacts are only ever created whole and
        // renamed into place, never written in place; nobody but this user could write the file
        // between the check and the map, and this user can read the key anyway. wasmtime still
        // checks the header and compatibility with the engine.
        unsafe { os::map_verified(engine, &file) }.map(Some).map_err(|err| {
            if let Some(identity) = &info.identity {
                self.forget(Fact::VerifiedArtifact { wasm_digest }, identity);
            }
            Unusable::Rejected(err)
        })
    }

    /// Checks the trailer of the artifact in `file` (described by `info`) and its tag over the
    /// compiled bytes, read through a private read-only mapping: the bytes are hashed where they
    /// lie in the page cache, never copied. An artifact that passed in full once, and has the
    /// same identity now, is not hashed again (`known_files`).
    fn verify(&self, file: &std::fs::File, info: &Info, wasm_digest: &[u8; 32]) -> Result<Verified, Unusable> {
        self.verify_at(file, info, wasm_digest, std::time::SystemTime::now())
    }

    /// `verify`, with hashing taken to begin at `hashing_began`.
    fn verify_at(&self, file: &std::fs::File, info: &Info, wasm_digest: &[u8; 32], hashing_began: std::time::SystemTime) -> Result<Verified, Unusable> {
        let code_len = info.len.checked_sub(TRAILER_LEN as u64).ok_or(Unusable::NoTrailer)?;
        let mut trailer = [0u8; TRAILER_LEN];
        os::read_exact_at(file, &mut trailer, code_len).map_err(Unusable::Io)?;
        let (tag, magic) = trailer.split_at(TAG_LEN);
        if magic != MAGIC {
            return Err(Unusable::NoTrailer);
        }
        let tag = blake3::Hash::from_slice(tag).map_err(|_| Unusable::BadMac)?;
        let fact = Fact::VerifiedArtifact { wasm_digest };
        if let Some(identity) = &info.identity
            && self.recall(fact, identity).is_some_and(|verified| blake3::Hash::from(verified) == tag)
        {
            return Ok(Verified::Recalled);
        }
        let code_len = usize::try_from(code_len).map_err(|_| Unusable::TooLarge)?;
        let mut mac = self.mac_for(wasm_digest);
        // SAFETY: the file is a regular file of this user's, in a folder nobody else can write,
        // and the cache never writes or truncates an artifact in place (artifacts are created
        // whole and renamed). wasmtime maps the same file for as long as the component lives,
        // so the mapping here asks nothing more of it.
        let code = unsafe { os::Mapped::new(file, code_len) }.map_err(Unusable::Io)?;
        mac.update(code.bytes());
        drop(code);
        // `blake3::Hash` compares in constant time.
        if mac.finalize() != tag {
            return Err(Unusable::BadMac);
        }
        if let Some(identity) = &info.identity {
            self.remember(fact, identity, tag.as_bytes(), hashing_began);
        }
        Ok(Verified::Hashed)
    }

    /// The keyed MAC state over everything an artifact is bound to, before its compiled bytes.
    fn mac_for(&self, wasm_digest: &[u8; 32]) -> blake3::Hasher {
        let mut mac = self.mac.clone();
        mac.update(MAC_DOMAIN);
        mac.update(wasm_digest);
        mac.update(&self.engine_digest);
        mac
    }

    /// What follows freshly compiled `code` in its artifact: its tag, then the magic.
    fn trailer(&self, wasm_digest: &[u8; 32], code: &[u8]) -> [u8; TRAILER_LEN] {
        let mut mac = self.mac_for(wasm_digest);
        mac.update(code);
        let mut trailer = [0u8; TRAILER_LEN];
        trailer[..TAG_LEN].copy_from_slice(mac.finalize().as_bytes());
        trailer[TAG_LEN..].copy_from_slice(MAGIC);
        trailer
    }

    /// Writes `code` and its `trailer` as `name` atomically, synced to disk.
    fn store(&self, name: &str, code: &[u8], trailer: &[u8; TRAILER_LEN]) -> std::io::Result<()> {
        if (code.len() + TRAILER_LEN) as u64 > MAX_ARTIFACT_BYTES {
            return Err(std::io::Error::other(format!("the compiled plugin is larger than {MAX_ARTIFACT_BYTES} bytes")));
        }
        self.write_whole(name, &[code, trailer], Durability::Synced)
    }

    /// Writes `parts` as `name` atomically: an exclusive temporary file (mode 0600), then a
    /// rename, so a reader sees a whole file or none. The temporary file is removed on failure.
    fn write_whole(&self, name: &str, parts: &[&[u8]], durability: Durability) -> std::io::Result<()> {
        let tmp = temp_name(name)?;
        let result = (|| {
            let mut file = self.handle.create_new(&tmp)?;
            for part in parts {
                file.write_all(part)?;
            }
            if durability == Durability::Synced {
                file.sync_all()?;
            }
            self.handle.rename(&tmp, name)
        })();
        if result.is_err() {
            let _ = self.handle.remove(&tmp);
        }
        result
    }
}

/// Whether a file the cache writes is synced to disk before it is renamed into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Durability {
    Synced,
    /// For what a crash may lose or tear without harm (it then fails its tag).
    Unsynced,
}

/// Reads the folder's key, creating it when there is none.
fn load_or_create_key(dir: &os::Dir, path: &Path) -> Result<[u8; KEY_LEN], CacheError> {
    match read_key(dir, path)? {
        Some(key) => Ok(key),
        None => create_key(dir, path),
    }
}

/// Reads the key: `Ok(None)` when there is none; an error when it is not trustworthy.
fn read_key(dir: &os::Dir, path: &Path) -> Result<Option<[u8; KEY_LEN]>, CacheError> {
    let key_path = || path.join(KEY_FILE);
    let bad = |problem: String| CacheError::BadKey { path: key_path(), problem };
    let opened = dir.open_file(KEY_FILE).map_err(|source| CacheError::Io { action: "open", path: key_path(), error: source })?;
    let file = match opened {
        Opened::Missing => return Ok(None),
        Opened::Symlink => return Err(bad("is a symbolic link".to_owned())),
        Opened::Found(file, info) => {
            let euid = dir.euid();
            match exposure(Role::Key, &info, euid) {
                None => file,
                Some(Exposure::WrongKind) => return Err(bad("is not a regular file".to_owned())),
                Some(Exposure::ForeignOwner { owner }) => {
                    return Err(bad(format!("is owned by uid {owner}, not by this user (uid {euid})")));
                }
                Some(Exposure::OpenMode { mode }) => {
                    return Err(bad(format!("is readable or writable by other users (mode {mode:04o})")));
                }
            }
        }
    };
    let mut bytes = Vec::with_capacity(KEY_LEN + 1);
    file.take(KEY_LEN as u64 + 1).read_to_end(&mut bytes).map_err(|source| CacheError::Io { action: "read", path: key_path(), error: source })?;
    <[u8; KEY_LEN]>::try_from(bytes.as_slice()).map(Some).map_err(|_| bad(format!("is not a key: it is not {KEY_LEN} bytes long")))
}

/// Makes a new random key and publishes it without ever replacing one: the bytes go to a fresh
/// exclusive 0600 file first and are then hard-linked to `key`, which fails if `key` exists. A
/// process that loses that race reads the winner's key, which is complete by then, and never
/// sees a half-written one.
fn create_key(dir: &os::Dir, path: &Path) -> Result<[u8; KEY_LEN], CacheError> {
    let key_path = path.join(KEY_FILE);
    let io = |action: &'static str| {
        let key_path = key_path.clone();
        move |source| CacheError::Io { action, path: key_path, error: source }
    };
    let mut key = [0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(std::io::Error::other).map_err(io("draw random bytes for"))?;
    let tmp = temp_name(KEY_FILE).map_err(io("create"))?;
    let written = (|| {
        let mut file = dir.create_new(&tmp)?;
        file.write_all(&key)?;
        file.sync_all()
    })();
    let published = written.and_then(|()| dir.link(&tmp, KEY_FILE));
    let _ = dir.remove(&tmp);
    match published {
        Ok(()) => Ok(key),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => match read_key(dir, path)? {
            Some(winner) => Ok(winner),
            None => Err(io("read")(std::io::Error::from(std::io::ErrorKind::NotFound))),
        },
        Err(err) => Err(io("create")(err)),
    }
}

/// A unique temporary name beside `name`; starting with `.` keeps it apart from artifact names.
fn temp_name(name: &str) -> std::io::Result<String> {
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(std::io::Error::other)?;
    Ok(format!(".{name}.{}.tmp", hex(&suffix)))
}

/// BLAKE3 of the wasmtime version and the engine's compilation settings: an engine never
/// loads code compiled for another configuration, and the MAC binds artifacts to it.
fn engine_digest(engine: &Engine) -> [u8; 32] {
    let mut hasher = Blake3Hasher(blake3::Hasher::new());
    WASMTIME_VERSION.hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.finalize().into()
}

/// A `Hasher` that feeds everything written into BLAKE3, so a `Hash` value yields a 256-bit
/// digest that is stable across runs (unlike `DefaultHasher`, whose algorithm may change).
struct Blake3Hasher(blake3::Hasher);

impl Hasher for Blake3Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// Required by the trait; the digest itself is taken from the inner hasher.
    fn finish(&self) -> u64 {
        let digest = self.0.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest.as_bytes()[..8]);
        u64::from_le_bytes(first)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(unix)]
#[path = "cache/unix_files.rs"]
mod os;

#[cfg(not(unix))]
#[path = "cache/no_files.rs"]
mod os;

/// The default cache directory: `$PADDOCK_CACHE_DIR`, else `$XDG_CACHE_HOME/paddock`, else
/// `~/.cache/paddock`; `None` when none of them is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    from_env("PADDOCK_CACHE_DIR")
        .or_else(|| from_env("XDG_CACHE_HOME").map(|d| d.join("paddock")))
        .or_else(|| from_env("HOME").map(|d| d.join(".cache").join("paddock")))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn info(kind: Kind, owner: u32, mode: u32) -> Info {
        Info { kind, owner, mode, len: 0, identity: None }
    }

    #[test]
    fn the_engine_without_a_pool_has_the_fingerprint_of_the_pooled_engine_that_runs_the_code() {
        use crate::runtime::engine::{PendingEngine, on_demand};
        let options = crate::runtime::RuntimeOptions { max_instances: 4, ..Default::default() };
        let unpooled = on_demand(&options).expect("an engine");
        let pending = PendingEngine::start(options.clone(), unpooled.clone());
        let built = pending.get();
        assert_ne!(built.slot_reset, crate::runtime::SlotReset::OnDemand, "the pool was set up");
        assert_eq!(engine_digest(&unpooled), engine_digest(&built.engine));
        // A setting that changes the code changes the fingerprint.
        let other = on_demand(&crate::runtime::RuntimeOptions { max_memory: options.max_memory * 2, ..options }).expect("an engine");
        assert_ne!(engine_digest(&unpooled), engine_digest(&other));
    }

    #[test]
    fn a_cache_error_says_its_reason_once_even_printed_with_its_chain() {
        let error = CacheError::Io { action: "open", path: "/cache/key".into(), error: std::io::Error::from(std::io::ErrorKind::PermissionDenied) };
        let shown = error.to_string();
        assert!(shown.starts_with("cannot open `/cache/key`: "), "{shown}");
        assert!(std::error::Error::source(&error).is_none(), "a chained printer (`{{:#}}`) would print the reason again");
    }

    #[test]
    fn only_the_users_own_unshared_objects_are_trusted() {
        let me = 1000;
        let folder = |owner, mode| exposure(Role::Folder, &info(Kind::Directory, owner, mode), me);
        assert_eq!(folder(me, 0o700), None);
        assert_eq!(folder(me, 0o755), None, "others may read the folder; the key stays private");
        assert_eq!(folder(1234, 0o700), Some(Exposure::ForeignOwner { owner: 1234 }));
        assert_eq!(folder(0, 0o700), Some(Exposure::ForeignOwner { owner: 0 }));
        assert_eq!(folder(me, 0o770), Some(Exposure::OpenMode { mode: 0o770 }));
        assert_eq!(folder(me, 0o702), Some(Exposure::OpenMode { mode: 0o702 }));
        assert_eq!(folder(me, 0o1777), Some(Exposure::OpenMode { mode: 0o1777 }), "sticky does not help");
        assert_eq!(exposure(Role::Folder, &info(Kind::Regular, me, 0o700), me), Some(Exposure::WrongKind));

        let key = |owner, mode| exposure(Role::Key, &info(Kind::Regular, owner, mode), me);
        assert_eq!(key(me, 0o600), None);
        assert_eq!(key(me, 0o400), None);
        assert_eq!(key(me, 0o640), Some(Exposure::OpenMode { mode: 0o640 }));
        assert_eq!(key(me, 0o604), Some(Exposure::OpenMode { mode: 0o604 }));
        assert_eq!(key(me, 0o610), Some(Exposure::OpenMode { mode: 0o610 }));
        assert_eq!(key(65534, 0o600), Some(Exposure::ForeignOwner { owner: 65534 }));
        assert_eq!(exposure(Role::Key, &info(Kind::Other, me, 0o600), me), Some(Exposure::WrongKind));

        let artifact = |owner, mode| exposure(Role::Artifact, &info(Kind::Regular, owner, mode), me);
        assert_eq!(artifact(me, 0o600), None);
        assert_eq!(artifact(me, 0o644), None);
        assert_eq!(artifact(me, 0o620), Some(Exposure::OpenMode { mode: 0o620 }));
        assert_eq!(artifact(me, 0o666), Some(Exposure::OpenMode { mode: 0o666 }));
        assert_eq!(artifact(0, 0o600), Some(Exposure::ForeignOwner { owner: 0 }));
        assert_eq!(exposure(Role::Artifact, &info(Kind::Directory, me, 0o700), me), Some(Exposure::WrongKind));
    }

    #[test]
    fn refusals_name_the_path_and_the_fix() {
        let path = PathBuf::from("/x");
        let foreign = CacheError::ForeignFolder { path: path.clone(), owner: 1234, euid: 0 }.to_string();
        assert_eq!(foreign, "`/x` is owned by uid 1234, not by this user (uid 0): remove it or point PADDOCK_CACHE_DIR / --cache-dir at a folder of your own");
        let shared = CacheError::SharedFolder { path: path.clone(), mode: 0o777 }.to_string();
        assert!(shared.contains("`/x`") && shared.contains("0777") && shared.contains("chmod go-w"), "{shared}");
        let link = CacheError::SymlinkFolder { path: path.clone() }.to_string();
        assert!(link.contains("`/x` is a symbolic link") && link.contains("PADDOCK_CACHE_DIR"), "{link}");
        let key = CacheError::BadKey { path: path.join(KEY_FILE), problem: "is a symbolic link".to_owned() }.to_string();
        assert!(key.contains("`/x/key` is a symbolic link: remove it"), "{key}");
    }

    #[test]
    fn a_process_that_loses_the_key_race_uses_the_winners_key() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("cache");
        let (handle, _) = os::Dir::open(&dir).expect("open");
        let winner = create_key(&handle, &dir).expect("first key");
        // A second creation finds `key` already published: it must neither fail nor replace it.
        let loser = create_key(&handle, &dir).expect("second key");
        assert_eq!(loser, winner);
        assert_eq!(std::fs::read(dir.join(KEY_FILE)).expect("key"), winner);
        assert_eq!(std::fs::metadata(dir.join(KEY_FILE)).expect("key").permissions().mode() & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(&dir).expect("list").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, [KEY_FILE], "temporary files were left behind");
        assert_eq!(load_or_create_key(&handle, &dir).expect("reuse"), winner);
    }

    #[test]
    fn a_key_of_the_wrong_length_refuses_the_cache() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("cache");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join(KEY_FILE), b"short").expect("write");
        std::fs::set_permissions(dir.join(KEY_FILE), std::fs::Permissions::from_mode(0o600)).expect("chmod");
        match Cache::open(&dir, &Engine::default()) {
            Err(CacheError::BadKey { problem, .. }) => assert!(problem.contains("32 bytes"), "{problem}"),
            other => panic!("expected a bad key, got {other:?}"),
        }
        assert_eq!(std::fs::read(dir.join(KEY_FILE)).expect("key"), b"short", "a refused key is left alone");
    }

    /// A cache in a fresh folder, its engine, and the digests of two different plugins.
    fn cache_and_two_plugins() -> (tempfile::TempDir, Engine, Cache, [u8; 32], [u8; 32]) {
        let tmp = tempfile::tempdir().expect("tmp");
        let engine = Engine::default();
        let cache = Cache::open(&tmp.path().join("cache"), &engine).expect("cache");
        (tmp, engine, cache, blake3::hash(b"plugin a").into(), blake3::hash(b"plugin b").into())
    }

    #[test]
    fn a_tag_binds_the_wasm_the_engine_and_every_byte() {
        let (tmp, engine, cache, wasm, other_wasm) = cache_and_two_plugins();
        // Over a few pages, and not a whole number of them.
        let code: Vec<u8> = (0..3 * 4096 + 17).map(|i| (i % 251) as u8).collect();
        let trailer = cache.trailer(&wasm, &code);
        assert_eq!(&trailer[TAG_LEN..], MAGIC);
        cache.store("a.cwasm", &code, &trailer).expect("store");
        let stored = std::fs::read(tmp.path().join("cache/a.cwasm")).expect("read");
        assert_eq!(&stored[..code.len()], code.as_slice(), "the compiled bytes come first, where wasmtime maps them");
        assert_eq!(&stored[code.len()..], trailer.as_slice());
        // Only verification is exercised here: these bytes are not real compiled code.
        let check = |cache: &Cache, wasm: &[u8; 32], bytes: &[u8]| {
            let path = tmp.path().join("artifact");
            std::fs::write(&path, bytes).expect("write");
            let file = std::fs::File::open(&path).expect("open");
            cache.verify(&file, &os::info(&file).expect("info"), wasm)
        };
        assert_eq!(check(&cache, &wasm, &stored).expect("the artifact as stored"), Verified::Hashed);
        let rejected = |cache: &Cache, wasm: &[u8; 32], bytes: &[u8]| check(cache, wasm, bytes).expect_err("accepted");
        assert!(matches!(rejected(&cache, &other_wasm, &stored), Unusable::BadMac), "another plugin's artifact");
        for at in [0, 4095, 4096, code.len() - 1] {
            let mut flipped = stored.clone();
            flipped[at] ^= 1;
            assert!(matches!(rejected(&cache, &wasm, &flipped), Unusable::BadMac), "a flipped code byte at {at}");
        }
        let mut retagged = stored.clone();
        retagged[code.len()] ^= 1;
        assert!(matches!(rejected(&cache, &wasm, &retagged), Unusable::BadMac), "a flipped tag byte");
        let mut other_engine = cache.clone();
        other_engine.engine_digest[0] ^= 1;
        assert!(matches!(rejected(&other_engine, &wasm, &stored), Unusable::BadMac), "another engine");
        let other_key = Cache::open(&tmp.path().join("other"), &engine).expect("cache");
        assert!(matches!(rejected(&other_key, &wasm, &stored), Unusable::BadMac), "another key");
        assert!(matches!(rejected(&cache, &wasm, &stored[..stored.len() - 1]), Unusable::NoTrailer), "a cut trailer");
        assert!(matches!(rejected(&cache, &wasm, &stored[..TRAILER_LEN - 1]), Unusable::NoTrailer), "shorter than a trailer");
        assert!(matches!(rejected(&cache, &wasm, &code), Unusable::NoTrailer), "a bare .cwasm");
        let mut appended = stored.clone();
        appended.push(0);
        assert!(matches!(rejected(&cache, &wasm, &appended), Unusable::NoTrailer), "a byte after the trailer");
    }

    #[test]
    fn a_fresh_artifact_is_checked_again_once_settled_so_the_next_start_reads_only_its_record() {
        let (tmp, engine, cache, _, _) = cache_and_two_plugins();
        // The empty component: its header alone.
        let bytes = b"\0asm\x0d\x00\x01\x00";
        let digest: [u8; 32] = blake3::hash(bytes).into();
        cache.compile_and_store(&engine, bytes, &digest, CacheOutcome::Compiled).expect("compiled and stored");
        let file = std::fs::File::open(tmp.path().join("cache").join(cache.file_name(&digest))).expect("open");
        let identity = os::info(&file).expect("info").identity.expect("an identity on unix");
        let fact = Fact::VerifiedArtifact { wasm_digest: &digest };
        assert_eq!(cache.recall(fact, &identity), None, "too fresh to be recorded when stored");
        // Nothing here reads the artifact: only the background check can record it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while cache.recall(fact, &identity).is_none() {
            assert!(std::time::Instant::now() < deadline, "the settled artifact's check was never recorded");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(cache.verify(&file, &os::info(&file).expect("info"), &digest).expect("valid"), Verified::Recalled);
    }

    #[test]
    fn an_artifact_that_passed_in_full_is_not_hashed_again_until_it_changes() {
        use std::os::unix::fs::FileExt;
        let (tmp, engine, cache, wasm, other_wasm) = cache_and_two_plugins();
        let code: Vec<u8> = (0..2 * 4096 + 5).map(|i| (i % 253) as u8).collect();
        cache.store("a.cwasm", &code, &cache.trailer(&wasm, &code)).expect("store");
        let path = tmp.path().join("cache/a.cwasm");
        let stored = std::fs::read(&path).expect("read");
        let open = || {
            let file = std::fs::File::open(&path).expect("open");
            let info = os::info(&file).expect("info");
            (file, info)
        };
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let (file, info) = open();
        // Written a moment ago: hashed every time, never recorded.
        assert_eq!(cache.verify(&file, &info, &wasm).expect("valid"), Verified::Hashed);
        assert_eq!(cache.verify(&file, &info, &wasm).expect("valid"), Verified::Hashed);
        // Settled when hashing began: hashed once, then taken on its record.
        assert_eq!(cache.verify_at(&file, &info, &wasm, later).expect("valid"), Verified::Hashed);
        assert_eq!(cache.verify(&file, &info, &wasm).expect("valid"), Verified::Recalled);
        // The record vouches for this wasm only, and under this key only.
        assert!(matches!(cache.verify(&file, &info, &other_wasm), Err(Unusable::BadMac)));
        let other_key = Cache::open(&tmp.path().join("other"), &engine).expect("cache");
        assert!(matches!(other_key.verify(&file, &info, &wasm), Err(Unusable::BadMac)));
        // Written in place, same inode: a new ctime, so hashed again, and the flipped byte caught.
        // The kernel stamps ctime from a clock that ticks every few milliseconds; a real record
        // names a ctime at least `SETTLED` old, which no later write can share. The record here
        // was made as if hashing began later than it did, so the write waits out one tick.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut flipped = stored.clone();
        flipped[4096] ^= 1;
        std::fs::OpenOptions::new().write(true).open(&path).expect("open").write_all_at(&flipped, 0).expect("write");
        let (file, info) = open();
        assert!(matches!(cache.verify_at(&file, &info, &wasm, later), Err(Unusable::BadMac)));
        // Written back to the very bytes that passed: still hashed, since the ctime moved on.
        std::fs::OpenOptions::new().write(true).open(&path).expect("open").write_all_at(&stored, 0).expect("write");
        let (file, info) = open();
        assert_eq!(cache.verify(&file, &info, &wasm).expect("valid"), Verified::Hashed);
    }
}
