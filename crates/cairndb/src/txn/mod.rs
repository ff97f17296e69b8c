//! Transactions: [`TransactionDb`] (pessimistic: row locks held to the
//! end) and [`OptimisticTransactionDb`] (no locks: a conflict check at
//! commit). Both hand out [`Transaction`]s, which buffer their writes
//! in a sorted write set, read their own writes first, and reach the WAL
//! only at commit, as one write batch through the group commit.
//! `docs/transactions.md` states the isolation each mode gives.
//!
//! ## Invariants
//! * A transaction's writes are invisible to others until `commit`
//!   returns Ok; then all of them are, at consecutive sequence numbers of
//!   one WAL record (all or none survives a crash).
//! * Pessimistic: every key in the write set is locked exclusively by the
//!   transaction; with a snapshot, each written or `get_for_update` key had
//!   no write newer than the snapshot when it was locked (and none can come
//!   from another transaction while the lock is held).
//! * Optimistic: every written or `get_for_update` key is tracked with the
//!   sequence number it was read at; the commit's batch is written only if
//!   none of them has a newer entry at that moment (checked by the group
//!   commit leader, see `db/commit.rs`).
//! * A finished transaction (committed, rolled back, failed commit,
//!   deadlock victim) holds no lock and refuses further operations.
//!
//! ## Locks
//! A `Transaction` is used by one thread at a time (`&mut self`). The lock
//! table (`lock.rs`) has its own locking; no lock of this module is held
//! while a transaction waits for a row lock or writes.

mod iter;
mod lock;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::batch::{BatchOp, Marker, WriteBatch};
use crate::db::pipeline::ConflictCheck;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::Snapshot;
pub use iter::TransactionIterator;
use iter::WriteSet;
pub use lock::LockWaitHook;
use lock::{Granted, LockManager, LockRequest, TxnId};

/// Options of a [`TransactionDb`] (RocksDB's `TransactionDBOptions`).
#[derive(Debug, Clone)]
pub struct TransactionDbOptions {
    /// Most (key, transaction) locks held at once over the database; a
    /// request beyond it fails with `Error::Busy`. 0: unlimited.
    pub max_num_locks: usize,
    /// Stripes of the lock table (each a mutex and a hash map).
    pub num_stripes: usize,
    /// How long a transaction waits for a row lock before
    /// `Error::TimedOut`, unless its `TransactionOptions::lock_timeout`
    /// says otherwise. `Duration::MAX`: forever; zero: never wait.
    pub transaction_lock_timeout: Duration,
    /// The same for writes made outside a transaction
    /// (`TransactionDb::put`, `delete`, `write`).
    pub default_lock_timeout: Duration,
}

impl Default for TransactionDbOptions {
    fn default() -> Self {
        TransactionDbOptions {
            max_num_locks: 0,
            num_stripes: 16,
            transaction_lock_timeout: Duration::from_millis(1000),
            default_lock_timeout: Duration::from_millis(1000),
        }
    }
}

/// Options of one transaction (RocksDB's `TransactionOptions`).
#[derive(Debug, Clone)]
pub struct TransactionOptions {
    /// Take a snapshot at `begin` (as `Transaction::set_snapshot` would).
    pub set_snapshot: bool,
    /// Pessimistic: detect deadlocks while waiting for a lock.
    pub deadlock_detect: bool,
    /// Pessimistic: how many wait-for edges deep detection looks.
    pub deadlock_detect_depth: usize,
    /// Pessimistic: overrides `TransactionDbOptions::transaction_lock_timeout`.
    pub lock_timeout: Option<Duration>,
}

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            set_snapshot: false,
            deadlock_detect: true,
            deadlock_detect_depth: 50,
            lock_timeout: None,
        }
    }
}

