//! Who may use the listener: `Host` and `Origin` against DNS rebinding, and the bearer token.
//!
//! - `Host` is read strictly, as an RFC 3986 authority: a host (an IPv6 literal in brackets, an
//!   IPv4 address or a registered name) and an optional numeric port, nothing else (no userinfo,
//!   no path, nothing after `]` but `:port`, ASCII only). A `Host` that does not parse, one sent
//!   more than once, or none on HTTP/1.1 is 400. An absolute-form request target's authority is
//!   read the same way and checked too.
//! - `Host` must then name a loopback host (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`) or
//!   an allowed host; a listener bound to a non-loopback address with no allowed hosts accepts any
//!   `Host` (it requires a token instead). A `Host` not allowed is 403.
//! - `Origin`, when a browser sends one, must be a loopback origin (`http` or `https`) or an
//!   allowed origin; anything else (`null` included, unless allowed) is 403, and a repeated
//!   `Origin` is 400.
//! - Before comparing, names are lowercased and lose one trailing dot (`mcp.example.com.`), IP
//!   addresses take their canonical form, and default ports are dropped: 80 and 443 in `Host`
//!   (behind a proxy the listener cannot know which scheme the client used), the scheme's own
//!   in `Origin` (`https://app.example.com:443`). The allow-lists are normalised the same way
//!   when the policy is built, and an entry that does not parse stops the start. An allowed host
//!   without a port admits any port.
//! - With tokens or OAuth, every request but `/healthz`, `/readyz` and the RFC 9728 metadata
//!   must carry `Authorization: Bearer <token>` (never a query parameter). A bearer that is a
//!   JWT (three dot-separated parts) goes to the OAuth verifier when OAuth is configured;
//!   anything else is compared with the named static tokens, in the same time whatever is
//!   presented (SHA-256 digests compared in constant time). A missing or wrong token is 401 with
//!   `WWW-Authenticate` (with OAuth, naming the metadata: `resource.rs`); an OAuth token without
//!   a required scope is 403 `insufficient_scope`. A refusal is logged with the peer and the
//!   reason, never the token.
//!
//! A body announced (by `Content-Length`) larger than `HttpLimits::max_body` is 413 before any
//! of it is read. Every refusal is logged with the peer's address and what was refused
//! (escaped, and shortened to `jsonrpc::MAX_QUOTED` bytes).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::Shared;
use crate::escape::Escaped;
use crate::identity::Principal;
use crate::identity::oauth::{self, Refusal};
use crate::identity::verifier::Verifier;
use crate::jsonrpc::shortened;

/// The address of the client a request came from (set on every connection).
#[derive(Debug, Clone, Copy)]
pub(super) struct Peer(pub(super) SocketAddr);

/// The shortest token accepted.
const MIN_TOKEN_LEN: usize = 16;

/// The name of the principal holding the single token of `--token-file` or `PADDOCK_HTTP_TOKEN`.
pub const DEFAULT_TOKEN_NAME: &str = "default";

/// A bearer token, kept only as its SHA-256 digest, and the principal who holds it.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
    principal: Principal,
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// Why a token cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    // The cause is part of the message, not a `source`: a report that prints the chain would
    // print it twice.
    #[error("cannot read the token file `{path}`: {error} (fix: put the token on the file's first line as text, e.g. `openssl rand -hex 32 > {path}`)")]
    Read { path: String, error: std::io::Error },
    #[error("the token is shorter than {MIN_TOKEN_LEN} characters (fix: use a long random value, e.g. `openssl rand -hex 32`)")]
    TooShort,
    #[error("the token contains characters a header cannot carry (fix: use letters, digits and `-._~+/=` only, e.g. `openssl rand -hex 32`)")]
    NotATokenValue,
    #[error("cannot read the tokens file `{path}`: {error}")]
    ReadList { path: String, error: std::io::Error },
    #[error("the tokens file `{path}` is not valid: {why} (fix: one `[[token]]` table per token, with `name`, `sha256` and optional `scopes`)")]
    BadList { path: String, why: String },
}

/// The tokens file: `[[token]]` tables.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenList {
    #[serde(default)]
    token: Vec<NamedToken>,
}

