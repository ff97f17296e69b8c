//! Data and index blocks: [`BlockBuilder`] writes the LevelDB block format
//! (prefix-compressed entries, restart array), [`Block`] holds one decoded
//! (uncompressed) block and [`BlockIter`] walks it (`docs/format/sstable.md`,
//! "Blocks").
//!
//! Invariants: a [`Block`] is validated on construction (the restart array
//! fits and every restart offset lies inside the entry area), so iterators can
//! trust it; entries themselves are checked as they are decoded and a bad entry
//! turns the iterator invalid with a `Corruption` status, never a panic. Keys
//! in blocks are internal keys (at least 8 bytes; shorter ones are reported as
//! corruption). A `Block` is immutable and shared as `Arc<Block>` between the
//! block cache and iterators: no locks. A `BlockIter` is single-threaded and
//! reuses one key buffer (no allocation per step).

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::cmp::Ordering;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use crate::env::FileBytes;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{compare_internal, TRAILER_LEN};
use crate::util::coding::{get_varint32, put_fixed32, put_varint32};

/// Builds one block in memory.
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    num_entries: usize,
}

impl BlockBuilder {
    /// An empty builder; `restart_interval` is clamped to at least 1.
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            num_entries: 0,
        }
    }

    /// Clears the builder for the next block, keeping its allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
    }

    /// True when no entry has been added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// Entries added since the last reset.
    pub fn num_entries(&self) -> usize {
        self.num_entries
    }

    /// Byte offset of the restart run the last added entry is in (0 before
    /// any entry).
    pub fn current_restart_offset(&self) -> u32 {
        self.restarts.last().copied().unwrap_or(0)
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Size of the block if finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + self.restarts.len() * 4 + 4
    }

    /// Appends an entry. Requires `key` > every key added since the reset.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(
            self.num_entries == 0 || compare_internal(&self.last_key, key).is_lt(),
            "block keys out of order"
        );
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        // shared <= key.len(): it counts a common prefix.
        let tail = key.get(shared..).unwrap_or_default();
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, tail.len() as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(tail);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(tail);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Appends the restart array and returns the finished block bytes.
    /// Call [`BlockBuilder::reset`] before reusing the builder.
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }
}

/// Where a block came from, for error messages.
#[derive(Debug, Clone)]
pub struct BlockOrigin {
    /// The table file.
    pub path: Arc<Path>,
    /// File offset of the block.
    pub offset: u64,
}

/// What keeps a block's bytes alive: its own buffer (read with `pread` or
/// decompressed), or the mapped table file it points into.
enum BlockOwner {
    Heap(#[expect(dead_code, reason = "owns the bytes `Block::ptr` points at")] Vec<u8>),
    File(#[expect(dead_code, reason = "owns the bytes `Block::ptr` points at")] FileBytes),
    /// Nothing: the bytes are borrowed for the life of a [`BorrowedBlock`],
    /// which is the only way to hold such a block.
    Borrowed,
}

/// A block over bytes borrowed for `'a` (see [`Block::borrowed`]); it can
/// only be used by reference, so the block cannot outlive the bytes.
pub struct BorrowedBlock<'a> {
    block: Block,
    _data: std::marker::PhantomData<&'a [u8]>,
}

impl std::ops::Deref for BorrowedBlock<'_> {
    type Target = Block;
    #[inline]
    fn deref(&self) -> &Block {
        &self.block
    }
}

/// One decoded block: the uncompressed bytes plus the parsed restart array
/// bounds. The bytes are either the block's own buffer or a range of a
/// mapped table file (no copy; `docs/format/sstable.md`, "Reading through a
/// map").
pub struct Block {
    /// Start of the block's bytes, owned by `owner` (see [`Block::data`]).
    ptr: *const u8,
    len: usize,
    owner: BlockOwner,
    restarts_offset: usize,
    num_restarts: usize,
    origin: BlockOrigin,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("len", &self.len)
            .field("mapped", &matches!(self.owner, BlockOwner::File(_)))
            .field("num_restarts", &self.num_restarts)
            .field("origin", &self.origin)
            .finish()
    }
}

