//! Memcomparable encodings of column values, for index keys: the byte
//! order of two encoded keys is the SQL order of their values
//! (`docs/format/sql-keys.md` gives every layout; MyRocks' `rdb_datadic.cc`
//! is the model).
//!
//! Invariants: for every type, `encode(a) < encode(b)` (bytewise) exactly
//! when `a < b` in the column's SQL order, and no encoding is a proper
//! prefix of another of the same type, so a composite key (the
//! concatenation of its columns' encodings) orders by its first column,
//! then its second, and so on. Decoders take a cursor and fail cleanly
//! (`None`) on truncated or malformed input. No locks, no I/O.

// Decoders of stored bytes: no indexing, unwrap or panic on input.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

/// Bytes of an index id at the start of every key.
pub const INDEX_ID_LEN: usize = 4;

/// Data bytes per group of the variable-length string encoding.
pub const GROUP_DATA: usize = 8;

/// The marker byte after a full group that is followed by another group.
pub const GROUP_CONTINUES: u8 = 9;

/// The NULL-flag byte of a nullable key column holding NULL.
pub const KEY_NULL: u8 = 0x00;
/// The NULL-flag byte of a nullable key column holding a value.
pub const KEY_NOT_NULL: u8 = 0x01;

/// Appends the 4-byte big-endian index id.
pub fn put_index_id(out: &mut Vec<u8>, id: u32) {
    out.extend_from_slice(&id.to_be_bytes());
}

/// The bounds `[lo, hi)` of every key of index `id`: its id, and the next.
pub(crate) fn index_bounds(id: u32) -> (Vec<u8>, Vec<u8>) {
    let mut lo = Vec::with_capacity(INDEX_ID_LEN);
    put_index_id(&mut lo, id);
    let mut hi = Vec::with_capacity(INDEX_ID_LEN);
    put_index_id(&mut hi, id.saturating_add(1));
    (lo, hi)
}

/// Reads the index id at the start of `key`.
pub fn index_id(key: &[u8]) -> Option<u32> {
    key.first_chunk::<INDEX_ID_LEN>()
        .map(|b| u32::from_be_bytes(*b))
}

/// Appends a signed integer in `width` bytes (1, 2, 3, 4 or 8): big-endian
/// with the sign bit flipped. The caller has checked that `v` fits.
pub fn put_int(out: &mut Vec<u8>, v: i64, width: usize) {
    let bits = (v as u64) ^ (1u64 << (width * 8 - 1));
    put_uint(out, bits, width);
}

/// Appends an unsigned integer in `width` bytes, big-endian.
pub fn put_uint(out: &mut Vec<u8>, v: u64, width: usize) {
    let be = v.to_be_bytes();
    out.extend_from_slice(be.get(8 - width..).unwrap_or(&be));
}

/// Reads what [`put_int`] wrote.
pub fn get_int(input: &mut &[u8], width: usize) -> Option<i64> {
    let bits = get_uint(input, width)? ^ (1u64 << (width * 8 - 1));
    // Sign-extend from `width` bytes.
    let shift = 64 - width * 8;
    Some(((bits << shift) as i64) >> shift)
}

/// Reads what [`put_uint`] wrote.
pub fn get_uint(input: &mut &[u8], width: usize) -> Option<u64> {
    if width == 0 || width > 8 {
        return None;
    }
    let (head, rest) = input.split_at_checked(width)?;
    let mut be = [0u8; 8];
    be.get_mut(8 - width..)?.copy_from_slice(head);
    *input = rest;
    Some(u64::from_be_bytes(be))
}

/// Appends a double: IEEE bits, all inverted for negatives, the sign bit
/// set for positives; -0.0 is written as 0.0 (they compare equal). NaN is
/// never stored (SQL has none).
pub fn put_f64(out: &mut Vec<u8>, v: f64) {
    let v = if v == 0.0 { 0.0 } else { v };
    let bits = v.to_bits();
    let k = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    out.extend_from_slice(&k.to_be_bytes());
}

/// Reads what [`put_f64`] wrote.
pub fn get_f64(input: &mut &[u8]) -> Option<f64> {
    let k = get_uint(input, 8)?;
    let bits = if k >> 63 == 1 { k & !(1 << 63) } else { !k };
    Some(f64::from_bits(bits))
}

