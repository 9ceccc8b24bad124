//! Where the other replicas are reached: a fixed list (`--peer ID=URL`, repeatable) or a URL
//! template naming every replica at once (`--peer 'http://{replica}.paddock:8080'`, for a
//! Kubernetes headless Service).
//!
//! Only a configured peer is ever dialled: an id's tag is looked up in the list, or put into the
//! template only once it has verified under the shared key (so only a replica holding the key
//! could have minted it) and is a DNS label (so it cannot add a host, a port or a path of its
//! own).

use std::collections::BTreeMap;

use super::{ReplicaId, is_label};

/// The placeholder of a URL template.
const PLACEHOLDER: &str = "{replica}";

/// Where each peer replica is reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peers {
    fixed: BTreeMap<String, String>,
    template: Option<String>,
}

/// A `--peer` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    #[error("`--peer {0}`: give ID=URL (for example `paddock-1=http://10.0.0.2:8080`) or a URL template with `{{replica}}` in its host")]
    Shape(String),
    #[error("`--peer {0}`: {1}")]
    Id(String, super::BadReplicaId),
    #[error("`--peer {0}`: the URL must be `http://HOST[:PORT]` with nothing after the address (the path is the request's own)")]
    Url(String),
    #[error("`--peer {0}`: `{{replica}}` must stand in the host, once (for example `http://{{replica}}.paddock.default.svc:8080`)")]
    Template(String),
    #[error("`--peer` names replica `{0}` twice")]
    Twice(String),
    #[error("`--peer` gives two URL templates; one names every replica")]
    TwoTemplates,
}

impl Peers {
    /// No peers: a request for another replica's session is answered as for an unknown one.
    pub fn none() -> Peers {
        Peers::default()
    }

    /// Peers from `--peer` values.
    ///
    /// # Errors
    /// The first value that cannot be used.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<Peers, PeerError> {
        let mut peers = Peers::none();
        for value in values {
            if value.contains(PLACEHOLDER) && !value.contains('=') {
                let address = check_url(value).ok_or_else(|| PeerError::Url(value.to_owned()))?;
                let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
                if value.matches(PLACEHOLDER).count() != 1 || !host.contains(PLACEHOLDER) {
                    return Err(PeerError::Template(value.to_owned()));
                }
                if peers.template.replace(value.trim_end_matches('/').to_owned()).is_some() {
                    return Err(PeerError::TwoTemplates);
                }
                continue;
            }
            let (id, url) = value.split_once('=').ok_or_else(|| PeerError::Shape(value.to_owned()))?;
            let id = ReplicaId::parse(id).map_err(|bad| PeerError::Id(value.to_owned(), bad))?;
            if check_url(url).is_none() || url.contains(PLACEHOLDER) {
                return Err(PeerError::Url(value.to_owned()));
            }
            if peers.fixed.insert(id.as_str().to_owned(), url.trim_end_matches('/').to_owned()).is_some() {
                return Err(PeerError::Twice(id.to_string()));
            }
        }
        Ok(peers)
    }

    /// Whether any peer is configured.
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.template.is_none()
    }

    /// The base URL (`http://host:port`) of replica `tag`: its own entry, else the template
    /// filled in; `None` when it is not a configured peer.
    pub fn address(&self, tag: &str) -> Option<String> {
        if let Some(url) = self.fixed.get(tag) {
            return Some(url.clone());
        }
        let template = self.template.as_ref()?;
        is_label(tag).then(|| template.replace(PLACEHOLDER, tag))
    }
}

/// The `host[:port]` of an `http://host[:port][/]` URL; `None` for anything else.
fn check_url(url: &str) -> Option<&str> {
    let address = url.strip_prefix("http://")?.trim_end_matches('/');
    let bad = |c: char| matches!(c, '/' | '?' | '#' | '@' | ' ') || c.is_control();
    (!address.is_empty() && !address.contains(bad)).then_some(address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_peers_and_a_template_give_addresses_and_nothing_else_is_dialled() {
        let peers = Peers::parse(["paddock-1=http://127.0.0.2:8080", "paddock-2=http://10.0.0.3:9000/", "http://{replica}.paddock:8080"]).expect("peers");
        assert_eq!(peers.address("paddock-1").as_deref(), Some("http://127.0.0.2:8080"));
        assert_eq!(peers.address("paddock-2").as_deref(), Some("http://10.0.0.3:9000"));
        assert_eq!(peers.address("paddock-7").as_deref(), Some("http://paddock-7.paddock:8080"));
        for hostile in ["evil.com", "a:80", "a/b", "a@b", "", "-a"] {
            assert_eq!(peers.address(hostile), None, "{hostile}");
        }
        let fixed = Peers::parse(["paddock-1=http://127.0.0.2:8080"]).expect("peers");
        assert_eq!(fixed.address("paddock-2"), None, "only a configured peer");
        assert!(Peers::none().is_empty());
    }

    #[test]
    fn a_peer_that_cannot_be_used_is_refused_at_start() {
        assert!(matches!(Peers::parse(["paddock-1"]), Err(PeerError::Shape(_))));
        assert!(matches!(Peers::parse(["Paddock=http://a:1"]), Err(PeerError::Id(..))));
        assert!(matches!(Peers::parse(["p=https://a:1"]), Err(PeerError::Url(_))));
        assert!(matches!(Peers::parse(["p=http://a:1/mcp"]), Err(PeerError::Url(_))));
        assert!(matches!(Peers::parse(["p=http://user@a:1"]), Err(PeerError::Url(_))));
        assert!(matches!(Peers::parse(["http://a:1/{replica}"]), Err(PeerError::Url(_))));
        assert!(matches!(Peers::parse(["http://a:{replica}"]), Err(PeerError::Template(_))));
        assert!(matches!(Peers::parse(["http://{replica}{replica}"]), Err(PeerError::Template(_))));
        assert!(matches!(Peers::parse(["p=http://a:1", "p=http://b:1"]), Err(PeerError::Twice(_))));
        assert!(matches!(Peers::parse(["http://{replica}.a", "http://{replica}.b"]), Err(PeerError::TwoTemplates)));
    }
}
