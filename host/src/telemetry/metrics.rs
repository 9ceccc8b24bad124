//! Prometheus metrics: one process-wide set of families, made by `install` when the operator
//! asks for a metrics listener, and read by `encode` in the Prometheus text format.
//!
//! Every label value is either a fixed word chosen here (a method, a transport, an outcome) or
//! an exposed name the router or the folder vouched for (a tool, a plugin): never arguments,
//! URIs, principals or session ids. Names can still grow with a live folder, so each family
//! holds at most `MAX_SERIES` series; past that, new names are counted under `_other`.
//!
//! Values that already live elsewhere (the router's generation, tasks by status, the instance
//! pool) are read at scrape time from samplers that higher layers register (`sample`), so
//! serving a request never pays for them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Series one family holds at most; a new name past it is counted under `OTHER`.
pub const MAX_SERIES: usize = 2048;
/// The label value a name is counted under once its family is full.
pub const OTHER: &str = "_other";
/// The text format's content type.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Latency buckets, in seconds: from a tenth of a millisecond (a warm call) to five minutes (a
/// call that waited on a person), as the MCP conventions' duration metric needs.
const LATENCY_BUCKETS: [f64; 20] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// Every family the host records into, as the exposition names it.
pub const RECORDED: &[&str] = &[
    "paddock_build_info",
    "paddock_requests_total",
    "mcp_server_operation_duration_seconds",
    "paddock_requests_refused_total",
    "paddock_plugin_calls_total",
    "paddock_plugin_calls_in_flight",
    "paddock_plugin_call_duration_seconds",
    "paddock_plugin_refusals_total",
    "paddock_events_dropped_total",
    "paddock_connections",
    "paddock_sessions",
    "paddock_streams",
    "paddock_http_refused_total",
    "paddock_notifications_shed_total",
    "paddock_replay_evicted_total",
    "paddock_input_rounds_total",
    "paddock_approvals_total",
    "paddock_plugin_loads_total",
    "paddock_compiles_total",
    "paddock_cache_hits_total",
    "paddock_forwarded_total",
];

/// Every family the server's sampler reads at a scrape (`cli`), as the exposition names it.
pub const SAMPLED: &[&str] = &[
    "paddock_generation",
    "paddock_plugins_serving",
    "paddock_plugin_problems",
    "paddock_plugin_descriptors",
    "paddock_instances",
    "paddock_instances_max",
    "paddock_tasks",
    "paddock_memory_budget_used_bytes",
    "paddock_memory_budget_bytes",
];

/// The families of `exposition`, from its `# TYPE` lines.
pub fn families(exposition: &str) -> Vec<&str> {
    exposition.lines().filter_map(|line| line.strip_prefix("# TYPE ")).filter_map(|rest| rest.split(' ').next()).collect()
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// The process's metrics, made on first call; what `get` returns from then on.
pub fn install() -> &'static Metrics {
    METRICS.get_or_init(Metrics::new)
}

/// The process's metrics, when a metrics listener asked for them.
#[inline]
pub fn get() -> Option<&'static Metrics> {
    METRICS.get()
}

/// One request, as the MCP layer counts it.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: &'static str,
    pub transport: &'static str,
    /// `session` (a legacy session's request) or `stateless` (2026-07-28).
    pub era: &'static str,
    /// `ok`, `tool_error` (a result with `isError`), or the kind of error.
    pub outcome: &'static str,
}

/// What a request's latency is kept under: its method and, for `tools/call`, the exposed tool.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    mcp_method_name: &'static str,
    gen_ai_tool_name: Arc<str>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: Arc<str>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginOutcomeLabels {
    plugin: Arc<str>,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    plugin: Arc<str>,
    kind: &'static str,
}

