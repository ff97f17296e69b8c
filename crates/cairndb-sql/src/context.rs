//! The statement context: what planning and execution see of the
//! session that runs them: the database (and through it the catalog),
//! the current database, parameters, variables, warnings, the open
//! transaction and its durability, the account, and the scopes a
//! statement compiles in.
//!
//! `Session` owns one and drives statements through it; plan, exec,
//! expr and stmt take `&StmtCx` / `&mut StmtCx` and never call back up
//! into the session, so the arrows run session -> plan -> exec -> engine.
//!
//! Used by one thread at a time (the session's); the warnings and the
//! compile scopes sit behind locks only because evaluation sees `&StmtCx`
//! while it adds to them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cairndb::{Snapshot, Transaction, TransactionOptions};
use sqlparser::ast;

use crate::db::SqlDb;
use crate::error::{SqlError, SqlResult};
use crate::expr::{Env, Scope};
use crate::parse::statement::{parse_error, parser};
use crate::status::Handler;
use crate::types::Value;
use crate::vars;

/// Transaction isolation of consistent reads: the level the session
/// set, as `@@transaction_isolation` reports it. CairnDB implements two
/// behaviours; READ UNCOMMITTED reads as READ COMMITTED does, and
/// SERIALIZABLE as REPEATABLE READ does ([`Isolation::statement_snapshots`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// READ UNCOMMITTED: behaves as READ COMMITTED (no dirty reads).
    ReadUncommitted,
    /// READ COMMITTED: each statement reads the latest committed data.
    ReadCommitted,
    /// REPEATABLE READ: the transaction's reads share one snapshot.
    RepeatableRead,
    /// SERIALIZABLE: behaves as REPEATABLE READ (plain reads take no
    /// shared locks).
    Serializable,
}

impl Isolation {
    /// MySQL's spelling (`REPEATABLE-READ`).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "READ-UNCOMMITTED",
            Isolation::ReadCommitted => "READ-COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE-READ",
            Isolation::Serializable => "SERIALIZABLE",
        }
    }

    /// Whether each statement takes a fresh snapshot (READ COMMITTED and
    /// READ UNCOMMITTED) rather than the transaction keeping its first.
    pub fn statement_snapshots(self) -> bool {
        matches!(self, Isolation::ReadUncommitted | Isolation::ReadCommitted)
    }

    /// Reads a level: `READ COMMITTED`, `'READ-COMMITTED'`, or MySQL's
    /// numbers 0 to 3; `var` names the variable in the error.
    pub(crate) fn parse(s: &str, var: &str) -> SqlResult<Isolation> {
        let n = s
            .trim_matches(['\'', '"'])
            .to_ascii_uppercase()
            .replace(['-', '_'], " ");
        match n.trim() {
            "READ UNCOMMITTED" | "0" => Ok(Isolation::ReadUncommitted),
            "READ COMMITTED" | "1" => Ok(Isolation::ReadCommitted),
            "REPEATABLE READ" | "2" => Ok(Isolation::RepeatableRead),
            "SERIALIZABLE" | "3" => Ok(Isolation::Serializable),
            _ => Err(SqlError::new(
                1231,
                "42000",
                format!("Variable '{var}' can't be set to the value of '{s}'"),
            )),
        }
    }
}

/// The session's open transaction.
pub(crate) struct TxnState {
    pub(crate) txn: Transaction,
    /// The consistent-read snapshot (taken at the first plain read).
    pub(crate) snapshot: Option<Snapshot>,
    /// Named savepoints, oldest first; each has an engine savepoint.
    pub(crate) savepoints: Vec<String>,
    /// The shared schema lock, from the first write to the end.
    pub(crate) schema: Option<parking_lot::ArcRwLockReadGuard<parking_lot::RawRwLock, ()>>,
    /// Begun without a synced commit, its sync left to
    /// [`crate::Session::poll_durable`] (see [`crate::Session::set_deferred_durability`]).
    pub(crate) deferred: bool,
}

