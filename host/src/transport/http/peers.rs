//! Fair shares of the listener: how many connections, legacy sessions and long-lived streams one
//! client may hold, and how fast it may open sessions, so that no client takes what the others
//! need.
//!
//! A client is told apart by its address (an IPv6 address by its /64, which one host usually
//! holds whole). A connection from a proxy the operator declared trusted (`--trusted-proxy`) is
//! not held to the per-client connection cap, and its requests are charged to the address the
//! proxy forwarded (the rightmost `X-Forwarded-For` entry that is not itself a trusted proxy).
//! A forwarded address from anyone else is ignored: it would let a client pose as many.
//!
//! Every share is an RAII `Share`: taken when the connection, session or stream opens and given
//! back when it is dropped, so the counts cannot drift. The table holds an entry only while its
//! client holds something.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::Response;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;

use super::Shared;

/// How much of the listener one client may hold.
#[derive(Debug, Clone)]
pub struct PeerLimits {
    /// Connections open at once from one client (a trusted proxy is exempt).
    pub connections: usize,
    /// Legacy sessions (Streamable HTTP and HTTP+SSE) one client holds at once.
    pub sessions: usize,
    /// Long-lived streams (a session's GET stream, an HTTP+SSE stream, a 2026-07-28 streamed
    /// reply such as `subscriptions/listen`) one client holds open at once.
    pub streams: usize,
    /// Legacy sessions one client may open per second, on average.
    pub sessions_per_second: u32,
    /// Legacy sessions one client may open in a burst.
    pub session_burst: u32,
    /// Bytes of request bodies one client may have being read at once: its share of the
    /// memory budget for bodies, so one client's slow or huge bodies never spend what others
    /// need.
    pub body_bytes: usize,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Vec<IpNet>,
}

impl PeerLimits {
    /// Shares of a listener with room for `connections` and `sessions` in all: an eighth of
    /// each per client (at least 8), 64 streams, 64 new sessions at once and 10 a second (a test suite or an IDE reconnecting opens dozens), and
    /// 64 MiB of bodies being read (`HttpOptions::new` sets it to an eighth of the budget).
    pub fn for_totals(connections: usize, sessions: usize) -> PeerLimits {
        PeerLimits {
            connections: (connections / 8).max(8).min(connections.max(1)),
            sessions: (sessions / 8).max(8).min(sessions.max(1)),
            streams: 64,
            sessions_per_second: 10,
            session_burst: 64,
            body_bytes: 64 << 20,
            trusted_proxies: Vec::new(),
        }
    }
}

pub(super) use crate::identity::ClientKey;

/// What a share is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Connection,
    Session,
    Stream,
}

impl Kind {
    fn index(self) -> usize {
        match self {
            Kind::Connection => 0,
            Kind::Session => 1,
            Kind::Stream => 2,
        }
    }
}

/// A client holds all it may of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum OverShare {
    #[error("this client already holds {0} connections, as many as one client may; close some and retry")]
    Connections(usize),
    #[error("this client already holds {0} sessions, as many as one client may; end some (DELETE) or let them expire")]
    Sessions(usize),
    #[error("this client already holds {0} open streams, as many as one client may; close some and retry")]
    Streams(usize),
    #[error("this client already has {} MiB of request bodies being read, its share of the server's memory; retry once they are in", .0 >> 20)]
    BodyBytes(usize),
}

/// The per-client counts, and the rate at which each client may open sessions.
pub(super) struct Peers {
    limits: PeerLimits,
    held: Mutex<HashMap<ClientKey, Held>>,
    creations: DefaultKeyedRateLimiter<ClientKey>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers").field("limits", &self.limits).field("clients", &self.lock().len()).finish_non_exhaustive()
    }
}

/// What one client holds: connections, sessions and streams, and bytes of bodies being read.
#[derive(Debug, Default)]
struct Held {
    counts: [usize; 3],
    body_bytes: usize,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.counts.iter().all(|n| *n == 0) && self.body_bytes == 0
    }
}

