//! Outgoing HTTP rules: `scheme://host[:port]` patterns, parsed once, matched by a pure function.
//!
//! Scheme, host and port all count. A pattern without a port means the scheme's default port
//! (80 for http, 443 for https); `:*` means any port. `*.example.com` matches any subdomain of
//! `example.com` but neither `example.com` itself nor `evil-example.com`. An IP literal target
//! only matches a pattern that names that literal or a range containing it (`10.0.0.0/8`,
//! `[fd00::/8]`); a wildcard never matches an IP.
//!
//! Matching the name is half the check: `vet_address` judges each address the name resolved
//! to. A special-use address (loopback, private, link-local, metadata, see `address`) is only
//! reached when a rule for that scheme and port names it (an IP literal or range, or `localhost`
//! for loopback).

use std::net::{IpAddr, Ipv6Addr};

use ipnet::IpNet;

use super::address::{SpecialUse, canonical, net_contains, special_use};
use super::{Decision, PolicyError};

/// The parsed outgoing HTTP allow-list of one plugin. Empty by default: nothing is allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressRules {
    rules: Vec<Rule>,
}

/// Where an outgoing request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http` or `https`, lowercase.
    pub scheme: String,
    /// The host name or IP literal (IPv6 without brackets), lowercase.
    pub host: String,
    pub port: u16,
}

impl Target {
    /// A target, normalising case, a trailing dot and IPv6 brackets.
    pub fn new(scheme: &str, host: &str, port: u16) -> Target {
        let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
        Target { scheme: scheme.to_ascii_lowercase(), host: host.to_ascii_lowercase(), port }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.scheme, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    scheme: String,
    host: HostPattern,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// A name, exactly.
    Exact(String),
    /// An IP literal, exactly.
    Ip(IpAddr),
    /// Any IP literal in this range.
    Range(IpNet),
    /// Any strict subdomain of this name.
    Subdomains(String),
}

impl EgressRules {
    /// Parses patterns; every bad pattern is reported.
    pub fn parse(patterns: &[String]) -> Result<EgressRules, Vec<PolicyError>> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for pattern in patterns {
            match parse_rule(pattern) {
                Ok(rule) => rules.push(rule),
                Err(message) => errors.push(PolicyError { pattern: pattern.clone(), message }),
            }
        }
        if errors.is_empty() { Ok(EgressRules { rules }) } else { Err(errors) }
    }

    /// The rules as patterns, in the order they were written (for `paddock inspect`).
    pub fn patterns(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|rule| {
                let host = match &rule.host {
                    HostPattern::Exact(name) => name.clone(),
                    HostPattern::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
                    HostPattern::Ip(ip) => ip.to_string(),
                    HostPattern::Range(IpNet::V6(net)) => format!("[{net}]"),
                    HostPattern::Range(net) => net.to_string(),
                    HostPattern::Subdomains(name) => format!("*.{name}"),
                };
                match rule.port {
                    Some(port) => format!("{}://{host}:{port}", rule.scheme),
                    None => format!("{}://{host}:*", rule.scheme),
                }
            })
            .collect()
    }

    /// True when no target is allowed.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether a request to `target` is allowed.
    pub fn check(&self, target: &Target) -> Decision {
        if self.rules.iter().any(|rule| rule.matches(target)) { Decision::Allow } else { Decision::Deny }
    }

    /// Whether `ip`, one of the addresses `target` resolved to, may be dialled: an ordinary
    /// internet address may; a special-use one only when a rule for the target's scheme and port
    /// names it (its IP literal, a range containing it, or `localhost` for a loopback address
    /// of the target `localhost`). The error says what the address is.
    pub fn vet_address(&self, target: &Target, ip: IpAddr) -> Result<(), SpecialUse> {
        match special_use(ip) {
            Some(why) if !self.names_address(target, ip) => Err(why),
            _ => Ok(()),
        }
    }

    fn names_address(&self, target: &Target, ip: IpAddr) -> bool {
        self.rules.iter().filter(|rule| rule.scheme == target.scheme && rule.port.is_none_or(|p| p == target.port)).any(|rule| match &rule.host {
            HostPattern::Ip(named) => canonical(*named) == canonical(ip),
            HostPattern::Range(net) => net_contains(net, ip),
            HostPattern::Exact(name) => name == "localhost" && target.host == "localhost" && canonical(ip).is_loopback(),
            HostPattern::Subdomains(_) => false,
        })
    }
}

impl Rule {
    fn matches(&self, target: &Target) -> bool {
        if self.scheme != target.scheme {
            return false;
        }
        if self.port.is_some_and(|port| port != target.port) {
            return false;
        }
        let target_ip = target.host.parse::<IpAddr>().ok();
        match (&self.host, target_ip) {
            (HostPattern::Ip(ip), Some(target_ip)) => canonical(*ip) == canonical(target_ip),
            (HostPattern::Range(net), Some(target_ip)) => net_contains(net, target_ip),
            (HostPattern::Exact(name), None) => *name == target.host,
            (HostPattern::Subdomains(suffix), None) => {
                target.host.len() > suffix.len() + 1
                    && target.host.ends_with(suffix.as_str())
                    && target.host.as_bytes()[target.host.len() - suffix.len() - 1] == b'.'
            }
            _ => false,
        }
    }
}

