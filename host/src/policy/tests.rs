//! Unit tests of the outgoing HTTP matcher and grant defaults.

use super::*;

fn rules(patterns: &[&str]) -> OutboundRules {
    OutboundRules::parse(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).expect("valid patterns")
}

fn allowed(rules: &OutboundRules, scheme: &str, host: &str, port: u16) -> bool {
    rules.check(&Target::new(scheme, host, port)).is_allowed()
}

#[test]
fn default_grant_allows_nothing() {
    let grant = Grant::default();
    assert!(grant.files.is_empty() && grant.env.is_empty() && grant.network.is_empty());
    assert!(!allowed(&grant.network, "https", "example.com", 443));
    assert_eq!(grant.limits, Limits::default());
}

#[test]
fn exact_host_uses_the_scheme_default_port() {
    let r = rules(&["https://api.example.com"]);
    assert!(allowed(&r, "https", "api.example.com", 443));
    assert!(!allowed(&r, "https", "api.example.com", 8443));
    assert!(!allowed(&r, "http", "api.example.com", 443), "scheme mismatch");
    assert!(!allowed(&r, "http", "api.example.com", 80));
    assert!(!allowed(&r, "https", "example.com", 443));
    assert!(!allowed(&r, "https", "api.example.com.evil.net", 443));
    let r = rules(&["http://localhost"]);
    assert!(allowed(&r, "http", "localhost", 80));
}

#[test]
fn matching_ignores_case_and_trailing_dot() {
    let r = rules(&["HTTPS://API.Example.COM"]);
    assert!(allowed(&r, "https", "api.example.com", 443));
    assert!(allowed(&r, "HTTPS", "Api.Example.Com.", 443));
}

#[test]
fn explicit_and_any_ports() {
    let r = rules(&["http://127.0.0.1:8080", "https://files.example:*"]);
    assert!(allowed(&r, "http", "127.0.0.1", 8080));
    assert!(!allowed(&r, "http", "127.0.0.1", 8081));
    assert!(!allowed(&r, "http", "127.0.0.1", 80));
    assert!(allowed(&r, "https", "files.example", 1));
    assert!(allowed(&r, "https", "files.example", 65535));
}

#[test]
fn wildcard_matches_subdomains_only() {
    let r = rules(&["https://*.example.com"]);
    assert!(allowed(&r, "https", "a.example.com", 443));
    assert!(allowed(&r, "https", "a.b.example.com", 443));
    assert!(!allowed(&r, "https", "example.com", 443), "the apex is not a subdomain");
    assert!(!allowed(&r, "https", "evil-example.com", 443));
    assert!(!allowed(&r, "https", "a.example.com.evil.net", 443));
    assert!(!allowed(&r, "https", "a.example.com", 8443));
}

#[test]
fn ip_literals_match_only_when_written() {
    let r = rules(&["http://*.localhost:*", "http://localhost:*"]);
    assert!(!allowed(&r, "http", "127.0.0.1", 80), "a name never covers an IP literal");
    let r = rules(&["http://127.0.0.1:*", "http://[::1]:8080"]);
    assert!(allowed(&r, "http", "127.0.0.1", 9));
    assert!(!allowed(&r, "http", "127.0.0.2", 9));
    assert!(!allowed(&r, "http", "localhost", 9), "an IP rule does not cover names");
    assert!(allowed(&r, "http", "[::1]", 8080));
    assert!(allowed(&r, "http", "::1", 8080));
    assert!(!allowed(&r, "http", "::2", 8080));
}

#[test]
fn bad_patterns_are_all_reported() {
    let bad: Vec<String> = [
        "ftp://example.com",
        "example.com",
        "https://",
        "https://a.com:99999",
        "https://a.com/path",
        "https://*",
        "https://a.*.com",
        "https://*.1.2.3",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    let errors = OutboundRules::parse(&bad).expect_err("all invalid");
    assert_eq!(errors.len(), bad.len(), "{errors:?}");
    assert!(errors[0].to_string().contains("ftp"), "{}", errors[0]);
}
