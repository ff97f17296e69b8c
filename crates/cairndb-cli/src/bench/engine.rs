//! The storage-engine abstraction the benchmarks drive (put, get, delete,
//! write batch, iterate, seek, flush, compact, stats, and transactions
//! through [`TxnDb`]), its CairnDB implementation, and the mapping of
//! db_bench flags onto CairnDB options.
//!
//! With `--transaction_db` CairnDB opens a `TransactionDb` and every write
//! of [`Engine`] goes through `TransactionDb::write` (its keys locked for
//! the write, as db_bench's writes through RocksDB's `TransactionDB`);
//! with `--optimistic_transaction_db` an `OptimisticTransactionDb`, whose
//! plain writes go to the database directly (as db_bench's go to the base
//! DB). Reads, iterators and maintenance always use the underlying `Db`.

use std::path::Path;
use std::time::Duration;

use cairndb::{
    BlobCacheConfig, CompressionType, Db, OptimisticTransactionDb, Options, PrepopulateBlobCache,
    ReadOptions, TableFormat, TransactionDb, TransactionDbOptions, TransactionOptions, WriteBatch,
    WriteOptions, ZipTableOptions,
};

use super::flags::{Flags, TxnMode};
use super::txn::{EngineTxn, TResult, TxnDb, TxnError};

/// Errors from an engine, as text.
pub type EResult<T> = Result<T, String>;

/// One operation of a write batch.
pub enum Op<'a> {
    /// Insert or overwrite.
    Put(&'a [u8], &'a [u8]),
    /// Remove.
    Delete(&'a [u8]),
}

/// An ordered cursor over the whole database.
pub trait EngineIter {
    /// Positions at the first key.
    fn seek_to_first(&mut self);
    /// Positions at the last key.
    fn seek_to_last(&mut self);
    /// Positions at the first key >= `key`.
    fn seek(&mut self, key: &[u8]);
    /// True while positioned on an entry.
    fn valid(&self) -> bool;
    /// The current key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
    /// Steps forward.
    fn next(&mut self);
    /// Steps backward.
    fn prev(&mut self);
    /// The first error met, if any.
    fn status(&self) -> EResult<()>;
}

