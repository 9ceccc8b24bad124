//! `Principal`: who a request is served for, fixed when it is admitted. An issuer (a token
//! issuer's URL, `token` for a named static token, `local` for the user on stdio, `anonymous`
//! for an HTTP listener without authentication) and a subject, with the scopes the credential
//! granted and the groups it belongs to. Everything a request leaves behind (a legacy session, a task, a sealed request
//! state) is bound to its principal's `id`. `ClientKey` names a client of an HTTP listener by
//! its address: what its shares, and the tasks of its requests that authenticated nobody, count
//! against.
//!
//! An OAuth 2.1 access token becomes a principal here too: `oauth` holds the settings and the
//! pure checks of a token's claims, `jwks` the issuer's keys and where they come from, and
//! `verifier` puts them together (with a cache of accepted tokens) for the HTTP guard.

pub mod jwks;
pub mod oauth;
pub mod verifier;

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

/// The issuer of named static tokens.
pub const TOKEN_ISSUER: &str = "token";
/// The issuer of the principal on stdio.
pub const LOCAL_ISSUER: &str = "local";
/// The issuer of requests to an HTTP listener that authenticates nobody (loopback only).
pub const ANONYMOUS_ISSUER: &str = "anonymous";

/// One client of an HTTP listener, as its shares and the tasks of its requests without a session
/// are counted: its address, an IPv6 client by its /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The client's address (an IPv6 client's /64, as its first address).
    pub fn ip(self) -> IpAddr {
        self.0
    }

    /// The client at `ip`: an IPv4-mapped address as IPv4, an IPv6 address by its /64.
    pub fn of(ip: IpAddr) -> ClientKey {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey(IpAddr::V4(v4)),
                None => {
                    let segments = v6.segments();
                    ClientKey(IpAddr::V6(Ipv6Addr::new(segments[0], segments[1], segments[2], segments[3], 0, 0, 0, 0)))
                }
            },
            v4 => ClientKey(v4),
        }
    }
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
            v4 => write!(f, "{v4}"),
        }
    }
}

/// Who a request is served for. Two principals are the same when their ids are: a refreshed
/// token with other scopes or groups still owns what its subject owns.
#[derive(Clone)]
pub struct Principal {
    issuer: Arc<str>,
    subject: Arc<str>,
    scopes: Arc<[String]>,
    /// The groups the credential names (a token's `groups` claim, a named token's `groups`),
    /// which tool policy may match on.
    groups: Arc<[String]>,
    /// `issuer subject`: an issuer never holds a space (a URL or one of the words above), so
    /// two principals have the same id only when both parts are the same.
    id: Arc<str>,
}

impl Principal {
    /// A principal `subject` of `issuer`, granted `scopes`. A space in `issuer` is replaced
    /// (`%20`), so the id stays unambiguous whatever a configuration or a token says.
    pub fn new(issuer: &str, subject: &str, scopes: Vec<String>) -> Principal {
        let issuer: Arc<str> = Arc::from(issuer.replace(' ', "%20"));
        let id = Arc::from(format!("{issuer} {subject}"));
        Principal { issuer, subject: Arc::from(subject), scopes: Arc::from(scopes), groups: Arc::from(Vec::new()), id }
    }

    /// The same principal, a member of `groups`.
    #[must_use]
    pub fn with_groups(mut self, groups: Vec<String>) -> Principal {
        self.groups = Arc::from(groups);
        self
    }

    /// The user on stdio, named `name`.
    pub fn local(name: &str) -> Principal {
        Principal::new(LOCAL_ISSUER, name, Vec::new())
    }

    /// The holder of the named static token `name`.
    pub fn token(name: &str, scopes: Vec<String>) -> Principal {
        Principal::new(TOKEN_ISSUER, name, scopes)
    }

    /// Whoever reaches an HTTP listener that authenticates nobody.
    pub fn anonymous() -> Principal {
        // Built once: every request of an open listener is served for it.
        static ANONYMOUS: std::sync::LazyLock<Principal> = std::sync::LazyLock::new(|| Principal::new(ANONYMOUS_ISSUER, "", Vec::new()));
        ANONYMOUS.clone()
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn subject(&self) -> &str {
        &self.subject
    }

    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// Whether the credential granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// `issuer subject`: what ownership is compared by, and what a plugin is told as the caller.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// The transport a request came in on, as audit records and logs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Stdio,
    /// Streamable HTTP: a legacy session or a 2026-07-28 request.
    StreamableHttp,
    /// The legacy HTTP+SSE pair.
    Sse,
    WebSocket,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::StreamableHttp => "streamable-http",
            Transport::Sse => "sse",
            Transport::WebSocket => "websocket",
        }
    }
}

impl PartialEq for Principal {
    fn eq(&self, other: &Principal) -> bool {
        self.id == other.id
    }
}

impl Eq for Principal {}

impl std::hash::Hash for Principal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Principal").field(&self.id()).finish()
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::escape::shorten(self.id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_whenever_issuer_or_subject_does() {
        let pairs = [("https://a.example", "b c"), ("https://a.example b", "c"), ("token", "alice"), ("local", "alice"), ("a b", "c")];
        let ids: Vec<String> = pairs.iter().map(|(issuer, subject)| Principal::new(issuer, subject, Vec::new()).id().to_owned()).collect();
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(Principal::token("alice", vec!["tools".into()]).id(), "token alice");
        assert_eq!(Principal::token("alice", Vec::new()).scopes().len(), 0);
    }
}
