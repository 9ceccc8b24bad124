//! Write Paddock plugins in plain Rust: sandboxed MCP tools, resources and prompts, built as
//! `wasm32-wasip2` components against the contract `paddock:plugin@0.2.0`.
//!
//! A function with a typed argument becomes a tool; its doc comment is the description and its
//! JSON Schema comes from the argument type. No knowledge of WIT is needed.
//!
//! ```ignore
//! use paddock_sdk::{export_plugin, tool, Deserialize, JsonSchema};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! /// Greets someone by name.
//! #[tool]
//! fn greet(args: Greet) -> Result<String, String> {
//!     Ok(format!("Hello, {}!", args.name))
//! }
//!
//! export_plugin! {
//!     name: "hello",
//!     version: env!("CARGO_PKG_VERSION"),
//!     tools: [greet],
//! }
//! ```
//!
//! Return types: `String` (one text block), [`Content`] or `Vec<Content>` (any blocks),
//! [`Json<T>`] (structured content with an output schema), [`ToolResult`] (everything spelled
//! out, `_meta` included), and `Result<_, E: Display>`, where
//! `Err` becomes an error result the model can read. Invalid arguments become error results too.
//! A handler may also take a [`Request`] (after its arguments) to read the client's capabilities
//! and ask it for input: a form, a page to visit, a completion from its model, its roots.
//! Host calls (logging, progress, cancellation, change notices) are in [`host`]. Icons,
//! annotations and cache hints are in [`Icon`], [`Annotations`] and [`CacheHint`].

#![deny(missing_docs)]

#[allow(missing_docs, unsafe_code, clippy::all)]
#[doc(hidden)]
pub mod bindings;
mod content;
mod defs;
mod describe;
pub mod host;
mod registry;
mod request;
mod schema;
pub mod testing;
mod uri;

pub use content::{Blob, Content, IntoPromptMessages, IntoResourceBody, IntoToolResult, Json, PromptMessage, ToolResult};
pub use defs::ToolHints;
pub use describe::{Annotations, Audience, CacheHint, Icon, Theme};
pub use paddock_sdk_macros::{data, prompt, resource, resource_template, tool};
pub use registry::{Completing, Requests};
pub use request::{Ask, Elicited, Error, ModelHint, ModelPreferences, Request, Result, Root, Sampling, SamplingResult, sampled_text};
pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json;
pub use uri::UriVars;

/// Implementation details used by the macros. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings;
    pub use crate::defs::{PromptDef, PromptMeta, ResourceDef, ResourceMeta, TaskMode, ToolDef, ToolHints, ToolMeta};
    pub use crate::registry::Registry;
}

/// Exports the plugin: its name and version, and the tools, resources, resource templates and
/// prompts registered with the attribute macros. Sections are optional but must come in this
/// order:
///
/// ```ignore
/// export_plugin! {
///     name: "text",
///     version: env!("CARGO_PKG_VERSION"),
///     title: "Text tools",
///     description: "Pure text utilities",
///     instructions: "Use these tools to transform text.",
///     website_url: "https://example.com/text",
///     icons: [paddock_sdk::Icon::new("https://example.com/text.svg")],
///     requests: paddock_sdk::Requests::new().file("/data", true, "stores notes"),
///     list_cache: paddock_sdk::CacheHint::public(300_000),
///     tools: [echo, upper],
///     resources: [about],
///     resource_templates: [word],
///     prompts: [summarize],
///     completion: complete_fn,
/// }
/// ```
#[macro_export]
macro_rules! export_plugin {
    (
        name: $name:expr,
        version: $version:expr
        $(, title: $title:expr)?
        $(, description: $description:expr)?
        $(, instructions: $instructions:expr)?
        $(, website_url: $website_url:expr)?
        $(, icons: [$($icon:expr),* $(,)?])?
        $(, requests: $requests:expr)?
        $(, list_cache: $list_cache:expr)?
        $(, tools: [$($tool:ident),* $(,)?])?
        $(, resources: [$($resource:ident),* $(,)?])?
        $(, resource_templates: [$($template:ident),* $(,)?])?
        $(, prompts: [$($prompt:ident),* $(,)?])?
        $(, completion: $completion:path)?
        $(,)?
    ) => {
        #[doc(hidden)]
        struct __PaddockPlugin;

        #[doc(hidden)]
        fn __paddock_registry() -> $crate::__private::Registry {
            let mut registry = $crate::__private::Registry::new($name, $version);
            $( registry.title($title); )?
            $( registry.description($description); )?
            $( registry.instructions($instructions); )?
            $( registry.website_url($website_url); )?
            $( {
                const ICONS: &[$crate::Icon] = &[$($icon),*];
                registry.icons(ICONS);
            } )?
            $( registry.requests($requests); )?
            $( registry.list_cache($list_cache); )?
            $( $( registry.tool($tool::__tool_def()); )* )?
            $( $( registry.resource($resource::__resource_def()); )* )?
            $( $( registry.template($template::__template_def()); )* )?
            $( $( registry.prompt($prompt::__prompt_def()); )* )?
            $( registry.completion($completion); )?
            registry
        }

        const _: () = {
            use $crate::__private::bindings::exports::paddock::plugin as __exports;
            use $crate::__private::bindings::paddock::plugin::types as __types;
            use $crate::__private::bindings::paddock::plugin::context as __context;

            impl __exports::metadata::Guest for __PaddockPlugin {
                fn info() -> __exports::metadata::PluginInfo {
                    __paddock_registry().info()
                }
            }

            impl __exports::tools::Guest for __PaddockPlugin {
                fn list_tools() -> __exports::tools::ToolList {
                    __paddock_registry().list_tools()
                }
                fn call_tool(context: __context::RequestContext, name: ::std::string::String, arguments: ::std::string::String) -> ::core::result::Result<__exports::tools::CallOutcome, __types::Error> {
                    __paddock_registry().call_tool(context, &name, &arguments)
                }
            }

            impl __exports::resources::Guest for __PaddockPlugin {
                fn list_resources() -> __exports::resources::ResourceList {
                    __paddock_registry().list_resources()
                }
                fn list_resource_templates() -> __exports::resources::TemplateList {
                    __paddock_registry().list_resource_templates()
                }
                fn read_resource(context: __context::RequestContext, uri: ::std::string::String) -> ::core::result::Result<__exports::resources::ReadOutcome, __types::Error> {
                    __paddock_registry().read_resource(context, &uri)
                }
            }

            impl __exports::prompts::Guest for __PaddockPlugin {
                fn list_prompts() -> __exports::prompts::PromptList {
                    __paddock_registry().list_prompts()
                }
                fn get_prompt(context: __context::RequestContext, name: ::std::string::String, arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>) -> ::core::result::Result<__exports::prompts::PromptOutcome, __types::Error> {
                    __paddock_registry().get_prompt(context, &name, &arguments)
                }
            }

            impl __exports::completion::Guest for __PaddockPlugin {
                fn complete(context: __context::RequestContext, request: __exports::completion::CompletionRequest) -> ::core::result::Result<__exports::completion::CompletionResult, __types::Error> {
                    __paddock_registry().complete(context, &request)
                }
            }
        };

        $crate::__private::bindings::__paddock_export!(__PaddockPlugin with_types_in $crate::__private::bindings);
    };
}
