//! Running compactions: the background compaction loop, `compact_range`,
//! merging inputs into output tables and installing the result. Picking
//! what to compact lives in `crate::compaction`.
//!
//! Blob references (`docs/format/blob.md`) pass through a compaction
//! unchanged, except: a reference the compaction drops (its key overwritten
//! or deleted) is counted as garbage against its blob file in the
//! compaction's MANIFEST edit; and with `enable_blob_garbage_collection`, a
//! kept reference into one of the oldest `blob_garbage_collection_age_cutoff`
//! of the blob files has its value rewritten into a new blob file (the old
//! record becomes garbage). A blob file all of whose records are garbage
//! leaves the version; the collector deletes it once no reader's version
//! lists it. Garbage counts are exact because each blob record has exactly
//! one reference in the tree: flushes write one per record, compactions
//! move, drop or replace it, and trivial moves keep it.
//!
//! Locking: `compaction_lock` serializes compactions (`compact_range`
//! holds it across all its passes); inputs are merged
//! with no lock held; `versions` is held across the MANIFEST append, with
//! `state`, then `obsolete_tables`, then `obsolete_blobs` taken under it
//! (one at a time) to install the result.

use super::events::{BlobFileCreationInfo, BlobFileCreationReason, CompactionJobInfo};
use super::flush::file_meta;
use super::*;
use crate::blob::{record_size, BlobFileSet, BlobIndex, Readahead};
use crate::version::BlobGarbage;

/// What merging a compaction's inputs wrote.
#[derive(Default)]
pub(super) struct Merged {
    tables: Vec<FileMeta>,
    /// Blob files written by garbage collection.
    blobs: Vec<BlobFileMeta>,
    /// Every blob file number reserved (a pending output until installed).
    blob_numbers: Vec<u64>,
    /// Garbage per blob file: (records, bytes).
    garbage: BTreeMap<u64, (u64, u64)>,
    /// Record bytes relocated by garbage collection.
    relocated: u64,
}

impl Merged {
    fn count_garbage(&mut self, user_key: &[u8], idx: &BlobIndex) {
        let g = self.garbage.entry(idx.file_number).or_default();
        g.0 += 1;
        g.1 += record_size(user_key.len(), idx.size);
    }
}

impl DbInner {
    pub(super) fn compaction_loop(self: &Arc<Self>) {
        if self.opts.idle_compaction_io {
            // A hint: where the call fails (not Linux, or not allowed) the
            // compaction runs at the thread's normal priority.
            let _ = crate::util::ioprio::set_idle_io_priority();
        }
        loop {
            {
                let mut st = self.state.lock();
                while !st.compaction_wanted && !st.shutting_down && st.bg_error.is_none() {
                    self.state_cv.wait(&mut st);
                }
                if st.shutting_down || st.bg_error.is_some() {
                    return;
                }
                st.compaction_wanted = false;
            }
            loop {
                let _c = self.compaction_lock.lock();
                let picked = {
                    let vs = self.versions.lock();
                    let v = vs.current();
                    compaction::pick(&v, &self.opts, &vs.compact_pointers)
                        .or_else(|| self.pick_blob_gc(&v))
                };
                let Some(c) = picked else { break };
                match self.run_compaction(&c) {
                    Ok(true) => {
                        // The compaction's own references pin its inputs:
                        // collect garbage once they are gone.
                        drop(c);
                        self.delete_obsolete_files();
                    }
                    Ok(false) => return, // shutting down
                    Err(e) => {
                        self.set_bg_error(e);
                        return;
                    }
                }
            }
        }
    }

