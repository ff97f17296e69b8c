//! The table's Bloom filter: one "full filter" per table over the user keys
//! it holds, plus (with a prefix extractor) the prefixes of those keys that
//! are in the extractor's domain (`docs/format/sstable.md`, "Filter block").
//!
//! Hashing: xxh3_64 of the key; probe `i` sets bit `(h + i*delta) mod m`
//! where `delta = rotl(h, 32) | 1` (double hashing). The probe count is the
//! last byte of the filter. A filter that cannot be understood (too short,
//! probe count 0 or > 30) matches everything, so a damaged or future filter
//! can cost reads but never lose keys. No state beyond the bytes; no locks.

// Decoders of file bytes: no indexing, unwrap or panic on input (a proven
// index carries a narrow `#[expect]` with its reason).
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use crate::options::SliceTransform;

/// Largest probe count written; a larger stored value means "unknown
/// encoding" (sstable.md, "Filter block").
pub const MAX_PROBES: u32 = 30;

/// Number of probes for `bits_per_key`: round(bits_per_key * ln 2), 1..=30.
pub fn num_probes(bits_per_key: u32) -> u32 {
    ((bits_per_key as f64 * std::f64::consts::LN_2).round() as u32).clamp(1, MAX_PROBES)
}

#[inline]
fn probe_positions(h: u64, m: u64, k: u32) -> impl Iterator<Item = u64> {
    let delta = h.rotate_left(32) | 1;
    (0..k as u64).map(move |i| h.wrapping_add(i.wrapping_mul(delta)) % m)
}

/// Collects key hashes and produces the filter bytes.
pub struct FilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
    prefix_extractor: Option<Arc<dyn SliceTransform>>,
    last_prefix_hash: Option<u64>,
    last_key_hash: Option<u64>,
}

impl FilterBuilder {
    /// A builder for `bits_per_key` (> 0).
    pub fn new(bits_per_key: u32, prefix_extractor: Option<Arc<dyn SliceTransform>>) -> Self {
        FilterBuilder {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
            prefix_extractor,
            last_prefix_hash: None,
            last_key_hash: None,
        }
    }

    /// Adds a user key (and its prefix when the extractor applies).
    pub fn add_key(&mut self, user_key: &[u8]) {
        let h = xxh3_64(user_key);
        if self.last_key_hash != Some(h) {
            self.hashes.push(h);
            self.last_key_hash = Some(h);
        }
        if let Some(pe) = &self.prefix_extractor {
            if pe.in_domain(user_key) {
                let ph = xxh3_64(pe.transform(user_key));
                if self.last_prefix_hash != Some(ph) {
                    self.hashes.push(ph);
                    self.last_prefix_hash = Some(ph);
                }
            }
        }
    }

    /// The filter bytes: the bit array (a multiple of 8 bytes, at least 64
    /// bits) followed by one byte holding the probe count.
    pub fn finish(mut self) -> Vec<u8> {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        let bits = (self.hashes.len() as u64 * self.bits_per_key as u64).max(64);
        let bytes = bits.div_ceil(64) * 8;
        let m = bytes * 8;
        let k = num_probes(self.bits_per_key);
        let mut out = vec![0u8; bytes as usize + 1];
        for &h in &self.hashes {
            for pos in probe_positions(h, m, k) {
                // pos < m = 8 * bytes: always a byte of the bit array.
                if let Some(b) = out.get_mut((pos / 8) as usize) {
                    *b |= 1 << (pos % 8);
                }
            }
        }
        if let Some(last) = out.last_mut() {
            *last = k as u8;
        }
        out
    }
}

/// Reads filter bytes produced by [`FilterBuilder::finish`].
#[derive(Debug, Clone)]
pub struct Filter {
    data: Vec<u8>,
}

impl Filter {
    /// Wraps filter bytes (checksum already verified by the caller).
    pub fn new(data: Vec<u8>) -> Self {
        Filter { data }
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// False only when `key` (a user key or a prefix) was certainly not added.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(xxh3_64(key))
    }

    /// [`Filter::may_contain`] of the key whose `xxh3_64` is `h`.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let Some((&k, bits)) = self.data.split_last() else {
            return true;
        };
        let k = k as u32;
        if bits.is_empty() || k == 0 || k > MAX_PROBES {
            return true;
        }
        let m = bits.len() as u64 * 8;
        probe_positions(h, m, k).all(|pos| {
            bits.get((pos / 8) as usize)
                .is_some_and(|b| b & (1 << (pos % 8)) != 0)
        })
    }

    /// Starts loading the byte of the first probe for hash `h`.
    #[inline]
    pub fn prefetch_hash(&self, h: u64) {
        let m = self.data.len().saturating_sub(1) as u64 * 8;
        if m > 0 {
            if let Some(b) = self.data.get(((h % m) / 8) as usize) {
                crate::util::prefetch(b as *const u8);
            }
        }
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
    use crate::options::FixedPrefix;

    #[test]
    fn probes() {
        assert_eq!(num_probes(10), 7);
        assert_eq!(num_probes(1), 1);
        assert_eq!(num_probes(0), 1);
        assert_eq!(num_probes(64), 30);
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        let mut b = FilterBuilder::new(10, None);
        let n = 10_000;
        for i in 0..n {
            b.add_key(format!("present-{i}").as_bytes());
        }
        let f = Filter::new(b.finish());
        for i in 0..n {
            assert!(f.may_contain(format!("present-{i}").as_bytes()), "{i}");
        }
        let fp = (0..n)
            .filter(|i| f.may_contain(format!("absent-{i}").as_bytes()))
            .count();
        let rate = fp as f64 / n as f64;
        assert!(rate < 0.02, "false positive rate {rate}");
    }

    #[test]
    fn small_and_empty_filters() {
        let f = Filter::new(FilterBuilder::new(10, None).finish());
        assert!(!f.may_contain(b"x"));
        let mut b = FilterBuilder::new(10, None);
        b.add_key(b"hello");
        let f = Filter::new(b.finish());
        assert!(f.may_contain(b"hello"));
        // Unknown encodings match everything.
        assert!(Filter::new(vec![]).may_contain(b"x"));
        assert!(Filter::new(vec![0, 0, 31]).may_contain(b"x"));
        assert!(Filter::new(vec![0, 0, 0]).may_contain(b"x"));
    }

    #[test]
    fn prefixes() {
        let pe: Arc<dyn SliceTransform> = Arc::new(FixedPrefix::new(4));
        let mut b = FilterBuilder::new(10, Some(pe));
        for i in 0..100 {
            b.add_key(format!("user{i:04}").as_bytes());
        }
        b.add_key(b"ab");
        let f = Filter::new(b.finish());
        assert!(f.may_contain(b"user"));
        assert!(f.may_contain(b"ab"));
        let fp = (0..1000)
            .filter(|i| f.may_contain(format!("p{i:03}").as_bytes()))
            .count();
        assert!(fp < 50, "{fp}");
    }
}
