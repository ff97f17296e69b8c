//! db_bench's `randomtransaction`: RocksDB's `RandomTransactionInserter`
//! (one operation = one transaction attempt over `--transaction_sets`
//! keys) and `RandomTransactionInserter::Verify`, run unchanged against
//! every engine through the [`TxnDb`] / [`EngineTxn`] interface defined
//! here, which each engine implements over its own transaction API.
//!
//! ## Invariants
//! * Every key is `"%.4u"` of its set (1-based) followed by a decimal key
//!   number below `--num`; every value is the decimal text of a `u64`
//!   that is neither 0 nor `u64::MAX`.
//! * One operation adds the same increment to one key of every set, so
//!   after any number of committed transactions all sets sum to the same
//!   total; [`verify`] checks exactly that. A transaction that fails
//!   (conflict, lock timeout) or rolls back on purpose changes nothing.
//! * The random draws (`Random64`, libstdc++'s `uniform_int_distribution`
//!   for `OneIn`) come in db_bench's order, including the two draws of
//!   its two-phase-commit path, which is not modelled (see
//!   docs/bench/transactions.md), so a seed drives the same keys,
//!   increments and commit/rollback choices as in db_bench. The order in
//!   which an operation visits the sets comes from a second generator
//!   (db_bench uses `std::random_device`, which is not reproducible).
//! * An error that db_bench does not expect (anything but a conflict,
//!   a lock timeout or a too-short memtable history) ends the benchmark
//!   with an error, where db_bench calls `abort()`.

use super::engine::{Engine, Op};
use super::flags::TxnMode;
use super::keygen::Mt64;

/// How a transaction call failed, in RocksDB's status classes. CairnDB
/// makes only `Busy`, `TimedOut` and `Other`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
pub enum TxnError {
    /// A write conflict (snapshot validation, optimistic check) or a lock
    /// limit; RocksDB's `Status::Busy` (deadlocks included).
    Busy(String),
    /// A lock wait ran out (`Status::TimedOut`).
    TimedOut(String),
    /// The memtable history is too short to check a conflict
    /// (`Status::TryAgain`, optimistic RocksDB).
    TryAgain(String),
    /// The transaction outlived its expiration (`Status::Expired`).
    Expired(String),
    /// Anything else.
    Other(String),
}

impl TxnError {
    /// A conflict, lock timeout or too-short history: what db_bench counts
    /// as an abort of an optimistic transaction (a pessimistic one's reads
    /// and writes too).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            TxnError::Busy(_) | TxnError::TimedOut(_) | TxnError::TryAgain(_)
        )
    }
}

impl std::fmt::Display for TxnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (class, m) = match self {
            TxnError::Busy(m) => ("Busy", m),
            TxnError::TimedOut(m) => ("TimedOut", m),
            TxnError::TryAgain(m) => ("TryAgain", m),
            TxnError::Expired(m) => ("Expired", m),
            TxnError::Other(m) => ("error", m),
        };
        write!(f, "{class}: {m}")
    }
}

/// A transaction call's result.
pub type TResult<T> = Result<T, TxnError>;

/// An engine opened as a transaction database.
pub trait TxnDb: Sync {
    /// Pessimistic or optimistic.
    fn mode(&self) -> TxnMode;
    /// Starts a transaction with the engine's transaction options (lock
    /// timeout from `--transaction_lock_timeout`, deadlock detection off),
    /// taking a snapshot at begin when `snapshot`.
    fn begin(&self, snapshot: bool) -> Box<dyn EngineTxn + '_>;
}

