//! Deleting obsolete files: old WALs and MANIFESTs, tables no version or
//! reader needs, temporaries of failed builds. WALs may be kept for reuse.

use super::*;

impl DbInner {
    /// Deletes files no version or writer needs: old WALs and MANIFESTs,
    /// tables left by compactions or by a crash, temporaries.
    ///
    /// Clean-up only: a failure costs disk space, never correctness, so it
    /// is counted (`DbStats::obsolete_delete_failures`) and not returned.
    /// After a background error nothing is deleted until the database is
    /// reopened: a failed MANIFEST append or sync leaves it unknown whether
    /// the edit is on disk, so files it added or removed must all stay.
    pub(super) fn delete_obsolete_files(&self) {
        let _g = self.gc_lock.lock();
        if self.state.lock().bg_error.is_some() {
            return;
        }
        // The recycle pool is only looked at, never held across I/O: a
        // memtable switch takes it under `log`, with every writer queued
        // behind it. A WAL in the pool now and gone from it later was
        // reused (renamed) by a switch in between, so the listing's entry
        // for it is stale. Only this collector (serialized by `gc_lock`)
        // adds to the pool, so a WAL not in the pool now can only be
        // obsolete: no writer can take it.
        let pooled_before: Vec<u64> = self.recycle_pool.lock().clone();
        let names = match self.fs.list_dir(&self.path) {
            Ok(n) => n,
            Err(_) => {
                self.counters
                    .obsolete_delete_failures
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        self.hook(hooks::GC_LISTED);
        // Order matters: pending outputs before the version (see flush_one).
        let pending = self.pending_outputs.lock().clone();
        let (live, log_number, manifest_number) = {
            let vs = self.versions.lock();
            let live: HashSet<u64> = vs
                .current()
                .files
                .iter()
                .flatten()
                .map(|f| f.number)
                .collect();
            (live, vs.log_number, vs.manifest_number())
        };
        // Flushed memtables' WALs need no sync; close them before their
        // files are reused or deleted.
        self.closed_logs
            .lock()
            .retain(|(num, _)| *num >= log_number);
        let held: HashSet<u64> = {
            let mut obs = self.obsolete_tables.lock();
            // Still referenced by an older version that a reader holds?
            obs.retain(|f| Arc::strong_count(f) > 1);
            obs.iter().map(|f| f.number).collect()
        };
        let files: Vec<(String, FileType, u64)> = names
            .into_iter()
            .filter_map(|n| filename::parse_file_name(&n).map(|(t, num)| (n, t, num)))
            .collect();
        // The WAL decisions, made under the pool lock with no I/O.
        let obsolete_logs: HashSet<u64> = {
            let mut pool = self.recycle_pool.lock();
            let recycle = self.opts.effective_recycle_log_file_num();
            let mut delete = HashSet::new();
            for &(_, t, num) in &files {
                if t != FileType::Log || num >= log_number || pool.contains(&num) {
                    continue;
                }
                if pooled_before.contains(&num) {
                    continue; // reused since the listing: no longer this name
                }
                if pool.len() < recycle {
                    pool.push(num);
                } else {
                    delete.insert(num);
                }
            }
            delete
        };
        for (name, t, num) in files {
            let keep = match t {
                FileType::Log => !obsolete_logs.contains(&num),
                FileType::Table => {
                    live.contains(&num) || pending.contains(&num) || held.contains(&num)
                }
                FileType::Manifest => num >= manifest_number,
                FileType::Temp => pending.contains(&num),
                FileType::Current | FileType::Lock => true,
            };
            if !keep {
                if t == FileType::Table {
                    self.table_cache.evict(num);
                }
                let p = self.path.join(&name);
                if let Err(e) = self.fs.remove_file(&p) {
                    if e.io_kind() != Some(std::io::ErrorKind::NotFound) {
                        self.counters
                            .obsolete_delete_failures
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}
