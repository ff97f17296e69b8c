//! An open SST file: point lookups ([`Table::get`]) and a two-level iterator
//! ([`BlockTableIter`]) over its entries (`docs/format/sstable.md`).
//!
//! `Table::open` reads the footer and keeps the index block, the filter, the
//! hash index and the properties in memory (all checksum-verified); data
//! blocks are read on
//! demand through the shared [`BlockCache`]. Invariants: a `Table` is
//! immutable after `open`, so it is shared as `Arc<Table>` by any number of
//! threads without locks (positional reads take `&self`). Every error names the
//! file and an offset. Nothing in here panics on file contents.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::env::{FileBytes, RandomAccessFile};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, TRAILER_LEN};
use crate::options::SliceTransform;
use crate::options::TableFormat;
use crate::sst::block::{restart_entry_in, Block, BlockIter, BlockOrigin, BorrowedBlock};
use crate::sst::filter::Filter;
use crate::sst::format::{
    block_crc, decompress_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, COMPRESSION_NONE,
    FOOTER_LEN,
};
use crate::sst::hash_index::HashIndex;
use crate::sst::properties::TableProperties;
use crate::sst::zip::format::ZIP_MAGIC;
use crate::sst::zip::table::{ZipStats, ZipTable, ZipTableIter};
use crate::util::coding::decode_fixed32;
use xxhash_rust::xxh3::xxh3_64;

thread_local! {
    /// Key buffers reused by `Table::get` (index iterator, data iterator), so
    /// that a lookup hitting the cache allocates nothing once warm.
    static GET_KEY_BUFS: Cell<(Vec<u8>, Vec<u8>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

/// An open table of either format, told apart by the magic at the end of
/// the file (`docs/format/sstable.md`, `docs/format/ziptable.md`). Shared as
/// `Arc<Table>`; both formats are immutable and lock-free to read.
#[derive(Debug)]
pub enum Table {
    /// Block-based: data blocks through the block cache.
    Block(Arc<BlockTable>),
    /// Searchable compression: one value group per point read, via mmap
    /// (decoded groups of point reads kept in the block cache).
    Zip(Arc<ZipTable>),
}

impl Table {
    /// Opens a table of either format.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        prefix_extractor: Option<Arc<dyn SliceTransform>>,
    ) -> Result<Table> {
        Table::open_with_stats(
            file,
            file_number,
            cache,
            prefix_extractor,
            Arc::new(ZipStats::default()),
            false,
        )
    }

    /// Opens a table, counting zip-table reads into `zip_stats`. With
    /// `mmap_reads`, a block-based table on a file system that maps files
    /// (`RandomAccessFile::maps_natively`) reads blocks through a map
    /// (`docs/format/sstable.md`, "Reading through a map"); zip tables are
    /// always mapped.
    pub fn open_with_stats(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        prefix_extractor: Option<Arc<dyn SliceTransform>>,
        zip_stats: Arc<ZipStats>,
        mmap_reads: bool,
    ) -> Result<Table> {
        let size = file.size();
        if size >= 8 {
            let mut m = [0u8; 8];
            file.read_exact_at(size - 8, &mut m)?;
            if u64::from_le_bytes(m) == ZIP_MAGIC {
                return Ok(Table::Zip(Arc::new(
                    ZipTable::open(file, file_number, zip_stats)?.with_cache(cache),
                )));
            }
        }
        let mut t = BlockTable::open(file, file_number, cache, prefix_extractor)?;
        if mmap_reads {
            t.map_file()?;
        }
        Ok(Table::Block(Arc::new(t)))
    }

    /// Finds the first entry `>= lookup_ikey` and calls `f(key, value)` on
    /// it. `Ok(None)` when there is none, or when the filter (block-based)
    /// or key index (zip) rules out the user key. The caller checks the
    /// user key.
    #[inline]
    pub fn get<R>(
        &self,
        lookup_ikey: &[u8],
        fill_cache: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        match self {
            Table::Block(t) => t.get(lookup_ikey, fill_cache, f),
            Table::Zip(t) => t.get(lookup_ikey, fill_cache, f),
        }
    }

    /// [`Table::get`] given `h`, the `xxh3_64` of the lookup's user key
    /// (one hash serves every table of a point read).
    #[inline]
    pub fn get_hashed<R>(
        &self,
        lookup_ikey: &[u8],
        h: u64,
        fill_cache: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        match self {
            Table::Block(t) => t.get_hashed(lookup_ikey, h, fill_cache, f),
            Table::Zip(t) => t.get(lookup_ikey, fill_cache, f),
        }
    }

    /// Starts loading the first cache line a point read of the user key
    /// hashing to `h` reads (its hash index slot or filter bits), so that
    /// the tables of one read wait for memory together.
    #[inline]
    pub fn prefetch_hash(&self, h: u64) {
        if let Table::Block(t) = self {
            t.prefetch_hash(h);
        }
    }

    /// An iterator over the whole table.
    pub fn iter(&self, fill_cache: bool) -> TableIter {
        match self {
            Table::Block(t) => TableIter::Block(t.iter(fill_cache)),
            Table::Zip(t) => TableIter::Zip(t.iter(fill_cache)),
        }
    }

    /// False only when no key in the table has `prefix` as its prefix.
    pub fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        match self {
            Table::Block(t) => t.may_contain_prefix(prefix),
            Table::Zip(t) => t.may_contain_prefix(prefix),
        }
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        match self {
            Table::Block(t) => t.properties(),
            Table::Zip(t) => t.properties(),
        }
    }

    /// The table's file number.
    pub fn file_number(&self) -> u64 {
        match self {
            Table::Block(t) => t.file_number(),
            Table::Zip(t) => t.file_number(),
        }
    }

    /// The table's path.
    pub fn path(&self) -> &Path {
        match self {
            Table::Block(t) => t.path(),
            Table::Zip(t) => t.path(),
        }
    }

    /// Bytes in the file.
    pub fn file_size(&self) -> u64 {
        match self {
            Table::Block(t) => t.file_size(),
            Table::Zip(t) => t.file_size(),
        }
    }

    /// The format of the file.
    pub fn format(&self) -> TableFormat {
        match self {
            Table::Block(_) => TableFormat::BlockBased,
            Table::Zip(_) => TableFormat::Zip,
        }
    }

    /// Reads every block or group, verifies its checksum and decodes its
    /// entries. Returns the number of blocks (groups and sections) checked.
    pub fn verify_checksums(&self) -> Result<u64> {
        match self {
            Table::Block(t) => t.verify_checksums(),
            Table::Zip(t) => t.verify_checksums(),
        }
    }
}

/// Iterator over a table of either format.
pub enum TableIter {
    /// Over a block-based table.
    Block(BlockTableIter),
    /// Over a zip table.
    Zip(ZipTableIter),
}

impl TableIter {
    /// File offset of the data block (or zip group) the iterator is
    /// positioned in (for tools that report where an entry lives).
    pub fn data_block_offset(&self) -> Option<u64> {
        match self {
            TableIter::Block(i) => i.data_block_offset(),
            TableIter::Zip(i) => i.data_block_offset(),
        }
    }
}

macro_rules! each_iter {
    ($self:expr, $i:ident => $e:expr) => {
        match $self {
            TableIter::Block($i) => $e,
            TableIter::Zip($i) => $e,
        }
    };
}

impl InternalIterator for TableIter {
    #[inline]
    fn valid(&self) -> bool {
        each_iter!(self, i => i.valid())
    }
    fn seek_to_first(&mut self) {
        each_iter!(self, i => i.seek_to_first())
    }
    fn seek_to_last(&mut self) {
        each_iter!(self, i => i.seek_to_last())
    }
    fn seek(&mut self, target: &[u8]) {
        each_iter!(self, i => i.seek(target))
    }
    #[inline]
    fn next(&mut self) {
        each_iter!(self, i => i.next())
    }
    fn prev(&mut self) {
        each_iter!(self, i => i.prev())
    }
    #[inline]
    fn key(&self) -> &[u8] {
        each_iter!(self, i => i.key())
    }
    #[inline]
    fn value(&self) -> &[u8] {
        each_iter!(self, i => i.value())
    }
    fn status(&self) -> Result<()> {
        each_iter!(self, i => i.status())
    }
}

/// In a block's two bits of `BlockTable::verified`: its checksum was
/// verified through the map.
const VERIFIED: u64 = 1;
/// In a block's two bits of `BlockTable::verified`: it is stored
/// uncompressed (set only with [`VERIFIED`]).
const RAW: u64 = 2;

/// What `BlockTable::mapped_block` found: a verified uncompressed block's
/// range in the map (start, size), or a decoded block.
enum Mapped {
    Raw(usize, usize),
    Block(Arc<Block>),
}

/// A data block for one point read (see `BlockTable::read_block_for_get`).
enum DataBlock<'a> {
    Shared(Arc<Block>),
    Borrowed(BorrowedBlock<'a>),
}

impl std::ops::Deref for DataBlock<'_> {
    type Target = Block;
    #[inline]
    fn deref(&self) -> &Block {
        match self {
            DataBlock::Shared(b) => b,
            DataBlock::Borrowed(b) => b,
        }
    }
}

/// What a hash-index point read settled.
enum HashGet<R, F> {
    /// The answer (`None`: no entry of the key visible in this table).
    Done(Option<R>),
    /// Search the table as without a hash index.
    Search(F),
}