/// A family keyed by one fixed word.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Word {
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabel {
    transport: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

#[derive(Debug, Clone, Copy)]
struct Latency;

impl MetricConstructor<Histogram> for Latency {
    fn new_metric(&self) -> Histogram {
        Histogram::new(LATENCY_BUCKETS)
    }
}

/// Every family the host records into.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    samplers: Arc<Mutex<Vec<Sampler>>>,
    requests: Family<RequestLabels, Counter>,
    operation_duration: Bounded<OperationLabels, Histogram, Latency>,
    requests_refused: Family<ReasonLabel, Counter>,
    plugin_calls: Bounded<PluginOutcomeLabels, Counter>,
    plugin_in_flight: Bounded<PluginLabels, Gauge>,
    plugin_duration: Bounded<PluginLabels, Histogram, Latency>,
    plugin_refusals: Bounded<RefusalLabels, Counter>,
    events_dropped: Counter,
    connections: Family<TransportLabel, Gauge>,
    sessions: Family<TransportLabel, Gauge>,
    streams: Family<Word, Gauge>,
    http_refused: Family<ReasonLabel, Counter>,
    notifications_shed: Counter,
    replay_evicted: Counter,
    input_rounds: Family<OutcomeLabel, Counter>,
    approvals: Family<OutcomeLabel, Counter>,
    plugin_loads: Family<OutcomeLabel, Counter>,
    compiles: Counter,
    cache_hits: Counter,
    forwarded: Family<OutcomeLabel, Counter>,
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let samplers = Arc::new(Mutex::new(Vec::new()));
        let info: Family<VersionLabel, Gauge> = Family::default();
        info.get_or_create(&VersionLabel { version: env!("CARGO_PKG_VERSION") }).set(1);
        registry.register("paddock_build_info", "The running paddock's version (always 1)", info);
        let metrics = Metrics {
            requests: Family::default(),
            operation_duration: Bounded::with_constructor(Latency),
            requests_refused: Family::default(),
            plugin_calls: Bounded::default(),
            plugin_in_flight: Bounded::default(),
            plugin_duration: Bounded::with_constructor(Latency),
            plugin_refusals: Bounded::default(),
            events_dropped: Counter::default(),
            connections: Family::default(),
            sessions: Family::default(),
            streams: Family::default(),
            http_refused: Family::default(),
            notifications_shed: Counter::default(),
            replay_evicted: Counter::default(),
            input_rounds: Family::default(),
            approvals: Family::default(),
            plugin_loads: Family::default(),
            compiles: Counter::default(),
            cache_hits: Counter::default(),
            forwarded: Family::default(),
            samplers: Arc::clone(&samplers),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "paddock_requests",
            "MCP requests answered, by method, transport, era and outcome (`tool_error`: a result with isError)",
            metrics.requests.clone(),
        );
        r.register_with_unit(
            "mcp_server_operation_duration",
            "How long MCP requests took to answer, by method and exposed tool",
            Unit::Seconds,
            metrics.operation_duration.family.clone(),
        );
        r.register("paddock_requests_refused", "Requests refused before they were served, by reason", metrics.requests_refused.clone());
        r.register("paddock_plugin_calls", "Calls into plugins, by plugin and outcome", metrics.plugin_calls.family.clone());
        r.register("paddock_plugin_calls_in_flight", "Calls running in each plugin now", metrics.plugin_in_flight.family.clone());
        r.register_with_unit("paddock_plugin_call_duration", "How long calls into each plugin took", Unit::Seconds, metrics.plugin_duration.family.clone());
        r.register(
            "paddock_plugin_refusals",
            "What the host refused plugins (files, network, output, resources...), by plugin and kind",
            metrics.plugin_refusals.family.clone(),
        );
        r.register(
            "paddock_events_dropped",
            "Progress and log notifications of requests dropped because their client fell behind",
            metrics.events_dropped.clone(),
        );
        r.register("paddock_connections", "Client connections open now, by transport", metrics.connections.clone());
        r.register("paddock_sessions", "Legacy sessions held now, by transport", metrics.sessions.clone());
        r.register("paddock_streams", "Streams open now, by kind (a session's GET stream, an HTTP+SSE stream, a 2026-07-28 listen)", metrics.streams.clone());
        r.register("paddock_http_refused", "HTTP requests and connections refused by the listener, by reason", metrics.http_refused.clone());
        r.register("paddock_notifications_shed", "Notifications dropped because a client was not reading", metrics.notifications_shed.clone());
        r.register("paddock_replay_evicted", "Events evicted from SSE replay logs to stay within their bounds", metrics.replay_evicted.clone());
        r.register("paddock_input_rounds", "Rounds of input requests to clients, by outcome", metrics.input_rounds.clone());
        r.register("paddock_approvals", "Approvals asked of people, by outcome", metrics.approvals.clone());
        r.register("paddock_plugin_loads", "Plugin files loaded, by outcome", metrics.plugin_loads.clone());
        r.register("paddock_compiles", "Plugin components compiled (a compiled-cache miss)", metrics.compiles.clone());
        r.register("paddock_cache_hits", "Plugin components taken from the compiled cache", metrics.cache_hits.clone());
        r.register(
            "paddock_forwarded",
            "Requests for another replica's session forwarded to it, by outcome (`owner_gone`: it could not be reached)",
            metrics.forwarded.clone(),
        );
        r.register_collector(Box::new(Sampled(samplers)));
        Metrics { registry, ..metrics }
    }

    /// The exposition: every family in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::with_capacity(16 << 10);
        // Writing to a `String` cannot fail; a sampler's own error ends the exposition early.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }

    /// Registers a sampler: called at every scrape to add values read from elsewhere.
    pub fn sample(&self, sampler: impl Fn(&mut Samples) + Send + Sync + 'static) {
        self.samplers.lock().unwrap_or_else(|e| e.into_inner()).push(Sampler(Box::new(sampler)));
    }

    /// One answered request: counted by outcome, and its latency kept by method and tool.
    pub fn request(&self, labels: RequestLabels, tool: Option<&Arc<str>>, took: Duration) {
        self.requests.get_or_create(&labels).inc();
        let tool = tool.cloned().unwrap_or_else(|| Arc::from(""));
        let operation = OperationLabels { mcp_method_name: labels.method, gen_ai_tool_name: tool };
        self.operation_duration.get(operation, |l| OperationLabels { gen_ai_tool_name: Arc::from(OTHER), ..l }).observe(took.as_secs_f64());
    }

    /// A request refused before it was served (a channel's in-flight cap, the memory budget...).
    pub fn request_refused(&self, reason: &'static str) {
        self.requests_refused.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// A call into `plugin` started: its in-flight count is held until the guard drops.
    pub fn plugin_call(&self, plugin: &Arc<str>) -> PluginCall {
        let labels = PluginLabels { plugin: Arc::clone(plugin) };
        let in_flight = self.plugin_in_flight.get(labels, |_| PluginLabels { plugin: Arc::from(OTHER) }).clone();
        in_flight.inc();
        PluginCall { plugin: Arc::clone(plugin), in_flight, started: std::time::Instant::now() }
    }

    /// A call into a plugin ended with `outcome`.
    pub fn plugin_call_ended(&self, call: PluginCall, outcome: &'static str) {
        let took = call.started.elapsed().as_secs_f64();
        let labels = PluginLabels { plugin: Arc::clone(&call.plugin) };
        self.plugin_duration.get(labels, |_| PluginLabels { plugin: Arc::from(OTHER) }).observe(took);
        let labels = PluginOutcomeLabels { plugin: Arc::clone(&call.plugin), outcome };
        self.plugin_calls.get(labels, |l| PluginOutcomeLabels { plugin: Arc::from(OTHER), ..l }).inc();
    }

    /// The host refused `plugin` something of `kind`.
    pub fn plugin_refusal(&self, plugin: &Arc<str>, kind: &'static str) {
        let labels = RefusalLabels { plugin: Arc::clone(plugin), kind };
        self.plugin_refusals.get(labels, |l| RefusalLabels { plugin: Arc::from(OTHER), ..l }).inc();
    }

    /// Notifications of a request dropped because its client fell behind.
    pub fn events_dropped(&self, events: u64) {
        self.events_dropped.inc_by(events);
    }

    /// A client connection of `transport`, counted while the guard lives.
    pub fn connection(&self, transport: &'static str) -> Held {
        Held::new(&self.connections, TransportLabel { transport })
    }

    /// A legacy session of `transport`, counted while the guard lives.
    pub fn session(&self, transport: &'static str) -> Held {
        Held::new(&self.sessions, TransportLabel { transport })
    }

    /// A stream of `kind`, counted while the guard lives.
    pub fn stream(&self, kind: &'static str) -> Held {
        Held::new(&self.streams, Word { kind })
    }

    /// A request for another replica's session was forwarded to it (or could not be).
    pub fn forwarded(&self, outcome: &'static str) {
        self.forwarded.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    /// The HTTP listener refused a request or a connection.
    pub fn http_refused(&self, reason: &'static str) {
        self.http_refused.get_or_create(&ReasonLabel { reason }).inc();
    }

    pub fn notification_shed(&self) {
        self.notifications_shed.inc();
    }

    pub fn replay_evicted(&self, events: u64) {
        self.replay_evicted.inc_by(events);
    }

    /// A round of input requests ended with `outcome` (`answered`, `timeout`, `refused`...).
    pub fn input_round(&self, outcome: &'static str) {
        self.input_rounds.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    /// An approval ended with `outcome` (`approved`, `declined`, `denied`).
    pub fn approval(&self, outcome: &'static str) {
        self.approvals.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    /// A plugin file was loaded (`loaded`) or refused (`failed`).
    pub fn plugin_load(&self, outcome: &'static str) {
        self.plugin_loads.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn compiled(&self) {
        self.compiles.inc();
    }

    pub fn cache_hit(&self) {
        self.cache_hits.inc();
    }
}

/// A family that holds at most `MAX_SERIES` series: a new label set past that is counted under
/// the overflow labels its caller names.
#[derive(Debug)]
struct Bounded<S, M, C = fn() -> M> {
    family: Family<S, M, C>,
    /// Label sets created so far (an overestimate when two threads create the same one at once,
    /// which only makes the bound stricter).
    series: AtomicUsize,
}

impl<S: Clone + std::hash::Hash + Eq, M: Default> Default for Bounded<S, M> {
    fn default() -> Self {
        Bounded { family: Family::default(), series: AtomicUsize::new(0) }
    }
}

impl<S: Clone + std::hash::Hash + Eq, M, C: MetricConstructor<M>> Bounded<S, M, C> {
    fn with_constructor(constructor: C) -> Self {
        Bounded { family: Family::new_with_constructor(constructor), series: AtomicUsize::new(0) }
    }

    /// The metric of `labels`, or of `overflow(labels)` once the family is full.
    fn get(&self, labels: S, overflow: impl FnOnce(S) -> S) -> impl std::ops::Deref<Target = M> + '_ {
        if let Some(metric) = self.family.get(&labels) {
            return metric;
        }
        let labels = if self.series.fetch_add(1, Ordering::Relaxed) >= MAX_SERIES { overflow(labels) } else { labels };
        self.family.get_or_create(&labels)
    }
}

/// A call into a plugin being measured.
#[derive(Debug)]
pub struct PluginCall {
    plugin: Arc<str>,
    in_flight: Gauge,
    started: std::time::Instant,
}

impl Drop for PluginCall {
    fn drop(&mut self) {
        self.in_flight.dec();
    }
}

/// Something counted while it lives (a connection, a session, a stream).
#[derive(Debug)]
pub struct Held(Gauge);

impl Held {
    fn new<S: Clone + std::hash::Hash + Eq>(family: &Family<S, Gauge>, labels: S) -> Held {
        let gauge = family.get_or_create(&labels).clone();
        gauge.inc();
        Held(gauge)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// `Metrics::connection` and the like, when metrics are on.
pub fn held(make: impl FnOnce(&'static Metrics) -> Held) -> Option<Held> {
    get().map(make)
}

struct Sampler(Box<dyn Fn(&mut Samples) + Send + Sync>);

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sampler")
    }
}

/// Values a sampler read at a scrape, as gauge or counter families.
#[derive(Debug, Default)]
pub struct Samples {
    families: Vec<SampledFamily>,
}

#[derive(Debug)]
struct SampledFamily {
    name: &'static str,
    help: &'static str,
    counter: bool,
    series: Vec<(Vec<(&'static str, String)>, i64)>,
}

impl Samples {
    /// A gauge family `name`; each series is its labels and value.
    pub fn gauge(&mut self, name: &'static str, help: &'static str, series: Vec<(Vec<(&'static str, String)>, i64)>) {
        self.families.push(SampledFamily { name, help, counter: false, series });
    }

    /// The families read, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.families.iter().map(|f| f.name).collect()
    }

    /// A counter family `name` (its `_total` is added), each series its labels and count.
    pub fn counter(&mut self, name: &'static str, help: &'static str, series: Vec<(Vec<(&'static str, String)>, i64)>) {
        self.families.push(SampledFamily { name, help, counter: true, series });
    }
}

#[derive(Debug)]
struct Sampled(Arc<Mutex<Vec<Sampler>>>);

impl prometheus_client::collector::Collector for Sampled {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut samples = Samples::default();
        for sampler in self.0.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            (sampler.0)(&mut samples);
        }
        for family in samples.families {
            let kind = if family.counter { MetricType::Counter } else { MetricType::Gauge };
            let mut metric = encoder.encode_descriptor(family.name, family.help, None, kind)?;
            for (labels, value) in family.series.into_iter().take(MAX_SERIES) {
                let series = metric.encode_family(&labels)?;
                if family.counter {
                    prometheus_client::metrics::counter::ConstCounter::new(value.max(0) as u64).encode(series)?;
                } else {
                    ConstGauge::new(value).encode(series)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_past_its_bound_counts_new_names_under_other() {
        let family: Bounded<PluginLabels, Counter> = Bounded::default();
        let other = || PluginLabels { plugin: Arc::from(OTHER) };
        for n in 0..MAX_SERIES + 50 {
            family.get(PluginLabels { plugin: Arc::from(format!("p{n}")) }, |_| other()).inc();
        }
        assert_eq!(family.family.get(&other()).map(|c| c.get()), Some(50));
        assert!(family.family.get(&PluginLabels { plugin: Arc::from(format!("p{}", MAX_SERIES)) }).is_none(), "past the bound, no new series");
        family.get(PluginLabels { plugin: Arc::from("p3") }, |_| unreachable!("a known name is not overflow")).inc();
        assert_eq!(family.family.get(&PluginLabels { plugin: Arc::from("p3") }).map(|c| c.get()), Some(2));
    }

    #[test]
    fn recorded_lists_every_family_the_host_records_into() {
        let metrics = Metrics::new();
        let labels = RequestLabels { method: "ping", transport: "stdio", era: "session", outcome: "ok" };
        metrics.request(labels, None, Duration::ZERO);
        metrics.request_refused("in_flight");
        let plugin: Arc<str> = Arc::from("p");
        let call = metrics.plugin_call(&plugin);
        metrics.plugin_call_ended(call, "trap");
        metrics.plugin_refusal(&plugin, "file");
        metrics.events_dropped(1);
        let _held = [metrics.connection("stdio"), metrics.session("sse"), metrics.stream("listen")];
        metrics.http_refused("401");
        metrics.notification_shed();
        metrics.replay_evicted(1);
        metrics.input_round("answered");
        metrics.approval("approved");
        metrics.plugin_load("loaded");
        metrics.compiled();
        metrics.cache_hit();
        metrics.forwarded("forwarded");
        let text = metrics.encode();
        assert_eq!(families(&text), RECORDED, "RECORDED must name every family, in order:\n{text}");
    }

    #[test]
    fn the_exposition_names_every_family_with_its_type() {
        let metrics = Metrics::new();
        let labels = RequestLabels { method: "tools/call", transport: "stdio", era: "session", outcome: "tool_error" };
        metrics.request(labels, Some(&Arc::from("echo_say")), Duration::from_micros(70));
        let call = metrics.plugin_call(&Arc::from("echo"));
        metrics.plugin_call_ended(call, "ok");
        metrics.sample(|s| s.gauge("paddock_generation", "The router's generation", vec![(vec![], 3)]));
        let text = metrics.encode();
        for line in [
            "# TYPE paddock_requests_total counter",
            "paddock_requests_total{method=\"tools/call\",transport=\"stdio\",era=\"session\",outcome=\"tool_error\"} 1",
            "# TYPE mcp_server_operation_duration_seconds histogram",
            "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo_say\",le=\"0.0001\"} 1",
            "paddock_plugin_calls_total{plugin=\"echo\",outcome=\"ok\"} 1",
            "paddock_plugin_calls_in_flight{plugin=\"echo\"} 0",
            "paddock_generation 3",
            "paddock_build_info{version=",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    /// The metric names a PromQL expression reads: identifiers outside label matchers (`{...}`)
    /// and grouping clauses (`by (...)`, `without (...)`), keeping those of this host's families.
    fn metric_names(expr: &str) -> Vec<&str> {
        let mut names = Vec::new();
        let (bytes, mut i, mut braces) = (expr.as_bytes(), 0, 0usize);
        while i < bytes.len() {
            match bytes[i] {
                b'{' => braces += 1,
                b'}' => braces = braces.saturating_sub(1),
                b'"' => {
                    i += 1;
                    while i < bytes.len() && bytes[i] != b'"' {
                        i += 1;
                    }
                }
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = i;
                    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b':') {
                        i += 1;
                    }
                    let word = &expr[start..i];
                    if (word == "by" || word == "without") && braces == 0 {
                        let close = expr[i..].find(')').map_or(bytes.len(), |end| i + end);
                        i = close;
                    } else if braces == 0 && (word.starts_with("paddock_") || word.starts_with("mcp_")) {
                        names.push(word);
                    }
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        names
    }

    /// Every query of a dashboard: panel targets' `expr` and template variables' queries.
    fn queries(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(object) => {
                for (key, value) in object {
                    match (key.as_str(), value) {
                        ("expr" | "definition", serde_json::Value::String(query)) => found.push(query.clone()),
                        _ => queries(value, found),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| queries(item, found)),
            _ => {}
        }
    }

    #[test]
    fn every_query_of_the_dashboard_reads_only_metrics_this_host_exports() {
        let dashboard: serde_json::Value = serde_json::from_str(include_str!("../../grafana/paddock.json")).expect("the dashboard is JSON");
        let mut found = Vec::new();
        queries(&dashboard, &mut found);
        assert!(found.len() >= 20, "the dashboard has its queries: {found:?}");
        let exported: std::collections::BTreeSet<&str> = RECORDED.iter().chain(SAMPLED).copied().collect();
        for query in &found {
            let names = metric_names(query);
            assert!(!names.is_empty(), "`{query}` reads no metric of this host");
            for name in names {
                let family =
                    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| name.strip_suffix(suffix).filter(|f| f.ends_with("_seconds"))).unwrap_or(name);
                assert!(exported.contains(family), "`{query}` reads `{name}`, which this host does not export");
            }
        }
        let all = found.join("\n");
        for shown in [
            "rate(paddock_requests_total",
            "histogram_quantile(0.5, sum by (le, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_bucket",
            "histogram_quantile(0.99, sum by (le, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_bucket",
            "sum by (outcome) (rate(paddock_requests_total",
            "sum by (plugin, kind) (rate(paddock_plugin_refusals_total",
            "paddock_sessions",
            "paddock_streams",
        ] {
            assert!(all.contains(shown), "the dashboard shows `{shown}`");
        }
    }

    #[test]
    fn metric_names_are_told_from_label_names() {
        let query = r#"histogram_quantile(0.99, sum by (le, mcp_method_name) (rate(mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",x="paddock_fake"}[5m])))"#;
        assert_eq!(metric_names(query), ["mcp_server_operation_duration_seconds_bucket"]);
        assert_eq!(metric_names("paddock_a / paddock_b"), ["paddock_a", "paddock_b"]);
    }
}
