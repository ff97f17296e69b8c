//! Durability awaited apart from the write (`Db::log_position`,
//! `wait_durable`, `poll_durable`): what a wait promises across a power
//! loss, that a waiting task is woken, that a failed sync fails its
//! waiters and leaves the database read-only, and that the syncer serves
//! many writers while they keep writing.

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::{Db, Error, Options, ReadOptions, WriteOptions};

fn opts(fs: &MemFs) -> Options {
    common::small_options(Arc::new(fs.clone()))
}

fn get(db: &Db, k: &[u8]) -> Option<Vec<u8>> {
    db.get(&ReadOptions::default(), k).unwrap()
}

/// Wakes a parked thread and remembers that it did.
struct Flag {
    woken: AtomicBool,
    thread: Thread,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Polls `f` until ready, parking between polls; panics after 10 s.
fn block_on<F: Future>(f: F) -> (F::Output, bool) {
    let mut f = std::pin::pin!(f);
    let flag = Arc::new(Flag {
        woken: AtomicBool::new(false),
        thread: std::thread::current(),
    });
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return (v, flag.woken.load(Ordering::SeqCst));
        }
        assert!(Instant::now() < deadline, "never woken");
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

#[test]
fn unsynced_writes_survive_power_loss_once_waited_for() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..50u32 {
        db.put(&WriteOptions::default(), &i.to_be_bytes(), b"v")
            .unwrap();
    }
    let pos = db.log_position();
    assert!(!db.is_durable(pos), "nothing has synced these writes yet");
    db.wait_durable(pos).unwrap();
    assert!(db.is_durable(pos));
    // Written after the position: not covered by the wait.
    db.put(&WriteOptions::default(), b"after", b"v").unwrap();
    db.simulate_crash();
    fs.power_loss();
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..50u32 {
        assert_eq!(get(&db, &i.to_be_bytes()), Some(b"v".to_vec()), "key {i}");
    }
    assert_eq!(
        get(&db, b"after"),
        None,
        "an unsynced write outlived a power loss"
    );
}

#[test]
fn unsynced_writes_not_waited_for_are_lost_in_a_power_loss() {
    // The control for the test above: the wait is what kept the writes.
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    db.simulate_crash();
    fs.power_loss();
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_eq!(get(&db, b"k"), None);
}

#[test]
fn a_task_waiting_for_its_position_is_woken_by_the_sync() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    let pos = db.log_position();
    let (r, woken) = block_on(std::future::poll_fn(|cx| db.poll_durable(pos, cx)));
    r.unwrap();
    assert!(woken, "ready without the waker ever being called");
    assert!(db.is_durable(pos));
    // A position already durable is ready at the first poll.
    let (r, woken) = block_on(std::future::poll_fn(|cx| db.poll_durable(pos, cx)));
    r.unwrap();
    assert!(!woken);
    db.close().unwrap();
}

#[test]
fn a_synced_write_makes_earlier_positions_durable() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(&WriteOptions::default(), b"a", b"1").unwrap();
    let pos = db.log_position();
    let synced = WriteOptions {
        sync: true,
        ..Default::default()
    };
    db.put(&synced, b"b", b"2").unwrap();
    assert!(db.is_durable(pos));
    assert!(db.is_durable(db.log_position()));
}

#[test]
fn a_failed_sync_fails_its_waiters_and_turns_the_database_read_only() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open("/db", common::small_options(Arc::new(fault.clone()))).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    fault.inject(FaultRule::new(FaultOp::Sync, libc::EIO).on_path(".log"));
    let pos = db.log_position();
    let err = db.wait_durable(pos).unwrap_err();
    assert!(
        err.to_string().contains("fdatasync") || err.to_string().contains("sync"),
        "{err}"
    );
    assert!(!db.is_durable(pos));
    // Later waits fail too, and so do writes.
    assert!(db.wait_durable(pos).is_err());
    let (r, _) = block_on(std::future::poll_fn(|cx| db.poll_durable(pos, cx)));
    assert!(r.is_err());
    fault.clear();
    match db.put(&WriteOptions::default(), b"k2", b"v") {
        Err(Error::ReadOnly { .. }) => {}
        other => panic!("write after a failed sync: {other:?}"),
    }
}

#[test]
fn close_makes_every_logged_position_durable() {
    let fs = MemFs::new();
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(&WriteOptions::default(), b"k", b"v").unwrap();
    let pos = db.log_position();
    db.close().unwrap();
    // close syncs the WAL: the position is durable.
    assert!(db.is_durable(pos));
    db.wait_durable(pos).unwrap();
}

/// The POSIX file system syncs through a second descriptor, outside the
/// log lock: writers keep writing while the syncer syncs, each waiter
/// returns once covered, and everything waited for is there on reopening.
#[test]
fn many_writers_waiting_share_syncs_on_posix() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    let before = db.stats().wal_syncs;
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..200u32 {
                    let k = format!("{t}-{i}");
                    db.put(&WriteOptions::default(), k.as_bytes(), b"v")
                        .unwrap();
                    let pos = db.log_position();
                    db.wait_durable(pos).unwrap();
                    assert!(db.is_durable(pos));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let syncs = db.stats().wal_syncs - before;
    eprintln!("{syncs} syncs for 1,600 waits");
    assert!(syncs >= 1, "the waits returned without a sync");
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for t in 0..8u32 {
        for i in 0..200u32 {
            let k = format!("{t}-{i}");
            assert_eq!(get(&db, k.as_bytes()), Some(b"v".to_vec()), "{k}");
        }
    }
}
