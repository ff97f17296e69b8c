//! Byte layout constants, footer, meta section and (format version 2) the
//! compressed section envelope of zip tables. Every
//! constant here is defined in `docs/format/ziptable.md`; change the document
//! first and bump [`ZIP_FORMAT_VERSION`] with any layout change.
//!
//! Decoding never panics: malformed input is a `Corruption` error naming the
//! file and the offset of the damaged structure. Plain data: no locks.

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
use crate::util::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_varint64, Reader};
use crate::util::crc;

/// Magic number in the last 8 bytes of a zip table ("ZIPNRIAC" read as
/// little-endian bytes). A block-based table ends in `TABLE_MAGIC` instead,
/// which is how a reader tells the two formats apart.
pub const ZIP_MAGIC: u64 = 0x4341_4952_4e50_495a;

/// Newest version of the zip table layout: what this code writes by
/// default, and the highest it reads (`ziptable.md`, "Footer").
pub const ZIP_FORMAT_VERSION: u32 = 4;

/// The first version that stores the dictionary, key index, trailer and
/// key-start sections in an envelope (`ziptable.md`, "Packed sections").
pub const ZIP_VERSION_PACKED_SECTIONS: u32 = 2;

/// The first version whose groups may store a value without the record's
/// user key in it (`FLAG_KEY_IN_VALUE`; `ziptable.md`, "Group").
pub const ZIP_VERSION_KEY_IN_VALUE: u32 = 3;

/// The first version whose groups may keep long hex-digit runs packed
/// after their text (`FLAG_HEX_RUNS`; `ziptable.md`, "Hex runs").
pub const ZIP_VERSION_HEX_RUNS: u32 = 4;

/// Largest decoded dictionary a version-2 dictionary section may hold
/// (`ziptable.md`, "Dictionary section").
pub const MAX_DICT_LEN: usize = crate::sst::format::MAX_UNCOMPRESSED_BLOCK;

/// Largest contents a compressed envelope may declare (`ziptable.md`,
/// "Packed sections"): bounds what a forged header can make the reader
/// allocate. Raw envelopes have no limit.
pub const MAX_PACKED_SECTION_LEN: usize = 256 << 20;

/// Whether section `s` (a [`sec`] index) is an envelope in `version`.
pub fn is_packed(version: u32, s: usize) -> bool {
    version >= ZIP_VERSION_PACKED_SECTIONS
        && matches!(s, sec::DICT | sec::INDEX | sec::TRAILERS | sec::KEY_STARTS)
}

/// Decodes an envelope (`ziptable.md`, "Packed sections") into its
/// contents. `Err` describes what is wrong.
pub fn decode_envelope(bytes: &[u8]) -> std::result::Result<Vec<u8>, String> {
    use zstd::zstd_safe::{DCtx, DParameter, FrameFormat};
    if let Some(hl) = raw_envelope_body(bytes)? {
        return Ok(bytes.get(hl..).unwrap_or_default().to_vec());
    }
    let (h, hl) = crate::util::coding::get_varint64(bytes).ok_or("truncated envelope header")?;
    let body = bytes.get(hl..).unwrap_or_default();
    let len = usize::try_from(h >> 1).map_err(|_| "envelope size does not fit memory")?;
    if len > MAX_PACKED_SECTION_LEN {
        return Err(format!(
            "compressed envelope declares {len} bytes, over {MAX_PACKED_SECTION_LEN}"
        ));
    }
    let mut dctx = DCtx::create();
    dctx.set_parameter(DParameter::Format(FrameFormat::Magicless))
        .map_err(|c| format!("zstd: {}", zstd::zstd_safe::get_error_name(c)))?;
    let mut out = Vec::with_capacity(len);
    match dctx.decompress(&mut out, body) {
        Ok(n) if n == len => Ok(out),
        Ok(n) => Err(format!("decoded {n} bytes, envelope says {len}")),
        Err(c) => Err(format!("zstd: {}", zstd::zstd_safe::get_error_name(c))),
    }
}

/// Where the contents of an envelope stored raw begin (the length of its
/// header), or `None` when the envelope is compressed. `Err` describes
/// what is wrong.
pub fn raw_envelope_body(bytes: &[u8]) -> std::result::Result<Option<usize>, String> {
    let (h, hl) = crate::util::coding::get_varint64(bytes).ok_or("truncated envelope header")?;
    if h & 1 != 0 {
        return Ok(None);
    }
    let body = bytes.get(hl..).unwrap_or_default();
    if body.len() as u64 != h >> 1 {
        return Err(format!(
            "{} stored bytes, envelope says {}",
            body.len(),
            h >> 1
        ));
    }
    Ok(Some(hl))
}

