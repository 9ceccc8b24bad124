//! The OAuth 2.1 resource server's verifier: a bearer JWT in, a `Principal` or a refusal out.
//!
//! 1. A token verified before, and not yet expired, is found by its SHA-256 digest in a bounded
//!    cache: the hot path is a hash and a map lookup.
//! 2. Otherwise its header's `alg` must be accepted (`none` and `HS*` never are) and its `kid`
//!    known; an unknown `kid` asks the key set to refresh (at most once per interval).
//! 3. The signature is checked with that key only, for that algorithm only, then the claims
//!    (`oauth::check`). Only accepted tokens are cached, until their `exp` plus the leeway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::Principal;
use super::jwks::{Jwks, KeySet};
use super::oauth::{self, Alg, Refusal, Settings};

/// Verified tokens kept at once.
pub const CACHE_ENTRIES: usize = 10_000;

/// Accepted tokens by digest: whom each serves, and until when (Unix seconds).
#[derive(Default)]
struct TokenCache {
    entries: HashMap<[u8; 32], (Principal, u64)>,
}

impl TokenCache {
    fn get(&self, digest: &[u8; 32], now: u64) -> Option<Principal> {
        self.entries.get(digest).filter(|(_, until)| now < *until).map(|(principal, _)| principal.clone())
    }

    /// Keeps `principal` until `until`; when full, expired entries go first, then the ones that
    /// expire soonest.
    fn insert(&mut self, digest: [u8; 32], principal: Principal, until: u64, now: u64, capacity: usize) {
        if self.entries.len() >= capacity && !self.entries.contains_key(&digest) {
            self.entries.retain(|_, (_, u)| now < *u);
            while self.entries.len() >= capacity {
                let Some(soonest) = self.entries.iter().min_by_key(|(_, (_, u))| *u).map(|(k, _)| *k) else { break };
                self.entries.remove(&soonest);
            }
        }
        self.entries.insert(digest, (principal, until));
    }
}

/// Verifies bearer JWTs against one issuer.
pub struct Verifier {
    settings: Settings,
    jwks: Jwks,
    cache: Mutex<TokenCache>,
    capacity: usize,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").field("issuer", &self.settings.issuer).field("resource", &self.settings.resource).finish_non_exhaustive()
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Verifier {
    pub fn new(settings: Settings) -> Verifier {
        let jwks = Jwks::new(settings.keys.clone(), settings.jwks_refresh);
        Verifier { settings, jwks, cache: Mutex::new(TokenCache::default()), capacity: CACHE_ENTRIES }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Loads the key set for the first time (call once at start, on the runtime).
    pub fn start(self: &Arc<Self>) {
        let verifier = Arc::clone(self);
        tokio::spawn(async move {
            verifier.jwks.load_first().await;
        });
    }

    /// Key-set loads attempted so far.
    pub fn key_loads(&self) -> u64 {
        self.jwks.attempts()
    }

    /// The principal a token serves, if it was accepted before and has not expired.
    pub fn cached(&self, token: &[u8]) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(token).into();
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(&digest, now())
    }

    /// The principal `token` serves, or why it is refused.
    ///
    /// # Errors
    /// A `Refusal`: `InsufficientScope` for a valid token that lacks a required scope (403),
    /// anything else for an invalid one (401).
    pub async fn verify(&self, token: &[u8]) -> Result<Principal, Refusal> {
        let digest: [u8; 32] = Sha256::digest(token).into();
        let at = now();
        if let Some(principal) = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(&digest, at) {
            return Ok(principal);
        }
        let header = oauth::header(token)?;
        let alg = oauth::algorithm(&header, &self.settings.algorithms)?;
        let known = |set: &KeySet| header.kid.as_deref().is_none_or(|kid| set.knows(kid));
        let mut keys = self.jwks.current();
        if !keys.as_deref().is_some_and(known) {
            keys = self.jwks.refresh(known).await;
        }
        let Some(keys) = keys else { return Err(Refusal::NoKeys) };
        let claims = verify_signature(&keys, token, header.kid.as_deref(), alg)?;
        let accepted = oauth::check(&self.settings, &claims, now())?;
        let until = accepted.expires.saturating_add(self.settings.leeway.as_secs());
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(digest, accepted.principal.clone(), until, at, self.capacity);
        Ok(accepted.principal)
    }
}

/// The claims of `token`, once a key of `keys` for `alg` (the one named `kid`, when named)
/// verifies its signature.
fn verify_signature(keys: &KeySet, token: &[u8], kid: Option<&str>, alg: Alg) -> Result<Map<String, Value>, Refusal> {
    let algorithm = match alg {
        Alg::Rs256 => Algorithm::RS256,
        Alg::Es256 => Algorithm::ES256,
        Alg::EdDsa => Algorithm::EdDSA,
    };
    // Only the signature and the algorithm are checked here; the claims are `oauth::check`'s.
    let mut validation = Validation::new(algorithm);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let mut candidates = keys.candidates(kid, alg).peekable();
    if candidates.peek().is_none() {
        return Err(Refusal::UnknownKey(kid.unwrap_or("none").to_owned()));
    }
    let mut refusal = Refusal::Signature;
    for key in candidates {
        match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
            Ok(data) => return Ok(data.claims),
            Err(error) => {
                use jsonwebtoken::errors::ErrorKind;
                refusal = match error.kind() {
                    ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => Refusal::Malformed,
                    ErrorKind::Json(_) => Refusal::Claims,
                    _ => Refusal::Signature,
                };
            }
        }
    }
    Err(refusal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    const ED_PKCS8_HEX: &str = "302e020100300506032b6570042204206912b59aa760107b2b087e12d7409fd6201d53b4f416844853a9b7d154482efa";
    const ED_X: &str = "-HEOZI1r7BCRm7H7OEZPGcLpPGp_x9iEh_9q7s7dtSQ";

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        verifier: Verifier,
    }

