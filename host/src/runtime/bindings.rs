//! Host bindings generated from `wit/paddock-plugin@0.2.0/plugin.wit` (world `plugin`): async exports, async imports.

#![allow(missing_docs, unreachable_pub, clippy::all)]

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit/paddock-plugin@0.2.0",
    imports: { default: async },
    exports: { default: async },
});
