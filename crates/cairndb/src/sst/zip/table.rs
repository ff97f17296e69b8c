//! An open zip table: point lookups that decompress one value group, and a
//! bidirectional iterator (`docs/format/ziptable.md`).
//!
//! `ZipTable::open` maps the file, checks the footer and the meta section,
//! verifies the CRC of every section but the groups, and decodes the offset,
//! trailer and key-start arrays into memory; it also decodes the value
//! dictionary and prepares it once as a zstd `DDict` that every read
//! shares. Format version 2 packs the dictionary, key index, trailer and
//! key-start sections in envelopes; compressed ones are decoded here into
//! memory, while a key index stored raw (and version 1's fst) is read in
//! place from the mapping. Groups are read in place, and each group's CRC
//! is checked when it is decompressed; a version-4 group with packed hex
//! runs is decompressed into a per-thread scratch buffer and expanded from
//! there into the decoded group.
//!
//! Invariants: immutable after `open`, shared as `Arc<ZipTable>` by any
//! number of threads without locks; decompression contexts are per thread
//! (point reads) or per iterator (taken from and given back to a
//! process-wide pool under a short lock, never held while decoding); a
//! point read's decoded group goes to the block cache when the table has
//! one, and a read that finds its group there decompresses nothing.
//! Nothing in this module panics on file contents: every malformed
//! structure it decodes is a `Corruption` error naming the file and an
//! offset.
//!
//! What the checksums do and do not buy. The CRCs (footer, meta, sections,
//! groups) catch accidental damage; they are no defence against a file forged
//! on purpose with valid CRCs and hostile content. Behind that gate this code
//! trusts two decoders it does not own: zstd (dictionary, version-2
//! envelopes, whose declared size is capped by `MAX_PACKED_SECTION_LEN`,
//! and group frames;
//! `DDict::try_create` and the decompress calls report malformed input as
//! errors, which become `Corruption`, and the decoded size is capped by the
//! group header and `MAX_UNCOMPRESSED_BLOCK`) and the fst crate (the key
//! index; `open` checks its header, root address and its own checksum with
//! `Fst::verify`, but fst does not validate node layout, so forged nodes with
//! a matching fst checksum can make its lookups and streams return wrong
//! keys or ordinals, or panic on a bounds check inside fst, which is safe
//! Rust: no undefined behaviour). Everything else (offsets, packed arrays,
//! trailers, key starts, record lengths) is bounds-checked here. So a forged
//! file can give wrong answers (wrong values, keys, versions) and, through
//! fst, a panic; it cannot cause undefined behaviour through this module.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fst::{IntoStreamer, Streamer};
use zstd::zstd_safe::{DCtx, DDict, DParameter, FrameFormat};

use crate::cache::BlockCache;
use crate::env::{FileBytes, RandomAccessFile};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, TRAILER_LEN};
use crate::sst::format::MAX_UNCOMPRESSED_BLOCK;
use crate::sst::properties::TableProperties;
use crate::sst::zip::bitpack::{OffsetArray, PackedArray};
use crate::sst::zip::cursor::FstCursor;
use crate::sst::zip::format::{
    decode_envelope, is_packed, known_flags, raw_envelope_body, sec, section_crc, Meta, Section,
    ZipFooter, FLAG_HAS_DICT, FLAG_HEX_RUNS, FLAG_KEY_IN_VALUE, GROUP_CRC_LEN, MAX_DICT_LEN,
    SECTION_NAMES, ZIP_FOOTER_LEN,
};
use crate::sst::zip::hexrun;
use crate::util::coding::{get_varint32, get_varint64, Reader};
use crate::util::crc;

/// Counters of zip-table point reads, shared by every zip table of a
/// database (reported in `DbStats`).
#[derive(Debug, Default)]
pub struct ZipStats {
    /// Point reads that decompressed a group.
    pub point_reads: AtomicU64,
    /// Bytes those reads decompressed (decoded group sizes).
    pub point_read_bytes: AtomicU64,
    /// Groups decompressed by iterators.
    pub iter_groups: AtomicU64,
    /// Point reads that found their group in the block cache.
    pub point_cache_hits: AtomicU64,
    /// Point reads that went past a full block cache that almost no point
    /// read hits, neither probing nor filling it (see
    /// [`ZipStats::use_cache`]).
    pub point_cache_skips: AtomicU64,
    /// The admission window: hits and misses of point reads that probed
    /// the block cache, both halved when the misses reach `ADMIT_WINDOW`.
    window_hits: AtomicU64,
    window_misses: AtomicU64,
    /// Bytes of tables still to be read ahead as they open
    /// (`ZipTableOptions::read_ahead_on_open`); 0 by default.
    read_ahead_left: AtomicU64,
}

/// Misses in the admission window before it is halved.
const ADMIT_WINDOW: u64 = 8192;
/// Below one hit in this many probes, point reads pass a full cache by.
const ADMIT_MIN_HIT_RATIO: u64 = 32;
/// One point read in this many still probes (and fills) a cache that the
/// others pass by, so that a workload that gains locality is noticed.
const ADMIT_SAMPLE: u32 = 16;

