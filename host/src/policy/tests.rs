//! Unit tests of the outgoing HTTP matcher and grant defaults.

use super::*;

fn rules(patterns: &[&str]) -> EgressRules {
    EgressRules::parse(&patterns.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>()).expect("valid patterns")
}

fn allowed(rules: &EgressRules, scheme: &str, host: &str, port: u16) -> bool {
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
    let bad: Vec<String> =
        ["ftp://example.com", "example.com", "https://", "https://a.com:99999", "https://a.com/path", "https://*", "https://a.*.com", "https://*.1.2.3"]
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
    let errors = EgressRules::parse(&bad).expect_err("all invalid");
    assert_eq!(errors.len(), bad.len(), "{errors:?}");
    assert!(errors[0].to_string().contains("ftp"), "{}", errors[0]);
}

#[test]
fn ranges_cover_ip_literals_in_them_and_nothing_else() {
    let r = rules(&["http://10.0.0.0/8:*", "https://[fd00::/8]"]);
    assert!(allowed(&r, "http", "10.20.30.40", 8080));
    assert!(!allowed(&r, "http", "11.0.0.1", 8080));
    assert!(!allowed(&r, "http", "ten.example", 8080), "a range never covers a name");
    assert!(allowed(&r, "https", "fd12::1", 443));
    assert!(!allowed(&r, "https", "fd12::1", 8443));
    assert_eq!(r.patterns(), vec!["http://10.0.0.0/8:*".to_owned(), "https://[fd00::/8]:443".to_owned()]);
    let errors = EgressRules::parse(&["http://10.0.0.1/8".to_owned(), "http://10.0.0.0/33".to_owned()]).expect_err("bad ranges");
    assert!(errors[0].message.to_string().contains("10.0.0.0/8"), "{}", errors[0]);
    assert_eq!(errors.len(), 2);
}

fn vetted(rules: &EgressRules, target: &str, ip: &str) -> Result<(), SpecialUse> {
    let (scheme, rest) = target.split_once("://").expect("scheme");
    let (host, port) = rest.rsplit_once(':').expect("port");
    rules.vet_address(&Target::new(scheme, host, port.parse().expect("port")), ip.parse().expect("ip"))
}

#[test]
fn a_granted_name_never_leads_to_a_special_address() {
    let r = rules(&["https://api.example.com", "http://*.example.net:*"]);
    assert_eq!(vetted(&r, "https://api.example.com:443", "93.184.216.34"), Ok(()));
    assert_eq!(vetted(&r, "https://api.example.com:443", "127.0.0.1"), Err("loopback"));
    assert_eq!(vetted(&r, "https://api.example.com:443", "::ffff:127.0.0.1"), Err("loopback"));
    assert_eq!(vetted(&r, "https://api.example.com:443", "169.254.169.254"), Err("cloud metadata"));
    assert_eq!(vetted(&r, "http://a.example.net:8080", "10.0.0.7"), Err("private"));
    assert_eq!(vetted(&r, "http://a.example.net:8080", "fd00:ec2::254"), Err("cloud metadata"));
}

#[test]
fn special_addresses_are_reached_only_where_the_grant_names_them() {
    let r = rules(&["http://127.0.0.1:8080", "http://10.0.0.0/8:*", "http://localhost:9000", "http://api.example.com:8080"]);
    assert_eq!(vetted(&r, "http://127.0.0.1:8080", "127.0.0.1"), Ok(()));
    assert_eq!(vetted(&r, "http://127.0.0.1:8081", "127.0.0.1"), Err("loopback"), "the literal is named for one port");
    assert_eq!(vetted(&r, "http://10.1.2.3:5", "10.1.2.3"), Ok(()));
    assert_eq!(vetted(&r, "http://localhost:9000", "127.0.0.1"), Ok(()));
    assert_eq!(vetted(&r, "http://localhost:9000", "::1"), Ok(()));
    assert_eq!(vetted(&r, "http://localhost:9000", "10.9.9.9"), Ok(()), "named by the range rule");
    assert_eq!(vetted(&r, "http://localhost:9000", "192.168.0.1"), Err("private"), "localhost names loopback only");
    assert_eq!(vetted(&r, "https://localhost:9000", "127.0.0.1"), Err("loopback"), "another scheme");
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn label() -> impl Strategy<Value = String> {
        "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any text parses or is refused with an error; none panics.
        #[test]
        fn any_pattern_parses_or_is_refused(pattern in ".{0,40}") {
            let _ = EgressRules::parse(&[pattern]);
        }

        /// A wildcard covers exactly the strict subdomains of its suffix.
        #[test]
        fn wildcards_cover_strict_subdomains_only(
            suffix in proptest::collection::vec(label(), 1..3),
            prefix in proptest::collection::vec(label(), 0..3),
            other in label(),
        ) {
            let suffix = format!("{}.test", suffix.join("."));
            let r = rules(&[&format!("https://*.{suffix}")]);
            let host = if prefix.is_empty() { suffix.clone() } else { format!("{}.{suffix}", prefix.join(".")) };
            prop_assert_eq!(allowed(&r, "https", &host, 443), !prefix.is_empty());
            let glued = format!("{other}{suffix}");
            prop_assert!(!allowed(&r, "https", &glued, 443), "{} is not a subdomain", glued);
            prop_assert!(!allowed(&r, "http", &host, 443));
        }

        /// A rule for one port never allows another, and `:*` allows all.
        #[test]
        fn ports_are_exact_unless_any(port in 1u16.., asked in 1u16..) {
            let r = rules(&[&format!("http://svc.test:{port}")]);
            prop_assert_eq!(allowed(&r, "http", "svc.test", asked), port == asked);
            let any = rules(&["http://svc.test:*"]);
            prop_assert!(allowed(&any, "http", "svc.test", asked));
        }

        /// An IPv4 range covers exactly the addresses whose leading bits it names.
        #[test]
        fn ranges_cover_exactly_their_addresses(base in any::<u32>(), len in 0u8..=32, ip in any::<u32>()) {
            let net = ipnet::Ipv4Net::new(std::net::Ipv4Addr::from(base), len).expect("prefix").trunc();
            let r = rules(&[&format!("http://{net}:*")]);
            let ip = std::net::Ipv4Addr::from(ip);
            prop_assert_eq!(allowed(&r, "http", &ip.to_string(), 80), net.contains(&ip));
        }

        /// A special-use address is never reached through a name, whatever the grant's names.
        #[test]
        fn names_never_reach_special_addresses(ip in any::<u32>(), name in label()) {
            let ip = std::net::IpAddr::V4(std::net::Ipv4Addr::from(ip));
            let r = rules(&[&format!("https://{name}.test"), &format!("https://*.{name}.test")]);
            let target = Target::new("https", &format!("{name}.test"), 443);
            prop_assert_eq!(r.vet_address(&target, ip).is_ok(), special_use(ip).is_none());
        }
    }
}
