//! Durability awaited apart from the write: WAL positions, the WAL syncer
//! thread, and the threads and tasks that wait on it.
//!
//! A write made without `sync` returns once its group is logged and
//! published. [`Db::log_position`] read after it names a point of the WAL
//! at or past that write's record; [`Db::wait_durable`] (blocking) and
//! [`Db::poll_durable`] (a task's `Future::poll`) finish once an fdatasync
//! has covered that point. A server acknowledges a commit that way without
//! parking a thread per waiting client: the client's task waits, and one
//! sync serves every commit logged before it began.
//!
//! Positions count the records appended to the WAL since the database
//! opened (`logged`, bumped under `log` with each append), so they are
//! ordered as the WAL is. A sync round reads under `log` the current
//! position and a second descriptor of the current WAL (first syncing any
//! WAL switched out unsynced), releases `log`, fdatasyncs through the
//! descriptor, and publishes the position as `synced`: appends go on
//! during the sync and the next round covers them. One round runs at a
//! time (the `syncing` role): a caller of [`Db::try_sync_durable`] that
//! finds no round under way runs one on its own thread (no wake-up of
//! another thread before the sync); one that finds a round under way
//! leaves its request, and the round's owner, on finishing, hands any
//! request it did not cover to the syncer thread, which runs rounds until
//! none is left. A file system that cannot sync a file apart from its
//! writer (`FaultFs`) is synced under `log` instead. Synced groups,
//! `sync_wal`, the interval sync and `close` publish what they covered too.
//!
//! Invariants: `synced <= logged`, and `synced` only grows; once a sync has
//! failed (the database turns read-only) no position above `synced` is
//! reported durable: its waiters get the error. Locking: `state` is taken
//! after `log` (publishing under `log`) or alone, never before `log` and
//! never across I/O; waking a task happens under it. The syncer thread
//! checks for work under `state`, and a releasing owner notifies it under
//! `state`, so no hand-off is lost.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::{Condvar, Mutex};

use super::DbInner;
use crate::error::{Error, Result};

/// A point of the write-ahead log: durable once an fdatasync has covered
/// it ([`crate::Db::log_position`]). Positions of one open database are
/// ordered as its WAL; they mean nothing across reopenings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WalPosition(u64);

#[derive(Default)]
struct State {
    /// Tasks waiting for a position, with it.
    wakers: Vec<(u64, Waker)>,
    /// The error of a failed sync: every later wait above `synced` fails.
    failed: Option<Error>,
    /// The syncer thread is to stop (the database is closing).
    stop: bool,
    /// The database has closed: waits above `synced` fail with `Closed`.
    closed: bool,
}

/// The positions and the waiters of one database (see the module docs).
#[derive(Default)]
pub(super) struct Durability {
    logged: AtomicU64,
    synced: AtomicU64,
    /// The largest position a waiter has asked for; 0 while nobody has
    /// (writers then do not zero-fill ahead of unsynced records).
    requested: AtomicU64,
    /// A sync round is under way (by the syncer thread or a caller of
    /// `try_sync`): at most one at a time.
    syncing: AtomicBool,
    state: Mutex<State>,
    /// The syncer thread sleeps here.
    syncer_cv: Condvar,
    /// Blocking waiters sleep here.
    waiter_cv: Condvar,
}

