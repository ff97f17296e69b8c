//! Transactions under concurrency, crashes, power loss and injected faults,
//! for both flavours (`TransactionDb`, pessimistic; `OptimisticTransactionDb`):
//!
//! * bank transfers between 64 accounts by 4 threads keep the total under
//!   every snapshot, and each account ends at exactly its initial balance
//!   plus the transfers committed (also while flushes and compactions move
//!   the history the conflict checks read into tables);
//! * concurrent increments of one counter lose no update;
//! * opposite lock orders end in one `Deadlock` and one commit; without
//!   deadlock detection the waiters time out, never before the lock timeout;
//! * synced commits survive a power loss (also with a torn, partly written
//!   WAL tail), unsynced and uncommitted transactions are all-or-nothing;
//! * an injected I/O error at every fault point of a stream of multi-key
//!   commits leaves the database read-only or consistent, and after a
//!   reopen every transaction is whole and every acknowledged commit there.
//!
//! No test bounds a duration from above: lock timeouts are checked from
//! below only, and the other waits are bounded by events, not clocks.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cairndb::env::fault::{FaultFs, FaultOp, FaultRule};
use cairndb::env::mem::MemFs;
use cairndb::env::Fs as _;
use cairndb::{
    Db, Error, OptimisticTransactionDb, Options, ReadOptions, Transaction, TransactionDb,
    TransactionDbOptions, TransactionOptions, WriteBatch, WriteOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Pessimistic,
    Optimistic,
}

const FLAVOURS: [Flavour; 2] = [Flavour::Pessimistic, Flavour::Optimistic];

/// Either kind of transaction database.
#[derive(Clone)]
enum TxDb {
    Pess(TransactionDb),
    Opt(OptimisticTransactionDb),
}

impl TxDb {
    fn open(flavour: Flavour, path: &str, o: Options) -> cairndb::Result<TxDb> {
        Self::open_with(flavour, path, o, TransactionDbOptions::default())
    }

    fn open_with(
        flavour: Flavour,
        path: &str,
        o: Options,
        t: TransactionDbOptions,
    ) -> cairndb::Result<TxDb> {
        Ok(match flavour {
            Flavour::Pessimistic => TxDb::Pess(TransactionDb::open(path, o, t)?),
            Flavour::Optimistic => TxDb::Opt(OptimisticTransactionDb::open(path, o)?),
        })
    }

    fn begin(&self, wo: &WriteOptions, to: &TransactionOptions) -> Transaction {
        match self {
            TxDb::Pess(d) => d.begin(wo, to),
            TxDb::Opt(d) => d.begin(wo, to),
        }
    }

    fn db(&self) -> &Db {
        match self {
            TxDb::Pess(d) => d.db(),
            TxDb::Opt(d) => d.db(),
        }
    }

    fn close(&self) -> cairndb::Result<()> {
        match self {
            TxDb::Pess(d) => d.close(),
            TxDb::Opt(d) => d.close(),
        }
    }
}

/// The errors a transaction retries after: a conflict, a lock wait that
/// timed out, or being a deadlock victim.
fn retryable(e: &Error) -> bool {
    matches!(
        e,
        Error::Busy { .. } | Error::TimedOut { .. } | Error::Deadlock { .. }
    )
}

fn r() -> ReadOptions {
    ReadOptions::default()
}

fn wo(sync: bool) -> WriteOptions {
    WriteOptions {
        sync,
        ..Default::default()
    }
}

fn parse_i64(v: &[u8], what: &str) -> i64 {
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{what}: not an integer: {:?}", String::from_utf8_lossy(v)))
}

