//! The issuer's public keys: a JWKS parsed into verification keys, and where it comes from (a
//! URL or a file), kept fresh within bounds.
//!
//! - Only public keys for accepted algorithms are kept: RSA (RS256), P-256 (ES256) and Ed25519
//!   (EdDSA). Symmetric (`oct`) keys, encryption keys and keys of other types are dropped, so no
//!   key from a JWKS can ever verify an HMAC token.
//! - A URL is fetched with connect and total timeouts and a bounded body, over `https` (rustls,
//!   the ring provider named explicitly, the web PKI roots) or `http` to a loopback host.
//! - The set is fetched at start, and again when a token names an unknown `kid` (or finds no
//!   set), at most once per refresh interval (so random `kid`s cannot make Paddock hammer the
//!   issuer; the load at start does not count, so a key rotated in just after it is found). A failed fetch
//!   keeps the last good set; before the first good one there are no keys, and every token is
//!   refused.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{AlgorithmFamily, DecodingKey};

use super::oauth::{Alg, KeysFrom};

/// The largest JWKS read.
pub const MAX_JWKS_BYTES: usize = 1 << 20;
/// Keys kept from one JWKS.
pub const MAX_KEYS: usize = 64;
/// How long connecting (and the TLS handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a whole fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// One verification key.
pub struct Key {
    pub kid: Option<String>,
    /// The algorithm the key is for.
    pub alg: Alg,
    pub key: DecodingKey,
}

/// The usable keys of one JWKS.
#[derive(Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

/// Why a key set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("cannot read `{path}`: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("not a JWKS: {0}")]
    Parse(String),
    #[error("the JWKS has no usable key (RSA, P-256 or Ed25519 public keys for RS256, ES256 or EdDSA)")]
    NoUsableKey,
    #[error("fetching the JWKS failed: {0}")]
    Fetch(String),
}

impl KeySet {
    /// The usable keys of a JWKS document.
    ///
    /// # Errors
    /// Not a JSON object with a `keys` array, or no usable key in it.
    pub fn parse(bytes: &[u8]) -> Result<KeySet, JwksError> {
        let doc: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| JwksError::Parse(e.to_string()))?;
        let entries = doc.get("keys").and_then(serde_json::Value::as_array).ok_or_else(|| JwksError::Parse("no `keys` array".into()))?;
        let keys: Vec<Key> =
            entries.iter().filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok()).filter_map(|jwk| usable(&jwk)).take(MAX_KEYS).collect();
        if keys.is_empty() {
            return Err(JwksError::NoUsableKey);
        }
        Ok(KeySet { keys })
    }

    /// The keys that may verify a token signed with `alg` naming `kid`: the key with that `kid`,
    /// or when the token names none, every key for `alg`.
    pub fn candidates<'a>(&'a self, kid: Option<&'a str>, alg: Alg) -> impl Iterator<Item = &'a Key> + 'a {
        self.keys.iter().filter(move |key| key.alg == alg && (kid.is_none() || key.kid.as_deref() == kid))
    }

    /// Whether a key is named `kid` (whatever its algorithm).
    pub fn knows(&self, kid: &str) -> bool {
        self.keys.iter().any(|key| key.kid.as_deref() == Some(kid))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The verification key of a JWK, if it is a public signing key for an accepted algorithm whose
/// own `alg` (when it names one) agrees.
fn usable(jwk: &Jwk) -> Option<Key> {
    if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
        return None;
    }
    let (alg, key) = match &jwk.algorithm {
        AlgorithmParameters::RSA(params) => (Alg::Rs256, DecodingKey::from_rsa_components(&params.n, &params.e).ok()?),
        AlgorithmParameters::EllipticCurve(params) if params.curve == EllipticCurve::P256 => {
            (Alg::Es256, DecodingKey::from_ec_components(&params.x, &params.y).ok()?)
        }
        AlgorithmParameters::OctetKeyPair(params) if params.curve == EllipticCurve::Ed25519 => (Alg::EdDsa, DecodingKey::from_ed_components(&params.x).ok()?),
        // `oct` keys are secrets: never a resource server's verification key.
        _ => return None,
    };
    if key.family() == AlgorithmFamily::Hmac {
        return None;
    }
    if let Some(named) = &jwk.common.key_algorithm
        && named.to_string() != alg.name()
    {
        return None;
    }
    Some(Key { kid: jwk.common.key_id.clone(), alg, key })
}