/// What one hash-index candidate held.
enum Candidate<R> {
    /// The visible version of the key.
    Found(R),
    /// The key, but every version of it here is newer than the lookup.
    NoVisibleVersion,
    /// The key's versions run to the end of the block (the answer may be in
    /// the next one).
    RunsPastBlock,
    /// Another key's slot (fingerprint collision).
    Other,
}

/// A block-based table opened for reading (see the module doc).
pub struct BlockTable {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    file_number: u64,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    index: Arc<Block>,
    filter: Option<Filter>,
    /// The hash index over user keys, when the table has one this build
    /// reads (point reads then start there, `hash_get`).
    hash_index: Option<HashIndex>,
    /// Handles of the data blocks by ordinal, when there is a hash index
    /// (so a hash candidate reads one array slot, not the index block).
    block_spans: Box<[BlockHandle]>,
    props: TableProperties,
    /// True when the filter also holds prefixes of the extractor we were given.
    prefix_filter_usable: bool,
    /// The whole file mapped, when blocks are read through a map.
    map: Option<FileBytes>,
    /// A compact search array over the index block's keys, so that a seek
    /// touches a few cache lines instead of decoding about log2(blocks)
    /// entries spread over the index block. `None` when the index is
    /// damaged (seeks then search the block itself and report it).
    index_prefixes: Option<IndexPrefixes>,
    /// Two bits per data block (by its index entry's ordinal; see
    /// [`VERIFIED`] and [`RAW`]): the first set once the block's checksum was
    /// verified through the map, the second then if the block is stored
    /// uncompressed, so a verified raw block is used without touching its
    /// trailer (a cache miss 4 KiB ahead of where a scan reads). Empty when
    /// the index block does not have one restart point per entry (ordinals
    /// unknown): then every read verifies.
    verified: Box<[AtomicU64]>,
}

impl std::fmt::Debug for BlockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockTable")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("file_size", &self.file_size)
            .finish_non_exhaustive()
    }
}

