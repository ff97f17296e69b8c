//! The protocol's backend: a [`cairndb_sql::Session`] per connection,
//! answering the commands `cairndb-server` reads off the wire.
//!
//! This module only adapts: each command goes to the session, its
//! `Output` calls become the protocol's `Results` calls, values become
//! `RowWriter` calls (no allocation per row), and SQL errors keep their
//! MySQL codes. A panic inside a statement is caught here and becomes
//! error 1105 for that statement; the session is then replaced by a fresh
//! one, so neither the connection nor the server goes down.
//!
//! Locking: none of its own. A connection's `SqlConn` is used by one task
//! at a time (the protocol server's contract); what sessions share lives
//! in `SqlDb`, which locks for itself.

use std::sync::Arc;

use cairndb_server::{Backend, Column, ColumnFlags, ColumnType, Prepared, Results, StatusFlags};
use cairndb_sql::{
    split_statements, ColumnInfo, OutType, Output, Plugin, Session, SqlDb, Transport, Value,
};

/// The backend: one SQL database, a session per connection.
pub struct SqlBackend {
    db: Arc<SqlDb>,
    /// Sessions leave their commits' syncs to the connection's task
    /// (`--commit-wait=task`).
    commit_wait_task: bool,
    /// The server's TLS settings, copied into each session with the
    /// connection's TLS session.
    transport: Transport,
}

impl SqlBackend {
    /// A backend serving `db`. With `commit_wait_task`, a synced commit
    /// is waited for by the connection's task (`Session::poll_durable`)
    /// rather than inside the write; `transport` is the server's TLS
    /// settings as sessions report them.
    pub fn new(db: Arc<SqlDb>, commit_wait_task: bool, transport: Transport) -> SqlBackend {
        SqlBackend {
            db,
            commit_wait_task,
            transport,
        }
    }
}

/// A connection's session.
pub struct SqlConn {
    s: Session,
    /// The last result set's column definitions, reused while a statement
    /// answers with the same columns (a prepared point select sends them
    /// with every execution; building them cloned five strings a column).
    cols: Vec<Column>,
    /// An execution's parameters, reused across executions.
    vals: Vec<Value>,
    commit_wait_task: bool,
    /// Closes this connection (`KILL CONNECTION`).
    closer: Option<cairndb_server::Closer>,
}

impl SqlConn {
    /// Runs `f` on the session; a panic in it becomes error 1105 for this
    /// statement, and the session is replaced by a fresh one (same user
    /// and current database; its transaction rolled back), so the
    /// connection goes on and the server never goes down.
    fn guarded<T>(
        &mut self,
        f: impl FnOnce(&mut Session, &mut Vec<Column>) -> Result<T, cairndb_sql::SqlError>,
    ) -> Result<T, cairndb_sql::SqlError> {
        let (s, cols) = (&mut self.s, &mut self.cols);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(s, cols))) {
            Ok(r) => r,
            Err(payload) => {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown".into());
                let current = self.s.database().map(str::to_string);
                // The same account and privileges, nothing else.
                let mut fresh = self.s.fresh();
                fresh.set_deferred_durability(self.commit_wait_task);
                fresh.set_transport(self.s.transport().clone());
                fresh.info().set_host(&self.s.info().host());
                if let Some(closer) = self.closer.clone() {
                    fresh.info().on_kill(move || closer.close());
                }
                if let Some(d) = current {
                    let _ = fresh.use_database(&d);
                }
                let old = std::mem::replace(&mut self.s, fresh);
                // Dropping what the panic left may panic too.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(old)));
                self.cols.clear();
                Err(cairndb_sql::SqlError::internal(format!(
                    "the statement failed inside the server ({what}); the session was reset \
                     and its transaction rolled back"
                )))
            }
        }
    }
}

fn to_wire(e: cairndb_sql::SqlError) -> cairndb_server::SqlError {
    let mut state = [b'H', b'Y', b'0', b'0', b'0'];
    for (d, b) in state.iter_mut().zip(e.state.bytes()) {
        *d = b;
    }
    cairndb_server::SqlError::new(e.code, &state, e.message)
}