thread_local! {
    /// Point reads on this thread, for `ADMIT_SAMPLE`.
    static ADMIT_TICK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl ZipStats {
    /// Counters for a database that reads ahead up to `bytes` of zip
    /// tables as it opens them.
    pub fn with_read_ahead(bytes: u64) -> ZipStats {
        ZipStats {
            read_ahead_left: AtomicU64::new(bytes),
            ..ZipStats::default()
        }
    }

    /// Bytes of tables still to be read ahead as they open.
    pub fn read_ahead_left(&self) -> u64 {
        self.read_ahead_left.load(Ordering::Relaxed)
    }

    /// Takes `size` bytes from the read-ahead budget: true when the budget
    /// held them, and a table of that size is to be read ahead.
    fn claim_read_ahead(&self, size: u64) -> bool {
        self.read_ahead_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(size)
            })
            .is_ok()
    }

    /// Whether a point read should probe the block cache for its group,
    /// and put the group there if it decodes it.
    ///
    /// A probe that misses costs a hash lookup in a large table and shared
    /// counters, and putting a group in the cache a buffer of its own and
    /// an eviction. Under uniform keys over tables much larger than the
    /// cache (sysbench's point selects under a memory cap) almost no group
    /// is read again before it is evicted, and that cost buys nothing. So:
    /// while the cache has taken less than its capacity, every read uses
    /// it; after that, every read while at least one probe in
    /// `ADMIT_MIN_HIT_RATIO` hits, and one read in `ADMIT_SAMPLE`
    /// otherwise. Only probes update the window, so its ratio is the hit
    /// rate of the cache whichever mode reads are in. The counters are
    /// relaxed and the window's halving may race with other readers: the
    /// rule is a heuristic, never a correctness matter.
    ///
    /// `None`: pass the cache by. `Some(full)`: probe it; `full` says the
    /// cache has taken its capacity, so the probe is counted in the window
    /// (before that the window is not read, and a hit costs no update).
    fn use_cache(&self, cache: &BlockCache) -> Option<bool> {
        if cache.inserted_bytes() < cache.capacity() {
            return Some(false);
        }
        let h = self.window_hits.load(Ordering::Relaxed);
        let m = self.window_misses.load(Ordering::Relaxed);
        if h * ADMIT_MIN_HIT_RATIO >= m {
            return Some(true);
        }
        let tick = ADMIT_TICK.with(|t| {
            let n = t.get().wrapping_add(1);
            t.set(n);
            n
        });
        if tick.is_multiple_of(ADMIT_SAMPLE) {
            return Some(true);
        }
        self.point_cache_skips.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Counts a probe's outcome, in the window too when `full`.
    fn count_probe(&self, hit: bool, full: bool) {
        if hit {
            self.point_cache_hits.fetch_add(1, Ordering::Relaxed);
        }
        if !full {
            return;
        }
        if hit {
            self.window_hits.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let m = self.window_misses.fetch_add(1, Ordering::Relaxed) + 1;
        if m >= ADMIT_WINDOW {
            let h = self.window_hits.load(Ordering::Relaxed);
            self.window_misses.store(m / 2, Ordering::Relaxed);
            self.window_hits.store(h / 2, Ordering::Relaxed);
        }
    }
}

/// A section's bytes as fst wants them: in place in the file (version 1)
/// or decoded from its envelope (version 2).
#[derive(Clone)]
enum SectionBytes {
    Mapped {
        data: FileBytes,
        start: usize,
        end: usize,
    },
    Decoded(Arc<[u8]>),
}

impl AsRef<[u8]> for SectionBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            // In range: `ZipTable::open` checked the section lies in the file.
            SectionBytes::Mapped { data, start, end } => data.get(*start..*end).unwrap_or_default(),
            SectionBytes::Decoded(b) => b,
        }
    }
}