// SAFETY: `ptr` points into memory owned by `owner`, which is immutable for
// the block's life (a `Vec` that is never touched again, or a read-only file
// map); sharing or sending a `&[u8]` of it is safe, and both owners are
// `Send + Sync`. Exercised by every block test (heap) and by
// `sst::table::tests::mapped_reads_match_pread_reads` (map).
unsafe impl Send for Block {}
// SAFETY: as for `Send` above: the bytes are never written after construction.
unsafe impl Sync for Block {}

impl Block {
    /// Validates and wraps block bytes read from `origin`.
    pub fn new(data: Vec<u8>, origin: BlockOrigin) -> Result<Block> {
        let (restarts_offset, num_restarts) = Self::check(&data, &origin)?;
        // Moving the vector into the owner does not move its heap buffer.
        let (ptr, len) = (data.as_ptr(), data.len());
        Ok(Block {
            ptr,
            len,
            owner: BlockOwner::Heap(data),
            restarts_offset,
            num_restarts,
            origin,
        })
    }

    /// Validates and wraps `len` bytes at `start` of a mapped file, without
    /// copying them. A range outside the file is a `Corruption` error.
    pub fn new_mapped(
        file: FileBytes,
        start: usize,
        len: usize,
        origin: BlockOrigin,
    ) -> Result<Block> {
        let data = start
            .checked_add(len)
            .and_then(|end| file.get(start..end))
            .ok_or_else(|| {
                Error::corruption(
                    &*origin.path,
                    origin.offset,
                    format!(
                        "block of {len} bytes runs past the end of the mapped file ({} bytes)",
                        file.len()
                    ),
                )
            })?;
        let (restarts_offset, num_restarts) = Self::check(data, &origin)?;
        let ptr = data.as_ptr();
        Ok(Block {
            ptr,
            len,
            owner: BlockOwner::File(file),
            restarts_offset,
            num_restarts,
            origin,
        })
    }

