//! The user-facing iterator: user keys and values as of one sequence number.
//!
//! Built over a merging iterator of internal keys, it hides entries newer
//! than its sequence, versions shadowed by newer ones, and tombstones. It
//! follows LevelDB's DBIter: moving forward, the inner iterator sits on the
//! entry being returned; moving backward, the inner iterator sits *before*
//! all entries of the current user key and the key and value are copied into
//! `saved_key` / `saved_value`. With `prefix_same_as_start` the iterator
//! ends at the first key whose prefix differs from that of the seek target;
//! with bounds it ends at `iterate_upper_bound` / before `iterate_lower_bound`.
//!
//! The iterator pins what it reads (memtables, the version and so its files)
//! for as long as it lives.
//!
//! Blob references (entries of type `BlobIndex`, `docs/format/blob.md`) are
//! resolved lazily: `key()` and moves never read a blob file; the first
//! `value()` at a position reads the value once and keeps it until the next
//! move. A blob read that fails makes `value()` empty and `status()` the
//! error.

use std::cell::OnceCell;
use std::sync::Arc;

use super::InternalIterator;
use crate::blob::BlobCache;
use crate::error::{Error, Result};
use crate::key::{
    compare_bytes, make_internal_key, parse_internal_key, user_key, SeqNo, ValueType, TYPE_FOR_SEEK,
};
use crate::options::SliceTransform;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// An iterator over user keys in ascending order, as of a snapshot.
/// Obtained from [`crate::Db::iter`].
pub struct DbIterator {
    iter: Box<dyn InternalIterator>,
    seq: SeqNo,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    status: Option<Error>,
    extractor: Option<Arc<dyn SliceTransform>>,
    prefix_same_as_start: bool,
    prefix: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    lower: Option<Vec<u8>>,
    /// Keeps the memtables and version under `iter` alive.
    _pin: Box<dyn std::any::Any + Send>,
    /// In prefix mode: builds the inner iterator over only the sources that
    /// may hold a prefix (None: all sources), so that a prefix seek skips
    /// tables whose prefix filter rules the prefix out.
    rebuild: Option<Rebuild>,
    /// Whether `iter` is currently restricted to a prefix.
    restricted: bool,
    /// Reads blob references' values (None: a blob reference is an error).
    blobs: Option<Arc<BlobCache>>,
    /// Reverse: whether `saved_value` is a blob reference.
    saved_is_blob: bool,
    /// The resolved value of the current position's blob reference.
    blob_value: OnceCell<Vec<u8>>,
    /// The first failed blob read.
    blob_error: OnceCell<Error>,
    /// Reused for the internal key a `seek` builds (no allocation per seek).
    seek_key: Vec<u8>,
}

/// Builds an inner iterator restricted to a prefix (or over everything).
pub(crate) type Rebuild = Box<dyn Fn(Option<&[u8]>) -> Box<dyn InternalIterator> + Send>;

impl DbIterator {
    pub(crate) fn new(
        iter: Box<dyn InternalIterator>,
        seq: SeqNo,
        extractor: Option<Arc<dyn SliceTransform>>,
        opts: &crate::options::ReadOptions,
        pin: Box<dyn std::any::Any + Send>,
        rebuild: Option<Rebuild>,
        blobs: Option<Arc<BlobCache>>,
    ) -> DbIterator {
        DbIterator {
            iter,
            seq,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            status: None,
            prefix_same_as_start: opts.prefix_same_as_start && extractor.is_some(),
            extractor,
            prefix: None,
            upper: opts.iterate_upper_bound.clone(),
            lower: opts.iterate_lower_bound.clone(),
            _pin: pin,
            rebuild,
            restricted: false,
            blobs,
            saved_is_blob: false,
            blob_value: OnceCell::new(),
            blob_error: OnceCell::new(),
            seek_key: Vec::new(),
        }
    }

    /// Forgets the resolved blob value (the position is about to change).
    fn moved(&mut self) {
        self.blob_value.take();
    }

    fn resolve(&self, reference: &[u8]) -> Vec<u8> {
        let r = match &self.blobs {
            Some(b) => b.resolve(self.key(), reference),
            None => Err(Error::corruption(
                "<iterator>",
                0,
                "blob reference where no blob file can be read",
            )),
        };
        r.unwrap_or_else(|e| {
            let _ = self.blob_error.set(e);
            Vec::new()
        })
    }

