//! Refusals made inside WASI recorded: file operations that leave a grant or write to a read-only
//! one, raw sockets and name lookups.
//!
//! wasmtime-wasi refuses these itself (cap-std keeps every path inside its preopen; the sandbox
//! turns sockets and name lookups off) and answers the guest with an error code, telling nobody.
//! `add_to_linker` redefines the few WASI functions that can refuse, after
//! `wasmtime_wasi::p2::add_to_linker_async`, with wrappers that call the very same
//! implementation (`HostDescriptor`, `tcp_create_socket::Host`, ... on the store's WASI view),
//! record a refusal when the answer is one, and hand the guest the same answer unchanged. Every
//! other WASI function, and every resource, stays as wasmtime-wasi defined it.
//!
//! What is recorded:
//! - `file`: a `wasi:filesystem` path operation (open, stat, create or remove a directory,
//!   unlink, rename, symlink, link, readlink, set times, metadata hash) or a write through a
//!   descriptor (write, write or append stream, set size, set times) answered `not-permitted`,
//!   `access` or `read-only`: a path leaving its preopen through `..` or a symlink, an absolute
//!   symlink, a write, create or remove in a read-only grant. The target names the operation
//!   and the guest-visible path: the preopen's guest path joined with the path as the guest gave
//!   it (`open-at /data/../../etc/passwd`). Not-found and other ordinary errors are not refusals.
//! - `socket`: `create-tcp-socket` and `create-udp-socket`, refused `access-denied` (target
//!   `tcp ipv4`, `udp ipv6`); no host socket is ever created for them.
//! - `dns`: `resolve-addresses`, refused because name lookups are off (target: the name).
//!
//! Descriptor budgets: `open-at` and `read-directory`, the two operations that open a host
//! descriptor, first charge the call's descriptor budget (`HostState::charge_descriptor`); past
//! it they answer `insufficient-memory` and the refusal is recorded as `resources`.
//!
//! Not recorded, because it never reaches the host: an absolute path that matches no preopen
//! (`/etc/passwd` when only `/data` is granted), or a relative path that leaves the guest's
//! working directory above every preopen. wasi-libc resolves those against its preopen list
//! inside the guest and fails them with `ENOENT` without any WASI call.
//!
//! The function names below are those of the WASI 0.2 interfaces as wasmtime-wasi defines them
//! (`VERSION`); the linker's semver matching serves every 0.2.x import from that definition, so
//! redefining it there covers guests built against any 0.2 release.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView as _;
use wasmtime_wasi::p2::bindings::filesystem::{preopens, types as fs};
use wasmtime_wasi::p2::bindings::sockets::{ip_name_lookup, network, tcp_create_socket, udp_create_socket};
use wasmtime_wasi::p2::{DynOutputStream, FsResult, SocketResult};
use wasmtime_wasi::sockets::WasiSocketsView as _;

use super::store_state::{HostState, MAX_SHOWN, shown};
use crate::policy::RefusalKind;

/// The WASI 0.2 release whose interfaces wasmtime-wasi 48 defines.
const VERSION: &str = "0.2.12";
/// `relative` as seen from the descriptor's guest path.
fn joined(dir: Option<&str>, relative: &str) -> String {
    match dir {
        Some(dir) if dir.ends_with('/') => format!("{dir}{relative}"),
        Some(dir) => format!("{dir}/{relative}"),
        None => format!("(unknown descriptor)/{relative}"),
    }
}

/// Error codes that mean "refused" rather than "failed".
fn is_refusal(code: fs::ErrorCode) -> bool {
    matches!(code, fs::ErrorCode::NotPermitted | fs::ErrorCode::Access | fs::ErrorCode::ReadOnly)
}

/// One path operation: its name and the guest-visible path(s) it names, for the record.
struct PathOp {
    op: &'static str,
    target: String,
}

impl PathOp {
    fn new(state: &HostState, op: &'static str, fd: &Resource<fs::Descriptor>, path: &str) -> PathOp {
        PathOp { op, target: joined(state.descriptor_paths.path_of(fd).as_deref(), path) }
    }