/// One named token of the tokens file: its holder's name, the SHA-256 of the token as 64 hex
/// digits (the token itself is never stored), and the scopes it grants.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedToken {
    name: String,
    sha256: String,
    #[serde(default)]
    scopes: Vec<String>,
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
        Ok(BearerToken { digest: Sha256::digest(token.as_bytes()).into(), principal: Principal::token(DEFAULT_TOKEN_NAME, Vec::new()) })
    }

    /// The named tokens of a tokens file (TOML, `[[token]]` tables of `name`, `sha256` and
    /// `scopes`). Names are unique, and so are digests.
    ///
    /// # Errors
    /// The file cannot be read, or does not hold a valid list.
    pub fn list_from_file(path: &Path) -> Result<Vec<BearerToken>, TokenError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| TokenError::ReadList { path: shown.clone(), error })?;
        let bad = |why: String| TokenError::BadList { path: shown.clone(), why };
        let list: TokenList = toml::from_str(&text).map_err(|e| bad(e.message().to_owned()))?;
        let mut tokens: Vec<BearerToken> = Vec::with_capacity(list.token.len());
        for named in list.token {
            if named.name.is_empty() || named.name.len() > 128 || !named.name.chars().all(|c| c.is_ascii_alphanumeric() || "-._@".contains(c)) {
                return Err(bad(format!("token name `{}` must be 1 to 128 letters, digits or `-._@`", shortened(&named.name))));
            }
            let digest = decode_digest(&named.sha256).ok_or_else(|| bad(format!("the `sha256` of `{}` is not 64 hex digits", named.name)))?;
            if tokens.iter().any(|t| t.principal.subject() == named.name) {
                return Err(bad(format!("two tokens are named `{}`", named.name)));
            }
            if tokens.iter().any(|t| t.digest == digest) {
                return Err(bad(format!("the token of `{}` is listed twice", named.name)));
            }
            tokens.push(BearerToken { digest, principal: Principal::token(&named.name, named.scopes) });
        }
        Ok(tokens)
    }

    /// Who holds this token.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// A token from the first line of a file.
    ///
    /// # Errors
    /// The file cannot be read (or is not text), or its token is not usable.
    pub fn from_file(path: &Path) -> Result<BearerToken, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|error| TokenError::Read { path: path.display().to_string(), error })?;
        BearerToken::new(text.lines().next().unwrap_or(""))
    }

    /// Whether `presented` is this token, compared in constant time.
    pub fn admits(&self, presented: &str) -> bool {
        self.matches(&Sha256::digest(presented.as_bytes()).into())
    }

    fn matches(&self, presented: &[u8; 32]) -> bool {
        presented.ct_eq(&self.digest).into()
    }
}

fn decode_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        digest[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(digest)
}

/// The holder of `presented` among `tokens`. Every token is compared, in constant time, so the
/// time taken does not say which token (if any) matched.
fn holder<'a>(tokens: &'a [BearerToken], presented: &[u8]) -> Option<&'a BearerToken> {
    let digest: [u8; 32] = Sha256::digest(presented).into();
    tokens.iter().fold(None, |found, token| if token.matches(&digest) { Some(token) } else { found })
}

/// Who may connect.
#[derive(Debug, Clone, Default)]
pub struct AccessPolicy {
    /// Accept any `Host` (a non-loopback listener without an allow-list; a token is required).
    pub any_host: bool,
    /// Hosts accepted besides loopback ones, normalised.
    hosts: Vec<AllowedHost>,
    /// Origins accepted besides loopback ones, normalised.
    origins: Vec<Origin>,
    /// The bearer tokens an MCP request may carry, each naming its holder; when there are none,
    /// requests are served for the anonymous principal (loopback listeners only).
    pub tokens: Vec<BearerToken>,
    /// The OAuth 2.1 verifier, when the listener is a resource server.
    pub oauth: Option<Arc<Verifier>>,
}

/// The listener cannot be opened with this policy.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(
        "listening on {0}, which is not a loopback address, needs a bearer token or OAuth (fix: pass --token-file FILE or --tokens FILE, or set PADDOCK_HTTP_TOKEN, or configure `[auth]` or --oauth-issuer, or listen on 127.0.0.1)"
    )]
    TokenRequired(SocketAddr),
    #[error("--allow-host `{0}` is not a host with an optional port (fix: a name or address, e.g. `mcp.example.com` or `mcp.example.com:8443`)")]
    BadHost(String),
    #[error("--allow-origin `{0}` is not an origin (fix: scheme, host and optional port as a browser sends it, e.g. `https://app.example.com`)")]
    BadOrigin(String),
}