/// How the connection reached the server: its TLS session and the
/// server's TLS settings, for `SHOW STATUS LIKE 'Ssl%'` and the
/// `have_ssl` and `require_secure_transport` variables.
#[derive(Debug, Clone, Default)]
pub struct Transport {
    /// `Ssl_version` (`TLSv1.3`), empty without TLS.
    pub ssl_version: String,
    /// `Ssl_cipher` (`TLS_AES_256_GCM_SHA384`), empty without TLS.
    pub ssl_cipher: String,
    /// The server offers TLS (`have_ssl` YES, else DISABLED).
    pub have_ssl: bool,
    /// `require_secure_transport`.
    pub require_secure_transport: bool,
}

/// A note or warning of a statement: (level, code, message).
pub(crate) type Warning = (&'static str, u16, String);

/// MySQL's default max_error_count: warnings kept per statement (the
/// count goes on).
const MAX_WARNINGS_KEPT: usize = 1024;

/// A session's state as its statements see it ([`crate::Session`] owns
/// one).
pub(crate) struct StmtCx {
    pub(crate) db: Arc<SqlDb>,
    /// This session as the process list and `KILL` see it.
    pub(crate) info: Arc<crate::status::SessionInfo>,
    /// When the running SELECT must stop (`max_execution_time`).
    pub(crate) deadline: Option<std::time::Instant>,
    pub(crate) conn_id: u64,
    pub(crate) user: String,
    pub(crate) current_db: Option<String>,
    pub(crate) autocommit: bool,
    pub(crate) isolation: Isolation,
    pub(crate) txn: Option<TxnState>,
    pub(crate) vars: BTreeMap<String, Value>,
    pub(crate) user_vars: HashMap<String, Value>,
    pub(crate) last_insert_id: u64,
    pub(crate) found_rows: u64,
    pub(crate) row_count: i64,
    /// The last statement's notes and warnings: (level, code, message).
    /// Behind a lock so that evaluation (which sees `&StmtCx`) can add
    /// to it.
    pub(crate) warnings: parking_lot::Mutex<Vec<Warning>>,
    /// The running statement's parameters.
    pub(crate) params: Vec<Value>,
    /// The client asked for found rows (CLIENT_FOUND_ROWS): UPDATE
    /// reports matched rows instead of changed ones.
    pub(crate) client_found_rows: bool,
    /// Reused buffers of the executor.
    pub(crate) scratch: crate::exec::Scratch,
    /// Commits leave their sync to the driver
    /// ([`crate::Session::poll_durable`]).
    pub(crate) defer_durability: bool,
    /// The WAL position the last commits need synced before they are
    /// acknowledged, while deferred.
    pub(crate) pending_durable: Option<cairndb::WalPosition>,
    /// The connection's transport ([`crate::Session::set_transport`]).
    pub(crate) transport: Transport,
    /// The account the session logged in as; None: a session opened with
    /// [`crate::Session::new`], which holds every privilege.
    pub(crate) who: Option<crate::acl::Who>,
    /// That account's record as of `grants_epoch` (None: dropped since).
    pub(crate) grants: Option<Arc<crate::acl::Account>>,
    /// The accounts' epoch `grants` was read at.
    pub(crate) grants_epoch: u64,
    /// What is in scope while a statement compiles (CTEs, views).
    pub(crate) cx: parking_lot::Mutex<crate::cte::Cx>,
    /// `net_read_timeout` and `net_write_timeout`, seconds (kept apart
    /// from `vars`: the server reads them after every command).
    pub(crate) net_timeouts: (u32, u32),
    /// What the running statement's operators hold, and the limits
    /// (`max_session_mem_used`, `sort_buffer_size`; `exec/spill.rs`).
    pub(crate) mem: crate::spill::Mem,
}

impl StmtCx {
    /// The context of a new session of `user` on `db`.
    pub(crate) fn new(db: Arc<SqlDb>, user: &str) -> StmtCx {
        let conn_id = db.next_connection_id();
        let info = db.registry.add(conn_id, user);
        let mut vars = BTreeMap::new();
        let mut mem = crate::spill::Mem::default();
        let net_timeouts = db.globals.seed(&mut vars, &mut mem);
        StmtCx {
            mem,
            net_timeouts,
            info,
            db,
            conn_id,
            user: user.to_string(),
            current_db: None,
            autocommit: true,
            isolation: Isolation::RepeatableRead,
            txn: None,
            vars,
            user_vars: HashMap::new(),
            last_insert_id: 0,
            found_rows: 0,
            row_count: -1,
            warnings: parking_lot::Mutex::new(Vec::new()),
            params: Vec::new(),
            client_found_rows: false,
            scratch: Default::default(),
            defer_durability: false,
            pending_durable: None,
            deadline: None,
            transport: Transport::default(),
            who: None,
            grants: None,
            grants_epoch: 0,
            cx: parking_lot::Mutex::new(crate::cte::Cx::default()),
        }
    }

    /// The current database.
    pub(crate) fn database(&self) -> Option<&str> {
        self.current_db.as_deref()
    }

    /// Adds a warning of the running statement (SHOW WARNINGS, the OK
    /// packet's count).
    pub(crate) fn warn(&self, level: &'static str, code: u16, message: String) {
        let mut w = self.warnings.lock();
        if w.len() < MAX_WARNINGS_KEPT {
            w.push((level, code, message));
        }
    }

    /// Warnings of the running statement so far, for the OK packet.
    pub(crate) fn warning_count(&self) -> u16 {
        self.warnings.lock().len().min(usize::from(u16::MAX)) as u16
    }

    /// Error 1317 if the running statement was killed, 3024 if it ran
    /// past `max_execution_time`. Executors call it between rows.
    pub(crate) fn check_interrupt(&self) -> SqlResult<()> {
        if self.info.interrupted() {
            return Err(SqlError::new(
                1317,
                "70100",
                "Query execution was interrupted",
            ));
        }
        if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            return Err(SqlError::new(
                3024,
                "HY000",
                "Query execution was interrupted, maximum statement execution time exceeded",
            ));
        }
        Ok(())
    }

    /// Runs a writing statement: in the open transaction under a
    /// statement savepoint, or in a transaction of its own (autocommit).
    pub(crate) fn with_write_txn<T>(
        &mut self,
        f: impl FnOnce(&mut StmtCx) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let own = self.txn.is_none() && self.autocommit;
        if self.txn.is_none() {
            self.begin_txn(false);
        }
        let lock = self.db.schema_lock.clone();
        if let Some(t) = self.txn.as_mut() {
            if t.schema.is_none() {
                // Free but for DDL: only a wait for DDL goes through the
                // engine's blocking hook (a hand-off of a network thread).
                let guard = lock
                    .try_read_arc()
                    .unwrap_or_else(|| cairndb::blocking(|| lock.read_arc()));
                t.schema = Some(guard);
            }
            t.txn.set_savepoint();
        }
        let r = f(self);
        match r {
            Ok(v) => {
                if let Some(t) = self.txn.as_mut() {
                    let _ = t.txn.pop_savepoint();
                }
                if own {
                    self.commit()?;
                }
                Ok(v)
            }
            Err(e) => {
                if e.code == 1213 || own {
                    // A deadlock victim is rolled back whole (the engine
                    // already released its locks); so is a statement that
                    // was its own transaction.
                    if self.txn.take().is_some() {
                        self.info.handler_one(Handler::Rollback);
                    }
                } else if let Some(t) = self.txn.as_mut() {
                    if t.txn.rollback_to_savepoint().is_err() {
                        self.txn = None;
                    }
                }
                Err(e)
            }
        }
    }

    pub(crate) fn begin_txn(&mut self, _explicit: bool) {
        let mut wopts = self.db.commit_options();
        let deferred = wopts.sync && self.defer_durability;
        if deferred {
            wopts.sync = false;
        }
        let mut txn = self.db.db.begin(
            &wopts,
            &TransactionOptions {
                lock_timeout: Some(std::time::Duration::from_secs(vars::lock_wait_timeout(
                    self,
                ))),
                ..Default::default()
            },
        );
        // Its row lock waits stop for KILL and max_execution_time.
        txn.set_lock_wait_hook(Some(self.info.clone()));
        self.txn = Some(TxnState {
            txn,
            snapshot: None,
            savepoints: Vec::new(),
            schema: None,
            deferred,
        });
    }

    /// Commits the open transaction, if any.
    pub(crate) fn commit(&mut self) -> SqlResult<()> {
        if let Some(mut t) = self.txn.take() {
            let wrote = t.txn.num_writes() > 0;
            if let Err(e) = t.txn.commit() {
                // The transaction is gone: a rollback, as MySQL counts it.
                self.info.handler_one(Handler::Rollback);
                return Err(e.into());
            }
            self.info.handler_one(Handler::Commit);
            if wrote && t.deferred {
                // At or past the commit's record (see `Db::log_position`).
                // The first of concurrent commits syncs here, at once; the
                // others leave the wait to the driver.
                let engine = self.db.db.db();
                let pos = engine.log_position();
                if !engine.try_sync_durable(pos)? {
                    self.pending_durable = Some(self.pending_durable.map_or(pos, |p| p.max(pos)));
                }
            }
        }
        Ok(())
    }

    /// The snapshot plain reads use now: the transaction's (taken on
    /// first use under REPEATABLE READ), or None (latest).
    pub(crate) fn read_snapshot(&mut self) -> Option<Snapshot> {
        let iso = self.isolation;
        let db = self.db.clone();
        let t = self.txn.as_mut()?;
        if iso.statement_snapshots() {
            return Some(db.db.db().snapshot());
        }
        Some(
            t.snapshot
                .get_or_insert_with(|| db.db.db().snapshot())
                .clone(),
        )
    }

    /// Evaluates a constant expression (SET values) in this session.
    pub(crate) fn eval_const(&mut self, text: &str) -> SqlResult<Value> {
        let e = parser(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(parse_error)?;
        self.eval_const_ast(&e, text)
    }

    /// [`Self::eval_const`] of a parsed expression (`text`: how it was
    /// written, for a bare word). Evaluating the tree itself keeps string
    /// literals as they were read: printing a tree back to text does not
    /// escape their backslashes again.
    pub(crate) fn eval_const_ast(&mut self, e: &ast::Expr, text: &str) -> SqlResult<Value> {
        let scope = Scope::default();
        let mut c = crate::expr::Compiler::new(&scope);
        let x = c.compile(e);
        let x = match x {
            Ok(x) => x,
            // `SET x = word`: a bare word is a string value.
            Err(err) if err.code == 1054 => {
                return Ok(Value::Str(text.trim_matches('`').as_bytes().to_vec()))
            }
            Err(err) => return Err(err),
        };
        crate::expr::eval(&x, &[], &[], &[], self)
    }
}

impl Env for StmtCx {
    fn params(&self) -> &[Value] {
        &self.params
    }
    fn check_interrupt(&self) -> SqlResult<()> {
        StmtCx::check_interrupt(self)
    }
    fn sys_var(&self, name: &str) -> SqlResult<Value> {
        vars::get(self, name)
    }
    fn user_var(&self, name: &str) -> Value {
        self.user_vars.get(name).cloned().unwrap_or(Value::Null)
    }
    fn database(&self) -> Option<String> {
        self.current_db.clone()
    }
    fn connection_id(&self) -> u64 {
        self.conn_id
    }
    fn last_insert_id(&self) -> u64 {
        self.last_insert_id
    }
    fn user(&self) -> String {
        crate::acl::session_user(self)
    }
    fn current_user(&self) -> String {
        crate::acl::current_user(self)
    }
    fn found_rows(&self) -> u64 {
        self.found_rows
    }
    fn row_count(&self) -> i64 {
        self.row_count
    }
    fn warn(&self, code: u16, message: String) {
        StmtCx::warn(self, "Warning", code, message);
    }
}
