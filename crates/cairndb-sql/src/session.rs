//! A client session: it owns the statement context (`StmtCx`: current
//! database, variables, transaction, warnings) and the prepared
//! statements, and dispatches each statement: parse, plan, execute,
//! commit. Everything below it takes the context, never the session.
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

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast::{self, Statement};

use crate::context::{Isolation, StmtCx, Transport};
use crate::db::SqlDb;
use crate::error::{SqlError, SqlResult};
use crate::output::{ColumnInfo, Output};
use crate::parse::statement::parse_statement;
use crate::preparse::{classify, Pre, SetItem, VarScope};
use crate::types::Value;
use crate::vars;

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
    /// Its text names SLEEP (perhaps only in a name or a string): it may
    /// wait, so it never runs as a quick read or write.
    pub(crate) may_wait: bool,
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

/// One client session: it owns the statement context its statements
/// run in, and the statements prepared on it.
pub struct Session {
    /// What planning and execution see.
    pub(crate) ctx: StmtCx,
    pub(crate) prepared: HashMap<u32, Prepared>,
    next_stmt: u32,
    /// Statements prepared with SQL's `PREPARE name`: lower-case name to
    /// their id in `prepared` (ids from [`NAMED_IDS`] up, apart from the
    /// protocol's).
    named: HashMap<String, u32>,
    next_named: u32,
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

/// The most rows of an INSERT that [`Session::is_quick_write`] admits.
const QUICK_INSERT_ROWS: usize = 16;

impl Session {
    /// A new session of `user` on `db` that holds every privilege, for
    /// embedding, tools and tests: no account is looked up. A server opens
    /// its sessions with [`Session::login`].
    pub fn new(db: Arc<SqlDb>, user: &str) -> Session {
        Session {
            ctx: StmtCx::new(db, user),
            prepared: HashMap::new(),
            next_stmt: 1,
            named: HashMap::new(),
            next_named: NAMED_IDS,
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
            s.ctx.db.globals.max_user_connections()
        };
        if !s
            .ctx
            .db
            .registry
            .admit(s.ctx.conn_id, (&grants.user, &grants.host), limit)
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
            if let Err((what, n)) = s
                .ctx
                .db
                .registry
                .charge_hourly(account, limits, true, false)
            {
                return Err(limit_reached(&grants.user, what, n));
            }
        }
        s.ctx.who = Some(who);
        s.ctx.grants = Some(grants);
        s.ctx.grants_epoch = epoch;
        Ok(s)
    }

    /// Counts a statement against the account's hourly limits (MySQL's
    /// `max_questions` and `max_updates`): 1226 when it would go over
    /// one. Costs nothing for an account without them.
    fn charge_statement(&self, sql: &str) -> SqlResult<()> {
        let Some(g) = &self.ctx.grants else {
            return Ok(());
        };
        let limits = crate::acl::hourly_limits(g);
        if limits.questions == 0 && limits.updates == 0 {
            return Ok(());
        }
        let update = limits.updates > 0 && crate::status::changes_data(sql);
        self.ctx
            .db
            .registry
            .charge_hourly((&g.user, &g.host), limits, false, update)
            .map_err(|(what, n)| limit_reached(&g.user, what, n))
    }

    /// A new session of the same user and account (its privileges), and
    /// nothing else of this one: what replaces a session a panic left.
    pub fn fresh(&self) -> Session {
        let mut s = Session::new(self.ctx.db.clone(), &self.ctx.user);
        if let Some(g) = &self.ctx.grants {
            // It takes the place of this one: counted, never refused.
            s.ctx
                .db
                .registry
                .admit(s.ctx.conn_id, (&g.user, &g.host), 0);
        }
        s.ctx.who = self.ctx.who.clone();
        s.ctx.grants = self.ctx.grants.clone();
        s.ctx.grants_epoch = self.ctx.grants_epoch;
        s
    }

    /// Whether the client asked for found rows (CLIENT_FOUND_ROWS): an
    /// UPDATE then reports the rows it matched, not only those it
    /// changed. Off unless set.
    pub fn set_client_found_rows(&mut self, on: bool) {
        self.ctx.client_found_rows = on;
    }

