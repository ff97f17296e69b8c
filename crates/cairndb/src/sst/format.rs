//! On-disk constants of an SST file, the block handle, the block trailer and
//! the fixed 64-byte footer (`docs/format/sstable.md`).
//!
//! Owns: encoding and decoding of these small fixed structures, plus block
//! compression and decompression. Invariants: every decoder is total (it
//! returns an error or `None` on any input, never panics); every error names
//! the file and the offset of the bad bytes. No state, no locks.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::Path;

use crate::error::{Error, Result};
use crate::options::CompressionType;
use crate::util::coding::{fixed32_at, fixed64_at, get_varint64, put_varint64};
use crate::util::crc;

/// Bytes of the footer at the end of every table (sstable.md, "Footer").
pub const FOOTER_LEN: usize = 64;

/// Bytes of the trailer after every block: compression type + masked crc32c
/// (sstable.md, "Block trailer").
pub const BLOCK_TRAILER_LEN: usize = 5;

/// Magic number in the last 8 bytes of the footer: "CAIRNSST" read as a
/// big-endian u64, stored little-endian (sstable.md, "Footer").
pub const TABLE_MAGIC: u64 = 0x4341_4952_4e53_5354;

/// The format version this build writes and the newest it reads
/// (sstable.md, "Format version policy").
pub const FORMAT_VERSION: u32 = 1;

/// Compression type byte: block stored as is (sstable.md, "Compression").
pub const COMPRESSION_NONE: u8 = 0;
/// Compression type byte: LZ4 block format with a 4-byte LE size prefix
/// (sstable.md, "Compression").
pub const COMPRESSION_LZ4: u8 = 1;
/// Compression type byte: varint uncompressed length then one zstd frame
/// (sstable.md, "Compression").
pub const COMPRESSION_ZSTD: u8 = 2;

/// Largest uncompressed block a reader accepts; guards against
/// decompression bombs (sstable.md, "Compression").
pub const MAX_UNCOMPRESSED_BLOCK: usize = 64 << 20;

/// Offset of the footer's format_version field (sstable.md, "Footer").
pub const FOOTER_VERSION_OFFSET: usize = 48;
/// Offset of the footer's crc field; the crc covers bytes 0..52 (sstable.md, "Footer").
pub const FOOTER_CRC_OFFSET: usize = 52;
/// Offset of the footer's magic field (sstable.md, "Footer").
pub const FOOTER_MAGIC_OFFSET: usize = 56;

/// Where a block lives in the file: `size` excludes the 5-byte trailer
/// (sstable.md, "Block handles").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct BlockHandle {
    /// File offset of the block's first byte.
    pub offset: u64,
    /// Stored (possibly compressed) size, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the varint form used as index-block values.
    pub fn encode_varint(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes the varint form; `None` on bad or trailing bytes.
    pub fn decode_varint(src: &[u8]) -> Option<BlockHandle> {
        let (offset, n) = get_varint64(src)?;
        let (size, m) = get_varint64(src.get(n..)?)?;
        if n + m != src.len() {
            return None;
        }
        Some(BlockHandle { offset, size })
    }

    /// Appends the fixed 16-byte form used in the footer.
    fn encode_fixed(&self, dst: &mut Vec<u8>) {
        dst.extend_from_slice(&self.offset.to_le_bytes());
        dst.extend_from_slice(&self.size.to_le_bytes());
    }
}

/// The decoded footer (sstable.md, "Footer").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The filter block; `size == 0` means the table has no filter.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// Format version of the file.
    pub version: u32,
}

