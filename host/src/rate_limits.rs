//! `RateLimits`: the token buckets of `policy::RateRules`, charged once per use (a tool call,
//! a resource read, a prompt get, a completion) before the plugin runs.
//!
//! - Buckets are kept per principal, per principal × tool and per plugin (governor's GCRA:
//!   constant memory per key). The keys a limiter holds are bounded: past `MAX_KEYS`, buckets
//!   that have refilled are forgotten (a forgotten bucket is a full one, so nothing is lost),
//!   and if that is not enough, new keys share one overflow bucket until room is made.
//! - The most specific bucket is charged first (principal × tool, then principal, then plugin),
//!   so a use refused by a narrow limit does not spend the wider ones.
//! - A refusal says which limit and when to retry. Refusals are counted, and logged once per
//!   burst: the first refusal of a key is logged, the following ones only counted, and the
//!   count is logged when the key is admitted again.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::escape::Escaped;
use crate::identity::Principal;
use crate::policy::{Rate, RateRules};

/// The most keys one limiter holds before it forgets refilled buckets.
pub const MAX_KEYS: usize = 65_536;
/// The most bursts being counted at once (beyond it a refusal is counted but not logged).
const MAX_BURSTS: usize = 4096;
/// The key new principals share when a limiter is full of buckets still in use.
const OVERFLOW: &str = "\u{0}overflow";

/// Which limit refused a use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The principal's own, on this tool.
    Tool,
    /// The principal's own, over every use.
    Principal,
    /// The plugin's, shared by every caller.
    Plugin,
}

/// A use refused by a rate limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    pub limit: Limit,
    /// When a use would be admitted again (at least one second, whole seconds: what
    /// `Retry-After` carries).
    pub retry_after: Duration,
}

struct Keyed {
    limiter: DefaultKeyedRateLimiter<String>,
}

impl Keyed {
    fn new(rate: Rate) -> Keyed {
        Keyed { limiter: RateLimiter::keyed(quota(rate)) }
    }

    fn check(&self, key: &str, clock: &DefaultClock) -> Result<(), Duration> {
        let key = if self.limiter.len() >= MAX_KEYS {
            self.limiter.retain_recent();
            if self.limiter.len() >= MAX_KEYS { OVERFLOW } else { key }
        } else {
            key
        };
        self.limiter.check_key(&key.to_owned()).map_err(|not_until| not_until.wait_time_from(clock.now()))
    }
}

fn quota(rate: Rate) -> Quota {
    let burst = NonZeroU32::new(rate.burst).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(rate.interval()).map(|q| q.allow_burst(burst)).unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
}

/// Every bucket of the server.
pub struct RateLimits {
    rules: RateRules,
    clock: DefaultClock,
    principal: Option<Keyed>,
    tool: Option<Keyed>,
    tools: HashMap<String, Keyed>,
    plugins: HashMap<String, DefaultDirectRateLimiter>,
    /// Per plugin without its own limit: a bucket of the default plugin rate (as many as there
    /// are plugins).
    plugin_default: Mutex<HashMap<String, std::sync::Arc<DefaultDirectRateLimiter>>>,
    refused: AtomicU64,
    bursts: Mutex<HashMap<String, u64>>,
    bursting: AtomicUsize,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits").field("rules", &self.rules).field("refused", &self.refused()).finish_non_exhaustive()
    }
}

impl RateLimits {
    pub fn new(rules: RateRules) -> RateLimits {
        RateLimits {
            clock: DefaultClock::default(),
            principal: rules.principal.map(Keyed::new),
            tool: rules.tool.map(Keyed::new),
            tools: rules.tools.iter().map(|(name, rate)| (name.clone(), Keyed::new(*rate))).collect(),
            plugins: rules.plugins.iter().map(|(id, rate)| (id.clone(), RateLimiter::direct(quota(*rate)))).collect(),
            plugin_default: Mutex::new(HashMap::new()),
            refused: AtomicU64::new(0),
            bursts: Mutex::new(HashMap::new()),
            bursting: AtomicUsize::new(0),
            rules,
        }
    }

    /// No limits at all.
    pub fn none() -> RateLimits {
        RateLimits::new(RateRules::default())
    }

