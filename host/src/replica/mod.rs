//! Which replica this process is, and what it shares with the others: ids that name their owner
//! (`ids.rs`), where each peer replica is reached (`peers.rs`), and the proof a forwarded
//! request carries that another replica sent it (`forwarding.rs`).
//!
//! Everything here is keyed by the shared key material (`--state-key-file`, or drawn at start
//! for a process on its own): replicas that share it recognise each other's ids and forwarded
//! requests; nothing else does.

mod forwarding;
mod ids;
mod peers;

pub use forwarding::{FORWARDED_HEADER, Forwarded, ForwardedError, Hop};
pub use ids::{ForgedId, IdKind, Owner};
pub use peers::{PeerError, Peers};

/// The longest replica id: one DNS label.
pub const MAX_REPLICA_ID: usize = 63;

/// This replica's id: a DNS label (`a-z`, `0-9`, `-`, at most 63, neither end a `-`), so it can
/// head an id, name a Kubernetes pod, and be matched by a load balancer's rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplicaId(String);

/// A replica id that is not a DNS label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a replica id: use 1 to {MAX_REPLICA_ID} of a-z, 0-9 and `-`, neither first nor last a `-` (for example `paddock-0`)")]
pub struct BadReplicaId(pub String);

impl ReplicaId {
    /// An id as given (`--replica-id`).
    ///
    /// # Errors
    /// It is not a DNS label.
    pub fn parse(text: &str) -> Result<ReplicaId, BadReplicaId> {
        if is_label(text) { Ok(ReplicaId(text.to_owned())) } else { Err(BadReplicaId(crate::escape::escape(&crate::escape::shorten(text)))) }
    }

    /// The id made from this machine's host name: lowercased, every other character a `-`,
    /// cut to 63; `paddock` when nothing is left.
    pub fn from_hostname() -> ReplicaId {
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        ReplicaId::from_name(name.trim())
    }

    fn from_name(name: &str) -> ReplicaId {
        let mapped: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).take(MAX_REPLICA_ID).collect();
        let trimmed = mapped.trim_matches('-');
        if trimmed.is_empty() { ReplicaId("paddock".to_owned()) } else { ReplicaId(trimmed.to_owned()) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `text` is a DNS label of lowercase letters, digits and `-`.
pub(crate) fn is_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_REPLICA_ID
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// This replica: its id, and the keys its ids and forwarded requests are sealed under.
pub struct Replica {
    id: ReplicaId,
    ids: [u8; 32],
    hops: [u8; 32],
    peers: Peers,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica").field("id", &self.id).field("peers", &self.peers).finish_non_exhaustive()
    }
}

impl Replica {
    /// Replica `id`, keyed by the shared key `material` (at least 32 bytes), reaching `peers`.
    pub fn new(id: ReplicaId, material: &[u8], peers: Peers) -> Replica {
        Replica {
            id,
            ids: blake3::derive_key("paddock 2026-11 owner-tagged ids", material),
            hops: blake3::derive_key("paddock 2026-11 forwarded requests", material),
            peers,
        }
    }

    /// A process on its own: named after the host, keyed by a key drawn now, with no peers.
    ///
    /// # Panics
    /// The system has no random source (nothing else would work either).
    pub fn solo() -> Replica {
        let mut material = [0u8; 32];
        getrandom::fill(&mut material).expect("the system's random source works");
        Replica::new(ReplicaId::from_hostname(), &material, Peers::none())
    }

    pub fn id(&self) -> &ReplicaId {
        &self.id
    }

    /// Where the other replicas are reached.
    pub fn peers(&self) -> &Peers {
        &self.peers
    }
}
