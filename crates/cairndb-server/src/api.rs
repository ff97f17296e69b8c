//! The interface between the protocol layer and the SQL layer: the
//! [`Backend`] and [`Session`] traits the SQL layer implements, the
//! [`Results`] and [`RowWriter`] sinks this crate implements, and the plain
//! data types that cross between them.
//!
//! Invariants: a session is driven by one connection and called from one
//! thread at a time (it is `Send`, not `Sync`). Nothing here allocates per
//! row: a row is written value by value into the connection's buffer, and
//! parameters borrow the command packet.

use std::borrow::Cow;
use std::fmt;

use mysql_common::constants::{ColumnFlags, ColumnType, StatusFlags};

/// The SQL layer's factory of sessions. One per server.
pub trait Backend: Send + Sync + 'static {
    /// The per-connection state of the SQL layer.
    type Session: Session;

    /// Called after authentication succeeds, with the connection id, the
    /// user name and the database named in the handshake
    /// (CLIENT_CONNECT_WITH_DB), if any. An error is sent to the client and
    /// the connection is closed (1049 for an unknown database, say).
    fn open_session(
        &self,
        conn_id: u32,
        user: &str,
        db: Option<&str>,
    ) -> Result<Self::Session, SqlError>;

    /// Called after authentication succeeds, with what is known of the
    /// connection (its TLS session, for `Ssl_cipher`). Default:
    /// [`Backend::open_session`].
    fn open_session_with(&self, conn: &ConnInfo) -> Result<Self::Session, SqlError> {
        self.open_session(conn.id, &conn.user, conn.db.as_deref())
    }

    /// Whether the backend keeps the accounts ([`Backend::lookup_account`]);
    /// false (the default): the server's [`Config::users`](crate::Config)
    /// are the accounts.
    fn has_accounts(&self) -> bool {
        false
    }

    /// The account `user` connecting from `host` (the client's IP
    /// address) logs in as, with what verifies its password; None when no
    /// account matches (the login gets 1045). A backend may instead
    /// answer with an account that behaves as a real one whose password
    /// nobody knows (its `check` always false), so that a login under a
    /// name that does not exist looks and takes as long as a wrong
    /// password. Called once per login, on
    /// the connection's task: it must not block for long. Default: None.
    fn lookup_account(&self, user: &str, host: &str) -> Option<AccountAuth> {
        let _ = (user, host);
        None
    }
}

/// A backend's check of a clear password for one account.
pub type PasswordCheck = std::sync::Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// How an account logs in, as a backend keeps it: hashes of the
/// password, never the password.
#[derive(Clone, Default)]
pub struct AccountAuth {
    /// The account's plugin: a client that answers with another plugin
    /// whose hash is not kept is switched to this one.
    pub plugin: crate::AuthPlugin,
    /// `SHA1(SHA1(password))`, what verifies a mysql_native_password
    /// scramble.
    pub native: Option<[u8; 20]>,
    /// `SHA256(SHA256(password))`, what verifies a caching_sha2_password
    /// scramble (fast authentication): kept by a backend that stores it,
    /// or known from the backend's cache. None for a caching_sha2 account:
    /// every scramble gets full authentication, checked by `check`.
    pub sha2: Option<[u8; 32]>,
    /// Checks a clear password (full authentication) where the hashes
    /// above cannot: a backend that keeps salted strings (MySQL's
    /// `$A$005$...`) verifies them here. Called at most once per login,
    /// on the connection's task (a few milliseconds of hashing).
    pub check: Option<PasswordCheck>,
    /// Neither hash: the password is empty, and only an empty answer logs
    /// in.
    pub empty_password: bool,
    /// A login over plain TCP is refused (1045).
    pub require_ssl: bool,
    /// The account holds SUPER or CONNECTION_ADMIN: it may take the one
    /// connection kept beyond `max_connections`.
    pub connection_admin: bool,
}

impl AccountAuth {
    /// Both hashes of `password` (an account of [`Config::users`](crate::Config),
    /// allowed to log in with either plugin).
    pub fn from_password(password: &str) -> AccountAuth {
        use sha1::Digest;
        if password.is_empty() {
            return AccountAuth {
                empty_password: true,
                ..Default::default()
            };
        }
        let p = password.as_bytes();
        AccountAuth {
            native: Some(sha1::Sha1::digest(sha1::Sha1::digest(p)).into()),
            sha2: Some(sha2::Sha256::digest(sha2::Sha256::digest(p)).into()),
            ..Default::default()
        }
    }
}

