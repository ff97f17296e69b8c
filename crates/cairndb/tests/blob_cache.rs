//! The blob cache (`Options::blob_cache`, `Options::prepopulate_blob_cache`):
//! hot blob values are served from memory, counted in `DbStats`; values
//! stay right when garbage collection moves them to new blob files, across
//! reopens, and when blob reads fail or find damage.

mod common;

use std::path::Path;
use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::{
    BlobCacheConfig, Db, DbStats, Options, PrepopulateBlobCache, ReadOptions, WriteOptions,
};

const MIN_BLOB: usize = 256;

fn options(fs: Arc<dyn Fs>, cache: BlobCacheConfig) -> Options {
    Options {
        enable_blob_files: true,
        min_blob_size: MIN_BLOB as u64,
        blob_file_size: 64 << 10,
        blob_cache: cache,
        // Room for every value of these tests, shared or not.
        block_cache_size: 4 << 20,
        ..common::small_options(fs)
    }
}

fn k(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A value that names its key and round.
fn val(i: usize, round: usize) -> Vec<u8> {
    let mut v = format!("{i:05}:{round:05}:").into_bytes();
    v.resize(
        MIN_BLOB + (i * 37 + round) % 1500,
        b'a' + (round % 26) as u8,
    );
    v
}

fn fill(db: &Db, n: usize, round: usize) {
    for i in 0..n {
        db.put(&WriteOptions::default(), &k(i), &val(i, round))
            .unwrap();
    }
    db.flush().unwrap();
}

fn read_all(db: &Db, n: usize, want: impl Fn(usize) -> Vec<u8>) {
    for i in 0..n {
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(want(i)),
            "key {i}"
        );
    }
}

fn blob_counts(s: &DbStats) -> (u64, u64, u64) {
    (s.blob_cache_hits, s.blob_cache_misses, s.blob_bytes_read)
}

#[test]
fn second_reads_are_blob_cache_hits_that_read_no_blob_file() {
    for cache in [
        BlobCacheConfig::SharedWithBlockCache,
        BlobCacheConfig::Dedicated(2 << 20),
    ] {
        let fs = MemFs::new();
        let db = Db::open("/db", options(Arc::new(fs.clone()), cache)).unwrap();
        let n = 100;
        fill(&db, n, 0);
        let before = db.stats();
        assert_eq!(blob_counts(&before), (0, 0, 0), "{cache:?}");
        read_all(&db, n, |i| val(i, 0));
        let first = db.stats();
        let value_bytes: u64 = (0..n).map(|i| val(i, 0).len() as u64).sum();
        assert_eq!(blob_counts(&first), (0, n as u64, value_bytes), "{cache:?}");
        assert!(first.blob_cache_usage >= value_bytes, "{first:?}");
        // Again: all hits, not one more byte read from a blob file.
        read_all(&db, n, |i| val(i, 0));
        let mut buf = Vec::new();
        for i in 0..n {
            assert!(db
                .get_into(&ReadOptions::default(), &k(i), &mut buf)
                .unwrap());
            assert_eq!(buf, val(i, 0));
        }
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        for i in 0..n {
            assert_eq!(it.value(), val(i, 0).as_slice());
            it.next();
        }
        it.status().unwrap();
        let second = db.stats();
        assert_eq!(
            blob_counts(&second),
            (3 * n as u64, n as u64, value_bytes),
            "{cache:?}"
        );
        let text = db.property("rocksdb.stats").unwrap();
        assert!(
            text.contains("Blob reads:") && text.contains("300 hits"),
            "{text}"
        );
        let usage: u64 = db
            .property("rocksdb.blob-cache-usage")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(usage, second.blob_cache_usage);
        if cache == BlobCacheConfig::SharedWithBlockCache {
            // One cache: its usage covers both blocks and values.
            assert_eq!(second.blob_cache_usage, second.block_cache_usage);
        } else {
            assert!(second.blob_cache_usage <= 2 << 20);
        }
    }
}