/// Bytes of a body one client has being read; given back when dropped.
#[derive(Debug)]
pub(super) struct BodyShare {
    peers: Arc<Peers>,
    key: ClientKey,
    bytes: usize,
}

impl BodyShare {
    /// Grows the share to `bytes`, unless that takes the client past its share.
    pub(super) fn grow_to(&mut self, bytes: usize) -> Result<(), OverShare> {
        if bytes <= self.bytes {
            return Ok(());
        }
        let mut held = self.peers.lock();
        let entry = held.entry(self.key).or_default();
        let more = bytes - self.bytes;
        if entry.body_bytes + more > self.peers.limits.body_bytes {
            return Err(OverShare::BodyBytes(self.peers.limits.body_bytes));
        }
        entry.body_bytes += more;
        self.bytes = bytes;
        Ok(())
    }
}

impl Drop for BodyShare {
    fn drop(&mut self) {
        let mut held = self.peers.lock();
        if let Some(entry) = held.get_mut(&self.key) {
            entry.body_bytes = entry.body_bytes.saturating_sub(self.bytes);
            if entry.is_empty() {
                held.remove(&self.key);
            }
        }
    }
}

/// What one client holds of one kind; given back when dropped.
#[derive(Debug)]
pub(super) struct Share {
    peers: Arc<Peers>,
    key: ClientKey,
    kind: Kind,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = self.peers.lock();
        if let Some(entry) = held.get_mut(&self.key) {
            entry.counts[self.kind.index()] = entry.counts[self.kind.index()].saturating_sub(1);
            if entry.is_empty() {
                held.remove(&self.key);
            }
        }
    }
}

impl Peers {
    pub(super) fn new(limits: PeerLimits) -> Arc<Peers> {
        let rate = NonZeroU32::new(limits.sessions_per_second.max(1)).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(limits.session_burst.max(1)).unwrap_or(NonZeroU32::MIN);
        let creations = RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst));
        Arc::new(Peers { limits, held: Mutex::new(HashMap::new()), creations })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ClientKey, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `ip` is a proxy the operator trusts to forward client addresses.
    pub(super) fn is_trusted_proxy(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.limits.trusted_proxies.iter().any(|net| net.contains(&ip))
    }

    /// Takes one share of `kind` for `key`, unless the client already holds its limit.
    pub(super) fn take(self: &Arc<Self>, key: ClientKey, kind: Kind) -> Result<Share, OverShare> {
        let limit = match kind {
            Kind::Connection => self.limits.connections,
            Kind::Session => self.limits.sessions,
            Kind::Stream => self.limits.streams,
        };
        let mut held = self.lock();
        let entry = held.entry(key).or_default();
        if entry.counts[kind.index()] >= limit {
            if entry.is_empty() {
                held.remove(&key);
            }
            return Err(match kind {
                Kind::Connection => OverShare::Connections(limit),
                Kind::Session => OverShare::Sessions(limit),
                Kind::Stream => OverShare::Streams(limit),
            });
        }
        entry.counts[kind.index()] += 1;
        Ok(Share { peers: Arc::clone(self), key, kind })
    }

    /// A share of `bytes` of request body for `key`, unless the client already has its share
    /// being read.
    pub(super) fn take_body(self: &Arc<Self>, key: ClientKey, bytes: usize) -> Result<BodyShare, OverShare> {
        let mut share = BodyShare { peers: Arc::clone(self), key, bytes: 0 };
        share.grow_to(bytes)?;
        Ok(share)
    }

    /// Whether `key` may open a session now (at most `session_burst` at once, then
    /// `sessions_per_second`).
    pub(super) fn may_open_session(&self, key: ClientKey) -> bool {
        self.creations.check_key(&key).is_ok()
    }

    /// Forgets the rate of clients that have not opened a session lately (keeps the limiter's
    /// table to the clients that are active).
    pub(super) fn forget_idle(&self) {
        self.creations.retain_recent();
        self.creations.shrink_to_fit();
    }

    /// Clients holding anything now.
    #[cfg(test)]
    pub(super) fn clients(&self) -> usize {
        self.lock().len()
    }

    /// The client a request is charged to: the connection's address, or, from a trusted proxy,
    /// the address it forwarded.
    pub(super) fn client_of(&self, peer: SocketAddr, headers: &HeaderMap) -> ClientKey {
        if !self.is_trusted_proxy(peer.ip()) {
            return ClientKey::of(peer.ip());
        }
        let forwarded = headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(str::trim).collect::<Vec<_>>();
        let client = forwarded
            .iter()
            .rev()
            .map(|entry| entry.parse::<IpAddr>().ok().or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip())))
            .take_while(Option::is_some)
            .flatten()
            .find(|ip| !self.is_trusted_proxy(*ip));
        ClientKey::of(client.unwrap_or(peer.ip()))
    }
}

