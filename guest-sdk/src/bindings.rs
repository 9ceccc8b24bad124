//! Generated bindings for `wit/paddock-plugin@0.2.0/plugin.wit` (world `plugin`). Plugin authors never use these
//! directly: `export_plugin!` implements the exports and `paddock_sdk::host` wraps the imports.

wit_bindgen::generate!({
    world: "plugin",
    path: "../wit/paddock-plugin@0.2.0",
    pub_export_macro: true,
    export_macro_name: "__paddock_export",
    default_bindings_module: "paddock_sdk::__private::bindings",
});
