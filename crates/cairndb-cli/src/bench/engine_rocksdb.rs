//! RocksDB behind the benchmark [`Engine`] trait (feature `rocksdb`): the
//! `rocksdb` crate 0.23.0 (bindings from RocksDB 9.9.3's C API) linked
//! dynamically against the release RocksDB 9.10.0 library in
//! shared/peers/rocksdb-9.10.0 (see build.rs), with db_bench flags mapped to
//! the RocksDB options of the same names.
//!
//! `--transaction_db` opens a `TransactionDB` with db_bench's
//! `TransactionDBOptions()` (16 lock stripes, no lock limit, 1 s
//! timeouts), and every write goes through `TransactionDB::Write`/`Put`
//! (each batch an internal transaction locking its keys), as in db_bench.
//! `--optimistic_transaction_db` opens an `OptimisticTransactionDB`
//! (default options: parallel validation) whose plain writes go to the
//! base DB. Benchmark transactions get db_bench's `TransactionOptions`:
//! lock timeout `--transaction_lock_timeout`, deadlock detection off.
//! rust-rocksdb 0.23 has no flush or manual compaction on a
//! `TransactionDB`: those benchmarks fail there with a message.

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, CompactOptions, DBAccess,
    DBCompressionType, DBRawIteratorWithThreadMode, MultiThreaded, OptimisticTransactionDB,
    OptimisticTransactionOptions, Options, ReadOptions, Transaction, TransactionDB,
    TransactionDBOptions, TransactionOptions, WriteBatchWithTransaction, WriteOptions, DB,
};

use super::engine::{not_applicable_notes, EResult, Engine, EngineIter, Op};
use super::flags::{Flags, TxnMode};
use super::txn::{EngineTxn, TResult, TxnDb, TxnError};

/// Which RocksDB database the engine opened.
enum Rdb {
    Plain(DB),
    Pessimistic(TransactionDB<MultiThreaded>),
    Optimistic(OptimisticTransactionDB),
}

/// An open RocksDB database.
pub struct RocksEngine {
    db: Rdb,
    wo: WriteOptions,
    /// Benchmark transactions' options, without and with a snapshot at
    /// begin.
    topts: [TransactionOptions; 2],
    otopts: [OptimisticTransactionOptions; 2],
}

fn es(e: rocksdb::Error) -> String {
    e.to_string()
}

/// A RocksDB status in the benchmark's classes.
fn txn_err(e: rocksdb::Error) -> TxnError {
    use rocksdb::ErrorKind as K;
    let m = e.to_string();
    match e.kind() {
        K::Busy => TxnError::Busy(m),
        K::TimedOut => TxnError::TimedOut(m),
        K::TryAgain => TxnError::TryAgain(m),
        K::Expired => TxnError::Expired(m),
        _ => TxnError::Other(m),
    }
}

/// The `TransactionDBOptions` db_bench opens with (the library's defaults,
/// spelled out).
fn txn_db_options() -> TransactionDBOptions {
    let mut o = TransactionDBOptions::new();
    o.set_max_num_locks(-1);
    o.set_num_stripes(16);
    o.set_txn_lock_timeout(1000);
    o.set_default_lock_timeout(1000);
    o
}

/// db_bench's benchmark `TransactionOptions`.
fn txn_options(f: &Flags, snapshot: bool) -> TransactionOptions {
    let mut o = TransactionOptions::new();
    o.set_snapshot(snapshot);
    o.set_deadlock_detect(false);
    o.set_lock_timeout(f.transaction_lock_timeout as i64);
    o
}

fn optimistic_options(snapshot: bool) -> OptimisticTransactionOptions {
    let mut o = OptimisticTransactionOptions::new();
    o.set_snapshot(snapshot);
    o
}

/// RocksDB's compression type for the value of `--{flag}`; a name RocksDB
/// does not know is noted and maps to none.
fn rocks_compression(flag: &str, name: &str, notes: &mut Vec<String>) -> DBCompressionType {
    match name {
        "none" => DBCompressionType::None,
        "snappy" => DBCompressionType::Snappy,
        "zlib" => DBCompressionType::Zlib,
        "bzip2" => DBCompressionType::Bz2,
        "lz4" => DBCompressionType::Lz4,
        "lz4hc" => DBCompressionType::Lz4hc,
        s if s.starts_with("zstd") => DBCompressionType::Zstd,
        other => {
            notes.push(format!("--{flag}={other}: unknown to RocksDB, using none"));
            DBCompressionType::None
        }
    }
}

