//! The whole-table hash index of a block-based table (`docs/format/sstable.md`,
//! "Hash index block"): one slot per distinct user key, naming the data block
//! and the byte offset of the restart run where that key's newest entry
//! starts (the entry itself when the block has a restart point per entry),
//! so a point read goes from the key to its entry in one probe instead of a
//! binary search of the index block and another of the data block (RocksDB's
//! plain table and data-block hash index answer the same need).
//!
//! Layout: `num_slots` (a power of two) little-endian slots of `width` bytes
//! (4 or 8), then an 8-byte trailer `[kind=1, width, block_bits,
//! offset_bits, log2(num_slots), 0, 0, 0]`. A slot is 0 when empty, else
//! `fp << (block_bits + offset_bits) | block << offset_bits | offset`,
//! where `fp` is the nonzero fingerprint from the top of `h = xxh3_64(user
//! key)`. A key's probe sequence starts at slot `h mod num_slots` and walks
//! forward (wrapping); it ends at an empty slot. The builder keeps at most
//! three quarters of the slots full, so a probe for an absent key usually
//! ends in the cache line it started in.
//!
//! Invariants: the index only narrows where to look; a reader confirms every
//! candidate against the entry it names, so a fingerprint collision costs a
//! read, never a wrong answer. A trailer kind this build does not know makes
//! the table read as if it had no hash index. Plain data: no locks.

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

/// Trailer kind of the one encoding this build writes and reads
/// (sstable.md, "Hash index block").
pub const HASH_INDEX_KIND_LINEAR: u8 = 1;
/// Bytes of the trailer after the slots.
pub const HASH_INDEX_TRAILER_LEN: usize = 8;
/// Fingerprint bits below which a slot grows from 4 to 8 bytes.
const MIN_FP_BITS_IN_4: u32 = 8;
/// Most fingerprint bits used (taken from the hash's top 32 bits).
const MAX_FP_BITS: u32 = 32;

/// Bits needed to hold values `0..=max`.
fn bits_for(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// The fingerprint of `h` in `fp_bits` bits, never 0 (0 marks an empty slot).
#[inline]
fn fingerprint(h: u64, fp_bits: u32) -> u64 {
    let bits = fp_bits.min(MAX_FP_BITS);
    let fp = (h >> 32) & ((1u64 << bits) - 1);
    fp.max(1)
}

/// Collects the first entry of each distinct user key while a table is
/// written, and lays out the slots at the end.
#[derive(Default)]
pub struct HashIndexBuilder {
    /// (hash, data block ordinal, offset of the restart run in that block),
    /// in key order.
    entries: Vec<(u64, u32, u32)>,
    max_block: u32,
    max_offset: u32,
}

impl HashIndexBuilder {
    /// Records that the user key hashing to `hash` first appears in the
    /// restart run at byte `offset` of data block `block`.
    pub fn add(&mut self, hash: u64, block: u32, offset: u32) {
        self.max_block = self.max_block.max(block);
        self.max_offset = self.max_offset.max(offset);
        self.entries.push((hash, block, offset));
    }

    /// Keys recorded so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Memory held by the builder.
    pub fn memory_usage(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(u64, u32, u32)>()
    }

    /// The block bytes (slots and trailer); `None` when there is no key or
    /// the locations need more than 56 bits (then the table has no hash
    /// index and reads search as usual).
    pub fn finish(self) -> Option<Vec<u8>> {
        if self.entries.is_empty() {
            return None;
        }
        let block_bits = bits_for(u64::from(self.max_block));
        let offset_bits = bits_for(u64::from(self.max_offset));
        let loc_bits = block_bits + offset_bits;
        let width: usize = if loc_bits + MIN_FP_BITS_IN_4 <= 32 {
            4
        } else if loc_bits + MIN_FP_BITS_IN_4 <= 64 {
            8
        } else {
            return None;
        };
        let fp_bits = width as u32 * 8 - loc_bits;
        // At most 3/4 full: num_slots >= ceil(4n/3), a power of two, >= 2.
        let n = (self.entries.len() * 4)
            .div_ceil(3)
            .max(2)
            .next_power_of_two();
        let log2_n = n.trailing_zeros();
        let mask = n - 1;
        let mut slots = vec![0u64; n];
        for &(h, block, offset) in &self.entries {
            let v = fingerprint(h, fp_bits) << loc_bits
                | u64::from(block) << offset_bits
                | u64::from(offset);
            let mut i = (h as usize) & mask;
            // n > entries, so an empty slot is always found.
            while slots.get(i).is_some_and(|&s| s != 0) {
                i = (i + 1) & mask;
            }
            if let Some(s) = slots.get_mut(i) {
                *s = v;
            }
        }
        let mut out = Vec::with_capacity(n * width + HASH_INDEX_TRAILER_LEN);
        for s in slots {
            out.extend_from_slice(s.to_le_bytes().get(..width).unwrap_or_default());
        }
        out.extend_from_slice(&[
            HASH_INDEX_KIND_LINEAR,
            width as u8,
            block_bits as u8,
            offset_bits as u8,
            log2_n as u8,
            0,
            0,
            0,
        ]);
        Some(out)
    }
}

/// A decoded hash index, held in memory while its table is open.
pub struct HashIndex {
    slots: Box<[u8]>,
    width: usize,
    mask: u64,
    offset_bits: u32,
    loc_bits: u32,
    fp_bits: u32,
}

impl std::fmt::Debug for HashIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashIndex")
            .field("slots", &(self.mask + 1))
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}

