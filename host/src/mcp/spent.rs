//! `Spent`: the 2026-07-28 approvals already answered, each remembered until its form expires,
//! so that an approval is used once. Bounded: past `MAX_SPENT` held, expired ones are forgotten,
//! and if none has expired a new answer is refused as busy (never a second use).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::error::McpError;

/// The most approvals remembered as spent at once.
const MAX_SPENT: usize = 65_536;

/// Approvals already answered, until their forms expire.
#[derive(Debug, Default)]
pub struct Spent {
    held: Mutex<HashMap<[u8; 16], Instant>>,
}

impl Spent {
    /// Marks `nonce` spent; false when it already was (or there is no room to remember it).
    pub(super) fn spend(&self, nonce: [u8; 16], until: Instant) -> Result<bool, McpError> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() >= MAX_SPENT {
            let now = Instant::now();
            held.retain(|_, expires| *expires > now);
            if held.len() >= MAX_SPENT {
                return Err(McpError::Busy("too many approvals are being answered at once; try again shortly".to_owned()));
            }
        }
        Ok(held.insert(nonce, until).is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_approval_is_spent_once() {
        let spent = Spent::default();
        let until = Instant::now() + Duration::from_secs(300);
        assert!(spent.spend([1; 16], until).expect("room"));
        assert!(!spent.spend([1; 16], until).expect("room"));
        assert!(spent.spend([2; 16], until).expect("room"));
    }
}
