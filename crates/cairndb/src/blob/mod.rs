//! Blob files: values separated from the tree (`docs/format/blob.md`).
//!
//! [`BlobFileBuilder`] writes one blob file front to back (flushes and
//! garbage-collecting compactions); [`BlobIndex`] is the reference a table
//! stores in place of the value; [`BlobReader`] reads one value with one
//! positioned read and checks it against the reference's crc;
//! [`BlobCache`] is the read side of the database: it keeps blob files
//! open, like the table cache, and, with a blob cache configured
//! (`Options::blob_cache`), keeps hot values in a value cache (its own,
//! or the block cache) keyed by (blob file number, value offset).
//!
//! Invariants: a blob file is immutable once finished, and is listed in a
//! version only after its builder synced it; so a cached reader never goes
//! stale (the collector evicts it when it deletes the file). A value enters
//! the value cache only after its crc was checked, or from the flush that
//! wrote it; a blob file number is never given to a second file while the
//! database is open (garbage collection writes relocated values under new
//! numbers), so a cached value never stands for another one, and the
//! values of a deleted file are simply never looked up again. Locking:
//! both caches are sharded `quick_cache` caches, leaves; readers are shared
//! read-only without locks; counters are relaxed atomics; no lock is held
//! across a file read. Nothing here panics on file bytes: bad bytes are a
//! `Corruption` naming the file and offset.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;

use crate::cache::BlockCache;
use crate::env::{Fs, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};
use crate::filename::blob_file_name;
use crate::options::CompressionType;
use crate::sst::format::{compress_block, decompress_block, COMPRESSION_NONE, COMPRESSION_ZSTD};
use crate::util::coding::{put_fixed32, put_fixed64, put_varint64, Reader};
use crate::util::crc;
use crate::version::BlobFileMeta;

/// File magic, in the header and the footer (`docs/format/blob.md`, "Header").
pub const BLOB_MAGIC: u64 = 0x4352_4e42_4c4f_4231;
/// The blob file format this build writes and reads (`docs/format/blob.md`).
pub const BLOB_FORMAT_VERSION: u32 = 1;
/// Bytes of the file header (`docs/format/blob.md`, "Header").
pub const BLOB_HEADER_LEN: usize = 20;
/// Bytes of a record header (`docs/format/blob.md`, "Record").
pub const BLOB_RECORD_HEADER_LEN: usize = 12;
/// Bytes of the footer (`docs/format/blob.md`, "Footer").
pub const BLOB_FOOTER_LEN: usize = 32;
/// The kind byte of a blob reference (`docs/format/blob.md`, "Blob reference").
pub const BLOB_INDEX_KIND: u8 = 1;

/// The size of a record holding a key of `key_len` bytes and a stored value
/// of `value_len` bytes: the unit of the byte counts in the footer and the
/// MANIFEST (`docs/format/blob.md`, "Record").
pub fn record_size(key_len: usize, value_len: u64) -> u64 {
    BLOB_RECORD_HEADER_LEN as u64 + key_len as u64 + value_len
}

/// A reference to one value in a blob file: the value a table stores for
/// an entry of type `ValueType::BlobIndex`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobIndex {
    /// The blob file's number.
    pub file_number: u64,
    /// File offset of the stored value.
    pub offset: u64,
    /// Stored (possibly compressed) value length.
    pub size: u64,
    /// Compression type byte of the stored value.
    pub compression: u8,
    /// Masked crc32c of the stored value bytes.
    pub crc: u32,
}

