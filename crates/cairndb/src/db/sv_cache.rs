//! Per-thread references to the current super-version, so that a point
//! read does not write a cache line every reading thread shares.
//!
//! Taking the super-version from `DbInner::sv` costs a read lock and an
//! `Arc` clone and drop: three atomic writes to two cache lines that every
//! reader writes. With many readers on few cores those lines bounce
//! between cores on every read (12% of a 32-reader point read). RocksDB
//! keeps a super-version reference per thread for this; so does this
//! module, in slots of its own:
//!
//! * Each thread uses one slot (by a per-thread index), which holds either
//!   nothing, [`IN_USE`] while a read runs, or a raw `Arc<SuperVersion>`
//!   reference owned by the slot.
//! * A read swaps [`IN_USE`] in, checks that the reference it took out is
//!   of the current generation (else drops it and takes a fresh one from
//!   `sv`), reads, and swaps the reference back. Only the reading thread
//!   writes its slot, so the line stays in its core's cache.
//! * Installing a super-version bumps the generation, then empties every
//!   slot and drops the references found; a slot found [`IN_USE`] is left
//!   empty, and its reader, whose swap back then fails, drops its
//!   reference itself.
//!
//! Invariant: every non-null, non-[`IN_USE`] pointer in a slot, and the
//! pointer a read holds, is one strong reference made by `Arc::into_raw`,
//! released exactly once by `Arc::from_raw`. Two threads that share a slot
//! index (more threads than slots) find it [`IN_USE`] at times and then
//! take the slow path. No lock is taken except `sv`'s read lock on the slow
//! path.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::SuperVersion;

/// Slots per database (threads beyond this share slots).
const SLOTS: usize = 64;

/// The marker of a slot whose reference a read is using: the address equal
/// to the type's alignment, where no allocation (so no `Arc`) ever lives.
const IN_USE: *mut SuperVersion = std::ptr::dangling_mut::<SuperVersion>();

/// One slot, alone on its cache lines.
#[repr(align(128))]
struct Slot(AtomicPtr<SuperVersion>);

/// The per-thread super-version slots of one database.
pub(super) struct SvCache {
    slots: Box<[Slot]>,
    /// The generation of the current super-version (`SuperVersion::gen`).
    gen: AtomicU64,
}

/// Hands each thread an index (modulo the slots) on first use.
fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|i| {
        if i.get() == usize::MAX {
            i.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        i.get() % SLOTS
    })
}

/// Drops the reference `p` holds (not null, not [`IN_USE`]).
///
/// # Safety
/// `p` came from `Arc::into_raw` and its reference was not released yet
/// (see the module's invariant).
unsafe fn release(p: *mut SuperVersion) {
    // SAFETY: the caller's contract.
    drop(unsafe { Arc::from_raw(p.cast_const()) });
}

impl SvCache {
    /// Empty slots; `gen` is the current super-version's generation.
    pub(super) fn new(gen: u64) -> SvCache {
        SvCache {
            slots: (0..SLOTS)
                .map(|_| Slot(AtomicPtr::new(std::ptr::null_mut())))
                .collect(),
            gen: AtomicU64::new(gen),
        }
    }

