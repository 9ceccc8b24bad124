//! Who may use the listener: `Host` and `Origin` against DNS rebinding, and the bearer token.
//!
//! - `Host` must name a loopback address (`localhost`, `127.0.0.1`, `[::1]`) or an allowed host;
//!   a listener bound to a non-loopback address with no allowed hosts accepts any `Host` (it
//!   requires a token instead). A wrong `Host` is 403.
//! - `Origin`, when a browser sends one, must be a loopback origin or an allowed origin; anything
//!   else (`null` included) is 403.
//! - With a token, every request but `/healthz` and `/readyz` must carry
//!   `Authorization: Bearer <token>`; the comparison takes the same time whatever is presented
//!   (SHA-256 digests compared in constant time). A missing or wrong token is 401 with
//!   `WWW-Authenticate`.
//!
//! A body announced (by `Content-Length`) larger than `HttpLimits::max_body` is 413 before any
//! of it is read. Every refusal is logged with the peer's address and what was refused
//! (escaped).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::Shared;
use crate::escape::Escaped;

/// The address of the client a request came from (set on every connection).
#[derive(Debug, Clone, Copy)]
pub(super) struct Peer(pub(super) SocketAddr);

/// The shortest token accepted.
const MIN_TOKEN_LEN: usize = 16;

/// A bearer token, kept only as its SHA-256 digest.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// Why a token cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the token is shorter than {MIN_TOKEN_LEN} characters (fix: use a long random value, e.g. `openssl rand -hex 32`)")]
    TooShort,
    #[error("the token contains characters a header cannot carry (fix: use letters, digits and `-._~+/=` only)")]
    NotATokenValue,
}

impl BearerToken {
    /// A token from its text (surrounding whitespace ignored).
    ///
    /// # Errors
    /// Too short, or not valid in an `Authorization` header.
    pub fn new(token: &str) -> Result<BearerToken, TokenError> {
        let token = token.trim();
        if token.len() < MIN_TOKEN_LEN {
            return Err(TokenError::TooShort);
        }
        if !token.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b)) {
            return Err(TokenError::NotATokenValue);
        }
        Ok(BearerToken { digest: Sha256::digest(token.as_bytes()).into() })
    }

    /// A token from the first line of a file.
    ///
    /// # Errors
    /// The file cannot be read, or its token is not usable.
    pub fn from_file(path: &Path) -> Result<BearerToken, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read { path: path.display().to_string(), source })?;
        BearerToken::new(text.lines().next().unwrap_or(""))
    }

    fn matches(&self, presented: &[u8]) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        digest.ct_eq(&self.digest).into()
    }
}

/// Who may connect.
#[derive(Debug, Clone, Default)]
pub struct AccessPolicy {
    /// Accept any `Host` (a non-loopback listener without an allow-list; a token is required).
    pub any_host: bool,
    /// Hosts accepted besides loopback ones: a name (`mcp.example.com`) or a name and port.
    pub hosts: Vec<String>,
    /// Origins accepted besides loopback ones, exactly as browsers send them
    /// (`https://app.example.com`).
    pub origins: Vec<String>,
    /// The bearer token every MCP request must carry.
    pub token: Option<BearerToken>,
}

/// The listener cannot be opened with this policy.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(
        "listening on {0}, which is not a loopback address, needs a bearer token (fix: pass --token-file FILE or set PADDOCK_HTTP_TOKEN, or listen on 127.0.0.1)"
    )]
    TokenRequired(SocketAddr),
}

impl AccessPolicy {
    /// The policy for a listener on `addr`.
    ///
    /// # Errors
    /// A non-loopback address without a token.
    pub fn for_address(addr: SocketAddr, hosts: Vec<String>, origins: Vec<String>, token: Option<BearerToken>) -> Result<AccessPolicy, AccessError> {
        let loopback = addr.ip().is_loopback();
        if !loopback && token.is_none() {
            return Err(AccessError::TokenRequired(addr));
        }
        let hosts: Vec<String> = hosts.into_iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect();
        let origins = origins.into_iter().map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase()).filter(|o| !o.is_empty()).collect();
        Ok(AccessPolicy { any_host: !loopback && hosts.is_empty(), hosts, origins, token })
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let authority = authority.trim().to_ascii_lowercase();
        let name = host_name(&authority);
        self.any_host || is_loopback_name(name) || self.hosts.iter().any(|h| *h == authority || *h == name)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.origins.contains(&origin) {
            return true;
        }
        let Some((scheme, authority)) = origin.split_once("://") else { return false };
        matches!(scheme, "http" | "https") && !authority.contains('/') && is_loopback_name(host_name(authority))
    }
}

/// The host part of an authority: without the port, without IPv6 brackets.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority.rsplit_once(':').filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit())).map_or(authority, |(name, _)| name)
}

