//! Keys and values exactly as RocksDB db_bench makes them: the key encoding
//! of `GenerateKeyFromInt`, the per-thread `Random64` (std::mt19937_64) that
//! draws random keys, and the compressible value bytes of `RandomGenerator`.

/// std::mt19937_64, RocksDB's `Random64`.
#[derive(Clone)]
pub struct Mt64 {
    mt: Box<[u64; 312]>,
    idx: usize,
}

impl Mt64 {
    /// Seeded as `std::mt19937_64(seed)`.
    pub fn new(seed: u64) -> Mt64 {
        let mut mt = Box::new([0u64; 312]);
        mt[0] = seed;
        for i in 1..312 {
            mt[i] = 6364136223846793005u64
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 62))
                .wrapping_add(i as u64);
        }
        Mt64 { mt, idx: 312 }
    }

    /// The next 64-bit output (`Random64::Next`).
    pub fn next_u64(&mut self) -> u64 {
        const UPPER: u64 = 0xFFFF_FFFF_8000_0000;
        const LOWER: u64 = 0x7FFF_FFFF;
        if self.idx >= 312 {
            for i in 0..312 {
                let x = (self.mt[i] & UPPER) | (self.mt[(i + 1) % 312] & LOWER);
                let mut xa = x >> 1;
                if x & 1 != 0 {
                    xa ^= 0xB502_6F5A_A966_19E9;
                }
                self.mt[i] = self.mt[(i + 156) % 312] ^ xa;
            }
            self.idx = 0;
        }
        let mut x = self.mt[self.idx];
        self.idx += 1;
        x ^= (x >> 29) & 0x5555_5555_5555_5555;
        x ^= (x << 17) & 0x71D6_7FFF_EDA6_0000;
        x ^= (x << 37) & 0xFFF7_EEE0_0000_0000;
        x ^= x >> 43;
        x
    }
}

/// LevelDB's and RocksDB's 31-bit Lehmer `Random`.
pub struct Random31 {
    seed: u32,
}

impl Random31 {
    /// `Random(s)`.
    pub fn new(s: u32) -> Random31 {
        let mut seed = s & 0x7fff_ffff;
        if seed == 0 || seed == 2147483647 {
            seed = 1;
        }
        Random31 { seed }
    }
    /// `Next()`.
    pub fn next(&mut self) -> u32 {
        const M: u64 = 2147483647;
        let product = self.seed as u64 * 16807;
        let mut s = (product >> 31) + (product & M);
        if s > M {
            s -= M;
        }
        self.seed = s as u32;
        self.seed
    }
    /// `Uniform(n)`.
    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

/// db_bench's `RandomGenerator`: at least 1 MiB of bytes built from
/// 100-byte pieces that compress to `compression_ratio`, handed out in turn.
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// As db_bench builds it (`Random rnd(301)`, `CompressibleString`).
    pub fn new(compression_ratio: f64, value_size: usize) -> ValueGen {
        let mut rnd = Random31::new(301);
        let target = value_size.max(1_048_576);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            let raw_len = ((100.0 * compression_ratio) as usize).max(1);
            let raw: Vec<u8> = (0..raw_len).map(|_| b' ' + rnd.uniform(95) as u8).collect();
            let mut piece = Vec::with_capacity(100 + raw_len);
            while piece.len() < 100 {
                piece.extend_from_slice(&raw);
            }
            piece.truncate(100);
            data.extend_from_slice(&piece);
        }
        ValueGen { data, pos: 0 }
    }

    /// The next `len` bytes (`Generate(len)`).
    pub fn generate(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}

/// The key layout flags (`--key_size`, `--prefix_size`, `--keys_per_prefix`).
#[derive(Clone, Copy, Debug)]
pub struct KeyLayout {
    /// Total key length.
    pub key_size: usize,
    /// Bytes of prefix (used only with `keys_per_prefix > 0`).
    pub prefix_size: usize,
    /// Keys sharing each prefix (0: no prefix).
    pub keys_per_prefix: u64,
}