impl RocksEngine {
    /// Opens (creating) the database at `path` with db_bench's option mapping.
    pub fn open(path: &Path, f: &Flags, notes: &mut Vec<String>) -> EResult<RocksEngine> {
        not_applicable_notes(f, "rocksdb", notes);
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(f.write_buffer_size as usize);
        o.set_max_write_buffer_number(f.max_write_buffer_number as i32);
        if let Some(b) = f.bytes_per_sync {
            o.set_bytes_per_sync(b);
        }
        if let Some(n) = f.recycle_log_file_num {
            o.set_recycle_log_file_num(n);
        }
        o.set_level_zero_file_num_compaction_trigger(f.level0_file_num_compaction_trigger as i32);
        o.set_level_zero_slowdown_writes_trigger(f.level0_slowdown_writes_trigger as i32);
        o.set_level_zero_stop_writes_trigger(f.level0_stop_writes_trigger as i32);
        o.set_max_bytes_for_level_base(f.max_bytes_for_level_base);
        o.set_max_bytes_for_level_multiplier(f.max_bytes_for_level_multiplier);
        o.set_target_file_size_base(f.target_file_size_base);
        o.set_max_background_jobs(f.max_background_jobs as i32);
        if f.max_background_compactions > 0 {
            #[allow(deprecated)]
            o.set_max_background_compactions(f.max_background_compactions as i32);
        }
        o.set_max_open_files(f.open_files as i32);
        // db_bench applies its defaults (0, false: no memtable filter); so
        // does this engine when the flags are left out.
        o.set_memtable_prefix_bloom_ratio(f.memtable_bloom_size_ratio.unwrap_or(0.0));
        o.set_memtable_whole_key_filtering(f.memtable_whole_key_filtering.unwrap_or(false));
        let comp = rocks_compression("compression_type", &f.compression_type, notes);
        o.set_compression_type(comp);
        // Integrated BlobDB, with db_bench's flag names and meanings (the
        // file workload has no db_bench binary to run, so this engine is
        // RocksDB's side of the blob comparisons there).
        o.set_enable_blob_files(f.enable_blob_files);
        o.set_min_blob_size(f.min_blob_size);
        o.set_blob_file_size(f.blob_file_size);
        o.set_blob_compression_type(rocks_compression(
            "blob_compression_type",
            &f.blob_compression_type,
            notes,
        ));
        o.set_enable_blob_gc(f.enable_blob_garbage_collection);
        o.set_blob_gc_age_cutoff(f.blob_garbage_collection_age_cutoff);
        o.set_blob_gc_force_threshold(f.blob_garbage_collection_force_threshold);
        o.set_blob_compaction_readahead_size(f.blob_compaction_readahead_size);
        if f.use_blob_cache || f.prepopulate_blob_cache != 0 {
            notes.push(
                "--use_blob_cache/--prepopulate_blob_cache: not mapped for --engine=rocksdb; \
                 it runs without a blob cache (its db_bench binary has one)"
                    .into(),
            );
        }
        if f.statistics {
            o.enable_statistics();
        }
        let mut bbo = BlockBasedOptions::default();
        bbo.set_block_size(f.block_size);
        bbo.set_block_restart_interval(f.block_restart_interval as i32);
        if f.cache_size > 0 {
            let cache = Cache::new_lru_cache(f.cache_size as usize);
            bbo.set_block_cache(&cache);
        } else {
            bbo.disable_cache();
        }
        if f.bloom_bits > 0 {
            bbo.set_bloom_filter(f.bloom_bits as f64, false);
        }
        o.set_block_based_table_factory(&bbo);
        let db = match f.txn_mode() {
            TxnMode::None => Rdb::Plain(DB::open(&o, path).map_err(es)?),
            TxnMode::Pessimistic => Rdb::Pessimistic(
                TransactionDB::<MultiThreaded>::open(&o, &txn_db_options(), path).map_err(es)?,
            ),
            TxnMode::Optimistic => {
                Rdb::Optimistic(OptimisticTransactionDB::open(&o, path).map_err(es)?)
            }
        };
        let mut wo = WriteOptions::default();
        wo.set_sync(f.sync);
        wo.disable_wal(f.disable_wal);
        Ok(RocksEngine {
            db,
            wo,
            topts: [txn_options(f, false), txn_options(f, true)],
            otopts: [optimistic_options(false), optimistic_options(true)],
        })
    }
}

/// Evaluates `$e` with `$db` bound to whichever database is open.
macro_rules! with_db {
    ($self:expr, $db:ident => $e:expr) => {
        match &$self.db {
            Rdb::Plain($db) => $e,
            Rdb::Pessimistic($db) => $e,
            Rdb::Optimistic($db) => $e,
        }
    };
}

