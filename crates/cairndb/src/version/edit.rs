//! `VersionEdit`: one change to the set of live files, as recorded in the
//! MANIFEST (`docs/format/manifest.md`, "Version edit").
//!
//! An edit is a sequence of tagged fields. Decoding rejects unknown tags and
//! truncated fields with a `Corruption` error naming the MANIFEST and the
//! record's offset, so a MANIFEST written by a newer format is never half
//! understood.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::options::NUM_LEVELS;
use crate::util::coding::{put_length_prefixed, put_varint32, put_varint64, Reader};

// Field tags: docs/format/manifest.md, "Version edit".
const TAG_FORMAT_VERSION: u32 = 1;
const TAG_LOG_NUMBER: u32 = 2;
const TAG_NEXT_FILE_NUMBER: u32 = 3;
const TAG_LAST_SEQUENCE: u32 = 4;
const TAG_COMPACT_POINTER: u32 = 5;
const TAG_DELETED_FILE: u32 = 6;
const TAG_NEW_FILE: u32 = 7;
// docs/format/blob.md, "MANIFEST".
const TAG_BLOB_FILE_ADDITION: u32 = 8;
const TAG_BLOB_FILE_GARBAGE: u32 = 9;
const TAG_OLDEST_BLOB_FILE: u32 = 10;

/// The MANIFEST format this build writes for a database without blob files
/// (docs/format/manifest.md, "Versions").
pub const MANIFEST_FORMAT_VERSION: u64 = 1;

/// The MANIFEST format of a MANIFEST that records blob files, and the newest
/// this build reads (docs/format/blob.md, "MANIFEST").
pub const MANIFEST_FORMAT_VERSION_BLOB: u64 = 2;

/// A blob file in the version (docs/format/blob.md). Immutable: the garbage
/// counted against it lives in the version ([`super::BlobFileState`]), so
/// one `Arc` per file stays the same across versions and its strong count
/// tells whether an old version still lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFileMeta {
    /// File number (`NNNNNN.blob`).
    pub number: u64,
    /// Records in the file.
    pub count: u64,
    /// Sum of the record sizes.
    pub bytes: u64,
    /// Masked crc32c of the whole file.
    pub checksum: u32,
}

/// Garbage counted against one blob file by one edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobGarbage {
    /// The blob file.
    pub number: u64,
    /// Records no table refers to any more.
    pub count: u64,
    /// Their bytes (record sizes).
    pub bytes: u64,
}

/// A table file in some level.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileMeta {
    /// File number (`NNNNNN.sst`).
    pub number: u64,
    /// Size in bytes.
    pub size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest sequence number in the file.
    pub smallest_seq: SeqNo,
    /// Largest sequence number in the file.
    pub largest_seq: SeqNo,
    /// The oldest (lowest-numbered) blob file the table refers to; 0 when
    /// it holds no blob reference (docs/format/blob.md, "MANIFEST").
    pub oldest_blob_file: u64,
    /// The file's open reader, kept here when table readers are not
    /// bounded (`Options::max_open_files == usize::MAX`); not part of the
    /// file's identity (ignored by `==`, never written to the MANIFEST).
    pub reader: PinnedReader,
}

/// A table reader pinned to its file's metadata: a point read reaches it
/// through the version it already holds, with no cache lookup and no
/// reference count (RocksDB's `max_open_files = -1`). Set at most once.
/// A clone starts empty: a copy of a `FileMeta` may name another file.
#[derive(Default)]
pub struct PinnedReader(std::sync::OnceLock<Arc<crate::sst::Table>>);

impl Clone for PinnedReader {
    fn clone(&self) -> Self {
        PinnedReader::default()
    }
}

impl PinnedReader {
    /// The pinned reader, if any.
    #[inline]
    pub fn get(&self) -> Option<&Arc<crate::sst::Table>> {
        self.0.get()
    }

    /// Pins `t` unless a reader is pinned already; returns the pinned one.
    pub fn get_or_pin(&self, t: Arc<crate::sst::Table>) -> &Arc<crate::sst::Table> {
        self.0.get_or_init(|| t)
    }
}