impl BlobIndex {
    /// Appends the encoded reference to `dst`.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        dst.push(BLOB_INDEX_KIND);
        put_varint64(dst, self.file_number);
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
        dst.push(self.compression);
        put_fixed32(dst, self.crc);
    }

    /// Decodes a reference; the error says what is wrong with it.
    pub fn decode(src: &[u8]) -> std::result::Result<BlobIndex, String> {
        let mut r = Reader::new(src);
        let kind = r.u8().ok_or("empty blob reference")?;
        if kind != BLOB_INDEX_KIND {
            return Err(format!("blob reference of unknown kind {kind}"));
        }
        let trunc = |what: &str| format!("blob reference truncated in its {what}");
        let file_number = r.varint64().ok_or_else(|| trunc("file number"))?;
        let offset = r.varint64().ok_or_else(|| trunc("offset"))?;
        let size = r.varint64().ok_or_else(|| trunc("size"))?;
        let compression = r.u8().ok_or_else(|| trunc("compression"))?;
        if compression > COMPRESSION_ZSTD {
            return Err(format!(
                "blob reference with unknown compression {compression}"
            ));
        }
        let crc = r.fixed32().ok_or_else(|| trunc("crc"))?;
        if !r.is_empty() {
            return Err(format!(
                "blob reference has {} bytes after its crc",
                src.len().saturating_sub(r.pos())
            ));
        }
        Ok(BlobIndex {
            file_number,
            offset,
            size,
            compression,
            crc,
        })
    }

    /// Decodes the reference a table holds for `user_key`; errors are
    /// `Corruption` naming the key (the table is not known here).
    pub fn decode_value(user_key: &[u8], src: &[u8]) -> Result<BlobIndex> {
        BlobIndex::decode(src).map_err(|what| {
            Error::corruption(
                "<blob reference in a table>",
                0,
                format!(
                    "entry of key {:?}: {what}",
                    String::from_utf8_lossy(user_key)
                ),
            )
        })
    }
}

fn header(compression: u8) -> Vec<u8> {
    let mut h = Vec::with_capacity(BLOB_HEADER_LEN);
    put_fixed64(&mut h, BLOB_MAGIC);
    put_fixed32(&mut h, BLOB_FORMAT_VERSION);
    h.extend_from_slice(&[compression, 0, 0, 0]);
    let c = crc::mask(crc::crc32c(&h));
    put_fixed32(&mut h, c);
    h
}

fn footer(count: u64, bytes: u64) -> Vec<u8> {
    let mut f = Vec::with_capacity(BLOB_FOOTER_LEN);
    put_fixed64(&mut f, BLOB_MAGIC);
    put_fixed64(&mut f, count);
    put_fixed64(&mut f, bytes);
    put_fixed32(&mut f, 0);
    let c = crc::mask(crc::crc32c(&f));
    put_fixed32(&mut f, c);
    f
}

/// Checks a header; returns its compression byte.
fn check_header(path: &Path, h: &[u8]) -> Result<u8> {
    let bad = |what: String| Error::corruption(path, 0, format!("blob file header: {what}"));
    let mut r = Reader::new(h);
    let magic = r.fixed64().ok_or_else(|| bad("truncated".into()))?;
    if magic != BLOB_MAGIC {
        return Err(bad(format!("bad magic {magic:#018x}")));
    }
    let version = r.fixed32().ok_or_else(|| bad("truncated".into()))?;
    let compression = r.u8().ok_or_else(|| bad("truncated".into()))?;
    r.bytes(3).ok_or_else(|| bad("truncated".into()))?;
    let stored = r.fixed32().ok_or_else(|| bad("truncated".into()))?;
    let body = h.get(..16).ok_or_else(|| bad("truncated".into()))?;
    if crc::mask(crc::crc32c(body)) != stored {
        return Err(bad("checksum mismatch".into()));
    }
    if version != BLOB_FORMAT_VERSION {
        return Err(bad(format!(
            "format version {version} is not supported (this build reads {BLOB_FORMAT_VERSION})"
        )));
    }
    if compression > COMPRESSION_ZSTD {
        return Err(bad(format!("unknown compression {compression}")));
    }
    Ok(compression)
}

/// Checks a footer; returns (record count, record bytes).
fn check_footer(path: &Path, offset: u64, f: &[u8]) -> Result<(u64, u64)> {
    let bad = |what: &str| Error::corruption(path, offset, format!("blob file footer: {what}"));
    let mut r = Reader::new(f);
    let magic = r.fixed64().ok_or_else(|| bad("truncated"))?;
    let count = r.fixed64().ok_or_else(|| bad("truncated"))?;
    let bytes = r.fixed64().ok_or_else(|| bad("truncated"))?;
    r.fixed32().ok_or_else(|| bad("truncated"))?;
    let stored = r.fixed32().ok_or_else(|| bad("truncated"))?;
    let body = f.get(..28).ok_or_else(|| bad("truncated"))?;
    if magic != BLOB_MAGIC {
        return Err(bad("bad magic"));
    }
    if crc::mask(crc::crc32c(body)) != stored {
        return Err(bad("checksum mismatch"));
    }
    Ok((count, bytes))
}