#[test]
fn without_a_blob_cache_every_read_reads_the_blob_file() {
    let fs = MemFs::new();
    let db = Db::open(
        "/db",
        options(Arc::new(fs.clone()), BlobCacheConfig::Disabled),
    )
    .unwrap();
    fill(&db, 50, 0);
    read_all(&db, 50, |i| val(i, 0));
    read_all(&db, 50, |i| val(i, 0));
    let s = db.stats();
    let value_bytes: u64 = (0..50).map(|i| val(i, 0).len() as u64).sum();
    assert_eq!(blob_counts(&s), (0, 0, 2 * value_bytes));
    assert_eq!(s.blob_cache_usage, 0);
}

#[test]
fn fill_cache_off_reads_leave_the_blob_cache_alone() {
    let fs = MemFs::new();
    let db = Db::open(
        "/db",
        options(Arc::new(fs.clone()), BlobCacheConfig::Dedicated(1 << 20)),
    )
    .unwrap();
    fill(&db, 40, 0);
    let ro = ReadOptions {
        fill_cache_off: true,
        ..Default::default()
    };
    for i in 0..40 {
        assert_eq!(db.get(&ro, &k(i)).unwrap(), Some(val(i, 0)));
    }
    let mut it = db.iter(&ro).unwrap();
    it.seek_to_first();
    for i in 0..40 {
        assert_eq!(it.value(), val(i, 0).as_slice());
        it.next();
    }
    drop(it);
    let s = db.stats();
    assert_eq!((s.blob_cache_hits, s.blob_cache_misses), (0, 80));
    assert_eq!(s.blob_cache_usage, 0);
    // A filling read then caches, and the next one hits.
    read_all(&db, 40, |i| val(i, 0));
    read_all(&db, 40, |i| val(i, 0));
    let s = db.stats();
    assert_eq!((s.blob_cache_hits, s.blob_cache_misses), (40, 120));
}

#[test]
fn prepopulated_flush_values_are_hits_on_their_first_read() {
    let fs = MemFs::new();
    let mut o = options(Arc::new(fs.clone()), BlobCacheConfig::SharedWithBlockCache);
    o.prepopulate_blob_cache = PrepopulateBlobCache::FlushOnly;
    // Compressed in the file, uncompressed in the cache.
    o.blob_compression_type = cairndb::CompressionType::Lz4;
    let db = Db::open("/db", o.clone()).unwrap();
    fill(&db, 60, 0);
    assert!(db.stats().blob_cache_usage > 0);
    read_all(&db, 60, |i| val(i, 0));
    let s = db.stats();
    assert_eq!(blob_counts(&s), (60, 0, 0));
    // Recovery at open writes blob files, but does not prepopulate.
    for i in 0..10 {
        db.put(&WriteOptions::default(), &k(i), &val(i, 1)).unwrap();
    }
    db.simulate_crash();
    let db = Db::open("/db", o).unwrap();
    read_all(&db, 10, |i| val(i, 1));
    let s = db.stats();
    assert_eq!((s.blob_cache_hits, s.blob_cache_misses), (0, 10));
}