impl PartialEq for PinnedReader {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for PinnedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() { "pinned" } else { "-" })
    }
}

impl FileMeta {
    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.smallest)
    }
    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.largest)
    }
}

/// A change to the version: files added and removed, counters advanced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionEdit {
    /// MANIFEST format version (written in the first record of each MANIFEST).
    pub format_version: Option<u64>,
    /// WALs numbered below this are fully flushed and no longer needed.
    pub log_number: Option<u64>,
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<SeqNo>,
    /// Where the next size compaction of a level starts (internal key).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Files removed: (level, number).
    pub deleted_files: Vec<(usize, u64)>,
    /// Files added: (level, file).
    pub new_files: Vec<(usize, Arc<FileMeta>)>,
    /// Blob files added.
    pub new_blob_files: Vec<Arc<BlobFileMeta>>,
    /// Garbage counted against blob files (added to what they have).
    pub blob_garbage: Vec<BlobGarbage>,
}

impl VersionEdit {
    /// Records the addition of a file.
    pub fn add_file(&mut self, level: usize, f: FileMeta) {
        self.new_files.push((level, Arc::new(f)));
    }

    /// Records the removal of a file.
    pub fn delete_file(&mut self, level: usize, number: u64) {
        self.deleted_files.push((level, number));
    }

    /// Whether the edit records anything about blob files.
    pub fn has_blob_fields(&self) -> bool {
        !self.new_blob_files.is_empty()
            || !self.blob_garbage.is_empty()
            || self.new_files.iter().any(|(_, f)| f.oldest_blob_file != 0)
    }

