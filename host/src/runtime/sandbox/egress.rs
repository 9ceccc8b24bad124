//! Outgoing HTTP connections: the host resolves each name once, vets every address it got, and
//! dials only a vetted address (never a second lookup), over TLS for `https`.
//!
//! The scheme and port dialled are those of the `Target` the grant was checked against, and the
//! TLS server name is its host. Every phase has a timeout: name lookup, connect (all addresses
//! together), TLS and HTTP handshake, first byte, between two bytes, and the whole response.
//! Response body bytes are charged to the call (`ResponseBudget`): past it the body fails with
//! `HttpResponseBodySize` and the refusal is recorded.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

use super::refusal_log::Recorder;
use crate::policy::{EgressRules, RefusalKind, Target, canonical_ip};

/// Longest wait for a name lookup.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest time one response may take, from dialling to its last byte.
const WHOLE_RESPONSE: Duration = Duration::from_secs(300);

/// A name resolver: the host's own by default, a fixed table in tests.
pub trait Resolve: fmt::Debug + Send + Sync {
    /// The addresses `host` (a name, never an IP literal) resolves to.
    fn lookup<'a>(&'a self, host: &'a str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;
}

/// The system resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, 0)).await?.map(|addr| addr.ip()).collect()) })
    }
}

/// A resolver answering from a fixed table (for tests, and for hosts that pin names).
#[derive(Debug, Default, Clone)]
pub struct FixedResolver {
    names: std::collections::HashMap<String, Vec<IpAddr>>,
}

impl FixedResolver {
    /// An empty table: every name is unknown.
    pub fn new() -> Self {
        FixedResolver::default()
    }

    /// Adds `name` resolving to `addresses`.
    pub fn with(mut self, name: &str, addresses: &[IpAddr]) -> Self {
        self.names.insert(name.to_ascii_lowercase(), addresses.to_vec());
        self
    }
}

impl Resolve for FixedResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>> {
        let found = self.names.get(host).cloned();
        Box::pin(async move { found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown name")) })
    }
}

/// The timeouts of one request (already capped by the host).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) connect: Duration,
    pub(crate) first_byte: Duration,
    pub(crate) between_bytes: Duration,
}

/// Response body bytes one call may still receive, shared by all its requests.
#[derive(Debug)]
pub(crate) struct ResponseBudget {
    left: AtomicU64,
    limit: u64,
}

impl ResponseBudget {
    pub(crate) fn new(limit: u64) -> Self {
        ResponseBudget { left: AtomicU64::new(limit), limit }
    }

    fn spend(&self, n: u64) -> bool {
        self.left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(n)).is_ok()
    }
}

/// What a request needs beyond the request itself: where to record, what it may spend.
pub(crate) struct Charge {
    pub(crate) recorder: Recorder,
    pub(crate) budget: Arc<ResponseBudget>,
    /// Held until the response body is finished or dropped: bounds one call's connections.
    pub(crate) _permit: OwnedSemaphorePermit,
    /// The connection's descriptor, charged to the plugin and the process.
    pub(crate) _descriptor: super::descriptors::HeldDescriptor,
}

/// The process's outgoing connector: a resolver and a TLS client configuration.
#[derive(Clone)]
pub(crate) struct Egress {
    resolver: Arc<dyn Resolve>,
    tls: tokio_rustls::TlsConnector,
}

impl fmt::Debug for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Egress").field("resolver", &self.resolver).finish_non_exhaustive()
    }
}

type Exchange = (http::Response<WasiBody>, Box<dyn Future<Output = Result<(), Error>> + Send>);

impl Egress {
    /// A connector using `resolver` and the web PKI roots.
    pub(crate) fn new(resolver: Arc<dyn Resolve>) -> Egress {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
            .unwrap_or_else(|_| unreachable!("ring supports the default protocol versions"));
        Egress { resolver, tls: tokio_rustls::TlsConnector::from(Arc::new(config)) }
    }

