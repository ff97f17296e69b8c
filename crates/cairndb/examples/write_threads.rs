//! Measures the write path: `threads` writers each put `num / threads` random
//! 16-byte keys with 100-byte values, with or without sync, and prints
//! ops/sec and how many writes each WAL write and sync carried.
//!
//! `cargo run --release -p cairndb --example write_threads -- THREADS NUM SYNC(0|1) [DIR]`

use std::sync::Arc;
use std::time::Instant;

use cairndb::{Db, Options, WriteOptions};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let threads: usize = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(16);
    let num: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let sync = a.get(3).map(|s| s == "1").unwrap_or(true);
    let tmp = tempfile::tempdir_in(a.get(4).map(String::as_str).unwrap_or("/tmp")).unwrap();
    let recycle: usize = std::env::var("RECYCLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(Options::default().recycle_log_file_num);
    let wbs: usize = std::env::var("WBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64 << 20);
    let opts = Options {
        recycle_log_file_num: recycle,
        write_buffer_size: wbs,
        ..Options::default()
    };
    let db = Arc::new(Db::open(tmp.path(), opts).unwrap());
    let per = num / threads;
    let t0 = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut x = (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let v = [b'v'; 100];
                for _ in 0..per {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = format!("{:016}", x % 1_000_000_000);
                    db.put(
                        &WriteOptions {
                            sync,
                            ..Default::default()
                        },
                        k.as_bytes(),
                        &v,
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let s = db.stats();
    println!(
        "threads {threads} sync {sync}: {:.0} ops/sec, {:.2} us/op, {} writes in {} groups ({:.1}/group), {} syncs",
        (per * threads) as f64 / secs,
        secs * 1e6 / (per * threads) as f64,
        s.writes,
        s.write_groups,
        s.writes as f64 / s.write_groups.max(1) as f64,
        s.wal_syncs
    );
}
