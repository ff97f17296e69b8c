//! Regression tests for engine bugs found by fault injection. Each is named
//! after what broke; docs/reliability.md ("Engine bugs found") describes the
//! cause and the fix.

mod common;

use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::{Db, ReadOptions, WriteOptions};

fn k(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn v(i: usize) -> Vec<u8> {
    format!("value{i:06}-{}", "z".repeat(80)).into_bytes()
}

/// A MANIFEST sync that fails after the record's bytes reached the file
/// leaves the edit's outcome unknown: after a process crash the record is
/// there and recovery applies it. The engine nevertheless treated the edit
/// as not made and deleted its output tables as unreferenced, so the
/// reopened database listed tables that no longer existed and reads of
/// acknowledged keys failed with "open 0000NN.sst: no such file".
#[test]
fn manifest_sync_failure_deletes_tables_the_manifest_lists() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let o = common::small_options(Arc::new(fault.clone()));
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..3000 {
        db.put(&WriteOptions::default(), &k(i), &v(i)).unwrap();
    }
    db.flush().unwrap();
    fault.inject(FaultRule::new(FaultOp::Sync, libc::EIO).on_path("MANIFEST"));
    let mut acked = 3000;
    while acked < 60_000 {
        if db
            .put(&WriteOptions::default(), &k(acked), &v(acked))
            .is_err()
        {
            break;
        }
        acked += 1;
    }
    assert!(fault.injected() > 0);
    fault.clear();
    let _ = db.close();
    drop(db);
    mem.process_crash();
    let db = Db::open("/db", o).unwrap();
    for i in 0..acked {
        let got = db.get(&ReadOptions::default(), &k(i));
        assert!(
            matches!(&got, Ok(Some(x)) if *x == v(i)),
            "key {i} of {acked} acknowledged: {got:?}"
        );
    }
}

/// Deleting an obsolete file (an old WAL, a compacted table) is clean-up:
/// a failed unlink costs disk space, not correctness. The engine turned an
/// EIO from unlink into a background error, making the database read-only.
#[test]
fn failed_unlink_of_an_obsolete_file_makes_the_db_read_only() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let o = common::small_options(Arc::new(fault.clone()));
    let db = Db::open("/db", o.clone()).unwrap();
    fault.inject(FaultRule::new(FaultOp::Remove, libc::EIO));
    for i in 0..20_000 {
        if let Err(e) = db.put(&WriteOptions::default(), &k(i), &v(i)) {
            panic!("write {i} failed although only an unlink failed: {e}");
        }
    }
    db.compact_range(None, None).unwrap();
    assert!(fault.injected() > 0, "no unlink was attempted");
    fault.clear();
    db.close().unwrap();
}

/// The fix of `manifest_sync_failure_deletes_tables_the_manifest_lists`
/// has a window: the file collector checks for a background error first,
/// then lists the directory and only then reads the pending outputs. A
/// compaction whose MANIFEST sync fails in between records the error and
/// takes its outputs out of the pending set; the collector (here the flush
/// thread's, run after the flush that triggered the compaction) then finds
/// them neither pending nor live and deletes them, although the failed
/// record may be in the MANIFEST. After a process crash the reopen fails:
/// "table of level 1 listed in the MANIFEST is missing". Found by
/// `transactions.rs` (`fault_at_every_point_of_transaction_commits_*`,
/// about one run in a hundred at its MANIFEST-sync fault points). A race:
/// files the engine does not own make the collector's directory listing
/// long, which widens the window, and the test tries many times.
#[test]
#[ignore = "engine bug: the file collector can delete the outputs of a compaction whose MANIFEST sync failed"]
fn manifest_sync_failure_racing_the_file_collector_deletes_listed_tables() {
    use cairndb::env::Fs;
    let attempts = 100;
    for attempt in 0..attempts {
        let mem = MemFs::new();
        mem.create_dir_all(std::path::Path::new("/db")).unwrap();
        for j in 0..3000 {
            mem.create(&std::path::Path::new("/db").join(format!("other-{j}")))
                .unwrap();
        }
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let o = common::small_options(Arc::new(fault.clone()));
        let db = Db::open("/db", o.clone()).unwrap();
        let n = 50;
        for i in 0..n {
            db.put(&WriteOptions::default(), &k(i), &v(i)).unwrap();
        }
        db.flush().unwrap();
        // The same keys again: the two level-0 tables overlap, so the
        // compaction merges them into new tables (not a trivial move).
        for i in 0..n {
            db.put(&WriteOptions::default(), &k(i), &v(i)).unwrap();
        }
        // The second flush's MANIFEST sync passes; the next one, the
        // compaction's that the second flush triggers, fails.
        fault.inject(
            FaultRule::new(FaultOp::Sync, libc::EIO)
                .on_path("MANIFEST")
                .after(1)
                .times(1),
        );
        let _ = db.flush();
        let _ = db.wait_for_compactions();
        assert!(
            fault.injected() > 0,
            "attempt {attempt}: no MANIFEST sync failed"
        );
        fault.clear();
        let _ = db.close();
        drop(db);
        mem.process_crash();
        let db = Db::open("/db", o)
            .unwrap_or_else(|e| panic!("attempt {attempt}: reopen after the failed sync: {e}"));
        for i in 0..n {
            let got = db.get(&ReadOptions::default(), &k(i));
            assert!(
                matches!(&got, Ok(Some(x)) if *x == v(i)),
                "attempt {attempt}: key {i}: {got:?}"
            );
        }
    }
}
