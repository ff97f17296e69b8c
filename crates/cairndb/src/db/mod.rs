//! The database: open and recovery, the write path, reads, and the
//! background flush and compaction threads.
//!
//! ## Threads
//! Callers write and read on their own threads. One background thread
//! flushes immutable memtables to level 0; one compacts; one deletes the
//! files a flush made obsolete (`obsolete.rs`). `compact_range`
//! runs its compactions on the calling thread, serialized with the
//! background compactor by `compaction_lock`, which it holds across all its
//! passes.
//!
//! ## Locks
//! Outermost first: a lock may be taken while holding only locks above
//! it in this table, and only those its row names (`docs/design.md` has
//! the same table). Every other lock in the engine (table cache, blob file
//! cache, block cache, memtable arena, snapshot list, info log) is a leaf:
//! nothing is taken under it.
//!
//! | lock | protects | held across I/O | taken under it |
//! |---|---|---|---|
//! | `compaction_lock` | one compaction at a time (background, or every pass of a `compact_range`) | yes: the whole compaction | `gc_lock`, `versions`, `state`, `pending_outputs`, `obsolete_tables`, `obsolete_blobs`, `sv` |
//! | `gc_lock` | one file collection at a time; changes of the deletion pin (`disable_file_deletions`) | yes: listing, unlinks | `state`, `recycle_pool`, `pending_outputs`, `versions`, `closed_logs`, `obsolete_tables`, `obsolete_blobs` |
//! | `log` | the WAL writer, the mutable memtable's identity, sequence assignment | yes: WAL append and sync (the group-commit point), a switch's new WAL, table reads of an optimistic commit's conflict check | `state`, `sv` (read), `pipeline.queue`, `closed_logs`, `recycle_pool`, `prepared` |
//! | `versions` | the version set, MANIFEST | yes: MANIFEST append and sync | `state`, `sv`, `pending_outputs`, `obsolete_tables`, `obsolete_blobs` |
//! | `state` | memtables, background error, flags (with `state_cv`) | no | `sv` |
//! | `pipeline.queue` | the writer queue and leader hand-off | no | none |
//! | `closed_logs` | WALs switched out unsynced | yes: their fdatasync | none |
//! | `recycle_pool` | WAL numbers kept for reuse | yes: the rename that reuses one (under `log`) | none |
//! | `pending_outputs` | table and blob file numbers being written | no | none |
//! | `obsolete_tables` | tables dropped from the current version | no | none |
//! | `obsolete_blobs` | blob files dropped from the current version | no | none |
//! | `prepared` | prepared two-phase-commit transactions (taken under `log`) | no | none |
//! | `sv` (RwLock) | the published super-version | no | none |
//!
//! `log` and `versions` are never held together, nor `log` and
//! `compaction_lock` or `gc_lock`. Stall waits sleep on `state_cv` holding
//! `log` (every writer waits behind a stall anyway). Event listeners run
//! with no lock held except: stall callbacks (under `log`) and compaction
//! callbacks, blob file events of compactions included (under
//! `compaction_lock`); see `events.rs`. The background
//! error callback runs under whatever the failing operation held (`log` for
//! a failed WAL write), and a call that returns the error to its caller
//! first waits for that callback to finish, never while holding `log`.
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
//!   hold refers to it; so is a blob file (a version lists the blob files
//!   its tables refer to, `docs/format/blob.md`).
//! * Only tables hold blob references: the WAL and memtables hold values.