/// Writes one blob file. The caller reserved `number` (a pending output).
pub struct BlobFileBuilder {
    file: Box<dyn WritableFile>,
    number: u64,
    compression: CompressionType,
    count: u64,
    bytes: u64,
    /// crc32c (unmasked) of every byte written so far.
    file_crc: u32,
    scratch: Vec<u8>,
    offset: u64,
}

impl BlobFileBuilder {
    /// Creates blob file `number` in `dir` and writes its header.
    pub fn create(
        fs: &dyn Fs,
        dir: &Path,
        number: u64,
        compression: CompressionType,
    ) -> Result<BlobFileBuilder> {
        let file = fs.create(&blob_file_name(dir, number))?;
        let mut b = BlobFileBuilder {
            file,
            number,
            compression,
            count: 0,
            bytes: 0,
            file_crc: 0,
            scratch: Vec::new(),
            offset: 0,
        };
        let h = header(crate::sst::format::compression_byte(compression));
        b.append(&h)?;
        Ok(b)
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file.append(data)?;
        self.file_crc = crc::extend(self.file_crc, data);
        self.offset += data.len() as u64;
        Ok(())
    }

    /// The file's number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far.
    pub fn file_size(&self) -> u64 {
        self.offset
    }

    /// Records written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Appends the value of `user_key`; returns the reference to store.
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobIndex> {
        let path = self.file.path().to_path_buf();
        let mut compressed = std::mem::take(&mut self.scratch);
        let t = compress_block(self.compression, value, &mut compressed);
        let stored: &[u8] = if t == COMPRESSION_NONE {
            value
        } else {
            &compressed
        };
        let too_long = |what: &str| {
            Error::io(
                "append",
                &path,
                std::io::Error::other(format!("blob record {what} longer than 4 GiB")),
            )
        };
        let key_len = u32::try_from(user_key.len()).map_err(|_| too_long("key"))?;
        let value_len = u32::try_from(stored.len()).map_err(|_| too_long("value"))?;
        let value_crc = crc::crc32c(stored);
        let record_crc = crc::mask(crc::extend(crc::crc32c(user_key), stored));
        let mut h = Vec::with_capacity(BLOB_RECORD_HEADER_LEN);
        put_fixed32(&mut h, key_len);
        put_fixed32(&mut h, value_len);
        put_fixed32(&mut h, record_crc);
        let r = (|| {
            self.append(&h)?;
            self.append(user_key)?;
            let offset = self.offset;
            self.append(stored)?;
            Ok(offset)
        })();
        let idx = r.map(|offset| BlobIndex {
            file_number: self.number,
            offset,
            size: stored.len() as u64,
            compression: t,
            crc: crc::mask(value_crc),
        });
        self.scratch = compressed;
        let idx = idx?;
        self.count += 1;
        self.bytes += record_size(user_key.len(), idx.size);
        Ok(idx)
    }

    /// Writes the footer and fdatasyncs the file. The caller syncs the directory.
    pub fn finish(mut self) -> Result<BlobFileMeta> {
        let f = footer(self.count, self.bytes);
        self.append(&f)?;
        self.file.sync()?;
        Ok(BlobFileMeta {
            number: self.number,
            count: self.count,
            bytes: self.bytes,
            checksum: crc::mask(self.file_crc),
        })
    }
}

/// The blob files one flush or compaction writes: values go to the current
/// file, and a new one is started once it reaches `blob_file_size`.
/// `alloc` reserves each file's number (a pending output) before the file
/// is created; `numbers` lists every file created, for clean-up on failure.
pub struct BlobFileSet<'a> {
    fs: &'a dyn Fs,
    dir: &'a Path,
    compression: CompressionType,
    file_size: u64,
    /// `Options::bytes_per_sync`, given to each file as its write-behind.
    bytes_per_sync: u64,
    alloc: Box<dyn FnMut() -> u64 + 'a>,
    current: Option<BlobFileBuilder>,
    finished: Vec<BlobFileMeta>,
    numbers: Vec<u64>,
    prepopulate: Option<&'a BlockCache>,
}