/// The key set of one issuer, from its source, refreshed within bounds.
pub struct Jwks {
    source: KeysFrom,
    refresh: Duration,
    current: RwLock<Option<Arc<KeySet>>>,
    /// Held while loading, and the time of the last attempt: one load at a time, and at most one
    /// per `refresh`.
    loading: tokio::sync::Mutex<Option<Instant>>,
    /// Loads attempted (for logs and tests).
    attempts: AtomicU64,
    tls: tokio_rustls::TlsConnector,
    /// How long connecting may take, and a whole fetch.
    timeouts: (Duration, Duration),
}

impl Jwks {
    pub fn new(source: KeysFrom, refresh: Duration) -> Jwks {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
            .unwrap_or_else(|_| unreachable!("ring supports the default protocol versions"));
        Jwks {
            source,
            refresh,
            current: RwLock::new(None),
            loading: tokio::sync::Mutex::new(None),
            attempts: AtomicU64::new(0),
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            timeouts: (CONNECT_TIMEOUT, FETCH_TIMEOUT),
        }
    }

    /// The same source with other timeouts (connecting, and a whole fetch).
    #[must_use]
    pub fn with_timeouts(mut self, connect: Duration, total: Duration) -> Jwks {
        self.timeouts = (connect, total);
        self
    }

    /// The last good key set, if one has been loaded.
    pub fn current(&self) -> Option<Arc<KeySet>> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The first load, at start (requests meanwhile wait for it rather than load again).
    pub async fn load_first(&self) {
        let _loading = self.loading.lock().await;
        self.load_now().await;
    }

    /// Loads the set again unless a refresh was attempted less than the refresh interval ago,
    /// or the set current once any load under way has ended (waited for, not repeated) already
    /// `has` what the caller looks for. Returns the set then current.
    pub async fn refresh(&self, has: impl Fn(&KeySet) -> bool) -> Option<Arc<KeySet>> {
        let mut last = self.loading.lock().await;
        let current = self.current();
        if current.as_deref().is_some_and(&has) || last.is_some_and(|at| at.elapsed() < self.refresh) {
            return current;
        }
        *last = Some(Instant::now());
        self.load_now().await
    }

    async fn load_now(&self) -> Option<Arc<KeySet>> {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        match self.load().await {
            Ok(set) => {
                tracing::info!(source = %self.shown(), keys = set.len(), "loaded the OAuth issuer's keys");
                let set = Arc::new(set);
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&set));
                Some(set)
            }
            Err(error) => {
                let kept = self.current();
                tracing::warn!(
                    source = %self.shown(),
                    error = %crate::escape::Escaped(&crate::escape::shorten(&error.to_string())),
                    "cannot load the OAuth issuer's keys; {}",
                    if kept.is_some() { "the last good set stays in use" } else { "every OAuth token is refused until they load" }
                );
                kept
            }
        }
    }

    /// Loads attempted so far.
    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }

    fn shown(&self) -> String {
        match &self.source {
            KeysFrom::Url(url) => url.clone(),
            KeysFrom::File(path) => path.display().to_string(),
        }
    }

    async fn load(&self) -> Result<KeySet, JwksError> {
        let bytes = match &self.source {
            KeysFrom::File(path) => read_file(path.clone()).await?,
            KeysFrom::Url(url) => {
                let total = self.timeouts.1;
                tokio::time::timeout(total, self.fetch(url)).await.map_err(|_| JwksError::Fetch(format!("no answer within {total:?}")))??
            }
        };
        KeySet::parse(&bytes)
    }

    async fn fetch(&self, url: &str) -> Result<Vec<u8>, JwksError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| JwksError::Fetch(format!("{what}: {e}"));
        let target = JwksUrl::parse(url).map_err(|why| JwksError::Fetch(why.to_owned()))?;
        let addrs: Vec<std::net::SocketAddr> = tokio::time::timeout(self.timeouts.0, tokio::net::lookup_host((target.host.as_str(), target.port)))
            .await
            .map_err(|_| JwksError::Fetch("name lookup timed out".into()))?
            .map_err(|e| fail("name lookup", &e))?
            .collect();
        if !target.https && !addrs.iter().all(|a| a.ip().to_canonical().is_loopback()) {
            return Err(JwksError::Fetch("plain http is only used for loopback addresses".into()));
        }
        let connect = async {
            let mut last = None;
            for addr in &addrs {
                match tokio::net::TcpStream::connect(addr).await {
                    Ok(stream) => return Ok(stream),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.map_or_else(|| JwksError::Fetch("the name has no address".into()), |e| fail("connect", &e)))
        };
        let tcp = tokio::time::timeout(self.timeouts.0, connect).await.map_err(|_| JwksError::Fetch("connect timed out".into()))??;
        let request = http::Request::get(target.path.as_str())
            .header(http::header::HOST, target.authority.as_str())
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, concat!("paddock/", env!("CARGO_PKG_VERSION")))
            .body(Empty::<bytes::Bytes>::new())
            .map_err(|e| fail("request", &e))?;
        let response = if target.https {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(|e| fail("server name", &e))?;
            let tls = tokio::time::timeout(self.timeouts.0, self.tls.connect(name, tcp))
                .await
                .map_err(|_| JwksError::Fetch("TLS handshake timed out".into()))?
                .map_err(|e| fail("TLS", &e))?;
            exchange(TokioIo::new(tls), request).await?
        } else {
            exchange(TokioIo::new(tcp), request).await?
        };
        Ok(response)
    }
}