    fn fixture(extra_keys: Vec<Value>) -> Fixture {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("jwks.json");
        let mut keys = vec![json!({"kty": "OKP", "crv": "Ed25519", "x": ED_X, "kid": "ed"})];
        keys.extend(extra_keys);
        std::fs::write(&path, json!({ "keys": keys }).to_string()).expect("write");
        let settings = Settings {
            issuer: "https://auth.example.com".into(),
            resource: "https://mcp.example.com/mcp".into(),
            audiences: vec!["https://mcp.example.com/mcp".into()],
            algorithms: Alg::ALL.to_vec(),
            leeway: oauth::DEFAULT_LEEWAY,
            required_scopes: vec!["mcp".into()],
            groups_claim: "groups".into(),
            keys: oauth::KeysFrom::File(path),
            jwks_refresh: std::time::Duration::from_secs(3600),
        };
        Fixture { _dir: dir, verifier: Verifier::new(settings) }
    }

    fn claims() -> Value {
        json!({"iss": "https://auth.example.com", "sub": "alice", "aud": "https://mcp.example.com/mcp", "exp": now() + 600, "scope": "mcp"})
    }

    fn signed(claims: &Value, kid: &str) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&hex(ED_PKCS8_HEX))).expect("sign")
    }

    #[tokio::test]
    async fn a_signed_token_is_accepted_cached_and_its_tampered_twin_refused() {
        let f = fixture(vec![]);
        let token = signed(&claims(), "ed");
        assert!(f.verifier.cached(token.as_bytes()).is_none());
        let principal = f.verifier.verify(token.as_bytes()).await.expect("accepted");
        assert_eq!(principal.id(), "https://auth.example.com alice");
        assert_eq!(f.verifier.cached(token.as_bytes()).map(|p| p.id().to_owned()), Some(principal.id().to_owned()));
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut other = claims();
        other["sub"] = json!("mallory");
        parts[1] = b64(other.to_string().as_bytes());
        assert_eq!(f.verifier.verify(parts.join(".").as_bytes()).await.map(|p| p.id().to_owned()), Err(Refusal::Signature));
    }

    #[tokio::test]
    async fn none_and_hmac_with_the_public_key_or_a_listed_secret_are_refused() {
        let secret = b"shared-secret-in-the-jwks";
        let f = fixture(vec![json!({"kty": "oct", "k": b64(secret), "kid": "hmac"})]);
        let body = b64(claims().to_string().as_bytes());
        let none = format!("{}.{body}.", b64(br#"{"alg":"none","kid":"ed"}"#));
        assert_eq!(f.verifier.verify(none.as_bytes()).await.map(|_| ()), Err(Refusal::Algorithm("none".into())));
        for (kid, key) in [("hmac", secret.to_vec()), ("ed", base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(ED_X).expect("x"))] {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some(kid.into());
            let forged = jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(&key)).expect("sign");
            assert_eq!(f.verifier.verify(forged.as_bytes()).await.map(|_| ()), Err(Refusal::Algorithm("HS256".into())), "{kid}");
        }
        assert!(f.verifier.verify(signed(&claims(), "ed").as_bytes()).await.is_ok(), "the permitted twin");
    }

    #[tokio::test]
    async fn an_unknown_kid_is_refused_and_a_missing_scope_is_insufficient_scope() {
        let f = fixture(vec![]);
        assert_eq!(f.verifier.verify(signed(&claims(), "nope").as_bytes()).await.map(|_| ()), Err(Refusal::UnknownKey("nope".into())));
        let mut narrow = claims();
        narrow["scope"] = json!("read");
        assert_eq!(f.verifier.verify(signed(&narrow, "ed").as_bytes()).await.map(|_| ()), Err(Refusal::InsufficientScope { missing: vec!["mcp".into()] }));
        assert!(f.verifier.cached(signed(&narrow, "ed").as_bytes()).is_none(), "refused tokens are not cached");
    }

    #[test]
    fn the_cache_is_bounded_and_drops_expired_entries_first() {
        let mut cache = TokenCache::default();
        let p = Principal::new("i", "s", Vec::new());
        cache.insert([1; 32], p.clone(), 50, 10, 3);
        cache.insert([2; 32], p.clone(), 500, 10, 3);
        cache.insert([3; 32], p.clone(), 400, 10, 3);
        cache.insert([4; 32], p.clone(), 600, 100, 3);
        assert!(cache.get(&[1; 32], 20).is_none(), "the expired one went first");
        cache.insert([5; 32], p.clone(), 700, 100, 3);
        assert_eq!(cache.entries.len(), 3);
        assert!(cache.get(&[3; 32], 100).is_none(), "then the one expiring soonest");
        assert!(cache.get(&[2; 32], 100).is_some() && cache.get(&[2; 32], 500).is_none());
    }

    /// Measures the hot path: a cached OAuth token against a static token's digest comparison.
    /// `cargo test --release -p paddock --lib -- --ignored --nocapture verifier::tests::cost`
    #[tokio::test]
    #[ignore = "a measurement, not a check"]
    async fn cost_of_a_cached_token_against_a_static_one() {
        let f = fixture(vec![]);
        let token = signed(&claims(), "ed");
        // A token the size an RS256 issuer sends (a 256-byte signature, more claims).
        let mut large = claims();
        large["padding"] = json!("x".repeat(600));
        let large = signed(&large, "ed");
        let rounds = 200_000u32;
        let mut cached = Vec::new();
        for token in [&token, &large] {
            f.verifier.verify(token.as_bytes()).await.expect("accepted");
            let started = std::time::Instant::now();
            for _ in 0..rounds {
                std::hint::black_box(f.verifier.verify(std::hint::black_box(token.as_bytes())).await.is_ok());
            }
            cached.push(format!("{} bytes {:?}", token.len(), started.elapsed() / rounds));
        }
        let static_token = b"0123456789abcdef0123456789abcdef";
        let digest: [u8; 32] = Sha256::digest(static_token).into();
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            let presented: [u8; 32] = Sha256::digest(std::hint::black_box(static_token)).into();
            std::hint::black_box(subtle::ConstantTimeEq::ct_eq(&presented[..], &digest[..]).unwrap_u8());
        }
        let fixed = started.elapsed() / rounds;
        let started = std::time::Instant::now();
        let cold_rounds = 2_000u32;
        for _ in 0..cold_rounds {
            f.verifier.cache.lock().unwrap_or_else(|e| e.into_inner()).entries.clear();
            std::hint::black_box(f.verifier.verify(token.as_bytes()).await.is_ok());
        }
        let cold = started.elapsed() / cold_rounds;
        let report = format!("cached OAuth token: {}; static token: {fixed:?}; uncached EdDSA verification: {cold:?}\n", cached.join(", "));
        std::io::Write::write_all(&mut std::io::stderr(), report.as_bytes()).expect("stderr");
    }
}