    /// Whether any limit is set.
    pub fn is_active(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Uses refused since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Charges one use of `plugin` by `principal` (of `tool`, for a tool call).
    ///
    /// # Errors
    /// The limit that refused it and when to retry.
    pub fn charge(&self, principal: &Principal, tool: Option<&str>, plugin: &str) -> Result<(), Limited> {
        if !self.is_active() {
            return Ok(());
        }
        let result = self.check(principal, tool, plugin);
        self.settle(principal, tool, plugin, result)
    }

    /// The buckets one use of `plugin` by `principal` (of `tool`, for a tool call) charges in a
    /// shared store, most specific first, each with the limit it enforces: the same rules as
    /// `charge`, kept cluster-wide.
    pub fn buckets(&self, principal: &Principal, tool: Option<&str>, plugin: &str) -> Vec<(Limit, crate::store::Bucket)> {
        let bucket = |key: String, rate: Rate| crate::store::Bucket { key, interval: rate.interval(), burst: rate.burst.max(1) };
        let mut buckets = Vec::new();
        if let Some(tool) = tool
            && let Some(rate) = self.rules.tools.get(tool).copied().or(self.rules.tool)
        {
            buckets.push((Limit::Tool, bucket(format!("tool {} {tool}", principal.id()), rate)));
        }
        if let Some(rate) = self.rules.principal {
            buckets.push((Limit::Principal, bucket(format!("principal {}", principal.id()), rate)));
        }
        if let Some(rate) = self.rules.plugins.get(plugin).copied().or(self.rules.plugin) {
            buckets.push((Limit::Plugin, bucket(format!("plugin {plugin}"), rate)));
        }
        buckets
    }

    /// Counts and logs what charging one use decided (here or in a shared store).
    pub fn settle(&self, principal: &Principal, tool: Option<&str>, plugin: &str, result: Result<(), Limited>) -> Result<(), Limited> {
        let key = || format!("{} {}", principal.id(), tool.unwrap_or(plugin));
        match &result {
            Err(limited) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                self.count_refusal(key(), principal, tool, plugin, limited);
            }
            Ok(()) if self.bursting.load(Ordering::Relaxed) > 0 => self.end_burst(key(), principal, tool, plugin),
            Ok(()) => {}
        }
        result
    }

    fn check(&self, principal: &Principal, tool: Option<&str>, plugin: &str) -> Result<(), Limited> {
        let refused = |limit: Limit| move |wait: Duration| Limited { limit, retry_after: Duration::from_secs(wait.as_secs_f64().ceil().max(1.0) as u64) };
        if let Some(tool) = tool {
            let keyed = self.tools.get(tool).or(self.tool.as_ref());
            if let Some(keyed) = keyed {
                keyed.check(&format!("{} {tool}", principal.id()), &self.clock).map_err(refused(Limit::Tool))?;
            }
        }
        if let Some(keyed) = &self.principal {
            keyed.check(principal.id(), &self.clock).map_err(refused(Limit::Principal))?;
        }
        let own = self.plugins.get(plugin);
        let shared;
        let limiter = match (own, self.rules.plugin) {
            (Some(limiter), _) => Some(limiter),
            (None, Some(rate)) => {
                let mut held = self.plugin_default.lock().unwrap_or_else(|e| e.into_inner());
                shared = std::sync::Arc::clone(held.entry(plugin.to_owned()).or_insert_with(|| std::sync::Arc::new(RateLimiter::direct(quota(rate)))));
                drop(held);
                Some(&*shared)
            }
            (None, None) => None,
        };
        if let Some(limiter) = limiter {
            limiter.check().map_err(|not_until| not_until.wait_time_from(self.clock.now())).map_err(refused(Limit::Plugin))?;
        }
        Ok(())
    }

    fn count_refusal(&self, key: String, principal: &Principal, tool: Option<&str>, plugin: &str, limited: &Limited) {
        let mut bursts = self.bursts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = bursts.get_mut(&key) {
            *count += 1;
            return;
        }
        if bursts.len() >= MAX_BURSTS {
            return;
        }
        bursts.insert(key, 1);
        self.bursting.store(bursts.len(), Ordering::Relaxed);
        drop(bursts);
        tracing::warn!(
            principal = %principal,
            tool = tool.map(|t| Escaped(t).to_string()),
            plugin,
            limit = ?limited.limit,
            retry_after_s = limited.retry_after.as_secs(),
            "rate limit reached; further refusals are counted until a use is admitted again"
        );
    }