async fn read_file(path: PathBuf) -> Result<Vec<u8>, JwksError> {
    let shown = path.display().to_string();
    let bytes = tokio::fs::read(&path).await.map_err(|error| JwksError::Read { path: shown.clone(), error })?;
    if bytes.len() > MAX_JWKS_BYTES {
        return Err(JwksError::Parse(format!("`{shown}` is larger than {MAX_JWKS_BYTES} bytes")));
    }
    Ok(bytes)
}

/// Sends `request` on `io` and reads a 200 response's body, at most `MAX_JWKS_BYTES`.
async fn exchange<I>(io: I, request: http::Request<Empty<bytes::Bytes>>) -> Result<Vec<u8>, JwksError>
where
    I: hyper::rt::Read + hyper::rt::Write + Send + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.map_err(|e| JwksError::Fetch(format!("HTTP: {e}")))?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let result = async {
        let response = sender.send_request(request).await.map_err(|e| JwksError::Fetch(format!("HTTP: {e}")))?;
        if response.status() != http::StatusCode::OK {
            return Err(JwksError::Fetch(format!("the issuer answered {}", response.status())));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES).collect().await.map_err(|e| JwksError::Fetch(format!("body: {e}")))?;
        Ok(body.to_bytes().to_vec())
    }
    .await;
    driver.abort();
    result
}

/// A JWKS URL, checked: `https://host[:port]/path`, or `http://` to a loopback host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksUrl {
    https: bool,
    host: String,
    port: u16,
    /// `host[:port]` as written, for the `Host` header.
    authority: String,
    path: String,
}

