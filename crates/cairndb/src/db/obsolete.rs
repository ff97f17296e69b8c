//! Deleting obsolete files: old WALs and MANIFESTs, tables and blob files no
//! version or reader needs, temporaries of failed builds. WALs may be kept for reuse.
//! A flush leaves the deleting to the purge thread ([`DbInner::purge_loop`]);
//! a compaction, `flush`, `close` and open delete on their own thread.
//!
//! The decisions are pure functions of what the collector gathered
//! ([`Keep`], [`decide_logs`]), tested below; `delete_obsolete_files`
//! gathers (taking each lock briefly, see `db/mod.rs`) and unlinks with no
//! lock but `gc_lock` held, then reports the blob files it deleted to the
//! listeners after releasing `gc_lock` (no listener runs under it); after a
//! compaction the caller still holds `compaction_lock` (`events.rs`).

use super::events::BlobFileDeletionInfo;
use super::*;

/// What the collector knows when it decides about one file.
pub(super) struct Keep<'a> {
    /// Tables of the current version.
    pub(super) live: &'a HashSet<u64>,
    /// Blob files of the current version. (Kept apart from the tables: a
    /// number left by a crashed build, `N.blob`, can be reused for a table
    /// `N.sst`, and the orphan must not pass as live.)
    pub(super) live_blobs: &'a HashSet<u64>,
    /// Table and blob file numbers being written (flush or compaction outputs).
    pub(super) pending: &'a HashSet<u64>,
    /// Tables an older version, held by a reader, still refers to.
    pub(super) held: &'a HashSet<u64>,
    /// Blob files an older version, held by a reader, still lists.
    pub(super) held_blobs: &'a HashSet<u64>,
    /// WALs to delete (from [`decide_logs`]).
    pub(super) obsolete_logs: &'a HashSet<u64>,
    /// The current MANIFEST.
    pub(super) manifest_number: u64,
}

impl Keep<'_> {
    /// Whether file `num` of type `t` must stay.
    pub(super) fn keep(&self, t: FileType, num: u64) -> bool {
        match t {
            FileType::Log => !self.obsolete_logs.contains(&num),
            FileType::Table => {
                self.live.contains(&num) || self.pending.contains(&num) || self.held.contains(&num)
            }
            FileType::Blob => {
                self.live_blobs.contains(&num)
                    || self.pending.contains(&num)
                    || self.held_blobs.contains(&num)
            }
            FileType::Manifest => num >= self.manifest_number,
            FileType::Temp => self.pending.contains(&num),
            FileType::Current | FileType::Lock => true,
        }
    }
}

