//! A client session: its current database, variables, transaction and
//! prepared statements, and the dispatch of each statement.
//!
//! Transactions follow InnoDB: with autocommit on, each writing statement
//! is a transaction of its own and reads see the latest committed data;
//! in an explicit transaction, plain SELECTs read a snapshot taken at the
//! first read (REPEATABLE READ) or at each statement (READ COMMITTED),
//! while writes and locking reads lock the rows and read the latest
//! committed version. A failed statement is rolled back alone (an engine
//! savepoint around each statement); a deadlock rolls back the whole
//! transaction.
//!
//! A session is used by one thread at a time; it holds no lock between
//! calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cairndb::{Snapshot, Transaction, TransactionOptions};
use sqlparser::ast::{self, Statement};
use sqlparser::parser::Parser;

use crate::db::SqlDb;
use crate::dialect::CairnDialect;
use crate::error::{SqlError, SqlResult};
use crate::expr::{Env, Scope};
use crate::output::{ColumnInfo, Output};
use crate::preparse::{classify, Pre, SetItem, VarScope};
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
    /// [`Session::poll_durable`] (see [`Session::set_deferred_durability`]).
    pub(crate) deferred: bool,
}

/// MySQL's ER_TABLE_DEF_CHANGED: a write's plan was compiled before a
/// DDL statement it then waited for. The statement is compiled again (up
/// to [`PLAN_ATTEMPTS`] times) before the client sees it.
const SCHEMA_CHANGED: u16 = 1412;

/// How many times a statement is compiled again after [`SCHEMA_CHANGED`].
const PLAN_ATTEMPTS: u32 = 8;

/// A prepared statement.
pub(crate) struct Prepared {
    pub(crate) pre: Pre,
    pub(crate) ast: Option<Statement>,
    /// The ORDER BY of an UPDATE (kept apart from `ast`).
    pub(crate) order: Vec<ast::OrderByExpr>,
    pub(crate) params: usize,
    /// The compiled plan, with the schema epoch and database it was made
    /// under.
    pub(crate) plan: Option<(u64, Option<String>, Arc<crate::plan::Plan>)>,
    /// How deep its trees may be ([`crate::depth::bound`]): executing it
    /// and dropping it need the stack that depth takes.
    pub(crate) levels: usize,
    /// Its text, shown in the process list while it runs.
    pub(crate) text: Arc<str>,
    /// Its kind, counted in `Com_*` at each execution.
    pub(crate) com: crate::status::Com,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // A deep tree's drop recurses as deep as the tree.
        let (ast, plan, order) = (
            self.ast.take(),
            self.plan.take(),
            std::mem::take(&mut self.order),
        );
        crate::depth::on_stack(self.levels, move || drop((ast, plan, order)));
    }
}

/// What `prepare` reports.
#[derive(Debug, Clone)]
pub struct PrepareInfo {
    /// Statement id.
    pub id: u32,
    /// Number of `?` parameters.
    pub params: u16,
    /// Result columns (empty for statements without a result set).
    pub columns: Vec<ColumnInfo>,
}

/// The first id of statements prepared with SQL's `PREPARE` (the
/// protocol's ids count up from 1).
const NAMED_IDS: u32 = 0x8000_0000;

/// The most statements one session may prepare with SQL's `PREPARE`
/// (MySQL's `max_prepared_stmt_count` default, as the protocol's limit).
const MAX_NAMED: usize = 16_382;

/// One client session.
pub struct Session {
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
    /// Behind a lock so that evaluation (which sees `&Session`) can add
    /// to it.
    pub(crate) warnings: parking_lot::Mutex<Vec<Warning>>,
    pub(crate) params: Vec<Value>,
    pub(crate) prepared: HashMap<u32, Prepared>,
    next_stmt: u32,
    /// Statements prepared with SQL's `PREPARE name`: lower-case name to
    /// their id in `prepared` (ids from [`NAMED_IDS`] up, apart from the
    /// protocol's).
    named: HashMap<String, u32>,
    next_named: u32,
    /// The client asked for found rows (CLIENT_FOUND_ROWS): UPDATE
    /// reports matched rows instead of changed ones.
    pub client_found_rows: bool,
    /// Reused buffers of the executor.
    pub(crate) scratch: crate::exec::Scratch,
    /// Commits leave their sync to the driver ([`Session::poll_durable`]).
    defer_durability: bool,
    /// The WAL position the last commits need synced before they are
    /// acknowledged, while deferred.
    pending_durable: Option<cairndb::WalPosition>,
    /// The connection's transport ([`Session::set_transport`]).
    pub(crate) transport: Transport,
    /// The account the session logged in as; None: a session opened with
    /// [`Session::new`], which holds every privilege.
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
}

/// Counts the rows a statement sends, for the slow log (used only while
/// the slow log is on).
struct RowCount<'a> {
    out: &'a mut dyn Output,
    rows: u64,
}

impl Output for RowCount<'_> {
    fn ok(&mut self, affected: u64, last_insert_id: u64, warnings: u16, info: &str) {
        self.out.ok(affected, last_insert_id, warnings, info);
    }
    fn columns(&mut self, cols: &[ColumnInfo]) {
        self.out.columns(cols);
    }
    fn row(&mut self, values: &[Value]) {
        self.rows += 1;
        self.out.row(values);
    }
    fn end(&mut self, warnings: u16) {
        self.out.end(warnings);
    }
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

/// The most rows of an INSERT that [`Session::is_quick_write`] admits.
const QUICK_INSERT_ROWS: usize = 16;

/// MySQL's default max_error_count: warnings kept per statement (the
/// count goes on).
const MAX_WARNINGS_KEPT: usize = 1024;

impl Session {
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