impl JwksUrl {
    /// # Errors
    /// What is wrong with it, as a sentence fragment.
    pub fn parse(text: &str) -> Result<JwksUrl, &'static str> {
        let uri: http::Uri = text.parse().map_err(|_| "not a URL")?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err("not an http or https URL"),
        };
        let authority = uri.authority().ok_or("has no host")?;
        if authority.as_str().contains('@') {
            return Err("has user info");
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        if !https {
            let loopback = host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.to_canonical().is_loopback());
            if !loopback {
                return Err("uses plain http to a host that is not loopback");
            }
        }
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        Ok(JwksUrl { https, host, port, authority: authority.as_str().to_owned(), path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ed25519 public key (JWK `x`).
    const ED_X: &str = "-HEOZI1r7BCRm7H7OEZPGcLpPGp_x9iEh_9q7s7dtSQ";

    #[test]
    fn only_public_signing_keys_for_accepted_algorithms_are_kept() {
        let doc = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "ed", "alg": "EdDSA"},
            {"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "enc", "use": "enc"},
            {"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "mislabelled", "alg": "RS256"},
            {"kty": "weird", "kid": "w"},
        ]});
        let set = KeySet::parse(doc.to_string().as_bytes()).expect("one usable key");
        assert_eq!(set.len(), 1);
        assert!(set.knows("ed") && !set.knows("hmac") && !set.knows("enc") && !set.knows("mislabelled"));
        assert_eq!(set.candidates(Some("ed"), Alg::EdDsa).count(), 1);
        assert_eq!(set.candidates(None, Alg::EdDsa).count(), 1);
        assert_eq!(set.candidates(Some("ed"), Alg::Rs256).count(), 0);
        let only_secret = serde_json::json!({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"}]});
        assert!(matches!(KeySet::parse(only_secret.to_string().as_bytes()), Err(JwksError::NoUsableKey)));
        assert!(matches!(KeySet::parse(b"[]"), Err(JwksError::Parse(_))));
    }

    #[test]
    fn jwks_urls_are_https_or_loopback_http() {
        for good in ["https://auth.example.com/jwks", "http://127.0.0.1:8080/jwks", "http://localhost/jwks", "http://[::1]:9/k"] {
            assert!(JwksUrl::parse(good).is_ok(), "{good}");
        }
        for bad in ["http://auth.example.com/jwks", "ftp://x/y", "https://user@auth.example.com/", "/jwks", "http://10.0.0.1/jwks"] {
            assert!(JwksUrl::parse(bad).is_err(), "{bad}");
        }
    }

    /// A loopback server that answers every connection with `response` (or holds it unanswered
    /// when `None`); its address.
    async fn server(response: Option<Vec<u8>>) -> std::net::SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let response = response.clone();
                tokio::spawn(async move {
                    let mut head = [0u8; 4096];
                    let _ = socket.read(&mut head).await;
                    match response {
                        Some(bytes) => {
                            let _ = socket.write_all(&bytes).await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                });
            }
        });
        addr
    }

    fn ok(body: &[u8]) -> Vec<u8> {
        let mut response = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes();
        response.extend_from_slice(body);
        response
    }

    #[tokio::test]
    async fn a_url_is_fetched_within_its_timeout_and_size_bound() {
        let good = serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "ed"}]}).to_string();
        let addr = server(Some(ok(good.as_bytes()))).await;
        let jwks = Jwks::new(KeysFrom::Url(format!("http://{addr}/jwks")), Duration::ZERO);
        assert!(jwks.refresh(|_| false).await.is_some_and(|set| set.knows("ed")), "the permitted twin");

        let padded = serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "ed"}], "pad": "x".repeat(MAX_JWKS_BYTES)}).to_string();
        let addr = server(Some(ok(padded.as_bytes()))).await;
        let jwks = Jwks::new(KeysFrom::Url(format!("http://{addr}/jwks")), Duration::ZERO);
        assert!(jwks.refresh(|_| false).await.is_none(), "a body over the bound is refused");

        let addr = server(None).await;
        let jwks =
            Jwks::new(KeysFrom::Url(format!("http://{addr}/jwks")), Duration::ZERO).with_timeouts(Duration::from_millis(200), Duration::from_millis(300));
        let started = std::time::Instant::now();
        assert!(tokio::time::timeout(Duration::from_secs(10), jwks.refresh(|_| false)).await.expect("bounded").is_none(), "an issuer that never answers");
        assert!(started.elapsed() < Duration::from_secs(5), "the fetch gave up after its timeout: {:?}", started.elapsed());

        let refused = Jwks::new(KeysFrom::Url("http://127.0.0.1:1/jwks".into()), Duration::ZERO);
        assert!(refused.refresh(|_| false).await.is_none(), "nobody listening");
    }

    #[tokio::test]
    async fn a_file_source_loads_and_a_refresh_comes_at_most_once_per_interval() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("jwks.json");
        let jwks = Jwks::new(KeysFrom::File(path.clone()), Duration::from_secs(3600));
        assert!(jwks.refresh(|_| false).await.is_none(), "no file yet: no keys");
        std::fs::write(&path, serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "ed"}]}).to_string()).expect("write");
        assert!(jwks.refresh(|_| false).await.is_none(), "within the interval nothing is loaded again");
        assert_eq!(jwks.attempts(), 1);
        let quick = Jwks::new(KeysFrom::File(path.clone()), Duration::ZERO);
        assert!(quick.refresh(|_| false).await.is_some_and(|set| set.knows("ed")));
        std::fs::write(&path, "not json").expect("write");
        assert!(quick.refresh(|_| false).await.is_some_and(|set| set.knows("ed")), "the last good set is kept");
        assert_eq!(quick.attempts(), 2);
    }
}