    /// Sets what the connection's transport is (kept across
    /// COM_RESET_CONNECTION).
    pub fn set_transport(&mut self, t: Transport) {
        self.ctx.transport = t;
    }

    /// What the connection's transport is.
    pub fn transport(&self) -> &Transport {
        &self.ctx.transport
    }

    /// The session's own `wait_timeout`, when it set one (else the
    /// server's applies).
    pub fn wait_timeout(&self) -> Option<std::time::Duration> {
        let v = self.ctx.vars.get("wait_timeout")?;
        let secs = crate::expr::to_i64(v)?.clamp(1, 31_536_000);
        Some(std::time::Duration::from_secs(secs as u64))
    }

    /// The client is interactive (CLIENT_INTERACTIVE): its `wait_timeout`
    /// starts at the global `interactive_timeout`, as in MySQL.
    pub fn set_interactive(&mut self) {
        self.ctx.db.globals.seed_interactive(&mut self.ctx.vars);
    }

    /// The session's `net_read_timeout` and `net_write_timeout`: how
    /// long the server waits for the rest of a command the client began
    /// sending, and for the client to take an answer.
    pub fn net_timeouts(&self) -> (std::time::Duration, std::time::Duration) {
        let (r, w) = self.ctx.net_timeouts;
        (
            std::time::Duration::from_secs(u64::from(r)),
            std::time::Duration::from_secs(u64::from(w)),
        )
    }

    /// Whether the general log is written now.
    pub fn general_log_on(&self) -> bool {
        self.ctx.db.globals.logs.flags() & crate::querylog::GENERAL != 0
    }