impl fmt::Debug for AccountAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountAuth")
            .field("plugin", &self.plugin)
            .field("empty_password", &self.empty_password)
            .field("require_ssl", &self.require_ssl)
            .finish_non_exhaustive()
    }
}

/// What the backend learns of a connection when it opens its session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnInfo {
    /// The connection id (as in the greeting).
    pub id: u32,
    pub user: String,
    /// The database named in the handshake, if any.
    pub db: Option<String>,
    /// The client's IP address.
    pub host: String,
    /// The TLS session, when the connection is secured.
    pub tls: Option<crate::tls::TlsInfo>,
    /// Closes this connection from elsewhere (`KILL CONNECTION`).
    pub closer: Closer,
    /// The client said it is interactive (CLIENT_INTERACTIVE): MySQL
    /// gives it `interactive_timeout` as its `wait_timeout`.
    pub interactive: bool,
}

/// Closes one connection from any thread: the connection stops waiting
/// for its next command (or ends after the command in flight), and its
/// session is dropped, rolling back its transaction.
#[derive(Debug, Clone, Default)]
pub struct Closer(pub(crate) std::sync::Arc<tokio::sync::Notify>);

impl Closer {
    /// Asks the connection to close.
    pub fn close(&self) {
        self.0.notify_one();
    }
}

/// One connection's SQL state: its transaction, its prepared statements,
/// its current database. Dropped (on a blocking-capable thread) when the
/// connection ends, which is where an open transaction rolls back.
pub trait Session: Send + 'static {
    /// COM_QUERY. `sql` may hold several `;`-separated statements when
    /// `out.multi_statements()` is true; the session splits them and
    /// reports one result per statement, in order, stopping after the
    /// first error (see [`Results`] for how results follow each other).
    /// With multi-statements off a second statement is a syntax error.
    fn query(&mut self, sql: &str, out: &mut dyn Results);

    /// COM_QUERY whose text is not UTF-8 (raw bytes in a string literal,
    /// as mysqldump writes binary columns). By default error 1300; a
    /// session that can read such text overrides it.
    fn query_bytes(&mut self, sql: &[u8], out: &mut dyn Results) {
        let _ = sql;
        out.error(SqlError::invalid_utf8());
    }

    /// COM_STMT_PREPARE. `stmt` is the id the protocol layer gave the
    /// statement (unique within the connection, never reused); `execute`,
    /// `close_statement` and `reset_statement` name it.
    fn prepare(&mut self, stmt: u32, sql: &str) -> Result<Prepared, SqlError>;

    /// COM_STMT_EXECUTE with the parameters decoded from the binary
    /// protocol (as many as `prepare` declared; long data already
    /// appended). Results are encoded in the binary protocol.
    fn execute(&mut self, stmt: u32, params: &[Value<'_>], out: &mut dyn Results);

    /// COM_STMT_CLOSE. No answer goes to the client.
    fn close_statement(&mut self, stmt: u32);

    /// COM_STMT_RESET (the protocol layer drops the long data itself).
    fn reset_statement(&mut self, stmt: u32);

    /// COM_INIT_DB (`USE db` from the client library).
    fn init_db(&mut self, db: &str) -> Result<(), SqlError>;

    /// COM_RESET_CONNECTION: roll back, drop prepared statements, user
    /// variables and temporary state, as if newly opened.
    fn reset_connection(&mut self);

    /// Current status flags (AUTOCOMMIT, IN_TRANS, ...), read before and
    /// after every command: the last OK or EOF of a command carries the
    /// value read after it.
    fn status(&self) -> StatusFlags;

    /// Whether executing prepared statement `stmt` now is short and never
    /// waits (a read of a few keys that takes no lock): the server then
    /// runs it on the connection's own task instead of through the
    /// [`Executor`](crate::Executor), saving the thread hand-off. A wrong
    /// `true` only delays the other connections of that worker thread.
    /// Default: false.
    fn is_quick(&self, stmt: u32) -> bool {
        let _ = stmt;
        false
    }

    /// The bytes read from and written to the client since the last call
    /// (MySQL's `Bytes_received` and `Bytes_sent`): told before each
    /// command (the first report holds the handshake's) and once more
    /// before the session is dropped. Called on the thread that runs
    /// the command; it must be cheap. Default: ignored.
    fn traffic(&mut self, received: u64, sent: u64) {
        let _ = (received, sent);
    }

    /// The session's `net_read_timeout` and `net_write_timeout`, read
    /// after every command: how long the connection waits for the rest of
    /// a command the client began sending, and for the client to take
    /// (part of) an answer, before it closes. None for the server's
    /// [`Config`](crate::Config) values. Default: None.
    fn net_timeouts(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        None
    }

    /// How long the connection may wait for its next command (the
    /// session's `wait_timeout`), read after every command; None for the
    /// server's [`Config::wait_timeout`](crate::Config). Default: None.
    fn idle_timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// What the last command's answer waits for before it is sent: the
    /// sync of the commits it made, when the session leaves that to the
    /// connection (so the wait parks this task, not a thread). `Pending`
    /// registers the task's waker; `Ready(Err)` means the commits are not
    /// durable: the connection answers with that error instead and closes.
    /// Default: ready at once (commits synced before they return).
    fn poll_durable(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), SqlError>> {
        let _ = cx;
        std::task::Poll::Ready(Ok(()))
    }
}

/// What `prepare` tells the client about a statement.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// Number of `?` placeholders.
    pub params: u16,
    /// The result columns, empty for a statement without a result set.
    pub columns: Vec<Column>,
}

