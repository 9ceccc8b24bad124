//! What the cache already knows about a file, kept by the file's identity: a start reads one small
//! record instead of reading the whole file again.
//!
//! Two facts are recorded (`Fact`): the BLAKE3 digest of a plugin file's content, so that an
//! unchanged plugin is not hashed at every start; and that a compiled artifact passed its MAC in
//! full, so that unchanged code is not hashed at every start either.
//!
//! A record maps a file's identity (device, inode, size, modification and change times) and
//! what the fact is about to 32 bytes of value, with a tag under the cache key over all of it:
//! without the key nobody can make or alter one. A record is written only for a file whose change
//! time (ctime) was already `SETTLED` old when its reading began. Any later change to the file, to
//! its content or its metadata, sets its ctime to the time of that change, so a file that still
//! has a record's identity has not changed since it was read. The margin covers coarse clock
//! ticks and file systems with coarse timestamps: a change in the same tick as the recorded one
//! could otherwise go unseen (git's "racily clean" rule for its index). Only a clock set back, or
//! a write to the device under the file system, gets past it, and both need root.
//!
//! A record that names a digest whose compiled artifact is gone costs nothing: the file is then
//! read to compile, and checked against that digest as always (`LoadError::Changed` if it does
//! not match, and the record is dropped).

use std::time::{Duration, SystemTime};

use super::{Cache, Durability, Opened, Role, exposure, hex, os};

/// How old a file's ctime must be when its reading begins for a fact about it to be recorded.
pub(super) const SETTLED: Duration = Duration::from_secs(2);
/// Separates this use of the cache key from its others.
const RECORD_DOMAIN: &[u8] = b"paddock known file, format 2\0";
/// A record: the value, then its tag.
const RECORD_LEN: usize = 64;

/// What a record says about the file with its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fact<'a> {
    /// A plugin file; the value is the BLAKE3 digest of its content.
    PluginDigest,
    /// The compiled artifact for the wasm with this digest and this cache's engine, whose every
    /// byte passed the MAC; the value is the artifact's tag.
    VerifiedArtifact { wasm_digest: &'a [u8; 32] },
}

/// What identifies a file's content without reading it, as long as its ctime is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    pub(crate) device: u64,
    pub(crate) inode: u64,
    pub(crate) size: u64,
    pub(crate) modified: (i64, i64),
    pub(crate) changed: (i64, i64),
}

impl FileIdentity {
    /// The identity of an open file, from its metadata; `None` where the platform has no inodes.
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Option<FileIdentity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileIdentity {
                device: metadata.dev(),
                inode: metadata.ino(),
                size: metadata.size(),
                modified: (metadata.mtime(), metadata.mtime_nsec()),
                changed: (metadata.ctime(), metadata.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            None
        }
    }

    fn bytes(&self) -> [u8; 56] {
        let mut bytes = [0u8; 56];
        let fields = [self.device, self.inode, self.size, self.modified.0 as u64, self.modified.1 as u64, self.changed.0 as u64, self.changed.1 as u64];
        for (slot, field) in bytes.chunks_exact_mut(8).zip(fields) {
            slot.copy_from_slice(&field.to_le_bytes());
        }
        bytes
    }

    /// Whether the file's ctime was at least `SETTLED` old at `reading_began`.
    fn settled(&self, reading_began: SystemTime) -> bool {
        self.settles_at().is_some_and(|settles_at| reading_began >= settles_at)
    }

    /// When the file's ctime will be `SETTLED` old.
    fn settles_at(&self) -> Option<SystemTime> {
        let (Ok(seconds), Ok(nanos)) = (u64::try_from(self.changed.0), u32::try_from(self.changed.1)) else { return None };
        Some(SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos) + SETTLED)
    }
}

impl Cache {
    /// The digest recorded for a plugin file with this identity, if a valid record is there.
    pub(crate) fn known_digest(&self, identity: &FileIdentity) -> Option<[u8; 32]> {
        self.recall(Fact::PluginDigest, identity)
    }

    /// Records the digest of a plugin file hashed from `hashing_began` on, if its ctime was
    /// settled by then; if not, runs `again` (which hashes it again) once it has settled.
    pub(crate) fn remember_digest(&self, identity: &FileIdentity, digest: &[u8; 32], hashing_began: SystemTime, again: impl FnOnce() + Send + 'static) {
        if identity.settled(hashing_began) {
            self.remember(Fact::PluginDigest, identity, digest, hashing_began);
        } else if let Some(settles_at) = identity.settles_at() {
            super::later::once_settled(settles_at, again);
        }
    }

