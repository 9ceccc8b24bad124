//! The cache's file system calls on Unix, all relative to the folder's open handle so that the
//! folder checked is the folder used even if its path is swapped later.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags};

use super::{CacheError, FileIdentity, Info, Kind, Opened};

/// An open cache folder and the effective user it is checked against.
pub(super) struct Dir {
    fd: OwnedFd,
    euid: u32,
}

impl Dir {
    /// Opens `path` as a folder without following a symbolic link in its last component,
    /// creating it (and missing parents) with mode 0700 first when it does not exist.
    pub(super) fn open(path: &Path) -> Result<(Dir, Info), CacheError> {
        let euid = rustix::process::geteuid().as_raw();
        let io = |action: &'static str| move |source: io::Error| CacheError::Io { action, path: path.to_path_buf(), error: source };
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(CacheError::SymlinkFolder { path: path.to_path_buf() });
            }
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(io("create"))?;
            }
            Err(err) => return Err(io("inspect")(err)),
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Linux reports a symbolic link opened with O_DIRECTORY|O_NOFOLLOW as ENOTDIR.
            Err(errno) if errno == Errno::NOTDIR || errno == Errno::LOOP => {
                let symlink = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                return Err(if symlink { CacheError::SymlinkFolder { path: path.to_path_buf() } } else { CacheError::NotAFolder { path: path.to_path_buf() } });
            }
            Err(errno) => return Err(io("open")(errno.into())),
        };
        let file = File::from(fd);
        let info = info(&file).map_err(io("inspect"))?;
        Ok((Dir { fd: file.into(), euid }, info))
    }

    pub(super) fn euid(&self) -> u32 {
        self.euid
    }

    /// Opens `name` for reading without following a symbolic link, and describes it from the
    /// open handle. O_NONBLOCK keeps a FIFO planted under the name from blocking the open.
    pub(super) fn open_file(&self, name: &str) -> io::Result<Opened> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => {
                let file = File::from(fd);
                let info = info(&file)?;
                Ok(Opened::Found(file, info))
            }
            Err(errno) if errno == Errno::NOENT => Ok(Opened::Missing),
            Err(errno) if errno == Errno::LOOP => Ok(Opened::Symlink),
            Err(errno) => Err(errno.into()),
        }
    }

    /// Creates `name` exclusively (never an existing file or link) with mode 0600.
    pub(super) fn create_new(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o600))?))
    }

    /// Renames `from` to `to`, replacing `to`.
    pub(super) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Adds the name `to` for `from`; fails with `AlreadyExists` rather than replace `to`.
    pub(super) fn link(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rustix::fs::linkat(&self.fd, from, &self.fd, to, AtFlags::empty())?)
    }

    /// Removes the name `name` (a symbolic link itself, not its target).
    pub(super) fn remove(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }
}

/// Reads exactly `buf.len()` bytes of `file` at `offset`.
pub(super) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// A private read-only mapping of the start of a file, unmapped on drop.
pub(super) struct Mapped {
    ptr: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

impl Mapped {
    /// Maps the first `len` bytes of `file`, populated at once (no fault per page).
    ///
    /// # Safety
    /// Nobody may write or truncate the file while the mapping lives.
    pub(super) unsafe fn new(file: &File, len: usize) -> io::Result<Mapped> {
        if len == 0 {
            return Ok(Mapped { ptr: std::ptr::NonNull::dangling(), len });
        }
        let flags = if cfg!(target_os = "linux") { MapFlags::PRIVATE | MapFlags::POPULATE } else { MapFlags::PRIVATE };
        // SAFETY: a fresh mapping chosen by the kernel, of a file the caller vouches for.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ, flags, file, 0) }?;
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapped { ptr, len })
    }

    pub(super) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` readable bytes are mapped at `ptr` until drop, and the caller of
        // `new` promised nobody changes them.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: this mapping was made by `new` and is not referenced past this point.
            let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr(), self.len) };
        }
    }
}

/// Has wasmtime map the compiled component in the open `file`. The descriptor's own path
/// names the open file itself, so the file checked is the file mapped even if its name in
/// the folder has been replaced since. Where that path does not lead to the same file (no
/// `/proc` mounted), a private copy of the file is loaded instead.
///
/// # Safety
/// `file` must hold native code compiled by this engine that the caller trusts, as for
/// `Component::deserialize_file`.
pub(super) unsafe fn map_verified(engine: &wasmtime::Engine, file: &File) -> wasmtime::Result<wasmtime::component::Component> {
    use std::os::fd::AsRawFd;
    let own_path = if cfg!(target_os = "linux") { format!("/proc/self/fd/{}", file.as_raw_fd()) } else { format!("/dev/fd/{}", file.as_raw_fd()) };
    let open = file.metadata().map_err(wasmtime::Error::new)?;
    let same_file = std::fs::metadata(&own_path).is_ok_and(|named| (named.dev(), named.ino()) == (open.dev(), open.ino()));
    if !same_file {
        // No `/proc` (or `/dev/fd`) here: load a private copy of the open file instead.
        let len = usize::try_from(open.len()).map_err(wasmtime::Error::new)?;
        let mut bytes = vec![0u8; len];
        read_exact_at(file, &mut bytes, 0).map_err(wasmtime::Error::new)?;
        // SAFETY: the caller vouches for the file (see above); these are its bytes.
        return unsafe { wasmtime::component::Component::deserialize(engine, &bytes) };
    }
    // SAFETY: the caller vouches for the file (see above); the path names this process's
    // own descriptor for it, checked to be the same file just above.
    unsafe { wasmtime::component::Component::deserialize_file(engine, own_path) }
}

/// Describes an open handle (fstat), never a path.
pub(super) fn info(file: &File) -> io::Result<Info> {
    let meta = file.metadata()?;
    let kind = if meta.file_type().is_file() {
        Kind::Regular
    } else if meta.file_type().is_dir() {
        Kind::Directory
    } else {
        Kind::Other
    };
    Ok(Info { kind, owner: meta.uid(), mode: meta.mode() & 0o7777, len: meta.len(), identity: FileIdentity::of(&meta) })
}
