//! Fault injection through the `Fs` trait: a failed WAL write or sync fails
//! the write and makes the database read-only; a failed background flush
//! does the same while reads keep working; after the fault clears, a reopen
//! recovers with nothing acknowledged lost.

mod common;

use std::path::Path;
use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::{Db, Error, ReadOptions, WriteOptions};

fn setup() -> (MemFs, FaultFs, cairndb::Options) {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let o = common::small_options(Arc::new(fault.clone()));
    (mem, fault, o)
}

fn k(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn assert_readonly(r: cairndb::Result<()>) {
    match r {
        Err(Error::ReadOnly { .. }) => {}
        other => panic!("expected ReadOnly, got {other:?}"),
    }
}

#[test]
fn wal_write_failure_fails_the_write_and_then_every_write() {
    for (op, errno, short) in [
        (FaultOp::Write, libc::EIO, false),
        (FaultOp::Write, libc::ENOSPC, true),
        (FaultOp::Sync, libc::EIO, false),
    ] {
        let (mem, fault, o) = setup();
        let db = Db::open("/db", o.clone()).unwrap();
        for i in 0..100 {
            db.put(
                &WriteOptions {
                    sync: true,
                    ..Default::default()
                },
                &k(i),
                b"v",
            )
            .unwrap();
        }
        let mut rule = FaultRule::new(op, errno).on_path(".log");
        if short {
            rule = rule.short();
        }
        fault.inject(rule);
        let e = db
            .put(
                &WriteOptions {
                    sync: true,
                    ..Default::default()
                },
                &k(100),
                b"v",
            )
            .unwrap_err();
        assert!(e.io_kind().is_some(), "{op:?}: {e}");
        assert!(e.to_string().contains(".log"), "{e}");
        fault.clear();
        // Read-only until reopened; reads still work.
        assert_readonly(db.put(&WriteOptions::default(), &k(101), b"v"));
        assert_eq!(
            db.get(&ReadOptions::default(), &k(5)).unwrap(),
            Some(b"v".to_vec())
        );
        db.simulate_crash();
        mem.process_crash();
        let db = Db::open("/db", o).unwrap();
        for i in 0..100 {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(b"v".to_vec()),
                "{op:?} key {i}"
            );
        }
        // The failed write was never acknowledged; whether it is there is
        // not promised, but a partial record must not break recovery.
        db.put(&WriteOptions::default(), &k(200), b"after").unwrap();
    }
}

#[test]
fn failed_background_flush_makes_the_db_read_only_and_reads_keep_working() {
    for op in [
        FaultOp::Write,
        FaultOp::Sync,
        FaultOp::Create,
        FaultOp::SyncDir,
    ] {
        let (mem, fault, o) = setup();
        let db = Db::open("/db", o.clone()).unwrap();
        fault.inject(
            FaultRule::new(op, libc::EIO).on_path(if op == FaultOp::SyncDir {
                "/db"
            } else {
                ".sst"
            }),
        );
        let mut acked = 0;
        let mut err = None;
        for i in 0..20000 {
            match db.put(&WriteOptions::default(), &k(i), &[b'x'; 100]) {
                Ok(()) => acked = i + 1,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let e = err.unwrap_or_else(|| panic!("{op:?}: writes never failed"));
        // A failure in the foreground (the directory sync of a memtable
        // switch) comes back as itself; one in the background flush as
        // ReadOnly. Either way every later write is refused.
        assert!(e.io_kind().is_some(), "{op:?}: {e}");
        assert_readonly(db.put(&WriteOptions::default(), b"later", b"v"));
        assert!(db.flush().is_err());
        for i in (0..acked).step_by(97) {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(vec![b'x'; 100]),
                "{op:?} key {i}"
            );
        }
        fault.clear();
        let closed = db.close();
        assert!(
            closed.is_err(),
            "{op:?}: close reports the background error"
        );
        drop(db);
        mem.process_crash();
        let db = Db::open("/db", o).unwrap();
        for i in 0..acked {
            assert_eq!(
                db.get(&ReadOptions::default(), &k(i)).unwrap(),
                Some(vec![b'x'; 100]),
                "{op:?} key {i} after reopen"
            );
        }
    }
}

#[test]
fn read_errors_reach_the_caller() {
    let (_mem, fault, o) = setup();
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &k(i), &[b'y'; 50])
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    let mut o = o;
    o.block_cache_size = 0;
    let db = Db::open("/db", o).unwrap();
    fault.inject(FaultRule::new(FaultOp::Read, libc::EIO).on_path(".sst"));
    let e = db.get(&ReadOptions::default(), &k(7)).unwrap_err();
    assert!(e.io_kind().is_some(), "an I/O error, not {e}");
    assert!(e.to_string().contains(".sst"), "{e}");
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().is_err());
    fault.clear();
    assert_eq!(
        db.get(&ReadOptions::default(), &k(7)).unwrap(),
        Some(vec![b'y'; 50])
    );
    let _ = Path::new("");
}