/// 429 with the reason: the client holds its share, or opens sessions too fast.
pub(super) fn too_many(reason: &str) -> Response {
    let mut response = super::guard::refusal(axum::http::StatusCode::TOO_MANY_REQUESTS, reason);
    response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
    response
}

/// Takes a share of `kind` for the request's client, or the 429 that refuses it (logged with
/// the client).
pub(super) fn take_or_refuse(shared: &Shared, client: ClientKey, kind: Kind) -> Result<Share, Response> {
    shared.peers.take(client, kind).map_err(|over| {
        tracing::warn!(client = %client, "refused a request: {over}");
        too_many(&over.to_string())
    })
}

/// The session share for a session `client` opens now, or the refusal: 503 when the server
/// holds all the sessions it allows, 429 when the client opens them too fast or holds its share.
pub(super) fn open_session(shared: &Shared, client: ClientKey) -> Result<Share, Response> {
    if shared.sessions.is_full() {
        return Err(super::guard::refusal(axum::http::StatusCode::SERVICE_UNAVAILABLE, &super::sessions::SessionsFull.to_string()));
    }
    if !shared.peers.may_open_session(client) {
        tracing::warn!(client = %client, "refused a new session: the client opens sessions faster than it may");
        return Err(too_many("this client opens sessions faster than the server allows; retry in a second"));
    }
    take_or_refuse(shared, client, Kind::Session)
}