/// Options with large memtables: nothing is flushed during a short run.
fn quiet_options(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// Options that flush and compact after a few tens of KB.
fn churn_options(fs: &MemFs) -> Options {
    common::small_options(Arc::new(fs.clone()))
}

// ---------------------------------------------------------------------------
// Bank transfers

const ACCOUNTS: usize = 64;
const INITIAL: i64 = 1000;
const TOTAL: i64 = ACCOUNTS as i64 * INITIAL;

fn acct(i: usize) -> Vec<u8> {
    format!("acct{i:03}").into_bytes()
}

/// The record each transfer writes beside the two balances, so the end
/// state can be recomputed from the transfers that committed.
fn xfer_key(t: usize, i: usize) -> Vec<u8> {
    format!("xfer/{t}/{i:06}").into_bytes()
}

fn xfer_value(from: usize, to: usize, amount: i64) -> Vec<u8> {
    // Filler so that the run fills memtables (the churn variant flushes).
    format!("{from} {to} {amount} {}", "f".repeat(150)).into_bytes()
}

#[derive(Default, Debug)]
struct Retries {
    busy: u64,
    timed_out: u64,
    deadlock: u64,
}

impl Retries {
    fn count(&mut self, e: &Error) {
        match e {
            Error::Busy { .. } => self.busy += 1,
            Error::TimedOut { .. } => self.timed_out += 1,
            Error::Deadlock { .. } => self.deadlock += 1,
            other => panic!("not a retryable error: {other}"),
        }
    }
    fn add(&mut self, o: &Retries) {
        self.busy += o.busy;
        self.timed_out += o.timed_out;
        self.deadlock += o.deadlock;
    }
}

/// One transfer of `amount` from `from` to `to`, locking (or tracking) the
/// two accounts in the order given.
fn transfer(
    db: &TxDb,
    snapshot: bool,
    (from, to, amount): (usize, usize, i64),
    (t, i): (usize, usize),
    lock_to_first: bool,
    pause: bool,
) -> cairndb::Result<()> {
    let mut txn = db.begin(
        &wo(false),
        &TransactionOptions {
            set_snapshot: snapshot,
            ..Default::default()
        },
    );
    let read = |txn: &mut Transaction, a: usize| -> cairndb::Result<i64> {
        let v = txn
            .get_for_update(&r(), &acct(a), true)?
            .unwrap_or_else(|| panic!("account {a} is missing"));
        Ok(parse_i64(&v, &format!("account {a}")))
    };
    let (bf, bt) = if lock_to_first {
        let bt = read(&mut txn, to)?;
        (read(&mut txn, from)?, bt)
    } else {
        let bf = read(&mut txn, from)?;
        (bf, read(&mut txn, to)?)
    };
    if pause {
        // Widen the window in which other transfers meet this one.
        std::thread::yield_now();
    }
    txn.put(&acct(from), (bf - amount).to_string().as_bytes())?;
    txn.put(&acct(to), (bt + amount).to_string().as_bytes())?;
    txn.put(&xfer_key(t, i), &xfer_value(from, to, amount))?;
    txn.commit()
}

/// Sums the balances through a snapshot of the database, both with an
/// iterator and with point reads, and checks the sum.
fn check_total_db(db: &Db) {
    let snap = db.snapshot();
    let ro = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    let mut it = db.iter(&ro).unwrap();
    it.seek(b"acct");
    let (mut sum, mut n) = (0i64, 0usize);
    while it.valid() && it.key().starts_with(b"acct") {
        sum += parse_i64(it.value(), "account (iterator)");
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, ACCOUNTS, "accounts seen by a snapshot iterator");
    assert_eq!(sum, TOTAL, "total under a snapshot (iterator)");
    let sum: i64 = (0..ACCOUNTS)
        .map(|a| parse_i64(&db.get(&ro, &acct(a)).unwrap().unwrap(), "account (get)"))
        .sum();
    assert_eq!(sum, TOTAL, "total under a snapshot (gets)");
}

/// The same through a read-only transaction with a snapshot (its iterator
/// and its gets).
fn check_total_txn(db: &TxDb) {
    let txn = db.begin(
        &wo(false),
        &TransactionOptions {
            set_snapshot: true,
            ..Default::default()
        },
    );
    let mut it = txn.iter(&r()).unwrap();
    it.seek(b"acct");
    let (mut sum, mut n) = (0i64, 0usize);
    while it.valid() && it.key().starts_with(b"acct") {
        sum += parse_i64(it.value(), "account (transaction iterator)");
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, ACCOUNTS);
    assert_eq!(sum, TOTAL, "total in a snapshot transaction (iterator)");
    let sum: i64 = (0..ACCOUNTS)
        .map(|a| parse_i64(&txn.get(&r(), &acct(a)).unwrap().unwrap(), "account"))
        .sum();
    assert_eq!(sum, TOTAL, "total in a snapshot transaction (gets)");
}

/// Every account holds its initial balance plus the committed transfers
/// (each recorded under its `xfer_key`), and no other transfer is there.
fn check_bank_state(db: &Db, committed: &[Vec<(usize, usize, i64)>], what: &str) {
    let mut want = vec![INITIAL; ACCOUNTS];
    for (t, xs) in committed.iter().enumerate() {
        for (i, &(from, to, amount)) in xs.iter().enumerate() {
            want[from] -= amount;
            want[to] += amount;
            assert_eq!(
                db.get(&r(), &xfer_key(t, i)).unwrap(),
                Some(xfer_value(from, to, amount)),
                "{what}: transfer {t}/{i} acknowledged but not there"
            );
        }
    }
    let mut it = db.iter(&r()).unwrap();
    it.seek(b"xfer/");
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    let acked: usize = committed.iter().map(Vec::len).sum();
    assert_eq!(n, acked, "{what}: transfer records present vs committed");
    for (a, &w) in want.iter().enumerate() {
        let v = db.get(&r(), &acct(a)).unwrap().unwrap();
        assert_eq!(
            parse_i64(&v, "account"),
            w,
            "{what}: account {a} is not its initial balance plus its committed transfers"
        );
    }
    check_total_db(db);
}

/// 4 threads × `per_thread` transfers between random accounts, locked in
/// random order (so pessimistic runs meet deadlocks), half of them with a
/// snapshot (validation, or the optimistic check against the snapshot);
/// 2 readers check the total under snapshots all along; with `churn`, a
/// fifth thread flushes and compacts throughout.
fn bank_run(flavour: Flavour, churn: bool, per_thread: usize) {
    const THREADS: usize = 4;
    let seed = common::seed(&format!("bank {flavour:?} churn {churn}"));
    let fs = MemFs::new();
    let o = if churn {
        churn_options(&fs)
    } else {
        quiet_options(&fs)
    };
    let db = TxDb::open(flavour, "/db", o.clone()).unwrap();
    let mut b = WriteBatch::new();
    for a in 0..ACCOUNTS {
        b.put(acct(a), INITIAL.to_string());
    }
    db.db().write(&wo(true), b).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|rd| {
            let (db, stop, reads) = (db.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if rd == 0 {
                        check_total_db(db.db());
                    } else {
                        check_total_txn(&db);
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let churner = churn.then(|| {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.db().flush().unwrap();
                if n % 4 == 3 {
                    db.db().compact_range(None, None).unwrap();
                }
                n += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    });
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ ((t as u64 + 1) * 0x9e37_79b9));
                let mut done = Vec::with_capacity(per_thread);
                let mut retries = Retries::default();
                for i in 0..per_thread {
                    let from = rng.gen_range(0..ACCOUNTS);
                    let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
                    let amount = rng.gen_range(1..=100);
                    loop {
                        let snapshot = rng.gen_bool(0.5);
                        let to_first = rng.gen_bool(0.5);
                        let pause = rng.gen_bool(0.3);
                        let x = (from, to, amount);
                        match transfer(&db, snapshot, x, (t, i), to_first, pause) {
                            Ok(()) => break,
                            Err(e) if retryable(&e) => retries.count(&e),
                            Err(e) => panic!("transfer {t}/{i}: {e}"),
                        }
                    }
                    done.push((from, to, amount));
                }
                (done, retries)
            })
        })
        .collect();
    let mut committed = Vec::new();
    let mut retries = Retries::default();
    for w in workers {
        let (done, r) = w.join().unwrap();
        committed.push(done);
        retries.add(&r);
    }
    stop.store(true, Ordering::Relaxed);
    for rd in readers {
        rd.join().unwrap();
    }
    if let Some(c) = churner {
        c.join().unwrap();
    }
    let stats = db.db().stats();
    eprintln!(
        "bank {flavour:?} churn {churn}: {} transfers, retries {retries:?}, {} snapshot sums, \
         {} flushes, {} compactions",
        THREADS * per_thread,
        reads.load(Ordering::Relaxed),
        stats.flushes,
        stats.compactions
    );
    assert!(reads.load(Ordering::Relaxed) > 0, "the readers never ran");
    if churn {
        assert!(stats.flushes > 0 && stats.compactions > 0, "{stats:?}");
    }
    check_bank_state(db.db(), &committed, "after the run");
    db.close().unwrap();
    drop(db);
    let db = TxDb::open(flavour, "/db", o).unwrap();
    check_bank_state(db.db(), &committed, "after reopen");
}

