//! A bump allocator for the memtable (LevelDB's `util/arena.h`).
//!
//! Memory comes from chunks obtained from the global allocator. A chunk is
//! never moved, resized or freed before the arena itself is dropped, so a
//! pointer returned by [`Arena::allocate`] stays valid for the arena's whole
//! life: readers on other threads may hold it while the writer keeps
//! allocating.
//!
//! Chunk sizes start small (4 KiB) and double up to [`MAX_CHUNK`] (4 MiB;
//! on Linux, chunks of 2 MiB or more are mappings of their own, 2 MiB-aligned
//! and advised for huge pages), so
//! that a tiny memtable does not report megabytes of usage while a large one
//! allocates rarely. A request larger than a quarter of the next chunk size
//! gets a dedicated chunk of exactly its size, and the current chunk keeps its
//! free tail for later small requests.
//!
//! When an arena drops, up to [`POOL_CHUNKS`] of its mapped [`MAX_CHUNK`]
//! chunks go to a process-wide pool instead of being unmapped, marked
//! `MADV_FREE` (the kernel may take their pages back under memory pressure,
//! or leave them for reuse); a later arena's `MAX_CHUNK` chunk comes from
//! the pool first. A fresh chunk costs a page fault and the zeroing of
//! every huge page on its first touch, about a tenth of a sequential fill's
//! time (docs/bench/engine.md, "Where the time goes"). Pooled memory holds
//! no live data: the arena hands out uninitialised bytes, and its callers
//! write every byte before they read it.
//!
//! Concurrency: `allocate` must be called by one thread at a time (the
//! skiplist calls it under its `alloc` mutex); it is an `unsafe fn` for that
//! reason. [`Arena::memory_usage`] is an atomic read and
//! may be called from any thread at any time. The pool is a leaf mutex held
//! only to push or pop one address, never across a system call.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Size of the first chunk.
pub const MIN_CHUNK: usize = 4 << 10;
/// Largest regular chunk; later chunks all have this size.
pub const MAX_CHUNK: usize = 4 << 20;
/// Chunks at least this large are, on Linux, mappings of their own aligned
/// to it and marked for transparent huge pages (see `map_huge`).
#[cfg_attr(any(not(target_os = "linux"), miri), allow(dead_code))]
const HUGE_PAGE: usize = 2 << 20;
/// Most `MAX_CHUNK` chunks kept for reuse across arenas (64 MiB).
pub const POOL_CHUNKS: usize = 16;

/// Start addresses of pooled chunks: each is a `map_huge` mapping of exactly
/// `MAX_CHUNK` bytes that no arena owns. See the module documentation.
#[cfg(all(target_os = "linux", not(miri)))]
static POOL: parking_lot::Mutex<Vec<usize>> = parking_lot::Mutex::new(Vec::new());

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
    chunks: Vec<Chunk>,
}

/// Where a chunk's memory came from, so that drop gives it back there.
enum Chunk {
    /// From the global allocator, with this layout.
    Heap(NonNull<u8>, Layout),
    /// An anonymous mapping of its own of this many bytes (a multiple of
    /// the page size), advised for huge pages. Not from the global
    /// allocator: the advice stays with the address range, and a range
    /// handed back to malloc would keep it and back later small, sparse
    /// allocations with 2 MiB pages (the server's resident size grew by
    /// tens of megabytes of `AnonHugePages` that way).
    #[cfg(all(target_os = "linux", not(miri)))]
    Mapped(NonNull<u8>, usize),
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
        #[cfg(all(target_os = "linux", not(miri)))]
        if bytes == MAX_CHUNK {
            let pooled = POOL.lock().pop();
            if let Some(p) = pooled.and_then(|a| NonNull::new(a as *mut u8)) {
                st.chunks.push(Chunk::Mapped(p, MAX_CHUNK));
                self.usage.fetch_add(bytes, Ordering::Relaxed);
                return p.as_ptr();
            }
        }
        #[cfg(all(target_os = "linux", not(miri)))]
        if bytes >= HUGE_PAGE {
            if let Some((p, len)) = map_huge(bytes) {
                st.chunks.push(Chunk::Mapped(p, len));
                self.usage.fetch_add(bytes, Ordering::Relaxed);
                return p.as_ptr();
            }
            // The mapping failed: fall back to the allocator, unadvised.
        }
        let layout = Layout::from_size_align(bytes, MAX_ALIGN).expect("arena request too large");
        // SAFETY: `layout` has a non-zero size (callers never ask for 0 bytes).
        let p = unsafe { alloc(layout) };
        let p = NonNull::new(p).unwrap_or_else(|| handle_alloc_error(layout));
        st.chunks.push(Chunk::Heap(p, layout));
        self.usage.fetch_add(bytes, Ordering::Relaxed);
        p.as_ptr()
    }
}