impl HashIndex {
    /// Decodes the block read from `offset` of `path`. `Ok(None)` for a
    /// trailer kind this build does not know (the table is read without a
    /// hash index); `Corruption` when a known kind does not add up.
    pub fn decode(path: &Path, offset: u64, mut data: Vec<u8>) -> Result<Option<HashIndex>> {
        let bad = |what: String| Error::corruption(path, offset, format!("hash index: {what}"));
        let Some(body_len) = data.len().checked_sub(HASH_INDEX_TRAILER_LEN) else {
            return Err(bad(format!("block too short ({} bytes)", data.len())));
        };
        let Some(&[kind, width, block_bits, offset_bits, log2_n, ..]) =
            data.get(body_len..).and_then(|t| t.first_chunk::<8>())
        else {
            return Err(bad("no trailer".into()));
        };
        if kind != HASH_INDEX_KIND_LINEAR {
            return Ok(None);
        }
        let width = usize::from(width);
        if width != 4 && width != 8 {
            return Err(bad(format!("slot width {width} (4 or 8 expected)")));
        }
        let loc_bits = u32::from(block_bits) + u32::from(offset_bits);
        if block_bits > 32 || offset_bits > 32 || loc_bits >= width as u32 * 8 {
            return Err(bad(format!(
                "{block_bits} block bits and {offset_bits} offset bits do not fit a {width}-byte slot with a fingerprint"
            )));
        }
        if log2_n == 0 || log2_n > 40 {
            return Err(bad(format!("slot count 2^{log2_n}")));
        }
        let n = 1u64 << log2_n;
        if n.checked_mul(width as u64) != Some(body_len as u64) {
            return Err(bad(format!(
                "{body_len} slot bytes for {n} slots of {width} bytes"
            )));
        }
        data.truncate(body_len);
        Ok(Some(HashIndex {
            slots: data.into_boxed_slice(),
            width,
            mask: n - 1,
            offset_bits: u32::from(offset_bits),
            loc_bits,
            fp_bits: width as u32 * 8 - loc_bits,
        }))
    }

    /// Bytes held in memory.
    pub fn memory_usage(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn slot(&self, i: u64) -> u64 {
        let at = i as usize * self.width;
        if self.width == 4 {
            self.slots
                .get(at..)
                .and_then(|s| s.first_chunk::<4>())
                .map_or(0, |b| u64::from(u32::from_le_bytes(*b)))
        } else {
            self.slots
                .get(at..)
                .and_then(|s| s.first_chunk::<8>())
                .map_or(0, |b| u64::from_le_bytes(*b))
        }
    }

    /// Starts loading the slot a probe for `h` reads first.
    #[inline]
    pub fn prefetch(&self, h: u64) {
        let at = (h & self.mask) as usize * self.width;
        if let Some(b) = self.slots.get(at) {
            crate::util::prefetch(b as *const u8);
        }
    }

    /// The candidate locations for the user key whose `xxh3_64` is `h`, in
    /// probe order.
    #[inline]
    pub fn probe(&self, h: u64) -> Probe<'_> {
        Probe {
            index: self,
            pos: h & self.mask,
            left: self.mask + 1,
            fp: fingerprint(h, self.fp_bits),
            ended_on_empty: false,
        }
    }
}

/// Iterator over the (data block ordinal, restart run offset) candidates of
/// one key.
pub struct Probe<'a> {
    index: &'a HashIndex,
    pos: u64,
    left: u64,
    fp: u64,
    ended_on_empty: bool,
}

impl Probe<'_> {
    /// True when the probe sequence ended at an empty slot (the key is not in
    /// the table unless a candidate matched); false while running or when
    /// every slot was visited (a damaged index: search the table instead).
    pub fn ended_on_empty(&self) -> bool {
        self.ended_on_empty
    }
}

