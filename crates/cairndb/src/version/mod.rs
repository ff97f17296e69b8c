//! Versions: the immutable set of live table files per level and of live
//! blob files, and the MANIFEST that records how it changes.
//!
//! A [`Version`] never changes once built; readers hold it by `Arc` and so
//! keep its files (tables and blob files) alive while they read. A blob
//! file is in a version until every record in it is garbage
//! (`docs/format/blob.md`, "MANIFEST"). Invariants: level 0 is ordered
//! newest first (by largest sequence number) and its files may overlap;
//! levels >= 1 are ordered by key and their files never overlap (no user key
//! spans two files of one level). `VersionSet` (set.rs) owns the current
//! version and the MANIFEST writer; see its doc for locking.

pub mod edit;
pub mod set;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cache::table_cache::TableCache;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{compare_internal, parse_internal_key, user_key, SeqNo, ValueType};
use crate::options::NUM_LEVELS;
use crate::sst::TableIter;
pub use edit::{BlobFileMeta, BlobGarbage, FileMeta, VersionEdit};

/// What a lookup in the tables found.
#[derive(Debug, PartialEq, Eq)]
pub enum TableGet {
    /// The newest visible entry is a value.
    Value(Vec<u8>),
    /// The newest visible entry is a tombstone.
    Deleted,
    /// The newest visible entry is a blob reference (its bytes).
    BlobIndex(Vec<u8>),
}

/// A live blob file and the garbage counted against it so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFileState {
    /// The file (one `Arc` for its whole life in the version history).
    pub meta: Arc<BlobFileMeta>,
    /// Records no table refers to any more.
    pub garbage_count: u64,
    /// Their bytes.
    pub garbage_bytes: u64,
}

/// The live files, per level, and the live blob files.
#[derive(Debug, Default, Clone)]
pub struct Version {
    /// Files per level (see the module doc for the order of each level).
    pub files: [Vec<Arc<FileMeta>>; NUM_LEVELS],
    /// Blob files by number.
    pub blob_files: BTreeMap<u64, BlobFileState>,
}

impl Version {
    /// Total record bytes of the live blob files, and their garbage bytes.
    pub fn blob_bytes(&self) -> (u64, u64) {
        self.blob_files
            .values()
            .fold((0, 0), |(t, g), b| (t + b.meta.bytes, g + b.garbage_bytes))
    }

