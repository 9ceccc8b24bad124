//! `[auth]` of `paddock.toml`: the HTTP listener as an OAuth 2.1 resource server.
//!
//! ```toml
//! [auth]
//! issuer = "https://auth.example.com"          # the exact `iss`
//! resource = "https://mcp.example.com/mcp"     # the canonical URI of /mcp (RFC 9728, RFC 8707)
//! jwks_url = "https://auth.example.com/jwks"   # or jwks_file = "./jwks.json"
//! audiences = ["https://mcp.example.com/mcp"]  # default: [resource]
//! algorithms = ["RS256", "ES256", "EdDSA"]     # the default; none and HS* are never accepted
//! leeway = "60s"                               # for exp and nbf
//! scopes = ["mcp"]                             # required of every token
//! groups_claim = "groups"
//! jwks_refresh = "60s"                         # the shortest time between two key-set fetches
//! ```
//!
//! The same settings come from `serve` flags (`--oauth-issuer`, ...); a flag wins over the key.
//! `AuthDraft` holds either before they are checked together by `AuthDraft::build`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::identity::jwks::JwksUrl;
use crate::identity::oauth::{self, Alg, KeysFrom, Settings};

/// `[auth]` as written, before it is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthDraft {
    pub issuer: Option<String>,
    pub resource: Option<String>,
    pub audiences: Option<Vec<String>>,
    pub jwks_url: Option<String>,
    pub jwks_file: Option<PathBuf>,
    pub algorithms: Option<Vec<String>>,
    pub leeway: Option<Duration>,
    pub scopes: Option<Vec<String>>,
    pub groups_claim: Option<String>,
    pub jwks_refresh: Option<Duration>,
}

/// A problem with the settings: the `[auth]` key it concerns, what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthProblem {
    pub key: &'static str,
    pub message: String,
    pub fix: String,
}

/// The `serve` flag that sets `key`.
pub fn flag_of(key: &str) -> &'static str {
    match key {
        "issuer" => "--oauth-issuer",
        "resource" => "--resource",
        "audiences" => "--oauth-audience",
        "jwks_url" => "--oauth-jwks-url",
        "jwks_file" => "--oauth-jwks-file",
        "algorithms" => "--oauth-algorithms",
        "leeway" => "--oauth-leeway",
        "scopes" => "--oauth-scope",
        "groups_claim" => "--oauth-groups-claim",
        "jwks_refresh" => "--oauth-jwks-refresh",
        _ => "",
    }
}

impl AuthDraft {
    /// Whether anything is set.
    pub fn is_empty(&self) -> bool {
        *self == AuthDraft::default()
    }

    /// `self` with every setting of `over` replacing its own.
    #[must_use]
    pub fn overridden_by(self, over: AuthDraft) -> AuthDraft {
        // A source given by flag replaces either source of the file.
        let (jwks_url, jwks_file) =
            if over.jwks_url.is_some() || over.jwks_file.is_some() { (over.jwks_url, over.jwks_file) } else { (self.jwks_url, self.jwks_file) };
        AuthDraft {
            issuer: over.issuer.or(self.issuer),
            resource: over.resource.or(self.resource),
            audiences: over.audiences.or(self.audiences),
            jwks_url,
            jwks_file,
            algorithms: over.algorithms.or(self.algorithms),
            leeway: over.leeway.or(self.leeway),
            scopes: over.scopes.or(self.scopes),
            groups_claim: over.groups_claim.or(self.groups_claim),
            jwks_refresh: over.jwks_refresh.or(self.jwks_refresh),
        }
    }

