//! The background compaction thread's I/O priority follows
//! `Options::idle_compaction_io`. One test in its own process, so no other
//! database's threads share the name it looks for.

#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use cairndb::internals::util::ioprio::{io_priority_class, IOPRIO_CLASS_IDLE};
use cairndb::{Db, Options};

/// The thread ids of this process's threads named `name`.
fn threads_named(name: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            if let Ok(tid) = e.file_name().to_string_lossy().parse() {
                out.push(tid);
            }
        }
    }
    out
}

/// The I/O priority class of the one compaction thread, once `want`
/// holds for it or 5 s have passed (it sets its class as it starts).
fn compaction_thread_class(want: impl Fn(i64) -> bool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let tids = threads_named("cairndb-compact");
        assert!(tids.len() <= 1, "more than one compaction thread: {tids:?}");
        if let Some(&tid) = tids.first() {
            let class = io_priority_class(tid).unwrap();
            if want(class) || Instant::now() > deadline {
                return class;
            }
        } else {
            assert!(Instant::now() < deadline, "no compaction thread");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn compaction_thread_io_is_idle_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        idle_compaction_io: true,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(
        compaction_thread_class(|c| c == IOPRIO_CLASS_IDLE),
        IOPRIO_CLASS_IDLE
    );
    db.close().unwrap();
    drop(db);

    // The default leaves it alone.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    // Give the thread time to have lowered itself, were it going to: it
    // keeps the class it was spawned with, this thread's.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        compaction_thread_class(|_| true),
        io_priority_class(0).unwrap()
    );
    db.close().unwrap();
}
