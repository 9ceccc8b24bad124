//! The wasi:http request hook: enforces a plugin's network grant and adds its secrets.
//!
//! Every outgoing request is checked before anything connects: a URL with user info is
//! refused; the scheme, host and port must match `policy::EgressRules`; the name is then
//! resolved and every address vetted by `egress::Egress`, which dials only a vetted address. A
//! refused request gets `HttpRequestDenied` (or `DestinationIpProhibited` for an address) and a
//! recorded refusal with the plugin and the target.
//!
//! Secrets: after the checks, the host sets each secret header granted for exactly this target
//! (scheme, host and port), replacing any header of that name the plugin set. The plugin handed
//! the request over before this, so it never sees the value. Redirects are never followed here
//! (one request, one connection, whatever status arrives), so a redirect to another origin is a
//! new request from the guest, checked again, and gets that origin's secrets: none.
//!
//! Bounds per call: `MAX_REQUESTS_IN_FLIGHT` requests at once (a request counts until its
//! response body is finished or dropped), and response bodies charged to the call's
//! `ResponseBudget`. Timeouts: wasi:http defaults to 600 s for connect, first byte and between
//! bytes; they are capped here (the call's own deadline still applies on top).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

use super::descriptors::{DescriptorPool, HeldDescriptor};
use super::egress::{Charge, Egress, ResponseBudget, Timeouts};
use super::refusal_log::Recorder;
use crate::policy::{EgressRules, RefusalKind, Target};
use crate::telemetry::trace::{Attribute, Carried, Kind, Span};

/// Longest wait for a connection (all vetted addresses together), and for the TLS and HTTP
/// handshakes after it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the first byte, and between two bytes, of a response.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Outgoing requests one call may have open at once: each holds a host socket.
pub(crate) const MAX_REQUESTS_IN_FLIGHT: usize = 16;

/// A header the host adds to requests for one target. `Debug` never shows the value.
#[derive(Clone)]
pub(crate) struct InjectedSecret {
    pub(crate) target: Target,
    pub(crate) header: http::HeaderName,
    pub(crate) value: http::HeaderValue,
}

impl std::fmt::Debug for InjectedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InjectedSecret").field("target", &self.target).field("header", &self.header).finish_non_exhaustive()
    }
}

/// The per-call hook state: which plugin, what it may reach, and what it may spend.
pub(crate) struct HttpPolicy {
    /// Where refusals are recorded (plugin, request, operation).
    pub(crate) recorder: Recorder,
    pub(crate) rules: Arc<EgressRules>,
    pub(crate) secrets: Arc<[InjectedSecret]>,
    pub(crate) egress: Egress,
    pub(crate) in_flight: Arc<Semaphore>,
    pub(crate) budget: Arc<ResponseBudget>,
    /// The plugin's descriptor pool: each connection holds one.
    pub(crate) descriptors: Arc<DescriptorPool>,
    /// The trace context each outgoing request continues: the plugin run's span, or (when no
    /// spans are made) the client's own context.
    pub(crate) trace: Carried,
}

type ResponseFuture =
    Box<dyn Future<Output = wasmtime_wasi_http::Result<(http::Response<WasiBody>, Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>)>> + Send>;

/// Why a request is refused before anything is resolved.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// The URL carries `user:password@`.
    UserInfo,
    /// No scheme or no host.
    NoTarget,
    /// Not in the grant.
    NotGranted(Target),
}

impl HttpPolicy {
    /// The target of a request URI, when it has a scheme and a host.
    fn target(uri: &http::Uri) -> Option<Target> {
        let scheme = uri.scheme_str()?;
        let host = uri.host()?;
        let port = uri.port_u16().unwrap_or(if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 });
        Some(Target::new(scheme, host, port))
    }

    /// The target `uri` may be sent to, or why not.
    fn admit(&self, uri: &http::Uri) -> Result<Target, Refused> {
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(Refused::UserInfo);
        }
        let target = HttpPolicy::target(uri).ok_or(Refused::NoTarget)?;
        if self.rules.check(&target).is_allowed() { Ok(target) } else { Err(Refused::NotGranted(target)) }
    }
}