/// What the two database flavours share with their transactions.
struct Shared {
    db: Db,
    /// None for an optimistic database.
    locks: Option<LockManager>,
    opts: TransactionDbOptions,
    next_id: AtomicU64,
    /// Names of live named transactions (unique).
    names: Mutex<HashSet<Vec<u8>>>,
    /// Prepared transactions no `Transaction` holds: found at open, or
    /// dropped while prepared. Their locks stay held under their ids.
    undecided: Mutex<Vec<Undecided>>,
}

/// A prepared transaction waiting for `prepared_transactions`.
struct Undecided {
    id: TxnId,
    name: Vec<u8>,
    writes: WriteSet,
    wopts: WriteOptions,
}

impl Shared {
    fn begin(self: &Arc<Self>, wopts: &WriteOptions, topts: &TransactionOptions) -> Transaction {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut t = Transaction {
            shared: self.clone(),
            id,
            wopts: *wopts,
            wait_hook: None,
            lock_req: LockRequest {
                exclusive: true,
                timeout: topts
                    .lock_timeout
                    .unwrap_or(self.opts.transaction_lock_timeout),
                deadlock_depth: if topts.deadlock_detect {
                    topts.deadlock_detect_depth.max(1)
                } else {
                    0
                },
            },
            snapshot: None,
            writes: Arc::new(WriteSet::new()),
            locked: HashMap::new(),
            tracked: HashMap::new(),
            track_floor: None,
            savepoints: Vec::new(),
            undo: Vec::new(),
            since_savepoint: Vec::new(),
            name: None,
            state: State::Active,
        };
        if topts.set_snapshot {
            t.set_snapshot();
        }
        t
    }
}

/// A database whose transactions lock the rows they write (RocksDB's
/// `TransactionDB`, write-committed). Cheap to clone; every clone is the
/// same database, closed when the last clone and transaction are dropped
/// or by [`TransactionDb::close`].
///
/// Writes made through [`TransactionDb::put`], `delete` and `write` take
/// the same locks for their duration. Writes made through [`Self::db`]
/// bypass the lock table.
#[derive(Clone)]
pub struct TransactionDb {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TransactionDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionDb")
            .field("path", &self.shared.db.path())
            .finish()
    }
}

impl TransactionDb {
    /// Opens (or creates) the database at `path` for pessimistic
    /// transactions.
    pub fn open(
        path: impl AsRef<Path>,
        opts: Options,
        txn_opts: TransactionDbOptions,
    ) -> Result<TransactionDb> {
        let db = Db::open(path, opts)?;
        let locks = LockManager::new(txn_opts.num_stripes, txn_opts.max_num_locks);
        // Transactions prepared before the restart and not decided: they
        // take their locks again before any new transaction can start.
        let mut undecided = Vec::new();
        let mut names = HashSet::new();
        let mut next_id = 1;
        for (name, batch) in db.undecided_prepared()? {
            let id = next_id;
            next_id += 1;
            let mut writes = WriteSet::new();
            for op in batch.iter() {
                match op {
                    Ok(BatchOp::Put(k, v)) => {
                        writes.insert(k.to_vec(), Some(v.to_vec()));
                    }
                    Ok(BatchOp::Delete(k)) => {
                        writes.insert(k.to_vec(), None);
                    }
                    Ok(BatchOp::Marker(..)) => {}
                    Err(what) => {
                        return Err(Error::invalid(format!(
                            "prepared transaction \"{}\": {what}",
                            name.escape_ascii()
                        )))
                    }
                }
            }
            for k in writes.keys() {
                let req = LockRequest {
                    exclusive: true,
                    timeout: Duration::ZERO,
                    deadlock_depth: 0,
                };
                locks.lock(id, k, req)?;
            }
            names.insert(name.clone());
            undecided.push(Undecided {
                id,
                name,
                writes,
                wopts: WriteOptions {
                    sync: true,
                    disable_wal: false,
                },
            });
        }
        Ok(TransactionDb {
            shared: Arc::new(Shared {
                db,
                locks: Some(locks),
                opts: txn_opts,
                next_id: AtomicU64::new(next_id),
                names: Mutex::new(names),
                undecided: Mutex::new(undecided),
            }),
        })
    }

