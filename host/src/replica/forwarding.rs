//! The proof a forwarded request carries: a replica that gets a request for a session another
//! replica owns sends it on with a `Paddock-Forwarded` header, a keyed BLAKE3 MAC under the
//! shared key over the method, the path and query, the session id, both replicas' ids, the
//! client's address and the time.
//!
//! The owner accepts the header only when the MAC verifies, the header names it as the
//! destination, and the time is within `MAX_SKEW` of its own clock: a client cannot pose as a
//! peer (to be charged as another address, or to reach a session through a replica that did not
//! check its token), and a header seen once cannot be reused for another request.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;

use super::{Replica, is_label};

/// The header a forwarded request carries.
pub const FORWARDED_HEADER: &str = "paddock-forwarded";
/// How far the sender's clock may be from the receiver's.
pub const MAX_SKEW: Duration = Duration::from_secs(30);
/// Longest header value read.
const MAX_HEADER: usize = 256;

/// What a forwarded request is, as its MAC binds it.
#[derive(Debug, Clone, Copy)]
pub struct Hop<'a> {
    pub method: &'a str,
    /// The path and query.
    pub path: &'a str,
    /// The session id the request names.
    pub session: &'a str,
}

/// A forwarding header that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    /// The replica that forwarded the request.
    pub from: String,
    /// The client, as the replica that forwarded it saw it.
    pub client: IpAddr,
}

/// Why a forwarding header was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForwardedError {
    #[error("the forwarding header is malformed")]
    Malformed,
    #[error("the forwarding header is for replica `{0}`, not this one")]
    NotForUs(String),
    #[error("the forwarding header is {0} s away from this replica's clock")]
    Stale(u64),
    #[error("the forwarding header's MAC does not verify")]
    Mac,
}

impl Replica {
    /// The `Paddock-Forwarded` value for sending `hop`, from `client`, to replica `to`.
    pub fn sign_hop(&self, to: &str, hop: &Hop<'_>, client: IpAddr) -> String {
        let at = now();
        let mac = self.hop_mac(self.id.as_str(), to, at, client, hop);
        format!("v1 from={} to={to} t={at} client={client} mac={}", self.id, BASE64URL.encode(mac))
    }

    /// Checks a `Paddock-Forwarded` value sent to this replica for `hop`.
    ///
    /// # Errors
    /// It is malformed, for another replica, too old or too new, or its MAC does not verify.
    pub fn verify_hop(&self, value: &str, hop: &Hop<'_>) -> Result<Forwarded, ForwardedError> {
        self.verify_hop_at(value, hop, now())
    }

    fn verify_hop_at(&self, value: &str, hop: &Hop<'_>, now: u64) -> Result<Forwarded, ForwardedError> {
        if value.len() > MAX_HEADER {
            return Err(ForwardedError::Malformed);
        }
        let mut fields = value.split(' ');
        if fields.next() != Some("v1") {
            return Err(ForwardedError::Malformed);
        }
        let mut take = |name: &str| fields.next().and_then(|f| f.strip_prefix(name)).and_then(|f| f.strip_prefix('=')).ok_or(ForwardedError::Malformed);
        let (from, to, at, client, mac) = (take("from")?, take("to")?, take("t")?, take("client")?, take("mac")?);
        if !is_label(from) || !is_label(to) || fields.next().is_some() {
            return Err(ForwardedError::Malformed);
        }
        let at: u64 = at.parse().map_err(|_| ForwardedError::Malformed)?;
        let client: IpAddr = client.parse().map_err(|_| ForwardedError::Malformed)?;
        let mut given = [0u8; 33];
        if BASE64URL.decode_slice(mac, &mut given).ok() != Some(32) {
            return Err(ForwardedError::Malformed);
        }
        if to != self.id.as_str() {
            return Err(ForwardedError::NotForUs(to.to_owned()));
        }
        let expected = self.hop_mac(from, to, at, client, hop);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], &given[..32])) {
            return Err(ForwardedError::Mac);
        }
        let skew = now.abs_diff(at);
        if skew > MAX_SKEW.as_secs() {
            return Err(ForwardedError::Stale(skew));
        }
        Ok(Forwarded { from: from.to_owned(), client })
    }

    fn hop_mac(&self, from: &str, to: &str, at: u64, client: IpAddr, hop: &Hop<'_>) -> [u8; 32] {
        let mut hasher = blake3::Hasher::new_keyed(&self.hops);
        for part in [hop.method, hop.path, hop.session, from, to, &at.to_string(), &client.to_string()] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        *hasher.finalize().as_bytes()
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::super::{Peers, ReplicaId};
    use super::*;

    fn replica(id: &str, key: u8) -> Replica {
        Replica::new(ReplicaId::parse(id).expect("an id"), &[key; 32], Peers::none())
    }

    const HOP: Hop<'static> = Hop { method: "POST", path: "/mcp", session: "paddock-1.abc" };

    #[test]
    fn a_hop_signed_by_a_peer_verifies_only_for_the_request_and_replica_it_names() {
        let (entry, owner) = (replica("paddock-0", 1), replica("paddock-1", 1));
        let client: IpAddr = "192.0.2.7".parse().expect("an address");
        let header = entry.sign_hop("paddock-1", &HOP, client);
        assert_eq!(owner.verify_hop(&header, &HOP), Ok(Forwarded { from: "paddock-0".to_owned(), client }));
        for other in [Hop { method: "GET", ..HOP }, Hop { path: "/mcp?x", ..HOP }, Hop { session: "paddock-1.abd", ..HOP }] {
            assert_eq!(owner.verify_hop(&header, &other), Err(ForwardedError::Mac), "{other:?}");
        }
        assert_eq!(replica("paddock-2", 1).verify_hop(&header, &HOP), Err(ForwardedError::NotForUs("paddock-1".to_owned())));
        assert_eq!(replica("paddock-1", 2).verify_hop(&header, &HOP), Err(ForwardedError::Mac), "another key");
        // The client's address cannot be swapped in the header.
        let swapped = header.replace("client=192.0.2.7", "client=192.0.2.8");
        assert_eq!(owner.verify_hop(&swapped, &HOP), Err(ForwardedError::Mac));
    }

    #[test]
    fn a_stale_or_malformed_header_is_refused() {
        let (entry, owner) = (replica("paddock-0", 1), replica("paddock-1", 1));
        let header = entry.sign_hop("paddock-1", &HOP, "::1".parse().expect("an address"));
        let later = now() + MAX_SKEW.as_secs() + 5;
        assert!(matches!(owner.verify_hop_at(&header, &HOP, later), Err(ForwardedError::Stale(_))));
        for bad in [
            "",
            "v1",
            "v2 from=a to=b t=1 client=::1 mac=x",
            "v1 from=a to=paddock-1 t=x client=::1 mac=AAAA",
            &"v1 ".repeat(100),
            &format!("{header} extra=1"),
        ] {
            assert_eq!(owner.verify_hop(bad, &HOP), Err(ForwardedError::Malformed), "{bad}");
        }
    }
}
