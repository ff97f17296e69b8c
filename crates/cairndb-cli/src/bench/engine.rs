//! The storage-engine abstraction the benchmarks drive (put, get, delete,
//! write batch, iterate, seek, flush, compact, stats), its CairnDB
//! implementation, and the mapping of db_bench flags onto CairnDB options.

use std::path::Path;

use cairndb::{
    CompressionType, Db, Options, ReadOptions, TableFormat, WriteBatch, WriteOptions,
    ZipTableOptions,
};

use super::flags::Flags;

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
    /// Reads one key; true when found.
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>>;
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
    let bloom = if f.bloom_bits < 0 {
        0
    } else {
        f.bloom_bits as u32
    };
    // --max_background_jobs/--max_background_compactions configure
    // --engine=rocksdb only: CairnDB runs one flush and one compaction thread.
    let mut opts = Options {
        write_buffer_size: f.write_buffer_size as usize,
        max_write_buffer_number: f.max_write_buffer_number.max(2),
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
            1_000_000
        } else {
            (f.open_files as usize).max(20)
        },
        ..Options::default()
    };
    if let Some(r) = f.memtable_bloom_size_ratio {
        opts.memtable_prefix_bloom_size_ratio = r;
    }
    if let Some(w) = f.memtable_whole_key_filtering {
        opts.memtable_whole_key_filtering = w;
    }
    opts.zip = ZipTableOptions {
        dict_size: f.zip_dict_size,
        sample_ratio: f.zip_sample_ratio,
        group_size: f.zip_group_size,
        compression_level: f.zip_level,
        ..ZipTableOptions::default()
    };
    if f.table_format == TableFormat::Zip {
        opts.set_zip_from_level(f.zip_from_level);
    }
    if !f.cairndb_only_set.is_empty() {
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
         Options::zip = {{ dict_size: {}, group_size: {}, sample_ratio: {}, compression_level: {} }}",
        levels.join(", "),
        z.dict_size,
        z.group_size,
        z.sample_ratio,
        z.compression_level
    )
}

/// Notes, one per flag, for the CairnDB-only flags given to another engine.
#[cfg(any(feature = "rocksdb", feature = "leveldb"))]
pub fn not_applicable_notes(f: &Flags, engine: &str, notes: &mut Vec<String>) {
    for name in &f.cairndb_only_set {
        notes.push(format!(
            "--{name}: not applicable to {engine} (a CairnDB table-format flag); ignored"
        ));
    }
}

/// CairnDB behind the [`Engine`] trait.
pub struct CairnEngine {
    db: Db,
    wo: WriteOptions,
}

impl CairnEngine {
    /// Opens (creating) the database at `path`.
    pub fn open(path: &Path, f: &Flags, notes: &mut Vec<String>) -> EResult<CairnEngine> {
        let opts = cairndb_options(f, notes)?;
        let db = Db::open(path, opts).map_err(|e| e.to_string())?;
        Ok(CairnEngine {
            db,
            wo: WriteOptions {
                sync: f.sync,
                disable_wal: f.disable_wal,
            },
        })
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
        self.db.put(&self.wo, key, value).map_err(es)
    }
    fn get(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        self.db.get(&ReadOptions::default(), key).map_err(es)
    }
    fn delete(&self, key: &[u8]) -> EResult<()> {
        self.db.delete(&self.wo, key).map_err(es)
    }
    fn write(&self, ops: &[Op<'_>]) -> EResult<()> {
        let mut b = WriteBatch::new();
        for op in ops {
            match op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
            }
        }
        self.db.write(&self.wo, b).map_err(es)
    }
    fn iter(&self) -> EResult<Box<dyn EngineIter + '_>> {
        Ok(Box::new(CairnIter(
            self.db.iter(&ReadOptions::default()).map_err(es)?,
        )))
    }
    fn flush(&self) -> EResult<()> {
        self.db.flush().map_err(es)
    }
    fn compact(&self) -> EResult<()> {
        // compact_range flushes the memtable and rewrites every level top
        // down, synchronously; then let any compaction it triggered finish.
        self.db.compact_range(None, None).map_err(es)?;
        self.db.wait_for_compactions().map_err(es)
    }
    fn wait_for_compactions(&self) -> EResult<()> {
        self.db.wait_for_compactions().map_err(es)
    }
    fn stats(&self) -> String {
        self.db
            .property("cairndb.stats")
            .unwrap_or_else(|| cairndb::format_stats(&self.db.stats()))
    }
    fn close(&self) -> EResult<()> {
        self.db.close().map_err(es)
    }
}
