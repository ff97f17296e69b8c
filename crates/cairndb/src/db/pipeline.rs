//! The commit pipeline's queue and publication order, as a type of its own
//! (no WAL, no memtable), so its two promises can be tested alone:
//!
//! * **Leadership and wake-ups.** Writers queue in arrival order; the one at
//!   the front leads a group of the writers behind it. When the group is
//!   done, every member gets the group's result (an error included) and the
//!   next writer in the queue becomes leader. No member is left asleep.
//!   A synced group's members may be woken before its inserts
//!   ([`CommitPipeline::wake_before_publish`]); they return only once the
//!   group is published, so a write is visible when `write` returns. Those
//!   members wake each other in a binary tree: the leader unparks two, and
//!   each woken member unparks its two children before it returns. Every
//!   member's `done` is set before any is unparked, children's before
//!   their parent's, so a child that a parent wakes always finds its flag.
//! * **Publication order.** Groups are assigned sequence numbers in order
//!   but insert into the memtable concurrently; [`CommitPipeline::publish`]
//!   makes a group's sequences visible only after every earlier group's, so
//!   `last_seq` never covers an insert still running.
//!
//! * **Waiting for a sync by yielding.** A writer whose wait is a synced
//!   group's fdatasync, on a device that syncs within
//!   [`YIELD_WAIT_MAX_SYNC`], yields the CPU for up to a few syncs before it
//!   sleeps ([`CommitPipeline::yield_wait_budget`]). A CPU that goes idle
//!   while every writer sleeps takes tens of microseconds to wake on a
//!   virtual machine, once per member per sync. A yield that lets other
//!   work run for [`SLOW_YIELD`] or longer ends that writer's yielding and
//!   costs a shared credit [`SLOW_YIELD_COST`]; a wait that yielding ended
//!   earns one back. While the credit is negative writers sleep at once
//!   (each such wait also earns one back), so yielding stops while other
//!   work keeps wanting the CPUs, and a passing stall (the hypervisor
//!   descheduling a virtual CPU stalls every yielder on it at once) stops
//!   it only for a few hundred waits.
//!
//! Locking: `queue` guards the writer queue and is never held across I/O or
//! a memtable insert. A member sleeps with `std::thread::park` until its
//! `done` or `leader` flag is set; whoever sets a flag (its result stored
//! first) then unparks that member's thread. A park token makes that
//! lossless: an unpark before the park makes the park return at once, and
//! the member re-checks its flags after every wake-up. Members are woken
//! without `queue` held, so they do not wake one after another through the
//! lock: with 16 synced writers on 2 CPUs, waking through a condvar under
//! `queue` chained 15 hand-offs of that lock after every fdatasync.
//! `last_seq` is an atomic written only by `publish` (and at open). A
//! writer waiting for an earlier group's publication spins, yields, then
//! sleeps on `publish_cv` under `publish_lock`; `publish` takes that lock
//! (to notify) only when a sleeper is counted.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::key::SeqNo;
use crate::options::WriteOptions;

/// How long a queued writer spins before it sleeps until its group is done.
const WRITER_SPIN: Duration = Duration::from_micros(20);

/// How long a writer waiting for an earlier group's publication yields
/// before it sleeps until woken by `publish`. A group's inserts take a few
/// microseconds when its leader runs; longer, it was preempted.
const PUBLISH_YIELD: Duration = Duration::from_micros(50);

/// Slowest fdatasync (the last one, as timed by the leader) for which a
/// writer waiting on a synced group yields instead of sleeping at once.
/// On a device this slow a wake-up's latency is a small part of the wait,
/// and yielding all of it would burn a CPU per writer.
const YIELD_WAIT_MAX_SYNC: Duration = Duration::from_millis(1);

/// A writer yields for at most this many of the last fdatasync's duration
/// before it sleeps: a W2 member waits for the rest of the group being
/// gathered, its write, its sync and its wake-up, 1.5-2.5 syncs.
const YIELD_WAIT_SYNCS: u32 = 3;

/// A yield that took this long let other work run (a reader, a flush,
/// another process) rather than another writer's turn, which takes
/// microseconds: the CPUs are wanted, so the writer sleeps.
const SLOW_YIELD: Duration = Duration::from_micros(150);

/// What a slow yield costs the yield credit, in waits.
const SLOW_YIELD_COST: i32 = 64;

/// Most the yield credit holds, in waits.
const YIELD_CREDIT_MAX: i32 = 64;

/// Least the yield credit holds: how many waits at most writers sleep at
/// once before they try yielding again.
const YIELD_CREDIT_MIN: i32 = -4096;

/// Members an early-woken synced group's leader unparks, and each woken
/// member after it. One thread unparking all 15 members of a W2 group took
/// 33-49 µs after every fdatasync (each wake-up about 3 µs of the waker's
/// CPU on this VM); a binary tree spreads them over both CPUs and took
/// 14-16 µs (W2: 85-100K → 104-110K ops/s in turns on one device; a chain,
/// one child each, gave 93-99K).
const WAKE_FANOUT: usize = 2;

/// What an optimistic transaction's commit must verify when its group is
/// written: none of `keys` has an entry newer than the sequence beside it.
pub(crate) struct ConflictCheck {
    pub(crate) keys: Vec<(Vec<u8>, SeqNo)>,
}

