//! `paddock serve --metrics` and `--otlp-endpoint`: the metrics listener, started before the
//! plugins load (so their loads are counted), the sampler that reads the server's own state at
//! each scrape, and the OTLP exporters of spans and of the MCP conventions' metrics
//! (configured by the flag or the standard `OTEL_*` variables, off unless one names an
//! endpoint).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::telemetry::metrics::{self, Samples};
use crate::transport::http::BearerToken;
use crate::transport::metrics::MetricsListener;

/// What the operator sees of a running server.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ObserveArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics, on a listener of their own (off by
    /// default; a non-loopback address needs --metrics-token-file).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// A file whose first line is the bearer token every scrape must present.
    #[arg(long, value_name = "FILE", requires = "metrics")]
    metrics_token_file: Option<PathBuf>,
    /// Export spans and the MCP conventions' metrics over OTLP (HTTP/protobuf) to this
    /// collector, e.g. http://127.0.0.1:4318 (`/v1/traces` and `/v1/metrics` are added).
    /// Without it, `OTEL_EXPORTER_OTLP_ENDPOINT` (or the `_TRACES_` and `_METRICS_` ones)
    /// turns the export on; `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` or
    /// `OTEL_METRICS_EXPORTER=none` keep it, or one signal, off.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

/// The OTLP exporters (spans, and the conventions' metrics), flushed and shut down when
/// dropped.
pub(super) struct Otlp {
    traces: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    metrics: Option<opentelemetry_sdk::metrics::SdkMeterProvider>,
}

/// How long an exiting host waits for its last spans and metrics to be exported (both at once):
/// a dead collector delays the exit by this much at most.
const FLUSH_AT_EXIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for Otlp {
    fn drop(&mut self) {
        // Each provider is flushed on a thread of its own, both at once, and waited for at most
        // `FLUSH_AT_EXIT` (plus a little for the threads to report): the exporters block, and a
        // collector that does not answer must not hold the exit.
        let (done, finished) = std::sync::mpsc::channel::<Option<String>>();
        let mut flushing = 0;
        if let Some(traces) = self.traces.take() {
            let done = done.clone();
            flushing += 1;
            std::thread::spawn(move || {
                let _ = done.send(traces.shutdown_with_timeout(FLUSH_AT_EXIT).err().map(|e| format!("spans still queued at exit could not be exported: {e}")));
            });
        }
        if let Some(metrics) = self.metrics.take() {
            flushing += 1;
            std::thread::spawn(move || {
                let _ = done.send(metrics.shutdown_with_timeout(FLUSH_AT_EXIT).err().map(|e| format!("the last metrics could not be exported: {e}")));
            });
        }
        let deadline = std::time::Instant::now() + FLUSH_AT_EXIT + std::time::Duration::from_millis(200);
        let wait = move || {
            for _ in 0..flushing {
                match finished.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
                    Ok(Some(failure)) => tracing::warn!("{failure}"),
                    Ok(None) => {}
                    Err(_) => {
                        tracing::warn!("the OTLP exporters did not finish flushing in time; what they held is lost");
                        return;
                    }
                }
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::block_in_place(wait),
            Err(_) => wait(),
        }
    }
}