const NO_TXN_DB_MAINTENANCE: &str = "rust-rocksdb 0.23 has no flush or manual compaction on \
    a TransactionDB (--transaction_db with --engine=rocksdb)";

/// The RocksDB library this binary loaded: its version, as the library
/// itself writes it into a database's LOG at open ("RocksDB version: X";
/// the C API has no version call), and the file it was loaded from (from
/// /proc/self/maps), e.g. `9.10.0 (/work/shared/peers/rocksdb-9.10.0/librocksdbjni-linux64.so)`.
pub fn library_version() -> String {
    let version = (|| {
        let dir = tempfile::Builder::new()
            .prefix("cairndb-rocksdb-version-")
            .tempdir()
            .ok()?;
        let mut o = Options::default();
        o.create_if_missing(true);
        drop(DB::open(&o, dir.path()).ok()?);
        let log = std::fs::read_to_string(dir.path().join("LOG")).ok()?;
        log_version(&log)
    })()
    .unwrap_or_else(|| "unknown".into());
    let file = std::fs::read_to_string("/proc/self/maps")
        .ok()
        .and_then(|maps| {
            maps.lines()
                .filter_map(|l| l.split_whitespace().nth(5))
                .find(|p| {
                    p.rsplit('/')
                        .next()
                        .is_some_and(|n| n.starts_with("librocksdb"))
                })
                .map(String::from)
        });
    match file {
        Some(p) => format!("{version} ({p})"),
        None => format!("{version} (linked statically)"),
    }
}

/// The version in a RocksDB LOG's "RocksDB version: 9.10.0" line.
fn log_version(log: &str) -> Option<String> {
    log.lines().find_map(|l| {
        let (_, v) = l.split_once("RocksDB version: ")?;
        Some(v.trim().to_string())
    })
}

struct RocksIter<'a, D: DBAccess>(DBRawIteratorWithThreadMode<'a, D>);

impl<D: DBAccess> EngineIter for RocksIter<'_, D> {
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
        self.0.key().unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.0.value().unwrap_or(&[])
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

