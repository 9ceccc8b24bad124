//! The process-wide memory budget for what clients can make the host hold: replies and
//! messages queued for them, replay logs, request bodies being read and the requests they carry,
//! the replies a batch gathers, and what tasks hold (results, questions, answers).
//!
//! Each channel already has shares of its own (its queue's byte cap, each stream's replay cap,
//! the body limit); this budget bounds their sum across every client, so that many clients
//! together cannot take more than the process has. Work that would go over it is refused at
//! once (`OverBudget`: 503 over HTTP, `-32000` in JSON-RPC), what can be dropped (notifications,
//! the oldest replay events, finished streams) is dropped first, and what was already produced
//! for an admitted request (its reply) is always taken: admission bounds it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The smallest budget, whatever the machine or the operator says.
pub const MIN_BUDGET: usize = 64 << 20;

/// The budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server's memory budget for clients ({} MiB) is spent; retry shortly", .limit >> 20)]
pub struct OverBudget {
    /// The budget, in bytes.
    pub limit: usize,
}

/// Bytes held for clients, process-wide.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    /// The most held since memory was last handed back to the system.
    high: AtomicUsize,
    refused: AtomicU64,
}

/// How much must have been let go since the last look before freed memory is handed back.
const RETURN_AFTER: usize = 32 << 20;

impl Budget {
    /// A budget of `limit` bytes (at least `MIN_BUDGET`).
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit: limit.max(MIN_BUDGET),
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            high: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// A budget with no practical limit (tests, and hosts that set none).
    pub fn unlimited() -> Arc<Budget> {
        Budget::new(usize::MAX / 2)
    }

    /// The default for this machine: half of its memory, or of the cgroup's limit when that is
    /// smaller.
    pub fn for_machine() -> usize {
        let physical = physical_memory().unwrap_or(4 << 30);
        let cgroup = cgroup_limit().unwrap_or(usize::MAX);
        (physical.min(cgroup) / 2).max(MIN_BUDGET)
    }

    /// Bytes the budget allows.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The most ever held at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Charges refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Whether less than `fraction` of the budget is left.
    pub fn is_low(&self, fraction: f64) -> bool {
        (self.limit - self.used().min(self.limit)) as f64 <= self.limit as f64 * fraction
    }

    /// Hands freed memory back to the system after a burst: every `period`, if more than
    /// `RETURN_AFTER` bytes were let go since the last look (a burst of large bodies or replies
    /// that ended), the allocator returns its free pages. Without it, glibc keeps the freed
    /// memory of every arena resident. Runs until the runtime stops.
    pub async fn return_freed_memory(self: Arc<Self>, period: std::time::Duration) {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if self.should_return() {
                // Walks every arena: off the workers.
                let _ = tokio::task::spawn_blocking(crate::allocator::release_free_memory).await;
            }
        }
    }

    /// Whether enough was let go since the last look to hand memory back; starts a new look.
    fn should_return(&self) -> bool {
        let used = self.used();
        let high = self.high.swap(used, Ordering::Relaxed);
        high.saturating_sub(used) >= RETURN_AFTER
    }

    /// Takes `bytes`, all or nothing.
    ///
    /// # Errors
    /// `OverBudget` when they would take the budget past its limit.
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Result<Charge, OverBudget> {
        self.take(bytes)?;
        Ok(Charge { budget: Arc::clone(self), bytes })
    }

    /// Takes `bytes` whatever is left: for what was already produced for admitted work.
    pub fn force(self: &Arc<Self>, bytes: usize) -> Charge {
        let used = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(used, Ordering::Relaxed);
        self.high.fetch_max(used, Ordering::Relaxed);
        Charge { budget: Arc::clone(self), bytes }
    }

    fn take(&self, bytes: usize) -> Result<(), OverBudget> {
        match self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| used.checked_add(bytes).filter(|u| *u <= self.limit)) {
            Ok(before) => {
                self.peak.fetch_max(before + bytes, Ordering::Relaxed);
                self.high.fetch_max(before + bytes, Ordering::Relaxed);
                Ok(())
            }
            Err(_) => {
                if self.refused.fetch_add(1, Ordering::Relaxed).is_multiple_of(1000) {
                    tracing::warn!(limit = self.limit, used = self.used(), "the memory budget for clients is spent: work is refused until some is freed");
                }
                Err(OverBudget { limit: self.limit })
            }
        }
    }
}

/// Bytes held from a budget; given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Charge {
    /// Grows (or shrinks) the charge to `bytes`.
    ///
    /// # Errors
    /// `OverBudget` when growing would take the budget past its limit; the charge is unchanged.
    pub fn grow_to(&mut self, bytes: usize) -> Result<(), OverBudget> {
        if bytes > self.bytes {
            self.budget.take(bytes - self.bytes)?;
        } else {
            self.budget.used.fetch_sub(self.bytes - bytes, Ordering::Relaxed);
        }
        self.bytes = bytes;
        Ok(())
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

fn physical_memory() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn cgroup_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_all_or_nothing_and_given_back_when_dropped() {
        let budget = Budget::new(MIN_BUDGET);
        let half = budget.charge(MIN_BUDGET / 2).expect("fits");
        let mut rest = budget.charge(MIN_BUDGET / 2).expect("fits exactly");
        assert_eq!(budget.charge(1).err(), Some(OverBudget { limit: MIN_BUDGET }));
        assert_eq!(budget.used(), MIN_BUDGET, "a refused charge takes nothing");
        assert!(rest.grow_to(MIN_BUDGET / 2 + 1).is_err());
        rest.grow_to(10).expect("shrinking always works");
        assert_eq!(budget.used(), MIN_BUDGET / 2 + 10);
        drop(half);
        drop(rest);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.refused(), 2);
    }

    #[test]
    fn forced_charges_go_over_and_block_new_work_until_freed() {
        let budget = Budget::new(MIN_BUDGET);
        let forced = budget.force(MIN_BUDGET + 5);
        assert!(budget.charge(1).is_err());
        assert!(budget.is_low(0.1));
        drop(forced);
        assert!(budget.charge(1).is_ok());
        assert_eq!(budget.peak(), MIN_BUDGET + 5);
    }

    #[test]
    fn memory_is_handed_back_only_after_a_burst_was_let_go() {
        let budget = Budget::new(1 << 30);
        assert!(!budget.should_return(), "nothing was held");
        let burst = budget.charge(RETURN_AFTER + 1).expect("fits");
        assert!(!budget.should_return(), "still held");
        drop(burst);
        assert!(budget.should_return(), "a burst ended");
        assert!(!budget.should_return(), "and was handed back once");
        let small = budget.charge(1024).expect("fits");
        drop(small);
        assert!(!budget.should_return(), "small work never trims");
    }

    #[test]
    fn the_machine_default_is_at_least_the_minimum() {
        assert!(Budget::for_machine() >= MIN_BUDGET);
    }
}