impl BlockTable {
    /// Opens a table: reads and checks the footer, index, filter, properties.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        prefix_extractor: Option<Arc<dyn SliceTransform>>,
    ) -> Result<BlockTable> {
        let path: Arc<Path> = Arc::from(file.path());
        let file_size = file.size();
        if file_size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &*path,
                0,
                format!("file too short to be a table ({file_size} bytes)"),
            ));
        }
        let footer_offset = file_size - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_offset, &mut fb)?;
        let footer = Footer::decode(&path, footer_offset, &fb)?;
        let read = |h: BlockHandle, what: &str| read_contents(&*file, &path, file_size, h, what);
        let index_data = read(footer.index, "index")?;
        let index = Arc::new(Block::new(
            index_data,
            BlockOrigin {
                path: path.clone(),
                offset: footer.index.offset,
            },
        )?);
        let props_data = read(footer.properties, "properties")?;
        let props = TableProperties::decode(&path, footer.properties.offset, &props_data)?;
        let filter = if footer.filter.size > 0 {
            Some(Filter::new(read(footer.filter, "filter")?))
        } else {
            None
        };
        let hash_index = match props.hash_index {
            Some(h) => HashIndex::decode(&path, h.offset, read(h, "hash index")?)?,
            None => None,
        };
        let mut t = BlockTable {
            file,
            path,
            file_number,
            file_size,
            cache,
            footer,
            index,
            filter,
            hash_index,
            block_spans: Box::new([]),
            props,
            prefix_filter_usable: false,
            map: None,
            verified: Box::new([]),
            index_prefixes: None,
        };
        t.index_prefixes = IndexPrefixes::build(&t.index);
        if t.hash_index.is_some() {
            t.block_spans = t.block_handles_by_ordinal()?;
        }
        t.prefix_filter_usable = match &prefix_extractor {
            Some(pe) => {
                !t.props.prefix_extractor_name.is_empty()
                    && pe.name() == t.props.prefix_extractor_name
            }
            None => false,
        };
        Ok(t)
    }

    /// Every data block's handle, by its index entry's ordinal (the index
    /// must have one restart point per entry, as this writer makes it).
    fn block_handles_by_ordinal(&self) -> Result<Box<[BlockHandle]>> {
        let n = self.index.num_restarts();
        let bad = |what: String| Error::corruption(&*self.path, self.footer.index.offset, what);
        if n as u64 != self.props.num_data_blocks {
            return Err(bad(format!(
                "index block has {n} restart points for {} data blocks (a hash index needs one per block)",
                self.props.num_data_blocks
            )));
        }
        (0..n)
            .map(|i| match self.index.restart_entry(i) {
                Ok((k, v)) => self.decode_handle(v, k),
                Err(off) => Err(bad(format!("bad index entry at block offset {off}"))),
            })
            .collect()
    }

    fn origin(&self, offset: u64) -> BlockOrigin {
        BlockOrigin {
            path: self.path.clone(),
            offset,
        }
    }

    /// Reads data blocks through a map of the file from now on, when the
    /// file system maps files (otherwise keeps using `pread`).
    pub fn map_file(&mut self) -> Result<()> {
        if self.file.maps_natively() {
            self.map = Some(self.file.map_all(false)?);
            let blocks = self.index.num_restarts();
            if blocks as u64 == self.props.num_data_blocks {
                self.verified = (0..blocks.div_ceil(32))
                    .map(|_| AtomicU64::new(0))
                    .collect();
            }
        }
        Ok(())
    }

    /// True when data blocks are read through a map.
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    fn read_block_contents(&self, h: BlockHandle, what: &str) -> Result<Vec<u8>> {
        read_contents(&*self.file, &self.path, self.file_size, h, what)
    }

    /// The data block at `h`: through the map when there is one and
    /// `use_map`, else through the block cache and `pread`. `ordinal` is
    /// the position of the block's index entry, when known.
    #[inline]
    fn read_block(
        &self,
        h: BlockHandle,
        ordinal: Option<usize>,
        fill_cache: bool,
        use_map: bool,
    ) -> Result<Arc<Block>> {
        match &self.map {
            Some(map) if use_map => self.read_mapped_block(map, h, ordinal, fill_cache),
            _ => self.read_cached_block(h, fill_cache),
        }
    }

    /// The verified-bits word of the block at `ordinal` and the shift of
    /// its two bits in it.
    #[inline]
    fn verified_bits(&self, ordinal: Option<usize>) -> Option<(&AtomicU64, u32)> {
        let i = ordinal?;
        Some((self.verified.get(i / 32)?, (i % 32) as u32 * 2))
    }

    /// Reads the data block at `h` out of the map. An uncompressed block
    /// points into the map (no copy, no block cache: the page cache holds
    /// it); a compressed one is looked up in the block cache and, on a
    /// miss, decompressed straight from the map. The checksum is verified
    /// the first time a block is read through this table's map (the
    /// `verified` bit), as a block cache verifies a block once when it
    /// enters (`docs/format/sstable.md`, "Reading through a map").
    fn read_mapped_block(
        &self,
        map: &FileBytes,
        h: BlockHandle,
        ordinal: Option<usize>,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
        match self.mapped_block(map, h, ordinal, fill_cache)? {
            Mapped::Block(b) => Ok(b),
            Mapped::Raw(start, size) => Ok(Arc::new(Block::new_mapped(
                map.clone(),
                start,
                size,
                self.origin(h.offset),
            )?)),
        }
    }

    /// The data block at `h` for one point read: an uncompressed block read
    /// through the map is borrowed from it (no allocation, no reference on
    /// the map); others as `read_block` gives them.
    fn read_block_for_get<'a>(
        &'a self,
        h: BlockHandle,
        ordinal: Option<usize>,
        fill_cache: bool,
    ) -> Result<DataBlock<'a>> {
        let Some(map) = &self.map else {
            return self.read_cached_block(h, fill_cache).map(DataBlock::Shared);
        };
        match self.mapped_block(map, h, ordinal, fill_cache)? {
            Mapped::Block(b) => Ok(DataBlock::Shared(b)),
            Mapped::Raw(start, size) => {
                let data = map.get(start..start + size).unwrap_or_default();
                Ok(DataBlock::Borrowed(Block::borrowed(
                    data,
                    self.origin(h.offset),
                )?))
            }
        }
    }

    /// `read_mapped_block` up to the point where an uncompressed block is
    /// known good: its range in the map, or the decoded block.
    fn mapped_block(
        &self,
        map: &FileBytes,
        h: BlockHandle,
        ordinal: Option<usize>,
        fill_cache: bool,
    ) -> Result<Mapped> {
        if self.props.compression != COMPRESSION_NONE {
            if let Some(b) = self.cached_block(h) {
                return Ok(Mapped::Block(b));
            }
        }
        let size = check_handle(&self.path, self.file_size, h, "data")?;
        // check_handle bounds offset + size + trailer by the file size,
        // which is the map's length.
        let start = h.offset as usize;
        let raw = map
            .get(start..start + size + BLOCK_TRAILER_LEN)
            .ok_or_else(|| {
                Error::corruption(
                    &*self.path,
                    h.offset,
                    "data block runs past the mapped file",
                )
            })?;
        let bits = self.verified_bits(ordinal);
        let known = bits.map_or(0, |(word, shift)| {
            (word.load(AtomicOrdering::Relaxed) >> shift) & (VERIFIED | RAW)
        });
        let t = if known == VERIFIED | RAW {
            COMPRESSION_NONE
        } else if known == VERIFIED {
            raw.get(size).copied().unwrap_or(COMPRESSION_NONE)
        } else {
            let t = check_block_crc(&self.path, h.offset, raw, size, "data")?;
            if let Some((word, shift)) = bits {
                let flags = if t == COMPRESSION_NONE {
                    VERIFIED | RAW
                } else {
                    VERIFIED
                };
                word.fetch_or(flags << shift, AtomicOrdering::Relaxed);
            }
            t
        };
        if t == COMPRESSION_NONE {
            return Ok(Mapped::Raw(start, size));
        }
        let body = raw.get(..size).unwrap_or_default();
        let data = decompress_block(&self.path, h.offset, t, body)?;
        self.new_cached_block(h, data, fill_cache)
            .map(Mapped::Block)
    }

    /// The data block at `h`, through the block cache and `pread`.
    fn read_cached_block(&self, h: BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        if let Some(b) = self.cached_block(h) {
            return Ok(b);
        }
        let data = self.read_block_contents(h, "data")?;
        self.new_cached_block(h, data, fill_cache)
    }

    /// The block at `h` when the block cache holds it.
    #[inline]
    fn cached_block(&self, h: BlockHandle) -> Option<Arc<Block>> {
        self.cache.as_ref()?.get(self.file_number, h.offset)
    }

    /// Wraps the uncompressed bytes of the block at `h`, and puts it in the
    /// block cache when `fill_cache`.
    fn new_cached_block(
        &self,
        h: BlockHandle,
        data: Vec<u8>,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
        let block = Arc::new(Block::new(data, self.origin(h.offset))?);
        if fill_cache {
            if let Some(c) = &self.cache {
                c.insert(self.file_number, h.offset, block.clone());
            }
        }
        Ok(block)
    }

    fn decode_handle(&self, v: &[u8], index_key: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode_varint(v).ok_or_else(|| {
            Error::corruption(
                &*self.path,
                self.footer.index.offset,
                format!(
                    "bad block handle in index entry ({} key bytes)",
                    index_key.len()
                ),
            )
        })
    }

    /// Finds the first entry `>= lookup_ikey` and calls `f(key, value)` on it.
    /// `Ok(None)` when there is none, or when the filter rules out the user
    /// key (then no data block is read). The caller checks the user key.
    pub fn get<R>(
        &self,
        lookup_ikey: &[u8],
        fill_cache: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        let h = lookup_ikey
            .len()
            .checked_sub(TRAILER_LEN)
            .and_then(|n| lookup_ikey.get(..n))
            .map_or(0, xxh3_64);
        self.get_hashed(lookup_ikey, h, fill_cache, f)
    }

    /// Starts loading the hash index slot (or, without one, the filter
    /// byte) a lookup of the user key hashing to `h` reads first.
    #[inline]
    pub fn prefetch_hash(&self, h: u64) {
        if let Some(hi) = &self.hash_index {
            hi.prefetch(h);
        } else if let Some(f) = &self.filter {
            f.prefetch_hash(h);
        }
    }

    /// [`BlockTable::get`] given `h = xxh3_64(user key of lookup_ikey)`.
    pub fn get_hashed<R>(
        &self,
        lookup_ikey: &[u8],
        h: u64,
        fill_cache: bool,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        if lookup_ikey.len() < TRAILER_LEN {
            return Err(Error::invalid(format!(
                "lookup key of {} bytes is not an internal key",
                lookup_ikey.len()
            )));
        }
        let f = match &self.hash_index {
            Some(hi) => match self.hash_get(hi, lookup_ikey, h, fill_cache, f)? {
                HashGet::Done(r) => return Ok(r),
                HashGet::Search(f) => f,
            },
            None => f,
        };
        if let Some(filter) = &self.filter {
            if !filter.may_contain_hash(h) {
                return Ok(None);
            }
        }
        let (ibuf, mut dbuf) = GET_KEY_BUFS.with(|c| c.take());
        // The index and the data block are borrowed: no reference count
        // that other readers of this table also write.
        let mut index_it = BlockIter::with_key_buf(&*self.index, ibuf);
        self.seek_index(&mut index_it, lookup_ikey);
        let mut f = Some(f);
        let mut result = Ok(None);
        while index_it.valid() {
            let block = match self
                .decode_handle(index_it.value(), index_it.key())
                .and_then(|h| self.read_block_for_get(h, index_it.restart_ordinal(), fill_cache))
            {
                Ok(b) => b,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let mut it = BlockIter::with_key_buf(&*block, dbuf);
            it.seek(lookup_ikey);
            if it.valid() {
                if let Some(f) = f.take() {
                    result = Ok(Some(f(it.key(), it.value())));
                }
            } else if let Err(e) = it.status() {
                result = Err(e);
            }
            dbuf = it.into_key_buf();
            if !matches!(result, Ok(None)) {
                break;
            }
            // Ran off the end of this block (or it was empty): the answer, if
            // any, is the first entry of the next block.
            index_it.next();
        }
        if matches!(result, Ok(None)) {
            index_it.status()?;
        }
        let ibuf = index_it.into_key_buf();
        GET_KEY_BUFS.with(|c| c.set((ibuf, dbuf)));
        result
    }

    /// A point read through the hash index: `Done` with the answer `get`
    /// gives, or `Search` (handing `f` back) when the answer lies past the
    /// data block the index named (versions of the key that run into the
    /// next block) or the index has no empty slot left to end a probe.
    fn hash_get<R, F: FnOnce(&[u8], &[u8]) -> R>(
        &self,
        hi: &HashIndex,
        lookup_ikey: &[u8],
        h: u64,
        fill_cache: bool,
        f: F,
    ) -> Result<HashGet<R, F>> {
        let user_key = key::user_key(lookup_ikey);
        let mut probe = hi.probe(h);
        let (ibuf, mut dbuf) = GET_KEY_BUFS.with(|c| c.take());
        let mut f = Some(f);
        let mut result = None;
        for (ordinal, restart) in probe.by_ref() {
            match self.hash_candidate(
                ordinal,
                restart,
                user_key,
                lookup_ikey,
                fill_cache,
                dbuf,
                &mut f,
            ) {
                (Ok(Candidate::Other), buf) => dbuf = buf,
                (r, buf) => {
                    dbuf = buf;
                    result = Some(r);
                    break;
                }
            }
        }
        GET_KEY_BUFS.with(|c| c.set((ibuf, dbuf)));
        let give_back = |f: &mut Option<F>| match f.take() {
            Some(f) => Ok(HashGet::Search(f)),
            None => Ok(HashGet::Done(None)),
        };
        match result {
            Some(Err(e)) => Err(e),
            Some(Ok(Candidate::Found(r))) => Ok(HashGet::Done(Some(r))),
            Some(Ok(Candidate::NoVisibleVersion)) => Ok(HashGet::Done(None)),
            Some(Ok(Candidate::RunsPastBlock)) => give_back(&mut f),
            Some(Ok(Candidate::Other)) | None if probe.ended_on_empty() => Ok(HashGet::Done(None)),
            Some(Ok(Candidate::Other)) | None => give_back(&mut f),
        }
    }

    /// Checks one hash-index candidate: the restart run at byte `offset` of
    /// data block `ordinal`. Returns the key buffer it borrowed with the
    /// outcome.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn hash_candidate<R, F: FnOnce(&[u8], &[u8]) -> R>(
        &self,
        ordinal: u64,
        offset: u64,
        user_key: &[u8],
        lookup_ikey: &[u8],
        fill_cache: bool,
        dbuf: Vec<u8>,
        f: &mut Option<F>,
    ) -> (Result<Candidate<R>>, Vec<u8>) {
        let blocks = self.block_spans.len();
        let Some((ordinal, h)) = usize::try_from(ordinal)
            .ok()
            .and_then(|o| Some((o, *self.block_spans.get(o)?)))
        else {
            return (
                Err(self
                    .hash_index_corruption(format!("slot names data block {ordinal} of {blocks}"))),
                dbuf,
            );
        };
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let block = match &self.map {
            None => self.read_cached_block(h, fill_cache).map(DataBlock::Shared),
            Some(map) => match self.mapped_block(map, h, Some(ordinal), fill_cache) {
                Err(e) => Err(e),
                Ok(Mapped::Block(b)) => Ok(DataBlock::Shared(b)),
                Ok(Mapped::Raw(start, size)) => {
                    let data = map.get(start..start + size).unwrap_or_default();
                    // Fast path: the entry at the offset is the key's visible
                    // version: read that entry alone (not the block's restart
                    // array at its far end).
                    if let Some((k, v)) = restart_entry_in(data, offset) {
                        match key::user_key(k).cmp(user_key) {
                            // Keys ascend from here: not this key's slot.
                            std::cmp::Ordering::Greater => return (Ok(Candidate::Other), dbuf),
                            std::cmp::Ordering::Equal
                                if !key::compare_internal(k, lookup_ikey).is_lt() =>
                            {
                                let r = match f.take() {
                                    Some(f) => Candidate::Found(f(k, v)),
                                    None => Candidate::NoVisibleVersion,
                                };
                                return (Ok(r), dbuf);
                            }
                            // Further into the run: scan below.
                            _ => {}
                        }
                    }
                    Block::borrowed_for_restart(data, self.origin(h.offset))
                        .map(DataBlock::Borrowed)
                }
            },
        };
        let block = match block {
            Ok(b) => b,
            Err(e) => return (Err(e), dbuf),
        };
        let mut it = BlockIter::with_key_buf(&*block, dbuf);
        it.seek_to_offset(offset);
        if !it.valid() && it.status().is_ok() {
            let e = self.hash_index_corruption(format!(
                "slot names offset {offset} past the entries of the block at {}",
                h.offset
            ));
            return (Err(e), it.into_key_buf());
        }
        // The key's first entry is in this restart run: skip smaller keys.
        while it.valid() && key::user_key(it.key()) < user_key {
            it.next();
        }
        let outcome = if !it.valid() {
            match it.status() {
                Err(e) => Err(e),
                // Not here: another key's slot with the same fingerprint.
                Ok(()) => Ok(Candidate::Other),
            }
        } else if key::user_key(it.key()) != user_key {
            Ok(Candidate::Other)
        } else {
            // Versions newer than the lookup's sequence come first.
            while it.valid()
                && key::user_key(it.key()) == user_key
                && key::compare_internal(it.key(), lookup_ikey).is_lt()
            {
                it.next();
            }
            if it.valid() {
                if key::user_key(it.key()) == user_key {
                    match f.take() {
                        Some(f) => Ok(Candidate::Found(f(it.key(), it.value()))),
                        None => Ok(Candidate::NoVisibleVersion),
                    }
                } else {
                    Ok(Candidate::NoVisibleVersion)
                }
            } else {
                match it.status() {
                    Err(e) => Err(e),
                    Ok(()) => Ok(Candidate::RunsPastBlock),
                }
            }
        };
        (outcome, it.into_key_buf())
    }

    fn hash_index_corruption(&self, what: String) -> Error {
        Error::corruption(
            &*self.path,
            self.props.hash_index.map_or(0, |h| h.offset),
            format!("hash index: {what}"),
        )
    }

    /// Positions `index_it` (over this table's index block) at the first
    /// index entry `>= target`, narrowed by the index prefixes.
    #[inline]
    fn seek_index<B: std::ops::Deref<Target = Block>>(
        &self,
        index_it: &mut BlockIter<B>,
        target: &[u8],
    ) {
        let (lo, hi) = match &self.index_prefixes {
            Some(p) => p.bounds(key::user_key(target)),
            None => (0, usize::MAX),
        };
        index_it.seek_between(target, lo, hi);
    }

    /// A two-level iterator over the whole table.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> BlockTableIter {
        BlockTableIter {
            table: self.clone(),
            index: self.index.iter(),
            data: None,
            data_offset: None,
            fill_cache,
            status: None,
        }
    }

    /// False only when no key in the table has `prefix` as its prefix under
    /// the prefix extractor (requires the same extractor the table was
    /// written with; otherwise always true).
    pub fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        match &self.filter {
            Some(f) if self.prefix_filter_usable => f.may_contain(prefix),
            _ => true,
        }
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The table's file number.
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The table's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes in the file.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Reads every block (bypassing the cache), verifies its checksum and
    /// decodes its entries. Returns the number of blocks checked.
    pub fn verify_checksums(&self) -> Result<u64> {
        let mut n = 0u64;
        let index_data = self.read_block_contents(self.footer.index, "index")?;
        let index = Arc::new(Block::new(
            index_data,
            self.origin(self.footer.index.offset),
        )?);
        n += 1;
        self.read_block_contents(self.footer.properties, "properties")?;
        n += 1;
        if self.footer.filter.size > 0 {
            self.read_block_contents(self.footer.filter, "filter")?;
            n += 1;
        }
        let hash_index = match self.props.hash_index {
            Some(h) => {
                let data = self.read_block_contents(h, "hash index")?;
                n += 1;
                HashIndex::decode(&self.path, h.offset, data)?
            }
            None => None,
        };
        // The user key whose first entry was checked last (None before any).
        let mut prev_user_key: Option<Vec<u8>> = None;
        let mut it = index.iter();
        it.seek_to_first();
        while it.valid() {
            let h = self.decode_handle(it.value(), it.key())?;
            let data = self.read_block_contents(h, "data")?;
            let block = Arc::new(Block::new(data, self.origin(h.offset))?);
            let mut bi = block.iter();
            bi.seek_to_first();
            while bi.valid() {
                if let Some(hi) = &hash_index {
                    let uk = key::user_key(bi.key());
                    if prev_user_key.as_deref() != Some(uk) {
                        self.verify_hash_entry(hi, bi.key(), h.offset)?;
                        let prev = prev_user_key.get_or_insert_with(Vec::new);
                        prev.clear();
                        prev.extend_from_slice(uk);
                    }
                }
                bi.next();
            }
            bi.status()?;
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }

    /// Checks that the hash index leads a point read of `first_ikey`'s user
    /// key (at the newest sequence) to `first_ikey`, the key's first entry,
    /// which is in the block at `block_offset`.
    fn verify_hash_entry(
        &self,
        hi: &HashIndex,
        first_ikey: &[u8],
        block_offset: u64,
    ) -> Result<()> {
        let uk = key::user_key(first_ikey);
        let lookup = key::lookup_key(uk, key::MAX_SEQ);
        let found = match self.hash_get(hi, &lookup, xxh3_64(uk), false, |k, _| k.to_vec())? {
            HashGet::Done(r) => r,
            HashGet::Search(_) => None,
        };
        if found.as_deref() == Some(first_ikey) {
            return Ok(());
        }
        Err(self.hash_index_corruption(format!(
            "does not lead to key {:?} (its first entry is in the block at {block_offset})",
            String::from_utf8_lossy(uk)
        )))
    }
}

