//! What the live folder knows of a file without reading it: its stamp (which changes with any
//! write, rename or change of metadata), whether it has settled (nothing changed it for a while,
//! so a writer is done with it), and whether another user could have written it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What identifies a file's content while it stays the same: device, inode, size, and the
/// modification and change times (any write sets the change time, which no user can set back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: metadata.dev(),
            ino: metadata.ino(),
            len: metadata.len(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}

/// How much longer to wait before a file last changed at `metadata`'s times counts as whole:
/// `None` once nothing has changed it for `settle`. A time in the future waits the full `settle`.
pub(crate) fn unsettled(metadata: &std::fs::Metadata, now: SystemTime, settle: Duration) -> Option<Duration> {
    let changed = |secs: i64, nanos: i64| {
        let secs = u64::try_from(secs).unwrap_or(0);
        SystemTime::UNIX_EPOCH + Duration::new(secs, u32::try_from(nanos).unwrap_or(0))
    };
    let last = changed(metadata.mtime(), metadata.mtime_nsec()).max(changed(metadata.ctime(), metadata.ctime_nsec()));
    match now.duration_since(last) {
        Ok(age) if age >= settle => None,
        Ok(age) => Some(settle - age),
        Err(_) => Some(settle),
    }
}

/// Why a file or folder is not trusted: someone other than this user (or root) could have put
/// what it holds there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    #[error("it is owned by uid {owner}, neither this user (uid {euid}) nor root (fix: `chown {euid}` it, or serve a folder of your own)")]
    ForeignOwner { owner: u32, euid: u32 },
    #[error("it is writable by other users (mode {mode:04o}), who could put their code in it (fix: `chmod go-w` it)")]
    Shared { mode: u32 },
}

/// Whether what `metadata` describes could only have been written by this user or root: owned by
/// one of them and not writable by group or others, or on a file system mounted read-only
/// (where the bits do not matter, as in a Kubernetes ConfigMap volume). The same rule as the
/// compiled-plugin cache's, with root also trusted: root can change anything anyway.
pub(crate) fn trusted(path: &Path, metadata: &std::fs::Metadata) -> Result<(), Untrusted> {
    let euid = rustix::process::geteuid().as_raw();
    let (owner, mode) = (metadata.uid(), metadata.mode() & 0o7777);
    if owner != euid && owner != 0 {
        return Err(Untrusted::ForeignOwner { owner, euid });
    }
    if mode & 0o022 != 0 && !read_only_mount(path) {
        return Err(Untrusted::Shared { mode });
    }
    Ok(())
}

/// Whether `path` is on a file system mounted read-only.
fn read_only_mount(path: &Path) -> bool {
    rustix::fs::statvfs(path).is_ok_and(|s| s.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_settles_once_nothing_changed_it_for_the_settle_time() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("p.wasm");
        std::fs::write(&path, b"x").expect("write");
        let metadata = std::fs::metadata(&path).expect("stat");
        let settle = Duration::from_millis(300);
        let now = SystemTime::now();
        let wait = unsettled(&metadata, now, settle).expect("just written");
        assert!(wait <= settle && wait > Duration::ZERO, "{wait:?}");
        assert_eq!(unsettled(&metadata, now + settle, settle), None);
        assert_eq!(unsettled(&metadata, now - Duration::from_secs(3600), settle), Some(settle), "a change in the future waits");

        let before = Stamp::of(&metadata);
        std::fs::write(&path, b"y").expect("rewrite, same length");
        assert_ne!(Stamp::of(&std::fs::metadata(&path).expect("stat")), before, "a write changes the stamp");
    }

    #[test]
    fn files_others_can_write_are_not_trusted() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("p.wasm");
        std::fs::write(&path, b"x").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(trusted(&path, &std::fs::metadata(&path).expect("stat")), Ok(()));
        for mode in [0o664, 0o646, 0o666] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let refused = trusted(&path, &std::fs::metadata(&path).expect("stat")).expect_err("shared");
            assert_eq!(refused, Untrusted::Shared { mode });
            assert!(refused.to_string().contains("chmod go-w"), "{refused}");
        }
    }
}
