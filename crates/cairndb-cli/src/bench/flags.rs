//! The gflags-style command line of `cairndb bench`: RocksDB db_bench 7.8's
//! flag names, meanings and defaults, plus the db_bench flags that have no
//! meaning here (accepted, and named once on stderr as ignored or mapped).
//!
//! Syntax as gflags accepts it: `--flag=value`, `-flag=value`, `--flag value`
//! (non-boolean flags), and for booleans `--flag`, `--flag=true|false|1|0`,
//! `--noflag`.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Every flag name RocksDB db_bench 7.8.3 defines (from `db_bench --help`).
const DBBENCH_FLAGS: &str = include_str!("dbbench_7_8_flags.txt");

/// Flags some seed command lines use that older db_bench versions had.
const LEGACY_FLAGS: &[&str] = &["writes_per_second", "hard_rate_limit", "disable_data_sync"];

/// Boolean flags of db_bench that we accept as `--flag` / `--noflag`
/// even though they are ignored (so `--mmap_read` alone parses).
const IGNORED_BOOLS: &[&str] = &[
    "mmap_write",
    "disable_seek_compaction",
    "disable_data_sync",
    "verify_checksum",
    "stats_per_interval",
    "use_fsync",
    "cache_index_and_filter_blocks",
    "disable_auto_compactions",
    "level_compaction_dynamic_level_bytes",
    "use_direct_reads",
    "use_direct_io_for_flush_and_compaction",
    "optimize_filters_for_hits",
    "pin_l0_filter_and_index_blocks_in_cache",
    "reverse_iterator",
    "use_tailing_iterator",
    "finish_after_writes",
];

/// Ignored db_bench flags with a known nearest CairnDB counterpart.
const MAPPED: &[(&str, &str)] = &[
    (
        "open_files",
        "mapped to Options::max_open_files (-1 = usize::MAX: no bound, readers pinned to their files)",
    ),
    (
        "max_background_flushes",
        "ignored: CairnDB runs one flush and one compaction thread",
    ),
    (
        "cache_numshardbits",
        "ignored: the block cache shards itself",
    ),
    (
        "verify_checksum",
        "ignored: CairnDB always verifies block checksums",
    ),
    (
        "wal_dir",
        "ignored: the WAL lives in the database directory",
    ),
    ("num_levels", "ignored: CairnDB has a fixed 7 levels"),
    (
        "memtablerep",
        "prefix_hash, hash_skiplist, hash_linkedlist: mapped to Options::memtable_hash_index (the skiplist memtable plus a hash index from user key to its newest entry); skip_list, vector and others: the skiplist alone",
    ),
    (
        "use_plain_table",
        "mapped to Options::hash_index (block-based tables with a whole-table hash index over their keys, RocksDB's plain table's use) and, unless --block_restart_interval is given, a restart interval of 1 (no key prefix sharing, as in a plain table)",
    ),
    (
        "min_level_to_compress",
        "ignored: --compression_type applies to every level",
    ),
    (
        "mmap_read",
        "mapped to Options::mmap_reads (left out, CairnDB uses true: LevelDB's default)",
    ),
    (
        "memtable_bloom_size_ratio",
        "mapped to Options::memtable_prefix_bloom_size_ratio (whole-key filter; left out, CairnDB uses 0.02)",
    ),
    (
        "memtable_whole_key_filtering",
        "mapped to Options::memtable_whole_key_filtering (left out, CairnDB uses true)",
    ),
    (
        "max_bytes_for_level_multiplier",
        "mapped to Options::max_bytes_for_level_multiplier",
    ),
    (
        "block_restart_interval",
        "mapped to Options::block_restart_interval",
    ),
    (
        "enable_blob_files",
        "mapped to Options::enable_blob_files (--engine=cairndb and --engine=rocksdb, which maps the blob flags but the cache ones to its own options; leveldb ignores them)",
    ),
    ("min_blob_size", "mapped to Options::min_blob_size"),
    ("blob_file_size", "mapped to Options::blob_file_size"),
    (
        "blob_compression_type",
        "mapped to Options::blob_compression_type (snappy, zlib, bzip2, xpress: lz4)",
    ),
    (
        "enable_blob_garbage_collection",
        "mapped to Options::enable_blob_garbage_collection",
    ),
    (
        "blob_garbage_collection_age_cutoff",
        "mapped to Options::blob_garbage_collection_age_cutoff",
    ),
    (
        "blob_garbage_collection_force_threshold",
        "mapped to Options::blob_garbage_collection_force_threshold",
    ),
    (
        "blob_compaction_readahead_size",
        "mapped to Options::blob_compaction_readahead_size",
    ),
    (
        "use_blob_cache",
        "mapped to Options::blob_cache (with --use_shared_block_and_blob_cache, default true: SharedWithBlockCache, the --cache_size cache; otherwise Dedicated(--blob_cache_size))",
    ),
    (
        "use_shared_block_and_blob_cache",
        "mapped to Options::blob_cache (see --use_blob_cache)",
    ),
    (
        "blob_cache_size",
        "mapped to Options::blob_cache = Dedicated(N) (with --use_blob_cache and --nouse_shared_block_and_blob_cache)",
    ),
    (
        "prepopulate_blob_cache",
        "mapped to Options::prepopulate_blob_cache (0: Disable, 1: FlushOnly)",
    ),
    (
        "blob_cache_numshardbits",
        "ignored: the blob cache shards itself",
    ),
    (
        "transaction_sleep",
        "ignored: db_bench defines it but never reads it",
    ),
    (
        "writes",
        "counts randomtransaction's operations (with --reads, as db_bench does); \
         the fill and overwrite benchmarks write --num keys",
    ),
];

/// What one value of `--benchmarks` names.
pub const BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "filluniquerandom",
    "fillsync",
    "overwrite",
    "readrandom",
    "readseq",
    "readreverse",
    "seekrandom",
    "readwhilewriting",
    "readrandomwriterandom",
    "updaterandom",
    "deleterandom",
    "randomtransaction",
    "flush",
    "compact",
    "waitforcompaction",
    "stats",
    "fillfile",
    "readfile",
    "readfileseq",
    "dirsize",
];

