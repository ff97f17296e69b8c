//! The write path: a writer joins the commit pipeline (`pipeline.rs`); the
//! leader of a group assigns its sequence numbers and appends one WAL
//! record under `log` (at most one fdatasync), releases `log`, inserts the
//! group into the memtable concurrently with the next group's append, and
//! publishes its sequences in order.
//!
//! Locking: `log` is held across the WAL append and sync (the group-commit
//! point; only the leader waits on it) and never across memtable inserts;
//! `state` is taken under `log` by `make_room_for_write`; the pipeline's
//! queue lock is never held across I/O.

use super::events::{WriteStallCause, WriteStallInfo};
use super::pipeline::{ConflictCheck, Turn, Writer};
use super::*;

/// Largest group a write leader assembles, in bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// Longest a synced group's leader waits for writers still on their way
/// into the queue (see `write_group`); also capped at half a sync.
const SYNC_GATHER: Duration = Duration::from_micros(200);

/// What a leader's [`DbInner::write_group`] decided, for the inserts and
/// wake-ups it does after releasing `log`.
pub(super) struct GroupCommit {
    /// The writers at the queue front that this group covers, leader first.
    pub(super) group: Vec<Arc<Writer>>,
    /// The memtable to insert into, or the group's error.
    pub(super) mem: Result<Arc<MemTable>>,
    pub(super) first_seq: SeqNo,
    /// Records in the group; 0 when it failed or held only empty batches.
    pub(super) count: u64,
    /// The group asked for (and got, or failed at) an fdatasync.
    pub(super) synced: bool,
}