    /// The prepared transactions no `Transaction` holds: those found
    /// prepared and undecided when the database was opened, and those
    /// dropped while prepared. Each holds its locks; `commit` or
    /// `rollback` decides it (with `sync` set). Each is handed out once.
    pub fn prepared_transactions(&self) -> Vec<Transaction> {
        let taken = std::mem::take(&mut *self.shared.undecided.lock());
        taken
            .into_iter()
            .map(|u| {
                let mut t = self.shared.begin(&u.wopts, &TransactionOptions::default());
                // `begin` took a fresh id; the locks are held under the old.
                t.id = u.id;
                t.locked = u.writes.keys().map(|k| (k.clone(), true)).collect();
                t.writes = Arc::new(u.writes);
                t.name = Some(u.name);
                t.state = State::Prepared;
                t
            })
            .collect()
    }

    /// Starts a transaction.
    pub fn begin(&self, wopts: &WriteOptions, topts: &TransactionOptions) -> Transaction {
        self.shared.begin(wopts, topts)
    }

    /// The underlying database, for reads, snapshots, statistics and
    /// maintenance. Its writes bypass the lock table.
    pub fn db(&self) -> &Db {
        &self.shared.db
    }

    /// Sets `key` to `value` as a transaction of one write (locks the key
    /// for the write's duration).
    pub fn put(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(opts, b)
    }

    /// Removes `key` as a transaction of one write.
    pub fn delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(opts, b)
    }

    /// Applies `batch` atomically, holding the locks of all its keys
    /// (waiting up to `default_lock_timeout` for each) while it is written.
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        batch.check_sizes()?;
        let s = &self.shared;
        let Some(locks) = &s.locks else {
            return s.db.write(opts, batch);
        };
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let req = LockRequest {
            exclusive: true,
            timeout: s.opts.default_lock_timeout,
            deadlock_depth: 50,
        };
        let mut held: Vec<Vec<u8>> = Vec::new();
        let mut result = Ok(());
        for op in batch.iter() {
            let key = match op {
                Ok(crate::batch::BatchOp::Put(k, _)) | Ok(crate::batch::BatchOp::Delete(k)) => k,
                Ok(crate::batch::BatchOp::Marker(..)) => continue,
                Err(what) => {
                    result = Err(Error::invalid(format!("malformed write batch: {what}")));
                    break;
                }
            };
            match locks.lock(id, key, req) {
                Ok(Granted::New) => held.push(key.to_vec()),
                Ok(_) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = s.db.write(opts, batch);
        }
        locks.unlock_all(id, held.iter().map(Vec::as_slice));
        result
    }

    /// The value of `key` (no lock; see `Transaction::get_for_update`).
    pub fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.shared.db.get(opts, key)
    }

    /// Row locks held right now, over all transactions.
    pub fn num_locks(&self) -> usize {
        self.shared.locks.as_ref().map_or(0, LockManager::num_locks)
    }

    /// Closes the database (see [`Db::close`]); transactions still open
    /// then fail with `Error::Closed`.
    pub fn close(&self) -> Result<()> {
        self.shared.db.close()
    }
}

/// A database whose transactions take no locks and check for conflicts at
/// commit (RocksDB's `OptimisticTransactionDB`). Cheap to clone.
#[derive(Clone)]
pub struct OptimisticTransactionDb {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OptimisticTransactionDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptimisticTransactionDb")
            .field("path", &self.shared.db.path())
            .finish()
    }
}

