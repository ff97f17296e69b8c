//! The database: open and recovery, the write path, reads, and the
//! background flush and compaction threads.
//!
//! ## Threads
//! Callers write and read on their own threads. One background thread
//! flushes immutable memtables to level 0; one compacts. `compact_range`
//! runs its compactions on the calling thread, serialized with the
//! background compactor by `compaction_lock`.
//!
//! ## Locks, in the only order they may be taken
//! 1. `queue`: the writer queue. Never held across I/O.
//! 2. `log`: held by the write leader while it assigns sequence numbers and
//!    appends (and syncs) the group's WAL record, not during the memtable
//!    inserts, and by memtable switches, so the mutable memtable and the WAL
//!    only change under it. Held across WAL I/O: this *is* the group-commit
//!    point, and only the leader waits on it.
//!    `closed_logs` (switched-out WALs not yet synced) is taken under `log`
//!    by every path that syncs, and alone by the garbage collector; it is
//!    held across the fdatasync of those WALs.
//! 3. `compaction_lock`: one compaction at a time.
//! 4. `versions`: held across MANIFEST appends and syncs (background only).
//! 5. `state`: memtables, background error, flags. Never held across I/O.
//! 6. `sv`: the published super-version (memtables + version) that readers
//!    clone an `Arc` of; written only under `state`.
//!
//! Reads take only `sv` for a pointer copy and hold no lock while they search
//! memtables and tables, so they never wait for a flush or a compaction.
//!
//! ## Invariants
//! * Every sequence number <= `last_seq` is fully applied to a memtable.
//!   Write groups get their sequence numbers and WAL records in order under
//!   `log`, then insert into the memtable with no lock held (the skiplist
//!   takes concurrent inserts), overlapping the next group's WAL append,
//!   and publish `last_seq` in sequence order. A memtable is switched out
//!   only after every assigned sequence is published, so an immutable
//!   memtable never receives another insert.
//! * WALs numbered >= `VersionSet::log_number` hold every write not yet in
//!   a table; each memtable knows the WAL that started with it.
//! * A table file is deleted only when no version that any reader can still
//!   hold refers to it.

mod hooks;
pub mod snapshot;
#[cfg(test)]
mod tests;

use std::collections::{HashSet, VecDeque};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::batch::WriteBatch;
use crate::cache::table_cache::TableCache;
use crate::cache::BlockCache;
use crate::compaction::{self, Compaction, DropFilter};
use crate::env::{FileLock, Fs};
use crate::error::{Error, Result};
use crate::filename::{self, FileType};
use crate::iter::db_iter::DbIterator;
use crate::iter::merge::MergingIterator;
use crate::iter::InternalIterator;
use crate::key::{lookup_key, pack_trailer, user_key, SeqNo, TRAILER_LEN, TYPE_FOR_SEEK};
use crate::memtable::{MemGet, MemTable};
use crate::options::{Options, ReadOptions, WalRecoveryMode, WriteOptions, NUM_LEVELS};
use crate::sst::{OutputBuilder, ZipMemBudget, ZipStats};
use crate::version::set::VersionSet;
use crate::version::{FileMeta, TableGet, Version, VersionEdit};
use crate::wal::LogWriter;
use snapshot::{Snapshot, SnapshotList};

/// Largest group a write leader assembles, in bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// Longest a synced group's leader waits for writers still on their way
/// into the queue (see `write_group`); also capped at half a sync.
const SYNC_GATHER: Duration = Duration::from_micros(200);
/// How long a queued writer spins before it sleeps until its group is done.
const WRITER_SPIN: Duration = Duration::from_micros(20);
/// WAL files are preallocated in chunks of this size.
const WAL_PREALLOCATE: u64 = 4 << 20;

/// What readers see: the memtables and the version, swapped as one.
pub(crate) struct SuperVersion {
    mem: Arc<MemTable>,
    /// Newest first.
    imms: Vec<Arc<MemTable>>,
    version: Arc<Version>,
}

struct Imm {
    mem: Arc<MemTable>,
    log_number: u64,
}

struct State {
    mem: Arc<MemTable>,
    mem_log_number: u64,
    /// Oldest first.
    imms: VecDeque<Imm>,
    bg_error: Option<Error>,
    shutting_down: bool,
    compaction_wanted: bool,
}

struct LogState {
    writer: Option<LogWriter>,
    scratch: WriteBatch,
    /// Sequence number of the last record written to any WAL (writes with
    /// the WAL disabled are not counted): the next WAL's start marker.
    last_logged_seq: SeqNo,
    /// Last sequence number assigned to a write group. Groups are assigned
    /// (and logged) in order under `log`, insert into the memtable after
    /// releasing it, and publish `last_seq` in the same order; so
    /// `last_seq <= last_assigned_seq`, equal when no insert is in flight.
    last_assigned_seq: SeqNo,
    /// While writes are slowed: when the next group may be written.
    next_write_at: Option<Instant>,
}

/// What a leader's [`DbInner::write_group`] decided, for the inserts and
/// wake-ups it does after releasing `log`.
struct GroupCommit {
    /// The writers at the queue front that this group covers, leader first.
    group: Vec<Arc<Writer>>,
    /// The memtable to insert into, or the group's error.
    mem: Result<Arc<MemTable>>,
    first_seq: SeqNo,
    /// Records in the group; 0 when it failed or held only empty batches.
    count: u64,
    /// The group asked for (and got, or failed at) an fdatasync.
    synced: bool,
}

struct Writer {
    batch: WriteBatch,
    opts: WriteOptions,
    done: AtomicBool,
    /// Set (under `queue`) when this writer reaches the queue front.
    leader: AtomicBool,
    result: Mutex<Option<Result<()>>>,
    cv: Condvar,
}

