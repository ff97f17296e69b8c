//! Concurrency: writers with batches, readers with gets, snapshots and
//! iterators at once; batches are all-or-nothing to every reader and every
//! acknowledged write is readable afterwards.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cairndb::{Db, ReadOptions, WriteBatch, WriteOptions};

#[test]
fn writers_readers_and_snapshots_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let o = common::small_options(cairndb::env::posix::PosixFs::shared());
    let db = Arc::new(Db::open(dir.path(), o).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    const WRITERS: usize = 4;
    const ROUNDS: usize = 1500;
    let mut handles = Vec::new();
    for t in 0..WRITERS {
        let db = db.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..ROUNDS {
                // One batch sets the three keys of this writer to the same
                // value and adds a unique key.
                let val = format!("{t}:{i:06}");
                let mut b = WriteBatch::new();
                for s in ["a", "b", "c"] {
                    b.put(format!("w{t}-{s}"), &val);
                }
                b.put(format!("u{t}-{i:06}"), &val);
                let wo = WriteOptions {
                    sync: i % 100 == 0,
                    ..Default::default()
                };
                db.write(&wo, b).unwrap();
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..2 {
        let db = db.clone();
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || {
            let mut checks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let snap = db.snapshot();
                let ro = ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..Default::default()
                };
                for t in 0..WRITERS {
                    let vals: Vec<_> = ["a", "b", "c"]
                        .iter()
                        .map(|s| db.get(&ro, format!("w{t}-{s}").as_bytes()).unwrap())
                        .collect();
                    assert!(
                        vals[0] == vals[1] && vals[1] == vals[2],
                        "reader {r}: torn batch {vals:?}"
                    );
                    // The unique key of that batch is visible in the same snapshot.
                    if let Some(v) = &vals[0] {
                        let i = String::from_utf8_lossy(v)
                            .split(':')
                            .nth(1)
                            .unwrap()
                            .to_string();
                        let u = db.get(&ro, format!("u{t}-{i}").as_bytes()).unwrap();
                        assert_eq!(u.as_ref(), Some(v));
                    }
                }
                // An iterator over the snapshot sees ascending unique keys with no gaps.
                let mut it = db.iter(&ro).unwrap();
                let t = (checks as usize) % WRITERS;
                it.seek(format!("u{t}-").as_bytes());
                let mut expect = 0;
                while it.valid() && it.key().starts_with(format!("u{t}-").as_bytes()) {
                    assert_eq!(it.key(), format!("u{t}-{expect:06}").as_bytes());
                    expect += 1;
                    it.next();
                }
                it.status().unwrap();
                checks += 1;
            }
            checks
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    for t in 0..WRITERS {
        for i in 0..ROUNDS {
            let got = db
                .get(&ReadOptions::default(), format!("u{t}-{i:06}").as_bytes())
                .unwrap();
            assert_eq!(got, Some(format!("{t}:{i:06}").into_bytes()));
        }
    }
    let s = db.stats();
    assert_eq!(s.writes, (WRITERS * ROUNDS) as u64);
    assert!(s.write_groups <= s.writes);
    db.close().unwrap();
}

#[test]
fn stalled_and_slowed_writers_resume_and_lose_nothing() {
    let (_fs, mut o) = common::mem_options();
    o.max_write_buffer_number = 2;
    o.level0_file_num_compaction_trigger = 2;
    o.level0_slowdown_writes_trigger = 2;
    o.level0_stop_writes_trigger = 3;
    o.delayed_write_rate = 4 << 20;
    let db = Arc::new(Db::open("/db", o).unwrap());
    let hs: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..4000 {
                    db.put(
                        &WriteOptions::default(),
                        format!("t{t}-{i:06}").as_bytes(),
                        &[b'z'; 120],
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let s = db.stats();
    assert!(
        s.slowdowns + s.stalls > 0,
        "no write was ever slowed or stopped: {s:?}"
    );
    assert!(s.stall_micros > 0);
    for t in 0..4 {
        for i in 0..4000 {
            assert!(db
                .get(&ReadOptions::default(), format!("t{t}-{i:06}").as_bytes())
                .unwrap()
                .is_some());
        }
    }
    db.close().unwrap();
}

/// Regression: "writes with the WAL disabled exist" was one database-wide
/// flag that `flush` cleared when it finished. A write with the WAL disabled
/// that went into the new memtable while a flush waited for the old one was
/// then forgotten: `close` skipped its flush and the acknowledged write was
/// gone after reopening (it failed on the first round). The same loss could
/// follow from a forced flush that found the memtable empty while a group
/// was still inserting after the log lock. Each memtable now carries the
/// fact itself, and a forced switch waits for in-flight inserts. Writers
/// with the WAL disabled race a thread that flushes without pause; after
/// `close` and a reopen every acknowledged write must be there.
#[test]
fn flush_racing_unlogged_writes_loses_nothing() {
    let no_wal = WriteOptions {
        disable_wal: true,
        ..Default::default()
    };
    for round in 0..15 {
        let (fs, mut o) = common::mem_options();
        o.write_buffer_size = 1 << 20;
        o.level0_file_num_compaction_trigger = 1000;
        o.level0_slowdown_writes_trigger = 1000;
        o.level0_stop_writes_trigger = 1000;
        let db = Arc::new(Db::open("/db", o.clone()).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let flusher = {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    db.flush().unwrap();
                }
            })
        };
        let writers: Vec<_> = (0..2)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        db.put(&no_wal, format!("w{t}-{i:04}").as_bytes(), b"v")
                            .unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        flusher.join().unwrap();
        db.close().unwrap();
        drop(db);
        let db = Db::open("/db", o).unwrap();
        for t in 0..2 {
            for i in 0..200 {
                let k = format!("w{t}-{i:04}");
                assert_eq!(
                    db.get(&ReadOptions::default(), k.as_bytes()).unwrap(),
                    Some(b"v".to_vec()),
                    "round {round}: {k} lost"
                );
            }
        }
        db.close().unwrap();
        drop(fs);
    }
}
