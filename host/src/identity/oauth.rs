//! OAuth 2.1 access tokens as a resource server reads them: the settings a token is held to, the
//! token's header, and the checks of its claims. Pure: no keys, no I/O, and the time is an
//! argument, so every check can be tested exactly.
//!
//! - `iss` must equal the configured issuer exactly;
//! - `aud` (a string or an array) must name one of the accepted audiences exactly (RFC 8707: by
//!   default the canonical URI of `/mcp`);
//! - `exp` is required and `nbf` checked when present, both with the leeway;
//! - `sub` is required: the principal is `iss sub`;
//! - scopes come from `scope` (space-separated) or `scp` (an array, or a string), and every
//!   required scope must be granted (else the refusal is `insufficient_scope`, a 403);
//! - groups come from the configured claim (default `groups`), an array of strings or a string.

use std::time::Duration;

use serde_json::{Map, Value};

use super::Principal;

/// Default tolerance for clocks that disagree, applied to `exp` and `nbf`.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
/// Default claim naming the groups a subject belongs to.
pub const DEFAULT_GROUPS_CLAIM: &str = "groups";
/// Default shortest time between two fetches of the key set.
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(60);

/// A signature algorithm Paddock accepts. `none` and every HMAC algorithm are not among them:
/// a resource server holds no shared secret, and a key from a JWKS is never an HMAC key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Alg {
    Rs256,
    Es256,
    EdDsa,
}

impl Alg {
    /// Every accepted algorithm, the default set.
    pub const ALL: [Alg; 3] = [Alg::Rs256, Alg::Es256, Alg::EdDsa];

    /// The algorithm a JOSE `alg` names, if Paddock accepts it (case-sensitive, as JOSE is).
    pub fn parse(name: &str) -> Option<Alg> {
        match name {
            "RS256" => Some(Alg::Rs256),
            "ES256" => Some(Alg::Es256),
            "EdDSA" => Some(Alg::EdDsa),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }
}

/// Where the issuer's public keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeysFrom {
    /// A JWKS URL: `https`, or `http` to a loopback host.
    Url(String),
    /// A JWKS file.
    File(std::path::PathBuf),
}

/// What a token must be to be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The exact `iss`.
    pub issuer: String,
    /// The canonical URI of this server's `/mcp` endpoint (RFC 9728 `resource`).
    pub resource: String,
    /// The accepted `aud` values, compared exactly; by default `[resource]`.
    pub audiences: Vec<String>,
    /// The accepted algorithms (a non-empty subset of `Alg::ALL`).
    pub algorithms: Vec<Alg>,
    pub leeway: Duration,
    /// Scopes every request's token must grant.
    pub required_scopes: Vec<String>,
    /// The claim holding the subject's groups.
    pub groups_claim: String,
    pub keys: KeysFrom,
    /// The shortest time between two fetches of the key set (an unknown `kid` asks for one).
    pub jwks_refresh: Duration,
}

/// A token's protected header: the fields verification reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub alg: String,
    pub kid: Option<String>,
}

/// Why a token is refused. Each says what was expected first; what the token said comes after,
/// shortened (at most `MAX_SHOWN` audiences), so a log line cut short still names what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("not a JWT (three base64url parts with a JSON header)")]
    Malformed,
    #[error("algorithm `{0}` is not accepted")]
    Algorithm(String),
    #[error("no key for this token (kid `{0}`)")]
    UnknownKey(String),
    #[error("no key set has been loaded from the issuer yet")]
    NoKeys,
    #[error("bad signature")]
    Signature,
    #[error("the claims are not a JSON object")]
    Claims,
    #[error("the issuer must be `{expected}`, not `{found}`")]
    Issuer { expected: String, found: String },
    #[error("no audience (expected one of {expected:?})")]
    NoAudience { expected: Vec<String> },
    #[error("the audience must be one of {expected:?}, not {found:?}")]
    Audience { expected: Vec<String>, found: Vec<String> },
    #[error("no `exp`")]
    NoExpiry,
    #[error("expired")]
    Expired,
    #[error("not valid yet (`nbf`)")]
    NotYetValid,
    #[error("no `sub`")]
    NoSubject,
    #[error("missing scope {missing:?}")]
    InsufficientScope { missing: Vec<String> },
}

