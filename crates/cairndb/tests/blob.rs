//! Key-value separation (blob files, `docs/format/blob.md`): flushes move
//! large values into blob files; point reads, iterators, snapshots and
//! transactions read them back; compactions pass references through, count
//! dropped ones as garbage and, with garbage collection, relocate values out
//! of old blob files; crashes, damage and I/O errors are handled as for
//! tables.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::env::Fs;
use cairndb::{
    BlobCacheConfig, CompressionType, Db, Error, Options, PrepopulateBlobCache, ReadOptions,
    WriteOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const MIN_BLOB: usize = 256;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

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
    let stats = db.property("rocksdb.stats").unwrap();
    assert!(stats.contains("Blob files:"), "{stats}");
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

fn value(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.gen_range(0..10) {
        0..=3 => rng.gen_range(0..MIN_BLOB),
        4..=8 => rng.gen_range(MIN_BLOB..MIN_BLOB * 4),
        _ => rng.gen_range(4000..20000),
    };
    let b = rng.gen::<u8>();
    (0..len).map(|i| b.wrapping_add((i % 11) as u8)).collect()
}

fn check_model(db: &Db, model: &Model, ro: &ReadOptions) {
    for (k, v) in model.iter().step_by(3) {
        assert_eq!(
            db.get(ro, k).unwrap().as_ref(),
            Some(v),
            "{:?}",
            String::from_utf8_lossy(k)
        );
    }
    let mut it = db.iter(ro).unwrap();
    it.seek_to_first();
    for (k, v) in model {
        assert!(it.valid(), "missing {:?}", String::from_utf8_lossy(k));
        assert_eq!(it.key(), k.as_slice());
        assert_eq!(it.value(), v.as_slice(), "{:?}", String::from_utf8_lossy(k));
        it.next();
    }
    assert!(!it.valid());
    it.status().unwrap();
    // Backward, touching only some values (the others stay unread).
    it.seek_to_last();
    for (i, (k, v)) in model.iter().rev().enumerate() {
        assert_eq!(it.key(), k.as_slice());
        if i % 2 == 0 {
            assert_eq!(it.value(), v.as_slice());
        }
        it.prev();
    }
    assert!(!it.valid());
    it.status().unwrap();
}

/// Once background work is done, with no reader holding an old version,
/// the blob files on disk are exactly the live ones.
fn assert_no_orphans(fs: &dyn Fs, db: &Db) {
    // Background compactions (garbage collection forced by the threshold
    // may start right after an open) write blob files not yet listed.
    db.wait_for_compactions().unwrap();
    let on_disk = blob_files(fs).len() as u64;
    assert_eq!(
        on_disk,
        prop(db, "num-blob-files"),
        "blob files on disk {:?}",
        blob_files(fs)
    );
}

/// A blob cache small enough that values are evicted all the time, filled
/// by flushes too.
fn with_small_blob_cache(mut o: Options) -> Options {
    o.blob_cache = BlobCacheConfig::Dedicated(32 << 10);
    o.prepopulate_blob_cache = PrepopulateBlobCache::FlushOnly;
    o
}

/// The block cache as the blob cache, filled by flushes too.
fn with_shared_blob_cache(mut o: Options) -> Options {
    o.blob_cache = BlobCacheConfig::SharedWithBlockCache;
    o.prepopulate_blob_cache = PrepopulateBlobCache::FlushOnly;
    o
}

#[test]
fn model_with_flushes_compactions_gc_and_reopens() {
    type Cache = fn(Options) -> Options;
    let configs: [(bool, Cache); 4] = [
        (false, |o| o),
        (true, |o| o),
        (true, with_small_blob_cache),
        (true, with_shared_blob_cache),
    ];
    for (gc, cache) in configs {
        let seed = common::seed("blob_model");
        let mut rng = SmallRng::seed_from_u64(seed);
        let (fs, o) = mem_blob_options();
        let mut o = cache(o);
        o.enable_blob_garbage_collection = gc;
        o.blob_garbage_collection_age_cutoff = 0.5;
        o.blob_compression_type = match rng.gen_range(0..3) {
            0 => CompressionType::None,
            1 => CompressionType::Lz4,
            _ => CompressionType::Zstd(1),
        };
        o.blob_compaction_readahead_size = [0, 4096, 1 << 20][rng.gen_range(0..3)];
        let mut db = Db::open("/db", o.clone()).unwrap();
        let mut model = BTreeMap::new();
        let mut snaps: Vec<(cairndb::Snapshot, Model)> = Vec::new();
        let space = 400;
        let w = WriteOptions::default();
        for step in 0..6000 {
            match rng.gen_range(0..1000) {
                0..=599 => {
                    let k = k(rng.gen_range(0..space));
                    let v = value(&mut rng);
                    db.put(&w, &k, &v).unwrap();
                    model.insert(k, v);
                }
                600..=799 => {
                    let k = k(rng.gen_range(0..space));
                    db.delete(&w, &k).unwrap();
                    model.remove(&k);
                }
                800..=949 => {
                    let k = k(rng.gen_range(0..space));
                    assert_eq!(
                        db.get(&ReadOptions::default(), &k).unwrap().as_ref(),
                        model.get(&k)
                    );
                }
                950..=964 => db.flush().unwrap(),
                965..=974 => db.compact_range(None, None).unwrap(),
                975..=984 => {
                    if snaps.len() < 3 {
                        snaps.push((db.snapshot(), model.clone()));
                    } else {
                        let (s, m) = snaps.remove(0);
                        let ro = ReadOptions {
                            snapshot: Some(s),
                            ..Default::default()
                        };
                        check_model(&db, &m, &ro);
                    }
                }
                985..=989 => {
                    snaps.clear();
                    db.close().unwrap();
                    db = Db::open("/db", o.clone()).unwrap();
                }
                _ => check_model(&db, &model, &ReadOptions::default()),
            }
            if step % 1000 == 999 {
                db.wait_for_compactions().unwrap();
            }
        }
        for (s, m) in snaps.drain(..) {
            let ro = ReadOptions {
                snapshot: Some(s),
                ..Default::default()
            };
            check_model(&db, &m, &ro);
        }
        check_model(&db, &model, &ReadOptions::default());
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        check_model(&db, &model, &ReadOptions::default());
        assert_no_orphans(&fs, &db);
        db.close().unwrap();
        let db = Db::open("/db", o.clone()).unwrap();
        check_model(&db, &model, &ReadOptions::default());
        assert_no_orphans(&fs, &db);
        if o.blob_cache != BlobCacheConfig::Disabled {
            check_model(&db, &model, &ReadOptions::default());
            let s = db.stats();
            assert!(s.blob_cache_hits > 0 && s.blob_cache_misses > 0, "{s:?}");
        }
    }
}

#[test]
fn snapshot_and_iterator_keep_an_overwritten_blob_value_across_gc() {
    let (fs, mut o) = mem_blob_options();
    o.enable_blob_garbage_collection = true;
    o.blob_garbage_collection_age_cutoff = 1.0;
    // Only `compact_range` compacts: a background trivial move would put
    // the references in the last level, which `compact_range` leaves be.
    o.level0_file_num_compaction_trigger = 8;
    let db = Db::open("/db", o.clone()).unwrap();
    let w = WriteOptions::default();
    for i in 0..50 {
        db.put(&w, &k(i), &big(i, 1)).unwrap();
    }
    db.flush().unwrap();
    let first = blob_files(&fs);
    let snap = db.snapshot();
    let mut held = db.iter(&ReadOptions::default()).unwrap();
    for i in 0..50 {
        db.put(&w, &k(i), &big(i, 2)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.compact_range(None, None).unwrap();
    // Garbage collection moved every value out of the first blob files.
    let live_first = blob_files(&fs).iter().filter(|f| first.contains(f)).count();
    assert!(
        db.stats().blob_bytes_relocated > 0,
        "nothing relocated: {:?}",
        db.stats()
    );
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    for i in 0..50 {
        assert_eq!(db.get(&ro, &k(i)).unwrap(), Some(big(i, 1)));
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(big(i, 2))
        );
    }
    // The iterator's version still lists the first blob files: they stay
    // on disk while it lives, and it reads the old values.
    assert_eq!(
        live_first,
        first.len(),
        "{first:?} vs {:?}",
        blob_files(&fs)
    );
    held.seek_to_first();
    for i in 0..50 {
        assert_eq!(held.key(), k(i).as_slice());
        assert_eq!(held.value(), big(i, 1).as_slice());
        held.next();
    }
    held.status().unwrap();
    drop(held);
    drop(ro);
    drop(snap);
    // Now the first blob files go (the collector runs in `close`; after a
    // flush it runs on the flush thread, after `flush` returns).
    db.close().unwrap();
    let left: Vec<_> = blob_files(&fs)
        .into_iter()
        .filter(|f| first.contains(f))
        .collect();
    assert!(
        left.is_empty(),
        "{left:?} still on disk; first {first:?}, now {:?}",
        blob_files(&fs),
    );
    let db = Db::open("/db", o).unwrap();
    assert_no_orphans(&fs, &db);
    for i in 0..50 {
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(big(i, 2))
        );
    }
}

/// Overwrites most keys 5 times; with garbage collection the blob files
/// stay within a small multiple of the live bytes, without it they keep
/// every old file that still holds one live value.
#[test]
fn space_stays_bounded_when_overwriting_with_gc() {
    let mut bytes = Vec::new();
    for gc in [true, false] {
        let (fs, mut o) = mem_blob_options();
        o.enable_blob_garbage_collection = gc;
        let db = Db::open("/db", o).unwrap();
        let w = WriteOptions::default();
        let n = 400;
        let mut rng = SmallRng::seed_from_u64(7);
        let mut live: BTreeMap<usize, usize> = BTreeMap::new();
        for round in 0..6 {
            for i in 0..n {
                // Round 0 writes every key; later rounds 80% of them.
                if round == 0 || rng.gen_ratio(4, 5) {
                    db.put(&w, &k(i), &big(i, round)).unwrap();
                    live.insert(i, big(i, round).len());
                }
            }
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
        }
        for _ in 0..4 {
            db.compact_range(None, None).unwrap();
        }
        let live_bytes: u64 = live
            .iter()
            .map(|(i, len)| (k(*i).len() + len + 12) as u64)
            .sum();
        let on_disk: u64 = blob_files(&fs).iter().map(|f| f.1).sum();
        eprintln!("gc {gc}: live {live_bytes}, blob files {on_disk}");
        if gc {
            assert!(on_disk < 2 * live_bytes, "{on_disk} >= 2 x {live_bytes}");
        }
        for (i, _) in live.iter().step_by(7) {
            assert!(db.get(&ReadOptions::default(), &k(*i)).unwrap().is_some());
        }
        assert_no_orphans(&fs, &db);
        bytes.push(on_disk);
    }
    assert!(bytes[0] < bytes[1], "gc did not help: {bytes:?}");
}

#[test]
fn crash_mid_flush_loses_nothing_acknowledged_and_leaves_no_orphan_blob() {
    for (op, path, cached) in [
        (FaultOp::Create, ".sst", false),
        (FaultOp::Sync, ".sst", false),
        (FaultOp::Sync, ".blob", false),
        (FaultOp::Write, ".blob", false),
        // The failed flush put its values into the cache: never read.
        (FaultOp::Sync, ".sst", true),
        (FaultOp::Write, ".blob", true),
    ] {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let mut o = blob_options(Arc::new(fault.clone()));
        if cached {
            o = with_shared_blob_cache(o);
        }
        let db = Db::open("/db", o.clone()).unwrap();
        let w = WriteOptions::default();
        for i in 0..100 {
            db.put(&w, &k(i), &big(i, 0)).unwrap();
        }
        db.flush().unwrap();
        for i in 100..200 {
            db.put(&w, &k(i), &big(i, 0)).unwrap();
        }
        fault.inject(FaultRule::new(op, libc::EIO).on_path(path));
        let e = db.flush().unwrap_err();
        assert!(matches!(e, Error::ReadOnly { .. }), "{op:?} {path}: {e}");
        // Read-only; reads keep working, blob values included.
        assert!(matches!(
            db.put(&w, b"later", b"x"),
            Err(Error::ReadOnly { .. })
        ));
        assert_eq!(
            db.get(&ReadOptions::default(), &k(5)).unwrap(),
            Some(big(5, 0))
        );
        db.simulate_crash();
        mem.process_crash();
        fault.clear();
        let db = Db::open("/db", o.clone()).unwrap();
        for i in 0..200 {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(big(i, 0)),
                "{op:?} {path}: key {i}"
            );
        }
        assert_no_orphans(&mem, &db);
        db.close().unwrap();
        // And once more after a power loss (only synced bytes survive).
        let db = Db::open("/db", o.clone()).unwrap();
        db.simulate_crash();
        mem.power_loss();
        let db = Db::open("/db", o).unwrap();
        for i in (0..200).step_by(11) {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(big(i, 0))
            );
        }
        assert_no_orphans(&mem, &db);
    }
}

