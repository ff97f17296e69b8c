//! The lock table of pessimistic transactions: per-key shared and exclusive
//! locks, striped by key hash, with lock timeouts and deadlock detection.
//!
//! ## Invariants
//! * A key has an entry in its stripe's map exactly while some transaction
//!   holds its lock. An exclusive entry has one holder; a shared entry has
//!   one or more. `num_locks` counts (key, holder) pairs.
//! * A waiting transaction has one entry in `waits`: the holders it waits
//!   for (the wait-for graph's edges out of it), put there before it sleeps
//!   and removed when it stops waiting (granted, timed out or a victim).
//!
//! ## Locks
//! A stripe's `map` mutex is taken first, `waits` under it; `waits` is a
//! leaf. No lock of this module is held across I/O or while the caller
//! reads or writes the database. Waiters sleep on their stripe's condvar,
//! which every release in the stripe notifies.
//!
//! ## Interrupting a wait
//! A request may carry a [`LockWaitHook`]. Its waiter then sleeps in
//! slices of at most [`INTERRUPT_SLICE`] and asks the hook after each
//! whether to stop (`Error::Interrupted`); it tells the hook how long it
//! waited. A request that is granted at once never looks at the hook, and
//! one without a hook sleeps until notified or timed out, as before.
//!
//! ## Deadlock detection
//! Before sleeping, a transaction records whom it waits for and walks the
//! graph from them (at most `depth` edges deep); reaching itself means
//! its wait would close a cycle, and it is the victim: it gets
//! `Error::Deadlock` at once. Because edges are recorded under one mutex,
//! of two transactions closing a cycle the second to record its edges sees
//! the first's, so a cycle is never missed by both. An edge can be stale
//! for a moment (the holder released the key and the waiter has not yet
//! woken); the holder then must have rolled back to a savepoint, since
//! locks are otherwise held to the end of the transaction, so a false
//! report needs a transaction that releases a lock and then waits.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use xxhash_rust::xxh3::Xxh3Default;

use crate::error::{Error, Result};

/// The longest a waiter with a [`LockWaitHook`] sleeps before asking it
/// again whether to stop.
pub(crate) const INTERRUPT_SLICE: Duration = Duration::from_millis(10);

/// What a transaction's lock waits consult: whether to stop waiting (a
/// killed statement, a statement past its time limit) and, after each
/// wait, how long it took. Called only when a lock request waits, from
/// the waiting thread, with no lock of the engine held.
pub trait LockWaitHook: Send + Sync {
    /// True: the wait ends with [`Error::Interrupted`].
    fn interrupted(&self) -> bool;
    /// A lock request waited `waited`, granted or not.
    fn waited(&self, waited: Duration) {
        let _ = waited;
    }
}

/// Transaction identifier, unique per database.
pub(crate) type TxnId = u64;

type Hasher = BuildHasherDefault<Xxh3Default>;

struct LockEntry {
    exclusive: bool,
    holders: Vec<TxnId>,
}

impl LockEntry {
    /// Whether `txn` may have this key in the mode asked for now.
    fn grantable(&self, txn: TxnId, exclusive: bool) -> bool {
        if self.holders.contains(&txn) {
            self.exclusive || !exclusive || self.holders.len() == 1
        } else {
            !self.exclusive && !exclusive
        }
    }
}

struct Stripe {
    map: Mutex<HashMap<Vec<u8>, LockEntry, Hasher>>,
    cv: Condvar,
}

/// How a granted lock request changed what the transaction holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Granted {
    /// The transaction did not hold the key before.
    New,
    /// It held it already in this mode or a stronger one.
    Held,
    /// It held it shared and now holds it exclusive.
    Upgraded,
}

/// What a lock request may wait for and check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockRequest {
    pub(crate) exclusive: bool,
    /// `Duration::MAX`: wait forever; zero: never wait.
    pub(crate) timeout: Duration,
    /// 0: no deadlock detection.
    pub(crate) deadlock_depth: usize,
}

