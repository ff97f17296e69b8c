//! WAL files: creating (or reusing) a log with its start marker, the
//! memtable switch that starts a new log, the logs switched out without a
//! sync (`closed_logs`), and the background interval sync.
//!
//! Locking: `log` is held for a switch; `state` is taken under it (never
//! the other way round); `closed_logs` is taken under `log` by every path
//! that syncs and is held across those fdatasyncs; `recycle_pool` is taken
//! only to pop a number, never across I/O.

use super::events::{WriteStallCause, WriteStallInfo};
use super::*;

/// WAL files are preallocated in chunks of this size.
const WAL_PREALLOCATE: u64 = 4 << 20;

/// Starts WAL `number`: reuses the obsolete WAL `reuse` if given (renamed,
/// overwritten in place) or creates a file, makes the name durable, and
/// writes the start marker: an empty batch whose sequence is the last one
/// logged before this WAL (docs/format/wal.md, "Start marker").
pub(super) fn new_log(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    number: u64,
    reuse: Option<u64>,
    last_logged_seq: SeqNo,
    mapped: bool,
) -> Result<LogWriter> {
    let path = filename::log_file_name(dir, number);
    let file = match (reuse.map(|old| filename::log_file_name(dir, old)), mapped) {
        (Some(old), false) => fs.reuse_writable(&old, &path)?,
        (Some(old), true) => fs.reuse_log(&old, &path)?,
        (None, false) => fs.create(&path)?,
        (None, true) => fs.create_log(&path)?,
    };
    let mut w = LogWriter::new(file, number);
    if reuse.is_none() {
        // A reused file is already allocated and written.
        w = w.with_preallocate(WAL_PREALLOCATE);
    }
    fs.sync_dir(dir)?;
    let mut marker = WriteBatch::new();
    marker.set_sequence(last_logged_seq);
    w.add_record(marker.data())?;
    w.flush()?;
    Ok(w)
}

/// Writes the prepare records of the transactions still undecided to a
/// new WAL `w`, right after its start marker, and syncs it if there were
/// any: the WALs they were first written to can then be deleted with
/// their memtables, and the newest WAL, which recovery always replays,
/// holds every undecided transaction.
pub(super) fn relog_prepared(w: &mut LogWriter, records: &[Vec<u8>]) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    for r in records {
        w.add_record(r)?;
    }
    w.sync()
}

impl DbInner {
    /// Makes sure the mutable memtable has room, switching it (and the WAL)
    /// when full, delaying or stopping writes while background work is
    /// behind. With `force`, switches even when not full (unless empty).
    /// REQUIRES: `log` held. Returns the memtable to insert into and the
    /// level-0 file count it saw (for the slowdown).
    pub(super) fn make_room_for_write(
        &self,
        log: &mut LogState,
        force: bool,
    ) -> Result<(Arc<MemTable>, usize)> {
        let mut stalled = None;
        let r = self.make_room(log, force, &mut stalled);
        if let Some((cause, since)) = stalled {
            self.events.stall(&WriteStallInfo {
                cause,
                cleared: true,
                duration: since.elapsed(),
            });
        }
        r
    }