impl Iterator for Probe<'_> {
    type Item = (u64, u64);

    #[inline]
    fn next(&mut self) -> Option<(u64, u64)> {
        let ix = self.index;
        while self.left > 0 {
            let v = ix.slot(self.pos);
            if v == 0 {
                self.ended_on_empty = true;
                self.left = 0;
                return None;
            }
            self.pos = (self.pos + 1) & ix.mask;
            self.left -= 1;
            if v >> ix.loc_bits == self.fp {
                let loc = v & ((1u64 << ix.loc_bits) - 1);
                return Some((loc >> ix.offset_bits, loc & ((1u64 << ix.offset_bits) - 1)));
            }
        }
        None
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
    use xxhash_rust::xxh3::xxh3_64;

    fn build(n: u32, blocks: u32, restarts: u32) -> (Vec<u8>, Vec<(u64, u64, u64)>) {
        let mut b = HashIndexBuilder::default();
        let mut want = Vec::new();
        for i in 0..n {
            let h = xxh3_64(format!("key{i}").as_bytes());
            // The last key takes the largest location, so the widths are
            // sized for `blocks` and `restarts` whatever `n` is.
            let (blk, r) = if i + 1 == n {
                (blocks - 1, restarts - 1)
            } else {
                (i % blocks, i % restarts)
            };
            b.add(h, blk, r);
            want.push((h, u64::from(blk), u64::from(r)));
        }
        (b.finish().unwrap(), want)
    }

    #[test]
    fn every_key_is_found_among_its_candidates() {
        for (n, blocks, restarts) in [(1, 1, 1), (3, 2, 1), (1000, 37, 16), (5000, 1 << 20, 300)] {
            let (bytes, want) = build(n, blocks, restarts);
            let ix = HashIndex::decode(Path::new("t.sst"), 0, bytes)
                .unwrap()
                .unwrap();
            for (h, blk, r) in want {
                assert!(ix.probe(h).any(|c| c == (blk, r)), "n={n}");
            }
        }
    }

    #[test]
    fn wide_locations_take_eight_byte_slots() {
        let (bytes, want) = build(10, 1 << 24, 1 << 8);
        assert_eq!(bytes[bytes.len() - 7], 8);
        let ix = HashIndex::decode(Path::new("t.sst"), 0, bytes)
            .unwrap()
            .unwrap();
        for (h, blk, r) in want {
            assert!(ix.probe(h).any(|c| c == (blk, r)));
        }
    }

    #[test]
    fn absent_keys_end_on_an_empty_slot_with_few_candidates() {
        let (bytes, _) = build(10_000, 300, 16);
        let ix = HashIndex::decode(Path::new("t.sst"), 0, bytes)
            .unwrap()
            .unwrap();
        let mut candidates = 0;
        for i in 0..10_000 {
            let mut p = ix.probe(xxh3_64(format!("absent{i}").as_bytes()));
            candidates += p.by_ref().count();
            assert!(p.ended_on_empty());
        }
        // 14-bit fingerprints: a false candidate in well under 1% of probes.
        assert!(candidates < 100, "{candidates} false candidates");
    }

    #[test]
    fn malformed_blocks_are_corruption_and_unknown_kinds_are_ignored() {
        let (bytes, _) = build(100, 10, 4);
        let p = Path::new("/d/000012.sst");
        let mut unknown = bytes.clone();
        let t = unknown.len() - 8;
        unknown[t] = 9;
        assert!(HashIndex::decode(p, 0, unknown).unwrap().is_none());
        for n in 0..bytes.len() {
            let mut b = bytes[..n].to_vec();
            // Keep the trailer but drop slots.
            if n >= 8 {
                b.extend_from_slice(&bytes[bytes.len() - 8..]);
            }
            if b.len() == bytes.len() {
                continue;
            }
            let e = HashIndex::decode(p, 4096, b).unwrap_err();
            assert!(
                e.is_corruption() && e.to_string().contains("000012.sst"),
                "{e}"
            );
        }
        for (at, v) in [(1, 5u8), (2, 40), (3, 40), (4, 0), (4, 60)] {
            let mut b = bytes.clone();
            b[t + at] = v;
            let e = HashIndex::decode(p, 0, b).unwrap_err();
            assert!(e.to_string().contains("hash index"), "{e}");
        }
    }

    #[test]
    fn a_full_index_without_empty_slots_ends_without_claiming_absence() {
        // Forge 2 slots, both full with the wrong fingerprint.
        let mut b = vec![0xffu8; 8];
        b.extend_from_slice(&[HASH_INDEX_KIND_LINEAR, 4, 1, 1, 1, 0, 0, 0]);
        let ix = HashIndex::decode(Path::new("t"), 0, b).unwrap().unwrap();
        let mut p = ix.probe(0);
        assert_eq!(p.by_ref().count(), 0);
        assert!(!p.ended_on_empty());
    }
}