/// Counters behind `stats()` and the `cairndb.stats` property.
#[derive(Default)]
struct Counters {
    user_bytes_written: AtomicU64,
    wal_bytes_written: AtomicU64,
    wal_syncs: AtomicU64,
    write_groups: AtomicU64,
    writes: AtomicU64,
    flush_bytes_written: AtomicU64,
    flushes: AtomicU64,
    compaction_bytes_read: AtomicU64,
    compaction_bytes_written: AtomicU64,
    compactions: AtomicU64,
    trivial_moves: AtomicU64,
    stall_micros: AtomicU64,
    stalls: AtomicU64,
    slowdowns: AtomicU64,
    obsolete_delete_failures: AtomicU64,
}

/// A snapshot of the engine's statistics.
#[derive(Debug, Clone, Default)]
pub struct DbStats {
    /// Files per level.
    pub files_per_level: [usize; NUM_LEVELS],
    /// Bytes per level.
    pub bytes_per_level: [u64; NUM_LEVELS],
    /// Bytes of keys and values written by users.
    pub user_bytes_written: u64,
    /// Bytes appended to WALs.
    pub wal_bytes_written: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Write groups committed (each one WAL write).
    pub write_groups: u64,
    /// Write calls.
    pub writes: u64,
    /// Bytes written by flushes.
    pub flush_bytes_written: u64,
    /// Flushes completed.
    pub flushes: u64,
    /// Bytes read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Compactions completed (including trivial moves).
    pub compactions: u64,
    /// Compactions that moved a file without rewriting it.
    pub trivial_moves: u64,
    /// Total time writers spent stalled or delayed, microseconds.
    pub stall_micros: u64,
    /// Writes that waited for a full stop to clear.
    pub stalls: u64,
    /// Writes delayed by the level-0 slowdown.
    pub slowdowns: u64,
    /// Obsolete files that could not be deleted (space, not data, is lost).
    pub obsolete_delete_failures: u64,
    /// Block cache hits and misses.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Bytes held by the block cache.
    pub block_cache_usage: u64,
    /// Point reads served by zip tables (each decompresses one group).
    pub zip_point_reads: u64,
    /// Bytes those reads decompressed.
    pub zip_point_read_bytes: u64,
    /// Zip groups decompressed by iterators.
    pub zip_iter_groups: u64,
    /// Bytes in memtables (mutable and immutable).
    pub memtable_bytes: u64,
    /// Immutable memtables waiting to be flushed.
    pub immutable_memtables: usize,
    /// Last sequence number.
    pub last_sequence: u64,
    /// Live snapshots.
    pub snapshots: usize,
}

impl DbStats {
    /// (flush + compaction bytes written) / user bytes written.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.flush_bytes_written + self.compaction_bytes_written) as f64
            / self.user_bytes_written as f64
    }
}

pub(crate) struct DbInner {
    path: PathBuf,
    opts: Options,
    fs: Arc<dyn Fs>,
    lock: Mutex<Option<Box<dyn FileLock>>>,
    table_cache: Arc<TableCache>,
    block_cache: Option<Arc<BlockCache>>,
    /// Working memory of zip table builds (`ZipTableOptions::hard_working_mem_limit`).
    zip_budget: Arc<ZipMemBudget>,
    /// Point-read counters of zip tables, shared with the table cache.
    zip_stats: Arc<ZipStats>,
    queue: Mutex<VecDeque<Arc<Writer>>>,
    /// True while a write leader waits for fdatasync (queued writers sleep
    /// instead of spinning).
    leader_syncing: AtomicBool,
    /// Threads inside `write` (queued, leading, or just woken with their
    /// result and not yet returned).
    active_writers: AtomicUsize,
    /// Duration of the last WAL sync, microseconds.
    last_sync_micros: AtomicU64,
    log: Mutex<LogState>,
    compaction_lock: Mutex<()>,
    versions: Mutex<VersionSet>,
    state: Mutex<State>,
    state_cv: Condvar,
    sv: RwLock<Arc<SuperVersion>>,
    last_seq: AtomicU64,
    next_file: Arc<AtomicU64>,
    snapshots: Arc<SnapshotList>,
    pending_outputs: Mutex<HashSet<u64>>,
    /// Obsolete WAL numbers whose files are kept for reuse. A switch pops
    /// one (then renames it with the lock released); the collector alone
    /// adds to it, deciding under the lock with no I/O, so a file is never
    /// both reused and deleted (see `delete_obsolete_files`).
    recycle_pool: Mutex<Vec<u64>>,
    /// WALs switched out under `PointInTimeRecovery` without a sync:
    /// `(number, writer)`. Every sync (a synced group, `sync_wal`, the
    /// interval sync, `close`) syncs these first, so a synced write never
    /// sits behind an unsynced hole; the collector drops the ones whose
    /// memtable has been flushed.
    closed_logs: Mutex<Vec<(u64, LogWriter)>>,
    obsolete_tables: Mutex<Vec<Arc<FileMeta>>>,
    gc_lock: Mutex<()>,
    closed: AtomicBool,
    counters: Counters,
    /// Test-only interleaving points.
    #[cfg(test)]
    hooks: hooks::Hooks,
}