impl<'a> BlobFileSet<'a> {
    /// Nothing is created until the first value.
    pub fn new(
        fs: &'a dyn Fs,
        dir: &'a Path,
        opts: &crate::options::Options,
        alloc: Box<dyn FnMut() -> u64 + 'a>,
    ) -> BlobFileSet<'a> {
        BlobFileSet {
            fs,
            dir,
            compression: opts.blob_compression_type,
            file_size: opts.blob_file_size,
            bytes_per_sync: opts.bytes_per_sync,
            alloc,
            current: None,
            finished: Vec::new(),
            numbers: Vec::new(),
            prepopulate: None,
        }
    }

    /// Puts each value written into `cache` too
    /// (`PrepopulateBlobCache::FlushOnly`). A value of a file that is
    /// never installed stays there unused: its number is not reused.
    pub fn prepopulate(mut self, cache: Option<&'a BlockCache>) -> BlobFileSet<'a> {
        self.prepopulate = cache;
        self
    }

    /// Writes the value of `user_key`; returns the reference to store.
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobIndex> {
        if self
            .current
            .as_ref()
            .is_some_and(|b| b.file_size() >= self.file_size)
        {
            if let Some(b) = self.current.take() {
                self.finished.push(b.finish()?);
            }
        }
        let b = match &mut self.current {
            Some(b) => b,
            None => {
                let n = (self.alloc)();
                self.numbers.push(n);
                let mut b = BlobFileBuilder::create(self.fs, self.dir, n, self.compression)?;
                b.file.write_behind(self.bytes_per_sync);
                self.current.insert(b)
            }
        };
        let idx = b.add(user_key, value)?;
        if let Some(c) = self.prepopulate {
            c.insert_blob(idx.file_number, idx.offset, Arc::new(value.to_vec()));
        }
        Ok(idx)
    }

    /// Every blob file number created (finished or not).
    pub fn numbers(&self) -> &[u64] {
        &self.numbers
    }

    /// Finishes (and syncs) the current file; returns every file written.
    /// The caller syncs the directory.
    pub fn finish(&mut self) -> Result<Vec<BlobFileMeta>> {
        if let Some(b) = self.current.take() {
            self.finished.push(b.finish()?);
        }
        Ok(std::mem::take(&mut self.finished))
    }
}

/// Counters of blob reads, behind `DbStats`.
#[derive(Debug, Default)]
pub struct BlobReadStats {
    /// Value lookups the blob cache answered.
    pub cache_hits: AtomicU64,
    /// Value lookups it did not (each one a read of the blob file).
    pub cache_misses: AtomicU64,
    /// Bytes read from blob files (values and readahead; not headers).
    pub bytes_read: AtomicU64,
}

/// An open blob file.
pub struct BlobReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    stats: Arc<BlobReadStats>,
}

impl BlobReader {
    /// Opens `path` and checks its header.
    pub fn open(fs: &dyn Fs, path: &Path) -> Result<BlobReader> {
        BlobReader::open_counted(fs, path, Arc::default())
    }