/// Appends a byte string in groups of [`GROUP_DATA`] bytes, each followed
/// by a marker: [`GROUP_CONTINUES`] after a full group with more to come,
/// else the number of data bytes in the group (0..=8; the rest is zero
/// padding). An empty string is one group of padding with marker 0.
pub fn put_bytes(out: &mut Vec<u8>, data: &[u8]) {
    let mut chunks = data.chunks(GROUP_DATA).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[0u8; GROUP_DATA + 1]);
        return;
    }
    while let Some(c) = chunks.next() {
        out.extend_from_slice(c);
        out.extend(std::iter::repeat_n(0u8, GROUP_DATA - c.len()));
        let more = chunks.peek().is_some();
        out.push(if more { GROUP_CONTINUES } else { c.len() as u8 });
    }
}

/// Reads what [`put_bytes`] wrote, appending the data to `out`.
pub fn get_bytes(input: &mut &[u8], out: &mut Vec<u8>) -> Option<()> {
    loop {
        let (group, rest) = input.split_at_checked(GROUP_DATA + 1)?;
        let (data, marker) = group.split_at_checked(GROUP_DATA)?;
        let marker = *marker.first()?;
        *input = rest;
        match marker {
            GROUP_CONTINUES => out.extend_from_slice(data),
            n if (n as usize) <= GROUP_DATA => {
                let (used, pad) = data.split_at_checked(n as usize)?;
                if pad.iter().any(|&b| b != 0) {
                    return None;
                }
                out.extend_from_slice(used);
                return Some(());
            }
            _ => return None,
        }
    }
}

/// Skips one [`put_bytes`] value.
pub fn skip_bytes(input: &mut &[u8]) -> Option<()> {
    loop {
        let (group, rest) = input.split_at_checked(GROUP_DATA + 1)?;
        let marker = *group.last()?;
        *input = rest;
        if marker != GROUP_CONTINUES {
            return (marker as usize <= GROUP_DATA).then_some(());
        }
    }
}

/// The `utf8mb4_general_ci` weight string of `s` (PAD SPACE: trailing
/// spaces do not count): two big-endian bytes per character, letters
/// folded to upper case and Latin-1 accented letters to their base letter,
/// characters beyond U+FFFF weighted as U+FFFD. Invalid UTF-8 bytes weigh
/// as U+FFFD each.
pub fn general_ci_weights(s: &[u8], out: &mut Vec<u8>) {
    let mut end = s.len();
    while end > 0 && s.get(end - 1) == Some(&b' ') {
        end -= 1;
    }
    let s = s.get(..end).unwrap_or_default();
    if s.is_ascii() {
        // An ASCII character's weight is its upper case: 0, then the byte.
        out.reserve(2 * s.len());
        for &b in s {
            out.extend_from_slice(&[0, b.to_ascii_uppercase()]);
        }
        return;
    }
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            out.extend_from_slice(&weight(c).to_be_bytes());
        }
        for _ in chunk.invalid() {
            out.extend_from_slice(&0xFFFDu16.to_be_bytes());
        }
    }
}

/// One character's `utf8mb4_general_ci` weight.
fn weight(c: char) -> u16 {
    let cp = c as u32;
    if cp > 0xFFFF {
        return 0xFFFD;
    }
    if cp < 0x80 {
        return (c.to_ascii_uppercase()) as u16;
    }
    if (0xC0..=0xFF).contains(&cp) {
        return latin1_base(cp);
    }
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) if (u as u32) <= 0xFFFF => u as u16,
        _ => cp as u16,
    }
}

/// Latin-1 Supplement letters U+00C0..=U+00FF folded to the weight of
/// their base letter, as MySQL's general collation does.
fn latin1_base(cp: u32) -> u16 {
    let b = match cp {
        0xC0..=0xC5 | 0xE0..=0xE5 => 'A',
        0xC7 | 0xE7 => 'C',
        0xC8..=0xCB | 0xE8..=0xEB => 'E',
        0xCC..=0xCF | 0xEC..=0xEF => 'I',
        0xD1 | 0xF1 => 'N',
        0xD2..=0xD6 | 0xD8 | 0xF2..=0xF6 | 0xF8 => 'O',
        0xD9..=0xDC | 0xF9..=0xFC => 'U',
        0xDD | 0xFD | 0xFF => 'Y',
        // Æ, Ð, Þ, ß, ×, ÷ and their lower-case forms keep their own
        // (upper-case) weights.
        0xE6 => return 0xC6,
        0xF0 => return 0xD0,
        0xFE => return 0xDE,
        _ => return cp as u16,
    };
    b as u16
}