    /// The checked settings: `None` when nothing is set (OAuth is off).
    ///
    /// # Errors
    /// Every problem found, each with its fix.
    pub fn build(self) -> Result<Option<Settings>, Vec<AuthProblem>> {
        if self.is_empty() {
            return Ok(None);
        }
        let mut problems = Vec::new();
        let mut problem = |key: &'static str, message: String, fix: &str| problems.push(AuthProblem { key, message, fix: fix.to_owned() });
        let issuer = match self.issuer {
            Some(issuer) if web_url(&issuer) => issuer,
            Some(issuer) => {
                problem(
                    "issuer",
                    format!("`{}` is not an http or https URL", crate::escape::shorten(&issuer)),
                    "write the issuer's URL exactly as its tokens' `iss` claim says it",
                );
                String::new()
            }
            None => {
                problem("issuer", "is required for OAuth".into(), "set the authorization server's issuer URL, e.g. `https://auth.example.com`");
                String::new()
            }
        };
        let resource = match self.resource {
            Some(resource) if web_url(&resource) && !resource.contains('#') => resource,
            Some(resource) => {
                problem(
                    "resource",
                    format!("`{}` is not an http or https URL without a fragment", crate::escape::shorten(&resource)),
                    "write the URL clients use for /mcp, e.g. `https://mcp.example.com/mcp`",
                );
                String::new()
            }
            None => {
                problem("resource", "is required for OAuth".into(), "write the canonical URL clients use for /mcp, e.g. `https://mcp.example.com/mcp`");
                String::new()
            }
        };
        let audiences = match self.audiences {
            Some(list) if list.is_empty() || list.iter().any(|a| a.trim().is_empty()) => {
                problem(
                    "audiences",
                    "must be a non-empty list of non-empty strings".into(),
                    "list the `aud` values to accept, or leave it out to accept the resource URL",
                );
                Vec::new()
            }
            Some(list) => list,
            None => vec![resource.clone()],
        };
        let keys = match (self.jwks_url, self.jwks_file) {
            (Some(_), Some(_)) => {
                problem("jwks_url", "and `jwks_file` are both set".into(), "set one source of the issuer's keys");
                None
            }
            (Some(url), None) => match JwksUrl::parse(&url) {
                Ok(_) => Some(KeysFrom::Url(url)),
                Err(why) => {
                    problem("jwks_url", format!("`{}` {why}", crate::escape::shorten(&url)), "use an https URL (plain http only to a loopback address)");
                    None
                }
            },
            (None, Some(file)) => Some(KeysFrom::File(file)),
            (None, None) => {
                problem(
                    "jwks_url",
                    "is required for OAuth (or `jwks_file`)".into(),
                    "set the issuer's JWKS URL, e.g. `https://auth.example.com/.well-known/jwks.json`",
                );
                None
            }
        };
        let algorithms = match self.algorithms {
            None => Alg::ALL.to_vec(),
            Some(names) => {
                let mut algorithms = Vec::new();
                for name in names {
                    match Alg::parse(&name) {
                        Some(alg) if !algorithms.contains(&alg) => algorithms.push(alg),
                        Some(_) => {}
                        None if name.eq_ignore_ascii_case("none") || name.to_ascii_uppercase().starts_with("HS") => problem(
                            "algorithms",
                            format!("`{}` is never accepted: a resource server holds no shared secret", crate::escape::shorten(&name)),
                            "use RS256, ES256 or EdDSA",
                        ),
                        None => problem("algorithms", format!("`{}` is not supported", crate::escape::shorten(&name)), "use RS256, ES256 or EdDSA"),
                    }
                }
                if algorithms.is_empty() {
                    problem("algorithms", "accepts no algorithm".into(), "list at least one of RS256, ES256, EdDSA, or leave it out for all three");
                }
                algorithms
            }
        };
        let leeway = self.leeway.unwrap_or(oauth::DEFAULT_LEEWAY);
        if leeway > Duration::from_secs(600) {
            problem("leeway", format!("{leeway:?} is longer than 10 minutes"), "use a leeway of a few seconds to a minute");
        }
        let scopes = self.scopes.unwrap_or_default();
        if scopes.iter().any(|s| s.is_empty() || s.contains(char::is_whitespace) || s.contains('"') || s.contains('\\')) {
            problem("scopes", "holds a scope that is empty or has a space, quote or backslash".into(), "list each scope as its own string, e.g. [\"mcp\"]");
        }
        let groups_claim = self.groups_claim.unwrap_or_else(|| oauth::DEFAULT_GROUPS_CLAIM.to_owned());
        if groups_claim.is_empty() {
            problem("groups_claim", "is empty".into(), "name the claim that lists a subject's groups, e.g. \"groups\"");
        }
        let jwks_refresh = self.jwks_refresh.unwrap_or(oauth::DEFAULT_JWKS_REFRESH);
        if jwks_refresh < Duration::from_secs(1) || jwks_refresh > Duration::from_secs(86_400) {
            problem("jwks_refresh", format!("{jwks_refresh:?} is not from 1s to 24h"), "use a duration such as \"60s\"");
        }
        match keys {
            Some(keys) if problems.is_empty() => {
                Ok(Some(Settings { issuer, resource, audiences, algorithms, leeway, required_scopes: scopes, groups_claim, keys, jwks_refresh }))
            }
            _ => Err(problems),
        }
    }
}