/// The benchmarks of the file workload (`--datafile` / `--keyfile`); db_bench
/// has none of them.
pub const FILE_BENCHMARKS: &[&str] = &["fillfile", "readfile", "readfileseq"];

/// Benchmarks of ours that RocksDB's db_bench does not know.
pub const EXTENSION_BENCHMARKS: &[&str] = &["fillfile", "readfile", "readfileseq", "dirsize"];

/// Flags of ours (not db_bench's) that only CairnDB can honour; named on
/// stderr as not applicable when given to another engine.
pub const CAIRNDB_ONLY_FLAGS: &[&str] = &[
    "table_format",
    "zip_from_level",
    "zip_dict_size",
    "zip_group_size",
    "zip_sample_ratio",
    "zip_level",
    "zip_format_version",
    "zip_min_match",
    "zip_level_gain",
    "zip_read_ahead",
    "write_buffer_index_size",
    "hash_index",
    "idle_compaction_io",
];

/// The benchmarks `cairndb bench` runs when `--benchmarks` is not given:
/// fill every key once, in random order, then read keys back at random and
/// scan all of them, checking that every read finds its key.
pub const DEFAULT_BENCHMARKS: &str = "filluniquerandom,readrandom,readseq";

/// Which database flavour `--transaction_db` / `--optimistic_transaction_db`
/// open (db_bench: when both are given, optimistic wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnMode {
    /// A plain database.
    None,
    /// RocksDB's `TransactionDB`: row locks (CairnDB's `TransactionDb`).
    Pessimistic,
    /// RocksDB's `OptimisticTransactionDB`: a conflict check at commit
    /// (CairnDB's `OptimisticTransactionDb`).
    Optimistic,
}