/// What a thread keeps for point reads (see `POINT`).
type PointState = (Option<DCtx<'static>>, DecodedGroup, Vec<u8>, Vec<u8>);

thread_local! {
    /// Decompression context, decoded group, key buffer and value buffer
    /// (for a value whose key was cut out) of point reads on this thread,
    /// reused so that a warm lookup allocates nothing.
    static POINT: RefCell<PointState> =
        const { RefCell::new((None, DecodedGroup::new(), Vec::new(), Vec::new())) };
}

/// Decompression contexts and group buffers of dropped iterators, for the
/// next iterators to take: a zstd context is large (about 100 KiB), and a
/// range read over a secondary index makes an iterator per table for each
/// range (`IN` lists, ORs). One pool for the process, not one per thread:
/// a server runs statements on dozens of threads (tokio hands a blocking
/// statement's worker role to another thread), and per-thread pools held
/// up to `threads x ITER_POOL_MAX` contexts, tens of MB under a memory
/// cap. The lock is taken once when an iterator is made and once when it
/// is dropped, never while decoding.
static ITER_POOL: parking_lot::Mutex<Vec<(DCtx<'static>, DecodedGroup)>> =
    parking_lot::Mutex::new(Vec::new());

/// Iterator resources kept in the pool at most.
const ITER_POOL_MAX: usize = 16;
/// Largest group buffer kept in the pool.
const POOLED_GROUP_MAX: usize = 1 << 20;

/// Iterator contexts in the pool (for tests).
#[cfg(test)]
pub(super) fn pooled_iter_contexts() -> usize {
    ITER_POOL.lock().len()
}

/// Most contexts the pool keeps (for tests).
#[cfg(test)]
pub(super) const POOLED_ITER_CONTEXTS_MAX: usize = ITER_POOL_MAX;

/// A zip table opened for reading (see the module doc).
pub struct ZipTable {
    data: FileBytes,
    path: Arc<Path>,
    file_number: u64,
    meta: Meta,
    version: u32,
    ddict: Option<DDict<'static>>,
    dict_len: u64,
    offsets: OffsetArray,
    index: fst::Map<SectionBytes>,
    trailers: PackedArray,
    key_starts: Option<PackedArray>,
    props: TableProperties,
    stats: Arc<ZipStats>,
    /// Decoded groups of point reads are kept here when set.
    cache: Option<Arc<BlockCache>>,
}

impl std::fmt::Debug for ZipTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZipTable")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// Version 4: this thread's buffer for a group's decoded body before its
    /// hex runs are expanded (`ZipTable::decode_group`).
    static HEX_BODY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A scratch buffer that grew past this (a group of huge values) is freed
/// after use rather than kept by the thread.
const HEX_SCRATCH_KEEP: usize = 1 << 20;

/// A value group decoded into memory: its bytes, each record's range and
/// (`FLAG_KEY_IN_VALUE`) where its user key was cut out of its value.
#[derive(Default)]
pub struct DecodedGroup {
    raw: Vec<u8>,
    ranges: Vec<(usize, usize)>,
    /// Per record: 0, or 1 + the offset in the value of its user key,
    /// which the stored bytes lack. Empty when the table has no such flag.
    key_pos: Vec<u32>,
}

impl DecodedGroup {
    /// Heap bytes held (what a cache charges for it).
    pub fn heap_bytes(&self) -> usize {
        self.raw.capacity()
            + self.ranges.capacity() * std::mem::size_of::<(usize, usize)>()
            + self.key_pos.capacity() * 4
    }

    const fn new() -> DecodedGroup {
        DecodedGroup {
            raw: Vec::new(),
            ranges: Vec::new(),
            key_pos: Vec::new(),
        }
    }

    /// The stored bytes of position `i` of the group (empty if out of
    /// range): the value, less its user key when [`Self::key_pos`] says so.
    fn stored(&self, i: usize) -> &[u8] {
        match self.ranges.get(i) {
            Some(&(off, len)) => self.raw.get(off..off + len).unwrap_or(&[]),
            None => &[],
        }
    }

    /// Where position `i`'s user key goes back into its stored bytes.
    fn key_pos(&self, i: usize) -> Option<usize> {
        match self.key_pos.get(i) {
            Some(&p) if p > 0 => Some(p as usize - 1),
            _ => None,
        }
    }

    /// The value of position `i`, whose user key is `user_key`: the stored
    /// bytes themselves, or, when the key was cut out, the bytes with the
    /// key put back, assembled in `buf`.
    fn value<'a>(&'a self, i: usize, user_key: &[u8], buf: &'a mut Vec<u8>) -> &'a [u8] {
        let stored = self.stored(i);
        match self.key_pos(i) {
            None => stored,
            Some(p) => {
                // `decode_group` checked p <= stored.len().
                let (a, b) = stored.split_at(p.min(stored.len()));
                buf.clear();
                buf.reserve(stored.len() + user_key.len());
                buf.extend_from_slice(a);
                buf.extend_from_slice(user_key);
                buf.extend_from_slice(b);
                buf
            }
        }
    }
}

impl ZipTable {
    /// Opens a zip table (the caller has seen `ZIP_MAGIC` at its end).
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        stats: Arc<ZipStats>,
    ) -> Result<ZipTable> {
        let path: Arc<Path> = Arc::from(file.path());
        let read_ahead = stats.claim_read_ahead(file.size());
        let data = file.map_all(read_ahead)?;
        let size = data.len() as u64;
        let Some(fb) = data.last_chunk::<ZIP_FOOTER_LEN>() else {
            return Err(Error::corruption(
                &*path,
                0,
                format!("file too short to be a zip table ({size} bytes)"),
            ));
        };
        let foff = size - ZIP_FOOTER_LEN as u64;
        let footer = ZipFooter::decode(&path, foff, fb)?;
        let meta_bytes = section(&data, &path, foff, footer.meta, "meta")?;
        let meta = Meta::decode(&path, footer.meta.offset, meta_bytes)?;
        let unknown = meta.flags & !known_flags(footer.version);
        if unknown != 0 {
            return Err(Error::corruption(
                &*path,
                footer.meta.offset,
                format!(
                    "zip meta: flag bits {unknown:#04x} are not defined for format version {}",
                    footer.version
                ),
            ));
        }
        let mut groups_end = footer.meta.offset;
        let mut secs: [&[u8]; SECTION_NAMES.len()] = Default::default();
        for ((s, name), bytes) in meta.sections.iter().zip(SECTION_NAMES).zip(&mut secs) {
            *bytes = section(&data, &path, footer.meta.offset, *s, name)?;
            groups_end = groups_end.min(s.offset);
        }
        let bad = |s: usize, what: &str| {
            Error::corruption(
                &*path,
                meta.sections.get(s).map_or(0, |x| x.offset),
                format!("zip {}: {what}", SECTION_NAMES.get(s).unwrap_or(&"section")),
            )
        };
        // Version 2's packed sections, decoded from their envelopes; a key
        // index stored raw in its envelope is read in place instead (from
        // past `index_header`, the envelope's header), so that it costs page
        // cache when read rather than heap from open to close.
        let mut decoded: [Option<Arc<[u8]>>; SECTION_NAMES.len()] = Default::default();
        let mut index_header = 0usize;
        for (s, slot) in decoded.iter_mut().enumerate() {
            let raw = secs.get(s).copied().unwrap_or_default();
            if is_packed(footer.version, s) && !raw.is_empty() {
                if s == sec::INDEX {
                    if let Some(hl) = raw_envelope_body(raw).map_err(|what| bad(s, &what))? {
                        index_header = hl;
                        continue;
                    }
                }
                *slot = Some(decode_envelope(raw).map_err(|what| bad(s, &what))?.into());
            }
        }
        let sec_bytes = |s: usize| match decoded.get(s) {
            Some(Some(d)) => &d[..],
            _ => secs.get(s).copied().unwrap_or_default(),
        };
        // `DDict::create` panics when zstd refuses the dictionary (a zstd
        // dictionary header with bad entropy tables); `try_create` says so.
        let (ddict, dict_len) = if meta.flags & FLAG_HAS_DICT != 0 {
            let d = sec_bytes(sec::DICT);
            if d.len() > MAX_DICT_LEN {
                return Err(bad(
                    sec::DICT,
                    &format!("{} bytes, over {MAX_DICT_LEN}", d.len()),
                ));
            }
            (
                Some(
                    DDict::try_create(d)
                        .ok_or_else(|| bad(sec::DICT, "zstd rejects the dictionary"))?,
                ),
                d.len() as u64,
            )
        } else {
            (None, 0)
        };
        let offsets = OffsetArray::decode(&mut Reader::new(sec_bytes(sec::OFFSETS)))
            .ok_or_else(|| bad(sec::OFFSETS, "malformed"))?;
        if offsets.len() != meta.num_groups + 1
            || offsets.get(0) != Some(0)
            || offsets.get(meta.num_groups) != Some(groups_end)
        {
            return Err(bad(
                sec::OFFSETS,
                &format!(
                    "{} offsets for {} groups, or not spanning the {groups_end} group bytes",
                    offsets.len(),
                    meta.num_groups
                ),
            ));
        }
        let trailers = PackedArray::decode(&mut Reader::new(sec_bytes(sec::TRAILERS)))
            .ok_or_else(|| bad(sec::TRAILERS, "malformed"))?;
        if trailers.len() != meta.num_records {
            return Err(bad(
                sec::TRAILERS,
                &format!(
                    "{} trailers for {} records",
                    trailers.len(),
                    meta.num_records
                ),
            ));
        }
        let key_starts = if meta.sections[sec::KEY_STARTS].size == 0 {
            if meta.num_keys != meta.num_records {
                return Err(bad(
                    sec::KEY_STARTS,
                    "missing although keys have several records",
                ));
            }
            None
        } else {
            let a = PackedArray::decode(&mut Reader::new(sec_bytes(sec::KEY_STARTS)))
                .ok_or_else(|| bad(sec::KEY_STARTS, "malformed"))?;
            if a.len() != meta.num_keys + 1
                || a.get(0) != Some(0)
                || a.get(meta.num_keys) != Some(meta.num_records)
            {
                return Err(bad(sec::KEY_STARTS, "does not span the records"));
            }
            Some(a)
        };
        let x = meta.sections[sec::INDEX];
        let index_bytes = match decoded.get(sec::INDEX).cloned().flatten() {
            Some(d) => SectionBytes::Decoded(d),
            None => SectionBytes::Mapped {
                data: data.clone(),
                start: x.offset as usize + index_header,
                end: (x.offset + x.size) as usize,
            },
        };
        let index = fst::Map::new(index_bytes).map_err(|e| bad(sec::INDEX, &e.to_string()))?;
        // fst's own checksum over its bytes, once: `Map::new` only checks
        // the header and the root address.
        index
            .as_fst()
            .verify()
            .map_err(|e| bad(sec::INDEX, &format!("fst check: {e}")))?;
        if index.len() as u64 != meta.num_keys {
            return Err(bad(
                sec::INDEX,
                &format!("{} keys, meta says {}", index.len(), meta.num_keys),
            ));
        }
        let props = TableProperties::decode(
            &path,
            meta.sections[sec::PROPS].offset,
            sec_bytes(sec::PROPS),
        )?;
        Ok(ZipTable {
            data,
            path,
            file_number,
            meta,
            version: footer.version,
            ddict,
            dict_len,
            offsets,
            index,
            trailers,
            key_starts,
            props,
            stats,
            cache: None,
        })
    }

    /// Keeps the groups point reads decode in `cache` (the block cache),
    /// so a read of a group already there decompresses nothing.
    pub fn with_cache(mut self, cache: Option<Arc<BlockCache>>) -> ZipTable {
        self.cache = cache;
        self
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
        self.data.len() as u64
    }

    /// The meta section (counts, group size, section table).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The file's format version (1 or 2).
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Bytes of the decoded value dictionary (0 without one).
    pub fn dictionary_len(&self) -> u64 {
        self.dict_len
    }

    /// Bytes of the key index (the fst).
    pub fn key_index_len(&self) -> u64 {
        self.index.as_fst().as_bytes().len() as u64
    }

    /// True when the key index is read in place from the file's mapping
    /// (version 1, or a version-2 key index stored raw in its envelope);
    /// false when it was decoded into memory at open.
    pub fn key_index_in_place(&self) -> bool {
        matches!(self.index.as_fst().as_inner(), SectionBytes::Mapped { .. })
    }

    /// Bytes of the key index, decoded dictionary and in-memory arrays: what
    /// a reader needs resident besides the groups it touches.
    pub fn index_memory(&self) -> u64 {
        self.index.as_fst().as_bytes().len() as u64
            + self.dict_len
            + (self.offsets.memory()
                + self.trailers.memory()
                + self.key_starts.as_ref().map_or(0, |a| a.memory())) as u64
    }

    fn corrupt(&self, offset: u64, what: impl Into<String>) -> Error {
        Error::corruption(&*self.path, offset, what)
    }

    /// Records `[first, end)` of the key with ordinal `ord`.
    fn key_records(&self, ord: u64) -> Result<(u64, u64)> {
        let r = match &self.key_starts {
            None => Some((ord, ord + 1)),
            Some(a) => a.get(ord).zip(a.get(ord + 1)),
        };
        match r {
            Some((a, b)) if a < b && b <= self.meta.num_records => Ok((a, b)),
            _ => Err(self.corrupt(
                self.meta.sections[sec::KEY_STARTS].offset,
                format!("zip key-start array: bad record range for key {ord}"),
            )),
        }
    }

    /// The first record of key `ord` visible at `lookup_trailer` (trailer
    /// `<=` it, as internal keys order versions), with its trailer.
    fn find_version(&self, ord: u64, lookup_trailer: u64) -> Result<Option<(u64, u64)>> {
        let (a, b) = self.key_records(ord)?;
        for r in a..b {
            let t = self.trailer(r)?;
            if t <= lookup_trailer {
                return Ok(Some((r, t)));
            }
        }
        Ok(None)
    }

    fn trailer(&self, rec: u64) -> Result<u64> {
        self.trailers.get(rec).ok_or_else(|| {
            self.corrupt(
                self.meta.sections[sec::TRAILERS].offset,
                format!("zip trailer array: no trailer for record {rec}"),
            )
        })
    }

    /// File offset of group `g`.
    fn group_offset(&self, g: u64) -> u64 {
        self.offsets.get(g).unwrap_or(0)
    }

    /// Decompresses group `g` into `out`, checking its CRC and its layout.
    fn decode_group(&self, g: u64, dctx: &mut DCtx<'static>, out: &mut DecodedGroup) -> Result<()> {
        self.decode_group_part(g, None, dctx, out).map(|_| ())
    }

    /// [`Self::decode_group`], or with `only = Some(i)` in a table with hex
    /// runs, the group's position `i` alone: the body is decompressed
    /// whole, but only that record's hex runs are expanded (the others are
    /// walked), and `out` holds only its bytes (the other positions read as
    /// empty). For a point read that does not fill the cache. Returns the
    /// group's decoded size (hex runs expanded).
    fn decode_group_part(
        &self,
        g: u64,
        only: Option<usize>,
        dctx: &mut DCtx<'static>,
        out: &mut DecodedGroup,
    ) -> Result<usize> {
        let (start, end) = match self.offsets.get(g).zip(self.offsets.get(g + 1)) {
            Some((s, e)) if s <= e && e <= self.data.len() as u64 => (s, e),
            _ => {
                return Err(self.corrupt(
                    self.meta.sections[sec::OFFSETS].offset,
                    format!("zip offset array: bad bounds for group {g}"),
                ))
            }
        };
        let bytes = self
            .data
            .get(start as usize..end as usize)
            .unwrap_or_default();
        let Some((c, rest)) = bytes.split_first_chunk::<GROUP_CRC_LEN>() else {
            return Err(self.corrupt(start, format!("zip group {g}: too short")));
        };
        if rest.is_empty() {
            return Err(self.corrupt(start, format!("zip group {g}: too short")));
        }
        let stored = u32::from_le_bytes(*c);
        if stored != crc::mask(crc::crc32c(rest)) {
            return Err(self.corrupt(start, format!("zip group {g}: checksum mismatch")));
        }
        let Some((h, hl)) = get_varint64(rest) else {
            return Err(self.corrupt(start, format!("zip group {g}: bad header")));
        };
        let Ok(raw_len) = usize::try_from(h >> 1) else {
            return Err(self.corrupt(start, format!("zip group {g}: bad header")));
        };
        // The cap bounds what a forged header can make zstd allocate; a raw
        // group's bytes are in the file already (and huge values make raw
        // groups above the cap).
        if h & 1 == 1 && raw_len > MAX_UNCOMPRESSED_BLOCK {
            return Err(self.corrupt(
                start,
                format!("zip group {g}: decoded size {raw_len} is too large"),
            ));
        }
        // Version 4 with hex runs: the packed digits' length, which the
        // decoded body ends with.
        let hex = self.meta.flags & FLAG_HEX_RUNS != 0;
        let (packed_len, pl) = if hex {
            match rest.get(hl..).and_then(get_varint64) {
                Some((n, l)) if n <= raw_len as u64 => (n as usize, l),
                _ => {
                    return Err(
                        self.corrupt(start, format!("zip group {g}: bad packed digit length"))
                    )
                }
            }
        } else {
            (0, 0)
        };
        let body = rest.get(hl + pl..).unwrap_or_default();
        let compressed = h & 1 == 1;
        let first = g * self.meta.group_size as u64;
        let k = (self.meta.num_records - first).min(self.meta.group_size as u64) as usize;
        let (pos, lens_total) = if hex {
            // The filtered body goes to this thread's scratch buffer (or is
            // read in place when stored raw) and expands into `out`, which
            // then holds exactly the decoded group.
            let (pos, lens_total, one) = HEX_BODY.with(|cell| {
                let mut scratch = cell.take();
                let r = (|| {
                    let filtered: &[u8] = if compressed {
                        self.decode_body(g, start, dctx, body, raw_len, &mut scratch)?;
                        &scratch
                    } else {
                        body
                    };
                    if filtered.len() != raw_len {
                        return Err(
                            self.corrupt(start, format!("zip group {g}: stored size mismatch"))
                        );
                    }
                    // The lengths and key positions read the same before
                    // and after the expansion.
                    let (pos, lens_total) = self.parse_lengths(
                        g,
                        start,
                        k,
                        filtered,
                        &mut out.ranges,
                        &mut out.key_pos,
                    )?;
                    let bad = |what| self.corrupt(start, format!("zip group {g}: {what}"));
                    let one = self.expand_hex_runs(
                        filtered,
                        (pos, lens_total, packed_len),
                        only,
                        out,
                        bad,
                    )?;
                    Ok((pos, lens_total, one))
                })();
                if scratch.capacity() <= HEX_SCRATCH_KEEP {
                    cell.replace(scratch);
                }
                r
            })?;
            if one {
                // One record expanded: `out` is laid out already.
                return Ok(pos + lens_total);
            }
            (pos, lens_total)
        } else {
            if compressed {
                self.decode_body(g, start, dctx, body, raw_len, &mut out.raw)?;
            } else {
                if body.len() != raw_len {
                    return Err(self.corrupt(start, format!("zip group {g}: stored size mismatch")));
                }
                out.raw.clear();
                out.raw.extend_from_slice(body);
            }
            self.parse_lengths(g, start, k, &out.raw, &mut out.ranges, &mut out.key_pos)?
        };
        if pos.checked_add(lens_total) != Some(out.raw.len()) {
            return Err(self.corrupt(
                start,
                format!("zip group {g}: record lengths do not add up to the group size"),
            ));
        }
        for r in &mut out.ranges {
            r.0 += pos;
        }
        Ok(out.raw.len())
    }

    /// Reads the `k` record lengths (and, with `FLAG_KEY_IN_VALUE`, key
    /// positions) at the start of a decoded group body into `ranges`
    /// (offsets relative to the first value) and `key_pos`, checking each
    /// key position against its value; returns the header's size and the
    /// sum of the lengths.
    fn parse_lengths(
        &self,
        g: u64,
        start: u64,
        k: usize,
        body: &[u8],
        ranges: &mut Vec<(usize, usize)>,
        key_pos: &mut Vec<u32>,
    ) -> Result<(usize, usize)> {
        ranges.clear();
        key_pos.clear();
        let mut pos = 0usize;
        let mut lens_total = 0usize;
        for _ in 0..k {
            let Some((l, n)) = body.get(pos..).and_then(get_varint32) else {
                return Err(self.corrupt(start, format!("zip group {g}: bad record length")));
            };
            pos += n;
            ranges.push((lens_total, l as usize));
            lens_total += l as usize;
        }
        if self.meta.flags & FLAG_KEY_IN_VALUE != 0 {
            for &(_, len) in ranges.iter() {
                let Some((p, n)) = body.get(pos..).and_then(get_varint32) else {
                    return Err(self.corrupt(start, format!("zip group {g}: bad key position")));
                };
                if p as usize > len + 1 {
                    return Err(self.corrupt(
                        start,
                        format!(
                            "zip group {g}: key position {} past a value of {len} bytes",
                            p - 1
                        ),
                    ));
                }
                pos += n;
                key_pos.push(p);
            }
        }
        Ok((pos, lens_total))
    }

    /// Decompresses a group's zstd `body` into `dst` (cleared first), which
    /// must come to `raw_len` bytes.
    fn decode_body(
        &self,
        g: u64,
        start: u64,
        dctx: &mut DCtx<'static>,
        body: &[u8],
        raw_len: usize,
        dst: &mut Vec<u8>,
    ) -> Result<()> {
        dst.clear();
        dst.reserve(raw_len);
        let r = match &self.ddict {
            Some(d) => dctx.decompress_using_ddict(dst, body, d),
            None => dctx.decompress(dst, body),
        };
        match r {
            Ok(n) if n == raw_len => Ok(()),
            Ok(n) => Err(self.corrupt(
                start,
                format!("zip group {g}: decoded {n} bytes, header says {raw_len}"),
            )),
            Err(code) => Err(self.corrupt(
                start,
                format!(
                    "zip group {g}: zstd: {}",
                    zstd::zstd_safe::get_error_name(code)
                ),
            )),
        }
    }

    /// Version 4: expands the decoded body `filtered` (`pos` bytes of
    /// lengths and key positions, which [`Self::parse_lengths`] read into
    /// `out`, then the filtered text, then the last `packed_len` bytes, the
    /// packed digits) to the `lens_total` bytes of values the lengths add
    /// up to (`ziptable.md`, "Hex runs"). Into `out.raw`: the header as it
    /// is and every value; or, with `one = Some(i)`, the value of position
    /// `i` alone (the rest of the text walked and checked, not expanded),
    /// with `out.ranges` laid out so that the other positions read empty;
    /// true then. `bad` makes the corruption error for a description.
    fn expand_hex_runs(
        &self,
        filtered: &[u8],
        (pos, lens_total, packed_len): (usize, usize, usize),
        one: Option<usize>,
        out: &mut DecodedGroup,
        bad: impl Fn(String) -> Error,
    ) -> Result<bool> {
        let Some(text_len) = filtered
            .len()
            .checked_sub(pos)
            .and_then(|n| n.checked_sub(packed_len))
        else {
            return Err(bad("packed digits overlap the record lengths".into()));
        };
        // Bounds the allocations below by what the body can expand to.
        if lens_total > hexrun::max_expansion(text_len, packed_len) {
            return Err(bad(
                "record lengths are more than its hex runs can expand to".into(),
            ));
        }
        let (head, rest) = filtered.split_at(pos);
        let (text, packed) = rest.split_at(text_len);
        let esc = self.meta.hex_escape;
        out.raw.clear();
        match one.and_then(|i| out.ranges.get(i).map(|&r| (i, r))) {
            None => {
                out.raw.reserve_exact(pos + lens_total);
                out.raw.extend_from_slice(head);
                hexrun::unfilter(text, packed, esc, &mut out.raw, lens_total).map_err(bad)?;
                Ok(false)
            }
            Some((i, (skip, len))) => {
                out.raw.reserve(len);
                hexrun::unfilter_range(text, packed, esc, (skip, len), lens_total, &mut out.raw)
                    .map_err(bad)?;
                for (j, r) in out.ranges.iter_mut().enumerate() {
                    *r = if j == i { (0, len) } else { (0, 0) };
                }
                Ok(true)
            }
        }
    }

    /// Finds the first entry `>= lookup_ikey` among the versions of its user
    /// key and calls `f(key, value)` on it. `Ok(None)` when the user key is
    /// not in the table or has no version visible at the lookup sequence
    /// (the block-based table's contract: the caller checks the user key).
    /// A group decoded here is kept in the block cache when `fill_cache`.
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
        let uk = key::user_key(lookup_ikey);
        let lt = key::trailer(lookup_ikey);
        let Some(ord) = self.index.get(uk) else {
            return Ok(None);
        };
        let Some((rec, trailer)) = self.find_version(ord, lt)? else {
            return Ok(None);
        };
        let g = rec / self.meta.group_size as u64;
        let i = (rec % self.meta.group_size as u64) as usize;
        POINT.with(|cell| {
            let mut st = cell.take();
            let r = (|| {
                let kbuf = &mut st.2;
                kbuf.clear();
                kbuf.extend_from_slice(uk);
                kbuf.extend_from_slice(&trailer.to_le_bytes());
                // A raw group is parsed in place, never cached (as in
                // iterators).
                let raw = self.group_is_raw(g);
                if let (Some(cache), false) = (&self.cache, raw) {
                    if let Some(full) = self.stats.use_cache(cache) {
                        let off = self.group_offset(g);
                        let hit = cache.get_zip_group(self.file_number, off);
                        self.stats.count_probe(hit.is_some(), full);
                        let group = match hit {
                            Some(hit) => Some(hit),
                            None if fill_cache => {
                                let fresh = self.decode_shared(cache, g, off, &mut st.0, true)?;
                                self.count_point_read(fresh.raw.len());
                                Some(fresh)
                            }
                            None => None,
                        };
                        if let Some(group) = group {
                            return Ok(Some(f(&st.2, group.value(i, uk, &mut st.3))));
                        }
                    }
                }
                // No cache, or one that does not take this group: decode
                // into this thread's buffer, allocating nothing.
                // In a table with hex runs only this record's are expanded.
                let dctx = dctx_of(&mut st.0, &self.path)?;
                let size = self.decode_group_part(g, Some(i), dctx, &mut st.1)?;
                if !raw {
                    self.count_point_read(size);
                }
                Ok(Some(f(&st.2, st.1.value(i, uk, &mut st.3))))
            })();
            cell.replace(st);
            r
        })
    }

    /// Group `g` from the block cache, or decoded into a new buffer (with
    /// `dctx`, made on first use) and put there when `fill_cache`; true when
    /// it was decoded.
    fn cached_group(
        &self,
        cache: &BlockCache,
        g: u64,
        dctx: &mut Option<DCtx<'static>>,
        fill_cache: bool,
    ) -> Result<(Arc<DecodedGroup>, bool)> {
        let off = self.group_offset(g);
        if let Some(hit) = cache.get_zip_group(self.file_number, off) {
            return Ok((hit, false));
        }
        Ok((self.decode_shared(cache, g, off, dctx, fill_cache)?, true))
    }

    /// Whether group `g` is stored raw (its header's low bit clear): its
    /// decoding is a parse of bytes already in memory. False when the
    /// offsets are damaged (the decode then reports it).
    fn group_is_raw(&self, g: u64) -> bool {
        self.offsets
            .get(g)
            .and_then(|s| usize::try_from(s).ok())
            .and_then(|s| self.data.get(s + GROUP_CRC_LEN))
            .is_some_and(|h| h & 1 == 0)
    }

    /// Group `g` (at `off`) decoded into a new shared buffer, put in
    /// `cache` when `fill_cache`.
    fn decode_shared(
        &self,
        cache: &BlockCache,
        g: u64,
        off: u64,
        dctx: &mut Option<DCtx<'static>>,
        fill_cache: bool,
    ) -> Result<Arc<DecodedGroup>> {
        let mut fresh = DecodedGroup::default();
        self.decode_group(g, dctx_of(dctx, &self.path)?, &mut fresh)?;
        let fresh = Arc::new(fresh);
        if fill_cache {
            cache.insert_zip_group(self.file_number, off, fresh.clone());
        }
        Ok(fresh)
    }

    /// Counts a point read that decoded a group of `size` bytes.
    fn count_point_read(&self, size: usize) {
        self.stats.point_reads.fetch_add(1, Ordering::Relaxed);
        self.stats
            .point_read_bytes
            .fetch_add(size as u64, Ordering::Relaxed);
    }

    /// False only when no key in the table starts with `prefix` (exact: the
    /// key index answers it).
    pub fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        let mut s = self.index.range().ge(prefix).into_stream();
        match s.next() {
            Some((k, _)) => k.starts_with(prefix),
            None => false,
        }
    }

    /// An iterator over the whole table. With a block cache, groups are
    /// read from it, and those decoded are put in it when `fill_cache`.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> ZipTableIter {
        let pooled = ITER_POOL.lock().pop();
        let (dctx, decoded) = pooled.map_or((None, DecodedGroup::default()), |(d, g)| (Some(d), g));
        ZipTableIter {
            table: self.clone(),
            dctx,
            valid: false,
            rec: 0,
            ord: 0,
            key_first: 0,
            key_end: 0,
            key: Vec::new(),
            cursor: FstCursor::default(),
            group: None,
            decoded,
            shared: None,
            value: Vec::new(),
            has_value: false,
            fill_cache,
            status: None,
        }
    }

    /// Decodes every group and checks every record; returns the number of
    /// groups and sections checked (sections were checked at open).
    pub fn verify_checksums(&self) -> Result<u64> {
        let mut dctx = new_dctx(&self.path)?;
        let mut g = DecodedGroup::default();
        for i in 0..self.meta.num_groups {
            self.decode_group(i, &mut dctx, &mut g)?;
        }
        let mut s = self.index.stream();
        let mut n = 0u64;
        let mut last: Vec<u8> = Vec::new();
        while let Some((k, v)) = s.next() {
            if v != n || (n > 0 && k <= last.as_slice()) {
                return Err(self.corrupt(
                    self.meta.sections[sec::INDEX].offset,
                    format!("zip key index: entry {n} out of order"),
                ));
            }
            self.key_records(n)?;
            last.clear();
            last.extend_from_slice(k);
            n += 1;
        }
        Ok(self.meta.num_groups + SECTION_NAMES.len() as u64 + 1)
    }
}

