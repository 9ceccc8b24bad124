//! Descriptor budgets: how many host file descriptors the calls of one plugin may hold, so that
//! no plugin can make another plugin's call (or the host) fail for want of one.
//!
//! The process pool is the open-file limit less a reserve for the host's own files and sockets.
//! Each plugin that can hold descriptors (one granted files or network) reserves its budget out
//! of the process pool when it is loaded, and gives it back when it is dropped: the budgets of
//! the plugins loaded never add up to more than the pool, so each plugin always gets up to its
//! own budget, whatever the others hold. A budget larger than what is left is cut to what is
//! left (a folder's plugins are cut in proportion first, see `fit`); a plugin for which fewer
//! than `MIN_BUDGET` are left is refused at load.
//!
//! A call's descriptors (its preopened directories, the files and directories it opens, its
//! directory listings and HTTP connections) all hang off entries of its resource table, so the
//! call is charged conservatively: before each operation that opens a descriptor, it must hold
//! budget for every entry of its table plus its preopens plus the new one. The budget is taken
//! from its plugin's pool, and given back when the call ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::policy::Grant;

/// Descriptors kept back from the plugins for the host itself (transports, cache, logs).
pub(crate) const HOST_RESERVE: u64 = 1024;
/// The smallest process pool, whatever the open-file limit says.
const MIN_PROCESS_POOL: u64 = 256;
/// The smallest budget a plugin that can hold descriptors is loaded with (the smallest a grant
/// may name).
pub(crate) const MIN_BUDGET: u64 = 16;

/// A pool of descriptors: the process's, whose budget is reserved by plugins, or a plugin's,
/// whose budget is held by its calls.
#[derive(Debug)]
pub(crate) struct DescriptorPool {
    limit: u64,
    used: AtomicU64,
    /// The part of the process's pool this (a plugin's) pool holds, given back when it is dropped.
    reserved: Option<Arc<DescriptorPool>>,
}

impl DescriptorPool {
    pub(crate) fn new(limit: u64) -> Self {
        DescriptorPool { limit, used: AtomicU64::new(0), reserved: None }
    }

    /// The process's pool: the open-file limit (its soft limit raised to the hard limit first)
    /// less what the host keeps for itself (`host`: at least `HOST_RESERVE`; a listener adds its
    /// connections), or `cap` when that is smaller.
    pub(crate) fn for_process(cap: Option<u64>, host: u64) -> Self {
        let limit = open_file_limit();
        let host = host.max(HOST_RESERVE);
        if limit < host + MIN_PROCESS_POOL {
            tracing::warn!(
                open_file_limit = limit,
                host,
                "the open-file limit leaves the plugins too few descriptors beside the host's own and its connections (fix: raise `ulimit -n`, or lower --max-connections)"
            );
        }
        let available = limit.saturating_sub(host).max(MIN_PROCESS_POOL);
        DescriptorPool::new(cap.map_or(available, |cap| cap.min(available)))
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    fn take(&self, n: u64) -> bool {
        self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| used.checked_add(n).filter(|u| *u <= self.limit)).is_ok()
    }

    fn give(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Descriptors currently held from this pool (for the process's pool: reserved by plugins).
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Descriptors of this pool nobody holds or reserves.
    pub(crate) fn free(&self) -> u64 {
        self.limit.saturating_sub(self.used())
    }

    /// A plugin's pool of `wanted` descriptors reserved out of this (the process's) pool; of
    /// fewer when fewer are left (its limit then says how many), or none when fewer than
    /// `MIN_BUDGET` are left.
    pub(crate) fn reserve(process: &Arc<DescriptorPool>, wanted: u64) -> Result<DescriptorPool, Unreserved> {
        if wanted == 0 {
            return Ok(DescriptorPool::new(0));
        }
        let mut granted = 0;
        let reserved = process.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            granted = wanted.min(process.limit.saturating_sub(used));
            (granted >= wanted.min(MIN_BUDGET)).then_some(used + granted)
        });
        match reserved {
            Ok(_) => Ok(DescriptorPool { limit: granted, used: AtomicU64::new(0), reserved: Some(Arc::clone(process)) }),
            Err(used) => Err(Unreserved { wanted, left: process.limit.saturating_sub(used), pool: process.limit }),
        }
    }
}

