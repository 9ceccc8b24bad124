//! Runtime tests with real components: the fixtures in `tests/plugins` run through
//! `paddock::runtime` with grants, limits, the compiled-component cache, folder loading and
//! hostile catalogs.
//!
//! Build the fixture first:
//! `cargo build --release --target wasm32-wasip2 --manifest-path tests/plugins/Cargo.toml`.

mod budgets;
#[cfg(unix)]
mod cache;
mod calls;
mod catalogs;
mod descriptors;
mod egress;
mod grants;
mod input;
mod loading;
mod output;
mod pinning;
mod refusals;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use paddock::plugin::{CallContext, Plugin, PluginError};
use paddock::policy::Grant;
use paddock::protocol::{CallToolResult, ContentBlock};
use paddock::runtime::{Runtime, RuntimeOptions, WasmPlugin};

/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(60);

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("host/ has a parent").to_path_buf()
}

/// A fixture component from `tests/plugins/` (`fixture`, `other_world`, `bad_catalog`).
pub fn fixture_wasm(name: &str) -> PathBuf {
    let path = repo_root().join("tests/plugins/target/wasm32-wasip2/release").join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build --release --target wasm32-wasip2 --manifest-path tests/plugins/Cargo.toml` (or scripts/build-plugins)",
        path.display()
    );
    path
}

/// A runtime with a cache shared by the tests of this run (each plugin compiles once).
pub fn runtime() -> Runtime {
    let cache = repo_root().join("target/paddock-test-cache");
    Runtime::new(RuntimeOptions { cache_dir: Some(cache), max_instances: 64, ..RuntimeOptions::default() }).expect("runtime")
}

/// Loads the fixture as plugin `id` with `grant`.
pub async fn load(runtime: &Runtime, id: &str, grant: Grant) -> Arc<WasmPlugin> {
    let wasm = fixture_wasm("fixture");
    let load = runtime.load_plugin(id, &wasm, grant);
    let (plugin, _) = tokio::time::timeout(WAIT, load).await.expect("load in time").expect("fixture loads");
    Arc::new(plugin)
}

/// Calls a tool with a detached context, under the test timeout.
pub async fn call(plugin: &WasmPlugin, tool: &str, args: serde_json::Value) -> Result<CallToolResult, PluginError> {
    call_with(plugin, tool, args, &CallContext::detached("test")).await
}

/// Calls a tool with `cx`, under the test timeout.
pub async fn call_with(plugin: &WasmPlugin, tool: &str, args: serde_json::Value, cx: &CallContext) -> Result<CallToolResult, PluginError> {
    let outcome = outcome_with(plugin, tool, args, cx).await?;
    Ok(outcome.into_complete().expect("the tool completes without asking for input"))
}

/// Calls a tool with `cx`, under the test timeout, and returns its outcome.
pub async fn outcome_with(
    plugin: &WasmPlugin,
    tool: &str,
    args: serde_json::Value,
    cx: &CallContext,
) -> Result<paddock::input::Outcome<CallToolResult>, PluginError> {
    let args = args.to_string();
    tokio::time::timeout(WAIT, plugin.call_tool(tool, &args, cx)).await.expect("call finished in time")
}

/// The text of the first content block.
pub fn text(result: &CallToolResult) -> &str {
    match result.content.first() {
        Some(ContentBlock::Text { text, .. }) => text,
        other => panic!("expected a text block, got {other:?}"),
    }
}

/// The text of a successful result (panics with the result otherwise).
pub fn ok_text(result: Result<CallToolResult, PluginError>) -> String {
    let result = result.expect("call succeeded");
    assert!(!result.is_error, "tool reported an error: {}", text(&result));
    text(&result).to_owned()
}

/// The text of an `isError` result (panics otherwise).
pub fn error_text(result: Result<CallToolResult, PluginError>) -> String {
    let result = result.expect("call returned a result");
    assert!(result.is_error, "expected an error result, got: {}", text(&result));
    text(&result).to_owned()
}
