//! `SqlDb`: one CairnDB database holding SQL databases and tables, the
//! catalog cache, AUTO_INCREMENT and hidden row-id counters, and the
//! durability setting of commits.
//!
//! Locking: `catalog` (RwLock) is read for an `Arc<TableDef>` copy and
//! released before any engine call; `ddl_lock` serialises DDL (held
//! across its engine writes) and is taken before `schema_lock`, which
//! writing transactions hold shared to their end and DDL exclusively;
//! `counters` is a leaf taken briefly to reserve AUTO_INCREMENT values.
//! Statements hold only a shared `schema_lock` while they wait for row
//! locks. `acl` (RwLock) is read to clone an `Arc` of the accounts and
//! written by account statements, which hold `ddl_lock` (`acl.rs`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cairndb::{
    Options, ReadOptions, TransactionDb, TransactionDbOptions, TransactionOptions, WriteOptions,
};
use parking_lot::{Mutex, RwLock};

use crate::catalog::{self, Catalog};
use crate::error::SqlResult;
use crate::keys;
use crate::row::TableDef;

/// When commits reach the disk (MyRocks' `rocksdb_flush_log_at_trx_commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushLogAtCommit {
    /// 0: never synced by a commit (the WAL is written; the OS decides).
    Never,
    /// 1: every commit is synced before it is acknowledged (the default).
    EveryCommit,
    /// 2: synced in the background about once a second.
    EverySecond,
}

/// Options of the SQL layer.
#[derive(Clone)]
pub struct SqlOptions {
    /// Engine options.
    pub engine: Options,
    /// Commit durability.
    pub flush_log_at_trx_commit: FlushLogAtCommit,
    /// Default lock wait timeout (`innodb_lock_wait_timeout`), seconds.
    pub lock_wait_timeout_secs: u64,
}

impl Default for SqlOptions {
    fn default() -> Self {
        SqlOptions {
            engine: Options::default(),
            flush_log_at_trx_commit: FlushLogAtCommit::EveryCommit,
            lock_wait_timeout_secs: 50,
        }
    }
}

/// The SQL database.
pub struct SqlDb {
    pub(crate) db: TransactionDb,
    pub(crate) catalog: RwLock<Catalog>,
    pub(crate) ddl_lock: Mutex<()>,
    /// Held shared by every transaction that writes, from its first write
    /// to its end, and exclusively by DDL: a schema change waits for the
    /// writers under the old schema to finish (MySQL's metadata lock), so
    /// no transaction commits rows without the entries of an index built
    /// meanwhile.
    pub(crate) schema_lock: Arc<RwLock<()>>,
    /// Bumped by every DDL statement: cached plans compare it.
    pub(crate) schema_epoch: AtomicU64,
    /// Next AUTO_INCREMENT value (or hidden row id) per primary index id,
    /// loaded lazily from the table's largest key.
    pub(crate) counters: Mutex<HashMap<u32, u64>>,
    pub(crate) opts: SqlOptions,
    next_conn: AtomicU64,
    /// Live sessions and status counters.
    pub(crate) registry: crate::status::Registry,
    /// Called at each durable step of a table copy (tests pull the plug
    /// there); None in service.
    ddl_hook: Mutex<Option<DdlHook>>,
    /// The accounts (`acl.rs`): read to clone the `Arc`, written by
    /// account statements under `ddl_lock`.
    pub(crate) acl: RwLock<Arc<crate::acl::Acl>>,
    /// Bumped by every change of the accounts: sessions compare it with
    /// the epoch of the account record they hold.
    pub(crate) acl_epoch: AtomicU64,
    /// The global variables that act, and the query logs.
    pub(crate) globals: crate::globals::Globals,
    /// Table statistics as of each table's last ANALYZE TABLE.
    pub(crate) stats: crate::stats::Stats,
}

/// A function told the name of each durable step of a table copy.
pub type DdlHook = Arc<dyn Fn(&str) + Send + Sync>;

