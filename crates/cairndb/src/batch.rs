//! `WriteBatch`: an ordered group of puts and deletes applied atomically.
//!
//! Its byte form is also the payload of a WAL record (`docs/format/wal.md`,
//! "Write batch"): a 12-byte header (first sequence number fixed64, count
//! fixed32) followed by `count` records, each a type byte (1 = put, 0 =
//! delete), a length-prefixed key and, for puts, a length-prefixed value.
//! Record `i` gets sequence number `first + i`. Two-phase commit adds
//! transaction markers (type bytes `0x10` prepare, `0x11` commit, `0x12`
//! rollback, each with a length-prefixed transaction name): they are not
//! counted in `count`, take no sequence number and are never applied to a
//! memtable.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueType, TRAILER_LEN};
use crate::util::coding::{put_length_prefixed, Reader};

/// Bytes of the batch header.
pub const HEADER_LEN: usize = 12;
/// The longest length prefix of a key or value (a varint32).
const MAX_LENGTH_PREFIX: usize = 5;

/// A group of writes applied atomically: all of them or none survive a crash.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    /// The batch holds a transaction marker (`mark`).
    markers: bool,
    /// The first key or value added over its limit; `Db::write` refuses
    /// such a batch before anything is logged (its bytes would be wrong, or
    /// the memtable could not hold it).
    oversized: Option<Oversized>,
}

/// A key or value too long to be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Oversized {
    what: &'static str,
    len: usize,
    limit: usize,
}

/// Largest user key. Every place that stores a key length as a u32 holds
/// the internal key (user key + 8-byte trailer): the memtable's skiplist
/// node header, block entries, the WAL's varint32 length prefix (user key
/// only). So the user key may be at most `u32::MAX - 8` bytes.
pub const MAX_KEY_LEN: usize = u32::MAX as usize - TRAILER_LEN;

/// Largest value (its length is a u32 in the memtable and a varint32 in the
/// WAL and in block entries).
pub const MAX_VALUE_LEN: usize = u32::MAX as usize;

/// The key limit `WriteBatch` enforces: [`MAX_KEY_LEN`], lowered in the
/// crate's unit tests so that a key just over it is cheap to build.
#[cfg(not(test))]
pub(crate) const CHECKED_MAX_KEY_LEN: usize = MAX_KEY_LEN;
#[cfg(test)]
pub(crate) const CHECKED_MAX_KEY_LEN: usize = 1 << 16;

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
    /// A two-phase-commit marker naming a transaction (not applied).
    Marker(Marker, &'a [u8]),
}

/// What a transaction marker records (`docs/format/wal.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// The batch is the prepared transaction of this name: logged, not
    /// applied, until a commit or rollback marker of the same name.
    Prepare,
    /// The batch's records commit the prepared transaction of this name.
    Commit,
    /// The prepared transaction of this name is rolled back.
    Rollback,
}

impl Marker {
    /// Its type byte.
    pub const fn tag(self) -> u8 {
        match self {
            Marker::Prepare => 0x10,
            Marker::Commit => 0x11,
            Marker::Rollback => 0x12,
        }
    }