/// The lock table shared by a `TransactionDb`'s transactions.
pub(crate) struct LockManager {
    stripes: Box<[Stripe]>,
    hasher: Hasher,
    num_locks: AtomicUsize,
    /// 0: unlimited.
    max_num_locks: usize,
    /// Wait-for graph: waiter -> the holders it waits for.
    waits: Mutex<HashMap<TxnId, Vec<TxnId>>>,
}

impl LockManager {
    pub(crate) fn new(num_stripes: usize, max_num_locks: usize) -> Self {
        let stripes = (0..num_stripes.max(1))
            .map(|_| Stripe {
                map: Mutex::new(HashMap::default()),
                cv: Condvar::new(),
            })
            .collect();
        LockManager {
            stripes,
            hasher: Hasher::default(),
            num_locks: AtomicUsize::new(0),
            max_num_locks,
            waits: Mutex::new(HashMap::new()),
        }
    }

    fn stripe(&self, key: &[u8]) -> &Stripe {
        let h = self.hasher.hash_one(key) as usize;
        // `stripes` is never empty (`new`).
        &self.stripes[h % self.stripes.len()]
    }

    /// Locks held right now, over all transactions.
    pub(crate) fn num_locks(&self) -> usize {
        self.num_locks.load(Ordering::Relaxed)
    }

    /// Locks `key` for `txn`, waiting while another transaction holds it in
    /// a conflicting mode. Errors: `TimedOut` after `req.timeout`,
    /// `Deadlock` when waiting would close a cycle, `Busy` at the lock
    /// limit. A failed request changes nothing the transaction holds.
    pub(crate) fn lock(&self, txn: TxnId, key: &[u8], req: LockRequest) -> Result<Granted> {
        self.lock_with(txn, key, req, None)
    }

    /// [`Self::lock`] whose wait, if it waits, `hook` may interrupt
    /// (`Error::Interrupted`) and is told the time waited.
    pub(crate) fn lock_with(
        &self,
        txn: TxnId,
        key: &[u8],
        req: LockRequest,
        hook: Option<&dyn LockWaitHook>,
    ) -> Result<Granted> {
        let stripe = self.stripe(key);
        let mut map = stripe.map.lock();
        let start = Instant::now();
        let deadline = start.checked_add(req.timeout);
        let mut waiting = false;
        let result = loop {
            let blockers: Vec<TxnId> = match map.get_mut(key) {
                None => {
                    if let Err(e) = self.count_new_lock(key) {
                        break Err(e);
                    }
                    map.insert(
                        key.to_vec(),
                        LockEntry {
                            exclusive: req.exclusive,
                            holders: vec![txn],
                        },
                    );
                    break Ok(Granted::New);
                }
                Some(e) => {
                    let mine = e.holders.contains(&txn);
                    if mine && (e.exclusive || !req.exclusive) {
                        break Ok(Granted::Held);
                    }
                    if mine && e.holders.len() == 1 {
                        e.exclusive = true;
                        break Ok(Granted::Upgraded);
                    }
                    if !mine && !e.exclusive && !req.exclusive {
                        if let Err(err) = self.count_new_lock(key) {
                            break Err(err);
                        }
                        e.holders.push(txn);
                        break Ok(Granted::New);
                    }
                    e.holders.iter().copied().filter(|&h| h != txn).collect()
                }
            };
            // The key is held in a conflicting mode: wait, unless that
            // would close a cycle or the time is up.
            if req.deadlock_depth > 0 && self.would_deadlock(txn, blockers, req.deadlock_depth) {
                break Err(Error::Deadlock { key: key.to_vec() });
            }
            waiting = true;
            // With a hook, sleep at most a slice, then ask it.
            let until = match (deadline, hook) {
                (d, None) => d,
                (None, Some(_)) => Some(Instant::now() + INTERRUPT_SLICE),
                (Some(d), Some(_)) => Some(d.min(Instant::now() + INTERRUPT_SLICE)),
            };
            let woke_at_end = crate::util::blocking::blocking(|| match until {
                None => {
                    stripe.cv.wait(&mut map);
                    false
                }
                Some(u) => Instant::now() >= u || stripe.cv.wait_until(&mut map, u).timed_out(),
            });
            if hook.is_some_and(|h| h.interrupted()) {
                break Err(Error::Interrupted { key: key.to_vec() });
            }
            let timed_out = woke_at_end && deadline.is_some_and(|d| Instant::now() >= d);
            if timed_out {
                // One last look: the lock may have been freed just now.
                let free = map.get(key).is_none_or(|e| e.grantable(txn, req.exclusive));
                if !free {
                    break Err(Error::TimedOut {
                        key: key.to_vec(),
                        waited: start.elapsed(),
                    });
                }
            }
        };
        if waiting || req.deadlock_depth > 0 {
            self.waits.lock().remove(&txn);
        }
        if waiting {
            if let Some(h) = hook {
                drop(map);
                h.waited(start.elapsed());
            }
        }
        result
    }