fn is_loopback_name(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The middleware: Host, Origin, then the token.
pub(super) async fn check(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let policy = &shared.options.access;
    let peer = request.extensions().get::<Peer>().map(|p| p.0);
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if policy.host_allowed(host) => {}
        other => {
            tracing::warn!(peer = ?peer, host = %Escaped(other.unwrap_or("")), "refused a request: its Host is not allowed (DNS rebinding protection; --allow-host adds names)");
            return refusal(StatusCode::FORBIDDEN, "Host not allowed");
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("");
        if !policy.origin_allowed(text) {
            tracing::warn!(peer = ?peer, origin = %Escaped(text), "refused a request: its Origin is not allowed (--allow-origin adds origins)");
            return refusal(StatusCode::FORBIDDEN, "Origin not allowed");
        }
    }
    let public = matches!(request.uri().path(), "/healthz" | "/readyz");
    if let Some(token) = &policy.token
        && !public
    {
        match bearer(headers) {
            Some(presented) if token.matches(presented) => {}
            presented => {
                tracing::warn!(peer = ?peer, path = %Escaped(request.uri().path()), "refused a request: {}", if presented.is_some() { "wrong bearer token" } else { "no bearer token" });
                let mut response = refusal(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
                let challenge = if presented.is_some() { r#"Bearer realm="paddock", error="invalid_token""# } else { r#"Bearer realm="paddock""# };
                response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
                return response;
            }
        }
    }
    // A body announced larger than the limit is refused before any of it is read.
    let announced = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > shared.options.limits.max_body as u64) {
        tracing::warn!(peer = ?peer, bytes = announced, "refused a request: its body is larger than the limit");
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, "the body is larger than the server accepts");
    }
    next.run(request).await
}

fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(token)
}

/// A refusal with a JSON-RPC error body (no id: no message was read).
pub(super) fn refusal(status: StatusCode, message: &str) -> Response {
    super::json_reply(status, crate::jsonrpc::error_line(None, &crate::jsonrpc::ErrorObject::new(crate::jsonrpc::INVALID_REQUEST, message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> AccessPolicy {
        AccessPolicy::for_address("127.0.0.1:8080".parse().expect("addr"), vec!["mcp.example.com".into()], vec!["https://app.example.com/".into()], None)
            .expect("loopback needs no token")
    }

    #[test]
    fn hosts_are_loopback_or_listed() {
        let policy = loopback();
        for host in ["localhost:8080", "LOCALHOST", "127.0.0.1:1", "[::1]:8080", "mcp.example.com", "mcp.example.com:443"] {
            assert!(policy.host_allowed(host), "{host}");
        }
        for host in ["evil.example.com", "evil.example.com:8080", "localhost.evil.com", "127.0.0.1.evil.com", "", "[::2]:80"] {
            assert!(!policy.host_allowed(host), "{host}");
        }
    }

    #[test]
    fn origins_are_loopback_or_listed_and_null_is_refused() {
        let policy = loopback();
        for origin in ["http://localhost:5173", "https://127.0.0.1", "http://[::1]:3000", "https://app.example.com", "HTTPS://APP.EXAMPLE.COM"] {
            assert!(policy.origin_allowed(origin), "{origin}");
        }
        for origin in ["null", "http://evil.example.com", "http://localhost.evil.com", "file://localhost", "https://app.example.com.evil", ""] {
            assert!(!policy.origin_allowed(origin), "{origin}");
        }
    }

    #[test]
    fn a_public_address_needs_a_token_and_then_takes_any_host_unless_listed() {
        let public: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        assert!(matches!(AccessPolicy::for_address(public, vec![], vec![], None), Err(AccessError::TokenRequired(_))));
        let token = BearerToken::new("0123456789abcdef0123").expect("token");
        let open = AccessPolicy::for_address(public, vec![], vec![], Some(token.clone())).expect("policy");
        assert!(open.host_allowed("10.0.0.5:8080"));
        let listed = AccessPolicy::for_address(public, vec!["mcp.internal".into()], vec![], Some(token)).expect("policy");
        assert!(listed.host_allowed("mcp.internal:8080"));
        assert!(!listed.host_allowed("10.0.0.5:8080"));
    }

    #[test]
    fn tokens_compare_by_digest_and_weak_ones_are_refused() {
        let token = BearerToken::new("  0123456789abcdef0123\n").expect("token");
        assert!(token.matches(b"0123456789abcdef0123"));
        assert!(!token.matches(b"0123456789abcdef012"));
        assert!(!token.matches(b""));
        assert!(matches!(BearerToken::new("short"), Err(TokenError::TooShort)));
        assert!(matches!(BearerToken::new("0123456789abcdef\"0123"), Err(TokenError::NotATokenValue)));
        assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
    }
}