    /// [`BlobReader::open`], adding the bytes it reads to `stats`.
    pub fn open_counted(fs: &dyn Fs, path: &Path, stats: Arc<BlobReadStats>) -> Result<BlobReader> {
        let file = fs.open_random(path)?;
        if file.size() < (BLOB_HEADER_LEN + BLOB_FOOTER_LEN) as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!(
                    "blob file of {} bytes is shorter than its header and footer",
                    file.size()
                ),
            ));
        }
        let h = file.read_vec_at(0, BLOB_HEADER_LEN)?;
        check_header(path, &h)?;
        Ok(BlobReader {
            file,
            path: path.to_path_buf(),
            stats,
        })
    }

    fn read_vec_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let v = self.file.read_vec_at(offset, len)?;
        self.stats
            .bytes_read
            .fetch_add(v.len() as u64, Ordering::Relaxed);
        Ok(v)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// [`BlobReader::read`] through a readahead buffer: a value inside the
    /// buffer is taken from it; otherwise one read fills the buffer from the
    /// value's offset (at least the value, at most to the footer).
    pub fn read_ahead(&self, idx: &BlobIndex, ra: &mut Readahead) -> Result<Vec<u8>> {
        if ra.size <= idx.size {
            return self.read(idx);
        }
        self.check_bounds(idx)?;
        let inside = |ra: &Readahead| {
            ra.file == idx.file_number
                && idx.offset >= ra.start
                && idx.offset + idx.size <= ra.start + ra.buf.len() as u64
        };
        if !inside(ra) {
            let limit = self.file.size().saturating_sub(BLOB_FOOTER_LEN as u64);
            let len = ra.size.min(limit - idx.offset);
            let len = usize::try_from(len).map_err(|_| {
                Error::corruption(&self.path, idx.offset, "blob readahead too large")
            })?;
            ra.buf = self.read_vec_at(idx.offset, len)?;
            ra.file = idx.file_number;
            ra.start = idx.offset;
        }
        let from = usize::try_from(idx.offset - ra.start).unwrap_or(usize::MAX);
        let to = from.saturating_add(usize::try_from(idx.size).unwrap_or(usize::MAX));
        let stored = ra.buf.get(from..to).ok_or_else(|| {
            Error::corruption(&self.path, idx.offset, "blob value outside the readahead")
        })?;
        self.check_and_decompress(idx, stored.to_vec())
    }

    fn check_bounds(&self, idx: &BlobIndex) -> Result<()> {
        let end = idx.offset.checked_add(idx.size);
        let limit = self.file.size().saturating_sub(BLOB_FOOTER_LEN as u64);
        if idx.offset < (BLOB_HEADER_LEN + BLOB_RECORD_HEADER_LEN) as u64
            || end.is_none_or(|e| e > limit)
        {
            return Err(Error::corruption(
                &self.path,
                idx.offset,
                format!(
                    "blob reference of {} bytes at offset {} is outside the records of a {}-byte blob file",
                    idx.size,
                    idx.offset,
                    self.file.size()
                ),
            ));
        }
        Ok(())
    }

    /// Reads the value `idx` refers to: one read of exactly the stored
    /// bytes, checked against the reference's crc, then decompressed.
    pub fn read(&self, idx: &BlobIndex) -> Result<Vec<u8>> {
        self.check_bounds(idx)?;
        let len = usize::try_from(idx.size).map_err(|_| {
            Error::corruption(&self.path, idx.offset, "blob value too large to read")
        })?;
        let stored = self.read_vec_at(idx.offset, len)?;
        self.check_and_decompress(idx, stored)
    }

    fn check_and_decompress(&self, idx: &BlobIndex, stored: Vec<u8>) -> Result<Vec<u8>> {
        let actual = crc::mask(crc::crc32c(&stored));
        if actual != idx.crc {
            return Err(Error::corruption(
                &self.path,
                idx.offset,
                format!(
                    "blob value checksum mismatch ({} bytes: expected {:#010x}, found {:#010x})",
                    idx.size, idx.crc, actual
                ),
            ));
        }
        if idx.compression == COMPRESSION_NONE {
            return Ok(stored);
        }
        decompress_block(&self.path, idx.offset, idx.compression, &stored)
    }
}

/// Bytes read ahead of a compaction's blob reads
/// (`blob_compaction_readahead_size`): a compaction meets references in key
/// order, which is the order a flush wrote them, so the next value is
/// usually just after the last one.
pub struct Readahead {
    size: u64,
    file: u64,
    start: u64,
    buf: Vec<u8>,
}

impl Readahead {
    /// A buffer of `size` bytes (0: no readahead).
    pub fn new(size: u64) -> Readahead {
        Readahead {
            size,
            file: 0,
            start: 0,
            buf: Vec::new(),
        }
    }
}

/// What a scan of a whole blob file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFileSummary {
    /// Records.
    pub count: u64,
    /// Sum of record sizes.
    pub bytes: u64,
    /// The header's compression byte.
    pub compression: u8,
    /// Masked crc32c of the whole file (the MANIFEST's checksum).
    pub checksum: u32,
}