/// One transaction. Dropping it unfinished rolls it back.
pub trait EngineTxn {
    /// RocksDB's `Transaction::SetSnapshot` on a transaction that already
    /// has one: a new snapshot for its reads and later validations.
    fn renew_snapshot(&mut self);
    /// Reads `key` into `buf` (false: no value). `for_update`:
    /// `GetForUpdate` (exclusive lock, or conflict tracking). `at_snapshot`:
    /// read at the transaction's snapshot, else at the latest state (an
    /// engine whose transactions always read at their snapshot ignores it).
    fn get(
        &mut self,
        key: &[u8],
        for_update: bool,
        at_snapshot: bool,
        buf: &mut Vec<u8>,
    ) -> TResult<bool>;
    /// Deletes `key` in the transaction.
    fn delete(&mut self, key: &[u8]) -> TResult<()>;
    /// Puts `key` in the transaction.
    fn put(&mut self, key: &[u8], value: &[u8]) -> TResult<()>;
    /// Commits.
    fn commit(self: Box<Self>) -> TResult<()>;
    /// Rolls back.
    fn rollback(self: Box<Self>) -> TResult<()>;
}

/// `Random64::Uniform`-style draw in `[0, n)` exactly as libstdc++'s
/// `std::uniform_int_distribution<uint64_t>` makes it from a 64-bit
/// engine (Lemire's multiply-and-reject, GCC 11 and later).
pub fn uniform(rand: &mut Mt64, n: u64) -> u64 {
    debug_assert!(n > 0);
    let mut product = u128::from(rand.next_u64()) * u128::from(n);
    let mut low = product as u64;
    if low < n {
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            product = u128::from(rand.next_u64()) * u128::from(n);
            low = product as u64;
        }
    }
    (product >> 64) as u64
}

/// `Random64::OneIn(n)`.
pub fn one_in(rand: &mut Mt64, n: u64) -> bool {
    uniform(rand, n) == 0
}

/// The key of `set_i` (0-based) and key number `k`: `"%.4u%lu"`.
pub fn make_key(set_i: u16, k: u64, out: &mut Vec<u8>) {
    use std::io::Write;
    out.clear();
    let _ = write!(out, "{:04}{}", u32::from(set_i) + 1, k);
}

/// One benchmark thread's inserter (db_bench's `RandomTransactionInserter`).
pub struct Inserter {
    rand: Mt64,
    /// Orders the sets within an operation.
    shuffle: Mt64,
    mode: TxnMode,
    num_keys: u64,
    sets: Vec<u16>,
    set_snapshot: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Operations that ended in a commit, an intended rollback or a batch
    /// write.
    pub successes: u64,
    /// Operations that ended in a conflict or a lock timeout (db_bench's
    /// "aborts").
    pub failures: u64,
    /// Key and new-value bytes of every set handled (db_bench counts them
    /// even when the transaction later aborts or rolls back).
    pub bytes: u64,
}

impl Inserter {
    /// An inserter drawing from the thread's generator seeded with `seed`.
    /// `num_keys` is `--num` (keys per set), `num_sets`
    /// `--transaction_sets`.
    pub fn new(
        seed: u64,
        mode: TxnMode,
        num_keys: u64,
        num_sets: u16,
        set_snapshot: bool,
    ) -> Inserter {
        Inserter {
            rand: Mt64::new(seed),
            shuffle: Mt64::new(seed ^ 0x9E37_79B9_7F4A_7C15),
            mode,
            num_keys: num_keys.max(1),
            sets: (0..num_sets).collect(),
            set_snapshot,
            key: Vec::new(),
            value: Vec::new(),
            successes: 0,
            failures: 0,
            bytes: 0,
        }
    }

    /// The `( transactions:N aborts:M)` or `( batches:N )` message for `done`
    /// operations.
    pub fn message(&self, done: u64) -> String {
        match self.mode {
            TxnMode::None => format!("( batches:{done} )"),
            _ => format!("( transactions:{done} aborts:{})", self.failures),
        }
    }

    fn shuffle_sets(&mut self) {
        for i in (1..self.sets.len()).rev() {
            let j = uniform(&mut self.shuffle, i as u64 + 1) as usize;
            self.sets.swap(i, j);
        }
    }

