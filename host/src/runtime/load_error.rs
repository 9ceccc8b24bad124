//! Why one plugin file did not load: the error every step of loading (reading, compiling,
//! linking, reading the catalog, preparing the sandbox) reports, as one line without the path.

use std::sync::Arc;

use super::sandbox::prepared::SandboxError;

/// The contract version this host loads.
pub const CONTRACT_VERSION: &str = "0.2.0";

/// Why one plugin file did not load. The message is one line, without the path.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    #[error("it is {mib} MiB; plugins may be at most {max_mib} MiB")]
    TooLarge { mib: u64, max_mib: u64 },
    #[error("it changed while it was being loaded: load it again once it is complete")]
    Changed,
    #[error("not a WebAssembly file (no `\\0asm` header)")]
    NotWasm,
    #[error("it is a core module, not a component: build the plugin for the wasm32-wasip2 target against wit/paddock-plugin@0.2.0 (paddock:plugin@0.2.0)")]
    CoreModule,
    #[error("not a WebAssembly component (unknown version or layer)")]
    NotComponent,
    #[error("compiling failed: {0}")]
    CompileTask(String),
    #[error("it does not compile: {0}")]
    Compile(String),
    #[error(
        "it targets another world: it does not export {missing} (it exports {found}); build it against wit/paddock-plugin@0.2.0, world paddock:plugin/plugin@0.2.0"
    )]
    OtherWorld { missing: String, found: String },
    #[error(
        "it was built against contract paddock:plugin@{version}, which this host does not load (it loads {CONTRACT_VERSION}); rebuild it with paddock-sdk {CONTRACT_VERSION} or against wit/paddock-plugin@{CONTRACT_VERSION}"
    )]
    OtherContract { version: String },
    #[error("cannot link the host interfaces: {0}")]
    Link(String),
    #[error("it imports something the host does not provide (not a paddock:plugin@0.2.0 plugin?): {0}")]
    Imports(String),
    #[error("it does not export the paddock:plugin@0.2.0 interfaces: {0}")]
    Exports(String),
    #[error("reading its catalog failed: {0}")]
    CatalogCall(crate::plugin::PluginError),
    #[error("plugin `{plugin}` not loaded, its catalog is refused: {why}")]
    Catalog { plugin: String, why: String },
    #[error("its memory limit ({asked_mib} MiB) is above the host's maximum ({max_mib} MiB): lower `limits.memory` or raise the host's maximum")]
    MemoryAboveHost { asked_mib: u64, max_mib: u64 },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The failure of another file of the same load with the same content.
    #[error("{0}")]
    Shared(Arc<LoadError>),
}