/// Audiences of a token shown in a refusal, at most.
pub const MAX_SHOWN: usize = 4;

/// A token that passed every check: whom it serves, and until when (Unix seconds, `exp`).
#[derive(Debug, Clone)]
pub struct Accepted {
    pub principal: Principal,
    pub expires: u64,
}

/// Whether `token` has the shape of a JWS compact serialisation: three parts, dot-separated.
pub fn looks_like_jwt(token: &[u8]) -> bool {
    token.iter().filter(|&&b| b == b'.').count() == 2
}

/// The protected header of a compact JWS.
///
/// # Errors
/// `Malformed` when the first part is not base64url of a JSON object with a string `alg`.
pub fn header(token: &[u8]) -> Result<Header, Refusal> {
    use base64::Engine as _;
    let first = token.split(|&b| b == b'.').next().ok_or(Refusal::Malformed)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(first).map_err(|_| Refusal::Malformed)?;
    let json: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|_| Refusal::Malformed)?;
    let alg = json.get("alg").and_then(Value::as_str).ok_or(Refusal::Malformed)?.to_owned();
    let kid = match json.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(Refusal::Malformed),
    };
    Ok(Header { alg, kid })
}

/// The accepted algorithm `header` names, or the refusal: `none`, every `HS*` and anything not
/// in `accepted` is refused before any key is looked at.
///
/// # Errors
/// `Algorithm` naming what the header said.
pub fn algorithm(header: &Header, accepted: &[Alg]) -> Result<Alg, Refusal> {
    Alg::parse(&header.alg).filter(|alg| accepted.contains(alg)).ok_or_else(|| Refusal::Algorithm(header.alg.clone()))
}

/// The scopes a token grants: `scope` split on spaces, or `scp` (an array of strings, or a
/// space-separated string). Empty parts are dropped; duplicates are kept once.
pub fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |scope: &str| {
        if !scope.is_empty() && !found.iter().any(|s| s == scope) {
            found.push(scope.to_owned());
        }
    };
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(text)) => text.split(' ').for_each(&mut add),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).for_each(&mut add),
            _ => {}
        }
    }
    found
}

