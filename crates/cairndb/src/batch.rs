//! `WriteBatch`: an ordered group of puts and deletes applied atomically.
//!
//! Its byte form is also the payload of a WAL record (`docs/format/wal.md`,
//! "Write batch"): a 12-byte header (first sequence number fixed64, count
//! fixed32) followed by `count` records, each a type byte (1 = put, 0 =
//! delete), a length-prefixed key and, for puts, a length-prefixed value.
//! Record `i` gets sequence number `first + i`.

use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueType};
use crate::util::coding::{decode_fixed32, decode_fixed64, put_length_prefixed, Reader};

/// Bytes of the batch header.
pub const HEADER_LEN: usize = 12;

/// A group of writes applied atomically: all of them or none survive a crash.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    /// The longest key or value added that does not fit a varint32 length;
    /// `Db::write` refuses such a batch (its bytes would be wrong).
    oversized: Option<usize>,
}

/// Largest key or value a batch can hold (lengths are varint32 on disk).
pub const MAX_ENTRY_LEN: usize = u32::MAX as usize;

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

/// One decoded record of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set `key` to `value`.
    Put(&'a [u8], &'a [u8]),
    /// Remove `key`.
    Delete(&'a [u8]),
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0u8; HEADER_LEN],
            oversized: None,
        }
    }

    /// Adds a put.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.note_len(key.as_ref().len());
        self.note_len(value.as_ref().len());
        self.set_count(self.count() + 1);
        self.rep.push(ValueType::Value as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        put_length_prefixed(&mut self.rep, value.as_ref());
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.note_len(key.as_ref().len());
        self.set_count(self.count() + 1);
        self.rep.push(ValueType::Deletion as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
    }

    fn note_len(&mut self, len: usize) {
        if len > MAX_ENTRY_LEN {
            self.oversized = Some(self.oversized.map_or(len, |m| m.max(len)));
        }
    }

    /// An error if a key or value is too long to be stored.
    pub(crate) fn check_sizes(&self) -> Result<()> {
        match self.oversized {
            Some(len) => Err(Error::invalid(format!(
                "write batch holds a key or value of {len} bytes; the limit is {MAX_ENTRY_LEN}"
            ))),
            None => Ok(()),
        }
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        self.oversized = None;
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    /// Number of records.
    pub fn count(&self) -> u32 {
        decode_fixed32(&self.rep[8..12])
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Size of the encoded batch in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    fn set_count(&mut self, n: u32) {
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }

    /// The sequence number of the first record (set when the batch is written).
    pub fn sequence(&self) -> SeqNo {
        decode_fixed64(&self.rep[..8])
    }

    pub(crate) fn set_sequence(&mut self, seq: SeqNo) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// The encoded form (the WAL payload).
    pub(crate) fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Appends every record of `other` to this batch.
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        if let Some(l) = other.oversized {
            self.note_len(l);
        }
        self.set_count(self.count() + other.count());
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
    }

    /// Rebuilds a batch from its encoded form (a WAL record's payload),
    /// checking every record. `file`/`offset` name where the bytes came from
    /// for error messages.
    pub fn from_data(data: &[u8], file: &std::path::Path, offset: u64) -> Result<WriteBatch> {
        if data.len() < HEADER_LEN {
            return Err(Error::corruption(
                file,
                offset,
                format!(
                    "write batch of {} bytes is shorter than its header",
                    data.len()
                ),
            ));
        }
        let b = WriteBatch {
            rep: data.to_vec(),
            oversized: None,
        };
        let mut n = 0u32;
        for op in b.iter() {
            op.map_err(|what| Error::corruption(file, offset, what))?;
            n += 1;
        }
        if n != b.count() {
            return Err(Error::corruption(
                file,
                offset,
                format!("write batch header says {} records, found {n}", b.count()),
            ));
        }
        Ok(b)
    }

    /// Iterates the records in order. A malformed record yields an error
    /// message and ends the iteration.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            r: Reader::new(&self.rep[HEADER_LEN..]),
            failed: false,
        }
    }
}

/// Iterator over the records of a [`WriteBatch`].
pub struct BatchIter<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = std::result::Result<BatchOp<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let at = self.r.pos();
        let item = (|| {
            let tag = self.r.u8().ok_or("truncated record tag")?;
            let key = self.r.length_prefixed().ok_or("truncated key")?;
            match ValueType::from_u8(tag) {
                Some(ValueType::Value) => {
                    let v = self.r.length_prefixed().ok_or("truncated value")?;
                    Ok(BatchOp::Put(key, v))
                }
                Some(ValueType::Deletion) => Ok(BatchOp::Delete(key)),
                None => Err("unknown record type"),
            }
        })();
        if item.is_err() {
            self.failed = true;
        }
        Some(item.map_err(|e| format!("{e} at byte {} of write batch", at + HEADER_LEN)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn encode_decode_round_trip() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1");
        b.delete(b"k2");
        b.put(b"", b"");
        b.set_sequence(42);
        assert_eq!(b.count(), 3);
        let d = WriteBatch::from_data(b.data(), Path::new("x"), 0).unwrap();
        assert_eq!(d.sequence(), 42);
        let ops: Vec<_> = d.iter().map(|o| o.unwrap()).collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put(b"k1", b"v1"),
                BatchOp::Delete(b"k2"),
                BatchOp::Put(b"", b"")
            ]
        );
    }

    #[test]
    fn truncated_or_miscounted_batches_are_corruption() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let d = b.data();
        for cut in 0..d.len() {
            let r = WriteBatch::from_data(&d[..cut], Path::new("wal"), 7);
            if cut == HEADER_LEN {
                // header alone with count 1: miscounted
                assert!(r.is_err());
            } else {
                let e = r.unwrap_err();
                assert!(e.is_corruption(), "{e}");
            }
        }
        let mut bad = d.to_vec();
        bad[HEADER_LEN] = 9;
        assert!(WriteBatch::from_data(&bad, Path::new("wal"), 0).is_err());
    }

    #[test]
    fn append_concatenates() {
        let mut a = WriteBatch::new();
        a.put(b"a", b"1");
        let mut b = WriteBatch::new();
        b.delete(b"b");
        a.append(&b);
        assert_eq!(a.count(), 2);
        assert_eq!(a.iter().count(), 2);
    }
}
