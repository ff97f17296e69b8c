//! A bump allocator for the memtable (LevelDB's `util/arena.h`).
//!
//! Memory comes from chunks obtained from the global allocator. A chunk is
//! never moved, resized or freed before the arena itself is dropped, so a
//! pointer returned by [`Arena::allocate`] stays valid for the arena's whole
//! life: readers on other threads may hold it while the writer keeps
//! allocating.
//!
//! Chunk sizes start small (4 KiB) and double up to [`MAX_CHUNK`] (4 MiB; chunks of 2 MiB or more are 2 MiB-aligned and advised for huge pages), so
//! that a tiny memtable does not report megabytes of usage while a large one
//! allocates rarely. A request larger than a quarter of the next chunk size
//! gets a dedicated chunk of exactly its size, and the current chunk keeps its
//! free tail for later small requests.
//!
//! Concurrency: `allocate` must be called by one thread at a time (the
//! skiplist calls it under its `alloc` mutex); it is an `unsafe fn` for that
//! reason. [`Arena::memory_usage`] is an atomic read and
//! may be called from any thread at any time.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Size of the first chunk.
pub const MIN_CHUNK: usize = 4 << 10;
/// Largest regular chunk; later chunks all have this size.
pub const MAX_CHUNK: usize = 4 << 20;
/// Chunks at least this large are aligned to it and, on Linux, marked for
/// transparent huge pages: skiplist searches are chains of dependent random
/// loads, and 2 MiB pages remove most of their TLB misses.
const HUGE_PAGE: usize = 2 << 20;
/// Alignment of every chunk, and the largest alignment `allocate` supports.
pub const MAX_ALIGN: usize = 16;

struct State {
    /// Next free byte of the current chunk (null before the first chunk).
    ptr: *mut u8,
    /// Free bytes left after `ptr` in the current chunk.
    remaining: usize,
    /// Size of the next regular chunk.
    next_chunk: usize,
    /// Every chunk ever allocated, freed on drop.
    chunks: Vec<(NonNull<u8>, Layout)>,
}

/// A bump allocator; see the module documentation.
pub struct Arena {
    state: UnsafeCell<State>,
    usage: AtomicUsize,
}

// SAFETY: the arena owns its chunks outright (nothing else frees them), and the
// raw pointers in `State` point only into those chunks, so moving the arena to
// another thread is fine.
unsafe impl Send for Arena {}
// SAFETY: the only access to `state` through `&self` is `allocate`, an unsafe
// fn whose contract forbids concurrent calls; `memory_usage` reads an atomic.
// Memory handed out is the caller's to synchronise (the skiplist publishes it
// with release stores).
unsafe impl Sync for Arena {}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl Arena {
    /// An empty arena; no memory is reserved until the first allocation.
    pub fn new() -> Self {
        Arena {
            state: UnsafeCell::new(State {
                ptr: std::ptr::null_mut(),
                remaining: 0,
                next_chunk: MIN_CHUNK,
                chunks: Vec::new(),
            }),
            usage: AtomicUsize::new(0),
        }
    }

    /// Exact number of bytes reserved from the global allocator so far
    /// (chunk sizes; not counting the small bookkeeping vector).
    #[inline]
    pub fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    /// Returns `size` bytes (uninitialised) aligned to `align`. The memory
    /// stays valid, at the same address, until the arena is dropped.
    ///
    /// Panics if `size == 0`, or `align` is not a power of two `<= MAX_ALIGN`.
    ///
    /// # Safety
    ///
    /// No other call to `allocate` on this arena may run at the same time
    /// (callers serialise their writers, e.g. with a mutex).
    #[inline]
    pub unsafe fn allocate(&self, size: usize, align: usize) -> *mut u8 {
        assert!(size > 0, "zero-sized arena allocation");
        assert!(align.is_power_of_two() && align <= MAX_ALIGN);
        // SAFETY: the caller guarantees no concurrent `allocate`, and no other
        // method touches `state`, so this is the only reference to it.
        let st = unsafe { &mut *self.state.get() };
        let pad = (st.ptr as usize).wrapping_neg() & (align - 1);
        if let Some(need) = pad.checked_add(size) {
            if need <= st.remaining {
                // SAFETY: `remaining > 0` implies `ptr` is inside a live chunk
                // with at least `pad + size` bytes after it, so both offsets
                // stay within that chunk.
                unsafe {
                    let p = st.ptr.add(pad);
                    st.ptr = p.add(size);
                    st.remaining -= need;
                    return p;
                }
            }
        }
        self.allocate_slow(st, size)
    }