/// An open database. `Send + Sync`: share it across threads by reference or
/// in an `Arc`. Dropping it closes it.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner.path)
            .finish()
    }
}

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
        let mut versions = VersionSet::recover(fs.clone(), &path, next_file.clone())?;
        let block_cache =
            (opts.block_cache_size > 0).then(|| Arc::new(BlockCache::new(opts.block_cache_size)));
        let zip_stats = Arc::new(ZipStats::default());
        let zip_budget = Arc::new(ZipMemBudget::new(opts.zip.hard_working_mem_limit));
        let table_cache = Arc::new(TableCache::new(
            fs.clone(),
            path.clone(),
            opts.max_open_files,
            block_cache.clone(),
            opts.prefix_extractor.clone(),
            zip_stats.clone(),
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
                    if b.count() > 0 {
                        mem.insert_batch(&b, seq);
                        max_seq = max_seq.max(seq + b.count() as u64 - 1);
                    }
                    if mem.approximate_memory_usage() >= opts.write_buffer_size {
                        let full = std::mem::replace(&mut mem, Arc::new(MemTable::new()));
                        let num = next_file.fetch_add(1, Ordering::SeqCst);
                        match build_table(&fs, &path, &opts, num, 0, &full, &zip_budget) {
                            Ok(Some(meta)) => edit.add_file(0, meta),
                            Ok(None) => {}
                            Err(e) => return Err(e),
                        }
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
            if let Some(meta) = build_table(&fs, &path, &opts, num, 0, &mem, &zip_budget)? {
                edit.add_file(0, meta);
            }
        }
        // A fresh WAL for new writes; the replayed ones become obsolete.
        let log_number = versions.new_file_number();
        let writer = new_log(&fs, &path, log_number, None, max_seq)?;
        edit.log_number = Some(log_number);
        edit.last_sequence = Some(max_seq);
        let version = versions.log_and_apply(edit)?;

        let mem = Arc::new(MemTable::with_filter(opts.memtable_filter_bytes()));
        let sv = Arc::new(SuperVersion {
            mem: mem.clone(),
            imms: Vec::new(),
            version,
        });
        let inner = Arc::new(DbInner {
            path,
            fs,
            lock: Mutex::new(Some(lock)),
            table_cache,
            block_cache,
            zip_budget,
            zip_stats,
            queue: Mutex::new(VecDeque::new()),
            leader_syncing: AtomicBool::new(false),
            active_writers: AtomicUsize::new(0),
            last_sync_micros: AtomicU64::new(0),
            log: Mutex::new(LogState {
                writer: Some(writer),
                scratch: WriteBatch::new(),
                last_logged_seq: max_seq,
                last_assigned_seq: max_seq,
                next_write_at: None,
            }),
            compaction_lock: Mutex::new(()),
            versions: Mutex::new(versions),
            state: Mutex::new(State {
                mem,
                mem_log_number: log_number,
                imms: VecDeque::new(),
                bg_error: None,
                shutting_down: false,
                compaction_wanted: true,
            }),
            state_cv: Condvar::new(),
            sv: RwLock::new(sv),
            last_seq: AtomicU64::new(max_seq),
            next_file,
            snapshots: Arc::new(SnapshotList::default()),
            pending_outputs: Mutex::new(HashSet::new()),
            recycle_pool: Mutex::new(Vec::new()),
            closed_logs: Mutex::new(Vec::new()),
            obsolete_tables: Mutex::new(Vec::new()),
            gc_lock: Mutex::new(()),
            closed: AtomicBool::new(false),
            counters: Counters::default(),
            #[cfg(test)]
            hooks: hooks::Hooks::default(),
            opts,
        });
        inner.delete_obsolete_files();
        let mut threads = Vec::new();
        for (name, f) in [
            ("cairndb-flush", DbInner::flush_loop as fn(&Arc<DbInner>)),
            ("cairndb-compact", DbInner::compaction_loop),
        ] {
            let i = inner.clone();
            let t = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || f(&i))
                .map_err(|e| Error::io("spawn thread", &inner.path, e))?;
            threads.push(t);
        }
        if !inner.opts.wal_sync_interval.is_zero() {
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

    /// The directory of this database.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Sets `key` to `value`.
    pub fn put(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(opts, b)
    }

    /// Removes `key`.
    pub fn delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(opts, b)
    }

    /// Applies `batch` atomically.
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.check_open()?;
        batch.check_sizes()?;
        self.inner.write(opts, batch)
    }

    /// The value of `key`, as of the snapshot in `opts` or the latest state.
    pub fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.check_open()?;
        self.inner.get(opts, key)
    }

    /// A snapshot of the current state, for reads and iterators.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.hook(hooks::SNAPSHOT);
        // The sequence is read under the snapshot list's lock (see
        // `SnapshotList::create`).
        self.inner
            .snapshots
            .create(|| self.inner.last_seq.load(Ordering::Acquire))
    }

    /// An iterator over the database as of `opts.snapshot` (or now).
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.inner.check_open()?;
        Ok(self.inner.iter(opts))
    }

    /// Flushes the memtable to a table file and waits until every memtable
    /// written before the call is in a table.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.flush()
    }

    /// Compacts every file overlapping `[begin, end]` (user keys, None =
    /// unbounded) down through the levels.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.check_open()?;
        self.inner.compact_range(begin, end)
    }

    /// Writes buffered WAL bytes to the OS and fdatasyncs the WAL (first any
    /// WAL switched out without a sync). A failure makes the database
    /// read-only, and a database already read-only returns `Error::ReadOnly`.
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.check_open()?;
        if let Some(e) = self.inner.state.lock().bg_error.clone() {
            // After a failed write or sync, a sync cannot vouch for what
            // came before it.
            return Err(Error::ReadOnly { cause: Box::new(e) });
        }
        let mut log = self.inner.log.lock();
        match log.writer.as_mut() {
            Some(w) => {
                // A failed fdatasync may have dropped the dirty pages (and a
                // retry on the same descriptor can then succeed): nothing
                // synced later may be acknowledged, so the database turns
                // read-only, as after a failed synced group.
                if let Err(e) = self.inner.sync_closed_logs().and_then(|()| w.sync()) {
                    self.inner.set_bg_error(e.clone());
                    return Err(e);
                }
                self.inner
                    .counters
                    .wal_syncs
                    .fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            None => Err(Error::Closed),
        }
    }

    /// Hands buffered WAL bytes to the OS (survives a process crash).
    pub fn flush_wal(&self) -> Result<()> {
        self.inner.check_open()?;
        let mut log = self.inner.log.lock();
        match log.writer.as_mut() {
            Some(w) => w.flush(),
            None => Err(Error::Closed),
        }
    }

    /// Engine statistics.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// A named property, RocksDB style. Names take the prefix `cairndb.` or
    /// `rocksdb.`: `num-files-at-level<N>`, `stats`, `levelstats`,
    /// `sstables`, `estimate-num-keys`, `cur-size-all-mem-tables`,
    /// `num-immutable-mem-table`, `block-cache-usage`, `num-snapshots`,
    /// `total-sst-files-size`, `last-sequence`.
    pub fn property(&self, name: &str) -> Option<String> {
        self.inner.property(name)
    }

    /// Waits until no flush or compaction is pending.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.wait_idle()
    }

    /// Stops background work, syncs the WAL and releases the lock. Further
    /// calls return `Error::Closed`. Returns the first background error, if
    /// one left the database read-only.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let inner = &self.inner;
        // Writes made with the WAL disabled exist only in memory: flush them.
        // (Each memtable knows whether it holds any, so no flush racing the
        // writes can clear the fact for a memtable it did not flush.)
        let unlogged = {
            let sv = inner.current_sv();
            sv.mem.has_unlogged() || sv.imms.iter().any(|m| m.has_unlogged())
        };
        let flush_result = if unlogged { inner.flush() } else { Ok(()) };
        {
            let mut st = inner.state.lock();
            st.shutting_down = true;
            inner.state_cv.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        let sync_result = {
            let mut log = inner.log.lock();
            let r = match log.writer.as_mut() {
                Some(w) => inner.sync_closed_logs().and_then(|()| w.sync()),
                None => Ok(()),
            };
            log.writer = None;
            inner.closed_logs.lock().clear();
            r
        };
        inner.delete_obsolete_files();
        inner.lock.lock().take();
        let bg = inner.state.lock().bg_error.clone();
        flush_result?;
        sync_result?;

        match bg {
            Some(e) => Err(Error::ReadOnly { cause: Box::new(e) }),
            None => Ok(()),
        }
    }
}

