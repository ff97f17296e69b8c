//! Key-value separation (blob files, `docs/format/blob.md`): flushes move
//! large values into blob files; point reads, iterators, snapshots and
//! transactions read them back; compactions pass references through, count
//! dropped ones as garbage and, with garbage collection, relocate values out
//! of old blob files; crashes, damage and I/O errors are handled as for
//! tables.

mod common;

use std::path::Path;
use std::sync::Arc;

use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::{Db, Options, ReadOptions, WriteOptions};

const MIN_BLOB: usize = 256;

fn blob_options(fs: Arc<dyn Fs>) -> Options {
    Options {
        enable_blob_files: true,
        min_blob_size: MIN_BLOB as u64,
        blob_file_size: 64 << 10,
        ..common::small_options(fs)
    }
}

fn mem_blob_options() -> (MemFs, Options) {
    let fs = MemFs::new();
    let o = blob_options(Arc::new(fs.clone()));
    (fs, o)
}

fn big(i: usize, round: usize) -> Vec<u8> {
    let len = MIN_BLOB + (i * 37) % 2000;
    (0..len)
        .map(|j| (i as u8).wrapping_mul(31) ^ (j as u8) ^ (round as u8))
        .collect()
}

fn k(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Blob files in the directory: (number, size).
fn blob_files(fs: &dyn Fs) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = fs
        .list_dir(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter_map(|n| {
            let num = n.strip_suffix(".blob")?.parse().ok()?;
            Some((num, fs.file_size(&Path::new("/db").join(&n)).unwrap()))
        })
        .collect();
    v.sort_unstable();
    v
}

fn prop(db: &Db, name: &str) -> u64 {
    db.property(&format!("rocksdb.{name}"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn flush_separates_large_values_and_reads_resolve_them() {
    let (fs, o) = mem_blob_options();
    let db = Db::open("/db", o.clone()).unwrap();
    let w = WriteOptions::default();
    for i in 0..200 {
        db.put(&w, &k(i), &big(i, 0)).unwrap();
        db.put(&w, format!("small{i:05}").as_bytes(), b"tiny")
            .unwrap();
    }
    db.flush().unwrap();
    assert!(!blob_files(&fs).is_empty());
    assert!(prop(&db, "num-blob-files") >= 1);
    // The tables hold references, not the values.
    let sst: u64 = prop(&db, "total-sst-files-size");
    assert!(sst < 200 * MIN_BLOB as u64, "tables hold {sst} bytes");
    let r = ReadOptions::default();
    for i in 0..200 {
        assert_eq!(db.get(&r, &k(i)).unwrap(), Some(big(i, 0)));
        assert_eq!(
            db.get(&r, format!("small{i:05}").as_bytes()).unwrap(),
            Some(b"tiny".to_vec())
        );
    }
    // Iterators in both directions.
    let mut it = db.iter(&r).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && it.key().starts_with(b"key") {
        assert_eq!(it.value(), big(n, 0).as_slice());
        n += 1;
        it.next();
    }
    assert_eq!(n, 200);
    it.seek_for_prev(b"key00199");
    for i in (0..200).rev() {
        assert_eq!(it.key(), k(i).as_slice());
        assert_eq!(it.value(), big(i, 0).as_slice());
        it.prev();
    }
    it.status().unwrap();
    drop(it);
    db.close().unwrap();
    let db = Db::open("/db", o).unwrap();
    for i in 0..200 {
        assert_eq!(db.get(&r, &k(i)).unwrap(), Some(big(i, 0)));
    }
}

#[test]
fn blob_files_off_by_default_writes_none() {
    let (fs, o) = common::mem_options();
    let db = Db::open("/db", o).unwrap();
    for i in 0..100 {
        db.put(&WriteOptions::default(), &k(i), &big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(blob_files(&fs).is_empty());
    assert_eq!(prop(&db, "num-blob-files"), 0);
}