    /// One operation. Err: an error db_bench does not expect (it aborts).
    pub fn insert(&mut self, db: &dyn Engine) -> Result<(), String> {
        match self.mode {
            TxnMode::None => self.db_insert(db),
            mode => {
                let tdb = db.transactions().ok_or_else(|| {
                    "randomtransaction: the engine was not opened as a transaction database"
                        .to_string()
                })?;
                debug_assert_eq!(tdb.mode(), mode);
                // Pessimistic: db_bench begins (with a snapshot under
                // --transaction_set_snapshot), then takes a snapshot "if
                // set_snapshot was not set or with 50% chance otherwise"
                // and reads at it. Without the flag, beginning with a
                // snapshot is begin + SetSnapshot; neither draws, so the
                // draw order is db_bench's. Optimistic: a snapshot at
                // begin, reads at the latest state (db_bench's code needs
                // the snapshot; docs/bench/transactions.md says why).
                let take = mode == TxnMode::Pessimistic
                    && (!self.set_snapshot || one_in(&mut self.rand, 2));
                let mut txn = tdb.begin(true);
                if take && self.set_snapshot {
                    txn.renew_snapshot();
                }
                self.txn_insert(txn, take)
            }
        }
    }

    /// The value of a read, 0 when absent; Err for db_bench's "unexpected
    /// value" (0, `u64::MAX`, not a number).
    fn parse_value(&self, found: bool) -> Result<u64, String> {
        if !found {
            return Ok(0);
        }
        let text = String::from_utf8_lossy(&self.value);
        match text.parse::<u64>() {
            Ok(v) if v != 0 && v != u64::MAX => Ok(v),
            _ => Err(format!(
                "Get returned unexpected value: {text} (key {})",
                String::from_utf8_lossy(&self.key)
            )),
        }
    }

    /// db_bench's `DBInsert`: plain reads, one batch of puts.
    fn db_insert(&mut self, db: &dyn Engine) -> Result<(), String> {
        let incr = self.rand.next_u64() % 100 + 1;
        self.shuffle_sets();
        let mut keys: Vec<Vec<u8>> = Vec::with_capacity(self.sets.len());
        let mut vals: Vec<Vec<u8>> = Vec::with_capacity(self.sets.len());
        for i in 0..self.sets.len() {
            let set_i = self.sets[i];
            let k = self.rand.next_u64() % self.num_keys;
            make_key(set_i, k, &mut self.key);
            let found = match db.get(&self.key)? {
                Some(v) => {
                    self.value = v;
                    true
                }
                None => false,
            };
            let sum = (self.parse_value(found)? + incr).to_string();
            self.bytes += (self.key.len() + sum.len()) as u64;
            keys.push(self.key.clone());
            vals.push(sum.into_bytes());
        }
        let ops: Vec<Op<'_>> = keys.iter().zip(&vals).map(|(k, v)| Op::Put(k, v)).collect();
        db.write(&ops)
            .map_err(|e| format!("Write returned an unexpected error: {e}"))?;
        self.successes += 1;
        Ok(())
    }