/// Reads a whole blob file, checking the header, every record's crc, and
/// the footer's counts; hands each record (value offset, key, stored value,
/// the reference to it) to `f`.
pub fn scan_file(
    fs: &dyn Fs,
    path: &Path,
    mut f: impl FnMut(&[u8], &[u8], &BlobIndex),
) -> Result<BlobFileSummary> {
    let data = fs.read_all(path)?;
    if data.len() < BLOB_HEADER_LEN + BLOB_FOOTER_LEN {
        return Err(Error::corruption(
            path,
            0,
            format!(
                "blob file of {} bytes is shorter than its header and footer",
                data.len()
            ),
        ));
    }
    let compression = check_header(path, data.get(..BLOB_HEADER_LEN).unwrap_or_default())?;
    let footer_at = data.len() - BLOB_FOOTER_LEN;
    let (count, bytes) = check_footer(
        path,
        footer_at as u64,
        data.get(footer_at..).unwrap_or_default(),
    )?;
    let body = data.get(..footer_at).unwrap_or_default();
    let mut r = Reader::new(body);
    r.bytes(BLOB_HEADER_LEN);
    let (mut n, mut total) = (0u64, 0u64);
    while !r.is_empty() {
        let at = r.pos() as u64;
        let bad = |what: &str| Error::corruption(path, at, format!("blob record: {what}"));
        let key_len = r.fixed32().ok_or_else(|| bad("truncated header"))? as usize;
        let value_len = r.fixed32().ok_or_else(|| bad("truncated header"))? as usize;
        let stored_crc = r.fixed32().ok_or_else(|| bad("truncated header"))?;
        let key = r.bytes(key_len).ok_or_else(|| bad("truncated key"))?;
        let value_at = r.pos() as u64;
        let value = r.bytes(value_len).ok_or_else(|| bad("truncated value"))?;
        if crc::mask(crc::extend(crc::crc32c(key), value)) != stored_crc {
            return Err(bad("checksum mismatch"));
        }
        let value_crc = crc::mask(crc::crc32c(value));
        // The header names the configured codec; a value that did not
        // compress is stored raw. Decompressing tells which.
        let t = if compression != COMPRESSION_NONE
            && decompress_block(path, value_at, compression, value).is_ok()
        {
            compression
        } else {
            COMPRESSION_NONE
        };
        f(
            key,
            value,
            &BlobIndex {
                file_number: 0,
                offset: value_at,
                size: value_len as u64,
                compression: t,
                crc: value_crc,
            },
        );
        n += 1;
        total += record_size(key_len, value_len as u64);
    }
    if (n, total) != (count, bytes) {
        return Err(Error::corruption(
            path,
            footer_at as u64,
            format!(
                "blob file footer says {count} records of {bytes} bytes; the file holds {n} of {total}"
            ),
        ));
    }
    Ok(BlobFileSummary {
        count,
        bytes,
        compression,
        checksum: crc::mask(crc::crc32c(&data)),
    })
}

/// The read side of blob files: open readers, bounded by a count of files,
/// and the blob value cache when one is configured. Cheap to clone with
/// another fill policy ([`BlobCache::without_fill`]): the clones share
/// the readers, the values and the counters.
pub struct BlobCache {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    files: Arc<Cache<u64, Arc<BlobReader>>>,
    values: Option<Arc<BlockCache>>,
    stats: Arc<BlobReadStats>,
    fill: bool,
}