    /// A new session of `user` on `db` that holds every privilege, for
    /// embedding, tools and tests: no account is looked up. A server opens
    /// its sessions with [`Session::login`].
    pub fn new(db: Arc<SqlDb>, user: &str) -> Session {
        let conn_id = db.next_connection_id();
        let info = db.registry.add(conn_id, user);
        let mut vars = BTreeMap::new();
        let net_timeouts = db.globals.seed(&mut vars);
        Session {
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
            prepared: HashMap::new(),
            next_stmt: 1,
            named: HashMap::new(),
            next_named: NAMED_IDS,
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

    /// A session of the account that `user` connecting from `client_host`
    /// (an IP address) matches, its privileges checked on every statement;
    /// 1045 when no account matches. The password was checked by the
    /// caller (the protocol layer, against [`SqlDb::lookup_account`]).
    pub fn login(db: Arc<SqlDb>, user: &str, client_host: &str) -> SqlResult<Session> {
        let (who, grants, epoch) = crate::acl::login(&db, user, client_host)?;
        let mut s = Session::new(db, user);
        // The account's own limit, else the global one (MySQL's order
        // and errors: 1226 for the account's, 1203 for the global).
        let own = grants.max_user_connections;
        let limit = if own > 0 {
            own
        } else {
            s.db.globals.max_user_connections()
        };
        if !s
            .db
            .registry
            .admit(s.conn_id, (&grants.user, &grants.host), limit)
        {
            if own == 0 {
                return Err(SqlError::new(
                    1203,
                    "42000",
                    format!(
                        "User {} already has more than 'max_user_connections' active connections",
                        grants.user
                    ),
                ));
            }
            return Err(SqlError::new(
                1226,
                "42000",
                format!(
                    "User '{}' has exceeded the 'max_user_connections' resource (current value: {limit})",
                    grants.user
                ),
            ));
        }
        let limits = crate::acl::hourly_limits(&grants);
        if limits.any() {
            let account = (grants.user.as_str(), grants.host.as_str());
            if let Err((what, n)) = s.db.registry.charge_hourly(account, limits, true, false) {
                return Err(limit_reached(&grants.user, what, n));
            }
        }
        s.who = Some(who);
        s.grants = Some(grants);
        s.grants_epoch = epoch;
        Ok(s)
    }

    /// Counts a statement against the account's hourly limits (MySQL's
    /// `max_questions` and `max_updates`): 1226 when it would go over
    /// one. Costs nothing for an account without them.
    fn charge_statement(&self, sql: &str) -> SqlResult<()> {
        let Some(g) = &self.grants else {
            return Ok(());
        };
        let limits = crate::acl::hourly_limits(g);
        if limits.questions == 0 && limits.updates == 0 {
            return Ok(());
        }
        let update = limits.updates > 0 && crate::status::changes_data(sql);
        self.db
            .registry
            .charge_hourly((&g.user, &g.host), limits, false, update)
            .map_err(|(what, n)| limit_reached(&g.user, what, n))
    }

    /// A new session of the same user and account (its privileges), and
    /// nothing else of this one: what replaces a session a panic left.
    pub fn fresh(&self) -> Session {
        let mut s = Session::new(self.db.clone(), &self.user);
        if let Some(g) = &self.grants {
            // It takes the place of this one: counted, never refused.
            s.db.registry.admit(s.conn_id, (&g.user, &g.host), 0);
        }
        s.who = self.who.clone();
        s.grants = self.grants.clone();
        s.grants_epoch = self.grants_epoch;
        s
    }

    /// Sets what the connection's transport is (kept across
    /// COM_RESET_CONNECTION).
    pub fn set_transport(&mut self, t: Transport) {
        self.transport = t;
    }

    /// What the connection's transport is.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The session's own `wait_timeout`, when it set one (else the
    /// server's applies).
    pub fn wait_timeout(&self) -> Option<std::time::Duration> {
        let v = self.vars.get("wait_timeout")?;
        let secs = crate::expr::to_i64(v)?.clamp(1, 31_536_000);
        Some(std::time::Duration::from_secs(secs as u64))
    }

    /// The session's `net_read_timeout` and `net_write_timeout`: how
    /// long the server waits for the rest of a command the client began
    /// sending, and for the client to take an answer.
    pub fn net_timeouts(&self) -> (std::time::Duration, std::time::Duration) {
        let (r, w) = self.net_timeouts;
        (
            std::time::Duration::from_secs(u64::from(r)),
            std::time::Duration::from_secs(u64::from(w)),
        )
    }

    /// Whether the general log is written now.
    pub fn general_log_on(&self) -> bool {
        self.db.globals.logs.flags() & crate::querylog::GENERAL != 0
    }

    /// Writes a general log line for this connection (`Connect`, `Init
    /// DB`, `Quit`, ...) if the general log is on.
    pub fn log_general(&self, command: &str, argument: &str) {
        if self.db.globals.logs.flags() & crate::querylog::GENERAL != 0 {
            self.db
                .globals
                .logs
                .general(self.conn_id, command, argument);
        }
    }

    /// A slow log entry for the statement `text` that took `took`, sent
    /// `rows`, waited `lock_time` for row locks and read `examined` rows.
    fn log_slow(
        &self,
        text: &str,
        took: std::time::Duration,
        rows: u64,
        lock_time: std::time::Duration,
        examined: u64,
    ) {
        let (account, host) = match &self.who {
            Some(w) => (w.account_user.as_str(), w.client.as_str()),
            None => (self.user.as_str(), "localhost"),
        };
        let ip = self.info.host();
        let started = std::time::SystemTime::now()
            .checked_sub(took)
            .unwrap_or(std::time::UNIX_EPOCH);
        self.db.globals.logs.slow(&crate::querylog::SlowEntry {
            id: self.conn_id,
            user: &self.user,
            account_user: account,
            host,
            ip: &ip,
            db: self.current_db.as_deref(),
            started,
            took,
            rows_sent: rows,
            lock_time,
            rows_examined: examined,
            text,
        });
    }

    /// This session as the process list and `KILL` see it.
    pub fn info(&self) -> &crate::status::SessionInfo {
        &self.info
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

    /// A statement of kind `com` starts: counted, shown in the process
    /// list, its time limit armed (SELECTs only, as in MySQL).
    fn begin_statement(&mut self, com: crate::status::Com, text: Arc<str>) -> std::time::Instant {
        let started = self.info.begin(com, text, self.current_db.as_deref());
        self.deadline = None;
        if com == crate::status::Com::Select {
            let ms = match self.vars.get("max_execution_time") {
                Some(v) => crate::expr::to_i64(v).unwrap_or(0).max(0) as u64,
                None => 0,
            };
            if ms > 0 {
                let d = started + std::time::Duration::from_millis(ms);
                self.deadline = Some(d);
                self.info.set_deadline(Some(d));
            }
        }
        started
    }

    /// The statement begun at `started` ended; how long it took if that
    /// is longer than `long_query_time` (a slow query).
    fn end_statement(&mut self, started: std::time::Instant) -> Option<std::time::Duration> {
        if self.deadline.take().is_some() {
            self.info.set_deadline(None);
        }
        let took = started.elapsed();
        // `long_query_time` is read only for statements that took 1 ms or
        // more.
        let slow = took >= std::time::Duration::from_millis(1) && {
            let limit = self
                .vars
                .get("long_query_time")
                .and_then(crate::expr::num_f64)
                .unwrap_or(10.0);
            took.as_secs_f64() > limit
        };
        self.info.end(slow);
        slow.then_some(took)
    }

    /// With `on`, a commit that must be synced (`flush_log_at_trx_commit`
    /// of 1) syncs on its own thread only when no sync is under way; else it
    /// returns without waiting for the fdatasync, and the driver awaits
    /// [`Session::poll_durable`] before it acknowledges the statement, so
    /// the client's task waits instead of a thread. The commit's rows are
    /// visible to other sessions from the commit on, before the sync (as
    /// InnoDB's are before its log flush); no client is told of a commit
    /// the sync has not covered. A statement run while an earlier one still
    /// waits (the next statement of a multi-statement text) waits for that
    /// sync first, blocking. Off by default.
    pub fn set_deferred_durability(&mut self, on: bool) {
        self.defer_durability = on;
    }

    /// Ready once every commit made so far is durable (at once when none
    /// waits); `Pending` with the task's waker registered otherwise. An
    /// error means the sync failed: the database is then read-only and the
    /// commits are not acknowledged.
    pub fn poll_durable(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<SqlResult<()>> {
        let Some(pos) = self.pending_durable else {
            return std::task::Poll::Ready(Ok(()));
        };
        match self.db.db.db().poll_durable(pos, cx) {
            std::task::Poll::Ready(r) => {
                self.pending_durable = None;
                std::task::Poll::Ready(r.map_err(SqlError::from))
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }

    /// Waits, blocking, for the sync of the commits made so far.
    fn settle_durability(&mut self) -> SqlResult<()> {
        if let Some(pos) = self.pending_durable.take() {
            self.db.db.db().wait_durable(pos)?;
        }
        Ok(())
    }

    /// The connection id.
    pub fn connection_id(&self) -> u64 {
        self.conn_id
    }

    /// Autocommit is on.
    pub fn autocommit(&self) -> bool {
        self.autocommit
    }

    /// A transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    /// The current database.
    pub fn database(&self) -> Option<&str> {
        self.current_db.as_deref()
    }

    /// `USE db` / COM_INIT_DB.
    pub fn use_database(&mut self, name: &str) -> SqlResult<()> {
        crate::acl::refresh(self);
        crate::acl::check_use(self, name)?;
        let cat = self.db.catalog.read();
        let d = cat
            .database(name)
            .ok_or_else(|| SqlError::unknown_database(name))?;
        self.current_db = Some(d.name.clone());
        Ok(())
    }

    /// COM_RESET_CONNECTION: rolls back, forgets variables and statements.
    pub fn reset(&mut self) {
        let _ = self.settle_durability();
        self.txn = None;
        self.vars.clear();
        self.net_timeouts = self.db.globals.seed(&mut self.vars);
        self.user_vars.clear();
        self.prepared.clear();
        self.named.clear();
        self.autocommit = true;
        self.isolation = Isolation::RepeatableRead;
        self.last_insert_id = 0;
        self.warnings.get_mut().clear();
    }

    /// Runs one statement (the caller splits a multi-statement text with
    /// `preparse::split_statements`).
    pub fn query(&mut self, sql: &str, out: &mut dyn Output) -> SqlResult<()> {
        self.settle_durability()?;
        self.params.clear();
        crate::acl::refresh(self);
        let shown: Arc<str> = if crate::acl::hides_text(sql) {
            Arc::from("<an account statement: its text is not shown>")
        } else {
            Arc::from(sql)
        };
        // One load: which query logs are on.
        let logs = self.db.globals.logs.flags();
        if logs & crate::querylog::GENERAL != 0 {
            self.db.globals.logs.general(self.conn_id, "Query", &shown);
        }
        let slow_text = (logs & crate::querylog::SLOW != 0).then(|| shown.clone());
        // mysqldump's `/*!40101 SET ... */` and the like.
        let expanded = crate::preparse::executable_comments(sql);
        let plain = crate::preparse::select_options(&expanded);
        let sql: &str = &plain;
        let started = self.begin_statement(crate::status::Com::of(sql), shown);
        let (r, rows) = if let Err(e) = self.charge_statement(sql) {
            (Err(e), (0, (Default::default(), 0)))
        } else if slow_text.is_some() {
            let before = self.slow_marks();
            let mut count = RowCount { out, rows: 0 };
            let r = self.query_body(sql, &mut count);
            (r, (count.rows, before))
        } else {
            (self.query_body(sql, out), (0, (Default::default(), 0)))
        };
        let r = r.map_err(|e| self.interrupt_cause(e));
        if let Some(took) = self.end_statement(started) {
            if let Some(text) = slow_text {
                let (lock, examined) = self.slow_since(rows.1);
                self.log_slow(&text, took, rows.0, lock, examined);
            }
        }
        r
    }

    /// The session's lock time and rows examined so far (the slow log
    /// reports a statement's share of each).
    fn slow_marks(&self) -> (std::time::Duration, u64) {
        (
            self.info.lock_wait(),
            self.info
                .examined
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Lock time and rows examined since `before` ([`Self::slow_marks`]).
    fn slow_since(&self, before: (std::time::Duration, u64)) -> (std::time::Duration, u64) {
        let (lock, examined) = self.slow_marks();
        (
            lock.saturating_sub(before.0),
            examined.wrapping_sub(before.1),
        )
    }

    /// A statement's error 1317 from a stopped lock wait says why it
    /// stopped: 3024 when it was the time limit, not a KILL.
    fn interrupt_cause(&self, e: SqlError) -> SqlError {
        if e.code == 1317
            && !self.info.interrupted()
            && self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
        {
            SqlError::execution_time_exceeded()
        } else {
            e
        }
    }

    fn query_body(&mut self, sql: &str, out: &mut dyn Output) -> SqlResult<()> {
        // Parsing, running and dropping the statement's trees all get the
        // stack its depth needs.
        crate::depth::run(crate::depth::bound(sql), || {
            if let Some(v) = crate::view::parse(sql)? {
                self.warnings.get_mut().clear();
                return crate::view::run_ddl(self, v, out);
            }
            let pre = classify(sql)?;
            if !matches!(pre, Pre::Show(crate::preparse::Show::Warnings)) {
                self.warnings.get_mut().clear();
            }
            match pre {
                Pre::Sql(text) => {
                    let (ast, order) = parse_statement(&text)?;
                    self.run_statement(&ast, &order, out)
                }
                other => self.run_pre(other, out),
            }
        })
    }

    /// COM_STMT_PREPARE.
    pub fn prepare(&mut self, sql: &str) -> SqlResult<PrepareInfo> {
        let id = self.next_stmt;
        self.next_stmt = self.next_stmt.wrapping_add(1).max(1);
        self.prepare_as(id, sql)
    }

    /// COM_STMT_PREPARE under an id the caller chose (the protocol
    /// layer's); an id in use is replaced.
    pub fn prepare_as(&mut self, id: u32, sql: &str) -> SqlResult<PrepareInfo> {
        self.info.count(crate::status::Com::StmtPrepare);
        if self.db.globals.logs.flags() & crate::querylog::GENERAL != 0 {
            let shown = if crate::acl::hides_text(sql) {
                "<an account statement: its text is not shown>"
            } else {
                sql
            };
            self.db.globals.logs.general(self.conn_id, "Prepare", shown);
        }
        crate::acl::refresh(self);
        let levels = crate::depth::bound(sql);
        crate::depth::run(levels, || self.prepare_levels(id, sql, levels))
    }

    fn prepare_levels(&mut self, id: u32, sql: &str, levels: usize) -> SqlResult<PrepareInfo> {
        let pre = classify(sql)?;
        if matches!(
            pre,
            Pre::Prepare(..) | Pre::Execute(..) | Pre::Deallocate(_)
        ) {
            return Err(SqlError::new(
                1295,
                "HY000",
                "This command is not supported in the prepared statement protocol yet",
            ));
        }
        let (ast, order, params, columns) = match &pre {
            Pre::Sql(text) => {
                let (ast, order) = parse_statement(text)?;
                let (params, columns) = crate::plan::describe(self, &ast, &order)?;
                (Some(ast), order, params, columns)
            }
            _ => (None, Vec::new(), 0, Vec::new()),
        };
        self.prepared.insert(
            id,
            Prepared {
                pre,
                ast,
                order,
                params,
                plan: None,
                levels,
                text: Arc::from(sql),
                com: crate::status::Com::of(sql),
            },
        );
        Ok(PrepareInfo {
            id,
            params: params as u16,
            columns,
        })
    }

    /// COM_STMT_EXECUTE.
    pub fn execute(&mut self, id: u32, params: &[Value], out: &mut dyn Output) -> SqlResult<()> {
        let logs = self.db.globals.logs.flags();
        let (levels, started) = match self.prepared.get(&id) {
            Some(p) => {
                let (levels, com, text) = (p.levels, p.com, p.text.clone());
                self.info.count(crate::status::Com::StmtExecute);
                if logs & crate::querylog::GENERAL != 0 {
                    self.db.globals.logs.general(self.conn_id, "Execute", &text);
                }
                let slow_text = (logs & crate::querylog::SLOW != 0).then(|| text.clone());
                (levels, Some((self.begin_statement(com, text), slow_text)))
            }
            None => (0, None),
        };
        let (r, rows) = if logs & crate::querylog::SLOW != 0 {
            let before = self.slow_marks();
            let mut count = RowCount { out, rows: 0 };
            let r = crate::depth::on_stack(levels, || {
                self.execute_levels(id, params, &mut count, true)
            });
            (r, (count.rows, before))
        } else {
            let r = crate::depth::on_stack(levels, || self.execute_levels(id, params, out, true));
            (r, (0, (Default::default(), 0)))
        };
        let r = r.map_err(|e| self.interrupt_cause(e));
        if let Some((started, slow_text)) = started {
            if let Some(took) = self.end_statement(started) {
                if let Some(text) = slow_text {
                    let (lock, examined) = self.slow_since(rows.1);
                    self.log_slow(&text, took, rows.0, lock, examined);
                }
            }
        }
        r
    }

    /// Runs prepared statement `id`; `charge`: count it against the
    /// account's hourly limits (not for SQL's EXECUTE, counted itself).
    fn execute_levels(
        &mut self,
        id: u32,
        params: &[Value],
        out: &mut dyn Output,
        charge: bool,
    ) -> SqlResult<()> {
        self.settle_durability()?;
        crate::acl::refresh(self);
        let Some(p) = self.prepared.get(&id) else {
            return Err(SqlError::new(
                1243,
                "HY000",
                format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
            ));
        };
        if charge {
            self.charge_statement(&p.text)?;
        }
        if params.len() != p.params {
            return Err(SqlError::new(
                1210,
                "HY000",
                "Incorrect arguments to mysqld_stmt_execute",
            ));
        }
        self.warnings.get_mut().clear();
        self.params.clear();
        self.params.extend_from_slice(params);
        // The statement stays in the map: executing a cached plan only
        // clones its `Arc` (the parsed statement is large to move).
        let mut attempt = 0;
        loop {
            let epoch = self.db.epoch();
            let Some(plan) = self.prepared_plan(id, epoch)? else {
                break;
            };
            match self.run_plan(&plan, epoch, out) {
                Err(e) if e.code == SCHEMA_CHANGED && attempt < PLAN_ATTEMPTS => attempt += 1,
                r => return r,
            }
        }
        // No plan: statements run from their syntax tree, or pre-parsed
        // forms. Taken out of the map while they run (they need the session).
        let Some(p) = self.prepared.remove(&id) else {
            return Ok(());
        };
        let r = match &p.ast {
            Some(ast) => self.run_statement(ast, &p.order, out),
            None => self.run_pre(p.pre.clone(), out),
        };
        // A statement that deallocated or replaced its own id while it ran
        // keeps what it left.
        self.prepared.entry(id).or_insert(p);
        r
    }

    /// The plan of prepared statement `id` for schema epoch `epoch`: the
    /// cached one if it is of that epoch and database, else compiled (and
    /// cached); None for statements without a plan.
    fn prepared_plan(&mut self, id: u32, epoch: u64) -> SqlResult<Option<Arc<crate::plan::Plan>>> {
        let Some(p) = self.prepared.get(&id) else {
            return Ok(None);
        };
        Ok(match &p.plan {
            Some((e, d, plan)) if *e == epoch && *d == self.current_db => Some(plan.clone()),
            _ => match &p.ast {
                Some(ast) => {
                    let compiled = crate::plan::compile_with_order(self, ast, &p.order)?
                        .map(|plan| (epoch, self.current_db.clone(), Arc::new(plan)));
                    let plan = compiled.as_ref().map(|(_, _, plan)| plan.clone());
                    if let Some(p) = self.prepared.get_mut(&id) {
                        p.plan = compiled;
                    }
                    plan
                }
                None => None,
            },
        })
    }

    /// Whether executing prepared statement `id` now is a short write that
    /// waits only where the engine's blocking hook can hand the thread off
    /// (`cairndb::set_thread_blocking_hook`: row locks, stalls, the commit
    /// pipeline, the commit's own sync when no other is under way): its
    /// cached plan is current
    /// and is an UPDATE or DELETE of key points, or an INSERT of at most
    /// `QUICK_INSERT_ROWS` rows of values, in autocommit outside a
    /// transaction, and commits are not synced inside the engine's write
    /// (not synced at all, or deferred: [`Session::set_deferred_durability`]).
    /// A server runs it on its network thread, as a quick read.
    pub fn is_quick_write(&self, id: u32) -> bool {
        if self.txn.is_some() || !self.autocommit {
            return false;
        }
        if self.db.commit_options().sync && !self.defer_durability {
            return false;
        }
        let Some(plan) = self.current_plan(id) else {
            return false;
        };
        match plan {
            crate::plan::Plan::Update(crate::plan::UpdatePlan { scan, .. })
            | crate::plan::Plan::Delete(crate::plan::DeletePlan { scan, .. }) => {
                scan.sources.iter().all(crate::plan::Source::is_key_points)
            }
            crate::plan::Plan::Insert(i) => i.select.is_none() && i.rows.len() <= QUICK_INSERT_ROWS,
            crate::plan::Plan::Select(_) => false,
        }
    }

    /// The cached plan of prepared statement `id`, if it is current (no
    /// DDL since, and the same current database).
    fn current_plan(&self, id: u32) -> Option<&crate::plan::Plan> {
        let (epoch, db, plan) = self.prepared.get(&id)?.plan.as_ref()?;
        (*epoch == self.db.epoch() && *db == self.current_db).then_some(plan.as_ref())
    }

    /// Whether executing prepared statement `id` now is a short read
    /// that never waits: its cached plan is current and is a SELECT
    /// without FOR UPDATE / FOR SHARE whose every table is read at key
    /// points (every column of an index bound by equalities, or an IN list
    /// of points after them). Such a read takes no lock and waits for no
    /// writer; the server runs it on its network thread.
    pub fn is_quick_read(&self, id: u32) -> bool {
        let Some(crate::plan::Plan::Select(sel)) = self.current_plan(id) else {
            return false;
        };
        sel.lock.is_none()
            && !sel.subqueries
            && sel.sources.iter().all(crate::plan::Source::is_key_points)
    }

    /// COM_STMT_CLOSE.
    pub fn close_statement(&mut self, id: u32) {
        self.info.count(crate::status::Com::StmtClose);
        if self.db.globals.logs.flags() & crate::querylog::GENERAL != 0 {
            self.db.globals.logs.general(self.conn_id, "Close stmt", "");
        }
        self.prepared.remove(&id);
    }

    /// Runs a parsed statement.
    fn run_statement(
        &mut self,
        ast: &Statement,
        order: &[ast::OrderByExpr],
        out: &mut dyn Output,
    ) -> SqlResult<()> {
        let mut attempt = 0;
        loop {
            let epoch = self.db.epoch();
            let r = match crate::plan::compile_with_order(self, ast, order)? {
                Some(plan) => self.run_plan(&plan, epoch, out),
                None => return crate::ddl::run(self, ast, out),
            };
            match r {
                Err(e) if e.code == SCHEMA_CHANGED && attempt < PLAN_ATTEMPTS => attempt += 1,
                r => return r,
            }
        }
    }

    /// Runs a compiled plan inside the right transaction context. `epoch`
    /// is the schema epoch read before the plan was compiled: a write
    /// whose schema moved before it took the shared schema lock (a DDL it
    /// waited for) fails with [`SCHEMA_CHANGED`] having written nothing,
    /// for the caller to compile again.
    pub(crate) fn run_plan(
        &mut self,
        plan: &crate::plan::Plan,
        epoch: u64,
        out: &mut dyn Output,
    ) -> SqlResult<()> {
        if plan.writes() {
            self.with_write_txn(|s| {
                if s.db.epoch() != epoch {
                    return Err(SqlError::new(
                        SCHEMA_CHANGED,
                        "HY000",
                        "Table definition has changed, please retry transaction",
                    ));
                }
                crate::exec::run(s, plan, out)
            })
        } else {
            // With autocommit off, a read opens the transaction (and so
            // fixes its snapshot under REPEATABLE READ), as in InnoDB.
            if !self.autocommit && self.txn.is_none() {
                self.begin_txn(false);
            }
            crate::exec::run(self, plan, out)
        }
    }

    /// Runs a writing statement: in the open transaction under a
    /// statement savepoint, or in a transaction of its own (autocommit).
    pub(crate) fn with_write_txn<T>(
        &mut self,
        f: impl FnOnce(&mut Session) -> SqlResult<T>,
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
                    self.txn = None;
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
            t.txn.commit()?;
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

    fn run_pre(&mut self, pre: Pre, out: &mut dyn Output) -> SqlResult<()> {
        match pre {
            Pre::Begin => {
                self.commit()?;
                self.begin_txn(true);
                out.ok(0, 0, 0, "");
            }
            Pre::Commit => {
                self.commit()?;
                out.ok(0, 0, 0, "");
            }
            Pre::Rollback => {
                if let Some(mut t) = self.txn.take() {
                    let _ = t.txn.rollback();
                }
                out.ok(0, 0, 0, "");
            }
            Pre::Savepoint(name) => {
                if self.txn.is_none() {
                    if self.autocommit {
                        // MySQL accepts it and forgets it at once.
                        out.ok(0, 0, 0, "");
                        return Ok(());
                    }
                    self.begin_txn(false);
                }
                if let Some(t) = self.txn.as_mut() {
                    if let Some(i) = t
                        .savepoints
                        .iter()
                        .position(|s| s.eq_ignore_ascii_case(&name))
                    {
                        // Re-setting a name replaces it (and those after it).
                        for _ in i..t.savepoints.len() {
                            let _ = t.txn.pop_savepoint();
                        }
                        t.savepoints.truncate(i);
                    }
                    t.txn.set_savepoint();
                    t.savepoints.push(name);
                }
                out.ok(0, 0, 0, "");
            }
            Pre::RollbackTo(name) => {
                self.rollback_to_savepoint(&name)?;
                out.ok(0, 0, 0, "");
            }
            Pre::Release(name) => {
                let missing =
                    || SqlError::new(1305, "42000", format!("SAVEPOINT {name} does not exist"));
                let t = self.txn.as_mut().ok_or_else(missing)?;
                let i = t
                    .savepoints
                    .iter()
                    .position(|s| s.eq_ignore_ascii_case(&name))
                    .ok_or_else(missing)?;
                // Releasing keeps the changes and forgets this savepoint
                // and those set after it.
                for _ in i..t.savepoints.len() {
                    let _ = t.txn.pop_savepoint();
                }
                t.savepoints.truncate(i);
                out.ok(0, 0, 0, "");
            }
            Pre::AlterDatabase(name) => {
                let name = match name.or_else(|| self.current_db.clone()) {
                    Some(n) => n,
                    None => return Err(SqlError::no_database()),
                };
                if self.db.catalog.read().database(&name).is_none() {
                    return Err(SqlError::unknown_database(&name));
                }
                out.ok(0, 0, 0, "");
            }
            Pre::Use(name) => {
                self.use_database(&name)?;
                out.ok(0, 0, 0, "");
            }
            Pre::Set(items) => {
                for it in items {
                    self.set(it)?;
                }
                out.ok(0, 0, 0, "");
            }
            Pre::Show(s) => crate::show::run(self, s, out)?,
            Pre::Nothing => out.ok(0, 0, 0, ""),
            Pre::Flush {
                hosts,
                logs,
                user_resources,
            } => {
                crate::acl::check_global(self, crate::acl::RELOAD, "RELOAD")?;
                if hosts {
                    self.db.globals.flush_hosts();
                }
                if user_resources {
                    self.db.registry.reset_hourly(None);
                }
                if logs {
                    self.db.globals.logs.reopen()?;
                }
                out.ok(0, 0, 0, "");
            }
            Pre::Optimize(tables) => crate::ddl::optimize(self, &tables, out)?,
            Pre::AlterTable(text) => crate::alter::run(self, &text, out)?,
            Pre::Acl(st) => crate::acl::run(self, st, out)?,
            Pre::Backup(dir) => crate::backup::run(self, &dir, out)?,
            Pre::Prepare(name, from) => {
                let text = match from {
                    crate::preparse::PrepareFrom::Text(t) => t,
                    crate::preparse::PrepareFrom::Var(v) => match self.user_vars.get(&v) {
                        None | Some(Value::Null) => "NULL".to_string(),
                        Some(other) => {
                            String::from_utf8_lossy(&crate::expr::text_of(other)).into_owned()
                        }
                    },
                };
                let parts = crate::preparse::split_statements(&text);
                if parts.len() > 1 {
                    return Err(SqlError::new(
                        1064,
                        "42000",
                        "You have an error in your SQL syntax: PREPARE takes one statement",
                    ));
                }
                // `prepare_levels` refuses PREPARE/EXECUTE/DEALLOCATE (1295).
                let key = name.to_lowercase();
                if !self.named.contains_key(&key) && self.named.len() >= MAX_NAMED {
                    return Err(SqlError::new(
                        1461,
                        "42000",
                        format!(
                            "Can't create more than max_prepared_stmt_count statements (current value: {MAX_NAMED})"
                        ),
                    ));
                }
                // A name prepared again replaces its statement (and loses
                // it when the new text does not prepare), as in MySQL.
                if let Some(old) = self.named.remove(&key) {
                    self.prepared.remove(&old);
                }
                let id = self.next_named;
                self.next_named = self.next_named.wrapping_add(1).max(NAMED_IDS);
                let levels = crate::depth::bound(&text);
                crate::depth::run(levels, || self.prepare_levels(id, &text, levels))?;
                self.named.insert(key, id);
                out.ok(0, 0, 0, "Statement prepared");
            }
            Pre::Execute(name, vars) => {
                let Some(&id) = self.named.get(&name.to_lowercase()) else {
                    return Err(SqlError::new(
                        1243,
                        "HY000",
                        format!("Unknown prepared statement handler ({name}) given to EXECUTE"),
                    ));
                };
                let want = self.prepared.get(&id).map_or(0, |p| p.params);
                if want != vars.len() {
                    return Err(SqlError::new(
                        1210,
                        "HY000",
                        "Incorrect arguments to EXECUTE",
                    ));
                }
                let params: Vec<Value> = vars
                    .iter()
                    .map(|v| self.user_vars.get(v).cloned().unwrap_or(Value::Null))
                    .collect();
                let levels = self.prepared.get(&id).map_or(0, |p| p.levels);
                // The EXECUTE statement itself was charged.
                crate::depth::on_stack(levels, || self.execute_levels(id, &params, out, false))?;
            }
            Pre::Deallocate(name) => {
                let Some(id) = self.named.remove(&name.to_lowercase()) else {
                    return Err(SqlError::new(
                        1243,
                        "HY000",
                        format!(
                            "Unknown prepared statement handler ({name}) given to DEALLOCATE PREPARE"
                        ),
                    ));
                };
                self.prepared.remove(&id);
                out.ok(0, 0, 0, "");
            }
            Pre::Sql(_) => return Err(SqlError::internal("statement misclassified")),
        }
        Ok(())
    }

    /// ROLLBACK TO SAVEPOINT (the savepoint stays).
    pub fn rollback_to_savepoint(&mut self, name: &str) -> SqlResult<()> {
        let missing = || SqlError::new(1305, "42000", format!("SAVEPOINT {name} does not exist"));
        let t = self.txn.as_mut().ok_or_else(missing)?;
        let i = t
            .savepoints
            .iter()
            .position(|s| s.eq_ignore_ascii_case(name))
            .ok_or_else(missing)?;
        let n = t.savepoints.len();
        for _ in i..n {
            t.txn.rollback_to_savepoint()?;
        }
        t.savepoints.truncate(i);
        t.txn.set_savepoint();
        t.savepoints.push(name.to_string());
        Ok(())
    }

    fn set(&mut self, it: SetItem) -> SqlResult<()> {
        match it {
            SetItem::Names(_, _) => Ok(()),
            SetItem::Isolation(VarScope::Session, level) => {
                self.isolation = Isolation::parse(&level, "transaction_isolation")?;
                Ok(())
            }
            SetItem::Isolation(VarScope::Global, _) | SetItem::ReadOnly(..) => Ok(()),
            SetItem::User(name, expr) => {
                let v = self.eval_const(&expr)?;
                self.user_vars.insert(name, v);
                Ok(())
            }
            SetItem::Var(scope, name, expr) => {
                let v = match expr.to_ascii_uppercase().as_str() {
                    "DEFAULT" => vars::default_of(&name).unwrap_or(Value::Null),
                    "ON" => Value::Int(1),
                    "OFF" => Value::Int(0),
                    _ => self.eval_const(&expr)?,
                };
                vars::set(self, scope, &name, v)
            }
        }
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

/// How deep the parser may recurse (parentheses, nested functions and
/// CASE, prefix operators); deeper is error 1436. The parser grows its
/// own stack as it recurses (`sqlparser`'s `recursive-protection`).
const PARSER_RECURSION_LIMIT: usize = 256;

/// MySQL's error for an account over one of its resource limits.
fn limit_reached(user: &str, what: &str, n: u32) -> SqlError {
    SqlError::new(
        1226,
        "42000",
        format!("User '{user}' has exceeded the '{what}' resource (current value: {n})"),
    )
}

/// A MySQL-dialect parser over `text`.
pub(crate) fn parser(text: &str) -> Result<Parser<'static>, sqlparser::parser::ParserError> {
    Parser::new(&CairnDialect)
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .try_with_sql(text)
}

/// A parser error as MySQL reports it: 1436 past the nesting limit,
/// else 1064.
pub(crate) fn parse_error(e: sqlparser::parser::ParserError) -> SqlError {
    match e {
        sqlparser::parser::ParserError::RecursionLimitExceeded => SqlError::new(
            1436,
            "HY000",
            format!(
                "Thread stack overrun: the statement nests expressions more than \
                 {PARSER_RECURSION_LIMIT} levels deep"
            ),
        ),
        e => SqlError::syntax(format!("You have an error in your SQL syntax: {e}")),
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.who.is_some() {
            self.log_general("Quit", "");
        }
        self.db.registry.remove(self.conn_id);
    }
}

/// Parses one statement with the MySQL dialect, with the ORDER BY of a
/// single-table UPDATE (which sqlparser does not parse) apart.
pub(crate) fn parse_statement(text: &str) -> SqlResult<(Statement, Vec<ast::OrderByExpr>)> {
    // SHOW CREATE TABLE prints `/*!80016 NOT ENFORCED */` after a CHECK,
    // as MySQL does: its content is read (the parser skips comments).
    let expanded;
    let text = if text.contains("/*!80016 ") {
        expanded = expand_80016(text);
        expanded.as_str()
    } else {
        text
    };
    // Only UPDATE and DELETE need the rewrites below: others are parsed
    // as they are, without tokenizing them first.
    let Some(mut dml) = DmlTokens::of(text) else {
        return Ok((parse_one(text)?, Vec::new()));
    };
    let joined;
    let text = match update_comma_joins(&dml) {
        Some(t) => {
            joined = t;
            match DmlTokens::of(&joined) {
                Some(d) => dml = d,
                None => return Ok((parse_one(&joined)?, Vec::new())),
            }
            joined.as_str()
        }
        None => text,
    };
    let Some((update, order)) = split_update_order_by(&dml) else {
        return Ok((parse_one(text)?, Vec::new()));
    };
    let st = parse_one(&update)?;
    let q = parse_one(&format!("SELECT 1 ORDER BY {order}"))?;
    let list = match q {
        Statement::Query(q) => match q.order_by.map(|o| o.kind) {
            Some(ast::OrderByKind::Expressions(list)) => list,
            _ => return Err(SqlError::syntax(format!("bad ORDER BY of UPDATE: {order}"))),
        },
        _ => return Err(SqlError::syntax(format!("bad ORDER BY of UPDATE: {order}"))),
    };
    Ok((st, list))
}

/// `text` with each `/*!80016 ... */` replaced by its content.
pub(crate) fn expand_80016(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/*!80016 ") {
        out.push_str(rest.get(..i).unwrap_or_default());
        let after = rest.get(i + 9..).unwrap_or_default();
        match after.find("*/") {
            Some(e) => {
                out.push_str(after.get(..e).unwrap_or_default());
                rest = after.get(e + 2..).unwrap_or_default();
            }
            None => {
                out.push_str(rest.get(i..).unwrap_or_default());
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The tokens of an UPDATE or DELETE statement, for the rewrites of
/// forms sqlparser does not read.
struct DmlTokens {
    tokens: Vec<sqlparser::tokenizer::Token>,
    /// Where its first word (UPDATE or DELETE) is.
    first: usize,
    /// UPDATE (else DELETE).
    update: bool,
}

impl DmlTokens {
    /// `text` tokenized when it is an UPDATE or DELETE; None for any
    /// other statement, told apart by its first bytes (a leading
    /// comment is tokenized to look past it).
    fn of(text: &str) -> Option<DmlTokens> {
        use sqlparser::tokenizer::{Token, Tokenizer};
        let head = text.trim_start().as_bytes();
        let starts = |w: &[u8]| {
            head.get(..w.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(w))
        };
        if ![&b"UPDATE"[..], b"DELETE", b"/*", b"--", b"#"]
            .iter()
            .any(|w| starts(w))
        {
            return None;
        }
        let tokens = Tokenizer::new(&CairnDialect, text).tokenize().ok()?;
        let first = tokens
            .iter()
            .position(|t| !matches!(t, Token::Whitespace(_)))?;
        let update = is_word(tokens.get(first)?, "UPDATE");
        if !update && !is_word(tokens.get(first)?, "DELETE") {
            return None;
        }
        Some(DmlTokens {
            tokens,
            first,
            update,
        })
    }
}

/// Whether `t` is the unquoted keyword `kw`.
fn is_word(t: &sqlparser::tokenizer::Token, kw: &str) -> bool {
    matches!(t, sqlparser::tokenizer::Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw))
}

/// MySQL's multi-table forms that sqlparser does not read, rewritten:
/// `UPDATE t1, t2 SET ...` as `UPDATE t1 CROSS JOIN t2 SET ...` (each
/// comma between UPDATE and SET outside parentheses), and `DELETE t1.*,
/// t2.* FROM ...` as `DELETE t1, t2 FROM ...`; None for any other
/// statement.
fn update_comma_joins(dml: &DmlTokens) -> Option<String> {
    use sqlparser::tokenizer::Token;
    let (tokens, first, update) = (&dml.tokens, dml.first, dml.update);
    let mut depth = 0i32;
    // Token positions to replace: (position, replacement).
    let mut edits: Vec<(usize, &str)> = Vec::new();
    for (i, t) in tokens.iter().enumerate().skip(first + 1) {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Comma if update && depth == 0 => edits.push((i, " CROSS JOIN ")),
            Token::Period if !update && matches!(tokens.get(i + 1), Some(Token::Mul)) => {
                edits.push((i, ""));
                edits.push((i + 1, ""));
            }
            _ if depth == 0 && is_word(t, if update { "SET" } else { "FROM" }) => break,
            _ => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        match edits.iter().find(|(at, _)| *at == i) {
            Some((_, with)) => out.push_str(with),
            None => out.push_str(&t.to_string()),
        }
    }
    Some(out)
}

/// `UPDATE .. ORDER BY o [LIMIT n]` split into `UPDATE .. [LIMIT n]` and
/// `o`; None for any other statement.
fn split_update_order_by(dml: &DmlTokens) -> Option<(String, String)> {
    use sqlparser::tokenizer::Token;
    let tokens = &dml.tokens;
    if !dml.update {
        return None;
    }
    let word = is_word;
    let mut depth = 0i32;
    let mut order_at = None;
    let mut limit_at = None;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth != 0 => {}
            _ if order_at.is_none() && word(t, "ORDER") => {
                let next = tokens
                    .get(i + 1..)?
                    .iter()
                    .position(|t| !matches!(t, Token::Whitespace(_)))?;
                if word(tokens.get(i + 1 + next)?, "BY") {
                    order_at = Some((i, i + 2 + next));
                }
            }
            _ if word(t, "LIMIT") => {
                // LIMIT before ORDER BY is left to the parser's 1064.
                order_at?;
                limit_at = Some(i);
                break;
            }
            _ => {}
        }
    }
    let (order, by_end) = order_at?;
    let end = limit_at.unwrap_or(tokens.len());
    let join = |ts: &[Token]| ts.iter().map(|t| t.to_string()).collect::<String>();
    let mut update = join(tokens.get(..order)?);
    update.push(' ');
    update.push_str(&join(tokens.get(end..)?));
    Some((update, join(tokens.get(by_end..end)?)))
}

/// Parses one statement with the MySQL dialect.
pub(crate) fn parse_one(text: &str) -> SqlResult<Statement> {
    let mut v = parser(text)
        .and_then(|mut p| p.parse_statements())
        .map_err(parse_error)?;
    match v.len() {
        1 => Ok(v.remove(0)),
        0 => Err(SqlError::syntax("Query was empty")),
        _ => Err(SqlError::syntax(
            "several statements in one; send them separately or enable multi-statements",
        )),
    }
}

impl Env for Session {
    fn params(&self) -> &[Value] {
        &self.params
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
        Session::warn(self, "Warning", code, message);
    }
}
