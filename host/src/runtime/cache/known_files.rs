//! Digests of plugin files already hashed, kept by the identity of the file they were read from:
//! a start reads one small record instead of hashing a file that has not changed.
//!
//! A record maps a file's identity (device, inode, size, modification and change times) to the
//! BLAKE3 digest of the content it had, with a tag under the cache key over both: without the key
//! nobody can make or alter one. A record is written only for a file whose change time (ctime)
//! was already `SETTLED` old when its hashing began. Any later change to the file, to its content
//! or its metadata, sets its ctime to the time of that change, so a file that still has a
//! record's identity has not changed since it was hashed. The margin covers coarse clock ticks
//! and file systems with coarse timestamps: a change in the same tick as the recorded one could
//! otherwise go unseen (git's "racily clean" rule for its index). Only a clock set back, or a
//! write to the device under the file system, gets past it, and both need root.
//!
//! A record that names a digest whose compiled artifact is gone costs nothing: the file is then
//! read to compile, and checked against that digest as always (`LoadError::Changed` if it does
//! not match, and the record is dropped).

use std::time::{Duration, SystemTime};

use super::{Cache, Durability, Opened, Role, exposure, hex, os};

/// How old a file's ctime must be when its hashing begins for its digest to be recorded.
const SETTLED: Duration = Duration::from_secs(2);
/// Separates this use of the cache key from its others.
const RECORD_DOMAIN: &[u8] = b"paddock known file, format 1\0";
/// A record: the digest, then its tag.
const RECORD_LEN: usize = 64;

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
        let fields = [
            self.device,
            self.inode,
            self.size,
            self.modified.0 as u64,
            self.modified.1 as u64,
            self.changed.0 as u64,
            self.changed.1 as u64,
        ];
        for (slot, field) in bytes.chunks_exact_mut(8).zip(fields) {
            slot.copy_from_slice(&field.to_le_bytes());
        }
        bytes
    }

    /// Whether the file's ctime was at least `SETTLED` old at `hashing_began`.
    fn settled(&self, hashing_began: SystemTime) -> bool {
        let (Ok(seconds), Ok(nanos)) = (u64::try_from(self.changed.0), u32::try_from(self.changed.1)) else { return false };
        let changed = SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos);
        hashing_began.duration_since(changed).is_ok_and(|age| age >= SETTLED)
    }
}

impl Cache {
    /// The digest recorded for a file with this identity, if a valid record is there.
    pub(crate) fn known_digest(&self, identity: &FileIdentity) -> Option<[u8; 32]> {
        let name = self.record_name(identity);
        let (file, info) = match self.handle.open_file(&name) {
            Ok(Opened::Found(file, info)) => (file, info),
            // An error opening it (out of descriptors, say) says nothing about the record.
            Ok(Opened::Missing) | Err(_) => return None,
            Ok(Opened::Symlink) => {
                self.forget_digest(identity);
                return None;
            }
        };
        if let Some(digest) = self.read_record(&file, &info, identity) {
            return Some(digest);
        }
        tracing::debug!(path = %self.dir.join(&name).display(), "a record of a plugin file's digest is not valid; the file is hashed again");
        self.forget_digest(identity);
        None
    }

    /// The digest in an open record, if it is the user's own private file of the right size and
    /// its tag is this identity's and this digest's under the cache key.
    fn read_record(&self, file: &std::fs::File, info: &super::Info, identity: &FileIdentity) -> Option<[u8; 32]> {
        if exposure(Role::Artifact, info, self.handle.euid()).is_some() || info.len != RECORD_LEN as u64 {
            return None;
        }
        let mut record = [0u8; RECORD_LEN];
        os::read_exact_at(file, &mut record, 0).ok()?;
        let (digest, tag) = record.split_at(32);
        let digest: [u8; 32] = digest.try_into().ok()?;
        // `blake3::Hash` compares in constant time.
        (blake3::Hash::from_slice(tag).ok()? == self.record_tag(identity, &digest)).then_some(digest)
    }

    /// Records the digest of a file hashed from `hashing_began` on, if its ctime was settled by
    /// then. Best effort: a record that cannot be written is a file hashed again next time.
    pub(crate) fn remember_digest(&self, identity: &FileIdentity, digest: &[u8; 32], hashing_began: SystemTime) {
        if !identity.settled(hashing_began) {
            return;
        }
        let name = self.record_name(identity);
        // Unsynced: a record lost or torn by a crash only fails its tag, and the file is hashed
        // again.
        let tag = self.record_tag(identity, digest);
        let _ = self.write_whole(&name, &[digest, tag.as_bytes()], Durability::Unsynced);
    }

    /// Drops the record for a file with this identity.
    pub(crate) fn forget_digest(&self, identity: &FileIdentity) {
        let _ = self.handle.remove(&self.record_name(identity));
    }

    fn record_name(&self, identity: &FileIdentity) -> String {
        let mut mac = self.mac.clone();
        mac.update(RECORD_DOMAIN);
        mac.update(b"name\0");
        mac.update(&identity.bytes());
        format!("{}.known", hex(&mac.finalize().as_bytes()[..16]))
    }

    fn record_tag(&self, identity: &FileIdentity, digest: &[u8; 32]) -> blake3::Hash {
        let mut mac = self.mac.clone();
        mac.update(RECORD_DOMAIN);
        mac.update(b"tag\0");
        mac.update(&identity.bytes());
        mac.update(digest);
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
        cache.remember_digest(&recorded, &digest, at(1_003));
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
        cache.remember_digest(&fresh, &digest, at(2_001));
        assert_eq!(cache.known_digest(&fresh), None);
        cache.remember_digest(&fresh, &digest, at(1_990));
        assert_eq!(cache.known_digest(&fresh), None);
        cache.forget_digest(&recorded);
        assert_eq!(cache.known_digest(&recorded), None);
    }

    #[test]
    fn an_altered_or_foreign_record_is_not_believed_and_is_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let (first, second) = (cache(&dir.path().join("a")), cache(&dir.path().join("b")));
        let recorded = identity(1_000);
        first.remember_digest(&recorded, &[1u8; 32], at(1_010));
        let name = first.record_name(&recorded);
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
        second.remember_digest(&recorded, &[2u8; 32], at(1_010));
        std::fs::copy(dir.path().join("b").join(second.record_name(&recorded)), &path).expect("copy");
        assert_eq!(first.known_digest(&recorded), None);
        // A record cut short.
        write_private(&path, &original[..40]);
        assert_eq!(first.known_digest(&recorded), None);
    }
}