impl SqlDb {
    /// Opens (or creates) the SQL database in `dir`.
    pub fn open(dir: impl AsRef<Path>, opts: SqlOptions) -> SqlResult<Arc<SqlDb>> {
        let globals = crate::globals::Globals::new(dir.as_ref());
        let mut engine = opts.engine.clone();
        if opts.flush_log_at_trx_commit == FlushLogAtCommit::EverySecond
            && engine.wal_sync_interval.is_zero()
        {
            engine.wal_sync_interval = std::time::Duration::from_secs(1);
        }
        let db = TransactionDb::open(
            dir,
            engine,
            TransactionDbOptions {
                transaction_lock_timeout: std::time::Duration::from_secs(
                    opts.lock_wait_timeout_secs,
                ),
                ..Default::default()
            },
        )?;
        // Undecided two-phase transactions have no coordinator here.
        for mut t in db.prepared_transactions() {
            t.rollback()?;
        }
        let catalog = Catalog::load(&db)?;
        let acl = crate::acl::Acl::load(&db)?;
        // Statistics of tables that no longer exist are dropped, unless
        // some dictionary entry could not be read (its ids are unknown).
        let live: std::collections::HashSet<u32> = catalog
            .dbs
            .values()
            .flat_map(|d| d.tables.values())
            .map(|t| t.primary.id)
            .collect();
        let stats = crate::stats::Stats::load(&db, &live, catalog.damaged.is_empty())?;
        let sqldb = Arc::new(SqlDb {
            db,
            catalog: RwLock::new(catalog),
            ddl_lock: Mutex::new(()),
            schema_lock: Arc::new(RwLock::new(())),
            schema_epoch: AtomicU64::new(1),
            counters: Mutex::new(HashMap::new()),
            opts,
            next_conn: AtomicU64::new(1),
            registry: crate::status::Registry::new(),
            ddl_hook: Mutex::new(None),
            acl: RwLock::new(Arc::new(acl)),
            acl_epoch: AtomicU64::new(1),
            globals,
            stats,
        });
        // With an entry unread, its indexes' ids are unknown: sweeping
        // would delete its rows.
        if sqldb.catalog.read().damaged.is_empty() {
            sqldb.sweep_orphans()?;
        }
        Ok(sqldb)
    }

    /// Sets (or clears) the function called at each durable step of a
    /// DDL statement. ALTER TABLE that copies rows or builds indexes:
    /// `alter:ids` (new index ids recorded), `alter:copied` (rows and
    /// entries written, not yet switched), `alter:switched` (the
    /// dictionary names the new definition), `alter:done` (old keys
    /// deleted). CREATE INDEX: `create_index:ids`, `backfill:batch`
    /// (each 10,000 entries written), `create_index:filled`,
    /// `create_index:switched`. DROP TABLE, DROP INDEX, DROP DATABASE and
    /// TRUNCATE: `<statement>:switched` (the dictionary change synced),
    /// `delete:batch` (each 10,000 old keys deleted), `<statement>:done`.
    /// For crash tests; it runs on the DDL's thread under its locks.
    #[doc(hidden)]
    pub fn set_ddl_hook(&self, hook: Option<DdlHook>) {
        *self.ddl_hook.lock() = hook;
    }

    /// Tells the DDL hook, if any, that `step` was reached.
    pub(crate) fn ddl_step(&self, step: &str) {
        let hook = self.ddl_hook.lock().clone();
        if let Some(h) = hook {
            h(step);
        }
    }

    /// Every live session, by id (`SHOW PROCESSLIST`).
    pub fn processes(&self) -> Vec<crate::status::Process> {
        self.registry.list()
    }

    /// Global status variables, MySQL's names (`SHOW GLOBAL STATUS`).
    pub fn global_status(&self) -> Vec<(&'static str, u64)> {
        self.registry.status()
    }

    /// Sets (or clears) what the network server does for `FLUSH HOSTS`
    /// and `SET GLOBAL max_connect_errors`.
    pub fn set_server_hooks(&self, hooks: Option<crate::ServerHooks>) {
        self.globals.set_hooks(hooks);
    }

    /// Sets a global variable at start (a server option), as `SET
    /// GLOBAL name = value` would without a privilege check: the query
    /// logs' variables, `long_query_time`, `max_connect_errors`, the net
    /// timeouts. Unknown names are 1193.
    pub fn set_global_variable(&self, name: &str, value: &str) -> SqlResult<()> {
        let name = name.trim().to_ascii_lowercase().replace('-', "_");
        if !crate::globals::owns(&name) {
            return Err(crate::SqlError::new(
                1193,
                "HY000",
                format!("Unknown system variable '{name}'"),
            ));
        }
        self.globals
            .set(&name, &crate::types::Value::Str(value.as_bytes().to_vec()))
    }

    /// The global value of a variable set by [`SqlDb::set_global_variable`].
    pub fn global_variable(&self, name: &str) -> Option<crate::types::Value> {
        self.globals.get(name)
    }

    /// The server's TCP port (`@@port`, the query logs' header).
    pub fn set_server_port(&self, port: u16) {
        self.globals.set_port(port);
    }

    /// Sets where the network server's counters are read for `SHOW
    /// STATUS` (`Aborted_clients`, `Aborted_connects`, ...); a name the
    /// SQL layer counts too (`Bytes_received`) is added to its value.
    pub fn set_status_source(&self, source: Option<crate::status::StatusSource>) {
        self.registry.set_source(source);
    }

