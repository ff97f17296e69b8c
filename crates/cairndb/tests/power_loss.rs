//! Power loss (LevelDB's fault_injection_test is the model): at many crash
//! points of a workload with flushes and compactions, everything not synced
//! is thrown away (file tails and unsynced directory changes, via
//! `MemFs::power_loss` and `MemFs::power_loss_image`); after reopening, the
//! store opens cleanly, every write acknowledged with sync=true or followed
//! by a `wait_durable` of the log position after it (and all before it) is
//! present, and the state is exactly the state after some
//! prefix of the acknowledged writes (batches whole, nothing reordered).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use cairndb::env::mem::MemFs;
use cairndb::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

enum Op {
    Put(Vec<u8>, Vec<u8>, bool),
    Delete(Vec<u8>, bool),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>, bool),
    /// `wait_durable(log_position())`: the WAL syncer's sync.
    WaitDurable,
    Flush,
    Compact,
}

fn workload(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let key = |rng: &mut SmallRng| format!("key{:04}", rng.gen_range(0..300)).into_bytes();
    (0..n)
        .map(|i| {
            let sync = rng.gen_ratio(1, 4);
            let val = format!("v{i}-{}", "x".repeat(rng.gen_range(0..300))).into_bytes();
            match rng.gen_range(0..100) {
                0..=56 => Op::Put(key(&mut rng), val, sync),
                57..=59 => Op::WaitDurable,
                60..=74 => Op::Delete(key(&mut rng), sync),
                75..=95 => Op::Batch(
                    (0..rng.gen_range(2..6))
                        .map(|j| {
                            let v = rng.gen_bool(0.8).then(|| format!("b{i}.{j}").into_bytes());
                            (key(&mut rng), v)
                        })
                        .collect(),
                    sync,
                ),
                96..=97 => Op::Flush,
                _ => Op::Compact,
            }
        })
        .collect()
}

/// Applies op to the db and the model; true when the op made everything
/// before it durable (a synced write, or a flush, which syncs the WAL switch
/// and the table).
fn apply(db: &Db, m: &mut Model, op: &Op) -> bool {
    let wo = |s: bool| WriteOptions {
        sync: s,
        ..Default::default()
    };
    match op {
        Op::Put(k, v, s) => {
            db.put(&wo(*s), k, v).unwrap();
            m.insert(k.clone(), v.clone());
            *s
        }
        Op::Delete(k, s) => {
            db.delete(&wo(*s), k).unwrap();
            m.remove(k);
            *s
        }
        Op::Batch(ops, s) => {
            let mut b = WriteBatch::new();
            for (k, v) in ops {
                match v {
                    Some(v) => {
                        b.put(k, v);
                        m.insert(k.clone(), v.clone());
                    }
                    None => {
                        b.delete(k);
                        m.remove(k);
                    }
                }
            }
            db.write(&wo(*s), b).unwrap();
            *s
        }
        Op::WaitDurable => {
            db.wait_durable(db.log_position()).unwrap();
            true
        }
        Op::Flush => {
            db.flush().unwrap();
            true
        }
        Op::Compact => {
            db.compact_range(None, None).unwrap();
            false
        }
    }
}

fn contents(db: &Db) -> Model {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut m = Model::new();
    while it.valid() {
        m.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    m
}

/// The recovered state must equal the model after some prefix `p` of the
/// acknowledged writes with `p >= durable`. Returns that `p`.
fn check_prefix(got: &Model, states: &[Model], durable: usize, what: &str) -> usize {
    for p in (durable..states.len()).rev() {
        if &states[p] == got {
            return p;
        }
    }
    let diff: Vec<_> = states[durable]
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(*v))
        .map(|(k, _)| String::from_utf8_lossy(k).to_string())
        .take(5)
        .collect();
    panic!(
        "{what}: recovered state ({} keys) is not the state after any prefix of \
         {durable}..{} writes; keys of the durable prefix missing or different: {diff:?}",
        got.len(),
        states.len() - 1
    );
}

fn opts(fs: &MemFs) -> Options {
    let mut o = common::small_options(Arc::new(fs.clone()));
    o.write_buffer_size = 64 << 10;
    o
}

#[test]
fn power_loss_at_every_nth_operation_keeps_a_synced_prefix() {
    let seed = common::seed("power_loss_at_every_nth_operation");
    let ops = workload(seed, 600);
    let mut crash_points = 0;
    // Crash after op i for every i that is a multiple of one of these.
    let mut points: Vec<usize> = [37usize, 89, 151]
        .iter()
        .flat_map(|&n| (1..).map(move |j| j * n).take_while(|&i| i <= 600))
        .collect();
    points.sort();
    points.dedup();
    for &crash_at in &points {
        let fs = MemFs::new();
        let db = Db::open("/db", opts(&fs)).unwrap();
        let mut m = Model::new();
        let mut states = vec![m.clone()];
        let mut durable = 0;
        for op in &ops[..crash_at] {
            let synced = apply(&db, &mut m, op);
            states.push(m.clone());
            if synced {
                durable = states.len() - 1;
            }
        }
        db.simulate_crash();
        fs.power_loss();
        let db = Db::open("/db", opts(&fs))
            .unwrap_or_else(|e| panic!("crash after op {crash_at}: reopen failed: {e}"));
        let got = contents(&db);
        check_prefix(
            &got,
            &states,
            durable,
            &format!("crash after op {crash_at}"),
        );
        // The store works after recovery, and survives a second power loss.
        db.put(
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
            b"after",
            b"1",
        )
        .unwrap();
        db.simulate_crash();
        fs.power_loss();
        let db = Db::open("/db", opts(&fs)).unwrap();
        assert_eq!(
            db.get(&ReadOptions::default(), b"after").unwrap(),
            Some(b"1".to_vec())
        );
        db.close().unwrap();
        crash_points += 1;
    }
    eprintln!("power loss: {crash_points} crash points, seed {seed}");
    assert!(crash_points >= 20);
}

