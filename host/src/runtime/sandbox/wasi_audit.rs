//! Refusals made inside WASI recorded: file operations that leave a grant or write to a read-only
//! one, raw sockets and name lookups.
//!
//! wasmtime-wasi refuses these itself (cap-std keeps every path inside its preopen; the sandbox
//! turns sockets and name lookups off) and answers the guest with an error code, telling nobody.
//! `add_to_linker` redefines the few WASI functions that can refuse, after
//! `wasmtime_wasi::p2::add_to_linker_async`, with wrappers that call the very same
//! implementation (`HostDescriptor`, `tcp_create_socket::Host`, ... on the store's WASI view),
//! record a refusal when the answer is one, and hand the guest the same answer unchanged. Every
//! other WASI function, and every resource, stays as wasmtime-wasi defined it. Each wrapper that
//! only describes, calls and records is one entry of `audited_descriptor!` or `audited_socket!`
//! (its interface, name, parameters, path or target, and the function it delegates to);
//! `get-directories`, `open-at` and `read-directory`, which do more, are written out.
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
use wasmtime_wasi::p2::{DynOutputStream, FsResult, Network, SocketResult, TcpSocket, UdpSocket};
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

type Fd = Resource<fs::Descriptor>;
type FsAnswer<R> = wasmtime::Result<(Result<R, fs::ErrorCode>,)>;

/// One path operation: its name and the guest-visible path(s) it names, for the record.
struct PathOp {
    op: &'static str,
    target: String,
}

impl PathOp {
    /// An operation naming a path in a descriptor.
    fn at(state: &HostState, op: &'static str, fd: &Fd, path: &str) -> PathOp {
        PathOp { op, target: joined(state.descriptor_paths.path_of(fd).as_deref(), path) }
    }

    /// An operation naming two paths (`old -> new`).
    fn pair(state: &HostState, op: &'static str, from_fd: &Fd, from: &str, to_fd: &Fd, to: &str) -> PathOp {
        let from = joined(state.descriptor_paths.path_of(from_fd).as_deref(), from);
        let to = joined(state.descriptor_paths.path_of(to_fd).as_deref(), to);
        PathOp { op, target: format!("{from} -> {to}") }
    }

    /// A symbolic link: its path in the grant, and its target, which is text, shown as the
    /// guest wrote it (`link -> target`).
    fn symlink(state: &HostState, op: &'static str, fd: &Fd, link: &str, target: &str) -> PathOp {
        let link = PathOp::at(state, op, fd, link);
        PathOp { op, target: format!("{} -> {}", link.target, shown(target)) }
    }