    /// Sends `request` to `target` (already allowed by `rules`): resolves, vets, dials, and
    /// returns the response with its body charged to the call.
    pub(crate) async fn send(
        &self,
        target: &Target,
        rules: &EgressRules,
        mut request: http::Request<WasiBody>,
        timeouts: Timeouts,
        charge: Charge,
    ) -> Result<Exchange, Error> {
        let deadline = Instant::now() + WHOLE_RESPONSE;
        let addresses = self.vetted_addresses(target, rules, &charge.recorder).await?;
        let tcp = tokio::time::timeout(timeouts.connect, dial(&addresses)).await.map_err(|_| Error::ConnectionTimeout)??;
        // The request line carries only the path: scheme and authority are the connection's.
        let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
        *request.uri_mut() = http::Uri::builder().path_and_query(path).build().map_err(|_| Error::HttpRequestUriInvalid)?;
        let handshake = async {
            if target.scheme == "https" {
                let name = rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(Error::from)?;
                let tls = self.tls.connect(name, tcp).await.map_err(Error::Tls)?;
                handshake(TokioIo::new(Box::new(tls) as Box<dyn Stream>)).await
            } else {
                handshake(TokioIo::new(Box::new(tcp) as Box<dyn Stream>)).await
            }
        };
        let (mut sender, mut conn) = tokio::time::timeout(timeouts.connect, handshake).await.map_err(|_| Error::ConnectionTimeout)??;
        let mut conn_done = false;
        let response = tokio::time::timeout(timeouts.first_byte, async {
            let send = sender.send_request(request);
            tokio::pin!(send);
            loop {
                tokio::select! {
                    response = &mut send => return response.map_err(Error::from),
                    ended = &mut conn, if !conn_done => {
                        conn_done = true;
                        ended.map_err(Error::from)?;
                    }
                }
            }
        })
        .await
        .map_err(|_| Error::ConnectionReadTimeout)??;
        let between_bytes = timeouts.between_bytes.max(Duration::from_millis(1));
        let (parts, incoming) = response.into_parts();
        let body = ChargedBody {
            inner: incoming,
            between_bytes,
            idle: Box::pin(tokio::time::sleep(between_bytes)),
            whole: Box::pin(tokio::time::sleep_until(deadline)),
            charge,
        };
        let response = http::Response::from_parts(parts, body.boxed_unsync());
        let io: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async move { if conn_done { Ok(()) } else { conn.await.map_err(Error::from) } });
        Ok((response, io))
    }

    async fn vetted_addresses(&self, target: &Target, rules: &EgressRules, recorder: &Recorder) -> Result<Vec<SocketAddr>, Error> {
        let found = match target.host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::time::timeout(LOOKUP_TIMEOUT, self.resolver.lookup(&target.host))
                .await
                .map_err(|_| Error::DnsTimeout)?
                .map_err(|e| Error::DnsError { rcode: Some(e.kind().to_string()), info_code: None })?,
        };
        if found.is_empty() {
            return Err(Error::DestinationNotFound);
        }
        let mut vetted = Vec::with_capacity(found.len());
        for ip in found {
            match rules.vet_address(target, ip) {
                Ok(()) => vetted.push(SocketAddr::new(canonical_ip(ip), target.port)),
                Err(why) => recorder.refuse(RefusalKind::Network, &format!("{target} resolved to {ip} ({why})")),
            }
        }
        if vetted.is_empty() { Err(Error::DestinationIpProhibited) } else { Ok(vetted) }
    }
}

/// Connects to the first address that answers.
async fn dial(addresses: &[SocketAddr]) -> Result<TcpStream, Error> {
    let mut last = Error::DestinationUnavailable;
    for addr in addresses {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                stream.set_nodelay(true).map_err(Error::Connect)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => last = Error::ConnectionRefused,
            Err(e) => last = Error::Connect(e),
        }
    }
    Err(last)
}

/// A connection, plain or TLS.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Stream for T {}

type Sender = hyper::client::conn::http1::SendRequest<WasiBody>;
type Connection = hyper::client::conn::http1::Connection<TokioIo<Box<dyn Stream>>, WasiBody>;

async fn handshake(io: TokioIo<Box<dyn Stream>>) -> Result<(Sender, Connection), Error> {
    hyper::client::conn::http1::Builder::new().handshake(io).await.map_err(Error::from)
}

/// A response body that charges every byte to the call, and fails when the server goes quiet
/// for `between_bytes` or the whole response outlasts `WHOLE_RESPONSE`.
struct ChargedBody {
    inner: hyper::body::Incoming,
    between_bytes: Duration,
    idle: Pin<Box<Sleep>>,
    whole: Pin<Box<Sleep>>,
    charge: Charge,
}

impl Body for ChargedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.whole.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Error::HttpResponseTimeout)));
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                if !self.charge.budget.spend(len) {
                    let limit = self.charge.budget.limit;
                    self.charge.recorder.refuse(RefusalKind::Resources, &format!("response body bytes (limit {limit})"));
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(limit)))));
                }
                let next = Instant::now() + self.between_bytes;
                self.idle.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) if e.is_timeout() => Poll::Ready(Some(Err(Error::HttpResponseTimeout))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.idle.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Error::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
