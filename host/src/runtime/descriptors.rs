//! Descriptor budgets: how many host file descriptors the calls of one plugin, and all plugins
//! together, may hold, so that no plugin can make another plugin's call fail for want of one.
//!
//! A call's descriptors (its preopened directories, the files and directories it opens, its
//! directory listings and HTTP connections) all hang off entries of its resource table, so the
//! call is charged conservatively: before each operation that opens a descriptor, it must hold
//! budget for every entry of its table plus its preopens plus the new one. The budget is taken
//! from its plugin's pool and from the process's pool, and given back when the call ends. The
//! process pool is the open-file limit less a reserve for the host's own files and sockets.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Descriptors kept back from the plugins for the host itself (transports, cache, logs).
pub(crate) const HOST_RESERVE: u64 = 1024;
/// The smallest process pool, whatever the open-file limit says.
const MIN_PROCESS_POOL: u64 = 256;

/// A pool of descriptors shared by several calls.
#[derive(Debug)]
pub(crate) struct DescriptorPool {
    limit: u64,
    used: AtomicU64,
}

impl DescriptorPool {
    pub(crate) fn new(limit: u64) -> Self {
        DescriptorPool { limit, used: AtomicU64::new(0) }
    }

    /// The process's pool: the open-file limit (its soft limit raised to the hard limit first)
    /// less `HOST_RESERVE`, or `cap` when that is smaller.
    pub(crate) fn for_process(cap: Option<u64>) -> Self {
        let available = open_file_limit().saturating_sub(HOST_RESERVE).max(MIN_PROCESS_POOL);
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

    /// Descriptors currently held from this pool.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }
}

/// Which pool had no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exhausted {
    Plugin(u64),
    Process(u64),
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exhausted::Plugin(limit) => write!(f, "descriptors (the plugin's budget of {limit})"),
            Exhausted::Process(limit) => write!(f, "descriptors (the host's budget of {limit} for all plugins)"),
        }
    }
}

/// What one call holds from its plugin's pool and the process's pool; all of it is given back
/// when the call ends.
#[derive(Debug)]
pub(crate) struct CallDescriptors {
    plugin: Arc<DescriptorPool>,
    process: Arc<DescriptorPool>,
    held: u64,
}

impl CallDescriptors {
    pub(crate) fn new(plugin: Arc<DescriptorPool>, process: Arc<DescriptorPool>) -> Self {
        CallDescriptors { plugin, process, held: 0 }
    }

    /// Makes the call hold exactly `n` descriptors' worth of budget: takes more, or gives back
    /// what it no longer needs. Nothing changes when a pool has no room.
    pub(crate) fn hold(&mut self, n: u64) -> Result<(), Exhausted> {
        if n <= self.held {
            let extra = self.held - n;
            self.plugin.give(extra);
            self.process.give(extra);
            self.held = n;
            return Ok(());
        }
        let more = n - self.held;
        if !self.plugin.take(more) {
            return Err(Exhausted::Plugin(self.plugin.limit));
        }
        if !self.process.take(more) {
            self.plugin.give(more);
            return Err(Exhausted::Process(self.process.limit));
        }
        self.held = n;
        Ok(())
    }
}

impl Drop for CallDescriptors {
    fn drop(&mut self) {
        self.plugin.give(self.held);
        self.process.give(self.held);
    }
}

/// One descriptor held outside the resource table (an HTTP connection), given back on drop.
#[derive(Debug)]
pub(crate) struct HeldDescriptor {
    plugin: Arc<DescriptorPool>,
    process: Arc<DescriptorPool>,
}

impl HeldDescriptor {
    /// Takes one descriptor from both pools, or says which had no room.
    pub(crate) fn take(plugin: &Arc<DescriptorPool>, process: &Arc<DescriptorPool>) -> Result<HeldDescriptor, Exhausted> {
        if !plugin.take(1) {
            return Err(Exhausted::Plugin(plugin.limit));
        }
        if !process.take(1) {
            plugin.give(1);
            return Err(Exhausted::Process(process.limit));
        }
        Ok(HeldDescriptor { plugin: plugin.clone(), process: process.clone() })
    }
}

impl Drop for HeldDescriptor {
    fn drop(&mut self) {
        self.plugin.give(1);
        self.process.give(1);
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

    #[test]
    fn a_call_holds_what_it_asks_and_gives_it_all_back() {
        let plugin = Arc::new(DescriptorPool::new(10));
        let process = Arc::new(DescriptorPool::new(100));
        let mut call = CallDescriptors::new(plugin.clone(), process.clone());
        call.hold(4).expect("room");
        call.hold(7).expect("room");
        assert_eq!((plugin.used(), process.used()), (7, 7));
        call.hold(2).expect("shrinks");
        assert_eq!((plugin.used(), process.used()), (2, 2));
        drop(call);
        assert_eq!((plugin.used(), process.used()), (0, 0));
    }

    #[test]
    fn one_plugin_cannot_take_what_belongs_to_another() {
        let process = Arc::new(DescriptorPool::new(12));
        let greedy = Arc::new(DescriptorPool::new(8));
        let modest = Arc::new(DescriptorPool::new(8));
        let mut a = CallDescriptors::new(greedy.clone(), process.clone());
        let mut b = CallDescriptors::new(greedy.clone(), process.clone());
        a.hold(8).expect("the plugin's whole budget");
        assert_eq!(b.hold(1), Err(Exhausted::Plugin(8)), "a second call of the same plugin finds its budget spent");
        let mut c = CallDescriptors::new(modest.clone(), process.clone());
        c.hold(4).expect("another plugin still gets descriptors");
        assert_eq!(c.hold(5), Err(Exhausted::Process(12)));
        assert_eq!((modest.used(), process.used()), (4, 12), "a refused hold takes nothing");
    }
}