    fn count_new_lock(&self, key: &[u8]) -> Result<()> {
        let n = self.num_locks.fetch_add(1, Ordering::Relaxed);
        if self.max_num_locks > 0 && n >= self.max_num_locks {
            self.num_locks.fetch_sub(1, Ordering::Relaxed);
            return Err(Error::Busy {
                key: key.to_vec(),
                reason: "the database holds max_num_locks locks",
            });
        }
        Ok(())
    }

    /// Records that `txn` waits for `blockers` and reports whether the
    /// graph then has a path from a blocker back to `txn` of at most
    /// `depth` edges. On true the edges are removed again.
    fn would_deadlock(&self, txn: TxnId, blockers: Vec<TxnId>, depth: usize) -> bool {
        let mut waits = self.waits.lock();
        let mut frontier = blockers.clone();
        waits.insert(txn, blockers);
        let mut seen: Vec<TxnId> = Vec::new();
        for _ in 0..depth {
            let mut next = Vec::new();
            for t in frontier {
                if t == txn {
                    waits.remove(&txn);
                    return true;
                }
                if seen.contains(&t) {
                    continue;
                }
                seen.push(t);
                if let Some(out) = waits.get(&t) {
                    next.extend_from_slice(out);
                }
            }
            if next.is_empty() {
                return false;
            }
            frontier = next;
        }
        false
    }

    /// Releases `txn`'s lock on `key` (shared or exclusive) and wakes the
    /// stripe's waiters. A key `txn` does not hold is ignored.
    pub(crate) fn unlock(&self, txn: TxnId, key: &[u8]) {
        let stripe = self.stripe(key);
        let mut map = stripe.map.lock();
        if let Some(e) = map.get_mut(key) {
            if let Some(i) = e.holders.iter().position(|&h| h == txn) {
                e.holders.swap_remove(i);
                self.num_locks.fetch_sub(1, Ordering::Relaxed);
                if e.holders.is_empty() {
                    map.remove(key);
                }
                stripe.cv.notify_all();
            }
        }
    }

