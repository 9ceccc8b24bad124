//! `WasmPlugin`: one loaded component, its catalog and its grant; every request runs in a fresh
//! `Store` and instance from the plugin's `InstancePre`, under the grant's limits.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::{Component, ComponentExportIndex, Instance, Linker};
use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::exports::paddock::plugin::{completion, prompts, resources, tools};
use super::bindings::paddock::plugin::{context as wx, types as w};
use super::bindings::{self, PluginPre};
use super::checked_func::CheckedOnce;
use super::lift::catalog::{self, Declared};
use super::lift::convert::{self, Budget};
use super::lift::outcome;
use super::lift::wit_input::request_context;
use super::load_error::{CONTRACT_VERSION, LoadError};
use super::sandbox::prepared::Sandbox;
use super::sandbox::refusal_log::RefusalCounters;
use super::sandbox::store_state::{HostState, PrepareError, Stop};
use crate::input::Outcome;
use crate::plugin::{BoxFuture, CallContext, Catalog, Limit, Plugin, PluginError};
use crate::policy::{Grant, Limits};
use crate::protocol::{CallToolResult, Completion, CompletionRequest, CompletionTarget, GetPromptResult, ReadResourceResult};
use crate::telemetry::trace::{Attribute, Carried, Kind, Span};

/// Guest-to-host bytes one host call may pass (wasmtime's default is 128 MiB), whatever the
/// output limit: the floor of `hostcall_fuel`.
const HOSTCALL_FUEL: usize = 16 << 20;
/// Fuel beyond what the output limit needs, for the fixed parts of a result.
const LIFT_HEADROOM: usize = 1 << 20;
/// How long a plugin that was told about a cancellation may take to return by itself. Guest
/// code is interrupted by the epoch callback once it has passed; a call waiting in a host call
/// (a slow network read) is dropped by `with_deadline` a tick later.
const CANCEL_GRACE: Duration = Duration::from_millis(250);
/// The deadline of the load-time calls that read the catalog.
const LOAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A plugin served from a WebAssembly component.
pub struct WasmPlugin {
    id: String,
    catalog: Catalog,
    linking: Linking,
    /// Where the catalog is recorded for the next start, when there is a cache.
    record: Option<CatalogRecord>,
    sandbox: Sandbox,
    gate: Arc<Semaphore>,
    global: Arc<Semaphore>,
}

impl std::fmt::Debug for WasmPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmPlugin").field("id", &self.id).field("tools", &self.catalog.tools.len()).finish_non_exhaustive()
    }
}

/// The component linked against the host, with its exports resolved: what every call
/// instantiates.
struct Linked {
    pre: PluginPre<HostState>,
    exports: Exports,
}

impl Linked {
    /// `pre` with its exports resolved; a component missing one fails its load.
    fn new(pre: PluginPre<HostState>) -> Result<Linked, LoadError> {
        let exports = Exports::new(&pre).map_err(|e| LoadError::Exports(first_line(&e.to_string()).to_owned()))?;
        Ok(Linked { pre, exports })
    }
}

/// A plugin's link: made at load, or (for a plugin served from its recorded catalog) on its way
/// from a load running in the background. There is one per plugin and every call reads it, so
/// the usual variant stays inline rather than boxed.
#[allow(clippy::large_enum_variant)]
enum Linking {
    Ready(Linked),
    Deferred {
        done: std::sync::OnceLock<Arc<Linked>>,
        /// Told when a call waits for the link, so its load goes ahead of the others.
        wanted: Arc<tokio::sync::Notify>,
        loading: futures::future::Shared<BoxFuture<'static, Result<Arc<Linked>, Arc<str>>>>,
    },
}

/// Records a plugin's catalog for the next start (in the cache, under its wasm and grant); best
/// effort: a record that cannot be written is a catalog read from the plugin next time.
pub(crate) type CatalogRecord = Box<dyn Fn(&Catalog) -> BoxFuture<'static, ()> + Send + Sync>;

/// Where the functions of each interface a request calls are, resolved once at load: a call looks up and
/// type-checks only the interface it uses, in its fresh instance.
struct Exports {
    call_tool: ComponentExportIndex,
    /// `call-tool`'s type, checked by the first call.
    call_tool_type: CheckedOnce,
    resources: resources::GuestIndices,
    prompts: prompts::GuestIndices,
    completion: completion::GuestIndices,
}