impl Drop for DescriptorPool {
    fn drop(&mut self) {
        if let Some(process) = &self.reserved {
            process.give(self.limit);
        }
    }
}

/// A plugin's budget found no room in the process's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "its descriptor budget ({wanted}) does not fit: {left} of the host's {pool} descriptors for plugins are left, the rest is reserved by the plugins loaded before it (fix: lower `limits.descriptors` in the grants of the plugins that grant files or network, or raise the open-file limit: `ulimit -n`, `LimitNOFILE=`)"
)]
pub struct Unreserved {
    pub wanted: u64,
    pub left: u64,
    pub pool: u64,
}

/// The plugin's pool had no room: its budget (`0`) is spent by its own running calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exhausted(pub(crate) u64);

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "descriptors (the plugin's budget of {})", self.0)
    }
}

/// The most descriptors one call can hold: a full resource table (each entry may hold one),
/// and its outgoing requests in flight. The sandbox, which sets both, names it
/// (`prepared::CALL_CEILING`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallCeiling {
    pub(crate) resources: u64,
    pub(crate) requests: u64,
}

/// Descriptors a plugin with `grant` is reserved: none without files or network (it can open
/// nothing), else its budget, or less when its calls could never hold that much (each of its
/// `concurrency` calls at most a full resource table and its preopens, and its outgoing
/// requests in flight).
pub(crate) fn wanted(grant: &Grant, ceiling: CallCeiling) -> u64 {
    let files = if grant.files.is_empty() { 0 } else { ceiling.resources + grant.files.len() as u64 + 1 };
    let network = if grant.network.is_empty() { 0 } else { ceiling.requests };
    grant.limits.descriptors.min((files + network).saturating_mul(u64::from(grant.limits.concurrency.max(1))))
}

/// Fits the budgets of plugins about to load into the `free` descriptors of the process's pool:
/// when what they want (`wanted`) adds up to more, each budget is cut to its share, in
/// proportion, and the warning naming them and the fix is returned.
pub(crate) fn fit<'a>(plugins: impl Iterator<Item = (&'a str, &'a mut Grant)>, free: u64, pool: u64, ceiling: CallCeiling) -> Option<String> {
    let mut wanting: Vec<(&str, &mut Grant, u64)> = plugins
        .map(|(id, grant)| (id, wanted(grant, ceiling), grant))
        .filter(|(_, wanted, _)| *wanted > 0)
        .map(|(id, wanted, grant)| (id, grant, wanted))
        .collect();
    let total: u64 = wanting.iter().map(|(_, _, wanted)| wanted).sum();
    if total <= free {
        return None;
    }
    let named: Vec<String> = wanting.iter().map(|(id, _, wanted)| format!("`{id}` {wanted}")).collect();
    for (_, grant, wanted) in &mut wanting {
        let share = u128::from(*wanted) * u128::from(free) / u128::from(total);
        grant.limits.descriptors = u64::try_from(share).unwrap_or(u64::MAX).max(MIN_BUDGET.min(*wanted));
    }
    Some(format!(
        "the descriptor budgets of the plugins that grant files or network ({}) add up to {total}, more than the {free} left of the host's {pool} for plugins: each is cut to its share (fix: lower `limits.descriptors` in their grants, or raise the open-file limit: `ulimit -n`, `LimitNOFILE=`)",
        named.join(", ")
    ))
}

/// What one call holds from its plugin's pool; all of it is given back when the call ends.
#[derive(Debug)]
pub(crate) struct CallDescriptors {
    plugin: Arc<DescriptorPool>,
    held: u64,
}

