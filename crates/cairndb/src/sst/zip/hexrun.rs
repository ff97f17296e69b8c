//! The hex-run filter of zip format version 4 (`docs/format/ziptable.md`,
//! "Hex runs"): long runs of hexadecimal digits in stored values (digests,
//! ids, checksums) are taken out of the text that zstd compresses and kept
//! as packed nibbles, two digits a byte, after it.
//!
//! Why: zstd codes literals with one Huffman table per block, and digits
//! mixed into text get 5-6 bits each where they carry 4. On Debian's
//! package rows (three hex digests a row) the filter made the groups 13%
//! smaller; the packed digits go in a block of their own, where repeats of
//! a digest within a group are still found.
//!
//! Encoding (with the table's escape byte `E`): `E 0x00` is a literal `E`;
//! `E n` (n in 1..=127) a run of `n` digits from `0-9a-f`; `E (0x80 | n)` a
//! run of `n` digits from `0-9A-F`; `E 0x80` is invalid. A run's digits are
//! the next `ceil(n / 2)` packed bytes, high nibble first; an odd run's
//! last low nibble is 0. Every other byte stands for itself.
//!
//! Pure functions over byte slices: no state, no locks. Decoding never
//! panics on its input; a malformed filtered text is an `Err` describing it.

// Decoders of file bytes: no indexing, unwrap or panic on input.
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

/// Writers pack runs of at least this many digits (`ziptable.md`, "Hex
/// runs"). Shorter runs (years, sizes, version numbers) save nothing once
/// the two escape bytes are paid; 12 to 32 gave the same bytes on Debian's
/// rows.
pub const MIN_HEX_RUN: usize = 16;

/// Digits a single escape may stand for (`ziptable.md`).
pub const MAX_RUN: usize = 127;

/// Writers cut longer runs into pieces of this many digits: even, so no
/// piece but the last leaves a nibble unused.
const CHUNK: usize = 126;

/// Upper-case run flag of the byte after the escape.
const UPPER: u8 = 0x80;

const LOWER_DIGITS: &[u8; 16] = b"0123456789abcdef";
const UPPER_DIGITS: &[u8; 16] = b"0123456789ABCDEF";

/// Per packed byte, its two digits in lower and in upper case.
static LOWER_PAIRS: [[u8; 2]; 256] = pairs(LOWER_DIGITS);
static UPPER_PAIRS: [[u8; 2]; 256] = pairs(UPPER_DIGITS);

#[expect(
    clippy::indexing_slicing,
    reason = "evaluated at compile time: an index out of bounds fails the build"
)]
const fn pairs(digits: &[u8; 16]) -> [[u8; 2]; 256] {
    let mut t = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [digits[b >> 4], digits[b & 15]];
        b += 1;
    }
    t
}

/// Per byte: its class in the high nibble (1 for `0-9`, 2 for `a-f`, 4 for
/// `A-F`, 0 otherwise) and its digit value in the low nibble.
#[expect(
    clippy::indexing_slicing,
    reason = "evaluated at compile time: an index out of bounds fails the build"
)]
static DIGIT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_digit() {
            0x10 | (c - b'0')
        } else if c >= b'a' && c <= b'f' {
            0x20 | (c - b'a' + 10)
        } else if c >= b'A' && c <= b'F' {
            0x40 | (c - b'A' + 10)
        } else {
            0
        };
        b += 1;
    }
    t
};

/// Value of a digit (0 for a byte that is not one).
fn nibble(c: u8) -> u8 {
    DIGIT.get(c as usize).map_or(0, |d| d & 15)
}

/// Class bits of a byte (see [`DIGIT`]).
fn class(c: u8) -> u8 {
    DIGIT.get(c as usize).map_or(0, |d| d >> 4)
}

/// Length of the run at the start of `s` whose bytes all have a class in
/// `mask`.
fn run_len(s: &[u8], mask: u8) -> usize {
    s.iter()
        .position(|&c| class(c) & mask == 0)
        .unwrap_or(s.len())
}