    /// Drops the digest recorded for a plugin file with this identity.
    pub(crate) fn forget_digest(&self, identity: &FileIdentity) {
        self.forget(Fact::PluginDigest, identity);
    }

    /// The value recorded for `fact` about a file with this identity, if a valid record is there.
    pub(super) fn recall(&self, fact: Fact<'_>, identity: &FileIdentity) -> Option<[u8; 32]> {
        let name = self.record_name(fact, identity);
        let (file, info) = match self.handle.open_file(&name) {
            Ok(Opened::Found(file, info)) => (file, info),
            // An error opening it (out of descriptors, say) says nothing about the record.
            Ok(Opened::Missing) | Err(_) => return None,
            Ok(Opened::Symlink) => {
                self.forget(fact, identity);
                return None;
            }
        };
        if let Some(value) = self.read_record(&file, &info, fact, identity) {
            return Some(value);
        }
        tracing::debug!(path = %self.dir.join(&name).display(), "a record of what a file held is not valid; the file is read again");
        self.forget(fact, identity);
        None
    }

    /// The value in an open record, if it is the user's own private file of the right size and
    /// its tag is this fact's, this identity's and this value's under the cache key.
    fn read_record(&self, file: &std::fs::File, info: &super::Info, fact: Fact<'_>, identity: &FileIdentity) -> Option<[u8; 32]> {
        if exposure(Role::Artifact, info, self.handle.euid()).is_some() || info.len != RECORD_LEN as u64 {
            return None;
        }
        let mut record = [0u8; RECORD_LEN];
        os::read_exact_at(file, &mut record, 0).ok()?;
        let (value, tag) = record.split_at(32);
        let value: [u8; 32] = value.try_into().ok()?;
        // `blake3::Hash` compares in constant time.
        (blake3::Hash::from_slice(tag).ok()? == self.record_tag(fact, identity, &value)).then_some(value)
    }

    /// Records `value` for `fact` about a file read from `reading_began` on, if its ctime was
    /// settled by then. Best effort: a record that cannot be written is a file read again next
    /// time.
    pub(super) fn remember(&self, fact: Fact<'_>, identity: &FileIdentity, value: &[u8; 32], reading_began: SystemTime) {
        if !identity.settled(reading_began) {
            return;
        }
        let name = self.record_name(fact, identity);
        // Unsynced: a record lost or torn by a crash only fails its tag, and the file is read
        // again.
        let tag = self.record_tag(fact, identity, value);
        let _ = self.write_whole(&name, &[value, tag.as_bytes()], Durability::Unsynced);
    }

    /// Drops the record of `fact` about a file with this identity.
    pub(super) fn forget(&self, fact: Fact<'_>, identity: &FileIdentity) {
        let _ = self.handle.remove(&self.record_name(fact, identity));
    }

    /// Feeds what `fact` is about into a name or a tag, so that no record answers for another
    /// fact, another wasm or another engine.
    fn bind(&self, fact: Fact<'_>, mac: &mut blake3::Hasher) {
        match fact {
            Fact::PluginDigest => {
                mac.update(b"plugin digest\0");
            }
            Fact::VerifiedArtifact { wasm_digest } => {
                mac.update(b"verified artifact\0");
                mac.update(wasm_digest);
                mac.update(&self.engine_digest);
            }
        }
    }

    fn record_name(&self, fact: Fact<'_>, identity: &FileIdentity) -> String {
        let mut mac = self.mac.clone();
        mac.update(RECORD_DOMAIN);
        mac.update(b"name\0");
        self.bind(fact, &mut mac);
        mac.update(&identity.bytes());
        format!("{}.known", hex(&mac.finalize().as_bytes()[..16]))
    }

    fn record_tag(&self, fact: Fact<'_>, identity: &FileIdentity, value: &[u8; 32]) -> blake3::Hash {
        let mut mac = self.mac.clone();
        mac.update(RECORD_DOMAIN);
        mac.update(b"tag\0");
        self.bind(fact, &mut mac);
        mac.update(&identity.bytes());
        mac.update(value);
        mac.finalize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(changed: i64) -> FileIdentity {
        FileIdentity { device: 1, inode: 2, size: 3, modified: (changed, 5), changed: (changed, 7) }
    }

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    /// Writes a file as the cache would: mode 0600.
    fn write_private(path: &std::path::Path, bytes: &[u8]) {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path).expect("open");
        std::io::Write::write_all(&mut file, bytes).expect("write");
    }

