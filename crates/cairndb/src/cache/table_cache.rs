//! Open table readers, bounded by a count of files (`max_open_files`).
//!
//! Invariants: an entry for file N is a `Table` opened from
//! `filename::table_file_name(dir, N)`; tables are immutable, so a cached one
//! never goes stale (callers `evict` when a file is deleted). Locking: the
//! sharded `quick_cache` cache; two threads missing on the same file at once
//! may both open it, and one of the two readers is dropped, which is harmless.
//!
//! With no bound (`max_open_files == usize::MAX`), [`TableCache::reader`]
//! also pins each reader to its file's [`FileMeta`], so that a point read,
//! which holds the version and so the metadata, reaches the table without
//! hashing into the cache or touching a reference count shared by every
//! reading thread (on 32 readers it was 22% of a point read's time). The
//! reader then closes when the last version listing the file is dropped.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::cache::BlockCache;
use crate::env::Fs;
use crate::error::Result;
use crate::filename::table_file_name;
use crate::options::SliceTransform;
use crate::sst::{Table, ZipStats};
use crate::version::FileMeta;

/// A bounded cache of open tables.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    tables: Cache<u64, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
    prefix_extractor: Option<Arc<dyn SliceTransform>>,
    zip_stats: Arc<ZipStats>,
    mmap_reads: bool,
    /// No bound on open readers: pin them to their files' metadata.
    pin: bool,
}

/// A table reader for one read: borrowed from its file's metadata when
/// pinned there, else a counted reference.
pub enum TableRef<'a> {
    /// Pinned to the file's metadata (see the module doc).
    Pinned(&'a Table),
    /// From the cache.
    Shared(Arc<Table>),
}

impl Deref for TableRef<'_> {
    type Target = Table;
    #[inline]
    fn deref(&self) -> &Table {
        match self {
            TableRef::Pinned(t) => t,
            TableRef::Shared(t) => t,
        }
    }
}

impl TableCache {
    /// A cache of up to `capacity_files` open tables in `dir`
    /// (`usize::MAX`: no bound, readers pinned to their files).
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
            // Sized for a large database when unbounded (pinned readers
            // do not depend on it).
            tables: Cache::new(capacity_files.clamp(1, 1 << 20)),
            block_cache,
            prefix_extractor,
            zip_stats,
            mmap_reads,
            pin: capacity_files == usize::MAX,
        }
    }

    /// The reader of `f`'s table for one read: pinned to `f` when readers
    /// are unbounded (opened on first use), else from the cache.
    #[inline]
    pub fn reader<'a>(&self, f: &'a FileMeta) -> Result<TableRef<'a>> {
        if !self.pin {
            return self.get(f.number).map(TableRef::Shared);
        }
        if let Some(t) = f.reader.get() {
            return Ok(TableRef::Pinned(t));
        }
        let t = self.get(f.number)?;
        Ok(TableRef::Pinned(f.reader.get_or_pin(t)))
    }

    /// The reader pinned to `f`, when readers are pinned and `f`'s is open
    /// (no cache lookup, no reference count: for prefetching).
    #[inline]
    pub fn pinned_reader<'a>(&self, f: &'a FileMeta) -> Option<&'a Table> {
        if self.pin {
            f.reader.get().map(|t| &**t)
        } else {
            None
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

    /// Metadata naming table `number` (only the number is read).
    fn file_meta(number: u64) -> FileMeta {
        FileMeta {
            number,
            ..FileMeta::default()
        }
    }

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
        // Bounded: a counted reference from the cache.
        let m2 = file_meta(2);
        assert!(matches!(tc.reader(&m2).unwrap(), TableRef::Shared(_)));
        assert!(m2.reader.get().is_none());
        tc.evict(1);
        let t1c = tc.get(1).unwrap();
        assert!(!Arc::ptr_eq(&t1, &t1c));
        let e = tc.get(99).unwrap_err();
        assert!(e.to_string().contains("000099.sst"), "{e}");
    }

    /// Unbounded: the reader is pinned to the file's metadata on first
    /// use, and later reads borrow it from there.
    #[test]
    fn unbounded_cache_pins_readers_to_their_files() {
        let fs = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        let f = fs.create(&table_file_name(dir, 3)).unwrap();
        let mut b = TableBuilder::new(TableOptions::default(), f);
        b.add(&make_internal_key(b"k", 1, ValueType::Value), b"v")
            .unwrap();
        b.finish().unwrap();
        let tc = TableCache::new(
            fs.clone(),
            dir.to_path_buf(),
            usize::MAX,
            None,
            None,
            Arc::new(ZipStats::default()),
            true,
        );
        let m = file_meta(3);
        let first: *const Table = match tc.reader(&m).unwrap() {
            TableRef::Pinned(t) => t,
            TableRef::Shared(_) => panic!("an unbounded cache must pin"),
        };
        let pinned = m.reader.get().expect("pinned on first use");
        assert!(std::ptr::eq(first, &**pinned));
        match tc.reader(&m).unwrap() {
            TableRef::Pinned(t) => assert!(std::ptr::eq(t, first)),
            TableRef::Shared(_) => panic!("an unbounded cache must pin"),
        }
        assert_eq!(pinned.properties().num_entries, 1);
        let missing = FileMeta {
            number: 98,
            ..m.clone()
        };
        match tc.reader(&missing) {
            Err(e) => assert!(e.to_string().contains("000098.sst"), "{e}"),
            Ok(_) => panic!("table 98 does not exist"),
        }
    }
}
