//! Flushes: immutable memtables to level-0 tables, oldest first, on the
//! flush thread; `flush()` forces a switch and waits.
//!
//! Locking: a table is built with no lock held; `versions` is held across
//! the MANIFEST append, and `state` is taken under it to pop the memtable
//! and install the new super-version.

use super::events::FlushJobInfo;
use super::*;

/// Writes a memtable to table `number` for `level` and syncs it; `None`
/// (and no file) when the memtable is empty. The caller syncs the directory.
pub(super) fn build_table(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    opts: &Options,
    number: u64,
    level: usize,
    mem: &Arc<MemTable>,
    zip_budget: &Arc<ZipMemBudget>,
) -> Result<Option<FileMeta>> {
    if mem.is_empty() {
        return Ok(None);
    }
    let mut b = OutputBuilder::create(fs, dir, opts, number, level, zip_budget)?;
    let mut it = mem.iter();
    it.seek_to_first();
    while it.valid() {
        b.add(it.key(), it.value())?;
        it.next();
    }
    it.status()?;
    Ok(Some(file_meta(number, b.finish()?)))
}

pub(super) fn file_meta(number: u64, info: crate::sst::TableFileInfo) -> FileMeta {
    FileMeta {
        number,
        size: info.file_size,
        smallest: info.smallest,
        largest: info.largest,
        smallest_seq: info.props.smallest_seq,
        largest_seq: info.props.largest_seq,
    }
}

impl DbInner {
    pub(super) fn flush(&self) -> Result<()> {
        let switched = {
            let mut log = self.log.lock();
            self.make_room_for_write(&mut log, true)
        };
        if let Err(e) = switched {
            // Not waited for under `log`: a listener may be writing.
            return Err(self.reported_bg_error(&mut self.state.lock()).unwrap_or(e));
        }
        // Wait until every immutable memtable that existed is flushed.
        let mut st = self.state.lock();
        loop {
            if let Some(e) = self.reported_bg_error(&mut st) {
                return Err(e);
            }
            if st.imms.is_empty() {
                return Ok(());
            }
            self.state_cv.notify_all();
            self.state_cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }

    pub(super) fn flush_loop(self: &Arc<Self>) {
        loop {
            let imm = {
                let mut st = self.state.lock();
                loop {
                    if st.bg_error.is_some() || (st.shutting_down && st.imms.is_empty()) {
                        return;
                    }
                    if let Some(i) = st.imms.front() {
                        break i.mem.clone();
                    }
                    if st.shutting_down {
                        return;
                    }
                    self.state_cv.wait(&mut st);
                }
            };
            if let Err(e) = self.flush_one(&imm) {
                self.set_bg_error(e);
                return;
            }
        }
    }

    /// Writes the oldest immutable memtable (`imm`) to level 0 and drops it.
    pub(super) fn flush_one(&self, imm: &Arc<MemTable>) -> Result<()> {
        let started = Instant::now();
        let meta = {
            // Reserve the number before the file exists (see delete_obsolete_files).
            let n = self.next_file.fetch_add(1, Ordering::SeqCst);
            self.pending_outputs.lock().insert(n);
            let r = self.build_table(n, 0, imm);
            if r.is_err() {
                self.pending_outputs.lock().remove(&n);
            }
            r?
        };
        let mut versions = self.versions.lock();
        let mut edit = VersionEdit::default();
        if let Some(m) = &meta {
            edit.add_file(0, m.clone());
        }
        {
            let st = self.state.lock();
            // WALs before the one of the oldest memtable still unflushed are done.
            let next_log = st
                .imms
                .get(1)
                .map(|i| i.log_number)
                .unwrap_or(st.mem_log_number);
            edit.log_number = Some(next_log);
        }
        // What the tables now hold: the flushed memtable's newest sequence.
        // Not the global last sequence, which can cover writes still in the
        // next WAL; recovery compares WAL start markers against this value
        // to detect records lost at the end of a WAL.
        edit.last_sequence = meta.as_ref().map(|m| m.largest_seq);
        let r = versions.log_and_apply(edit);
        if let Err(e) = &r {
            // Before the outputs leave the pending set: with the error
            // recorded, the collector deletes nothing (the edit may be on disk).
            self.set_bg_error(e.clone());
        }
        if let Some(m) = &meta {
            self.pending_outputs.lock().remove(&m.number);
        }
        let version = r?;
        {
            let mut st = self.state.lock();
            st.imms.pop_front();
            self.install_sv(&st, version);
            st.compaction_wanted = true;
            self.state_cv.notify_all();
        }
        drop(versions);
        if let Some(m) = &meta {
            self.counters
                .flush_bytes_written
                .fetch_add(m.size, Ordering::Relaxed);
        }
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.events.flush_completed(&FlushJobInfo {
            table_number: meta.as_ref().map(|m| m.number),
            table_bytes: meta.as_ref().map_or(0, |m| m.size),
            entries: imm.len() as u64,
            seq_range: meta
                .as_ref()
                .map_or((0, 0), |m| (m.smallest_seq, m.largest_seq)),
            duration: started.elapsed(),
        });
        self.delete_obsolete_files();
        Ok(())
    }

    /// Builds table `number` from a memtable, syncs it and its directory entry.
    pub(super) fn build_table(
        &self,
        number: u64,
        level: usize,
        mem: &Arc<MemTable>,
    ) -> Result<Option<FileMeta>> {
        let meta = build_table(
            &self.fs,
            &self.path,
            &self.opts,
            number,
            level,
            mem,
            &self.zip_budget,
        )?;
        self.fs.sync_dir(&self.path)?;
        Ok(meta)
    }
}
