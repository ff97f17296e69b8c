//! More fault points through the `Fs` trait (faults.rs has the WAL and
//! flush ones): compaction-time read and write errors, MANIFEST write and
//! sync errors, a failed rename of CURRENT and failed directory syncs at
//! open, ENOSPC on fallocate of the WAL and on table writes (short), failed
//! unlinks. For each: the failure reaches the caller as an error (or, from
//! background work, as `ReadOnly` on every later write) while reads keep
//! working; after the fault clears, a reopen recovers everything that was
//! acknowledged. Also: a second opener of the same directory, in this
//! process or another, gets `Error::LockFileHeld`.

mod common;

use std::process::Command;
use std::sync::Arc;

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::{Db, Error, Options, ReadOptions, WriteOptions};

fn setup() -> (MemFs, FaultFs, Options) {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let o = common::small_options(Arc::new(fault.clone()));
    (mem, fault, o)
}

/// Keys in a scattered order (a permutation of the index: 7919 is invertible
/// modulo the prime 1,000,003), so that flushed tables overlap and
/// compactions must read and merge them rather than move files down.
fn k(i: usize) -> Vec<u8> {
    format!("key{:07}", (i * 7919) % 1_000_003).into_bytes()
}

fn v(i: usize) -> Vec<u8> {
    format!("value{i:06}-{}", "z".repeat(80)).into_bytes()
}

/// Writes keys from `from` until a write fails or `limit` is reached;
/// returns (keys acknowledged, the error).
fn write_until_error(db: &Db, from: usize, limit: usize) -> (usize, Option<Error>) {
    for i in from..limit {
        if let Err(e) = db.put(&WriteOptions::default(), &k(i), &v(i)) {
            return (i, Some(e));
        }
    }
    (limit, None)
}

fn check_all(db: &Db, n: usize, what: &str) {
    for i in 0..n {
        assert_eq!(
            db.get(&ReadOptions::default(), &k(i)).unwrap(),
            Some(v(i)),
            "{what}: key {i} of {n}"
        );
    }
}

/// One background fault point: the rule fires during flush/compaction; the
/// first failing write reports an error, later writes `ReadOnly`, reads of
/// everything acknowledged keep working, and a reopen after the fault
/// clears loses nothing.
fn background_fault(name: &str, rule: FaultRule, cache_off: bool) {
    let (mem, fault, mut o) = setup();
    if cache_off {
        o.block_cache_size = 0;
    }
    let db = Db::open("/db", o.clone()).unwrap();
    // Some tables first, so compactions have inputs.
    let (base, e) = write_until_error(&db, 0, 3000);
    assert!(e.is_none(), "{name}: {e:?}");
    db.flush().unwrap();
    fault.inject(rule);
    let (acked, err) = write_until_error(&db, base, 60_000);
    let err = err.unwrap_or_else(|| panic!("{name}: no write ever failed"));
    assert!(
        err.io_kind().is_some() || matches!(err, Error::ReadOnly { .. }),
        "{name}: unexpected error {err}"
    );
    match db.put(&WriteOptions::default(), b"later", b"x") {
        Err(Error::ReadOnly { .. }) => {}
        other => panic!("{name}: a write after the failure gave {other:?}, not ReadOnly"),
    }
    assert!(fault.injected() > 0, "{name}: the fault never fired");
    fault.clear();
    check_all(&db, acked, name);
    assert!(db.close().is_err(), "{name}: close reports the error");
    drop(db);
    mem.process_crash();
    let db = Db::open("/db", o).unwrap_or_else(|e| panic!("{name}: reopen: {e}"));
    check_all(&db, acked, &format!("{name} after reopen"));
    db.put(&WriteOptions::default(), b"after", b"ok").unwrap();
    db.close().unwrap();
}

#[test]
fn compaction_read_error_makes_the_db_read_only() {
    // Flushes never read tables; compactions do (the block cache is off so
    // that every compaction read reaches the file system).
    background_fault(
        "compaction read EIO",
        FaultRule::new(FaultOp::Read, libc::EIO).on_path(".sst"),
        true,
    );
}

#[test]
fn compaction_write_errors_make_the_db_read_only() {
    // After a few table writes pass (flushes), a later one fails: with
    // level0 trigger 2 most table writes from then on are compactions.
    for (errno, short) in [(libc::EIO, false), (libc::ENOSPC, true)] {
        let mut r = FaultRule::new(FaultOp::Write, errno)
            .on_path(".sst")
            .after(40);
        if short {
            r = r.short();
        }
        background_fault(
            &format!("table write errno {errno} short {short}"),
            r,
            false,
        );
    }
}