/// Encodes `contents` as an envelope compressed at zstd `level`, raw when
/// compression does not make it smaller or it is over
/// [`MAX_PACKED_SECTION_LEN`]. `Err` is a zstd error code.
pub fn encode_envelope(contents: &[u8], level: i32) -> std::result::Result<Vec<u8>, usize> {
    use zstd::zstd_safe::{CCtx, CParameter, FrameFormat};
    let mut out = Vec::new();
    if contents.len() <= MAX_PACKED_SECTION_LEN {
        let mut cctx = CCtx::create();
        for p in [
            CParameter::CompressionLevel(level),
            CParameter::Format(FrameFormat::Magicless),
            CParameter::ContentSizeFlag(false),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
        ] {
            cctx.set_parameter(p)?;
        }
        out.reserve(zstd::zstd_safe::compress_bound(contents.len()));
        cctx.compress2(&mut out, contents)?;
    }
    let compressed = !out.is_empty() && out.len() < contents.len();
    let body: &[u8] = if compressed { &out } else { contents };
    let mut b = Vec::with_capacity(10 + body.len());
    put_varint64(&mut b, ((contents.len() as u64) << 1) | compressed as u64);
    b.extend_from_slice(body);
    Ok(b)
}

/// Bytes in the fixed footer at the end of the file.
pub const ZIP_FOOTER_LEN: usize = 32;

/// Bytes of the per-group header before its varint: a masked CRC32C.
pub const GROUP_CRC_LEN: usize = 4;

/// Meta flag bit: the table has a value dictionary.
pub const FLAG_HAS_DICT: u8 = 1;

/// Meta flag bit (version 3 on): every decoded group carries a key
/// position per record, and a record with one had its user key cut out of
/// its value at that position (`ziptable.md`, "Group").
pub const FLAG_KEY_IN_VALUE: u8 = 2;

/// Meta flag bit (version 4 on): each group's header carries the length
/// of its packed hex digits, its decoded body ends with them, and its text
/// holds escapes for them (`ziptable.md`, "Hex runs"). The meta section
/// then ends with the escape byte.
pub const FLAG_HEX_RUNS: u8 = 4;

/// The flag bits a table of `version` may set; any other is corruption.
pub fn known_flags(version: u32) -> u8 {
    if version >= ZIP_VERSION_HEX_RUNS {
        FLAG_HAS_DICT | FLAG_KEY_IN_VALUE | FLAG_HEX_RUNS
    } else if version >= ZIP_VERSION_KEY_IN_VALUE {
        FLAG_HAS_DICT | FLAG_KEY_IN_VALUE
    } else {
        FLAG_HAS_DICT
    }
}

/// A section of the file: where it is and the masked CRC32C of its bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Section {
    /// File offset of the first byte.
    pub offset: u64,
    /// Bytes in the section.
    pub size: u64,
    /// `crc::mask(crc32c(bytes))`.
    pub crc: u32,
}

/// Names of the sections, in the order the meta section lists them.
pub const SECTION_NAMES: [&str; 6] = [
    "dictionary",
    "offset array",
    "key index",
    "trailer array",
    "key-start array",
    "properties",
];

/// Index of each section in [`Meta::sections`].
pub mod sec {
    /// The zstd dictionary (empty without one).
    pub const DICT: usize = 0;
    /// The group offset array.
    pub const OFFSETS: usize = 1;
    /// The fst key index.
    pub const INDEX: usize = 2;
    /// Packed record trailers.
    pub const TRAILERS: usize = 3;
    /// Packed first-record-of-key array (empty when one record per key).
    pub const KEY_STARTS: usize = 4;
    /// Table properties.
    pub const PROPS: usize = 5;
}

/// The meta section: counts and the section table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// Records per value group.
    pub group_size: u32,
    /// Records (internal keys) in the table.
    pub num_records: u64,
    /// Distinct user keys.
    pub num_keys: u64,
    /// Value groups.
    pub num_groups: u64,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// zstd level the groups were compressed with (informational).
    pub compression_level: i32,
    /// The sections, indexed by [`sec`].
    pub sections: [Section; 6],
    /// With `FLAG_HEX_RUNS`: the escape byte of the hex-run filter
    /// (encoded after the sections only then).
    pub hex_escape: u8,
}