/// Digits of `src` that a writer would pack: the bytes of its runs of at
/// least [`MIN_HEX_RUN`] digits (what deciding whether to filter a table
/// counts).
pub fn packable_digits(src: &[u8]) -> usize {
    let mut n = 0;
    scan(src, |item| {
        if let Item::Run { digits, .. } = item {
            n += digits.len();
        }
    });
    n
}

enum Item<'a> {
    /// Bytes that stand for themselves (may contain the escape byte).
    Plain(&'a [u8]),
    /// A run of digits, all of one case.
    Run { digits: &'a [u8], upper: bool },
}

/// Splits `src` into plain spans and runs of at least `MIN_HEX_RUN` digits.
fn scan<'a>(src: &'a [u8], mut f: impl FnMut(Item<'a>)) {
    let mut plain_from = 0;
    let mut i = 0;
    while i < src.len() {
        let rest = src.get(i..).unwrap_or_default();
        let c = rest.first().copied().unwrap_or(0);
        if class(c) == 0 {
            // Skip to the next digit or letter a-f/A-F.
            i += rest
                .iter()
                .position(|&c| class(c) != 0)
                .unwrap_or(rest.len());
            continue;
        }
        let lower = run_len(rest, 1 | 2);
        let upper = run_len(rest, 1 | 4);
        let (len, is_upper) = if upper > lower {
            (upper, true)
        } else {
            (lower, false)
        };
        if len >= MIN_HEX_RUN {
            if plain_from < i {
                f(Item::Plain(src.get(plain_from..i).unwrap_or_default()));
            }
            f(Item::Run {
                digits: rest.get(..len).unwrap_or_default(),
                upper: is_upper,
            });
            i += len;
            plain_from = i;
        } else {
            // No position inside both runs starts a run of MIN_HEX_RUN: its
            // runs are suffixes of these.
            i += lower.min(upper).max(1);
        }
    }
    if plain_from < src.len() {
        f(Item::Plain(src.get(plain_from..).unwrap_or_default()));
    }
}

/// Appends the filtered form of `src` to `text` and its packed digits to
/// `packed`, with escape byte `esc`.
pub fn filter(src: &[u8], esc: u8, text: &mut Vec<u8>, packed: &mut Vec<u8>) {
    scan(src, |item| match item {
        Item::Plain(p) => {
            let mut rest = p;
            while let Some(at) = memchr::memchr(esc, rest) {
                text.extend_from_slice(rest.get(..=at).unwrap_or_default());
                text.push(0);
                rest = rest.get(at + 1..).unwrap_or_default();
            }
            text.extend_from_slice(rest);
        }
        Item::Run { digits, upper } => {
            for piece in digits.chunks(CHUNK) {
                // piece.len() <= CHUNK < 128.
                text.push(esc);
                text.push(piece.len() as u8 | if upper { UPPER } else { 0 });
                for pair in piece.chunks(2) {
                    let hi = pair.first().map_or(0, |&c| nibble(c));
                    let lo = pair.get(1).map_or(0, |&c| nibble(c));
                    packed.push(hi << 4 | lo);
                }
            }
        }
    });
}

/// Appends the expansion of filtered `text` with its `packed` digits to
/// `out`, which must come to exactly `len` bytes. `Err` says what is
/// malformed: an escape at the end, the invalid escape `E 0x80`, too few or
/// too many packed bytes, or an expansion longer or shorter than `len`.
/// Reserve `len` first to append without reallocating.
pub fn unfilter(
    text: &[u8],
    packed: &[u8],
    esc: u8,
    out: &mut Vec<u8>,
    len: usize,
) -> Result<(), String> {
    let (mut r, mut p) = (0usize, 0usize);
    let mut left = len;
    let mut take = |n: usize| -> Result<(), String> {
        left = left
            .checked_sub(n)
            .ok_or_else(|| "hex runs expand past the group's record lengths".to_string())?;
        Ok(())
    };
    while r < text.len() {
        let rest = text.get(r..).unwrap_or_default();
        let span = memchr::memchr(esc, rest).unwrap_or(rest.len());
        take(span)?;
        out.extend_from_slice(rest.get(..span).unwrap_or_default());
        r += span;
        if r >= text.len() {
            break;
        }
        let Some(&b) = text.get(r + 1) else {
            return Err(format!("hex run escape at the end of the text (byte {r})"));
        };
        r += 2;
        if b == 0 {
            take(1)?;
            out.push(esc);
            continue;
        }
        if b == UPPER {
            return Err(format!("invalid hex run escape at byte {}", r - 2));
        }
        let n = (b & !UPPER) as usize;
        let digits = if b & UPPER != 0 {
            &UPPER_PAIRS
        } else {
            &LOWER_PAIRS
        };
        let src = packed
            .get(p..p + n.div_ceil(2))
            .ok_or_else(|| format!("hex run at byte {} is past the packed digits", r - 2))?;
        p += n.div_ceil(2);
        take(n)?;
        // A run is at most 127 digits: zero-filling them first costs less
        // than growing the vector two bytes at a time.
        let at = out.len();
        out.resize(at + n, 0);
        let dst = out.get_mut(at..).unwrap_or_default();
        let mut pairs = dst.chunks_exact_mut(2);
        for (pair, &byte) in (&mut pairs).zip(src) {
            pair.copy_from_slice(digits.get(byte as usize).unwrap_or(&[b'0'; 2]));
        }
        if let ([d], Some(&byte)) = (pairs.into_remainder(), src.last()) {
            *d = digits.get(byte as usize).map_or(b'0', |p| p[0]);
        }
    }
    if left != 0 {
        return Err(format!(
            "hex runs expand to {} bytes, the group's record lengths say {len}",
            len - left
        ));
    }
    if p != packed.len() {
        return Err(format!(
            "{} packed digit bytes left over after the hex runs",
            packed.len() - p
        ));
    }
    Ok(())
}

/// Appends bytes `[skip, skip + len)` of the expansion of filtered `text`
/// with its `packed` digits to `out`: one record of a group, for a point
/// read. The rest is walked, not expanded (a scan for the escape byte, and
/// the runs' lengths), and checked as [`unfilter`] checks it: `Err` says
/// what is malformed, or that the whole expansion is not `total` bytes
/// (`skip + len <= total` is the caller's to check).
pub fn unfilter_range(
    text: &[u8],
    packed: &[u8],
    esc: u8,
    (skip, len): (usize, usize),
    total: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let end = skip.saturating_add(len);
    // `pos`: expanded bytes before text byte `r`; `p`: packed bytes used.
    let (mut r, mut p, mut pos) = (0usize, 0usize, 0usize);
    while r < text.len() {
        let rest = text.get(r..).unwrap_or_default();
        let span = memchr::memchr(esc, rest).unwrap_or(rest.len());
        // The window's part of the plain span [pos, pos + span).
        let (a, b) = (skip.max(pos), end.min(pos + span));
        if a < b {
            out.extend_from_slice(rest.get(a - pos..b - pos).unwrap_or_default());
        }
        pos += span;
        r += span;
        if r >= text.len() {
            break;
        }
        let Some(&e) = text.get(r + 1) else {
            return Err(format!("hex run escape at the end of the text (byte {r})"));
        };
        r += 2;
        if e == 0 {
            if (skip..end).contains(&pos) {
                out.push(esc);
            }
            pos += 1;
            continue;
        }
        if e == UPPER {
            return Err(format!("invalid hex run escape at byte {}", r - 2));
        }
        let n = (e & !UPPER) as usize;
        let src = packed
            .get(p..p + n.div_ceil(2))
            .ok_or_else(|| format!("hex run at byte {} is past the packed digits", r - 2))?;
        p += n.div_ceil(2);
        let (a, b) = (skip.max(pos), end.min(pos + n));
        if a < b {
            let digits = if e & UPPER != 0 {
                UPPER_DIGITS
            } else {
                LOWER_DIGITS
            };
            for k in a - pos..b - pos {
                let byte = src.get(k / 2).copied().unwrap_or(0);
                let nib = if k % 2 == 0 { byte >> 4 } else { byte & 15 };
                out.push(digits.get(nib as usize).copied().unwrap_or(b'0'));
            }
        }
        pos += n;
    }
    if pos != total {
        return Err(format!(
            "hex runs expand to {pos} bytes, the group's record lengths say {total}"
        ));
    }
    if p != packed.len() {
        return Err(format!(
            "{} packed digit bytes left over after the hex runs",
            packed.len() - p
        ));
    }
    Ok(())
}

/// Largest expansion of `text_len` filtered bytes with `packed_len` packed
/// bytes: a bound checked before allocating for a decoded group.
pub fn max_expansion(text_len: usize, packed_len: usize) -> usize {
    text_len.saturating_add(packed_len.saturating_mul(2))
}

/// The escape byte for a table whose sampled values are `sample`: the
/// least frequent byte (the highest of equals), so escaping costs least.
pub fn choose_escape(sample: &[u8]) -> u8 {
    let mut counts = [0u64; 256];
    for &b in sample {
        if let Some(c) = counts.get_mut(b as usize) {
            *c += 1;
        }
    }
    // min_by_key keeps the first of equals: iterate from the top.
    counts
        .iter()
        .enumerate()
        .rev()
        .min_by_key(|&(_, &c)| c)
        .map_or(255, |(b, _)| b as u8)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(src: &[u8], esc: u8) -> (Vec<u8>, Vec<u8>) {
        let (mut text, mut packed) = (Vec::new(), Vec::new());
        filter(src, esc, &mut text, &mut packed);
        let mut out = Vec::new();
        unfilter(&text, &packed, esc, &mut out, src.len()).unwrap();
        assert_eq!(out, src);
        (text, packed)
    }

    #[test]
    fn digests_are_packed_and_text_stays() {
        let src = b"MD5sum: 0123456789abcdef0123456789abcdef\tSize: 12345\tSHA: 0123456789ABCDEF0123456789ABCDEF0";
        let (text, packed) = round_trip(src, 0xff);
        assert_eq!(
            text,
            b"MD5sum: \xff\x20\tSize: 12345\tSHA: \xff\xa1".to_vec()
        );
        assert_eq!(packed.len(), 16 + 17);
        assert_eq!(packed[..2], [0x01, 0x23]);
        assert_eq!(packed[32], 0x00, "an odd run's last nibble is 0");
    }

    #[test]
    fn short_runs_and_escape_bytes_stand_for_themselves() {
        let src = b"2024-11-27 abcdef 123456789012345 \xff\xff x";
        let (text, packed) = round_trip(src, 0xff);
        assert!(packed.is_empty());
        assert_eq!(text.len(), src.len() + 2);
    }

    #[test]
    fn long_runs_are_cut_into_pieces() {
        let src: Vec<u8> = (0..1000).map(|i| LOWER_DIGITS[i * 7 % 16]).collect();
        let (text, packed) = round_trip(&src, 0);
        assert_eq!(text.len(), 2 * 1000usize.div_ceil(CHUNK));
        assert_eq!(packed.len(), 500);
    }

    #[test]
    fn a_run_of_the_other_case_after_digits_is_found() {
        // Lower-case letters, then digits that continue into an
        // upper-case run: the upper-case run starting inside is packed.
        let mut src = b"abc".to_vec();
        src.extend_from_slice(b"0123456789ABCDEF0123");
        let (text, packed) = round_trip(&src, 0xfe);
        assert!(!packed.is_empty(), "{text:?}");
    }

    #[test]
    fn malformed_text_is_an_error() {
        assert!(unfilter(b"ab\xff", &[], 0xff, &mut Vec::new(), 3).is_err());
        assert!(unfilter(b"\xff\x80", &[], 0xff, &mut Vec::new(), 0).is_err());
        assert!(unfilter(b"\xff\x04", &[0x12], 0xff, &mut Vec::new(), 4).is_err());
        assert!(unfilter(b"\xff\x02", &[0x12, 0x34], 0xff, &mut Vec::new(), 2).is_err());
        assert!(unfilter(b"\xff\x04", &[0x12, 0x34], 0xff, &mut Vec::new(), 3).is_err());
        assert!(unfilter(b"abc", &[], 0xff, &mut Vec::new(), 4).is_err());
        let mut ok = Vec::new();
        unfilter(b"\xff\x04", &[0x12, 0x34], 0xff, &mut ok, 4).unwrap();
        assert_eq!(ok, b"1234");
    }

    #[test]
    fn malformed_text_around_a_range_is_an_error() {
        let range = |text: &[u8], packed: &[u8], skip, len, total| {
            unfilter_range(text, packed, 0xff, (skip, len), total, &mut Vec::new())
        };
        // An escape at the end, after the range.
        assert!(range(b"ab\xff", &[], 0, 1, 3).is_err());
        // The invalid escape, before and after the range.
        assert!(range(b"\xff\x80abc", &[], 1, 1, 3).is_err());
        assert!(range(b"abc\xff\x80", &[], 0, 1, 3).is_err());
        // A run past the packed digits, after the range.
        assert!(range(b"ab\xff\x04", &[0x12], 0, 2, 6).is_err());
        // Packed digits left over, or a total the text does not come to.
        assert!(range(b"ab\xff\x02", &[0x12, 0x34], 0, 2, 4).is_err());
        assert!(range(b"abc", &[], 0, 2, 4).is_err());
        // Well-formed: a range starting inside a run, a literal escape.
        let mut ok = Vec::new();
        unfilter_range(
            b"x\xff\x05\xff\x00y",
            &[0x12, 0x34, 0x50],
            0xff,
            (3, 5),
            8,
            &mut ok,
        )
        .unwrap();
        assert_eq!(ok, b"345\xffy");
    }

    #[test]
    fn the_escape_is_the_rarest_byte() {
        let sample: Vec<u8> = (0..=255u8).chain(0..=254u8).collect();
        assert_eq!(choose_escape(&sample), 255);
        assert_eq!(choose_escape(b""), 255);
        let text: Vec<u8> = (0..=255u8).filter(|&b| b != 7).collect();
        assert_eq!(choose_escape(&text), 7);
    }

    /// Text that is mostly hex digits of both cases, with any byte mixed in.
    fn hex_text() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                4 => proptest::sample::select(b"0123456789abcdefABCDEF".to_vec()),
                1 => any::<u8>(),
            ],
            0..600,
        )
    }

    proptest! {
        #[test]
        fn filter_round_trips(
            src in hex_text(),
            esc in any::<u8>(),
        ) {
            round_trip(&src, esc);
            prop_assert!(max_expansion(0, 0) == 0);
        }

        /// Any range of the expansion, runs cut anywhere by its ends,
        /// comes out as the same bytes of the whole expansion.
        #[test]
        fn a_range_expands_as_the_same_bytes_of_the_whole(
            src in hex_text(),
            esc in any::<u8>(),
            a in 0usize..700,
            n in 0usize..700,
        ) {
            let (text, packed) = round_trip(&src, esc);
            let skip = a.min(src.len());
            let len = n.min(src.len() - skip);
            let mut out = vec![b'#'];
            unfilter_range(&text, &packed, esc, (skip, len), src.len(), &mut out).unwrap();
            prop_assert_eq!(&out[1..], &src[skip..skip + len]);
            // A total the text does not expand to is an error.
            let short = unfilter_range(&text, &packed, esc, (skip, len), src.len() + 1, &mut Vec::new());
            prop_assert!(short.is_err());
        }

        /// Records filtered one by one and concatenated, as a group is:
        /// each expands alone from its offset and length.
        #[test]
        fn each_record_of_a_group_expands_alone(
            records in proptest::collection::vec(
                proptest::collection::vec(
                    prop_oneof![
                        6 => proptest::sample::select(b"0123456789abcdef".to_vec()),
                        1 => any::<u8>(),
                    ],
                    0..200,
                ),
                1..10,
            ),
            esc in any::<u8>(),
        ) {
            let (mut text, mut packed) = (Vec::new(), Vec::new());
            for r in &records {
                filter(r, esc, &mut text, &mut packed);
            }
            let total = records.iter().map(Vec::len).sum();
            let mut skip = 0;
            for r in &records {
                let mut out = Vec::new();
                unfilter_range(&text, &packed, esc, (skip, r.len()), total, &mut out).unwrap();
                prop_assert_eq!(&out, r);
                skip += r.len();
            }
        }
    }
}