#[test]
fn manifest_write_and_sync_errors_make_the_db_read_only() {
    background_fault(
        "MANIFEST write EIO",
        FaultRule::new(FaultOp::Write, libc::EIO).on_path("MANIFEST"),
        false,
    );
    background_fault(
        "MANIFEST short write ENOSPC",
        FaultRule::new(FaultOp::Write, libc::ENOSPC)
            .on_path("MANIFEST")
            .short(),
        false,
    );
}

#[test]
fn wal_fallocate_enospc_fails_the_write_not_the_data() {
    // The WAL is preallocated when a new one is created (memtable switch).
    let (mem, fault, o) = setup();
    let db = Db::open("/db", o.clone()).unwrap();
    fault.inject(FaultRule::new(FaultOp::Allocate, libc::ENOSPC).on_path(".log"));
    let (acked, err) = write_until_error(&db, 0, 20_000);
    if let Some(e) = &err {
        assert!(
            e.io_kind().is_some() || matches!(e, Error::ReadOnly { .. }),
            "{e}"
        );
    }
    assert!(
        fault.injected() > 0,
        "fallocate of the WAL was never attempted"
    );
    fault.clear();
    check_all(&db, acked, "fallocate ENOSPC");
    drop(db);
    mem.process_crash();
    let db = Db::open("/db", o).unwrap();
    check_all(&db, acked, "fallocate ENOSPC after reopen");
}

#[test]
fn failed_open_steps_return_errors_and_a_retry_recovers() {
    let (mem, fault, o) = setup();
    let db = Db::open("/db", o.clone()).unwrap();
    let (n, e) = write_until_error(&db, 0, 2000);
    assert!(e.is_none());
    db.close().unwrap();
    drop(db);
    for (name, rule) in [
        (
            "rename of CURRENT",
            FaultRule::new(FaultOp::Rename, libc::EIO),
        ),
        (
            "directory sync",
            FaultRule::new(FaultOp::SyncDir, libc::EIO),
        ),
        (
            "MANIFEST create",
            FaultRule::new(FaultOp::Create, libc::ENOSPC).on_path("MANIFEST"),
        ),
        (
            "MANIFEST sync",
            FaultRule::new(FaultOp::Sync, libc::EIO).on_path("MANIFEST"),
        ),
        (
            "WAL read",
            FaultRule::new(FaultOp::Read, libc::EIO).on_path(".log"),
        ),
        (
            "CURRENT read",
            FaultRule::new(FaultOp::Read, libc::EIO).on_path("CURRENT"),
        ),
    ] {
        fault.inject(rule);
        let e = Db::open("/db", o.clone()).unwrap_err();
        assert!(e.io_kind().is_some(), "{name}: {e}");
        fault.clear();
        mem.process_crash();
        let db = Db::open("/db", o.clone()).unwrap_or_else(|e| panic!("{name}: retry: {e}"));
        check_all(&db, n, name);
        db.close().unwrap();
    }
}

#[test]
fn foreground_compact_range_failure_reaches_the_caller() {
    let (mem, fault, o) = setup();
    let db = Db::open("/db", o.clone()).unwrap();
    let (n, _) = write_until_error(&db, 0, 5000);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    fault.inject(FaultRule::new(FaultOp::Sync, libc::EIO).on_path(".sst"));
    let e = db.compact_range(None, None).unwrap_err();
    assert!(
        e.io_kind().is_some() || matches!(e, Error::ReadOnly { .. }),
        "{e}"
    );
    fault.clear();
    check_all(&db, n, "compact_range");
    drop(db);
    mem.process_crash();
    let db = Db::open("/db", o).unwrap();
    check_all(&db, n, "compact_range after reopen");
}

#[test]
fn second_opener_in_this_process_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::LockFileHeld { .. }) => {}
        other => panic!("second open gave {other:?}"),
    }
    db.close().unwrap();
    drop(db);
    Db::open(dir.path(), Options::default()).unwrap();
}

/// Child entry point: tries to open the directory and exits 7 on LockFileHeld.
#[test]
fn busy_child_opener() {
    let Ok(dir) = std::env::var("CAIRNDB_BUSY_CHILD") else {
        return;
    };
    match Db::open(&dir, Options::default()) {
        Err(Error::LockFileHeld { .. }) => std::process::exit(7),
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

#[test]
fn second_opener_in_another_process_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let run_child = || {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "busy_child_opener",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CAIRNDB_BUSY_CHILD", dir.path())
            .output()
            .unwrap()
            .status
            .code()
    };
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(run_child(), Some(7), "the other process was not refused");
    db.close().unwrap();
    drop(db);
    assert_eq!(
        run_child(),
        Some(0),
        "after close the other process can open"
    );
}
