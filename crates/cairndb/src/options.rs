//! Options for opening a database, reading and writing.
//!
//! Names follow RocksDB where the meaning is the same, so that a RocksDB user
//! can carry a tuned configuration across. [`Options::validate`] rejects
//! values the engine cannot honour with an `InvalidArgument` that names the
//! option; it is called by `Db::open`.

use std::sync::Arc;
use std::time::Duration;

use crate::env::Fs;
use crate::error::{Error, Result};

/// Number of levels in the LSM tree (level 0 plus six sorted levels).
pub const NUM_LEVELS: usize = 7;

/// Per-block compression of SST files. The byte stored in each block trailer
/// is documented in `docs/format/sstable.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompressionType {
    /// Blocks are stored as they are.
    None,
    /// LZ4 block format (lz4_flex).
    Lz4,
    /// Zstandard at the given level.
    Zstd(i32),
}

impl CompressionType {
    /// Parses `none`, `lz4`, `zstd` (level 3) or `zstd:N`, as the command line
    /// and RocksDB's `compression_type` spell them (`snappy` maps to lz4,
    /// the nearest fast codec we carry).
    pub fn parse(s: &str) -> Result<CompressionType> {
        let lower = s.to_ascii_lowercase();
        match lower.as_str() {
            "none" | "no" | "knocompression" => Ok(CompressionType::None),
            "lz4" | "lz4hc" | "snappy" | "klz4compression" | "klz4hccompression"
            | "ksnappycompression" => Ok(CompressionType::Lz4),
            "zstd" | "kzstd" | "kzstdcompression" => Ok(CompressionType::Zstd(3)),
            _ => {
                if let Some(level) = lower.strip_prefix("zstd:") {
                    let l: i32 = level.parse().map_err(|_| {
                        Error::invalid(format!("compression `{s}`: bad zstd level `{level}`"))
                    })?;
                    if !(-7..=22).contains(&l) {
                        return Err(Error::invalid(format!(
                            "compression `{s}`: zstd level must be in -7..=22"
                        )));
                    }
                    return Ok(CompressionType::Zstd(l));
                }
                Err(Error::invalid(format!(
                    "unknown compression `{s}` (expected none, lz4, zstd or zstd:LEVEL)"
                )))
            }
        }
    }
}

/// Table file format written to a level (`docs/format/sstable.md`,
/// `docs/format/ziptable.md`). Readers open either format at any level: the
/// format is recorded in each file's footer magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TableFormat {
    /// Data blocks with restart points, read through the block cache.
    #[default]
    BlockBased,
    /// Searchable compression: a succinct key index and values compressed
    /// in small groups against a dictionary shared by the file, read through
    /// mmap, one group per point read.
    Zip,
}

impl TableFormat {
    /// Parses `block` (or `block_based`) and `zip`.
    pub fn parse(s: &str) -> Result<TableFormat> {
        match s.to_ascii_lowercase().as_str() {
            "block" | "block_based" | "blockbased" => Ok(TableFormat::BlockBased),
            "zip" => Ok(TableFormat::Zip),
            _ => Err(Error::invalid(format!(
                "unknown table format `{s}` (expected block or zip)"
            ))),
        }
    }
}

