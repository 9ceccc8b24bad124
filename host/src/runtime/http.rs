//! The wasi:http request hook that enforces a plugin's network grant.
//!
//! Every outgoing request is checked against `policy::OutboundRules` (scheme, host and port)
//! before anything connects; a refused request gets `ErrorCode::HttpRequestDenied` and a `warn`
//! record with the plugin and the target. Redirects: `default_send_request` never follows them
//! (it sends exactly one request over one connection and hands back whatever status arrives), so
//! a guest that follows a 3xx does so with a new `outgoing-handler.handle` call, which comes
//! through this hook and is checked again.
//!
//! Timeouts: wasi:http defaults to 600 s for connect, first byte and between bytes; they are
//! capped here (the call's own deadline still applies on top).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

use super::refusals::Recorder;
use crate::policy::{OutboundRules, RefusalKind, Target};

/// Longest wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the first byte, and between two bytes, of a response.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The per-call hook state: which plugin, and what it may reach.
pub(crate) struct HttpPolicy {
    /// Where refusals are recorded (plugin, request, operation).
    pub(crate) recorder: Recorder,
    pub(crate) rules: Arc<OutboundRules>,
}

type ResponseFuture = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            )>,
        > + Send,
>;

impl HttpPolicy {
    /// The target of a request URI, when it has a scheme and a host.
    fn target(uri: &http::Uri) -> Option<Target> {
        let scheme = uri.scheme_str()?;
        let host = uri.host()?;
        let port = uri.port_u16().unwrap_or(if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 });
        Some(Target::new(scheme, host, port))
    }
}

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> ResponseFuture {
        let target = HttpPolicy::target(request.uri());
        let allowed = target.as_ref().is_some_and(|t| self.rules.check(t).is_allowed());
        if !allowed {
            let shown = target.map(|t| t.to_string()).unwrap_or_else(|| request.uri().to_string());
            self.recorder.refuse(RefusalKind::Network, &shown);
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let options = cap_timeouts(options);
        Box::new(async move {
            let (response, io) = wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            Ok((response.map(BodyExt::boxed_unsync), Box::new(io) as Box<dyn Future<Output = _> + Send>))
        })
    }
}

fn cap_timeouts(options: Option<RequestOptions>) -> RequestOptions {
    let options = options.unwrap_or_default();
    let cap = |asked: Option<Duration>, max: Duration| Some(asked.map_or(max, |d| d.min(max)));
    RequestOptions {
        connect_timeout: cap(options.connect_timeout, CONNECT_TIMEOUT),
        first_byte_timeout: cap(options.first_byte_timeout, READ_TIMEOUT),
        between_bytes_timeout: cap(options.between_bytes_timeout, READ_TIMEOUT),
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
        assert_eq!(capped.connect_timeout, Some(CONNECT_TIMEOUT));
        assert_eq!(capped.first_byte_timeout, Some(Duration::from_secs(1)));
        assert_eq!(capped.between_bytes_timeout, Some(READ_TIMEOUT));
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
