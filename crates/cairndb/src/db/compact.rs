//! Running compactions: the background compaction loop, `compact_range`,
//! merging inputs into output tables and installing the result. Picking
//! what to compact lives in `crate::compaction`.
//!
//! Locking: `compaction_lock` serializes compactions; inputs are merged
//! with no lock held; `versions` is held across the MANIFEST append, with
//! `state` and then `obsolete_tables` taken under it to install the result.

use super::events::CompactionJobInfo;
use super::flush::file_meta;
use super::*;

impl DbInner {
    pub(super) fn compaction_loop(self: &Arc<Self>) {
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
                    compaction::pick(&vs.current(), &self.opts, &vs.compact_pointers)
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
            let _c = self.compaction_lock.lock();
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
            match self.merge_inputs(c, out_level)? {
                Some(o) => outputs = o,
                None => return Ok(false),
            }
            for o in &outputs {
                edit.add_file(out_level, o.clone());
            }
        }
        let out_numbers: Vec<u64> = outputs.iter().map(|o| o.number).collect();
        let r = {
            let mut versions = self.versions.lock();
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
            }
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
        if !outputs.is_empty() || !c.is_trivial_move() {
            cs.compaction_bytes_read
                .fetch_add(c.input_bytes(), Ordering::Relaxed);
            cs.compaction_bytes_written
                .fetch_add(outputs.iter().map(|o| o.size).sum(), Ordering::Relaxed);
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

    /// Merges a compaction's inputs into new tables at `out_level`.
    /// None when abandoned for shutdown.
    pub(super) fn merge_inputs(
        &self,
        c: &Compaction,
        out_level: usize,
    ) -> Result<Option<Vec<FileMeta>>> {
        let version = self.sv.read().version.clone();
        let snapshots = self.snapshots.all();
        let mut filter = DropFilter::new(&snapshots, &version, out_level);
        let mut it = compaction::input_iterator(c, &self.table_cache)?;
        it.seek_to_first();
        let mut outputs: Vec<FileMeta> = Vec::new();
        let mut builder: Option<(u64, OutputBuilder)> = None;
        let mut last_user_key: Vec<u8> = Vec::new();
        let mut n = 0u64;
        let result = (|| -> Result<bool> {
            while it.valid() {
                n += 1;
                if n.is_multiple_of(4096) && self.state.lock().shutting_down {
                    return Ok(false);
                }
                let key = it.key();
                if !filter.keep(key)? {
                    it.next();
                    continue;
                }
                let uk = user_key(key);
                let at_boundary = uk != last_user_key.as_slice();
                if at_boundary {
                    if let Some((_, b)) = &builder {
                        if b.estimated_file_size() >= self.opts.target_file_size_base {
                            let (num, b) = builder.take().expect("checked");
                            outputs.push(self.finish_output(num, b)?);
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
                if let Some((_, b)) = builder.as_mut() {
                    b.add(key, it.value())?;
                }
                it.next();
            }
            it.status()?;
            if let Some((num, b)) = builder.take() {
                outputs.push(self.finish_output(num, b)?);
            }
            self.fs.sync_dir(&self.path)?;
            Ok(true)
        })();
        match result {
            Ok(true) => Ok(Some(outputs)),
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
                    });
                }
                let mut p = self.pending_outputs.lock();
                for o in &outputs {
                    p.remove(&o.number);
                }
                other.map(|_| None)
            }
        }
    }

    pub(super) fn finish_output(&self, number: u64, b: OutputBuilder) -> Result<FileMeta> {
        Ok(file_meta(number, b.finish()?))
    }

    pub(super) fn wait_idle(&self) -> Result<()> {
        loop {
            {
                let mut st = self.state.lock();
                if let Some(e) = self.reported_bg_error(&mut st) {
                    return Err(e);
                }
                if st.imms.is_empty() {
                    let v = self.sv.read().version.clone();
                    let needs = compaction::level_scores(&v, &self.opts)
                        .iter()
                        .any(|&s| s >= 1.0);
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