impl AccessPolicy {
    /// The policy for a listener on `addr`. Hosts are names or addresses with an optional port
    /// (`mcp.example.com`, `mcp.example.com:8443`, `[2001:db8::1]`); origins are as browsers
    /// send them (`https://app.example.com`). Both are normalised as requests are.
    ///
    /// # Errors
    /// A non-loopback address without a token or OAuth; a host or origin that does not parse.
    pub fn for_address(
        addr: SocketAddr,
        hosts: Vec<String>,
        origins: Vec<String>,
        tokens: Vec<BearerToken>,
        oauth: Option<Arc<Verifier>>,
    ) -> Result<AccessPolicy, AccessError> {
        let loopback = addr.ip().is_loopback();
        if !loopback && tokens.is_empty() && oauth.is_none() {
            return Err(AccessError::TokenRequired(addr));
        }
        let hosts = hosts
            .iter()
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
            .map(|h| AllowedHost::parse(h).ok_or_else(|| AccessError::BadHost(h.to_owned())))
            .collect::<Result<Vec<_>, _>>()?;
        let origins = origins
            .iter()
            .map(|o| o.trim())
            .filter(|o| !o.is_empty())
            .map(|o| Origin::parse(o).ok_or_else(|| AccessError::BadOrigin(o.to_owned())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AccessPolicy { any_host: !loopback && hosts.is_empty(), hosts, origins, tokens, oauth })
    }

    fn host_allowed(&self, host: &Authority) -> bool {
        self.any_host || host.is_loopback() || self.hosts.iter().any(|h| h.admits(host))
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        match Origin::parse(origin) {
            Some(Origin::Web { authority, .. }) if authority.is_loopback() => true,
            Some(origin) => self.origins.contains(&origin),
            None => false,
        }
    }
}

/// A `Host` value, or the authority of an origin or of a request target, as RFC 3986 reads
/// it: `host [":" port]`, where host is an IP literal in brackets (IPv6), an IPv4 address or a
/// registered name. No userinfo, no path, ASCII only. IPvFuture literals and IPv6 zone ids are
/// not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    host: Host,
    /// The port, when one is written (an empty port is none).
    port: Option<u16>,
}

/// The host of an authority. Addresses compare as addresses (so by their canonical text), and
/// reading one allocates nothing: most requests name the loopback address they came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    /// Lowercased, without its one trailing dot.
    Name(String),
}

impl std::fmt::Display for Host {
    /// The canonical text: an IPv6 address in brackets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Name(name) => f.write_str(name),
        }
    }
}

impl Authority {
    fn parse(text: &[u8]) -> Option<Authority> {
        // ASCII only: a byte outside it is refused, never decoded or guessed at.
        if !text.is_ascii() {
            return None;
        }
        let text = std::str::from_utf8(text).ok()?;
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (literal, after) = rest.split_once(']')?;
            let ip: Ipv6Addr = literal.parse().ok()?;
            let port = if after.is_empty() { None } else { Some(after.strip_prefix(':')?) };
            (Host::Ip(IpAddr::V6(ip)), port)
        } else {
            let (name, port) = match text.split_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (text, None),
            };
            if !is_reg_name(name) {
                return None;
            }
            let name = match name.strip_suffix('.') {
                Some("") => return None,
                Some(trimmed) => trimmed,
                None => name,
            };
            // Case does not touch digits and dots: an address parses as written.
            match name.parse::<Ipv4Addr>() {
                Ok(ip) => (Host::Ip(IpAddr::V4(ip)), port),
                Err(_) => (Host::Name(name.to_ascii_lowercase()), port),
            }
        };
        let port = match port {
            None | Some("") => None,
            Some(digits) if digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit()) => Some(digits.parse::<u16>().ok()?),
            Some(_) => return None,
        };
        Some(Authority { host, port })
    }

    fn is_loopback(&self) -> bool {
        match &self.host {
            Host::Ip(ip) => ip.to_canonical().is_loopback(),
            Host::Name(name) => name == "localhost" || name.ends_with(".localhost"),
        }
    }

    /// The same authority with `default` written as no port.
    fn without_default_port(self, default: &[u16]) -> Authority {
        Authority { port: self.port.filter(|p| !default.contains(p)), ..self }
    }
}

/// RFC 3986 `reg-name`, not empty: unreserved characters, sub-delimiters and `%XX` escapes.
fn is_reg_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if !bytes.get(i + 1..i + 3).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
                continue;
            }
            b if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&b) => {}
            _ => return false,
        }
        i += 1;
    }
    !bytes.is_empty()
}