pub mod checkpoint;
mod commit;
mod compact;
mod durable;
pub mod events;
mod flush;
pub(crate) mod hooks;
mod obsolete;
mod open;
pub(crate) mod pipeline;
mod read;
pub mod snapshot;
pub use durable::WalPosition;
mod stats;
mod sv_cache;
#[cfg(test)]
mod tests;
mod wal_files;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::batch::WriteBatch;
use crate::blob::BlobCache;
use crate::cache::table_cache::TableCache;
use crate::cache::BlockCache;
use crate::compaction::{self, Compaction, DropFilter};
use crate::env::{FileLock, Fs};
use crate::error::{Error, Result};
use crate::filename::{self, FileType};
use crate::iter::db_iter::DbIterator;
use crate::iter::merge::MergingIterator;
use crate::iter::InternalIterator;
use crate::key::{
    lookup_key, pack_trailer, user_key, SeqNo, ValueType, MAX_SEQ, TRAILER_LEN, TYPE_FOR_SEEK,
};
use crate::memtable::{MemGet, MemTable};
use crate::options::{
    BlobCacheConfig, Options, PrepopulateBlobCache, ReadOptions, WalRecoveryMode, WriteOptions,
    NUM_LEVELS,
};
use crate::sst::{OutputBuilder, ZipMemBudget, ZipStats};
use crate::version::set::VersionSet;
use crate::version::{BlobFileMeta, FileMeta, Version, VersionEdit};
use crate::wal::LogWriter;
use pipeline::CommitPipeline;
use snapshot::{Snapshot, SnapshotList};
use stats::Counters;
pub use stats::{format_stats, DbStats};

/// What readers see: the memtables and the version, swapped as one.
pub(crate) struct SuperVersion {
    mem: Arc<MemTable>,
    /// Newest first.
    imms: Vec<Arc<MemTable>>,
    version: Arc<Version>,
    /// `version.max_seq()`: every write newer than this is in a memtable.
    tables_max_seq: SeqNo,
    /// Counts installs: what `sv_cache` checks a thread's reference by.
    gen: u64,
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
    /// The thread telling the listeners about `bg_error`, until it has.
    /// Calls that return the error to the user wait for this to clear, so
    /// a listener has seen the error before any caller does.
    bg_reporting: Option<std::thread::ThreadId>,
    /// The thread telling the listeners about a flush it has installed
    /// (its blob files, then the flush), until it has. `flush` and
    /// `wait_idle` wait for this to clear, so that a listener has seen a
    /// flush before the call that waited for it returns.
    flush_reporting: Option<std::thread::ThreadId>,
    shutting_down: bool,
    compaction_wanted: bool,
    /// A flush asked the purge thread to delete obsolete files
    /// (`obsolete.rs`).
    purge_wanted: bool,
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
    /// Groups assigned but perhaps not yet published (inserts in flight),
    /// oldest first, as (last sequence, members): what an optimistic
    /// conflict check must count as written without waiting for those
    /// inserts. Kept once `tracking_in_flight` is set (by the first group
    /// that carried a conflict check); pruned as groups publish.
    in_flight: VecDeque<(SeqNo, Vec<Arc<pipeline::Writer>>)>,
    tracking_in_flight: bool,
    /// While writes are slowed: when the next group may be written.
    next_write_at: Option<Instant>,
    /// While writes are slowed: since when (for the stall events).
    slowed_since: Option<Instant>,
    /// The threads of the last synced group: the next synced group's
    /// leader waits (briefly) for them to queue their next writes.
    last_synced_group: Vec<std::thread::ThreadId>,
}

impl LogState {
    /// Forgets the in-flight groups whose sequences are all published.
    fn drop_published(&mut self, published: SeqNo) {
        while self
            .in_flight
            .front()
            .is_some_and(|(last, _)| *last <= published)
        {
            self.in_flight.pop_front();
        }
    }
}