    fn cache(dir: &std::path::Path) -> Cache {
        let engine = wasmtime::Engine::default();
        Cache::open(dir, &engine).expect("cache")
    }

    #[test]
    fn a_digest_is_known_only_for_the_identity_it_was_recorded_for_and_only_once_settled() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = cache(&dir.path().join("cache"));
        let digest = [9u8; 32];
        let recorded = identity(1_000);
        cache.remember_digest(&recorded, &digest, at(1_003), || ());
        assert_eq!(cache.known_digest(&recorded), Some(digest));
        // Any field of the identity changed: unknown.
        for other in [
            FileIdentity { device: 9, ..recorded },
            FileIdentity { inode: 9, ..recorded },
            FileIdentity { size: 9, ..recorded },
            FileIdentity { modified: (1_000, 6), ..recorded },
            FileIdentity { changed: (1_000, 8), ..recorded },
        ] {
            assert_eq!(cache.known_digest(&other), None, "{other:?}");
        }
        // Changed less than `SETTLED` before hashing began, or after it: never recorded.
        let fresh = identity(2_000);
        cache.remember_digest(&fresh, &digest, at(2_001), || ());
        assert_eq!(cache.known_digest(&fresh), None);
        cache.remember_digest(&fresh, &digest, at(1_990), || ());
        assert_eq!(cache.known_digest(&fresh), None);
        cache.forget_digest(&recorded);
        assert_eq!(cache.known_digest(&recorded), None);
    }

    #[test]
    fn an_altered_or_foreign_record_is_not_believed_and_is_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let (first, second) = (cache(&dir.path().join("a")), cache(&dir.path().join("b")));
        let recorded = identity(1_000);
        first.remember_digest(&recorded, &[1u8; 32], at(1_010), || ());
        let name = first.record_name(Fact::PluginDigest, &recorded);
        let path = dir.path().join("a").join(&name);
        let original = std::fs::read(&path).expect("a record");
        assert_eq!(original.len(), RECORD_LEN);
        for flipped in [0, 31, 32, 63] {
            let mut altered = original.clone();
            altered[flipped] ^= 1;
            write_private(&path, &altered);
            assert_eq!(first.known_digest(&recorded), None, "byte {flipped} flipped");
            assert!(!path.exists(), "an invalid record is removed");
        }
        // Another cache's key: its record, copied over, names another digest under another tag.
        second.remember_digest(&recorded, &[2u8; 32], at(1_010), || ());
        std::fs::copy(dir.path().join("b").join(second.record_name(Fact::PluginDigest, &recorded)), &path).expect("copy");
        assert_eq!(first.known_digest(&recorded), None);
        // A record cut short.
        write_private(&path, &original[..40]);
        assert_eq!(first.known_digest(&recorded), None);
    }

    #[test]
    fn a_record_answers_only_for_the_fact_it_was_made_for() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = cache(&dir.path().join("cache"));
        let file = identity(1_000);
        let (wasm, other_wasm) = ([1u8; 32], [2u8; 32]);
        let verified = |wasm_digest| Fact::VerifiedArtifact { wasm_digest };
        cache.remember(verified(&wasm), &file, &[7u8; 32], at(1_010));
        assert_eq!(cache.recall(verified(&wasm), &file), Some([7u8; 32]));
        assert_eq!(cache.recall(verified(&other_wasm), &file), None, "an artifact vouched for another wasm");
        let mut other_engine = cache.clone();
        other_engine.engine_digest[0] ^= 1;
        assert_eq!(other_engine.recall(verified(&wasm), &file), None, "an artifact vouched for another engine");
        assert_eq!(cache.known_digest(&file), None, "a verified artifact is not a plugin digest");
        cache.remember_digest(&file, &[8u8; 32], at(1_010), || ());
        assert_eq!(cache.known_digest(&file), Some([8u8; 32]));
        assert_eq!(cache.recall(verified(&wasm), &file), Some([7u8; 32]), "each fact keeps its own record");
    }
}