impl Meta {
    /// Encodes the meta section.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(128);
        put_varint64(&mut b, self.group_size as u64);
        put_varint64(&mut b, self.num_records);
        put_varint64(&mut b, self.num_keys);
        put_varint64(&mut b, self.num_groups);
        b.push(self.flags);
        put_varint64(&mut b, self.compression_level as i64 as u64);
        for s in &self.sections {
            put_varint64(&mut b, s.offset);
            put_varint64(&mut b, s.size);
            put_fixed32(&mut b, s.crc);
        }
        if self.flags & FLAG_HEX_RUNS != 0 {
            b.push(self.hex_escape);
        }
        b
    }

    /// Decodes a meta section read at `offset` of `path`.
    pub fn decode(path: &Path, offset: u64, src: &[u8]) -> Result<Meta> {
        let bad = |what: &str| Error::corruption(path, offset, format!("zip meta: {what}"));
        let mut r = Reader::new(src);
        let mut m = Meta {
            group_size: r.varint32().ok_or_else(|| bad("truncated group size"))?,
            num_records: r.varint64().ok_or_else(|| bad("truncated record count"))?,
            num_keys: r.varint64().ok_or_else(|| bad("truncated key count"))?,
            num_groups: r.varint64().ok_or_else(|| bad("truncated group count"))?,
            flags: r.u8().ok_or_else(|| bad("truncated flags"))?,
            compression_level: r
                .varint64()
                .ok_or_else(|| bad("truncated compression level"))?
                as i64 as i32,
            sections: [Section::default(); 6],
            hex_escape: 0,
        };
        for (s, name) in m.sections.iter_mut().zip(SECTION_NAMES) {
            s.offset = r
                .varint64()
                .ok_or_else(|| bad(&format!("truncated {name} handle")))?;
            s.size = r
                .varint64()
                .ok_or_else(|| bad(&format!("truncated {name} handle")))?;
            s.crc = r
                .fixed32()
                .ok_or_else(|| bad(&format!("truncated {name} handle")))?;
        }
        if m.flags & FLAG_HEX_RUNS != 0 {
            m.hex_escape = r.u8().ok_or_else(|| bad("truncated hex-run escape byte"))?;
        }
        if m.group_size == 0 || m.group_size > 256 {
            return Err(bad(&format!("group size {} not in 1..=256", m.group_size)));
        }
        if m.num_keys > m.num_records {
            return Err(bad(&format!(
                "{} keys but only {} records",
                m.num_keys, m.num_records
            )));
        }
        if m.num_groups != m.num_records.div_ceil(m.group_size as u64) {
            return Err(bad(&format!(
                "{} groups for {} records of group size {}",
                m.num_groups, m.num_records, m.group_size
            )));
        }
        Ok(m)
    }
}

/// The fixed footer: where the meta section is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZipFooter {
    /// The meta section.
    pub meta: Section,
    /// Layout version.
    pub version: u32,
}

impl ZipFooter {
    /// The 32 footer bytes.
    pub fn encode(&self) -> [u8; ZIP_FOOTER_LEN] {
        let mut b = Vec::with_capacity(ZIP_FOOTER_LEN);
        b.extend_from_slice(&self.meta.offset.to_le_bytes());
        put_fixed32(&mut b, self.meta.size as u32);
        put_fixed32(&mut b, self.meta.crc);
        put_fixed32(&mut b, self.version);
        let c = crc::mask(crc::crc32c(&b));
        put_fixed32(&mut b, c);
        b.extend_from_slice(&ZIP_MAGIC.to_le_bytes());
        let mut out = [0u8; ZIP_FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Decodes and checks the footer read at `offset` of `path`: magic,
    /// footer CRC, version, in that order.
    pub fn decode(path: &Path, offset: u64, b: &[u8; ZIP_FOOTER_LEN]) -> Result<ZipFooter> {
        let magic = decode_fixed64(&b[24..]);
        if magic != ZIP_MAGIC {
            return Err(Error::corruption(
                path,
                offset + 24,
                format!("bad zip table magic {magic:#018x}"),
            ));
        }
        let stored = decode_fixed32(&b[20..]);
        if stored != crc::mask(crc::crc32c(&b[..20])) {
            return Err(Error::corruption(
                path,
                offset,
                "zip table footer checksum mismatch",
            ));
        }
        let version = decode_fixed32(&b[16..]);
        if version == 0 || version > ZIP_FORMAT_VERSION {
            return Err(Error::corruption(
                path,
                offset + 16,
                format!(
                    "zip table format version {version} is not supported (this build reads 1..={ZIP_FORMAT_VERSION})"
                ),
            ));
        }
        Ok(ZipFooter {
            meta: Section {
                offset: decode_fixed64(&b[..8]),
                size: decode_fixed32(&b[8..]) as u64,
                crc: decode_fixed32(&b[12..]),
            },
            version,
        })
    }
}

/// The masked CRC32C of a section's bytes.
pub fn section_crc(bytes: &[u8]) -> u32 {
    crc::mask(crc::crc32c(bytes))
}