pub(crate) struct DbInner {
    path: PathBuf,
    opts: Options,
    fs: Arc<dyn Fs>,
    lock: Mutex<Option<Box<dyn FileLock>>>,
    table_cache: Arc<TableCache>,
    /// Open blob files (`docs/format/blob.md`).
    blob_cache: Arc<BlobCache>,
    block_cache: Option<Arc<BlockCache>>,
    /// Working memory of zip table builds (`ZipTableOptions::hard_working_mem_limit`).
    zip_budget: Arc<ZipMemBudget>,
    /// Point-read counters of zip tables, shared with the table cache.
    zip_stats: Arc<ZipStats>,
    /// The writer queue and the published sequence (`last_seq`).
    pipeline: CommitPipeline,
    /// WAL positions logged and synced, and their waiters (`durable.rs`).
    durability: durable::Durability,
    log: Mutex<LogState>,
    compaction_lock: Mutex<()>,
    versions: Mutex<VersionSet>,
    state: Mutex<State>,
    state_cv: Condvar,
    sv: RwLock<Arc<SuperVersion>>,
    /// Per-thread references to `sv` for point reads (`sv_cache.rs`).
    sv_cache: sv_cache::SvCache,
    next_file: Arc<AtomicU64>,
    snapshots: Arc<SnapshotList>,
    pending_outputs: Mutex<HashSet<u64>>,
    /// Obsolete WAL numbers whose files are kept for reuse. A switch pops
    /// one and renames it under the lock; the collector alone adds to it,
    /// deciding under the lock with no I/O, so a file is never both reused
    /// and deleted (see `delete_obsolete_files`).
    recycle_pool: Mutex<Vec<u64>>,
    /// WALs switched out under `PointInTimeRecovery` without a sync:
    /// `(number, writer)`. Every sync (a synced group, `sync_wal`, the
    /// interval sync, `close`) syncs these first, so a synced write never
    /// sits behind an unsynced hole; the collector drops the ones whose
    /// memtable has been flushed.
    closed_logs: Mutex<Vec<(u64, LogWriter)>>,
    obsolete_tables: Mutex<Vec<Arc<FileMeta>>>,
    /// Blob files that left the current version; kept while an older
    /// version (so a reader) still holds their `Arc`.
    obsolete_blobs: Mutex<Vec<Arc<BlobFileMeta>>>,
    /// Prepared transactions not yet committed or rolled back: name ->
    /// their prepare record. Every WAL starts with these records, so the
    /// newest WAL (always replayed) holds all of them. Changed only under
    /// `log`, after the record that prepares or decides one is written.
    prepared: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    gc_lock: Mutex<()>,
    /// `disable_file_deletions` calls not yet undone; while nonzero the
    /// collector deletes nothing (`checkpoint.rs`). Changed under `gc_lock`.
    deletions_disabled: AtomicU64,
    closed: AtomicBool,
    counters: Counters,
    /// The info log and the event listeners.
    events: events::Events,
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
    /// The directory of this database.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Sets `key` to `value`.
    pub fn put(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::put_bytes(key.len(), value.len()));
        b.put(key, value);
        self.write(opts, b)
    }

    /// Removes `key`.
    pub fn delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::delete_bytes(key.len()));
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

    /// Copies the value of `key` into `buf` (cleared first; its capacity
    /// is reused, so a loop of reads allocates nothing once `buf` is large
    /// enough); returns false when the key has no value.
    pub fn get_into(&self, opts: &ReadOptions, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        self.inner.check_open()?;
        self.inner.get_into(opts, key, buf)
    }

    /// The sequence number of the last published write.
    pub fn last_sequence(&self) -> u64 {
        self.inner.pipeline.last_seq()
    }

    /// `write` with an optimistic transaction's conflict check (see
    /// `DbInner::write_checked`).
    pub(crate) fn write_checked(
        &self,
        opts: &WriteOptions,
        batch: WriteBatch,
        check: Option<pipeline::ConflictCheck>,
    ) -> Result<()> {
        self.inner.check_open()?;
        batch.check_sizes()?;
        self.inner.write_checked(opts, batch, check)
    }

    /// The newest sequence number of `key` if newer than `since` (see
    /// `DbInner::latest_seq`).
    /// Installs a one-shot test hook (see `hooks.rs`).
    #[cfg(test)]
    pub(crate) fn set_hook(&self, point: &'static str, f: impl FnOnce(&DbInner) + Send + 'static) {
        self.inner.hooks.set(point, f);
    }

    pub(crate) fn inner_latest_seq(&self, key: &[u8], since: SeqNo) -> Result<Option<SeqNo>> {
        self.inner.check_open()?;
        self.inner.latest_seq(key, Some(since))
    }

    /// The prepared two-phase-commit transactions not yet decided:
    /// (name, prepare batch).
    pub(crate) fn undecided_prepared(&self) -> Result<Vec<(Vec<u8>, WriteBatch)>> {
        let path = filename::log_file_name(&self.inner.path, 0);
        self.inner
            .prepared
            .lock()
            .iter()
            .map(|(name, rec)| Ok((name.clone(), WriteBatch::from_data(rec, &path, 0)?)))
            .collect()
    }

    pub(crate) fn prefix_extractor(&self) -> Option<Arc<dyn crate::options::SliceTransform>> {
        self.inner.opts.prefix_extractor.clone()
    }

    /// A snapshot of the current state, for reads and iterators.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.hook(hooks::SNAPSHOT);
        // The sequence is read under the snapshot list's lock (see
        // `SnapshotList::create`).
        self.inner
            .snapshots
            .create(|| self.inner.pipeline.last_seq())
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
        if let Some(e) = self.inner.reported_bg_error(&mut self.inner.state.lock()) {
            // After a failed write or sync, a sync cannot vouch for what
            // came before it.
            return Err(e);
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
                    self.inner.durability.fail(e.clone());
                    return Err(e);
                }
                self.inner
                    .counters
                    .wal_syncs
                    .fetch_add(1, Ordering::Relaxed);
                let logged = self.inner.durability.logged();
                self.inner.durability.mark_synced(logged);
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
    /// `total-sst-files-size`, `last-sequence`, `num-blob-files`,
    /// `total-blob-file-size`, `live-blob-file-size`,
    /// `live-blob-file-garbage-size` (blob sizes are record bytes,
    /// `docs/format/blob.md`), `blob-cache-usage`.
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
        inner.durability.stop_syncer();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        let sync_result = {
            let mut log = inner.log.lock();
            let r = match log.writer.as_mut() {
                // Sealed, so that a database closed under a recycling
                // recovery mode opens under a strict one: a recycled WAL's
                // stale tail would read as damage there.
                Some(w) => inner
                    .sync_closed_logs()
                    .and_then(|()| w.seal())
                    .and_then(|()| w.sync()),
                None => Ok(()),
            };
            if r.is_ok() && inner.state.lock().bg_error.is_none() {
                inner.durability.mark_synced(inner.durability.logged());
            }
            log.writer = None;
            inner.closed_logs.lock().clear();
            r
        };
        inner.durability.close();
        // No WAL is opened after this point, so the pooled ones are dead
        // bytes: a closed database keeps no recycled WAL, and the next
        // open's first flushes fill the pool again.
        inner.recycle_pool.lock().clear();
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
        self.inner.durability.close();
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
        let mut cur = self.sv.write();
        let gen = cur.gen + 1;
        *cur = Arc::new(SuperVersion {
            mem: st.mem.clone(),
            imms: st.imms.iter().rev().map(|i| i.mem.clone()).collect(),
            tables_max_seq: version.max_seq(),
            version,
            gen,
        });
        drop(cur);
        self.sv_cache.invalidate(gen);
    }

    fn set_bg_error(&self, e: Error) {
        {
            let mut st = self.state.lock();
            if st.bg_error.is_some() {
                return;
            }
            st.bg_error = Some(e.clone());
            st.bg_reporting = Some(std::thread::current().id());
            self.state_cv.notify_all();
        }
        // Outside `state`: a listener may read from the database.
        self.events.background_error(&e);
        let mut st = self.state.lock();
        st.bg_reporting = None;
        self.state_cv.notify_all();
    }

    /// The background error as returned to a caller (`Error::ReadOnly`), once
    /// the listeners have been told of it (see `State::bg_reporting`); `None`
    /// while the database is writable. REQUIRES: `state` held (as `st`); it
    /// may be released and retaken while waiting.
    fn reported_bg_error(&self, st: &mut parking_lot::MutexGuard<'_, State>) -> Option<Error> {
        st.bg_error.as_ref()?;
        let me = std::thread::current().id();
        while st.bg_reporting.is_some_and(|t| t != me) {
            self.state_cv.wait(st);
        }
        st.bg_error
            .clone()
            .map(|e| Error::ReadOnly { cause: Box::new(e) })
    }

    // ---------------------------------------------------------------- writes

    // ----------------------------------------------------------------- reads

    // ------------------------------------------------------------ background

    // ------------------------------------------------------------ properties
}