    /// A write through a descriptor (no path of its own).
    fn through(state: &HostState, op: &'static str, fd: &Fd) -> PathOp {
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

/// Defines `[method]descriptor.$op` of `wasi:filesystem/types` on `$types`, audited: the
/// operation is described by `PathOp::$describe` of the parameters named, the very
/// `HostDescriptor::$delegate` is called with every parameter, and its answer is settled
/// (`PathOp::settle`: a refusal is recorded). `async` where wasmtime-wasi's implementation is.
macro_rules! audited_descriptor {
    (
        $types:ident, async $op:literal ($($arg:ident: $ty:ty),*) -> $ret:ty, $describe:ident($($named:ident),*) => $delegate:ident
    ) => {
        $types.func_wrap_async(
            concat!("[method]descriptor.", $op),
            |mut store: StoreContextMut<'_, HostState>, ($($arg,)*): ($($ty,)*)| -> Box<dyn Future<Output = FsAnswer<$ret>> + Send + '_> {
                Box::new(async move {
                    let op = PathOp::$describe(store.data(), $op, $(&$named),*);
                    let result = fs::HostDescriptor::$delegate(&mut store.data_mut().filesystem(), $($arg),*).await;
                    Ok((op.settle(store.data_mut(), result)?,))
                })
            },
        )?
    };
    ($types:ident, $op:literal ($($arg:ident: $ty:ty),*) -> $ret:ty, $describe:ident($($named:ident),*) => $delegate:ident) => {
        $types.func_wrap(
            concat!("[method]descriptor.", $op),
            |mut store: StoreContextMut<'_, HostState>, ($($arg,)*): ($($ty,)*)| -> FsAnswer<$ret> {
                let op = PathOp::$describe(store.data(), $op, $(&$named),*);
                let result = fs::HostDescriptor::$delegate(&mut store.data_mut().filesystem(), $($arg),*);
                Ok((op.settle(store.data_mut(), result)?,))
            },
        )?
    };
}

/// Defines `$name` of `wasi:sockets/$interface` on `$linker`, audited: `$target` (a closure
/// making the record's target) is taken first, the very `$delegate` is called with every
/// parameter, and its answer is settled (`settle_socket`: the code `$refused` is recorded as
/// `$kind`). `async` where wasmtime-wasi's implementation is.
macro_rules! audited_socket {
    (
        $linker:ident, $interface:literal, async $name:literal ($($arg:ident: $ty:ty),*) -> $ret:ty
            => $delegate:path, $refused:ident as $kind:ident, $target:expr
    ) => {
        $linker.instance(&format!("wasi:sockets/{}@{VERSION}", $interface))?.func_wrap_async(
            $name,
            |mut store: StoreContextMut<'_, HostState>, ($($arg,)*): ($($ty,)*)| -> Box<dyn Future<Output = SocketAnswer<$ret>> + Send + '_> {
                Box::new(async move {
                    let target = $target;
                    let result = $delegate(&mut store.data_mut().sockets(), $($arg),*).await;
                    settle_socket(store.data_mut(), result, network::ErrorCode::$refused, RefusalKind::$kind, target)
                })
            },
        )?
    };
    (
        $linker:ident, $interface:literal, $name:literal ($($arg:ident: $ty:ty),*) -> $ret:ty
            => $delegate:path, $refused:ident as $kind:ident, $target:expr
    ) => {
        $linker.instance(&format!("wasi:sockets/{}@{VERSION}", $interface))?.func_wrap(
            $name,
            |mut store: StoreContextMut<'_, HostState>, ($($arg,)*): ($($ty,)*)| -> SocketAnswer<$ret> {
                let target = $target;
                let result = $delegate(&mut store.data_mut().sockets(), $($arg),*);
                settle_socket(store.data_mut(), result, network::ErrorCode::$refused, RefusalKind::$kind, target)
            },
        )?
    };
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
                let op = PathOp::at(store.data(), if writes { "open-at(write)" } else { "open-at" }, &fd, &path);
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
    // One entry a method: its name in the record (the WASI name without `[method]descriptor.`),
    // its parameters and answer, how its guest-visible path(s) are described (`PathOp::at`,
    // `pair`, `symlink` or `through`, of those parameters), and the `HostDescriptor` method it
    // delegates to.
    audited_descriptor!(types, async "stat-at"(fd: Fd, path_flags: fs::PathFlags, path: String) -> fs::DescriptorStat, at(fd, path) => stat_at);
    audited_descriptor!(types, async "metadata-hash-at"(fd: Fd, path_flags: fs::PathFlags, path: String) -> fs::MetadataHashValue,
        at(fd, path) => metadata_hash_at);
    audited_descriptor!(types, async "set-times-at"(fd: Fd, path_flags: fs::PathFlags, path: String, atime: fs::NewTimestamp, mtime: fs::NewTimestamp) -> (),
        at(fd, path) => set_times_at);
    audited_descriptor!(types, async "readlink-at"(fd: Fd, path: String) -> String, at(fd, path) => readlink_at);
    audited_descriptor!(types, async "create-directory-at"(fd: Fd, path: String) -> (), at(fd, path) => create_directory_at);
    audited_descriptor!(types, async "remove-directory-at"(fd: Fd, path: String) -> (), at(fd, path) => remove_directory_at);
    audited_descriptor!(types, async "unlink-file-at"(fd: Fd, path: String) -> (), at(fd, path) => unlink_file_at);
    audited_descriptor!(types, async "symlink-at"(fd: Fd, target: String, link: String) -> (), symlink(fd, link, target) => symlink_at);
    audited_descriptor!(types, async "rename-at"(fd: Fd, from: String, to_fd: Fd, to: String) -> (), pair(fd, from, to_fd, to) => rename_at);
    audited_descriptor!(types, async "link-at"(fd: Fd, path_flags: fs::PathFlags, from: String, to_fd: Fd, to: String) -> (),
        pair(fd, from, to_fd, to) => link_at);
    audited_descriptor!(types, async "write"(fd: Fd, bytes: Vec<u8>, offset: fs::Filesize) -> fs::Filesize, through(fd) => write);
    audited_descriptor!(types, async "set-size"(fd: Fd, size: fs::Filesize) -> (), through(fd) => set_size);
    audited_descriptor!(types, async "set-times"(fd: Fd, atime: fs::NewTimestamp, mtime: fs::NewTimestamp) -> (), through(fd) => set_times);
    audited_descriptor!(types, "write-via-stream"(fd: Fd, offset: fs::Filesize) -> Resource<DynOutputStream>, through(fd) => write_via_stream);
    audited_descriptor!(types, "append-via-stream"(fd: Fd) -> Resource<DynOutputStream>, through(fd) => append_via_stream);

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
    // One entry a function: its interface and name, its parameters and answer, the `Host`
    // function it delegates to, the error code that is the refusal and its kind, and the
    // record's target.
    audited_socket!(linker, "tcp-create-socket", "create-tcp-socket"(address_family: network::IpAddressFamily) -> Resource<TcpSocket>
        => tcp_create_socket::Host::create_tcp_socket, AccessDenied as Socket, || format!("tcp {}", family(address_family)));
    audited_socket!(linker, "udp-create-socket", async "create-udp-socket"(address_family: network::IpAddressFamily) -> Resource<UdpSocket>
        => udp_create_socket::Host::create_udp_socket, AccessDenied as Socket, || format!("udp {}", family(address_family)));
    // With name lookups off, wasmtime-wasi answers every lookup with this code, before any
    // resolver is asked. The name is shown before the call takes it.
    audited_socket!(linker, "ip-name-lookup", "resolve-addresses"(net: Resource<Network>, name: String) -> Resource<ip_name_lookup::ResolveAddressStream>
        => ip_name_lookup::Host::resolve_addresses, PermanentResolverFailure as Dns, { let name = shown(&name); move || name });
    Ok(())
}