/// Tuning of the searchable-compression table format ([`TableFormat::Zip`]),
/// after TerarkDB's `TerarkZipTable_*` options.
#[derive(Debug, Clone, PartialEq)]
pub struct ZipTableOptions {
    /// Largest value dictionary of a table, bytes; 0 = no dictionary.
    /// Format version 2: the cap on the values sampled into its content
    /// (`sample_ratio` of the value bytes, thinned evenly to this size).
    /// Version 1: the size zstd trains the dictionary to (64 KiB suits it).
    /// At most 16 MiB. Default 4 MiB.
    pub dict_size: usize,
    /// Fraction of the value bytes sampled into the dictionary, evenly
    /// spread over the table (TerarkZipTable_sampleRatio). Version 2: the
    /// samples are the dictionary's content, so this is about the share of
    /// the table held in memory as its dictionary (before the `dict_size`
    /// cap). Version 1: the training input. Default 0.03.
    pub sample_ratio: f64,
    /// Records compressed together; a point read decompresses one group
    /// (about `group_size` values) unless the block cache holds it decoded.
    /// Larger groups make smaller tables and costlier cold reads: on the
    /// Debian rows 16 made tables 3% smaller than 8 and point reads with
    /// an 8 MiB cache a third slower (docs/BENCHMARKS.md, "File workload
    /// and zip tables"). Default 8.
    pub group_size: usize,
    /// zstd level of the groups: higher is smaller and slower to build,
    /// and no slower to read (see docs/BENCHMARKS.md, "File workload and
    /// zip tables", for the curve). Default 9.
    pub compression_level: i32,
    /// zstd's minimum match length for the groups (`ZSTD_c_minMatch`), 3..=7,
    /// or 0 for the level's own. Rows of text repeat in long runs: 6 made
    /// Debian rows 2.5% smaller than level 9's own 5, and faster to build.
    /// Default 6.
    pub min_match: u32,
    /// A build compresses a trial of its sampled groups at
    /// `compression_level` and at `FAST_LEVEL` (1) with the table's
    /// dictionary, and keeps `compression_level` only when it saves at least
    /// this share of the trial's bytes; else the table's groups use level 1.
    /// On rows whose content is mostly noise for the matcher (digits, ids,
    /// hashes) the higher level saves 2-4% at 3-4x the build time; on
    /// text it saves 10% or more. 0 always uses `compression_level`.
    /// Default 0.05.
    pub level_trial_gain: f64,
    /// Layout version of new zip tables (`docs/format/ziptable.md`): 4 (as
    /// 3, and long runs of hex digits in values are packed two to a byte
    /// outside the compressed text when a table has enough of them), 3 (as
    /// 2, and a value that holds its own user key is stored without it), 2
    /// (a large sampled dictionary stored compressed) or 1 (a zstd-trained
    /// dictionary). 1 to 3 are for readers that predate the newer
    /// versions. Default 4.
    pub format_version: u32,
    /// Store the key index (the fst) uncompressed in its envelope, so that
    /// readers walk it in place from the file's mapping instead of decoding
    /// it into memory at open (versions 2 and 3; version 1 always does).
    /// An index then costs page cache while it is read and nothing while
    /// it is not, which is what a memory cap rewards: a SQL secondary
    /// index that no query reads. The file is larger by what packing would
    /// save, about 40% of the fst on keys of random integers and a few
    /// percent on text keys. Default false.
    pub key_index_in_place: bool,
    /// Bytes of zip tables a database reads ahead into the page cache as it
    /// opens them (`madvise(MADV_WILLNEED)`, then random access as for any
    /// table): one sequential read per table instead of a page fault per
    /// group on a cold start. Zip tables are built to stay in memory where
    /// block tables would not; a table opened past this total is read as
    /// it is touched. `None` (the default): the memory available when the
    /// database opens (the kernel's `MemAvailable`, or the memory cgroup's
    /// limit less its usage when smaller). `Some(0)` never reads ahead.
    /// Under a memory cap the 599.6 MB large set's tables fit in, cold
    /// point reads ran 1.3x faster with one thread (docs/bench/
    /// file-workload.md, "Memory-limited reads").
    pub read_ahead_on_open: Option<u64>,
    /// Value bytes a table build keeps in memory before it spills them to a
    /// temporary file in the database directory
    /// (TerarkZipTable_softZipWorkingMemLimit). Default 64 MiB.
    pub soft_working_mem_limit: usize,
    /// Bytes of table builds in memory across all background jobs; a build
    /// that would pass it waits for another to finish
    /// (TerarkZipTable_hardZipWorkingMemLimit). Default 256 MiB.
    pub hard_working_mem_limit: usize,
}

impl Default for ZipTableOptions {
    fn default() -> Self {
        ZipTableOptions {
            dict_size: 4 << 20,
            sample_ratio: 0.03,
            group_size: 8,
            compression_level: 9,
            min_match: 6,
            level_trial_gain: 0.05,
            format_version: 4,
            key_index_in_place: false,
            read_ahead_on_open: None,
            soft_working_mem_limit: 64 << 20,
            hard_working_mem_limit: 256 << 20,
        }
    }
}

/// Where blob values read from blob files are cached (RocksDB's
/// `blob_cache`). A cached value is the uncompressed value, keyed by its
/// blob file number and offset, and charged by its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlobCacheConfig {
    /// Every read of a blob value reads the blob file. RocksDB's default.
    #[default]
    Disabled,
    /// Values share the block cache (`block_cache_size`) with table
    /// blocks, as RocksDB does when `blob_cache` and the table's
    /// `block_cache` are one cache (db_bench's
    /// `--use_shared_block_and_blob_cache`).
    SharedWithBlockCache,
    /// A cache of its own holding up to this many bytes of values.
    Dedicated(usize),
}

/// Which writes put blob values into the blob cache as they go to a blob
/// file (RocksDB's `prepopulate_blob_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrepopulateBlobCache {
    /// None: values enter the cache when they are read. RocksDB's default.
    #[default]
    Disable,
    /// Flushes (not recovery at open, not garbage collection): recently
    /// written values are often read soon, and the flush has them in
    /// memory. Costs a copy of each value at flush.
    FlushOnly,
}

/// How recovery treats a damaged write-ahead log (RocksDB's WALRecoveryMode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalRecoveryMode {
    /// A torn record at the very end of the last log is dropped (it was never
    /// acknowledged as durable); any other damage is a `Corruption` error.
    TolerateCorruptedTailRecords,
    /// Any damage, even at the tail, is a `Corruption` error.
    AbsoluteConsistency,
    /// Recovery stops at the first damaged record and keeps everything before
    /// it: the database opens as of a consistent point in time. RocksDB's default.
    PointInTimeRecovery,
    /// Damaged records are skipped and replay continues after them. Can
    /// resurrect a prefix of history with holes; for salvage only.
    SkipAnyCorruptedRecords,
}