    #[cold]
    fn allocate_slow(&self, st: &mut State, size: usize) -> *mut u8 {
        if size > st.next_chunk / 4 {
            // Dedicated chunk; chunks are MAX_ALIGN-aligned so any supported
            // alignment holds at offset 0.
            return self.new_chunk(st, size);
        }
        let chunk = st.next_chunk;
        st.next_chunk = (chunk * 2).min(MAX_CHUNK);
        let p = self.new_chunk(st, chunk);
        // SAFETY: `size <= chunk / 4 < chunk`, so `p + size` is inside the chunk.
        st.ptr = unsafe { p.add(size) };
        st.remaining = chunk - size;
        p
    }

    fn new_chunk(&self, st: &mut State, bytes: usize) -> *mut u8 {
        let align = if bytes >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            MAX_ALIGN
        };
        let layout = Layout::from_size_align(bytes, align).expect("arena request too large");
        // SAFETY: `layout` has a non-zero size (callers never ask for 0 bytes).
        let p = unsafe { alloc(layout) };
        let p = NonNull::new(p).unwrap_or_else(|| handle_alloc_error(layout));
        // (Not under Miri, which cannot call madvise; the advice is a hint.)
        #[cfg(all(target_os = "linux", not(miri)))]
        if bytes >= HUGE_PAGE {
            let len = bytes / HUGE_PAGE * HUGE_PAGE;
            // SAFETY: `[p, p + len)` lies inside the allocation just made and
            // is page-aligned (2 MiB); MADV_HUGEPAGE only changes how the
            // kernel backs the range, never its contents or validity. The
            // result is ignored: it is a hint.
            unsafe {
                libc::madvise(p.as_ptr() as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
        st.chunks.push((p, layout));
        self.usage.fetch_add(bytes, Ordering::Relaxed);
        p.as_ptr()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &(p, layout) in &self.state.get_mut().chunks {
            // SAFETY: each chunk was allocated by `alloc` with exactly this
            // layout and is freed once, here; `&mut self` means no reference
            // into the arena survives.
            unsafe { dealloc(p.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_and_no_overlap() {
        let a = Arena::new();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for i in 1..2000usize {
            let size = i % 97 + 1;
            let align = 1 << (i % 5);
            // SAFETY: single-threaded test, no concurrent allocate.
            let p = unsafe { a.allocate(size, align) };
            assert_eq!(p as usize % align, 0);
            // Write every byte (Miri would flag an out-of-bounds write).
            // SAFETY: `p` points to `size` fresh bytes owned by the arena.
            unsafe { std::ptr::write_bytes(p, i as u8, size) };
            spans.push((p as usize, size));
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping allocations");
        }
    }

    #[test]
    fn usage_is_exact_and_monotonic() {
        let a = Arena::new();
        assert_eq!(a.memory_usage(), 0);
        // SAFETY: single-threaded test.
        unsafe { a.allocate(8, 8) };
        assert_eq!(a.memory_usage(), MIN_CHUNK);
        let mut last = a.memory_usage();
        let mut total = 8;
        for i in 0..10_000usize {
            let size = 1 + i % 300;
            total += size;
            // SAFETY: single-threaded test.
            unsafe { a.allocate(size, 8) };
            let u = a.memory_usage();
            assert!(u >= last);
            last = u;
        }
        assert!(last >= total);
        // Doubling chunks waste at most about half of what was reserved.
        assert!(
            last <= 2 * total + MIN_CHUNK,
            "usage {last} for {total} bytes"
        );
        // A large request gets a dedicated chunk of exactly its size.
        let before = a.memory_usage();
        // SAFETY: single-threaded test.
        let p = unsafe { a.allocate(5 << 20, 8) };
        // SAFETY: `p` points to 5 MiB owned by the arena.
        unsafe { std::ptr::write_bytes(p, 1, 5 << 20) };
        assert_eq!(a.memory_usage(), before + (5 << 20));
    }
}