/// Compares two strings under `utf8mb4_general_ci`: trailing spaces
/// dropped, then weight by weight, a string before its own extensions.
/// This is the order of the index keys (`general_ci_weights`), so a
/// range read and a full scan filtered by this comparison agree. It
/// differs from MariaDB's PAD SPACE order only for strings that extend
/// another by characters below the space (MariaDB: `'ab\0' < 'ab'`).
///
/// Allocates nothing: ORDER BY and DISTINCT on text columns call it for
/// every comparison. The common ASCII prefix compares by upper-cased
/// bytes (the weight of an ASCII character is its upper case) up to the
/// first difference, where most comparisons end.
pub fn general_ci_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (a, b) = (trim_trailing_spaces(a), trim_trailing_spaces(b));
    let mut i = 0;
    for (&x, &y) in a.iter().zip(b) {
        if !x.is_ascii() || !y.is_ascii() {
            break;
        }
        if x != y {
            let (ux, uy) = (x.to_ascii_uppercase(), y.to_ascii_uppercase());
            if ux != uy {
                return ux.cmp(&uy);
            }
        }
        i += 1;
    }
    // Byte `i` starts a character on both sides (every byte before it is
    // ASCII): the rest compares weight by weight.
    let (ra, rb) = (
        a.get(i..).unwrap_or_default(),
        b.get(i..).unwrap_or_default(),
    );
    general_ci_weight_iter(ra).cmp(general_ci_weight_iter(rb))
}

