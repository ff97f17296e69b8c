//! Prefix iteration: results, and the prefix filters skipping tables.

mod common;

use cairndb::{Db, ReadOptions, WriteOptions};

fn key(p: usize, i: usize) -> Vec<u8> {
    format!("p{p:02}-{i:05}").into_bytes()
}

#[test]
fn prefix_seek_for_an_absent_prefix_reads_no_data_block() {
    let (_fs, mut o) = common::mem_options();
    o.block_cache_size = 1 << 20;
    let db = Db::open("/db", o.clone()).unwrap();
    for p in (0..60).filter(|p| p % 10 != 5) {
        for i in 0..100 {
            db.put(&WriteOptions::default(), &key(p, i), &[b'v'; 30])
                .unwrap();
        }
        if p % 20 == 0 {
            db.flush().unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    for p in 0..10 {
        db.put(&WriteOptions::default(), &key(p * 6 + 1, 999), b"fresh")
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", o).unwrap();
    let ro = ReadOptions {
        prefix_same_as_start: true,
        ..Default::default()
    };
    // Present prefixes: exactly their keys, in order, both directions.
    for p in [0, 1, 7, 31, 59] {
        let pre = format!("p{p:02}-");
        let mut it = db.iter(&ro).unwrap();
        it.seek(pre.as_bytes());
        let mut got = Vec::new();
        while it.valid() {
            got.push(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
        let mut want: Vec<Vec<u8>> = (0..100).map(|i| key(p, i)).collect();
        if p % 6 == 1 && p / 6 < 10 {
            want.push(key(p, 999));
        }
        if p % 10 == 5 {
            want.clear();
        }
        assert_eq!(got.len(), want.len(), "prefix {pre}");
        assert_eq!(got, want, "prefix {pre}");
    }
    // Absent prefixes inside the key range: no data block is read.
    let before = db.stats();
    for p in [5, 15, 35, 45] {
        let mut it = db.iter(&ro).unwrap();
        it.seek(format!("p{p:02}-").as_bytes());
        assert!(!it.valid(), "prefix p{p:02} is absent");
        it.status().unwrap();
    }
    let after = db.stats();
    let reads = (after.block_cache_hits + after.block_cache_misses)
        - (before.block_cache_hits + before.block_cache_misses);
    assert!(reads <= 2, "{reads} block lookups for absent prefixes");
    // Without prefix mode the same seeks do read blocks (the test is sensitive).
    let total = ReadOptions::default();
    let b2 = db.stats();
    for p in [5, 15, 35, 45] {
        let mut it = db.iter(&total).unwrap();
        it.seek(format!("p{p:02}-").as_bytes());
        assert!(it.valid());
    }
    let a2 = db.stats();
    assert!(
        (a2.block_cache_hits + a2.block_cache_misses)
            - (b2.block_cache_hits + b2.block_cache_misses)
            > 3
    );
}