/// A key-value store under benchmark. Shared by the benchmark threads.
pub trait Engine: Send + Sync {
    /// Writes one key.
    fn put(&self, key: &[u8], value: &[u8]) -> EResult<()>;
    /// Reads one key.
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>>;
    /// Reads one key into `buf` (replacing its contents); true when found.
    /// What the read benchmarks call: an engine with a non-allocating read
    /// (CairnDB's `get_into`, RocksDB's `PinnableSlice`) overrides it.
    fn get_into(&self, key: &[u8], buf: &mut Vec<u8>) -> EResult<bool> {
        Ok(match self.get(key)? {
            Some(v) => {
                buf.clear();
                buf.extend_from_slice(&v);
                true
            }
            None => false,
        })
    }
    /// Deletes one key.
    fn delete(&self, key: &[u8]) -> EResult<()>;
    /// Applies a batch atomically.
    fn write(&self, ops: &[Op<'_>]) -> EResult<()>;
    /// A new iterator.
    fn iter(&self) -> EResult<Box<dyn EngineIter + '_>>;
    /// Flushes the memtable.
    fn flush(&self) -> EResult<()>;
    /// Compacts the whole key range.
    fn compact(&self) -> EResult<()>;
    /// Waits until background compactions are done.
    fn wait_for_compactions(&self) -> EResult<()>;
    /// The engine's statistics, as text.
    fn stats(&self) -> String;
    /// Closes cleanly (flushing what must be flushed).
    fn close(&self) -> EResult<()>;
    /// The engine as a transaction database, when it was opened as one
    /// (`--transaction_db`, `--optimistic_transaction_db`).
    fn transactions(&self) -> Option<&dyn TxnDb> {
        None
    }
}

/// CairnDB options for db_bench flags, with a note for each flag mapped loosely.
pub fn cairndb_options(f: &Flags, notes: &mut Vec<String>) -> Result<Options, String> {
    let compression = match f.compression_type.as_str() {
        "snappy" | "zlib" | "bzip2" | "xpress" => {
            notes.push(format!(
                "--compression_type={}: mapped to lz4 (CairnDB carries none, lz4, zstd)",
                f.compression_type
            ));
            CompressionType::Lz4
        }
        other => CompressionType::parse(other).map_err(|e| format!("--compression_type: {e}"))?,
    };
    // Left out (negative): each engine's own default. CairnDB's is a
    // 10-bit bloom filter per key; RocksDB's and LevelDB's are none.
    let bloom = if f.bloom_bits < 0 {
        Options::default().bloom_bits_per_key
    } else {
        f.bloom_bits as u32
    };
    // --max_background_jobs/--max_background_compactions configure
    // --engine=rocksdb only: CairnDB runs one flush and one compaction thread.
    let mut opts = Options {
        write_buffer_size: f.write_buffer_size as usize,
        max_write_buffer_number: f.max_write_buffer_number.max(2),
        bytes_per_sync: f
            .bytes_per_sync
            .unwrap_or(Options::default().bytes_per_sync),
        recycle_log_file_num: f
            .recycle_log_file_num
            .unwrap_or(Options::default().recycle_log_file_num),
        level0_file_num_compaction_trigger: f.level0_file_num_compaction_trigger.max(1) as usize,
        level0_slowdown_writes_trigger: f.level0_slowdown_writes_trigger.max(1) as usize,
        level0_stop_writes_trigger: f.level0_stop_writes_trigger.max(1) as usize,
        max_bytes_for_level_base: f.max_bytes_for_level_base,
        max_bytes_for_level_multiplier: f.max_bytes_for_level_multiplier,
        target_file_size_base: f.target_file_size_base,
        block_size: f.block_size,
        block_restart_interval: f.block_restart_interval,
        block_cache_size: f.cache_size.max(0) as usize,
        bloom_bits_per_key: bloom,
        compression,
        max_open_files: if f.open_files < 0 {
            usize::MAX
        } else {
            (f.open_files as usize).max(20)
        },
        ..Options::default()
    };
    if let Some(r) = f.memtable_bloom_size_ratio {
        opts.memtable_prefix_bloom_size_ratio = r;
    }
    opts.hash_index = f.hash_index.unwrap_or(f.use_plain_table);
    opts.idle_compaction_io = f.idle_compaction_io;
    opts.memtable_hash_index = f.hash_memtable;
    if f.use_plain_table && !f.block_restart_interval_set {
        opts.block_restart_interval = 1;
    }
    opts.enable_blob_files = f.enable_blob_files;
    opts.min_blob_size = f.min_blob_size;
    opts.blob_file_size = f.blob_file_size;
    opts.blob_compression_type = match f.blob_compression_type.as_str() {
        "snappy" | "zlib" | "bzip2" | "xpress" => CompressionType::Lz4,
        other => {
            CompressionType::parse(other).map_err(|e| format!("--blob_compression_type: {e}"))?
        }
    };
    opts.enable_blob_garbage_collection = f.enable_blob_garbage_collection;
    opts.blob_garbage_collection_age_cutoff = f.blob_garbage_collection_age_cutoff;
    opts.blob_garbage_collection_force_threshold = f.blob_garbage_collection_force_threshold;
    opts.blob_compaction_readahead_size = f.blob_compaction_readahead_size;
    opts.blob_cache = match (f.use_blob_cache, f.use_shared_block_and_blob_cache) {
        (false, _) => BlobCacheConfig::Disabled,
        (true, true) => {
            if opts.block_cache_size == 0 {
                return Err(
                    "--use_blob_cache with --use_shared_block_and_blob_cache needs a block cache (--cache_size > 0)"
                        .into(),
                );
            }
            BlobCacheConfig::SharedWithBlockCache
        }
        (true, false) => BlobCacheConfig::Dedicated(f.blob_cache_size as usize),
    };
    opts.prepopulate_blob_cache = if f.prepopulate_blob_cache == 1 {
        PrepopulateBlobCache::FlushOnly
    } else {
        PrepopulateBlobCache::Disable
    };
    if let Some(b) = f.write_buffer_index_size {
        opts.write_buffer_index_size = b as usize;
    }
    if let Some(m) = f.mmap_read {
        opts.mmap_reads = m;
    }
    if let Some(w) = f.memtable_whole_key_filtering {
        opts.memtable_whole_key_filtering = w;
    }
    opts.zip = ZipTableOptions {
        dict_size: f.zip_dict_size,
        sample_ratio: f.zip_sample_ratio,
        group_size: f.zip_group_size,
        compression_level: f.zip_level,
        format_version: f.zip_format_version,
        min_match: f.zip_min_match,
        level_trial_gain: f.zip_level_gain,
        read_ahead_on_open: f.zip_read_ahead,
        ..ZipTableOptions::default()
    };
    if f.table_format == TableFormat::Zip {
        opts.set_zip_from_level(f.zip_from_level);
    }
    if f.cairndb_only_set
        .iter()
        .any(|n| n.starts_with("zip_") || n == "table_format")
    {
        notes.push(table_format_note(&opts));
    }
    if f.max_write_buffer_number < 2 {
        notes.push("--max_write_buffer_number: CairnDB needs at least 2; using 2".into());
    }
    opts.validate().map_err(|e| e.to_string())?;
    Ok(opts)
}

/// Describes the table formats and zip tuning `opts` carries, as mapped
/// from `--table_format` and `--zip_*`.
pub fn table_format_note(opts: &Options) -> String {
    let levels: Vec<&str> = (0..cairndb::NUM_LEVELS)
        .map(|l| match opts.table_format_for_level(l) {
            TableFormat::BlockBased => "block",
            TableFormat::Zip => "zip",
        })
        .collect();
    let z = &opts.zip;
    format!(
        "--table_format/--zip_*: mapped to Options::table_format_per_level = [{}], \
         Options::zip = {{ format_version: {}, dict_size: {}, group_size: {}, sample_ratio: {}, compression_level: {}, min_match: {}, level_trial_gain: {} }}",
        levels.join(", "),
        z.format_version,
        z.dict_size,
        z.group_size,
        z.sample_ratio,
        z.compression_level,
        z.min_match,
        z.level_trial_gain
    )
}

/// Notes, one per flag, for the CairnDB-only flags given to another engine.
#[cfg(any(feature = "rocksdb", feature = "leveldb"))]
pub fn not_applicable_notes(f: &Flags, engine: &str, notes: &mut Vec<String>) {
    for name in &f.cairndb_only_set {
        notes.push(format!(
            "--{name}: not applicable to {engine} (a CairnDB-only flag); ignored"
        ));
    }
}

/// Which CairnDB database the engine opened.
enum Flavor {
    Plain(Db),
    Pessimistic(TransactionDb),
    Optimistic(OptimisticTransactionDb),
}

/// CairnDB behind the [`Engine`] trait.
pub struct CairnEngine {
    flavor: Flavor,
    wo: WriteOptions,
    ro: ReadOptions,
    /// Options of every transaction the benchmarks begin, without and
    /// with a snapshot at begin.
    topts: [TransactionOptions; 2],
}

/// The transaction database options db_bench opens RocksDB's
/// `TransactionDB` with (`TransactionDBOptions()`: 16 lock stripes, no
/// lock limit, 1 s lock timeouts); CairnDB's defaults are the same.
pub fn cairndb_txn_db_options() -> TransactionDbOptions {
    TransactionDbOptions {
        max_num_locks: 0,
        num_stripes: 16,
        transaction_lock_timeout: Duration::from_millis(1000),
        default_lock_timeout: Duration::from_millis(1000),
    }
}

/// The options of a benchmark transaction: db_bench's `TransactionOptions`
/// with `lock_timeout = --transaction_lock_timeout`, which leave deadlock
/// detection off (a deadlock ends in a lock timeout, as in RocksDB).
pub fn cairndb_txn_options(f: &Flags, snapshot: bool) -> TransactionOptions {
    TransactionOptions {
        set_snapshot: snapshot,
        deadlock_detect: false,
        lock_timeout: Some(Duration::from_millis(f.transaction_lock_timeout)),
        ..TransactionOptions::default()
    }
}

impl CairnEngine {
    /// Opens (creating) the database at `path`, as a transaction database
    /// when the flags ask for one.
    pub fn open(path: &Path, f: &Flags, notes: &mut Vec<String>) -> EResult<CairnEngine> {
        let opts = cairndb_options(f, notes)?;
        let flavor = match f.txn_mode() {
            TxnMode::None => Flavor::Plain(Db::open(path, opts).map_err(es)?),
            TxnMode::Pessimistic => Flavor::Pessimistic(
                TransactionDb::open(path, opts, cairndb_txn_db_options()).map_err(es)?,
            ),
            TxnMode::Optimistic => {
                Flavor::Optimistic(OptimisticTransactionDb::open(path, opts).map_err(es)?)
            }
        };
        Ok(CairnEngine {
            flavor,
            wo: WriteOptions {
                sync: f.sync,
                disable_wal: f.disable_wal,
            },
            ro: ReadOptions::default(),
            topts: [cairndb_txn_options(f, false), cairndb_txn_options(f, true)],
        })
    }

    /// The underlying database.
    fn db(&self) -> &Db {
        match &self.flavor {
            Flavor::Plain(db) => db,
            Flavor::Pessimistic(t) => t.db(),
            Flavor::Optimistic(t) => t.db(),
        }
    }
}

/// A CairnDB error in RocksDB's status classes (a deadlock is RocksDB's
/// `Busy` with subcode `kDeadlock`).
fn txn_err(e: cairndb::Error) -> TxnError {
    match e {
        cairndb::Error::Busy { .. } | cairndb::Error::Deadlock { .. } => {
            TxnError::Busy(e.to_string())
        }
        cairndb::Error::TimedOut { .. } => TxnError::TimedOut(e.to_string()),
        other => TxnError::Other(other.to_string()),
    }
}

struct CairnTxn<'a> {
    t: cairndb::Transaction,
    ro: &'a ReadOptions,
}

impl EngineTxn for CairnTxn<'_> {
    fn renew_snapshot(&mut self) {
        self.t.set_snapshot();
    }
    fn get(
        &mut self,
        key: &[u8],
        for_update: bool,
        _at_snapshot: bool,
        buf: &mut Vec<u8>,
    ) -> TResult<bool> {
        // A CairnDB transaction with a snapshot reads at it unless the
        // read options name another, so `at_snapshot` = false reads there
        // too (docs/bench/transactions.md).
        if for_update {
            self.t.get_for_update_into(self.ro, key, true, buf)
        } else {
            self.t.get_into(self.ro, key, buf)
        }
        .map_err(txn_err)
    }
    fn delete(&mut self, key: &[u8]) -> TResult<()> {
        self.t.delete(key).map_err(txn_err)
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> TResult<()> {
        self.t.put(key, value).map_err(txn_err)
    }
    fn commit(mut self: Box<Self>) -> TResult<()> {
        self.t.commit().map_err(txn_err)
    }
    fn rollback(mut self: Box<Self>) -> TResult<()> {
        self.t.rollback().map_err(txn_err)
    }
}

impl TxnDb for CairnEngine {
    fn mode(&self) -> TxnMode {
        match self.flavor {
            Flavor::Plain(_) => TxnMode::None,
            Flavor::Pessimistic(_) => TxnMode::Pessimistic,
            Flavor::Optimistic(_) => TxnMode::Optimistic,
        }
    }
    fn begin(&self, snapshot: bool) -> Box<dyn EngineTxn + '_> {
        let topts = &self.topts[usize::from(snapshot)];
        let t = match &self.flavor {
            Flavor::Pessimistic(db) => db.begin(&self.wo, topts),
            Flavor::Optimistic(db) => db.begin(&self.wo, topts),
            Flavor::Plain(_) => unreachable!("transactions() is None for a plain database"),
        };
        Box::new(CairnTxn { t, ro: &self.ro })
    }
}

