//! Opening a database: creating it or checking it exists, recovering the
//! version set from the MANIFEST, replaying the WALs into level-0 tables,
//! starting a fresh WAL and the background threads.

use super::events::Events;
use super::flush::build_table;
use super::wal_files::{new_log, relog_prepared};
use super::*;

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database at `path`,
    /// recovering from the MANIFEST and replaying the WALs.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let path = path.as_ref().to_path_buf();
        let fs = opts.fs.clone();
        if opts.create_if_missing {
            fs.create_dir_all(&path)?;
        } else if !fs.exists(&path) {
            return Err(Error::invalid(format!(
                "database {} does not exist (create_if_missing is false)",
                path.display()
            )));
        }
        let lock = fs.lock(&filename::lock_file_name(&path))?;
        let current = filename::current_file_name(&path);
        if !fs.exists(&current) {
            if !opts.create_if_missing {
                return Err(Error::invalid(format!(
                    "{} is not a database: no CURRENT file (create_if_missing is false)",
                    path.display()
                )));
            }
            let stray = fs.list_dir(&path)?.into_iter().find(|n| {
                matches!(
                    filename::parse_file_name(n),
                    Some((FileType::Log | FileType::Table | FileType::Manifest, _))
                )
            });
            if let Some(n) = stray {
                return Err(Error::corruption(
                    &current,
                    0,
                    format!(
                        "CURRENT is missing but the directory holds database file {n}; refusing to create a new database over it"
                    ),
                ));
            }
            VersionSet::create_new(fs.as_ref(), &path)?;
            fs.sync_dir(&path)?;
        } else if opts.error_if_exists {
            return Err(Error::invalid(format!(
                "database {} already exists (error_if_exists is true)",
                path.display()
            )));
        }

        let next_file = Arc::new(AtomicU64::new(2));
        let events = Events::new(fs.as_ref(), &path, &opts)?;
        let mut versions = VersionSet::recover(fs.clone(), &path, next_file.clone())?;
        if opts.paranoid_checks {
            check_table_files(fs.as_ref(), &path, &versions.current())?;
        }
        let block_cache =
            (opts.block_cache_size > 0).then(|| Arc::new(BlockCache::new(opts.block_cache_size)));
        // Zip tables read ahead as they open, up to the memory available now.
        let read_ahead = opts
            .zip
            .read_ahead_on_open
            .unwrap_or_else(|| crate::util::memory::available_bytes().unwrap_or(0));
        let zip_stats = Arc::new(ZipStats::with_read_ahead(read_ahead));
        let zip_budget = Arc::new(ZipMemBudget::new(opts.zip.hard_working_mem_limit));
        let table_cache = Arc::new(TableCache::new(
            fs.clone(),
            path.clone(),
            opts.max_open_files,
            block_cache.clone(),
            opts.prefix_extractor.clone(),
            zip_stats.clone(),
            opts.mmap_reads,
        ));

        let blob_values = match opts.blob_cache {
            BlobCacheConfig::Disabled => None,
            BlobCacheConfig::SharedWithBlockCache => block_cache.clone(),
            BlobCacheConfig::Dedicated(bytes) => Some(Arc::new(BlockCache::new(bytes))),
        };
        let blob_cache = Arc::new(crate::blob::BlobCache::new(
            fs.clone(),
            path.clone(),
            opts.max_open_files,
            blob_values,
        ));

        // Replay the WALs that hold writes not yet in tables.
        let mut logs: Vec<u64> = fs
            .list_dir(&path)?
            .iter()
            .filter_map(|n| match filename::parse_file_name(n) {
                Some((FileType::Log, num)) if num >= versions.log_number => Some(num),
                _ => None,
            })
            .collect();
        logs.sort_unstable();
        // What the tables hold; replay raises it. (Tables never hold more
        // than the MANIFEST's last sequence; the max is a guard against ever
        // reusing a sequence number.)
        let mut max_seq = versions.last_sequence.max(versions.current().max_seq());
        let mut edit = VersionEdit::default();
        let mut mem = Arc::new(MemTable::new());
        // Set when the previous log ended in damage: (log number, offset).
        let mut prev_damaged: Option<(u64, u64)> = None;
        // Prepared transactions not (yet) decided by a later record.
        let mut prepared: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for &num in &logs {
            let lp = filename::log_file_name(&path, num);
            let mut first = true;
            // A gap between the sequence that ends one log and the start
            // marker of the next: records of the earlier log were lost.
            let mut gap: Option<String> = None;
            let replayed = crate::wal::replay_log(
                fs.as_ref(),
                &lp,
                num,
                opts.wal_recovery_mode,
                |offset, rec| {
                    let b = WriteBatch::from_data(rec, &lp, offset)?;
                    let seq = b.sequence();
                    if std::mem::take(&mut first) {
                        let marker = (b.count() == 0).then_some(seq);
                        let lost = match (marker, prev_damaged) {
                            (Some(m), _) if m > max_seq => Some(format!(
                                "records up to sequence {m} are missing: the logs before this one end at sequence {max_seq}"
                            )),
                            (None, Some((n, at))) => Some(format!(
                                "log {n:06} is damaged at offset {at} and this log has no start marker to prove nothing was lost"
                            )),
                            _ => None,
                        };
                        let skip =
                            opts.wal_recovery_mode == WalRecoveryMode::SkipAnyCorruptedRecords;
                        if let Some(what) = lost.filter(|_| !skip) {
                            gap = Some(what);
                            // Stops this replay; handled below.
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                    if let Some(name) = b.prepared_name() {
                        // Logged, not applied, until its commit record.
                        prepared.insert(name.to_vec(), rec.to_vec());
                        return Ok(ControlFlow::Continue(()));
                    }
                    for name in b.decided_names() {
                        prepared.remove(name);
                    }
                    if b.count() > 0 {
                        mem.insert_batch(&b, seq);
                        max_seq = max_seq.max(seq + b.count() as u64 - 1);
                    }
                    if mem.is_full(opts.write_buffer_size, opts.write_buffer_index_size) {
                        let full = std::mem::replace(&mut mem, Arc::new(MemTable::new()));
                        let num = next_file.fetch_add(1, Ordering::SeqCst);
                        // Numbers of files a failed build leaves are never
                        // listed; the collector deletes those files.
                        let built = build_table(
                            &fs,
                            &path,
                            &opts,
                            num,
                            0,
                            &full,
                            &zip_budget,
                            None,
                            || next_file.fetch_add(1, Ordering::SeqCst),
                        )?;
                        built.add_to(&mut edit, 0);
                    }
                    Ok(ControlFlow::Continue(()))
                },
            )?;
            if let Some(what) = gap {
                match opts.wal_recovery_mode {
                    // Nothing after the loss may be applied.
                    WalRecoveryMode::PointInTimeRecovery => break,
                    _ => return Err(Error::corruption(&lp, 0, what)),
                }
            }
            // Damage at the end of a log is its end (with recycling, stale
            // bytes of the file's previous use follow the last record); the
            // next log's start marker tells whether anything was lost.
            prev_damaged = replayed.stopped_at.map(|at| (num, at));
        }
        if !mem.is_empty() {
            let num = next_file.fetch_add(1, Ordering::SeqCst);
            build_table(&fs, &path, &opts, num, 0, &mem, &zip_budget, None, || {
                next_file.fetch_add(1, Ordering::SeqCst)
            })?
            .add_to(&mut edit, 0);
        }
        // A fresh WAL for new writes; the replayed ones become obsolete.
        let log_number = versions.new_file_number();
        let mut writer = new_log(&fs, &path, log_number, None, max_seq, opts.wal_mmap_writes)?;
        let records: Vec<Vec<u8>> = prepared.values().cloned().collect();
        relog_prepared(&mut writer, &records)?;
        edit.log_number = Some(log_number);
        edit.last_sequence = Some(max_seq);
        let recovered_blobs = edit.new_blob_files.clone();
        let version = versions.log_and_apply(edit)?;
        for b in &recovered_blobs {
            events.blob_file_created(&super::events::BlobFileCreationInfo::new(
                &path,
                b,
                super::events::BlobFileCreationReason::Recovery,
            ));
        }

        let mem = Arc::new(MemTable::with_indexes(
            opts.memtable_filter_bytes(),
            opts.memtable_hash_slots(),
        ));
        let sv = Arc::new(SuperVersion {
            mem: mem.clone(),
            imms: Vec::new(),
            tables_max_seq: version.max_seq(),
            version,
            gen: 0,
        });
        let inner = Arc::new(DbInner {
            path,
            fs,
            lock: Mutex::new(Some(lock)),
            table_cache,
            blob_cache,
            block_cache,
            zip_budget,
            zip_stats,
            pipeline: CommitPipeline::new(max_seq),
            durability: Default::default(),
            log: Mutex::new(LogState {
                writer: Some(writer),
                scratch: WriteBatch::new(),
                last_logged_seq: max_seq,
                last_assigned_seq: max_seq,
                in_flight: VecDeque::new(),
                tracking_in_flight: false,
                next_write_at: None,
                slowed_since: None,
                last_synced_group: Vec::new(),
            }),
            compaction_lock: Mutex::new(()),
            versions: Mutex::new(versions),
            state: Mutex::new(State {
                mem,
                mem_log_number: log_number,
                imms: VecDeque::new(),
                bg_error: None,
                bg_reporting: None,
                flush_reporting: None,
                shutting_down: false,
                purge_wanted: false,
                compaction_wanted: true,
            }),
            state_cv: Condvar::new(),
            sv: RwLock::new(sv),
            sv_cache: super::sv_cache::SvCache::new(0),
            next_file,
            snapshots: Arc::new(SnapshotList::default()),
            pending_outputs: Mutex::new(HashSet::new()),
            recycle_pool: Mutex::new(Vec::new()),
            closed_logs: Mutex::new(Vec::new()),
            obsolete_tables: Mutex::new(Vec::new()),
            obsolete_blobs: Mutex::new(Vec::new()),
            prepared: Mutex::new(prepared),
            gc_lock: Mutex::new(()),
            deletions_disabled: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            counters: Counters::default(),
            events,
            #[cfg(test)]
            hooks: hooks::Hooks::default(),
            opts,
        });
        inner
            .events
            .opened(&inner.path, &inner.opts, inner.pipeline.last_seq());
        inner.delete_obsolete_files();
        let mut threads = Vec::new();
        for (name, f) in [
            ("cairndb-flush", DbInner::flush_loop as fn(&Arc<DbInner>)),
            ("cairndb-compact", DbInner::compaction_loop),
            ("cairndb-purge", DbInner::purge_loop),
        ] {
            let i = inner.clone();
            let t = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || f(&i))
                .map_err(|e| Error::io("spawn thread", &inner.path, e))?;
            threads.push(t);
        }
        {
            // Syncs for `wait_durable` and `poll_durable`, and the
            // interval sync (`durable.rs`).
            let i = inner.clone();
            let t = std::thread::Builder::new()
                .name("cairndb-walsync".into())
                .spawn(move || i.wal_sync_loop())
                .map_err(|e| Error::io("spawn thread", &inner.path, e))?;
            threads.push(t);
        }
        Ok(Db {
            inner,
            threads: Mutex::new(threads),
        })
    }
}

/// `paranoid_checks`: every table of `v` exists with the size the MANIFEST
/// recorded for it, and every blob file of `v` exists.
fn check_table_files(fs: &dyn Fs, dir: &Path, v: &Version) -> Result<()> {
    for (level, files) in v.files.iter().enumerate() {
        for f in files {
            let p = filename::table_file_name(dir, f.number);
            let size = match fs.file_size(&p) {
                Ok(n) => n,
                Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
                    return Err(Error::corruption(
                        &p,
                        0,
                        format!("table of level {level} listed in the MANIFEST is missing"),
                    ))
                }
                Err(e) => return Err(e),
            };
            if size != f.size {
                return Err(Error::corruption(
                    &p,
                    size.min(f.size),
                    format!(
                        "table of level {level} is {size} bytes, the MANIFEST recorded {}",
                        f.size
                    ),
                ));
            }
        }
    }
    for &number in v.blob_files.keys() {
        let p = filename::blob_file_name(dir, number);
        if !fs.exists(&p) {
            return Err(Error::corruption(
                &p,
                0,
                "blob file listed in the MANIFEST is missing",
            ));
        }
    }
    Ok(())
}
