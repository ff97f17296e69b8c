//! An open SST file: point lookups ([`Table::get`]) and a two-level iterator
//! ([`TableIter`]) over its entries (`docs/format/sstable.md`).
//!
//! `Table::open` reads the footer and keeps the index block, the filter and
//! the properties in memory (all checksum-verified); data blocks are read on
//! demand through the shared [`BlockCache`]. Invariants: a `Table` is
//! immutable after `open`, so it is shared as `Arc<Table>` by any number of
//! threads without locks (positional reads take `&self`). Every error names the
//! file and an offset. Nothing in here panics on file contents.

use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, TRAILER_LEN};
use crate::options::SliceTransform;
use crate::sst::block::{Block, BlockIter, BlockOrigin};
use crate::sst::filter::Filter;
use crate::sst::format::{
    block_crc, decompress_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, COMPRESSION_NONE,
    FOOTER_LEN,
};
use crate::sst::properties::TableProperties;
use crate::util::coding::decode_fixed32;

thread_local! {
    /// Key buffers reused by `Table::get` (index iterator, data iterator), so
    /// that a lookup hitting the cache allocates nothing once warm.
    static GET_KEY_BUFS: Cell<(Vec<u8>, Vec<u8>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

/// A table opened for reading (see the module doc).
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    file_number: u64,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    index: Arc<Block>,
    filter: Option<Filter>,
    props: TableProperties,
    /// True when the filter also holds prefixes of the extractor we were given.
    prefix_filter_usable: bool,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("file_size", &self.file_size)
            .finish_non_exhaustive()
    }
}

impl Table {
    /// Opens a table: reads and checks the footer, index, filter, properties.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        prefix_extractor: Option<Arc<dyn SliceTransform>>,
    ) -> Result<Table> {
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
        let mut t = Table {
            file,
            path,
            file_number,
            file_size,
            cache,
            footer,
            index,
            filter,
            props,
            prefix_filter_usable: false,
        };
        t.prefix_filter_usable = match &prefix_extractor {
            Some(pe) => {
                !t.props.prefix_extractor_name.is_empty()
                    && pe.name() == t.props.prefix_extractor_name
            }
            None => false,
        };
        Ok(t)
    }

    fn origin(&self, offset: u64) -> BlockOrigin {
        BlockOrigin {
            path: self.path.clone(),
            offset,
        }
    }

    fn read_block_contents(&self, h: BlockHandle, what: &str) -> Result<Vec<u8>> {
        read_contents(&*self.file, &self.path, self.file_size, h, what)
    }

    /// The data block at `h`, through the block cache.
    fn read_block(&self, h: BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.file_number, h.offset) {
                return Ok(b);
            }
        }
        let data = self.read_block_contents(h, "data")?;
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
        if lookup_ikey.len() < TRAILER_LEN {
            return Err(Error::invalid(format!(
                "lookup key of {} bytes is not an internal key",
                lookup_ikey.len()
            )));
        }
        if let Some(filter) = &self.filter {
            if !filter.may_contain(key::user_key(lookup_ikey)) {
                return Ok(None);
            }
        }
        let (ibuf, mut dbuf) = GET_KEY_BUFS.with(|c| c.take());
        let mut index_it = BlockIter::with_key_buf(self.index.clone(), ibuf);
        index_it.seek(lookup_ikey);
        let mut f = Some(f);
        let mut result = Ok(None);
        while index_it.valid() {
            let block = match self
                .decode_handle(index_it.value(), index_it.key())
                .and_then(|h| self.read_block(h, fill_cache))
            {
                Ok(b) => b,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let mut it = BlockIter::with_key_buf(block, dbuf);
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

    /// A two-level iterator over the whole table.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        TableIter {
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
        let mut it = index.iter();
        it.seek_to_first();
        while it.valid() {
            let h = self.decode_handle(it.value(), it.key())?;
            let data = self.read_block_contents(h, "data")?;
            let block = Arc::new(Block::new(data, self.origin(h.offset))?);
            let mut bi = block.iter();
            bi.seek_to_first();
            while bi.valid() {
                bi.next();
            }
            bi.status()?;
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
}

/// Reads, checks and decompresses the block at `h`.
/// Reads, checks and decompresses the block at `h` of `file`.
fn read_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    file_size: u64,
    h: BlockHandle,
    what: &str,
) -> Result<Vec<u8>> {
    let limit = file_size - FOOTER_LEN as u64;
    let end = h
        .offset
        .checked_add(h.size)
        .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
    let size = match (end, usize::try_from(h.size)) {
        (Some(e), Ok(s)) if e <= limit => s,
        _ => {
            return Err(Error::corruption(
                path,
                h.offset,
                format!(
                    "{what} block handle (offset {}, size {}) runs past the end of the block area ({limit})",
                    h.offset, h.size
                ),
            ))
        }
    };
    let mut buf = vec![0u8; size + BLOCK_TRAILER_LEN];
    file.read_exact_at(h.offset, &mut buf)?;
    let (body, trailer) = buf.split_at(size);
    let t = trailer[0];
    let stored = decode_fixed32(&trailer[1..]);
    if stored != block_crc(body, t) {
        return Err(Error::corruption(
            path,
            h.offset,
            format!("{what} block checksum mismatch"),
        ));
    }
    if t == COMPRESSION_NONE {
        buf.truncate(size);
        Ok(buf)
    } else {
        decompress_block(path, h.offset, t, body)
    }
}

/// Iterator over a table: index block → data blocks.
pub struct TableIter {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
    /// File offset of the block `data` iterates.
    data_offset: Option<u64>,
    fill_cache: bool,
    status: Option<Error>,
}

impl TableIter {
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
        match self.table.read_block(h, self.fill_cache) {
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

    fn skip_empty_forward(&mut self) {
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

impl InternalIterator for TableIter {
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
        self.index.seek(target);
        if self.load_data_block() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
        }
        self.skip_empty_forward();
    }

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

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

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