    /// db_bench's `DoInsert` with a transaction.
    fn txn_insert(
        &mut self,
        mut txn: Box<dyn EngineTxn + '_>,
        at_snapshot: bool,
    ) -> Result<(), String> {
        let optimistic = self.mode == TxnMode::Optimistic;
        let incr = self.rand.next_u64() % 100 + 1;
        self.shuffle_sets();
        let mut failed: Option<TxnError> = None;
        for i in 0..self.sets.len() {
            let set_i = self.sets[i];
            let k = self.rand.next_u64() % self.num_keys;
            let for_update = one_in(&mut self.rand, 2);
            make_key(set_i, k, &mut self.key);
            let found = match txn.get(&self.key, for_update, at_snapshot, &mut self.value) {
                Ok(found) => found,
                Err(e @ (TxnError::Busy(_) | TxnError::TimedOut(_) | TxnError::TryAgain(_)))
                    if !optimistic =>
                {
                    failed = Some(e);
                    break;
                }
                Err(e) => return Err(format!("Get returned an unexpected error: {e}")),
            };
            let sum = (self.parse_value(found)? + incr).to_string();
            // db_bench: SingleDelete for set_i % 4 != 0, else Delete;
            // neither CairnDB nor RocksDB's C API has a transactional
            // SingleDelete, so every set deletes.
            match txn.delete(&self.key) {
                Ok(()) => {}
                Err(e @ (TxnError::Busy(_) | TxnError::TimedOut(_))) if !for_update => {
                    failed = Some(e);
                    break;
                }
                Err(e) => return Err(format!("Delete returned an unexpected error: {e}")),
            }
            txn.put(&self.key, sum.as_bytes())
                .map_err(|e| format!("Put returned an unexpected error: {e}"))?;
            self.bytes += (self.key.len() + sum.len()) as u64;
        }
        if let Some(e) = failed {
            txn.rollback()
                .map_err(|r| format!("Rollback after {e} returned an error: {r}"))?;
            self.failures += 1;
            return Ok(());
        }
        if !optimistic {
            // db_bench prepares 90% of pessimistic transactions (two-phase
            // commit) and adds a commit-time write to 5% of those; neither
            // is modelled, but the draws are kept.
            let with_prepare = !one_in(&mut self.rand, 10);
            if with_prepare {
                one_in(&mut self.rand, 20);
            }
        }
        let commit = !one_in(&mut self.rand, 20);
        let r = if commit { txn.commit() } else { txn.rollback() };
        match r {
            Ok(()) => self.successes += 1,
            Err(TxnError::Busy(_) | TxnError::TimedOut(_) | TxnError::TryAgain(_))
                if optimistic =>
            {
                self.failures += 1
            }
            Err(TxnError::Expired(_)) if !optimistic => self.failures += 1,
            Err(e) => {
                let what = if commit { "Commit" } else { "Rollback" };
                return Err(format!("{what} returned an unexpected error: {e}"));
            }
        }
        Ok(())
    }
}