/// The context in `slot`, made there on first use.
fn dctx_of<'s>(slot: &'s mut Option<DCtx<'static>>, path: &Path) -> Result<&'s mut DCtx<'static>> {
    match slot {
        Some(d) => Ok(d),
        slot => Ok(slot.insert(new_dctx(path)?)),
    }
}

fn new_dctx(path: &Path) -> Result<DCtx<'static>> {
    let mut d = DCtx::create();
    d.set_parameter(DParameter::Format(FrameFormat::Magicless))
        .map_err(|c| {
            Error::io(
                "zstd set parameter",
                path,
                std::io::Error::other(zstd::zstd_safe::get_error_name(c)),
            )
        })?;
    Ok(d)
}

/// Checks that `s` lies inside the file before `limit` and that its CRC
/// matches; returns its bytes.
fn section<'a>(
    data: &'a [u8],
    path: &Path,
    limit: u64,
    s: Section,
    name: &str,
) -> Result<&'a [u8]> {
    let end = s.offset.checked_add(s.size);
    match end {
        Some(e) if e <= limit => {}
        _ => {
            return Err(Error::corruption(
                path,
                s.offset,
                format!(
                    "zip {name} section (offset {}, size {}) runs past {limit}",
                    s.offset, s.size
                ),
            ))
        }
    }
    let Some(bytes) = usize::try_from(s.offset)
        .ok()
        .zip(end.and_then(|e| usize::try_from(e).ok()))
        .and_then(|(a, b)| data.get(a..b))
    else {
        return Err(Error::corruption(
            path,
            s.offset,
            format!("zip {name} section runs past the end of the file"),
        ));
    };
    if section_crc(bytes) != s.crc {
        return Err(Error::corruption(
            path,
            s.offset,
            format!("zip {name} section checksum mismatch"),
        ));
    }
    Ok(bytes)
}