#[test]
fn bank_transfers_keep_the_total_pessimistic() {
    bank_run(Flavour::Pessimistic, false, 1000);
}

#[test]
fn bank_transfers_keep_the_total_optimistic() {
    bank_run(Flavour::Optimistic, false, 1000);
}

#[test]
fn bank_transfers_keep_the_total_under_flushes_and_compactions_pessimistic() {
    bank_run(Flavour::Pessimistic, true, 600);
}

#[test]
fn bank_transfers_keep_the_total_under_flushes_and_compactions_optimistic() {
    bank_run(Flavour::Optimistic, true, 600);
}

// ---------------------------------------------------------------------------
// Lost updates

/// 4 threads × 2000 increments of one counter (read for update, put, commit)
/// while a fifth thread flushes, so the history the optimistic check reads
/// is often in tables. Pessimistic: every attempt commits (one key, no
/// deadlock, a lock timeout longer than the run). Optimistic: retried on
/// Busy. Either way the counter ends at exactly T × K.
fn increments_run(flavour: Flavour) {
    const THREADS: usize = 4;
    const INCREMENTS: usize = 2000;
    let fs = MemFs::new();
    let o = churn_options(&fs);
    let db = TxDb::open(flavour, "/db", o.clone()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flusher = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.db().flush().unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let topts = TransactionOptions {
        lock_timeout: Some(Duration::from_secs(600)),
        ..Default::default()
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, topts) = (db.clone(), topts.clone());
            std::thread::spawn(move || {
                let mut busy = 0u64;
                for i in 0..INCREMENTS {
                    loop {
                        let mut txn = db.begin(&wo(false), &topts);
                        let r = (|| {
                            let n = txn
                                .get_for_update(&r(), b"counter", true)?
                                .map_or(0, |v| parse_i64(&v, "counter"));
                            if i % 3 == 0 {
                                // Widen the window between read and write.
                                std::thread::yield_now();
                            }
                            txn.put(b"counter", (n + 1).to_string().as_bytes())?;
                            // Filler, so memtables fill and switch.
                            txn.put(format!("inc/{t}/{i:04}").as_bytes(), &[b'i'; 200])?;
                            txn.commit()
                        })();
                        match r {
                            Ok(()) => break,
                            Err(Error::Busy { .. }) if flavour == Flavour::Optimistic => busy += 1,
                            Err(e) => panic!("{flavour:?} increment {t}/{i}: {e}"),
                        }
                    }
                }
                busy
            })
        })
        .collect();
    let busy: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    flusher.join().unwrap();
    let want = (THREADS * INCREMENTS) as i64;
    let got = |db: &Db| parse_i64(&db.get(&r(), b"counter").unwrap().unwrap(), "counter");
    eprintln!(
        "increments {flavour:?}: {want} increments, {busy} Busy retries, {} flushes",
        db.db().stats().flushes
    );
    assert_eq!(got(db.db()), want, "{flavour:?}: updates were lost");
    db.close().unwrap();
    drop(db);
    let db = TxDb::open(flavour, "/db", o).unwrap();
    assert_eq!(got(db.db()), want, "{flavour:?}: after reopen");
}

