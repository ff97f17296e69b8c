//! Flushes: immutable memtables to level-0 tables, oldest first, on the
//! flush thread; `flush()` forces a switch and waits.
//!
//! With `enable_blob_files`, values of at least `min_blob_size` bytes go to
//! blob files written beside the table (`docs/format/blob.md`), and the
//! table holds references to them; the blob files are synced before the
//! table, and both are added by one MANIFEST edit. Their numbers are pending
//! outputs from before each file exists until the edit is installed.
//!
//! Locking: a table is built with no lock held; `versions` is held across
//! the MANIFEST append, and `state` is taken under it to pop the memtable
//! and install the new super-version.

use super::events::{BlobFileCreationInfo, BlobFileCreationReason, FlushJobInfo};
use super::*;
use crate::blob::BlobFileSet;

/// What a memtable was written to: its table (`None` for an empty
/// memtable) and the blob files that hold its separated values.
#[derive(Default)]
pub(super) struct Built {
    pub(super) table: Option<FileMeta>,
    pub(super) blobs: Vec<BlobFileMeta>,
}

impl Built {
    /// Adds the table (at `level`) and the blob files to `edit`.
    pub(super) fn add_to(&self, edit: &mut VersionEdit, level: usize) {
        if let Some(m) = &self.table {
            edit.add_file(level, m.clone());
        }
        for b in &self.blobs {
            edit.new_blob_files.push(Arc::new(b.clone()));
        }
    }
}

/// Writes a memtable to table `number` for `level` and syncs it, with its
/// large values in blob files (numbered by `alloc_blob`, and put into
/// `prepopulate` as they are written when given) when `enable_blob_files`
/// is on; nothing (and no file) when the memtable is empty. The caller
/// syncs the directory.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_table(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    opts: &Options,
    number: u64,
    level: usize,
    mem: &Arc<MemTable>,
    zip_budget: &Arc<ZipMemBudget>,
    prepopulate: Option<&BlockCache>,
    alloc_blob: impl FnMut() -> u64,
) -> Result<Built> {
    if mem.is_empty() {
        return Ok(Built::default());
    }
    let mut b = OutputBuilder::create(fs, dir, opts, number, level, zip_budget)?;
    let mut blobs =
        BlobFileSet::new(fs.as_ref(), dir, opts, Box::new(alloc_blob)).prepopulate(prepopulate);
    let mut ikey = Vec::new();
    let mut reference = Vec::new();
    let mut it = mem.iter();
    it.seek_to_first();
    while it.valid() {
        let (k, v) = (it.key(), it.value());
        let t = crate::key::trailer(k);
        if opts.enable_blob_files
            && v.len() as u64 >= opts.min_blob_size
            && (t & 0xff) as u8 == ValueType::Value as u8
        {
            let idx = blobs.add(user_key(k), v)?;
            ikey.clear();
            crate::key::append_internal_key(&mut ikey, user_key(k), t >> 8, ValueType::BlobIndex);
            reference.clear();
            idx.encode(&mut reference);
            b.add(&ikey, &reference)?;
        } else {
            b.add(k, v)?;
        }
        it.next();
    }
    it.status()?;
    // The blob files are synced before the table that refers to them.
    let blob_metas = blobs.finish()?;
    let mut table = file_meta(number, b.finish()?);
    table.oldest_blob_file = blobs.numbers().first().copied().unwrap_or(0);
    Ok(Built {
        table: Some(table),
        blobs: blob_metas,
    })
}