/// Fixed-width search keys for an index block's restart points (one per
/// entry in the index blocks we write). Every index key but possibly the
/// last few (the last separator is often a short successor such as `u`
/// for keys that start with `tenant-`) starts with the user-key bytes
/// `shared`; for each of those, the 8 bytes that follow, big-endian and
/// padded with zeros, make a word. That map is monotone in key order, so a
/// binary search over the words brackets a target's entry between `lo`
/// (every restart key before it is smaller than the target) and `hi`
/// (every one from it on is larger), and the block search only decodes keys
/// inside the bracket: usually one or two. The keys after the words (which
/// do not start with `shared`) are larger than every key that does.
struct IndexPrefixes {
    /// User-key bytes the first `words.len()` index keys start with.
    shared: Box<[u8]>,
    /// One word per restart point that starts with `shared`, in order.
    words: Box<[u64]>,
}

impl IndexPrefixes {
    /// Longest shared prefix kept (keys sharing more are rare; a shorter
    /// one only widens the brackets).
    const MAX_SHARED: usize = 64;

    fn build(index: &Block) -> Option<IndexPrefixes> {
        let n = index.num_restarts();
        let user_key = |i| index.restart_key(i).ok().map(key::user_key);
        // The prefix shared by the first key and the second-to-last (the
        // last alone when there is one key).
        let first = user_key(0)?;
        let probe = user_key(n.saturating_sub(2))?;
        let shared_len = first
            .iter()
            .zip(probe)
            .take_while(|(a, b)| a == b)
            .count()
            .min(Self::MAX_SHARED);
        let shared: Box<[u8]> = first.get(..shared_len)?.into();
        let mut words = Vec::with_capacity(n);
        for i in 0..n {
            let u = user_key(i)?;
            if !u.starts_with(&shared) {
                break;
            }
            words.push(Self::word(u.get(shared_len..).unwrap_or_default()));
        }
        Some(IndexPrefixes {
            shared,
            words: words.into_boxed_slice(),
        })
    }

    /// The first 8 bytes of `tail`, big-endian, zero-padded.
    #[inline]
    fn word(tail: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let n = tail.len().min(8);
        if let (Some(dst), Some(src)) = (b.get_mut(..n), tail.get(..n)) {
            dst.copy_from_slice(src);
        }
        u64::from_be_bytes(b)
    }

    /// `(lo, hi)` restart points bracketing `user_key` (see the type doc).
    #[inline]
    fn bounds(&self, user_key: &[u8]) -> (usize, usize) {
        let m = self.words.len();
        let s = self.shared.len();
        let head = user_key.get(..s.min(user_key.len())).unwrap_or_default();
        match head.cmp(self.shared.get(..head.len()).unwrap_or_default()) {
            std::cmp::Ordering::Less => return (0, 0),
            // Past every key that starts with `shared`: among the rest
            // (`seek_between` clamps the bound to the block).
            std::cmp::Ordering::Greater => return (m, usize::MAX),
            // A proper prefix of the shared bytes sorts before every key.
            std::cmp::Ordering::Equal if user_key.len() < s => return (0, 0),
            std::cmp::Ordering::Equal => {}
        }
        let w = Self::word(user_key.get(s..).unwrap_or_default());
        let lo = self.words.partition_point(|&x| x < w);
        let hi = lo
            + self
                .words
                .get(lo..)
                .unwrap_or_default()
                .partition_point(|&x| x <= w);
        (lo, hi)
    }
}

/// Checks that the block at `h` (plus its trailer) lies inside the block
/// area of a file of `file_size` bytes; returns the body's size.
fn check_handle(path: &Path, file_size: u64, h: BlockHandle, what: &str) -> Result<usize> {
    let limit = file_size - FOOTER_LEN as u64;
    let end = h
        .offset
        .checked_add(h.size)
        .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
    match (end, usize::try_from(h.size)) {
        (Some(e), Ok(s)) if e <= limit => Ok(s),
        _ => Err(Error::corruption(
            path,
            h.offset,
            format!(
                "{what} block handle (offset {}, size {}) runs past the end of the block area ({limit})",
                h.offset, h.size
            ),
        )),
    }
}