/// Iterator over a zip table in internal-key order, both directions.
pub struct ZipTableIter {
    table: Arc<ZipTable>,
    dctx: Option<DCtx<'static>>,
    valid: bool,
    rec: u64,
    ord: u64,
    /// Records of the current user key: `[key_first, key_end)`.
    key_first: u64,
    key_end: u64,
    /// Current internal key.
    key: Vec<u8>,
    /// The current user key's place in the key index (`ord` when valid).
    cursor: FstCursor,
    /// Group held in `shared` (when set) or `decoded`.
    group: Option<u64>,
    decoded: DecodedGroup,
    /// The group as the block cache holds it, when the table has one.
    shared: Option<Arc<DecodedGroup>>,
    /// The current value with its user key put back, when `has_value`
    /// (its record's key was cut out of it); else the value is the
    /// group's stored bytes.
    value: Vec<u8>,
    has_value: bool,
    fill_cache: bool,
    status: Option<Error>,
}

impl ZipTableIter {
    /// File offset of the group the iterator is positioned in.
    pub fn data_block_offset(&self) -> Option<u64> {
        self.valid.then(|| {
            self.table
                .group_offset(self.rec / self.table.meta.group_size as u64)
        })
    }

    fn fail(&mut self, e: Error) {
        if self.status.is_none() {
            self.status = Some(e);
        }
        self.valid = false;
    }