/// The audiences a token names (`aud` as a string or an array of strings).
pub fn audiences(claims: &Map<String, Value>) -> Vec<String> {
    match claims.get("aud") {
        Some(Value::String(aud)) => vec![aud.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Whether a token naming `found` is meant for a server accepting `accepted`: some audience is
/// accepted, compared exactly (no case folding, no trailing-slash forgiveness).
pub fn audience_accepted(found: &[String], accepted: &[String]) -> bool {
    found.iter().any(|aud| accepted.iter().any(|ok| ok == aud))
}

/// A NumericDate claim in whole seconds (fractions dropped); `None` when absent or not a
/// non-negative number.
fn seconds(claims: &Map<String, Value>, claim: &str) -> Option<Result<u64, Refusal>> {
    let value = claims.get(claim)?;
    Some(match value {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(|f| f as u64)).ok_or(Refusal::Claims),
        _ => Err(Refusal::Claims),
    })
}

/// Whether `now` (Unix seconds) lies in the token's window: before `exp` plus the leeway, and
/// not before `nbf` less the leeway.
///
/// # Errors
/// `NoExpiry`, `Expired`, `NotYetValid`.
pub fn in_window(exp: Option<u64>, nbf: Option<u64>, now: u64, leeway: Duration) -> Result<(), Refusal> {
    let leeway = leeway.as_secs();
    let exp = exp.ok_or(Refusal::NoExpiry)?;
    if now >= exp.saturating_add(leeway) {
        return Err(Refusal::Expired);
    }
    if nbf.is_some_and(|nbf| now.saturating_add(leeway) < nbf) {
        return Err(Refusal::NotYetValid);
    }
    Ok(())
}

/// Checks the claims of a token whose signature has been verified, at `now` (Unix seconds).
///
/// # Errors
/// The first check that fails, in the order of the module's list; a missing scope last, so a
/// 403 only ever answers a token that is otherwise valid.
pub fn check(settings: &Settings, claims: &Map<String, Value>, now: u64) -> Result<Accepted, Refusal> {
    let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or_default();
    if issuer != settings.issuer {
        return Err(Refusal::Issuer { expected: settings.issuer.clone(), found: crate::escape::shorten(issuer) });
    }
    let found = audiences(claims);
    if found.is_empty() {
        return Err(Refusal::NoAudience { expected: settings.audiences.clone() });
    }
    if !audience_accepted(&found, &settings.audiences) {
        let found = found.iter().take(MAX_SHOWN).map(|aud| crate::escape::shorten(aud)).collect();
        return Err(Refusal::Audience { expected: settings.audiences.clone(), found });
    }
    let exp = seconds(claims, "exp").transpose()?;
    let nbf = seconds(claims, "nbf").transpose()?;
    in_window(exp, nbf, now, settings.leeway)?;
    let subject = claims.get("sub").and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or(Refusal::NoSubject)?;
    let granted = scopes(claims);
    let missing: Vec<String> = settings.required_scopes.iter().filter(|s| !granted.contains(s)).cloned().collect();
    if !missing.is_empty() {
        return Err(Refusal::InsufficientScope { missing });
    }
    let groups = match claims.get(&settings.groups_claim) {
        Some(Value::String(group)) => vec![group.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let principal = Principal::new(issuer, subject, granted).with_groups(groups);
    Ok(Accepted { principal, expires: exp.unwrap_or_default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn settings() -> Settings {
        Settings {
            issuer: "https://auth.example.com".into(),
            resource: "https://mcp.example.com/mcp".into(),
            audiences: vec!["https://mcp.example.com/mcp".into()],
            algorithms: Alg::ALL.to_vec(),
            leeway: DEFAULT_LEEWAY,
            required_scopes: vec!["mcp".into()],
            groups_claim: "groups".into(),
            keys: KeysFrom::File("jwks.json".into()),
            jwks_refresh: DEFAULT_JWKS_REFRESH,
        }
    }

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    const NOW: u64 = 1_800_000_000;

    fn good() -> Value {
        json!({"iss": "https://auth.example.com", "sub": "alice", "aud": "https://mcp.example.com/mcp", "exp": NOW + 600, "scope": "mcp read", "groups": ["ops"]})
    }

    #[test]
    fn a_good_token_names_its_principal_scopes_and_groups() {
        let accepted = check(&settings(), &claims(good()), NOW).expect("accepted");
        assert_eq!(accepted.principal.id(), "https://auth.example.com alice");
        assert_eq!(accepted.principal.scopes(), ["mcp", "read"]);
        assert_eq!(accepted.principal.groups(), ["ops"]);
        assert_eq!(accepted.expires, NOW + 600);
    }

    #[test]
    fn each_claim_refused_beside_its_permitted_twin() {
        let mut s = settings();
        s.groups_claim = "roles".into();
        for (patch, refused) in [
            (json!({"iss": "https://auth.example.com/"}), Some("issuer")),
            (json!({"iss": "https://evil.example.com"}), Some("issuer")),
            (json!({"aud": "https://mcp.example.com/mcp/"}), Some("audience")),
            (json!({"aud": "HTTPS://mcp.example.com/mcp"}), Some("audience")),
            (json!({"aud": ["client-id", "https://mcp.example.com/mcp"]}), None),
            (json!({"aud": ["client-id"]}), Some("audience")),
            (json!({"aud": null}), Some("audience")),
            (json!({"exp": null}), Some("exp")),
            (json!({"exp": "soon"}), Some("claims")),
            (json!({"exp": NOW - 61}), Some("expired")),
            (json!({"exp": NOW - 59}), None),
            (json!({"nbf": NOW + 61}), Some("not valid yet")),
            (json!({"nbf": NOW + 59}), None),
            (json!({"sub": ""}), Some("sub")),
            (json!({"sub": 7}), Some("sub")),
            (json!({"scope": "read"}), Some("scope")),
            (json!({"scope": null, "scp": ["mcp"]}), None),
            (json!({"scope": "mcpx"}), Some("scope")),
        ] {
            let mut token = good();
            for (k, v) in claims(patch.clone()) {
                if v.is_null() {
                    token.as_object_mut().expect("object").remove(&k);
                } else {
                    token[k] = v;
                }
            }
            match (check(&s, &claims(token), NOW), refused) {
                (Ok(_), None) => {}
                (Err(why), Some(word)) => assert!(why.to_string().contains(word), "{patch}: {why}"),
                (result, expected) => panic!("{patch}: {result:?}, expected refusal {expected:?}"),
            }
        }
    }

    #[test]
    fn a_wrong_audience_says_which_was_expected() {
        let mut token = good();
        token["aud"] = json!("client-id");
        let why = check(&settings(), &claims(token), NOW).expect_err("refused").to_string();
        assert!(why.contains("https://mcp.example.com/mcp") && why.contains("client-id"), "{why}");
    }

    #[test]
    fn none_and_hmac_are_refused_whatever_the_accepted_list() {
        for alg in ["none", "None", "HS256", "HS384", "HS512", "rs256", "PS256", ""] {
            let h = Header { alg: alg.into(), kid: None };
            assert_eq!(algorithm(&h, &Alg::ALL), Err(Refusal::Algorithm(alg.into())), "{alg}");
        }
        let h = Header { alg: "ES256".into(), kid: None };
        assert_eq!(algorithm(&h, &Alg::ALL), Ok(Alg::Es256));
        assert!(algorithm(&h, &[Alg::Rs256]).is_err(), "an algorithm outside the configured set is refused");
    }

    #[test]
    fn headers_are_read_strictly() {
        use base64::Engine as _;
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let token = format!("{}.e30.sig", enc(r#"{"alg":"RS256","kid":"k1"}"#));
        assert_eq!(header(token.as_bytes()), Ok(Header { alg: "RS256".into(), kid: Some("k1".into()) }));
        for bad in [
            format!("{}.e30.sig", enc(r#"{"kid":"k1"}"#)),
            format!("{}.e30.sig", enc(r#"{"alg":"RS256","kid":1}"#)),
            "%%%.e30.sig".into(),
            format!("{}.e30.sig", enc("[]")),
        ] {
            assert_eq!(header(bad.as_bytes()), Err(Refusal::Malformed), "{bad}");
        }
        assert!(looks_like_jwt(b"a.b.c") && !looks_like_jwt(b"0123456789abcdef0123") && !looks_like_jwt(b"a.b.c.d"));
    }

    proptest! {
        #[test]
        fn audiences_match_only_exactly(aud in "[a-zA-Z0-9:/._-]{1,40}", other in "[a-zA-Z0-9:/._-]{1,40}") {
            let accepted = vec![aud.clone()];
            prop_assert!(audience_accepted(std::slice::from_ref(&aud), &accepted));
            prop_assert_eq!(audience_accepted(std::slice::from_ref(&other), &accepted), other == aud);
            let slash = format!("{aud}/");
            prop_assert!(!audience_accepted(&[slash], &accepted));
            let upper = aud.to_uppercase();
            prop_assert_eq!(audience_accepted(std::slice::from_ref(&upper), &accepted), upper == aud);
        }

        #[test]
        fn scope_strings_split_on_spaces_and_arrays_are_taken_whole(parts in proptest::collection::vec("[a-z:._-]{1,12}", 0..8), spaces in proptest::collection::vec(1usize..4, 8)) {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                text.push_str(&" ".repeat(spaces[i]));
                text.push_str(part);
            }
            let mut unique: Vec<String> = Vec::new();
            for p in &parts {
                if !unique.contains(p) {
                    unique.push(p.clone());
                }
            }
            prop_assert_eq!(scopes(&claims(json!({"scope": text}))), unique.clone());
            prop_assert_eq!(scopes(&claims(json!({"scp": parts}))), unique);
        }

        #[test]
        fn the_window_is_exp_and_nbf_widened_by_the_leeway(exp in 1_000u64..2_000_000, nbf in proptest::option::of(0u64..2_000_000), now in 0u64..2_100_000, leeway in 0u64..300) {
            let result = in_window(Some(exp), nbf, now, Duration::from_secs(leeway));
            let expired = now >= exp + leeway;
            let early = nbf.is_some_and(|nbf| now + leeway < nbf);
            prop_assert_eq!(result.is_ok(), !expired && !early);
            if expired {
                prop_assert_eq!(result, Err(Refusal::Expired));
            }
            prop_assert_eq!(in_window(None, nbf, now, Duration::from_secs(leeway)), Err(Refusal::NoExpiry));
        }
    }
}