/// Checks the checksum of `raw` (a `size`-byte body and its trailer, read
/// from `offset`); returns the block's compression type byte.
fn check_block_crc(path: &Path, offset: u64, raw: &[u8], size: usize, what: &str) -> Result<u8> {
    let (body, trailer) = raw.split_at(size.min(raw.len()));
    let (Some(&t), Some(crc)) = (trailer.first(), trailer.get(1..5)) else {
        return Err(Error::corruption(
            path,
            offset,
            format!("{what} block trailer missing"),
        ));
    };
    if decode_fixed32(crc) != block_crc(body, t) {
        return Err(Error::corruption(
            path,
            offset,
            format!("{what} block checksum mismatch"),
        ));
    }
    Ok(t)
}

/// Reads, checks and decompresses the block at `h` of `file`.
fn read_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    file_size: u64,
    h: BlockHandle,
    what: &str,
) -> Result<Vec<u8>> {
    let size = check_handle(path, file_size, h, what)?;
    let mut buf = file.read_vec_at(h.offset, size + BLOCK_TRAILER_LEN)?;
    let t = check_block_crc(path, h.offset, &buf, size, what)?;
    if t == COMPRESSION_NONE {
        buf.truncate(size);
        Ok(buf)
    } else {
        decompress_block(path, h.offset, t, buf.get(..size).unwrap_or_default())
    }
}

/// Iterator over a table: index block → data blocks.
pub struct BlockTableIter {
    table: Arc<BlockTable>,
    index: BlockIter,
    data: Option<BlockIter>,
    /// File offset of the block `data` iterates.
    data_offset: Option<u64>,
    fill_cache: bool,
    status: Option<Error>,
}

impl BlockTableIter {
    /// File offset of the data block the iterator is positioned in (for
    /// tools that report where an entry lives, like `cairndb verify`).
    pub fn data_block_offset(&self) -> Option<u64> {
        self.data_offset
    }