impl Footer {
    /// The 64 footer bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        self.index.encode_fixed(&mut b);
        self.filter.encode_fixed(&mut b);
        self.properties.encode_fixed(&mut b);
        b.extend_from_slice(&self.version.to_le_bytes());
        let c = crc::mask(crc::crc32c(&b));
        b.extend_from_slice(&c.to_le_bytes());
        b.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
        debug_assert_eq!(b.len(), FOOTER_LEN);
        b
    }

    /// Decodes and checks a footer read at `footer_offset` of `path`.
    /// Checks, in order: length, magic, version, crc.
    pub fn decode(path: &Path, footer_offset: u64, b: &[u8]) -> Result<Footer> {
        if b.len() != FOOTER_LEN {
            return Err(Error::corruption(
                path,
                footer_offset,
                format!("footer is {} bytes, expected {FOOTER_LEN}", b.len()),
            ));
        }
        // In range from here on: `b` is FOOTER_LEN bytes.
        let u32_at = |at: usize| fixed32_at(b, at).unwrap_or(0);
        let u64_at = |at: usize| fixed64_at(b, at).unwrap_or(0);
        let magic = u64_at(FOOTER_MAGIC_OFFSET);
        if magic != TABLE_MAGIC {
            return Err(Error::corruption(
                path,
                footer_offset + FOOTER_MAGIC_OFFSET as u64,
                format!("bad table magic {magic:#018x} (not a CairnDB table)"),
            ));
        }
        let version = u32_at(FOOTER_VERSION_OFFSET);
        if version > FORMAT_VERSION {
            return Err(Error::corruption(
                path,
                footer_offset + FOOTER_VERSION_OFFSET as u64,
                format!(
                    "format version {version} is newer than this build supports ({FORMAT_VERSION})"
                ),
            ));
        }
        if version == 0 {
            return Err(Error::corruption(
                path,
                footer_offset + FOOTER_VERSION_OFFSET as u64,
                "format version 0 is invalid",
            ));
        }
        let stored = crc::unmask(u32_at(FOOTER_CRC_OFFSET));
        if stored != crc::crc32c(b.get(..FOOTER_CRC_OFFSET).unwrap_or_default()) {
            return Err(Error::corruption(
                path,
                footer_offset,
                "footer checksum mismatch",
            ));
        }
        let h = |at: usize| BlockHandle {
            offset: u64_at(at),
            size: u64_at(at + 8),
        };
        Ok(Footer {
            index: h(0),
            filter: h(16),
            properties: h(32),
            version,
        })
    }
}

/// The byte stored in block trailers for `c`.
pub fn compression_byte(c: CompressionType) -> u8 {
    match c {
        CompressionType::None => COMPRESSION_NONE,
        CompressionType::Lz4 => COMPRESSION_LZ4,
        CompressionType::Zstd(_) => COMPRESSION_ZSTD,
    }
}

/// Compresses `raw` into `out` (cleared first) and returns the type byte to
/// store. Falls back to `COMPRESSION_NONE` (leaving `out` empty) when the
/// codec fails or saves less than 12.5%.
pub fn compress_block(c: CompressionType, raw: &[u8], out: &mut Vec<u8>) -> u8 {
    out.clear();
    // A block too large for the reader's decompression limit (a huge value)
    // is stored as it is: uncompressed blocks have no such limit.
    if raw.len() > MAX_UNCOMPRESSED_BLOCK {
        return COMPRESSION_NONE;
    }
    let t = match c {
        CompressionType::None => return COMPRESSION_NONE,
        CompressionType::Lz4 => {
            *out = lz4_flex::block::compress_prepend_size(raw);
            COMPRESSION_LZ4
        }
        CompressionType::Zstd(level) => match zstd::bulk::compress(raw, level) {
            Ok(z) => {
                put_varint64(out, raw.len() as u64);
                out.extend_from_slice(&z);
                COMPRESSION_ZSTD
            }
            Err(_) => return COMPRESSION_NONE,
        },
    };
    if out.len() > raw.len() - raw.len() / 8 {
        out.clear();
        return COMPRESSION_NONE;
    }
    t
}

