//! RocksDB behind the benchmark [`Engine`] trait (feature `rocksdb`): the
//! `rocksdb` crate 0.23.0 (bindings from RocksDB 9.9.3's C API) linked
//! dynamically against the release RocksDB 9.10.0 library in
//! shared/peers/rocksdb-9.10.0 (see build.rs), with db_bench flags mapped to
//! the RocksDB options of the same names.

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, CompactOptions, DBCompressionType,
    DBRawIterator, Options, WriteBatch, WriteOptions, DB,
};

use super::engine::{not_applicable_notes, EResult, Engine, EngineIter, Op};
use super::flags::Flags;

/// An open RocksDB database.
pub struct RocksEngine {
    db: DB,
    wo: WriteOptions,
}

fn es(e: rocksdb::Error) -> String {
    e.to_string()
}

impl RocksEngine {
    /// Opens (creating) the database at `path` with db_bench's option mapping.
    pub fn open(path: &Path, f: &Flags, notes: &mut Vec<String>) -> EResult<RocksEngine> {
        not_applicable_notes(f, "rocksdb", notes);
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(f.write_buffer_size as usize);
        o.set_max_write_buffer_number(f.max_write_buffer_number as i32);
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
        let comp = match f.compression_type.as_str() {
            "none" => DBCompressionType::None,
            "snappy" => DBCompressionType::Snappy,
            "zlib" => DBCompressionType::Zlib,
            "bzip2" => DBCompressionType::Bz2,
            "lz4" => DBCompressionType::Lz4,
            "lz4hc" => DBCompressionType::Lz4hc,
            s if s.starts_with("zstd") => DBCompressionType::Zstd,
            other => {
                notes.push(format!(
                    "--compression_type={other}: unknown to RocksDB, using none"
                ));
                DBCompressionType::None
            }
        };
        o.set_compression_type(comp);
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
        let db = DB::open(&o, path).map_err(es)?;
        let mut wo = WriteOptions::default();
        wo.set_sync(f.sync);
        wo.disable_wal(f.disable_wal);
        Ok(RocksEngine { db, wo })
    }
}

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

struct RocksIter<'a>(DBRawIterator<'a>);

impl EngineIter for RocksIter<'_> {
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
        self.db.put_opt(key, value, &self.wo).map_err(es)
    }
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        Ok(self.db.get_pinned(key).map_err(es)?.map(|v| v.to_vec()))
    }
    fn delete(&self, key: &[u8]) -> EResult<()> {
        self.db.delete_opt(key, &self.wo).map_err(es)
    }
    fn write(&self, ops: &[Op<'_>]) -> EResult<()> {
        let mut b = WriteBatch::default();
        for op in ops {
            match op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
            }
        }
        self.db.write_opt(b, &self.wo).map_err(es)
    }
    fn iter(&self) -> EResult<Box<dyn EngineIter + '_>> {
        Ok(Box::new(RocksIter(self.db.raw_iterator())))
    }
    fn flush(&self) -> EResult<()> {
        self.db.flush().map_err(es)
    }
    fn compact(&self) -> EResult<()> {
        // db_bench's `compact` is CompactRange over everything. Flush first,
        // force the bottommost level to be rewritten too (the default skips
        // it without a compaction filter, leaving its tombstones and
        // overwritten versions), and wait for what the compaction triggers.
        self.db.flush().map_err(es)?;
        let mut co = CompactOptions::default();
        co.set_exclusive_manual_compaction(true);
        co.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        self.db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &co);
        self.wait_for_compactions()
    }
    fn wait_for_compactions(&self) -> EResult<()> {
        loop {
            let pending = self
                .db
                .property_int_value("rocksdb.compaction-pending")
                .map_err(es)?
                .unwrap_or(0);
            let running = self
                .db
                .property_int_value("rocksdb.num-running-compactions")
                .map_err(es)?
                .unwrap_or(0);
            if pending == 0 && running == 0 {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    fn stats(&self) -> String {
        self.db
            .property_value("rocksdb.stats")
            .ok()
            .flatten()
            .unwrap_or_default()
    }
    fn close(&self) -> EResult<()> {
        self.db.flush_wal(true).map_err(es)
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