pub(super) fn file_meta(number: u64, info: crate::sst::TableFileInfo) -> FileMeta {
    FileMeta {
        number,
        size: info.file_size,
        smallest: info.smallest,
        largest: info.largest,
        smallest_seq: info.props.smallest_seq,
        largest_seq: info.props.largest_seq,
        oldest_blob_file: 0,
        reader: Default::default(),
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
            if st.imms.is_empty() && !self.flush_being_reported(&st) {
                drop(st);
                // What the flushes made obsolete is gone when `flush`
                // returns, as if the flush thread had deleted it.
                self.delete_obsolete_files();
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
        // Every number this flush reserved: the table's and its blob files'.
        let mut reserved = Vec::new();
        let built = {
            // Reserve the number before the file exists (see delete_obsolete_files).
            let n = self.next_file.fetch_add(1, Ordering::SeqCst);
            self.pending_outputs.lock().insert(n);
            reserved.push(n);
            let r = self.build_table(n, 0, imm, &mut reserved);
            if r.is_err() {
                let mut p = self.pending_outputs.lock();
                for n in &reserved {
                    p.remove(n);
                }
            }
            r?
        };
        let meta = built.table.clone();
        let mut versions = self.versions.lock();
        let mut edit = VersionEdit::default();
        built.add_to(&mut edit, 0);
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
        {
            let mut p = self.pending_outputs.lock();
            for n in &reserved {
                p.remove(n);
            }
        }
        let version = r?;
        {
            let mut st = self.state.lock();
            st.imms.pop_front();
            self.install_sv(&st, version);
            st.compaction_wanted = true;
            st.flush_reporting = Some(std::thread::current().id());
            self.state_cv.notify_all();
        }
        drop(versions);
        if let Some(m) = &meta {
            self.counters
                .flush_bytes_written
                .fetch_add(m.size, Ordering::Relaxed);
        }
        let blob_bytes: u64 = built.blobs.iter().map(|b| b.bytes).sum();
        if blob_bytes > 0 {
            self.counters
                .blob_bytes_written
                .fetch_add(blob_bytes, Ordering::Relaxed);
        }
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        for b in &built.blobs {
            self.events.blob_file_created(&BlobFileCreationInfo::new(
                &self.path,
                b,
                BlobFileCreationReason::Flush,
            ));
        }
        self.events.flush_completed(&FlushJobInfo {
            table_number: meta.as_ref().map(|m| m.number),
            table_bytes: meta.as_ref().map_or(0, |m| m.size),
            entries: imm.len() as u64,
            seq_range: meta
                .as_ref()
                .map_or((0, 0), |m| (m.smallest_seq, m.largest_seq)),
            duration: started.elapsed(),
        });
        {
            let mut st = self.state.lock();
            st.flush_reporting = None;
            // The flushed memtable's WAL (and whatever else is obsolete) is
            // deleted by the purge thread: unlinking a 64 MiB log took this
            // thread 11-54 ms a flush, and the next flush waited for it
            // while writers stalled (W3: 4 KiB values).
            st.purge_wanted = true;
            self.state_cv.notify_all();
        }
        Ok(())
    }

    /// Whether another thread is still telling the listeners about a flush
    /// (see `State::flush_reporting`). A listener's own thread never waits
    /// for itself.
    pub(super) fn flush_being_reported(&self, st: &State) -> bool {
        st.flush_reporting
            .is_some_and(|t| t != std::thread::current().id())
    }

    /// Builds table `number` from a memtable, with its blob files, syncs
    /// them and their directory entries. Each blob file number is reserved
    /// as a pending output and pushed onto `reserved` before its file exists.
    pub(super) fn build_table(
        &self,
        number: u64,
        level: usize,
        mem: &Arc<MemTable>,
        reserved: &mut Vec<u64>,
    ) -> Result<Built> {
        let built = build_table(
            &self.fs,
            &self.path,
            &self.opts,
            number,
            level,
            mem,
            &self.zip_budget,
            match self.opts.prepopulate_blob_cache {
                PrepopulateBlobCache::FlushOnly => self.blob_cache.value_cache().map(|c| &**c),
                PrepopulateBlobCache::Disable => None,
            },
            || {
                let n = self.next_file.fetch_add(1, Ordering::SeqCst);
                self.pending_outputs.lock().insert(n);
                reserved.push(n);
                n
            },
        )?;
        self.fs.sync_dir(&self.path)?;
        Ok(built)
    }
}