/// The parsed flags. Field names and defaults are db_bench 7.8's.
#[derive(Debug, Clone)]
pub struct Flags {
    /// `--benchmarks`.
    pub benchmarks: Vec<String>,
    /// True when `--benchmarks` was not given (the default run verifies reads).
    pub default_benchmarks: bool,
    /// `--num`.
    pub num: u64,
    /// True when `--num` was given on the command line (the file benchmarks
    /// read it as "all records / all keys" otherwise).
    pub num_set: bool,
    /// `--reads` (negative: `num`).
    pub reads: i64,
    /// `--writes` (negative: unset). Only randomtransaction counts by it.
    pub writes: i64,
    /// `--threads`.
    pub threads: usize,
    /// `--duration` in seconds (0: `num`/`reads` decide).
    pub duration: u64,
    /// `--key_size`.
    pub key_size: usize,
    /// `--value_size`.
    pub value_size: usize,
    /// `--compression_type`.
    pub compression_type: String,
    /// `--compression_ratio`.
    pub compression_ratio: f64,
    /// `--db` (None: a temporary directory removed afterwards).
    pub db: Option<PathBuf>,
    /// `--use_existing_db`.
    pub use_existing_db: bool,
    /// `--sync`.
    pub sync: bool,
    /// `--disable_wal`.
    pub disable_wal: bool,
    /// `--write_buffer_size`.
    pub write_buffer_size: u64,
    /// `--max_write_buffer_number`.
    pub max_write_buffer_number: usize,
    /// `--bytes_per_sync`, when given (db_bench's default 0 is not applied:
    /// left out, each engine keeps its own default, which for CairnDB is
    /// 1 MiB, `Options::bytes_per_sync`).
    pub bytes_per_sync: Option<u64>,
    /// `--recycle_log_file_num`, when given (left out, each engine keeps
    /// its own default: `Options::recycle_log_file_num` for CairnDB). Also
    /// taken by the in-process RocksDB engine; RocksDB 9.10's `db_bench`
    /// does not define it, so `compare` leaves it out there with a note.
    pub recycle_log_file_num: Option<usize>,
    /// `--cache_size` (negative: no cache).
    pub cache_size: i64,
    /// `--write_buffer_index_size` (CairnDB only; `None`: the engine default).
    pub write_buffer_index_size: Option<u64>,
    /// `--bloom_bits` (negative: the engine default, which for RocksDB and
    /// db_bench is no filter; 0 disables).
    pub bloom_bits: i32,
    /// `--block_size`.
    pub block_size: usize,
    /// `--histogram`.
    pub histogram: bool,
    /// `--writes_per_second` (older db_bench): writer pace in ops/sec.
    pub writes_per_second: u64,
    /// `--benchmark_write_rate_limit`: writer pace in bytes/sec.
    pub benchmark_write_rate_limit: u64,
    /// `--seed` (0: derived from the clock).
    pub seed: u64,
    /// `--prefix_size`.
    pub prefix_size: usize,
    /// `--keys_per_prefix`.
    pub keys_per_prefix: u64,
    /// `--batch_size` / `--entries_per_batch`.
    pub entries_per_batch: usize,
    /// `--level0_file_num_compaction_trigger`.
    pub level0_file_num_compaction_trigger: i64,
    /// `--level0_slowdown_writes_trigger`.
    pub level0_slowdown_writes_trigger: i64,
    /// `--level0_stop_writes_trigger`.
    pub level0_stop_writes_trigger: i64,
    /// `--max_bytes_for_level_base`.
    pub max_bytes_for_level_base: u64,
    /// `--max_bytes_for_level_multiplier`.
    pub max_bytes_for_level_multiplier: f64,
    /// `--target_file_size_base`.
    pub target_file_size_base: u64,
    /// `--max_background_compactions` (-1: unset; `--engine=rocksdb` only).
    pub max_background_compactions: i64,
    /// `--max_background_jobs` (`--engine=rocksdb` only).
    pub max_background_jobs: i64,
    /// `--open_files` (-1: unlimited).
    pub open_files: i64,
    /// `--block_restart_interval`.
    pub block_restart_interval: usize,
    /// `--statistics`.
    pub statistics: bool,
    /// `--stats_interval_seconds`.
    pub stats_interval_seconds: u64,
    /// `--seek_nexts`.
    pub seek_nexts: u64,
    /// `--readwritepercent` for readrandomwriterandom.
    pub readwritepercent: u64,
    /// `--transaction_db`: open a pessimistic transaction database; every
    /// write batch of the write benchmarks locks its keys.
    pub transaction_db: bool,
    /// `--optimistic_transaction_db`: open an optimistic transaction
    /// database (the write benchmarks write to it as to a plain one).
    pub optimistic_transaction_db: bool,
    /// `--transaction_sets`: keys each randomtransaction operation
    /// modifies, one per set (1..=9999).
    pub transaction_sets: u64,
    /// `--transaction_set_snapshot`: pessimistic transactions take their
    /// snapshot at begin.
    pub transaction_set_snapshot: bool,
    /// `--transaction_lock_timeout` in milliseconds (pessimistic).
    pub transaction_lock_timeout: u64,
    /// `--write_as_transaction` (CairnDB addition): with a transaction
    /// database, each write batch of the write benchmarks is an explicit
    /// transaction (begin, put each key, commit).
    pub write_as_transaction: bool,
    /// `--json=FILE` (CairnDB addition).
    pub json: Option<PathBuf>,
    /// `--engine=cairndb|rocksdb|leveldb` (CairnDB addition).
    pub engine: String,
    /// `--progress` (CairnDB addition; default: when stderr is a terminal).
    pub progress: Option<bool>,
    /// `--table_format=block|zip` (CairnDB addition).
    pub table_format: cairndb::TableFormat,
    /// `--zip_from_level=N`: with `--table_format=zip`, levels N and deeper
    /// are written as zip tables (CairnDB addition).
    pub zip_from_level: usize,
    /// `--zip_dict_size` in bytes (CairnDB addition).
    pub zip_dict_size: usize,
    /// `--zip_group_size` in records (CairnDB addition).
    pub zip_group_size: usize,
    /// `--zip_sample_ratio` (CairnDB addition).
    pub zip_sample_ratio: f64,
    /// `--zip_level`: the zstd level of zip tables (CairnDB addition).
    pub zip_level: i32,
    /// `--zip_format_version=1|2|3|4`: layout of new zip tables (CairnDB
    /// addition).
    pub zip_format_version: u32,
    /// `--zip_min_match=N`: zstd's minimum match length for zip groups, 0
    /// for the level's own (CairnDB addition).
    pub zip_min_match: u32,
    /// `--zip_level_gain=F`: the share of bytes `--zip_level` must save over
    /// level 1 in a table's trial to be kept, 0 = always (CairnDB addition).
    pub zip_level_gain: f64,
    /// `--zip_read_ahead=BYTES`: zip tables read ahead as the database
    /// opens them, in all (`ZipTableOptions::read_ahead_on_open`); not
    /// given: the memory available at open (CairnDB addition).
    pub zip_read_ahead: Option<u64>,
    /// `--memtable_bloom_size_ratio`, when given (db_bench's default 0 is
    /// not applied: left out, each engine keeps its own default, which for
    /// CairnDB is a filter of 0.02).
    pub memtable_bloom_size_ratio: Option<f64>,
    /// `--memtable_whole_key_filtering`, when given (as above).
    pub memtable_whole_key_filtering: Option<bool>,
    /// `--mmap_read`, when given (CairnDB's default otherwise).
    pub mmap_read: Option<bool>,
    /// `--enable_blob_files` (key-value separation).
    pub enable_blob_files: bool,
    /// `--min_blob_size`.
    pub min_blob_size: u64,
    /// `--blob_file_size`.
    pub blob_file_size: u64,
    /// `--blob_compression_type`.
    pub blob_compression_type: String,
    /// `--enable_blob_garbage_collection`.
    pub enable_blob_garbage_collection: bool,
    /// `--blob_garbage_collection_age_cutoff`.
    pub blob_garbage_collection_age_cutoff: f64,
    /// `--blob_garbage_collection_force_threshold`.
    pub blob_garbage_collection_force_threshold: f64,
    /// `--blob_compaction_readahead_size`.
    pub blob_compaction_readahead_size: u64,
    /// `--use_blob_cache`.
    pub use_blob_cache: bool,
    /// `--use_shared_block_and_blob_cache` (db_bench's default: true).
    pub use_shared_block_and_blob_cache: bool,
    /// `--blob_cache_size` (db_bench's default: 8 MiB).
    pub blob_cache_size: u64,
    /// `--prepopulate_blob_cache` (0 or 1).
    pub prepopulate_blob_cache: u32,
    /// `--datafile`: records for `fillfile`, one per line (CairnDB addition).
    pub datafile: Option<PathBuf>,
    /// `--keyfile`: keys for `readfile` / `readfileseq`, one per line
    /// (CairnDB addition).
    pub keyfile: Option<PathBuf>,
    /// `--keyfields`: 0-based fields of a data line that make its key.
    pub keyfields: Vec<usize>,
    /// `--field_separator` (default a tab).
    pub field_separator: Vec<u8>,
    /// `--empty_values`: `fillfile` stores every record with an empty value
    /// (to measure the key side of a format).
    pub empty_values: bool,
    /// `--use_plain_table` (db_bench's plain table; see `MAPPED`).
    pub use_plain_table: bool,
    /// `--memtablerep` names a hash memtable (see `MAPPED`).
    pub hash_memtable: bool,
    /// `--hash_index`: `Options::hash_index` (CairnDB addition; left out,
    /// it follows `--use_plain_table`).
    pub hash_index: Option<bool>,
    /// `--idle_compaction_io`: `Options::idle_compaction_io` (CairnDB
    /// addition; off unless given).
    pub idle_compaction_io: bool,
    /// True when `--block_restart_interval` was given.
    pub block_restart_interval_set: bool,
    /// CairnDB-only flags given on the command line, in order, once each
    /// (other engines name them as not applicable).
    pub cairndb_only_set: Vec<String>,
    /// Notes on ignored or mapped flags, one per flag, in command-line order.
    pub notes: Vec<String>,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            benchmarks: DEFAULT_BENCHMARKS.split(',').map(String::from).collect(),
            default_benchmarks: true,
            num: 1_000_000,
            num_set: false,
            reads: -1,
            writes: -1,
            threads: 1,
            duration: 0,
            key_size: 16,
            value_size: 100,
            compression_type: "snappy".into(),
            compression_ratio: 0.5,
            db: None,
            use_existing_db: false,
            sync: false,
            disable_wal: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            bytes_per_sync: None,
            recycle_log_file_num: None,
            cache_size: 8 << 20,
            bloom_bits: -1,
            write_buffer_index_size: None,
            block_size: 4096,
            histogram: false,
            writes_per_second: 0,
            benchmark_write_rate_limit: 0,
            seed: 0,
            prefix_size: 0,
            keys_per_prefix: 0,
            entries_per_batch: 1,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size_base: 64 << 20,
            max_background_compactions: -1,
            max_background_jobs: 2,
            open_files: -1,
            block_restart_interval: 16,
            statistics: false,
            stats_interval_seconds: 0,
            seek_nexts: 0,
            readwritepercent: 90,
            transaction_db: false,
            optimistic_transaction_db: false,
            transaction_sets: 2,
            transaction_set_snapshot: false,
            transaction_lock_timeout: 100,
            write_as_transaction: false,
            json: None,
            engine: "cairndb".into(),
            progress: None,
            table_format: cairndb::TableFormat::BlockBased,
            zip_from_level: 1,
            zip_dict_size: cairndb::ZipTableOptions::default().dict_size,
            zip_group_size: cairndb::ZipTableOptions::default().group_size,
            zip_sample_ratio: cairndb::ZipTableOptions::default().sample_ratio,
            zip_level: cairndb::ZipTableOptions::default().compression_level,
            zip_format_version: cairndb::ZipTableOptions::default().format_version,
            zip_min_match: cairndb::ZipTableOptions::default().min_match,
            zip_level_gain: cairndb::ZipTableOptions::default().level_trial_gain,
            zip_read_ahead: None,
            memtable_bloom_size_ratio: None,
            memtable_whole_key_filtering: None,
            mmap_read: None,
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            blob_compression_type: "none".into(),
            enable_blob_garbage_collection: false,
            blob_garbage_collection_age_cutoff: 0.25,
            blob_garbage_collection_force_threshold: 1.0,
            blob_compaction_readahead_size: 0,
            use_blob_cache: false,
            use_shared_block_and_blob_cache: true,
            blob_cache_size: 8 << 20,
            prepopulate_blob_cache: 0,
            datafile: None,
            keyfile: None,
            keyfields: vec![0],
            field_separator: b"\t".to_vec(),
            empty_values: false,
            use_plain_table: false,
            hash_memtable: false,
            hash_index: None,
            idle_compaction_io: false,
            block_restart_interval_set: false,
            cairndb_only_set: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl Flags {
    /// Number of read operations (`--reads`, or `--num` when negative).
    pub fn reads(&self) -> u64 {
        if self.reads < 0 {
            self.num
        } else {
            self.reads as u64
        }
    }

    /// randomtransaction's operations per thread (db_bench's `readwrites_`):
    /// `--num` unless `--writes` or `--reads` is given, then the larger.
    pub fn readwrites(&self) -> u64 {
        if self.writes < 0 && self.reads < 0 {
            self.num
        } else {
            self.writes.max(self.reads).max(0) as u64
        }
    }

    /// The database flavour the transaction flags ask for.
    pub fn txn_mode(&self) -> TxnMode {
        if self.optimistic_transaction_db {
            TxnMode::Optimistic
        } else if self.transaction_db {
            TxnMode::Pessimistic
        } else {
            TxnMode::None
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Bool,
    Value,
}

/// Our own flags and whether each is boolean.
fn known_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "use_existing_db"
        | "sync"
        | "disable_wal"
        | "histogram"
        | "statistics"
        | "progress"
        | "transaction_db"
        | "optimistic_transaction_db"
        | "transaction_set_snapshot"
        | "write_as_transaction"
        | "memtable_whole_key_filtering"
        | "mmap_read"
        | "enable_blob_files"
        | "enable_blob_garbage_collection"
        | "use_blob_cache"
        | "use_shared_block_and_blob_cache"
        | "empty_values"
        | "use_plain_table"
        | "hash_index"
        | "idle_compaction_io" => Kind::Bool,
        "benchmarks"
        | "num"
        | "reads"
        | "threads"
        | "duration"
        | "key_size"
        | "value_size"
        | "compression_type"
        | "compression_ratio"
        | "db"
        | "write_buffer_size"
        | "write_buffer_index_size"
        | "max_write_buffer_number"
        | "bytes_per_sync"
        | "recycle_log_file_num"
        | "cache_size"
        | "bloom_bits"
        | "block_size"
        | "writes_per_second"
        | "benchmark_write_rate_limit"
        | "seed"
        | "prefix_size"
        | "keys_per_prefix"
        | "batch_size"
        | "entries_per_batch"
        | "level0_file_num_compaction_trigger"
        | "level0_slowdown_writes_trigger"
        | "level0_stop_writes_trigger"
        | "max_bytes_for_level_base"
        | "max_bytes_for_level_multiplier"
        | "target_file_size_base"
        | "max_background_compactions"
        | "max_background_jobs"
        | "open_files"
        | "block_restart_interval"
        | "stats_interval_seconds"
        | "seek_nexts"
        | "readwritepercent"
        | "writes"
        | "transaction_sets"
        | "transaction_lock_timeout"
        | "json"
        | "engine"
        | "table_format"
        | "zip_from_level"
        | "zip_dict_size"
        | "zip_group_size"
        | "zip_sample_ratio"
        | "zip_level"
        | "zip_format_version"
        | "zip_min_match"
        | "zip_level_gain"
        | "zip_read_ahead"
        | "datafile"
        | "keyfile"
        | "keyfields"
        | "field_separator"
        | "memtable_bloom_size_ratio"
        | "min_blob_size"
        | "blob_file_size"
        | "blob_compression_type"
        | "blob_garbage_collection_age_cutoff"
        | "blob_garbage_collection_force_threshold"
        | "blob_compaction_readahead_size"
        | "blob_cache_size"
        | "prepopulate_blob_cache" => Kind::Value,
        _ => return None,
    })
}