impl OptimisticTransactionDb {
    /// Opens (or creates) the database at `path` for optimistic
    /// transactions.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<OptimisticTransactionDb> {
        let db = Db::open(path, opts)?;
        Ok(OptimisticTransactionDb {
            shared: Arc::new(Shared {
                db,
                locks: None,
                opts: TransactionDbOptions::default(),
                next_id: AtomicU64::new(1),
                names: Mutex::new(HashSet::new()),
                undecided: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Starts a transaction. Only `set_snapshot` of `topts` applies.
    pub fn begin(&self, wopts: &WriteOptions, topts: &TransactionOptions) -> Transaction {
        self.shared.begin(wopts, topts)
    }

    /// The underlying database: reads, snapshots, statistics, and writes
    /// that optimistic transactions see as conflicts like any other.
    pub fn db(&self) -> &Db {
        &self.shared.db
    }

    /// Closes the database (see [`Db::close`]).
    pub fn close(&self) -> Result<()> {
        self.shared.db.close()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Active,
    /// Two-phase commit: the prepare record is logged; only `commit` or
    /// `rollback` may follow.
    Prepared,
    Committed,
    RolledBack,
}

/// A key and its write-set entry before a write (None: it had none).
type Undo = (Vec<u8>, Option<Option<Vec<u8>>>);

/// Where `rollback_to_savepoint` returns to.
struct SavePoint {
    undo_len: usize,
    since_len: usize,
    snapshot: Option<Snapshot>,
}

/// A transaction. Its writes are buffered and become visible, atomically,
/// at [`Transaction::commit`]. Dropping an active transaction rolls it
/// back. `Send`: it may move between threads, one at a time.
pub struct Transaction {
    shared: Arc<Shared>,
    id: TxnId,
    wopts: WriteOptions,
    /// Exclusive, timeout and detection depth of this transaction's locks.
    lock_req: LockRequest,
    /// Consulted while a lock request of this transaction waits
    /// ([`Transaction::set_lock_wait_hook`]).
    wait_hook: Option<Arc<dyn LockWaitHook>>,
    snapshot: Option<Snapshot>,
    writes: Arc<WriteSet>,
    /// Pessimistic: keys locked -> held exclusively.
    locked: HashMap<Vec<u8>, bool>,
    /// Optimistic: keys read for update or written -> the sequence they
    /// were read at.
    tracked: HashMap<Vec<u8>, SeqNo>,
    /// Optimistic without a snapshot: a snapshot taken at the first
    /// tracked key and held to the end, so that compaction never gives a
    /// newer write of a tracked key sequence number 0 (which would hide
    /// the conflict; see `compaction::DropFilter`).
    track_floor: Option<Snapshot>,
    savepoints: Vec<SavePoint>,
    /// While a savepoint exists: (key, its write-set entry before).
    undo: Vec<Undo>,
    /// While a savepoint exists: keys first locked (pessimistic) or
    /// tracked (optimistic) since, in order.
    since_savepoint: Vec<Vec<u8>>,
    /// Two-phase commit: the name given by `set_name`.
    name: Option<Vec<u8>>,
    state: State,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.id)
            .field("writes", &self.writes.len())
            .field("state", &self.state)
            .finish()
    }
}

impl Transaction {
    /// This transaction's identifier (unique in its database).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Sets what this transaction's lock waits consult (pessimistic
    /// transactions): a wait then sleeps in slices of 10 ms and ends with
    /// `Error::Interrupted` when `hook.interrupted()` says so, and the
    /// hook is told how long each wait took. Locks granted at once never
    /// call it.
    pub fn set_lock_wait_hook(&mut self, hook: Option<Arc<dyn LockWaitHook>>) {
        self.wait_hook = hook;
    }

    /// Keys written (put or deleted) so far.
    pub fn num_writes(&self) -> usize {
        self.writes.len()
    }

    /// Takes a snapshot now: reads without a snapshot of their own read
    /// at it, and (pessimistic) a key locked from now on must not have
    /// changed since, or (optimistic) a key tracked from now on is checked
    /// against it at commit.
    pub fn set_snapshot(&mut self) {
        self.snapshot = Some(self.shared.db.snapshot());
    }

    /// The snapshot taken by `set_snapshot`, if any.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    fn check_active(&self) -> Result<()> {
        match self.state {
            State::Active => Ok(()),
            State::Prepared => Err(Error::invalid(
                "the transaction is prepared: only commit or rollback may follow",
            )),
            State::Committed => Err(Error::invalid("the transaction has already committed")),
            State::RolledBack => Err(Error::invalid("the transaction has been rolled back")),
        }
    }

    /// Read options with the transaction's snapshot unless `opts` has one.
    fn read_opts<'a>(&self, opts: &'a ReadOptions) -> std::borrow::Cow<'a, ReadOptions> {
        match (&opts.snapshot, &self.snapshot) {
            (None, Some(s)) => std::borrow::Cow::Owned(ReadOptions {
                snapshot: Some(s.clone()),
                ..opts.clone()
            }),
            _ => std::borrow::Cow::Borrowed(opts),
        }
    }