#[test]
fn corrupted_blob_record_is_an_error_naming_the_file_and_offset() {
    let (fs, o) = mem_blob_options();
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..20 {
        db.put(&WriteOptions::default(), &k(i), &big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let (num, _) = blob_files(&fs)[0];
    let p = Path::new("/db").join(format!("{num:06}.blob"));
    let mut data = fs.contents(&p).unwrap();
    // Flip a byte in the middle of the file: inside some value.
    let at = data.len() / 2;
    data[at] ^= 0x5a;
    fs.set_contents(&p, data);
    let db = Db::open("/db", o).unwrap();
    let mut errors = 0;
    for i in 0..20 {
        match db.get(&ReadOptions::default(), &k(i)) {
            Ok(v) => assert_eq!(v, Some(big(i, 0))),
            Err(e) => {
                let s = e.to_string();
                assert!(e.is_corruption(), "{s}");
                assert!(s.contains(&format!("{num:06}.blob")), "{s}");
                assert!(s.contains("checksum mismatch"), "{s}");
                errors += 1;
            }
        }
    }
    assert_eq!(errors, 1);
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        let _ = it.value();
        it.next();
    }
    let e = it.status().unwrap_err().to_string();
    assert!(e.contains(&format!("{num:06}.blob")), "{e}");
}

#[test]
fn blob_write_errors_make_the_db_read_only_without_losing_acknowledged_writes() {
    for (op, short) in [
        (FaultOp::Write, false),
        (FaultOp::Write, true),
        (FaultOp::Sync, false),
    ] {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let mut o = blob_options(Arc::new(fault.clone()));
        o.enable_blob_garbage_collection = true;
        o.blob_garbage_collection_age_cutoff = 1.0;
        // No compaction but the one below, which rewrites level 0.
        o.level0_file_num_compaction_trigger = 8;
        let db = Db::open("/db", o.clone()).unwrap();
        let w = WriteOptions {
            sync: true,
            ..Default::default()
        };
        for i in 0..100 {
            db.put(&w, &k(i), &big(i, 0)).unwrap();
        }
        db.flush().unwrap();
        for i in (0..100).step_by(10) {
            db.put(&w, &k(i), b"small").unwrap();
        }
        db.flush().unwrap();
        let want = |i: usize| {
            if i.is_multiple_of(10) {
                b"small".to_vec()
            } else {
                big(i, 0)
            }
        };
        // A garbage-collecting compaction writes blob files too.
        let mut rule = FaultRule::new(op, libc::EIO).on_path(".blob");
        if short {
            rule = rule.short();
        }
        fault.inject(rule);
        let e = db.compact_range(None, None).unwrap_err();
        assert!(e.to_string().contains(".blob"), "{e}");
        assert!(matches!(
            db.put(&w, b"later", b"x"),
            Err(Error::ReadOnly { .. })
        ));
        for i in (0..100).step_by(9) {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(want(i))
            );
        }
        db.simulate_crash();
        mem.process_crash();
        fault.clear();
        let db = Db::open("/db", o).unwrap();
        for i in 0..100 {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(want(i))
            );
        }
        db.compact_range(None, None).unwrap();
        assert_no_orphans(&mem, &db);
    }
}