    /// Total bytes in `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files[level].iter().map(|f| f.size).sum()
    }

    /// Number of sorted runs a read merges: each level-0 file, and each
    /// non-empty deeper level.
    pub fn num_sorted_runs(&self) -> usize {
        self.files[0].len() + self.files[1..].iter().filter(|f| !f.is_empty()).count()
    }

    /// Number of files at `level`.
    pub fn num_files(&self, level: usize) -> usize {
        self.files[level].len()
    }

    /// Sorts level 0 newest first and levels >= 1 by smallest key.
    pub(crate) fn sort_levels(&mut self) {
        self.files[0].sort_by(|a, b| {
            b.largest_seq
                .cmp(&a.largest_seq)
                .then(b.number.cmp(&a.number))
        });
        for level in 1..NUM_LEVELS {
            self.files[level].sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
        }
    }

    /// Checks the level invariants; returns a description of the first violation.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        for level in 1..NUM_LEVELS {
            for w in self.files[level].windows(2) {
                if w[0].largest_user_key() >= w[1].smallest_user_key() {
                    return Err(format!(
                        "level {level}: files {} and {} overlap",
                        w[0].number, w[1].number
                    ));
                }
            }
        }
        Ok(())
    }

    /// Index of the first file in a sorted level whose largest key >= `ikey`.
    fn find_file(files: &[Arc<FileMeta>], ikey: &[u8]) -> usize {
        files.partition_point(|f| compare_internal(&f.largest, ikey) == Ordering::Less)
    }

    /// Point lookup through the tables: the newest entry for `ukey` with
    /// sequence <= the one in `lookup` (an internal lookup key).
    pub fn get(
        &self,
        tables: &TableCache,
        lookup: &[u8],
        fill_cache: bool,
    ) -> Result<Option<TableGet>> {
        self.find(tables, lookup, fill_cache, |_, t, _, v| match t {
            ValueType::Value => TableGet::Value(v.to_vec()),
            ValueType::BlobIndex => TableGet::BlobIndex(v.to_vec()),
            ValueType::Deletion => TableGet::Deleted,
        })
    }

    /// Point lookup that hands the newest entry for the user key of `lookup`
    /// with sequence <= the one in `lookup` to `f` (the number of the table
    /// holding it, its type, sequence and value, borrowed from the block)
    /// instead of copying it.
    pub fn find<R>(
        &self,
        tables: &TableCache,
        lookup: &[u8],
        fill_cache: bool,
        f: impl FnMut(u64, ValueType, SeqNo, &[u8]) -> R,
    ) -> Result<Option<R>> {
        let h = xxhash_rust::xxh3::xxh3_64(user_key(lookup));
        self.point_files(lookup)
            .find(tables, lookup, h, fill_cache, f)
    }

    /// The tables a point lookup of the internal key `lookup` probes (the
    /// deeper levels' binary searches done here, once).
    pub fn point_files(&self, lookup: &[u8]) -> PointFiles<'_> {
        let ukey = user_key(lookup);
        let mut deeper = [None; NUM_LEVELS - 1];
        for (slot, files) in deeper.iter_mut().zip(&self.files[1..]) {
            *slot = files
                .get(Self::find_file(files, lookup))
                .filter(|f| ukey >= f.smallest_user_key());
        }
        PointFiles {
            level0: &self.files[0],
            deeper,
        }
    }

    /// Files of `level` whose user-key range intersects `[begin, end]`
    /// (None = unbounded). For level 0 the range is widened to the union of
    /// the overlapping files, as level-0 files overlap each other.
    pub fn overlapping_inputs(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        let mut lo = begin.map(|b| b.to_vec());
        let mut hi = end.map(|e| e.to_vec());
        let mut out: Vec<Arc<FileMeta>> = Vec::new();
        let mut i = 0;
        let files = &self.files[level];
        while i < files.len() {
            let f = &files[i];
            i += 1;
            let before = hi.as_deref().is_some_and(|h| f.smallest_user_key() > h);
            let after = lo.as_deref().is_some_and(|l| f.largest_user_key() < l);
            if before || after {
                continue;
            }
            if level == 0 {
                let mut restart = false;
                if lo.as_deref().is_some_and(|l| f.smallest_user_key() < l) {
                    lo = Some(f.smallest_user_key().to_vec());
                    restart = true;
                }
                if hi.as_deref().is_some_and(|h| f.largest_user_key() > h) {
                    hi = Some(f.largest_user_key().to_vec());
                    restart = true;
                }
                if restart {
                    out.clear();
                    i = 0;
                    continue;
                }
            }
            out.push(f.clone());
        }
        out
    }

    /// True when some file in a level deeper than `level` may hold `ukey`.
    pub fn key_may_exist_below(&self, level: usize, ukey: &[u8]) -> bool {
        for l in level + 1..NUM_LEVELS {
            for f in &self.files[l] {
                if ukey >= f.smallest_user_key() && ukey <= f.largest_user_key() {
                    return true;
                }
            }
        }
        false
    }

    /// Internal iterators over every file: one per level-0 file, one
    /// concatenating iterator per non-empty deeper level.
    pub fn iterators(
        self: &Arc<Self>,
        tables: &Arc<TableCache>,
        fill_cache: bool,
    ) -> Vec<Box<dyn InternalIterator>> {
        let mut out: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(self.num_sorted_runs());
        for f in &self.files[0] {
            match tables.get(f.number) {
                Ok(t) => out.push(Box::new(t.iter(fill_cache))),
                Err(e) => out.push(Box::new(crate::iter::EmptyIterator(Some(e)))),
            }
        }
        for level in 1..NUM_LEVELS {
            if !self.files[level].is_empty() {
                out.push(Box::new(LevelIter::of_level(
                    self.clone(),
                    level,
                    tables.clone(),
                    fill_cache,
                )));
            }
        }
        out
    }

    /// Like [`Version::iterators`], but only over files that may hold a key
    /// starting with `prefix`: their key range must reach the prefix and
    /// their prefix filter must not exclude it. Levels keep one
    /// concatenating iterator over their remaining files.
    pub fn prefix_iterators(
        &self,
        tables: &Arc<TableCache>,
        fill_cache: bool,
        prefix: &[u8],
    ) -> Vec<Box<dyn InternalIterator>> {
        let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
        let in_range = |f: &FileMeta| {
            f.largest_user_key() >= prefix
                && (f.smallest_user_key() <= prefix || f.smallest_user_key().starts_with(prefix))
        };
        // Opens a candidate; Ok(None) when its filter rules the prefix out.
        let open = |f: &FileMeta| -> Result<Option<Arc<crate::sst::Table>>> {
            let t = tables.get(f.number)?;
            Ok(t.may_contain_prefix(prefix).then_some(t))
        };
        for f in self.files[0].iter().filter(|f| in_range(f)) {
            match open(f) {
                Ok(Some(t)) => out.push(Box::new(t.iter(fill_cache))),
                Ok(None) => {}
                Err(e) => out.push(Box::new(crate::iter::EmptyIterator(Some(e)))),
            }
        }
        for level in 1..NUM_LEVELS {
            let mut keep = Vec::new();
            for f in self.files[level].iter().filter(|f| in_range(f)) {
                match open(f) {
                    Ok(Some(_)) => keep.push(f.clone()),
                    Ok(None) => {}
                    Err(e) => out.push(Box::new(crate::iter::EmptyIterator(Some(e)))),
                }
            }
            if !keep.is_empty() {
                out.push(Box::new(LevelIter::new(keep, tables.clone(), fill_cache)));
            }
        }
        out
    }

    /// Largest sequence number in any file.
    pub fn max_seq(&self) -> SeqNo {
        self.files
            .iter()
            .flatten()
            .map(|f| f.largest_seq)
            .max()
            .unwrap_or(0)
    }
}