    /// Positions on record `rec` of key `ord`, taking the key from the
    /// cursor (already moved to `ord`) when `new_key`, and loading the group
    /// when it changes.
    fn position(&mut self, rec: u64, ord: u64, new_key: bool) {
        if let Err(e) = self.try_position(rec, ord, new_key) {
            self.fail(e);
        }
    }

    fn try_position(&mut self, rec: u64, ord: u64, new_key: bool) -> Result<()> {
        // Borrowed, not cloned: a clone per record is an atomic add on a
        // count every reader of the table shares.
        let t: &ZipTable = &self.table;
        if new_key || !self.valid {
            let (a, b) = t.key_records(ord)?;
            self.key_first = a;
            self.key_end = b;
            if !self.cursor.valid() || self.cursor.ord() != ord {
                return Err(t.corrupt(
                    t.meta.sections[sec::INDEX].offset,
                    format!("zip key index: no key with ordinal {ord}"),
                ));
            }
            self.key.clear();
            self.key.extend_from_slice(self.cursor.key());
        } else {
            let n = self.key.len() - TRAILER_LEN;
            self.key.truncate(n);
        }
        self.key.extend_from_slice(&t.trailer(rec)?.to_le_bytes());
        let g = rec / t.meta.group_size as u64;
        if self.group != Some(g) {
            self.group = None;
            self.shared = None;
            // A raw group (small, or values that did not compress, as a
            // secondary index's empty values) is parsed in place: cheaper
            // than a cache lookup, and it takes no cache room. It is not
            // counted as decompressed.
            let raw = t.group_is_raw(g);
            let decoded = match &t.cache {
                Some(c) if !raw => {
                    let (group, decoded) = t.cached_group(c, g, &mut self.dctx, self.fill_cache)?;
                    self.shared = Some(group);
                    decoded
                }
                _ => {
                    let dctx = dctx_of(&mut self.dctx, &t.path)?;
                    t.decode_group(g, dctx, &mut self.decoded)?;
                    !raw
                }
            };
            if decoded {
                t.stats.iter_groups.fetch_add(1, Ordering::Relaxed);
            }
            self.group = Some(g);
        }
        let i = (rec % t.meta.group_size as u64) as usize;
        let group = match &self.shared {
            Some(g) => g,
            None => &self.decoded,
        };
        self.has_value = group.key_pos(i).is_some();
        if self.has_value {
            let uk = self
                .key
                .get(..self.key.len().saturating_sub(TRAILER_LEN))
                .unwrap_or_default();
            group.value(i, uk, &mut self.value);
        }
        self.rec = rec;
        self.ord = ord;
        self.valid = true;
        Ok(())
    }