/// One `Db::write` call waiting in the queue.
pub(crate) struct Writer {
    pub(crate) batch: WriteBatch,
    pub(crate) opts: WriteOptions,
    /// Checked by the leader with every earlier write applied; a failed
    /// check leaves this writer out of the group with `rejected`.
    pub(crate) check: Option<ConflictCheck>,
    /// Set by the leader (before `finish`) when `check` failed.
    pub(crate) rejected: Mutex<Option<crate::error::Error>>,
    done: AtomicBool,
    /// Set with `done` by [`CommitPipeline::wake_before_publish`]: the
    /// sequence this writer waits to see published before it returns.
    publish_wait: AtomicU64,
    /// Set (under `queue`) when this writer reaches the queue front.
    leader: AtomicBool,
    result: Mutex<Option<Result<()>>>,
    /// The members this writer unparks once it sees `done` (set by
    /// [`CommitPipeline::wake_before_publish`] before `done`).
    children: Mutex<[Option<Arc<Writer>>; WAKE_FANOUT]>,
    /// The thread that called `join`, unparked when a flag is set.
    thread: std::thread::Thread,
}

impl Writer {
    /// The thread that called `write`.
    pub(crate) fn thread_id(&self) -> std::thread::ThreadId {
        self.thread.id()
    }
}

/// What a writer that joined the queue is to do next.
pub(crate) enum Turn {
    /// Lead a group: it is at the queue front.
    Lead(Arc<Writer>),
    /// A leader wrote this writer's batch as part of its group.
    Done(Result<()>),
}

/// The writer queue, the leader hand-off and the published sequence.
pub(crate) struct CommitPipeline {
    queue: Mutex<VecDeque<Arc<Writer>>>,
    /// True while a leader waits for fdatasync (queued writers do not spin;
    /// they may yield, see [`Self::yield_wait_budget`]).
    leader_syncing: AtomicBool,
    /// How long the last fdatasync of a synced group took, in µs (0: none
    /// yet).
    last_sync_micros: AtomicU64,
    /// Writers yield while this is not negative (see the module docs).
    yield_credit: AtomicI32,
    /// Threads inside `write` (queued, leading, or just woken with their
    /// result and not yet returned).
    active_writers: AtomicUsize,
    /// Every sequence number <= this is fully applied to a memtable.
    last_seq: AtomicU64,
    /// Threads asleep in [`Self::wait_published`] (counted under
    /// `publish_lock`, read by `publish` without it).
    publish_sleepers: AtomicUsize,
    /// Guards the sleep in [`Self::wait_published`] against a lost wake-up
    /// (the sleeper checks `last_seq` under it before it waits).
    publish_lock: Mutex<()>,
    publish_cv: Condvar,
    /// CPUs this process may run on: with more writers than this, a
    /// spinning writer takes a CPU from the leader it waits for.
    cpus: usize,
}

/// Decrements `active_writers` when a `write` call returns.
pub(crate) struct ActiveWriter<'a>(&'a AtomicUsize);

