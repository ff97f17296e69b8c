//! Open table readers, bounded by a count of files (`max_open_files`).
//!
//! Invariants: an entry for file N is a `Table` opened from
//! `filename::table_file_name(dir, N)`; tables are immutable, so a cached one
//! never goes stale (callers `evict` when a file is deleted). Locking: the
//! sharded `quick_cache` cache; of threads missing on the same file at once,
//! one opens it and the others wait for its reader (`TableCache::get`).
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
    /// Threads missing on the same file at once wait for the first to open
    /// it (the cache's placeholder) rather than each opening a copy: 8
    /// readers starting together opened every zip table up to 8 times,
    /// decoding its dictionary and key index each time, and left 46 MB in
    /// their malloc arenas against about 20 MB live. If that open fails,
    /// the next waiter tries.
    pub fn get(&self, file_number: u64) -> Result<Arc<Table>> {
        self.tables.get_or_insert_with(&file_number, || {
            let path = table_file_name(&self.dir, file_number);
            let file = self.fs.open_random(&path)?;
            Ok(Arc::new(Table::open_with_stats(
                file,
                file_number,
                self.block_cache.clone(),
                self.prefix_extractor.clone(),
                self.zip_stats.clone(),
                self.mmap_reads,
            )?))
        })
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

    /// Wraps a file system, counting `open_random` calls and making each
    /// take a while, so that concurrent misses overlap.
    struct SlowOpens {
        inner: Arc<dyn Fs>,
        opens: std::sync::atomic::AtomicUsize,
    }

    impl Fs for SlowOpens {
        fn create(&self, p: &Path) -> Result<Box<dyn crate::env::WritableFile>> {
            self.inner.create(p)
        }
        fn reuse_writable(&self, o: &Path, n: &Path) -> Result<Box<dyn crate::env::WritableFile>> {
            self.inner.reuse_writable(o, n)
        }
        fn open_sequential(&self, p: &Path) -> Result<Box<dyn crate::env::SequentialFile>> {
            self.inner.open_sequential(p)
        }
        fn open_random(&self, p: &Path) -> Result<Arc<dyn crate::env::RandomAccessFile>> {
            self.opens.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(30));
            self.inner.open_random(p)
        }
        fn exists(&self, p: &Path) -> bool {
            self.inner.exists(p)
        }
        fn file_size(&self, p: &Path) -> Result<u64> {
            self.inner.file_size(p)
        }
        fn remove_file(&self, p: &Path) -> Result<()> {
            self.inner.remove_file(p)
        }
        fn rename(&self, f: &Path, t: &Path) -> Result<()> {
            self.inner.rename(f, t)
        }
        fn create_dir_all(&self, p: &Path) -> Result<()> {
            self.inner.create_dir_all(p)
        }
        fn list_dir(&self, p: &Path) -> Result<Vec<String>> {
            self.inner.list_dir(p)
        }
        fn sync_dir(&self, p: &Path) -> Result<()> {
            self.inner.sync_dir(p)
        }
        fn lock(&self, p: &Path) -> Result<Box<dyn crate::env::FileLock>> {
            self.inner.lock(p)
        }
    }

    /// Eight readers missing on one table at once open it once and share
    /// the reader: each used to open its own copy (decoding a zip table's
    /// dictionary and key index eight times over), and the copies'
    /// freed memory stayed in the readers' malloc arenas.
    #[test]
    fn concurrent_misses_open_a_table_once() {
        let mem = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        let f = mem.create(&table_file_name(dir, 1)).unwrap();
        let mut b = TableBuilder::new(TableOptions::default(), f);
        b.add(&make_internal_key(b"k", 1, ValueType::Value), b"v")
            .unwrap();
        b.finish().unwrap();
        let fs = Arc::new(SlowOpens {
            inner: mem,
            opens: Default::default(),
        });
        for capacity in [16, usize::MAX] {
            fs.opens.store(0, std::sync::atomic::Ordering::SeqCst);
            let tc = Arc::new(TableCache::new(
                fs.clone(),
                dir.to_path_buf(),
                capacity,
                None,
                None,
                Arc::new(ZipStats::default()),
                true,
            ));
            let start = Arc::new(std::sync::Barrier::new(8));
            let readers: Vec<_> = (0..8)
                .map(|_| {
                    let (tc, start) = (tc.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        tc.get(1).unwrap()
                    })
                })
                .collect();
            let tables: Vec<_> = readers.into_iter().map(|r| r.join().unwrap()).collect();
            assert_eq!(fs.opens.load(std::sync::atomic::Ordering::SeqCst), 1);
            assert!(tables.iter().all(|t| Arc::ptr_eq(t, &tables[0])));
        }
    }
}
