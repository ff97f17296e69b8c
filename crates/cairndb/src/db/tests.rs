//! Regression tests for races between readers, writers and the background
//! threads, each forced with a hook (`db/hooks.rs`) at the point where the
//! bad interleaving used to be possible.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::MutexGuard;

use super::hooks;
use crate::env::mem::MemFs;
use crate::env::Fs;
use crate::filename::{self, FileType};
use crate::{Db, Options, ReadOptions, WriteOptions};

fn mem_opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

fn put(db: &Db, k: &[u8], v: &[u8]) {
    db.put(&WriteOptions::default(), k, v).unwrap();
}

/// Overwrites `k` and pushes both versions through a flush and a full
/// compaction, which (with no snapshot) keeps only the newest.
fn overwrite_and_compact(inner: &super::DbInner, k: &[u8], v: &[u8]) {
    let mut b = crate::WriteBatch::new();
    b.put(k, v);
    inner.write(&WriteOptions::default(), b).unwrap();
    inner.compact_range(None, None).unwrap();
}

/// The table files in `/db`, ascending.
fn table_numbers(fs: &dyn Fs) -> Vec<u64> {
    let mut v: Vec<u64> = fs
        .list_dir(Path::new("/db"))
        .unwrap()
        .iter()
        .filter_map(|n| match filename::parse_file_name(n) {
            Some((FileType::Table, num)) => Some(num),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// A database holding `k` = `v1` in a table.
fn db_with_compacted_k() -> (MemFs, Db) {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    put(&db, b"k", b"v1");
    db.compact_range(None, None).unwrap();
    (fs, db)
}

/// With no bound on open readers, each point read keeps its table's reader
/// on the file's metadata. Flushes and compactions replace those files:
/// reads must keep finding the newest values, and the replaced files must
/// still be deleted (their readers go with the versions that listed them).
#[test]
fn pinned_readers_follow_flushes_and_compactions() {
    let fs = MemFs::new();
    let opts = Options {
        max_open_files: usize::MAX,
        ..mem_opts(&fs)
    };
    let db = Db::open("/db", opts).unwrap();
    let ro = ReadOptions::default();
    for round in 0..6u32 {
        for i in 0..200u32 {
            put(
                &db,
                format!("k{i:04}").as_bytes(),
                format!("v{round}-{i}").as_bytes(),
            );
        }
        db.flush().unwrap();
        for i in (0..200u32).step_by(7) {
            let got = db.get(&ro, format!("k{i:04}").as_bytes()).unwrap();
            assert_eq!(got.as_deref(), Some(format!("v{round}-{i}").as_bytes()));
        }
    }
    db.compact_range(None, None).unwrap();
    for i in 0..200u32 {
        let got = db.get(&ro, format!("k{i:04}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(format!("v5-{i}").as_bytes()));
    }
    let live: Vec<u64> = {
        let v = db.inner.versions.lock().current();
        let mut n: Vec<u64> = v.files.iter().flatten().map(|f| f.number).collect();
        n.sort_unstable();
        n
    };
    assert_eq!(table_numbers(&fs), live, "replaced tables must be deleted");
}

/// `get` chose its sequence number before taking the super-version: a
/// write, flush and compaction in between dropped the version that
/// sequence could see, and a key present at both moments read as absent.
#[test]
fn get_racing_flush_and_compaction_finds_existing_key() {
    let (_fs, db) = db_with_compacted_k();
    db.inner.hooks.set(hooks::READ_BETWEEN, |i| {
        overwrite_and_compact(i, b"k", b"v2")
    });
    let got = db.get(&ReadOptions::default(), b"k").unwrap();
    assert!(
        matches!(got.as_deref(), Some(b"v1") | Some(b"v2")),
        "key present before and after the read was read as {got:?}"
    );
}

/// The same race for iterators.
#[test]
fn iter_racing_flush_and_compaction_finds_existing_key() {
    let (_fs, db) = db_with_compacted_k();
    db.inner.hooks.set(hooks::READ_BETWEEN, |i| {
        overwrite_and_compact(i, b"k", b"v2")
    });
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    it.status().unwrap();
    assert!(it.valid(), "the iterator saw an empty database");
    assert_eq!(it.key(), b"k");
}

/// `Db::snapshot` read `last_seq` outside the snapshot list's lock: a
/// compaction that listed the snapshots in the gap dropped the version the
/// new snapshot needed.
#[test]
fn snapshot_racing_compaction_keeps_its_versions() {
    let (_fs, db) = db_with_compacted_k();
    db.inner
        .hooks
        .set(hooks::SNAPSHOT, |i| overwrite_and_compact(i, b"k", b"v2"));
    let snap = db.snapshot();
    let ro = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    let got = db.get(&ro, b"k").unwrap();
    assert!(
        matches!(got.as_deref(), Some(b"v1") | Some(b"v2")),
        "the snapshot's version was dropped: read {got:?}"
    );
}

/// A compaction recorded its inputs as obsolete only after releasing
/// `versions`: the collector running in between deleted inputs that an
/// older super-version (an open iterator) still needed.
#[test]
fn collector_after_compaction_install_keeps_inputs_readers_hold() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    put(&db, b"a", b"1");
    db.flush().unwrap();
    put(&db, b"b", b"2");
    db.flush().unwrap();
    let inputs = table_numbers(&fs);
    assert_eq!(inputs.len(), 2);
    // Pins the current super-version (both level-0 tables).
    let it = db.iter(&ReadOptions::default()).unwrap();
    let (tx, rx) = mpsc::channel();
    db.inner.hooks.set(hooks::COMPACTION_INSTALLED, move |i| {
        i.delete_obsolete_files();
        tx.send(table_numbers(i.fs.as_ref())).unwrap();
    });
    db.compact_range(None, None).unwrap();
    let after_gc = rx.recv().unwrap();
    for n in &inputs {
        assert!(
            after_gc.contains(n),
            "table {n} was deleted while an iterator held it: {after_gc:?}"
        );
    }
    drop(it);
}

/// Compacts every file of `level` one level down as the background
/// compactor does: a lone file with nothing under it moves unchanged (a
/// trivial move), under `compaction_lock` (`_held`).
fn compact_level(_held: &MutexGuard<'_, ()>, inner: &super::DbInner, level: usize) {
    let v = inner.versions.lock().current();
    let c = crate::compaction::pick_range(&v, level, None, None).unwrap();
    drop(v);
    assert!(inner.run_compaction(&c).unwrap());
}

/// `compact_range` took `compaction_lock` once per pass: in between, the
/// background compactor could move a level-1 table down to the last level
/// unchanged (a trivial move), below the passes still to come, and the table
/// kept the sequence numbers (and tombstones) the rewrite was to drop.
#[test]
fn compact_range_racing_a_trivial_move_still_rewrites_the_table() {
    let fs = MemFs::new();
    let db = Db::open("/db", mem_opts(&fs)).unwrap();
    // Level 2: a..c, zeroed. Level 1: x as flushed, with its sequence number.
    put(&db, b"a", b"1");
    put(&db, b"c", b"1");
    db.compact_range(None, None).unwrap();
    compact_level(&db.inner.compaction_lock.lock(), &db.inner, 1);
    put(&db, b"x", b"1");
    db.flush().unwrap();
    compact_level(&db.inner.compaction_lock.lock(), &db.inner, 0);
    let largest_seqs = |db: &Db| -> Vec<Vec<u64>> {
        let v = db.inner.versions.lock().current();
        v.files
            .iter()
            .map(|l| l.iter().map(|f| f.largest_seq).collect())
            .collect()
    };
    let seqs = largest_seqs(&db);
    assert!(
        seqs[0].is_empty() && seqs[1].len() == 1 && seqs[1][0] > 0 && seqs[2] == [0],
        "{seqs:?}"
    );
    // The background compactor runs whenever the lock is free; here it
    // would move x down (as once level 1 is over its size).
    db.inner.hooks.set(hooks::COMPACT_RANGE_PASS, |i| {
        if let Some(c) = i.compaction_lock.try_lock() {
            compact_level(&c, i, 1);
        }
    });
    db.compact_range(None, None).unwrap();
    let seqs = largest_seqs(&db);
    assert!(
        seqs[..2].iter().all(|l| l.is_empty()) && seqs[2].iter().all(|&s| s == 0),
        "x was not rewritten at the last level: {seqs:?}"
    );
}

/// The collector held the recycle pool across its directory listing, the
/// MANIFEST lock and its unlinks; a memtable switch (every writer queued
/// behind it) waited for all of that.
#[test]
fn memtable_switch_does_not_wait_for_the_file_collector() {
    let fs = MemFs::new();
    let opts = Options {
        recycle_log_file_num: 2,
        ..mem_opts(&fs)
    };
    let db = Arc::new(Db::open("/db", opts).unwrap());
    // Give the collector obsolete WALs to decide about.
    for i in 0..3 {
        put(&db, format!("k{i}").as_bytes(), b"v");
        db.flush().unwrap();
    }
    let (parked_tx, parked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    db.inner.hooks.set(hooks::GC_LISTED, move |_| {
        parked_tx.send(()).unwrap();
        // Parked mid-collection until the switch below has finished (or
        // the test gives up on it).
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
    });
    let gc = {
        let db = db.clone();
        std::thread::spawn(move || db.inner.delete_obsolete_files())
    };
    parked_rx.recv().unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let w = {
        let db = db.clone();
        std::thread::spawn(move || {
            put(&db, b"x", b"y");
            // A forced switch: new memtable and WAL (reusing a pooled one).
            db.inner
                .make_room_for_write(&mut db.inner.log.lock(), true)
                .unwrap();
            done_tx.send(()).unwrap();
        })
    };
    let switched = done_rx.recv_timeout(Duration::from_secs(20)).is_ok();
    release_tx.send(()).unwrap();
    gc.join().unwrap();
    w.join().unwrap();
    assert!(
        switched,
        "the memtable switch waited for the parked collector"
    );
    assert_eq!(
        db.get(&ReadOptions::default(), b"x").unwrap(),
        Some(b"y".to_vec())
    );
}

/// `paranoid_checks` was accepted and did nothing: a table missing or cut
/// short went unnoticed until a read reached it.
#[test]
fn paranoid_checks_refuse_missing_or_truncated_tables_at_open() {
    let fs = MemFs::new();
    {
        let db = Db::open("/db", mem_opts(&fs)).unwrap();
        put(&db, b"a", b"1");
        db.flush().unwrap();
        put(&db, b"b", b"2");
        db.close().unwrap();
    }
    let n = table_numbers(&fs)[0];
    let p = filename::table_file_name(Path::new("/db"), n);
    let good = fs.contents(&p).unwrap();
    // Cut short.
    fs.set_contents(&p, good[..good.len() - 1].to_vec());
    let e = Db::open("/db", mem_opts(&fs)).unwrap_err().to_string();
    assert!(
        e.contains(&format!("{n:06}.sst")) && e.contains("MANIFEST recorded"),
        "{e}"
    );
    // Missing.
    fs.remove_file(&p).unwrap();
    let e = Db::open("/db", mem_opts(&fs)).unwrap_err().to_string();
    assert!(
        e.contains(&format!("{n:06}.sst")) && e.contains("missing"),
        "{e}"
    );
    // Without the checks the database opens, and what does not need the
    // table still reads.
    let lax = Options {
        paranoid_checks: false,
        ..mem_opts(&fs)
    };
    let db = Db::open("/db", lax).unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"b").unwrap(),
        Some(b"2".to_vec())
    );
    assert!(db.get(&ReadOptions::default(), b"a").is_err());
}

/// A commit that finds a sync round under way must not wait behind it on
/// its thread: `try_sync_durable` returns false at once, and the round's
/// owner hands the request on, so the position becomes durable without
/// anyone calling again.
#[test]
fn try_sync_during_another_round_defers_and_is_handed_on() {
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", mem_opts(&fs)).unwrap());
    put(&db, b"a", b"1");
    let first = db.log_position();
    let (tx, rx) = mpsc::channel();
    let db2 = db.clone();
    db.set_hook(hooks::SYNC_ROUND, move |_| {
        // Inside the first round: a second commit tries to sync.
        let t = std::thread::spawn(move || {
            put(&db2, b"b", b"2");
            let second = db2.log_position();
            let synced_here = db2.try_sync_durable(second).unwrap();
            (second, synced_here)
        });
        tx.send(t.join().unwrap()).unwrap();
    });
    assert!(
        db.try_sync_durable(first).unwrap(),
        "an idle database syncs at once"
    );
    let (second, synced_here) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        !synced_here,
        "a commit waited behind a sync round under way"
    );
    // Handed on to the syncer thread: durable with no further call.
    let t = std::time::Instant::now();
    while !db.is_durable(second) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the request was not handed on"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    db.wait_durable(second).unwrap();
}