/// Maps a key to its prefix, for prefix bloom filters and prefix iteration.
pub trait SliceTransform: Send + Sync {
    /// A stable name, recorded so that a mismatched extractor is noticed.
    fn name(&self) -> &str;
    /// True when `key` has a prefix under this transform.
    fn in_domain(&self, key: &[u8]) -> bool;
    /// The prefix of `key`. Requires `in_domain(key)`.
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8];
}

/// The first `n` bytes of a key are its prefix; shorter keys have none.
#[derive(Debug, Clone)]
pub struct FixedPrefix {
    len: usize,
    name: String,
}

impl FixedPrefix {
    /// A transform taking the first `len` bytes.
    pub fn new(len: usize) -> Self {
        FixedPrefix {
            len,
            name: format!("cairndb.FixedPrefix.{len}"),
        }
    }
}

impl SliceTransform for FixedPrefix {
    fn name(&self) -> &str {
        &self.name
    }
    fn in_domain(&self, key: &[u8]) -> bool {
        key.len() >= self.len
    }
    fn transform<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        &key[..self.len.min(key.len())]
    }
}

/// Most slots of a memtable hash index ([`Options::memtable_hash_index`]).
const MEMTABLE_HASH_MAX_SLOTS: usize = 1 << 22;

/// Options for [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default true.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default false.
    pub error_if_exists: bool,
    /// File system used for every file access. Default: the POSIX one.
    pub fs: Arc<dyn Fs>,
    /// Bytes of memtable before it is switched to immutable and flushed. Default 64 MiB.
    pub write_buffer_size: usize,
    /// Bytes of skiplist nodes (links, keys, values of up to 16 bytes:
    /// the part every insert and search walks) at which the memtable is
    /// switched even below `write_buffer_size`; 0 = no such limit. Nodes
    /// lie in the arena in insertion order, so once they outgrow the CPU's
    /// last-level cache every level of a search misses to DRAM: with
    /// 116-byte entries a 64 MiB memtable holds about 30 MiB of nodes and
    /// inserts, seeks and scans of it ran 30-50% slower than of one held
    /// under 8 MiB (docs/bench/engine.md). Large values live outside the
    /// nodes, so a memtable of 4 KiB values still fills to
    /// `write_buffer_size`. Default 8 MiB.
    pub write_buffer_index_size: usize,
    /// Memtables (one mutable plus immutables) kept before writes stall. Default 2.
    pub max_write_buffer_number: usize,
    /// A flush or compaction starts the device's write-back of its table
    /// every this many bytes, without waiting, so the sync that ends the
    /// table finds little left to write and the device works while the
    /// table is built (RocksDB's `bytes_per_sync`; there it defaults to
    /// 0). 0 = write-back only at that sync. Default 1 MiB.
    pub bytes_per_sync: u64,
    /// The background compaction thread's I/O runs in the idle I/O
    /// priority class (Linux `ioprio_set`, `IOPRIO_CLASS_IDLE`; RocksDB's
    /// `Env::LowerThreadPoolIOPriority` does the same for its compaction
    /// pool), so a flush, which writers may be waiting for, gets the device
    /// first. Schedulers that honour classes (mq-deadline, bfq) still serve
    /// idle requests after a bounded wait (mq-deadline: 10 s). A
    /// `compact_range` runs on its caller's thread and keeps its priority.
    /// Default false: W3 (200K x 4 KiB values) filled 9% faster with it,
    /// with fewer write stops, but level 0 then held 8 tables when the
    /// fill ended instead of 2-8, and reads right after ran 4.5% slower
    /// (docs/bench/engine.md).
    pub idle_compaction_io: bool,
    /// Size of each memtable's key filter as a fraction of
    /// `write_buffer_size` (RocksDB's name; there it sizes a prefix and/or
    /// whole-key bloom). 0 disables the filter. Default 0.02 (RocksDB: 0):
    /// about 20 bits per key for small entries, and `get` skips the
    /// skiplist search for keys a memtable never held.
    pub memtable_prefix_bloom_size_ratio: f64,
    /// Put whole user keys in the memtable filter (RocksDB's name). CairnDB
    /// has no prefix memtable filter, so `false` disables the filter.
    /// Default true (RocksDB: false).
    pub memtable_whole_key_filtering: bool,
    /// Give each memtable a hash index from user key to its newest entry
    /// (RocksDB's hash memtables: `--memtablerep=prefix_hash` in `cairndb
    /// bench`), so a point read of a key the memtable holds finds it in a
    /// slot or two instead of a skiplist descent. Sized for one entry per
    /// 64 bytes of the memtable's searched part (`write_buffer_index_size`,
    /// or `write_buffer_size` without one), 8 bytes a slot at most 3/4
    /// full, at most 2^22 slots (32 MiB, written when the memtable is made);
    /// keys past that are found by the skiplist search. Default false.
    pub memtable_hash_index: bool,
    /// Level-0 file count that triggers a compaction. Default 4.
    pub level0_file_num_compaction_trigger: usize,
    /// Level-0 file count from which each write is delayed. Default 20.
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 file count at which writes stop until compaction catches up. Default 36.
    pub level0_stop_writes_trigger: usize,
    /// Target size of level 1; each deeper level is `max_bytes_for_level_multiplier` times larger. Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels. Default 10.
    pub max_bytes_for_level_multiplier: f64,
    /// Target size of an SST produced by compaction. Default 64 MiB.
    pub target_file_size_base: u64,
    /// Uncompressed size of a data block. Default 4 KiB.
    pub block_size: usize,
    /// Keys between restart points in a data block. Default 16.
    pub block_restart_interval: usize,
    /// Write a hash index over the user keys into each block-based table
    /// (`docs/format/sstable.md`, "Hash index block"): a point read then
    /// finds the restart run of its key in one probe, instead of a binary
    /// search of the index block and then of the data block, and a key the
    /// table does not hold is ruled out without the Bloom filter. Costs 4
    /// or 8 bytes per slot at 3/8 to 3/4 load: about 5 to 21 bytes per
    /// distinct key, read into memory when the table opens. Pair it with a
    /// small `block_restart_interval` (1 makes every entry a restart point)
    /// for in-memory point-read workloads. Default false.
    pub hash_index: bool,
    /// Bytes of uncompressed blocks cached in memory. Default 8 MiB (RocksDB's default); 0 disables.
    pub block_cache_size: usize,
    /// Bloom filter bits per key; 0 disables filters. Default 10.
    pub bloom_bits_per_key: u32,
    /// Compression for every level without an entry in `compression_per_level`. Default none.
    pub compression: CompressionType,
    /// Compression per level, overriding `compression` where set.
    pub compression_per_level: Vec<CompressionType>,
    /// Table format per level; levels without an entry are block-based.
    /// Default: every level block-based. See [`Options::set_zip_from_level`].
    pub table_format_per_level: Vec<TableFormat>,
    /// Tuning of [`TableFormat::Zip`] tables.
    pub zip: ZipTableOptions,
    /// Table readers kept open. Default 1000. `usize::MAX` means no bound
    /// (RocksDB's `-1`): each reader then stays open with its file and is
    /// reached by a point read without a cache lookup or a shared
    /// reference count, which matters with many reading threads.
    pub max_open_files: usize,
    /// Read block-based tables through a memory map of each open table
    /// file instead of `pread`, as LevelDB does on 64-bit systems and
    /// RocksDB's `allow_mmap_reads`: an uncompressed data block is used in
    /// place (no copy, no block cache entry; the page cache holds it), a
    /// compressed one is decompressed straight from the map into the block
    /// cache. A block's checksum is verified the first time it is read
    /// through the map (as a block cache verifies a block once when it
    /// enters); compaction's scans keep using `pread` and verify every
    /// block (`docs/format/sstable.md`, "Reading through a map"). The file-system contract is RocksDB's: a
    /// table file truncated behind the engine's back faults the process.
    /// Default true.
    pub mmap_reads: bool,
    /// Treatment of a damaged WAL at recovery.
    pub wal_recovery_mode: WalRecoveryMode,
    /// Optional prefix extractor: enables prefix filters and prefix iteration.
    pub prefix_extractor: Option<Arc<dyn SliceTransform>>,
    /// Check at open that every table the MANIFEST lists exists with the
    /// size the MANIFEST recorded, and refuse to open (Corruption naming
    /// the file) if one does not, instead of failing later on the reads
    /// that reach it (RocksDB's `paranoid_checks`). Block checksums are
    /// verified either way: on every block read from the file, or once per
    /// block and open table when reading through a map (see
    /// [`Options::mmap_reads`]). Default true.
    pub paranoid_checks: bool,
    /// Sync the WAL in the background this often (0 = never; see docs/design.md). Default 0.
    pub wal_sync_interval: Duration,
    /// Obsolete WAL files kept for reuse (RocksDB's `recycle_log_file_num`).
    /// A reused file is overwritten in place: its pages are usually still
    /// in the page cache and its blocks allocated and written, so a write
    /// into it allocates, zeroes and converts nothing, and `fdatasync` need
    /// not update file metadata. Only in effect with `PointInTimeRecovery`
    /// and `SkipAnyCorruptedRecords`: the other modes must treat the stale
    /// bytes after a reused log's end as damage. Default 2 (RocksDB: 0):
    /// with 4 KiB values a fill runs about 1.3x as fast (docs/bench/write-path.md,
    /// "WAL recycling"). The cost is up to this many memtables' worth of
    /// dead WAL bytes while the database is open; `close` deletes them, and
    /// cuts the live WAL after its last record, so a cleanly closed
    /// database opens under every recovery mode. After a crash, a live WAL
    /// that was a recycled file may end in stale bytes that the strict
    /// modes read as damage: reopen under `PointInTimeRecovery` first.
    pub recycle_log_file_num: usize,
    /// Write the WAL through a shared memory map of the log file instead of
    /// a `write` per write group: a record becomes a memory copy into the
    /// page cache, which a process crash keeps just as it keeps a `write`;
    /// `sync` (and every synced write) is still one `fdatasync`. Space is
    /// reserved with `fallocate` 4 MiB at a time before any byte of a
    /// record is copied, so a full disk fails the write with an error
    /// instead of a fault; on a file system without `fallocate` the log is
    /// written with `write`. The log file then ends in zeros past its last
    /// record, which recovery reads as the end of the log (docs/format/wal.md,
    /// "Zero-filled space"). Default true.
    pub wal_mmap_writes: bool,
    /// While level 0 is at or above `level0_slowdown_writes_trigger`, writes
    /// are paced to this many bytes per second (RocksDB's
    /// `delayed_write_rate`). Default 16 MiB/s.
    pub delayed_write_rate: u64,
    /// Write the info log, `LOG` in the database directory (RocksDB's
    /// info log). Default true.
    pub info_log: bool,
    /// Old info logs (`LOG.old.*`) kept. Default 10.
    pub keep_log_file_num: usize,
    /// Called on flushes, compactions, stalls and background errors
    /// (`crate::EventListener`).
    pub listeners: Vec<Arc<dyn crate::EventListener>>,
    /// Key-value separation (RocksDB's integrated BlobDB): flushes write
    /// values of at least `min_blob_size` bytes to blob files and keep a
    /// reference in the table (`docs/format/blob.md`). Blob files already
    /// written stay readable with this off. Default false.
    pub enable_blob_files: bool,
    /// Smallest value, in bytes, written to a blob file. Default 0 (every
    /// value), as in RocksDB.
    pub min_blob_size: u64,
    /// A blob file is closed and a new one started once it reaches this
    /// many bytes. Default 256 MiB.
    pub blob_file_size: u64,
    /// Compression of each value in a blob file. Default none.
    pub blob_compression_type: CompressionType,
    /// Compactions rewrite the values they keep from the oldest blob files
    /// (see `blob_garbage_collection_age_cutoff`) into new ones, so old blob
    /// files drain and are deleted. Default false.
    pub enable_blob_garbage_collection: bool,
    /// The fraction of the live blob files, oldest first by number, whose
    /// values a compaction relocates. Default 0.25.
    pub blob_garbage_collection_age_cutoff: f64,
    /// When the blob files in the age cutoff are at least this fraction
    /// garbage (by bytes), the tables referring to the oldest of them are
    /// compacted even if their level does not need it. 1.0 never forces.
    /// Default 1.0.
    pub blob_garbage_collection_force_threshold: f64,
    /// Bytes read ahead from a blob file when a compaction relocates its
    /// values (0: each value with its own read). Default 0.
    pub blob_compaction_readahead_size: u64,
    /// Caching of blob values read by `get` and iterators (garbage
    /// collection reads past the cache). It pays when blob files are not
    /// in the OS page cache, when values are compressed, or with
    /// `prepopulate_blob_cache`; filled by random reads of a working set
    /// that fits the page cache it can cost more than it saves
    /// (`docs/BENCHMARKS.md`, "Blob cache"). Default
    /// [`BlobCacheConfig::Disabled`].
    pub blob_cache: BlobCacheConfig,
    /// Put values into the blob cache when a flush writes them. No effect
    /// without a blob cache. Default [`PrepopulateBlobCache::Disable`].
    pub prepopulate_blob_cache: PrepopulateBlobCache,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            fs: crate::env::posix::PosixFs::shared(),
            write_buffer_size: 64 << 20,
            write_buffer_index_size: 8 << 20,
            max_write_buffer_number: 2,
            bytes_per_sync: 1 << 20,
            idle_compaction_io: false,
            memtable_prefix_bloom_size_ratio: 0.02,
            memtable_whole_key_filtering: true,
            memtable_hash_index: false,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size_base: 64 << 20,
            block_size: 4096,
            block_restart_interval: 16,
            hash_index: false,
            block_cache_size: 8 << 20,
            bloom_bits_per_key: 10,
            compression: CompressionType::None,
            compression_per_level: Vec::new(),
            table_format_per_level: Vec::new(),
            zip: ZipTableOptions::default(),
            max_open_files: 1000,
            mmap_reads: true,
            wal_recovery_mode: WalRecoveryMode::PointInTimeRecovery,
            prefix_extractor: None,
            paranoid_checks: true,
            wal_sync_interval: Duration::ZERO,
            recycle_log_file_num: 2,
            wal_mmap_writes: true,
            delayed_write_rate: 16 << 20,
            info_log: true,
            keep_log_file_num: 10,
            listeners: Vec::new(),
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            blob_compression_type: CompressionType::None,
            enable_blob_garbage_collection: false,
            blob_garbage_collection_age_cutoff: 0.25,
            blob_garbage_collection_force_threshold: 1.0,
            blob_compaction_readahead_size: 0,
            blob_cache: BlobCacheConfig::Disabled,
            prepopulate_blob_cache: PrepopulateBlobCache::Disable,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("write_buffer_index_size", &self.write_buffer_index_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field(
                "memtable_prefix_bloom_size_ratio",
                &self.memtable_prefix_bloom_size_ratio,
            )
            .field(
                "memtable_whole_key_filtering",
                &self.memtable_whole_key_filtering,
            )
            .field("memtable_hash_index", &self.memtable_hash_index)
            .field(
                "level0_file_num_compaction_trigger",
                &self.level0_file_num_compaction_trigger,
            )
            .field(
                "level0_slowdown_writes_trigger",
                &self.level0_slowdown_writes_trigger,
            )
            .field(
                "level0_stop_writes_trigger",
                &self.level0_stop_writes_trigger,
            )
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field(
                "max_bytes_for_level_multiplier",
                &self.max_bytes_for_level_multiplier,
            )
            .field("target_file_size_base", &self.target_file_size_base)
            .field("block_size", &self.block_size)
            .field("block_restart_interval", &self.block_restart_interval)
            .field("hash_index", &self.hash_index)
            .field("block_cache_size", &self.block_cache_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("compression_per_level", &self.compression_per_level)
            .field("table_format_per_level", &self.table_format_per_level)
            .field("zip", &self.zip)
            .field("max_open_files", &self.max_open_files)
            .field("mmap_reads", &self.mmap_reads)
            .field("wal_mmap_writes", &self.wal_mmap_writes)
            .field("wal_recovery_mode", &self.wal_recovery_mode)
            .field(
                "prefix_extractor",
                &self.prefix_extractor.as_ref().map(|p| p.name().to_string()),
            )
            .field("paranoid_checks", &self.paranoid_checks)
            .field("wal_sync_interval", &self.wal_sync_interval)
            .field("recycle_log_file_num", &self.recycle_log_file_num)
            .field("delayed_write_rate", &self.delayed_write_rate)
            .field("info_log", &self.info_log)
            .field("keep_log_file_num", &self.keep_log_file_num)
            .field("listeners", &self.listeners.len())
            .field("enable_blob_files", &self.enable_blob_files)
            .field("min_blob_size", &self.min_blob_size)
            .field("blob_file_size", &self.blob_file_size)
            .field("blob_compression_type", &self.blob_compression_type)
            .field(
                "enable_blob_garbage_collection",
                &self.enable_blob_garbage_collection,
            )
            .field(
                "blob_garbage_collection_age_cutoff",
                &self.blob_garbage_collection_age_cutoff,
            )
            .field(
                "blob_garbage_collection_force_threshold",
                &self.blob_garbage_collection_force_threshold,
            )
            .field(
                "blob_compaction_readahead_size",
                &self.blob_compaction_readahead_size,
            )
            .field("blob_cache", &self.blob_cache)
            .field("prepopulate_blob_cache", &self.prepopulate_blob_cache)
            .finish()
    }
}