impl Backend for SqlBackend {
    type Session = SqlConn;

    fn open_session_with(
        &self,
        conn: &cairndb_server::ConnInfo,
    ) -> Result<SqlConn, cairndb_server::SqlError> {
        let s = Session::login(self.db.clone(), &conn.user, &conn.host).map_err(to_wire)?;
        let mut c = self.conn(s, conn.db.as_deref())?;
        let mut t = self.transport.clone();
        if let Some(tls) = &conn.tls {
            t.ssl_version = tls.version.to_string();
            t.ssl_cipher = tls.cipher.to_string();
        }
        c.s.set_transport(t);
        if conn.interactive {
            c.s.set_interactive();
        }
        c.s.info().set_host(&conn.host);
        let closer = conn.closer.clone();
        c.s.info().on_kill(move || closer.close());
        c.closer = Some(conn.closer.clone());
        if c.s.general_log_on() {
            let how = if conn.tls.is_some() {
                "SSL/TLS"
            } else {
                "TCP/IP"
            };
            let db = conn.db.as_deref().unwrap_or("");
            let arg = format!("{}@{} on {db} using {how}", conn.user, conn.host);
            c.s.log_general("Connect", &arg);
        }
        Ok(c)
    }

    /// A session of `user` logged in from loopback (the server calls
    /// [`Backend::open_session_with`], which knows the client's host).
    fn open_session(
        &self,
        _conn_id: u32,
        user: &str,
        db: Option<&str>,
    ) -> Result<SqlConn, cairndb_server::SqlError> {
        let s = Session::login(self.db.clone(), user, "127.0.0.1").map_err(to_wire)?;
        self.conn(s, db)
    }

    fn has_accounts(&self) -> bool {
        true
    }

    fn lookup_account(&self, user: &str, host: &str) -> Option<cairndb_server::AccountAuth> {
        let check = {
            let db = self.db.clone();
            let (user, host) = (user.to_string(), host.to_string());
            std::sync::Arc::new(move |pw: &[u8]| db.check_password(&user, &host, pw))
        };
        let Some(a) = self.db.lookup_account(user, host) else {
            // No such account: answered as a caching_sha2 account whose
            // password nobody knows, checked at the cost of a real one,
            // so neither the exchange nor its time tells that the name
            // does not exist.
            return Some(cairndb_server::AccountAuth {
                plugin: cairndb_server::AuthPlugin::CachingSha2Password,
                check: Some(check),
                ..Default::default()
            });
        };
        let mut out = cairndb_server::AccountAuth {
            require_ssl: a.require_ssl,
            connection_admin: a.connection_admin,
            empty_password: a.hash.is_empty(),
            ..Default::default()
        };
        match a.plugin {
            Plugin::Native => {
                out.plugin = cairndb_server::AuthPlugin::MysqlNativePassword;
                out.native = a.hash.as_slice().try_into().ok();
            }
            Plugin::CachingSha2 => {
                out.plugin = cairndb_server::AuthPlugin::CachingSha2Password;
                out.sha2 = a.fast_sha2;
            }
        }
        if !out.empty_password {
            // Full authentication: the salted string is checked by the
            // account store (which then caches the fast-auth value).
            out.check = Some(check);
        }
        Some(out)
    }
}

impl SqlBackend {
    /// The connection's state around session `s`, on database `db` if the
    /// client named one.
    fn conn(&self, mut s: Session, db: Option<&str>) -> Result<SqlConn, cairndb_server::SqlError> {
        // Set from the client's CLIENT_FOUND_ROWS before each command.
        s.set_client_found_rows(false);
        s.set_deferred_durability(self.commit_wait_task);
        if let Some(d) = db.filter(|d| !d.is_empty()) {
            s.use_database(d).map_err(to_wire)?;
        }
        Ok(SqlConn {
            s,
            cols: Vec::new(),
            vals: Vec::new(),
            commit_wait_task: self.commit_wait_task,
            closer: None,
        })
    }
}