    /// Validates and wraps borrowed block bytes, without copying them or
    /// taking a reference on their owner: for a point read of a mapped
    /// block, which holds the table (and so the map) for longer than the
    /// block (no allocation and no shared reference count per lookup).
    pub fn borrowed(data: &[u8], origin: BlockOrigin) -> Result<BorrowedBlock<'_>> {
        let (restarts_offset, num_restarts) = Self::check(data, &origin)?;
        Ok(Self::wrap_borrowed(
            data,
            origin,
            restarts_offset,
            num_restarts,
        ))
    }

    fn wrap_borrowed(
        data: &[u8],
        origin: BlockOrigin,
        restarts_offset: usize,
        num_restarts: usize,
    ) -> BorrowedBlock<'_> {
        BorrowedBlock {
            block: Block {
                ptr: data.as_ptr(),
                len: data.len(),
                owner: BlockOwner::Borrowed,
                restarts_offset,
                num_restarts,
                origin,
            },
            _data: std::marker::PhantomData,
        }
    }

    /// Like [`Block::borrowed`], but checks only that the restart count
    /// fits, not the restart array itself: for a hash-index point read, which
    /// reads one restart run from the offset the index names and
    /// bounds-checks what it finds there (an offset past the entries leaves
    /// the iterator invalid; an entry there that shares key bytes is reported
    /// as corruption), so a
    /// lookup reads the block's tail and its entry instead of every restart
    /// offset. Use only `BlockIter::seek_to_offset`, `next` and the
    /// accessors on the result: a binary search needs the checked array.
    pub fn borrowed_for_restart(data: &[u8], origin: BlockOrigin) -> Result<BorrowedBlock<'_>> {
        let (restarts_offset, num_restarts) = Self::check_count(data, &origin)?;
        Ok(Self::wrap_borrowed(
            data,
            origin,
            restarts_offset,
            num_restarts,
        ))
    }

    /// The block's bytes.
    #[inline]
    fn data(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` was a valid `&[u8]` when the block was
        // made, and `owner` keeps that memory alive and unchanged for as long
        // as `self` lives (see the `Send` impl above); a block that owns
        // nothing lives inside a `BorrowedBlock`, whose lifetime is that of
        // the borrowed bytes (exercised by `borrowed_block_reads_like_owned`
        // and every point read of a mapped table).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Checks the restart array of `data`: (restarts offset, restart count).
    fn check(data: &[u8], origin: &BlockOrigin) -> Result<(usize, usize)> {
        let bad = |what: String| Error::corruption(&*origin.path, origin.offset, what);
        let (restarts_offset, num_restarts) = Self::check_count(data, origin)?;
        let mut prev = 0usize;
        let restart_array = data
            .get(restarts_offset..data.len() - 4)
            .unwrap_or_default();
        for (i, b) in restart_array.chunks_exact(4).enumerate() {
            let r = b.first_chunk::<4>().map_or(0, |b| u32::from_le_bytes(*b)) as usize;
            let past_end = r >= restarts_offset && !(restarts_offset == 0 && r == 0);
            if past_end || (i > 0 && r <= prev) || (i == 0 && r != 0) {
                return Err(bad(format!(
                    "block restart point {i} has bad offset {r} (entries end at {restarts_offset})"
                )));
            }
            prev = r;
        }
        if num_restarts == 0 && restarts_offset != 0 {
            return Err(bad("block has entries but no restart points".into()));
        }
        Ok((restarts_offset, num_restarts))
    }

    /// Checks that the restart count fits the block: (restarts offset,
    /// restart count).
    #[inline]
    fn check_count(data: &[u8], origin: &BlockOrigin) -> Result<(usize, usize)> {
        let bad = |what: String| Error::corruption(&*origin.path, origin.offset, what);
        let Some(&n) = data.last_chunk::<4>() else {
            return Err(bad(format!("block too short ({} bytes)", data.len())));
        };
        let num_restarts = u32::from_le_bytes(n) as usize;
        let max_restarts = (data.len() - 4) / 4;
        if num_restarts > max_restarts {
            return Err(bad(format!(
                "block restart count {num_restarts} does not fit in {} bytes",
                data.len()
            )));
        }
        Ok((data.len() - 4 - num_restarts * 4, num_restarts))
    }

    /// Bytes held in memory (used as the cache weight).
    pub fn size(&self) -> usize {
        self.len
    }

    /// Restart points in the block (its entry count when every entry is one,
    /// as in an index block).
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// The full key stored at restart point `i` (restart entries share
    /// nothing); the offset of a damaged entry otherwise.
    #[inline]
    pub fn restart_key(&self, i: usize) -> std::result::Result<&[u8], usize> {
        let off = self.restart_point(i);
        match self.decode_entry(off) {
            Some((0, unshared, _, hdr)) if unshared >= TRAILER_LEN => {
                self.data().get(off + hdr..off + hdr + unshared).ok_or(off)
            }
            _ => Err(off),
        }
    }

    /// The key and value stored at restart point `i` (`i < num_restarts`);
    /// the offset of a damaged entry otherwise.
    #[inline]
    pub fn restart_entry(&self, i: usize) -> std::result::Result<(&[u8], &[u8]), usize> {
        let off = self.restart_point(i);
        match self.decode_entry(off) {
            Some((0, unshared, vlen, hdr)) if unshared >= TRAILER_LEN && i < self.num_restarts => {
                let k = self
                    .data()
                    .get(off + hdr..off + hdr + unshared)
                    .ok_or(off)?;
                let v = self
                    .data()
                    .get(off + hdr + unshared..off + hdr + unshared + vlen)
                    .ok_or(off)?;
                Ok((k, v))
            }
            _ => Err(off),
        }
    }

    /// Where this block was read from.
    pub fn origin(&self) -> &BlockOrigin {
        &self.origin
    }

    /// An iterator over the block.
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter::with_key_buf(self.clone(), Vec::new())
    }

    /// Offset of restart point `i` (`i < num_restarts`, so in range: `new`
    /// checked the array fits; 0 otherwise).
    fn restart_point(&self, i: usize) -> usize {
        self.data()
            .get(self.restarts_offset + i * 4..)
            .and_then(|s| s.first_chunk::<4>())
            .map_or(0, |b| u32::from_le_bytes(*b) as usize)
    }

    /// Decodes the entry header at `off`: (shared, unshared, value_len, header_len).
    fn decode_entry(&self, off: usize) -> Option<(usize, usize, usize, usize)> {
        entry_header(self.data().get(off..self.restarts_offset)?)
    }
}

/// Decodes the entry header at the start of `area` (the entries from it to
/// the end of the entry area): (shared, unshared, value_len, header_len),
/// `None` unless the whole entry fits in `area`.
#[inline]
fn entry_header(area: &[u8]) -> Option<(usize, usize, usize, usize)> {
    // Fast path: all three lengths fit in one byte each (small keys and
    // values: nearly every entry of a typical block).
    if let [s0, u0, v0, ..] = *area {
        if (s0 | u0 | v0) < 0x80 {
            let need = 3 + u0 as usize + v0 as usize;
            if need > area.len() {
                return None;
            }
            return Some((s0 as usize, u0 as usize, v0 as usize, 3));
        }
    }
    let (shared, a) = get_varint32(area)?;
    let (unshared, b) = get_varint32(area.get(a..)?)?;
    let (vlen, c) = get_varint32(area.get(a + b..)?)?;
    let hdr = a + b + c;
    let need = hdr
        .checked_add(unshared as usize)?
        .checked_add(vlen as usize)?;
    if need > area.len() {
        return None;
    }
    Some((shared as usize, unshared as usize, vlen as usize, hdr))
}

/// The key and value of the entry at byte `off` of uncompressed block bytes
/// `data`, read without the block's restart array: when it is a restart
/// entry (shares no key bytes) with an internal key, ending before the
/// smallest restart array (one point and the count). `None` otherwise (the
/// caller then reads the block the checked way, which reports damage).
#[inline]
pub(crate) fn restart_entry_in(data: &[u8], off: usize) -> Option<(&[u8], &[u8])> {
    let area = data.get(off..data.len().checked_sub(8)?)?;
    match entry_header(area)? {
        (0, unshared, vlen, hdr) if unshared >= TRAILER_LEN => Some((
            area.get(hdr..hdr + unshared)?,
            area.get(hdr + unshared..hdr + unshared + vlen)?,
        )),
        _ => None,
    }
}

/// A cursor over one block (see the module doc).
/// Generic over how it holds the block: shared (`Arc<Block>`, the default)
/// or borrowed (`&Block`, for a point read that outlives neither).
pub struct BlockIter<B: Deref<Target = Block> = Arc<Block>> {
    block: B,
    /// Offset of the current entry; `restarts_offset` when invalid.
    current: usize,
    /// A restart point at or before `current`: exact after a seek, possibly
    /// behind after `next` (see `sync_restart_index`).
    restart_index: usize,
    key: Vec<u8>,
    value_start: usize,
    value_end: usize,
    status: Option<Error>,
}

impl<B: Deref<Target = Block>> BlockIter<B> {
    /// An unpositioned iterator that uses `key_buf` (cleared) as its key buffer.
    pub fn with_key_buf(block: B, mut key_buf: Vec<u8>) -> BlockIter<B> {
        key_buf.clear();
        let end = block.restarts_offset;
        let n = block.num_restarts;
        BlockIter {
            block,
            current: end,
            restart_index: n,
            key: key_buf,
            value_start: end,
            value_end: end,
            status: None,
        }
    }

    /// Gives the key buffer back, for reuse by a later iterator.
    pub fn into_key_buf(self) -> Vec<u8> {
        self.key
    }

    /// The block being iterated.
    pub fn block(&self) -> &B {
        &self.block
    }

    fn next_entry_offset(&self) -> usize {
        self.value_end
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.restart_index = self.block.num_restarts;
    }

    fn corrupt(&mut self, at: usize, what: &str) {
        let o = &self.block.origin;
        if self.status.is_none() {
            self.status = Some(Error::corruption(
                &*o.path,
                o.offset,
                format!("{what} (entry at block offset {at})"),
            ));
        }
        self.invalidate();
        self.key.clear();
    }

    fn seek_to_restart_point(&mut self, index: usize) {
        self.key.clear();
        self.restart_index = index;
        // `current` is fixed by parse_next_key; it starts at value_end.
        let off = self.block.restart_point(index);
        self.value_start = off;
        self.value_end = off;
    }

    /// Decodes the entry at `next_entry_offset()`; false at the end or on error.
    fn parse_next_key(&mut self) -> bool {
        if self.status.is_some() {
            self.invalidate();
            return false;
        }
        self.current = self.next_entry_offset();
        if self.current >= self.block.restarts_offset {
            self.invalidate();
            return false;
        }
        let off = self.current;
        let Some((shared, unshared, vlen, hdr)) = self.block.decode_entry(off) else {
            self.corrupt(off, "bad block entry header or lengths");
            return false;
        };
        if shared > self.key.len() {
            self.corrupt(
                off,
                "block entry shares more bytes than the previous key has",
            );
            return false;
        }
        let kstart = off + hdr;
        // decode_entry checked hdr + unshared + vlen fits.
        let Some(tail) = self.block.data().get(kstart..kstart + unshared) else {
            self.corrupt(off, "block key runs past the entries");
            return false;
        };
        self.key.truncate(shared);
        self.key.extend_from_slice(tail);
        if self.key.len() < TRAILER_LEN {
            self.corrupt(off, "block key shorter than an internal key trailer");
            return false;
        }
        self.value_start = kstart + unshared;
        self.value_end = self.value_start + vlen;
        true
    }

    /// Brings `restart_index` up to the last restart point at or before
    /// `current` (`next` leaves it behind; only `prev` and
    /// `restart_ordinal` need it exact, so a forward scan does not read the
    /// restart array per entry).
    #[inline]
    fn sync_restart_index(&mut self) {
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
    }

    /// The ordinal of the current entry when it is a restart point (always,
    /// in a block written with restart interval 1, such as an index block);
    /// `None` when invalid or between restart points.
    #[inline]
    pub fn restart_ordinal(&mut self) -> Option<usize> {
        self.sync_restart_index();
        (self.current < self.block.restarts_offset
            && self.restart_index < self.block.num_restarts
            && self.block.restart_point(self.restart_index) == self.current)
            .then_some(self.restart_index)
    }

    /// Positions at the entry starting at byte `offset`, which must be a
    /// restart entry (one that shares no key bytes; else the iterator
    /// reports corruption); invalid when `offset` is not before the restart
    /// array.
    #[inline]
    pub fn seek_to_offset(&mut self, offset: usize) {
        if offset >= self.block.restarts_offset || self.status.is_some() {
            self.invalidate();
            return;
        }
        self.key.clear();
        // Restart point 0 is at or before any entry (`sync_restart_index`
        // moves it up when `prev` or `restart_ordinal` need it exact).
        self.restart_index = 0;
        self.value_start = offset;
        self.value_end = offset;
        self.parse_next_key();
    }

    /// Positions at the first entry `>= target`, given that every restart
    /// key before restart point `lo` is `< target` and every one from `hi`
    /// on is `> target` (a caller that knows nothing passes `0, usize::MAX`;
    /// see `BlockTable`'s index prefixes). Only restart points in
    /// `lo - 1 ..= hi - 1` are searched.
    pub fn seek_between(&mut self, target: &[u8], lo: usize, hi: usize) {
        let n = self.block.num_restarts;
        if n == 0 || self.status.is_some() {
            self.invalidate();
            return;
        }
        // Last restart point whose key is < target.
        let mut left = lo.min(n).saturating_sub(1);
        let mut right = hi.min(n).saturating_sub(1).max(left);
        while left < right {
            let mid = (left + right).div_ceil(2);
            match self.block.restart_key(mid) {
                Ok(k) => {
                    if compare_internal(k, target) == Ordering::Less {
                        left = mid;
                    } else {
                        right = mid - 1;
                    }
                }
                Err(off) => {
                    self.corrupt(off, "bad block entry at restart point");
                    return;
                }
            }
        }
        self.seek_to_restart_point(left);
        while self.parse_next_key() {
            if compare_internal(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }
}

impl<B: Deref<Target = Block> + Send> InternalIterator for BlockIter<B> {
    fn valid(&self) -> bool {
        self.current < self.block.restarts_offset
    }

    fn seek_to_first(&mut self) {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart_point(0);
        self.parse_next_key();
    }

    fn seek_to_last(&mut self) {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return;
        }
        self.seek_to_restart_point(self.block.num_restarts - 1);
        while self.parse_next_key() && self.next_entry_offset() < self.block.restarts_offset {}
    }

    fn seek(&mut self, target: &[u8]) {
        self.seek_between(target, 0, usize::MAX);
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next_key();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        let original = self.current;
        self.sync_restart_index();
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.invalidate();
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart_point(self.restart_index);
        while self.parse_next_key() && self.next_entry_offset() < original {}
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        self.block
            .data()
            .get(self.value_start..self.value_end)
            .unwrap_or(&[])
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
pub(crate) mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueType};

    pub(crate) fn origin() -> BlockOrigin {
        BlockOrigin {
            path: Arc::from(Path::new("/test/000001.sst")),
            offset: 0,
        }
    }

    fn ik(i: usize) -> Vec<u8> {
        make_internal_key(format!("key{:06}", i * 2).as_bytes(), 7, ValueType::Value)
    }

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn build(n: usize, interval: usize) -> (Arc<Block>, Entries) {
        let mut b = BlockBuilder::new(interval);
        let mut entries = Vec::new();
        for i in 0..n {
            let k = ik(i);
            let v = format!("value{i}").repeat(i % 3).into_bytes();
            b.add(&k, &v);
            entries.push((k, v));
        }
        let data = b.finish().to_vec();
        (Arc::new(Block::new(data, origin()).unwrap()), entries)
    }

    #[test]
    fn round_trip_all_intervals() {
        for interval in [1, 2, 16] {
            for n in [0, 1, 2, 17, 100] {
                let (block, entries) = build(n, interval);
                let mut it = block.iter();
                it.seek_to_first();
                for (k, v) in &entries {
                    assert!(it.valid());
                    assert_eq!(it.key(), &k[..]);
                    assert_eq!(it.value(), &v[..]);
                    it.next();
                }
                assert!(!it.valid());
                it.seek_to_last();
                for (k, v) in entries.iter().rev() {
                    assert!(it.valid());
                    assert_eq!(it.key(), &k[..]);
                    assert_eq!(it.value(), &v[..]);
                    it.prev();
                }
                assert!(!it.valid());
                it.status().unwrap();
                // Seek to every key, and between keys.
                for (i, (k, _)) in entries.iter().enumerate() {
                    it.seek(k);
                    assert!(it.valid());
                    assert_eq!(it.key(), &k[..]);
                    let between = make_internal_key(
                        format!("key{:06}", i * 2 + 1).as_bytes(),
                        7,
                        ValueType::Value,
                    );
                    it.seek(&between);
                    if i + 1 < n {
                        assert_eq!(it.key(), &entries[i + 1].0[..]);
                        it.prev();
                        assert_eq!(it.key(), &k[..]);
                        it.next();
                        assert_eq!(it.key(), &entries[i + 1].0[..]);
                    } else {
                        assert!(!it.valid());
                    }
                }
                let before = make_internal_key(b"a", 1, ValueType::Value);
                it.seek(&before);
                assert_eq!(it.valid(), n > 0);
                let after = make_internal_key(b"z", 1, ValueType::Value);
                it.seek(&after);
                assert!(!it.valid());
                // Same user key, older sequence than stored: lands after it.
                if n > 0 {
                    let older = make_internal_key(b"key000000", 3, ValueType::Value);
                    it.seek(&older);
                    if n > 1 {
                        assert_eq!(it.key(), &entries[1].0[..]);
                    } else {
                        assert!(!it.valid());
                    }
                }
                it.status().unwrap();
            }
        }
    }

    /// A block over borrowed bytes iterates and seeks exactly like one that
    /// owns a copy, and rejects the same damage.
    #[test]
    fn borrowed_block_reads_like_owned() {
        let (owned, entries) = build(100, 16);
        let bytes = owned.data().to_vec();
        let borrowed = Block::borrowed(&bytes, origin()).unwrap();
        let mut a = BlockIter::with_key_buf(&*borrowed, Vec::new());
        let mut b = owned.iter();
        a.seek_to_first();
        b.seek_to_first();
        for (k, v) in &entries {
            assert_eq!((a.key(), a.value()), (&k[..], &v[..]));
            assert_eq!((a.key(), a.value()), (b.key(), b.value()));
            a.next();
            b.next();
        }
        assert!(!a.valid() && !b.valid());
        for (k, _) in entries.iter().step_by(7) {
            a.seek(k);
            assert_eq!(a.key(), &k[..]);
        }
        let mut damaged = bytes.clone();
        let n = damaged.len();
        damaged[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Block::borrowed(&damaged, origin()).is_err());
        assert!(Block::new(damaged, origin()).is_err());
    }

    /// `next` leaves the restart index behind; `prev` and
    /// `restart_ordinal` must still see the exact restart point (a wrong
    /// ordinal would mark the wrong data block verified and uncompressed).
    #[test]
    fn lagging_restart_index_is_exact_for_prev_and_ordinal() {
        for interval in [1, 3, 16] {
            let n = 100;
            let (block, entries) = build(n, interval);
            for j in 0..n {
                let mut it = block.iter();
                it.seek_to_first();
                for _ in 0..j {
                    it.next();
                }
                assert_eq!(it.key(), &entries[j].0[..]);
                let want = (j % interval == 0).then_some(j / interval);
                assert_eq!(it.restart_ordinal(), want, "interval {interval} entry {j}");
                it.prev();
                if j == 0 {
                    assert!(!it.valid());
                } else {
                    assert_eq!(
                        it.key(),
                        &entries[j - 1].0[..],
                        "interval {interval} entry {j}"
                    );
                }
            }
        }
    }

    fn exercise(data: Vec<u8>) {
        if let Ok(b) = Block::new(data, origin()) {
            let b = Arc::new(b);
            let mut it = b.iter();
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n < 1000 {
                let _ = (it.key(), it.value());
                it.next();
                n += 1;
            }
            it.seek_to_last();
            n = 0;
            while it.valid() && n < 1000 {
                it.prev();
                n += 1;
            }
            it.seek(&ik(5));
            if it.valid() {
                it.prev();
            }
            if let Err(e) = it.status() {
                assert!(e.is_corruption());
                assert!(e.to_string().contains("000001.sst"));
            }
        }
    }

    #[test]
    fn corrupt_blocks_never_panic() {
        for interval in [1, 2, 4] {
            let (block, _) = build(12, interval);
            let data = block.data().to_vec();
            for len in 0..data.len() {
                exercise(data[..len].to_vec());
            }
            for i in 0..data.len() {
                for x in [0x01u8, 0x80, 0xff] {
                    let mut d = data.clone();
                    d[i] ^= x;
                    exercise(d);
                }
            }
        }
    }

    #[test]
    fn bad_restarts_rejected() {
        assert!(Block::new(vec![1, 2], origin()).is_err());
        // Restart count larger than the block.
        let mut d = vec![0u8; 8];
        d[4..].copy_from_slice(&100u32.to_le_bytes());
        let e = Block::new(d, origin()).unwrap_err();
        assert!(e.to_string().contains("000001.sst"), "{e}");
        // Empty block is fine and iterates nothing.
        let b = Arc::new(Block::new(BlockBuilder::new(4).finish().to_vec(), origin()).unwrap());
        let mut it = b.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(&ik(0));
        assert!(!it.valid());
    }
}
