//! Open table readers, bounded by a count of files (`max_open_files`).
//!
//! Invariants: an entry for file N is a `Table` opened from
//! `filename::table_file_name(dir, N)`; tables are immutable, so a cached one
//! never goes stale (callers `evict` when a file is deleted). Locking: the
//! sharded `quick_cache` cache; two threads missing on the same file at once
//! may both open it, and one of the two readers is dropped, which is harmless.

use std::path::PathBuf;
use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::cache::BlockCache;
use crate::env::Fs;
use crate::error::Result;
use crate::filename::table_file_name;
use crate::options::SliceTransform;
use crate::sst::{Table, ZipStats};

/// A bounded cache of open tables.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    tables: Cache<u64, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
    prefix_extractor: Option<Arc<dyn SliceTransform>>,
    zip_stats: Arc<ZipStats>,
    mmap_reads: bool,
}

impl TableCache {
    /// A cache of up to `capacity_files` open tables in `dir`.
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        capacity_files: usize,
        block_cache: Option<Arc<BlockCache>>,
        prefix_extractor: Option<Arc<dyn SliceTransform>>,
        zip_stats: Arc<ZipStats>,
        mmap_reads: bool,
    ) -> TableCache {
        TableCache {
            fs,
            dir,
            tables: Cache::new(capacity_files.max(1)),
            block_cache,
            prefix_extractor,
            zip_stats,
            mmap_reads,
        }
    }

    /// The open table for `file_number`, opening it on a miss.
    pub fn get(&self, file_number: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(&file_number) {
            return Ok(t);
        }
        let path = table_file_name(&self.dir, file_number);
        let file = self.fs.open_random(&path)?;
        let table = Arc::new(Table::open_with_stats(
            file,
            file_number,
            self.block_cache.clone(),
            self.prefix_extractor.clone(),
            self.zip_stats.clone(),
            self.mmap_reads,
        )?);
        self.tables.insert(file_number, table.clone());
        Ok(table)
    }

    /// Forgets the reader of `file_number` (its file is being deleted).
    pub fn evict(&self, file_number: u64) {
        self.tables.remove(&file_number);
    }

    /// Tables held open now.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// True when no table is held open.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The block cache shared by the tables.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::mem::MemFs;
    use crate::key::{make_internal_key, ValueType};
    use crate::sst::{TableBuilder, TableOptions};
    use std::path::Path;

    #[test]
    fn opens_caches_and_evicts() {
        let fs = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        for n in 1..=5u64 {
            let f = fs.create(&table_file_name(dir, n)).unwrap();
            let mut b = TableBuilder::new(TableOptions::default(), f);
            b.add(
                &make_internal_key(format!("k{n}").as_bytes(), n, ValueType::Value),
                b"v",
            )
            .unwrap();
            b.finish().unwrap();
        }
        let tc = TableCache::new(
            fs.clone(),
            dir.to_path_buf(),
            16,
            None,
            None,
            Arc::new(ZipStats::default()),
            true,
        );
        let t1 = tc.get(1).unwrap();
        let t1b = tc.get(1).unwrap();
        assert!(Arc::ptr_eq(&t1, &t1b));
        assert_eq!(t1.file_number(), 1);
        for n in 1..=5 {
            assert_eq!(tc.get(n).unwrap().properties().num_entries, 1);
        }
        tc.evict(1);
        let t1c = tc.get(1).unwrap();
        assert!(!Arc::ptr_eq(&t1, &t1c));
        let e = tc.get(99).unwrap_err();
        assert!(e.to_string().contains("000099.sst"), "{e}");
    }
}