    /// An operation naming two paths (`old -> new`).
    fn pair(state: &HostState, op: &'static str, (from_fd, from): (&Resource<fs::Descriptor>, &str), (to_fd, to): (&Resource<fs::Descriptor>, &str)) -> PathOp {
        let from = joined(state.descriptor_paths.path_of(from_fd).as_deref(), from);
        let to = joined(state.descriptor_paths.path_of(to_fd).as_deref(), to);
        PathOp { op, target: format!("{from} -> {to}") }
    }

    /// A write through a descriptor (no path of its own).
    fn through(state: &HostState, op: &'static str, fd: &Resource<fs::Descriptor>) -> PathOp {
        let target = state.descriptor_paths.path_of(fd).map_or_else(|| "(unknown descriptor)".to_owned(), |p| p.to_string());
        PathOp { op, target }
    }

    /// Turns the implementation's answer into the guest's, exactly as the generated binding
    /// does (`convert_error_code`, which traps on anything but an error code), recording a
    /// refusal on the way.
    fn settle<R>(self, state: &mut HostState, result: FsResult<R>) -> wasmtime::Result<Result<R, fs::ErrorCode>> {
        let err = match result {
            Ok(value) => return Ok(Ok(value)),
            Err(err) => err,
        };
        let code = fs::Host::convert_error_code(&mut state.filesystem(), err)?;
        if is_refusal(code) {
            let target = crate::runtime::text::truncate(format!("{} {}", self.op, self.target), 2 * MAX_SHOWN);
            state.recorder.refuse(RefusalKind::File, &target);
        }
        Ok(Err(code))
    }
}

type Fd = Resource<fs::Descriptor>;
type FsAnswer<R> = wasmtime::Result<(Result<R, fs::ErrorCode>,)>;

/// Redefines the WASI functions that can refuse with recording wrappers; call it after
/// `wasmtime_wasi::p2::add_to_linker_async`.
///
/// # Errors
/// A definition the linker refuses.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let defined = define(linker);
    linker.allow_shadowing(false);
    defined
}

