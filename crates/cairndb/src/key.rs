//! Internal keys: a user key followed by an 8-byte trailer that packs the
//! sequence number and the value type (`docs/format/sstable.md`, "Internal
//! keys").
//!
//! Order: user key ascending (bytewise), then sequence number descending, then
//! type descending, so that for one user key the newest version comes first
//! and a lookup key `(k, s, MAX_TYPE)` lands on the newest version visible at
//! sequence `s`.

use std::cmp::Ordering;

/// Sequence numbers use the low 56 bits of the trailer.
pub type SeqNo = u64;

/// The largest sequence number that fits in a trailer.
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;

/// Bytes of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry records about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ValueType {
    /// A tombstone: the key was deleted at this sequence number.
    Deletion = 0,
    /// A value.
    Value = 1,
    /// A blob reference: the value lives in a blob file
    /// (`docs/format/blob.md`). Only tables hold entries of this type.
    BlobIndex = 2,
}

/// The type used in lookup keys: the highest type, so seeks land on the first
/// entry with sequence <= the lookup's.
pub const TYPE_FOR_SEEK: ValueType = ValueType::BlobIndex;

impl ValueType {
    /// Decodes the type byte of a trailer.
    #[inline]
    pub fn from_u8(b: u8) -> Option<ValueType> {
        match b {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            2 => Some(ValueType::BlobIndex),
            _ => None,
        }
    }
}

/// Packs a sequence number and a type into a trailer value.
#[inline]
pub fn pack_trailer(seq: SeqNo, t: ValueType) -> u64 {
    debug_assert!(seq <= MAX_SEQ);
    (seq << 8) | t as u64
}

/// Appends `user_key ++ trailer(seq, t)` to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, t: ValueType) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
}

/// Builds an internal key.
#[inline]
pub fn make_internal_key(user_key: &[u8], seq: SeqNo, t: ValueType) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, t);
    v
}

/// The user-key part of an internal key. Requires `ikey.len() >= 8`.
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len() - TRAILER_LEN]
}

/// The trailer of an internal key. Requires `ikey.len() >= 8`.
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    let n = ikey.len();
    let mut b = [0u8; 8];
    b.copy_from_slice(&ikey[n - TRAILER_LEN..]);
    u64::from_le_bytes(b)
}

/// A decoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// Sequence number of the write.
    pub seq: SeqNo,
    /// Value or deletion.
    pub vtype: ValueType,
}

/// Decodes an internal key; `None` when it is too short or its type byte is unknown.
#[inline]
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(ikey);
    let vtype = ValueType::from_u8((t & 0xff) as u8)?;
    Some(ParsedKey {
        user_key: user_key(ikey),
        seq: t >> 8,
        vtype,
    })
}

/// Compares two internal keys (see the module doc for the order).
/// Requires both to be at least 8 bytes long.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// Bytewise order (as `a.cmp(b)`), without a call into `memcmp` for short
/// slices: up to 32 shared bytes are compared as big-endian words, eight
/// at a time. Keys are short in nearly every workload, and this comparison
/// is on every step of every search and merge.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    if n > 32 {
        return a.cmp(b);
    }
    let (a8, b8) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let (ra, rb) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        let (x, y) = (word(x), word(y));
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ra.iter().zip(rb) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Eight bytes as a big-endian word (`c` is an 8-byte chunk).
#[inline(always)]
fn word(c: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(c);
    u64::from_be_bytes(w)
}

/// A lookup key for `user_key` as of sequence `seq`.
#[inline]
pub fn lookup_key(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    make_internal_key(user_key, seq, TYPE_FOR_SEEK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_bytes_is_bytewise_order() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![0xff],
            b"abcdefgh".to_vec(),
            b"abcdefgh\0".to_vec(),
            b"abcdefgi".to_vec(),
            b"abcdefghabcdefgh".to_vec(),
            b"abcdefghabcdefgg".to_vec(),
            b"abcdefghabcdefghabcdefghabcdefgh".to_vec(),
            b"abcdefghabcdefghabcdefghabcdefgh\x01".to_vec(),
            b"abcdefghabcdefghabcdefghabcdefgg\xff".to_vec(),
            vec![0x80; 40],
            vec![0x7f; 41],
            vec![0x80; 7],
            vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81],
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn compare_bytes_matches_slice_order(
            prefix in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            a in proptest::collection::vec(proptest::num::u8::ANY, 0..12),
            b in proptest::collection::vec(proptest::num::u8::ANY, 0..12),
        ) {
            let x = [prefix.as_slice(), a.as_slice()].concat();
            let y = [prefix.as_slice(), b.as_slice()].concat();
            proptest::prop_assert_eq!(compare_bytes(&x, &y), x.cmp(&y));
        }
    }

    #[test]
    fn order_newest_first_within_user_key() {
        let a1 = make_internal_key(b"a", 1, ValueType::Value);
        let a2 = make_internal_key(b"a", 2, ValueType::Value);
        let a2d = make_internal_key(b"a", 2, ValueType::Deletion);
        let b0 = make_internal_key(b"b", 0, ValueType::Value);
        let ab = make_internal_key(b"ab", 9, ValueType::Value);
        assert_eq!(compare_internal(&a2, &a1), Ordering::Less);
        assert_eq!(compare_internal(&a2, &a2d), Ordering::Less);
        assert_eq!(compare_internal(&a1, &ab), Ordering::Less);
        assert_eq!(compare_internal(&ab, &b0), Ordering::Less);
        // A lookup key at seq 1 sorts before (a,1) and after (a,2).
        let l = lookup_key(b"a", 1);
        assert_ne!(compare_internal(&l, &a1), Ordering::Greater);
        assert_eq!(compare_internal(&a2, &l), Ordering::Less);
    }

    #[test]
    fn parse_round_trip_and_rejects() {
        let k = make_internal_key(b"key", MAX_SEQ, ValueType::Deletion);
        let p = parse_internal_key(&k).unwrap();
        assert_eq!(p.user_key, b"key");
        assert_eq!(p.seq, MAX_SEQ);
        assert_eq!(p.vtype, ValueType::Deletion);
        assert!(parse_internal_key(b"short").is_none());
        let mut bad = k.clone();
        let n = bad.len();
        bad[n - 8] = 7; // unknown type
        assert!(parse_internal_key(&bad).is_none());
    }
}