/// Decides about the listed WALs below `log_number` (none of which holds
/// an unflushed write): each goes into the recycle `pool` while it has room
/// for `recycle`, or is returned for deletion. A WAL in the pool stays. A
/// WAL that was in the pool when the listing was taken (`pooled_before`)
/// but no longer is was reused (renamed) since: its listed name is stale,
/// and it is neither pooled again nor deleted.
pub(super) fn decide_logs(
    listed: impl IntoIterator<Item = u64>,
    log_number: u64,
    pool: &mut Vec<u64>,
    pooled_before: &[u64],
    recycle: usize,
) -> HashSet<u64> {
    let mut delete = HashSet::new();
    for num in listed {
        if num >= log_number || pool.contains(&num) || pooled_before.contains(&num) {
            continue;
        }
        if pool.len() < recycle {
            pool.push(num);
        } else {
            delete.insert(num);
        }
    }
    delete
}

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
        let deleted = self.collect_obsolete_files();
        for d in &deleted {
            self.events.blob_file_deleted(d);
        }
    }

    /// The purge thread: deletes obsolete files whenever a flush asks
    /// (`State::purge_wanted`), so the flush thread does not wait for the
    /// unlinks. Stops at shutdown; `close` and the next open delete what
    /// is left.
    pub(super) fn purge_loop(self: &Arc<Self>) {
        loop {
            {
                let mut st = self.state.lock();
                while !st.purge_wanted && !st.shutting_down {
                    self.state_cv.wait(&mut st);
                }
                if st.shutting_down {
                    return;
                }
                st.purge_wanted = false;
            }
            self.delete_obsolete_files();
        }
    }

    /// [`DbInner::delete_obsolete_files`] under `gc_lock`; returns the blob
    /// files it deleted or failed to delete.
    fn collect_obsolete_files(&self) -> Vec<BlobFileDeletionInfo> {
        let mut deleted = Vec::new();
        let _g = self.gc_lock.lock();
        // Deletion pinned (`disable_file_deletions`, a checkpoint or backup
        // copying files): nothing goes, not even into the recycle pool.
        if self.deletions_disabled.load(Ordering::SeqCst) > 0 {
            return deleted;
        }
        if self.state.lock().bg_error.is_some() {
            return deleted;
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
                return deleted;
            }
        };
        self.hook(hooks::GC_LISTED);
        // Order matters: pending outputs before the version (see flush_one).
        let pending = self.pending_outputs.lock().clone();
        // A failed install records the background error before its outputs
        // leave the pending set, so checked after reading the set, the
        // error covers every output missing from it. (The check above
        // alone leaves a window: an install failing between it and the
        // read would have its outputs, possibly listed in the MANIFEST,
        // deleted as unowned.)
        if self.state.lock().bg_error.is_some() {
            return deleted;
        }
        let (live, live_blobs, log_number, manifest_number) = {
            let vs = self.versions.lock();
            let cur = vs.current();
            let live: HashSet<u64> = cur.files.iter().flatten().map(|f| f.number).collect();
            let live_blobs: HashSet<u64> = cur.blob_files.keys().copied().collect();
            (live, live_blobs, vs.log_number, vs.manifest_number())
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
        let held_blobs: HashSet<u64> = {
            // Blob files likewise (a leaf lock, taken after the other one
            // is released).
            let mut blobs = self.obsolete_blobs.lock();
            blobs.retain(|b| Arc::strong_count(b) > 1);
            blobs.iter().map(|b| b.number).collect()
        };
        let files: Vec<(String, FileType, u64)> = names
            .into_iter()
            .filter_map(|n| filename::parse_file_name(&n).map(|(t, num)| (n, t, num)))
            .collect();
        // The WAL decisions, made under the pool lock with no I/O.
        let obsolete_logs = decide_logs(
            files
                .iter()
                .filter(|(_, t, _)| *t == FileType::Log)
                .map(|&(_, _, num)| num),
            log_number,
            &mut self.recycle_pool.lock(),
            &pooled_before,
            // A closed database opens no more WALs: nothing is pooled.
            if self.closed.load(Ordering::Acquire) {
                0
            } else {
                self.opts.effective_recycle_log_file_num()
            },
        );
        let rule = Keep {
            live: &live,
            live_blobs: &live_blobs,
            pending: &pending,
            held: &held,
            held_blobs: &held_blobs,
            obsolete_logs: &obsolete_logs,
            manifest_number,
        };
        for (name, t, num) in files {
            if !rule.keep(t, num) {
                match t {
                    FileType::Table => self.table_cache.evict(num),
                    FileType::Blob => self.blob_cache.evict(num),
                    _ => {}
                }
                let p = self.path.join(&name);
                let r = self.fs.remove_file(&p);
                // A file already gone is neither a failure nor a deletion.
                let error = match r {
                    Ok(()) => None,
                    Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => continue,
                    Err(e) => {
                        self.counters
                            .obsolete_delete_failures
                            .fetch_add(1, Ordering::Relaxed);
                        Some(e)
                    }
                };
                if t == FileType::Blob {
                    deleted.push(BlobFileDeletionInfo {
                        file_number: num,
                        path: p,
                        error,
                    });
                }
            }
        }
        deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[u64]) -> HashSet<u64> {
        v.iter().copied().collect()
    }

    #[test]
    fn tables_stay_while_live_pending_or_held() {
        let (live, pending, held, none) = (set(&[1]), set(&[2]), set(&[3]), set(&[]));
        let (live_blobs, held_blobs) = (set(&[5]), set(&[6]));
        let k = Keep {
            live: &live,
            live_blobs: &live_blobs,
            pending: &pending,
            held: &held,
            held_blobs: &held_blobs,
            obsolete_logs: &none,
            manifest_number: 10,
        };
        for n in [1, 2, 3] {
            assert!(k.keep(FileType::Table, n), "table {n}");
        }
        assert!(!k.keep(FileType::Table, 4));
        // Blob files: live, pending or held as blob files; a blob file
        // whose number is now a live table's is an orphan.
        for n in [2, 5, 6] {
            assert!(k.keep(FileType::Blob, n), "blob file {n}");
        }
        assert!(!k.keep(FileType::Blob, 1) && !k.keep(FileType::Blob, 3));
        assert!(!k.keep(FileType::Table, 5));
        // A temporary stays only while its number is a pending output.
        assert!(k.keep(FileType::Temp, 2));
        assert!(!k.keep(FileType::Temp, 4));
        // Older MANIFESTs go; CURRENT and LOCK never do.
        assert!(k.keep(FileType::Manifest, 10) && k.keep(FileType::Manifest, 11));
        assert!(!k.keep(FileType::Manifest, 9));
        assert!(k.keep(FileType::Current, 0) && k.keep(FileType::Lock, 0));
    }

    #[test]
    fn logs_at_or_after_the_log_number_are_never_touched() {
        let mut pool = Vec::new();
        let d = decide_logs([5, 6, 7], 5, &mut pool, &[], 2);
        assert!(d.is_empty() && pool.is_empty());
    }

    #[test]
    fn obsolete_logs_fill_the_pool_then_are_deleted() {
        let mut pool = vec![1];
        let d = decide_logs([1, 2, 3, 4], 10, &mut pool, &[1], 2);
        assert_eq!(pool, vec![1, 2]);
        assert_eq!(d, set(&[3, 4]));
        // Recycling off: every obsolete log is deleted.
        let mut pool = Vec::new();
        assert_eq!(decide_logs([1, 2], 10, &mut pool, &[], 0), set(&[1, 2]));
    }

    /// The listing still shows a pooled log that a memtable switch took
    /// from the pool and renamed meanwhile: pooling it again would make the
    /// next switch rename a file that no longer exists.
    #[test]
    fn log_reused_since_the_listing_is_neither_pooled_nor_deleted() {
        let mut pool = Vec::new(); // 3 was popped (and renamed) since
        let d = decide_logs([3], 10, &mut pool, &[3], 2);
        assert!(d.is_empty());
        assert!(pool.is_empty());
    }
}