impl Drop for ActiveWriter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CommitPipeline {
    pub(crate) fn new(last_seq: SeqNo) -> Self {
        CommitPipeline {
            queue: Mutex::new(VecDeque::new()),
            leader_syncing: AtomicBool::new(false),
            last_sync_micros: AtomicU64::new(0),
            yield_credit: AtomicI32::new(0),
            active_writers: AtomicUsize::new(0),
            last_seq: AtomicU64::new(last_seq),
            publish_sleepers: AtomicUsize::new(0),
            publish_lock: Mutex::new(()),
            publish_cv: Condvar::new(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// The last published sequence number.
    pub(crate) fn last_seq(&self) -> SeqNo {
        self.last_seq.load(Ordering::Acquire)
    }

    /// Counts the calling thread as a writer until the guard drops.
    pub(crate) fn enter(&self) -> ActiveWriter<'_> {
        self.active_writers.fetch_add(1, Ordering::Relaxed);
        ActiveWriter(&self.active_writers)
    }

    /// Queues a write and waits until it is either done by another leader
    /// or at the queue front.
    pub(crate) fn join(
        &self,
        batch: WriteBatch,
        opts: WriteOptions,
        check: Option<ConflictCheck>,
    ) -> Turn {
        let w = Arc::new(Writer {
            batch,
            opts,
            check,
            rejected: Mutex::new(None),
            done: AtomicBool::new(false),
            publish_wait: AtomicU64::new(0),
            leader: AtomicBool::new(false),
            result: Mutex::new(None),
            children: Mutex::new(Default::default()),
            thread: std::thread::current(),
        });
        let ahead = {
            let mut q = self.queue.lock();
            q.push_back(w.clone());
            if q.len() == 1 {
                w.leader.store(true, Ordering::Release);
            }
            q.len() - 1
        };
        let ready = || w.done.load(Ordering::Acquire) || w.leader.load(Ordering::Acquire);
        if !ready() {
            // Next in line behind a leader that does not sync: it finishes
            // within microseconds, so spin briefly before paying for a sleep
            // and a wake-up. Deeper in the queue, or behind a sync, sleep at
            // once: spinning would only take CPU from the leader. So too
            // when writers outnumber the CPUs.
            if ahead == 1
                && !self.leader_syncing.load(Ordering::Acquire)
                && self.active_writers.load(Ordering::Relaxed) <= self.cpus
            {
                // The clock is read every 64 spins: read on every one, it
                // was most of what the spinning cost.
                let t = Instant::now();
                let mut spins = 0u32;
                while !ready() {
                    std::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(64) && t.elapsed() >= WRITER_SPIN {
                        break;
                    }
                }
            }
            if !ready() {
                let budget = self.yield_wait_budget(opts.sync);
                crate::util::blocking::blocking(|| {
                    if let Some(budget) = budget {
                        self.yield_while(&ready, budget);
                    }
                    while !ready() {
                        std::thread::park();
                    }
                });
            }
        }
        if w.done.load(Ordering::Acquire) {
            // Pass the wake-up on first: the children are asleep until this
            // writer unparks them.
            let children = std::mem::take(&mut *w.children.lock());
            for c in children.into_iter().flatten() {
                c.thread.unpark();
            }
            let upto = w.publish_wait.load(Ordering::Acquire);
            if upto != 0 {
                // The leader inserts the group now, and up to 15 members wait
                // like this one: spinning would take the CPU it needs (W2:
                // 13% of the samples were this loop's `pause`; yielding at
                // once was 2-8% faster in each of five rounds in turns).
                self.wait_published_yielding(upto);
            }
            return Turn::Done(match w.rejected.lock().take() {
                Some(e) => Err(e),
                None => w.result.lock().take().unwrap_or(Ok(())),
            });
        }
        Turn::Lead(w)
    }

    /// Whether every thread in `threads` has a writer in the queue.
    #[cfg(test)]
    pub(crate) fn all_queued(&self, threads: &[std::thread::ThreadId]) -> bool {
        Self::holds_all(&self.queue.lock(), threads)
    }

    /// What a synced group's leader waits for before it gathers: every
    /// thread inside `write` queued, and every thread of `previous` (the
    /// last synced group) among them. One look at the queue.
    pub(crate) fn gathered(&self, previous: &[std::thread::ThreadId]) -> bool {
        let q = self.queue.lock();
        q.len() >= self.active() && Self::holds_all(&q, previous)
    }

    fn holds_all(q: &VecDeque<Arc<Writer>>, threads: &[std::thread::ThreadId]) -> bool {
        threads
            .iter()
            .all(|t| q.iter().any(|w| w.thread.id() == *t))
    }

    /// Writers queued right now.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.queue.lock().len()
    }

    /// Threads inside `write`.
    pub(crate) fn active(&self) -> usize {
        self.active_writers.load(Ordering::Relaxed)
    }

    /// Marks the leader as waiting for an fdatasync.
    pub(crate) fn sync_started(&self) {
        self.leader_syncing.store(true, Ordering::Release);
    }

    /// Marks the leader's fdatasync as done after `took`.
    pub(crate) fn sync_finished(&self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
        self.last_sync_micros.store(micros, Ordering::Relaxed);
        self.leader_syncing.store(false, Ordering::Release);
    }

    /// How long the last synced group's fdatasync took (zero before any).
    pub(crate) fn last_sync(&self) -> Duration {
        Duration::from_micros(self.last_sync_micros.load(Ordering::Relaxed))
    }

    /// How long a queued writer that is not ready may yield before it
    /// sleeps: `None` (sleep at once) unless its wait is a synced group's
    /// (its own write is synced, or the leader is syncing), the last sync
    /// took at most [`YIELD_WAIT_MAX_SYNC`], and the yield credit is not
    /// negative (when it is, this wait earns it one back).
    pub(crate) fn yield_wait_budget(&self, sync: bool) -> Option<Duration> {
        if !sync && !self.leader_syncing.load(Ordering::Acquire) {
            return None;
        }
        // With fewer waiters than CPUs, yielding keeps one CPU busy and
        // the sync's completion then wakes its leader on an idle one, the
        // slow wake-up this avoids (2 synced writers on 2 CPUs: 19.4K ->
        // 16.3K ops/s when they yielded).
        if self.active_writers.load(Ordering::Relaxed) <= self.cpus {
            return None;
        }
        let last = self.last_sync();
        if last.is_zero() || last > YIELD_WAIT_MAX_SYNC {
            return None;
        }
        if self.yield_credit.load(Ordering::Relaxed) < 0 {
            self.add_yield_credit(1);
            return None;
        }
        Some(last * YIELD_WAIT_SYNCS)
    }

    /// Yields until `ready` or `budget` has passed, or until one yield
    /// takes [`SLOW_YIELD`] (other work wanted the CPU; it costs the yield
    /// credit [`SLOW_YIELD_COST`]). A wait that ends in `ready` earns the
    /// credit one. Returns whether `ready`.
    fn yield_while(&self, ready: &impl Fn() -> bool, budget: Duration) -> bool {
        let start = Instant::now();
        let mut before = start;
        while !ready() {
            std::thread::yield_now();
            let now = Instant::now();
            if now - before >= SLOW_YIELD {
                self.add_yield_credit(-SLOW_YIELD_COST);
                return ready();
            }
            if now - start >= budget {
                return ready();
            }
            before = now;
        }
        self.add_yield_credit(1);
        true
    }

    /// Adds `delta` to the yield credit, kept within its bounds.
    fn add_yield_credit(&self, delta: i32) {
        let _ = self
            .yield_credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                let n = c
                    .saturating_add(delta)
                    .clamp(YIELD_CREDIT_MIN, YIELD_CREDIT_MAX);
                (n != c).then_some(n)
            });
    }

    /// The leader's group: the writers at the queue front, leader first,
    /// with the same `disable_wal`, up to `max_bytes` of batches (the
    /// leader always); a prepared transaction's batch is alone in its
    /// group.
    pub(crate) fn gather(&self, leader: &Arc<Writer>, max_bytes: usize) -> Vec<Arc<Writer>> {
        let q = self.queue.lock();
        debug_assert!(q.front().is_some_and(|f| Arc::ptr_eq(f, leader)));
        let mut size = 0usize;
        let mut g = Vec::new();
        // A prepared transaction's batch is a WAL record of its own (it is
        // logged, not applied).
        if leader.batch.prepared_name().is_some() {
            return vec![leader.clone()];
        }
        for m in q.iter() {
            if m.opts.disable_wal != leader.opts.disable_wal || m.batch.prepared_name().is_some() {
                break;
            }
            size += m.batch.size_in_bytes();
            if !g.is_empty() && size > max_bytes {
                break;
            }
            g.push(m.clone());
        }
        g
    }

    /// Takes `group` off the queue front. With `promote`, the next writer
    /// leads at once (its WAL append overlaps this group's inserts).
    pub(crate) fn release(&self, group: &[Arc<Writer>], promote: bool) {
        let next = {
            let mut q = self.queue.lock();
            for m in group {
                let front = q.pop_front();
                debug_assert!(front.is_some_and(|f| Arc::ptr_eq(&f, m)));
            }
            if promote {
                Self::promote(&mut q)
            } else {
                None
            }
        };
        if let Some(next) = next {
            next.thread.unpark();
        }
    }

    /// Hands `result` to every member of `group` but the leader and wakes
    /// them; with `promote`, the next writer then leads.
    pub(crate) fn finish(
        &self,
        group: &[Arc<Writer>],
        leader: &Arc<Writer>,
        result: &Result<()>,
        promote: bool,
    ) {
        for m in group {
            if !Arc::ptr_eq(m, leader) {
                *m.result.lock() = Some(result.clone());
                m.done.store(true, Ordering::Release);
                m.thread.unpark();
            }
        }
        if promote {
            let next = Self::promote(&mut self.queue.lock());
            if let Some(next) = next {
                next.thread.unpark();
            }
        }
    }

    /// Wakes every member of a logged and synced `group` (leader first)
    /// with success before the leader inserts the group into the memtable:
    /// each returns once `last_seq` reaches `upto` (the group's last
    /// sequence), so its wake-up overlaps the inserts. The leader unparks
    /// the first [`WAKE_FANOUT`] members; member `i` unparks members
    /// `(i + 1) * WAKE_FANOUT + j`, `j < WAKE_FANOUT`, when it wakes. The
    /// leader then calls [`Self::finish`] with `group` = itself alone.
    pub(crate) fn wake_before_publish(
        &self,
        group: &[Arc<Writer>],
        leader: &Arc<Writer>,
        upto: SeqNo,
    ) {
        debug_assert!(group.first().is_some_and(|f| Arc::ptr_eq(f, leader)));
        let members = &group[1..];
        for (i, m) in members.iter().enumerate() {
            let mut children = m.children.lock();
            for (j, slot) in children.iter_mut().enumerate() {
                *slot = members.get((i + 1) * WAKE_FANOUT + j).cloned();
            }
            drop(children);
            *m.result.lock() = Some(Ok(()));
            m.publish_wait.store(upto, Ordering::Release);
        }
        // Children (higher indexes) first: a member that sees its own
        // `done` (it may be spinning, not asleep) and unparks its children
        // must find theirs set, or a child would park again and never be
        // unparked.
        for m in members.iter().rev() {
            m.done.store(true, Ordering::Release);
            // Tests widen the window between two flags to provoke the race.
            #[cfg(test)]
            if tests::YIELD_BETWEEN_FLAGS.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
        }
        for m in members.iter().take(WAKE_FANOUT) {
            m.thread.unpark();
        }
    }

    /// Marks the queue front as leader; returns it, to be unparked once the
    /// lock is released.
    fn promote(q: &mut VecDeque<Arc<Writer>>) -> Option<Arc<Writer>> {
        let next = q.front()?;
        next.leader.store(true, Ordering::Release);
        Some(next.clone())
    }

    /// Makes sequences `first_seq..first_seq + count` visible, after every
    /// earlier group's (their inserts may still be running on other
    /// threads; each takes microseconds and holds no lock), and wakes the
    /// threads asleep waiting for them.
    pub(crate) fn publish(&self, first_seq: SeqNo, count: u64) {
        // Groups publish in order, so `last_seq` reaches `first_seq - 1`
        // and stays there until this group stores past it.
        self.wait_published(first_seq - 1);
        // SeqCst store, then SeqCst load of the sleeper count: a sleeper
        // counts itself, then loads `last_seq` (both SeqCst), so either it
        // sees this store or this load sees it counted (and it is waiting
        // on the condvar, or about to under `publish_lock`).
        self.last_seq.store(first_seq + count - 1, Ordering::SeqCst);
        if self.publish_sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.publish_lock.lock();
            self.publish_cv.notify_all();
        }
    }

    /// Waits until every sequence up to `upto` is published: no memtable
    /// insert at or below it is in flight. Spins briefly (an insert takes
    /// microseconds), then yields, then sleeps until a `publish` wakes it.
    pub(crate) fn wait_published(&self, upto: SeqNo) {
        let mut spins = 0u32;
        while self.last_seq.load(Ordering::Acquire) < upto {
            if spins < 64 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                return self.wait_published_yielding(upto);
            }
        }
    }

    /// [`Self::wait_published`] without the spinning: for a writer whose
    /// wait is the leader's inserts, with the CPUs shared by more writers.
    /// Yields for up to [`PUBLISH_YIELD`], then sleeps: a publisher that
    /// was preempted can take a scheduler slice to come back, and writers
    /// yielding to each other all that time took the CPUs it needed (8 SQL
    /// connections updating without sync spent 28% of the server's samples
    /// in `sched_yield` and did a quarter of one connection's updates).
    fn wait_published_yielding(&self, upto: SeqNo) {
        let t = Instant::now();
        let mut yields = 0u32;
        while self.last_seq.load(Ordering::Acquire) < upto {
            yields = yields.wrapping_add(1);
            // The clock is read every 8 yields.
            if yields.is_multiple_of(8) && t.elapsed() >= PUBLISH_YIELD {
                return self.sleep_until_published(upto);
            }
            std::thread::yield_now();
        }
    }

    /// Sleeps on `publish_cv` until `last_seq` reaches `upto`.
    fn sleep_until_published(&self, upto: SeqNo) {
        let mut g = self.publish_lock.lock();
        self.publish_sleepers.fetch_add(1, Ordering::SeqCst);
        crate::util::blocking::blocking(|| {
            while self.last_seq.load(Ordering::SeqCst) < upto {
                self.publish_cv.wait(&mut g);
            }
        });
        self.publish_sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// Makes `wake_before_publish` yield between two members' `done` flags.
    pub(super) static YIELD_BETWEEN_FLAGS: AtomicBool = AtomicBool::new(false);

    fn batch(k: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(k, b"v");
        b
    }

    /// CPU time the calling thread has used (Linux: `schedstat`, in ns).
    #[cfg(target_os = "linux")]
    fn thread_cpu_ns() -> u64 {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        s.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// A writer waiting for a group whose publisher does not come back
    /// soon (preempted, on 2 CPUs shared by many writers) sleeps until
    /// `publish` wakes it, instead of yielding all along: 8 SQL
    /// connections updating without sync spent most of their CPU in
    /// `sched_yield` that way.
    #[cfg(target_os = "linux")]
    #[test]
    fn wait_for_a_late_publisher_sleeps_and_is_woken() {
        let p = Arc::new(CommitPipeline::new(0));
        let waiter = {
            let p = p.clone();
            std::thread::spawn(move || {
                let cpu = thread_cpu_ns();
                let t = Instant::now();
                p.wait_published(3);
                let seen = p.last_seq();
                (seen, thread_cpu_ns() - cpu, t.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(300));
        p.publish(1, 3);
        let (seen, cpu_ns, waited) = waiter.join().unwrap();
        assert_eq!(seen, 3, "woken before publication");
        assert_slept_through_300_ms(waited, cpu_ns);
    }

    /// A thread that waited about 300 ms did so mostly asleep: yielding
    /// or spinning for 300 ms on an idle CPU costs about 300 ms of CPU.
    #[cfg(target_os = "linux")]
    fn assert_slept_through_300_ms(waited: Duration, cpu_ns: u64) {
        assert!(
            waited >= Duration::from_millis(250),
            "returned after {waited:?}"
        );
        assert!(
            cpu_ns < 60_000_000,
            "the waiter used {} ms of CPU waiting 300 ms",
            cpu_ns / 1_000_000
        );
    }

    /// Many waiters for different groups, publishers late and in reverse
    /// order: every waiter is woken once its group is published (no lost
    /// wake-up between its check and its sleep).
    #[test]
    fn sleeping_waiters_are_all_woken_in_order() {
        let p = Arc::new(CommitPipeline::new(0));
        let groups: u64 = 12;
        let waiters: Vec<_> = (1..=groups)
            .map(|g| {
                let p = p.clone();
                std::thread::spawn(move || {
                    p.wait_published(g * 2);
                    assert!(p.last_seq() >= g * 2);
                })
            })
            .collect();
        let publishers: Vec<_> = (0..groups)
            .rev()
            .map(|g| {
                let p = p.clone();
                std::thread::spawn(move || {
                    // Late enough that the waiters are asleep.
                    std::thread::sleep(Duration::from_millis(1 + (groups - g) % 3));
                    p.publish(g * 2 + 1, 2);
                })
            })
            .collect();
        for t in publishers.into_iter().chain(waiters) {
            t.join().unwrap();
        }
        assert_eq!(p.last_seq(), groups * 2);
        assert_eq!(p.publish_sleepers.load(Ordering::SeqCst), 0);
    }

    /// Groups publish out of order on their threads; `last_seq` only ever
    /// covers sequences whose group has published, and ends at the last.
    #[test]
    fn publication_waits_for_every_earlier_group() {
        let p = Arc::new(CommitPipeline::new(0));
        // Groups of 3 sequences each: 1..=3, 4..=6, ...
        let groups: u64 = 40;
        let entered: Arc<Vec<AtomicBool>> =
            Arc::new((0..groups).map(|_| AtomicBool::new(false)).collect());
        let threads: Vec<_> = (0..groups)
            .rev()
            .map(|g| {
                let p = p.clone();
                let entered = entered.clone();
                std::thread::spawn(move || {
                    entered[g as usize].store(true, Ordering::Release);
                    p.publish(g * 3 + 1, 3);
                })
            })
            .collect();
        // Whenever last_seq covers a group, that group has called publish:
        // no group's sequences become visible on another group's behalf.
        let watcher = {
            let p = p.clone();
            let entered = entered.clone();
            std::thread::spawn(move || loop {
                let seen = p.last_seq();
                for g in 0..seen / 3 {
                    assert!(
                        entered[g as usize].load(Ordering::Acquire),
                        "last_seq {seen} covers group {g} before it published"
                    );
                }
                if seen == groups * 3 {
                    return;
                }
                std::thread::yield_now();
            })
        };
        for t in threads {
            t.join().unwrap();
        }
        watcher.join().unwrap();
        assert_eq!(p.last_seq(), groups * 3);
        p.wait_published(groups * 3);
    }

    /// Members woken before their group's inserts do not return until the
    /// group is published: a write is visible when `write` returns.
    #[test]
    fn members_woken_before_publish_return_only_after_it() {
        let p = Arc::new(CommitPipeline::new(0));
        let Turn::Lead(leader) = p.join(batch(b"a"), WriteOptions::default(), None) else {
            panic!("the first writer must lead");
        };
        let returned = Arc::new(AtomicUsize::new(0));
        let members: Vec<_> = [b"b", b"c", b"d"]
            .into_iter()
            .map(|k| {
                let p = p.clone();
                let returned = returned.clone();
                std::thread::spawn(move || {
                    let turn = p.join(batch(k), WriteOptions::default(), None);
                    // What the caller would now read must include the group.
                    let seen = p.last_seq();
                    returned.fetch_add(1, Ordering::AcqRel);
                    match turn {
                        Turn::Done(r) => r.map(|()| seen),
                        Turn::Lead(_) => panic!("a member must not lead"),
                    }
                })
            })
            .collect();
        while p.queued() < 4 {
            std::thread::yield_now();
        }
        let group = p.gather(&leader, 1 << 20);
        assert_eq!(group.len(), 4);
        p.release(&group, false);
        p.wake_before_publish(&group, &leader, 4);
        // The members are awake and waiting; none may return yet.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            returned.load(Ordering::Acquire),
            0,
            "a member returned before publication"
        );
        p.publish(1, 4);
        for m in members {
            assert_eq!(m.join().unwrap().unwrap(), 4);
        }
        p.finish(std::slice::from_ref(&leader), &leader, &Ok(()), true);
        assert_eq!(p.queued(), 0);
    }

    /// Writers in synced-style groups woken through the tree, with members
    /// spinning (the pipeline told it has many CPUs) and the leader yielding
    /// between two members' flags: every member of every group returns (a
    /// parent that saw its own flag before its child's was set would leave
    /// the child asleep; with the flags set in index order this hung in
    /// every run), and only once its write is published.
    #[test]
    fn tree_wake_up_reaches_every_member_of_large_groups() {
        tree_wake_up_run(64, false);
    }

    /// As above with synced writes whose waits yield (the pipeline told it
    /// has one CPU, a fast last sync): a member that sees its flag while
    /// yielding, not asleep, still wakes its children.
    #[test]
    fn tree_wake_up_reaches_every_member_when_members_yield() {
        tree_wake_up_run(1, true);
    }

    fn tree_wake_up_run(cpus: usize, sync: bool) {
        const THREADS: u64 = 8;
        const WRITES: u64 = 2000;
        YIELD_BETWEEN_FLAGS.store(true, Ordering::Relaxed);
        let mut pipeline = CommitPipeline::new(0);
        pipeline.cpus = cpus;
        if sync {
            pipeline.sync_finished(Duration::from_micros(100));
        }
        let opts = WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        let p = Arc::new(pipeline);
        let assigned = Arc::new(Mutex::new(0u64));
        let largest = Arc::new(AtomicUsize::new(0));
        let unpublished = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        for t in 0..THREADS {
            let p = p.clone();
            let largest = largest.clone();
            let assigned = assigned.clone();
            let unpublished = unpublished.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _active = p.enter();
                for i in 0..WRITES {
                    let key = format!("{t}-{i}");
                    // Every sequence this write can get is above this.
                    let before = *assigned.lock();
                    match p.join(batch(key.as_bytes()), opts, None) {
                        Turn::Done(r) => {
                            r.unwrap();
                            if p.last_seq() <= before {
                                unpublished.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Turn::Lead(w) => {
                            let (group, first) = {
                                let mut a = assigned.lock();
                                // As a synced leader does: wait briefly for
                                // the others to queue.
                                let t0 = Instant::now();
                                while p.queued() < p.active()
                                    && t0.elapsed() < Duration::from_micros(200)
                                {
                                    std::hint::spin_loop();
                                }
                                let group = p.gather(&w, 1 << 20);
                                let first = *a + 1;
                                *a += group.len() as u64;
                                (group, first)
                            };
                            largest.fetch_max(group.len(), Ordering::Relaxed);
                            let last = first + group.len() as u64 - 1;
                            p.release(&group, false);
                            p.wake_before_publish(&group, &w, last);
                            p.publish(first, group.len() as u64);
                            p.finish(std::slice::from_ref(&w), &w, &Ok(()), true);
                        }
                    }
                }
                tx.send(t).unwrap();
            });
        }
        drop(tx);
        for _ in 0..THREADS {
            rx.recv_timeout(Duration::from_secs(20))
                .expect("a writer never returned: a member was left asleep");
        }
        assert_eq!(p.last_seq(), THREADS * WRITES);
        assert_eq!(p.queued(), 0);
        assert_eq!(
            unpublished.load(Ordering::Relaxed),
            0,
            "a member returned before its group was published"
        );
        // The tree had depth: a group larger than the leader's own children.
        assert!(largest.load(Ordering::Relaxed) > 1 + WAKE_FANOUT);
    }

    /// A leader's failed group wakes every member with the error, and the
    /// writer queued behind the group leads the next one.
    #[test]
    fn failed_group_wakes_members_with_its_error_and_promotes_next() {
        let p = Arc::new(CommitPipeline::new(0));
        let Turn::Lead(leader) = p.join(batch(b"a"), WriteOptions::default(), None) else {
            panic!("the first writer must lead");
        };
        // Two members queue behind the leader, then a third writer.
        let spawn = |k: &'static [u8]| {
            let p = p.clone();
            std::thread::spawn(
                move || match p.join(batch(k), WriteOptions::default(), None) {
                    Turn::Done(r) => Err(r),
                    Turn::Lead(w) => Ok(w),
                },
            )
        };
        let m1 = spawn(b"b");
        let m2 = spawn(b"c");
        while p.queued() < 3 {
            std::thread::yield_now();
        }
        let group = p.gather(&leader, 1 << 20);
        assert_eq!(group.len(), 3);
        let next = spawn(b"d");
        while p.queued() < 4 {
            std::thread::yield_now();
        }
        let err: Result<()> = Err(Error::invalid("disk on fire"));
        p.release(&group, false);
        p.finish(&group, &leader, &err, true);
        for m in [m1, m2] {
            match m.join().unwrap() {
                Err(Err(Error::InvalidArgument(what))) => assert!(what.contains("disk on fire")),
                other => panic!("member woke with {:?}", other.map(|_| ()).err()),
            }
        }
        // The writer behind the group is promoted and leads.
        let w = next.join().unwrap().expect("the next writer leads");
        assert_eq!(w.batch.count(), 1);
        p.release(std::slice::from_ref(&w), true);
        assert_eq!(p.queued(), 0);
    }
    /// A writer waiting behind a leader whose sync does not end soon (a
    /// device that stalled) yields for a few of the last syncs' length,
    /// then sleeps until woken: it does not yield the whole wait.
    #[cfg(target_os = "linux")]
    #[test]
    fn yielding_wait_for_a_stalled_sync_is_bounded_then_sleeps() {
        let mut pipeline = CommitPipeline::new(0);
        pipeline.cpus = 1;
        pipeline.sync_finished(Duration::from_micros(200));
        let p = Arc::new(pipeline);
        let _leader_active = p.enter();
        let Turn::Lead(leader) = p.join(batch(b"a"), WriteOptions::default(), None) else {
            panic!("the first writer must lead");
        };
        p.sync_started();
        let member = {
            let p = p.clone();
            std::thread::spawn(move || {
                let _active = p.enter();
                assert!(
                    p.yield_wait_budget(true).is_some(),
                    "this wait should yield first"
                );
                let cpu = thread_cpu_ns();
                let t = Instant::now();
                let turn = p.join(
                    batch(b"b"),
                    WriteOptions {
                        sync: true,
                        ..WriteOptions::default()
                    },
                    None,
                );
                assert!(matches!(turn, Turn::Done(Ok(()))));
                (thread_cpu_ns() - cpu, t.elapsed())
            })
        };
        while p.queued() < 2 {
            std::thread::yield_now();
        }
        // The sync stalls for 300 ms.
        std::thread::sleep(Duration::from_millis(300));
        p.sync_finished(Duration::from_millis(300));
        let group = p.gather(&leader, 1 << 20);
        assert_eq!(group.len(), 2);
        p.release(&group, false);
        p.finish(&group, &leader, &Ok(()), true);
        let (cpu_ns, waited) = member.join().unwrap();
        assert_slept_through_300_ms(waited, cpu_ns);
    }

    /// Whether a wait may yield: only for a synced wait (its own write
    /// synced, or the leader syncing), with more writers than CPUs, after
    /// a sync no slower than `YIELD_WAIT_MAX_SYNC`; and a slow yield stops
    /// yielding for `SLOW_YIELD_COST` waits, each of which earns one back.
    #[test]
    fn yield_wait_needs_a_fast_sync_more_writers_than_cpus_and_credit() {
        let mut pipeline = CommitPipeline::new(0);
        pipeline.cpus = 2;
        let p = pipeline;
        let a = p.enter();
        let b = p.enter();
        let c = p.enter();
        assert_eq!(p.yield_wait_budget(true), None, "no sync timed yet");
        p.sync_finished(Duration::from_micros(100));
        assert_eq!(p.yield_wait_budget(true), Some(Duration::from_micros(300)));
        assert_eq!(
            p.yield_wait_budget(false),
            None,
            "an unsynced wait, no sync running"
        );
        p.sync_started();
        assert!(
            p.yield_wait_budget(false).is_some(),
            "behind a leader's sync"
        );
        p.sync_finished(YIELD_WAIT_MAX_SYNC + Duration::from_micros(1));
        assert_eq!(p.yield_wait_budget(true), None, "a slow device");
        p.sync_finished(Duration::from_micros(100));
        drop(c);
        assert_eq!(p.yield_wait_budget(true), None, "no more writers than CPUs");
        let c = p.enter();
        p.add_yield_credit(-SLOW_YIELD_COST);
        for i in 0..SLOW_YIELD_COST {
            assert_eq!(
                p.yield_wait_budget(true),
                None,
                "wait {i} after a slow yield"
            );
        }
        assert!(p.yield_wait_budget(true).is_some(), "credit earned back");
        // The credit is bounded both ways.
        for _ in 0..10_000 {
            p.add_yield_credit(-SLOW_YIELD_COST);
        }
        assert_eq!(p.yield_credit.load(Ordering::Relaxed), YIELD_CREDIT_MIN);
        drop((a, b, c));
    }

    /// A yield that lets another thread run for a whole time slice (both
    /// pinned to one CPU, the other spinning) is a slow yield: the writer
    /// stops yielding and the credit falls below zero.
    #[cfg(target_os = "linux")]
    #[test]
    fn yield_that_lets_a_busy_thread_run_is_slow_and_stops_yielding() {
        fn pin_to_first_allowed_cpu() -> bool {
            // SAFETY: `set` is a plain bit set owned by this frame; both
            // calls read or write only it and act on the calling thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0
                {
                    return false;
                }
                let Some(cpu) = (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &set))
                else {
                    return false;
                };
                libc::CPU_ZERO(&mut set);
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
            }
        }
        let p = Arc::new(CommitPipeline::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let hog = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                ready_tx.send(pin_to_first_allowed_cpu()).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let pinned = ready_rx.recv().unwrap();
        let waiter = {
            let p = p.clone();
            std::thread::spawn(move || {
                if !pin_to_first_allowed_cpu() {
                    return None;
                }
                let never = || false;
                Some(p.yield_while(&never, Duration::from_secs(2)))
            })
        };
        let ended = waiter.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        hog.join().unwrap();
        if !pinned || ended.is_none() {
            eprintln!("skipped: could not pin threads to one CPU");
            return;
        }
        assert_eq!(ended, Some(false));
        assert!(
            p.yield_credit.load(Ordering::Relaxed) < 0,
            "a yield that ran another thread's slice was not counted as slow"
        );
    }

    /// `all_queued` is true only when every given thread has a writer in
    /// the queue (the synced leader's wait for the previous group).
    #[test]
    fn all_queued_checks_every_thread_of_the_previous_group() {
        let p = Arc::new(CommitPipeline::new(0));
        let Turn::Lead(leader) = p.join(batch(b"a"), WriteOptions::default(), None) else {
            panic!("the first writer must lead");
        };
        let me = std::thread::current().id();
        let other = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        assert!(p.all_queued(&[]));
        assert!(p.all_queued(&[me]));
        assert!(!p.all_queued(&[me, other]));
        let member = {
            let p = p.clone();
            std::thread::spawn(move || {
                let id = std::thread::current().id();
                (
                    id,
                    matches!(
                        p.join(batch(b"b"), WriteOptions::default(), None),
                        Turn::Done(Ok(()))
                    ),
                )
            })
        };
        while p.queued() < 2 {
            std::thread::yield_now();
        }
        let group = p.gather(&leader, 1 << 20);
        let ids: Vec<_> = group.iter().map(|w| w.thread_id()).collect();
        assert!(p.all_queued(&ids));
        assert!(!p.all_queued(&[ids[1], other]));
        p.release(&group, false);
        p.finish(&group, &leader, &Ok(()), true);
        let (id, ok) = member.join().unwrap();
        assert!(ok);
        assert_eq!(ids, vec![me, id]);
        assert!(!p.all_queued(&ids), "the group left the queue");
    }
}