/// The ports a `Host` without one may mean: behind a TLS proxy the listener cannot know the
/// scheme the client used, so both defaults count as none.
const DEFAULT_HOST_PORTS: [u16; 2] = [80, 443];

/// An entry of the host allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AllowedHost {
    authority: Authority,
    /// Written without a port: any port is accepted.
    any_port: bool,
}

impl AllowedHost {
    fn parse(text: &str) -> Option<AllowedHost> {
        let authority = Authority::parse(text.as_bytes())?;
        let any_port = authority.port.is_none() && !text.ends_with(':');
        Some(AllowedHost { authority: authority.without_default_port(&DEFAULT_HOST_PORTS), any_port })
    }

    fn admits(&self, host: &Authority) -> bool {
        self.authority.host == host.host && (self.any_port || self.authority.port == host.port.filter(|p| !DEFAULT_HOST_PORTS.contains(p)))
    }
}

/// An origin, normalised for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    /// `http` or `https` with its authority, the scheme's default port written as none.
    Web { https: bool, authority: Authority },
    /// Any other origin (`null`, `chrome-extension://…`), compared as lowercase text.
    Opaque(String),
}

impl Origin {
    /// `None` for an `http` or `https` origin whose authority does not parse.
    fn parse(text: &str) -> Option<Origin> {
        let text = text.trim().trim_end_matches('/');
        let web = |scheme: &str| text.get(..scheme.len()).filter(|s| s.eq_ignore_ascii_case(scheme)).map(|_| &text[scheme.len()..]);
        if let Some(rest) = web("http://") {
            let authority = Authority::parse(rest.as_bytes())?;
            return Some(Origin::Web { https: false, authority: authority.without_default_port(&[80]) });
        }
        if let Some(rest) = web("https://") {
            let authority = Authority::parse(rest.as_bytes())?;
            return Some(Origin::Web { https: true, authority: authority.without_default_port(&[443]) });
        }
        Some(Origin::Opaque(text.to_ascii_lowercase()))
    }
}

/// Why a request's `Host` cannot be read (answered 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum BadHost {
    #[error("it has no Host header")]
    Missing,
    #[error("it has more than one Host header")]
    Repeated,
    #[error("its Host is not a host and an optional port")]
    Malformed,
}

/// An authority a request names, with the bytes it was read from.
type Named<'r> = (Authority, &'r [u8]);

/// The authorities a request names, each with the text it was read from: its `Host` and the
/// authority of an absolute-form target (RFC 9112 has a server use the target's; both are
/// checked). HTTP/1.1 must send `Host`; HTTP/1.0 must name at least one. Nothing is allocated
/// for a request whose names are addresses; the text is decoded only to be logged.
fn named_hosts(request: &Request) -> Result<[Option<Named<'_>>; 2], (BadHost, String)> {
    let mut values = request.headers().get_all(header::HOST).iter();
    let first = values.next();
    if let Some(second) = values.next() {
        let shown = format!("{}, {}", String::from_utf8_lossy(first.map_or(&[][..], HeaderValue::as_bytes)), String::from_utf8_lossy(second.as_bytes()));
        return Err((BadHost::Repeated, shown));
    }
    let named_by = |text: &'_ [u8]| Authority::parse(text).ok_or_else(|| (BadHost::Malformed, String::from_utf8_lossy(text).into_owned()));
    let host = match first {
        Some(value) => Some((named_by(value.as_bytes())?, value.as_bytes())),
        None if request.version() != Version::HTTP_10 => return Err((BadHost::Missing, String::new())),
        None => None,
    };
    let target = match request.uri().authority() {
        Some(target) => Some((named_by(target.as_str().as_bytes())?, target.as_str().as_bytes())),
        None => None,
    };
    if host.is_none() && target.is_none() {
        return Err((BadHost::Missing, String::new()));
    }
    Ok([host, target])
}

/// The middleware: Host, Origin, then the token, whose holder the request is served for (the
/// `Principal` in its extensions).
pub(super) async fn check(State(shared): State<Arc<Shared>>, mut request: Request, next: Next) -> Response {
    match admit(&shared, &mut request).await {
        Err(refusal) => refusal,
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
    }
}

/// Whether a request is a health probe: `/healthz`, or `/readyz` not asking for its detail.
fn is_probe(path: &str, headers: &HeaderMap) -> bool {
    path == "/healthz" || (path == "/readyz" && !super::wants_detail(headers))
}