/// Many writers with synced batches; the WAL sync fails once. Every writer
/// of the failing group gets the I/O error, every later write is refused,
/// and after a reopen every acknowledged batch is whole and nothing is half
/// there.
#[test]
fn failed_group_sync_fails_every_member_and_no_batch_is_half_applied() {
    for after in [3u64, 40, 200] {
        let (mem, fault, o) = setup();
        let db = Arc::new(Db::open("/db", o.clone()).unwrap());
        fault.inject(
            FaultRule::new(FaultOp::Sync, libc::EIO)
                .on_path(".log")
                .after(after)
                .times(1),
        );
        let hs: Vec<_> = (0..8)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut acked = Vec::new();
                    let mut io_errors = 0;
                    for i in 0..400 {
                        let mut b = cairndb::WriteBatch::new();
                        for part in 0..3 {
                            b.put(format!("t{t}-{i:04}-{part}"), format!("{t}:{i}"));
                        }
                        match db.write(
                            &WriteOptions {
                                sync: true,
                                ..Default::default()
                            },
                            b,
                        ) {
                            Ok(()) => acked.push(i),
                            Err(Error::ReadOnly { .. }) => break,
                            Err(e) => {
                                assert!(e.io_kind().is_some(), "{e}");
                                io_errors += 1;
                                break;
                            }
                        }
                    }
                    (acked, io_errors)
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let io_errors: usize = results.iter().map(|r| r.1).sum();
        assert!(io_errors >= 1, "after {after}: nobody saw the sync failure");
        assert_readonly(db.put(&WriteOptions::default(), b"x", b"y"));
        drop(db);
        mem.process_crash();
        let db = Db::open("/db", o).unwrap();
        for (t, (acked, _)) in results.iter().enumerate() {
            for &i in acked {
                for part in 0..3 {
                    let k = format!("t{t}-{i:04}-{part}");
                    assert!(
                        db.get(&ReadOptions::default(), k.as_bytes())
                            .unwrap()
                            .is_some(),
                        "after {after}: acknowledged {k} lost"
                    );
                }
            }
        }
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n % 3, 0, "after {after}: a batch is partly applied");
    }
}

/// With `wal_sync_interval`, writes acknowledged more than one interval
/// before a power loss survive it.
#[test]
fn background_wal_sync_makes_older_writes_survive_power_loss() {
    let (mem, mut o) = {
        let mem = MemFs::new();
        let o = common::small_options(Arc::new(mem.clone()));
        (mem, o)
    };
    o.wal_sync_interval = std::time::Duration::from_millis(20);
    o.write_buffer_size = 4 << 20;
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..500 {
        db.put(&WriteOptions::default(), &k(i), b"early").unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(db.stats().wal_syncs > 0, "the background sync never ran");
    for i in 500..600 {
        db.put(&WriteOptions::default(), &k(i), b"late").unwrap();
    }
    db.simulate_crash();
    mem.power_loss();
    let db = Db::open("/db", o).unwrap();
    for i in 0..500 {
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(b"early".to_vec()),
            "key {i}"
        );
    }
    // Later writes: a prefix may survive, never a hole.
    let mut missing = false;
    for i in 500..600 {
        match db.get(&ReadOptions::default(), &k(i)).unwrap() {
            Some(_) => assert!(!missing, "key {i} survived after a lost key"),
            None => missing = true,
        }
    }
}

/// Regression: `Db::sync_wal` returned a failed fdatasync of a WAL switched
/// out without a sync (or of the current WAL) but left the database
/// writable. Linux may drop the dirty pages on such a failure and report
/// success to the next fdatasync, so a later synced write could be
/// acknowledged over a hole. Now the database turns read-only.
#[test]
fn failed_sync_wal_makes_the_db_read_only() {
    let (_mem, fault, o) = setup();
    let db = Db::open("/db", o).unwrap();
    // Unsynced writes across several memtable switches (64 KiB memtables).
    for i in 0..2000 {
        db.put(&WriteOptions::default(), &k(i), &[b'v'; 100])
            .unwrap();
    }
    fault.inject(
        FaultRule::new(FaultOp::Sync, libc::EIO)
            .on_path(".log")
            .times(1),
    );
    assert!(db.sync_wal().is_err());
    assert_eq!(fault.injected(), 1);
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    assert_readonly(db.put(&sync, b"after", b"1"));
    assert_readonly(db.sync_wal());
    // Reads keep working.
    assert_eq!(
        db.get(&ReadOptions::default(), &k(1999)).unwrap(),
        Some(vec![b'v'; 100])
    );
}