impl Options {
    /// Compression used for files written to `level`.
    pub fn compression_for_level(&self, level: usize) -> CompressionType {
        self.compression_per_level
            .get(level)
            .copied()
            .unwrap_or(self.compression)
    }

    /// Table format of files written to `level`.
    pub fn table_format_for_level(&self, level: usize) -> TableFormat {
        self.table_format_per_level
            .get(level)
            .copied()
            .unwrap_or_default()
    }

    /// Levels `level` and deeper are written as [`TableFormat::Zip`], the
    /// ones above block-based (`cairndb bench --table_format=zip
    /// --zip_from_level=N`).
    pub fn set_zip_from_level(&mut self, level: usize) {
        self.table_format_per_level = (0..NUM_LEVELS)
            .map(|l| {
                if l >= level {
                    TableFormat::Zip
                } else {
                    TableFormat::BlockBased
                }
            })
            .collect();
    }

    /// WAL files actually kept for reuse under the recovery mode in force.
    pub fn effective_recycle_log_file_num(&self) -> usize {
        match self.wal_recovery_mode {
            WalRecoveryMode::PointInTimeRecovery | WalRecoveryMode::SkipAnyCorruptedRecords => {
                self.recycle_log_file_num
            }
            _ => 0,
        }
    }

    /// Size limit of `level` (level >= 1).
    pub fn max_bytes_for_level(&self, level: usize) -> u64 {
        let mut v = self.max_bytes_for_level_base as f64;
        for _ in 1..level {
            v *= self.max_bytes_for_level_multiplier;
        }
        v as u64
    }

