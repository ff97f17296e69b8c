//! Sorted string tables: immutable files of sorted internal keys
//! (`docs/format/sstable.md`).
//!
//! `builder` writes a block-based table front to back; `table` opens a table
//! of either format and serves point lookups and iterators; `zip` is the
//! searchable-compression format (`docs/format/ziptable.md`); `block`, `filter`, `hash_index`, `properties` and `format` are the
//! pieces of the file format. Tables are immutable once finished, so a `Table`
//! is shared read-only (`Arc<Table>`) without locks.

pub mod block;
pub mod builder;
pub mod filter;
pub mod format;
pub mod hash_index;
pub mod properties;
pub mod table;
pub mod zip;

pub use builder::{TableBuilder, TableFileInfo, TableOptions};
pub use properties::TableProperties;
pub use table::{BlockTable, BlockTableIter, Table, TableIter};
pub use zip::{ZipBuildEnv, ZipMemBudget, ZipStats, ZipTable, ZipTableBuilder};

use std::path::Path;
use std::sync::Arc;

use crate::env::Fs;
use crate::error::Result;
use crate::options::{Options, TableFormat};

/// A table being written by a flush or compaction, in the format configured
/// for its level (`Options::table_format_for_level`).
pub enum OutputBuilder {
    /// Block-based.
    Block(TableBuilder),
    /// Searchable compression.
    Zip(ZipTableBuilder),
}

impl OutputBuilder {
    /// Creates table `number` in `dir` for `level`. Zip builds may spool to
    /// `filename::temp_file_name(dir, number)` and take memory from `budget`.
    pub fn create(
        fs: &Arc<dyn Fs>,
        dir: &Path,
        opts: &Options,
        number: u64,
        level: usize,
        budget: &Arc<ZipMemBudget>,
    ) -> Result<OutputBuilder> {
        let mut file = fs.create(&crate::filename::table_file_name(dir, number))?;
        file.write_behind(opts.bytes_per_sync);
        Ok(match opts.table_format_for_level(level) {
            TableFormat::BlockBased => OutputBuilder::Block(TableBuilder::new(
                TableOptions::from_options(opts, level),
                file,
            )),
            TableFormat::Zip => OutputBuilder::Zip(ZipTableBuilder::new(
                opts.zip.clone(),
                opts.prefix_extractor
                    .as_ref()
                    .map(|p| p.name().to_string())
                    .unwrap_or_default(),
                file,
                ZipBuildEnv {
                    fs: fs.clone(),
                    tmp_path: crate::filename::temp_file_name(dir, number),
                    budget: budget.clone(),
                },
            )),
        })
    }

    /// Adds an entry (internal keys strictly increasing).
    #[inline]
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        match self {
            OutputBuilder::Block(b) => b.add(ikey, value),
            OutputBuilder::Zip(b) => b.add(ikey, value),
        }
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        match self {
            OutputBuilder::Block(b) => b.num_entries(),
            OutputBuilder::Zip(b) => b.num_entries(),
        }
    }

    /// The size compaction compares with `target_file_size_base`: the file
    /// size so far for block-based tables, the input bytes for zip tables.
    pub fn estimated_file_size(&self) -> u64 {
        match self {
            OutputBuilder::Block(b) => b.estimated_file_size(),
            OutputBuilder::Zip(b) => b.estimated_file_size(),
        }
    }

    /// Writes the rest of the table and syncs it.
    pub fn finish(self) -> Result<TableFileInfo> {
        match self {
            OutputBuilder::Block(b) => b.finish(),
            OutputBuilder::Zip(b) => b.finish(),
        }
    }

    /// Drops the table unfinished (the caller deletes the file).
    pub fn abandon(self) {
        match self {
            OutputBuilder::Block(b) => b.abandon(),
            OutputBuilder::Zip(b) => b.abandon(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::env::mem::MemFs;
    use crate::env::Fs;
    use crate::filename::{self, FileType};
    use crate::{Db, Options, WriteOptions};

    /// Every table and blob file a flush or a compaction writes asks its
    /// file for write-behind every `Options::bytes_per_sync` bytes (0
    /// included).
    #[test]
    fn flush_and_compaction_outputs_get_bytes_per_sync_as_write_behind() {
        for every in [12_345u64, 0] {
            let fs = MemFs::new();
            let opts = Options {
                fs: Arc::new(fs.clone()),
                bytes_per_sync: every,
                enable_blob_files: true,
                min_blob_size: 8,
                ..Options::default()
            };
            let db = Db::open("/db", opts).unwrap();
            for round in 0..3u32 {
                for i in 0..100u32 {
                    let k = format!("k{i:04}");
                    db.put(&WriteOptions::default(), k.as_bytes(), &round.to_le_bytes())
                        .unwrap();
                    // A value large enough for a blob file.
                    let big = format!("b{i:04}");
                    db.put(&WriteOptions::default(), big.as_bytes(), &[round as u8; 64])
                        .unwrap();
                }
                db.flush().unwrap();
            }
            db.compact_range(None, None).unwrap();
            let files = fs.list_dir(std::path::Path::new("/db")).unwrap();
            let kind = |t: FileType| {
                files
                    .iter()
                    .filter(move |n| matches!(filename::parse_file_name(n), Some((k, _)) if k == t))
            };
            assert!(kind(FileType::Table).count() > 0);
            assert!(kind(FileType::Blob).count() > 0);
            for t in kind(FileType::Table).chain(kind(FileType::Blob)) {
                let p = std::path::Path::new("/db").join(t);
                assert_eq!(fs.write_behind_hint(&p), Some(every), "{t}");
            }
        }
    }
}