/// A column definition of a result set.
#[derive(Debug, Clone)]
pub struct Column {
    pub schema: Cow<'static, str>,
    /// The table as the query names it (its alias, if any).
    pub table: Cow<'static, str>,
    /// The table itself ("" for a computed column).
    pub org_table: Cow<'static, str>,
    /// The column label (its alias, if any).
    pub name: Cow<'static, str>,
    /// The column itself ("" for a computed column); Connector/J's
    /// `getColumnName` reads it.
    pub org_name: Cow<'static, str>,
    pub col_type: ColumnType,
    pub flags: ColumnFlags,
    /// Collation id: [`Column::UTF8MB4`] (45) for text, [`Column::BINARY`]
    /// (63) for numbers, temporal values and blobs.
    pub charset: u16,
    /// Display length (bytes for text).
    pub length: u32,
    /// Digits after the point: 0 for integers, 0..=6 for temporal values
    /// (fractional seconds shown), 31 for a float without a fixed scale.
    pub decimals: u8,
}

impl Column {
    /// utf8mb4_general_ci.
    pub const UTF8MB4: u16 = 45;
    /// binary.
    pub const BINARY: u16 = 63;

    /// A column of any type with no schema or table; charset binary
    /// unless the type is a string type.
    pub fn new(name: impl Into<Cow<'static, str>>, col_type: ColumnType) -> Self {
        use ColumnType::*;
        let (charset, length, decimals, flags) = match col_type {
            MYSQL_TYPE_VARCHAR
            | MYSQL_TYPE_VAR_STRING
            | MYSQL_TYPE_STRING
            | MYSQL_TYPE_ENUM
            | MYSQL_TYPE_SET
            | MYSQL_TYPE_JSON => (Self::UTF8MB4, 1024, 0, ColumnFlags::empty()),
            MYSQL_TYPE_TINY_BLOB
            | MYSQL_TYPE_MEDIUM_BLOB
            | MYSQL_TYPE_LONG_BLOB
            | MYSQL_TYPE_BLOB => (
                Self::BINARY,
                u32::MAX,
                0,
                ColumnFlags::BLOB_FLAG | ColumnFlags::BINARY_FLAG,
            ),
            MYSQL_TYPE_TINY => (Self::BINARY, 4, 0, ColumnFlags::NUM_FLAG),
            MYSQL_TYPE_SHORT | MYSQL_TYPE_YEAR => (Self::BINARY, 6, 0, ColumnFlags::NUM_FLAG),
            MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG => (Self::BINARY, 11, 0, ColumnFlags::NUM_FLAG),
            MYSQL_TYPE_LONGLONG => (Self::BINARY, 20, 0, ColumnFlags::NUM_FLAG),
            MYSQL_TYPE_FLOAT => (Self::BINARY, 12, 31, ColumnFlags::NUM_FLAG),
            MYSQL_TYPE_DOUBLE => (Self::BINARY, 22, 31, ColumnFlags::NUM_FLAG),
            MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => {
                (Self::BINARY, 66, 30, ColumnFlags::NUM_FLAG)
            }
            MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => (Self::BINARY, 10, 0, ColumnFlags::BINARY_FLAG),
            MYSQL_TYPE_DATETIME
            | MYSQL_TYPE_TIMESTAMP
            | MYSQL_TYPE_DATETIME2
            | MYSQL_TYPE_TIMESTAMP2 => (Self::BINARY, 19, 0, ColumnFlags::BINARY_FLAG),
            MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => (Self::BINARY, 10, 0, ColumnFlags::BINARY_FLAG),
            _ => (Self::BINARY, 255, 0, ColumnFlags::BINARY_FLAG),
        };
        Column {
            schema: Cow::Borrowed(""),
            table: Cow::Borrowed(""),
            org_table: Cow::Borrowed(""),
            name: name.into(),
            org_name: Cow::Borrowed(""),
            col_type,
            flags,
            charset,
            length,
            decimals,
        }
    }

