//! The MCP protocol revisions Paddock serves, ordered oldest first, and what each one brings.
//!
//! One type for "which protocol": the session-based revisions (negotiated once by `initialize`)
//! and the stateless one (named on every request). Every question a layer asks about a
//! revision (does it take batches, does it have experimental tasks, are streams primed) is a
//! method here, so no other module compares version strings.

use std::fmt;
use std::str::FromStr;

/// A protocol revision, ordered by date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl Revision {
    /// The revisions a legacy session may negotiate, oldest first.
    pub const SESSIONS: [Revision; 4] = [Revision::V2024_11_05, Revision::V2025_03_26, Revision::V2025_06_18, Revision::V2025_11_25];
    /// The stateless revisions, named on each request.
    pub const STATELESS: [Revision; 1] = [Revision::V2026_07_28];
    /// The newest session revision: offered when a client asks for one that is not served.
    pub const LATEST_SESSION: Revision = Revision::V2025_11_25;

    /// The revision's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The session revision named `name`, if it is one.
    pub fn session(name: &str) -> Option<Revision> {
        Revision::SESSIONS.into_iter().find(|r| r.as_str() == name)
    }

    /// The stateless revision named `name`, if it is one.
    pub fn stateless(name: &str) -> Option<Revision> {
        Revision::STATELESS.into_iter().find(|r| r.as_str() == name)
    }

    /// Whether requests of this revision carry everything themselves (no session).
    pub fn is_stateless(self) -> bool {
        self >= Revision::V2026_07_28
    }

    /// Whether JSON-RPC batches are accepted: 2025-03-26 requires it, and only it.
    pub fn accepts_batches(self) -> bool {
        self == Revision::V2025_03_26
    }

    /// Whether a session has the experimental tasks (`tasks/*` and task-augmented calls).
    pub fn has_experimental_tasks(self) -> bool {
        self == Revision::V2025_11_25
    }

    /// Whether a POST's SSE stream starts with a priming event (an id and no data), so that a
    /// client can resume it before the first message.
    pub fn primes_streams(self) -> bool {
        self >= Revision::V2025_11_25
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A revision name Paddock does not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a protocol revision this server serves")]
pub struct UnknownRevision(String);

impl FromStr for Revision {
    type Err = UnknownRevision;

    fn from_str(name: &str) -> Result<Revision, UnknownRevision> {
        Revision::session(name).or_else(|| Revision::stateless(name)).ok_or_else(|| UnknownRevision(name.chars().take(64).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_ordered_by_date_and_round_trip_their_names() {
        let all = [Revision::SESSIONS.as_slice(), Revision::STATELESS.as_slice()].concat();
        assert!(all.windows(2).all(|w| w[0] < w[1] && w[0].as_str() < w[1].as_str()));
        for revision in all {
            assert_eq!(revision.as_str().parse::<Revision>(), Ok(revision));
            assert_eq!(revision.to_string(), revision.as_str());
        }
        assert!("2025-11-26".parse::<Revision>().is_err());
        assert_eq!(Revision::session("2026-07-28"), None, "the stateless revision is not negotiated");
        assert_eq!(Revision::stateless("2025-11-25"), None);
        assert_eq!(Revision::LATEST_SESSION, *Revision::SESSIONS.last().expect("one"));
    }

    #[test]
    fn features_follow_the_revisions_that_added_them() {
        assert!(Revision::V2025_03_26.accepts_batches());
        assert!(!Revision::V2025_06_18.accepts_batches() && !Revision::V2024_11_05.accepts_batches());
        assert!(Revision::V2025_11_25.has_experimental_tasks() && !Revision::V2026_07_28.has_experimental_tasks());
        assert!(Revision::V2025_11_25.primes_streams() && !Revision::V2025_06_18.primes_streams());
        assert!(Revision::V2026_07_28.is_stateless() && !Revision::V2025_11_25.is_stateless());
    }
}