    fn end_burst(&self, key: String, principal: &Principal, tool: Option<&str>, plugin: &str) {
        let mut bursts = self.bursts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = bursts.remove(&key) {
            self.bursting.store(bursts.len(), Ordering::Relaxed);
            drop(bursts);
            tracing::info!(principal = %principal, tool = tool.map(|t| Escaped(t).to_string()), plugin, refused = count, "rate limit passed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(text: &str, burst: u32) -> Rate {
        Rate::parse(text, Some(burst)).expect("rate")
    }

    #[test]
    fn each_principal_has_its_own_bucket_and_a_refusal_says_when_to_retry() {
        let limits = RateLimits::new(RateRules { principal: Some(rate("1/minute", 2)), ..RateRules::default() });
        let (alice, bob) = (Principal::token("alice", vec![]), Principal::token("bob", vec![]));
        assert_eq!(limits.charge(&alice, Some("t"), "p"), Ok(()));
        assert_eq!(limits.charge(&alice, None, "p"), Ok(()));
        let refused = limits.charge(&alice, Some("t"), "p").expect_err("third use within the burst");
        assert_eq!(refused.limit, Limit::Principal);
        assert!(refused.retry_after >= Duration::from_secs(1) && refused.retry_after <= Duration::from_secs(60), "{refused:?}");
        assert_eq!(limits.charge(&bob, Some("t"), "p"), Ok(()), "bob has his own bucket");
        assert_eq!(limits.refused(), 1);
    }

    #[test]
    fn a_tool_limit_is_per_principal_and_tool_and_spends_nothing_wider_when_it_refuses() {
        let rules = RateRules { principal: Some(rate("1/minute", 3)), tools: [("slow".to_owned(), rate("1/minute", 1))].into(), ..RateRules::default() };
        let limits = RateLimits::new(rules);
        let alice = Principal::token("alice", vec![]);
        assert_eq!(limits.charge(&alice, Some("slow"), "p"), Ok(()));
        assert_eq!(limits.charge(&alice, Some("slow"), "p").map_err(|l| l.limit), Err(Limit::Tool));
        assert_eq!(limits.charge(&alice, Some("slow"), "p").map_err(|l| l.limit), Err(Limit::Tool));
        // Only the admitted call spent the principal's bucket: two more uses remain.
        assert_eq!(limits.charge(&alice, Some("fast"), "p"), Ok(()));
        assert_eq!(limits.charge(&alice, Some("fast"), "p"), Ok(()));
        assert_eq!(limits.charge(&alice, Some("fast"), "p").map_err(|l| l.limit), Err(Limit::Principal));
    }

    #[test]
    fn a_plugin_limit_is_shared_by_every_caller() {
        let limits = RateLimits::new(RateRules { plugin: Some(rate("1/minute", 1)), ..RateRules::default() });
        assert_eq!(limits.charge(&Principal::token("a", vec![]), None, "weather"), Ok(()));
        assert_eq!(limits.charge(&Principal::token("b", vec![]), None, "weather").map_err(|l| l.limit), Err(Limit::Plugin));
        assert_eq!(limits.charge(&Principal::token("b", vec![]), None, "other"), Ok(()), "each plugin has its own bucket");
    }

    #[test]
    fn memory_stays_bounded_however_many_principals_appear() {
        let limits = RateLimits::new(RateRules { principal: Some(rate("1/hour", 1)), ..RateRules::default() });
        for i in 0..MAX_KEYS + 100 {
            let _ = limits.charge(&Principal::token(&format!("p{i}"), vec![]), None, "p");
        }
        let held = limits.principal.as_ref().map(|k| k.limiter.len()).unwrap_or_default();
        assert!(held <= MAX_KEYS + 1, "{held} buckets held");
        // The principals past the bound share the overflow bucket: one was admitted, the rest refused.
        assert!(limits.refused() >= 99, "{}", limits.refused());
    }

    #[test]
    fn without_rules_nothing_is_charged() {
        let limits = RateLimits::none();
        assert!(!limits.is_active());
        for _ in 0..1000 {
            assert_eq!(limits.charge(&Principal::anonymous(), Some("t"), "p"), Ok(()));
        }
    }
}