impl KeyLayout {
    /// db_bench's `GenerateKeyFromInt(v, num_keys, key)`: an optional
    /// big-endian prefix `v % (num_keys / keys_per_prefix)`, then `v` as a
    /// big-endian number in up to 8 bytes, then '0' padding.
    pub fn make_key(&self, v: u64, num_keys: u64, out: &mut Vec<u8>) {
        out.clear();
        let ks = self.key_size;
        if let Some(num_prefix) = num_keys.checked_div(self.keys_per_prefix) {
            let num_prefix = num_prefix.max(1);
            let prefix = v % num_prefix;
            let fill = self.prefix_size.min(8);
            for i in 0..fill {
                out.push((prefix >> ((fill - i - 1) * 8)) as u8);
            }
            if self.prefix_size > 8 {
                out.resize(self.prefix_size, b'0');
            }
        }
        let used = out.len().min(ks);
        let fill = ks.saturating_sub(used).min(8);
        for i in 0..fill {
            out.push((v >> ((fill - i - 1) * 8)) as u8);
        }
        out.resize(ks, b'0');
    }
}

/// Which keys a write benchmark visits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    /// 0, 1, 2, ...
    Sequential,
    /// Uniform with replacement (`rand.Next() % num`).
    Random,
    /// Each key once, in random order.
    UniqueRandom,
}

/// db_bench's `KeyGenerator`.
pub struct KeyGen {
    order: Order,
    num: u64,
    next: u64,
    shuffled: Vec<u64>,
}

impl KeyGen {
    /// A generator over `[0, num)`; `seed` shuffles the unique order.
    pub fn new(order: Order, num: u64, seed: u64) -> KeyGen {
        let mut shuffled = Vec::new();
        if order == Order::UniqueRandom {
            shuffled = (0..num).collect();
            let mut r = Mt64::new(seed);
            for i in (1..shuffled.len()).rev() {
                let j = (r.next_u64() % (i as u64 + 1)) as usize;
                shuffled.swap(i, j);
            }
        }
        KeyGen {
            order,
            num,
            next: 0,
            shuffled,
        }
    }

    /// The next key number.
    pub fn next(&mut self, rand: &mut Mt64) -> u64 {
        match self.order {
            Order::Sequential => {
                let v = self.next;
                self.next += 1;
                v
            }
            Order::Random => rand.next_u64() % self.num.max(1),
            Order::UniqueRandom => {
                let v = self.shuffled[(self.next % self.num.max(1)) as usize];
                self.next += 1;
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_64_reference_output() {
        // The C++ standard requires the 10000th output of a
        // default-constructed (seed 5489) mt19937_64 to be this value.
        let mut r = Mt64::new(5489);
        let mut v = 0;
        for _ in 0..10000 {
            v = r.next_u64();
        }
        assert_eq!(v, 9981545732273789042);
    }

    #[test]
    fn keys_like_db_bench() {
        let l = KeyLayout {
            key_size: 16,
            prefix_size: 0,
            keys_per_prefix: 0,
        };
        let mut k = Vec::new();
        l.make_key(0x0102, 1000, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x0200000000");
        let l8 = KeyLayout { key_size: 8, ..l };
        l8.make_key(258, 1000, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x02");
        // Shorter than 8: the low bytes, big-endian.
        let l4 = KeyLayout { key_size: 4, ..l };
        l4.make_key(0x0A0B0C0D0E, 1000, &mut k);
        assert_eq!(k, b"\x0B\x0C\x0D\x0E");
        // 20-byte key with 12-byte prefix, 10 keys per prefix, num 100:
        // prefix = 37 % 10 = 7 in 8 big-endian bytes + "0000", then 37 in the last 8.
        let lp = KeyLayout {
            key_size: 20,
            prefix_size: 12,
            keys_per_prefix: 10,
        };
        lp.make_key(37, 100, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\0\x070000\0\0\0\0\0\0\0\x25");
        // keys_per_prefix = 0 ignores prefix_size (seed 001's lines).
        let l20 = KeyLayout {
            key_size: 20,
            prefix_size: 20,
            keys_per_prefix: 0,
        };
        l20.make_key(1, 10, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\0\x01000000000000");
    }

    #[test]
    fn values_compress_about_as_asked() {
        let mut g = ValueGen::new(0.5, 100);
        let v = g.generate(100).to_vec();
        // 50 random printable bytes, then the same 50 again.
        assert_eq!(v[..50], v[50..]);
        assert!(v.iter().all(|b| (b' '..=b'~').contains(b)));
        let w = g.generate(100).to_vec();
        assert_ne!(v, w);
    }

    #[test]
    fn unique_order_visits_every_key_once() {
        let mut g = KeyGen::new(Order::UniqueRandom, 1000, 7);
        let mut r = Mt64::new(1);
        let mut seen: Vec<u64> = (0..1000).map(|_| g.next(&mut r)).collect();
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }
}