impl Exports {
    fn new(pre: &PluginPre<HostState>) -> wasmtime::Result<Exports> {
        let pre = pre.instance_pre();
        let tools = format!("paddock:plugin/tools@{CONTRACT_VERSION}");
        let component = pre.component();
        let interface = component.get_export_index(None, &tools).ok_or_else(|| wasmtime::format_err!("no exported instance named `{tools}`"))?;
        Ok(Exports {
            call_tool: component
                .get_export_index(Some(&interface), "call-tool")
                .ok_or_else(|| wasmtime::format_err!("instance export `{tools}` does not have export `call-tool`"))?,
            call_tool_type: CheckedOnce::default(),
            resources: resources::GuestIndices::new(pre)?,
            prompts: prompts::GuestIndices::new(pre)?,
            completion: completion::GuestIndices::new(pre)?,
        })
    }
}

/// A live call: the store, the instance and the permits that admitted it.
struct Call {
    store: Store<HostState>,
    instance: wasmtime::component::Instance,
    timeout: Duration,
    _permits: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

impl WasmPlugin {
    /// Serves a linked component under `sandbox`; reads its catalog in one instance (and records
    /// it at `record`).
    pub(crate) async fn new(
        pre: PluginPre<HostState>,
        sandbox: Sandbox,
        global: Arc<Semaphore>,
        record: Option<CatalogRecord>,
    ) -> Result<WasmPlugin, LoadError> {
        let mut plugin = WasmPlugin::with(Linking::Ready(Linked::new(pre)?), Catalog::default(), sandbox, global, record);
        plugin.catalog = plugin.read_catalog().await?;
        if let Some(record) = &plugin.record {
            record(&plugin.catalog).await;
        }
        Ok(plugin)
    }

