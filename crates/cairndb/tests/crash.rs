//! Crash: a writer in a child process is killed with SIGKILL at random
//! moments; after reopening, every write acknowledged with sync=true is
//! there, batches are all-or-nothing, and the store is consistent.
//!
//! The child is this same test binary, re-run with `CAIRNDB_CRASH_CHILD`
//! set: `crash_child_writer` is its entry point and does nothing otherwise.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cairndb::{Db, ReadOptions, WriteBatch, WriteOptions};
use rand::{Rng, SeedableRng};

fn child_options() -> cairndb::Options {
    let mut o = common::small_options(cairndb::env::posix::PosixFs::shared());
    o.write_buffer_size = 128 << 10;
    o
}

/// Writer threads in the child, each writing synced batches.
const WRITERS: usize = 8;

/// The child's work: WRITERS threads write synced batches forever and print
/// each acknowledgement.
#[test]
fn crash_child_writer() {
    let Ok(dir) = std::env::var("CAIRNDB_CRASH_CHILD") else {
        return; // not running as a child
    };
    let cycle: usize = std::env::var("CAIRNDB_CRASH_CYCLE")
        .unwrap()
        .parse()
        .unwrap();
    let db = std::sync::Arc::new(Db::open(&dir, child_options()).unwrap());
    let out = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut hs = Vec::new();
    for t in 0..WRITERS {
        let db = db.clone();
        let out = out.clone();
        hs.push(std::thread::spawn(move || {
            for i in 0.. {
                let mut b = WriteBatch::new();
                let val = format!("c{cycle}t{t}i{i}");
                for part in 0..3 {
                    b.put(format!("c{cycle:03}-t{t}-{i:08}-{part}"), &val);
                }
                db.write(
                    &WriteOptions {
                        sync: true,
                        ..Default::default()
                    },
                    b,
                )
                .unwrap();
                let mut o = out.lock().unwrap();
                writeln!(o, "ack {t} {i}").unwrap();
                o.flush().unwrap();
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn sigkill_never_loses_a_synced_write() {
    let seed = common::seed("sigkill_never_loses_a_synced_write");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<[Option<u64>; WRITERS]> = Vec::new();
    let cycles = 6;
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CAIRNDB_CRASH_CHILD", dir.path())
            .env("CAIRNDB_CRASH_CYCLE", cycle.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut last = [None; WRITERS];
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut p = line.split_whitespace();
                if p.next() == Some("ack") {
                    let t: usize = p.next().unwrap().parse().unwrap();
                    let i: u64 = p.next().unwrap().parse().unwrap();
                    last[t] = Some(i);
                }
            }
            last
        });
        // Let it run long enough to flush and compact now and then.
        std::thread::sleep(Duration::from_millis(rng.gen_range(150..900)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        acked.push(reader.join().unwrap());

        let t0 = Instant::now();
        let db = Db::open(dir.path(), child_options()).unwrap();
        let recovery = t0.elapsed();
        for (c, last) in acked.iter().enumerate() {
            for (t, last) in last.iter().enumerate() {
                let Some(last) = *last else { continue };
                for i in 0..=last {
                    for part in 0..3 {
                        let k = format!("c{c:03}-t{t}-{i:08}-{part}");
                        assert_eq!(
                            db.get(&ReadOptions::default(), k.as_bytes()).unwrap(),
                            Some(format!("c{c}t{t}i{i}").into_bytes()),
                            "cycle {cycle}: acknowledged key {k} lost"
                        );
                    }
                }
            }
        }
        // Batches are whole: every key present comes in complete triples.
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut count = 0usize;
        while it.valid() {
            count += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(count % 3, 0, "cycle {cycle}: a batch is partly visible");
        eprintln!("cycle {cycle}: {count} keys, recovery {recovery:?}");
        db.close().unwrap();
    }
    assert!(
        acked.iter().any(|a| a.iter().any(|x| x.is_some())),
        "the child never wrote"
    );
    let _ = Path::new("");
}
