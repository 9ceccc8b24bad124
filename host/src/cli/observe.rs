//! `paddock serve --metrics` and `--otlp-endpoint`: the metrics listener, started before the
//! plugins load (so their loads are counted), the sampler that reads the server's own state at
//! each scrape, and the OTLP span exporter (configured by the flag or the standard `OTEL_*`
//! variables, off unless one of them names an endpoint).

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
    /// Export spans over OTLP (HTTP/protobuf) to this collector, e.g. http://127.0.0.1:4318
    /// (`/v1/traces` is added). Without it, `OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` turn the export on; `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none` keep it off.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

/// The span exporter, flushed and shut down when dropped.
pub(super) struct Traces(Option<opentelemetry_sdk::trace::SdkTracerProvider>);

impl Drop for Traces {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            // Flushing blocks on the exporter's thread: never on a runtime worker.
            let flush = move || {
                if let Err(err) = provider.shutdown_with_timeout(std::time::Duration::from_secs(5)) {
                    tracing::warn!(error = %err, "spans still queued at exit could not be exported");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(_) => tokio::task::block_in_place(flush),
                Err(_) => flush(),
            }
        }
    }
}

/// Whether the environment asks for spans: an endpoint named, and the SDK not disabled.
fn traces_configured(flag: Option<&str>) -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.eq_ignore_ascii_case("none"));
    !disabled && (flag.is_some() || set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

/// Starts exporting spans when configured; they are flushed when the guard drops.
pub(super) async fn start_traces(args: &ObserveArgs) -> Result<Traces> {
    if !traces_configured(args.otlp_endpoint.as_deref()) {
        return Ok(Traces(None));
    }
    let endpoint = args.otlp_endpoint.as_ref().map(|url| format!("{}/v1/traces", url.trim_end_matches('/')));
    // The exporter's blocking HTTP client owns a runtime of its own: it is made off the
    // async workers, as it must be.
    let provider = tokio::task::spawn_blocking(move || -> Result<opentelemetry_sdk::trace::SdkTracerProvider> {
        use opentelemetry_otlp::WithExportConfig;
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(endpoint) = endpoint {
            exporter = exporter.with_endpoint(endpoint);
        }
        let exporter = exporter.build().context("cannot set up the OTLP exporter")?;
        let mut resource = opentelemetry_sdk::Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if std::env::var("OTEL_SERVICE_NAME").is_err() {
            resource = resource.with_service_name("paddock");
        }
        Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(crate::telemetry::export::Watched::new(exporter))
            .with_resource(resource.build())
            .build())
    })
    .await
    .context("setting up the OTLP exporter failed")??;
    use opentelemetry::trace::TracerProvider as _;
    crate::telemetry::trace::install(provider.tracer("paddock"));
    tracing::info!(endpoint = args.otlp_endpoint.as_deref().unwrap_or("from OTEL_EXPORTER_OTLP_*"), "exporting spans over OTLP");
    Ok(Traces(Some(provider)))
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
