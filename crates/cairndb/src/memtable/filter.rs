//! A whole-key filter over the user keys of one memtable (RocksDB's
//! `memtable_whole_key_filtering`), so that [`super::MemTable::get`] can
//! skip the skiplist search (dozens of dependent cache misses in a large
//! memtable) for a key the memtable has never held.
//!
//! Layout: a cache-line-blocked bloom filter. Each key hashes (xxh3) to one
//! 64-byte block and sets [`PROBES`] bits inside it, so an insert or a query
//! touches one cache line. Bits are only ever set, with `Relaxed`
//! `fetch_or`, before the entry itself is inserted into the skiplist.
//!
//! Concurrency: any number of writers and readers. A reader must see the
//! bits of every entry its snapshot covers. It does: the writer sets them
//! before it inserts and before the engine publishes the entry's sequence
//! number with a `Release` store, and the reader loads that sequence number
//! with `Acquire` before it looks (`db` module doc). Bits of entries still
//! being inserted may or may not be seen; those entries are invisible to the
//! reader anyway.

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(test)]
use xxhash_rust::xxh3::xxh3_64;

/// Bits set per key. With about 20 bits per key (the default size for a
/// memtable of small entries) the false-positive rate of a blocked filter
/// is well under 1%.
const PROBES: u32 = 6;
/// u64 words per 64-byte block.
const WORDS: usize = 8;

/// See the module documentation.
pub struct KeyFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl KeyFilter {
    /// A filter of about `bytes` bytes (at least one block).
    pub fn new(bytes: usize) -> KeyFilter {
        let blocks = (bytes / (WORDS * 8)).max(1);
        KeyFilter {
            words: (0..blocks * WORDS).map(|_| AtomicU64::new(0)).collect(),
            blocks: blocks as u64,
        }
    }

    /// Bytes held.
    pub fn memory_usage(&self) -> usize {
        self.words.len() * 8
    }

    /// The 64-byte block hash `h` falls in.
    #[inline]
    fn block_of(&self, h: u64) -> usize {
        // Multiply-shift maps the hash uniformly onto the blocks.
        ((h as u128 * self.blocks as u128) >> 64) as usize
    }

    /// First word of the block of hash `h` and the bit masks to test or set.
    #[inline]
    fn locate_hash(&self, h: u64) -> (usize, [u64; WORDS]) {
        let block = self.block_of(h);
        // Bit positions inside the 512-bit block: 9 bits each from a second
        // mix of the hash (independent of the bits that chose the block).
        let mut g = h.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (h >> 29);
        let mut masks = [0u64; WORDS];
        for _ in 0..PROBES {
            let bit = (g & 511) as usize;
            masks[bit >> 6] |= 1u64 << (bit & 63);
            g >>= 9;
        }
        (block * WORDS, masks)
    }

    /// Records `key`.
    #[inline]
    #[cfg(test)]
    pub fn add(&self, key: &[u8]) {
        self.add_hash(xxh3_64(key))
    }

    /// Records the key whose `xxh3_64` is `h`.
    #[inline]
    pub fn add_hash(&self, h: u64) {
        let (base, masks) = self.locate_hash(h);
        for (i, &m) in masks.iter().enumerate() {
            if m != 0 {
                self.words[base + i].fetch_or(m, Ordering::Relaxed);
            }
        }
    }

    /// False only when `key` was never added.
    #[inline]
    #[cfg(test)]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(xxh3_64(key))
    }

    /// [`KeyFilter::may_contain`] of the key whose `xxh3_64` is `h`.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let (base, masks) = self.locate_hash(h);
        masks
            .iter()
            .enumerate()
            .all(|(i, &m)| m == 0 || self.words[base + i].load(Ordering::Relaxed) & m == m)
    }

    /// Starts loading the cache line a query for hash `h` reads.
    #[inline]
    pub fn prefetch_hash(&self, h: u64) {
        let i = self.block_of(h) * WORDS;
        if let Some(w) = self.words.get(i) {
            crate::util::prefetch(w as *const AtomicU64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let f = KeyFilter::new(64 << 10); // 524,288 bits
        for i in 0..25_000u32 {
            f.add(format!("key{i:08}").as_bytes());
        }
        for i in 0..25_000u32 {
            assert!(f.may_contain(format!("key{i:08}").as_bytes()), "key {i}");
        }
        let fp = (0..100_000u32)
            .filter(|i| f.may_contain(format!("other{i:08}").as_bytes()))
            .count();
        // About 21 bits per key: a blocked filter with 6 probes stays under
        // 1% here; 2% leaves room for hash luck without hiding a broken one.
        assert!(fp < 2_000, "{fp} false positives in 100,000");
        assert!(f.may_contain(b"") || !f.may_contain(b""));
        assert_eq!(f.memory_usage(), 64 << 10);
    }

    #[test]
    fn tiny_filter_has_one_block_and_still_answers() {
        let f = KeyFilter::new(1);
        assert_eq!(f.memory_usage(), 64);
        f.add(b"a");
        assert!(f.may_contain(b"a"));
    }

    #[test]
    fn concurrent_adds_are_never_lost() {
        let f = std::sync::Arc::new(KeyFilter::new(4 << 10));
        let hs: Vec<_> = (0..4u32)
            .map(|t| {
                let f = f.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        f.add(&(t * 1_000_000 + i).to_le_bytes());
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        for t in 0..4u32 {
            for i in 0..20_000u32 {
                assert!(f.may_contain(&(t * 1_000_000 + i).to_le_bytes()));
            }
        }
    }
}