    /// Locks (pessimistic) or tracks (optimistic) `key` before a read for
    /// update or a write.
    fn acquire(&mut self, key: &[u8], exclusive: bool) -> Result<()> {
        let s = self.shared.clone();
        match &s.locks {
            Some(locks) => {
                let already = self.locked.get(key).copied();
                if already == Some(true) || (already == Some(false) && !exclusive) {
                    return Ok(());
                }
                let req = LockRequest {
                    exclusive,
                    ..self.lock_req
                };
                match locks.lock_with(self.id, key, req, self.wait_hook.as_deref()) {
                    Ok(granted) => {
                        // Validation: a key locked with a snapshot must not
                        // have changed since (the lock keeps it so).
                        if already.is_none() {
                            if let Some(snap) = &self.snapshot {
                                let seq = snap.sequence();
                                let newer = s.db.inner_latest_seq(key, seq);
                                let conflict = match newer {
                                    Ok(Some(latest)) if latest > seq => Some(Error::Busy {
                                        key: key.to_vec(),
                                        reason: "written after the transaction's snapshot",
                                    }),
                                    Ok(_) => None,
                                    Err(e) => Some(e),
                                };
                                if let Some(e) = conflict {
                                    if granted == Granted::New {
                                        locks.unlock(self.id, key);
                                    }
                                    return Err(e);
                                }
                            }
                        }
                        if already.is_none() && !self.savepoints.is_empty() {
                            self.since_savepoint.push(key.to_vec());
                        }
                        self.locked
                            .insert(key.to_vec(), exclusive || already == Some(true));
                        Ok(())
                    }
                    Err(e) => {
                        if matches!(e, Error::Deadlock { .. }) {
                            // The victim's locks go at once, so the others
                            // in the cycle proceed.
                            self.finish(State::RolledBack);
                        }
                        Err(e)
                    }
                }
            }
            None => {
                if !self.tracked.contains_key(key) {
                    let seq = match &self.snapshot {
                        Some(snap) => snap.sequence(),
                        None => {
                            // The floor first: the key's sequence is then
                            // at or above it.
                            self.track_floor.get_or_insert_with(|| s.db.snapshot());
                            s.db.last_sequence()
                        }
                    };
                    self.tracked.insert(key.to_vec(), seq);
                    if !self.savepoints.is_empty() {
                        self.since_savepoint.push(key.to_vec());
                    }
                }
                Ok(())
            }
        }
    }

    fn record_write(&mut self, key: &[u8], value: Option<&[u8]>) {
        let w = Arc::make_mut(&mut self.writes);
        let prev = w.insert(key.to_vec(), value.map(<[u8]>::to_vec));
        if !self.savepoints.is_empty() {
            self.undo.push((key.to_vec(), prev));
        }
    }

