//! The process allocator's settings: how many arenas it keeps, where it gets large blocks,
//! and handing memory that a compile freed back to the system. All of it matters only for
//! glibc's allocator; elsewhere it does nothing.
//!
//! - **Arenas.** glibc gives threads separate arenas (up to eight per core). Cranelift spreads
//!   a compile's many short-lived allocations over the compile and blocking threads, and each
//!   arena keeps what it was given: after a cold start of 100 plugins, 131 MB of anonymous
//!   memory stayed resident with `malloc_trim` alone, 62 MB with one arena per core as well.
//! - **Large blocks.** A large call allocates and frees several blocks of its own size: the
//!   line read, the text lifted out of the guest, the reply written. By default glibc maps such
//!   blocks fresh, or shrinks the heap under them once freed, so every large call faults its
//!   pages in again: about 900 of the 1,200 page faults of a 1 MiB echo. Blocks up to
//!   `MMAP_THRESHOLD` come from the heap, and up to `TRIM_THRESHOLD` of free heap top is kept for
//!   the next call: 280 faults per 1 MiB echo (ARCHITECTURE.md).

/// Blocks larger than this are mapped on their own and unmapped when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 4 << 20;
/// Free memory at the top of the heap beyond this is returned to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 16 << 20;

/// Bounds the allocator to one arena per core and sets where large blocks come from. Call it
/// first thing in `main`, before any thread starts: threads pick their arena on their first
/// allocation.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only changes settings of the allocator; it takes no pointers.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
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