    /// Runs `f` on the current super-version (as of some moment during the
    /// call), through this thread's slot.
    #[inline]
    pub(super) fn with<R>(
        &self,
        current: &RwLock<Arc<SuperVersion>>,
        f: impl FnOnce(&SuperVersion) -> R,
    ) -> R {
        let slot = &self.slots[thread_index()].0;
        let mut p = slot.swap(IN_USE, Ordering::Acquire);
        if p == IN_USE {
            // Another thread on this slot is reading: the shared path.
            let sv = current.read().clone();
            return f(&sv);
        }
        let gen = self.gen.load(Ordering::Acquire);
        // SAFETY: a non-null pointer taken out of a slot is a live reference
        // that this read now owns (module invariant).
        if !p.is_null() && unsafe { (*p).gen } != gen {
            // SAFETY: as above; it is released once, here.
            unsafe { release(p) };
            p = std::ptr::null_mut();
        }
        if p.is_null() {
            p = Arc::into_raw(current.read().clone()).cast_mut();
        }
        // Puts the reference back even if `f` panics.
        struct Restore<'a>(&'a AtomicPtr<SuperVersion>, *mut SuperVersion);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                if self
                    .0
                    .compare_exchange(IN_USE, self.1, Ordering::Release, Ordering::Relaxed)
                    .is_err()
                {
                    // Emptied by `invalidate` meanwhile: the reference is
                    // this read's to drop.
                    // SAFETY: `self.1` is the live reference this read owns.
                    unsafe { release(self.1) };
                }
            }
        }
        let restore = Restore(slot, p);
        // SAFETY: `p` is a live reference owned by this read until `restore`
        // hands it back or releases it, after `f` returns.
        let r = f(unsafe { &*p });
        drop(restore);
        r
    }

    /// After a new super-version of generation `gen` is installed: no slot
    /// may hand out an older one. REQUIRES: the new one is already in `sv`.
    pub(super) fn invalidate(&self, gen: u64) {
        self.gen.store(gen, Ordering::Release);
        self.clear();
    }

    fn clear(&self) {
        for s in self.slots.iter() {
            let p = s.0.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() && p != IN_USE {
                // SAFETY: a slot's pointer is a live reference the slot owns;
                // it was taken out, so it is released once, here.
                unsafe { release(p) };
            }
        }
    }
}

impl Drop for SvCache {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::MemTable;
    use crate::version::Version;

    fn sv(gen: u64) -> Arc<SuperVersion> {
        Arc::new(SuperVersion {
            mem: Arc::new(MemTable::new()),
            imms: Vec::new(),
            version: Arc::new(Version::default()),
            tables_max_seq: 0,
            gen,
        })
    }

    /// Readers on many threads (more than slots, so slots are shared) while
    /// super-versions are installed: every read sees a generation no older
    /// than the one installed before it started, and every reference is
    /// released (the last super-version is held only by `current`).
    #[test]
    fn reads_see_new_super_versions_and_release_old_ones() {
        let current = Arc::new(RwLock::new(sv(0)));
        let cache = Arc::new(SvCache::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let first = Arc::downgrade(&current.read().clone());
        // More readers than slots, so that slots are shared (fewer under
        // Miri, which runs this too: scripts/miri.sh).
        let (threads, installs) = if cfg!(miri) { (4, 10) } else { (SLOTS + 8, 60) };
        let readers: Vec<_> = (0..threads)
            .map(|_| {
                let (current, cache, stop) = (current.clone(), cache.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let floor = cache.gen.load(Ordering::Acquire);
                        let g = cache.with(&current, |s| s.gen);
                        assert!(
                            g >= floor,
                            "read generation {g} after {floor} was installed"
                        );
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        for gen in 1..=installs {
            *current.write() = sv(gen);
            cache.invalidate(gen);
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        let reads: u64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(reads > 0);
        assert!(first.upgrade().is_none(), "the first super-version leaked");
        assert_eq!(cache.with(&current, |s| s.gen), installs);
        let last = Arc::downgrade(&current.read().clone());
        drop(cache);
        assert_eq!(last.strong_count(), 1, "a slot still holds the last one");
    }

    /// A read that panics inside `f` still hands its reference back.
    #[test]
    fn panicking_read_releases_its_slot() {
        let current = RwLock::new(sv(3));
        let cache = SvCache::new(3);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cache.with(&current, |_| panic!("read failed"))
        }));
        assert!(r.is_err());
        assert_eq!(cache.with(&current, |s| s.gen), 3);
        let weak = Arc::downgrade(&current.read().clone());
        cache.invalidate(4);
        assert_eq!(weak.strong_count(), 1);
    }
}