    /// Serves `catalog`, recorded at `record` by an earlier load, while `loading` (started here,
    /// in the background) links the component: a call waits for it, and tells `wanted` so.
    /// Whoever serves the plugin reads its catalog again once it is linked (`reload_catalog`),
    /// since the record is what the plugin declared then.
    pub(crate) fn deferred(
        catalog: Catalog,
        sandbox: Sandbox,
        global: Arc<Semaphore>,
        record: CatalogRecord,
        wanted: Arc<tokio::sync::Notify>,
        loading: impl Future<Output = Result<PluginPre<HostState>, LoadError>> + Send + 'static,
    ) -> WasmPlugin {
        let linking = tokio::spawn(async move { Ok::<_, LoadError>(Arc::new(Linked::new(loading.await?)?)) });
        let id = sandbox.plugin.clone();
        let loading: BoxFuture<'static, Result<Arc<Linked>, Arc<str>>> = Box::pin(async move {
            let outcome = match linking.await {
                Ok(Ok(linked)) => return Ok(linked),
                Ok(Err(error)) => error.to_string(),
                Err(error) => format!("the load stopped: {error}"),
            };
            tracing::error!(plugin = %id, error = %crate::escape::Escaped(&outcome), "a plugin served from its recorded catalog could not be loaded; its calls fail");
            Err(Arc::from(outcome))
        });
        let linking = Linking::Deferred { done: std::sync::OnceLock::new(), wanted, loading: futures::FutureExt::shared(loading) };
        WasmPlugin::with(linking, catalog, sandbox, global, Some(record))
    }

    fn with(linking: Linking, catalog: Catalog, sandbox: Sandbox, global: Arc<Semaphore>, record: Option<CatalogRecord>) -> WasmPlugin {
        let concurrency = sandbox.grant.limits.concurrency.max(1) as usize;
        WasmPlugin { id: sandbox.plugin.to_string(), catalog, linking, record, sandbox, gate: Arc::new(Semaphore::new(concurrency)), global }
    }

    /// The link, waiting for a deferred one, whose load then goes ahead of the others.
    async fn linked(&self) -> Result<&Linked, PluginError> {
        self.linked_when(true).await
    }

    /// The link, waiting for a deferred one; `urgent` moves its load ahead of the others (a call
    /// waits for it, not a reading of the lists).
    async fn linked_when(&self, urgent: bool) -> Result<&Linked, PluginError> {
        match &self.linking {
            Linking::Ready(linked) => Ok(linked),
            Linking::Deferred { done, wanted, loading } => {
                if let Some(linked) = done.get() {
                    return Ok(linked);
                }
                if urgent {
                    wanted.notify_one();
                }
                let linked = loading.clone().await.map_err(|why| PluginError::Unavailable(format!("the plugin could not be loaded: {why}")))?;
                Ok(done.get_or_init(|| linked))
            }
        }
    }

    /// The link, once a call has started (so it is made).
    fn linked_now(&self) -> Option<&Linked> {
        match &self.linking {
            Linking::Ready(linked) => Some(linked),
            Linking::Deferred { done, .. } => done.get().map(AsRef::as_ref),
        }
    }

    /// Links a compiled component against the host once: the imports are resolved and the
    /// exports' types checked here, so every call only instantiates.
    ///
    /// # Errors
    /// An import the host does not provide, or exports of the wrong shape.
    pub(crate) fn link(linker: &Linker<HostState>, component: &Component) -> Result<PluginPre<HostState>, LoadError> {
        let pre = linker.instantiate_pre(component).map_err(|e| LoadError::Imports(first_line(&e.to_string()).to_owned()))?;
        PluginPre::new(pre).map_err(|e| LoadError::Exports(first_line(&e.to_string()).to_owned()))
    }

    /// The grant this plugin runs with.
    pub fn grant(&self) -> &Grant {
        &self.sandbox.grant
    }

    /// What this plugin has been refused so far, by kind.
    pub fn refusals(&self) -> &RefusalCounters {
        &self.sandbox.refusals
    }

    async fn read_catalog(&self) -> Result<Catalog, LoadError> {
        let cx = CallContext::detached(format!("load:{}", self.id));
        let read = async {
            // Reading the lists of a plugin served from its record waits its turn to load.
            self.linked_when(false).await?;
            let mut call = self.start(&cx, LOAD_TIMEOUT, None, &Span::default(), Carried::default()).await?;
            // The one instance that uses every interface: load them all, as the bindings do.
            let all = bindings::Plugin::new(&mut call.store, &call.instance);
            let s = &mut call.store;
            let all = call_finish(s, all, LOAD_TIMEOUT)?;
            let (metadata, tools_export, resources_export, prompts_export) =
                (all.paddock_plugin_metadata(), all.paddock_plugin_tools(), all.paddock_plugin_resources(), all.paddock_plugin_prompts());
            let info = metadata.call_info(&mut *s).await;
            let info = call_finish(s, info, LOAD_TIMEOUT)?;
            let tools = tools_export.call_list_tools(&mut *s).await;
            let tools = call_finish(s, tools, LOAD_TIMEOUT)?;
            let resources = resources_export.call_list_resources(&mut *s).await;
            let resources = call_finish(s, resources, LOAD_TIMEOUT)?;
            let templates = resources_export.call_list_resource_templates(&mut *s).await;
            let templates = call_finish(s, templates, LOAD_TIMEOUT)?;
            let prompts = prompts_export.call_list_prompts(&mut *s).await;
            let prompts = call_finish(s, prompts, LOAD_TIMEOUT)?;
            Ok::<_, PluginError>(Declared { info, tools, resources, templates, prompts })
        };
        let declared = with_deadline(LOAD_TIMEOUT, &cx, read).await.map_err(LoadError::CatalogCall)?;
        catalog::build(declared).map_err(|why| LoadError::Catalog { plugin: self.id.clone(), why: why.to_string() })
    }

    /// Admits a call through the plugin's and the global gate, then builds a fresh store and
    /// instance with the deadline armed.
    ///
    /// `span` is the run's span (the instantiation is a child of it); `trace` the context the
    /// run's outgoing requests continue when no span is made.
    async fn start(&self, cx: &CallContext, timeout: Duration, operation: Option<&str>, span: &Span, trace: Carried) -> Result<Call, PluginError> {
        let waited = async {
            let own = self.gate.clone().acquire_owned().await;
            let all = self.global.clone().acquire_owned().await;
            match (own, all) {
                (Ok(own), Ok(all)) => Ok((own, all)),
                _ => Err(PluginError::Unavailable("the runtime is shutting down".to_owned())),
            }
        };
        let permits = tokio::time::timeout(timeout, waited).await.map_err(|_| PluginError::Limit { limit: Limit::Concurrency })??;
        let trace = span.carried().unwrap_or(trace);
        let state = HostState::new(&self.sandbox, cx.clone(), operation.map(Arc::from), trace).map_err(|e| match e {
            PrepareError::Descriptors(_) => PluginError::Limit { limit: Limit::Resources },
            PrepareError::Io(e) => PluginError::Unavailable(format!("cannot prepare the sandbox: {e}")),
        })?;
        let linked = self.linked().await?;
        let mut store = Store::new(linked.pre.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.set_hostcall_fuel(hostcall_fuel(self.output_limit()));
        let deadline = Instant::now() + timeout;
        let mut cancel_seen: Option<Instant> = None;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut ctx| {
            let now = Instant::now();
            let data = ctx.data_mut();
            if now >= deadline {
                data.stop = Some(Stop::Deadline);
                return Ok(UpdateDeadline::Interrupt);
            }
            if data.cx.is_cancelled() {
                let seen = *cancel_seen.get_or_insert(now);
                if now.duration_since(seen) >= CANCEL_GRACE {
                    data.stop = Some(Stop::Cancelled);
                    return Ok(UpdateDeadline::Interrupt);
                }
            }
            // Yield every tick so a busy guest never holds a tokio worker.
            Ok(UpdateDeadline::Yield(1))
        });
        let instantiating = Span::start("instantiate", Kind::Internal, &span.context(), Vec::new());
        let instance = linked.pre.instance_pre().instantiate_async(&mut store).await;
        drop(instantiating);
        let instance = call_finish(&mut store, instance, timeout)?;
        Ok(Call { store, instance, timeout, _permits: permits })
    }

    /// One request, the same for every interface: the request context lowered, the call
    /// admitted with a fresh store and instance, the interface's export loaded (`load`), the
    /// guest called (`run`), and its answer lifted under the output budget (`lift`), all under
    /// the deadline and the cancellation grace. Generic, so nothing is boxed beyond the one
    /// future the seam returns.
    fn serve<'a, E, O, R>(
        &'a self,
        cx: &'a CallContext,
        operation: &'a str,
        load: impl FnOnce(&Exports, &mut Store<HostState>, &Instance) -> wasmtime::Result<E> + 'a,
        run: impl AsyncFnOnce(E, &mut Store<HostState>, &wx::RequestContext) -> wasmtime::Result<Result<O, w::Error>> + 'a,
        lift: impl FnOnce(O, &mut Budget) -> Result<R, PluginError> + 'a,
    ) -> impl Future<Output = Result<R, PluginError>> + 'a
    where
        E: 'a,
        O: 'a,
        R: 'a,
    {
        let served = with_deadline(self.timeout(), cx, async move {
            let carried = cx.request.trace.carried();
            let span = Span::child_of(&carried, format!("run {}", self.id), Kind::Internal, self.span_attributes(operation));
            let served = async {
                let context = request_context(&cx.request)?;
                let mut call = self.start(cx, self.timeout(), Some(operation), &span, carried).await?;
                let exports = &self.linked_now().ok_or_else(|| PluginError::Unavailable("the plugin is not loaded".to_owned()))?.exports;
                let export = load(exports, &mut call.store, &call.instance);
                let export = call_finish(&mut call.store, export, call.timeout)?;
                let out = run(export, &mut call.store, &context).await;
                let out = call_finish(&mut call.store, out, call.timeout)?.map_err(convert::error)?;
                call.charged(lift(out, &mut self.budget()))
            }
            .await;
            if let Err(error) = &served {
                span.fail(error.kind());
            }
            served
        });
        async move {
            let Some(metrics) = crate::telemetry::metrics::get() else { return served.await };
            let measured = metrics.plugin_call(&self.sandbox.plugin);
            let result = served.await;
            metrics.plugin_call_ended(measured, result.as_ref().map_or_else(PluginError::kind, |_| "ok"));
            result
        }
    }

    /// What a run's span says of it: the plugin and what it was asked for.
    fn span_attributes(&self, operation: &str) -> Vec<Attribute> {
        if !crate::telemetry::trace::on() {
            return Vec::new();
        }
        vec![Attribute::new("paddock.plugin.id", self.id.clone()), Attribute::new("paddock.plugin.operation", crate::escape::shorten(operation))]
    }

    fn timeout(&self) -> Duration {
        self.sandbox.grant.limits.timeout
    }

    /// The plugin's output limit, never above `Limits::MAX_OUTPUT` (which the config enforces;
    /// a grant built in code is capped here).
    fn output_limit(&self) -> u64 {
        self.sandbox.grant.limits.output.min(Limits::MAX_OUTPUT)
    }

    fn budget(&self) -> Budget {
        Budget::new(self.output_limit())
    }
}