impl BlobCache {
    /// A cache of up to `capacity` open blob files in `dir`, caching
    /// values in `values` when given.
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        capacity: usize,
        values: Option<Arc<BlockCache>>,
    ) -> BlobCache {
        BlobCache {
            fs,
            dir,
            files: Arc::new(Cache::new(capacity.max(1))),
            values,
            stats: Arc::default(),
            fill: true,
        }
    }

    /// The same caches, but [`BlobCache::resolve`] does not insert the
    /// values it reads (`ReadOptions::fill_cache_off`).
    pub fn without_fill(&self) -> BlobCache {
        BlobCache {
            fs: self.fs.clone(),
            dir: self.dir.clone(),
            files: self.files.clone(),
            values: self.values.clone(),
            stats: self.stats.clone(),
            fill: false,
        }
    }

    /// The open reader of blob file `number`, opening it on a miss.
    pub fn get(&self, number: u64) -> Result<Arc<BlobReader>> {
        if let Some(r) = self.files.get(&number) {
            return Ok(r);
        }
        let r = Arc::new(BlobReader::open_counted(
            self.fs.as_ref(),
            &blob_file_name(&self.dir, number),
            self.stats.clone(),
        )?);
        self.files.insert(number, r.clone());
        Ok(r)
    }

    /// Hands the value `idx` refers to to `f`: from the value cache, or
    /// read from its blob file (and then cached, with `fill`). A hit
    /// borrows the cached value: no allocation, no copy.
    pub fn with_value<R>(
        &self,
        idx: &BlobIndex,
        fill: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let Some(values) = &self.values else {
            return Ok(f(&self.get(idx.file_number)?.read(idx)?));
        };
        if let Some(v) = values.get_blob(idx.file_number, idx.offset) {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(f(&v));
        }
        self.stats.cache_misses.fetch_add(1, Ordering::Relaxed);
        let v = self.get(idx.file_number)?.read(idx)?;
        if !fill {
            return Ok(f(&v));
        }
        let v = Arc::new(v);
        values.insert_blob(idx.file_number, idx.offset, v.clone());
        Ok(f(&v))
    }

    /// The value a blob reference (the bytes a table holds for `user_key`)
    /// refers to, through the value cache.
    pub fn resolve(&self, user_key: &[u8], reference: &[u8]) -> Result<Vec<u8>> {
        let idx = BlobIndex::decode_value(user_key, reference)?;
        if self.values.is_none() {
            // The read's own buffer, not a copy of it.
            return self.get(idx.file_number)?.read(&idx);
        }
        self.with_value(&idx, self.fill, <[u8]>::to_vec)
    }

    /// The value cache, when there is one.
    pub fn value_cache(&self) -> Option<&Arc<BlockCache>> {
        self.values.as_ref()
    }

    /// The read counters.
    pub fn stats(&self) -> &BlobReadStats {
        &self.stats
    }

    /// Forgets the reader of `number` (its file is being deleted). Its
    /// cached values stay until evicted: nothing refers to them.
    pub fn evict(&self, number: u64) {
        self.files.remove(&number);
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;
    use crate::env::mem::MemFs;

    fn build(
        fs: &MemFs,
        c: CompressionType,
        n: usize,
    ) -> (BlobFileMeta, Vec<(Vec<u8>, BlobIndex)>) {
        let mut b = BlobFileBuilder::create(fs, Path::new("/db"), 7, c).unwrap();
        let mut refs = Vec::new();
        for i in 0..n {
            let v: Vec<u8> = (0..1000 + i).map(|j| (j % 13) as u8).collect();
            refs.push((v.clone(), b.add(format!("key{i}").as_bytes(), &v).unwrap()));
        }
        (b.finish().unwrap(), refs)
    }

    #[test]
    fn write_read_scan_round_trip() {
        for c in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd(3),
        ] {
            let fs = MemFs::new();
            fs.create_dir_all(Path::new("/db")).unwrap();
            let (meta, refs) = build(&fs, c, 20);
            assert_eq!(meta.count, 20);
            let p = blob_file_name(Path::new("/db"), 7);
            let r = BlobReader::open(&fs, &p).unwrap();
            for (v, idx) in &refs {
                let mut enc = Vec::new();
                idx.encode(&mut enc);
                assert_eq!(BlobIndex::decode(&enc).unwrap(), *idx);
                assert_eq!(&r.read(idx).unwrap(), v);
            }
            let mut seen = 0;
            let s = scan_file(&fs, &p, |_, _, idx| {
                assert_eq!(idx.offset, refs[seen].1.offset);
                seen += 1;
            })
            .unwrap();
            assert_eq!(
                (s.count, s.bytes, s.checksum),
                (20, meta.bytes, meta.checksum)
            );
        }
    }

    #[test]
    fn damage_is_corruption_naming_file_and_offset() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let (_, refs) = build(&fs, CompressionType::None, 3);
        let p = blob_file_name(Path::new("/db"), 7);
        let mut data = fs.read_all(&p).unwrap();
        let at = refs[1].1.offset as usize + 10;
        data[at] ^= 0x40;
        fs.write_atomic(&p, &data).unwrap();
        let r = BlobReader::open(&fs, &p).unwrap();
        let e = r.read(&refs[1].1).unwrap_err().to_string();
        assert!(
            e.contains("000007.blob") && e.contains(&refs[1].1.offset.to_string()),
            "{e}"
        );
        assert!(r.read(&refs[0].1).is_ok());
        assert!(scan_file(&fs, &p, |_, _, _| {}).is_err());
        // A reference past the end is refused, not read.
        let far = BlobIndex {
            offset: 1 << 40,
            ..refs[0].1
        };
        assert!(r.read(&far).unwrap_err().is_corruption());
    }

    #[test]
    fn every_truncated_reference_is_an_error() {
        let idx = BlobIndex {
            file_number: 300,
            offset: 1 << 33,
            size: 70000,
            compression: 2,
            crc: 0xdead_beef,
        };
        let mut enc = Vec::new();
        idx.encode(&mut enc);
        for cut in 0..enc.len() {
            assert!(BlobIndex::decode(&enc[..cut]).is_err());
        }
        enc.push(0);
        assert!(BlobIndex::decode(&enc).is_err());
    }
}