    /// Sets the schema and table the column comes from (`table` is also
    /// its `org_table`, and the name its `org_name`).
    pub fn with_table(
        mut self,
        schema: impl Into<Cow<'static, str>>,
        table: impl Into<Cow<'static, str>>,
    ) -> Self {
        self.schema = schema.into();
        self.table = table.into();
        self.org_table = self.table.clone();
        self.org_name = self.name.clone();
        self
    }

    /// Adds column flags (NOT_NULL_FLAG, UNSIGNED_FLAG, PRI_KEY_FLAG, ...).
    pub fn with_flags(mut self, flags: ColumnFlags) -> Self {
        self.flags |= flags;
        self
    }
}

/// A date and time (DATE, DATETIME, TIMESTAMP); a DATE has zero time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DateTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
    pub micros: u32,
}

/// A TIME value: a signed duration of `days` * 24 h + `hours` ... .
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Time {
    pub negative: bool,
    pub days: u32,
    pub hours: u8,
    pub minutes: u8,
    pub seconds: u8,
    pub micros: u32,
}

/// A statement parameter decoded from COM_STMT_EXECUTE, as the client
/// typed it. Strings, decimals, blobs, JSON, ENUM/SET and BIT arrive as
/// `Bytes`; DATE, DATETIME and TIMESTAMP as `DateTime`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Null,
    Int(i64),
    UInt(u64),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
    DateTime(DateTime),
    Time(Time),
}

/// Where a session writes the answer to one command.
///
/// A command's answer is a sequence of results, each one of: `ok(..)`;
/// `error(..)`; or `begin_result_set(..)`, then for each row `row()`, the
/// row's values and `finish()`, then `end_result_set(0)`. When a result
/// begins after another has ended, the earlier one's terminator (OK or
/// EOF) gets SERVER_MORE_RESULTS_EXISTS: so a session just reports its
/// statements' results in order and never says in advance whether more
/// follow. An error ends the answer (later calls are ignored), as MySQL
/// stops a multi-statement at the first error; an error reported while a
/// result set is open takes the place of its terminator (the client reads
/// it as that statement's error). A session that reports
/// nothing answers OK; a result set left open is ended; a row left
/// unfinished is finished with NULLs for its missing values.
pub trait Results {
    /// Whether COM_QUERY text may hold several statements (the client's
    /// CLIENT_MULTI_STATEMENTS, or COM_SET_OPTION).
    fn multi_statements(&self) -> bool;

    /// Whether the client asked for CLIENT_FOUND_ROWS: the affected-rows
    /// count of an UPDATE is then the rows it matched, not only those it
    /// changed (Connector/J asks unless `useAffectedRows=true`).
    fn client_found_rows(&self) -> bool {
        false
    }

    /// The status flags to put in the OK/EOF packets written from now on
    /// (for a statement that starts or ends a transaction in the middle
    /// of a multi-statement). The last one of a command always carries
    /// `Session::status()` read after the command.
    fn set_status(&mut self, status: StatusFlags);

    /// A statement without a result set.
    fn ok(&mut self, affected_rows: u64, last_insert_id: u64, warnings: u16, info: &str);

    /// A failed statement.
    fn error(&mut self, err: SqlError);

    /// Starts a result set with these columns.
    fn begin_result_set(&mut self, columns: &[Column]);

    /// Starts the next row of the current result set; write each column's
    /// value in order, then `finish()`.
    fn row(&mut self) -> &mut dyn RowWriter;

    /// Ends the current result set; `warnings` goes into its terminator.
    fn end_result_set(&mut self, warnings: u16);
}

/// The values of one row, written left to right. A value that does not
/// fit its column's type is converted (an integer into a DOUBLE column,
/// text into an INT column) or written as text.
pub trait RowWriter {
    fn null(&mut self);
    fn int(&mut self, v: i64);
    fn uint(&mut self, v: u64);
    fn double(&mut self, v: f64);
    /// Strings, decimals (as text), blobs, JSON.
    fn bytes(&mut self, v: &[u8]);
    fn date(&mut self, year: u16, month: u8, day: u8);
    fn datetime(&mut self, v: DateTime);
    fn time(&mut self, v: Time);
    /// Ends the row.
    fn finish(&mut self);
}

