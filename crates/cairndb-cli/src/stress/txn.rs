//! `cairndb stress --txn`: bank transfers in transactions, checked against
//! an oracle that survives SIGKILL, and `--txn --verify`.
//!
//! `--accounts` accounts (`a000000`, ...) start at `INITIAL` each. Worker
//! threads move random amounts between two random accounts, each transfer
//! one transaction (`TransactionDb`, or `OptimisticTransactionDb` with
//! `--optimistic`): read both balances for update, write both, and write a
//! transfer record `x<thread><n>` = `from to amount filler` under the
//! thread's next transfer number `n`; retried on `Busy`, `TimedOut` and
//! `Deadlock`. Other operations: sums of all balances under a snapshot
//! (through the database and through a read-only transaction), which must
//! equal the total; flushes and range compactions.
//!
//! The oracle file keeps, per account, its balance at the last settle, and
//! per thread: `settled` (its last transfer at the last settle), `acked`
//! (its last acknowledged transfer, written after `commit` returns) and
//! `pending` (the transfer being tried, written before the first attempt),
//! each with `pwrite`, so they reach the page cache when the call returns.
//!
//! `--verify` reopens the database and checks, per thread, that every
//! transfer after `settled` up to `acked` is there and well-formed, that
//! transfer `acked + 1` is there only if it was pending, and that no later
//! one is; then that each account equals its settled balance plus the
//! transfers found since (so every acknowledged transfer is applied, whole,
//! exactly once), and that the balances sum to the total. Then it settles
//! the oracle to what it found.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairndb::{
    Db, Error, OptimisticTransactionDb, ReadOptions, Transaction, TransactionDb,
    TransactionDbOptions, TransactionOptions, WriteBatch, WriteOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{db_options, mix, StressArgs, MAX_THREADS};

const MAGIC: &[u8; 8] = b"CAIRNTXN";
/// Every account's balance at the start.
pub const INITIAL: i64 = 10_000;
const HEADER: u64 = 64;
/// settled, acked, pending, reserved.
const THREAD_REC: u64 = 32;
const ACCOUNTS_AT: u64 = HEADER + MAX_THREADS as u64 * THREAD_REC;

/// The key of account `a`.
pub fn account_key(a: u64) -> Vec<u8> {
    format!("a{a:06}").into_bytes()
}

/// The key of thread `t`'s transfer number `n`.
pub fn transfer_key(t: usize, n: u64) -> Vec<u8> {
    format!("x{t:02}{n:012}").into_bytes()
}

fn transfer_prefix(t: usize) -> Vec<u8> {
    format!("x{t:02}").into_bytes()
}

/// The record of a transfer: `from to amount` and a filler derived from
/// the key, so a record can be checked without storing it.
fn transfer_value(t: usize, n: u64, x: Transfer, max_fill: usize) -> Vec<u8> {
    let mut v = format!("{} {} {} ", x.from, x.to, x.amount).into_bytes();
    let h = mix((t as u64) << 48 ^ n);
    let len = (h % (max_fill as u64 + 1)) as usize;
    let mut y = h;
    for _ in 0..len {
        y = mix(y.wrapping_add(1));
        v.push(b'a' + (y % 26) as u8);
    }
    v
}

/// Parses a transfer record of thread `t`'s transfer `n` (None: not one).
fn parse_transfer(t: usize, n: u64, v: &[u8], accounts: u64, max_fill: usize) -> Option<Transfer> {
    let s = std::str::from_utf8(v).ok()?;
    let mut p = s.splitn(4, ' ');
    let x = Transfer {
        from: p.next()?.parse().ok()?,
        to: p.next()?.parse().ok()?,
        amount: p.next()?.parse().ok()?,
    };
    let ok = x.from < accounts
        && x.to < accounts
        && x.from != x.to
        && transfer_value(t, n, x, max_fill) == v;
    ok.then_some(x)
}