/// True when `name` is a db_bench flag (7.8, or older ones in the seeds).
pub fn is_dbbench_flag(name: &str) -> bool {
    LEGACY_FLAGS.contains(&name) || DBBENCH_FLAGS.lines().any(|l| l.trim() == name)
}

/// True when `name` is a flag db_bench 7.8.3 itself accepts.
pub fn is_dbbench_7_8_flag(name: &str) -> bool {
    DBBENCH_FLAGS.lines().any(|l| l.trim() == name)
}

fn kind_of(name: &str) -> Option<Kind> {
    if let Some(k) = known_kind(name) {
        return Some(k);
    }
    if is_dbbench_flag(name) {
        if IGNORED_BOOLS.contains(&name) {
            return Some(Kind::Bool);
        }
        return Some(Kind::Value);
    }
    None
}

/// The command line as `(name, value)` pairs in order, booleans resolved
/// (`--sync` is `("sync", "true")`, `--nosync` `("sync", "false")`).
pub fn split_args(args: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let body = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .ok_or_else(|| format!("unexpected argument `{arg}` (flags look like --name=value)"))?;
        if body.is_empty() {
            return Err(format!("unexpected argument `{arg}`"));
        }
        if let Some((name, value)) = body.split_once('=') {
            if kind_of(name).is_none() {
                return Err(format!("unknown flag --{name}"));
            }
            out.push((name.to_string(), value.to_string()));
            continue;
        }
        match kind_of(body) {
            Some(Kind::Bool) => out.push((body.to_string(), "true".into())),
            Some(Kind::Value) => {
                let value = args
                    .get(i)
                    .ok_or_else(|| format!("flag --{body} needs a value"))?;
                i += 1;
                out.push((body.to_string(), value.clone()));
            }
            None => match body.strip_prefix("no") {
                Some(name) if kind_of(name) == Some(Kind::Bool) => {
                    out.push((name.to_string(), "false".into()))
                }
                _ => return Err(format!("unknown flag --{body}")),
            },
        }
    }
    Ok(out)
}

