//! Statistics: the engine's counters, `DbStats`, the named properties and
//! the text of the `stats` property. Counters are relaxed atomics; reading
//! them takes no lock beyond a super-version copy.

use super::*;

/// Counters behind `stats()` and the `cairndb.stats` property.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) user_bytes_written: AtomicU64,
    pub(super) wal_bytes_written: AtomicU64,
    pub(super) wal_syncs: AtomicU64,
    pub(super) write_groups: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) flush_bytes_written: AtomicU64,
    pub(super) flushes: AtomicU64,
    pub(super) compaction_bytes_read: AtomicU64,
    pub(super) compaction_bytes_written: AtomicU64,
    pub(super) compactions: AtomicU64,
    pub(super) trivial_moves: AtomicU64,
    pub(super) stall_micros: AtomicU64,
    pub(super) stalls: AtomicU64,
    pub(super) slowdowns: AtomicU64,
    pub(super) obsolete_delete_failures: AtomicU64,
    pub(super) blob_bytes_written: AtomicU64,
    pub(super) blob_bytes_relocated: AtomicU64,
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
    /// Zip point reads whose decoded group was in the block cache.
    pub zip_point_cache_hits: u64,
    /// Zip point reads that passed by a full block cache that almost no
    /// point read hits, neither probing nor filling it.
    pub zip_point_cache_skips: u64,
    /// Bytes in memtables (mutable and immutable).
    pub memtable_bytes: u64,
    /// Immutable memtables waiting to be flushed.
    pub immutable_memtables: usize,
    /// Last sequence number.
    pub last_sequence: u64,
    /// Live snapshots.
    pub snapshots: usize,
    /// Blob files in the current version.
    pub blob_files: usize,
    /// Record bytes of those blob files.
    pub blob_file_bytes: u64,
    /// Of those, bytes no table refers to any more.
    pub blob_garbage_bytes: u64,
    /// Record bytes written to blob files (flushes and garbage collection).
    pub blob_bytes_written: u64,
    /// Record bytes garbage collection rewrote into new blob files.
    pub blob_bytes_relocated: u64,
    /// Bytes read from blob files: values read by `get` and iterators on
    /// a blob cache miss (or with no blob cache), and garbage
    /// collection's reads (readahead included).
    pub blob_bytes_read: u64,
    /// Blob values found in the blob cache (`Options::blob_cache`).
    pub blob_cache_hits: u64,
    /// Blob values looked up in the blob cache and read from their file.
    pub blob_cache_misses: u64,
    /// Bytes held by the blob cache; with `SharedWithBlockCache` the whole
    /// shared cache's, the same as `block_cache_usage`.
    pub blob_cache_usage: u64,
}

impl DbStats {
    /// (flush + compaction + blob file bytes written) / user bytes written.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.flush_bytes_written + self.compaction_bytes_written + self.blob_bytes_written) as f64
            / self.user_bytes_written as f64
    }
}

impl DbInner {
    pub(super) fn stats(&self) -> DbStats {
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
        s.blob_files = sv.version.blob_files.len();
        (s.blob_file_bytes, s.blob_garbage_bytes) = sv.version.blob_bytes();
        s.blob_bytes_written = ld(&c.blob_bytes_written);
        s.blob_bytes_relocated = ld(&c.blob_bytes_relocated);
        let b = self.blob_cache.stats();
        s.blob_bytes_read = ld(&b.bytes_read);
        s.blob_cache_hits = ld(&b.cache_hits);
        s.blob_cache_misses = ld(&b.cache_misses);
        s.blob_cache_usage = self.blob_cache.value_cache().map_or(0, |c| c.usage());
        if let Some(bc) = &self.block_cache {
            s.block_cache_hits = bc.hits();
            s.block_cache_misses = bc.misses();
            s.block_cache_usage = bc.usage();
        }
        s.zip_point_reads = ld(&self.zip_stats.point_reads);
        s.zip_point_read_bytes = ld(&self.zip_stats.point_read_bytes);
        s.zip_iter_groups = ld(&self.zip_stats.iter_groups);
        s.zip_point_cache_hits = ld(&self.zip_stats.point_cache_hits);
        s.zip_point_cache_skips = ld(&self.zip_stats.point_cache_skips);
        s.memtable_bytes = std::iter::once(&sv.mem)
            .chain(sv.imms.iter())
            .map(|m| m.approximate_memory_usage() as u64)
            .sum();
        s.immutable_memtables = sv.imms.len();
        s.last_sequence = self.pipeline.last_seq();
        s.snapshots = self.snapshots.len();
        s
    }

    pub(super) fn property(&self, name: &str) -> Option<String> {
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
            "last-sequence" => Some(self.pipeline.last_seq().to_string()),
            "num-blob-files" => Some(sv.version.blob_files.len().to_string()),
            "total-blob-file-size" => Some(sv.version.blob_bytes().0.to_string()),
            "live-blob-file-size" => {
                let (total, garbage) = sv.version.blob_bytes();
                Some((total - garbage).to_string())
            }
            "live-blob-file-garbage-size" => Some(sv.version.blob_bytes().1.to_string()),
            "blob-cache-usage" => Some(self.stats().blob_cache_usage.to_string()),
            _ => None,
        }
    }
}

/// `N hits, M misses, hit rate R%` of a cache.
fn hits_and_misses(hits: u64, misses: u64) -> String {
    let lookups = hits + misses;
    let rate = if lookups == 0 {
        0.0
    } else {
        100.0 * hits as f64 / lookups as f64
    };
    format!("{hits} hits, {misses} misses, hit rate {rate:.1}%")
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
    if s.blob_files > 0 || s.blob_bytes_written > 0 {
        out.push_str(&format!(
            "Blob files: {} live, {:.2} MB ({:.2} MB garbage); {:.2} MB written, {:.2} MB relocated by GC\n",
            s.blob_files,
            mb(s.blob_file_bytes),
            mb(s.blob_garbage_bytes),
            mb(s.blob_bytes_written),
            mb(s.blob_bytes_relocated)
        ));
    }
    if s.blob_cache_hits + s.blob_cache_misses > 0 || s.blob_bytes_read > 0 {
        out.push_str(&format!(
            "Blob reads: {:.2} MB read from blob files; blob cache {:.2} MB used, {}\n",
            mb(s.blob_bytes_read),
            mb(s.blob_cache_usage),
            hits_and_misses(s.blob_cache_hits, s.blob_cache_misses)
        ));
    }
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
    out.push_str(&format!(
        "Block cache: {:.2} MB used, {}\n",
        mb(s.block_cache_usage),
        hits_and_misses(s.block_cache_hits, s.block_cache_misses)
    ));
    if s.zip_point_reads > 0 || s.zip_iter_groups > 0 {
        out.push_str(&format!(
            "Zip tables: {} point reads, {:.0} bytes decompressed per point read; {} groups decoded by iterators\n",
            s.zip_point_reads,
            s.zip_point_read_bytes as f64 / s.zip_point_reads.max(1) as f64,
            s.zip_iter_groups
        ));
        out.push_str(&format!(
            "Zip point reads and the block cache: {} hits, {} reads that passed the full cache by\n",
            s.zip_point_cache_hits, s.zip_point_cache_skips
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