/// Whether the environment (`env` looks a variable up) asks for the OTLP export of `signal`
/// (`TRACES` or `METRICS`): an endpoint named, and neither the SDK nor that signal's exporter
/// turned off.
fn otlp_configured(flag: Option<&str>, signal: &str, env: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || env(&format!("OTEL_{signal}_EXPORTER")).is_some_and(|v| v.eq_ignore_ascii_case("none"));
    !disabled && (flag.is_some() || set("OTEL_EXPORTER_OTLP_ENDPOINT") || set(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")))
}

/// Starts the OTLP exporters that are configured; they are flushed when the guard drops.
pub(super) async fn start_otlp(args: &ObserveArgs) -> Result<Otlp> {
    let flag = args.otlp_endpoint.as_deref();
    let env = |name: &str| std::env::var(name).ok();
    let (traces, metrics) = (otlp_configured(flag, "TRACES", env), otlp_configured(flag, "METRICS", env));
    if !traces && !metrics {
        return Ok(Otlp { traces: None, metrics: None });
    }
    let endpoint = |path: &str| args.otlp_endpoint.as_ref().map(|url| format!("{}{path}", url.trim_end_matches('/')));
    let (trace_endpoint, metric_endpoint) = (endpoint("/v1/traces"), endpoint("/v1/metrics"));
    // The exporters' blocking HTTP client owns a runtime of its own: it is made off the async
    // workers, as it must be.
    let otlp = tokio::task::spawn_blocking(move || -> Result<Otlp> {
        use opentelemetry_otlp::{Protocol, WithExportConfig};
        let mut resource = opentelemetry_sdk::Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if std::env::var("OTEL_SERVICE_NAME").is_err() {
            resource = resource.with_service_name("paddock");
        }
        let resource = resource.build();
        let traces = if traces {
            let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
            if let Some(endpoint) = trace_endpoint {
                exporter = exporter.with_endpoint(endpoint);
            }
            let exporter = exporter.build().context("cannot set up the OTLP span exporter")?;
            Some(
                opentelemetry_sdk::trace::SdkTracerProvider::builder()
                    .with_batch_exporter(crate::telemetry::export::Watched::new(exporter))
                    .with_resource(resource.clone())
                    .build(),
            )
        } else {
            None
        };
        let metrics = if metrics {
            let mut exporter = opentelemetry_otlp::MetricExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
            if let Some(endpoint) = metric_endpoint {
                exporter = exporter.with_endpoint(endpoint);
            }
            let exporter = exporter.build().context("cannot set up the OTLP metric exporter")?;
            Some(opentelemetry_sdk::metrics::SdkMeterProvider::builder().with_periodic_exporter(exporter).with_resource(resource).build())
        } else {
            None
        };
        Ok(Otlp { traces, metrics })
    })
    .await
    .context("setting up the OTLP exporters failed")??;
    if let Some(provider) = &otlp.traces {
        use opentelemetry::trace::TracerProvider as _;
        crate::telemetry::trace::install(provider.tracer("paddock"));
    }
    if let Some(provider) = &otlp.metrics {
        use opentelemetry::metrics::MeterProvider as _;
        crate::telemetry::semconv::install(&provider.meter("paddock"));
    }
    tracing::info!(
        endpoint = flag.unwrap_or("from OTEL_EXPORTER_OTLP_*"),
        traces = otlp.traces.is_some(),
        metrics = otlp.metrics.is_some(),
        "exporting over OTLP"
    );
    Ok(otlp)
}

/// Starts the metrics listener when asked for; it stops when the returned guard drops.
pub(super) async fn start(args: &ObserveArgs) -> Result<Option<tokio_util::sync::DropGuard>> {
    let Some(addr) = args.metrics else { return Ok(None) };
    let token = args.metrics_token_file.as_deref().map(BearerToken::from_file).transpose().context("--metrics-token-file")?;
    let listener = MetricsListener::bind(addr, token).await?;
    let bound = listener.local_addr().context("cannot read the metrics address")?;
    tracing::info!(metrics_address = %bound, "metrics on http://{bound}/metrics");
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(listener.run(metrics::install(), stop.clone()));
    Ok(Some(stop.drop_guard()))
}

/// Reads `server` and `runtime` at each scrape, when metrics are on.
pub(super) fn sample(server: &Arc<crate::session::ServerState>, runtime: &crate::runtime::Runtime) {
    let Some(metrics) = metrics::get() else { return };
    let (server, runtime) = (Arc::downgrade(server), runtime.clone());
    metrics.sample(move |samples| {
        let Some(server) = server.upgrade() else { return };
        read(samples, &server, &runtime);
    });
}

fn read(samples: &mut Samples, server: &crate::session::ServerState, runtime: &crate::runtime::Runtime) {
    let router = server.router();
    let one = |value: usize| vec![(Vec::new(), value as i64)];
    samples.gauge("paddock_generation", "The generation of the router serving (one more at each change of the plugins)", one(router.generation() as usize));
    samples.gauge("paddock_plugins_serving", "Plugins served now", one(router.served().len()));
    samples.gauge("paddock_plugin_problems", "Plugin files not served as they are on disk (failed to load, held or refused)", one(server.problems().len()));
    let descriptors = router.served().iter().map(|entry| (vec![("plugin", entry.plugin.id().to_owned())], entry.plugin.descriptors_in_use() as i64)).collect();
    samples.gauge("paddock_plugin_descriptors", "Host file descriptors the running calls of each plugin hold", descriptors);
    let (running, max) = runtime.instances();
    samples.gauge("paddock_instances", "Plugin instances running now, across all plugins", one(running));
    samples.gauge("paddock_instances_max", "Plugin instances that may run at once", one(max));
    let tasks = server.tasks().by_status().iter().map(|(status, count)| (vec![("status", status.as_str().to_owned())], *count as i64)).collect();
    samples.gauge("paddock_tasks", "Tasks held, by status", tasks);
    let budget = server.budget();
    samples.gauge("paddock_memory_budget_used_bytes", "Memory held for clients now (queued replies, replay logs, bodies being read)", one(budget.used()));
    samples.gauge("paddock_memory_budget_bytes", "The memory budget for clients", one(budget.limit()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otlp_is_on_only_when_an_endpoint_is_named_and_nothing_turns_it_off() {
        let with = |vars: &'static [(&'static str, &'static str)]| move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned());
        assert!(!otlp_configured(None, "TRACES", with(&[])));
        assert!(otlp_configured(Some("http://127.0.0.1:4318"), "TRACES", with(&[])));
        assert!(otlp_configured(None, "TRACES", with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")])));
        assert!(otlp_configured(None, "METRICS", with(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://c:4318")])));
        assert!(!otlp_configured(None, "TRACES", with(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://c:4318")])), "one signal's endpoint");
        assert!(!otlp_configured(None, "TRACES", with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        let disabled = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "TRUE")]);
        assert!(!otlp_configured(Some("http://127.0.0.1:4318"), "TRACES", disabled));
        let no_traces = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_TRACES_EXPORTER", "none")]);
        assert!(!otlp_configured(None, "TRACES", no_traces));
        assert!(otlp_configured(None, "METRICS", no_traces), "turning one signal off leaves the other");
    }

    #[tokio::test]
    async fn sampled_lists_every_family_the_sampler_reads() {
        let (router, _) = crate::router::Router::new(Vec::new());
        let server = crate::session::ServerState::new(Arc::new(router), crate::input::StateKey::random().expect("key"));
        let runtime = crate::runtime::Runtime::new(crate::runtime::RuntimeOptions::default()).expect("runtime");
        let mut samples = Samples::default();
        read(&mut samples, &server, &runtime);
        assert_eq!(samples.names(), metrics::SAMPLED);
    }
}