/// What is wrong with a network pattern or target as the operator wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternProblem {
    #[error("expected `scheme://host[:port]`, for example `https://api.example.com`")]
    NoScheme,
    #[error("scheme `{0}` is not supported: use `http` or `https`")]
    Scheme(String),
    #[error("only `scheme://host[:port]` is allowed: no path, query or user info")]
    NotJustAuthority,
    #[error("port `{0}` is not a number from 1 to 65535 or `*`")]
    Port(String),
    #[error("the host is missing")]
    NoHost,
    #[error("`{0}` is not an IPv6 address")]
    Ipv6(String),
    #[error("`{written}` has host bits set: write `{meant}`")]
    HostBits { written: IpNet, meant: IpNet },
    #[error("`{0}` is not an IP range (write it as `10.0.0.0/8` or `[fd00::/8]`)")]
    Range(String),
    #[error("unclosed `[` in an IPv6 address")]
    UnclosedBracket,
    #[error("unexpected `{0}` after the host")]
    AfterHost(String),
    #[error("`{0}` is not a host name (a `*.` wildcard may only start it)")]
    HostName(String),
    #[error("`{0}` is neither a host name nor an IP address (IP addresses cannot be wildcarded)")]
    NumericName(String),
    #[error("name one port (`:*` is not allowed here)")]
    AnyPort,
    #[error("name one host (no `*.` wildcard or IP range)")]
    ManyHosts,
}

/// Parses one exact target, `scheme://host[:port]` (no wildcard, no `:*`, no range), as a
/// secret names it.
pub fn parse_exact_target(text: &str) -> Result<Target, PatternProblem> {
    let rule = parse_rule(text)?;
    let port = rule.port.ok_or(PatternProblem::AnyPort)?;
    let host = match rule.host {
        HostPattern::Exact(name) => name,
        HostPattern::Ip(ip) => ip.to_string(),
        HostPattern::Subdomains(_) | HostPattern::Range(_) => return Err(PatternProblem::ManyHosts),
    };
    Ok(Target::new(&rule.scheme, &host, port))
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

fn parse_rule(pattern: &str) -> Result<Rule, PatternProblem> {
    let (scheme, rest) = pattern.split_once("://").ok_or(PatternProblem::NoScheme)?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(PatternProblem::Scheme(scheme));
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['?', '#', '@']) {
        return Err(PatternProblem::NotJustAuthority);
    }
    let (host, port) = split_host_port(rest)?;
    if host.contains('/') && parse_range(host).is_none() {
        return Err(PatternProblem::NotJustAuthority);
    }
    let port = match port {
        None => Some(default_port(&scheme)),
        Some("*") => None,
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| PatternProblem::Port(p.to_owned()))?),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() {
        return Err(PatternProblem::NoHost);
    }
    let host = if let Some(range) = parse_range(&host) {
        let net = range?;
        HostPattern::Range(net)
    } else if let Some(suffix) = host.strip_prefix("*.") {
        check_name(suffix)?;
        HostPattern::Subdomains(suffix.to_owned())
    } else if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        HostPattern::Ip(IpAddr::V6(v6.parse::<Ipv6Addr>().map_err(|_| PatternProblem::Ipv6(v6.to_owned()))?))
    } else if let Ok(ip) = host.parse::<IpAddr>() {
        HostPattern::Ip(ip)
    } else {
        check_name(&host)?;
        HostPattern::Exact(host)
    };
    Ok(Rule { scheme, host, port })
}

/// A CIDR range host (`10.0.0.0/8`, `[fd00::/8]`): `None` when `host` is not written as one.
fn parse_range(host: &str) -> Option<Result<IpNet, PatternProblem>> {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let (addr, _) = bare.split_once('/')?;
    addr.parse::<IpAddr>().ok()?;
    Some(match bare.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => Ok(net),
        Ok(net) => Err(PatternProblem::HostBits { written: net, meant: net.trunc() }),
        Err(_) => Err(PatternProblem::Range(bare.to_owned())),
    })
}

fn split_host_port(rest: &str) -> Result<(&str, Option<&str>), PatternProblem> {
    if rest.starts_with('[') {
        let end = rest.find(']').ok_or(PatternProblem::UnclosedBracket)?;
        let (host, after) = rest.split_at(end + 1);
        match after {
            "" => Ok((host, None)),
            _ => after.strip_prefix(':').map(|p| (host, Some(p))).ok_or_else(|| PatternProblem::AfterHost(after.to_owned())),
        }
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => Ok((host, Some(port))),
            None => Ok((rest, None)),
        }
    }
}

fn check_name(name: &str) -> Result<(), PatternProblem> {
    let ok = !name.is_empty()
        && name.split('.').all(|label| !label.is_empty() && label.len() <= 63 && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if !ok {
        return Err(PatternProblem::HostName(name.to_owned()));
    }
    // No top-level domain is numeric: `1.2.3` or `*.0.0.1` is a mistyped or wildcarded IP.
    if name.rsplit('.').next().is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit())) {
        return Err(PatternProblem::NumericName(name.to_owned()));
    }
    Ok(())
}
