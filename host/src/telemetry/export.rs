//! The span exporter as the host runs it: any OTLP exporter, wrapped so that what it managed
//! is known (spans exported and dropped, the last failure), for `/readyz` and for metrics. The
//! SDK's batch processor calls it from its own thread with a bounded queue: a slow or dead
//! collector loses spans, never holds a request.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// How the export of spans is going.
#[derive(Debug, Default)]
pub struct ExportHealth {
    exported: AtomicU64,
    failed: AtomicU64,
    last_failure: Mutex<Option<(SystemTime, String)>>,
    last_success: Mutex<Option<SystemTime>>,
}

/// What `/readyz` shows of the exporter.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExportReport {
    /// Whether the last export succeeded (or none was due yet).
    pub ok: bool,
    pub spans_exported: u64,
    pub spans_failed: u64,
    /// The last failure, and how long ago it was, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_seconds_ago: Option<u64>,
}

static HEALTH: std::sync::OnceLock<ExportHealth> = std::sync::OnceLock::new();

/// The exporter's health, once traces are on.
pub fn health() -> Option<&'static ExportHealth> {
    HEALTH.get()
}

impl ExportHealth {
    /// The exporter's state as `/readyz` shows it.
    pub fn report(&self) -> ExportReport {
        let failure = self.last_failure.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let success = *self.last_success.lock().unwrap_or_else(|e| e.into_inner());
        let ok = match (&failure, success) {
            (None, _) => true,
            (Some((failed, _)), Some(succeeded)) => succeeded > *failed,
            (Some(_), None) => false,
        };
        let ago = |at: SystemTime| SystemTime::now().duration_since(at).unwrap_or(Duration::ZERO).as_secs();
        ExportReport {
            ok,
            spans_exported: self.exported.load(Ordering::Relaxed),
            spans_failed: self.failed.load(Ordering::Relaxed),
            last_error_seconds_ago: failure.as_ref().map(|(at, _)| ago(*at)),
            last_error: failure.map(|(_, error)| error),
        }
    }

    /// Spans exported so far, and spans that failed to export.
    pub fn counts(&self) -> (u64, u64) {
        (self.exported.load(Ordering::Relaxed), self.failed.load(Ordering::Relaxed))
    }
}

/// `inner`, with what it manages recorded.
#[derive(Debug)]
pub struct Watched<E> {
    inner: E,
    health: &'static ExportHealth,
}

impl<E> Watched<E> {
    pub fn new(inner: E) -> Watched<E> {
        Watched { inner, health: HEALTH.get_or_init(ExportHealth::default) }
    }
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                self.health.exported.fetch_add(spans, Ordering::Relaxed);
                *self.health.last_success.lock().unwrap_or_else(|e| e.into_inner()) = Some(SystemTime::now());
            }
            Err(error) => {
                self.health.failed.fetch_add(spans, Ordering::Relaxed);
                let error = crate::escape::shorten(&error.to_string());
                let first = self.health.last_failure.lock().unwrap_or_else(|e| e.into_inner()).replace((SystemTime::now(), error.clone())).is_none();
                if first {
                    tracing::warn!(error = %crate::escape::Escaped(&error), "spans could not be exported (further failures are counted, and shown by /readyz)");
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}