    /// Points `data` at the block the index iterator is on. False when the
    /// index is exhausted or on error (then `status` is set).
    fn load_data_block(&mut self) -> bool {
        if !self.index.valid() || self.status.is_some() {
            self.data = None;
            self.data_offset = None;
            return false;
        }
        let h = match self
            .table
            .decode_handle(self.index.value(), self.index.key())
        {
            Ok(h) => h,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        if self.data.is_some() && self.data_offset == Some(h.offset) {
            return true;
        }
        // Scans that do not fill the cache (compaction's) use `pread`: the
        // map is advised for random access and would fault page by page.
        let ordinal = self.index.restart_ordinal();
        match self
            .table
            .read_block(h, ordinal, self.fill_cache, self.fill_cache)
        {
            Ok(b) => {
                let buf = self
                    .data
                    .take()
                    .map(BlockIter::into_key_buf)
                    .unwrap_or_default();
                self.data = Some(BlockIter::with_key_buf(b, buf));
                self.data_offset = Some(h.offset);
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn fail(&mut self, e: Error) {
        if self.status.is_none() {
            self.status = Some(e);
        }
        self.data = None;
        self.data_offset = None;
    }

    /// True when the data iterator is positioned; records its error otherwise.
    #[inline]
    fn data_ready(&mut self) -> bool {
        match &self.data {
            Some(d) if d.valid() => true,
            Some(d) => {
                if let Err(e) = d.status() {
                    self.fail(e);
                }
                false
            }
            None => false,
        }
    }

    #[inline]
    fn skip_empty_forward(&mut self) {
        if !self.data.as_ref().is_some_and(|d| d.valid()) {
            self.next_nonempty_block();
        }
    }

    /// `skip_empty_forward` once the current block is used up.
    #[cold]
    fn next_nonempty_block(&mut self) {
        while !self.data_ready() {
            if self.status.is_some() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while !self.data_ready() {
            if self.status.is_some() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for BlockTableIter {
    #[inline]
    fn valid(&self) -> bool {
        self.status.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
        if self.load_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
        if self.load_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
        self.skip_empty_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.table.seek_index(&mut self.index, target);
        if self.load_data_block() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
        }
        self.skip_empty_forward();
    }

    #[inline]
    fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty_backward();
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.status {
            return Err(e.clone());
        }
        self.index.status()?;
        match &self.data {
            Some(d) => d.status(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::mem::MemFs;
    use crate::env::Fs;
    use crate::key::{make_internal_key, ValueType};
    use crate::options::{CompressionType, FixedPrefix};
    use crate::sst::builder::{TableBuilder, TableOptions};
    use crate::sst::format::FOOTER_VERSION_OFFSET;
    use std::path::PathBuf;

    const N: usize = 10_000;

    fn ukey(i: usize) -> Vec<u8> {
        format!("user{:08}", i * 2).into_bytes()
    }

    fn entry(i: usize) -> (Vec<u8>, Vec<u8>) {
        let t = match i % 7 {
            0 => ValueType::Deletion,
            _ => ValueType::Value,
        };
        let v = if t == ValueType::Deletion {
            Vec::new()
        } else {
            format!("value-{i}-").repeat(1 + i % 4).into_bytes()
        };
        (make_internal_key(&ukey(i), 1000 + i as u64, t), v)
    }

    fn opts(c: CompressionType) -> TableOptions {
        TableOptions {
            block_size: 512,
            block_restart_interval: 16,
            hash_index: false,
            bloom_bits_per_key: 10,
            compression: c,
            prefix_extractor: Some(Arc::new(FixedPrefix::new(8))),
        }
    }

    fn build(fs: &MemFs, path: &Path, o: TableOptions, n: usize) -> crate::sst::TableFileInfo {
        let f = fs.create(path).unwrap();
        let mut b = TableBuilder::new(o, f);
        for i in 0..n {
            let (k, v) = entry(i);
            b.add(&k, &v).unwrap();
        }
        assert_eq!(b.num_entries(), n as u64);
        b.finish().unwrap()
    }

    fn open(fs: &MemFs, path: &Path, cache: Option<Arc<BlockCache>>) -> Result<Arc<BlockTable>> {
        let f = fs.open_random(path)?;
        let pe: Arc<dyn SliceTransform> = Arc::new(FixedPrefix::new(8));
        BlockTable::open(f, 7, cache, Some(pe)).map(Arc::new)
    }

    /// Opens the table bytes `data` from a real file, through a map or not.
    fn open_posix(dir: &Path, data: &[u8], mapped: bool) -> Arc<BlockTable> {
        open_posix_with(dir, data, mapped, Some(Arc::new(BlockCache::new(1 << 20))))
    }

    /// `open_posix` with the block cache given.
    fn open_posix_with(
        dir: &Path,
        data: &[u8],
        mapped: bool,
        cache: Option<Arc<BlockCache>>,
    ) -> Arc<BlockTable> {
        use crate::env::posix::PosixFs;
        let path = dir.join(if mapped { "m.sst" } else { "p.sst" });
        std::fs::write(&path, data).unwrap();
        let f = PosixFs::shared().open_random(&path).unwrap();
        let pe: Arc<dyn SliceTransform> = Arc::new(FixedPrefix::new(8));
        let mut t = BlockTable::open(f, 7, cache, Some(pe)).unwrap();
        if mapped {
            t.map_file().unwrap();
            assert!(t.is_mapped());
        }
        Arc::new(t)
    }

    fn all_entries(
        t: &Arc<BlockTable>,
        fill_cache: bool,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = t.iter(fill_cache);
        let mut out = Vec::new();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().unwrap();
        out
    }

    /// A compressed block read a second time through the map (no block
    /// cache to hold it) must be decompressed again: only blocks stored
    /// uncompressed may skip their trailer once verified.
    #[test]
    fn mapped_compressed_block_read_twice_is_decompressed_twice() {
        let d = tempfile::tempdir().unwrap();
        let t = open_posix_with(d.path(), &table_bytes(CompressionType::Lz4), true, None);
        let first = all_entries(&t, true, false);
        assert_eq!(first.len(), N);
        assert_eq!(all_entries(&t, true, false), first);
        assert_eq!(all_entries(&t, true, true), {
            let mut r = first.clone();
            r.reverse();
            r
        });
    }

    #[test]
    fn mapped_reads_match_pread_reads() {
        let d = tempfile::tempdir().unwrap();
        for c in [CompressionType::None, CompressionType::Lz4] {
            let fs = MemFs::new();
            let path = PathBuf::from("/db/000007.sst");
            build(&fs, &path, opts(c), N);
            let data = fs.contents(&path).unwrap();
            let m = open_posix(d.path(), &data, true);
            let p = open_posix(d.path(), &data, false);
            assert!(!p.is_mapped());
            for fill in [true, false] {
                for rev in [false, true] {
                    let a = all_entries(&m, fill, rev);
                    assert_eq!(a.len(), N);
                    assert_eq!(a, all_entries(&p, fill, rev));
                }
            }
            for i in 0..N {
                let (k, v) = entry(i);
                for t in [&m, &p] {
                    let got = t
                        .get(&k, true, |gk, gv| (gk.to_vec(), gv.to_vec()))
                        .unwrap();
                    assert_eq!(got, Some((k.clone(), v.clone())), "entry {i}");
                }
                // A key between two stored ones finds the next one.
                let between =
                    make_internal_key(&[ukey(i).as_slice(), b"x"].concat(), 1, ValueType::Value);
                let a = m.get(&between, true, |gk, _| gk.to_vec()).unwrap();
                let b = p.get(&between, true, |gk, _| gk.to_vec()).unwrap();
                assert_eq!(a, b);
            }
            // Seeks land on the same entries.
            let mut mi = m.iter(true);
            let mut pi = p.iter(true);
            for i in (0..N).step_by(97) {
                let (k, _) = entry(i);
                mi.seek(&k);
                pi.seek(&k);
                assert!(mi.valid() && pi.valid());
                assert_eq!((mi.key(), mi.value()), (pi.key(), pi.value()));
            }
        }
    }

    /// The bytes of a table of `N` entries built with compression `c`.
    fn table_bytes(c: CompressionType) -> Vec<u8> {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000007.sst");
        build(&fs, &path, opts(c), N);
        fs.contents(&path).unwrap()
    }

    #[test]
    fn mapped_read_reports_checksum_mismatch() {
        let d = tempfile::tempdir().unwrap();
        let mut data = table_bytes(CompressionType::None);
        // The first data block starts at offset 0; damage a byte inside it.
        data[20] ^= 0x40;
        let m = open_posix(d.path(), &data, true);
        let (k, _) = entry(0);
        let e = m.get(&k, true, |_, _| ()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
        assert_first_scan_step_fails(&m, true);
    }

    /// A scan of `t` from the start stops at once with a checksum error.
    fn assert_first_scan_step_fails(t: &Arc<BlockTable>, fill_cache: bool) {
        let mut it = t.iter(fill_cache);
        it.seek_to_first();
        assert!(!it.valid());
        let e = it.status().unwrap_err().to_string();
        assert!(e.contains("checksum mismatch"), "{e}");
    }

    /// The handles of every data block, in order.
    fn data_handles(t: &BlockTable) -> Vec<BlockHandle> {
        let mut it = t.index.iter();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push(t.decode_handle(it.value(), it.key()).unwrap());
            it.next();
        }
        out
    }

    #[test]
    fn mapped_reads_verify_each_block_before_trusting_it() {
        let d = tempfile::tempdir().unwrap();
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000007.sst");
        build(&fs, &path, opts(CompressionType::None), N);
        let mut data = fs.contents(&path).unwrap();
        let clean = open_posix(d.path(), &data, false);
        let handles = data_handles(&clean);
        assert!(handles.len() > 10);
        // Damage the middle block: reading every other block first, forwards,
        // backwards and by point reads, must not mark it verified.
        let mid = handles[handles.len() / 2];
        data[mid.offset as usize + 3] ^= 0x10;
        let m = open_posix(d.path(), &data, true);
        let mut broken = 0;
        for i in 0..N {
            let (k, v) = entry(i);
            match m.get(&k, true, |_, gv| gv.to_vec()) {
                Ok(got) => assert_eq!(got, Some(v)),
                Err(e) => {
                    assert!(e.to_string().contains("checksum mismatch"), "{e}");
                    broken += 1;
                }
            }
        }
        assert!(broken > 0);
        for rev in [false, true] {
            let mut it = m.iter(true);
            if rev {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
            while it.valid() {
                if rev {
                    it.prev();
                } else {
                    it.next();
                }
            }
            assert!(it.status().is_err());
        }
        // Still refused after all those reads.
        let mut it = m.iter(true);
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        assert!(it
            .status()
            .unwrap_err()
            .to_string()
            .contains("checksum mismatch"));
    }

    #[test]
    fn mapped_block_verified_once_but_pread_scans_verify_always() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000007.sst");
        build(&fs, &path, opts(CompressionType::None), N);
        let data = fs.contents(&path).unwrap();
        let m = open_posix(d.path(), &data, true);
        let (k, v) = entry(0);
        assert_eq!(m.get(&k, true, |_, gv| gv.to_vec()).unwrap(), Some(v));
        // The file changes under the map after the block was verified (what
        // a disk returning different bytes on a later read would do): point
        // reads trust the verified block, as a block cache trusts its copy;
        // scans that do not fill the cache (compaction's) and the verifier
        // read with pread and catch it.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join("m.sst"))
            .unwrap();
        f.write_all_at(&[data[20] ^ 0x40], 20).unwrap();
        assert!(m.get(&k, true, |_, _| ()).is_ok());
        assert_first_scan_step_fails(&m, false);
        assert!(m.verify_checksums().is_err());
    }

    /// Seeks and gets through the index prefixes must land where a plain
    /// search of the index block lands, for targets inside, between,
    /// before and after the keys, and sharing more or less of their prefix.
    #[test]
    fn index_prefix_search_matches_plain_index_search() {
        let mut o = opts(CompressionType::None);
        o.block_size = 128;
        for (shared, n) in [("", 3000usize), ("tenant-000042/", 3000), ("x", 1)] {
            let fs = MemFs::new();
            let path = PathBuf::from("/db/000007.sst");
            let k = |i: usize| format!("{shared}{:06}", i * 3).into_bytes();
            let f = fs.create(&path).unwrap();
            let mut b = TableBuilder::new(o.clone(), f);
            for i in 0..n {
                b.add(&make_internal_key(&k(i), 5, ValueType::Value), &k(i))
                    .unwrap();
            }
            b.finish().unwrap();
            let fast = open(&fs, &path, None).unwrap();
            let p = fast.index_prefixes.as_ref().expect("prefixes built");
            if n > 1 {
                assert!(p.shared.starts_with(shared.as_bytes()), "{:?}", p.shared);
            }
            assert!(p.words.len() + 1 >= fast.index.num_restarts());
            let mut plain = open(&fs, &path, None).unwrap();
            Arc::get_mut(&mut plain).unwrap().index_prefixes = None;
            let mut targets: Vec<Vec<u8>> = Vec::new();
            for i in 0..n + 2 {
                let base = format!("{shared}{:06}", i * 3);
                targets.push(base.clone().into_bytes());
                targets.push(format!("{shared}{:06}", i * 3 + 1).into_bytes());
                targets.push(format!("{base}\x00").into_bytes());
                targets.push(base.as_bytes()[..base.len() - 1].to_vec());
            }
            for extra in [
                "",
                "a",
                "t",
                "tenant",
                "tenant-000041/9",
                "tenant-000043",
                "z",
                "\u{ff}",
            ] {
                targets.push(extra.as_bytes().to_vec());
            }
            let (mut fi, mut pi) = (fast.iter(true), plain.iter(true));
            for t in &targets {
                for seq in [0u64, 5, 9] {
                    let ik = make_internal_key(t, seq, ValueType::Value);
                    fi.seek(&ik);
                    pi.seek(&ik);
                    assert_eq!(fi.valid(), pi.valid(), "target {t:?}");
                    if fi.valid() {
                        assert_eq!(fi.key(), pi.key(), "target {t:?}");
                    }
                    let a = fast.get(&ik, true, |gk, _| gk.to_vec()).unwrap();
                    let b = plain.get(&ik, true, |gk, _| gk.to_vec()).unwrap();
                    assert_eq!(a, b, "target {t:?}");
                }
            }
        }
    }

    #[test]
    fn round_trip_all_compressions() {
        for c in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd(3),
        ] {
            let fs = MemFs::new();
            let path = PathBuf::from("/db/000007.sst");
            let info = build(&fs, &path, opts(c), N);
            assert_eq!(info.num_entries, N as u64);
            assert_eq!(info.smallest, entry(0).0);
            assert_eq!(info.largest, entry(N - 1).0);
            assert_eq!(info.file_size, fs.contents(&path).unwrap().len() as u64);
            let cache = Arc::new(BlockCache::new(1 << 20));
            let t = open(&fs, &path, Some(cache.clone())).unwrap();
            let p = t.properties();
            assert_eq!(p, &info.props);
            assert_eq!(p.num_entries, N as u64);
            assert_eq!(p.num_deletions, N.div_ceil(7) as u64);
            assert!(p.num_data_blocks > 50, "{}", p.num_data_blocks);
            assert_eq!(p.smallest_seq, 1000);
            assert_eq!(p.largest_seq, 1000 + N as u64 - 1);
            if c != CompressionType::None {
                assert!(
                    p.data_size < p.raw_key_size + p.raw_value_size,
                    "{c:?} {p:?}"
                );
            }
            // Point lookups of every key.
            for i in 0..N {
                let (k, v) = entry(i);
                let look = key::lookup_key(&ukey(i), crate::key::MAX_SEQ);
                let got = t
                    .get(&look, true, |gk, gv| (gk.to_vec(), gv.to_vec()))
                    .unwrap()
                    .unwrap();
                assert_eq!(got, (k, v), "{c:?} {i}");
            }
            // Lookups of keys between stored keys land on the next key or
            // are excluded by the filter; never a wrong earlier key.
            for i in 0..N {
                let absent = format!("user{:08}", i * 2 + 1).into_bytes();
                let look = key::lookup_key(&absent, crate::key::MAX_SEQ);
                if let Some(k) = t.get(&look, true, |gk, _| gk.to_vec()).unwrap() {
                    assert!(key::compare_internal(&k, &look).is_ge());
                    assert_eq!(key::user_key(&k), &ukey(i + 1)[..]);
                }
            }
            // A lookup at an older sequence than the stored one skips it.
            let look = key::lookup_key(&ukey(5), 10);
            let got = t.get(&look, true, |gk, _| gk.to_vec()).unwrap().unwrap();
            assert_eq!(got, entry(6).0);
            // Beyond the last key.
            let look = key::lookup_key(&ukey(N - 1), 0);
            assert!(t.get(&look, true, |_, _| ()).unwrap().is_none());

            // Forward and backward iteration.
            let mut it = t.iter(true);
            it.seek_to_first();
            for i in 0..N {
                assert!(it.valid(), "{i}");
                let (k, v) = entry(i);
                assert_eq!(it.key(), &k[..]);
                assert_eq!(it.value(), &v[..]);
                it.next();
            }
            assert!(!it.valid());
            it.status().unwrap();
            it.seek_to_last();
            for i in (0..N).rev() {
                assert!(it.valid(), "{i}");
                assert_eq!(it.key(), &entry(i).0[..]);
                it.prev();
            }
            assert!(!it.valid());
            it.status().unwrap();
            // Seeks: present, absent between, before first, after last, and
            // direction changes across block boundaries.
            for i in (0..N).step_by(37) {
                it.seek(&entry(i).0);
                assert_eq!(it.key(), &entry(i).0[..]);
                let between = key::lookup_key(&format!("user{:08}", i * 2 + 1).into_bytes(), 5);
                it.seek(&between);
                if i + 1 < N {
                    assert_eq!(it.key(), &entry(i + 1).0[..]);
                    it.prev();
                    assert_eq!(it.key(), &entry(i).0[..]);
                    it.next();
                    assert_eq!(it.key(), &entry(i + 1).0[..]);
                } else {
                    assert!(!it.valid());
                }
            }
            it.seek(&key::lookup_key(b"a", 1));
            assert_eq!(it.key(), &entry(0).0[..]);
            it.seek(&key::lookup_key(b"z", 1));
            assert!(!it.valid());
            it.seek_for_prev(&key::lookup_key(b"z", 1));
            assert_eq!(it.key(), &entry(N - 1).0[..]);
            it.status().unwrap();

            assert!(t.may_contain_prefix(b"user0000"));
            assert_eq!(t.verify_checksums().unwrap(), p.num_data_blocks + 3);
        }
    }

    #[test]
    fn filter_excluded_get_reads_no_block() {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000007.sst");
        build(&fs, &path, opts(CompressionType::None), 2000);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open(&fs, &path, Some(cache.clone())).unwrap();
        let mut excluded = 0;
        for i in 0..1000 {
            let k = format!("absent{i}").into_bytes();
            let before = cache.misses() + cache.hits();
            let r = t.get(&key::lookup_key(&k, 5), true, |_, _| ()).unwrap();
            if !t.filter.as_ref().unwrap().may_contain(&k) {
                excluded += 1;
                assert!(r.is_none());
                assert_eq!(cache.misses() + cache.hits(), before);
            }
        }
        assert!(excluded > 950, "{excluded}");
        // Present keys do go through the cache: a miss, then a hit.
        let look = key::lookup_key(&ukey(3), crate::key::MAX_SEQ);
        t.get(&look, true, |_, _| ()).unwrap().unwrap();
        let m = cache.misses();
        t.get(&look, true, |_, _| ()).unwrap().unwrap();
        assert_eq!(cache.misses(), m);
        assert!(cache.hits() >= 1);
        // Prefix filter.
        assert!(t.may_contain_prefix(&ukey(3)[..8]));
        let absent = (0..100)
            .filter(|i| !t.may_contain_prefix(format!("zz{i:06}").as_bytes()))
            .count();
        assert!(absent > 90, "{absent}");
    }

    #[test]
    fn no_filter_and_empty_table() {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000008.sst");
        let mut o = opts(CompressionType::Lz4);
        o.bloom_bits_per_key = 0;
        o.prefix_extractor = None;
        build(&fs, &path, o.clone(), 300);
        let t = open(&fs, &path, None).unwrap();
        assert!(t.filter.is_none());
        assert!(t.may_contain_prefix(b"anything"));
        let look = key::lookup_key(&ukey(299), crate::key::MAX_SEQ);
        assert!(t.get(&look, false, |_, _| ()).unwrap().is_some());

        let path = PathBuf::from("/db/000009.sst");
        let info = build(&fs, &path, o, 0);
        assert_eq!(info.num_entries, 0);
        let t = open(&fs, &path, None).unwrap();
        let mut it = t.iter(false);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.status().unwrap();
        assert!(t.get(&look, false, |_, _| ()).unwrap().is_none());
    }

    fn check_all(fs: &MemFs, path: &Path) -> Result<()> {
        let t = open(fs, path, None)?;
        let mut it = t.iter(false);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status()?;
        it.seek_to_last();
        while it.valid() {
            it.prev();
        }
        it.status()?;
        for i in (0..500).step_by(7) {
            t.get(
                &key::lookup_key(&ukey(i), crate::key::MAX_SEQ),
                false,
                |_, _| (),
            )?;
        }
        t.verify_checksums()?;
        if n != 500 {
            return Err(Error::corruption(path, 0, format!("saw {n} entries")));
        }
        Ok(())
    }

    #[test]
    fn corruption_is_detected_and_named() {
        for c in [CompressionType::None, CompressionType::Zstd(3)] {
            let fs = MemFs::new();
            let path = PathBuf::from("/db/000011.sst");
            let info = build(&fs, &path, opts(c), 500);
            let good = fs.contents(&path).unwrap();
            check_all(&fs, &path).unwrap();
            let flen = good.len();
            let footer_start = flen - FOOTER_LEN;
            // Data block, index block, filter, properties, footer.
            let t = open(&fs, &path, None).unwrap();
            let targets = [
                0usize,
                10,
                t.footer.index.offset as usize + 3,
                t.footer.filter.offset as usize + 1,
                t.footer.properties.offset as usize + 2,
                footer_start + 1,
                footer_start + 20,
                flen - 1,
            ];
            for &at in &targets {
                let mut bad = good.clone();
                bad[at] ^= 0x40;
                fs.set_contents(&path, bad);
                let e = check_all(&fs, &path).unwrap_err();
                assert!(e.is_corruption(), "{at}: {e}");
                assert!(e.to_string().contains("000011.sst"), "{at}: {e}");
            }
            // Every single-byte flip in a stride of the file: error, never panic
            // or a silently different result.
            for at in (0..flen).step_by(13) {
                let mut bad = good.clone();
                bad[at] ^= 0x01;
                fs.set_contents(&path, bad);
                if let Err(e) = check_all(&fs, &path) {
                    assert!(e.to_string().contains("000011.sst"), "{at}: {e}");
                }
            }
            // Truncation at many lengths.
            for len in (0..flen)
                .step_by(97)
                .chain([0, 10, FOOTER_LEN - 1, flen - 1])
            {
                fs.set_contents(&path, good[..len].to_vec());
                let e = check_all(&fs, &path).unwrap_err();
                assert!(e.is_corruption(), "{len}: {e}");
                assert!(e.to_string().contains("000011.sst"), "{len}: {e}");
                if len < FOOTER_LEN {
                    assert!(
                        e.to_string()
                            .contains(&format!("file too short to be a table ({len} bytes)")),
                        "{e}"
                    );
                }
            }
            assert!(info.file_size as usize == flen);
        }
    }

    #[test]
    fn newer_format_version_is_rejected_clearly() {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000012.sst");
        build(&fs, &path, opts(CompressionType::None), 10);
        let mut b = fs.contents(&path).unwrap();
        let at = b.len() - FOOTER_LEN + FOOTER_VERSION_OFFSET;
        b[at..at + 4].copy_from_slice(&7u32.to_le_bytes());
        fs.set_contents(&path, b);
        let e = open(&fs, &path, None).unwrap_err().to_string();
        assert!(
            e.contains("format version 7 is newer than this build supports (1)"),
            "{e}"
        );
        assert!(e.contains("000012.sst"), "{e}");
    }

    #[test]
    fn cache_bound_respected_during_scans() {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000013.sst");
        build(&fs, &path, opts(CompressionType::None), N);
        let cap = 8 << 10;
        let cache = Arc::new(BlockCache::new(cap));
        let t = open(&fs, &path, Some(cache.clone())).unwrap();
        let mut it = t.iter(true);
        it.seek_to_first();
        while it.valid() {
            assert!(cache.usage() <= cap as u64);
            it.next();
        }
        assert!(cache.usage() <= cap as u64);
        // fill_cache = false leaves the cache alone.
        let c2 = Arc::new(BlockCache::new(1 << 20));
        let t2 = open(&fs, &path, Some(c2.clone())).unwrap();
        let mut it = t2.iter(false);
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        assert_eq!(c2.len(), 0);
    }

    #[test]
    fn random_model_with_many_versions() {
        use crate::iter::VecIterator;
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(42);
        for interval in [1, 3, 16] {
            let mut entries = Vec::new();
            for uk in 0..400u32 {
                let versions = rng.gen_range(1..6);
                for s in 0..versions {
                    let seq = 10 * s as u64 + rng.gen_range(0..10);
                    let t = if rng.gen_bool(0.2) {
                        ValueType::Deletion
                    } else {
                        ValueType::Value
                    };
                    let k = make_internal_key(format!("k{:05}", uk * 3).as_bytes(), seq, t);
                    entries.push((k, format!("v{uk}.{s}").into_bytes()));
                }
            }
            entries.sort_by(|a, b| key::compare_internal(&a.0, &b.0));
            entries.dedup_by(|a, b| key::compare_internal(&a.0, &b.0).is_eq());
            let fs = MemFs::new();
            let path = PathBuf::from("/db/000020.sst");
            let mut o = opts(CompressionType::Lz4);
            o.block_size = 256;
            o.block_restart_interval = interval;
            let mut b = TableBuilder::new(o, fs.create(&path).unwrap());
            for (k, v) in &entries {
                b.add(k, v).unwrap();
            }
            b.finish().unwrap();
            let t = open(&fs, &path, Some(Arc::new(BlockCache::new(16 << 10)))).unwrap();
            let mut model = VecIterator::new(entries.clone());
            let mut it = t.iter(true);
            let rand_target = |rng: &mut SmallRng| {
                let uk = rng.gen_range(0..1210u32);
                key::lookup_key(format!("k{uk:05}").as_bytes(), rng.gen_range(0..60))
            };
            for _ in 0..3000 {
                let target = rand_target(&mut rng);
                // get() agrees with a model seek whenever the filter lets it through.
                let got = t
                    .get(&target, true, |k, v| (k.to_vec(), v.to_vec()))
                    .unwrap();
                model.seek(&target);
                match got {
                    Some(g) => {
                        assert!(model.valid());
                        assert_eq!(g, (model.key().to_vec(), model.value().to_vec()));
                    }
                    None => {
                        let same_user =
                            model.valid() && key::user_key(model.key()) == key::user_key(&target);
                        assert!(!same_user, "missed a present key");
                    }
                }
                match rng.gen_range(0..5) {
                    0 => {
                        it.seek(&target);
                        model.seek(&target);
                    }
                    1 => {
                        it.seek_to_first();
                        model.seek_to_first();
                    }
                    2 => {
                        it.seek_to_last();
                        model.seek_to_last();
                    }
                    _ => {
                        it.seek_for_prev(&target);
                        model.seek_for_prev(&target);
                    }
                }
                for _ in 0..rng.gen_range(0..20) {
                    assert_eq!(it.valid(), model.valid());
                    if !it.valid() {
                        break;
                    }
                    assert_eq!(it.key(), model.key());
                    assert_eq!(it.value(), model.value());
                    if rng.gen_bool(0.5) {
                        it.next();
                        model.next();
                    } else {
                        it.prev();
                        model.prev();
                    }
                }
                it.status().unwrap();
            }
        }
    }

    /// Entries for the hash-index tests: keys with one to `max_versions`
    /// versions (some deleted), values of mixed sizes so that versions of a
    /// key run across block boundaries.
    fn versioned_entries(
        rng: &mut rand::rngs::SmallRng,
        keys: u32,
        max_versions: u32,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        use rand::Rng;
        let mut entries = Vec::new();
        for uk in 0..keys {
            for s in 0..rng.gen_range(1..=max_versions) {
                let seq = 10 * u64::from(s) + rng.gen_range(0..10);
                let t = if rng.gen_bool(0.15) {
                    ValueType::Deletion
                } else {
                    ValueType::Value
                };
                let k = make_internal_key(format!("k{:05}", uk * 3).as_bytes(), seq, t);
                let v = format!("v{uk}.{s}.").repeat(rng.gen_range(1..20));
                entries.push((k, v.into_bytes()));
            }
        }
        entries.sort_by(|a, b| key::compare_internal(&a.0, &b.0));
        entries.dedup_by(|a, b| key::compare_internal(&a.0, &b.0).is_eq());
        entries
    }

    fn build_entries(o: TableOptions, entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000021.sst");
        let mut b = TableBuilder::new(o, fs.create(&path).unwrap());
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        b.finish().unwrap();
        fs.contents(&path).unwrap()
    }

    /// Point reads through the hash index give what `get` promises (the
    /// first entry at or after the lookup key, whenever it has the lookup's
    /// user key) for every restart interval, with and without compression,
    /// through the map and through `pread`, at every snapshot, including
    /// keys whose versions span blocks and keys the table does not hold.
    #[test]
    fn hash_index_point_reads_match_the_model() {
        use crate::iter::VecIterator;
        use rand::{Rng, SeedableRng};
        let d = tempfile::tempdir().unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for interval in [1, 2, 16] {
            for c in [CompressionType::None, CompressionType::Lz4] {
                let entries = versioned_entries(&mut rng, 300, 12);
                let mut o = opts(c);
                o.block_size = 256;
                o.block_restart_interval = interval;
                o.hash_index = true;
                let data = build_entries(o, &entries);
                let mut model = VecIterator::new(entries.clone());
                for mapped in [true, false] {
                    let t = open_posix(d.path(), &data, mapped);
                    assert!(t.hash_index.is_some(), "the table has a hash index");
                    assert_eq!(t.block_spans.len() as u64, t.props.num_data_blocks);
                    for _ in 0..4000 {
                        let uk = rng.gen_range(0..905u32);
                        let target =
                            key::lookup_key(format!("k{uk:05}").as_bytes(), rng.gen_range(0..130));
                        let got = t
                            .get(&target, true, |k, v| (k.to_vec(), v.to_vec()))
                            .unwrap();
                        model.seek(&target);
                        let same_user =
                            model.valid() && key::user_key(model.key()) == key::user_key(&target);
                        match got {
                            Some(g) => {
                                assert!(model.valid());
                                assert_eq!(g, (model.key().to_vec(), model.value().to_vec()));
                            }
                            None => assert!(!same_user, "missed {uk} (interval {interval})"),
                        }
                    }
                }
            }
        }
    }

    /// Every slot names a block and offset the reader checks: a slot naming
    /// a block past the table's last is `Corruption` naming the hash index.
    #[test]
    fn hash_index_slot_naming_a_missing_block_is_corruption() {
        use crate::sst::format::block_crc;
        use rand::SeedableRng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let entries = versioned_entries(&mut rng, 40, 1);
        let mut o = opts(CompressionType::None);
        o.block_size = 300;
        o.hash_index = true;
        let mut data = build_entries(o, &entries);
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000022.sst");
        let write = |fs: &MemFs, data: &[u8]| {
            let mut f = fs.create(&path).unwrap();
            f.append(data).unwrap();
            f.sync().unwrap();
        };
        write(&fs, &data);
        let t = open(&fs, &path, None).unwrap();
        let h = t.props.hash_index.unwrap();
        let blocks = t.props.num_data_blocks;
        let (start, len) = (h.offset as usize, h.size as usize);
        let trailer = &data[start + len - 8..start + len];
        let (width, block_bits, offset_bits) = (trailer[1] as usize, trailer[2], trailer[3]);
        assert_eq!(width, 4);
        assert!(
            1u64 << block_bits > blocks,
            "room for a block number past the last"
        );
        // Point every occupied slot at block `blocks` (one past the last).
        for slot in data[start..start + len - 8].chunks_exact_mut(4) {
            let v = u32::from_le_bytes(slot.try_into().unwrap());
            if v != 0 {
                let loc_mask = (1u32 << (block_bits + offset_bits)) - 1;
                let forged = (v & !loc_mask) | ((blocks as u32) << offset_bits);
                slot.copy_from_slice(&forged.to_le_bytes());
            }
        }
        let crc = block_crc(&data[start..start + len], COMPRESSION_NONE);
        data[start + len + 1..start + len + 5].copy_from_slice(&crc.to_le_bytes());
        write(&fs, &data);
        let t = open(&fs, &path, None).unwrap();
        let (k, _) = &entries[5];
        let e = t.get(k, true, |_, _| ()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("hash index") && msg.contains("000022.sst"),
            "{msg}"
        );
    }

    /// Tables written without a hash index keep their exact bytes (the
    /// properties gain fields only when there is one).
    #[test]
    fn tables_without_a_hash_index_have_no_hash_fields() {
        let fs = MemFs::new();
        let path = PathBuf::from("/db/000023.sst");
        build(&fs, &path, opts(CompressionType::None), 500);
        let t = open(&fs, &path, None).unwrap();
        assert_eq!(t.props.hash_index, None);
        assert!(t.hash_index.is_none());
        let mut o = opts(CompressionType::None);
        o.hash_index = true;
        let path2 = PathBuf::from("/db/000024.sst");
        build(&fs, &path2, o, 500);
        let t2 = open(&fs, &path2, None).unwrap();
        let h = t2.props.hash_index.unwrap();
        // The hash block sits between the filter and the index.
        assert!(h.offset > t2.footer.filter.offset && h.offset < t2.footer.index.offset);
        assert_eq!(
            t2.file_size - t.file_size,
            h.size
                + BLOCK_TRAILER_LEN as u64
                + crate::util::coding::varint_len(h.offset) as u64
                + crate::util::coding::varint_len(h.size) as u64,
            "only the hash block and its two property fields are added"
        );
    }

    /// `verify_checksums` probes the hash index for every key's first entry:
    /// a hash index that would hide a key is reported, naming the key.
    #[test]
    fn verify_checksums_finds_a_key_the_hash_index_hides() {
        use crate::sst::format::block_crc;
        use rand::SeedableRng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let entries = versioned_entries(&mut rng, 200, 3);
        let mut o = opts(CompressionType::None);
        o.hash_index = true;
        let mut data = build_entries(o, &entries);
        let d = tempfile::tempdir().unwrap();
        let t = open_posix(d.path(), &data, false);
        assert!(t.verify_checksums().unwrap() > 3);
        // Empty every slot: every key is "absent" to the index.
        let h = t.props.hash_index.unwrap();
        let (start, len) = (h.offset as usize, h.size as usize);
        data[start..start + len - 8].fill(0);
        let crc = block_crc(&data[start..start + len], COMPRESSION_NONE);
        data[start + len + 1..start + len + 5].copy_from_slice(&crc.to_le_bytes());
        let t = open_posix(d.path(), &data, false);
        let e = t.verify_checksums().unwrap_err();
        let msg = e.to_string();
        assert!(
            e.is_corruption() && msg.contains("hash index") && msg.contains("does not lead to key"),
            "{msg}"
        );
    }
}