    /// `make_room_for_write`; `stalled` records a stall it began.
    fn make_room(
        &self,
        log: &mut LogState,
        mut force: bool,
        stalled: &mut Option<(WriteStallCause, Instant)>,
    ) -> Result<(Arc<MemTable>, usize)> {
        if force {
            // A forced switch (flush, compact_range, close) must see every
            // acknowledged-to-be write: a group that took its sequence
            // numbers but is still inserting would otherwise find the
            // memtable "empty" and be left out of the flush.
            self.pipeline.wait_published(log.last_assigned_seq);
        }
        loop {
            let mut st = self.state.lock();
            if let Some(e) = &st.bg_error {
                return Err(Error::ReadOnly {
                    cause: Box::new(e.clone()),
                });
            }
            if st.shutting_down && !force {
                return Err(Error::Closed);
            }
            let l0 = self.sv.read().version.num_files(0);
            if !force
                && !st.mem.is_full(
                    self.opts.write_buffer_size,
                    self.opts.write_buffer_index_size,
                )
            {
                return Ok((st.mem.clone(), l0));
            }
            if force && st.mem.is_empty() {
                return Ok((st.mem.clone(), l0));
            }
            if st.imms.len() + 1 >= self.opts.max_write_buffer_number
                || l0 >= self.opts.level0_stop_writes_trigger
            {
                if stalled.is_none() {
                    let cause = if l0 >= self.opts.level0_stop_writes_trigger {
                        WriteStallCause::Level0Stop
                    } else {
                        WriteStallCause::MemtableLimit
                    };
                    *stalled = Some((cause, Instant::now()));
                    drop(st);
                    self.events.stall(&WriteStallInfo {
                        cause,
                        cleared: false,
                        duration: Duration::ZERO,
                    });
                    continue;
                }
                // Wait for a flush or compaction to make room.
                let t = Instant::now();
                self.counters.stalls.fetch_add(1, Ordering::Relaxed);
                st.compaction_wanted = true;
                self.state_cv.notify_all();
                crate::util::blocking::blocking(|| {
                    self.state_cv.wait_for(&mut st, Duration::from_millis(100))
                });
                self.counters
                    .stall_micros
                    .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                continue;
            }
            drop(st);
            // The old memtable must be complete before it becomes
            // immutable (a flush may start on it at once).
            self.pipeline.wait_published(log.last_assigned_seq);
            // Switch to a new memtable and WAL. Under point-in-time recovery
            // the old WAL is only handed to the OS: a power loss that tears
            // it is caught at recovery by the next WAL's start marker, and
            // replay stops there (a consistent prefix), while any later sync
            // syncs it first (`closed_logs`). Syncing it here cost the whole
            // memtable's writeback on the write path. The stricter modes
            // sync it now, so that only the newest WAL can have a torn tail.
            let number = self.next_file.fetch_add(1, Ordering::SeqCst);
            let defer_sync = self.opts.wal_recovery_mode == WalRecoveryMode::PointInTimeRecovery;
            let fresh = (|| -> Result<LogWriter> {
                if let Some(old) = log.writer.as_mut() {
                    if defer_sync {
                        old.flush()?;
                    } else {
                        old.sync()?;
                    }
                }
                // The pool stays locked across the rename that reuses a
                // file: the collector snapshots the pool before listing the
                // directory, so a number popped and renamed under the lock
                // is either in its snapshot (and skipped) or gone from its
                // listing. The collector itself never holds the pool across
                // I/O, so this waits for no listing or unlink.
                let mut pool = self.recycle_pool.lock();
                let reuse = pool.pop();
                new_log(
                    &self.fs,
                    &self.path,
                    number,
                    reuse,
                    log.last_logged_seq,
                    self.opts.wal_mmap_writes,
                )
            })();
            let relog = self.prepared.lock().values().cloned().collect::<Vec<_>>();
            let writer = match fresh.and_then(|mut w| relog_prepared(&mut w, &relog).map(|()| w)) {
                Ok(w) => w,
                Err(e) => {
                    self.set_bg_error(e.clone());
                    return Err(e);
                }
            };
            let old_writer = log.writer.replace(writer);
            let mut st = self.state.lock();
            let old = std::mem::replace(
                &mut st.mem,
                Arc::new(MemTable::with_indexes(
                    self.opts.memtable_filter_bytes(),
                    self.opts.memtable_hash_slots(),
                )),
            );
            let old_log = std::mem::replace(&mut st.mem_log_number, number);
            st.imms.push_back(Imm {
                mem: old,
                log_number: old_log,
            });
            let version = self.sv.read().version.clone();
            self.install_sv(&st, version);
            self.state_cv.notify_all();
            drop(st);
            // After `state` (lock order). Should the memtable's flush finish
            // first, the collector drops the entry on its next pass.
            if let Some(w) = old_writer.filter(|_| defer_sync) {
                self.closed_logs.lock().push((old_log, w));
            }
            force = false;
        }
    }

    /// Syncs and closes the WALs switched out without a sync. REQUIRES:
    /// `log` held (or the database closing), so no WAL is switched out
    /// meanwhile.
    pub(super) fn sync_closed_logs(&self) -> Result<()> {
        let mut closed = self.closed_logs.lock();
        while let Some((_, w)) = closed.first_mut() {
            w.sync()?;
            closed.remove(0);
        }
        Ok(())
    }
}
