//! Unit tests of transactions over an in-memory file system: own-write
//! reads and iteration, savepoints, locks, validation and the optimistic
//! conflict check (also after a flush moves the history into tables).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::env::mem::MemFs;

fn mem_opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn pess() -> TransactionDb {
    let fs = MemFs::new();
    TransactionDb::open("/db", mem_opts(&fs), TransactionDbOptions::default()).unwrap()
}

fn opt() -> OptimisticTransactionDb {
    let fs = MemFs::new();
    OptimisticTransactionDb::open("/db", mem_opts(&fs)).unwrap()
}

fn w() -> WriteOptions {
    WriteOptions::default()
}

fn r() -> ReadOptions {
    ReadOptions::default()
}

fn collect_fwd(it: &mut TransactionIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn collect_bwd(it: &mut TransactionIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

#[test]
fn reads_own_writes_before_the_database_and_others_see_them_only_after_commit() {
    let db = pess();
    db.put(&w(), b"a", b"1").unwrap();
    db.put(&w(), b"b", b"2").unwrap();
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.put(b"a", b"10").unwrap();
    t.delete(b"b").unwrap();
    t.put(b"c", b"30").unwrap();
    assert_eq!(t.get(&r(), b"a").unwrap(), Some(b"10".to_vec()));
    assert_eq!(t.get(&r(), b"b").unwrap(), None);
    assert_eq!(db.get(&r(), b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&r(), b"c").unwrap(), None);
    t.commit().unwrap();
    assert_eq!(db.get(&r(), b"a").unwrap(), Some(b"10".to_vec()));
    assert_eq!(db.get(&r(), b"b").unwrap(), None);
    assert_eq!(db.get(&r(), b"c").unwrap(), Some(b"30".to_vec()));
    assert!(
        t.put(b"x", b"y").is_err(),
        "a committed transaction refuses writes"
    );
    assert_eq!(db.num_locks(), 0);
}

#[test]
fn dropping_an_active_transaction_rolls_back_and_releases_its_locks() {
    let db = pess();
    {
        let mut t = db.begin(&w(), &TransactionOptions::default());
        t.put(b"k", b"v").unwrap();
        assert_eq!(db.num_locks(), 1);
    }
    assert_eq!(db.num_locks(), 0);
    assert_eq!(db.get(&r(), b"k").unwrap(), None);
    // The key can be locked again at once.
    let mut t = db.begin(
        &w(),
        &TransactionOptions {
            lock_timeout: Some(Duration::ZERO),
            ..Default::default()
        },
    );
    t.put(b"k", b"v2").unwrap();
    t.commit().unwrap();
}

#[test]
fn savepoints_undo_writes_and_release_locks_taken_since() {
    let db = pess();
    db.put(&w(), b"a", b"0").unwrap();
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.put(b"a", b"1").unwrap();
    t.set_savepoint();
    t.put(b"a", b"2").unwrap();
    t.put(b"b", b"2").unwrap();
    t.set_savepoint();
    t.delete(b"a").unwrap();
    t.put(b"c", b"3").unwrap();
    assert_eq!(db.num_locks(), 3);
    t.rollback_to_savepoint().unwrap();
    assert_eq!(t.get(&r(), b"a").unwrap(), Some(b"2".to_vec()));
    assert_eq!(t.get(&r(), b"c").unwrap(), None);
    assert_eq!(
        db.num_locks(),
        2,
        "the lock on c was taken after the savepoint"
    );
    t.rollback_to_savepoint().unwrap();
    assert_eq!(t.get(&r(), b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(t.get(&r(), b"b").unwrap(), None);
    assert_eq!(db.num_locks(), 1);
    assert!(matches!(
        t.rollback_to_savepoint(),
        Err(Error::InvalidArgument(_))
    ));
    t.set_savepoint();
    t.put(b"d", b"4").unwrap();
    t.pop_savepoint().unwrap();
    assert!(t.pop_savepoint().is_err());
    t.commit().unwrap();
    assert_eq!(db.get(&r(), b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&r(), b"b").unwrap(), None);
    assert_eq!(db.get(&r(), b"d").unwrap(), Some(b"4".to_vec()));
}

#[test]
fn pessimistic_write_to_a_key_changed_after_the_snapshot_is_busy() {
    let db = pess();
    let mut t = db.begin(
        &w(),
        &TransactionOptions {
            set_snapshot: true,
            ..Default::default()
        },
    );
    db.put(&w(), b"k", b"other").unwrap();
    match t.put(b"k", b"mine") {
        Err(Error::Busy { key, .. }) => assert_eq!(key, b"k"),
        other => panic!("expected Busy, got {other:?}"),
    }
    assert_eq!(db.num_locks(), 0, "a failed validation keeps no lock");
    // Another key is fine, and the transaction goes on.
    t.put(b"j", b"mine").unwrap();
    t.commit().unwrap();
    // Without a snapshot, writes are current.
    let mut t = db.begin(&w(), &TransactionOptions::default());
    db.put(&w(), b"k", b"newer").unwrap();
    t.put(b"k", b"mine").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(&r(), b"k").unwrap(), Some(b"mine".to_vec()));
}

#[test]
fn lock_timeout_without_detection_is_timed_out_not_before_the_timeout() {
    let db = pess();
    let mut a = db.begin(&w(), &TransactionOptions::default());
    a.put(b"k", b"a").unwrap();
    let timeout = Duration::from_millis(50);
    let mut b = db.begin(
        &w(),
        &TransactionOptions {
            deadlock_detect: false,
            lock_timeout: Some(timeout),
            ..Default::default()
        },
    );
    let t = Instant::now();
    match b.get_for_update(&r(), b"k", true) {
        Err(Error::TimedOut { key, waited }) => {
            assert_eq!(key, b"k");
            assert!(waited >= timeout);
        }
        other => panic!("expected TimedOut, got {other:?}"),
    }
    assert!(t.elapsed() >= timeout);
    a.commit().unwrap();
}

#[test]
fn deadlock_victim_is_rolled_back_and_the_other_commits() {
    let db = pess();
    let topts = TransactionOptions {
        lock_timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let mut a = db.begin(&w(), &topts);
    let mut b = db.begin(&w(), &topts);
    a.put(b"x", b"a").unwrap();
    b.put(b"y", b"b").unwrap();
    let db2 = db.clone();
    let ta = std::thread::spawn(move || {
        let r = a.put(b"y", b"a");
        (r.map(|()| a.commit()), db2)
    });
    // Let `a` start waiting for y (b holds it), then close the cycle.
    let start = Instant::now();
    let rb = loop {
        std::thread::sleep(Duration::from_millis(5));
        if start.elapsed() > Duration::from_millis(50) {
            break b.put(b"x", b"b");
        }
    };
    let (ra, _) = ta.join().unwrap();
    match (rb, ra) {
        (Err(Error::Deadlock { .. }), Ok(Ok(()))) => {
            assert_eq!(db.get(&r(), b"x").unwrap(), Some(b"a".to_vec()));
            assert_eq!(db.get(&r(), b"y").unwrap(), Some(b"a".to_vec()));
        }
        (Ok(()), Err(Error::Deadlock { .. })) => {
            b.commit().unwrap();
            assert_eq!(db.get(&r(), b"x").unwrap(), Some(b"b".to_vec()));
        }
        (rb, ra) => panic!("expected one Deadlock and one commit: b {rb:?}, a {ra:?}"),
    }
    assert_eq!(db.num_locks(), 0);
}

#[test]
fn optimistic_conflict_is_busy_and_a_retry_succeeds() {
    let db = opt();
    db.db().put(&w(), b"k", b"0").unwrap();
    let mut t = db.begin(&w(), &TransactionOptions::default());
    let v = t.get_for_update(&r(), b"k", true).unwrap();
    assert_eq!(v, Some(b"0".to_vec()));
    db.db().put(&w(), b"k", b"other").unwrap();
    t.put(b"k", b"1").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy { .. })));
    assert_eq!(db.db().get(&r(), b"k").unwrap(), Some(b"other".to_vec()));
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.get_for_update(&r(), b"k", true).unwrap();
    t.put(b"k", b"1").unwrap();
    t.commit().unwrap();
    assert_eq!(db.db().get(&r(), b"k").unwrap(), Some(b"1".to_vec()));
}

/// A plain write of `written` is logged but its memtable insert is held
/// back while a transaction that read `read` commits. Returns how the
/// commit ended if it ended while the insert was held, and how it ended.
fn commit_beside_an_unpublished_write(
    written: &'static [u8],
    read: &'static [u8],
) -> (bool, Result<()>, OptimisticTransactionDb) {
    let db = opt();
    db.db().put(&w(), b"a", b"0").unwrap();
    db.db().put(&w(), b"b", b"0").unwrap();
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.get_for_update(&r(), read, true).unwrap();
    t.put(read, b"t").unwrap();
    // The first checked commit starts the tracking of unpublished groups.
    let mut warm = db.begin(&w(), &TransactionOptions::default());
    warm.put(b"warm", b"1").unwrap();
    warm.commit().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    db.db().set_hook(crate::db::hooks::BEFORE_INSERT, move |_| {
        std::thread::spawn(move || {
            let _ = tx.send(t.commit());
        });
        // The insert stays held until the commit ends or 2 s pass.
        let early = rx.recv_timeout(Duration::from_secs(2)).ok();
        let _ = done_tx.send((early, rx));
    });
    db.db().put(&w(), written, b"w").unwrap();
    let (early, rx) = done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the write reached its insert");
    match early {
        Some(r) => (true, r, db),
        None => (false, rx.recv().unwrap(), db),
    }
}

#[test]
fn optimistic_commit_conflicts_with_a_write_whose_insert_is_in_flight() {
    // Before the in-flight tracking, the check waited for the insert.
    let (early, res, db) = commit_beside_an_unpublished_write(b"a", b"a");
    assert!(early, "the check waited for the held insert");
    assert!(matches!(res, Err(Error::Busy { .. })), "{res:?}");
    assert_eq!(db.db().get(&r(), b"a").unwrap(), Some(b"w".to_vec()));
}

#[test]
fn optimistic_commit_beside_an_in_flight_write_of_another_key_succeeds() {
    // Its check passes at once; it publishes after the earlier group.
    let (_, res, db) = commit_beside_an_unpublished_write(b"a", b"b");
    assert!(res.is_ok(), "{res:?}");
    assert_eq!(db.db().get(&r(), b"a").unwrap(), Some(b"w".to_vec()));
    assert_eq!(db.db().get(&r(), b"b").unwrap(), Some(b"t".to_vec()));
}

#[test]
fn optimistic_check_reads_the_tables_after_a_flush() {
    let db = opt();
    db.db().put(&w(), b"k", b"0").unwrap();
    let mut t = db.begin(
        &w(),
        &TransactionOptions {
            set_snapshot: true,
            ..Default::default()
        },
    );
    t.put(b"k", b"mine").unwrap();
    // The conflicting write then leaves the memtables.
    db.db().put(&w(), b"k", b"other").unwrap();
    db.db().flush().unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy { .. })));
    // A write older than the snapshot, also flushed, is no conflict.
    let mut t = db.begin(
        &w(),
        &TransactionOptions {
            set_snapshot: true,
            ..Default::default()
        },
    );
    t.put(b"k", b"mine").unwrap();
    t.commit().unwrap();
}