/// Iterates the files of one sorted level as one sequence, opening each
/// table only when the cursor reaches it.
pub struct LevelIter {
    files: LevelFiles,
    tables: Arc<TableCache>,
    fill_cache: bool,
    index: usize,
    cur: Option<TableIter>,
    err: Option<crate::Error>,
}

/// The files a [`LevelIter`] walks: a list of its own, or one level of a
/// version it keeps alive (no copy of the level's list per iterator).
enum LevelFiles {
    Owned(Vec<Arc<FileMeta>>),
    Level(Arc<Version>, usize),
}

impl LevelFiles {
    #[inline]
    fn get(&self) -> &[Arc<FileMeta>] {
        match self {
            LevelFiles::Owned(v) => v,
            LevelFiles::Level(v, l) => &v.files[*l],
        }
    }
}

impl LevelIter {
    /// An iterator over `files` (sorted, non-overlapping).
    pub fn new(files: Vec<Arc<FileMeta>>, tables: Arc<TableCache>, fill_cache: bool) -> Self {
        Self::over(LevelFiles::Owned(files), tables, fill_cache)
    }

    /// An iterator over level `level` (1 or deeper) of `version`.
    pub fn of_level(
        version: Arc<Version>,
        level: usize,
        tables: Arc<TableCache>,
        fill_cache: bool,
    ) -> Self {
        Self::over(LevelFiles::Level(version, level), tables, fill_cache)
    }