/// db_bench's `RandomTransactionVerify` (`RandomTransactionInserter::Verify`
/// with its defaults: no snapshot, iterators only): sums the values of
/// every set, visiting the sets in an order drawn from `seed`. Ok: every
/// total is equal. Err: the message db_bench prints, naming the two sets
/// and their totals, or the value it could not read.
pub fn verify(db: &dyn Engine, num_sets: u16, seed: u64) -> Result<(), String> {
    let mut order: Vec<u16> = (0..num_sets).collect();
    let mut rand = Mt64::new(seed);
    for i in (1..order.len()).rev() {
        let j = uniform(&mut rand, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let mut prev: Option<(u16, u64)> = None;
    for set_i in order {
        let prefix = format!("{:04}", u32::from(set_i) + 1);
        let mut total: u64 = 0;
        let mut it = db.iter()?;
        it.seek(prefix.as_bytes());
        while it.valid() && it.key().starts_with(prefix.as_bytes()) {
            let text = String::from_utf8_lossy(it.value());
            let v = match text.parse::<u64>() {
                Ok(v) if v != 0 && v != u64::MAX => v,
                _ => {
                    return Err(format!(
                        "Iter returned unexpected value: {text} (key {})",
                        String::from_utf8_lossy(it.key())
                    ))
                }
            };
            total = total.wrapping_add(v);
            it.next();
        }
        it.status()?;
        if let Some((prev_i, prev_total)) = prev {
            if total != prev_total {
                return Err(format!(
                    "RandomTransactionVerify found inconsistent totals using pointlookup? 0 \
                     Set[{prev_i}]: {prev_total}, Set[{set_i}]: {total} at snapshot 0"
                ));
            }
        }
        prev = Some((set_i, total));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_set_prefix_then_decimal() {
        let mut k = Vec::new();
        make_key(0, 7, &mut k);
        assert_eq!(k, b"00017");
        make_key(1, 123456, &mut k);
        assert_eq!(k, b"0002123456");
        make_key(9998, 0, &mut k);
        assert_eq!(k, b"99990");
    }

    #[test]
    fn uniform_is_lemire_over_mt19937_64() {
        // (x * n) >> 64 of the generator's first outputs, none rejected.
        let mut a = Mt64::new(42);
        let mut b = Mt64::new(42);
        for n in [2u64, 10, 20, 100, 1 << 40] {
            let x = b.next_u64();
            let expect = ((u128::from(x) * u128::from(n)) >> 64) as u64;
            assert_eq!(uniform(&mut a, n), expect);
        }
        let mut r = Mt64::new(7);
        let ones = (0..20_000).filter(|_| one_in(&mut r, 20)).count();
        assert!((800..1200).contains(&ones), "{ones}");
    }

    /// A CairnDB database holding `rows`, behind the benchmark interface.
    fn crafted(dir: &std::path::Path, rows: &[(&str, &str)]) -> crate::bench::engine::CairnEngine {
        let f = crate::bench::flags::Flags::default();
        let e = crate::bench::engine::CairnEngine::open(dir, &f, &mut Vec::new()).unwrap();
        for (k, v) in rows {
            e.put(k.as_bytes(), v.as_bytes()).unwrap();
        }
        e
    }

    #[test]
    fn verify_finds_unequal_totals_and_bad_values() {
        let dir = tempfile::tempdir().unwrap();
        let ok = crafted(
            dir.path(),
            &[
                ("00011", "3"),
                ("000199", "4"),
                ("00025", "7"),
                ("00031", "7"),
                ("9", "x"),
            ],
        );
        verify(&ok, 3, 1).unwrap();
        // Any order of the sets names the two that differ.
        ok.put(b"00037", b"1").unwrap();
        for seed in 0..8 {
            let e = verify(&ok, 3, seed).unwrap_err();
            assert!(e.contains("inconsistent totals"), "{e}");
            assert!(e.contains("Set[2]: 8"), "{e}");
        }
        // Sets beyond --transaction_sets are not looked at.
        verify(&ok, 2, 1).unwrap();
        ok.put(b"00012", b"18446744073709551615").unwrap();
        let e = verify(&ok, 2, 1).unwrap_err();
        assert!(
            e.starts_with("Iter returned unexpected value: 18446744073709551615"),
            "{e}"
        );
        ok.put(b"00012", b"twelve").unwrap();
        let e = verify(&ok, 2, 1).unwrap_err();
        assert!(
            e.starts_with("Iter returned unexpected value: twelve"),
            "{e}"
        );
    }

    #[test]
    fn inserter_keeps_every_set_total_equal() {
        use crate::bench::flags::Flags;
        for mode in [TxnMode::Pessimistic, TxnMode::Optimistic] {
            let dir = tempfile::tempdir().unwrap();
            let f = Flags {
                transaction_db: mode == TxnMode::Pessimistic,
                optimistic_transaction_db: mode == TxnMode::Optimistic,
                ..Flags::default()
            };
            let e =
                crate::bench::engine::CairnEngine::open(dir.path(), &f, &mut Vec::new()).unwrap();
            let mut ins = Inserter::new(5, mode, 20, 3, false);
            for _ in 0..500 {
                ins.insert(&e).unwrap();
            }
            assert_eq!((ins.successes, ins.failures), (500, 0));
            verify(&e, 3, 2).unwrap();
            // A 95% commit rate: about 475 increments of 1..=100 per set.
            let mut it = e.iter().unwrap();
            it.seek(b"0001");
            let mut total = 0u64;
            while it.valid() && it.key().starts_with(b"0001") {
                total += std::str::from_utf8(it.value())
                    .unwrap()
                    .parse::<u64>()
                    .unwrap();
                it.next();
            }
            assert!((15_000..35_000).contains(&total), "{total}");
        }
    }

    #[test]
    fn messages_as_db_bench() {
        let i = Inserter::new(1, TxnMode::None, 10, 2, false);
        assert_eq!(i.message(5), "( batches:5 )");
        let mut i = Inserter::new(1, TxnMode::Pessimistic, 10, 2, false);
        i.failures = 2;
        assert_eq!(i.message(9), "( transactions:9 aborts:2)");
    }
}
