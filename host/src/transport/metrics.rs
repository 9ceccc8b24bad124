//! The metrics listener (`--metrics ADDR`): `GET /metrics` answers the Prometheus text
//! exposition, and nothing else is served. It is its own listener, so a scrape never passes the
//! MCP guard and the MCP port never shows metrics.
//!
//! Loopback only unless a bearer token is set; with one, every scrape must present it. At most
//! `MAX_CONNECTIONS` scrapers are served at once (the rest wait in the kernel's backlog), each
//! must send its request head within `HEAD_TIMEOUT`, and a connection serves at most one request
//! at a time, so a hostile scraper holds a few descriptors and a small buffer, nothing more.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::http::BearerToken;
use crate::telemetry::metrics::{self, Metrics};

/// Scrapers served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a scraper may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest request head a scraper may send.
const MAX_HEAD: usize = 8192;

/// Why the metrics listener did not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsListenerError {
    #[error("--metrics {addr} is not a loopback address: set --metrics-token-file so that only scrapers holding the token read the metrics")]
    NeedsToken { addr: SocketAddr },
    #[error("cannot listen for metrics on {addr}: {error}")]
    Bind { addr: SocketAddr, error: std::io::Error },
}

/// A bound metrics listener.
#[derive(Debug)]
pub struct MetricsListener {
    listener: TcpListener,
    token: Option<Arc<BearerToken>>,
}

impl MetricsListener {
    /// Binds `addr`; a non-loopback address needs `token`.
    ///
    /// # Errors
    /// A non-loopback address without a token, or the address cannot be bound.
    pub async fn bind(addr: SocketAddr, token: Option<BearerToken>) -> Result<MetricsListener, MetricsListenerError> {
        if !addr.ip().is_loopback() && token.is_none() {
            return Err(MetricsListenerError::NeedsToken { addr });
        }
        let listener = TcpListener::bind(addr).await.map_err(|error| MetricsListenerError::Bind { addr, error })?;
        Ok(MetricsListener { listener, token: token.map(Arc::new) })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves scrapes of `metrics` until `stop` is cancelled.
    pub async fn run(self, metrics: &'static Metrics, stop: CancellationToken) {
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        loop {
            let slot = tokio::select! {
                slot = Arc::clone(&slots).acquire_owned() => match slot { Ok(slot) => slot, Err(_) => return },
                () = stop.cancelled() => return,
            };
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = stop.cancelled() => return,
            };
            let (socket, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a metrics connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let token = self.token.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let token = token.clone();
                    async move { Ok::<_, std::convert::Infallible>(answer(&request, metrics, token.as_deref(), peer)) }
                });
                let mut http = hyper::server::conn::http1::Builder::new();
                http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEAD_TIMEOUT).max_buf_size(MAX_HEAD);
                let connection = http.serve_connection(TokioIo::new(socket), service);
                tokio::pin!(connection);
                tokio::select! {
                    served = connection.as_mut() => if let Err(err) = served {
                        tracing::debug!(error = %err, "a metrics connection ended with an error");
                    },
                    () = stop.cancelled() => {}
                }
                drop(slot);
            });
        }
    }
}

/// The answer to one request on the metrics listener.
fn answer<B>(request: &Request<B>, metrics: &Metrics, token: Option<&BearerToken>, peer: SocketAddr) -> Response<Full<Bytes>> {
    if request.uri().path() != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "not found: metrics are at /metrics\n");
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET /metrics is served\n");
    }
    if let Some(token) = token {
        let presented = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if !presented.is_some_and(|p| token.admits(p)) {
            refused(peer, if presented.is_some() { "a wrong bearer token" } else { "no bearer token" });
            let mut response = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required\n");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let mut response = Response::new(Full::new(Bytes::from(metrics.encode())));
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(metrics::CONTENT_TYPE));
    response
}

/// Records a scrape refused for its token: counted, and logged with the peer at most once a
/// second (a client retrying in a loop never floods the log).
fn refused(peer: SocketAddr, why: &'static str) {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    metrics::get().inspect(|m| m.http_refused("metrics_401"));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if LAST.swap(now, std::sync::atomic::Ordering::Relaxed) != now {
        tracing::warn!(%peer, "a metrics scrape was refused: {why}");
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