/// Decompresses a block body of type `t`. Errors are `Corruption` at
/// `offset` of `path`.
pub fn decompress_block(path: &Path, offset: u64, t: u8, data: &[u8]) -> Result<Vec<u8>> {
    let bad = |what: String| Error::corruption(path, offset, what);
    let check_len = |n: usize| -> Result<()> {
        if n > MAX_UNCOMPRESSED_BLOCK {
            return Err(bad(format!(
                "uncompressed block size {n} exceeds limit {MAX_UNCOMPRESSED_BLOCK}"
            )));
        }
        Ok(())
    };
    match t {
        COMPRESSION_NONE => Ok(data.to_vec()),
        COMPRESSION_LZ4 => {
            let (n, rest) = lz4_flex::block::uncompressed_size(data)
                .map_err(|e| bad(format!("lz4 block: {e}")))?;
            check_len(n)?;
            let mut out = vec![0u8; n];
            let got = lz4_flex::block::decompress_into(rest, &mut out)
                .map_err(|e| bad(format!("lz4 block: {e}")))?;
            if got != n {
                return Err(bad(format!(
                    "lz4 block decompressed to {got} bytes, expected {n}"
                )));
            }
            Ok(out)
        }
        COMPRESSION_ZSTD => {
            let (n, used) =
                get_varint64(data).ok_or_else(|| bad("zstd block: bad length prefix".into()))?;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            check_len(n)?;
            let out = zstd::bulk::decompress(data.get(used..).unwrap_or_default(), n)
                .map_err(|e| bad(format!("zstd block: {e}")))?;
            if out.len() != n {
                return Err(bad(format!(
                    "zstd block decompressed to {} bytes, expected {n}",
                    out.len()
                )));
            }
            Ok(out)
        }
        other => Err(bad(format!("unknown block compression type {other}"))),
    }
}

/// The masked crc32c stored in a block trailer: covers the block bytes and
/// the type byte.
pub fn block_crc(data: &[u8], t: u8) -> u32 {
    crc::mask(crc::extend(crc::crc32c(data), &[t]))
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

    #[test]
    fn footer_round_trip_and_checks() {
        let f = Footer {
            index: BlockHandle { offset: 1, size: 2 },
            filter: BlockHandle { offset: 3, size: 0 },
            properties: BlockHandle { offset: 5, size: 6 },
            version: FORMAT_VERSION,
        };
        let b = f.encode();
        assert_eq!(b.len(), FOOTER_LEN);
        let p = Path::new("/x.sst");
        assert_eq!(Footer::decode(p, 100, &b).unwrap(), f);
        for i in 0..FOOTER_LEN {
            let mut c = b.clone();
            c[i] ^= 0x10;
            let e = Footer::decode(p, 100, &c).unwrap_err();
            assert!(e.is_corruption());
            assert!(e.to_string().contains("/x.sst"));
        }
        let mut v = b.clone();
        v[FOOTER_VERSION_OFFSET..FOOTER_VERSION_OFFSET + 4].copy_from_slice(&2u32.to_le_bytes());
        let e = Footer::decode(p, 0, &v).unwrap_err().to_string();
        assert!(
            e.contains("format version 2 is newer than this build supports (1)"),
            "{e}"
        );
        assert!(Footer::decode(p, 0, &b[1..]).is_err());
    }

    #[test]
    fn compression_round_trip_and_garbage() {
        let raw: Vec<u8> = (0..5000u32).flat_map(|i| (i % 17).to_le_bytes()).collect();
        let p = Path::new("/c.sst");
        for c in [
            CompressionType::None,
            CompressionType::Lz4,
            CompressionType::Zstd(3),
        ] {
            let mut out = Vec::new();
            let t = compress_block(c, &raw, &mut out);
            let body = if t == COMPRESSION_NONE { &raw } else { &out };
            assert_eq!(decompress_block(p, 0, t, body).unwrap(), raw);
            // Garbage never panics.
            for n in 0..body.len().min(64) {
                let _ = decompress_block(p, 0, t, &body[..n]);
            }
        }
        // Incompressible data stays uncompressed.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let mut out = Vec::new();
        assert_eq!(
            compress_block(CompressionType::Lz4, &noise, &mut out),
            COMPRESSION_NONE
        );
        // Bomb guard.
        let mut bomb = Vec::new();
        put_varint64(&mut bomb, 1 << 40);
        assert!(decompress_block(p, 0, COMPRESSION_ZSTD, &bomb).is_err());
        assert!(decompress_block(p, 0, COMPRESSION_LZ4, &[0xff, 0xff, 0xff, 0xff, 0]).is_err());
        assert!(decompress_block(p, 0, 9, b"x").is_err());
    }

    #[test]
    fn handle_varint() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 300,
        };
        let mut b = Vec::new();
        h.encode_varint(&mut b);
        assert_eq!(BlockHandle::decode_varint(&b), Some(h));
        assert_eq!(BlockHandle::decode_varint(&b[..b.len() - 1]), None);
        b.push(0);
        assert_eq!(BlockHandle::decode_varint(&b), None);
    }
}