    /// The dictionary entries that could not be read at open, each with
    /// why (their tables are not served; their keys are kept). Empty when
    /// the whole dictionary was read.
    pub fn damaged_entries(&self) -> Vec<String> {
        let mut v = self.catalog.read().damaged.clone();
        v.extend(self.acl.read().damaged.iter().cloned());
        v
    }

    /// Deletes the keys of index ids no table owns: left by a crash
    /// between a DROP's dictionary change and its data deletion, or during
    /// a CREATE INDEX back-fill. One seek per distinct id present.
    fn sweep_orphans(&self) -> SqlResult<u64> {
        let live: std::collections::HashSet<u32> = {
            let cat = self.catalog.read();
            cat.dbs
                .values()
                .flat_map(|d| d.tables.values())
                .flat_map(|t| std::iter::once(t.primary.id).chain(t.secondary.iter().map(|i| i.id)))
                .collect()
        };
        let mut swept = 0;
        let mut id = catalog::FIRST_USER_INDEX_ID;
        loop {
            let mut lo = Vec::new();
            keys::put_index_id(&mut lo, id);
            let mut it = self.db.db().iter(&ReadOptions {
                iterate_lower_bound: Some(lo.clone()),
                ..Default::default()
            })?;
            it.seek(&lo);
            if !it.valid() {
                it.status()?;
                return Ok(swept);
            }
            let Some(found) = keys::index_id(it.key()) else {
                return Ok(swept);
            };
            drop(it);
            if !live.contains(&found) {
                swept += self.delete_index_data(&[found])?;
            }
            match found.checked_add(1) {
                Some(n) => id = n,
                None => return Ok(swept),
            }
        }
    }

    /// An iterator over every key of index `id`, at its first: for
    /// whole-index scans (back-fill, table copy, statistics, bulk delete),
    /// whose blocks would push everything useful out of the block cache
    /// (and a full cache of them is memory a server under a cap does not
    /// have), so they are read without filling it.
    pub(crate) fn scan_index(&self, id: u32) -> SqlResult<cairndb::DbIterator> {
        let (lo, hi) = keys::index_bounds(id);
        let mut it = self.db.db().iter(&ReadOptions {
            iterate_lower_bound: Some(lo.clone()),
            iterate_upper_bound: Some(hi),
            fill_cache_off: true,
            ..Default::default()
        })?;
        it.seek(&lo);
        Ok(it)
    }

    /// The engine database underneath.
    pub fn engine(&self) -> &TransactionDb {
        &self.db
    }

    /// Flushes and closes the engine.
    pub fn close(&self) -> SqlResult<()> {
        self.db.close()?;
        Ok(())
    }

