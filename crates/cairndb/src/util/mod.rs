//! Small shared helpers: integer coding, checksums, and the memory left
//! to the process. No state, no locks.

pub mod blocking;
pub mod coding;
pub mod crc;
pub mod ioprio;
pub mod memory;

/// Hints the CPU to bring the cache line holding `p` into its caches, so
/// that several independent lookups (one per table of a point read) wait
/// for memory at the same time instead of one after another. Pure hint:
/// never faults and never reads in the Rust sense, whatever `p` is (null
/// or dangling included).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` does not dereference in the Rust sense and
    // cannot fault on any address, and SSE is part of the x86_64 baseline
    // (exercised by every point read of a table and memtable).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