impl CallDescriptors {
    pub(crate) fn new(plugin: Arc<DescriptorPool>) -> Self {
        CallDescriptors { plugin, held: 0 }
    }

    /// Makes the call hold exactly `n` descriptors' worth of budget: takes more, or gives back
    /// what it no longer needs. Nothing changes when the pool has no room.
    pub(crate) fn hold(&mut self, n: u64) -> Result<(), Exhausted> {
        if n <= self.held {
            self.plugin.give(self.held - n);
            self.held = n;
            return Ok(());
        }
        if !self.plugin.take(n - self.held) {
            return Err(Exhausted(self.plugin.limit));
        }
        self.held = n;
        Ok(())
    }
}

impl Drop for CallDescriptors {
    fn drop(&mut self) {
        self.plugin.give(self.held);
    }
}

/// One descriptor held outside the resource table (an HTTP connection), given back on drop.
#[derive(Debug)]
pub(crate) struct HeldDescriptor {
    plugin: Arc<DescriptorPool>,
}

impl HeldDescriptor {
    /// Takes one descriptor from the plugin's pool, or says it had no room.
    pub(crate) fn take(plugin: &Arc<DescriptorPool>) -> Result<HeldDescriptor, Exhausted> {
        if !plugin.take(1) {
            return Err(Exhausted(plugin.limit));
        }
        Ok(HeldDescriptor { plugin: plugin.clone() })
    }
}

impl Drop for HeldDescriptor {
    fn drop(&mut self) {
        self.plugin.give(1);
    }
}

