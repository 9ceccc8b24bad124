//! The process allocator's settings: how many arenas it keeps, and handing memory that a
//! compile freed back to the system. Both matter only for glibc's allocator; elsewhere they do
//! nothing.
//!
//! glibc gives threads separate arenas (up to eight per core). Cranelift spreads a compile's
//! many short-lived allocations over the compile and blocking threads, and each arena keeps
//! what it was given: after a cold start of 100 plugins, 131 MB of anonymous memory stayed
//! resident with `malloc_trim` alone, 62 MB with one arena per core as well (ARCHITECTURE.md).

/// Bounds the allocator to one arena per core. Call it first thing in `main`, before any
/// thread starts: threads pick their arena on their first allocation.
pub fn bound_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only changes a setting of the allocator; it takes no pointers.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Returns the free memory of every arena to the system, as far as it lies in whole pages.
/// Called after each compile, whose freed memory would otherwise stay resident for the life of
/// the process.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free memory to the system; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}