    fn over(files: LevelFiles, tables: Arc<TableCache>, fill_cache: bool) -> Self {
        LevelIter {
            index: files.get().len(),
            files,
            tables,
            fill_cache,
            cur: None,
            err: None,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.index = index;
        self.cur = None;
        if index >= self.files.get().len() {
            return false;
        }
        match self.tables.get(self.files.get()[index].number) {
            Ok(t) => {
                self.cur = Some(t.iter(self.fill_cache));
                true
            }
            Err(e) => {
                if self.err.is_none() {
                    self.err = Some(e);
                }
                false
            }
        }
    }

    fn cur_valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|c| c.valid())
    }

    /// True (and the iterator stopped) when the current table iterator
    /// ended because of an error, which is kept for `status`.
    fn take_child_error(&mut self) -> bool {
        if let Some(Err(e)) = self.cur.as_ref().map(|c| c.status()) {
            self.err.get_or_insert(e);
            self.cur = None;
            return true;
        }
        false
    }

    /// After a child ran off its end: note its error, move to the next file.
    #[inline]
    fn skip_forward(&mut self) {
        if !self.cur_valid() {
            self.next_nonempty_file();
        }
    }

    #[cold]
    fn next_nonempty_file(&mut self) {
        while !self.cur_valid() {
            if self.take_child_error() {
                return;
            }
            if self.index + 1 >= self.files.get().len() || self.err.is_some() {
                self.cur = None;
                self.index = self.files.get().len();
                return;
            }
            if self.open(self.index + 1) {
                if let Some(c) = self.cur.as_mut() {
                    c.seek_to_first();
                }
            }
        }
    }

    fn skip_backward(&mut self) {
        while !self.cur_valid() {
            if self.take_child_error() {
                return;
            }
            if self.index == 0 || self.index > self.files.get().len() || self.err.is_some() {
                self.cur = None;
                self.index = self.files.get().len();
                return;
            }
            if self.open(self.index - 1) {
                if let Some(c) = self.cur.as_mut() {
                    c.seek_to_last();
                }
            }
        }
    }
}

impl InternalIterator for LevelIter {
    #[inline]
    fn valid(&self) -> bool {
        self.err.is_none() && self.cur_valid()
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
        }
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        if !self.files.get().is_empty() && self.open(self.files.get().len() - 1) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
        }
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        let i = Version::find_file(self.files.get(), target);
        if self.open(i) {
            if let Some(c) = self.cur.as_mut() {
                c.seek(target);
            }
        }
        self.skip_forward();
    }
    #[inline]
    fn next(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    #[inline]
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.key())
    }
    #[inline]
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.value())
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        match &self.cur {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}
/// The tables a point lookup probes, in probe order: the level-0 files
/// whose user-key range holds its key (newest first), then at most one file
/// per deeper level. Chosen once per read ([`Version::point_files`]) and
/// walked twice: to prefetch, then to probe.
pub struct PointFiles<'a> {
    level0: &'a [Arc<FileMeta>],
    /// Per level below 0, the one file whose range may hold the key.
    deeper: [Option<&'a Arc<FileMeta>>; NUM_LEVELS - 1],
}

impl<'a> PointFiles<'a> {
    /// The files, in probe order, for user key `ukey` (the lookup's).
    fn iter<'k>(&'k self, ukey: &'k [u8]) -> impl Iterator<Item = &'a FileMeta> + 'k {
        self.level0
            .iter()
            .filter(move |f| ukey >= f.smallest_user_key() && ukey <= f.largest_user_key())
            .chain(self.deeper.iter().flatten().copied())
            .map(|f| &**f)
    }

    /// Starts loading the first cache line each file's table reads in a
    /// lookup of `ukey` (hashing to `h`), so that the probes wait for memory
    /// together rather than in turn. Only pinned readers (no cache lookups).
    #[inline]
    pub fn prefetch(&self, tables: &TableCache, ukey: &[u8], h: u64) {
        for f in self.iter(ukey) {
            if let Some(t) = tables.pinned_reader(f) {
                t.prefetch_hash(h);
            }
        }
    }

    /// [`Version::find`] over these files, given `h = xxh3_64(user key of
    /// lookup)`.
    pub fn find<R>(
        &self,
        tables: &TableCache,
        lookup: &[u8],
        h: u64,
        fill_cache: bool,
        mut f: impl FnMut(u64, ValueType, SeqNo, &[u8]) -> R,
    ) -> Result<Option<R>> {
        let ukey = user_key(lookup);
        for meta in self.iter(ukey) {
            let t = tables.reader(meta)?;
            let number = meta.number;
            let r = t.get_hashed(lookup, h, fill_cache, |k, v| match parse_internal_key(k) {
                Some(p) if p.user_key == ukey => Some(f(number, p.vtype, p.seq, v)),
                _ => None,
            })?;
            if let Some(r) = r.flatten() {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}