    /// Encodes the edit.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        if let Some(v) = self.format_version {
            put_varint32(dst, TAG_FORMAT_VERSION);
            put_varint64(dst, v);
        }
        if let Some(v) = self.log_number {
            put_varint32(dst, TAG_LOG_NUMBER);
            put_varint64(dst, v);
        }
        if let Some(v) = self.next_file_number {
            put_varint32(dst, TAG_NEXT_FILE_NUMBER);
            put_varint64(dst, v);
        }
        if let Some(v) = self.last_sequence {
            put_varint32(dst, TAG_LAST_SEQUENCE);
            put_varint64(dst, v);
        }
        for (level, key) in &self.compact_pointers {
            put_varint32(dst, TAG_COMPACT_POINTER);
            put_varint32(dst, *level as u32);
            put_length_prefixed(dst, key);
        }
        for (level, number) in &self.deleted_files {
            put_varint32(dst, TAG_DELETED_FILE);
            put_varint32(dst, *level as u32);
            put_varint64(dst, *number);
        }
        for (level, f) in &self.new_files {
            put_varint32(dst, TAG_NEW_FILE);
            put_varint32(dst, *level as u32);
            put_varint64(dst, f.number);
            put_varint64(dst, f.size);
            put_length_prefixed(dst, &f.smallest);
            put_length_prefixed(dst, &f.largest);
            put_varint64(dst, f.smallest_seq);
            put_varint64(dst, f.largest_seq);
            if f.oldest_blob_file != 0 {
                put_varint32(dst, TAG_OLDEST_BLOB_FILE);
                put_varint64(dst, f.number);
                put_varint64(dst, f.oldest_blob_file);
            }
        }
        for b in &self.new_blob_files {
            put_varint32(dst, TAG_BLOB_FILE_ADDITION);
            put_varint64(dst, b.number);
            put_varint64(dst, b.count);
            put_varint64(dst, b.bytes);
            put_varint32(dst, b.checksum);
        }
        for g in &self.blob_garbage {
            put_varint32(dst, TAG_BLOB_FILE_GARBAGE);
            put_varint64(dst, g.number);
            put_varint64(dst, g.count);
            put_varint64(dst, g.bytes);
        }
    }

    /// Decodes an edit. `file`/`offset` locate the record for error messages.
    pub fn decode(src: &[u8], file: &Path, offset: u64) -> Result<VersionEdit> {
        let mut e = VersionEdit::default();
        let mut r = Reader::new(src);
        let bad = |what: &str, at: usize| {
            Error::corruption(
                file,
                offset,
                format!("version edit: {what} at byte {at} of the record"),
            )
        };
        let level = |r: &mut Reader<'_>, at: usize| -> Result<usize> {
            let l = r.varint32().ok_or_else(|| bad("truncated level", at))? as usize;
            if l >= NUM_LEVELS {
                return Err(bad(&format!("level {l} out of range"), at));
            }
            Ok(l)
        };
        while !r.is_empty() {
            let at = r.pos();
            let tag = r.varint32().ok_or_else(|| bad("truncated tag", at))?;
            match tag {
                TAG_FORMAT_VERSION => {
                    let v = r
                        .varint64()
                        .ok_or_else(|| bad("truncated format version", at))?;
                    if v > MANIFEST_FORMAT_VERSION_BLOB {
                        return Err(bad(
                            &format!(
                                "MANIFEST format version {v} is newer than this build supports ({MANIFEST_FORMAT_VERSION_BLOB})"
                            ),
                            at,
                        ));
                    }
                    e.format_version = Some(v);
                }
                TAG_LOG_NUMBER => {
                    e.log_number = Some(
                        r.varint64()
                            .ok_or_else(|| bad("truncated log number", at))?,
                    )
                }
                TAG_NEXT_FILE_NUMBER => {
                    e.next_file_number = Some(
                        r.varint64()
                            .ok_or_else(|| bad("truncated next file number", at))?,
                    )
                }
                TAG_LAST_SEQUENCE => {
                    e.last_sequence = Some(
                        r.varint64()
                            .ok_or_else(|| bad("truncated last sequence", at))?,
                    )
                }
                TAG_COMPACT_POINTER => {
                    let l = level(&mut r, at)?;
                    let k = r
                        .length_prefixed()
                        .ok_or_else(|| bad("truncated compact pointer", at))?;
                    e.compact_pointers.push((l, k.to_vec()));
                }
                TAG_DELETED_FILE => {
                    let l = level(&mut r, at)?;
                    let n = r
                        .varint64()
                        .ok_or_else(|| bad("truncated deleted file", at))?;
                    e.deleted_files.push((l, n));
                }
                TAG_NEW_FILE => {
                    let l = level(&mut r, at)?;
                    let mut field = |what: &str| r.varint64().ok_or_else(|| bad(what, at));
                    let number = field("truncated new file number")?;
                    let size = field("truncated new file size")?;
                    let smallest = r
                        .length_prefixed()
                        .ok_or_else(|| bad("truncated smallest key", at))?
                        .to_vec();
                    let largest = r
                        .length_prefixed()
                        .ok_or_else(|| bad("truncated largest key", at))?
                        .to_vec();
                    let smallest_seq = r.varint64().ok_or_else(|| bad("truncated seq", at))?;
                    let largest_seq = r.varint64().ok_or_else(|| bad("truncated seq", at))?;
                    if smallest.len() < 8 || largest.len() < 8 {
                        return Err(bad("file key shorter than an internal key", at));
                    }
                    if crate::key::compare_internal(&smallest, &largest).is_gt() {
                        return Err(bad(&format!("file {number} has smallest > largest"), at));
                    }
                    e.new_files.push((
                        l,
                        Arc::new(FileMeta {
                            number,
                            size,
                            smallest,
                            largest,
                            smallest_seq,
                            largest_seq,
                            oldest_blob_file: 0,
                            reader: Default::default(),
                        }),
                    ));
                }
                TAG_OLDEST_BLOB_FILE => {
                    let mut field = |what: &str| r.varint64().ok_or_else(|| bad(what, at));
                    let number = field("truncated table number")?;
                    let oldest = field("truncated oldest blob file")?;
                    let f = e
                        .new_files
                        .iter_mut()
                        .find(|(_, f)| f.number == number)
                        .ok_or_else(|| {
                            bad(
                                &format!("oldest blob file of table {number}, which this edit does not add"),
                                at,
                            )
                        })?;
                    Arc::make_mut(&mut f.1).oldest_blob_file = oldest;
                }
                TAG_BLOB_FILE_ADDITION => {
                    let mut field = |what: &str| r.varint64().ok_or_else(|| bad(what, at));
                    let number = field("truncated blob file number")?;
                    let count = field("truncated blob file count")?;
                    let bytes = field("truncated blob file bytes")?;
                    let checksum = r
                        .varint32()
                        .ok_or_else(|| bad("truncated blob file checksum", at))?;
                    if count == 0 {
                        return Err(bad(&format!("blob file {number} has no records"), at));
                    }
                    e.new_blob_files.push(Arc::new(BlobFileMeta {
                        number,
                        count,
                        bytes,
                        checksum,
                    }));
                }
                TAG_BLOB_FILE_GARBAGE => {
                    let mut field = |what: &str| r.varint64().ok_or_else(|| bad(what, at));
                    let number = field("truncated blob garbage file number")?;
                    let count = field("truncated blob garbage count")?;
                    let bytes = field("truncated blob garbage bytes")?;
                    e.blob_garbage.push(BlobGarbage {
                        number,
                        count,
                        bytes,
                    });
                }
                t => return Err(bad(&format!("unknown tag {t}"), at)),
            }
        }
        Ok(e)
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
    use crate::key::{make_internal_key, ValueType};

    fn sample() -> VersionEdit {
        let mut e = VersionEdit {
            format_version: Some(1),
            log_number: Some(12),
            next_file_number: Some(99),
            last_sequence: Some(123456789),
            ..Default::default()
        };
        e.compact_pointers
            .push((2, make_internal_key(b"ptr", 5, ValueType::Value)));
        e.delete_file(1, 7);
        e.add_file(
            3,
            FileMeta {
                number: 44,
                size: 1 << 20,
                smallest: make_internal_key(b"a", 10, ValueType::Value),
                largest: make_internal_key(b"z", 3, ValueType::Deletion),
                smallest_seq: 3,
                largest_seq: 10,
                oldest_blob_file: 40,
                reader: Default::default(),
            },
        );
        e.new_blob_files.push(Arc::new(BlobFileMeta {
            number: 45,
            count: 10,
            bytes: 1 << 22,
            checksum: 0xfeed_f00d,
        }));
        e.blob_garbage.push(BlobGarbage {
            number: 40,
            count: 3,
            bytes: 3000,
        });
        e
    }

    #[test]
    fn round_trip() {
        let e = sample();
        let mut b = Vec::new();
        e.encode(&mut b);
        let d = VersionEdit::decode(&b, Path::new("MANIFEST-000001"), 0).unwrap();
        assert_eq!(d, e);
    }

    #[test]
    fn every_truncation_is_corruption_or_shorter_valid_edit() {
        let mut b = Vec::new();
        sample().encode(&mut b);
        for cut in 0..b.len() {
            // Never panics; a cut inside a field is an error.
            let _ = VersionEdit::decode(&b[..cut], Path::new("M"), 0);
        }
        let e = VersionEdit::decode(&b[..b.len() - 1], Path::new("M"), 64).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("M") && s.contains("64"), "{s}");
    }

    #[test]
    fn unknown_tag_and_newer_version_rejected() {
        let mut b = Vec::new();
        put_varint32(&mut b, 77);
        assert!(VersionEdit::decode(&b, Path::new("M"), 0)
            .unwrap_err()
            .to_string()
            .contains("unknown tag 77"));
        let mut b = Vec::new();
        put_varint32(&mut b, TAG_FORMAT_VERSION);
        put_varint64(&mut b, 3);
        assert!(VersionEdit::decode(&b, Path::new("M"), 0)
            .unwrap_err()
            .to_string()
            .contains("newer"));
        let mut b = Vec::new();
        put_varint32(&mut b, TAG_DELETED_FILE);
        put_varint32(&mut b, 9);
        put_varint64(&mut b, 1);
        assert!(VersionEdit::decode(&b, Path::new("M"), 0).is_err());
    }
}