    /// Positions on the first record of the cursor's key.
    fn first_record_of_cursor(&mut self) {
        let ord = self.cursor.ord();
        match self.table.key_records(ord) {
            Ok((a, _)) => self.position(a, ord, true),
            Err(e) => self.fail(e),
        }
    }

    /// Fails the iterator: the key index ended before the records did.
    fn index_ended(&mut self) {
        self.fail(self.table.corrupt(
            self.table.meta.sections[sec::INDEX].offset,
            "zip key index: fewer keys than the record arrays say",
        ));
    }
}

impl Drop for ZipTableIter {
    /// Hands the decompression context and group buffer to the pool
    /// (dropped instead when it is full).
    fn drop(&mut self) {
        if let Some(d) = self.dctx.take() {
            let mut g = std::mem::take(&mut self.decoded);
            if g.raw.capacity() > POOLED_GROUP_MAX {
                // A group of huge values is not kept for later.
                g = DecodedGroup::default();
            }
            let mut p = ITER_POOL.lock();
            if p.len() < ITER_POOL_MAX {
                p.push((d, g));
                return;
            }
            drop(p);
            // Full: `d` and `g` are freed here, outside the lock.
        }
    }
}

impl InternalIterator for ZipTableIter {
    fn valid(&self) -> bool {
        self.valid && self.status.is_none()
    }