    /// Bytes of key filter per memtable (0: none).
    pub(crate) fn memtable_filter_bytes(&self) -> usize {
        if self.memtable_whole_key_filtering {
            (self.write_buffer_size as f64 * self.memtable_prefix_bloom_size_ratio) as usize
        } else {
            0
        }
    }

    /// Slots of each memtable's hash index (0: none); see
    /// [`Options::memtable_hash_index`].
    pub(crate) fn memtable_hash_slots(&self) -> usize {
        if !self.memtable_hash_index {
            return 0;
        }
        let searched = match self.write_buffer_index_size {
            0 => self.write_buffer_size,
            n => n.min(self.write_buffer_size),
        };
        (searched / 64)
            .max(1)
            .saturating_mul(4)
            .div_ceil(3)
            .min(MEMTABLE_HASH_MAX_SLOTS)
    }

    /// Rejects values the engine cannot honour; the error names the option.
    pub fn validate(&self) -> Result<()> {
        fn bad(name: &str, why: &str) -> Result<()> {
            Err(Error::invalid(format!("option {name}: {why}")))
        }
        if self.write_buffer_size < 64 << 10 {
            return bad("write_buffer_size", "must be at least 64 KiB");
        }
        if self.write_buffer_index_size != 0 && self.write_buffer_index_size < 64 << 10 {
            return bad(
                "write_buffer_index_size",
                "must be 0 (no limit) or at least 64 KiB",
            );
        }
        if self.write_buffer_size > 1 << 34 {
            return bad("write_buffer_size", "must be at most 16 GiB");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number", "must be at least 2");
        }
        if !(0.0..=0.25).contains(&self.memtable_prefix_bloom_size_ratio) {
            return bad(
                "memtable_prefix_bloom_size_ratio",
                "must be between 0 and 0.25",
            );
        }
        if self.level0_file_num_compaction_trigger < 1 {
            return bad("level0_file_num_compaction_trigger", "must be at least 1");
        }
        if self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger {
            return bad(
                "level0_slowdown_writes_trigger",
                "must be >= level0_file_num_compaction_trigger",
            );
        }
        if self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger {
            return bad(
                "level0_stop_writes_trigger",
                "must be >= level0_slowdown_writes_trigger",
            );
        }
        if self.max_bytes_for_level_base < 1 << 16 {
            return bad("max_bytes_for_level_base", "must be at least 64 KiB");
        }
        if self.max_bytes_for_level_multiplier.is_nan() || self.max_bytes_for_level_multiplier < 2.0
        {
            return bad("max_bytes_for_level_multiplier", "must be at least 2");
        }
        if self.target_file_size_base < 1 << 12 {
            return bad("target_file_size_base", "must be at least 4 KiB");
        }
        if self.block_size < 256 || self.block_size > 1 << 24 {
            return bad("block_size", "must be between 256 bytes and 16 MiB");
        }
        if self.block_restart_interval < 1 || self.block_restart_interval > 1 << 16 {
            return bad("block_restart_interval", "must be between 1 and 65536");
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key", "must be at most 64");
        }
        if self.delayed_write_rate < 1024 {
            return bad(
                "delayed_write_rate",
                "must be at least 1024 bytes per second",
            );
        }
        if self.recycle_log_file_num > 64 {
            return bad("recycle_log_file_num", "must be at most 64");
        }
        if self.max_open_files < 16 {
            return bad("max_open_files", "must be at least 16");
        }
        let z = &self.zip;
        if z.dict_size > 16 << 20 {
            return bad("zip.dict_size", "must be at most 16 MiB");
        }
        if !(0.0..1.0).contains(&z.level_trial_gain) {
            return bad("zip.level_trial_gain", "must be in [0, 1)");
        }
        if z.min_match != 0 && !(3..=7).contains(&z.min_match) {
            return bad("zip.min_match", "must be 0 or in 3..=7");
        }
        if !(1..=crate::sst::zip::format::ZIP_FORMAT_VERSION).contains(&z.format_version) {
            return bad("zip.format_version", "must be 1, 2, 3 or 4");
        }
        if !(z.sample_ratio > 0.0 && z.sample_ratio <= 1.0) {
            return bad("zip.sample_ratio", "must be in (0, 1]");
        }
        if z.group_size < 1 || z.group_size > 256 {
            return bad("zip.group_size", "must be between 1 and 256");
        }
        if !(-7..=22).contains(&z.compression_level) {
            return bad("zip.compression_level", "must be in -7..=22");
        }
        if z.soft_working_mem_limit < 1 << 20 {
            return bad("zip.soft_working_mem_limit", "must be at least 1 MiB");
        }
        if z.hard_working_mem_limit < z.soft_working_mem_limit {
            return bad(
                "zip.hard_working_mem_limit",
                "must be >= zip.soft_working_mem_limit",
            );
        }
        if self.table_format_per_level.len() > NUM_LEVELS {
            return bad("table_format_per_level", "has more entries than levels");
        }
        if self.blob_file_size < 1 << 10 {
            return bad("blob_file_size", "must be at least 1 KiB");
        }
        if !(0.0..=1.0).contains(&self.blob_garbage_collection_age_cutoff) {
            return bad("blob_garbage_collection_age_cutoff", "must be in [0, 1]");
        }
        if !(0.0..=1.0).contains(&self.blob_garbage_collection_force_threshold) {
            return bad(
                "blob_garbage_collection_force_threshold",
                "must be in [0, 1]",
            );
        }
        if self.blob_compaction_readahead_size > 64 << 20 {
            return bad("blob_compaction_readahead_size", "must be at most 64 MiB");
        }
        if self.blob_cache == BlobCacheConfig::SharedWithBlockCache && self.block_cache_size == 0 {
            return bad(
                "blob_cache",
                "shared with the block cache, but block_cache_size is 0 (no block cache)",
            );
        }
        for (level, c) in self
            .compression_per_level
            .iter()
            .chain([&self.compression, &self.blob_compression_type])
            .enumerate()
        {
            if let CompressionType::Zstd(l) = c {
                if !(-7..=22).contains(l) {
                    return bad(
                        "compression_per_level",
                        &format!("zstd level {l} at index {level} not in -7..=22"),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Options for a single write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fdatasync the WAL before the write is acknowledged.
    pub sync: bool,
    /// Do not write to the WAL: the write is lost on a crash unless flushed.
    pub disable_wal: bool,
}

/// Options for reads and iterators.
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of the latest state.
    pub snapshot: Option<crate::Snapshot>,
    /// With a prefix extractor: the iterator stops at the first key whose
    /// prefix differs from the prefix of the key it was positioned with.
    pub prefix_same_as_start: bool,
    /// Upper bound (exclusive) for iteration.
    pub iterate_upper_bound: Option<Vec<u8>>,
    /// Lower bound (inclusive) for iteration.
    pub iterate_lower_bound: Option<Vec<u8>>,
    /// Do not insert blocks read by this operation into the block cache.
    pub fill_cache_off: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        Options::default().validate().unwrap();
    }

    #[test]
    fn memtable_hash_slots_follow_the_searched_size_and_are_capped() {
        let mut o = Options::default();
        assert_eq!(o.memtable_hash_slots(), 0, "off by default");
        o.memtable_hash_index = true;
        o.write_buffer_index_size = 8 << 20;
        assert_eq!(
            o.memtable_hash_slots(),
            ((8 << 20) / 64 * 4usize).div_ceil(3)
        );
        o.write_buffer_index_size = 0;
        o.write_buffer_size = 16 << 30;
        assert_eq!(o.memtable_hash_slots(), MEMTABLE_HASH_MAX_SLOTS);
    }

    #[test]
    fn write_buffer_index_size_is_zero_or_at_least_64_kib() {
        let with = |n| Options {
            write_buffer_index_size: n,
            ..Options::default()
        };
        with(0).validate().unwrap();
        with(64 << 10).validate().unwrap();
        let e = with(1000).validate().unwrap_err().to_string();
        assert!(e.contains("write_buffer_index_size"), "{e}");
    }

    #[test]
    fn bad_option_named_in_error() {
        let o = Options {
            max_write_buffer_number: 1,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("max_write_buffer_number"), "{e}");
        let o = Options {
            level0_stop_writes_trigger: 1,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("level0_stop_writes_trigger"), "{e}");
        let o = Options {
            blob_cache: BlobCacheConfig::SharedWithBlockCache,
            block_cache_size: 0,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("blob_cache"), "{e}");
    }

    #[test]
    fn compression_parse() {
        assert_eq!(
            CompressionType::parse("none").unwrap(),
            CompressionType::None
        );
        assert_eq!(CompressionType::parse("LZ4").unwrap(), CompressionType::Lz4);
        assert_eq!(
            CompressionType::parse("kNoCompression").unwrap(),
            CompressionType::None
        );
        assert_eq!(
            CompressionType::parse("zstd").unwrap(),
            CompressionType::Zstd(3)
        );
        assert_eq!(
            CompressionType::parse("zstd:19").unwrap(),
            CompressionType::Zstd(19)
        );
        assert!(CompressionType::parse("zstd:99").is_err());
        assert!(CompressionType::parse("brotli").is_err());
    }

    #[test]
    fn level_sizes_grow() {
        let o = Options::default();
        assert_eq!(o.max_bytes_for_level(1), 256 << 20);
        assert_eq!(o.max_bytes_for_level(2), 2560 << 20);
    }
}