/// Values read into the cache, then overwritten or moved to new blob files
/// by garbage collection, whose old files are then deleted: every read
/// returns the key's current value, and a moved one is looked up under its
/// new file (a miss, then hits), never found under the old one.
#[test]
fn cached_values_stay_right_when_gc_relocates_them_and_after_reopen() {
    for cache in [
        BlobCacheConfig::SharedWithBlockCache,
        BlobCacheConfig::Dedicated(1 << 20),
    ] {
        let fs = MemFs::new();
        let mut o = options(Arc::new(fs.clone()), cache);
        o.enable_blob_garbage_collection = true;
        o.blob_garbage_collection_age_cutoff = 1.0;
        o.level0_file_num_compaction_trigger = 8;
        o.prepopulate_blob_cache = PrepopulateBlobCache::FlushOnly;
        let db = Db::open("/db", o.clone()).unwrap();
        let n = 80;
        fill(&db, n, 0);
        read_all(&db, n, |i| val(i, 0));
        let first_files = common::blob_file_numbers(&fs);
        // Overwrite every third key; the rest only move.
        for i in (0..n).step_by(3) {
            db.put(&WriteOptions::default(), &k(i), &val(i, 1)).unwrap();
        }
        db.flush().unwrap();
        let want = |i: usize| val(i, usize::from(i.is_multiple_of(3)));
        read_all(&db, n, want);
        // The age cutoff of 1.0 moves every live value, each time.
        db.compact_range(None, None).unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let s = db.stats();
        assert!(s.blob_bytes_relocated > 0, "{s:?}");
        let misses = s.blob_cache_misses;
        read_all(&db, n, want);
        // Garbage collection does not fill the cache: the first read of
        // each moved value misses under its new file number.
        assert_eq!(db.stats().blob_cache_misses - misses, n as u64);
        read_all(&db, n, want);
        assert_eq!(db.stats().blob_cache_misses - misses, n as u64);
        // New values again, in new files.
        fill(&db, n, 2);
        read_all(&db, n, |i| val(i, 2));
        db.close().unwrap();
        let now = common::blob_file_numbers(&fs);
        assert!(
            first_files.iter().all(|f| !now.contains(f)),
            "{first_files:?} still among {now:?}"
        );
        let db = Db::open("/db", o).unwrap();
        db.wait_for_compactions().unwrap();
        let before = db.stats();
        read_all(&db, n, |i| val(i, 2));
        read_all(&db, n, |i| val(i, 2));
        let s = db.stats();
        assert_eq!(
            (
                s.blob_cache_hits - before.blob_cache_hits,
                s.blob_cache_misses - before.blob_cache_misses
            ),
            (n as u64, n as u64)
        );
    }
}

/// A failed or damaged blob read is an error every time until the cause
/// is gone: nothing is cached for it. Values cached before the fault are
/// still served (the cache holds checked bytes).
#[test]
fn blob_read_errors_and_damage_are_never_cached() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let o = options(Arc::new(fault.clone()), BlobCacheConfig::Dedicated(1 << 20));
    let db = Db::open("/db", o.clone()).unwrap();
    fill(&db, 30, 0);
    assert_eq!(
        db.get(&ReadOptions::default(), &k(0)).unwrap(),
        Some(val(0, 0))
    );
    fault.inject(FaultRule::new(FaultOp::Read, libc::EIO).on_path(".blob"));
    for _ in 0..2 {
        let e = db.get(&ReadOptions::default(), &k(1)).unwrap_err();
        assert!(
            e.io_kind().is_some() && e.to_string().contains(".blob"),
            "{e}"
        );
    }
    assert_eq!(
        db.get(&ReadOptions::default(), &k(0)).unwrap(),
        Some(val(0, 0))
    );
    fault.clear();
    read_all(&db, 30, |i| val(i, 0));
    db.close().unwrap();

    // A flipped byte inside a value: a checksum error on every read.
    let num = common::blob_file_numbers(&mem)[0];
    let p = Path::new("/db").join(format!("{num:06}.blob"));
    let mut data = mem.contents(&p).unwrap();
    let at = data.len() / 2;
    data[at] ^= 0x5a;
    mem.set_contents(&p, data);
    let db = Db::open("/db", o).unwrap();
    let mut bad = Vec::new();
    for round in 0..2 {
        for i in 0..30 {
            match db.get(&ReadOptions::default(), &k(i)) {
                Ok(v) => assert_eq!(v, Some(val(i, 0))),
                Err(e) => {
                    assert!(e.is_corruption(), "{e}");
                    if round == 0 {
                        bad.push(i);
                    } else {
                        assert!(bad.contains(&i));
                    }
                }
            }
        }
    }
    assert_eq!(bad.len(), 1, "{bad:?}");
    let s = db.stats();
    assert_eq!((s.blob_cache_hits, s.blob_cache_misses), (29, 31));
}