#[test]
fn transactions_read_blob_values() {
    let (_fs, o) = mem_blob_options();
    let tdb =
        cairndb::TransactionDb::open("/db", o, cairndb::TransactionDbOptions::default()).unwrap();
    let w = WriteOptions::default();
    let mut t = tdb.begin(&w, &cairndb::TransactionOptions::default());
    t.put(&k(1), &big(1, 0)).unwrap();
    t.commit().unwrap();
    tdb.db().flush().unwrap();
    let t = tdb.begin(&w, &cairndb::TransactionOptions::default());
    assert_eq!(
        t.get(&ReadOptions::default(), &k(1)).unwrap(),
        Some(big(1, 0))
    );
    let mut it = t.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert_eq!(it.value(), big(1, 0).as_slice());
}

/// A blob file half of whose values were overwritten, and whose other half
/// sits in tables no compaction reaches, drains only when
/// `blob_garbage_collection_force_threshold` makes a compaction of those
/// tables happen.
#[test]
fn force_threshold_compacts_the_tables_that_pin_the_oldest_blob_file() {
    let mut first_left = Vec::new();
    for threshold in [0.4, 1.0] {
        let (fs, mut o) = mem_blob_options();
        o.write_buffer_size = 4 << 20;
        o.blob_file_size = 4 << 20;
        o.target_file_size_base = 4 << 10;
        o.enable_blob_garbage_collection = true;
        o.blob_garbage_collection_age_cutoff = 0.5;
        o.blob_garbage_collection_force_threshold = threshold;
        let db = Db::open("/db", o.clone()).unwrap();
        let w = WriteOptions::default();
        let (a, b) = (0..200, 1000..1200);
        for i in a.clone().chain(b.clone()) {
            db.put(&w, &k(i), &big(i, 0)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        let first = blob_files(&fs);
        assert_eq!(first.len(), 1);
        // Overwrite the first half only: the compaction reaches only the
        // tables of that half.
        for i in a.clone() {
            db.put(&w, &k(i), &big(i, 1)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        for i in a.clone().step_by(13) {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(big(i, 1))
            );
        }
        for i in b.clone().step_by(13) {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(big(i, 0))
            );
        }
        db.close().unwrap();
        first_left.push(blob_files(&fs).iter().any(|f| first.contains(f)));
        let db = Db::open("/db", o).unwrap();
        for i in b.clone() {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(big(i, 0))
            );
        }
        assert_no_orphans(&fs, &db);
    }
    assert_eq!(
        first_left,
        [false, true],
        "first blob file still on disk (forced, not forced)"
    );
}

/// Blob files written while the option was on stay readable, and pass
/// through compactions, after a reopen with it off; zip-table levels hold
/// references like block-based ones.
#[test]
fn blob_values_survive_turning_the_option_off_and_zip_levels() {
    let (fs, mut o) = mem_blob_options();
    o.set_zip_from_level(1);
    let db = Db::open("/db", o.clone()).unwrap();
    let w = WriteOptions::default();
    for i in 0..300 {
        db.put(&w, &k(i), &big(i, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let off = Options {
        enable_blob_files: false,
        ..o
    };
    let db = Db::open("/db", off).unwrap();
    for i in (0..300).step_by(2) {
        db.put(&w, &k(i), &big(i, 1)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 0..300 {
        let want = big(i, if i.is_multiple_of(2) { 1 } else { 0 });
        assert_eq!(db.get(&ReadOptions::default(), &k(i)).unwrap(), Some(want));
    }
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek(&k(101));
    assert_eq!(it.value(), big(101, 0).as_slice());
    it.status().unwrap();
    drop(it);
    // Half the blob records were overwritten by values now in tables.
    assert!(prop(&db, "live-blob-file-garbage-size") > 0);
    assert_no_orphans(&fs, &db);
}

/// Readers (gets and iterators held across compactions) run while a writer
/// overwrites large values and background compactions collect blob
/// garbage: every value read is one the key was given.
#[test]
fn concurrent_reads_during_blob_garbage_collection() {
    for cache in [false, true] {
        concurrent_reads_during_gc(cache);
    }
}

fn concurrent_reads_during_gc(cache: bool) {
    let (fs, mut o) = mem_blob_options();
    if cache {
        o = with_small_blob_cache(o);
    }
    o.enable_blob_garbage_collection = true;
    o.blob_garbage_collection_age_cutoff = 0.5;
    o.blob_garbage_collection_force_threshold = 0.3;
    let db = Arc::new(Db::open("/db", o).unwrap());
    let n = 200;
    // A value names its key and round, so a reader can check it.
    fn val(i: usize, round: usize) -> Vec<u8> {
        let mut v = format!("{i:05}:{round:05}:").into_bytes();
        v.resize(MIN_BLOB + (i * 13 + round) % 900, b'x' ^ (round as u8));
        v
    }
    fn check(k: &[u8], v: &[u8]) {
        let i: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        let round: usize = std::str::from_utf8(&v[6..11]).unwrap().parse().unwrap();
        assert_eq!(v, val(i, round).as_slice(), "key {i}");
    }
    for i in 0..n {
        db.put(&WriteOptions::default(), &k(i), &val(i, 0)).unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = Vec::new();
    for t in 0..2 {
        let (db, stop) = (db.clone(), stop.clone());
        readers.push(std::thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(t);
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if rng.gen_ratio(1, 20) {
                    let mut it = db.iter(&ReadOptions::default()).unwrap();
                    it.seek_to_first();
                    let mut seen = 0;
                    while it.valid() {
                        check(it.key(), it.value());
                        seen += 1;
                        it.next();
                        if seen % 50 == 0 {
                            std::thread::yield_now();
                        }
                    }
                    it.status().unwrap();
                    assert_eq!(seen, n);
                } else {
                    let i = rng.gen_range(0..n);
                    let v = db.get(&ReadOptions::default(), &k(i)).unwrap().unwrap();
                    check(&k(i), &v);
                }
                reads += 1;
            }
            reads
        }));
    }
    for round in 1..40 {
        for i in (round % 3..n).step_by(3) {
            db.put(&WriteOptions::default(), &k(i), &val(i, round))
                .unwrap();
        }
        if round % 10 == 0 {
            db.compact_range(None, None).unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let s = db.stats();
    assert!(s.blob_bytes_relocated > 0);
    assert_eq!(cache, s.blob_cache_hits > 0, "{s:?}");
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", blob_options(Arc::new(fs.clone()))).unwrap();
    assert_no_orphans(&fs, &db);
}

/// A failed blob read reaches the reader as an I/O error naming the blob
/// file, and leaves the database writable; the same failure inside a
/// garbage-collecting compaction makes it read-only, as any compaction
/// read error does, and a reopen recovers everything.
#[test]
fn blob_read_errors_reach_the_reader_and_fail_a_gc_compaction() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let mut o = blob_options(Arc::new(fault.clone()));
    o.enable_blob_garbage_collection = true;
    o.blob_garbage_collection_age_cutoff = 1.0;
    o.level0_file_num_compaction_trigger = 8;
    let db = Db::open("/db", o.clone()).unwrap();
    let w = WriteOptions::default();
    for i in 0..50 {
        db.put(&w, &k(i), &big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    fault.inject(FaultRule::new(FaultOp::Read, libc::EIO).on_path(".blob"));
    let e = db.get(&ReadOptions::default(), &k(3)).unwrap_err();
    assert!(
        e.io_kind().is_some() && e.to_string().contains(".blob"),
        "{e}"
    );
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert_eq!(it.key(), k(0).as_slice());
    assert!(it.value().is_empty());
    assert!(it.status().unwrap_err().to_string().contains(".blob"));
    drop(it);
    // Still writable.
    db.put(&w, b"other", b"x").unwrap();
    let e = db.compact_range(None, None).unwrap_err();
    assert!(e.to_string().contains(".blob"), "{e}");
    assert!(matches!(
        db.put(&w, b"later", b"x"),
        Err(Error::ReadOnly { .. })
    ));
    fault.clear();
    for i in (0..50).step_by(7) {
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(big(i, 0))
        );
    }
    db.simulate_crash();
    mem.process_crash();
    let db = Db::open("/db", o).unwrap();
    for i in 0..50 {
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(big(i, 0))
        );
    }
    assert_eq!(
        db.get(&ReadOptions::default(), b"other").unwrap(),
        Some(b"x".to_vec())
    );
    assert_no_orphans(&mem, &db);
}