impl Durability {
    /// Counts one more record appended to the WAL; returns its position.
    /// REQUIRES: `log` held, the record appended.
    pub(super) fn note_logged(&self) -> u64 {
        self.logged.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// The position of the last record appended.
    pub(super) fn logged(&self) -> u64 {
        self.logged.load(Ordering::Acquire)
    }

    /// True once any waiter has asked for a sync: unsynced records are then
    /// zero-filled ahead like synced ones, so the syncer's fdatasync writes
    /// data only.
    pub(super) fn deferred_in_use(&self) -> bool {
        self.requested.load(Ordering::Relaxed) > 0
    }

    /// Publishes `pos` as durable and wakes its waiters.
    pub(super) fn mark_synced(&self, pos: u64) {
        let prev = self.synced.fetch_max(pos, Ordering::AcqRel);
        if pos <= prev {
            return;
        }
        let mut st = self.state.lock();
        st.wakers.retain(|(p, w)| {
            if *p <= pos {
                w.wake_by_ref();
                false
            } else {
                true
            }
        });
        drop(st);
        self.waiter_cv.notify_all();
    }

    /// A sync failed: fails every wait above `synced`, now and later.
    pub(super) fn fail(&self, e: Error) {
        let mut st = self.state.lock();
        st.failed.get_or_insert(e);
        for (_, w) in st.wakers.drain(..) {
            w.wake();
        }
        drop(st);
        self.waiter_cv.notify_all();
    }

    /// Tells the syncer thread to stop.
    pub(super) fn stop_syncer(&self) {
        self.state.lock().stop = true;
        self.syncer_cv.notify_all();
    }

    /// The database has closed (after its last sync): fails every wait
    /// still above `synced`.
    pub(super) fn close(&self) {
        let mut st = self.state.lock();
        st.closed = true;
        st.stop = true;
        for (_, w) in st.wakers.drain(..) {
            w.wake();
        }
        drop(st);
        self.waiter_cv.notify_all();
        self.syncer_cv.notify_all();
    }

    fn is_durable(&self, pos: u64) -> bool {
        self.synced.load(Ordering::Acquire) >= pos
    }

    /// Why a wait for a position not yet durable cannot succeed, if it
    /// cannot. REQUIRES: `state` held (as `st`).
    fn dead_end(st: &State) -> Option<Error> {
        if let Some(e) = &st.failed {
            return Some(e.clone());
        }
        st.closed.then_some(Error::Closed)
    }

    /// Asks the syncer for `pos`. REQUIRES: `state` held.
    fn request(&self, pos: u64) {
        if self.requested.fetch_max(pos, Ordering::SeqCst) < pos {
            self.syncer_cv.notify_one();
        }
    }

    /// Takes the syncing role if no round is under way.
    fn take_role(&self) -> bool {
        self.syncing
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Gives the role up; if a position asked for meanwhile is not yet
    /// covered, hands it to the syncer thread. (A caller that asked while
    /// the role was held stored its request before it failed to take the
    /// role, so it is seen here; one that asks after this release finds
    /// the role free.)
    fn release_role(&self) {
        self.syncing.store(false, Ordering::SeqCst);
        if self.requested.load(Ordering::SeqCst) > self.synced.load(Ordering::SeqCst) {
            let _st = self.state.lock();
            self.syncer_cv.notify_one();
        }
    }

    fn wait(&self, inner: &DbInner, pos: u64) -> Result<()> {
        if inner.try_sync(pos)? {
            return Ok(());
        }
        crate::util::blocking::blocking(|| {
            let mut st = self.state.lock();
            loop {
                if self.is_durable(pos) {
                    return Ok(());
                }
                if let Some(e) = Self::dead_end(&st) {
                    return Err(e);
                }
                self.waiter_cv.wait(&mut st);
            }
        })
    }

    fn poll(&self, pos: u64, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if self.is_durable(pos) {
            return Poll::Ready(Ok(()));
        }
        let mut st = self.state.lock();
        // Checked again under `state`: `mark_synced` wakes under it, so a
        // position published after this check finds the waker below.
        if self.is_durable(pos) {
            return Poll::Ready(Ok(()));
        }
        if let Some(e) = Self::dead_end(&st) {
            return Poll::Ready(Err(e));
        }
        match st.wakers.iter_mut().find(|(_, w)| w.will_wake(cx.waker())) {
            Some(slot) => slot.0 = slot.0.max(pos),
            None => st.wakers.push((pos, cx.waker().clone())),
        }
        self.request(pos);
        Poll::Pending
    }
}

impl DbInner {
    /// The WAL syncer thread: a sync whenever a waiter asks for a position
    /// not yet durable, and every `wal_sync_interval` when that is set.
    pub(super) fn wal_sync_loop(self: &Arc<Self>) {
        let interval = self.opts.wal_sync_interval;
        let d = &self.durability;
        loop {
            {
                let mut st = d.state.lock();
                loop {
                    if st.stop || st.failed.is_some() {
                        return;
                    }
                    let asked =
                        d.requested.load(Ordering::SeqCst) > d.synced.load(Ordering::SeqCst);
                    if asked && !d.syncing.load(Ordering::SeqCst) {
                        break;
                    }
                    if interval.is_zero() {
                        d.syncer_cv.wait(&mut st);
                    } else if d.syncer_cv.wait_for(&mut st, interval).timed_out() {
                        break;
                    }
                }
            }
            if d.take_role() {
                let _ = self.sync_logged();
                d.release_role();
            }
        }
    }

    /// Makes `pos` durable on the calling thread when no sync round is
    /// under way (true), or notes the request for the round under way to
    /// hand on (false: wait with `poll_durable` or `wait_durable`). A
    /// commit's own thread syncing at once saves the syncer thread's
    /// wake-up, which on busy CPUs can cost more than the sync.
    pub(super) fn try_sync(&self, pos: u64) -> Result<bool> {
        let d = &self.durability;
        if d.is_durable(pos) {
            return Ok(true);
        }
        d.requested.fetch_max(pos, Ordering::SeqCst);
        if !d.take_role() {
            return Ok(false);
        }
        // The fdatasync is a wait that can last: through the thread's
        // blocking hook, so a network thread gives itself up only here.
        let r = crate::util::blocking::blocking(|| self.sync_logged());
        d.release_role();
        r?;
        if d.is_durable(pos) {
            return Ok(true);
        }
        // Nothing left to sync yet the position is not covered: the
        // database is closing or failed; the wait reports which.
        Ok(false)
    }

    /// One sync round: makes every record logged so far durable and
    /// publishes it. REQUIRES: the syncing role held.
    fn sync_logged(&self) -> Result<()> {
        let d = &self.durability;
        if let Some(e) = self.state.lock().bg_error.clone() {
            // After a failed write or sync, a sync cannot vouch for what
            // came before it (as `sync_wal`).
            d.fail(e.clone());
            return Err(e);
        }
        let (target, detached) = {
            let mut log = self.log.lock();
            let target = d.logged();
            if target <= d.synced.load(Ordering::Acquire) {
                return Ok(());
            }
            let Some(w) = log.writer.as_mut() else {
                return Ok(());
            };
            if let Err(e) = self.sync_closed_logs().and_then(|()| w.flush()) {
                drop(log);
                return Err(self.fail_sync(e));
            }
            // A second descriptor per round (a dup and a close, about a
            // microsecond each, beside a sync of tens): never one of a WAL
            // switched out since.
            match w.sync_handle() {
                Some(h) => (target, h),
                None => {
                    // This file system syncs a file only through its writer.
                    if let Err(e) = w.sync() {
                        drop(log);
                        return Err(self.fail_sync(e));
                    }
                    self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
                    d.mark_synced(target);
                    return Ok(());
                }
            }
        };
        self.hook(super::hooks::SYNC_ROUND);
        match detached.sync_data() {
            Ok(()) => {
                self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
                d.mark_synced(target);
                Ok(())
            }
            Err(e) => Err(self.fail_sync(e)),
        }
    }

    /// A failed fdatasync may have dropped the dirty pages (and a retry on
    /// the same descriptor can then succeed): nothing logged since may be
    /// acknowledged, so the database turns read-only and the waiters fail.
    fn fail_sync(&self, e: Error) -> Error {
        self.set_bg_error(e.clone());
        self.durability.fail(e.clone());
        e
    }
}

impl super::Db {
    /// A point of the WAL at or past the record of every write that has
    /// returned so far, for [`Db::wait_durable`] or [`Db::poll_durable`]:
    /// read it after an unsynced write to wait for that write's sync.
    ///
    /// [`Db::wait_durable`]: super::Db::wait_durable
    /// [`Db::poll_durable`]: super::Db::poll_durable
    pub fn log_position(&self) -> WalPosition {
        WalPosition(self.inner.durability.logged())
    }

    /// True once an fdatasync has covered `pos`.
    pub fn is_durable(&self, pos: WalPosition) -> bool {
        self.inner.durability.is_durable(pos.0)
    }

    /// Blocks until an fdatasync has covered `pos`, asking the WAL syncer
    /// thread for one if none covers it yet. Errors: the sync failed (the
    /// database is then read-only, `Error::ReadOnly` on later writes) or
    /// the database closed first (`Error::Closed`).
    pub fn wait_durable(&self, pos: WalPosition) -> Result<()> {
        self.inner.durability.wait(&self.inner, pos.0)
    }

    /// Makes `pos` durable on this thread if no sync is under way, and
    /// returns true; returns false when one is (this call then asks for
    /// `pos` to be covered next, and the caller waits with
    /// [`Db::poll_durable`] or [`Db::wait_durable`]). For a commit's thread
    /// that may block but would rather not wait behind another's sync:
    /// the first of several concurrent commits syncs at once, the others
    /// wait as tasks.
    ///
    /// [`Db::poll_durable`]: super::Db::poll_durable
    /// [`Db::wait_durable`]: super::Db::wait_durable
    pub fn try_sync_durable(&self, pos: WalPosition) -> Result<bool> {
        self.inner.try_sync(pos.0)
    }

    /// [`Db::wait_durable`] for a task: `Ready` once an fdatasync has
    /// covered `pos` (or with its error), else `Pending` with the task's
    /// waker registered and the syncer asked. An async caller awaits
    /// `std::future::poll_fn(|cx| db.poll_durable(pos, cx))`.
    ///
    /// [`Db::wait_durable`]: super::Db::wait_durable
    pub fn poll_durable(&self, pos: WalPosition, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.inner.durability.poll(pos.0, cx)
    }
}