fn trim_trailing_spaces(s: &[u8]) -> &[u8] {
    let mut end = s.len();
    while end > 0 && s.get(end - 1) == Some(&b' ') {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// The weights [`general_ci_weights`] writes for `s` (already trimmed),
/// one at a time.
fn general_ci_weight_iter(s: &[u8]) -> impl Iterator<Item = u16> + '_ {
    s.utf8_chunks().flat_map(|chunk| {
        chunk
            .valid()
            .chars()
            .map(weight)
            .chain(chunk.invalid().iter().map(|_| 0xFFFDu16))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The model: the weight strings (the index keys' order).
    fn weights_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        let (mut wa, mut wb) = (Vec::new(), Vec::new());
        general_ci_weights(a, &mut wa);
        general_ci_weights(b, &mut wb);
        wa.cmp(&wb)
    }

    #[test]
    fn general_ci_cmp_orders_as_the_weight_strings_without_allocating() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"abc", b"ABC"),
            (b"abc  ", b"ABC"),
            (b"ab", b"abc"),
            (b"a\xc3\xa9", b"AE"),
            ("\u{e9}".as_bytes(), b"e"),
            ("\u{e9}".as_bytes(), b"E"),
            (b"\xff", b"z"),
            ("\u{1F600}".as_bytes(), b"a"),
            (b"_", b"a"),
            (b"Z", b"a"),
            (b"ab\0", b"ab"),
            (b"ab\t", b"ab  "),
            (b"ab  x", b"ab"),
            ("ab\u{e9}\0".as_bytes(), "ab\u{c9}".as_bytes()),
        ];
        for (a, b) in cases {
            assert_eq!(general_ci_cmp(a, b), weights_cmp(a, b), "{a:?} vs {b:?}");
            assert_eq!(general_ci_cmp(b, a), weights_cmp(b, a), "{b:?} vs {a:?}");
        }
    }

    proptest! {
        #[test]
        fn general_ci_cmp_matches_weight_strings(
            a in proptest::collection::vec(any::<u8>(), 0..12),
            b in proptest::collection::vec(any::<u8>(), 0..12),
            sa in "[ a-zA-Z\u{e0}-\u{ff}\u{100}-\u{17f}]{0,8}",
            sb in "[ a-zA-Z\u{e0}-\u{ff}\u{100}-\u{17f}]{0,8}",
        ) {
            prop_assert_eq!(general_ci_cmp(&a, &b), weights_cmp(&a, &b));
            prop_assert_eq!(
                general_ci_cmp(sa.as_bytes(), sb.as_bytes()),
                weights_cmp(sa.as_bytes(), sb.as_bytes())
            );
        }
    }

    fn enc_int(v: i64, w: usize) -> Vec<u8> {
        let mut o = Vec::new();
        put_int(&mut o, v, w);
        o
    }

    fn enc_bytes(v: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        put_bytes(&mut o, v);
        o
    }

    fn enc_f64(v: f64) -> Vec<u8> {
        let mut o = Vec::new();
        put_f64(&mut o, v);
        o
    }

    proptest! {
        #[test]
        fn int_order_and_round_trip(a in any::<i64>(), b in any::<i64>()) {
            prop_assert_eq!(a.cmp(&b), enc_int(a, 8).cmp(&enc_int(b, 8)));
            let (a4, b4) = (a as i32 as i64, b as i32 as i64);
            prop_assert_eq!(a4.cmp(&b4), enc_int(a4, 4).cmp(&enc_int(b4, 4)));
            let (a3, b3) = (a % (1 << 23), b % (1 << 23));
            prop_assert_eq!(a3.cmp(&b3), enc_int(a3, 3).cmp(&enc_int(b3, 3)));
            for (v, w) in [(a, 8), (a4, 4), (a3, 3), (a as i8 as i64, 1), (a as i16 as i64, 2)] {
                let e = enc_int(v, w);
                prop_assert_eq!(e.len(), w);
                prop_assert_eq!(get_int(&mut e.as_slice(), w), Some(v));
            }
        }

        #[test]
        fn double_order_and_round_trip(a in any::<f64>(), b in any::<f64>()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            prop_assert_eq!(a.partial_cmp(&b).unwrap(), enc_f64(a).cmp(&enc_f64(b)));
            let back = get_f64(&mut enc_f64(a).as_slice()).unwrap();
            prop_assert!(back == a);
        }

        #[test]
        fn bytes_order_and_round_trip(a in proptest::collection::vec(any::<u8>(), 0..40),
                                      b in proptest::collection::vec(any::<u8>(), 0..40),
                                      tail in any::<i64>()) {
            prop_assert_eq!(a.cmp(&b), enc_bytes(&a).cmp(&enc_bytes(&b)));
            // As the first column of a composite key, followed by another.
            let (mut ka, mut kb) = (enc_bytes(&a), enc_bytes(&b));
            put_int(&mut ka, tail, 8);
            put_int(&mut kb, tail.wrapping_add(1), 8);
            if a != b {
                prop_assert_eq!(a.cmp(&b), ka.cmp(&kb));
            }
            let e = enc_bytes(&a);
            let mut out = Vec::new();
            let mut cur = e.as_slice();
            prop_assert!(get_bytes(&mut cur, &mut out).is_some());
            prop_assert!(cur.is_empty());
            prop_assert_eq!(&out, &a);
            let mut cur = e.as_slice();
            prop_assert!(skip_bytes(&mut cur).is_some());
            prop_assert!(cur.is_empty());
        }

        #[test]
        fn decoders_never_panic_on_garbage(g in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut out = Vec::new();
            let _ = get_bytes(&mut g.as_slice(), &mut out);
            let _ = skip_bytes(&mut g.as_slice());
            let _ = get_int(&mut g.as_slice(), 3);
            let _ = get_uint(&mut g.as_slice(), 9);
            let _ = get_f64(&mut g.as_slice());
            let _ = index_id(&g);
        }
    }

    #[test]
    fn general_ci_folds_case_accents_and_trailing_spaces() {
        use std::cmp::Ordering::*;
        assert_eq!(general_ci_cmp(b"abc", b"ABC"), Equal);
        assert_eq!(general_ci_cmp(b"abc", b"abc   "), Equal);
        assert_eq!(general_ci_cmp("caf\u{e9}".as_bytes(), b"CAFE"), Equal);
        assert_eq!(general_ci_cmp(b"abc", b"abd"), Less);
        assert_eq!(general_ci_cmp(b"ab", b"abc"), Less);
        assert_eq!(general_ci_cmp(b"a b", b"ab"), Less);
        assert_eq!(
            general_ci_cmp("\u{1F600}".as_bytes(), "\u{1F601}".as_bytes()),
            Equal
        );
    }

    #[test]
    fn malformed_group_markers_are_rejected() {
        let mut e = enc_bytes(b"abc");
        e[8] = 10;
        assert!(get_bytes(&mut e.as_slice(), &mut Vec::new()).is_none());
        let mut e = enc_bytes(b"abc");
        e[5] = 1; // non-zero padding
        assert!(get_bytes(&mut e.as_slice(), &mut Vec::new()).is_none());
        assert!(get_bytes(&mut &enc_bytes(b"abc")[..8], &mut Vec::new()).is_none());
    }
}