    /// In prefix mode, points the inner iterator at the sources that may
    /// hold the current prefix (or at all of them when there is none).
    fn restrict_to_prefix(&mut self) {
        if !self.prefix_same_as_start {
            return;
        }
        let Some(rebuild) = &self.rebuild else { return };
        if self.prefix.is_none() && !self.restricted {
            return;
        }
        self.iter = rebuild(self.prefix.as_deref());
        self.restricted = self.prefix.is_some();
    }

    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => user_key(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value. Requires `valid()`. A value in a blob file is
    /// read on the first call at a position; if that read fails the value
    /// is empty and `status()` returns the error.
    pub fn value(&self) -> &[u8] {
        let (raw, is_blob) = match self.direction {
            Direction::Forward => {
                let k = self.iter.key();
                let blob = k.len() >= crate::key::TRAILER_LEN
                    && (crate::key::trailer(k) & 0xff) as u8 == ValueType::BlobIndex as u8;
                (self.iter.value(), blob)
            }
            Direction::Reverse => (self.saved_value.as_slice(), self.saved_is_blob),
        };
        if !is_blob {
            return raw;
        }
        self.blob_value.get_or_init(|| self.resolve(raw))
    }

    /// The first error met (a corrupted block, an I/O error, a failed blob
    /// read). An iterator that stops early because of an error says so here.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.status {
            return Err(e.clone());
        }
        if let Some(e) = self.blob_error.get() {
            return Err(e.clone());
        }
        self.iter.status()
    }

    fn set_prefix_from(&mut self, target: &[u8]) {
        self.prefix = None;
        if self.prefix_same_as_start {
            if let Some(x) = &self.extractor {
                if x.in_domain(target) {
                    self.prefix = Some(x.transform(target).to_vec());
                }
            }
        }
    }

    /// Ends iteration when the current key leaves the prefix or the bounds.
    fn check_limits(&mut self) {
        if !self.valid || (self.prefix.is_none() && self.upper.is_none() && self.lower.is_none()) {
            return;
        }
        let k = self.key();
        let out = self.prefix.as_deref().is_some_and(|p| !k.starts_with(p))
            || self.upper.as_deref().is_some_and(|u| k >= u)
            || self.lower.as_deref().is_some_and(|l| k < l);
        if out {
            self.valid = false;
        }
    }

    /// Replaces the iteration bounds (`iterate_lower_bound`,
    /// `iterate_upper_bound`). The iterator is then unpositioned: seek
    /// before reading. Reading several ranges through one iterator this
    /// way costs one seek each instead of a new iterator (and a new merge
    /// of every memtable and table) each.
    pub fn set_bounds(&mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) {
        self.moved();
        self.lower = lower;
        self.upper = upper;
        self.valid = false;
        self.saved_key.clear();
        self.saved_value.clear();
    }

    /// Positions on the first key.
    pub fn seek_to_first(&mut self) {
        self.moved();
        self.direction = Direction::Forward;
        self.saved_value.clear();
        self.prefix = None;
        self.restrict_to_prefix();
        match &self.lower {
            Some(l) => {
                let mut t = std::mem::take(&mut self.seek_key);
                t.clear();
                crate::key::append_internal_key(&mut t, l, self.seq, TYPE_FOR_SEEK);
                self.iter.seek(&t);
                self.seek_key = t;
            }
            None => self.iter.seek_to_first(),
        }
        if self.iter.valid() {
            self.find_next_user_entry(false);
        } else {
            self.valid = false;
        }
        self.check_limits();
    }

    /// Positions on the last key.
    pub fn seek_to_last(&mut self) {
        self.moved();
        self.direction = Direction::Reverse;
        self.saved_value.clear();
        self.prefix = None;
        self.restrict_to_prefix();
        match &self.upper {
            // The last entry strictly below the upper bound.
            Some(u) => {
                let mut t = std::mem::take(&mut self.seek_key);
                t.clear();
                crate::key::append_internal_key(&mut t, u, crate::key::MAX_SEQ, TYPE_FOR_SEEK);
                self.iter.seek(&t);
                self.seek_key = t;
                if self.iter.valid() {
                    self.iter.prev();
                } else {
                    self.iter.seek_to_last();
                }
            }
            None => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
        self.check_limits();
    }

    /// Positions on the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.moved();
        self.direction = Direction::Forward;
        self.saved_value.clear();
        self.set_prefix_from(target);
        self.restrict_to_prefix();
        let mut t = std::mem::take(&mut self.seek_key);
        t.clear();
        let from = match &self.lower {
            Some(l) if target < l.as_slice() => l.as_slice(),
            _ => target,
        };
        crate::key::append_internal_key(&mut t, from, self.seq, TYPE_FOR_SEEK);
        self.iter.seek(&t);
        self.seek_key = t;
        if self.iter.valid() {
            self.find_next_user_entry(false);
        } else {
            self.valid = false;
        }
        self.check_limits();
    }

    /// Positions on the last key <= `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.moved();
        self.direction = Direction::Reverse;
        self.saved_value.clear();
        self.set_prefix_from(target);
        self.restrict_to_prefix();
        match &self.upper {
            Some(u) if target >= u.as_slice() => {
                let u = u.clone();
                self.iter
                    .seek(&make_internal_key(&u, crate::key::MAX_SEQ, TYPE_FOR_SEEK));
                if self.iter.valid() {
                    self.iter.prev();
                } else {
                    self.iter.seek_to_last();
                }
            }
            // (target, 0, Deletion) sorts after every version of target.
            _ => self
                .iter
                .seek_for_prev(&make_internal_key(target, 0, ValueType::Deletion)),
        }
        self.find_prev_user_entry();
        self.check_limits();
    }

    /// Moves to the next key. Requires `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        self.moved();
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The inner iterator is just before the entries of key(): step
            // into them; saved_key holds the key to skip past.
            if !self.iter.valid() {
                self.iter.seek_to_first();
            } else {
                self.iter.next();
            }
            if !self.iter.valid() {
                self.valid = false;
                self.saved_key.clear();
                return;
            }
        } else {
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.iter.key()));
            self.iter.next();
            if !self.iter.valid() {
                self.valid = false;
                self.saved_key.clear();
                return;
            }
        }
        self.find_next_user_entry(true);
        self.check_limits();
    }

    /// Moves to the previous key. Requires `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        self.moved();
        if self.direction == Direction::Forward {
            // Scan back until the user key changes, then use the reverse scan.
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.iter.key()));
            loop {
                self.iter.prev();
                if !self.iter.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return;
                }
                if user_key(self.iter.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
        self.check_limits();
    }

    fn corrupt(&mut self) {
        self.valid = false;
        self.status.get_or_insert_with(|| {
            Error::corruption(
                "<iterator>",
                0,
                "internal key with an unknown type or shorter than 8 bytes",
            )
        });
    }

    /// Forward: moves to the first visible, non-deleted entry at or after the
    /// inner position, skipping user keys <= saved_key when `skipping`.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        loop {
            let Some(p) = parse_internal_key(self.iter.key()) else {
                self.corrupt();
                return;
            };
            if p.seq <= self.seq {
                match p.vtype {
                    ValueType::Deletion => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                    }
                    ValueType::Value | ValueType::BlobIndex => {
                        if !(skipping && compare_bytes(p.user_key, &self.saved_key).is_le()) {
                            self.valid = true;
                            self.saved_key.clear();
                            return;
                        }
                    }
                }
            }
            self.iter.next();
            if !self.iter.valid() {
                break;
            }
        }
        self.saved_key.clear();
        self.valid = false;
    }

    /// Reverse: collects the newest visible entry of the previous user key
    /// into saved_key/saved_value, leaving the inner iterator before it.
    fn find_prev_user_entry(&mut self) {
        let mut vtype = ValueType::Deletion;
        if self.iter.valid() {
            loop {
                let Some(p) = parse_internal_key(self.iter.key()) else {
                    self.corrupt();
                    return;
                };
                if p.seq <= self.seq {
                    if vtype != ValueType::Deletion && p.user_key < self.saved_key.as_slice() {
                        // A live value of a later key was found; stop before
                        // the entries of this earlier key.
                        break;
                    }
                    vtype = p.vtype;
                    match vtype {
                        ValueType::Deletion => {
                            self.saved_key.clear();
                            self.saved_value.clear();
                        }
                        ValueType::Value | ValueType::BlobIndex => {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(p.user_key);
                            self.saved_value.clear();
                            self.saved_value.extend_from_slice(self.iter.value());
                            self.saved_is_blob = vtype == ValueType::BlobIndex;
                        }
                    }
                }
                self.iter.prev();
                if !self.iter.valid() {
                    break;
                }
            }
        }
        if vtype == ValueType::Deletion {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
        } else {
            self.valid = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIterator;
    use crate::options::{FixedPrefix, ReadOptions};

    fn e(k: &str, seq: u64, t: ValueType, v: &str) -> (Vec<u8>, Vec<u8>) {
        (
            make_internal_key(k.as_bytes(), seq, t),
            v.as_bytes().to_vec(),
        )
    }

    fn it(seq: SeqNo, opts: &ReadOptions) -> DbIterator {
        use ValueType::*;
        let v = VecIterator::new(vec![
            e("a", 1, Value, "a1"),
            e("a", 5, Value, "a5"),
            e("b", 2, Value, "b2"),
            e("b", 4, Deletion, ""),
            e("c", 3, Value, "c3"),
            e("d", 6, Deletion, ""),
            e("d", 1, Value, "d1"),
            e("pa1", 2, Value, "x"),
            e("pa2", 2, Value, "y"),
            e("pb1", 2, Value, "z"),
        ]);
        DbIterator::new(
            Box::new(v),
            seq,
            Some(Arc::new(FixedPrefix::new(2))),
            opts,
            Box::new(()),
            None,
            None,
        )
    }

    fn collect_fwd(i: &mut DbIterator) -> Vec<String> {
        let mut out = Vec::new();
        i.seek_to_first();
        while i.valid() {
            out.push(format!(
                "{}={}",
                String::from_utf8_lossy(i.key()),
                String::from_utf8_lossy(i.value())
            ));
            i.next();
        }
        out
    }

    fn collect_back(i: &mut DbIterator) -> Vec<String> {
        let mut out = Vec::new();
        i.seek_to_last();
        while i.valid() {
            out.push(format!(
                "{}={}",
                String::from_utf8_lossy(i.key()),
                String::from_utf8_lossy(i.value())
            ));
            i.prev();
        }
        out.reverse();
        out
    }

    #[test]
    fn set_bounds_rebounds_one_iterator_over_several_ranges() {
        let o = ReadOptions {
            iterate_lower_bound: Some(b"a".to_vec()),
            iterate_upper_bound: Some(b"c".to_vec()),
            ..Default::default()
        };
        let mut i = it(100, &o);
        assert_eq!(collect_fwd(&mut i), ["a=a5"]);
        // A later range, then an earlier one, then one that ends inside
        // the prefix keys: each read forward and backward.
        i.set_bounds(Some(b"c".to_vec()), Some(b"pa2".to_vec()));
        assert!(!i.valid());
        assert_eq!(collect_fwd(&mut i), ["c=c3", "pa1=x"]);
        assert_eq!(collect_back(&mut i), ["c=c3", "pa1=x"]);
        i.set_bounds(Some(b"a".to_vec()), Some(b"b".to_vec()));
        assert_eq!(collect_back(&mut i), ["a=a5"]);
        assert_eq!(collect_fwd(&mut i), ["a=a5"]);
        i.set_bounds(Some(b"pa2".to_vec()), None);
        assert_eq!(collect_fwd(&mut i), ["pa2=y", "pb1=z"]);
        i.seek(b"a");
        assert_eq!(i.key(), b"pa2");
        i.set_bounds(None, None);
        assert_eq!(
            collect_fwd(&mut i),
            ["a=a5", "c=c3", "pa1=x", "pa2=y", "pb1=z"]
        );
    }

    #[test]
    fn visibility_by_sequence() {
        let o = ReadOptions::default();
        let latest = ["a=a5", "c=c3", "pa1=x", "pa2=y", "pb1=z"];
        assert_eq!(collect_fwd(&mut it(100, &o)), latest);
        assert_eq!(collect_back(&mut it(100, &o)), latest);
        let at3 = ["a=a1", "b=b2", "c=c3", "d=d1", "pa1=x", "pa2=y", "pb1=z"];
        assert_eq!(collect_fwd(&mut it(3, &o)), at3);
        assert_eq!(collect_back(&mut it(3, &o)), at3);
        assert!(collect_fwd(&mut it(0, &o)).is_empty());
    }

    #[test]
    fn zigzag_and_seek_for_prev() {
        let o = ReadOptions::default();
        let mut i = it(100, &o);
        i.seek(b"b");
        assert_eq!(i.key(), b"c");
        i.prev();
        assert_eq!(i.key(), b"a");
        i.next();
        assert_eq!(i.key(), b"c");
        i.next();
        assert_eq!(i.key(), b"pa1");
        i.seek_for_prev(b"d");
        assert_eq!(i.key(), b"c");
        i.seek_for_prev(b"a");
        assert_eq!((i.key(), i.value()), (&b"a"[..], &b"a5"[..]));
        i.prev();
        assert!(!i.valid());
    }

    #[test]
    fn prefix_same_as_start_and_bounds() {
        let o = ReadOptions {
            prefix_same_as_start: true,
            ..Default::default()
        };
        let mut i = it(100, &o);
        i.seek(b"pa");
        let mut got = Vec::new();
        while i.valid() {
            got.push(i.key().to_vec());
            i.next();
        }
        assert_eq!(got, vec![b"pa1".to_vec(), b"pa2".to_vec()]);
        let o = ReadOptions {
            iterate_lower_bound: Some(b"b".to_vec()),
            iterate_upper_bound: Some(b"pa2".to_vec()),
            ..Default::default()
        };
        assert_eq!(collect_fwd(&mut it(100, &o)), ["c=c3", "pa1=x"]);
        assert_eq!(collect_back(&mut it(100, &o)), ["c=c3", "pa1=x"]);
    }
}