    /// Writes a general log line for this connection (`Connect`, `Init
    /// DB`, `Quit`, ...) if the general log is on.
    pub fn log_general(&self, command: &str, argument: &str) {
        if self.ctx.db.globals.logs.flags() & crate::querylog::GENERAL != 0 {
            self.ctx
                .db
                .globals
                .logs
                .general(self.ctx.conn_id, command, argument);
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
        let (account, host) = match &self.ctx.who {
            Some(w) => (w.account_user.as_str(), w.client.as_str()),
            None => (self.ctx.user.as_str(), "localhost"),
        };
        let ip = self.ctx.info.host();
        let started = std::time::SystemTime::now()
            .checked_sub(took)
            .unwrap_or(std::time::UNIX_EPOCH);
        self.ctx.db.globals.logs.slow(&crate::querylog::SlowEntry {
            id: self.ctx.conn_id,
            user: &self.ctx.user,
            account_user: account,
            host,
            ip: &ip,
            db: self.ctx.current_db.as_deref(),
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
        &self.ctx.info
    }

    /// A statement of kind `com` starts: counted, shown in the process
    /// list, its time limit armed (SELECTs only, as in MySQL).
    fn begin_statement(&mut self, com: crate::status::Com, text: Arc<str>) -> std::time::Instant {
        let hint = if com == crate::status::Com::Select {
            crate::preparse::max_execution_time_hint(&text)
        } else {
            None
        };
        let started = self
            .ctx
            .info
            .begin(com, text, self.ctx.current_db.as_deref());
        self.ctx.deadline = None;
        if com == crate::status::Com::Select {
            // The statement's MAX_EXECUTION_TIME hint wins over the
            // session's value, as in MySQL.
            let ms = match hint {
                Some(ms) => ms,
                None => match self.ctx.vars.get("max_execution_time") {
                    Some(v) => crate::expr::to_i64(v).unwrap_or(0).max(0) as u64,
                    None => 0,
                },
            };
            if ms > 0 {
                let d = started + std::time::Duration::from_millis(ms);
                self.ctx.deadline = Some(d);
                self.ctx.info.set_deadline(Some(d));
            }
        }
        started
    }

    /// The statement begun at `started` ended; how long it took if that
    /// is longer than `long_query_time` (a slow query).
    fn end_statement(&mut self, started: std::time::Instant) -> Option<std::time::Duration> {
        if self.ctx.deadline.take().is_some() {
            self.ctx.info.set_deadline(None);
        }
        let took = started.elapsed();
        // `long_query_time` is read only for statements that took 1 ms or
        // more.
        let slow = took >= std::time::Duration::from_millis(1) && {
            let limit = self
                .ctx
                .vars
                .get("long_query_time")
                .and_then(crate::expr::num_f64)
                .unwrap_or(10.0);
            took.as_secs_f64() > limit
        };
        self.ctx.info.end(slow);
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
        self.ctx.defer_durability = on;
    }

    /// Ready once every commit made so far is durable (at once when none
    /// waits); `Pending` with the task's waker registered otherwise. An
    /// error means the sync failed: the database is then read-only and the
    /// commits are not acknowledged.
    pub fn poll_durable(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<SqlResult<()>> {
        let Some(pos) = self.ctx.pending_durable else {
            return std::task::Poll::Ready(Ok(()));
        };
        match self.ctx.db.db.db().poll_durable(pos, cx) {
            std::task::Poll::Ready(r) => {
                self.ctx.pending_durable = None;
                std::task::Poll::Ready(r.map_err(SqlError::from))
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }

    /// Waits, blocking, for the sync of the commits made so far.
    fn settle_durability(&mut self) -> SqlResult<()> {
        if let Some(pos) = self.ctx.pending_durable.take() {
            self.ctx.db.db.db().wait_durable(pos)?;
        }
        Ok(())
    }

    /// The connection id.
    pub fn connection_id(&self) -> u64 {
        self.ctx.conn_id
    }

    /// Autocommit is on.
    pub fn autocommit(&self) -> bool {
        self.ctx.autocommit
    }

    /// A transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.ctx.txn.is_some()
    }

    /// The current database.
    pub fn database(&self) -> Option<&str> {
        self.ctx.current_db.as_deref()
    }

    /// `USE db` / COM_INIT_DB.
    pub fn use_database(&mut self, name: &str) -> SqlResult<()> {
        crate::acl::refresh(&mut self.ctx);
        crate::acl::check_use(&self.ctx, name)?;
        let cat = self.ctx.db.catalog.read();
        let d = cat
            .database(name)
            .ok_or_else(|| SqlError::unknown_database(name))?;
        self.ctx.current_db = Some(d.name.clone());
        Ok(())
    }

    /// COM_RESET_CONNECTION: rolls back, forgets variables and statements.
    pub fn reset(&mut self) {
        let _ = self.settle_durability();
        self.ctx.txn = None;
        self.ctx.vars.clear();
        let ctx = &mut self.ctx;
        ctx.net_timeouts = ctx.db.globals.seed(&mut ctx.vars, &mut ctx.mem);
        self.ctx.user_vars.clear();
        self.prepared.clear();
        self.named.clear();
        self.ctx.autocommit = true;
        self.ctx.isolation = Isolation::RepeatableRead;
        self.ctx.last_insert_id = 0;
        self.ctx.warnings.get_mut().clear();
    }

    /// Runs one statement (the caller splits a multi-statement text with
    /// `preparse::split_statements`).
    pub fn query(&mut self, sql: &str, out: &mut dyn Output) -> SqlResult<()> {
        self.settle_durability()?;
        self.ctx.params.clear();
        crate::acl::refresh(&mut self.ctx);
        let shown: Arc<str> = if crate::acl::hides_text(sql) {
            Arc::from("<an account statement: its text is not shown>")
        } else {
            Arc::from(sql)
        };
        // One load: which query logs are on.
        let logs = self.ctx.db.globals.logs.flags();
        if logs & crate::querylog::GENERAL != 0 {
            self.ctx
                .db
                .globals
                .logs
                .general(self.ctx.conn_id, "Query", &shown);
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
            self.ctx.info.lock_wait(),
            self.ctx
                .info
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
            && !self.ctx.info.interrupted()
            && self
                .ctx
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
                self.ctx.warnings.get_mut().clear();
                return crate::view::run_ddl(&mut self.ctx, v, out);
            }
            let pre = classify(sql)?;
            if !matches!(pre, Pre::Show(crate::preparse::Show::Warnings)) {
                self.ctx.warnings.get_mut().clear();
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
        self.ctx.info.count(crate::status::Com::StmtPrepare);
        if self.ctx.db.globals.logs.flags() & crate::querylog::GENERAL != 0 {
            let shown = if crate::acl::hides_text(sql) {
                "<an account statement: its text is not shown>"
            } else {
                sql
            };
            self.ctx
                .db
                .globals
                .logs
                .general(self.ctx.conn_id, "Prepare", shown);
        }
        crate::acl::refresh(&mut self.ctx);
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
                let (params, columns) = crate::plan::describe(&self.ctx, &ast, &order)?;
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
                may_wait: sql
                    .as_bytes()
                    .windows(5)
                    .any(|w| w.eq_ignore_ascii_case(b"sleep")),
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
        let logs = self.ctx.db.globals.logs.flags();
        let (levels, started) = match self.prepared.get(&id) {
            Some(p) => {
                let (levels, com, text) = (p.levels, p.com, p.text.clone());
                self.ctx.info.count(crate::status::Com::StmtExecute);
                if logs & crate::querylog::GENERAL != 0 {
                    self.ctx
                        .db
                        .globals
                        .logs
                        .general(self.ctx.conn_id, "Execute", &text);
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
        crate::acl::refresh(&mut self.ctx);
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
        self.ctx.warnings.get_mut().clear();
        self.ctx.params.clear();
        self.ctx.params.extend_from_slice(params);
        // The statement stays in the map: executing a cached plan only
        // clones its `Arc` (the parsed statement is large to move).
        let mut attempt = 0;
        loop {
            let epoch = self.ctx.db.epoch();
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
            Some((e, d, plan)) if *e == epoch && *d == self.ctx.current_db => Some(plan.clone()),
            _ => match &p.ast {
                Some(ast) => {
                    let compiled = crate::plan::compile_with_order(&self.ctx, ast, &p.order)?
                        .map(|plan| (epoch, self.ctx.current_db.clone(), Arc::new(plan)));
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
        if self.ctx.txn.is_some() || !self.ctx.autocommit {
            return false;
        }
        if self.ctx.db.commit_options().sync && !self.ctx.defer_durability {
            return false;
        }
        if self.prepared.get(&id).is_none_or(|p| p.may_wait) {
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
        (*epoch == self.ctx.db.epoch() && *db == self.ctx.current_db).then_some(plan.as_ref())
    }

    /// Whether executing prepared statement `id` now is a short read
    /// that never waits: its cached plan is current and is a SELECT
    /// without FOR UPDATE / FOR SHARE whose every table is read at key
    /// points (every column of an index bound by equalities, or an IN list
    /// of points after them). Such a read takes no lock and waits for no
    /// writer; the server runs it on its network thread.
    pub fn is_quick_read(&self, id: u32) -> bool {
        if self.prepared.get(&id).is_none_or(|p| p.may_wait) {
            return false;
        }
        let Some(crate::plan::Plan::Select(sel)) = self.current_plan(id) else {
            return false;
        };
        sel.lock.is_none()
            && !sel.subqueries
            && !sel.waits
            && sel.sources.iter().all(crate::plan::Source::is_key_points)
    }

    /// COM_STMT_CLOSE.
    pub fn close_statement(&mut self, id: u32) {
        self.ctx.info.count(crate::status::Com::StmtClose);
        if self.ctx.db.globals.logs.flags() & crate::querylog::GENERAL != 0 {
            self.ctx
                .db
                .globals
                .logs
                .general(self.ctx.conn_id, "Close stmt", "");
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
            let epoch = self.ctx.db.epoch();
            let r = match crate::plan::compile_with_order(&self.ctx, ast, order)? {
                Some(plan) => self.run_plan(&plan, epoch, out),
                None => return crate::ddl::run(&mut self.ctx, ast, out),
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
            self.ctx.with_write_txn(|s| {
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
            if !self.ctx.autocommit && self.ctx.txn.is_none() {
                self.ctx.begin_txn(false);
            }
            crate::exec::run(&mut self.ctx, plan, out)
        }
    }

    fn run_pre(&mut self, pre: Pre, out: &mut dyn Output) -> SqlResult<()> {
        match pre {
            Pre::Begin => {
                self.ctx.commit()?;
                self.ctx.begin_txn(true);
                out.ok(0, 0, 0, "");
            }
            Pre::Commit => {
                self.ctx.commit()?;
                out.ok(0, 0, 0, "");
            }
            Pre::Rollback => {
                if let Some(mut t) = self.ctx.txn.take() {
                    let _ = t.txn.rollback();
                    self.ctx.info.handler_one(crate::status::Handler::Rollback);
                }
                out.ok(0, 0, 0, "");
            }
            Pre::Savepoint(name) => {
                if self.ctx.txn.is_none() {
                    if self.ctx.autocommit {
                        // MySQL accepts it and forgets it at once.
                        out.ok(0, 0, 0, "");
                        return Ok(());
                    }
                    self.ctx.begin_txn(false);
                }
                if let Some(t) = self.ctx.txn.as_mut() {
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
                let t = self.ctx.txn.as_mut().ok_or_else(missing)?;
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
                let name = match name.or_else(|| self.ctx.current_db.clone()) {
                    Some(n) => n,
                    None => return Err(SqlError::no_database()),
                };
                if self.ctx.db.catalog.read().database(&name).is_none() {
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
            Pre::Show(s) => crate::show::run(&mut self.ctx, s, out)?,
            Pre::Nothing => out.ok(0, 0, 0, ""),
            Pre::Flush {
                hosts,
                logs,
                user_resources,
            } => {
                crate::acl::check_global(&self.ctx, crate::acl::RELOAD, "RELOAD")?;
                if hosts {
                    self.ctx.db.globals.flush_hosts();
                }
                if user_resources {
                    self.ctx.db.registry.reset_hourly(None);
                }
                if logs {
                    self.ctx.db.globals.logs.reopen()?;
                }
                out.ok(0, 0, 0, "");
            }
            Pre::Optimize(tables) => crate::ddl::optimize(&self.ctx, &tables, out)?,
            Pre::Analyze(tables) => crate::stats::analyze(&self.ctx, &tables, out)?,
            Pre::LockTables(tables) => {
                crate::acl::check_lock_tables(&self.ctx, &tables)?;
                out.ok(0, 0, 0, "");
            }
            Pre::AlterTable(text) => crate::alter::run(&mut self.ctx, &text, out)?,
            Pre::Acl(st) => crate::acl::run(&mut self.ctx, st, out)?,
            Pre::Backup(dir) => crate::backup::run(&mut self.ctx, &dir, out)?,
            Pre::Prepare(name, from) => {
                let text = match from {
                    crate::preparse::PrepareFrom::Text(t) => t,
                    crate::preparse::PrepareFrom::Var(v) => match self.ctx.user_vars.get(&v) {
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
                    .map(|v| self.ctx.user_vars.get(v).cloned().unwrap_or(Value::Null))
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
        let t = self.ctx.txn.as_mut().ok_or_else(missing)?;
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
                self.ctx.isolation = Isolation::parse(&level, "transaction_isolation")?;
                Ok(())
            }
            SetItem::Isolation(VarScope::Global, _) | SetItem::ReadOnly(..) => Ok(()),
            SetItem::User(name, expr) => {
                let v = self.ctx.eval_const(&expr)?;
                self.ctx.user_vars.insert(name, v);
                Ok(())
            }
            SetItem::Var(scope, name, expr) => {
                let v = match expr.to_ascii_uppercase().as_str() {
                    "DEFAULT" => vars::default_of(&name).unwrap_or(Value::Null),
                    "ON" => Value::Int(1),
                    "OFF" => Value::Int(0),
                    _ => self.ctx.eval_const(&expr)?,
                };
                vars::set(&mut self.ctx, scope, &name, v)
            }
        }
    }
}

/// MySQL's error for an account over one of its resource limits.
fn limit_reached(user: &str, what: &str, n: u32) -> SqlError {
    SqlError::new(
        1226,
        "42000",
        format!("User '{user}' has exceeded the '{what}' resource (current value: {n})"),
    )
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.ctx.who.is_some() {
            self.log_general("Quit", "");
        }
        self.ctx.db.registry.remove(self.ctx.conn_id);
    }
}