impl Engine for RocksEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> EResult<()> {
        with_db!(self, db => db.put_opt(key, value, &self.wo)).map_err(es)
    }
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        with_db!(self, db => Ok(db.get_pinned(key).map_err(es)?.map(|v| v.to_vec())))
    }
    fn delete(&self, key: &[u8]) -> EResult<()> {
        with_db!(self, db => db.delete_opt(key, &self.wo)).map_err(es)
    }
    fn write(&self, ops: &[Op<'_>]) -> EResult<()> {
        fn batch<const T: bool>(ops: &[Op<'_>]) -> WriteBatchWithTransaction<T> {
            let mut b = WriteBatchWithTransaction::<T>::default();
            for op in ops {
                match op {
                    Op::Put(k, v) => b.put(k, v),
                    Op::Delete(k) => b.delete(k),
                }
            }
            b
        }
        match &self.db {
            Rdb::Plain(db) => db.write_opt(batch(ops), &self.wo),
            // TransactionDB::Write: the batch's keys locked for the write.
            Rdb::Pessimistic(db) => db.write_opt(batch(ops), &self.wo),
            // OptimisticTransactionDB::Write: the base DB's write.
            Rdb::Optimistic(db) => db.write_opt(batch(ops), &self.wo),
        }
        .map_err(es)
    }
    fn iter(&self) -> EResult<Box<dyn EngineIter + '_>> {
        Ok(with_db!(self, db => Box::new(RocksIter(db.raw_iterator()))))
    }
    fn flush(&self) -> EResult<()> {
        match &self.db {
            Rdb::Plain(db) => db.flush().map_err(es),
            Rdb::Optimistic(db) => db.flush().map_err(es),
            Rdb::Pessimistic(_) => Err(NO_TXN_DB_MAINTENANCE.into()),
        }
    }
    fn compact(&self) -> EResult<()> {
        // db_bench's `compact` is CompactRange over everything. Flush first,
        // force the bottommost level to be rewritten too (the default skips
        // it without a compaction filter, leaving its tombstones and
        // overwritten versions), and wait for what the compaction triggers.
        let mut co = CompactOptions::default();
        co.set_exclusive_manual_compaction(true);
        co.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        match &self.db {
            Rdb::Plain(db) => {
                db.flush().map_err(es)?;
                db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &co);
            }
            Rdb::Optimistic(db) => {
                db.flush().map_err(es)?;
                db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &co);
            }
            Rdb::Pessimistic(_) => return Err(NO_TXN_DB_MAINTENANCE.into()),
        }
        self.wait_for_compactions()
    }
    fn wait_for_compactions(&self) -> EResult<()> {
        loop {
            let (pending, running) = with_db!(self, db => (
                db.property_int_value("rocksdb.compaction-pending").map_err(es)?,
                db.property_int_value("rocksdb.num-running-compactions").map_err(es)?,
            ));
            if pending.unwrap_or(0) == 0 && running.unwrap_or(0) == 0 {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    fn stats(&self) -> String {
        with_db!(self, db => db.property_value("rocksdb.stats"))
            .ok()
            .flatten()
            .unwrap_or_default()
    }
    fn close(&self) -> EResult<()> {
        match &self.db {
            Rdb::Plain(db) => db.flush_wal(true).map_err(es),
            Rdb::Optimistic(db) => db.flush_wal(true).map_err(es),
            // No flush_wal on a TransactionDB; dropping it closes it.
            Rdb::Pessimistic(_) => Ok(()),
        }
    }
    fn transactions(&self) -> Option<&dyn TxnDb> {
        match self.db {
            Rdb::Plain(_) => None,
            _ => Some(self),
        }
    }
}

/// One RocksDB transaction and the read options of its reads.
struct RocksTxn<'a, D> {
    t: Transaction<'a, D>,
    /// Reads at the transaction's snapshot (set when it began with one).
    at_snapshot: Option<ReadOptions>,
    /// Reads at the latest state (made on first use).
    latest: Option<ReadOptions>,
}

impl<'a, D> RocksTxn<'a, D> {
    fn new(t: Transaction<'a, D>, snapshot: bool) -> Self {
        let at_snapshot = snapshot.then(|| {
            let mut ro = ReadOptions::default();
            // The read options keep the transaction's C++ snapshot, which
            // lives as long as the transaction; the wrapper `snapshot()`
            // allocates is freed here.
            ro.set_snapshot(&t.snapshot());
            ro
        });
        RocksTxn {
            t,
            at_snapshot,
            latest: None,
        }
    }
}

impl<D> EngineTxn for RocksTxn<'_, D> {
    fn renew_snapshot(&mut self) {
        // The C API has no Transaction::SetSnapshot: the snapshot taken at
        // begin stays (docs/bench/transactions.md).
    }
    fn get(
        &mut self,
        key: &[u8],
        for_update: bool,
        at_snapshot: bool,
        buf: &mut Vec<u8>,
    ) -> TResult<bool> {
        let ro = match (&self.at_snapshot, at_snapshot) {
            (Some(ro), true) => ro,
            _ => self.latest.get_or_insert_with(ReadOptions::default),
        };
        let v = if for_update {
            self.t.get_pinned_for_update_opt(key, true, ro)
        } else {
            self.t.get_pinned_opt(key, ro)
        }
        .map_err(txn_err)?;
        buf.clear();
        match v {
            Some(v) => {
                buf.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn delete(&mut self, key: &[u8]) -> TResult<()> {
        self.t.delete(key).map_err(txn_err)
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> TResult<()> {
        self.t.put(key, value).map_err(txn_err)
    }
    fn commit(self: Box<Self>) -> TResult<()> {
        let RocksTxn { t, .. } = *self;
        t.commit().map_err(txn_err)
    }
    fn rollback(self: Box<Self>) -> TResult<()> {
        self.t.rollback().map_err(txn_err)
    }
}

impl TxnDb for RocksEngine {
    fn mode(&self) -> TxnMode {
        match self.db {
            Rdb::Plain(_) => TxnMode::None,
            Rdb::Pessimistic(_) => TxnMode::Pessimistic,
            Rdb::Optimistic(_) => TxnMode::Optimistic,
        }
    }
    fn begin(&self, snapshot: bool) -> Box<dyn EngineTxn + '_> {
        let i = usize::from(snapshot);
        match &self.db {
            Rdb::Pessimistic(db) => Box::new(RocksTxn::new(
                db.transaction_opt(&self.wo, &self.topts[i]),
                snapshot,
            )),
            Rdb::Optimistic(db) => Box::new(RocksTxn::new(
                db.transaction_opt(&self.wo, &self.otopts[i]),
                snapshot,
            )),
            Rdb::Plain(_) => unreachable!("transactions() is None for a plain database"),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_version_from_the_log() {
        let log = "2025/01/01-00:00:00.000000 7f RocksDB version: 9.10.0\n\
                   2025/01/01-00:00:00.000001 7f Compile date 2024-12-12 00:00:00\n";
        assert_eq!(super::log_version(log).as_deref(), Some("9.10.0"));
        assert_eq!(super::log_version("nothing"), None);
    }

    #[test]
    fn the_loaded_library_is_the_release_build() {
        let v = super::library_version();
        assert!(v.starts_with("9.10."), "loaded RocksDB {v}, expected 9.10");
    }
}