fn define(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut preopens = linker.instance(&format!("wasi:filesystem/preopens@{VERSION}"))?;
    preopens.func_wrap("get-directories", |mut store: StoreContextMut<'_, HostState>, (): ()| {
        let dirs = preopens::Host::get_directories(&mut store.data_mut().filesystem())?;
        let state = store.data_mut();
        for (fd, guest) in &dirs {
            state.descriptor_paths.insert(fd, guest);
        }
        Ok((dirs,))
    })?;

    let mut types = linker.instance(&format!("wasi:filesystem/types@{VERSION}"))?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, path, open_flags, flags): (Fd, fs::PathFlags, String, fs::OpenFlags, fs::DescriptorFlags)|
         -> Box<dyn Future<Output = FsAnswer<Fd>> + Send + '_> {
            Box::new(async move {
                // Every descriptor the call opens is charged to its plugin's and the process's
                // descriptor budgets first (a refusal is recorded there).
                if store.data_mut().charge_descriptor().is_err() {
                    return Ok((Err(fs::ErrorCode::InsufficientMemory),));
                }
                let writes = flags.contains(fs::DescriptorFlags::WRITE) || open_flags.intersects(fs::OpenFlags::CREATE | fs::OpenFlags::TRUNCATE);
                let op = PathOp::new(store.data(), if writes { "open-at(write)" } else { "open-at" }, &fd, &path);
                let result = fs::HostDescriptor::open_at(&mut store.data_mut().filesystem(), fd, path_flags, path, open_flags, flags).await;
                if let Ok(opened) = &result {
                    store.data_mut().descriptor_paths.insert(opened, &op.target);
                }
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-directory",
        |mut store: StoreContextMut<'_, HostState>, (fd,): (Fd,)| -> Box<dyn Future<Output = FsAnswer<Resource<fs::DirectoryEntryStream>>> + Send + '_> {
            Box::new(async move {
                // A listing holds a descriptor of its own until it is dropped.
                if store.data_mut().charge_descriptor().is_err() {
                    return Ok((Err(fs::ErrorCode::InsufficientMemory),));
                }
                let result = fs::HostDescriptor::read_directory(&mut store.data_mut().filesystem(), fd).await;
                let result = match result {
                    Ok(stream) => Ok(stream),
                    Err(err) => Err(fs::Host::convert_error_code(&mut store.data_mut().filesystem(), err)?),
                };
                Ok((result,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, path): (Fd, fs::PathFlags, String)|
         -> Box<dyn Future<Output = FsAnswer<fs::DescriptorStat>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "stat-at", &fd, &path);
                let result = fs::HostDescriptor::stat_at(&mut store.data_mut().filesystem(), fd, path_flags, path).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.metadata-hash-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, path): (Fd, fs::PathFlags, String)|
         -> Box<dyn Future<Output = FsAnswer<fs::MetadataHashValue>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "metadata-hash-at", &fd, &path);
                let result = fs::HostDescriptor::metadata_hash_at(&mut store.data_mut().filesystem(), fd, path_flags, path).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, path, atime, mtime): (Fd, fs::PathFlags, String, fs::NewTimestamp, fs::NewTimestamp)|
         -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "set-times-at", &fd, &path);
                let result = fs::HostDescriptor::set_times_at(&mut store.data_mut().filesystem(), fd, path_flags, path, atime, mtime).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.readlink-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, path): (Fd, String)| -> Box<dyn Future<Output = FsAnswer<String>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "readlink-at", &fd, &path);
                let result = fs::HostDescriptor::readlink_at(&mut store.data_mut().filesystem(), fd, path).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, path): (Fd, String)| -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "create-directory-at", &fd, &path);
                let result = fs::HostDescriptor::create_directory_at(&mut store.data_mut().filesystem(), fd, path).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.remove-directory-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, path): (Fd, String)| -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "remove-directory-at", &fd, &path);
                let result = fs::HostDescriptor::remove_directory_at(&mut store.data_mut().filesystem(), fd, path).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, path): (Fd, String)| -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::new(store.data(), "unlink-file-at", &fd, &path);
                let result = fs::HostDescriptor::unlink_file_at(&mut store.data_mut().filesystem(), fd, path).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, target, link): (Fd, String, String)| -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                // The link is a path in the grant; its target is text, shown as the guest wrote it.
                let mut op = PathOp::new(store.data(), "symlink-at", &fd, &link);
                op.target = format!("{} -> {}", op.target, shown(&target));
                let result = fs::HostDescriptor::symlink_at(&mut store.data_mut().filesystem(), fd, target, link).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store: StoreContextMut<'_, HostState>, (fd, from, to_fd, to): (Fd, String, Fd, String)| -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::pair(store.data(), "rename-at", (&fd, &from), (&to_fd, &to));
                let result = fs::HostDescriptor::rename_at(&mut store.data_mut().filesystem(), fd, from, to_fd, to).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, path_flags, from, to_fd, to): (Fd, fs::PathFlags, String, Fd, String)|
         -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::pair(store.data(), "link-at", (&fd, &from), (&to_fd, &to));
                let result = fs::HostDescriptor::link_at(&mut store.data_mut().filesystem(), fd, path_flags, from, to_fd, to).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, bytes, offset): (Fd, Vec<u8>, fs::Filesize)|
         -> Box<dyn Future<Output = FsAnswer<fs::Filesize>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::through(store.data(), "write", &fd);
                let result = fs::HostDescriptor::write(&mut store.data_mut().filesystem(), fd, bytes, offset).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store: StoreContextMut<'_, HostState>, (fd, size): (Fd, fs::Filesize)| -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::through(store.data(), "set-size", &fd);
                let result = fs::HostDescriptor::set_size(&mut store.data_mut().filesystem(), fd, size).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times",
        |mut store: StoreContextMut<'_, HostState>,
         (fd, atime, mtime): (Fd, fs::NewTimestamp, fs::NewTimestamp)|
         -> Box<dyn Future<Output = FsAnswer<()>> + Send + '_> {
            Box::new(async move {
                let op = PathOp::through(store.data(), "set-times", &fd);
                let result = fs::HostDescriptor::set_times(&mut store.data_mut().filesystem(), fd, atime, mtime).await;
                Ok((op.settle(store.data_mut(), result)?,))
            })
        },
    )?;
    types.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store: StoreContextMut<'_, HostState>, (fd, offset): (Fd, fs::Filesize)| -> FsAnswer<Resource<DynOutputStream>> {
            let op = PathOp::through(store.data(), "write-via-stream", &fd);
            let result = fs::HostDescriptor::write_via_stream(&mut store.data_mut().filesystem(), fd, offset);
            Ok((op.settle(store.data_mut(), result)?,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store: StoreContextMut<'_, HostState>, (fd,): (Fd,)| -> FsAnswer<Resource<DynOutputStream>> {
            let op = PathOp::through(store.data(), "append-via-stream", &fd);
            let result = fs::HostDescriptor::append_via_stream(&mut store.data_mut().filesystem(), fd);
            Ok((op.settle(store.data_mut(), result)?,))
        },
    )?;

    define_sockets(linker)
}