    /// A new connection id.
    pub fn next_connection_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Write options of a commit under the durability setting.
    pub(crate) fn commit_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.opts.flush_log_at_trx_commit == FlushLogAtCommit::EveryCommit,
            disable_wal: false,
        }
    }

    /// A table by database and name.
    pub fn table(&self, db: &str, name: &str) -> SqlResult<Arc<TableDef>> {
        self.catalog.read().table(db, name)
    }

    /// The current schema epoch.
    pub(crate) fn epoch(&self) -> u64 {
        self.schema_epoch.load(Ordering::Acquire)
    }

    /// Reserves `n` consecutive AUTO_INCREMENT values (or hidden row ids)
    /// for `t`, at least `floor`; returns the first.
    pub(crate) fn reserve_ids(&self, t: &TableDef, n: u64, floor: u64) -> SqlResult<u64> {
        let mut c = self.counters.lock();
        let next = match c.get(&t.primary.id) {
            Some(v) => *v,
            None => self.load_counter(t)?,
        };
        let first = next.max(floor).max(1);
        c.insert(t.primary.id, first + n);
        Ok(first)
    }

    /// Records that `v` was used explicitly, so later generated values
    /// come after it.
    pub(crate) fn note_explicit_id(&self, t: &TableDef, v: u64) -> SqlResult<()> {
        let mut c = self.counters.lock();
        let next = match c.get(&t.primary.id) {
            Some(v) => *v,
            None => self.load_counter(t)?,
        };
        if v >= next {
            c.insert(t.primary.id, v.saturating_add(1));
        }
        Ok(())
    }

    /// One more than the largest value of the table's auto-increment
    /// column (or hidden row id) stored, read from the last key, and at
    /// least the table's `AUTO_INCREMENT = n` floor.
    fn load_counter(&self, t: &TableDef) -> SqlResult<u64> {
        Ok(self.stored_counter(t)?.max(t.auto_increment_floor))
    }

    /// The next AUTO_INCREMENT value (or hidden row id) of `t` now: the
    /// one in memory, else as loaded (ALTER TABLE keeps it across a copy).
    pub(crate) fn current_counter(&self, t: &TableDef) -> SqlResult<u64> {
        let c = self.counters.lock().get(&t.primary.id).copied();
        match c {
            Some(v) => Ok(v),
            None => self.load_counter(t),
        }
    }

    fn stored_counter(&self, t: &TableDef) -> SqlResult<u64> {
        let mut lo = Vec::new();
        keys::put_index_id(&mut lo, t.primary.id);
        let mut hi = Vec::new();
        keys::put_index_id(&mut hi, t.primary.id + 1);
        let mut it = self.db.db().iter(&ReadOptions {
            iterate_lower_bound: Some(lo),
            iterate_upper_bound: Some(hi),
            ..Default::default()
        })?;
        it.seek_to_last();
        if !it.valid() {
            it.status()?;
            return Ok(1);
        }
        let mut k = it.key().get(keys::INDEX_ID_LEN..).unwrap_or_default();
        if t.hidden_pk {
            return Ok(keys::get_uint(&mut k, 8).unwrap_or(0) + 1);
        }
        // The auto-increment column leads the primary key (MySQL requires
        // it to lead some index; CairnDB requires the primary key).
        let Some(&c0) = t.primary.columns.first() else {
            return Ok(1);
        };
        let col = &t.columns[c0];
        let v = crate::row::get_key_value(&mut k, &col.ty, col.nullable);
        Ok(match v {
            Some(crate::types::Value::Int(i)) => (i.max(0) as u64) + 1,
            Some(crate::types::Value::UInt(u)) => u + 1,
            _ => 1,
        })
    }

    /// Runs `f` in a transaction of its own and commits it (synced).
    pub(crate) fn with_txn<T>(
        &self,
        f: impl FnOnce(&mut cairndb::Transaction) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let mut t = self.db.begin(
            &WriteOptions {
                sync: true,
                disable_wal: false,
            },
            &TransactionOptions::default(),
        );
        let r = f(&mut t)?;
        t.commit()?;
        Ok(r)
    }

    /// Raises the catalog's next index id to `next` (a DDL statement that
    /// recorded ids as used and then failed); the schema is unchanged.
    pub(crate) fn note_next_index_id(&self, next: u32) {
        let mut c = self.catalog.write();
        c.next_index_id = c.next_index_id.max(next);
    }

    /// Installs a changed catalog (DDL), bumping the schema epoch.
    pub(crate) fn install_catalog(&self, mut cat: Catalog) {
        cat.link_foreign_keys();
        *self.catalog.write() = cat;
        self.schema_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Compacts the key range of each of the given index ids down to the
    /// last level (OPTIMIZE TABLE).
    pub(crate) fn compact_index_data(&self, ids: &[u32]) -> SqlResult<()> {
        for &id in ids {
            let mut lo = Vec::new();
            keys::put_index_id(&mut lo, id);
            let mut hi = Vec::new();
            keys::put_index_id(&mut hi, id + 1);
            self.db.db().compact_range(Some(&lo), Some(&hi))?;
        }
        Ok(())
    }

    /// Deletes every key of the given index ids (DROP TABLE, TRUNCATE,
    /// DROP INDEX), in batches.
    pub(crate) fn delete_index_data(&self, ids: &[u32]) -> SqlResult<u64> {
        let mut n = 0u64;
        for &id in ids {
            loop {
                let mut it = self.scan_index(id)?;
                let mut batch = cairndb::WriteBatch::new();
                let mut count = 0;
                while it.valid() && count < 10_000 {
                    batch.delete(it.key());
                    count += 1;
                    it.next();
                }
                it.status()?;
                if count == 0 {
                    break;
                }
                n += count;
                self.db.db().write(&WriteOptions::default(), batch)?;
                self.ddl_step("delete:batch");
            }
        }
        Ok(n)
    }
}

/// Writes a dictionary entry inside `t`.
pub(crate) fn put_dict(t: &mut cairndb::Transaction, key: &[u8], value: &[u8]) -> SqlResult<()> {
    t.put(key, value)?;
    Ok(())
}

/// Makes sure the dictionary has its version and next-id entries.
pub(crate) fn dict_header(t: &mut cairndb::Transaction, next_id: u32) -> SqlResult<()> {
    put_dict(t, &catalog::dict_version_key(), &[catalog::DICT_VERSION])?;
    put_dict(t, &catalog::next_id_key(), &next_id.to_be_bytes())
}

impl std::fmt::Debug for SqlDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlDb").finish()
    }
}