fn denied(error: wasmtime_wasi_http::Error) -> ResponseFuture {
    Box::new(async move { Err(error) })
}

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> ResponseFuture {
        let target = match self.admit(request.uri()) {
            Ok(target) => target,
            Err(refused) => {
                let shown = match refused {
                    Refused::UserInfo => format!("{} (user info in the URL)", request.uri()),
                    Refused::NoTarget => request.uri().to_string(),
                    Refused::NotGranted(target) => target.to_string(),
                };
                self.recorder.refuse(RefusalKind::Network, &shown);
                return denied(wasmtime_wasi_http::Error::HttpRequestDenied);
            }
        };
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            self.recorder.refuse(RefusalKind::Resources, &format!("outgoing requests in flight (limit {MAX_REQUESTS_IN_FLIGHT})"));
            return denied(wasmtime_wasi_http::Error::ConnectionLimitReached);
        };
        let descriptor = match HeldDescriptor::take(&self.descriptors) {
            Ok(held) => held,
            Err(exhausted) => {
                self.recorder.refuse(RefusalKind::Resources, &exhausted.to_string());
                return denied(wasmtime_wasi_http::Error::ConnectionLimitReached);
            }
        };
        for secret in self.secrets.iter().filter(|s| s.target == target) {
            request.headers_mut().insert(secret.header.clone(), secret.value.clone());
        }
        let span = self.carry_trace(&mut request, &target);
        let timeouts = cap_timeouts(options);
        let charge = Charge { recorder: self.recorder.clone(), budget: self.budget.clone(), _permit: permit, _descriptor: descriptor };
        let egress = self.egress.clone();
        let rules = self.rules.clone();
        Box::new(async move {
            let sent = egress.send(&target, &rules, request, timeouts, charge).await;
            match &sent {
                Ok((response, _)) => {
                    span.set(Attribute::new("http.response.status_code", i64::from(response.status().as_u16())));
                    if response.status().is_server_error() {
                        span.fail("http_error");
                    }
                }
                Err(_) => span.fail("request_failed"),
            }
            sent
        })
    }
}

impl HttpPolicy {
    /// Starts the span of an outgoing request (when spans are made) and sets the request's
    /// `traceparent` and `tracestate` to it, or to the context the call continues, replacing
    /// whatever the plugin set: the host, not the plugin, says where the request sits in the
    /// trace. A call without a valid context leaves the request's headers as the plugin wrote
    /// them.
    fn carry_trace(&self, request: &mut http::Request<WasiBody>, target: &Target) -> Span {
        if self.trace.traceparent.is_none() {
            return Span::default();
        }
        let method = request.method().as_str().to_owned();
        let attributes = vec![
            Attribute::new("http.request.method", method.clone()),
            Attribute::new("server.address", target.host.clone()),
            Attribute::new("server.port", i64::from(target.port)),
            Attribute::new("url.scheme", target.scheme.clone()),
        ];
        let span = Span::child_of(&self.trace, method, Kind::Client, attributes);
        let carried = span.carried().unwrap_or_else(|| self.trace.validated());
        let Some(traceparent) = carried.traceparent.and_then(|v| http::HeaderValue::from_str(&v).ok()) else {
            return span;
        };
        let headers = request.headers_mut();
        headers.remove(TRACESTATE);
        headers.insert(TRACEPARENT, traceparent);
        if let Some(value) = carried.tracestate.and_then(|v| http::HeaderValue::from_str(&v).ok()) {
            headers.insert(TRACESTATE, value);
        }
        span
    }
}

const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");
const TRACESTATE: http::HeaderName = http::HeaderName::from_static("tracestate");

fn cap_timeouts(options: Option<RequestOptions>) -> Timeouts {
    let options = options.unwrap_or_default();
    let cap = |asked: Option<Duration>, max: Duration| asked.map_or(max, |d| d.min(max));
    Timeouts {
        connect: cap(options.connect_timeout, CONNECT_TIMEOUT),
        first_byte: cap(options.first_byte_timeout, READ_TIMEOUT),
        between_bytes: cap(options.between_bytes_timeout, READ_TIMEOUT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_capped() {
        let capped = cap_timeouts(Some(RequestOptions {
            connect_timeout: Some(Duration::from_secs(600)),
            first_byte_timeout: Some(Duration::from_secs(1)),
            between_bytes_timeout: None,
        }));
        assert_eq!(capped.connect, CONNECT_TIMEOUT);
        assert_eq!(capped.first_byte, Duration::from_secs(1));
        assert_eq!(capped.between_bytes, READ_TIMEOUT);
    }

    #[test]
    fn targets_come_from_the_uri() {
        let t = HttpPolicy::target(&"http://127.0.0.1:8080/x".parse().expect("uri")).expect("target");
        assert_eq!(t, Target::new("http", "127.0.0.1", 8080));
        let t = HttpPolicy::target(&"https://Example.com/".parse().expect("uri")).expect("target");
        assert_eq!(t, Target::new("https", "example.com", 443));
        assert!(HttpPolicy::target(&"/relative".parse().expect("uri")).is_none());
    }
}