fn parse_balance(v: &[u8]) -> Option<i64> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Transfer {
    from: u64,
    to: u64,
    amount: i64,
}

/// A thread's oracle record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ThreadRec {
    /// Last transfer checked by the last settle.
    settled: u64,
    /// Last transfer acknowledged.
    acked: u64,
    /// Transfer being tried (0: none).
    pending: u64,
}

/// The transfer workload's expected-state file.
pub struct TxnOracle {
    file: File,
    accounts: u64,
}

impl TxnOracle {
    /// Opens the oracle at `path`, creating it for `accounts` accounts.
    pub fn open(path: &Path, accounts: u64) -> Result<TxnOracle, String> {
        let exists = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("open {}: {e}", path.display()))?;
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        if exists {
            let mut h = [0u8; 24];
            file.read_exact_at(&mut h, 0).map_err(err)?;
            if &h[..8] != MAGIC {
                return Err(format!(
                    "{}: not a transaction stress oracle (made by stress without --txn?)",
                    path.display()
                ));
            }
            let n = u64::from_le_bytes(h[8..16].try_into().unwrap());
            if n != accounts {
                return Err(format!(
                    "{}: oracle was made for --accounts={n}, not {accounts}",
                    path.display()
                ));
            }
        } else {
            file.set_len(ACCOUNTS_AT + accounts * 8).map_err(err)?;
            let mut h = Vec::new();
            h.extend_from_slice(MAGIC);
            h.extend_from_slice(&accounts.to_le_bytes());
            file.write_all_at(&h, 0).map_err(err)?;
        }
        Ok(TxnOracle { file, accounts })
    }

    fn read_u64(&self, at: u64) -> u64 {
        let mut b = [0u8; 8];
        self.file
            .read_exact_at(&mut b, at)
            .expect("read the oracle");
        u64::from_le_bytes(b)
    }

    fn write_u64(&self, at: u64, v: u64) {
        self.file
            .write_all_at(&v.to_le_bytes(), at)
            .expect("write the oracle");
    }

    /// Whether the accounts were created and the balances recorded.
    fn initialized(&self) -> bool {
        self.read_u64(16) == 1
    }

    fn set_initialized(&self) {
        self.write_u64(16, 1);
    }

    fn thread(&self, t: usize) -> ThreadRec {
        let at = HEADER + t as u64 * THREAD_REC;
        ThreadRec {
            settled: self.read_u64(at),
            acked: self.read_u64(at + 8),
            pending: self.read_u64(at + 16),
        }
    }

    fn set_thread(&self, t: usize, r: ThreadRec) {
        let at = HEADER + t as u64 * THREAD_REC;
        let mut b = Vec::with_capacity(24);
        for v in [r.settled, r.acked, r.pending] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        self.file.write_all_at(&b, at).expect("write the oracle");
    }

    fn set_pending(&self, t: usize, n: u64) {
        self.write_u64(HEADER + t as u64 * THREAD_REC + 16, n);
    }

    fn set_acked(&self, t: usize, n: u64) {
        self.write_u64(HEADER + t as u64 * THREAD_REC + 8, n);
    }

    fn settled_balance(&self, a: u64) -> i64 {
        self.read_u64(ACCOUNTS_AT + a * 8) as i64
    }

    fn set_settled_balance(&self, a: u64, b: i64) {
        self.write_u64(ACCOUNTS_AT + a * 8, b as u64);
    }

    fn sync(&self) -> Result<(), String> {
        self.file
            .sync_data()
            .map_err(|e| format!("sync the oracle: {e}"))
    }
}

/// Either flavour of transaction database.
#[derive(Clone)]
enum TxDb {
    Pess(TransactionDb),
    Opt(OptimisticTransactionDb),
}