/// Names the request's client (`ClientKey` in its extensions).
pub(super) fn identify(shared: &Shared, request: &mut Request) {
    // A request another replica forwarded is charged to the client that replica saw.
    if let Some(hopped) = request.extensions().get::<super::forward::Hopped>() {
        let key = ClientKey::of(hopped.0.client);
        request.extensions_mut().insert(key);
    } else if let Some(peer) = request.extensions().get::<super::guard::Peer>().map(|p| p.0) {
        let key = shared.peers.client_of(peer, request.headers());
        request.extensions_mut().insert(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> PeerLimits {
        PeerLimits {
            connections: 2,
            sessions: 1,
            streams: 1,
            sessions_per_second: 1,
            session_burst: 2,
            body_bytes: 100,
            trusted_proxies: vec!["10.0.0.0/8".parse().expect("net")],
        }
    }

    #[test]
    fn a_client_holds_at_most_its_share_and_gets_it_back_when_it_lets_go() {
        let peers = Peers::new(limits());
        let a = ClientKey::of("127.0.0.2".parse().expect("ip"));
        let b = ClientKey::of("127.0.0.3".parse().expect("ip"));
        let first = peers.take(a, Kind::Connection).expect("first");
        let _second = peers.take(a, Kind::Connection).expect("second");
        assert_eq!(peers.take(a, Kind::Connection).err(), Some(OverShare::Connections(2)));
        let _other = peers.take(b, Kind::Connection).expect("another client is not held to a's share");
        let _session = peers.take(a, Kind::Session).expect("a session is a share of its own");
        drop(first);
        let _again = peers.take(a, Kind::Connection).expect("a released share can be taken again");
        assert_eq!(peers.clients(), 2);
    }

    #[test]
    fn the_table_forgets_a_client_that_holds_nothing() {
        let peers = Peers::new(limits());
        let a = ClientKey::of("127.0.0.2".parse().expect("ip"));
        let stream = peers.take(a, Kind::Stream).expect("stream");
        assert!(peers.take(a, Kind::Stream).is_err());
        drop(stream);
        assert_eq!(peers.clients(), 0);
        assert!(peers.take(ClientKey::of("127.0.0.9".parse().expect("ip")), Kind::Session).is_ok());
        assert_eq!(peers.clients(), 0, "a refused or dropped share leaves no entry");
    }

    #[test]
    fn ipv6_clients_are_told_apart_by_their_64_and_mapped_addresses_as_ipv4() {
        assert_eq!(ClientKey::of("2001:db8::1".parse().expect("ip")), ClientKey::of("2001:db8::ffff:2".parse().expect("ip")));
        assert_ne!(ClientKey::of("2001:db8::1".parse().expect("ip")), ClientKey::of("2001:db8:0:1::1".parse().expect("ip")));
        assert_eq!(ClientKey::of("::ffff:127.0.0.2".parse().expect("ip")), ClientKey::of("127.0.0.2".parse().expect("ip")));
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client_and_only_with_an_untrusted_address() {
        let peers = Peers::new(limits());
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "203.0.113.9, 198.51.100.7, 10.1.1.1".parse().expect("value"));
        let proxy: SocketAddr = "10.0.0.1:5000".parse().expect("addr");
        assert_eq!(peers.client_of(proxy, &headers), ClientKey::of("198.51.100.7".parse().expect("ip")), "the rightmost untrusted entry");
        let stranger: SocketAddr = "192.0.2.4:5000".parse().expect("addr");
        assert_eq!(peers.client_of(stranger, &headers), ClientKey::of(stranger.ip()), "a forwarded address from anyone else is ignored");
        headers.insert("x-forwarded-for", "not an address".parse().expect("value"));
        assert_eq!(peers.client_of(proxy, &headers), ClientKey::of(proxy.ip()), "garbage names nobody but the proxy");
        assert_eq!(peers.client_of(proxy, &HeaderMap::new()), ClientKey::of(proxy.ip()));
    }

    #[test]
    fn a_client_has_at_most_its_share_of_bodies_being_read() {
        let peers = Peers::new(limits());
        let a = ClientKey::of("127.0.0.2".parse().expect("ip"));
        let mut first = peers.take_body(a, 60).expect("fits");
        assert_eq!(peers.take_body(a, 41).err(), Some(OverShare::BodyBytes(100)));
        let second = peers.take_body(a, 40).expect("exactly the share");
        assert!(first.grow_to(61).is_err(), "growing past the share fails and keeps the share as it was");
        assert!(peers.take_body(ClientKey::of("127.0.0.3".parse().expect("ip")), 100).is_ok(), "another client has its own share");
        drop(second);
        first.grow_to(100).expect("room again");
        drop(first);
        assert_eq!(peers.clients(), 0);
    }

    #[test]
    fn sessions_open_in_a_burst_then_at_the_rate() {
        let peers = Peers::new(limits());
        let a = ClientKey::of("127.0.0.2".parse().expect("ip"));
        assert!(peers.may_open_session(a));
        assert!(peers.may_open_session(a));
        assert!(!peers.may_open_session(a), "the burst of 2 is spent");
        assert!(peers.may_open_session(ClientKey::of("127.0.0.3".parse().expect("ip"))), "another client has its own rate");
    }
}
