//! The one host `Linker` every plugin is linked against: WASI p2 (with the refusal-recording
//! audit hooks over it), wasi:http and the `paddock:plugin/host` import.

use wasmtime::component::{HasSelf, Linker};

use crate::runtime::bindings;
use crate::runtime::load_error::LoadError;
use crate::runtime::sandbox::store_state::HostState;
use crate::runtime::sandbox::wasi_audit;

/// The host's interfaces (WASI p2, wasi:http, the audit hooks and `paddock:plugin/host`),
/// linked once per engine and shared by every plugin.
pub(crate) fn host_linker(engine: &wasmtime::Engine) -> Result<Linker<HostState>, LoadError> {
    let mut linker = Linker::<HostState>::new(engine);
    let link = |r: wasmtime::Result<()>| r.map_err(|e| LoadError::Link(e.to_string()));
    link(wasmtime_wasi::p2::add_to_linker_async(&mut linker))?;
    link(wasi_audit::add_to_linker(&mut linker))?;
    link(wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker))?;
    link(bindings::Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s))?;
    Ok(linker)
}
