//! Little-endian fixed-width integers and LEB128 varints, the building blocks
//! of every on-disk format (see `docs/format/`).
//!
//! Decoders never panic: they return `None` on truncated or overlong input and
//! the caller turns that into a `Corruption` error naming its file and offset.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`. Requires `src.len() >= 4`
/// (a caller's bug otherwise, not input: decoders check lengths first, or use
/// [`Reader::fixed32`]).
#[inline]
#[expect(
    clippy::indexing_slicing,
    reason = "documented precondition src.len() >= 4, checked by every caller"
)]
pub fn decode_fixed32(src: &[u8]) -> u32 {
    u32::from_le_bytes([src[0], src[1], src[2], src[3]])
}

/// Reads 8 little-endian bytes at the start of `src`. Requires `src.len() >= 8`
/// (as [`decode_fixed32`]; or use [`Reader::fixed64`]).
#[inline]
#[expect(
    clippy::indexing_slicing,
    reason = "documented precondition src.len() >= 8, checked by every caller"
)]
pub fn decode_fixed64(src: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&src[..8]);
    u64::from_le_bytes(b)
}

/// The 4 little-endian bytes at `at` of `src`, if `src` holds them.
#[inline]
pub fn fixed32_at(src: &[u8], at: usize) -> Option<u32> {
    let b = src.get(at..)?.first_chunk::<4>()?;
    Some(u32::from_le_bytes(*b))
}

/// The 8 little-endian bytes at `at` of `src`, if `src` holds them.
#[inline]
pub fn fixed64_at(src: &[u8], at: usize) -> Option<u64> {
    let b = src.get(at..)?.first_chunk::<8>()?;
    Some(u64::from_le_bytes(*b))
}

/// Appends `v` as a LEB128 varint (1 to 5 bytes).
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, v as u64)
}

/// Appends `v` as a LEB128 varint (1 to 10 bytes).
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes `put_varint64(v)` writes.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint32 from the start of `src`: `(value, bytes consumed)`.
#[inline]
pub fn get_varint32(src: &[u8]) -> Option<(u32, usize)> {
    // Fast path: one byte.
    if let Some(&b) = src.first() {
        if b < 0x80 {
            return Some((b as u32, 1));
        }
    }
    let (v, n) = get_varint64(src)?;
    if n > 5 || v > u32::MAX as u64 {
        return None;
    }
    Some((v as u32, n))
}

/// Decodes a varint64 from the start of `src`: `(value, bytes consumed)`.
#[inline]
pub fn get_varint64(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if i == 9 && b > 1 {
            return None; // would overflow 64 bits
        }
        result |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Appends a varint length followed by the bytes.
#[inline]
pub fn put_length_prefixed(dst: &mut Vec<u8>, s: &[u8]) {
    put_varint32(dst, s.len() as u32);
    dst.extend_from_slice(s);
}

/// Decodes a length-prefixed slice: `(slice, bytes consumed)`.
#[inline]
pub fn get_length_prefixed(src: &[u8]) -> Option<(&[u8], usize)> {
    let (len, n) = get_varint32(src)?;
    let end = n.checked_add(len as usize)?;
    Some((src.get(n..end)?, end))
}

/// A cursor over a byte slice for decoders: every getter returns `None`
/// instead of panicking when the input is short.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    /// The bytes not consumed yet.
    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }
    /// Reads a varint32.
    pub fn varint32(&mut self) -> Option<u32> {
        let (v, n) = get_varint32(self.rest())?;
        self.pos += n;
        Some(v)
    }
    /// Reads a varint64.
    pub fn varint64(&mut self) -> Option<u64> {
        let (v, n) = get_varint64(self.rest())?;
        self.pos += n;
        Some(v)
    }
    /// Reads a fixed32.
    pub fn fixed32(&mut self) -> Option<u32> {
        let s = self.bytes(4)?.first_chunk::<4>()?;
        Some(u32::from_le_bytes(*s))
    }
    /// Reads a fixed64.
    pub fn fixed64(&mut self) -> Option<u64> {
        let s = self.bytes(8)?.first_chunk::<8>()?;
        Some(u64::from_le_bytes(*s))
    }
    /// Reads one byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1)?.first().copied()
    }
    /// Reads `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    /// Reads a varint32 length and that many bytes.
    pub fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let (s, n) = get_length_prefixed(self.rest())?;
        self.pos += n;
        Some(s)
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

    #[test]
    fn varint_round_trip_edges() {
        let vals = [
            0u64,
            1,
            127,
            128,
            255,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &v in &vals {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(get_varint64(&b), Some((v, b.len())));
        }
    }

    #[test]
    fn varint_truncated_and_overlong_are_rejected() {
        assert_eq!(get_varint64(&[]), None);
        assert_eq!(get_varint64(&[0x80]), None);
        assert_eq!(get_varint64(&[0xff; 11]), None);
        // 10th byte > 1 overflows.
        let mut b = vec![0xffu8; 9];
        b.push(0x02);
        assert_eq!(get_varint64(&b), None);
        // varint32 over u32::MAX
        let mut b = Vec::new();
        put_varint64(&mut b, u32::MAX as u64 + 1);
        assert_eq!(get_varint32(&b), None);
    }

    #[test]
    fn length_prefixed_bounds() {
        let mut b = Vec::new();
        put_length_prefixed(&mut b, b"hello");
        assert_eq!(get_length_prefixed(&b), Some((&b"hello"[..], 6)));
        assert_eq!(get_length_prefixed(&b[..5]), None);
        let mut r = Reader::new(&b);
        assert_eq!(r.length_prefixed(), Some(&b"hello"[..]));
        assert!(r.is_empty());
        assert_eq!(r.fixed32(), None);
    }

    #[test]
    fn fixed_round_trip() {
        let mut b = Vec::new();
        put_fixed32(&mut b, 0xdeadbeef);
        put_fixed64(&mut b, 0x0123456789abcdef);
        assert_eq!(decode_fixed32(&b), 0xdeadbeef);
        assert_eq!(decode_fixed64(&b[4..]), 0x0123456789abcdef);
    }
}
