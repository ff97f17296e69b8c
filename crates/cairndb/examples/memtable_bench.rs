//! Quick memtable micro-benchmark: 1M random 16-byte keys with 100-byte
//! values; prints insert and get ns/op. Run with
//! `cargo run --release -p cairndb --example memtable_bench [N]`.

use std::hint::black_box;
use std::time::Instant;

use cairndb::internals::key::ValueType;
use cairndb::internals::memtable::{MemGet, MemTable};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    // Deterministic xorshift keys, generated up front so that only the
    // memtable is timed.
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let keys: Vec<[u8; 16]> = (0..n)
        .map(|_| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&next().to_be_bytes());
            k[8..].copy_from_slice(&next().to_be_bytes());
            k
        })
        .collect();
    let value = [0xabu8; 100];

    let m = MemTable::new();
    let t = Instant::now();
    for (i, k) in keys.iter().enumerate() {
        m.add(i as u64 + 1, ValueType::Value, k, &value);
    }
    let ins = t.elapsed();

    // Look the keys up in a different (shuffled) order.
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let t = Instant::now();
    let mut found = 0usize;
    for &i in &order {
        if let Some(MemGet::Value(v)) = m.get(black_box(&keys[i]), u64::MAX) {
            found += v.len();
        }
    }
    let get = t.elapsed();
    assert_eq!(found, n * value.len());

    println!(
        "entries {n}: insert {:.0} ns/op, get {:.0} ns/op, arena {} MiB",
        ins.as_nanos() as f64 / n as f64,
        get.as_nanos() as f64 / n as f64,
        m.approximate_memory_usage() >> 20
    );
}