fn status(s: &Session) -> StatusFlags {
    let mut f = StatusFlags::empty();
    if s.autocommit() {
        f |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
    }
    if s.in_transaction() {
        f |= StatusFlags::SERVER_STATUS_IN_TRANS;
    }
    f
}

fn column(c: &ColumnInfo) -> Column {
    let (ty, flags) = type_and_flags(c);
    Column {
        schema: c.schema.clone().into(),
        table: c.table.clone().into(),
        org_table: c.org_table.clone().into(),
        name: c.name.clone().into(),
        org_name: c.org_name.clone().into(),
        col_type: ty,
        flags,
        charset: c.charset,
        length: c.length,
        decimals: c.decimals,
    }
}

/// The protocol's type and flags of a result column.
fn type_and_flags(c: &ColumnInfo) -> (ColumnType, ColumnFlags) {
    let ty = match c.ty {
        OutType::Tiny => ColumnType::MYSQL_TYPE_TINY,
        OutType::Short => ColumnType::MYSQL_TYPE_SHORT,
        OutType::Int24 => ColumnType::MYSQL_TYPE_INT24,
        OutType::Long => ColumnType::MYSQL_TYPE_LONG,
        OutType::LongLong => ColumnType::MYSQL_TYPE_LONGLONG,
        OutType::NewDecimal => ColumnType::MYSQL_TYPE_NEWDECIMAL,
        OutType::Float => ColumnType::MYSQL_TYPE_FLOAT,
        OutType::Double => ColumnType::MYSQL_TYPE_DOUBLE,
        OutType::String => ColumnType::MYSQL_TYPE_STRING,
        OutType::VarString => ColumnType::MYSQL_TYPE_VAR_STRING,
        OutType::Blob => ColumnType::MYSQL_TYPE_BLOB,
        OutType::Date => ColumnType::MYSQL_TYPE_DATE,
        OutType::DateTime => ColumnType::MYSQL_TYPE_DATETIME,
        OutType::Timestamp => ColumnType::MYSQL_TYPE_TIMESTAMP,
        OutType::Null => ColumnType::MYSQL_TYPE_NULL,
        OutType::Year => ColumnType::MYSQL_TYPE_YEAR,
        OutType::Time => ColumnType::MYSQL_TYPE_TIME,
        OutType::Bit => ColumnType::MYSQL_TYPE_BIT,
        OutType::Json => ColumnType::MYSQL_TYPE_JSON,
    };
    let mut flags = ColumnFlags::empty();
    if c.not_null {
        flags |= ColumnFlags::NOT_NULL_FLAG;
    }
    if c.primary_key {
        flags |= ColumnFlags::PRI_KEY_FLAG;
    }
    if c.unsigned {
        flags |= ColumnFlags::UNSIGNED_FLAG;
    }
    if c.auto_increment {
        flags |= ColumnFlags::AUTO_INCREMENT_FLAG;
    }
    if c.unique_key {
        flags |= ColumnFlags::UNIQUE_KEY_FLAG;
    }
    if c.multiple_key {
        flags |= ColumnFlags::MULTIPLE_KEY_FLAG;
    }
    if c.binary {
        flags |= ColumnFlags::BINARY_FLAG;
    }
    if matches!(c.ty, OutType::Blob | OutType::Json) {
        flags |= ColumnFlags::BLOB_FLAG;
    }
    if c.is_enum {
        flags |= ColumnFlags::ENUM_FLAG;
    }
    if c.is_set {
        flags |= ColumnFlags::SET_FLAG;
    }
    if matches!(c.ty, OutType::Year) {
        flags |= ColumnFlags::ZEROFILL_FLAG;
    }
    if matches!(
        c.ty,
        OutType::Tiny
            | OutType::Short
            | OutType::Int24
            | OutType::Long
            | OutType::LongLong
            | OutType::NewDecimal
            | OutType::Float
            | OutType::Double
            | OutType::Year
    ) {
        flags |= ColumnFlags::NUM_FLAG;
    }
    (ty, flags)
}