/// The store's hostcall fuel for a plugin with `output_limit`: enough to lift any result within
/// the limit (wasmtime spends the fuel of one host call on lifting an export's result too, and a
/// lifted list costs `convert::LIFT_FUEL_PER_OUTPUT_BYTE` times its smallest JSON), and never
/// less than `HOSTCALL_FUEL`.
pub(crate) fn hostcall_fuel(output_limit: u64) -> usize {
    let limit = usize::try_from(output_limit.min(Limits::MAX_OUTPUT)).unwrap_or(usize::MAX);
    limit.saturating_mul(convert::LIFT_FUEL_PER_OUTPUT_BYTE).saturating_add(LIFT_HEADROOM).max(HOSTCALL_FUEL)
}

impl Call {
    /// Records a result refused for the output limit against the plugin.
    fn charged<T>(&self, result: Result<T, PluginError>) -> Result<T, PluginError> {
        if let Err(PluginError::Limit { limit: Limit::Output }) = &result {
            self.store.data().recorder.refuse(crate::policy::RefusalKind::Output, "result size");
        }
        result
    }
}

/// Maps the outcome of one guest call: traps, deadlines and limits become `PluginError`s.
fn call_finish<R>(store: &mut Store<HostState>, result: wasmtime::Result<R>, timeout: Duration) -> Result<R, PluginError> {
    let err = match result {
        Ok(value) => return Ok(value),
        Err(err) => err,
    };
    let data = store.data();
    tracing::debug!(plugin = %data.plugin, error = ?err, "plugin call failed");
    let trap = err.downcast_ref::<Trap>().copied();
    match data.stop {
        Some(Stop::Deadline) => return Err(PluginError::Timeout { ms: timeout.as_millis() as u64 }),
        Some(Stop::Cancelled) => return Err(PluginError::Cancelled),
        None => {}
    }
    if trap == Some(Trap::Interrupt) {
        return Err(PluginError::Timeout { ms: timeout.as_millis() as u64 });
    }
    // Host-resource caps surface as traps: name them as the limits they are.
    let resource = err.chain().find_map(|cause| {
        if let Some(wasmtime::component::ResourceTableError::Full) = cause.downcast_ref() {
            return Some("resource table entries");
        }
        if let Some(wasmtime_wasi_http::FieldMapError::TotalSizeTooBig | wasmtime_wasi_http::FieldMapError::TooManyFields) = cause.downcast_ref() {
            return Some("http header bytes");
        }
        None
    });
    if let Some(what) = resource {
        data.recorder.refuse(crate::policy::RefusalKind::Resources, what);
        return Err(PluginError::Limit { limit: Limit::Resources });
    }
    if is_hostcall_fuel_exhausted(&err) {
        // Inside the guest (wasm frames on the stack) it was a host call's arguments; after
        // the guest returned, the result being lifted.
        if err.downcast_ref::<wasmtime::WasmBacktrace>().is_some() {
            data.recorder.refuse(crate::policy::RefusalKind::Resources, "host-call data");
            return Err(PluginError::Limit { limit: Limit::Resources });
        }
        data.recorder.refuse(crate::policy::RefusalKind::Output, "result too large to lift");
        return Err(PluginError::Limit { limit: Limit::Output });
    }
    if data.limiter.hit.load(Ordering::Acquire) {
        return Err(PluginError::Limit { limit: Limit::Memory });
    }
    let message = match trap {
        Some(trap) => trap.to_string(),
        None => first_line(&err.to_string()).to_owned(),
    };
    tracing::warn!(plugin = %data.plugin, error = %crate::escape::Escaped(&message), "plugin trapped");
    Err(PluginError::Trap(message))
}