    fn seek_to_first(&mut self) {
        self.valid = false;
        if self.status.is_none() && self.table.meta.num_records > 0 {
            if self.cursor.first(self.table.index.as_fst()) {
                self.first_record_of_cursor();
            } else {
                self.index_ended();
            }
        }
    }

    fn seek_to_last(&mut self) {
        self.valid = false;
        let m = &self.table.meta;
        if self.status.is_none() && m.num_records > 0 {
            let (rec, ord) = (m.num_records - 1, m.num_keys - 1);
            if self.cursor.last(self.table.index.as_fst()) {
                self.position(rec, ord, true);
            } else {
                self.index_ended();
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.valid = false;
        if self.status.is_some() || target.len() < TRAILER_LEN {
            return;
        }
        let uk = key::user_key(target);
        let tt = key::trailer(target);
        if !self.cursor.seek(self.table.index.as_fst(), uk) {
            return;
        }
        if self.cursor.key() != uk {
            self.first_record_of_cursor();
            return;
        }
        let ord = self.cursor.ord();
        match self.table.find_version(ord, tt) {
            Ok(Some((rec, _))) => self.position(rec, ord, true),
            Ok(None) => {
                if self.cursor.next(self.table.index.as_fst()) {
                    self.first_record_of_cursor();
                }
            }
            Err(e) => self.fail(e),
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        let rec = self.rec + 1;
        if rec >= self.table.meta.num_records {
            self.valid = false;
            return;
        }
        if rec < self.key_end {
            self.position(rec, self.ord, false);
        } else if self.cursor.next(self.table.index.as_fst()) {
            self.position(rec, self.ord + 1, true);
        } else {
            self.index_ended();
        }
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if self.rec == 0 {
            self.valid = false;
            return;
        }
        let rec = self.rec - 1;
        if rec >= self.key_first {
            self.position(rec, self.ord, false);
        } else if self.ord == 0 {
            self.fail(self.table.corrupt(
                self.table.meta.sections[sec::KEY_STARTS].offset,
                "zip key-start array: records before the first key",
            ));
        } else if self.cursor.prev(self.table.index.as_fst()) {
            self.position(rec, self.ord - 1, true);
        } else {
            self.index_ended();
        }
    }

    fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        if self.has_value {
            return &self.value;
        }
        let i = (self.rec % self.table.meta.group_size as u64) as usize;
        match &self.shared {
            Some(g) => g.stored(i),
            None => self.decoded.stored(i),
        }
    }

    fn status(&self) -> Result<()> {
        match &self.status {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
