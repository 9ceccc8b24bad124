//! Host bindings generated from `wit/plugin.wit` (world `plugin`): async exports, async imports.

#![allow(missing_docs, unreachable_pub, clippy::all)]

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit",
    imports: { default: async },
    exports: { default: async },
});