impl Db {
    /// Stops the database the way an abrupt process exit would: background
    /// threads stop at their next check, nothing is flushed or synced, and
    /// the lock is released. Bytes already handed to the OS stay; with
    /// `MemFs::power_loss` a test can then drop the unsynced ones too.
    #[doc(hidden)]
    pub fn simulate_crash(self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
            // Stop the flush thread from draining the immutables first.
            st.bg_error.get_or_insert(Error::Closed);
            self.inner.state_cv.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        self.inner.log.lock().writer = None;
        self.inner.lock.lock().take();
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Starts WAL `number`: reuses the obsolete WAL `reuse` if given (renamed,
/// overwritten in place) or creates a file, makes the name durable, and
/// writes the start marker: an empty batch whose sequence is the last one
/// logged before this WAL (docs/format/wal.md, "Start marker").
fn new_log(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    number: u64,
    reuse: Option<u64>,
    last_logged_seq: SeqNo,
) -> Result<LogWriter> {
    let path = filename::log_file_name(dir, number);
    let mut w = match reuse {
        Some(old) => LogWriter::new(
            fs.reuse_writable(&filename::log_file_name(dir, old), &path)?,
            number,
        ),
        None => LogWriter::new(fs.create(&path)?, number).with_preallocate(WAL_PREALLOCATE),
    };
    fs.sync_dir(dir)?;
    let mut marker = WriteBatch::new();
    marker.set_sequence(last_logged_seq);
    w.add_record(marker.data())?;
    w.flush()?;
    Ok(w)
}

/// Writes a memtable to table `number` for `level` and syncs it; `None`
/// (and no file) when the memtable is empty. The caller syncs the directory.
fn build_table(
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

fn file_meta(number: u64, info: crate::sst::TableFileInfo) -> FileMeta {
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
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn current_sv(&self) -> Arc<SuperVersion> {
        self.sv.read().clone()
    }

    /// Installs a new super-version from the memtables in `st` and `version`.
    /// REQUIRES: `state` held (passed in as `st`).
    fn install_sv(&self, st: &State, version: Arc<Version>) {
        let sv = Arc::new(SuperVersion {
            mem: st.mem.clone(),
            imms: st.imms.iter().rev().map(|i| i.mem.clone()).collect(),
            version,
        });
        *self.sv.write() = sv;
    }

    fn set_bg_error(&self, e: Error) {
        let mut st = self.state.lock();
        if st.bg_error.is_none() {
            st.bg_error = Some(e);
        }
        self.state_cv.notify_all();
    }

    // ---------------------------------------------------------------- writes

    fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        struct Active<'a>(&'a AtomicUsize);
        impl Drop for Active<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.active_writers.fetch_add(1, Ordering::Relaxed);
        let _active = Active(&self.active_writers);
        let w = Arc::new(Writer {
            batch,
            opts: *opts,
            done: AtomicBool::new(false),
            leader: AtomicBool::new(false),
            result: Mutex::new(None),
            cv: Condvar::new(),
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
            // once: spinning would only take CPU from the leader.
            if ahead == 1 && !self.leader_syncing.load(Ordering::Acquire) {
                let t = Instant::now();
                while !ready() && t.elapsed() < WRITER_SPIN {
                    std::hint::spin_loop();
                }
            }
            if !ready() {
                let mut q = self.queue.lock();
                while !ready() {
                    w.cv.wait(&mut q);
                }
            }
        }
        if w.done.load(Ordering::Acquire) {
            return w.result.lock().take().unwrap_or(Ok(()));
        }

        // This writer leads a group: sequence numbers and the WAL record
        // under the log lock.
        let mut log = self.log.lock();
        let commit = self.write_group(&mut log, &w);
        drop(log);

        // An unsynced group passes leadership on at once, so the next
        // group's WAL append overlaps this group's memtable inserts. A synced
        // group passes it on with the wake-ups instead: the next leader
        // would otherwise start gathering its group while this group's
        // members are still asleep, wait out its gathering time for them,
        // and sync fewer writes (W2: 16 synced writers).
        let promote = |q: &mut VecDeque<Arc<Writer>>| {
            if let Some(next) = q.front() {
                next.leader.store(true, Ordering::Release);
                next.cv.notify_one();
            }
        };
        {
            let mut q = self.queue.lock();
            for m in &commit.group {
                let front = q.pop_front();
                debug_assert!(front.is_some_and(|f| Arc::ptr_eq(&f, m)));
            }
            if !commit.synced {
                promote(&mut q);
            }
        }
        let result = match &commit.mem {
            Ok(mem) => {
                if commit.count > 0 {
                    let mut seq = commit.first_seq;
                    for m in &commit.group {
                        seq += mem.insert_batch(&m.batch, seq);
                    }
                    debug_assert_eq!(seq, commit.first_seq + commit.count);
                    self.publish(commit.first_seq, commit.count);
                }
                Ok(())
            }
            Err(e) => Err(e.clone()),
        };

        // Hand results to the group (under `queue`, which a member holds
        // between checking its flag and sleeping).
        let mut q = self.queue.lock();
        for m in &commit.group {
            if !Arc::ptr_eq(m, &w) {
                *m.result.lock() = Some(result.clone());
                m.done.store(true, Ordering::Release);
                m.cv.notify_one();
            }
        }
        if commit.synced {
            promote(&mut q);
        }
        drop(q);
        result
    }

    /// Makes sequences `first_seq..first_seq + count` visible, after every
    /// earlier group's (their inserts may still be running on other
    /// threads; each takes microseconds and holds no lock).
    fn publish(&self, first_seq: SeqNo, count: u64) {
        let mut spins = 0u32;
        while self.last_seq.load(Ordering::Acquire) != first_seq - 1 {
            if spins < 64 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
        self.last_seq
            .store(first_seq + count - 1, Ordering::Release);
    }

    /// Waits until every assigned sequence number is published: no memtable
    /// insert is in flight. REQUIRES: `log` held (no new group starts).
    fn wait_for_inserts(&self, log: &LogState) {
        while self.last_seq.load(Ordering::Acquire) != log.last_assigned_seq {
            std::thread::yield_now();
        }
    }

    /// Logs a group led by `leader`: sequence numbers, one WAL record, at
    /// most one sync. The caller inserts into the memtable and publishes
    /// after releasing `log`.
    fn write_group(&self, log: &mut LogState, leader: &Arc<Writer>) -> GroupCommit {
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
        // the previous group may still be waking up to queue their next
        // write: give them the CPU for a few microseconds so this group
        // carries them too, instead of leaving them for the next sync.
        if leader.opts.sync {
            // At most half of what a sync costs on this device (measured),
            // so the wait can never cost more than the syncs it saves.
            let last_sync = Duration::from_micros(self.last_sync_micros.load(Ordering::Relaxed));
            let deadline = Instant::now() + SYNC_GATHER.min(last_sync / 2);
            while self.queue.lock().len() < self.active_writers.load(Ordering::Relaxed)
                && Instant::now() < deadline
            {
                std::thread::yield_now();
            }
        }
        // Assemble the group from the queue front.
        let group: Vec<Arc<Writer>> = {
            let q = self.queue.lock();
            let mut size = 0usize;
            let max = if leader.batch.size_in_bytes() <= 128 << 10 {
                leader.batch.size_in_bytes() + (128 << 10)
            } else {
                MAX_GROUP_BYTES
            };
            let mut g = Vec::new();
            for m in q.iter() {
                if m.opts.disable_wal != leader.opts.disable_wal {
                    break;
                }
                size += m.batch.size_in_bytes();
                if !g.is_empty() && size > max {
                    break;
                }
                g.push(m.clone());
            }
            g
        };
        let n = group.len();
        let first_seq = log.last_assigned_seq + 1;
        let mut scratch = std::mem::take(&mut log.scratch);
        scratch.clear();
        for m in &group {
            scratch.append(&m.batch);
        }
        scratch.set_sequence(first_seq);
        let count = scratch.count() as u64;
        let sync = group.iter().any(|m| m.opts.sync);
        let user_bytes: usize = group.iter().map(|m| m.batch.size_in_bytes()).sum();
        self.pace_if_slowed(log, l0_files, user_bytes);

        if count > 0 && !leader.opts.disable_wal {
            let r = (|| -> Result<()> {
                let w = log.writer.as_mut().ok_or(Error::Closed)?;
                if sync {
                    w.prepare_synced_record(scratch.data().len())?;
                }
                w.add_record(scratch.data())?;
                if sync {
                    self.leader_syncing.store(true, Ordering::Release);
                    let t = Instant::now();
                    let r = self.sync_closed_logs().and_then(|()| w.sync());
                    self.last_sync_micros
                        .store(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                    self.leader_syncing.store(false, Ordering::Release);
                    r?;
                    self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
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
            log.last_logged_seq = first_seq + count - 1;
        } else if count > 0 {
            mem.mark_unlogged();
        }
        if count > 0 {
            log.last_assigned_seq = first_seq + count - 1;
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

    /// While level 0 is at or above `level0_slowdown_writes_trigger`, paces
    /// write groups to `delayed_write_rate` bytes per second (a token bucket
    /// kept by the leader), so writers slow down smoothly and compaction
    /// catches up before the hard stop. `l0_files` is the level-0 file
    /// count `make_room_for_write` saw. REQUIRES: `log` held.
    fn pace_if_slowed(&self, log: &mut LogState, l0_files: usize, bytes: usize) {
        if l0_files < self.opts.level0_slowdown_writes_trigger {
            log.next_write_at = None;
            return;
        }
        let now = Instant::now();
        let cost = Duration::from_secs_f64(bytes as f64 / self.opts.delayed_write_rate as f64);
        let start = log.next_write_at.map_or(now, |t| t.max(now));
        let until = start + cost;
        log.next_write_at = Some(until);
        if until > now {
            std::thread::sleep(until - now);
            self.counters.slowdowns.fetch_add(1, Ordering::Relaxed);
            self.counters
                .stall_micros
                .fetch_add(now.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
    }

    /// Makes sure the mutable memtable has room, switching it (and the WAL)
    /// when full, delaying or stopping writes while background work is
    /// behind. With `force`, switches even when not full (unless empty).
    /// REQUIRES: `log` held. Returns the memtable to insert into and the
    /// level-0 file count it saw (for the slowdown).
    fn make_room_for_write(
        &self,
        log: &mut LogState,
        mut force: bool,
    ) -> Result<(Arc<MemTable>, usize)> {
        if force {
            // A forced switch (flush, compact_range, close) must see every
            // acknowledged-to-be write: a group that took its sequence
            // numbers but is still inserting would otherwise find the
            // memtable "empty" and be left out of the flush.
            self.wait_for_inserts(log);
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
            if !force && st.mem.approximate_memory_usage() < self.opts.write_buffer_size {
                return Ok((st.mem.clone(), l0));
            }
            if force && st.mem.is_empty() {
                return Ok((st.mem.clone(), l0));
            }
            if st.imms.len() + 1 >= self.opts.max_write_buffer_number
                || l0 >= self.opts.level0_stop_writes_trigger
            {
                // Wait for a flush or compaction to make room.
                let t = Instant::now();
                self.counters.stalls.fetch_add(1, Ordering::Relaxed);
                st.compaction_wanted = true;
                self.state_cv.notify_all();
                self.state_cv.wait_for(&mut st, Duration::from_millis(100));
                self.counters
                    .stall_micros
                    .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                continue;
            }
            drop(st);
            // The old memtable must be complete before it becomes
            // immutable (a flush may start on it at once).
            self.wait_for_inserts(log);
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
                let reuse = self.recycle_pool.lock().pop();
                new_log(&self.fs, &self.path, number, reuse, log.last_logged_seq)
            })();
            let writer = match fresh {
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
                Arc::new(MemTable::with_filter(self.opts.memtable_filter_bytes())),
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
    fn sync_closed_logs(&self) -> Result<()> {
        let mut closed = self.closed_logs.lock();
        while let Some((_, w)) = closed.first_mut() {
            w.sync()?;
            closed.remove(0);
        }
        Ok(())
    }

    // ----------------------------------------------------------------- reads

    fn read_seq(&self, opts: &ReadOptions) -> SeqNo {
        match &opts.snapshot {
            Some(s) => s.sequence(),
            None => self.last_seq.load(Ordering::Acquire),
        }
    }

    fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // The super-version first, then the sequence: every write at or
        // below a sequence read later is either in this super-version's
        // memtables and tables or in a newer memtable that holds only
        // newer writes (so the read is a consistent prefix). The other
        // order lets a flush and a compaction run in between and drop,
        // from the tables this read then searches, the version its older
        // sequence needs (Pebble's get.go makes the same argument).
        let sv = self.current_sv();
        self.hook(hooks::READ_BETWEEN);
        let seq = self.read_seq(opts);
        for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            match m.get(key, seq) {
                Some(MemGet::Value(v)) => return Ok(Some(v.to_vec())),
                Some(MemGet::Deleted) => return Ok(None),
                None => {}
            }
        }
        // The lookup key is built on the stack unless the key is long.
        let mut stack = [0u8; 256];
        let heap;
        let lk: &[u8] = if key.len() + TRAILER_LEN <= stack.len() {
            let n = key.len();
            stack[..n].copy_from_slice(key);
            stack[n..n + TRAILER_LEN]
                .copy_from_slice(&pack_trailer(seq, TYPE_FOR_SEEK).to_le_bytes());
            &stack[..n + TRAILER_LEN]
        } else {
            heap = lookup_key(key, seq);
            &heap
        };
        match sv
            .version
            .get(&self.table_cache, lk, !opts.fill_cache_off)?
        {
            Some(TableGet::Value(v)) => Ok(Some(v)),
            Some(TableGet::Deleted) | None => Ok(None),
        }
    }

    fn iter(&self, opts: &ReadOptions) -> DbIterator {
        // Super-version before sequence, as in `get`.
        let sv = self.current_sv();
        self.hook(hooks::READ_BETWEEN);
        let seq = self.read_seq(opts);
        let fill = !opts.fill_cache_off;
        let build = {
            let sv = sv.clone();
            let tables = self.table_cache.clone();
            move |prefix: Option<&[u8]>| -> Box<dyn InternalIterator> {
                let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
                children.push(Box::new(sv.mem.iter()));
                for m in &sv.imms {
                    children.push(Box::new(m.iter()));
                }
                match prefix {
                    Some(p) => children.extend(sv.version.prefix_iterators(&tables, fill, p)),
                    None => children.extend(sv.version.iterators(&tables, fill)),
                }
                Box::new(MergingIterator::new(children))
            }
        };
        let inner = build(None);
        let rebuild = (opts.prefix_same_as_start && self.opts.prefix_extractor.is_some())
            .then(|| Box::new(build) as crate::iter::db_iter::Rebuild);
        DbIterator::new(
            inner,
            seq,
            self.opts.prefix_extractor.clone(),
            opts,
            Box::new(sv),
            rebuild,
        )
    }

    // ------------------------------------------------------------ background

    fn flush(&self) -> Result<()> {
        {
            let mut log = self.log.lock();
            self.make_room_for_write(&mut log, true)?;
        }
        // Wait until every immutable memtable that existed is flushed.
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::ReadOnly {
                    cause: Box::new(e.clone()),
                });
            }
            if st.imms.is_empty() {
                return Ok(());
            }
            self.state_cv.notify_all();
            self.state_cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }

    fn flush_loop(self: &Arc<Self>) {
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
    fn flush_one(&self, imm: &Arc<MemTable>) -> Result<()> {
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
        self.delete_obsolete_files();
        Ok(())
    }

    /// Builds table `number` from a memtable, syncs it and its directory entry.
    fn build_table(
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

    fn compaction_loop(self: &Arc<Self>) {
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

    fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
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
            if let Some(e) = &self.state.lock().bg_error {
                return Err(Error::ReadOnly {
                    cause: Box::new(e.clone()),
                });
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
    fn run_compaction(&self, c: &Compaction) -> Result<bool> {
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
        Ok(true)
    }

    /// Merges a compaction's inputs into new tables at `out_level`.
    /// None when abandoned for shutdown.
    fn merge_inputs(&self, c: &Compaction, out_level: usize) -> Result<Option<Vec<FileMeta>>> {
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

    fn finish_output(&self, number: u64, b: OutputBuilder) -> Result<FileMeta> {
        Ok(file_meta(number, b.finish()?))
    }

    fn wal_sync_loop(self: &Arc<Self>) {
        let interval = self.opts.wal_sync_interval;
        loop {
            {
                let mut st = self.state.lock();
                if st.shutting_down {
                    return;
                }
                self.state_cv.wait_for(&mut st, interval);
                if st.shutting_down {
                    return;
                }
            }
            let mut log = self.log.lock();
            if let Some(w) = log.writer.as_mut() {
                if let Err(e) = self.sync_closed_logs().and_then(|()| w.sync()) {
                    drop(log);
                    self.set_bg_error(e);
                    return;
                }
                self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn wait_idle(&self) -> Result<()> {
        loop {
            {
                let st = self.state.lock();
                if let Some(e) = &st.bg_error {
                    return Err(Error::ReadOnly {
                        cause: Box::new(e.clone()),
                    });
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

    /// Deletes files no version or writer needs: old WALs and MANIFESTs,
    /// tables left by compactions or by a crash, temporaries.
    ///
    /// Clean-up only: a failure costs disk space, never correctness, so it
    /// is counted (`DbStats::obsolete_delete_failures`) and not returned.
    /// After a background error nothing is deleted until the database is
    /// reopened: a failed MANIFEST append or sync leaves it unknown whether
    /// the edit is on disk, so files it added or removed must all stay.
    fn delete_obsolete_files(&self) {
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

    // ------------------------------------------------------------ properties

    fn stats(&self) -> DbStats {
        let sv = self.current_sv();
        let c = &self.counters;
        let mut s = DbStats::default();
        for l in 0..NUM_LEVELS {
            s.files_per_level[l] = sv.version.num_files(l);
            s.bytes_per_level[l] = sv.version.level_bytes(l);
        }
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        s.user_bytes_written = ld(&c.user_bytes_written);
        s.wal_bytes_written = ld(&c.wal_bytes_written);
        s.wal_syncs = ld(&c.wal_syncs);
        s.write_groups = ld(&c.write_groups);
        s.writes = ld(&c.writes);
        s.flush_bytes_written = ld(&c.flush_bytes_written);
        s.flushes = ld(&c.flushes);
        s.compaction_bytes_read = ld(&c.compaction_bytes_read);
        s.compaction_bytes_written = ld(&c.compaction_bytes_written);
        s.compactions = ld(&c.compactions);
        s.trivial_moves = ld(&c.trivial_moves);
        s.stall_micros = ld(&c.stall_micros);
        s.stalls = ld(&c.stalls);
        s.slowdowns = ld(&c.slowdowns);
        s.obsolete_delete_failures = ld(&c.obsolete_delete_failures);
        if let Some(bc) = &self.block_cache {
            s.block_cache_hits = bc.hits();
            s.block_cache_misses = bc.misses();
            s.block_cache_usage = bc.usage();
        }
        s.zip_point_reads = ld(&self.zip_stats.point_reads);
        s.zip_point_read_bytes = ld(&self.zip_stats.point_read_bytes);
        s.zip_iter_groups = ld(&self.zip_stats.iter_groups);
        s.memtable_bytes = std::iter::once(&sv.mem)
            .chain(sv.imms.iter())
            .map(|m| m.approximate_memory_usage() as u64)
            .sum();
        s.immutable_memtables = sv.imms.len();
        s.last_sequence = self.last_seq.load(Ordering::Acquire);
        s.snapshots = self.snapshots.len();
        s
    }

    fn property(&self, name: &str) -> Option<String> {
        let p = name
            .strip_prefix("cairndb.")
            .or_else(|| name.strip_prefix("rocksdb."))?;
        let sv = self.current_sv();
        if let Some(l) = p.strip_prefix("num-files-at-level") {
            let l: usize = l.parse().ok()?;
            return (l < NUM_LEVELS).then(|| sv.version.num_files(l).to_string());
        }
        match p {
            "stats" => Some(format_stats(&self.stats())),
            "levelstats" => {
                let mut out = String::from("Level Files Size(MB)\n--------------------\n");
                for l in 0..NUM_LEVELS {
                    out.push_str(&format!(
                        "{l:>5} {:>5} {:>8.1}\n",
                        sv.version.num_files(l),
                        sv.version.level_bytes(l) as f64 / 1048576.0
                    ));
                }
                Some(out)
            }
            "sstables" => {
                let mut out = String::new();
                for l in 0..NUM_LEVELS {
                    out.push_str(&format!("--- level {l} ---\n"));
                    for f in &sv.version.files[l] {
                        out.push_str(&format!(
                            " {}:{}[{:?} .. {:?}] seq {}..{}\n",
                            f.number,
                            f.size,
                            String::from_utf8_lossy(f.smallest_user_key()),
                            String::from_utf8_lossy(f.largest_user_key()),
                            f.smallest_seq,
                            f.largest_seq
                        ));
                    }
                }
                Some(out)
            }
            "estimate-num-keys" => {
                let mut n: u64 = std::iter::once(&sv.mem)
                    .chain(sv.imms.iter())
                    .map(|m| m.len() as u64)
                    .sum();
                for f in sv.version.files.iter().flatten() {
                    if let Ok(t) = self.table_cache.get(f.number) {
                        n += t.properties().num_entries;
                    }
                }
                Some(n.to_string())
            }
            "cur-size-all-mem-tables" => Some(self.stats().memtable_bytes.to_string()),
            "num-immutable-mem-table" => Some(sv.imms.len().to_string()),
            "block-cache-usage" => Some(
                self.block_cache
                    .as_ref()
                    .map_or(0, |c| c.usage())
                    .to_string(),
            ),
            "num-snapshots" => Some(self.snapshots.len().to_string()),
            "total-sst-files-size" => Some(
                (0..NUM_LEVELS)
                    .map(|l| sv.version.level_bytes(l))
                    .sum::<u64>()
                    .to_string(),
            ),
            "last-sequence" => Some(self.last_seq.load(Ordering::Acquire).to_string()),
            _ => None,
        }
    }
}

/// The multi-line text of the `stats` property.
pub fn format_stats(s: &DbStats) -> String {
    let mut out = String::new();
    out.push_str("** Compaction Stats **\nLevel  Files   Size(MB)\n");
    for l in 0..NUM_LEVELS {
        out.push_str(&format!(
            "  L{l}  {:>5} {:>10.2}\n",
            s.files_per_level[l],
            s.bytes_per_level[l] as f64 / 1048576.0
        ));
    }
    let mb = |b: u64| b as f64 / 1048576.0;
    out.push_str(&format!(
        "User writes: {} in {} groups, {:.2} MB; WAL {:.2} MB, {} syncs\n",
        s.writes,
        s.write_groups,
        mb(s.user_bytes_written),
        mb(s.wal_bytes_written),
        s.wal_syncs
    ));
    out.push_str(&format!(
        "Flush: {} flushes, {:.2} MB written\n",
        s.flushes,
        mb(s.flush_bytes_written)
    ));
    out.push_str(&format!(
        "Compaction: {} compactions ({} trivial moves), {:.2} MB read, {:.2} MB written\n",
        s.compactions,
        s.trivial_moves,
        mb(s.compaction_bytes_read),
        mb(s.compaction_bytes_written)
    ));
    out.push_str(&format!(
        "Write amplification: {:.2}\n",
        s.write_amplification()
    ));
    out.push_str(&format!(
        "Stalls: {} stops, {} slowdowns, {:.3} s stalled\n",
        s.stalls,
        s.slowdowns,
        s.stall_micros as f64 / 1e6
    ));
    let lookups = s.block_cache_hits + s.block_cache_misses;
    out.push_str(&format!(
        "Block cache: {:.2} MB used, {} hits, {} misses, hit rate {:.1}%\n",
        mb(s.block_cache_usage),
        s.block_cache_hits,
        s.block_cache_misses,
        if lookups == 0 {
            0.0
        } else {
            100.0 * s.block_cache_hits as f64 / lookups as f64
        }
    ));
    if s.zip_point_reads > 0 || s.zip_iter_groups > 0 {
        out.push_str(&format!(
            "Zip tables: {} point reads, {:.0} bytes decompressed per point read; {} groups decoded by iterators\n",
            s.zip_point_reads,
            s.zip_point_read_bytes as f64 / s.zip_point_reads.max(1) as f64,
            s.zip_iter_groups
        ));
    }
    out.push_str(&format!(
        "Memtables: {:.2} MB, {} immutable; last sequence {}; {} snapshots\n",
        mb(s.memtable_bytes),
        s.immutable_memtables,
        s.last_sequence,
        s.snapshots
    ));
    out
}