impl DbInner {
    pub(super) fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.write_checked(opts, batch, None)
    }

    /// Writes `batch` if `check` (an optimistic transaction's read and
    /// write set) still holds when its group is written: the check and the
    /// write are one atomic step. A failed check returns `Error::Busy` and
    /// writes nothing.
    pub(crate) fn write_checked(
        &self,
        opts: &WriteOptions,
        batch: WriteBatch,
        check: Option<ConflictCheck>,
    ) -> Result<()> {
        let p = &self.pipeline;
        let _active = p.enter();
        let w = match p.join(batch, *opts, check) {
            Turn::Done(r) => return r,
            Turn::Lead(w) => w,
        };

        // This writer leads a group: sequence numbers and the WAL record
        // under the log lock.
        let mut log = self.log.lock();
        let commit = self.write_group(&mut log, &w);
        drop(log);

        // An unsynced group passes leadership on at once, so the next
        // group's WAL append overlaps this group's memtable inserts. A synced
        // group passes it on once it is published instead: the next leader
        // would otherwise start gathering its group while this group's
        // members are still asleep, wait out its gathering time for them,
        // and sync fewer writes (W2: 16 synced writers).
        p.release(&commit.group, !commit.synced);
        self.hook(super::hooks::BEFORE_INSERT);
        // A synced group's members are woken before the inserts and return
        // once the group is published: the wake-ups of 15 sleeping threads
        // on 2 CPUs overlap the leader's inserts instead of following them
        // (W2: +6% median over 6 rounds in turns, 2,035 groups instead of
        // 2,120 for 32,000 writes, as more members are back in time for the
        // next group).
        let early = commit.synced && commit.count > 0 && commit.mem.is_ok();
        if early {
            p.wake_before_publish(&commit.group, &w, commit.first_seq + commit.count - 1);
        }
        let result = match &commit.mem {
            Ok(mem) => {
                if commit.count > 0 {
                    let mut seq = commit.first_seq;
                    for m in &commit.group {
                        if m.check.is_some() && m.rejected.lock().is_some() {
                            continue;
                        }
                        seq += mem.insert_batch(&m.batch, seq);
                    }
                    debug_assert_eq!(seq, commit.first_seq + commit.count);
                    p.publish(commit.first_seq, commit.count);
                }
                Ok(())
            }
            Err(e) => Err(e.clone()),
        };
        // Members woken early already have their result.
        let to_wake = if early {
            std::slice::from_ref(&w)
        } else {
            &commit.group[..]
        };
        p.finish(to_wake, &w, &result, commit.synced);
        let rejected = w.rejected.lock().take();
        match rejected {
            Some(e) => Err(e),
            None => result,
        }
    }

    /// Logs a group led by `leader`: sequence numbers, one WAL record, at
    /// most one sync. The caller inserts into the memtable and publishes
    /// after releasing `log`.
    pub(super) fn write_group(&self, log: &mut LogState, leader: &Arc<Writer>) -> GroupCommit {
        let (mem, l0_files) = match self.make_room_for_write(log, false) {
            Ok(r) => r,
            Err(e) => {
                return GroupCommit {
                    group: vec![leader.clone()],
                    mem: Err(e),
                    first_seq: 0,
                    count: 0,
                    synced: false,
                }
            }
        };
        // A synced group costs one fdatasync whatever its size. Writers of
        // the previous synced group may still be waking up, or already out
        // of `write` and on their way back with their next write: give them
        // the CPU for a few microseconds so this group carries them too,
        // instead of leaving them for the next sync. (Counting the threads
        // inside `write` alone misses the second kind: two synced writers
        // whose waits yield would each lead a group of one in turn, 1.5x
        // slower than groups of two.)
        if leader.opts.sync {
            // At most half of what a sync costs on this device (measured),
            // so the wait can never cost more than the syncs it saves.
            let deadline = Instant::now() + SYNC_GATHER.min(self.pipeline.last_sync() / 2);
            while !self.pipeline.gathered(&log.last_synced_group) && Instant::now() < deadline {
                std::thread::yield_now();
            }
        }
        // Assemble the group from the queue front.
        let max = if leader.batch.size_in_bytes() <= 128 << 10 {
            leader.batch.size_in_bytes() + (128 << 10)
        } else {
            MAX_GROUP_BYTES
        };
        let group = self.pipeline.gather(leader, max);
        let n = group.len();
        let first_seq = log.last_assigned_seq + 1;
        if group.iter().any(|m| m.check.is_some()) {
            self.check_conflicts(log, &group);
        }
        let mut scratch = std::mem::take(&mut log.scratch);
        scratch.clear();
        for m in &group {
            if m.check.is_some() && m.rejected.lock().is_some() {
                continue;
            }
            scratch.append(&m.batch);
        }
        scratch.set_sequence(first_seq);
        // A prepared transaction's records take their sequence numbers
        // when it commits.
        let prepare = leader.batch.prepared_name().is_some();
        let count = if prepare { 0 } else { scratch.count() as u64 };
        let sync = group.iter().any(|m| m.opts.sync);
        if sync {
            log.last_synced_group.clear();
            log.last_synced_group
                .extend(group.iter().map(|m| m.thread_id()));
        }
        let user_bytes: usize = group.iter().map(|m| m.batch.size_in_bytes()).sum();
        self.pace_if_slowed(log, l0_files, user_bytes);

        if scratch.has_content() && !leader.opts.disable_wal {
            let r = (|| -> Result<()> {
                let w = log.writer.as_mut().ok_or(Error::Closed)?;
                if sync {
                    w.prepare_synced_record(scratch.data().len())?;
                } else if self.durability.deferred_in_use() {
                    // The WAL syncer will sync this record for a waiter:
                    // written as a synced one (zero-filled space ahead,
                    // `pwrite` rather than a store into a page the last
                    // sync may still be writing back).
                    w.prepare_synced_record(scratch.data().len())?;
                }
                w.add_record(scratch.data())?;
                let pos = self.durability.note_logged();
                if sync {
                    self.pipeline.sync_started();
                    let t = Instant::now();
                    let r = self.sync_closed_logs().and_then(|()| w.sync());
                    self.pipeline.sync_finished(t.elapsed());
                    if let Err(e) = r {
                        self.durability.fail(e.clone());
                        return Err(e);
                    }
                    self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
                    self.durability.mark_synced(pos);
                } else {
                    w.flush()?;
                }
                Ok(())
            })();
            if let Err(e) = r {
                // The WAL may now end in a torn record: refuse further writes
                // until reopened, so nothing is acknowledged after it.
                self.set_bg_error(e.clone());
                log.scratch = scratch;
                return GroupCommit {
                    group,
                    mem: Err(e),
                    first_seq,
                    count: 0,
                    synced: sync,
                };
            }
            self.counters
                .wal_bytes_written
                .fetch_add(scratch.size_in_bytes() as u64, Ordering::Relaxed);
            if count > 0 {
                log.last_logged_seq = first_seq + count - 1;
            }
            if scratch.has_markers() {
                self.note_markers(&scratch);
            }
        } else if count > 0 {
            mem.mark_unlogged();
        }
        if count > 0 {
            log.last_assigned_seq = first_seq + count - 1;
            if log.tracking_in_flight {
                log.drop_published(self.pipeline.last_seq());
                log.in_flight
                    .push_back((log.last_assigned_seq, group.clone()));
            }
        }
        log.scratch = scratch;
        let c = &self.counters;
        c.write_groups.fetch_add(1, Ordering::Relaxed);
        c.writes.fetch_add(n as u64, Ordering::Relaxed);
        c.user_bytes_written
            .fetch_add(user_bytes as u64, Ordering::Relaxed);
        GroupCommit {
            group,
            mem: Ok(mem),
            first_seq,
            count,
            synced: sync && count > 0 && !leader.opts.disable_wal,
        }
    }

    /// Records the prepared transactions a logged group prepared or
    /// decided (the set a new WAL starts with, see `wal_files.rs`).
    /// REQUIRES: `log` held, the group's record written.
    fn note_markers(&self, scratch: &WriteBatch) {
        let mut prepared = self.prepared.lock();
        if let Some(name) = scratch.prepared_name() {
            prepared.insert(name.to_vec(), scratch.data().to_vec());
        }
        for name in scratch.decided_names() {
            prepared.remove(name);
        }
    }

    /// Runs the conflict checks of `group`'s optimistic transactions, in
    /// group order, marking the members that fail as rejected. A check sees
    /// every write assigned before this group and the batches of the
    /// members ahead of it in the group that were not rejected.
    ///
    /// Earlier groups may still be inserting into the memtable. Their keys
    /// come from `log.in_flight` instead of waiting for them: a write not
    /// yet published has a sequence above any a transaction read at, so
    /// its key conflicts whatever the transaction saw. Only the first
    /// checked group waits for earlier inserts (nothing was tracked before
    /// it). REQUIRES: `log` held, so no other group is assigned meanwhile.
    fn check_conflicts(&self, log: &mut LogState, group: &[Arc<Writer>]) {
        if log.tracking_in_flight {
            log.drop_published(self.pipeline.last_seq());
        } else {
            log.tracking_in_flight = true;
            self.pipeline.wait_published(log.last_assigned_seq);
        }
        fn note_writes<'a>(written: &mut HashSet<&'a [u8]>, m: &'a Writer) {
            for op in m.batch.iter().flatten() {
                match op {
                    crate::batch::BatchOp::Put(k, _) | crate::batch::BatchOp::Delete(k) => {
                        written.insert(k);
                    }
                    crate::batch::BatchOp::Marker(..) => {}
                }
            }
        }
        let mut written: HashSet<&[u8]> = HashSet::new();
        for m in log.in_flight.iter().flat_map(|(_, g)| g.iter()) {
            if m.check.is_none() || m.rejected.lock().is_none() {
                note_writes(&mut written, m);
            }
        }
        for m in group {
            if let Some(check) = &m.check {
                let mut verdict = Ok(());
                for (key, seen) in &check.keys {
                    if written.contains(key.as_slice()) {
                        verdict = Err(Error::Busy {
                            key: key.clone(),
                            reason: "written by a transaction that committed first",
                        });
                        break;
                    }
                    match self.latest_seq(key, Some(*seen)) {
                        Ok(Some(s)) if s > *seen => {
                            verdict = Err(Error::Busy {
                                key: key.clone(),
                                reason: "written by a transaction that committed first",
                            });
                            break;
                        }
                        Ok(_) => {}
                        Err(e) => {
                            verdict = Err(e);
                            break;
                        }
                    }
                }
                if let Err(e) = verdict {
                    *m.rejected.lock() = Some(e);
                    continue;
                }
            }
            note_writes(&mut written, m);
        }
    }

    /// While level 0 is at or above `level0_slowdown_writes_trigger`, paces
    /// write groups to `delayed_write_rate` bytes per second (a token bucket
    /// kept by the leader), so writers slow down smoothly and compaction
    /// catches up before the hard stop. `l0_files` is the level-0 file
    /// count `make_room_for_write` saw. REQUIRES: `log` held.
    pub(super) fn pace_if_slowed(&self, log: &mut LogState, l0_files: usize, bytes: usize) {
        if l0_files < self.opts.level0_slowdown_writes_trigger {
            log.next_write_at = None;
            if let Some(since) = log.slowed_since.take() {
                self.events.stall(&WriteStallInfo {
                    cause: WriteStallCause::Level0Slowdown,
                    cleared: true,
                    duration: since.elapsed(),
                });
            }
            return;
        }
        let now = Instant::now();
        if log.slowed_since.is_none() {
            log.slowed_since = Some(now);
            self.events.stall(&WriteStallInfo {
                cause: WriteStallCause::Level0Slowdown,
                cleared: false,
                duration: Duration::ZERO,
            });
        }
        let cost = Duration::from_secs_f64(bytes as f64 / self.opts.delayed_write_rate as f64);
        let start = log.next_write_at.map_or(now, |t| t.max(now));
        let until = start + cost;
        log.next_write_at = Some(until);
        if until > now {
            crate::util::blocking::blocking(|| std::thread::sleep(until - now));
            self.counters.slowdowns.fetch_add(1, Ordering::Relaxed);
            self.counters
                .stall_micros
                .fetch_add(now.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
    }
}
