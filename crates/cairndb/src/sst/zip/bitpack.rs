//! Bit-packed integer arrays and the sampled offset array of zip tables
//! (`docs/format/ziptable.md`, "Bit-packed arrays" and "Offset array").
//!
//! A [`PackedArray`] stores `n` values of `width` bits each (0..=64) after a
//! base value, little-endian within 64-bit words. Decoding is checked once
//! when a section is opened (lengths against the section size), so `get` on
//! an index below `len()` never reads out of bounds and never panics. Plain
//! data: no locks, shared read-only.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use crate::util::coding::{put_fixed64, put_varint64, Reader};

/// Bits needed to store `v` (0 for 0).
pub fn bits_for(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

/// Appends the packed encoding of `values` to `dst`:
/// `varint64 n, varint64 base, u8 width, ceil(n*width/64) u64 words`.
/// `base` is the smallest value; each value is stored as `value - base`.
pub fn encode_packed(dst: &mut Vec<u8>, values: &[u64]) {
    let base = values.iter().copied().min().unwrap_or(0);
    let width = bits_for(values.iter().map(|v| v - base).max().unwrap_or(0));
    put_varint64(dst, values.len() as u64);
    put_varint64(dst, base);
    dst.push(width);
    let nwords = words_for(values.len() as u64, width);
    let mut words = vec![0u64; nwords as usize];
    if width > 0 {
        for (i, v) in values.iter().enumerate() {
            let d = v - base;
            let bit = i as u64 * width as u64;
            let (w, s) = ((bit / 64) as usize, (bit % 64) as u32);
            // w (and w + 1 when the value straddles) < nwords by
            // construction of words_for.
            if let Some(x) = words.get_mut(w) {
                *x |= d << s;
            }
            if s + width as u32 > 64 {
                if let Some(x) = words.get_mut(w + 1) {
                    *x |= d >> (64 - s);
                }
            }
        }
    }
    for w in words {
        put_fixed64(dst, w);
    }
}

fn words_for(n: u64, width: u8) -> u64 {
    (n * width as u64).div_ceil(64)
}

/// A decoded view of a packed array (borrowing nothing: the words are copied
/// out once, at open, so lookups are plain loads).
#[derive(Debug, Clone, Default)]
pub struct PackedArray {
    len: u64,
    base: u64,
    width: u8,
    mask: u64,
    words: Vec<u64>,
}

impl PackedArray {
    /// Decodes an array at the reader's position; `None` when the encoding is
    /// malformed or runs past the input.
    pub fn decode(r: &mut Reader<'_>) -> Option<PackedArray> {
        let len = r.varint64()?;
        let base = r.varint64()?;
        let width = r.u8()?;
        if width > 64 {
            return None;
        }
        let nwords = len.checked_mul(width as u64)?.div_ceil(64);
        let bytes = r.bytes(usize::try_from(nwords.checked_mul(8)?).ok()?)?;
        let words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        Some(PackedArray {
            len,
            base,
            width,
            mask,
            words,
        })
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits per stored value.
    pub fn width(&self) -> u8 {
        self.width
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        self.words.len() * 8
    }

    /// Value `i`, or `None` when `i >= len()` (or a stored value overflows,
    /// which only a damaged file can make happen).
    #[inline]
    pub fn get(&self, i: u64) -> Option<u64> {
        if i >= self.len {
            return None;
        }
        if self.width == 0 {
            return Some(self.base);
        }
        let bit = i * self.width as u64;
        let (w, s) = ((bit / 64) as usize, (bit % 64) as u32);
        let mut v = self.words.get(w)? >> s;
        if s + self.width as u32 > 64 {
            v |= self.words.get(w + 1)? << (64 - s);
        }
        self.base.checked_add(v & self.mask)
    }
}

/// Records per sampled absolute offset in the offset array
/// (TerarkZipTable_offsetArrayBlockUnits; `docs/format/ziptable.md`).
pub const OFFSET_BLOCK_UNITS: u64 = 64;

/// Appends the offset array of `offsets` (non-decreasing): the absolute
/// offset of every `OFFSET_BLOCK_UNITS`-th entry as a packed array, then the
/// delta of every entry from its block's sample as a packed array.
pub fn encode_offsets(dst: &mut Vec<u8>, offsets: &[u64]) {
    let samples: Vec<u64> = offsets
        .iter()
        .step_by(OFFSET_BLOCK_UNITS as usize)
        .copied()
        .collect();
    let deltas: Vec<u64> = offsets
        .chunks(OFFSET_BLOCK_UNITS as usize)
        .flat_map(|c| {
            let sample = c.first().copied().unwrap_or(0);
            c.iter().map(move |&o| o - sample)
        })
        .collect();
    encode_packed(dst, &samples);
    encode_packed(dst, &deltas);
}

/// The decoded offset array.
#[derive(Debug, Clone, Default)]
pub struct OffsetArray {
    samples: PackedArray,
    deltas: PackedArray,
}

impl OffsetArray {
    /// Decodes an offset array; `None` when malformed.
    pub fn decode(r: &mut Reader<'_>) -> Option<OffsetArray> {
        let samples = PackedArray::decode(r)?;
        let deltas = PackedArray::decode(r)?;
        if samples.len() != deltas.len().div_ceil(OFFSET_BLOCK_UNITS) {
            return None;
        }
        Some(OffsetArray { samples, deltas })
    }

    /// Number of offsets.
    pub fn len(&self) -> u64 {
        self.deltas.len()
    }

    /// True when there are no offsets.
    pub fn is_empty(&self) -> bool {
        self.deltas.is_empty()
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        self.samples.memory() + self.deltas.memory()
    }

    /// Offset `i`, or `None` past the end.
    #[inline]
    pub fn get(&self, i: u64) -> Option<u64> {
        self.samples
            .get(i / OFFSET_BLOCK_UNITS)?
            .checked_add(self.deltas.get(i)?)
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

    fn round_trip(values: &[u64]) {
        let mut b = Vec::new();
        encode_packed(&mut b, values);
        b.extend_from_slice(b"tail");
        let mut r = Reader::new(&b);
        let a = PackedArray::decode(&mut r).unwrap();
        assert_eq!(r.bytes(4).unwrap(), b"tail");
        assert_eq!(a.len(), values.len() as u64);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(a.get(i as u64), Some(*v), "index {i}");
        }
        assert_eq!(a.get(values.len() as u64), None);
    }

    #[test]
    fn packed_round_trips_every_width() {
        round_trip(&[]);
        round_trip(&[7]);
        round_trip(&[5, 5, 5, 5]);
        for width in 1..=64u32 {
            let top = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let vals: Vec<u64> = (0..130u64)
                .map(|i| top.wrapping_mul(i.wrapping_mul(0x9E37_79B9)) & top)
                .chain([0, top])
                .collect();
            round_trip(&vals);
        }
        round_trip(&[u64::MAX - 3, u64::MAX, u64::MAX - 1]);
    }

    #[test]
    fn offsets_round_trip_across_sample_boundaries() {
        let mut offs = vec![0u64];
        for i in 0..1000u64 {
            let last = *offs.last().unwrap();
            offs.push(last + (i * 37) % 1500);
        }
        let mut b = Vec::new();
        encode_offsets(&mut b, &offs);
        let a = OffsetArray::decode(&mut Reader::new(&b)).unwrap();
        assert_eq!(a.len(), offs.len() as u64);
        for (i, o) in offs.iter().enumerate() {
            assert_eq!(a.get(i as u64), Some(*o));
        }
        assert_eq!(a.get(offs.len() as u64), None);
    }

    #[test]
    fn truncated_or_bad_width_is_none_not_panic() {
        let mut b = Vec::new();
        encode_packed(&mut b, &(0..100).collect::<Vec<u64>>());
        for cut in 0..b.len() {
            assert!(PackedArray::decode(&mut Reader::new(&b[..cut])).is_none());
        }
        let mut bad = Vec::new();
        put_varint64(&mut bad, 1);
        put_varint64(&mut bad, 0);
        bad.push(65);
        bad.extend_from_slice(&[0; 16]);
        assert!(PackedArray::decode(&mut Reader::new(&bad)).is_none());
        // A huge length must not allocate or overflow.
        let mut huge = Vec::new();
        put_varint64(&mut huge, u64::MAX);
        put_varint64(&mut huge, 0);
        huge.push(64);
        assert!(PackedArray::decode(&mut Reader::new(&huge)).is_none());
    }
}