/// Whether `d` is the definition [`column`] makes of `c` (no allocation).
fn defines(d: &Column, c: &ColumnInfo) -> bool {
    let (ty, flags) = type_and_flags(c);
    d.col_type == ty
        && d.flags == flags
        && d.charset == c.charset
        && d.length == c.length
        && d.decimals == c.decimals
        && d.name == c.name
        && d.org_name == c.org_name
        && d.table == c.table
        && d.org_table == c.org_table
        && d.schema == c.schema
}

/// `Output` over the protocol's `Results`.
struct Adapter<'a> {
    out: &'a mut dyn Results,
    /// The connection's column definitions of its last result set.
    cols: &'a mut Vec<Column>,
    /// Whether a column of the result set is a YEAR or a BIT, whose
    /// integers go out in their own forms (set by `columns`).
    special: bool,
}

impl Output for Adapter<'_> {
    fn ok(&mut self, affected: u64, last_insert_id: u64, warnings: u16, info: &str) {
        self.out.ok(affected, last_insert_id, warnings, info);
    }

    fn columns(&mut self, cols: &[ColumnInfo]) {
        let same =
            self.cols.len() == cols.len() && self.cols.iter().zip(cols).all(|(d, c)| defines(d, c));
        if !same {
            self.cols.clear();
            self.cols.extend(cols.iter().map(column));
        }
        self.special = cols
            .iter()
            .any(|c| matches!(c.ty, OutType::Year | OutType::Bit));
        self.out.begin_result_set(self.cols);
    }

    fn row(&mut self, values: &[Value]) {
        let w = self.out.row();
        for (i, v) in values.iter().enumerate() {
            match v {
                Value::Null => w.null(),
                Value::Int(y)
                    if self.special
                        && (0..1000).contains(y)
                        && self
                            .cols
                            .get(i)
                            .is_some_and(|c| c.col_type == ColumnType::MYSQL_TYPE_YEAR) =>
                {
                    // YEAR is ZEROFILL: 0 is `0000`.
                    w.bytes(format!("{y:04}").as_bytes())
                }
                Value::Int(i) => w.int(*i),
                Value::UInt(u)
                    if self.special
                        && self
                            .cols
                            .get(i)
                            .is_some_and(|c| c.col_type == ColumnType::MYSQL_TYPE_BIT) =>
                {
                    // BIT(n) goes out as its (n + 7) / 8 big-endian bytes.
                    let n = self.cols.get(i).map_or(64, |c| c.length).clamp(1, 64);
                    let be = u.to_be_bytes();
                    w.bytes(be.get(8 - n.div_ceil(8) as usize..).unwrap_or(&be))
                }
                Value::UInt(u) => w.uint(*u),
                Value::Double(f) => w.double(*f),
                Value::Decimal(d, s) => {
                    w.bytes(cairndb_sql::value::format_decimal(*d, *s).as_bytes())
                }
                Value::Str(b) => w.bytes(b),
                Value::Date(d) => {
                    let (y, m, dd) = cairndb_sql::value::unpack_date(*d);
                    w.date(y as u16, m as u8, dd as u8);
                }
                Value::DateTime(t) => {
                    let (d, h, mi, s, us) = cairndb_sql::value::unpack_datetime(*t);
                    let (y, m, dd) = cairndb_sql::value::unpack_date(d);
                    w.datetime(cairndb_server::DateTime {
                        year: y as u16,
                        month: m as u8,
                        day: dd as u8,
                        hour: h as u8,
                        minute: mi as u8,
                        second: s as u8,
                        micros: us,
                    });
                }
                Value::Time(us) => {
                    let a = us.unsigned_abs();
                    let secs = a / 1_000_000;
                    let hours = secs / 3600;
                    w.time(cairndb_server::Time {
                        negative: *us < 0,
                        days: (hours / 24) as u32,
                        hours: (hours % 24) as u8,
                        minutes: ((secs / 60) % 60) as u8,
                        seconds: (secs % 60) as u8,
                        micros: (a % 1_000_000) as u32,
                    });
                }
                Value::Member(_, s) => w.bytes(s),
                // A document goes out as its text.
                Value::Json(_) => w.bytes(&cairndb_sql::value::text_of(v)),
            }
        }
        w.finish();
    }

    fn end(&mut self, warnings: u16) {
        self.out.end_result_set(warnings);
    }
}