    fn from_tag(tag: u8) -> Option<Marker> {
        match tag {
            0x10 => Some(Marker::Prepare),
            0x11 => Some(Marker::Commit),
            0x12 => Some(Marker::Rollback),
            _ => None,
        }
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty batch with room for `bytes` of records without growing
    /// (see [`Self::put_bytes`] and [`Self::delete_bytes`]).
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN.saturating_add(bytes));
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            markers: false,
            oversized: None,
        }
    }

    /// The bytes a put of this key and value adds to a batch (an upper
    /// bound: length prefixes counted at their largest).
    pub fn put_bytes(key_len: usize, value_len: usize) -> usize {
        1 + 2 * MAX_LENGTH_PREFIX + key_len + value_len
    }

    /// The bytes a delete of this key adds to a batch (an upper bound).
    pub fn delete_bytes(key_len: usize) -> usize {
        1 + MAX_LENGTH_PREFIX + key_len
    }

    /// Adds a put.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.note_len("key", key.as_ref().len(), CHECKED_MAX_KEY_LEN);
        self.note_len("value", value.as_ref().len(), MAX_VALUE_LEN);
        self.set_count(self.count() + 1);
        // One growth for the record at most, not one per push.
        self.rep
            .reserve(Self::put_bytes(key.as_ref().len(), value.as_ref().len()));
        self.rep.push(ValueType::Value as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        put_length_prefixed(&mut self.rep, value.as_ref());
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.note_len("key", key.as_ref().len(), CHECKED_MAX_KEY_LEN);
        self.set_count(self.count() + 1);
        self.rep.reserve(Self::delete_bytes(key.as_ref().len()));
        self.rep.push(ValueType::Deletion as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
    }

    /// Adds a transaction marker (not counted, not applied).
    pub(crate) fn mark(&mut self, m: Marker, name: &[u8]) {
        self.markers = true;
        self.rep.push(m.tag());
        put_length_prefixed(&mut self.rep, name);
    }

    /// The name of the prepared transaction this batch is, when its first
    /// record is a prepare marker.
    pub fn prepared_name(&self) -> Option<&[u8]> {
        if !self.markers {
            return None;
        }
        match self.iter().next() {
            Some(Ok(BatchOp::Marker(Marker::Prepare, name))) => Some(name),
            _ => None,
        }
    }

    /// True when the batch holds a transaction marker.
    pub fn has_markers(&self) -> bool {
        self.markers
    }

    /// The names of the commit and rollback markers in the batch: the
    /// prepared transactions it decides.
    pub fn decided_names(&self) -> impl Iterator<Item = &[u8]> {
        self.iter().filter_map(|op| match op {
            Ok(BatchOp::Marker(Marker::Commit | Marker::Rollback, name)) if self.markers => {
                Some(name)
            }
            _ => None,
        })
    }

    /// True when the batch holds records or markers (something to log).
    pub(crate) fn has_content(&self) -> bool {
        self.rep.len() > HEADER_LEN
    }

    /// Remembers the first key or value over its limit.
    fn note_len(&mut self, what: &'static str, len: usize, limit: usize) {
        if len > limit && self.oversized.is_none() {
            self.oversized = Some(Oversized { what, len, limit });
        }
    }

    /// An error if a key or value is too long to be stored.
    pub(crate) fn check_sizes(&self) -> Result<()> {
        match self.oversized {
            Some(Oversized { what, len, limit }) => Err(Error::invalid(format!(
                "write batch holds a {what} of {len} bytes; the limit is {limit} bytes"
            ))),
            None => Ok(()),
        }
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        self.oversized = None;
        self.markers = false;
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    /// Number of records.
    pub fn count(&self) -> u32 {
        let h = self.header();
        u32::from_le_bytes([h[8], h[9], h[10], h[11]])
    }

    /// The header. `rep` always starts with it (`new`, `clear` and
    /// `from_data` make sure), so the fallback is never taken.
    fn header(&self) -> [u8; HEADER_LEN] {
        self.rep.first_chunk().copied().unwrap_or([0; HEADER_LEN])
    }

    /// The encoded records, after the header.
    fn records(&self) -> &[u8] {
        self.rep.get(HEADER_LEN..).unwrap_or_default()
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
        // Header bytes 8..12 (`rep` always holds the header).
        for (d, b) in self.rep.iter_mut().skip(8).zip(n.to_le_bytes()) {
            *d = b;
        }
    }

    /// The sequence number of the first record (set when the batch is written).
    pub fn sequence(&self) -> SeqNo {
        let h = self.header();
        u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]])
    }

    pub(crate) fn set_sequence(&mut self, seq: SeqNo) {
        // Header bytes 0..8.
        for (d, b) in self.rep.iter_mut().zip(seq.to_le_bytes()) {
            *d = b;
        }
    }

    /// The encoded form (the WAL payload).
    pub(crate) fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Appends every record of `other` to this batch.
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        if self.oversized.is_none() {
            self.oversized = other.oversized;
        }
        self.markers |= other.markers;
        self.set_count(self.count() + other.count());
        self.rep.extend_from_slice(other.records());
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
        let mut b = WriteBatch {
            rep: data.to_vec(),
            markers: false,
            oversized: None,
        };
        let mut n = 0u32;
        let mut markers = false;
        for op in b.iter() {
            let op = op.map_err(|what| Error::corruption(file, offset, what))?;
            if matches!(op, BatchOp::Marker(..)) {
                markers = true;
            } else {
                n += 1;
            }
        }
        b.markers = markers;
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
            r: Reader::new(self.records()),
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
            if let Some(m) = Marker::from_tag(tag) {
                return Ok(BatchOp::Marker(m, key));
            }
            match ValueType::from_u8(tag) {
                Some(ValueType::Value) => {
                    let v = self.r.length_prefixed().ok_or("truncated value")?;
                    Ok(BatchOp::Put(key, v))
                }
                Some(ValueType::Deletion) => Ok(BatchOp::Delete(key)),
                // Blob references live only in tables.
                Some(ValueType::BlobIndex) | None => Err("unknown record type"),
            }
        })();
        if item.is_err() {
            self.failed = true;
        }
        Some(item.map_err(|e| format!("{e} at byte {} of write batch", at + HEADER_LEN)))
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
    use std::path::Path;

    /// A batch sized up front encodes exactly as one grown from empty, and
    /// holds its records without reallocating.
    #[test]
    fn batch_with_capacity_encodes_the_same_without_growing() {
        let big = vec![7u8; 300];
        let ops: [(&[u8], Option<&[u8]>); 4] = [
            (b"k1", Some(b"v1")),
            (b"k2", None),
            (&big, Some(&big)),
            (b"", Some(b"")),
        ];
        let mut grown = WriteBatch::new();
        let need: usize = ops
            .iter()
            .map(|(k, v)| match v {
                Some(v) => WriteBatch::put_bytes(k.len(), v.len()),
                None => WriteBatch::delete_bytes(k.len()),
            })
            .sum();
        let mut sized = WriteBatch::with_capacity(need);
        let before = sized.rep.as_ptr();
        for (k, v) in ops {
            match v {
                Some(v) => {
                    grown.put(k, v);
                    sized.put(k, v);
                }
                None => {
                    grown.delete(k);
                    sized.delete(k);
                }
            }
        }
        assert_eq!(sized.data(), grown.data());
        assert_eq!(sized.count(), 4);
        assert_eq!(sized.rep.as_ptr(), before, "the sized batch reallocated");
    }

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
    fn transaction_markers_round_trip_uncounted() {
        let mut b = WriteBatch::new();
        b.mark(Marker::Prepare, b"xid-1");
        b.put(b"k", b"v");
        b.delete(b"d");
        assert_eq!(b.count(), 2);
        let d = WriteBatch::from_data(b.data(), Path::new("wal"), 0).unwrap();
        assert_eq!(d.count(), 2);
        assert!(d.has_markers());
        assert_eq!(d.prepared_name(), Some(&b"xid-1"[..]));
        assert_eq!(d.decided_names().count(), 0);

        let mut c = WriteBatch::new();
        c.put(b"a", b"1");
        let mut commit = WriteBatch::new();
        commit.mark(Marker::Commit, b"xid-1");
        commit.put(b"k", b"v");
        let mut rollback = WriteBatch::new();
        rollback.mark(Marker::Rollback, b"xid-2");
        // A group: plain batch, then a commit, then a rollback.
        c.append(&commit);
        c.append(&rollback);
        let d = WriteBatch::from_data(c.data(), Path::new("wal"), 0).unwrap();
        assert_eq!(d.count(), 2);
        assert_eq!(d.prepared_name(), None);
        let names: Vec<&[u8]> = d.decided_names().collect();
        assert_eq!(names, vec![&b"xid-1"[..], &b"xid-2"[..]]);
        // A marker counted as a record is a miscount.
        let mut bad = rollback.data().to_vec();
        bad[8] = 1;
        assert!(WriteBatch::from_data(&bad, Path::new("wal"), 0).is_err());
        assert!(!WriteBatch::new().has_content());
        assert!(rollback.has_content());
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

    /// Bytes in every `.log` file of `dir`.
    fn wal_bytes(fs: &std::sync::Arc<dyn crate::env::Fs>, dir: &Path) -> u64 {
        fs.list_dir(dir)
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".log"))
            .map(|n| fs.file_size(&dir.join(n)).unwrap())
            .sum()
    }

    #[test]
    fn key_one_byte_over_the_limit_is_invalid_argument_before_the_wal() {
        // The old limit was u32::MAX for keys too: a key of u32::MAX - 7
        // bytes passed, was logged, then the memtable panicked on its
        // internal key (user key + 8-byte trailer) not fitting a u32.
        assert_eq!(MAX_KEY_LEN as u64 + TRAILER_LEN as u64, u32::MAX as u64);
        let fs: std::sync::Arc<dyn crate::env::Fs> =
            std::sync::Arc::new(crate::env::mem::MemFs::new());
        let dir = Path::new("/db");
        let opts = crate::options::Options {
            fs: fs.clone(),
            ..Default::default()
        };
        let db = crate::Db::open(dir, opts).unwrap();
        let w = crate::WriteOptions::default();
        db.put(&w, b"a", b"1").unwrap();
        let logged = wal_bytes(&fs, dir);
        let long = vec![b'k'; CHECKED_MAX_KEY_LEN + 1];
        for e in [
            db.put(&w, &long, b"v").unwrap_err(),
            db.delete(&w, &long).unwrap_err(),
        ] {
            assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains(&format!(
                    "key of {} bytes; the limit is {CHECKED_MAX_KEY_LEN}",
                    CHECKED_MAX_KEY_LEN + 1
                )),
                "{msg}"
            );
        }
        let mut b = WriteBatch::new();
        b.put(b"ok", b"v");
        b.put(&long, b"v");
        assert!(matches!(
            db.write(&w, b).unwrap_err(),
            Error::InvalidArgument(_)
        ));
        assert_eq!(wal_bytes(&fs, dir), logged, "a refused batch was logged");
        // A key at the limit is accepted, stored and read back.
        let at = vec![b'k'; CHECKED_MAX_KEY_LEN];
        db.put(&w, &at, b"v").unwrap();
        assert_eq!(
            db.get(&crate::ReadOptions::default(), &at).unwrap(),
            Some(b"v".to_vec())
        );
        assert_eq!(db.get(&crate::ReadOptions::default(), b"ok").unwrap(), None);
        db.close().unwrap();
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