    /// Sets `key` to `value` in this transaction (locking the key).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_active()?;
        check_len("key", key.len(), crate::batch::CHECKED_MAX_KEY_LEN)?;
        check_len("value", value.len(), crate::batch::MAX_VALUE_LEN)?;
        self.acquire(key, true)?;
        self.record_write(key, Some(value));
        Ok(())
    }

    /// Removes `key` in this transaction (locking the key).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.check_active()?;
        check_len("key", key.len(), crate::batch::CHECKED_MAX_KEY_LEN)?;
        self.acquire(key, true)?;
        self.record_write(key, None);
        Ok(())
    }

    /// Sets `key` to `value` in this transaction without locking the key
    /// (pessimistic) or tracking it for the commit's check (optimistic):
    /// RocksDB's `PutUntracked`. For keys no other transaction writes,
    /// such as secondary-index entries that embed a locked primary key.
    pub fn put_untracked(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_active()?;
        check_len("key", key.len(), crate::batch::CHECKED_MAX_KEY_LEN)?;
        check_len("value", value.len(), crate::batch::MAX_VALUE_LEN)?;
        self.record_write(key, Some(value));
        Ok(())
    }

    /// Removes `key` in this transaction without locking or tracking it
    /// (RocksDB's `DeleteUntracked`; see [`Transaction::put_untracked`]).
    pub fn delete_untracked(&mut self, key: &[u8]) -> Result<()> {
        self.check_active()?;
        check_len("key", key.len(), crate::batch::CHECKED_MAX_KEY_LEN)?;
        self.record_write(key, None);
        Ok(())
    }

    /// The value of `key` as this transaction sees it: its own write if
    /// it made one, else the database at `opts.snapshot`, the
    /// transaction's snapshot, or now. Takes no lock.
    pub fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        Ok(self.get_into(opts, key, &mut buf)?.then_some(buf))
    }

    /// Like [`Transaction::get`], copying the value into `buf` (cleared
    /// first, its capacity reused); false when the key has no value.
    pub fn get_into(&self, opts: &ReadOptions, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        self.check_active()?;
        buf.clear();
        match self.writes.get(key) {
            Some(Some(v)) => {
                buf.extend_from_slice(v);
                Ok(true)
            }
            Some(None) => Ok(false),
            None => self.shared.db.get_into(&self.read_opts(opts), key, buf),
        }
    }

    /// Reads `key` and locks it, shared or exclusive (pessimistic; a key
    /// that does not exist is locked too), or tracks it for the commit's
    /// conflict check (optimistic).
    pub fn get_for_update(
        &mut self,
        opts: &ReadOptions,
        key: &[u8],
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        Ok(self
            .get_for_update_into(opts, key, exclusive, &mut buf)?
            .then_some(buf))
    }

    /// Like [`Transaction::get_for_update`], copying into `buf`.
    pub fn get_for_update_into(
        &mut self,
        opts: &ReadOptions,
        key: &[u8],
        exclusive: bool,
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        self.check_active()?;
        self.acquire(key, exclusive)?;
        self.get_into(opts, key, buf)
    }

    /// An iterator over this transaction's view: its writes so far merged
    /// over the database at `opts.snapshot`, the transaction's snapshot,
    /// or now. Later writes of the transaction are not seen by it.
    pub fn iter(&self, opts: &ReadOptions) -> Result<TransactionIterator> {
        self.check_active()?;
        let ropts = self.read_opts(opts);
        let base = self.shared.db.iter(&ropts)?;
        Ok(TransactionIterator::new(
            base,
            self.writes.clone(),
            &ropts,
            self.shared.db.prefix_extractor(),
        ))
    }

    /// Marks a point that `rollback_to_savepoint` returns to. Savepoints
    /// nest.
    pub fn set_savepoint(&mut self) {
        self.savepoints.push(SavePoint {
            undo_len: self.undo.len(),
            since_len: self.since_savepoint.len(),
            snapshot: self.snapshot.clone(),
        });
    }

    /// Undoes every write since the latest savepoint, releases the locks
    /// first taken since (pessimistic) or stops tracking those keys
    /// (optimistic), restores the snapshot, and removes the savepoint.
    /// `Error::InvalidArgument` when there is none.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.check_active()?;
        let sp = self
            .savepoints
            .pop()
            .ok_or_else(|| Error::invalid("rollback_to_savepoint: no savepoint is set"))?;
        if self.undo.len() > sp.undo_len {
            let w = Arc::make_mut(&mut self.writes);
            for (key, prev) in self.undo.drain(sp.undo_len..).rev() {
                match prev {
                    Some(p) => {
                        w.insert(key, p);
                    }
                    None => {
                        w.remove(&key);
                    }
                }
            }
        }
        for key in self.since_savepoint.drain(sp.since_len..) {
            match &self.shared.locks {
                Some(locks) => {
                    locks.unlock(self.id, &key);
                    self.locked.remove(&key);
                }
                None => {
                    self.tracked.remove(&key);
                }
            }
        }
        self.snapshot = sp.snapshot;
        if self.savepoints.is_empty() {
            self.undo.clear();
            self.since_savepoint.clear();
        }
        Ok(())
    }

    /// Removes the latest savepoint without undoing anything.
    /// `Error::InvalidArgument` when there is none.
    pub fn pop_savepoint(&mut self) -> Result<()> {
        self.check_active()?;
        self.savepoints
            .pop()
            .ok_or_else(|| Error::invalid("pop_savepoint: no savepoint is set"))?;
        if self.savepoints.is_empty() {
            self.undo.clear();
            self.since_savepoint.clear();
        }
        Ok(())
    }

    /// Writes the transaction's changes atomically (one WAL record, with
    /// the `WriteOptions` given at `begin`) and releases its locks.
    /// Optimistic: fails with `Error::Busy` if a tracked key changed since
    /// it was read. On any error nothing is written and the transaction
    /// is rolled back. After a `Closed` or `ReadOnly` error, as after any
    /// failed database write, whether the batch reached the WAL is known
    /// only after reopening: all of it or none.
    pub fn commit(&mut self) -> Result<()> {
        if self.state == State::Prepared {
            return self.decide(true);
        }
        self.check_active()?;
        let optimistic = self.shared.locks.is_none();
        let result = if self.writes.is_empty() && (!optimistic || self.tracked.is_empty()) {
            Ok(())
        } else {
            let mut batch = WriteBatch::new();
            self.append_writes(&mut batch);
            let check = optimistic.then(|| ConflictCheck {
                keys: self.tracked.drain().collect(),
            });
            self.shared.db.write_checked(&self.wopts, batch, check)
        };
        match result {
            Ok(()) => {
                self.finish(State::Committed);
                Ok(())
            }
            Err(e) => {
                self.finish(State::RolledBack);
                Err(e)
            }
        }
    }

    /// Discards the transaction's writes and releases its locks. A
    /// prepared transaction first logs its rollback.
    pub fn rollback(&mut self) -> Result<()> {
        if self.state == State::Prepared {
            return self.decide(false);
        }
        self.check_active()?;
        self.finish(State::RolledBack);
        Ok(())
    }

    /// Names the transaction for two-phase commit (RocksDB's `SetName`).
    /// The name must be non-empty and unique among the database's live
    /// named transactions, prepared ones included; it is set once.
    pub fn set_name(&mut self, name: &[u8]) -> Result<()> {
        self.check_active()?;
        if self.name.is_some() {
            return Err(Error::invalid("the transaction already has a name"));
        }
        if name.is_empty() {
            return Err(Error::invalid("a transaction name must not be empty"));
        }
        check_len(
            "transaction name",
            name.len(),
            crate::batch::CHECKED_MAX_KEY_LEN,
        )?;
        if !self.shared.names.lock().insert(name.to_vec()) {
            return Err(Error::invalid(format!(
                "a live transaction is already named \"{}\"",
                name.escape_ascii()
            )));
        }
        self.name = Some(name.to_vec());
        Ok(())
    }

    /// The name given by `set_name`.
    pub fn name(&self) -> Option<&[u8]> {
        self.name.as_deref()
    }

    /// Two-phase commit, first phase (pessimistic, named, WAL enabled):
    /// logs the transaction's writes as a prepare record (synced if its
    /// write options say so) without applying them. The transaction keeps
    /// its locks; after a crash, `TransactionDb::prepared_transactions`
    /// hands it back until `commit` or `rollback` decides it.
    pub fn prepare(&mut self) -> Result<()> {
        self.check_active()?;
        if self.shared.locks.is_none() {
            return Err(Error::invalid(
                "prepare needs a TransactionDb (optimistic transactions commit in one phase)",
            ));
        }
        let Some(name) = self.name.clone() else {
            return Err(Error::invalid("prepare needs a name (set_name)"));
        };
        if self.wopts.disable_wal {
            return Err(Error::invalid("prepare needs the WAL (disable_wal is set)"));
        }
        let mut batch = WriteBatch::new();
        batch.mark(Marker::Prepare, &name);
        self.append_writes(&mut batch);
        match self.shared.db.write(&self.wopts, batch) {
            Ok(()) => {
                self.savepoints.clear();
                self.undo.clear();
                self.since_savepoint.clear();
                self.state = State::Prepared;
                Ok(())
            }
            Err(e) => {
                self.finish(State::RolledBack);
                Err(e)
            }
        }
    }

    /// Logs the decision on a prepared transaction: a commit record with
    /// its writes (applied like any write), or a rollback record.
    fn decide(&mut self, commit: bool) -> Result<()> {
        let name = self.name.clone().unwrap_or_default();
        let mut batch = WriteBatch::new();
        if commit {
            batch.mark(Marker::Commit, &name);
            self.append_writes(&mut batch);
        } else {
            batch.mark(Marker::Rollback, &name);
        }
        let r = self.shared.db.write(&self.wopts, batch);
        // On failure the database is read-only and the transaction stays
        // prepared in the log: a reopen offers it again.
        self.finish(if commit && r.is_ok() {
            State::Committed
        } else {
            State::RolledBack
        });
        r
    }

    fn append_writes(&self, batch: &mut WriteBatch) {
        for (k, v) in self.writes.iter() {
            match v {
                Some(v) => batch.put(k, v),
                None => batch.delete(k),
            }
        }
    }

    fn finish(&mut self, state: State) {
        if let Some(locks) = &self.shared.locks {
            locks.unlock_all(self.id, self.locked.keys().map(Vec::as_slice));
        }
        self.locked.clear();
        self.tracked.clear();
        self.track_floor = None;
        self.writes = Arc::new(WriteSet::new());
        self.savepoints.clear();
        self.undo.clear();
        self.since_savepoint.clear();
        self.snapshot = None;
        if let Some(name) = self.name.take() {
            self.shared.names.lock().remove(&name);
        }
        self.state = state;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        match self.state {
            State::Active => self.finish(State::RolledBack),
            // Never decided by a drop: it keeps its locks and goes back to
            // `prepared_transactions`.
            State::Prepared => {
                let writes = std::mem::take(&mut self.writes);
                self.shared.undecided.lock().push(Undecided {
                    id: self.id,
                    name: self.name.take().unwrap_or_default(),
                    writes: Arc::try_unwrap(writes).unwrap_or_else(|a| (*a).clone()),
                    wopts: self.wopts,
                });
            }
            State::Committed | State::RolledBack => {}
        }
    }
}

fn check_len(what: &str, len: usize, limit: usize) -> Result<()> {
    if len > limit {
        return Err(Error::invalid(format!(
            "a {what} of {len} bytes is over the limit of {limit} bytes"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