fn web_url(text: &str) -> bool {
    text.parse::<http::Uri>().is_ok_and(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.authority().is_some_and(|a| !a.as_str().contains('@')))
}

/// Reads `[auth]` (in `file`, whose directory relative paths are resolved against): every
/// key's type is checked here, the settings together by `AuthDraft::build`.
pub(super) fn parse(file: &Path, value: toml::Value, problems: &mut Vec<AuthProblem>) -> AuthDraft {
    let mut draft = AuthDraft::default();
    let toml::Value::Table(table) = value else {
        problems.push(AuthProblem { key: "auth", message: "must be a table".into(), fix: "write `[auth]` with keys below it".into() });
        return draft;
    };
    let base = file.parent().unwrap_or_else(|| Path::new("."));
    for (key, value) in table {
        let string = |problems: &mut Vec<AuthProblem>, key: &'static str| match &value {
            toml::Value::String(s) => Some(s.clone()),
            _ => {
                problems.push(AuthProblem { key, message: "must be a string".into(), fix: "quote the value".into() });
                None
            }
        };
        let list = |problems: &mut Vec<AuthProblem>, key: &'static str| match &value {
            toml::Value::Array(items) if items.iter().all(toml::Value::is_str) => {
                Some(items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect::<Vec<_>>())
            }
            _ => {
                problems.push(AuthProblem { key, message: "must be a list of strings".into(), fix: "write e.g. [\"a\", \"b\"]".into() });
                None
            }
        };
        let duration = |problems: &mut Vec<AuthProblem>, key: &'static str| match value.as_str().and_then(super::values::parse_duration) {
            Some(d) => Some(d),
            None => {
                problems.push(AuthProblem { key, message: format!("`{value}` is not a duration"), fix: "write a duration such as \"60s\"".into() });
                None
            }
        };
        match key.as_str() {
            "issuer" => draft.issuer = string(problems, "issuer"),
            "resource" => draft.resource = string(problems, "resource"),
            "audiences" => draft.audiences = list(problems, "audiences"),
            "jwks_url" => draft.jwks_url = string(problems, "jwks_url"),
            "jwks_file" => draft.jwks_file = string(problems, "jwks_file").map(|p| base.join(p)),
            "algorithms" => draft.algorithms = list(problems, "algorithms"),
            "leeway" => draft.leeway = duration(problems, "leeway"),
            "scopes" => draft.scopes = list(problems, "scopes"),
            "groups_claim" => draft.groups_claim = string(problems, "groups_claim"),
            "jwks_refresh" => draft.jwks_refresh = duration(problems, "jwks_refresh"),
            _ => problems.push(AuthProblem {
                key: "auth",
                message: format!("unknown key `{}`", crate::escape::shorten(&key)),
                fix: "use issuer, resource, audiences, jwks_url, jwks_file, algorithms, leeway, scopes, groups_claim, jwks_refresh".into(),
            }),
        }
    }
    draft
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> AuthDraft {
        AuthDraft {
            issuer: Some("https://auth.example.com".into()),
            resource: Some("https://mcp.example.com/mcp".into()),
            jwks_url: Some("https://auth.example.com/jwks".into()),
            ..AuthDraft::default()
        }
    }

    #[test]
    fn defaults_fill_in_and_the_audience_is_the_resource() {
        let settings = draft().build().expect("valid").expect("on");
        assert_eq!(settings.audiences, ["https://mcp.example.com/mcp"]);
        assert_eq!(settings.algorithms, Alg::ALL);
        assert_eq!(settings.leeway, Duration::from_secs(60));
        assert_eq!(settings.jwks_refresh, Duration::from_secs(60));
        assert_eq!(settings.groups_claim, "groups");
        assert_eq!(AuthDraft::default().build(), Ok(None));
    }

    #[test]
    fn each_mistake_is_reported_with_its_key_and_fix() {
        for (bad, key) in [
            (AuthDraft { issuer: None, ..draft() }, "issuer"),
            (AuthDraft { resource: Some("mcp.example.com/mcp".into()), ..draft() }, "resource"),
            (AuthDraft { jwks_url: None, ..draft() }, "jwks_url"),
            (AuthDraft { jwks_file: Some("k.json".into()), ..draft() }, "jwks_url"),
            (AuthDraft { jwks_url: Some("http://auth.example.com/jwks".into()), ..draft() }, "jwks_url"),
            (AuthDraft { algorithms: Some(vec!["HS256".into()]), ..draft() }, "algorithms"),
            (AuthDraft { algorithms: Some(vec!["none".into(), "RS256".into()]), ..draft() }, "algorithms"),
            (AuthDraft { audiences: Some(vec![]), ..draft() }, "audiences"),
            (AuthDraft { scopes: Some(vec!["a b".into()]), ..draft() }, "scopes"),
            (AuthDraft { leeway: Some(Duration::from_secs(3600)), ..draft() }, "leeway"),
        ] {
            let problems = bad.clone().build().expect_err("refused");
            assert!(problems.iter().any(|p| p.key == key && !p.fix.is_empty()), "{bad:?}: {problems:?}");
        }
        let everything = AuthDraft { issuer: Some("x".into()), ..AuthDraft::default() }.build().expect_err("refused");
        assert!(everything.len() >= 3, "every problem at once: {everything:?}");
    }

    #[test]
    fn a_flag_wins_over_the_file_and_a_key_source_replaces_either() {
        let file = AuthDraft { jwks_file: Some("k.json".into()), scopes: Some(vec!["a".into()]), ..draft() };
        let flags =
            AuthDraft { jwks_url: Some("https://other.example.com/jwks".into()), issuer: Some("https://other.example.com".into()), ..AuthDraft::default() };
        let merged = AuthDraft { jwks_url: None, ..file }.overridden_by(flags);
        assert_eq!(merged.issuer.as_deref(), Some("https://other.example.com"));
        assert_eq!(merged.jwks_file, None);
        assert_eq!(merged.scopes, Some(vec!["a".to_owned()]));
    }

    #[test]
    fn the_table_is_read_with_types_checked_and_paths_resolved() {
        let table: toml::Value = toml::from_str(
            "issuer = \"https://auth.example.com\"\nresource = \"https://mcp.example.com/mcp\"\njwks_file = \"keys/jwks.json\"\nleeway = \"5s\"\nscopes = [\"mcp\"]\n",
        )
        .expect("toml");
        let mut problems = Vec::new();
        let draft = parse(Path::new("/etc/paddock/paddock.toml"), table, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(draft.jwks_file, Some(PathBuf::from("/etc/paddock/keys/jwks.json")));
        assert_eq!(draft.leeway, Some(Duration::from_secs(5)));
        let bad: toml::Value = toml::from_str("issuer = 1\nscopes = \"mcp\"\nleeway = \"soon\"\ncolour = \"blue\"\n").expect("toml");
        let mut problems = Vec::new();
        parse(Path::new("paddock.toml"), bad, &mut problems);
        let keys: Vec<&str> = problems.iter().map(|p| p.key).collect();
        assert_eq!(keys.len(), 4, "{problems:?}");
    }
}