fn parse_bool(name: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" => Ok(true),
        "0" | "false" | "f" | "no" | "n" => Ok(false),
        _ => Err(format!("flag --{name}: `{v}` is not a boolean")),
    }
}

fn parse_num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.trim()
        .parse::<T>()
        .map_err(|_| format!("flag --{name}: bad value `{v}`"))
}

fn parse_nonneg(name: &str, v: &str) -> Result<u64, String> {
    let n: i64 = parse_num(name, v)?;
    if n < 0 {
        return Err(format!("flag --{name}: must not be negative (got {n})"));
    }
    Ok(n as u64)
}

/// Parses a db_bench command line (without the program name).
pub fn parse(args: &[String]) -> Result<Flags, String> {
    let mut f = Flags::default();
    let mut noted = BTreeMap::new();
    for (name, v) in split_args(args)? {
        let v = v.as_str();
        let n = name.as_str();
        if CAIRNDB_ONLY_FLAGS.contains(&n) && !f.cairndb_only_set.contains(&name) {
            f.cairndb_only_set.push(name.clone());
        }
        match n {
            "benchmarks" => {
                let list: Vec<String> = v
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                for b in &list {
                    if !BENCHMARKS.contains(&b.as_str()) {
                        return Err(format!(
                            "flag --benchmarks: unknown benchmark `{b}` (known: {})",
                            BENCHMARKS.join(",")
                        ));
                    }
                }
                f.benchmarks = list;
                f.default_benchmarks = false;
            }
            "num" => {
                f.num = parse_nonneg(n, v)?;
                f.num_set = true;
            }
            "reads" => f.reads = parse_num(n, v)?,
            "threads" => {
                f.threads = parse_nonneg(n, v)? as usize;
                if f.threads == 0 {
                    return Err("flag --threads: must be at least 1".into());
                }
            }
            "duration" => f.duration = parse_nonneg(n, v)?,
            "key_size" => {
                f.key_size = parse_nonneg(n, v)? as usize;
                if f.key_size == 0 || f.key_size > 1 << 20 {
                    return Err(format!("flag --key_size: must be in 1..=1048576 (got {v})"));
                }
            }
            "value_size" => {
                f.value_size = parse_nonneg(n, v)? as usize;
                if f.value_size > 64 << 20 {
                    return Err(format!("flag --value_size: too large (got {v})"));
                }
            }
            "compression_type" => {
                let lower = v.to_ascii_lowercase();
                if lower != "snappy" && lower != "zlib" && lower != "bzip2" && lower != "xpress" {
                    cairndb::CompressionType::parse(v)
                        .map_err(|e| format!("flag --compression_type: {e}"))?;
                }
                f.compression_type = lower;
            }
            "compression_ratio" => {
                let r: f64 = parse_num(n, v)?;
                if !(r > 0.0 && r <= 1.0) {
                    return Err(format!(
                        "flag --compression_ratio: must be in (0, 1] (got {v})"
                    ));
                }
                f.compression_ratio = r;
            }
            "db" => f.db = Some(PathBuf::from(v)),
            "use_existing_db" => f.use_existing_db = parse_bool(n, v)?,
            "sync" => f.sync = parse_bool(n, v)?,
            "memtable_whole_key_filtering" => {
                f.memtable_whole_key_filtering = Some(parse_bool(n, v)?);
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "mmap_read" => {
                f.mmap_read = Some(parse_bool(n, v)?);
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "enable_blob_files" => {
                f.enable_blob_files = parse_bool(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "enable_blob_garbage_collection" => {
                f.enable_blob_garbage_collection = parse_bool(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "min_blob_size" => {
                f.min_blob_size = parse_nonneg(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "blob_file_size" => {
                f.blob_file_size = parse_nonneg(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "blob_compaction_readahead_size" => {
                f.blob_compaction_readahead_size = parse_nonneg(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "use_blob_cache" => {
                f.use_blob_cache = parse_bool(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "use_shared_block_and_blob_cache" => {
                f.use_shared_block_and_blob_cache = parse_bool(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "blob_cache_size" => {
                f.blob_cache_size = parse_nonneg(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "prepopulate_blob_cache" => {
                let p = parse_nonneg(n, v)?;
                if p > 1 {
                    return Err(format!(
                        "flag --prepopulate_blob_cache: 0 (disable) or 1 (flush only), got {v}"
                    ));
                }
                f.prepopulate_blob_cache = p as u32;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "blob_compression_type" => {
                let lower = v.to_ascii_lowercase();
                if lower != "snappy" && lower != "zlib" && lower != "bzip2" && lower != "xpress" {
                    cairndb::CompressionType::parse(v)
                        .map_err(|e| format!("flag --blob_compression_type: {e}"))?;
                }
                f.blob_compression_type = lower;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "blob_garbage_collection_age_cutoff" | "blob_garbage_collection_force_threshold" => {
                let r: f64 = parse_num(n, v)?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(format!("flag --{n}: must be in [0, 1] (got {v})"));
                }
                if n == "blob_garbage_collection_age_cutoff" {
                    f.blob_garbage_collection_age_cutoff = r;
                } else {
                    f.blob_garbage_collection_force_threshold = r;
                }
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "memtable_bloom_size_ratio" => {
                let r: f64 = parse_num(n, v)?;
                if !(0.0..=0.25).contains(&r) {
                    return Err(format!(
                        "flag --memtable_bloom_size_ratio: must be between 0 and 0.25 (got {v})"
                    ));
                }
                f.memtable_bloom_size_ratio = Some(r);
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "disable_wal" => f.disable_wal = parse_bool(n, v)?,
            "histogram" => f.histogram = parse_bool(n, v)?,
            "statistics" => f.statistics = parse_bool(n, v)?,
            "progress" => f.progress = Some(parse_bool(n, v)?),
            "write_buffer_size" => f.write_buffer_size = parse_nonneg(n, v)?,
            "write_buffer_index_size" => {
                f.write_buffer_index_size = Some(parse_nonneg(n, v)?);
            }
            "max_write_buffer_number" => f.max_write_buffer_number = parse_nonneg(n, v)? as usize,
            "bytes_per_sync" => f.bytes_per_sync = Some(parse_nonneg(n, v)?),
            "recycle_log_file_num" => {
                f.recycle_log_file_num = Some(parse_nonneg(n, v)? as usize);
            }
            "cache_size" => f.cache_size = parse_num(n, v)?,
            "bloom_bits" => {
                // db_bench 7.8 declares it int32; older lines pass doubles.
                let b: f64 = parse_num(n, v)?;
                f.bloom_bits = b.round() as i32;
            }
            "block_size" => {
                f.block_size = parse_nonneg(n, v)? as usize;
                if f.block_size == 0 {
                    return Err("flag --block_size: must be positive".into());
                }
            }
            "writes_per_second" => f.writes_per_second = parse_nonneg(n, v)?,
            "benchmark_write_rate_limit" => f.benchmark_write_rate_limit = parse_nonneg(n, v)?,
            "seed" => f.seed = parse_nonneg(n, v)?,
            "prefix_size" => f.prefix_size = parse_nonneg(n, v)? as usize,
            "keys_per_prefix" => f.keys_per_prefix = parse_nonneg(n, v)?,
            "batch_size" | "entries_per_batch" => {
                f.entries_per_batch = parse_nonneg(n, v)?.max(1) as usize
            }
            "level0_file_num_compaction_trigger" => {
                f.level0_file_num_compaction_trigger = parse_num(n, v)?
            }
            "level0_slowdown_writes_trigger" => f.level0_slowdown_writes_trigger = parse_num(n, v)?,
            "level0_stop_writes_trigger" => f.level0_stop_writes_trigger = parse_num(n, v)?,
            "max_bytes_for_level_base" => f.max_bytes_for_level_base = parse_nonneg(n, v)?,
            "max_bytes_for_level_multiplier" => {
                f.max_bytes_for_level_multiplier = parse_num(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "target_file_size_base" => f.target_file_size_base = parse_nonneg(n, v)?,
            "max_background_compactions" => f.max_background_compactions = parse_num(n, v)?,
            "max_background_jobs" => f.max_background_jobs = parse_num(n, v)?,
            "open_files" => {
                f.open_files = parse_num(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "block_restart_interval" => {
                f.block_restart_interval = parse_nonneg(n, v)?.max(1) as usize;
                f.block_restart_interval_set = true;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "stats_interval_seconds" => f.stats_interval_seconds = parse_nonneg(n, v)?,
            "seek_nexts" => f.seek_nexts = parse_nonneg(n, v)?,
            "readwritepercent" => {
                f.readwritepercent = parse_nonneg(n, v)?;
                if f.readwritepercent > 100 {
                    return Err("flag --readwritepercent: must be in 0..=100".into());
                }
            }
            "writes" => {
                f.writes = parse_num(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "transaction_db" => f.transaction_db = parse_bool(n, v)?,
            "optimistic_transaction_db" => f.optimistic_transaction_db = parse_bool(n, v)?,
            "transaction_set_snapshot" => f.transaction_set_snapshot = parse_bool(n, v)?,
            "write_as_transaction" => f.write_as_transaction = parse_bool(n, v)?,
            "transaction_sets" => {
                f.transaction_sets = parse_nonneg(n, v)?;
                if !(1..=9999).contains(&f.transaction_sets) {
                    return Err(format!(
                        "flag --transaction_sets: invalid value for transaction_sets \
                         (must be in 1..=9999, got {v})"
                    ));
                }
            }
            "transaction_lock_timeout" => f.transaction_lock_timeout = parse_nonneg(n, v)?,
            "json" => f.json = Some(PathBuf::from(v)),
            "engine" => {
                let e = v.to_ascii_lowercase();
                if !["cairndb", "rocksdb", "leveldb"].contains(&e.as_str()) {
                    return Err(format!(
                        "flag --engine: unknown engine `{v}` (cairndb, rocksdb or leveldb)"
                    ));
                }
                f.engine = e;
            }
            "table_format" => {
                f.table_format = cairndb::TableFormat::parse(v)
                    .map_err(|_| format!("flag --table_format: `{v}` is not block or zip"))?;
            }
            "zip_from_level" => {
                let l = parse_nonneg(n, v)? as usize;
                if l >= cairndb::NUM_LEVELS {
                    return Err(format!(
                        "flag --zip_from_level: must be in 0..={} (got {v})",
                        cairndb::NUM_LEVELS - 1
                    ));
                }
                f.zip_from_level = l;
            }
            "zip_dict_size" => {
                f.zip_dict_size = parse_nonneg(n, v)? as usize;
                if f.zip_dict_size > 16 << 20 {
                    return Err(format!(
                        "flag --zip_dict_size: must be at most 16777216 bytes (got {v})"
                    ));
                }
            }
            "zip_group_size" => {
                f.zip_group_size = parse_nonneg(n, v)? as usize;
                if !(1..=256).contains(&f.zip_group_size) {
                    return Err(format!(
                        "flag --zip_group_size: must be in 1..=256 (got {v})"
                    ));
                }
            }
            "zip_sample_ratio" => {
                let r: f64 = parse_num(n, v)?;
                if !(r > 0.0 && r <= 1.0) {
                    return Err(format!(
                        "flag --zip_sample_ratio: must be in (0, 1] (got {v})"
                    ));
                }
                f.zip_sample_ratio = r;
            }
            "zip_level" => {
                f.zip_level = parse_num(n, v)?;
                if !(-7..=22).contains(&f.zip_level) {
                    return Err(format!("flag --zip_level: must be in -7..=22 (got {v})"));
                }
            }
            "zip_min_match" => {
                f.zip_min_match = parse_nonneg(n, v)? as u32;
                if f.zip_min_match != 0 && !(3..=7).contains(&f.zip_min_match) {
                    return Err(format!(
                        "flag --zip_min_match: must be 0 or in 3..=7 (got {v})"
                    ));
                }
            }
            "zip_level_gain" => {
                let r: f64 = parse_num(n, v)?;
                if !(0.0..1.0).contains(&r) {
                    return Err(format!(
                        "flag --zip_level_gain: must be in [0, 1) (got {v})"
                    ));
                }
                f.zip_level_gain = r;
            }
            "zip_read_ahead" => f.zip_read_ahead = Some(parse_nonneg(n, v)?),
            "zip_format_version" => {
                f.zip_format_version = parse_nonneg(n, v)? as u32;
                let newest = cairndb::internals::sst::zip::format::ZIP_FORMAT_VERSION;
                if !(1..=newest).contains(&f.zip_format_version) {
                    return Err(format!(
                        "flag --zip_format_version: must be 1 to {newest} (got {v})"
                    ));
                }
            }
            "datafile" => f.datafile = Some(nonempty_path(n, v)?),
            "keyfile" => f.keyfile = Some(nonempty_path(n, v)?),
            "keyfields" => f.keyfields = parse_keyfields(v)?,
            "field_separator" => f.field_separator = parse_separator(v)?,
            "empty_values" => f.empty_values = parse_bool(n, v)?,
            "use_plain_table" => {
                f.use_plain_table = parse_bool(n, v)?;
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            "hash_index" => f.hash_index = Some(parse_bool(n, v)?),
            "idle_compaction_io" => f.idle_compaction_io = parse_bool(n, v)?,
            "memtablerep" => {
                f.hash_memtable = matches!(v, "prefix_hash" | "hash_skiplist" | "hash_linkedlist");
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
            _ => {
                if IGNORED_BOOLS.contains(&n) {
                    parse_bool(n, v)?;
                }
                noted.entry(name.clone()).or_insert_with(|| mapped_note(n));
            }
        }
    }
    if f.write_as_transaction && f.txn_mode() == TxnMode::None {
        return Err(
            "flag --write_as_transaction: needs --transaction_db or --optimistic_transaction_db"
                .into(),
        );
    }
    f.notes = noted
        .into_iter()
        .map(|(name, note)| format!("--{name}: {note}"))
        .collect();
    Ok(f)
}

fn nonempty_path(name: &str, v: &str) -> Result<PathBuf, String> {
    if v.is_empty() {
        return Err(format!("flag --{name}: needs a file name"));
    }
    Ok(PathBuf::from(v))
}

/// Parses `--keyfields=0,1,2`: 0-based field indexes, in key order.
pub fn parse_keyfields(v: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in v.split(',') {
        let t = part.trim();
        if t.is_empty() {
            return Err(format!(
                "flag --keyfields: empty field index in `{v}` (expected e.g. 0,1,2)"
            ));
        }
        let i: usize = t.parse().map_err(|_| {
            format!("flag --keyfields: `{t}` is not a field index (0-based, e.g. 0,1,2)")
        })?;
        out.push(i);
    }
    Ok(out)
}

/// Parses `--field_separator`: the text itself, where `\t` (backslash-t)
/// and `tab` mean a tab, and `\\` a backslash. Must not be empty or hold a
/// line break.
pub fn parse_separator(v: &str) -> Result<Vec<u8>, String> {
    let out: Vec<u8> = match v {
        "tab" | "TAB" => b"\t".to_vec(),
        _ => {
            let mut out = Vec::new();
            let b = v.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'\\' && i + 1 < b.len() {
                    match b[i + 1] {
                        b't' => out.push(b'\t'),
                        b'\\' => out.push(b'\\'),
                        _ => {
                            return Err(format!(
                                "flag --field_separator: unknown escape `\\{}` in `{v}` \
                                 (\\t is a tab, \\\\ a backslash)",
                                b[i + 1] as char
                            ))
                        }
                    }
                    i += 2;
                } else {
                    out.push(b[i]);
                    i += 1;
                }
            }
            out
        }
    };
    if out.is_empty() {
        return Err("flag --field_separator: must not be empty (default: a tab)".into());
    }
    if out.contains(&b'\n') || out.contains(&b'\r') {
        return Err("flag --field_separator: must not contain a line break".into());
    }
    Ok(out)
}

fn mapped_note(name: &str) -> String {
    MAPPED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, note)| note.to_string())
        .unwrap_or_else(|| "ignored (a RocksDB tuning flag with no CairnDB meaning)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Flags, String> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    /// `--zip_format_version=3` (the newest format) was refused as "must be
    /// 1 or 2" after format 3 became the default.
    #[test]
    fn zip_format_version_accepts_every_readable_version() {
        for v in 1..=cairndb::internals::sst::zip::format::ZIP_FORMAT_VERSION {
            assert_eq!(
                p(&[&format!("--zip_format_version={v}")])
                    .unwrap()
                    .zip_format_version,
                v
            );
        }
        let e = p(&["--zip_format_version=9"]).err().unwrap();
        assert!(e.contains("zip_format_version"), "{e}");
        assert_eq!(
            p(&[]).unwrap().zip_format_version,
            cairndb::ZipTableOptions::default().format_version
        );
    }

    #[test]
    fn empty_values_is_a_boolean() {
        assert!(!p(&[]).unwrap().empty_values);
        assert!(p(&["--empty_values"]).unwrap().empty_values);
        assert!(!p(&["--empty_values=0"]).unwrap().empty_values);
        assert!(p(&["--empty_values=maybe"]).is_err());
    }

    #[test]
    fn syntaxes() {
        let f = p(&[
            "--num=5",
            "-reads=7",
            "--threads",
            "3",
            "--sync",
            "--nohistogram",
        ])
        .unwrap();
        assert_eq!(
            (f.num, f.reads(), f.threads, f.sync, f.histogram),
            (5, 7, 3, true, false)
        );
        let f = p(&["--sync=false", "--histogram=1", "--disable_wal=0"]).unwrap();
        assert!(!f.sync && f.histogram && !f.disable_wal);
    }

    #[test]
    fn blob_flags_parse_and_are_noted() {
        let f = p(&[
            "--enable_blob_files",
            "--min_blob_size=512",
            "--blob_file_size=1048576",
            "--blob_compression_type=zstd",
            "--enable_blob_garbage_collection=true",
            "--blob_garbage_collection_age_cutoff=0.5",
            "--blob_garbage_collection_force_threshold=0.8",
            "--blob_compaction_readahead_size=65536",
        ])
        .unwrap();
        assert!(f.enable_blob_files && f.enable_blob_garbage_collection);
        assert_eq!(
            (
                f.min_blob_size,
                f.blob_file_size,
                f.blob_compaction_readahead_size
            ),
            (512, 1 << 20, 65536)
        );
        assert_eq!(f.blob_compression_type, "zstd");
        assert_eq!(
            (
                f.blob_garbage_collection_age_cutoff,
                f.blob_garbage_collection_force_threshold
            ),
            (0.5, 0.8)
        );
        assert!(f.notes.iter().any(|n| n.contains("Options::min_blob_size")));
        let e = p(&["--blob_garbage_collection_age_cutoff=2"]).unwrap_err();
        assert!(e.contains("--blob_garbage_collection_age_cutoff"), "{e}");
        // The blob cache flags, with db_bench's defaults.
        let f = p(&[]).unwrap();
        assert!(!f.use_blob_cache && f.use_shared_block_and_blob_cache);
        assert_eq!((f.blob_cache_size, f.prepopulate_blob_cache), (8 << 20, 0));
        let f = p(&[
            "--use_blob_cache",
            "--nouse_shared_block_and_blob_cache",
            "--blob_cache_size=1048576",
            "--prepopulate_blob_cache=1",
            "--blob_cache_numshardbits=4",
        ])
        .unwrap();
        assert!(f.use_blob_cache && !f.use_shared_block_and_blob_cache);
        assert_eq!((f.blob_cache_size, f.prepopulate_blob_cache), (1 << 20, 1));
        assert!(f.notes.iter().any(|n| n.contains("Options::blob_cache")));
        let e = p(&["--prepopulate_blob_cache=2"]).unwrap_err();
        assert!(e.contains("--prepopulate_blob_cache"), "{e}");
    }

    #[test]
    fn unknown_and_bad_values_name_the_flag() {
        let e = p(&["--frobnicate=1"]).unwrap_err();
        assert!(e.contains("--frobnicate"), "{e}");
        let e = p(&["--num=abc"]).unwrap_err();
        assert!(e.contains("--num"), "{e}");
        let e = p(&["--sync=maybe"]).unwrap_err();
        assert!(e.contains("--sync"), "{e}");
        let e = p(&["--benchmarks=fillseq,bogus"]).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = p(&["--num"]).unwrap_err();
        assert!(e.contains("--num"), "{e}");
        assert!(p(&["positional"]).is_err());
    }

    #[test]
    fn memtable_filter_flags_apply_only_when_given() {
        let f = p(&[]).unwrap();
        assert_eq!(f.memtable_bloom_size_ratio, None);
        assert_eq!(f.memtable_whole_key_filtering, None);
        let f = p(&[
            "--memtable_bloom_size_ratio=0.1",
            "--memtable_whole_key_filtering=false",
        ])
        .unwrap();
        assert_eq!(f.memtable_bloom_size_ratio, Some(0.1));
        assert_eq!(f.memtable_whole_key_filtering, Some(false));
        assert_eq!(f.notes.len(), 2, "{:?}", f.notes);
        let e = p(&["--memtable_bloom_size_ratio=0.5"]).unwrap_err();
        assert!(e.contains("memtable_bloom_size_ratio"), "{e}");
    }

    #[test]
    fn ignored_flags_are_noted_once() {
        let f = p(&[
            "--mmap_read=1",
            "--mmap_read=0",
            "--use_plain_table",
            "--memtablerep=prefix_hash",
            "--hard_rate_limit=2",
            "--disable_seek_compaction=1",
            "--cache_numshardbits=6",
            "--bloom_locality=1",
            "--min_level_to_compress=-1",
            "--open_files=-1",
            "--delete_obsolete_files_period_micros=314572800",
            "--disable_data_sync=1",
            "--verify_checksum=1",
            "--num_levels=6",
            "--wal_dir=/tmp/x",
            "--stats_per_interval=0",
            "--stats_interval=1048576",
            "--max_background_flushes=0",
            "--mmap_write=0",
        ])
        .unwrap();
        assert_eq!(f.notes.len(), 18, "{:?}", f.notes);
        assert_eq!(
            f.notes
                .iter()
                .filter(|n| n.starts_with("--mmap_read:"))
                .count(),
            1
        );
        assert_eq!(f.open_files, -1);
    }
}