/// Whether `err` is wasmtime's refusal to copy more guest data than the store's hostcall fuel.
/// Its type (`HostcallFuelExhausted`) is private, so it is known by its name and its message;
/// a runtime test pins both against the wasmtime in use.
fn is_hostcall_fuel_exhausted(err: &wasmtime::Error) -> bool {
    err.chain().any(|cause| format!("{cause:?}") == "HostcallFuelExhausted" || cause.to_string().contains("fuel allocated for hostcalls has been exhausted"))
}

/// Runs `fut` under the call's deadline (plus a margin for the epoch to fire first), and stops
/// it once the request has been cancelled for longer than the grace period. Guest code is
/// stopped by the epoch; this bounds time spent waiting inside host calls (network, files).
async fn with_deadline<T>(timeout: Duration, cx: &CallContext, fut: impl Future<Output = Result<T, PluginError>>) -> Result<T, PluginError> {
    let cancelled = async {
        cx.cancelled().await;
        tokio::time::sleep(CANCEL_GRACE + super::engine::EPOCH_TICK * 2).await;
    };
    tokio::select! {
        result = tokio::time::timeout(timeout + Duration::from_millis(200), fut) => match result {
            Ok(result) => result,
            Err(_) => Err(PluginError::Timeout { ms: timeout.as_millis() as u64 }),
        },
        () = cancelled => Err(PluginError::Cancelled),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

impl Plugin for WasmPlugin {
    fn id(&self) -> &str {
        &self.id
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn descriptors_in_use(&self) -> u64 {
        self.sandbox.descriptors_in_use()
    }

    fn reload_catalog(&self) -> BoxFuture<'_, Result<Catalog, PluginError>> {
        Box::pin(async move {
            let catalog = self.read_catalog().await.map_err(|error| match error {
                LoadError::CatalogCall(error) => error,
                other => PluginError::MalformedOutput(other.to_string()),
            })?;
            if let Some(record) = &self.record {
                record(&catalog).await;
            }
            Ok(catalog)
        })
    }

    fn served_from_record(&self) -> bool {
        matches!(self.linking, Linking::Deferred { .. })
    }

    fn call_tool<'a>(&'a self, tool: &'a str, arguments: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<CallToolResult>, PluginError>> {
        Box::pin(self.serve(
            cx,
            tool,
            |exports, store, instance| instance.get_func(store, exports.call_tool).ok_or_else(|| wasmtime::format_err!("no export `call-tool`")),
            async move |call_tool, store, context| {
                let checked = &self.linked_now().ok_or_else(|| wasmtime::format_err!("the plugin is not loaded"))?.exports.call_tool_type;
                let call_tool = checked.typed::<(&wx::RequestContext, &str, &str), (Result<tools::CallOutcome, w::Error>,)>(call_tool, &*store)?;
                Ok(call_tool.call_async(store, (context, tool, arguments)).await?.0)
            },
            outcome::call,
        ))
    }

    fn read_resource<'a>(&'a self, uri: &'a str, cx: &'a CallContext) -> BoxFuture<'a, Result<Outcome<ReadResourceResult>, PluginError>> {
        Box::pin(self.serve(
            cx,
            uri,
            |exports, store, instance| exports.resources.load(store, instance),
            async move |export, store, context| export.call_read_resource(store, context, uri).await,
            outcome::read,
        ))
    }

    fn get_prompt<'a>(
        &'a self,
        prompt: &'a str,
        arguments: &'a [(String, String)],
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Outcome<GetPromptResult>, PluginError>> {
        Box::pin(self.serve(
            cx,
            prompt,
            |exports, store, instance| exports.prompts.load(store, instance),
            async move |export, store, context| export.call_get_prompt(store, context, prompt, arguments).await,
            outcome::prompt,
        ))
    }

    fn complete<'a>(&'a self, request: &'a CompletionRequest, cx: &'a CallContext) -> BoxFuture<'a, Result<Completion, PluginError>> {
        use bindings::exports::paddock::plugin::completion as wc;
        Box::pin(self.serve(
            cx,
            "completion",
            |exports, store, instance| exports.completion.load(store, instance),
            async move |export, store, context| {
                let target = match &request.target {
                    CompletionTarget::Prompt(p) => wc::CompletionTarget::Prompt(p.clone()),
                    CompletionTarget::ResourceTemplate(t) => wc::CompletionTarget::ResourceTemplate(t.clone()),
                };
                let wit_request = wc::CompletionRequest {
                    target,
                    argument_name: request.argument_name.clone(),
                    argument_value: request.argument_value.clone(),
                    context: request.context.clone(),
                };
                export.call_complete(store, context, &wit_request).await
            },
            convert::completion,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hostcall_fuel_follows_the_output_limit() {
        assert_eq!(hostcall_fuel(Limits::DEFAULT_OUTPUT), HOSTCALL_FUEL, "small limits keep the floor");
        let largest = hostcall_fuel(Limits::MAX_OUTPUT);
        assert_eq!(largest, (16 << 20) * convert::LIFT_FUEL_PER_OUTPUT_BYTE + LIFT_HEADROOM);
        assert_eq!(hostcall_fuel(u64::MAX), largest, "a limit past the largest is capped");
    }
}