    /// Releases every key in `keys` held by `txn`.
    pub(crate) fn unlock_all<'a>(&self, txn: TxnId, keys: impl Iterator<Item = &'a [u8]>) {
        for k in keys {
            self.unlock(txn, k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn req(exclusive: bool, timeout_ms: u64) -> LockRequest {
        LockRequest {
            exclusive,
            timeout: Duration::from_millis(timeout_ms),
            deadlock_depth: 50,
        }
    }

    #[test]
    fn shared_locks_coexist_exclusive_excludes() {
        let m = LockManager::new(4, 0);
        assert_eq!(m.lock(1, b"k", req(false, 0)).unwrap(), Granted::New);
        assert_eq!(m.lock(2, b"k", req(false, 0)).unwrap(), Granted::New);
        assert!(matches!(
            m.lock(3, b"k", req(true, 0)),
            Err(Error::TimedOut { .. })
        ));
        // Two shared holders: neither can upgrade without waiting.
        assert!(matches!(
            m.lock(1, b"k", req(true, 0)),
            Err(Error::TimedOut { .. })
        ));
        m.unlock(2, b"k");
        assert_eq!(m.lock(1, b"k", req(true, 0)).unwrap(), Granted::Upgraded);
        assert_eq!(m.lock(1, b"k", req(false, 0)).unwrap(), Granted::Held);
        assert_eq!(m.num_locks(), 1);
        m.unlock(1, b"k");
        assert_eq!(m.num_locks(), 0);
    }

    #[test]
    fn lock_limit_is_busy_and_counts_nothing() {
        let m = LockManager::new(4, 2);
        m.lock(1, b"a", req(true, 0)).unwrap();
        m.lock(1, b"b", req(true, 0)).unwrap();
        assert!(matches!(
            m.lock(1, b"c", req(true, 0)),
            Err(Error::Busy { .. })
        ));
        assert_eq!(m.num_locks(), 2);
        m.unlock(1, b"a");
        m.lock(2, b"c", req(true, 0)).unwrap();
    }

    #[test]
    fn waiter_gets_the_lock_when_released() {
        let m = Arc::new(LockManager::new(1, 0));
        m.lock(1, b"k", req(true, 0)).unwrap();
        let t = {
            let m = m.clone();
            std::thread::spawn(move || m.lock(2, b"k", req(true, 60_000)))
        };
        std::thread::sleep(Duration::from_millis(20));
        m.unlock(1, b"k");
        assert_eq!(t.join().unwrap().unwrap(), Granted::New);
    }

    #[test]
    fn two_transactions_in_opposite_order_one_is_the_deadlock_victim() {
        let m = Arc::new(LockManager::new(16, 0));
        m.lock(1, b"a", req(true, 0)).unwrap();
        m.lock(2, b"b", req(true, 0)).unwrap();
        let t = {
            let m = m.clone();
            std::thread::spawn(move || m.lock(1, b"b", req(true, 60_000)))
        };
        // Wait until 1 is recorded as waiting for 2.
        while !m.waits.lock().contains_key(&1) {
            std::thread::yield_now();
        }
        let r = m.lock(2, b"a", req(true, 60_000));
        assert!(matches!(r, Err(Error::Deadlock { .. })), "{r:?}");
        m.unlock(2, b"b");
        assert_eq!(t.join().unwrap().unwrap(), Granted::New);
    }

    /// A hook that says stop once `stop` is set, and sums the waits.
    #[derive(Default)]
    struct Stopper {
        stop: std::sync::atomic::AtomicBool,
        waited_us: std::sync::atomic::AtomicU64,
    }

    impl LockWaitHook for Stopper {
        fn interrupted(&self) -> bool {
            self.stop.load(Ordering::Relaxed)
        }
        fn waited(&self, waited: Duration) {
            self.waited_us
                .fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_hook_interrupts_a_lock_wait_and_is_told_the_time_waited() -> Result<()> {
        let m = Arc::new(LockManager::new(1, 0));
        m.lock(1, b"k", req(true, 0))?;
        let hook = Arc::new(Stopper::default());
        let t = {
            let (m, hook) = (m.clone(), hook.clone());
            std::thread::spawn(move || {
                let h: &dyn LockWaitHook = &*hook;
                let started = Instant::now();
                (
                    m.lock_with(2, b"k", req(true, 60_000), Some(h)),
                    started.elapsed(),
                )
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        hook.stop.store(true, Ordering::Relaxed);
        let (r, took) = t.join().map_err(|_| Error::invalid("waiter panicked"))?;
        assert!(matches!(r, Err(Error::Interrupted { .. })), "{r:?}");
        // Stopped within a slice or so of the flag, not at the timeout.
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(hook.waited_us.load(Ordering::Relaxed) >= 40_000);
        // The waiter holds nothing; the holder still does.
        assert_eq!(m.num_locks(), 1);
        assert!(m.waits.lock().is_empty());
        // Granted at once: the hook is neither asked nor told.
        let quiet = Stopper::default();
        quiet.stop.store(true, Ordering::Relaxed);
        assert_eq!(
            m.lock_with(3, b"other", req(true, 0), Some(&quiet))?,
            Granted::New
        );
        assert_eq!(quiet.waited_us.load(Ordering::Relaxed), 0);
        Ok(())
    }
}