/// The process's open-file limit, after raising the soft limit to the hard limit.
fn open_file_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limits = getrlimit(Resource::Nofile);
    if let (Some(current), Some(hard)) = (limits.current, limits.maximum)
        && current < hard
    {
        let raised = rustix::process::Rlimit { current: Some(hard), maximum: Some(hard) };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return hard;
        }
    }
    limits.current.unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sandbox's ceiling, as the loader passes it.
    const CEILING: CallCeiling = crate::runtime::sandbox::prepared::CALL_CEILING;

    #[test]
    fn what_the_host_keeps_for_its_connections_is_never_the_plugins() {
        let plain = DescriptorPool::for_process(None, HOST_RESERVE);
        let listening = DescriptorPool::for_process(None, HOST_RESERVE + 5000);
        let limit = open_file_limit();
        assert_eq!(plain.limit(), limit.saturating_sub(HOST_RESERVE).max(MIN_PROCESS_POOL));
        assert_eq!(listening.limit(), limit.saturating_sub(HOST_RESERVE + 5000).max(MIN_PROCESS_POOL));
        assert_eq!(DescriptorPool::for_process(None, 1).limit(), plain.limit(), "the host keeps at least its own reserve");
    }

    fn file_grant(descriptors: u64) -> Grant {
        let mut grant = Grant::default();
        grant.files.push(crate::policy::FsGrant { host: "/tmp".into(), guest: "/data".into(), mode: crate::policy::FsMode::ReadOnly });
        grant.limits.descriptors = descriptors;
        grant
    }

    #[test]
    fn a_call_holds_what_it_asks_and_gives_it_all_back() {
        let process = Arc::new(DescriptorPool::new(100));
        let plugin = Arc::new(DescriptorPool::reserve(&process, 10).expect("room"));
        let mut call = CallDescriptors::new(plugin.clone());
        call.hold(4).expect("room");
        call.hold(7).expect("room");
        assert_eq!((plugin.used(), process.used()), (7, 10), "the process pool counts the plugin's reservation, not its calls");
        call.hold(2).expect("shrinks");
        assert_eq!(plugin.used(), 2);
        assert_eq!(call.hold(11), Err(Exhausted(10)));
        drop(call);
        assert_eq!(plugin.used(), 0);
        drop(plugin);
        assert_eq!(process.used(), 0, "a dropped plugin gives its reservation back");
    }

    #[test]
    fn each_plugin_gets_its_whole_budget_whatever_the_others_hold() {
        let process = Arc::new(DescriptorPool::new(40));
        let greedy = Arc::new(DescriptorPool::reserve(&process, 24).expect("room"));
        let modest = Arc::new(DescriptorPool::reserve(&process, 24).expect("what is left"));
        assert_eq!((greedy.limit(), modest.limit()), (24, 16), "a budget larger than what is left is cut to it");
        let mut a = CallDescriptors::new(greedy.clone());
        let mut b = CallDescriptors::new(greedy.clone());
        a.hold(24).expect("the plugin's whole budget");
        assert_eq!(b.hold(1), Err(Exhausted(24)), "a second call of the same plugin finds its budget spent");
        assert_eq!(HeldDescriptor::take(&greedy).unwrap_err(), Exhausted(24));
        let mut c = CallDescriptors::new(modest.clone());
        c.hold(16).expect("another plugin still gets its whole budget");
        assert_eq!(DescriptorPool::reserve(&process, 8).unwrap_err(), Unreserved { wanted: 8, left: 0, pool: 40 }, "nothing is left to reserve");
        assert!(DescriptorPool::reserve(&process, 0).is_ok(), "a plugin that can open nothing needs nothing");
    }

    #[test]
    fn a_budget_is_cut_to_what_is_left_but_never_below_the_smallest() {
        let process = Arc::new(DescriptorPool::new(100));
        let first = DescriptorPool::reserve(&process, 90).expect("room");
        let refused = DescriptorPool::reserve(&process, 64).unwrap_err();
        assert_eq!(refused, Unreserved { wanted: 64, left: 10, pool: 100 });
        let message = refused.to_string();
        assert!(message.contains("(64)") && message.contains("10 of the host's 100") && message.contains("fix: lower `limits.descriptors`"), "{message}");
        assert_eq!(process.used(), 90, "a refusal reserves nothing");
        assert_eq!(DescriptorPool::reserve(&process, 8).expect("a small budget fits whole").limit(), 8);
        drop(first);
        assert_eq!(process.used(), 0);
    }

    #[test]
    fn a_plugin_that_can_open_nothing_is_reserved_nothing_and_a_network_one_what_it_can_hold() {
        assert_eq!(wanted(&Grant::default(), CEILING), 0);
        assert_eq!(wanted(&file_grant(4096), CEILING), 4096);
        let network = Grant {
            network: crate::policy::EgressRules::parse(&["https://example.com".to_owned()]).expect("a rule"),
            limits: crate::policy::Limits { concurrency: 4, ..crate::policy::Limits::default() },
            ..Grant::default()
        };
        assert_eq!(wanted(&network, CEILING), 4 * CEILING.requests, "four calls of sixteen requests each");
    }

    #[test]
    fn budgets_that_do_not_fit_are_cut_in_proportion_with_a_warning() {
        let mut grants = [("a", file_grant(4096)), ("b", file_grant(4096)), ("c", file_grant(2048)), ("none", Grant::default())];
        assert_eq!(fit(grants.iter_mut().map(|(id, g)| (*id, g)), 20_000, 20_000, CEILING), None, "10240 fit in 20000");
        let warning = fit(grants.iter_mut().map(|(id, g)| (*id, g)), 5_120, 18_976, CEILING).expect("10240 do not fit in 5120");
        let budgets: Vec<u64> = grants.iter().map(|(_, g)| g.limits.descriptors).collect();
        assert_eq!(budgets, [2048, 2048, 1024, Grant::default().limits.descriptors], "half each; a plugin that opens nothing keeps its grant");
        assert!(budgets[..3].iter().sum::<u64>() <= 5_120);
        for expected in ["`a` 4096", "`b` 4096", "`c` 2048", "add up to 10240", "5120 left of the host's 18976", "fix: lower `limits.descriptors`"] {
            assert!(warning.contains(expected), "`{expected}` missing from: {warning}");
        }
        assert!(!warning.contains("none"), "{warning}");
    }
}