    pub(super) fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush()?;
        // Held across every pass, from before `deepest` is read: in a gap
        // the background compactor could push files below the passes still
        // to come (a trivial move keeps their sequence numbers and
        // tombstones) or deepen the tree past `deepest`, and those files
        // would never be rewritten.
        let _c = self.compaction_lock.lock();
        // One pass per level, top down, as LevelDB's CompactRange does, down
        // to the deepest level that holds files (data is not pushed further
        // down than it already is: each pass rewrites it once more).
        let deepest = {
            let v = self.versions.lock().current();
            (0..NUM_LEVELS)
                .rev()
                .find(|&l| v.num_files(l) > 0)
                .unwrap_or(0)
        };
        for level in 0..deepest.max(1) {
            self.hook(hooks::COMPACT_RANGE_PASS);
            if let Some(e) = self.reported_bg_error(&mut self.state.lock()) {
                return Err(e);
            }
            // The version is dropped before the compaction runs: holding it
            // would pin the inputs, and the garbage collection at the end of
            // the compaction could not delete them.
            let picked = {
                let v = self.versions.lock().current();
                compaction::pick_range(&v, level, begin, end)
            };
            let Some(mut c) = picked else {
                continue;
            };
            // Rewrite even a lone file, so its tombstones and shadowed versions go.
            c.force_rewrite = true;
            match self.run_compaction(&c) {
                Ok(true) => {
                    drop(c);
                    self.delete_obsolete_files();
                }
                Ok(false) => return Err(Error::Closed),
                Err(e) => {
                    self.set_bg_error(e.clone());
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Runs one compaction and installs its result. Ok(false) when it was
    /// abandoned because the database is shutting down.
    pub(super) fn run_compaction(&self, c: &Compaction) -> Result<bool> {
        let started = Instant::now();
        let out_level = c.output_level();
        let mut edit = VersionEdit::default();
        for f in &c.inputs {
            edit.delete_file(c.level, f.number);
        }
        for f in &c.next_inputs {
            edit.delete_file(out_level, f.number);
        }
        if let Some(last) = c
            .inputs
            .iter()
            .map(|f| &f.largest)
            .max_by(|a, b| crate::key::compare_internal(a, b))
        {
            edit.compact_pointers.push((c.level, last.clone()));
        }
        let mut outputs: Vec<FileMeta> = Vec::new();
        let mut blob_numbers: Vec<u64> = Vec::new();
        let mut relocated = 0u64;
        // A lone file with nothing under it moves down unchanged, unless a
        // manual compaction asked for a rewrite or the output level is
        // written in another table format (block-based to zip, say).
        let same_format = self.opts.table_format_for_level(c.level)
            == self.opts.table_format_for_level(out_level);
        if c.is_trivial_move() && !c.force_rewrite && same_format {
            for f in &c.inputs {
                edit.add_file(out_level, (**f).clone());
            }
            self.counters.trivial_moves.fetch_add(1, Ordering::Relaxed);
        } else {
            let merged = match self.merge_inputs(c, out_level)? {
                Some(m) => m,
                None => return Ok(false),
            };
            outputs = merged.tables;
            for o in &outputs {
                edit.add_file(out_level, o.clone());
            }
            for b in merged.blobs {
                edit.new_blob_files.push(Arc::new(b));
            }
            for (number, (count, bytes)) in merged.garbage {
                edit.blob_garbage.push(BlobGarbage {
                    number,
                    count,
                    bytes,
                });
            }
            blob_numbers = merged.blob_numbers;
            relocated = merged.relocated;
        }
        let blob_bytes_written: u64 = edit.new_blob_files.iter().map(|b| b.bytes).sum();
        let new_blobs = edit.new_blob_files.clone();
        let out_numbers: Vec<u64> = outputs
            .iter()
            .map(|o| o.number)
            .chain(blob_numbers)
            .collect();
        let r = {
            let mut versions = self.versions.lock();
            let before = versions.current();
            let r = versions.log_and_apply(edit);
            if let Err(e) = &r {
                // Before the outputs leave the pending set (see flush_one).
                self.set_bg_error(e.clone());
            }
            if let Ok(v) = &r {
                {
                    let mut st = self.state.lock();
                    self.install_sv(&st, v.clone());
                    st.compaction_wanted = true;
                    self.state_cv.notify_all();
                }
                // Inside the same critical section as the install: once
                // `versions` is released the collector may run, and it
                // must find the inputs here (kept while an older
                // super-version still refers to them), not only missing
                // from the current version.
                self.obsolete_tables
                    .lock()
                    .extend(c.inputs.iter().chain(&c.next_inputs).cloned());
                // Blob files whose last record became garbage, likewise.
                self.obsolete_blobs.lock().extend(
                    before
                        .blob_files
                        .iter()
                        .filter(|(n, _)| !v.blob_files.contains_key(n))
                        .map(|(_, b)| b.meta.clone()),
                );
            }
            drop(before);
            r
        };
        self.hook(hooks::COMPACTION_INSTALLED);
        {
            let mut p = self.pending_outputs.lock();
            for n in &out_numbers {
                p.remove(n);
            }
        }
        r?;
        let cs = &self.counters;
        cs.compactions.fetch_add(1, Ordering::Relaxed);
        cs.blob_bytes_written
            .fetch_add(blob_bytes_written, Ordering::Relaxed);
        cs.blob_bytes_relocated
            .fetch_add(relocated, Ordering::Relaxed);
        if !outputs.is_empty() || !c.is_trivial_move() {
            cs.compaction_bytes_read
                .fetch_add(c.input_bytes(), Ordering::Relaxed);
            cs.compaction_bytes_written
                .fetch_add(outputs.iter().map(|o| o.size).sum(), Ordering::Relaxed);
        }
        for b in &new_blobs {
            self.events.blob_file_created(&BlobFileCreationInfo::new(
                &self.path,
                b,
                BlobFileCreationReason::Compaction,
            ));
        }
        self.events.compaction_completed(&CompactionJobInfo {
            level: c.level,
            output_level: out_level,
            inputs: c
                .inputs
                .iter()
                .chain(&c.next_inputs)
                .map(|f| f.number)
                .collect(),
            outputs: outputs.iter().map(|o| o.number).collect(),
            input_bytes: c.input_bytes(),
            output_bytes: outputs.iter().map(|o| o.size).sum(),
            trivial_move: outputs.is_empty() && c.is_trivial_move(),
            manual: c.force_rewrite,
            duration: started.elapsed(),
        });
        Ok(true)
    }

    /// `blob_garbage_collection_force_threshold`: when the blob files in the
    /// age cutoff are at least that fraction garbage, a compaction of a
    /// table whose oldest blob file is the oldest live one (so its values
    /// are relocated and that file drains), as RocksDB does.
    fn pick_blob_gc(&self, v: &Version) -> Option<Compaction> {
        let o = &self.opts;
        if !o.enable_blob_garbage_collection || o.blob_garbage_collection_force_threshold >= 1.0 {
            return None;
        }
        let k = (v.blob_files.len() as f64 * o.blob_garbage_collection_age_cutoff) as usize;
        let (total, garbage) = v
            .blob_files
            .values()
            .take(k)
            .fold((0u64, 0u64), |(t, g), b| {
                (t + b.meta.bytes, g + b.garbage_bytes)
            });
        if garbage == 0
            || (garbage as f64) < o.blob_garbage_collection_force_threshold * total as f64
        {
            return None;
        }
        let oldest = *v.blob_files.keys().next()?;
        let (level, f) = (0..NUM_LEVELS)
            .flat_map(|l| v.files[l].iter().map(move |f| (l, f)))
            .find(|(_, f)| f.oldest_blob_file == oldest)?;
        let mut c = compaction::pick_range(
            v,
            level,
            Some(f.smallest_user_key()),
            Some(f.largest_user_key()),
        )?;
        c.force_rewrite = true;
        Some(c)
    }

    /// The blob file number below which garbage collection relocates values:
    /// the oldest `blob_garbage_collection_age_cutoff` of the live blob
    /// files (0: none).
    fn blob_gc_cutoff(&self, version: &Version) -> u64 {
        if !self.opts.enable_blob_garbage_collection {
            return 0;
        }
        let n = version.blob_files.len();
        let k = (n as f64 * self.opts.blob_garbage_collection_age_cutoff) as usize;
        version
            .blob_files
            .keys()
            .nth(k)
            .copied()
            .unwrap_or(if k == 0 { 0 } else { u64::MAX })
    }

    /// Merges a compaction's inputs into new tables at `out_level` (and, for
    /// garbage collection, new blob files). None when abandoned for shutdown.
    pub(super) fn merge_inputs(&self, c: &Compaction, out_level: usize) -> Result<Option<Merged>> {
        let version = self.sv.read().version.clone();
        let snapshots = self.snapshots.all();
        let gc_cutoff = self.blob_gc_cutoff(&version);
        let mut filter = DropFilter::new(&snapshots, &version, out_level);
        if let Some((lo, hi)) = c.user_key_range() {
            filter = filter.zero_sequences_in(lo, hi);
        }
        // The key of an entry written with sequence number 0.
        let mut zeroed_key: Vec<u8> = Vec::new();
        let mut it = compaction::input_iterator(c, &self.table_cache)?;
        it.seek_to_first();
        let mut outputs: Vec<FileMeta> = Vec::new();
        let mut merged = Merged::default();
        let mut blobs = BlobFileSet::new(
            self.fs.as_ref(),
            &self.path,
            &self.opts,
            Box::new(|| {
                let n = self.next_file.fetch_add(1, Ordering::SeqCst);
                self.pending_outputs.lock().insert(n);
                n
            }),
        );
        let mut readahead = Readahead::new(self.opts.blob_compaction_readahead_size);
        let mut builder: Option<(u64, OutputBuilder)> = None;
        let mut last_user_key: Vec<u8> = Vec::new();
        let mut reference: Vec<u8> = Vec::new();
        // The oldest blob file the current output refers to (0: none).
        let mut oldest_blob = 0u64;
        let mut n = 0u64;
        let result = (|| -> Result<bool> {
            while it.valid() {
                n += 1;
                if n.is_multiple_of(4096) && self.state.lock().shutting_down {
                    return Ok(false);
                }
                let key = it.key();
                let is_blob = (crate::key::trailer(key) & 0xff) as u8 == ValueType::BlobIndex as u8;
                if !filter.keep(key)? {
                    if is_blob {
                        let idx = decode_reference(c, it.value())?;
                        merged.count_garbage(user_key(key), &idx);
                    }
                    it.next();
                    continue;
                }
                let uk = user_key(key);
                let at_boundary = uk != last_user_key.as_slice();
                if at_boundary {
                    if let Some((_, b)) = &builder {
                        if b.estimated_file_size() >= self.opts.target_file_size_base {
                            let (num, b) = builder.take().expect("checked");
                            let mut meta = self.finish_output(num, b)?;
                            meta.oldest_blob_file = std::mem::take(&mut oldest_blob);
                            outputs.push(meta);
                        }
                    }
                    last_user_key.clear();
                    last_user_key.extend_from_slice(uk);
                }
                if builder.is_none() {
                    let num = self.next_file.fetch_add(1, Ordering::SeqCst);
                    self.pending_outputs.lock().insert(num);
                    let b = OutputBuilder::create(
                        &self.fs,
                        &self.path,
                        &self.opts,
                        num,
                        out_level,
                        &self.zip_budget,
                    )?;
                    builder = Some((num, b));
                }
                let mut value = it.value();
                if is_blob {
                    let idx = decode_reference(c, value)?;
                    let mut target = idx.file_number;
                    if idx.file_number < gc_cutoff {
                        // Relocate: the value moves to a new blob file and
                        // its old record becomes garbage.
                        let v = self
                            .blob_cache
                            .get(idx.file_number)?
                            .read_ahead(&idx, &mut readahead)?;
                        let new = blobs.add(uk, &v)?;
                        merged.count_garbage(uk, &idx);
                        merged.relocated += record_size(uk.len(), new.size);
                        reference.clear();
                        new.encode(&mut reference);
                        value = &reference;
                        target = new.file_number;
                    }
                    if oldest_blob == 0 || target < oldest_blob {
                        oldest_blob = target;
                    }
                }
                let key = if filter.zero_sequence() {
                    // Sequence 0 keeps only the type byte of the trailer.
                    zeroed_key.clear();
                    zeroed_key.extend_from_slice(uk);
                    zeroed_key.extend_from_slice(&(crate::key::trailer(key) & 0xff).to_le_bytes());
                    &zeroed_key[..]
                } else {
                    key
                };
                if let Some((_, b)) = builder.as_mut() {
                    b.add(key, value)?;
                }
                it.next();
            }
            it.status()?;
            if let Some((num, b)) = builder.take() {
                let mut meta = self.finish_output(num, b)?;
                meta.oldest_blob_file = std::mem::take(&mut oldest_blob);
                outputs.push(meta);
            }
            // Synced before the MANIFEST edit that adds them.
            merged.blobs = blobs.finish()?;
            self.fs.sync_dir(&self.path)?;
            Ok(true)
        })();
        merged.blob_numbers = blobs.numbers().to_vec();
        drop(blobs);
        match result {
            Ok(true) => {
                merged.tables = outputs;
                Ok(Some(merged))
            }
            other => {
                // Abandoned or failed: the outputs are garbage.
                if let Some((num, b)) = builder.take() {
                    b.abandon();
                    outputs.push(FileMeta {
                        number: num,
                        size: 0,
                        smallest: Vec::new(),
                        largest: Vec::new(),
                        smallest_seq: 0,
                        largest_seq: 0,
                        oldest_blob_file: 0,
                        reader: Default::default(),
                    });
                }
                let mut p = self.pending_outputs.lock();
                for n in outputs.iter().map(|o| o.number).chain(merged.blob_numbers) {
                    p.remove(&n);
                }
                other.map(|_| None)
            }
        }
    }

    pub(super) fn finish_output(&self, number: u64, b: OutputBuilder) -> Result<FileMeta> {
        // (Blob files are finished after the last table; see merge_inputs.)
        Ok(file_meta(number, b.finish()?))
    }
}

/// Decodes a blob reference read from a compaction input; errors name the
/// compaction's input files.
fn decode_reference(c: &Compaction, value: &[u8]) -> Result<BlobIndex> {
    BlobIndex::decode(value).map_err(|what| {
        let inputs: Vec<String> = c
            .inputs
            .iter()
            .chain(&c.next_inputs)
            .map(|f| format!("{:06}.sst", f.number))
            .collect();
        Error::corruption(
            format!("<compaction input: {}>", inputs.join(", ")),
            0,
            what,
        )
    })
}

impl DbInner {
    pub(super) fn wait_idle(&self) -> Result<()> {
        loop {
            {
                let mut st = self.state.lock();
                if let Some(e) = self.reported_bg_error(&mut st) {
                    return Err(e);
                }
                if st.imms.is_empty() && !self.flush_being_reported(&st) {
                    let v = self.sv.read().version.clone();
                    let needs = compaction::level_scores(&v, &self.opts)
                        .iter()
                        .any(|&s| s >= 1.0)
                        || self.pick_blob_gc(&v).is_some();
                    if !needs && !self.compaction_lock.is_locked() {
                        return Ok(());
                    }
                }
            }
            {
                let mut st = self.state.lock();
                st.compaction_wanted = true;
                self.state_cv.notify_all();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