impl TxDb {
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

struct Shared {
    db: TxDb,
    oracle: TxnOracle,
    args: StressArgs,
    stop: AtomicBool,
    ops: AtomicU64,
    retries: AtomicU64,
    failures: Mutex<Vec<String>>,
}

impl Shared {
    fn fail(&self, msg: String) {
        eprintln!("VIOLATION: {msg}");
        self.failures.lock().unwrap().push(msg);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn total(&self) -> i64 {
        self.oracle.accounts as i64 * INITIAL
    }
}

/// Sums every balance through `it`-style reads: (sum, accounts seen, the
/// first malformed entry).
fn sum_balances(
    mut next: impl FnMut() -> Option<(Vec<u8>, Vec<u8>)>,
) -> (i64, u64, Option<String>) {
    let (mut sum, mut n) = (0i64, 0u64);
    while let Some((k, v)) = next() {
        if k.first() != Some(&b'a') {
            break;
        }
        match parse_balance(&v) {
            Some(b) => sum += b,
            None => {
                return (
                    sum,
                    n,
                    Some(format!(
                        "account {:?} holds {:?}, not a balance",
                        String::from_utf8_lossy(&k),
                        String::from_utf8_lossy(&v)
                    )),
                )
            }
        }
        n += 1;
    }
    (sum, n, None)
}

/// Sums the balances under a snapshot: through the database's iterator
/// and gets, or through a read-only transaction with a snapshot.
fn snapshot_sum(sh: &Shared, rng: &mut SmallRng) -> Result<(), String> {
    let accounts = sh.oracle.accounts;
    let (sum, n, bad, how) = if rng.gen_bool(0.5) {
        let ro = ReadOptions {
            snapshot: Some(sh.db.db().snapshot()),
            ..Default::default()
        };
        let mut it = sh.db.db().iter(&ro).map_err(|e| format!("iter: {e}"))?;
        it.seek(b"a");
        let (sum, n, bad) = sum_balances(|| {
            if !it.valid() {
                return None;
            }
            let kv = (it.key().to_vec(), it.value().to_vec());
            it.next();
            Some(kv)
        });
        it.status().map_err(|e| format!("iter: {e}"))?;
        drop(it);
        // The same snapshot through gets.
        let mut gsum = 0i64;
        for a in 0..accounts {
            let v = sh
                .db
                .db()
                .get(&ro, &account_key(a))
                .map_err(|e| format!("get: {e}"))?;
            gsum += v.as_deref().and_then(parse_balance).unwrap_or(0);
        }
        if bad.is_none() && gsum != sum {
            sh.fail(format!(
                "snapshot: gets sum to {gsum}, the iterator to {sum}"
            ));
        }
        (sum, n, bad, "snapshot iterator")
    } else {
        let txn = sh.db.begin(
            &WriteOptions::default(),
            &TransactionOptions {
                set_snapshot: true,
                ..Default::default()
            },
        );
        let mut it = txn
            .iter(&ReadOptions::default())
            .map_err(|e| format!("transaction iter: {e}"))?;
        it.seek(b"a");
        let (sum, n, bad) = sum_balances(|| {
            if !it.valid() {
                return None;
            }
            let kv = (it.key().to_vec(), it.value().to_vec());
            it.next();
            Some(kv)
        });
        it.status().map_err(|e| format!("transaction iter: {e}"))?;
        (sum, n, bad, "read-only transaction")
    };
    if let Some(b) = bad {
        sh.fail(format!("{how}: {b}"));
    } else if n != accounts || sum != sh.total() {
        sh.fail(format!(
            "{how}: {n} accounts summing to {sum}, expected {accounts} summing to {}",
            sh.total()
        ));
    }
    Ok(())
}

fn retryable(e: &Error) -> bool {
    matches!(
        e,
        Error::Busy { .. } | Error::TimedOut { .. } | Error::Deadlock { .. }
    )
}

/// One attempt at transfer `n` of thread `t`.
fn try_transfer(
    sh: &Shared,
    t: usize,
    n: u64,
    x: Transfer,
    rng: &mut SmallRng,
) -> cairndb::Result<()> {
    let a = &sh.args;
    let wo = WriteOptions {
        sync: rng.gen_range(0..100) < a.sync_percent,
        ..Default::default()
    };
    let mut txn = sh.db.begin(
        &wo,
        &TransactionOptions {
            set_snapshot: rng.gen_bool(0.5),
            ..Default::default()
        },
    );
    let ro = ReadOptions::default();
    let read = |txn: &mut Transaction, acct: u64| -> cairndb::Result<i64> {
        let v = txn.get_for_update(&ro, &account_key(acct), true)?;
        Ok(v.as_deref().and_then(parse_balance).unwrap_or_else(|| {
            sh.fail(format!(
                "account {acct} holds {:?}, not a balance",
                v.map(|v| String::from_utf8_lossy(&v).to_string())
            ));
            0
        }))
    };
    // Lock in random order, so pessimistic transfers meet deadlocks.
    let (bf, bt) = if rng.gen_bool(0.5) {
        let bf = read(&mut txn, x.from)?;
        (bf, read(&mut txn, x.to)?)
    } else {
        let bt = read(&mut txn, x.to)?;
        (read(&mut txn, x.from)?, bt)
    };
    txn.put(&account_key(x.from), (bf - x.amount).to_string().as_bytes())?;
    txn.put(&account_key(x.to), (bt + x.amount).to_string().as_bytes())?;
    txn.put(&transfer_key(t, n), &transfer_value(t, n, x, a.value_size))?;
    txn.commit()
}

fn transfer(sh: &Shared, t: usize, n: u64, rng: &mut SmallRng) -> Result<(), String> {
    let accounts = sh.oracle.accounts;
    let from = rng.gen_range(0..accounts);
    let x = Transfer {
        from,
        to: (from + rng.gen_range(1..accounts)) % accounts,
        amount: rng.gen_range(1..=1000),
    };
    sh.oracle.set_pending(t, n);
    loop {
        match try_transfer(sh, t, n, x, rng) {
            Ok(()) => break,
            Err(e) if retryable(&e) => {
                sh.retries.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(format!("transfer {t}/{n}: {e}")),
        }
    }
    sh.oracle.set_acked(t, n);
    // The committed record is visible at once.
    let v = sh
        .db
        .db()
        .get(&ReadOptions::default(), &transfer_key(t, n))
        .map_err(|e| format!("get: {e}"))?;
    if v.as_deref() != Some(&transfer_value(t, n, x, sh.args.value_size)[..]) {
        sh.fail(format!(
            "transfer {t}/{n} committed but reads back as {:?}",
            v.map(|v| String::from_utf8_lossy(&v).to_string())
        ));
    }
    Ok(())
}

fn worker(sh: &Shared, t: usize, seed: u64) {
    let a = &sh.args;
    let mut rng = SmallRng::seed_from_u64(seed ^ mix(t as u64 + 101));
    let mut n = sh.oracle.thread(t).acked + 1;
    let mut done = 0u64;
    while !sh.stop.load(Ordering::Relaxed) {
        if a.ops_per_thread > 0 && done >= a.ops_per_thread {
            break;
        }
        let res = match rng.gen_range(0..1000) {
            0..=879 => {
                let r = transfer(sh, t, n, &mut rng);
                n += 1;
                r
            }
            880..=995 => snapshot_sum(sh, &mut rng),
            996..=997 => sh.db.db().flush().map_err(|e| format!("flush: {e}")),
            _ => {
                let k = rng.gen_range(0..sh.oracle.accounts);
                let (b, e) = (account_key(k), transfer_key(t, n));
                sh.db
                    .db()
                    .compact_range(Some(&b), Some(&e))
                    .map_err(|e| format!("compact_range: {e}"))
            }
        };
        if let Err(e) = res {
            sh.fail(format!("thread {t}: {e}"));
            return;
        }
        done += 1;
        sh.ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// What `verify` found.
#[derive(Debug, Default)]
pub struct TxnVerifyReport {
    /// Transfers checked (acknowledged since the last settle, and in flight).
    pub transfers: u64,
    /// In-flight transfers found committed.
    pub pending_applied: u64,
    /// In-flight transfers found absent.
    pub pending_dropped: u64,
    /// Time to open (recover) the database.
    pub recovery: Duration,
    /// Everything wrong.
    pub violations: Vec<String>,
}

/// Creates the accounts if the oracle says they are not yet there.
fn initialize(a: &StressArgs, oracle: &TxnOracle) -> Result<(), String> {
    if oracle.initialized() {
        return Ok(());
    }
    let db = Db::open(&a.db, db_options(a)).map_err(|e| format!("open: {e}"))?;
    let ro = ReadOptions::default();
    let mut present = 0;
    for acct in 0..oracle.accounts {
        let v = db
            .get(&ro, &account_key(acct))
            .map_err(|e| format!("get: {e}"))?;
        match v {
            Some(v) if parse_balance(&v) == Some(INITIAL) => present += 1,
            Some(v) => {
                return Err(format!(
                    "VIOLATION: account {acct} holds {:?} before any transfer",
                    String::from_utf8_lossy(&v)
                ))
            }
            None => {}
        }
    }
    if present != 0 && present != oracle.accounts {
        // The accounts are created by one batch: all or none.
        return Err(format!(
            "VIOLATION: {present} of {} accounts exist before any transfer",
            oracle.accounts
        ));
    }
    if present == 0 {
        let mut b = WriteBatch::new();
        for acct in 0..oracle.accounts {
            b.put(account_key(acct), INITIAL.to_string());
        }
        db.write(
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
            b,
        )
        .map_err(|e| format!("create the accounts: {e}"))?;
    }
    db.close().map_err(|e| format!("close: {e}"))?;
    for acct in 0..oracle.accounts {
        oracle.set_settled_balance(acct, INITIAL);
    }
    for t in 0..MAX_THREADS {
        oracle.set_thread(t, ThreadRec::default());
    }
    oracle.sync()?;
    oracle.set_initialized();
    oracle.sync()
}

/// Reopens the database, checks it against the oracle (see the module
/// comment) and settles the oracle to what was found.
pub fn verify(a: &StressArgs, oracle: &TxnOracle) -> Result<TxnVerifyReport, String> {
    initialize(a, oracle)?;
    let mut rep = TxnVerifyReport::default();
    let t0 = Instant::now();
    let db = Db::open(&a.db, db_options(a)).map_err(|e| format!("reopen: {e}"))?;
    rep.recovery = t0.elapsed();
    let ro = ReadOptions::default();
    let vio = |rep: &mut TxnVerifyReport, s: String| {
        if rep.violations.len() < 50 {
            eprintln!("VIOLATION: {s}");
        }
        rep.violations.push(s);
    };
    let accounts = oracle.accounts;
    let mut want: Vec<i64> = (0..accounts).map(|x| oracle.settled_balance(x)).collect();
    let mut found = vec![0u64; MAX_THREADS];
    for (t, last) in found.iter_mut().enumerate() {
        let r = oracle.thread(t);
        let mut apply = |rep: &mut TxnVerifyReport, n: u64, v: &[u8]| -> bool {
            match parse_transfer(t, n, v, accounts, a.value_size) {
                Some(x) => {
                    want[x.from as usize] -= x.amount;
                    want[x.to as usize] += x.amount;
                    true
                }
                None => {
                    vio(
                        rep,
                        format!(
                            "transfer {t}/{n} holds a foreign value {:?}",
                            String::from_utf8_lossy(v)
                        ),
                    );
                    false
                }
            }
        };
        for n in r.settled + 1..=r.acked {
            rep.transfers += 1;
            match db
                .get(&ro, &transfer_key(t, n))
                .map_err(|e| format!("get: {e}"))?
            {
                Some(v) => {
                    apply(&mut rep, n, &v);
                }
                None => vio(
                    &mut rep,
                    format!("transfer {t}/{n} was acknowledged but is missing"),
                ),
            }
        }
        *last = r.acked;
        // The transfer in flight, if any, may be there.
        let next = r.acked + 1;
        if let Some(v) = db
            .get(&ro, &transfer_key(t, next))
            .map_err(|e| format!("get: {e}"))?
        {
            if r.pending == next {
                rep.transfers += 1;
                rep.pending_applied += 1;
                apply(&mut rep, next, &v);
                *last = next;
            } else {
                vio(
                    &mut rep,
                    format!("transfer {t}/{next} is there but was never tried"),
                );
            }
        } else if r.pending == next {
            rep.pending_dropped += 1;
        }
        // Nothing after it.
        let mut it = db.iter(&ro).map_err(|e| format!("iter: {e}"))?;
        it.seek(&transfer_key(t, *last + 1));
        if it.valid() && it.key().starts_with(&transfer_prefix(t)) {
            vio(
                &mut rep,
                format!(
                    "thread {t}: {:?} is there but transfers end at {}",
                    String::from_utf8_lossy(it.key()),
                    *last
                ),
            );
        }
        it.status().map_err(|e| format!("iter: {e}"))?;
    }
    // Each account: its settled balance plus the transfers found since.
    let mut got = vec![0i64; accounts as usize];
    for acct in 0..accounts {
        let v = db
            .get(&ro, &account_key(acct))
            .map_err(|e| format!("get: {e}"))?;
        match v.as_deref().and_then(parse_balance) {
            Some(b) => {
                got[acct as usize] = b;
                if b != want[acct as usize] {
                    vio(
                        &mut rep,
                        format!(
                            "account {acct}: balance {b}, expected {} (settled {} plus the transfers since)",
                            want[acct as usize],
                            oracle.settled_balance(acct)
                        ),
                    );
                }
            }
            None => vio(
                &mut rep,
                format!(
                    "account {acct} holds {:?}, not a balance",
                    v.map(|v| String::from_utf8_lossy(&v).to_string())
                ),
            ),
        }
    }
    let total: i64 = got.iter().sum();
    if total != accounts as i64 * INITIAL {
        vio(
            &mut rep,
            format!(
                "the balances sum to {total}, not {}",
                accounts as i64 * INITIAL
            ),
        );
    }
    // A scan of the accounts agrees with the gets.
    let mut it = db.iter(&ro).map_err(|e| format!("iter: {e}"))?;
    it.seek(b"a");
    let mut i = 0u64;
    while it.valid() && it.key().first() == Some(&b'a') {
        if it.key() != account_key(i).as_slice()
            || parse_balance(it.value()) != Some(got[i as usize])
        {
            vio(
                &mut rep,
                format!(
                    "scan: {:?} = {:?} at position {i} differs from the gets",
                    String::from_utf8_lossy(it.key()),
                    String::from_utf8_lossy(it.value())
                ),
            );
            break;
        }
        i += 1;
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    drop(it);
    if i != accounts && rep.violations.is_empty() {
        vio(&mut rep, format!("scan: {i} accounts, not {accounts}"));
    }
    if rep.violations.is_empty() {
        for (acct, &b) in got.iter().enumerate() {
            oracle.set_settled_balance(acct as u64, b);
        }
        for (t, &f) in found.iter().enumerate() {
            oracle.set_thread(
                t,
                ThreadRec {
                    settled: f,
                    acked: f,
                    pending: 0,
                },
            );
        }
        oracle.sync()?;
    }
    db.close().map_err(|e| format!("close: {e}"))?;
    Ok(rep)
}

fn print_verify(rep: &TxnVerifyReport) {
    println!(
        "verify: transfers {} pending_applied {} pending_dropped {} recovery_ms {:.1} violations {}",
        rep.transfers,
        rep.pending_applied,
        rep.pending_dropped,
        rep.recovery.as_secs_f64() * 1e3,
        rep.violations.len()
    );
}

/// `cairndb stress --txn`: settle (or create) the oracle, run the
/// workload, verify.
pub fn main(a: StressArgs, oracle_path: &Path) -> Result<(), String> {
    if a.accounts < 2 || a.accounts >= 1_000_000 {
        return Err("--accounts must be 2..1000000".into());
    }
    let oracle = TxnOracle::open(oracle_path, a.accounts)?;
    if a.verify {
        let rep = verify(&a, &oracle)?;
        print_verify(&rep);
        if !rep.violations.is_empty() {
            return Err(format!("{} violations", rep.violations.len()));
        }
        return Ok(());
    }
    // Creates the accounts on the first run; settles after a kill.
    let rep = verify(&a, &oracle)?;
    if !rep.violations.is_empty() {
        print_verify(&rep);
        return Err(format!(
            "{} violations before starting; run --verify for details",
            rep.violations.len()
        ));
    }
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    println!(
        "seed {seed} {}",
        if a.optimistic {
            "optimistic"
        } else {
            "pessimistic"
        }
    );
    let o = db_options(&a);
    let db = if a.optimistic {
        TxDb::Opt(OptimisticTransactionDb::open(&a.db, o).map_err(|e| format!("open: {e}"))?)
    } else {
        TxDb::Pess(
            TransactionDb::open(&a.db, o, TransactionDbOptions::default())
                .map_err(|e| format!("open: {e}"))?,
        )
    };
    let sh = Arc::new(Shared {
        db,
        oracle,
        args: a.clone(),
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        retries: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let t0 = Instant::now();
    let handles: Vec<_> = (0..a.threads)
        .map(|t| {
            let sh = sh.clone();
            std::thread::spawn(move || worker(&sh, t, seed))
        })
        .collect();
    let mut out = std::io::stdout();
    loop {
        std::thread::sleep(Duration::from_millis(a.progress_ms.max(1)));
        let _ = writeln!(out, "ops {}", sh.ops.load(Ordering::Relaxed));
        let _ = out.flush();
        if a.duration > 0 && t0.elapsed() >= Duration::from_secs(a.duration) {
            sh.stop.store(true, Ordering::SeqCst);
        }
        if handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    for h in handles {
        h.join()
            .map_err(|_| "a worker thread panicked".to_string())?;
    }
    let ops = sh.ops.load(Ordering::Relaxed);
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "stress: ops {ops} retries {} seconds {secs:.1} ops/sec {:.0}",
        sh.retries.load(Ordering::Relaxed),
        ops as f64 / secs
    );
    let failures = std::mem::take(&mut *sh.failures.lock().unwrap());
    let sh = Arc::try_unwrap(sh).map_err(|_| "workers still hold the database".to_string())?;
    sh.db.close().map_err(|e| format!("close: {e}"))?;
    drop(sh.db);
    if !failures.is_empty() {
        return Err(format!("{} violations during the run", failures.len()));
    }
    if !a.no_final_verify {
        let rep = verify(&a, &sh.oracle)?;
        print_verify(&rep);
        if !rep.violations.is_empty() {
            return Err(format!("{} violations", rep.violations.len()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_records_round_trip_and_reject_others() {
        let x = Transfer {
            from: 3,
            to: 7,
            amount: 250,
        };
        let v = transfer_value(2, 41, x, 100);
        assert_eq!(parse_transfer(2, 41, &v, 64, 100), Some(x));
        assert_eq!(parse_transfer(2, 42, &v, 64, 100), None, "another number");
        assert_eq!(parse_transfer(2, 41, &v, 5, 100), None, "account 7 of 5");
        let mut bad = v.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(parse_transfer(2, 41, &bad, 64, 100), None);
        assert_eq!(parse_balance(b"-12"), Some(-12));
        assert_eq!(parse_balance(b"12x"), None);
    }
}