type SocketAnswer<R> = wasmtime::Result<(Result<R, network::ErrorCode>,)>;

/// The guest's answer for a socket call, as the generated binding makes it, recording a refusal
/// when the answer is `refused`.
fn settle_socket<R>(
    state: &mut HostState,
    result: SocketResult<R>,
    refused: network::ErrorCode,
    kind: RefusalKind,
    target: impl FnOnce() -> String,
) -> SocketAnswer<R> {
    let err = match result {
        Ok(value) => return Ok((Ok(value),)),
        Err(err) => err,
    };
    let code = network::Host::convert_error_code(&mut state.sockets(), err)?;
    if code == refused {
        state.recorder.refuse(kind, &target());
    }
    Ok((Err(code),))
}

fn family(family: network::IpAddressFamily) -> &'static str {
    match family {
        network::IpAddressFamily::Ipv4 => "ipv4",
        network::IpAddressFamily::Ipv6 => "ipv6",
    }
}

fn define_sockets(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut tcp = linker.instance(&format!("wasi:sockets/tcp-create-socket@{VERSION}"))?;
    tcp.func_wrap("create-tcp-socket", |mut store: StoreContextMut<'_, HostState>, (address_family,): (network::IpAddressFamily,)| {
        let result = tcp_create_socket::Host::create_tcp_socket(&mut store.data_mut().sockets(), address_family);
        let target = || format!("tcp {}", family(address_family));
        settle_socket(store.data_mut(), result, network::ErrorCode::AccessDenied, RefusalKind::Socket, target)
    })?;
    let mut udp = linker.instance(&format!("wasi:sockets/udp-create-socket@{VERSION}"))?;
    udp.func_wrap_async(
        "create-udp-socket",
        |mut store: StoreContextMut<'_, HostState>,
         (address_family,): (network::IpAddressFamily,)|
         -> Box<dyn Future<Output = SocketAnswer<Resource<wasmtime_wasi::p2::UdpSocket>>> + Send + '_> {
            Box::new(async move {
                let result = udp_create_socket::Host::create_udp_socket(&mut store.data_mut().sockets(), address_family).await;
                let target = || format!("udp {}", family(address_family));
                settle_socket(store.data_mut(), result, network::ErrorCode::AccessDenied, RefusalKind::Socket, target)
            })
        },
    )?;
    let mut lookup = linker.instance(&format!("wasi:sockets/ip-name-lookup@{VERSION}"))?;
    lookup.func_wrap("resolve-addresses", |mut store: StoreContextMut<'_, HostState>, (net, name): (Resource<wasmtime_wasi::p2::Network>, String)| {
        let shown_name = shown(&name);
        let result = ip_name_lookup::Host::resolve_addresses(&mut store.data_mut().sockets(), net, name);
        // With name lookups off, wasmtime-wasi answers every lookup this way, before any
        // resolver is asked.
        let refused = network::ErrorCode::PermanentResolverFailure;
        settle_socket(store.data_mut(), result, refused, RefusalKind::Dns, || shown_name)
    })?;
    Ok(())
}