/// Who a request is served for, or the refusal of a request the guard does not let through.
/// (Taken `&mut` only so the future is `Send`: a request's body is not `Sync`.)
pub(super) async fn admit(shared: &Shared, request: &mut Request) -> Result<Principal, Response> {
    // A probe (`/healthz`, `/readyz` without its detail) serves nobody and says nothing a page
    // could use: it is answered whatever Host a kubelet or a load balancer's check names (a pod
    // address, none at all over HTTP/1.0).
    if !is_probe(request.uri().path(), request.headers())
        && let Some(refusal) = refused_by_name(shared, request)
    {
        return Err(refusal);
    }
    let peer = request.extensions().get::<Peer>().map(|p| p.0);
    let principal = authenticate(shared, request.headers(), request.uri().path(), peer).await?;
    // A body announced larger than the limit is refused before any of it is read.
    let announced = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > shared.options.limits.max_body as u64) {
        let peer = request.extensions().get::<Peer>().map(|p| p.0);
        tracing::warn!(peer = ?peer, bytes = announced, "refused a request: its body is larger than the limit");
        return Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, "the body is larger than the server accepts"));
    }
    Ok(principal)
}

/// The holder of the request's token, or the refusal of a request without a valid one (401;
/// 403 for an OAuth token without a required scope). Without tokens or OAuth, and for the
/// health and metadata endpoints (which serve nobody), the principal is anonymous.
async fn authenticate(shared: &Shared, headers: &HeaderMap, path: &str, peer: Option<SocketAddr>) -> Result<Principal, Response> {
    let access = &shared.options.access;
    // `/readyz` is open for probes; its detail (file paths and why they failed) is not.
    let open = is_probe(path, headers) || path.strip_prefix(super::resource::METADATA_PATH).is_some_and(|rest| rest.is_empty() || rest == "/mcp");
    if (access.tokens.is_empty() && access.oauth.is_none()) || open {
        return Ok(Principal::anonymous());
    }
    let presented = bearer(headers);
    let why = match (presented, &access.oauth) {
        (Some(token), Some(verifier)) if oauth::looks_like_jwt(token) => match verifier.verify(token).await {
            Ok(principal) => return Ok(principal),
            Err(Refusal::InsufficientScope { missing }) => {
                tracing::warn!(peer = ?peer, path = %Escaped(&shortened(path)), missing = %Escaped(&shortened(&missing.join(" "))), "refused a request: its OAuth token lacks a required scope");
                let needed: Vec<&str> = verifier.settings().required_scopes.iter().map(String::as_str).collect();
                return Err(super::resource::insufficient_scope(shared, &needed));
            }
            Err(refusal) => format!("invalid OAuth token: {refusal}"),
        },
        (Some(token), _) => match holder(&access.tokens, token) {
            Some(token) => return Ok(token.principal.clone()),
            None => "wrong bearer token".to_owned(),
        },
        (None, _) => "no bearer token".to_owned(),
    };
    tracing::warn!(peer = ?peer, path = %Escaped(&shortened(path)), reason = %Escaped(&shortened(&why)), "refused a request: {}", if presented.is_some() { "invalid bearer token" } else { "no bearer token" });
    let mut response = refusal(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    let challenge = match &access.oauth {
        Some(verifier) => super::resource::unauthorized_challenge(verifier.settings(), presented.is_some()),
        None if presented.is_some() => HeaderValue::from_static(r#"Bearer realm="paddock", error="invalid_token""#),
        None => HeaderValue::from_static(r#"Bearer realm="paddock""#),
    };
    response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    Err(response)
}

/// The refusal of a request whose `Host` or `Origin` the guard does not let through, if it does not.
fn refused_by_name(shared: &Shared, request: &Request) -> Option<Response> {
    let policy = &shared.options.access;
    let peer = request.extensions().get::<Peer>().map(|p| p.0);
    match named_hosts(request) {
        Ok(named) => {
            if let Some((_, shown)) = named.iter().flatten().find(|(host, _)| !policy.host_allowed(host)) {
                let shown = String::from_utf8_lossy(shown);
                tracing::warn!(peer = ?peer, host = %Escaped(&shortened(&shown)), "refused a request: its Host is not allowed (DNS rebinding protection; --allow-host adds names)");
                return Some(refusal(StatusCode::FORBIDDEN, "Host not allowed"));
            }
        }
        Err((why, shown)) => {
            tracing::warn!(peer = ?peer, host = %Escaped(&shortened(&shown)), "refused a request: {why}");
            return Some(refusal(StatusCode::BAD_REQUEST, "the Host header must be sent once, as a host and an optional port"));
        }
    }
    let headers = request.headers();
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let text = String::from_utf8_lossy(origin.as_bytes());
        if origins.next().is_some() {
            tracing::warn!(peer = ?peer, origin = %Escaped(&shortened(&text)), "refused a request: it has more than one Origin header");
            return Some(refusal(StatusCode::BAD_REQUEST, "the Origin header must be sent at most once"));
        }
        if !origin.as_bytes().is_ascii() || !policy.origin_allowed(&text) {
            tracing::warn!(peer = ?peer, origin = %Escaped(&shortened(&text)), "refused a request: its Origin is not allowed (--allow-origin adds origins)");
            return Some(refusal(StatusCode::FORBIDDEN, "Origin not allowed"));
        }
    }
    None
}

fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(token)
}

/// A refusal with a JSON-RPC error body (no id: no message was read).
pub(super) fn refusal(status: StatusCode, message: &str) -> Response {
    if let Some(metrics) = crate::telemetry::metrics::get() {
        metrics.http_refused(status_label(status));
    }
    super::json_reply(status, crate::jsonrpc::error_line(None, &crate::jsonrpc::ErrorObject::new(crate::jsonrpc::INVALID_REQUEST, message)))
}

/// A refusal's status as a label: one of the statuses the listener refuses with.
fn status_label(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        408 => "408",
        413 => "413",
        429 => "429",
        503 => "503",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> AccessPolicy {
        AccessPolicy::for_address(
            "127.0.0.1:8080".parse().expect("addr"),
            vec!["mcp.example.com".into()],
            vec!["https://app.example.com/".into()],
            vec![],
            None,
        )
        .expect("loopback needs no token")
    }

    fn host(text: &str) -> Option<Authority> {
        Authority::parse(text.as_bytes())
    }

    fn allowed(policy: &AccessPolicy, text: &str) -> bool {
        host(text).is_some_and(|h| policy.host_allowed(&h))
    }

    #[test]
    fn hosts_are_loopback_or_listed() {
        let policy = loopback();
        for host in ["localhost:8080", "LOCALHOST", "127.0.0.1:1", "127.0.0.2", "[::1]:8080", "mcp.example.com", "mcp.example.com:443"] {
            assert!(allowed(&policy, host), "{host}");
        }
        for name in ["evil.example.com", "evil.example.com:8080", "localhost.evil.com", "127.0.0.1.evil.com", "[::2]:80", "10.0.0.1"] {
            assert!(host(name).is_some(), "{name} is a well-formed authority");
            assert!(!allowed(&policy, name), "{name}");
        }
    }

    #[test]
    fn a_host_that_is_not_an_authority_does_not_parse() {
        // Each refused spelling beside a twin that parses.
        for (refused, permitted) in [
            ("[::1]evil.com", "[::1]:8080"),
            ("[::1]:80evil", "[::1]:80"),
            ("[::1", "[::1]"),
            ("::1", "[::1]"),
            ("[fe80::1%25eth0]", "[fe80::1]"),
            ("[v1.fe]", "[::1]"),
            ("[127.0.0.1]", "127.0.0.1"),
            ("user@localhost", "localhost"),
            ("localhost/mcp", "localhost"),
            ("localhost?x", "localhost"),
            ("localhost#x", "localhost"),
            ("local host", "localhost"),
            ("l\u{43e}calhost", "localhost"),
            ("localhost:99999", "localhost:65535"),
            ("localhost:8o", "localhost:80"),
            ("localhost:+80", "localhost:80"),
            ("localhost:8080:1", "localhost:8080"),
            ("local%2", "local%2e"),
            ("", "a"),
            (":8080", "a:8080"),
            (".", "a."),
        ] {
            assert_eq!(host(refused), None, "{refused:?}");
            assert!(host(permitted).is_some(), "{permitted:?}");
        }
        assert_eq!(Authority::parse(b"localhost\xff"), None, "bytes outside ASCII are refused, never decoded");
    }

    #[test]
    fn names_lose_one_trailing_dot_and_addresses_take_their_canonical_form() {
        let policy = loopback();
        for (spelling, canonical) in [
            ("MCP.Example.COM.", "mcp.example.com"),
            ("localhost.", "localhost"),
            ("127.0.0.1.", "127.0.0.1"),
            ("[0:0:0:0:0:0:0:1]", "[::1]"),
            ("[::FFFF:127.0.0.1]", "[::ffff:127.0.0.1]"),
        ] {
            assert_eq!(host(spelling).map(|h| h.host.to_string()), Some(canonical.to_owned()), "{spelling}");
            assert!(allowed(&policy, spelling), "{spelling}");
        }
        assert!(host("mcp.example.com..").is_some() && !allowed(&policy, "mcp.example.com.."), "only one trailing dot is dropped");
        assert!(!allowed(&policy, "127.0.0.01"), "a leading zero makes a name, not a loopback address");
        assert_eq!(host("localhost:").map(|h| h.port), Some(None), "an empty port is none");
    }

    #[test]
    fn default_ports_and_listed_ports_compare_normalised() {
        let policy = AccessPolicy::for_address(
            "127.0.0.1:8080".parse().expect("addr"),
            vec!["any.example.com".into(), "tls.example.com:443".into(), "alt.example.com:8443".into(), "plain.example.com:80".into()],
            vec![],
            vec![],
            None,
        )
        .expect("policy");
        for (permitted, refused) in [
            ("any.example.com:9999", "other.example.com:9999"),
            ("tls.example.com", "tls.example.com:8443"),
            ("tls.example.com:443", "tls.example.com:444"),
            ("tls.example.com.:443", "tls.example.com.:8080"),
            ("alt.example.com:8443", "alt.example.com"),
            ("alt.example.com.:8443", "alt.example.com:443"),
            ("plain.example.com", "plain.example.com:8080"),
            ("plain.example.com:80", "plain.example.com:81"),
        ] {
            assert!(allowed(&policy, permitted), "{permitted}");
            assert!(!allowed(&policy, refused), "{refused}");
        }
    }

    #[test]
    fn origins_are_loopback_or_listed_and_null_is_refused() {
        let policy = loopback();
        for origin in [
            "http://localhost:5173",
            "https://127.0.0.1",
            "http://[::1]:3000",
            "http://localhost.:80",
            "https://app.example.com",
            "HTTPS://APP.EXAMPLE.COM",
            "https://app.example.com:443",
            "https://app.example.com.",
            "https://app.example.com.:443",
        ] {
            assert!(policy.origin_allowed(origin), "{origin}");
        }
        for origin in [
            "null",
            "http://evil.example.com",
            "http://localhost.evil.com",
            "file://localhost",
            "https://app.example.com.evil",
            "",
            "http://app.example.com",
            "http://app.example.com:443",
            "https://app.example.com:8443",
            "https://app.example.com:80",
            "https://user@app.example.com",
            "https://app.example.com/path",
            "https://[::1]evil.com",
            "http://[::1]evil.com",
            "https://app.example.com..",
        ] {
            assert!(!policy.origin_allowed(origin), "{origin}");
        }
    }

    #[test]
    fn the_allow_lists_are_normalised_and_an_entry_that_does_not_parse_stops_the_start() {
        let addr: SocketAddr = "127.0.0.1:8080".parse().expect("addr");
        let policy = AccessPolicy::for_address(
            addr,
            vec![" MCP.example.com. ".into()],
            vec!["HTTPS://App.Example.com:443/".into(), "http://localhost.:80".into(), "null".into()],
            vec![],
            None,
        )
        .expect("policy");
        assert!(allowed(&policy, "mcp.example.com:8080"));
        assert!(policy.origin_allowed("https://app.example.com"));
        assert!(policy.origin_allowed("null"), "an opaque origin is allowed when listed exactly");
        for bad in ["[::1]evil.com", "user@mcp.example.com", "mcp.example.com/mcp", "mcp.example.com:http"] {
            assert!(matches!(AccessPolicy::for_address(addr, vec![bad.into()], vec![], vec![], None), Err(AccessError::BadHost(_))), "{bad}");
        }
        for bad in ["https://app.example.com/mcp", "https://user@app.example.com", "http://[::1", "https://app example.com"] {
            assert!(matches!(AccessPolicy::for_address(addr, vec![], vec![bad.into()], vec![], None), Err(AccessError::BadOrigin(_))), "{bad}");
        }
    }

    #[test]
    fn a_public_address_needs_a_token_and_then_takes_any_host_unless_listed() {
        let public: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        assert!(matches!(AccessPolicy::for_address(public, vec![], vec![], vec![], None), Err(AccessError::TokenRequired(_))));
        let token = BearerToken::new("0123456789abcdef0123").expect("token");
        let open = AccessPolicy::for_address(public, vec![], vec![], vec![token.clone()], None).expect("policy");
        assert!(allowed(&open, "10.0.0.5:8080"));
        let listed = AccessPolicy::for_address(public, vec!["mcp.internal".into()], vec![], vec![token], None).expect("policy");
        let settings = crate::config::auth::AuthDraft {
            issuer: Some("https://auth.example.com".into()),
            resource: Some("https://mcp.example.com/mcp".into()),
            jwks_url: Some("https://auth.example.com/jwks".into()),
            ..Default::default()
        }
        .build()
        .expect("valid")
        .expect("on");
        let oauth = Some(Arc::new(Verifier::new(settings)));
        assert!(AccessPolicy::for_address(public, vec![], vec![], vec![], oauth).is_ok(), "OAuth alone lets the listener leave loopback");
        assert!(allowed(&listed, "mcp.internal:8080"));
        assert!(!allowed(&listed, "10.0.0.5:8080"));
    }

    #[test]
    fn tokens_compare_by_digest_and_weak_ones_are_refused() {
        let token = BearerToken::new("  0123456789abcdef0123\n").expect("token");
        let tokens = [token.clone()];
        assert!(holder(&tokens, b"0123456789abcdef0123").is_some());
        assert!(holder(&tokens, b"0123456789abcdef012").is_none());
        assert!(holder(&tokens, b"").is_none());
        assert_eq!(token.principal().id(), "token default");
        assert!(matches!(BearerToken::new("short"), Err(TokenError::TooShort)));
        assert!(matches!(BearerToken::new("0123456789abcdef\"0123"), Err(TokenError::NotATokenValue)));
        assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
    }

    #[test]
    fn a_token_file_that_is_not_text_is_reported_once_with_the_fix() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("token");
        std::fs::write(&path, [0x9f, 0x00, 0xff, 0x10, 0x80, 0x81]).expect("write");
        let error = BearerToken::from_file(&path).expect_err("binary bytes are not a token");
        assert!(std::error::Error::source(&error).is_none(), "the cause is in the message, so a report that prints causes prints it once");
        let shown = format!("{:#}", anyhow::Error::from(error));
        assert_eq!(shown.matches("valid UTF-8").count(), 1, "{shown}");
        assert!(shown.contains("openssl rand -hex 32"), "{shown}");
        std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").expect("write");
        assert!(BearerToken::from_file(&path).is_ok());
    }

    #[test]
    fn named_tokens_name_their_holders_and_a_bad_list_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tokens.toml");
        let digest = |token: &str| Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect::<String>();
        let list = format!(
            "[[token]]\nname = \"alice\"\nsha256 = \"{}\"\nscopes = [\"tools\"]\n\n[[token]]\nname = \"bob\"\nsha256 = \"{}\"\n",
            digest("alice-token-0123456789"),
            digest("bob-token-0123456789ab")
        );
        std::fs::write(&path, &list).expect("write");
        let tokens = BearerToken::list_from_file(&path).expect("a valid list");
        assert_eq!(holder(&tokens, b"alice-token-0123456789").map(|t| t.principal().id()), Some("token alice"));
        assert_eq!(holder(&tokens, b"alice-token-0123456789").map(|t| t.principal().scopes().to_vec()), Some(vec!["tools".to_owned()]));
        assert_eq!(holder(&tokens, b"bob-token-0123456789ab").map(|t| t.principal().id()), Some("token bob"));
        assert!(holder(&tokens, b"carol-token-0123456789").is_none());
        assert!(!format!("{tokens:?}").contains(&digest("alice-token-0123456789")), "digests are not shown either");

        for (bad, why) in [
            (list.replace("bob", "alice"), "two tokens are named"),
            (list.replace(&digest("bob-token-0123456789ab"), &digest("alice-token-0123456789")), "listed twice"),
            (list.replace(&digest("bob-token-0123456789ab"), "abc"), "64 hex digits"),
            (list.replace("name = \"bob\"", "name = \"b o b\""), "must be 1 to 128"),
            (format!("{list}\nextra = 1\n"), "unknown field"),
        ] {
            std::fs::write(&path, bad).expect("write");
            let error = BearerToken::list_from_file(&path).expect_err("refused").to_string();
            assert!(error.contains(why), "{error}");
        }
    }
}