/// Maps `bytes` (rounded up to whole pages) of anonymous memory at a
/// 2 MiB-aligned address and advises its whole 2 MiB pages for
/// transparent huge pages: skiplist searches are chains of dependent
/// random loads, and huge pages remove most of their TLB misses. Returns
/// the start and the mapped length, or None if the kernel refuses.
#[cfg(all(target_os = "linux", not(miri)))]
fn map_huge(bytes: usize) -> Option<(NonNull<u8>, usize)> {
    const PAGE: usize = 4096;
    let len = bytes.checked_add(PAGE - 1)? & !(PAGE - 1);
    // Room to slide the start up to the next 2 MiB boundary.
    let reserve = len.checked_add(HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing: no existing memory is touched.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            reserve,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let start = raw as usize;
    let aligned = (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
    let head = aligned - start;
    let tail = reserve - head - len;
    // SAFETY: `[start, start + reserve)` is the mapping just made; the head
    // `[start, aligned)` and the tail `[aligned + len, start + reserve)` are
    // page-aligned pieces of it that nothing uses, given back here. The
    // madvise range lies inside `[aligned, aligned + len)`; MADV_HUGEPAGE
    // only changes how the kernel backs it (a hint: its result is ignored).
    unsafe {
        if head > 0 {
            libc::munmap(raw, head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        libc::madvise(
            aligned as *mut libc::c_void,
            len / HUGE_PAGE * HUGE_PAGE,
            libc::MADV_HUGEPAGE,
        );
    }
    NonNull::new(aligned as *mut u8).map(|p| (p, len))
}

/// Puts the `MAX_CHUNK` mapping at `p`, which the caller gives up, into the
/// pool; false (the caller unmaps it) when the pool is full or the kernel
/// refuses `MADV_FREE`.
#[cfg(all(target_os = "linux", not(miri)))]
fn pool_chunk(p: NonNull<u8>) -> bool {
    if POOL.lock().len() >= POOL_CHUNKS {
        return false;
    }
    // SAFETY: `[p, p + MAX_CHUNK)` is a private anonymous mapping the
    // caller owns and no longer reads or writes; MADV_FREE only lets the
    // kernel drop its pages (reading them later yields zeros or the old
    // bytes, and the arena promises callers neither).
    let rc = unsafe { libc::madvise(p.as_ptr() as *mut libc::c_void, MAX_CHUNK, libc::MADV_FREE) };
    if rc != 0 {
        return false;
    }
    let mut pool = POOL.lock();
    if pool.len() >= POOL_CHUNKS {
        return false;
    }
    pool.push(p.as_ptr() as usize);
    true
}

impl Drop for Arena {
    fn drop(&mut self) {
        for c in &self.state.get_mut().chunks {
            match *c {
                // SAFETY: each heap chunk was allocated by `alloc` with
                // exactly this layout and is freed once, here; `&mut self`
                // means no reference into the arena survives.
                Chunk::Heap(p, layout) => unsafe { dealloc(p.as_ptr(), layout) },
                #[cfg(all(target_os = "linux", not(miri)))]
                Chunk::Mapped(p, len) => {
                    if len == MAX_CHUNK && pool_chunk(p) {
                        continue;
                    }
                    // SAFETY: `[p, p + len)` is exactly what `map_huge` kept
                    // mapped (directly or through the pool), unmapped once,
                    // here; no reference into it survives.
                    unsafe {
                        libc::munmap(p.as_ptr() as *mut libc::c_void, len);
                    }
                }
            }
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

    /// Regression: chunks of 2 MiB and more, advised for huge pages, came
    /// from the global allocator; once freed, their address ranges went
    /// back to malloc with the advice still on them, and later small
    /// allocations there were backed by 2 MiB pages (the server's resident
    /// memory grew far beyond its heap). A huge chunk must go to the pool
    /// (only arenas take from it) or back to the kernel when the arena
    /// drops, never to malloc; and the pool is bounded. Checked in a child
    /// process of this test binary, alone on its threads (no other test can
    /// map the freed ranges or use the pool), after raising glibc's mmap
    /// threshold the way a long-running process does (so that malloc would
    /// keep a freed 4 MiB block).
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn huge_page_chunks_go_to_the_pool_or_back_to_the_kernel_on_drop() {
        const CHILD: &str = "CAIRNDB_ARENA_UNMAP_CHILD";
        const NAME: &str = "huge_page_chunks_go_to_the_pool_or_back_to_the_kernel_on_drop";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([NAME, "--test-threads=1", "--nocapture"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "child failed:\n{text}");
            assert!(text.contains("1 passed"), "child ran nothing:\n{text}");
            return;
        }
        let mapped = |addr: usize| {
            // SAFETY: msync only inspects the range; on an unmapped range
            // it fails with ENOMEM and touches nothing.
            unsafe { libc::msync(addr as *mut libc::c_void, 4096, libc::MS_ASYNC) == 0 }
        };
        // A freed mmapped block raises glibc's mmap threshold to its size.
        drop(std::hint::black_box(vec![1u8; 16 << 20]));
        assert_eq!(POOL.lock().len(), 0);
        // More 4 MiB chunks than the pool takes, and a 2 MiB one before them.
        let a = Arena::new();
        let mut chunks: Vec<(usize, usize)> = Vec::new(); // (first page, size)
        while a.memory_usage() < MAX_CHUNK * (POOL_CHUNKS + 3) {
            let before = a.memory_usage();
            // SAFETY: one thread, no concurrent allocate.
            let p = unsafe { a.allocate(1 << 10, 8) };
            // SAFETY: `p` points to 1 KiB owned by the arena.
            unsafe { std::ptr::write_bytes(p, 1, 1 << 10) };
            if a.memory_usage() != before {
                chunks.push(((p as usize) & !4095, a.memory_usage() - before));
            }
        }
        let huge: Vec<&(usize, usize)> = chunks.iter().filter(|c| c.1 >= HUGE_PAGE).collect();
        assert!(huge.iter().any(|c| c.1 < MAX_CHUNK), "{chunks:?}");
        drop(a);
        let still: Vec<&&(usize, usize)> = huge.iter().filter(|c| mapped(c.0)).collect();
        assert_eq!(still.len(), POOL_CHUNKS, "mapped after drop: {still:?}");
        assert!(still.iter().all(|c| c.1 == MAX_CHUNK), "{still:?}");
        assert_eq!(POOL.lock().len(), POOL_CHUNKS);
        // The next arena's 4 MiB chunks come from the pool, and the bytes
        // it hands out are its own to write and read.
        let b = Arena::new();
        let mut got = Vec::new();
        while b.memory_usage() < MAX_CHUNK * 3 {
            // SAFETY: one thread, no concurrent allocate.
            let p = unsafe { b.allocate(1 << 10, 8) };
            // SAFETY: `p` points to 1 KiB owned by the arena.
            unsafe { std::ptr::write_bytes(p, got.len() as u8, 1 << 10) };
            got.push(p as usize);
        }
        for (i, &p) in got.iter().enumerate() {
            // SAFETY: every `p` is a live 1 KiB allocation of `b`.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, 1 << 10) };
            assert!(bytes.iter().all(|&x| x == i as u8));
        }
        assert!(
            got.iter().any(|&p| still.iter().any(|c| p & !4095 == c.0)),
            "no chunk came from the pool"
        );
    }
}