fn es(e: cairndb::Error) -> String {
    e.to_string()
}

struct CairnIter(cairndb::DbIterator);

impl EngineIter for CairnIter {
    fn seek_to_first(&mut self) {
        self.0.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.0.seek_to_last()
    }
    fn seek(&mut self, key: &[u8]) {
        self.0.seek(key)
    }
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn key(&self) -> &[u8] {
        self.0.key()
    }
    fn value(&self) -> &[u8] {
        self.0.value()
    }
    fn next(&mut self) {
        self.0.next()
    }
    fn prev(&mut self) {
        self.0.prev()
    }
    fn status(&self) -> EResult<()> {
        self.0.status().map_err(es)
    }
}

impl Engine for CairnEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> EResult<()> {
        match &self.flavor {
            Flavor::Pessimistic(t) => t.put(&self.wo, key, value),
            _ => self.db().put(&self.wo, key, value),
        }
        .map_err(es)
    }
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        self.db().get(&self.ro, key).map_err(es)
    }
    fn get_into(&self, key: &[u8], buf: &mut Vec<u8>) -> EResult<bool> {
        self.db().get_into(&self.ro, key, buf).map_err(es)
    }
    fn delete(&self, key: &[u8]) -> EResult<()> {
        match &self.flavor {
            Flavor::Pessimistic(t) => t.delete(&self.wo, key),
            _ => self.db().delete(&self.wo, key),
        }
        .map_err(es)
    }
    fn write(&self, ops: &[Op<'_>]) -> EResult<()> {
        // Sized up front, as db_bench's reused batch never grows.
        let bytes = ops
            .iter()
            .map(|op| match op {
                Op::Put(k, v) => WriteBatch::put_bytes(k.len(), v.len()),
                Op::Delete(k) => WriteBatch::delete_bytes(k.len()),
            })
            .sum();
        let mut b = WriteBatch::with_capacity(bytes);
        for op in ops {
            match op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
            }
        }
        match &self.flavor {
            Flavor::Pessimistic(t) => t.write(&self.wo, b),
            _ => self.db().write(&self.wo, b),
        }
        .map_err(es)
    }
    fn iter(&self) -> EResult<Box<dyn EngineIter + '_>> {
        Ok(Box::new(CairnIter(self.db().iter(&self.ro).map_err(es)?)))
    }
    fn flush(&self) -> EResult<()> {
        self.db().flush().map_err(es)
    }
    fn compact(&self) -> EResult<()> {
        // compact_range flushes the memtable and rewrites every level top
        // down, synchronously; then let any compaction it triggered finish.
        self.db().compact_range(None, None).map_err(es)?;
        self.db().wait_for_compactions().map_err(es)
    }
    fn wait_for_compactions(&self) -> EResult<()> {
        self.db().wait_for_compactions().map_err(es)
    }
    fn stats(&self) -> String {
        self.db()
            .property("cairndb.stats")
            .unwrap_or_else(|| cairndb::format_stats(&self.db().stats()))
    }
    fn close(&self) -> EResult<()> {
        self.db().close().map_err(es)
    }
    fn transactions(&self) -> Option<&dyn TxnDb> {
        match self.flavor {
            Flavor::Plain(_) => None,
            _ => Some(self),
        }
    }
}