#[test]
fn optimistic_read_only_transaction_fails_when_its_read_changed() {
    let db = opt();
    let mut t = db.begin(&w(), &TransactionOptions::default());
    assert_eq!(t.get_for_update(&r(), b"k", true).unwrap(), None);
    db.db().put(&w(), b"k", b"v").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy { .. })));
}

fn lost_update_run(optimistic: bool) {
    const THREADS: usize = 4;
    const INCREMENTS: usize = 200;
    let (p, o) = if optimistic {
        (None, Some(opt()))
    } else {
        (Some(pess()), None)
    };
    let begin = {
        let p = p.clone();
        let o = o.clone();
        move || match (&p, &o) {
            (Some(p), _) => p.begin(&w(), &TransactionOptions::default()),
            (_, Some(o)) => o.begin(&w(), &TransactionOptions::default()),
            _ => unreachable!(),
        }
    };
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let begin = begin.clone();
            std::thread::spawn(move || {
                for _ in 0..INCREMENTS {
                    loop {
                        let mut t = begin();
                        let r = (|| -> Result<()> {
                            let v = t.get_for_update(&r(), b"counter", true)?;
                            let n: u64 =
                                v.map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                            t.put(b"counter", (n + 1).to_string().as_bytes())?;
                            t.commit()
                        })();
                        match r {
                            Ok(()) => break,
                            Err(Error::Busy { .. }) => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let t = begin();
    let v = t.get(&r(), b"counter").unwrap().unwrap();
    assert_eq!(
        String::from_utf8(v).unwrap().parse::<usize>().unwrap(),
        THREADS * INCREMENTS
    );
}

#[test]
fn concurrent_increments_lose_no_update_pessimistic() {
    lost_update_run(false);
}

#[test]
fn concurrent_increments_lose_no_update_optimistic() {
    lost_update_run(true);
}

#[test]
fn iterator_merges_own_puts_and_deletes_in_both_directions() {
    let db = pess();
    for k in [b"a", b"c", b"e", b"g"] {
        db.put(&w(), k, b"db").unwrap();
    }
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.put(b"b", b"t").unwrap();
    t.delete(b"c").unwrap();
    t.put(b"e", b"t").unwrap();
    t.delete(b"g").unwrap();
    t.put(b"h", b"t").unwrap();
    t.delete(b"zz").unwrap();
    let mut it = t.iter(&r()).unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = [("a", "db"), ("b", "t"), ("e", "t"), ("h", "t")]
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    assert_eq!(collect_fwd(&mut it), want);
    assert_eq!(collect_bwd(&mut it), want);
    it.seek(b"c");
    assert_eq!(it.key(), b"e");
    it.prev();
    assert_eq!(it.key(), b"b");
    it.next();
    assert_eq!(it.key(), b"e");
    it.seek_for_prev(b"g");
    assert_eq!(it.key(), b"e");
    it.next();
    assert_eq!(it.key(), b"h");
    it.next();
    assert!(!it.valid());
}

#[test]
fn set_bounds_reads_several_ranges_with_one_iterator() {
    let db = pess();
    for k in [b"a", b"c", b"e", b"g", b"i"] {
        db.put(&w(), k, b"db").unwrap();
    }
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.put(b"b", b"t").unwrap();
    t.delete(b"c").unwrap();
    t.put(b"e", b"t").unwrap();
    t.put(b"h", b"t").unwrap();
    let ro = ReadOptions {
        iterate_lower_bound: Some(b"a".to_vec()),
        iterate_upper_bound: Some(b"c".to_vec()),
        ..r()
    };
    let mut it = t.iter(&ro).unwrap();
    let kv = |v: &[(&str, &str)]| -> Vec<(Vec<u8>, Vec<u8>)> {
        v.iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    assert_eq!(collect_fwd(&mut it), kv(&[("a", "db"), ("b", "t")]));
    // The deleted key at the start of a range, a delta key at its end.
    it.set_bounds(Some(b"c".to_vec()), Some(b"h\0".to_vec()));
    assert!(!it.valid());
    let want = kv(&[("e", "t"), ("g", "db"), ("h", "t")]);
    assert_eq!(collect_fwd(&mut it), want);
    assert_eq!(collect_bwd(&mut it), want);
    // Back to an earlier range, read backward first.
    it.set_bounds(Some(b"b".to_vec()), Some(b"e".to_vec()));
    assert_eq!(collect_bwd(&mut it), kv(&[("b", "t")]));
    it.set_bounds(Some(b"h".to_vec()), None);
    assert_eq!(collect_fwd(&mut it), kv(&[("h", "t"), ("i", "db")]));
    // A forward step where both sides hold the same key (the delta's
    // value wins and the base's entry is passed too).
    it.set_bounds(None, None);
    it.seek(b"d");
    assert_eq!((it.key(), it.value()), (&b"e"[..], &b"t"[..]));
    it.next();
    assert_eq!((it.key(), it.value()), (&b"g"[..], &b"db"[..]));
}

/// One step of the model test.
#[derive(Debug, Clone)]
enum Op {
    DbPut(u8, u8),
    DbDelete(u8),
    TxnPut(u8, u8),
    TxnDelete(u8),
    SetSavepoint,
    RollbackToSavepoint,
    Flush,
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..24;
    prop_oneof![
        (k.clone(), any::<u8>()).prop_map(|(k, v)| Op::DbPut(k, v)),
        k.clone().prop_map(Op::DbDelete),
        (k.clone(), any::<u8>()).prop_map(|(k, v)| Op::TxnPut(k, v)),
        k.prop_map(Op::TxnDelete),
        Just(Op::SetSavepoint),
        Just(Op::RollbackToSavepoint),
        Just(Op::Flush),
        Just(Op::Check),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A transaction's view (get, forward and backward iteration, seeks)
    /// equals a model: its writes over the database at its snapshot;
    /// after commit the database equals the model.
    #[test]
    fn transaction_view_matches_a_btreemap_model(ops in proptest::collection::vec(op(), 1..80)) {
        let db = opt();
        let mut base: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for k in 0..24u8 {
            if k % 3 == 0 {
                db.db().put(&w(), &key(k), b"init").unwrap();
                base.insert(key(k), b"init".to_vec());
            }
        }
        let mut t = db.begin(&w(), &TransactionOptions { set_snapshot: true, ..Default::default() });
        let snap_base = base.clone();
        let mut own: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        let mut saves: Vec<BTreeMap<Vec<u8>, Option<Vec<u8>>>> = Vec::new();
        // Keys the database wrote after the snapshot: writing them would
        // (rightly) fail the commit's check, so the transaction leaves them.
        let mut changed: std::collections::HashSet<Vec<u8>> = Default::default();
        for op in ops {
            match op {
                Op::DbPut(k, v) => {
                    // Only keys the transaction never wrote, so it may commit.
                    if own.contains_key(&key(k)) { continue; }
                    db.db().put(&w(), &key(k), &[v]).unwrap();
                    base.insert(key(k), vec![v]);
                    changed.insert(key(k));
                }
                Op::DbDelete(k) => {
                    if own.contains_key(&key(k)) { continue; }
                    db.db().delete(&w(), &key(k)).unwrap();
                    base.remove(&key(k));
                    changed.insert(key(k));
                }
                Op::TxnPut(k, v) => {
                    if changed.contains(&key(k)) { continue; }
                    t.put(&key(k), &[v]).unwrap();
                    own.insert(key(k), Some(vec![v]));
                }
                Op::TxnDelete(k) => {
                    if changed.contains(&key(k)) { continue; }
                    t.delete(&key(k)).unwrap();
                    own.insert(key(k), None);
                }
                Op::SetSavepoint => {
                    t.set_savepoint();
                    saves.push(own.clone());
                }
                Op::RollbackToSavepoint => {
                    match saves.pop() {
                        Some(s) => { t.rollback_to_savepoint().unwrap(); own = s; }
                        None => prop_assert!(t.rollback_to_savepoint().is_err()),
                    }
                }
                Op::Flush => db.db().flush().unwrap(),
                Op::Check => {}
            }
            // The transaction's view: own writes over the snapshot.
            let mut view = snap_base.clone();
            for (k, v) in &own {
                match v { Some(v) => { view.insert(k.clone(), v.clone()); } None => { view.remove(k); } }
            }
            let want: Vec<(Vec<u8>, Vec<u8>)> = view.clone().into_iter().collect();
            let mut it = t.iter(&r()).unwrap();
            prop_assert_eq!(&collect_fwd(&mut it), &want);
            prop_assert_eq!(&collect_bwd(&mut it), &want);
            for k in 0..25u8 {
                let target = key(k);
                it.seek(&target);
                let exp = view.range(target.clone()..).next().map(|(k, _)| k.clone());
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), exp.clone());
                if it.valid() {
                    it.prev();
                    let exp_prev = view.range(..exp.clone().unwrap()).next_back().map(|(k, _)| k.clone());
                    prop_assert_eq!(it.valid().then(|| it.key().to_vec()), exp_prev);
                }
                it.seek_for_prev(&target);
                let exp = view.range(..=target.clone()).next_back().map(|(k, _)| k.clone());
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), exp.clone());
                if it.valid() {
                    it.next();
                    let exp_next = view.range((std::ops::Bound::Excluded(exp.clone().unwrap()), std::ops::Bound::Unbounded)).next().map(|(k, _)| k.clone());
                    prop_assert_eq!(it.valid().then(|| it.key().to_vec()), exp_next);
                }
                prop_assert_eq!(t.get(&r(), &target).unwrap(), view.get(&target).cloned());
            }
        }
        t.commit().unwrap();
        for (k, v) in &own {
            match v { Some(v) => { base.insert(k.clone(), v.clone()); } None => { base.remove(k); } }
        }
        let mut it = db.db().iter(&r()).unwrap();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() { got.push((it.key().to_vec(), it.value().to_vec())); it.next(); }
        prop_assert_eq!(got, base.into_iter().collect::<Vec<_>>());
    }
}

// ------------------------------------------------------ two-phase commit

fn pess_on(fs: &MemFs, write_buffer_size: usize) -> TransactionDb {
    TransactionDb::open(
        "/db",
        Options {
            write_buffer_size,
            ..mem_opts(fs)
        },
        TransactionDbOptions::default(),
    )
    .unwrap()
}

fn sync() -> WriteOptions {
    WriteOptions {
        sync: true,
        ..Default::default()
    }
}

fn prepared(db: &TransactionDb, name: &str) -> Transaction {
    let mut t = db.begin(&sync(), &TransactionOptions::default());
    t.set_name(name.as_bytes()).unwrap();
    t.put(format!("{name}-a").as_bytes(), b"1").unwrap();
    t.delete(format!("{name}-gone").as_bytes()).unwrap();
    t.put(format!("{name}-b").as_bytes(), b"2").unwrap();
    t.prepare().unwrap();
    t
}

#[test]
fn prepared_transaction_survives_power_loss_and_is_offered_with_its_locks() {
    let fs = MemFs::new();
    let db = pess_on(&fs, 4 << 20);
    db.put(&w(), b"x1-gone", b"old").unwrap();
    let t = prepared(&db, "x1");
    // Prepared writes are not visible.
    assert_eq!(db.get(&r(), b"x1-a").unwrap(), None);
    let image = fs.power_loss_image();
    drop(t);
    drop(db);

    let db = pess_on(&image, 4 << 20);
    assert_eq!(db.get(&r(), b"x1-a").unwrap(), None);
    let mut ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    assert_eq!(ts[0].name(), Some(&b"x1"[..]));
    // Its locks were taken again before any new transaction.
    let mut other = db.begin(
        &w(),
        &TransactionOptions {
            lock_timeout: Some(Duration::ZERO),
            ..Default::default()
        },
    );
    assert!(matches!(
        other.put(b"x1-a", b"no"),
        Err(Error::TimedOut { .. })
    ));
    // The name is taken while it is undecided.
    assert!(other.set_name(b"x1").is_err());
    drop(other);
    ts[0].commit().unwrap();
    assert_eq!(db.get(&r(), b"x1-a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(&r(), b"x1-gone").unwrap(), None);
    assert_eq!(db.num_locks(), 0);
    db.close().unwrap();
    drop(db);

    let db = pess_on(&image, 4 << 20);
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(db.get(&r(), b"x1-b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn rolled_back_prepared_transaction_leaves_nothing_after_reopen() {
    let fs = MemFs::new();
    let db = pess_on(&fs, 4 << 20);
    let mut t = prepared(&db, "x2");
    t.rollback().unwrap();
    assert_eq!(db.num_locks(), 0);
    let image = fs.power_loss_image();
    drop(db);
    let db = pess_on(&image, 4 << 20);
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(db.get(&r(), b"x2-a").unwrap(), None);
}

#[test]
fn prepared_transaction_outlives_the_wal_it_was_written_to() {
    let fs = MemFs::new();
    // Small memtables: the writes below switch WALs and flush many times,
    // so the WAL holding the prepare record becomes obsolete and goes.
    let db = pess_on(&fs, 64 << 10);
    let t = prepared(&db, "x3");
    for i in 0..20_000u32 {
        db.put(&w(), format!("k{i:06}").as_bytes(), &[7u8; 64])
            .unwrap();
    }
    db.db().flush().unwrap();
    db.db().wait_for_compactions().unwrap();
    let image = fs.power_loss_image();
    drop(t);
    drop(db);
    let db = pess_on(&image, 64 << 10);
    let mut ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1, "the prepare record was lost with its WAL");
    ts[0].commit().unwrap();
    assert_eq!(db.get(&r(), b"x3-b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.get(&r(), b"k019999").unwrap(), Some(vec![7u8; 64]));
}

#[test]
fn dropping_a_prepared_transaction_does_not_decide_it() {
    let fs = MemFs::new();
    let db = pess_on(&fs, 4 << 20);
    let t = prepared(&db, "x4");
    drop(t);
    assert_eq!(db.num_locks(), 3, "a prepared transaction keeps its locks");
    let mut ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    assert!(db.prepared_transactions().is_empty(), "handed out once");
    ts[0].commit().unwrap();
    assert_eq!(db.get(&r(), b"x4-a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn prepare_is_refused_without_a_name_twice_named_or_optimistic() {
    let db = pess();
    let mut t = db.begin(&w(), &TransactionOptions::default());
    t.put(b"k", b"v").unwrap();
    assert!(matches!(t.prepare(), Err(Error::InvalidArgument(_))));
    t.set_name(b"n").unwrap();
    assert!(t.set_name(b"m").is_err());
    let mut u = db.begin(&w(), &TransactionOptions::default());
    assert!(
        u.set_name(b"n").is_err(),
        "names are unique among live transactions"
    );
    t.prepare().unwrap();
    assert!(
        t.put(b"k2", b"v").is_err(),
        "a prepared transaction takes no writes"
    );
    t.commit().unwrap();
    u.set_name(b"n").unwrap();

    let o = opt();
    let mut t = o.begin(&w(), &TransactionOptions::default());
    t.set_name(b"n").unwrap();
    assert!(matches!(t.prepare(), Err(Error::InvalidArgument(_))));

    let mut t = db.begin(
        &WriteOptions {
            disable_wal: true,
            ..Default::default()
        },
        &TransactionOptions::default(),
    );
    t.set_name(b"q").unwrap();
    assert!(matches!(t.prepare(), Err(Error::InvalidArgument(_))));
}