fn param(v: &cairndb_server::Value<'_>) -> Value {
    use cairndb_server::Value as W;
    match v {
        W::Null => Value::Null,
        W::Int(i) => Value::Int(*i),
        W::UInt(u) => Value::UInt(*u),
        W::Float(f) => Value::Double(f64::from(*f)),
        W::Double(f) => Value::Double(*f),
        W::Bytes(b) => Value::Str(b.to_vec()),
        W::DateTime(d) => {
            let date = cairndb_sql::value::pack_date(
                u32::from(d.year),
                u32::from(d.month),
                u32::from(d.day),
            );
            Value::DateTime(cairndb_sql::value::pack_datetime(
                date,
                u32::from(d.hour),
                u32::from(d.minute),
                u32::from(d.second),
                d.micros,
            ))
        }
        W::Time(t) => {
            let secs = (i64::from(t.days) * 24 + i64::from(t.hours)) * 3600
                + i64::from(t.minutes) * 60
                + i64::from(t.seconds);
            let us = secs * 1_000_000 + i64::from(t.micros);
            Value::Time(if t.negative { -us } else { us })
        }
    }
}

impl cairndb_server::Session for SqlConn {
    fn is_quick(&self, stmt: u32) -> bool {
        self.s.is_quick_read(stmt) || self.s.is_quick_write(stmt)
    }

    fn idle_timeout(&self) -> Option<std::time::Duration> {
        self.s.wait_timeout()
    }

    fn traffic(&mut self, received: u64, sent: u64) {
        self.s.info().add_traffic(received, sent);
    }

    fn net_timeouts(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        Some(self.s.net_timeouts())
    }

    fn poll_durable(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), cairndb_server::SqlError>> {
        self.s.poll_durable(cx).map_err(to_wire)
    }

    fn query_bytes(&mut self, sql: &[u8], out: &mut dyn Results) {
        match cairndb_sql::binary_literals(sql) {
            Some(text) => self.query(&text, out),
            None => out.error(cairndb_server::SqlError::invalid_utf8()),
        }
    }

    fn query(&mut self, sql: &str, out: &mut dyn Results) {
        let stmts = split_statements(sql);
        if stmts.is_empty() {
            out.error(cairndb_server::SqlError::new(
                1065,
                b"42000",
                "Query was empty",
            ));
            return;
        }
        if stmts.len() > 1 && !out.multi_statements() {
            out.error(to_wire(cairndb_sql::SqlError::syntax(
                "several statements in one query (the client has not enabled multi-statements)",
            )));
            return;
        }
        self.s.set_client_found_rows(out.client_found_rows());
        for st in stmts {
            let r = self.guarded(|s, cols| {
                let mut a = Adapter {
                    out: &mut *out,
                    cols,
                    special: false,
                };
                s.query(st, &mut a)
            });
            out.set_status(status(&self.s));
            if let Err(e) = r {
                out.error(to_wire(e));
                return;
            }
        }
    }

    fn prepare(&mut self, stmt: u32, sql: &str) -> Result<Prepared, cairndb_server::SqlError> {
        let p = self
            .guarded(|s, _| s.prepare_as(stmt, sql))
            .map_err(to_wire)?;
        Ok(Prepared {
            params: p.params,
            columns: p.columns.iter().map(column).collect(),
        })
    }