#[test]
fn concurrent_increments_lose_no_update_under_flushes_pessimistic() {
    increments_run(Flavour::Pessimistic);
}

#[test]
fn concurrent_increments_lose_no_update_under_flushes_optimistic() {
    increments_run(Flavour::Optimistic);
}

/// Compaction gives entries that every snapshot sees sequence number 0
/// at the bottom level. An optimistic transaction without a snapshot
/// tracks a key at the sequence of its first read; a newer write of that
/// key by someone else, flushed and compacted to the bottom, must still
/// fail its commit (it would have been zeroed to 0, below the tracked
/// sequence, had the transaction held no snapshot).
#[test]
fn optimistic_conflict_survives_sequence_zeroing() {
    let fs = MemFs::new();
    let db = OptimisticTransactionDb::open("/db", quiet_options(&fs)).unwrap();
    db.db().put(&wo(false), b"k", b"0").unwrap();
    db.db().put(&wo(false), b"other", b"x").unwrap();
    let mut txn = db.begin(&wo(false), &TransactionOptions::default());
    assert_eq!(
        txn.get_for_update(&r(), b"k", true).unwrap().as_deref(),
        Some(&b"0"[..])
    );
    db.db().put(&wo(false), b"k", b"1").unwrap();
    db.db().flush().unwrap();
    db.db().compact_range(None, None).unwrap();
    txn.put(b"k", b"from txn").unwrap();
    match txn.commit() {
        Err(Error::Busy { .. }) => {}
        other => panic!("the write after the tracked read must conflict: {other:?}"),
    }
    assert_eq!(db.db().get(&r(), b"k").unwrap().as_deref(), Some(&b"1"[..]));
    // With the transaction gone, the same data compacts to number 0, and
    // a fresh transaction commits.
    db.db().compact_range(None, None).unwrap();
    let mut txn = db.begin(&wo(false), &TransactionOptions::default());
    txn.get_for_update(&r(), b"k", true).unwrap();
    txn.put(b"k", b"2").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.db().get(&r(), b"k").unwrap().as_deref(), Some(&b"2"[..]));
}

// ---------------------------------------------------------------------------
// Deadlocks and lock timeouts

fn pess_db(t: TransactionDbOptions) -> TransactionDb {
    let fs = MemFs::new();
    TransactionDb::open("/db", quiet_options(&fs), t).unwrap()
}