/// Pulls the plug at random instants while flushes and compactions run in
/// the background: a writer thread writes unique keys in order (every
/// fourth synced); the main thread takes power-loss images. Each image must
/// open cleanly and hold keys 0..m exactly, for some m at least the last
/// synced write acknowledged before the image was taken.
#[test]
fn power_loss_during_background_flush_and_compaction() {
    let seed = common::seed("power_loss_during_background_work");
    let mut rng = SmallRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let db = Arc::new(Db::open("/db", opts(&fs)).unwrap());
    let synced_acked = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let n = 60_000usize;
    let writer = {
        let (db, synced_acked, stop) = (db.clone(), synced_acked.clone(), stop.clone());
        std::thread::spawn(move || {
            for i in 0..n {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let sync = i % 4 == 3;
                db.put(
                    &WriteOptions {
                        sync,
                        ..Default::default()
                    },
                    format!("k{i:06}").as_bytes(),
                    &[b'v'; 60],
                )
                .unwrap();
                if sync {
                    synced_acked.store(i + 1, Ordering::Release);
                }
            }
        })
    };
    let mut images = Vec::new();
    while !writer.is_finished() && images.len() < 40 {
        std::thread::sleep(std::time::Duration::from_micros(rng.gen_range(100..1500)));
        let must_have = synced_acked.load(Ordering::Acquire);
        images.push((must_have, fs.power_loss_image()));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let stats = db.stats();
    assert!(images.len() >= 5, "only {} images", images.len());
    for (idx, (must_have, img)) in images.iter().enumerate() {
        let db = Db::open("/db", opts(img))
            .unwrap_or_else(|e| panic!("image {idx}: reopen failed: {e}"));
        let got = contents(&db);
        let m = got.len();
        assert!(
            m >= *must_have,
            "image {idx}: {m} keys, but {must_have} were synced"
        );
        for (i, (k, v)) in got.iter().enumerate() {
            assert_eq!(
                k,
                format!("k{i:06}").as_bytes(),
                "image {idx}: not a prefix"
            );
            assert_eq!(v, &vec![b'v'; 60]);
        }
        db.close().unwrap();
    }
    eprintln!(
        "power loss during background work: {} images, {} flushes, {} compactions",
        images.len(),
        stats.flushes,
        stats.compactions
    );
}

fn big_memtable_opts(fs: &MemFs) -> Options {
    let mut o = opts(fs);
    o.write_buffer_size = 256 << 10;
    o.max_write_buffer_number = 4;
    o
}

/// Regression for taking the WAL sync off the memtable switch: a write
/// acknowledged with sync=true must first sync the WALs switched out before
/// it, or a power loss keeps its WAL and loses an earlier one's tail. Each
/// round fills more than a memtable with unsynced 4 KiB values (a switch, so
/// an unsynced WAL is left behind while its memtable waits for the flush),
/// then makes one synced write and pulls the plug at once.
#[test]
fn synced_write_after_unsynced_memtable_switch_survives_power_loss() {
    let fs = MemFs::new();
    let db = Db::open("/db", big_memtable_opts(&fs)).unwrap();
    let value = vec![b'x'; 4096];
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    let mut n = 0usize;
    for round in 0..6 {
        for _ in 0..90 {
            db.put(
                &WriteOptions::default(),
                format!("k{n:06}").as_bytes(),
                &value,
            )
            .unwrap();
            n += 1;
        }
        db.put(&sync, format!("k{n:06}").as_bytes(), b"synced")
            .unwrap();
        n += 1;
        let image = fs.power_loss_image();
        let db2 = Db::open("/db", big_memtable_opts(&image))
            .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let got = contents(&db2);
        assert_eq!(
            got.len(),
            n,
            "round {round}: {} of the {n} keys before a synced write survived",
            got.len()
        );
        db2.close().unwrap();
    }
    db.close().unwrap();
}

/// The other half of the same change: with no sync at all, a power loss
/// after several memtable switches may lose the unsynced WALs, but recovery
/// stops at the first loss (the next WAL's start marker shows the gap), so
/// what is left is a prefix of the writes and the store opens cleanly.
#[test]
fn power_loss_after_unsynced_memtable_switches_recovers_a_prefix() {
    let fs = MemFs::new();
    let db = Db::open("/db", big_memtable_opts(&fs)).unwrap();
    let value = vec![b'y'; 4096];
    let mut images = Vec::new();
    for i in 0..600usize {
        db.put(
            &WriteOptions::default(),
            format!("k{i:06}").as_bytes(),
            &value,
        )
        .unwrap();
        if i % 50 == 49 {
            images.push((i + 1, fs.power_loss_image()));
        }
    }
    db.close().unwrap();
    for (written, img) in images {
        let db = Db::open("/db", big_memtable_opts(&img))
            .unwrap_or_else(|e| panic!("after {written} writes: reopen failed: {e}"));
        let got = contents(&db);
        assert!(got.len() <= written);
        for (i, (k, v)) in got.iter().enumerate() {
            assert_eq!(
                k,
                format!("k{i:06}").as_bytes(),
                "after {written} writes: not a prefix"
            );
            assert_eq!(v, &value);
        }
        db.close().unwrap();
    }
}
