//! Ids that name their owner: `<replica>.<nonce and seal>`.
//!
//! Legacy session ids (Streamable HTTP's `Mcp-Session-Id`, HTTP+SSE's `session_id`) and task ids
//! start with the id of the replica that minted them, so a load balancer can route on the tag
//! and a replica that gets another's request knows whom to forward it to. After the dot come
//! 128 random bits and a 128-bit keyed BLAKE3 seal over the id's kind, the tag and the random
//! part, in base64url: an id altered in any way, made up, or moved from one kind to another
//! (a session id sent as a task id) does not verify, and a tag is only ever read from an id
//! that verifies. Only replicas holding the shared key mint ids the others accept.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;

use super::{Replica, is_label};

/// Random bytes of an id.
const NONCE: usize = 16;
/// Bytes of an id's seal.
const SEAL: usize = 16;
/// Characters after the dot: `NONCE + SEAL` bytes in base64url.
const SEALED_CHARS: usize = ((NONCE + SEAL) * 4).div_ceil(3);

/// What an id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A Streamable HTTP legacy session.
    Session,
    /// An HTTP+SSE session (its `/messages` id).
    SseSession,
    /// A task.
    Task,
}

impl IdKind {
    fn tag(self) -> u8 {
        match self {
            IdKind::Session => 1,
            IdKind::SseSession => 2,
            IdKind::Task => 3,
        }
    }
}

/// Who owns an id that verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    /// This replica.
    Here,
    /// Another replica, by its id.
    Peer(&'a str),
}

/// An id that no replica sharing the key minted: made up, altered, or of another kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the id is not one a replica of this server issued, or it was altered")]
pub struct ForgedId;

impl Replica {
    /// A new id of `kind`, owned by this replica.
    ///
    /// # Panics
    /// The system has no random source.
    pub fn mint(&self, kind: IdKind) -> String {
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).expect("the system's random source works");
        let seal = self.seal(kind, self.id.as_str(), &nonce);
        let mut raw = [0u8; NONCE + SEAL];
        raw[..NONCE].copy_from_slice(&nonce);
        raw[NONCE..].copy_from_slice(&seal);
        let mut id = String::with_capacity(self.id.as_str().len() + 1 + SEALED_CHARS);
        id.push_str(self.id.as_str());
        id.push('.');
        BASE64URL.encode_string(raw, &mut id);
        id
    }

    /// The owner of `id`, a `kind` id some replica sharing the key minted.
    ///
    /// # Errors
    /// The id does not verify.
    pub fn owner<'a>(&self, kind: IdKind, id: &'a str) -> Result<Owner<'a>, ForgedId> {
        let (tag, sealed) = id.split_once('.').ok_or(ForgedId)?;
        if !is_label(tag) || sealed.len() != SEALED_CHARS {
            return Err(ForgedId);
        }
        // One byte of room: the decoder asks for its estimate, not the exact length.
        let mut raw = [0u8; NONCE + SEAL + 1];
        match BASE64URL.decode_slice(sealed, &mut raw) {
            Ok(n) if n == NONCE + SEAL => {}
            _ => return Err(ForgedId),
        }
        let expected = self.seal(kind, tag, &raw[..NONCE]);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], &raw[NONCE..NONCE + SEAL])) {
            return Err(ForgedId);
        }
        Ok(if tag == self.id.as_str() { Owner::Here } else { Owner::Peer(tag) })
    }

    fn seal(&self, kind: IdKind, tag: &str, nonce: &[u8]) -> [u8; SEAL] {
        let mut hasher = blake3::Hasher::new_keyed(&self.ids);
        hasher.update(&[kind.tag()]);
        hasher.update(&(tag.len() as u8).to_le_bytes());
        hasher.update(tag.as_bytes());
        hasher.update(nonce);
        let mut seal = [0u8; SEAL];
        hasher.finalize_xof().fill(&mut seal);
        seal
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Peers, ReplicaId};
    use super::*;

    fn replica(id: &str, key: u8) -> Replica {
        Replica::new(ReplicaId::parse(id).expect("an id"), &[key; 32], Peers::none())
    }

    #[test]
    fn an_id_names_its_owner_to_every_replica_sharing_the_key() {
        let (a, b) = (replica("paddock-0", 7), replica("paddock-1", 7));
        let id = a.mint(IdKind::Session);
        assert!(id.starts_with("paddock-0."), "{id}");
        assert!(id.bytes().all(|c| (0x21..=0x7e).contains(&c)), "visible ASCII: {id}");
        assert_eq!(a.owner(IdKind::Session, &id), Ok(Owner::Here));
        assert_eq!(b.owner(IdKind::Session, &id), Ok(Owner::Peer("paddock-0")));
        assert_ne!(a.mint(IdKind::Session), id, "fresh every time");
    }

    #[test]
    fn an_altered_made_up_or_misused_id_is_refused() {
        let a = replica("paddock-0", 7);
        let id = a.mint(IdKind::Session);
        // Another owner's tag on a real seal: a tag is never taken on its word.
        let moved = id.replacen("paddock-0", "paddock-1", 1);
        assert_eq!(a.owner(IdKind::Session, &moved), Err(ForgedId));
        // Each character of the sealed part changed in turn.
        let at = id.find('.').expect("a dot") + 1;
        for i in at..id.len() {
            let mut bytes = id.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).expect("ASCII");
            assert_eq!(a.owner(IdKind::Session, &altered), Err(ForgedId), "{altered}");
        }
        assert_eq!(a.owner(IdKind::Task, &id), Err(ForgedId), "a session id is not a task id");
        assert_eq!(a.owner(IdKind::SseSession, &id), Err(ForgedId));
        for made_up in ["", ".", "paddock-0", "paddock-0.", "0123456789abcdef0123456789abcdef", "evil.example.com:80.xxxx", &format!("{id}x")] {
            assert_eq!(a.owner(IdKind::Session, made_up), Err(ForgedId), "{made_up}");
        }
        // Under another key, nothing verifies.
        assert_eq!(replica("paddock-0", 8).owner(IdKind::Session, &id), Err(ForgedId));
    }

    #[test]
    fn replica_ids_are_dns_labels_and_host_names_are_made_into_one() {
        for good in ["a", "paddock-0", "r1", &"x".repeat(63)] {
            assert!(ReplicaId::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"x".repeat(64), "a\nb"] {
            assert!(ReplicaId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(ReplicaId::from_name("Web-01.prod.example.com").as_str(), "web-01-prod-example-com");
        assert_eq!(ReplicaId::from_name("--").as_str(), "paddock");
        assert_eq!(ReplicaId::from_name(&"h".repeat(100)).as_str().len(), 63);
    }
}