    fn execute(&mut self, stmt: u32, params: &[cairndb_server::Value<'_>], out: &mut dyn Results) {
        self.vals.clear();
        self.vals.extend(params.iter().map(param));
        self.s.set_client_found_rows(out.client_found_rows());
        let vals = std::mem::take(&mut self.vals);
        let r = self.guarded(|s, cols| {
            let mut a = Adapter {
                out: &mut *out,
                cols,
                special: false,
            };
            s.execute(stmt, &vals, &mut a)
        });
        self.vals = vals;
        // Parameters may hold long strings; keep only the slots.
        self.vals.clear();
        out.set_status(status(&self.s));
        if let Err(e) = r {
            out.error(to_wire(e));
        }
    }

    fn close_statement(&mut self, stmt: u32) {
        self.s.close_statement(stmt);
    }

    fn reset_statement(&mut self, _stmt: u32) {}

    fn init_db(&mut self, db: &str) -> Result<(), cairndb_server::SqlError> {
        self.s.log_general("Init DB", db);
        self.s.use_database(db).map_err(to_wire)
    }

    fn reset_connection(&mut self) {
        self.s.reset();
    }

    fn status(&self) -> StatusFlags {
        status(&self.s)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    type R = Result<(), Box<dyn std::error::Error>>;

    /// A panic inside a statement is error 1105 for it; the connection
    /// goes on with a fresh session, its transaction rolled back.
    #[test]
    fn panic_in_a_statement_is_an_error_and_the_session_is_reset() -> R {
        let dir = tempfile::tempdir()?;
        let db = SqlDb::open(dir.path(), cairndb_sql::SqlOptions::default())?;
        db.bootstrap_accounts("")?;
        let backend = SqlBackend::new(db.clone(), false, Transport::default());
        let mut c = backend
            .open_session(1, "root", None)
            .map_err(|e| e.message.clone())?;
        let mut out = cairndb_sql::Collect::default();
        for sql in [
            "CREATE DATABASE d",
            "USE d",
            "CREATE TABLE t (id INT PRIMARY KEY)",
            "BEGIN",
            "INSERT INTO t VALUES (1)",
        ] {
            c.s.query(sql, &mut out)?;
        }
        let r = c.guarded(|_, _| -> Result<(), cairndb_sql::SqlError> { panic!("boom") });
        let Err(e) = r else {
            return Err("a panic came back as success".into());
        };
        assert_eq!(e.code, 1105);
        assert!(e.message.contains("boom"), "{}", e.message);
        // A fresh session in the same database; the insert rolled back.
        assert!(!c.s.in_transaction());
        let mut out = cairndb_sql::Collect::default();
        c.s.query("SELECT COUNT(*) FROM t", &mut out)?;
        let n = out
            .rows
            .first()
            .and_then(|r| r.first())
            .map(|v| v.to_string());
        assert_eq!(n.as_deref(), Some("0"));
        Ok(())
    }

    /// A connection reuses its last result set's column definitions only
    /// while the columns are the same: any field that differs (a label, a
    /// table, the type, a flag, the length) makes new ones.
    #[test]
    fn column_definitions_are_reused_only_for_the_same_columns() {
        let mut c = ColumnInfo::computed("c", OutType::VarString);
        c.schema = "sbtest".into();
        c.table = "t".into();
        c.org_table = "sbtest1".into();
        c.org_name = "c".into();
        let d = column(&c);
        assert!(defines(&d, &c));
        let changes: [&dyn Fn(&mut ColumnInfo); 9] = [
            &|c| c.name = "pad".into(),
            &|c| c.org_name = "pad".into(),
            &|c| c.table = "u".into(),
            &|c| c.org_table = "sbtest2".into(),
            &|c| c.schema = "other".into(),
            &|c| c.ty = OutType::Long,
            &|c| c.not_null = true,
            &|c| c.length += 1,
            &|c| c.charset = 63,
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = c.clone();
            change(&mut other);
            assert!(!defines(&d, &other), "change {i} kept the old definition");
            assert!(defines(&column(&other), &other));
        }
    }
}