/// An error for the client: MySQL error code, SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub code: u16,
    pub sqlstate: [u8; 5],
    pub message: String,
}

impl SqlError {
    pub fn new(code: u16, sqlstate: &[u8; 5], message: impl Into<String>) -> Self {
        SqlError {
            code,
            sqlstate: *sqlstate,
            message: message.into(),
        }
    }

    /// 1064: a syntax error near `near`.
    pub fn syntax(near: &str) -> Self {
        Self::new(
            1064,
            b"42000",
            format!(
                "You have an error in your SQL syntax; check the manual that corresponds to your CairnDB server version for the right syntax to use near '{near}'"
            ),
        )
    }
    /// 1146.
    pub fn no_such_table(db: &str, table: &str) -> Self {
        Self::new(
            1146,
            b"42S02",
            format!("Table '{db}.{table}' doesn't exist"),
        )
    }
    /// 1062.
    pub fn dup_key(entry: &str, key: &str) -> Self {
        Self::new(
            1062,
            b"23000",
            format!("Duplicate entry '{entry}' for key '{key}'"),
        )
    }
    /// 1205.
    pub fn lock_wait_timeout() -> Self {
        Self::new(
            1205,
            b"HY000",
            "Lock wait timeout exceeded; try restarting transaction",
        )
    }
    /// 1213.
    pub fn deadlock() -> Self {
        Self::new(
            1213,
            b"40001",
            "Deadlock found when trying to get lock; try restarting transaction",
        )
    }
    /// 1045.
    pub fn access_denied(user: &str, host: &str, using_password: bool) -> Self {
        let yn = if using_password { "YES" } else { "NO" };
        Self::new(
            1045,
            b"28000",
            format!("Access denied for user '{user}'@'{host}' (using password: {yn})"),
        )
    }
    /// 3159: a plain-TCP login while `require_secure_transport` is on.
    pub fn insecure_transport() -> Self {
        Self::new(
            3159,
            b"HY000",
            "Connections using insecure transport are prohibited while --require_secure_transport=ON.",
        )
    }
    /// 1047.
    pub fn unknown_command() -> Self {
        Self::new(1047, b"08S01", "Unknown command")
    }
    /// 1153.
    pub fn packet_too_large() -> Self {
        Self::new(
            1153,
            b"08S01",
            "Got a packet bigger than 'max_allowed_packet' bytes",
        )
    }
    /// 1040.
    pub fn too_many_connections() -> Self {
        Self::new(1040, b"08004", "Too many connections")
    }
    /// 1129: the client's address failed `max_connect_errors` times in a
    /// row (MariaDB's wording).
    pub fn host_blocked(host: &str) -> Self {
        Self::new(
            1129,
            b"HY000",
            format!(
                "Host '{host}' is blocked because of many connection errors; unblock with 'mariadb-admin flush-hosts'"
            ),
        )
    }
    /// 1049.
    pub fn bad_db(db: &str) -> Self {
        Self::new(1049, b"42000", format!("Unknown database '{db}'"))
    }
    /// 1046.
    pub fn no_db() -> Self {
        Self::new(1046, b"3D000", "No database selected")
    }
    /// 1054.
    pub fn bad_field(field: &str, table: &str) -> Self {
        Self::new(
            1054,
            b"42S22",
            format!("Unknown column '{field}' in '{table}'"),
        )
    }
    /// 1243.
    pub fn unknown_statement(stmt: u32, command: &str) -> Self {
        Self::new(
            1243,
            b"HY000",
            format!("Unknown prepared statement handler ({stmt}) given to {command}"),
        )
    }
    /// 1210.
    pub fn wrong_arguments(command: &str) -> Self {
        Self::new(1210, b"HY000", format!("Incorrect arguments to {command}"))
    }
    /// 1156.
    pub fn packets_out_of_order() -> Self {
        Self::new(1156, b"08S01", "Got packets out of order")
    }
    /// 1835.
    pub fn malformed_packet() -> Self {
        Self::new(1835, b"HY000", "Malformed communication packet.")
    }
    /// 1235.
    pub fn not_supported(what: &str) -> Self {
        Self::new(
            1235,
            b"42000",
            format!("This version of CairnDB doesn't yet support '{what}'"),
        )
    }
    /// 1300.
    pub fn invalid_utf8() -> Self {
        Self::new(1300, b"HY000", "Invalid utf8mb4 character string")
    }
    /// 1105: anything else.
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(1105, b"HY000", message)
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            String::from_utf8_lossy(&self.sqlstate),
            self.message
        )
    }
}

impl std::error::Error for SqlError {}