/// `n` transactions in a ring: transaction i locks key i, then (once all
/// hold their first key) key i+1. Returns each one's result for the second
/// lock and, when it got it, its commit; and the elapsed time of each
/// second lock request.
fn lock_ring(
    db: &TransactionDb,
    n: usize,
    topts: TransactionOptions,
) -> Vec<(cairndb::Result<()>, Duration)> {
    let first_locked = Arc::new(Barrier::new(n));
    let all_tried = Arc::new(Barrier::new(n));
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (db, topts) = (db.clone(), topts.clone());
            let (first_locked, all_tried) = (first_locked.clone(), all_tried.clone());
            std::thread::spawn(move || {
                let mut txn = db.begin(&wo(false), &topts);
                txn.put(format!("ring{i}").as_bytes(), format!("by {i}").as_bytes())
                    .unwrap();
                first_locked.wait();
                let t0 = Instant::now();
                let r = txn.put(
                    format!("ring{}", (i + 1) % n).as_bytes(),
                    format!("by {i}").as_bytes(),
                );
                let elapsed = t0.elapsed();
                // A transaction that got its second lock commits at once
                // (which may free a waiter of the ring); one that timed out
                // stays active and keeps its first lock until every member
                // has tried.
                let res = r.and_then(|()| txn.commit());
                all_tried.wait();
                drop(txn);
                (res, elapsed)
            })
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Two transactions lock two keys in opposite order with a lock timeout of
/// one minute: one is the deadlock victim at once (`Deadlock`, not
/// `TimedOut`), its locks go, and the other commits.
#[test]
fn opposite_lock_order_one_deadlock_victim_and_one_commit() {
    let db = pess_db(TransactionDbOptions::default());
    let topts = TransactionOptions {
        lock_timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    for round in 0..20 {
        let res = lock_ring(&db, 2, topts.clone());
        let victims: Vec<usize> = (0..2)
            .filter(|&i| matches!(res[i].0, Err(Error::Deadlock { .. })))
            .collect();
        assert_eq!(victims.len(), 1, "round {round}: {res:?}");
        let winner = 1 - victims[0];
        assert!(res[winner].0.is_ok(), "round {round}: {res:?}");
        // Both keys hold the winner's writes, nothing of the victim's.
        for k in 0..2 {
            assert_eq!(
                db.get(&r(), format!("ring{k}").as_bytes()).unwrap(),
                Some(format!("by {winner}").into_bytes()),
                "round {round}"
            );
        }
        assert_eq!(db.num_locks(), 0);
    }
}

/// A cycle of three: exactly one victim, the other two commit.
#[test]
fn three_transaction_lock_cycle_has_one_victim_and_two_commits() {
    let db = pess_db(TransactionDbOptions::default());
    let topts = TransactionOptions {
        lock_timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    for round in 0..10 {
        let res = lock_ring(&db, 3, topts.clone());
        let victims = res
            .iter()
            .filter(|x| matches!(x.0, Err(Error::Deadlock { .. })))
            .count();
        let commits = res.iter().filter(|x| x.0.is_ok()).count();
        assert_eq!((victims, commits), (1, 2), "round {round}: {res:?}");
        assert_eq!(db.num_locks(), 0);
    }
}

/// The same opposite-order locking with deadlock detection off: nobody
/// gets `Deadlock`; the waits end in `TimedOut`, each after at least the
/// lock timeout.
#[test]
fn lock_cycle_without_deadlock_detection_times_out_not_before_the_timeout() {
    let db = pess_db(TransactionDbOptions::default());
    let timeout = Duration::from_millis(150);
    let topts = TransactionOptions {
        deadlock_detect: false,
        lock_timeout: Some(timeout),
        ..Default::default()
    };
    let res = lock_ring(&db, 2, topts);
    for (r, elapsed) in &res {
        match r {
            Err(Error::TimedOut { waited, .. }) => {
                assert!(*waited >= timeout, "reported wait {waited:?}");
                assert!(*elapsed >= timeout, "returned after {elapsed:?}");
            }
            other => panic!("expected TimedOut, got {other:?} ({res:?})"),
        }
    }
    assert_eq!(db.num_locks(), 0);
}

/// A waiter with deadlock detection off and a lock timeout gets
/// `TimedOut`, not before the timeout; it stays active (its other writes
/// commit) and the key it could not lock keeps the holder's value. A write
/// outside a transaction (`TransactionDb::put`) waits
/// `default_lock_timeout` for the same lock.
#[test]
fn lock_wait_times_out_not_before_the_timeout_and_the_waiter_goes_on() {
    let timeout = Duration::from_millis(120);
    let db = pess_db(TransactionDbOptions {
        default_lock_timeout: timeout,
        ..Default::default()
    });
    let mut holder = db.begin(&wo(false), &TransactionOptions::default());
    holder.put(b"k", b"holder").unwrap();
    let mut waiter = db.begin(
        &wo(false),
        &TransactionOptions {
            deadlock_detect: false,
            lock_timeout: Some(timeout),
            ..Default::default()
        },
    );
    waiter.put(b"other", b"waiter").unwrap();
    let t0 = Instant::now();
    match waiter.get_for_update(&r(), b"k", true) {
        Err(Error::TimedOut { key, waited }) => {
            assert_eq!(key, b"k");
            assert!(waited >= timeout, "reported wait {waited:?}");
        }
        other => panic!("expected TimedOut, got {other:?}"),
    }
    assert!(t0.elapsed() >= timeout);
    let t0 = Instant::now();
    match db.put(&wo(false), b"k", b"outside") {
        Err(Error::TimedOut { .. }) => assert!(t0.elapsed() >= timeout),
        other => panic!("expected TimedOut for a write outside a transaction, got {other:?}"),
    }
    waiter.commit().unwrap();
    holder.commit().unwrap();
    assert_eq!(db.get(&r(), b"k").unwrap(), Some(b"holder".to_vec()));
    assert_eq!(db.get(&r(), b"other").unwrap(), Some(b"waiter".to_vec()));
    assert_eq!(db.num_locks(), 0);
}

// ---------------------------------------------------------------------------
// Recovery and power loss

/// Keys of transaction `i` (`parts` keys, the same value in each).
fn txn_key(i: usize, p: usize) -> Vec<u8> {
    format!("txn{i:05}-{p}").into_bytes()
}

fn txn_value(i: usize, big: bool) -> Vec<u8> {
    let mut v = format!("value of txn {i}:").into_bytes();
    // A big transaction's record spans WAL blocks (32 KiB).
    v.resize(if big { 12_000 } else { 40 }, b'a' + (i % 26) as u8);
    v
}

/// Writes transaction `i`: `PARTS` keys plus `count` = i + 1, read for
/// update first (so the transactions form a chain: each saw the previous).
const PARTS: usize = 4;

fn chain_txn(db: &TxDb, i: usize, sync: bool, big: bool) -> cairndb::Result<()> {
    let mut txn = db.begin(&wo(sync), &TransactionOptions::default());
    let n = txn
        .get_for_update(&r(), b"count", true)?
        .map_or(0, |v| parse_i64(&v, "count"));
    assert_eq!(n, i as i64, "transaction {i} saw count {n}");
    for p in 0..PARTS {
        txn.put(&txn_key(i, p), &txn_value(i, big))?;
    }
    txn.put(b"count", (i + 1).to_string().as_bytes())?;
    txn.commit()
}

/// What a recovered chain must look like: transactions 0..p whole, for
/// some p >= `must_have` (and `count` = p), nothing of any later one among
/// the first `written` (each all-or-nothing). Returns p.
fn check_chain(
    db: &Db,
    written: usize,
    must_have: usize,
    big: &dyn Fn(usize) -> bool,
    what: &str,
) -> usize {
    let count = db
        .get(&r(), b"count")
        .unwrap()
        .map_or(0, |v| parse_i64(&v, "count") as usize);
    assert!(
        count >= must_have,
        "{what}: {count} transactions recovered, but {must_have} were acknowledged as durable"
    );
    assert!(
        count <= written,
        "{what}: count {count} > {written} written"
    );
    for i in 0..written {
        let got: Vec<Option<Vec<u8>>> = (0..PARTS)
            .map(|p| db.get(&r(), &txn_key(i, p)).unwrap())
            .collect();
        let want = if i < count {
            Some(txn_value(i, big(i)))
        } else {
            None
        };
        assert!(
            got.iter().all(|g| *g == want),
            "{what}: transaction {i} (count {count}) should be {}: found {:?}",
            if i < count { "whole" } else { "absent" },
            got.iter().map(Option::is_some).collect::<Vec<_>>()
        );
    }
    count
}

/// Committed transactions (synced) survive a power loss and a reopen; a
/// rolled-back one, one still active, one dropped, and the writes undone
/// by a rollback to a savepoint leave nothing.
#[test]
fn synced_commits_survive_and_uncommitted_transactions_leave_nothing() {
    for flavour in FLAVOURS {
        let fs = MemFs::new();
        let o = churn_options(&fs);
        let db = TxDb::open(flavour, "/db", o.clone()).unwrap();
        let n = 60;
        for i in 0..n {
            chain_txn(&db, i, true, i % 10 == 3).unwrap();
            if i == 30 {
                db.db().flush().unwrap();
            }
        }
        let mut rolled = db.begin(&wo(true), &TransactionOptions::default());
        rolled.put(b"rolled-back", b"x").unwrap();
        rolled.rollback().unwrap();
        {
            let mut dropped = db.begin(&wo(true), &TransactionOptions::default());
            dropped.put(b"dropped", b"x").unwrap();
        }
        let mut sp = db.begin(&wo(true), &TransactionOptions::default());
        sp.put(b"sp-kept", b"1").unwrap();
        sp.set_savepoint();
        sp.put(b"sp-undone", b"1").unwrap();
        sp.delete(b"sp-kept").unwrap();
        sp.rollback_to_savepoint().unwrap();
        sp.commit().unwrap();
        let mut active = db.begin(&wo(true), &TransactionOptions::default());
        active.put(b"active", b"x").unwrap();
        active.put(&txn_key(0, 0), b"overwritten?").unwrap();

        let check = |d: &Db, what: &str| {
            check_chain(d, n + 1, n, &|i| i % 10 == 3, what);
            for k in [&b"rolled-back"[..], b"dropped", b"sp-undone", b"active"] {
                assert_eq!(
                    d.get(&r(), k).unwrap(),
                    None,
                    "{flavour:?} {what}: {}",
                    String::from_utf8_lossy(k)
                );
            }
            assert_eq!(d.get(&r(), b"sp-kept").unwrap(), Some(b"1".to_vec()));
        };
        check(db.db(), "before the crash");
        // A power loss with `active` still open.
        let image = fs.power_loss_image();
        let db2 = TxDb::open(flavour, "/db", churn_options(&image)).unwrap();
        check(db2.db(), "after power loss");
        // The recovered database takes transactions again.
        chain_txn(&db2, n, true, false).unwrap();
        drop(active);
        db.close().unwrap();
        drop(db);
        let db = TxDb::open(flavour, "/db", o).unwrap();
        check(db.db(), "after close and reopen");
    }
}

/// A power-loss image of `fs` in which each WAL with unsynced bytes keeps
/// a random prefix of them (part of the tail reached the disk, part did
/// not), so a transaction's record may be torn anywhere. `fs` must be
/// quiet (no write running).
fn torn_wal_image(fs: &MemFs, rng: &mut SmallRng) -> MemFs {
    let img = fs.power_loss_image();
    let dir = Path::new("/db");
    for name in img.list_dir(dir).unwrap() {
        if !name.ends_with(".log") {
            continue;
        }
        let p = dir.join(&name);
        let (Some(live), Some(durable)) = (fs.contents(&p), img.contents(&p)) else {
            continue;
        };
        let same = live
            .iter()
            .zip(&durable)
            .take_while(|(a, b)| a == b)
            .count();
        if same >= live.len() {
            continue;
        }
        let cut = rng.gen_range(same..=live.len());
        let mut torn = live[..cut].to_vec();
        if durable.len() > cut {
            torn.extend_from_slice(&durable[cut..]);
        }
        img.set_contents(&p, torn);
    }
    img
}

/// A chain of transactions (a fifth synced, every ninth with a record that
/// spans WAL blocks, flushes now and then) with a power-loss image after
/// each; half the images also keep a random part of each WAL's unsynced
/// tail. Each image recovers a whole prefix of the chain at least up to
/// the last synced commit: a synced commit survives, an unsynced one is
/// all-or-nothing.
#[test]
fn power_loss_keeps_synced_commits_and_unsynced_ones_whole() {
    for flavour in FLAVOURS {
        let seed = common::seed(&format!("power loss {flavour:?}"));
        let mut rng = SmallRng::seed_from_u64(seed);
        let fs = MemFs::new();
        let db = TxDb::open(flavour, "/db", churn_options(&fs)).unwrap();
        let big = |i: usize| i % 9 == 4;
        let mut durable = 0;
        let (mut images, mut torn_partly) = (0, 0);
        let n = 150;
        for i in 0..n {
            let sync = i % 5 == 4;
            chain_txn(&db, i, sync, big(i)).unwrap();
            if sync {
                durable = i + 1;
            }
            if i % 40 == 39 {
                db.db().flush().unwrap();
                durable = i + 1;
            }
            if rng.gen_ratio(1, 3) {
                // Let background flushes settle so the image is quiet.
                db.db().wait_for_compactions().unwrap();
                let torn = rng.gen_bool(0.5);
                let img = if torn {
                    torn_wal_image(&fs, &mut rng)
                } else {
                    fs.power_loss_image()
                };
                let d = TxDb::open(flavour, "/db", churn_options(&img))
                    .unwrap_or_else(|e| panic!("{flavour:?} after txn {i}: reopen: {e}"));
                let p = check_chain(
                    d.db(),
                    i + 1,
                    durable,
                    &big,
                    &format!("{flavour:?} image after txn {i} (torn {torn})"),
                );
                if torn && p > durable {
                    torn_partly += 1;
                }
                // It takes the next transaction of the chain.
                chain_txn(&d, p, true, false).unwrap();
                d.close().unwrap();
                images += 1;
            }
        }
        eprintln!(
            "power loss {flavour:?}: {images} images, {torn_partly} torn images kept unsynced commits"
        );
        assert!(images >= 20);
    }
}

/// Power-loss images taken at random instants while 4 threads commit
/// transactions (every third synced): each image holds, per thread, a whole
/// prefix of its transactions reaching at least its last synced commit
/// acknowledged before the image.
#[test]
fn power_loss_during_concurrent_commits_keeps_transactions_whole() {
    const THREADS: usize = 4;
    for flavour in FLAVOURS {
        let seed = common::seed(&format!("power loss concurrent {flavour:?}"));
        let mut rng = SmallRng::seed_from_u64(seed);
        let fs = MemFs::new();
        let db = TxDb::open(flavour, "/db", churn_options(&fs)).unwrap();
        let synced: Arc<Vec<AtomicU64>> =
            Arc::new((0..THREADS).map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let key = |t: usize, i: usize, p: usize| format!("t{t}-{i:06}-{p}").into_bytes();
        let ws: Vec<_> = (0..THREADS)
            .map(|t| {
                let (db, synced, stop) = (db.clone(), synced.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) && i < 20_000 {
                        let sync = i % 3 == 2;
                        let mut txn = db.begin(&wo(sync), &TransactionOptions::default());
                        for p in 0..3 {
                            txn.put(
                                &key(t, i, p),
                                format!("{t}:{i}:{}", "v".repeat(60)).as_bytes(),
                            )
                            .unwrap();
                        }
                        txn.commit().unwrap();
                        if sync {
                            synced[t].store(i as u64 + 1, Ordering::Release);
                        }
                        i += 1;
                    }
                    i
                })
            })
            .collect();
        let mut images = Vec::new();
        while images.len() < 25 && !ws.iter().any(|w| w.is_finished()) {
            std::thread::sleep(Duration::from_micros(rng.gen_range(200..3000)));
            let must: Vec<u64> = synced.iter().map(|s| s.load(Ordering::Acquire)).collect();
            images.push((must, fs.power_loss_image()));
        }
        stop.store(true, Ordering::Relaxed);
        let written: Vec<usize> = ws.into_iter().map(|w| w.join().unwrap()).collect();
        db.close().unwrap();
        for (idx, (must, img)) in images.iter().enumerate() {
            let d = TxDb::open(flavour, "/db", churn_options(img))
                .unwrap_or_else(|e| panic!("{flavour:?} image {idx}: reopen: {e}"));
            for t in 0..THREADS {
                // The prefix this thread reached in the image.
                let mut i = 0;
                loop {
                    let got: Vec<bool> = (0..3)
                        .map(|p| d.db().get(&r(), &key(t, i, p)).unwrap().is_some())
                        .collect();
                    match got.iter().filter(|&&g| g).count() {
                        3 => i += 1,
                        0 => break,
                        _ => {
                            panic!("{flavour:?} image {idx}: transaction {t}/{i} is torn: {got:?}")
                        }
                    }
                }
                assert!(
                    i as u64 >= must[t],
                    "{flavour:?} image {idx}: thread {t} has {i} transactions, {} were synced",
                    must[t]
                );
                // Nothing after the prefix.
                let mut it = d.db().iter(&r()).unwrap();
                it.seek(&key(t, i, 0));
                if it.valid() && it.key().starts_with(format!("t{t}-").as_bytes()) {
                    panic!(
                        "{flavour:?} image {idx}: thread {t} has {:?} after a hole at {i}",
                        String::from_utf8_lossy(it.key())
                    );
                }
                assert!(i <= written[t]);
            }
            d.close().unwrap();
        }
        eprintln!(
            "power loss concurrent {flavour:?}: {} images, {written:?} transactions",
            images.len()
        );
        assert!(images.len() >= 5, "only {} images", images.len());
    }
}

// ---------------------------------------------------------------------------
// Injected faults

/// The fault kinds tried at every point: an operation and the error.
fn fault_kinds() -> Vec<(&'static str, FaultRule)> {
    vec![
        ("write EIO", FaultRule::new(FaultOp::Write, libc::EIO)),
        (
            "short write ENOSPC",
            FaultRule::new(FaultOp::Write, libc::ENOSPC).short(),
        ),
        ("sync EIO", FaultRule::new(FaultOp::Sync, libc::EIO)),
        ("create EIO", FaultRule::new(FaultOp::Create, libc::EIO)),
        (
            "fallocate ENOSPC",
            FaultRule::new(FaultOp::Allocate, libc::ENOSPC),
        ),
        ("rename EIO", FaultRule::new(FaultOp::Rename, libc::EIO)),
        (
            "directory sync EIO",
            FaultRule::new(FaultOp::SyncDir, libc::EIO),
        ),
        ("unlink EIO", FaultRule::new(FaultOp::Remove, libc::EIO)),
        ("read EIO", FaultRule::new(FaultOp::Read, libc::EIO)),
    ]
}

fn fault_options(fs: Arc<dyn cairndb::env::Fs>) -> Options {
    let mut o = common::small_options(fs);
    o.block_size = 4096;
    // Table reads reach the file system (read faults in the commit path).
    o.block_cache_size = 0;
    // New WALs reuse old ones (renames: their fault points too).
    o.recycle_log_file_num = 2;
    o
}

/// What one fault-point run saw.
struct FaultRun {
    /// The fault fired.
    fired: bool,
    /// The chain stopped at the failure (else it failed in the background
    /// or only cost clean-up).
    stopped: bool,
}

/// Commits a chain of transactions over a `FaultFs` whose rule fails the
/// `n`-th matching call once, then checks the database:
/// * until the failure every commit succeeds; the failure is an I/O error
///   or `ReadOnly`;
/// * after it the database is read-only (a commit gets `ReadOnly`, reads
///   of every acknowledged transaction work) or consistent (a commit
///   succeeds and the chain is whole);
/// * a power-loss image holds a whole prefix of the chain reaching every
///   synced commit; after a process crash and reopen the chain holds every
///   acknowledged commit, each transaction whole.
fn fault_run(flavour: Flavour, name: &str, rule: FaultRule, n: u64) -> FaultRun {
    const CHAIN: usize = 40;
    let what = format!("{flavour:?} {name} at call {n}");
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = TxDb::open(flavour, "/db", fault_options(Arc::new(fault.clone()))).unwrap();
    let big = |i: usize| i % 8 == 5;
    let sync = |i: usize| i % 3 != 1;
    fault.inject(rule.after(n).times(1));
    let (mut acked, mut durable) = (0, 0);
    let mut failure = None;
    for i in 0..CHAIN {
        if let Err(e) = chain_txn(&db, i, sync(i), big(i)) {
            failure = Some(e);
            break;
        }
        acked = i + 1;
        if sync(i) {
            durable = acked;
        }
        if i % 12 == 11 {
            if let Err(e) = db.db().flush() {
                failure = Some(e);
                break;
            }
            durable = acked;
        }
    }
    // Background work the chain started may still reach the fault point.
    let _ = db.db().wait_for_compactions();
    let fired = fault.injected() > 0;
    if let Some(e) = &failure {
        assert!(
            e.io_kind().is_some() || matches!(e, Error::ReadOnly { .. }),
            "{what}: the failure is {e}, not an I/O error or ReadOnly"
        );
        assert!(fired, "{what}: {e} with no fault injected");
    }
    fault.clear();
    let what = match &failure {
        Some(e) => format!("{what} (failed with: {e})"),
        None => format!("{what} (no commit or flush failed)"),
    };
    // Read-only, or consistent and writable.
    let probe = chain_txn(&db, acked, true, false);
    let (live_has, read_only_cause) = match probe {
        Err(Error::ReadOnly { cause }) => (acked, Some(cause.to_string())),
        Ok(()) => (acked + 1, None),
        Err(e) => panic!("{what}: a commit after the failure gave {e}, not Ok or ReadOnly"),
    };
    let _ = read_only_cause;
    let p = check_chain(db.db(), CHAIN + 1, live_has, &big, &format!("{what}, live"));
    assert!(p <= live_has, "{what}: live count {p} > {live_has}");
    let image = mem.power_loss_image();
    let _ = db.close();
    drop(db);
    mem.process_crash();
    let reopen = |fs: &MemFs, must: usize, how: &str| {
        let d = match TxDb::open(flavour, "/db", fault_options(Arc::new(fs.clone()))) {
            Ok(d) => d,
            Err(e) => panic!("{what}: reopen after {how}: {e}"),
        };
        let p = check_chain(
            d.db(),
            CHAIN + 1,
            must,
            &big,
            &format!("{what}, after {how}"),
        );
        chain_txn(&d, p, true, false)
            .unwrap_or_else(|e| panic!("{what}: a commit after {how}: {e}"));
        d.close().unwrap();
    };
    reopen(&image, durable, "power loss");
    reopen(&mem, live_has, "process crash");
    FaultRun {
        fired,
        stopped: acked < CHAIN,
    }
}

/// Every fault kind at every call of its operation in turn (call 0, 1, 2,
/// ... until a run makes fewer calls than that), during a chain of
/// multi-key commits with flushes and compactions.
fn faults_at_every_point(flavour: Flavour) {
    let mut summary = Vec::new();
    for (name, rule) in fault_kinds() {
        let (mut points, mut stopped) = (0u64, 0);
        loop {
            let run = fault_run(flavour, name, rule.clone(), points);
            if !run.fired {
                break;
            }
            stopped += run.stopped as usize;
            points += 1;
            assert!(points < 5000, "{name}: more fault points than expected");
        }
        summary.push(format!(
            "{name}: {points} points, {stopped} stopped the chain"
        ));
    }
    eprintln!("faults {flavour:?}: {}", summary.join("; "));
}

#[test]
fn fault_at_every_point_of_transaction_commits_pessimistic() {
    faults_at_every_point(Flavour::Pessimistic);
}

#[test]
fn fault_at_every_point_of_transaction_commits_optimistic() {
    faults_at_every_point(Flavour::Optimistic);
}
